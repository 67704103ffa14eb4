//! `outdated --index`: what the package indexes themselves list as newer than a stack's pins,
//! beside what the release data in use says. Reads each index's simple API (PEP 691 JSON or
//! PEP 503 HTML, whichever it serves) for the library's releases, with the CUDA builds their
//! local version tags name (`+cu130`, the PyTorch index's), and the default index for NVIDIA's
//! `cuda-toolkit` releases; judges each against a driver with the data's minimum-driver table.
//!
//! Downloads go through `archive`'s client; the default index's URL comes from pip's own
//! configuration (through `exec`). Printing is the CLI's.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::compat::{self, LibraryLookup};
use crate::manifest::Manifest;
use crate::os::Os;
use crate::version::Version;

/// Where the answers come from.
#[derive(Debug, Clone, Serialize)]
pub struct Indexes {
    /// pip's default index (or `--index-url`): library releases and `cuda-toolkit`.
    pub default: String,
    /// The manifest's own library indexes (`library.pip.index_url`, extra ones).
    pub library: Vec<String>,
}

/// What an index listed for a project: final release → local tags of its files (`cu126`;
/// empty for a plain build).
pub type Listing = BTreeMap<Version, BTreeSet<String>>;

/// Reads one project from one index; the CLI gives the HTTP one, tests a fake.
pub trait IndexReader {
    /// `Ok(None)` when the index does not have the project; `Err` when it could not be read.
    /// Only files that install on `os` count (a wheel for its platform, a pure wheel, an sdist).
    fn project(&self, index: &str, project: &str, os: Os) -> Result<Option<Listing>, String>;
}

/// One CUDA build of a newer release and whether it runs on the driver judged against.
#[derive(Debug, Clone, Serialize)]
pub struct CudaBuild {
    /// The CUDA line (`12.6`).
    pub cuda: String,
    /// The data's minimum driver for that line; `None` when the data lacks the line.
    pub min_driver: Option<String>,
    pub fits: bool,
}

/// A release on the index newer than the pin.
#[derive(Debug, Clone, Serialize)]
pub struct NewerRelease {
    pub version: String,
    /// From the index's local version tags; from the release data when the index names none.
    pub builds: Vec<CudaBuild>,
    /// `index` (local tags), `data` (the release data's CUDA lines) or `unknown`.
    pub builds_from: &'static str,
    /// Some build fits the driver.
    pub fits: bool,
    /// What the release data says when it differs from the index (`not in the release data`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_says: Option<String>,
}

/// A `cuda-toolkit` release newer than the pinned toolkit.
#[derive(Debug, Clone, Serialize)]
pub struct NewerToolkit {
    pub version: String,
    pub min_driver: Option<String>,
    pub fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_says: Option<String>,
}

/// Everything the indexes said for one stack.
#[derive(Debug, Clone, Serialize)]
pub struct IndexOutdated {
    pub stack: String,
    pub library: String,
    pub pinned: String,
    pub toolkit: String,
    /// The driver the builds are judged against, and whose it is.
    pub driver: String,
    pub driver_from: &'static str,
    pub indexes: Indexes,
    pub newer: Vec<NewerRelease>,
    pub toolkits: Vec<NewerToolkit>,
    /// Releases the data lists as newer that no index asked lists.
    pub only_in_data: Vec<String>,
}

/// Why the indexes gave no answer: never "up to date".
#[derive(Debug, thiserror::Error)]
#[error(
    "could not read the package index at {index} ({reason}): nothing was compared, so this is not \"up to date\"; check the network or pass --index-url"
)]
pub struct Unreachable {
    pub index: String,
    pub reason: String,
}

