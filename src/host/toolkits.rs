//! CUDA toolkits installed side by side: where they are and which version each one is.
//!
//! Linux: `<prefix>/cuda-X.Y` (prefix `/usr/local`, or `STACKPIN_CUDA_PREFIX`), where the
//! `<prefix>/cuda` link points, and any extra roots a caller names (a manifest's `toolkit.root`
//! and its parent folder). Windows: `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\vX.Y` and
//! the `CUDA_PATH` / `CUDA_PATH_VX_Y` variables. Each version comes from `version.json` (the full
//! `12.4.1`), else `version.txt` or `nvcc --version`, which only name the line and a build
//! (`release 12.4, V12.4.131` for 12.4.1) — then the exact update is unknown and we say so.
//! Whether a toolkit satisfies a manifest is for `plan` and `install` to decide.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::os::Os;
use crate::version::Version;

use super::system::System;

/// Variable that moves the Linux prefix (`/usr/local`), so tests and unusual hosts can point it.
pub const PREFIX_VAR: &str = "STACKPIN_CUDA_PREFIX";

const NVCC_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a toolkit's version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionSource {
    /// `version.json`: the full version, update included.
    VersionJson,
    /// `version.txt` (older toolkits): the line and a build number.
    VersionTxt,
    /// `bin/nvcc --version`: the line and the compiler build.
    Nvcc,
    /// Nothing in the folder says.
    Unknown,
}

/// One toolkit folder and what it reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolkitInfo {
    pub root: PathBuf,
    /// The full version (`12.4.1`) when known exactly, else the line (`12.4`).
    pub version: Option<Version>,
    pub source: VersionSource,
    /// False when only the line is known (no `version.json`): `12.4` could be 12.4.0 or 12.4.1.
    pub exact_update_known: bool,
    /// A build number: nvcc's `V12.4.131` or `version.txt`'s `11.8.89`. Not an update number.
    pub build: Option<Version>,
    /// nvcc's release line as printed, when nvcc ran.
    pub nvcc: Option<String>,
    /// True for the default toolkit: the target of `<prefix>/cuda`, or `CUDA_PATH` on Windows.
    pub default: bool,
    /// How stackpin found it: `/usr/local/cuda-X.Y`, `cuda link`, `CUDA_PATH_V12_4`, …
    pub found_by: Vec<String>,
}

impl ToolkitInfo {
    /// True when this toolkit reports `pin`: the exact version when known, else the same line.
    pub fn reports(&self, pin: &Version) -> bool {
        match &self.version {
            Some(v) if self.exact_update_known => v.same_release(pin),
            Some(v) => v.major_minor() == pin.major_minor(),
            None => false,
        }
    }
}

/// Reads one toolkit folder; `None` when `root` is not a folder. Used to verify a layer.
pub fn find_toolkit(system: &dyn System, root: &Path) -> Option<ToolkitInfo> {
    if !system.is_dir(root) {
        return None;
    }
    let nvcc = nvcc_release(system, root);
    let (version, source, exact, build) = if let Some(v) = version_json(system, root) {
        (Some(v), VersionSource::VersionJson, true, None)
    } else if let Some(full) = version_txt(system, root) {
        (line_of(&full), VersionSource::VersionTxt, false, Some(full))
    } else if let Some((_, release, build)) = &nvcc {
        (
            Some(release.clone()),
            VersionSource::Nvcc,
            false,
            build.clone(),
        )
    } else {
        (None, VersionSource::Unknown, false, None)
    };
    let build = build.or_else(|| nvcc.as_ref().and_then(|(_, _, b)| b.clone()));
    Some(ToolkitInfo {
        root: root.to_path_buf(),
        version,
        source,
        exact_update_known: exact,
        build,
        nvcc: nvcc.map(|(line, _, _)| line),
        default: false,
        found_by: vec![],
    })
}