/// Asks the indexes what is newer than `m`'s library and toolkit, judged against `driver`
/// (the host's when it answers, else the stack's pinned one, as `driver_from` says).
pub fn outdated_from_index(
    m: &Manifest,
    indexes: &Indexes,
    reader: &dyn IndexReader,
    driver: (&Version, &'static str),
) -> Result<IndexOutdated, Unreachable> {
    let lib = &m.library;
    let project = distribution(m);
    let mut listing = Listing::new();
    for index in std::iter::once(&indexes.default).chain(&indexes.library) {
        let found = reader
            .project(index, &project, m.os)
            .map_err(|reason| Unreachable {
                index: index.clone(),
                reason,
            })?;
        for (v, tags) in found.unwrap_or_default() {
            listing.entry(v).or_default().extend(tags);
        }
    }
    let newer: Vec<NewerRelease> = listing
        .iter()
        .filter(|(v, _)| *v > &lib.version)
        .map(|(v, tags)| newer_release(m, v, tags, driver.0))
        .collect();
    let only_in_data = compat::known_releases(&lib.name, m.os)
        .into_iter()
        .filter(|v| *v > lib.version && !listing.contains_key(v))
        .map(|v| v.to_string())
        .collect();
    let toolkits = match reader.project(&indexes.default, "cuda-toolkit", m.os) {
        Ok(Some(found)) => newer_toolkits(m, found.keys(), driver.0),
        Ok(None) => Vec::new(),
        Err(reason) => {
            return Err(Unreachable {
                index: indexes.default.clone(),
                reason,
            });
        }
    };
    Ok(IndexOutdated {
        stack: m.name.clone(),
        library: project,
        pinned: lib.version.to_string(),
        toolkit: m.toolkit.version.to_string(),
        driver: driver.0.to_string(),
        driver_from: driver.1,
        indexes: indexes.clone(),
        newer,
        toolkits,
        only_in_data,
    })
}

/// The distribution the index lists the library under (`tensorflow-gpu` for old TensorFlow).
fn distribution(m: &Manifest) -> String {
    let requirement = m
        .library
        .pip
        .as_ref()
        .and_then(|p| p.requirements.first())
        .map(|r| requirement_name(r));
    requirement.unwrap_or_else(|| m.library.name.clone())
}

fn requirement_name(requirement: &str) -> String {
    requirement
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .next()
        .unwrap_or(requirement)
        .to_string()
}

fn newer_release(
    m: &Manifest,
    v: &Version,
    tags: &BTreeSet<String>,
    driver: &Version,
) -> NewerRelease {
    let from_tags: BTreeSet<String> = tags.iter().filter_map(|t| cuda_line_of_tag(t)).collect();
    let data = match compat::library_release(&m.library.name, v, m.os) {
        LibraryLookup::Known(r) if r.versions.contains(v) => Some(r),
        _ => None,
    };
    let data_lines: BTreeSet<String> = data
        .iter()
        .flat_map(|r| r.stable_cuda.iter().chain(&r.experimental_cuda))
        .map(Version::major_minor)
        .collect();
    let (lines, builds_from) = if !from_tags.is_empty() {
        (&from_tags, "index")
    } else if !data_lines.is_empty() {
        (&data_lines, "data")
    } else {
        (&from_tags, "unknown")
    };
    let builds: Vec<CudaBuild> = lines.iter().map(|l| build_for(l, m.os, driver)).collect();
    let data_says = if data.is_none() {
        Some(format!(
            "not in the release data of {}",
            compat::data_date()
        ))
    } else if builds_from == "index" && from_tags != data_lines {
        let listed: Vec<&str> = data_lines.iter().map(String::as_str).collect();
        Some(format!("the release data lists CUDA {}", listed.join(", ")))
    } else {
        None
    };
    NewerRelease {
        version: v.to_string(),
        fits: builds.iter().any(|b| b.fits),
        builds,
        builds_from,
        data_says,
    }
}

/// `cu126` → `12.6`, `cu92` → `9.2`; other local tags (`cpu`, `rocm6.2`) are no CUDA build.
pub fn cuda_line_of_tag(tag: &str) -> Option<String> {
    let digits = tag.strip_prefix("cu")?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some(format!("{major}.{minor}"))
}

/// The smallest minimum driver among a CUDA line's releases (its first release's) on `os`.
fn line_min_driver(line: &str, os: Os) -> Option<Version> {
    compat::toolkit_releases(line)
        .iter()
        .filter_map(|r| match os {
            Os::Linux => Some(r.linux.clone()),
            Os::Windows => r.windows.clone(),
        })
        .min()
}

fn build_for(line: &str, os: Os, driver: &Version) -> CudaBuild {
    let min = line_min_driver(line, os);
    CudaBuild {
        cuda: line.to_string(),
        fits: min.as_ref().is_some_and(|min| driver >= min),
        min_driver: min.map(|v| v.to_string()),
    }
}

fn newer_toolkits<'v>(
    m: &Manifest,
    versions: impl Iterator<Item = &'v Version>,
    driver: &Version,
) -> Vec<NewerToolkit> {
    versions
        .filter(|v| **v > m.toolkit.version)
        .map(|v| {
            let min = match compat::min_driver_for(v, m.os) {
                compat::DriverRequirement::Release { min, .. } => Some(min),
                compat::DriverRequirement::Branch { floor, .. } => Some(floor),
                compat::DriverRequirement::Unknown => None,
            };
            NewerToolkit {
                version: v.to_string(),
                fits: min.as_ref().is_some_and(|min| driver >= min),
                data_says: (!compat::toolkit_known(v)).then(|| {
                    format!(
                        "not in the release data of {}: its minimum driver is unknown",
                        compat::data_date()
                    )
                }),
                min_driver: min.map(|v| v.to_string()),
            }
        })
        .collect()
}

/// The releases and local tags in a simple-API page: PEP 691 JSON (`files[].filename`) or
/// PEP 503 HTML (the anchors' text). Only wheels and sdists of final releases that install on
/// `os` count: a CUDA build the index has for Linux alone is no news to a Windows stack.
pub fn parse_listing(project: &str, body: &str, os: Os) -> Listing {
    let names: Vec<String> = if body.trim_start().starts_with('{') {
        serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("files")?.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|f| Some(f.get("filename")?.as_str()?.to_string()))
            .collect()
    } else {
        body.split("</a>")
            .filter_map(|chunk| {
                chunk
                    .rsplit_once('>')
                    .map(|(_, name)| name.trim().to_string())
            })
            .collect()
    };
    let mut out = Listing::new();
    for name in names.iter().filter(|n| installs_on(n, os)) {
        if let Some((version, tag)) = release_of_file(project, name) {
            let tags = out.entry(version).or_default();
            tags.extend(tag);
        }
    }
    out
}

/// Whether a file of an index installs on `os` (x86_64, the machines stackpin provisions): an
/// sdist or a pure wheel anywhere, a binary wheel by its platform tags (`manylinux_2_28_x86_64`,
/// `win_amd64`; aarch64, 32-bit, Arm64 Windows and macOS wheels on neither).
fn installs_on(file: &str, os: Os) -> bool {
    let Some(stem) = file.strip_suffix(".whl") else {
        return true;
    };
    let Some(platforms) = stem.rsplit('-').next() else {
        return false;
    };
    platforms.split('.').any(|tag| match tag {
        "any" => true,
        _ => match os {
            Os::Linux => tag.contains("linux") && tag.ends_with("x86_64"),
            Os::Windows => tag == "win_amd64",
        },
    })
}

/// `torch-2.6.0+cu126-cp312-…whl` → (2.6.0, Some("cu126")); pre-releases and other projects'
/// files → `None`.
fn release_of_file(project: &str, file: &str) -> Option<(Version, Option<String>)> {
    let normalized = |s: &str| s.to_ascii_lowercase().replace(['-', '.'], "_");
    let stem = file
        .strip_suffix(".whl")
        .or_else(|| file.strip_suffix(".tar.gz"))?;
    let (name, rest) = stem.split_once('-')?;
    if normalized(name) != normalized(project) {
        return None;
    }
    let version = rest.split('-').next()?;
    let (public, local) = match version.split_once('+') {
        Some((p, l)) => (p, Some(l.to_string())),
        None => (version, None),
    };
    if public.is_empty() || !public.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    Some((Version::parse(public).ok()?, local))
}

/// Reads simple-API pages over HTTP with the archive's client: one attempt with the fetch's
/// timeouts, at most [`PAGE_LIMIT`] bytes.
pub struct HttpIndex;

/// A project page larger than this is refused (torch's, the largest, is a few MB).
const PAGE_LIMIT: u64 = 64 * 1024 * 1024;

impl IndexReader for HttpIndex {
    fn project(&self, index: &str, project: &str, os: Os) -> Result<Option<Listing>, String> {
        let url = format!("{}/{}/", index.trim_end_matches('/'), project);
        let dir = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
        let page = dir.path().join("page");
        let retry = crate::archive::RetryPolicy {
            attempts: 2,
            ..Default::default()
        };
        match crate::archive::download_one(&url, &page, retry, PAGE_LIMIT, &crate::archive::Silent)
        {
            Ok(_) => {}
            // The index answers, but not for this project: nothing newer there.
            Err(e) if e.to_string().contains("404") => return Ok(None),
            Err(e) => return Err(e.to_string()),
        }
        let body = std::fs::read_to_string(&page).map_err(|e| format!("reading {url}: {e}"))?;
        Ok(Some(parse_listing(project, &body, os)))
    }
}