/// Every toolkit on the host, sorted by version. `extra_roots` are searched too, with their
/// parent folders (a manifest's `toolkit.root` may live outside the usual prefix).
pub fn find_toolkits(system: &dyn System, extra_roots: &[PathBuf]) -> Vec<ToolkitInfo> {
    let mut found: Vec<(PathBuf, String, bool)> = Vec::new();
    match system.os() {
        Os::Linux => linux_candidates(system, &mut found),
        Os::Windows => windows_candidates(system, &mut found),
    }
    for root in extra_roots {
        if let Some(parent) = root.parent() {
            versioned_children(system, parent, &mut found);
        }
        found.push((root.clone(), "manifest toolkit.root".to_string(), false));
    }
    let mut toolkits: Vec<ToolkitInfo> = Vec::new();
    for (root, how, default) in found {
        if let Some(known) = toolkits.iter_mut().find(|t| t.root == root) {
            known.default |= default;
            if !known.found_by.contains(&how) {
                known.found_by.push(how);
            }
            continue;
        }
        if let Some(mut info) = find_toolkit(system, &root) {
            info.default = default;
            info.found_by.push(how);
            toolkits.push(info);
        }
    }
    toolkits.sort_by(|a, b| a.version.cmp(&b.version).then(a.root.cmp(&b.root)));
    toolkits
}

fn linux_candidates(system: &dyn System, found: &mut Vec<(PathBuf, String, bool)>) {
    let prefix = PathBuf::from(
        system
            .env(PREFIX_VAR)
            .unwrap_or_else(|| "/usr/local".into()),
    );
    versioned_children(system, &prefix, found);
    let link = prefix.join("cuda");
    match resolve_link(system, &link) {
        Some(target) => found.push((target, format!("{} link", link.display()), true)),
        // Not a link but a real folder: a toolkit installed straight into `cuda`.
        None if system.is_dir(&link) => found.push((link, "cuda folder".to_string(), true)),
        None => {}
    }
}

/// Follows a chain of links to its end: deb installs go `/usr/local/cuda` →
/// `/etc/alternatives/cuda` → `/usr/local/cuda-12.4`. `None` when `link` is not a link.
fn resolve_link(system: &dyn System, link: &Path) -> Option<PathBuf> {
    let mut current = link.to_path_buf();
    let mut hops = 0;
    while let Ok(target) = system.read_link(&current) {
        // A relative target (`cuda -> cuda-12.4`) is relative to the folder holding the link.
        current = match current.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
        hops += 1;
        if hops > 8 {
            break; // a loop; stop where we are
        }
    }
    (hops > 0).then_some(current)
}

fn windows_candidates(system: &dyn System, found: &mut Vec<(PathBuf, String, bool)>) {
    let program_files = system
        .env("ProgramFiles")
        .unwrap_or_else(|| r"C:\Program Files".to_string());
    let base = Path::new(&program_files)
        .join("NVIDIA GPU Computing Toolkit")
        .join("CUDA");
    versioned_children(system, &base, found);
    let default = system.env("CUDA_PATH").map(PathBuf::from);
    for (key, value) in system.env_vars() {
        if key.to_ascii_uppercase().starts_with("CUDA_PATH_V") {
            found.push((PathBuf::from(value), key, false));
        }
    }
    if let Some(root) = default {
        found.push((root, "CUDA_PATH".to_string(), true));
    }
}

/// Adds `cuda-X.Y` (Linux) and `vX.Y` (Windows) folders under `dir`.
fn versioned_children(system: &dyn System, dir: &Path, found: &mut Vec<(PathBuf, String, bool)>) {
    let Ok(entries) = system.read_dir(dir) else {
        return;
    };
    for entry in entries {
        let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let version = name
            .strip_prefix("cuda-")
            .or_else(|| name.strip_prefix('v'));
        if version.is_some_and(|v| Version::parse(v).is_ok()) && system.is_dir(&entry) {
            let how = entry.display().to_string();
            found.push((entry, how, false));
        }
    }
}