/// The index pip uses by default, asked the way pip decides it after `$PIP_INDEX_URL` (the
/// caller's): pip's configured `global.index-url`, else pip's own default, read from pip itself
/// so that stackpin names no index host.
pub fn pip_default_index(python: &str) -> Result<String, String> {
    let ask = |args: &[&str]| -> Option<String> {
        let spec = crate::exec::Spec::captured(python, args, std::time::Duration::from_secs(60));
        let done = crate::exec::run(spec).ok()?;
        let text = String::from_utf8_lossy(&done.stdout).trim().to_string();
        (done.end.code() == Some(0) && !text.is_empty()).then_some(text)
    };
    ask(&["-m", "pip", "config", "get", "global.index-url"])
        .or_else(|| {
            ask(&[
                "-c",
                "from pip._internal.models.index import PyPI; print(PyPI.simple_url)",
            ])
        })
        .ok_or_else(|| {
            format!("{python} -m pip names no index (is pip installed?); pass --index-url")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_builds_come_from_local_version_tags() {
        assert_eq!(cuda_line_of_tag("cu126").as_deref(), Some("12.6"));
        assert_eq!(cuda_line_of_tag("cu130").as_deref(), Some("13.0"));
        assert_eq!(cuda_line_of_tag("cu92").as_deref(), Some("9.2"));
        assert_eq!(cuda_line_of_tag("cpu"), None);
        assert_eq!(cuda_line_of_tag("rocm6.2"), None);
    }

    #[test]
    fn a_pep_503_page_gives_releases_with_their_local_tags() {
        let html = r#"<html><body>
<a href="/whl/cu126/torch-2.6.0%2Bcu126-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab">torch-2.6.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="/whl/cu124/torch-2.6.0%2Bcu124-cp312-cp312-manylinux_2_28_x86_64.whl">torch-2.6.0+cu124-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="x">torch-2.7.0rc1-cp312-cp312-manylinux_2_28_x86_64.whl</a>
<a href="y">torchvision-0.21.0-cp312-cp312-manylinux_2_28_x86_64.whl</a>
</body></html>"#;
        let listing = parse_listing("torch", html, Os::Linux);
        let v260 = Version::parse("2.6.0").expect("version");
        assert_eq!(listing.len(), 1, "{listing:?}");
        let tags: Vec<&str> = listing[&v260].iter().map(String::as_str).collect();
        assert_eq!(tags, vec!["cu124", "cu126"]);
    }

    #[test]
    fn a_build_the_index_has_for_another_platform_is_not_news() {
        let html = r#"
<a href="a">torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl</a>
<a href="b">torch-2.9.0+cu128-cp312-cp312-win_amd64.whl</a>
<a href="c">torch-2.9.0-cp312-none-macosx_11_0_arm64.whl</a>
<a href="d">torch-2.10.0-cp312-cp312-macosx_11_0_arm64.whl</a>
<a href="e">torch-2.11.0-py3-none-any.whl</a>
<a href="f">torch-2.12.0+cu130-cp312-cp312-manylinux_2_28_aarch64.whl</a>
<a href="g">torch-2.12.0+cu130-cp312-cp312-win_arm64.whl</a>"#;
        let v = |s: &str| Version::parse(s).expect("version");
        let tags = |listing: &Listing, version: &str| -> Vec<String> {
            listing[&v(version)].iter().cloned().collect()
        };
        let linux = parse_listing("torch", html, Os::Linux);
        assert_eq!(tags(&linux, "2.9.0"), ["cu130"]);
        let windows = parse_listing("torch", html, Os::Windows);
        assert_eq!(tags(&windows, "2.9.0"), ["cu128"]);
        for listing in [&linux, &windows] {
            assert!(!listing.contains_key(&v("2.10.0")), "macOS only");
            assert!(!listing.contains_key(&v("2.12.0")), "Arm only");
            assert!(
                listing.contains_key(&v("2.11.0")),
                "a pure wheel installs anywhere"
            );
        }
    }

    #[test]
    fn a_recorded_pep_691_answer_gives_its_releases() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/index/cuda-toolkit.json");
        let body = std::fs::read_to_string(path).expect("fixture");
        let listing = parse_listing("cuda-toolkit", &body, Os::Linux);
        assert!(listing.contains_key(&Version::parse("13.0.2").expect("v")));
        assert!(listing.keys().all(|v| listing[v].is_empty()));
    }
}