fn version_json(system: &dyn System, root: &Path) -> Option<Version> {
    let text = system.read_to_string(&root.join("version.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    Version::parse(value.get("cuda")?.get("version")?.as_str()?).ok()
}

/// `CUDA Version 11.8.89` → `11.8.89`.
fn version_txt(system: &dyn System, root: &Path) -> Option<Version> {
    let text = system.read_to_string(&root.join("version.txt")).ok()?;
    let rest = text.split_once("CUDA Version")?.1;
    Version::parse(rest.split_whitespace().next()?).ok()
}

fn line_of(version: &Version) -> Option<Version> {
    Version::parse(&version.major_minor()).ok()
}

/// A toolkit root's own compiler: `bin/nvcc`, `bin\nvcc.exe` on Windows.
pub fn nvcc_path(system: &dyn System, root: &Path) -> PathBuf {
    let exe = if system.os() == Os::Windows {
        "nvcc.exe"
    } else {
        "nvcc"
    };
    root.join("bin").join(exe)
}

/// Runs `root/bin/nvcc --version`: (the release line, `12.4`, the build `12.4.131`).
fn nvcc_release(system: &dyn System, root: &Path) -> Option<(String, Version, Option<Version>)> {
    let nvcc = nvcc_path(system, root);
    if !system.exists(&nvcc) {
        return None;
    }
    let out = system
        .run(&nvcc, &["--version".to_string()], NVCC_TIMEOUT)
        .ok()?;
    parse_nvcc(&out.stdout)
}

/// Parses `Cuda compilation tools, release 12.4, V12.4.131` out of `nvcc --version`.
pub fn parse_nvcc(text: &str) -> Option<(String, Version, Option<Version>)> {
    let line = text.lines().find(|l| l.contains("release "))?.trim();
    let after = line.split_once("release ")?.1;
    let (release, rest) = after.split_once(',').unwrap_or((after, ""));
    let release = Version::parse(release).ok()?;
    let build = rest
        .trim()
        .strip_prefix('V')
        .and_then(|b| Version::parse(b).ok());
    Some((line.to_string(), release, build))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;

    const NVCC_124: &str = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\nBuilt on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, V12.4.131\nBuild cuda_12.4.r12.4/compiler.34097967_0\n";

    fn v(text: &str) -> Version {
        Version::parse(text).expect("version")
    }

    #[test]
    fn nvcc_gives_the_line_and_build_but_not_the_update() {
        let (line, release, build) = parse_nvcc(NVCC_124).expect("parses");
        assert_eq!(line, "Cuda compilation tools, release 12.4, V12.4.131");
        assert_eq!(release, v("12.4"));
        assert_eq!(build, Some(v("12.4.131")));
    }

    fn two_toolkits() -> FakeSystem {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file(
            "/usr/local/cuda-12.4/version.json",
            r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}"#,
        )
        .file("/usr/local/cuda-12.4/bin/nvcc", "")
        .answer("/usr/local/cuda-12.4/bin/nvcc", &["--version"], 0, NVCC_124)
        .file("/usr/local/cuda-11.8/version.txt", "CUDA Version 11.8.89\n")
        .dir("/usr/local/bin");
        sys.links.insert(
            PathBuf::from("/usr/local/cuda"),
            PathBuf::from("/usr/local/cuda-12.4"),
        );
        sys
    }

    #[test]
    fn side_by_side_toolkits_are_listed_with_their_sources() {
        let toolkits = find_toolkits(&two_toolkits(), &[]);
        assert_eq!(toolkits.len(), 2, "{toolkits:#?}");
        let (old, new) = (&toolkits[0], &toolkits[1]);
        assert_eq!(old.version, Some(v("11.8")));
        assert_eq!(old.source, VersionSource::VersionTxt);
        assert_eq!(old.build, Some(v("11.8.89")));
        assert!(!old.exact_update_known && !old.default);
        assert_eq!(new.version, Some(v("12.4.1")));
        assert_eq!(new.source, VersionSource::VersionJson);
        assert!(new.exact_update_known && new.default);
        assert_eq!(new.build, Some(v("12.4.131")));
        assert_eq!(new.found_by.len(), 2, "versioned folder and the cuda link");
    }

    #[test]
    fn nvcc_only_toolkit_reports_its_line_and_matches_any_update_of_it() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/opt/cuda-12.4/bin/nvcc", "").answer(
            "/opt/cuda-12.4/bin/nvcc",
            &["--version"],
            0,
            NVCC_124,
        );
        let info = find_toolkit(&sys, Path::new("/opt/cuda-12.4")).expect("found");
        assert_eq!(info.source, VersionSource::Nvcc);
        assert!(!info.exact_update_known);
        assert!(info.reports(&v("12.4.1")));
        assert!(!info.reports(&v("12.6.0")));
    }

    #[test]
    fn exact_version_must_match_exactly() {
        let toolkits = find_toolkits(&two_toolkits(), &[]);
        assert!(toolkits[1].reports(&v("12.4.1")));
        assert!(!toolkits[1].reports(&v("12.4.0")));
    }

    #[test]
    fn prefix_variable_and_manifest_root_parent_are_searched() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.env.insert(PREFIX_VAR.into(), "/tmp/p".into());
        sys.file(
            "/tmp/p/cuda-12.6/version.json",
            r#"{"cuda":{"version":"12.6.3"}}"#,
        )
        .file(
            "/opt/tk/cuda-12.1/version.json",
            r#"{"cuda":{"version":"12.1.1"}}"#,
        );
        let toolkits = find_toolkits(&sys, &[PathBuf::from("/opt/tk/cuda-12.4")]);
        let roots: Vec<_> = toolkits.iter().map(|t| t.root.clone()).collect();
        assert_eq!(
            roots,
            vec![
                PathBuf::from("/opt/tk/cuda-12.1"),
                PathBuf::from("/tmp/p/cuda-12.6")
            ]
        );
    }

    #[test]
    fn the_cuda_link_is_followed_through_update_alternatives() {
        let mut sys = two_toolkits();
        sys.links.insert(
            PathBuf::from("/usr/local/cuda"),
            PathBuf::from("/etc/alternatives/cuda"),
        );
        sys.links.insert(
            PathBuf::from("/etc/alternatives/cuda"),
            PathBuf::from("/usr/local/cuda-12.4"),
        );
        let toolkits = find_toolkits(&sys, &[]);
        assert_eq!(toolkits.len(), 2, "{toolkits:#?}");
        assert!(toolkits[1].default);
    }

    #[test]
    fn missing_root_is_none() {
        assert_eq!(
            find_toolkit(&two_toolkits(), Path::new("/usr/local/cuda-9.0")),
            None
        );
    }

    #[test]
    fn windows_program_files_and_cuda_path_variables() {
        let base = "C:/PF/NVIDIA GPU Computing Toolkit/CUDA";
        let mut sys = FakeSystem::new(Os::Windows);
        sys.env.insert("ProgramFiles".into(), "C:/PF".into());
        sys.env.insert("CUDA_PATH".into(), format!("{base}/v12.4"));
        sys.env
            .insert("CUDA_PATH_V12_4".into(), format!("{base}/v12.4"));
        sys.env
            .insert("CUDA_PATH_V11_8".into(), "D:/cuda118".into());
        sys.file(
            &format!("{base}/v12.4/version.json"),
            r#"{"cuda":{"version":"12.4.1"}}"#,
        )
        .file(
            "D:/cuda118/version.json",
            r#"{"cuda":{"version":"11.8.0"}}"#,
        );
        let toolkits = find_toolkits(&sys, &[]);
        assert_eq!(toolkits.len(), 2, "{toolkits:#?}");
        assert_eq!(toolkits[0].found_by, vec!["CUDA_PATH_V11_8".to_string()]);
        assert!(toolkits[1].default);
        assert!(toolkits[1].found_by.contains(&"CUDA_PATH".to_string()));
    }
}
