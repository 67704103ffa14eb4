//! `stackpin check`: a manifest against the release notes, without the host or the network.
//!
//! Runs the manifest's own rules ([`manifest::validate`]) and then the release-note rules:
//! the one-way driver rule (driver ≥ the toolkit's minimum for that OS) and the library's
//! supported CUDA lines and Python range, and, for the GPUs named with `--gpu-arch`, the
//! GPU-generation rules (the driver's branch drives the card, the toolkit compiles for it, the
//! library build carries its architecture). Unknown releases are warnings, never errors: the user
//! may know something newer than stackpin's tables.

use crate::compat::{
    self, CudaSupport, DriverRequirement, LibraryLookup, LibraryRelease, WheelComponent,
    WheelRelease,
};
use crate::manifest::{self, Manifest, Problem, Severity, SourceMap, ToolkitWheel};
use crate::version::Version;

/// The result of checking one manifest.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub ok: bool,
    pub problems: Vec<Problem>,
}

impl Report {
    /// Number of problems of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == severity)
            .count()
    }
}

/// Checks a parsed manifest; `source` (the manifest's text) places problems on lines.
pub fn check(m: &Manifest, source: Option<&str>) -> Report {
    check_for_gpus(m, source, &[])
}

/// [`check`], plus the GPU-generation rules for each compute capability in `gpus` (`6.1`).
pub fn check_for_gpus(m: &Manifest, source: Option<&str>, gpus: &[String]) -> Report {
    let mut problems = manifest::validate(m);
    manifest::toolkit_wheels::check_toolkit_source(m, &mut problems);
    problems.extend(driver_rule(m));
    problems.extend(toolkit_known(m));
    problems.extend(wheel_toolkit_rules(m));
    problems.extend(library_rules(m));
    for compute in gpus {
        problems.extend(gpu_rules(m, compute));
    }
    problems.extend(crate::windows_installers::check_rules(m));
    if let Some(text) = source {
        let map = SourceMap::new(text);
        for p in &mut problems {
            p.line = map.line_of(&p.field);
        }
    }
    problems.sort_by_key(|p| (p.severity, p.line.unwrap_or(usize::MAX)));
    Report {
        ok: !problems.iter().any(|p| p.severity == Severity::Error),
        problems,
    }
}

/// The one-way rule: every toolkit declares a minimum driver, never a maximum.
pub fn driver_rule(m: &Manifest) -> Vec<Problem> {
    let (driver, toolkit) = (&m.driver.version, &m.toolkit.version);
    match compat::min_driver_for(toolkit, m.os) {
        DriverRequirement::Release { min, label } if driver < &min => vec![Problem::error(
            "driver.version",
            format!(
                "driver {driver} is older than {label} ({toolkit}) allows on {os}: its minimum is {min}. Install a newer driver (≥ {min}); a newer driver runs an older toolkit, never the reverse",
                os = m.os
            ),
        )],
        DriverRequirement::Release { .. } => vec![],
        DriverRequirement::Branch { floor, line } => {
            if driver < &floor {
                vec![Problem::error(
                    "driver.version",
                    format!(
                        "driver {driver} is below the R{floor} branch that CUDA {line} needs on {os}; install a driver ≥ {floor}",
                        os = m.os
                    ),
                )]
            } else {
                vec![Problem::warning(
                    "driver.version",
                    format!(
                        "NVIDIA's release notes give no per-release {os} driver for CUDA {toolkit}; held to the CUDA {line} branch floor (≥ R{floor}), which driver {driver} meets",
                        os = m.os
                    ),
                )]
            }
        }
        DriverRequirement::Unknown => vec![Problem::warning(
            "toolkit.version",
            format!(
                "CUDA {toolkit} is not in stackpin's release data of {}; its minimum driver is unknown, so you vouch for driver {driver}",
                compat::data_date()
            ),
        )],
    }
}

fn toolkit_known(m: &Manifest) -> Vec<Problem> {
    let t = &m.toolkit.version;
    let line = t.major_minor();
    let releases = compat::toolkit_releases(&line);
    if let Some(row) = releases
        .iter()
        .find(|r| r.version == *t && r.grade.as_deref() == Some("C"))
    {
        return vec![Problem::warning(
            "toolkit.version",
            format!(
                "{}'s minimum driver comes from third-party copies of NVIDIA's release notes (grade C in stackpin's data of {}); check it against NVIDIA's \"CUDA Driver\" table",
                row.label,
                compat::data_date()
            ),
        )];
    }
    if compat::toolkit_known(t) || releases.is_empty() {
        // Unknown lines are already reported by the driver rule.
        return vec![];
    }
    vec![Problem::warning(
        "toolkit.version",
        format!(
            "CUDA {t} is not in stackpin's release data of {}; the known {line} releases are {}. You vouch for it",
            compat::data_date(),
            releases
                .iter()
                .map(|r| r.version.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )]
}

/// The components a wheel toolkit cannot compile without: the driver, the front end (`cicc`
/// in nvvm) and the headers it includes (crt).
const COMPILER_COMPONENTS: [&str; 3] = ["nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt"];

/// A wheel toolkit against the release data: a line whose wheels carry no nvcc is refused; a
/// known release's components must be exactly its own (versions, files, published sha256).
pub fn wheel_toolkit_rules(m: &Manifest) -> Vec<Problem> {
    let t = &m.toolkit;
    if t.source != manifest::ToolkitSource::Wheels {
        return vec![];
    }
    if let Some(no) = compat::wheels_without_nvcc(&t.version) {
        return vec![Problem::error(
            "toolkit.source",
            format!(
                "CUDA {}'s wheels make no toolkit: {}; use `source: runfile` for CUDA {}",
                t.version,
                no.why,
                t.version.major_minor()
            ),
        )];
    }
    let Some(release) = compat::toolkit_wheels(&t.version) else {
        return vec![Problem::warning(
            "toolkit.components",
            format!(
                "stackpin's release data of {} lists no component wheels for CUDA {}; the components are checked for one CUDA line only, not for one release. You vouch for them",
                compat::data_date(),
                t.version
            ),
        )];
    };
    // Components off the line are already named by the manifest's own rule.
    if manifest::toolkit_wheels::mixed_lines(&t.version, &t.components).is_some() {
        return vec![];
    }
    let (mut out, off) = component_rules(m, release);
    out.extend(one_release_rule(&t.components, release, &off));
    out.extend(compiler_component_rules(&t.components, release));
    out
}

/// A manifest's component beside the release data's pin of the same name.
type OffRelease<'a> = (&'a ToolkitWheel, &'a WheelComponent);

/// Each component against the release's own: an unknown name is a warning, a known version
/// with another file or sha256 an error. Components at another version are returned for
/// [`one_release_rule`], which names them together.
fn component_rules<'a>(
    m: &'a Manifest,
    release: &'a WheelRelease,
) -> (Vec<Problem>, Vec<OffRelease<'a>>) {
    let mut out = Vec::new();
    let mut off = Vec::new();
    for (i, c) in m.toolkit.components.iter().enumerate() {
        let Some(pinned) = release.components.iter().find(|r| r.name == c.name) else {
            out.push(Problem::warning(
                format!("toolkit.components[{i}].name"),
                format!(
                    "`{}` is not a component stackpin's data lists for CUDA {}; its version is not checked",
                    c.name, release.version
                ),
            ));
            continue;
        };
        if pinned.version != c.version {
            off.push((c, pinned));
            continue;
        }
        if let Some(wheel) = pinned.wheel(m.os)
            && (wheel.file != c.file || !wheel.sha256.eq_ignore_ascii_case(&c.sha256))
        {
            out.push(Problem::error(
                format!("toolkit.components[{i}].sha256"),
                format!(
                    "{} is published as {} with sha256 {}; the manifest has {} with {}",
                    c.requirement(),
                    wheel.file,
                    wheel.sha256,
                    c.file,
                    c.sha256
                ),
            ));
        }
    }
    (out, off)
}

/// Components at versions other than the release's: one error naming what is mixed with what.
fn one_release_rule(
    components: &[ToolkitWheel],
    release: &WheelRelease,
    off: &[OffRelease<'_>],
) -> Option<Problem> {
    if off.is_empty() {
        return None;
    }
    let named = |name: &str, version: &Version| format!("{name} {version}");
    let as_pinned: Vec<String> = components
        .iter()
        .filter(|c| !off.iter().any(|(o, _)| o.name == c.name))
        .map(|c| named(&c.name, &c.version))
        .collect();
    let mixed: Vec<String> = off
        .iter()
        .map(|(c, _)| named(&c.name, &c.version))
        .collect();
    let wanted: Vec<String> = off
        .iter()
        .map(|(_, p)| named(&p.name, &p.version))
        .collect();
    Some(Problem::error(
        "toolkit.components",
        format!(
            "the components are not all of one release: {} with {}; CUDA {} (cuda-toolkit {}) pins {}",
            if as_pinned.is_empty() {
                format!("CUDA {}", release.version)
            } else {
                as_pinned.join(", ")
            },
            mixed.join(", "),
            release.version,
            release.package,
            wanted.join(", ")
        ),
    ))
}

/// A missing compiler component, named with the version the release pins.
fn compiler_component_rules(components: &[ToolkitWheel], release: &WheelRelease) -> Vec<Problem> {
    COMPILER_COMPONENTS
        .into_iter()
        .filter(|name| !components.iter().any(|c| c.name == *name))
        .filter_map(|name| release.components.iter().find(|r| r.name == name))
        .map(|pinned| {
            Problem::error(
                "toolkit.components",
                format!(
                    "no `{}`: nvcc cannot compile a kernel without it; add {}=={}",
                    pinned.name, pinned.name, pinned.version
                ),
            )
        })
        .collect()
}

/// The library release's supported CUDA lines and Python range.
pub fn library_rules(m: &Manifest) -> Vec<Problem> {
    let release = match known_release(m) {
        Ok(release) => release,
        Err(unknown) => return vec![unknown],
    };
    let mut out = Vec::new();
    out.extend(cuda_line_rule(m, &release));
    out.extend(release_version_rule(m, &release));
    out.extend(python_rule(m, &release));
    out.extend(index_rule(m, &release));
    out
}

/// The library's release in the data, or the warning that it is not there.
fn known_release(m: &Manifest) -> Result<Box<LibraryRelease>, Problem> {
    let lib = &m.library;
    match compat::library_release(&lib.name, &lib.version, m.os) {
        LibraryLookup::Known(r) => Ok(r),
        LibraryLookup::UnknownRelease { known } => Err(Problem::warning(
            "library.version",
            format!(
                "{} {} is not in stackpin's release data of {} ({} known on {}: {}); you vouch for its CUDA and Python support",
                lib.name,
                lib.version,
                compat::data_date(),
                lib.name,
                m.os,
                known.join(", ")
            ),
        )),
        LibraryLookup::UnknownLibrary => Err(Problem::warning(
            "library.name",
            format!(
                "`{}` is not in stackpin's release data of {} (it knows {}); you vouch for its CUDA and Python support",
                lib.name,
                compat::data_date(),
                compat::KNOWN_LIBRARIES.join(", ")
            ),
        )),
    }
}

/// CUDA lines as the release notes write them: `12.4, 12.6`.
fn cuda_lines(versions: &[Version]) -> String {
    versions
        .iter()
        .map(|c| c.major_minor())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The toolkit's line against the lines the release supports, stable or experimental.
fn cuda_line_rule(m: &Manifest, release: &LibraryRelease) -> Option<Problem> {
    let lib = &m.library;
    let toolkit_line = &m.toolkit.version;
    match release.cuda_support(toolkit_line) {
        CudaSupport::Stable => None,
        CudaSupport::Experimental => Some(Problem::warning(
            "toolkit.version",
            format!(
                "{} {} lists CUDA {} as experimental; the stable lines are {}",
                lib.name,
                release.release,
                toolkit_line.major_minor(),
                cuda_lines(&release.stable_cuda)
            ),
        )),
        CudaSupport::Unsupported => Some(Problem::error(
            "toolkit.version",
            format!(
                "{} {} does not support CUDA {}: its release notes name {} (stable){}. Pin one of those toolkit lines",
                lib.name,
                release.release,
                toolkit_line.major_minor(),
                cuda_lines(&release.stable_cuda),
                if release.experimental_cuda.is_empty() {
                    String::new()
                } else {
                    format!(
                        " and {} (experimental)",
                        cuda_lines(&release.experimental_cuda)
                    )
                }
            ),
        )),
    }
}

/// A version the data does not list within a known release line (2.5.9 in the 2.5 line).
fn release_version_rule(m: &Manifest, release: &LibraryRelease) -> Option<Problem> {
    let lib = &m.library;
    let public = lib.version.public();
    if release.versions.iter().any(|v| v.same_release(&public)) {
        return None;
    }
    Some(Problem::warning(
        "library.version",
        format!(
            "{} {} is not a release stackpin knows in the {} line ({}); you vouch for it",
            lib.name,
            lib.version,
            release.release,
            release
                .versions
                .iter()
                .map(Version::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// A Python the release publishes no wheels for.
fn python_rule(m: &Manifest, release: &LibraryRelease) -> Option<Problem> {
    let lib = &m.library;
    let py = lib.python_version.as_ref()?;
    if release.python.contains(py) {
        return None;
    }
    Some(Problem::error(
        "library.python_version",
        format!(
            "{} {} supports Python {} to {}; Python {py} has no wheels. Pick a Python in that range",
            lib.name, release.release, release.python.min, release.python.max
        ),
    ))
}

/// A torch build for CUDA 12.4 comes from the cu124 index; another index gives another build.
fn index_rule(m: &Manifest, release: &LibraryRelease) -> Vec<Problem> {
    let Some(pip) = &m.library.pip else {
        return vec![];
    };
    let line = m.library.cuda.major_minor();
    match (release.index_urls.get(&line), &pip.index_url) {
        (Some(expected), Some(actual))
            if expected.trim_end_matches('/') != actual.trim_end_matches('/') =>
        {
            vec![Problem::warning(
                "library.pip.index_url",
                format!(
                    "{} wheels built for CUDA {line} are published at {expected}; `{actual}` may serve another build",
                    m.library.name
                ),
            )]
        }
        (Some(expected), None) => vec![Problem::warning(
            "library.pip.index_url",
            format!(
                "no index given, so pip's default index decides which CUDA build of {} you get; use {expected} for the CUDA {line} build",
                m.library.name
            ),
        )],
        _ => vec![],
    }
}

/// The GPU-generation rules for one compute capability: the pinned driver's branch drives it,
/// the toolkit line compiles for it, the library build has kernels that run on it.
pub fn gpu_rules(m: &Manifest, compute: &str) -> Vec<Problem> {
    let release = match compat::library_release(&m.library.name, &m.library.version, m.os) {
        LibraryLookup::Known(r) => Some(r),
        _ => None,
    };
    let version = m.library.version.public();
    let stack = compat::StackForGpu {
        os: m.os,
        driver: Some(&m.driver.version),
        toolkit: &m.toolkit.version,
        library: release.as_deref().map(|r| (r, &version)),
    };
    compat::gpu_mismatches(&stack, compute)
        .into_iter()
        .map(|mismatch| {
            let field = mismatch.field();
            if mismatch.is_error() {
                Problem::error(field, mismatch.with_fix())
            } else {
                Problem::warning(field, mismatch.with_fix())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = include_str!("../manifests/torch-2.5.1-cu124-linux.yaml");

    /// The shipped torch manifest with one line replaced, checked as `stackpin check` would.
    fn checked(from: &str, to: &str, gpus: &[&str]) -> Report {
        assert!(SHIPPED.contains(from), "the shipped manifest has `{from}`");
        checked_text(&SHIPPED.replacen(from, to, 1), gpus)
    }

    /// The shipped torch manifest as it is.
    fn shipped(gpus: &[&str]) -> Report {
        checked_text(SHIPPED, gpus)
    }

    fn checked_text(text: &str, gpus: &[&str]) -> Report {
        let m = manifest::parse(text, std::path::Path::new("torch.yaml")).expect("parses");
        let gpus: Vec<String> = gpus.iter().map(|g| g.to_string()).collect();
        check_for_gpus(&m, Some(text), &gpus)
    }

    /// The shipped manifest with a wheel toolkit of CUDA `release`, its components as the data
    /// pins them except those in `replace` (`name` → `(version, file, sha256)`).
    fn wheel_toolkit(release: &str, replace: &[(&str, (&str, &str, &str))]) -> Report {
        let version = Version::parse(release).expect("version");
        let mut rows = String::new();
        let data = compat::toolkit_wheels(&version);
        for c in data.map(|r| r.components.as_slice()).unwrap_or_default() {
            let wheel = c.wheel(crate::os::Os::Linux).expect("a Linux wheel");
            let (v, file, sha) = replace
                .iter()
                .find(|(name, _)| *name == c.name)
                .map(|(_, r)| (r.0.to_string(), r.1.to_string(), r.2.to_string()))
                .unwrap_or_else(|| {
                    (
                        c.version.to_string(),
                        wheel.file.clone(),
                        wheel.sha256.clone(),
                    )
                });
            rows.push_str(&format!(
                "    - {{name: {}, version: \"{v}\", file: {file}, sha256: {sha}}}\n",
                c.name
            ));
        }
        if data.is_none() {
            rows.push_str(&format!(
                "    - {{name: nvidia-cuda-nvcc, version: \"{release}\", file: nvidia_cuda_nvcc-{release}-py3-none-manylinux2014_x86_64.whl, sha256: {}}}\n",
                "a".repeat(64)
            ));
        }
        let line = version.major_minor();
        let start = SHIPPED.find("toolkit:\n").expect("toolkit");
        let end = SHIPPED.find("library:\n").expect("library");
        let text = format!(
            "{}toolkit:\n  version: \"{release}\"\n  source: wheels\n  root: \"/home/me/cuda-{line}\"\n  components:\n{rows}{}",
            &SHIPPED[..start],
            SHIPPED[end..].replace("cuda: \"12.4\"", &format!("cuda: \"{line}\""))
        );
        checked_text(&text, &[])
    }

    #[test]
    fn a_wheel_toolkit_of_one_release_passes_its_rules() {
        let report = wheel_toolkit("13.0.2", &[]);
        assert!(
            errors_on(&report, "toolkit.components").is_empty(),
            "{report:?}"
        );
        assert!(
            errors_on(&report, "toolkit.source").is_empty(),
            "{report:?}"
        );
    }

    #[test]
    fn nvcc_13_0_88_with_nvvm_and_crt_13_5_37_is_refused_naming_every_version() {
        let report = wheel_toolkit(
            "13.0.2",
            &[
                (
                    "nvidia-nvvm",
                    (
                        "13.5.37",
                        "nvidia_nvvm-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
                        "c41bfa362e407405163f103c2229f0765f8cc2ed7d148b754dc77f228bf7e070",
                    ),
                ),
                (
                    "nvidia-cuda-crt",
                    (
                        "13.5.37",
                        "nvidia_cuda_crt-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                        "e898b7f73d3035fa89915a3f7bf3b54a73e90249746111aed295822c4729bb29",
                    ),
                ),
            ],
        );
        let errors = errors_on(&report, "toolkit.components");
        assert_eq!(errors.len(), 1, "{report:?}");
        let m = &errors[0].message;
        assert!(m.contains("nvidia-cuda-nvcc 13.0.88"), "{m}");
        assert!(
            m.contains("with nvidia-cuda-crt 13.5.37, nvidia-nvvm 13.5.37"),
            "{m}"
        );
    }

    #[test]
    fn a_component_of_another_update_of_the_line_is_refused_against_the_release() {
        // An nvcc of the 13.1 line, but not the one CUDA 13.1.1 names (13.1.115).
        let report = wheel_toolkit(
            "13.1.1",
            &[(
                "nvidia-cuda-nvcc",
                (
                    "13.1.80",
                    "nvidia_cuda_nvcc-13.1.80-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                    &"b".repeat(64),
                ),
            )],
        );
        let errors = errors_on(&report, "toolkit.components");
        assert_eq!(errors.len(), 1, "{report:?}");
        assert!(
            errors[0].message.contains("pins nvidia-cuda-nvcc 13.1.115"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn cuda_12_wheels_are_refused_for_carrying_no_nvcc() {
        let report = wheel_toolkit("12.9.1", &[]);
        let errors = errors_on(&report, "toolkit.source");
        assert_eq!(errors.len(), 1, "{report:?}");
        assert!(
            errors[0].message.contains("no nvcc driver"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn a_published_file_with_another_sha256_is_refused() {
        let report = wheel_toolkit(
            "13.0.2",
            &[(
                "nvidia-cuda-cccl",
                (
                    "13.0.85",
                    "nvidia_cuda_cccl-13.0.85-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                    &"c".repeat(64),
                ),
            )],
        );
        assert_eq!(
            errors_on(&report, "toolkit.components[4].sha256").len(),
            1,
            "{report:?}"
        );
    }

    fn errors_on<'r>(report: &'r Report, field: &str) -> Vec<&'r Problem> {
        report
            .problems
            .iter()
            .filter(|p| p.severity == Severity::Error && p.field == field)
            .collect()
    }

    #[test]
    fn the_shipped_manifest_passes_without_errors() {
        let report = shipped(&[]);
        assert!(report.ok, "{:#?}", report.problems);
        assert_eq!(report.count(Severity::Error), 0);
    }

    #[test]
    fn a_driver_older_than_the_toolkits_minimum_is_an_error_on_its_line_with_the_minimum() {
        let report = checked("\"595.71.05\"", "\"535.104.05\"", &[]);
        assert!(!report.ok);
        let errors = errors_on(&report, "driver.version");
        assert_eq!(errors.len(), 1, "{:#?}", report.problems);
        let e = errors[0];
        assert!(
            e.message.contains("550.54.15"),
            "names the minimum: {}",
            e.message
        );
        assert!(
            e.message.contains("535.104.05"),
            "names the pinned driver: {}",
            e.message
        );
        let line = SHIPPED
            .lines()
            .position(|l| l.contains("version: \"595.71.05\""))
            .map(|i| i + 1);
        assert_eq!(e.line, line, "placed on the driver's version line");
    }

    #[test]
    fn a_newer_driver_than_the_minimum_passes_the_one_way_rule() {
        let report = checked("\"595.71.05\"", "\"550.54.15\"", &[]);
        assert!(
            errors_on(&report, "driver.version").is_empty(),
            "{:#?}",
            report.problems
        );
    }

    #[test]
    fn a_toolkit_line_the_library_does_not_support_is_an_error_naming_the_supported_lines() {
        let report = checked("version: \"12.4.1\"", "version: \"12.6.3\"", &[]);
        let errors = errors_on(&report, "toolkit.version");
        assert_eq!(errors.len(), 1, "{:#?}", report.problems);
        let message = &errors[0].message;
        assert!(message.contains("12.6"), "{message}");
        assert!(
            message.contains("12.4"),
            "names the stable lines: {message}"
        );
    }

    #[test]
    fn a_python_without_wheels_is_an_error_naming_the_range() {
        let report = checked("python_version: \"3.12\"", "python_version: \"3.13\"", &[]);
        let errors = errors_on(&report, "library.python_version");
        assert_eq!(errors.len(), 1, "{:#?}", report.problems);
        assert!(
            errors[0].message.contains("3.9 to 3.12"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn an_unknown_library_release_is_a_warning_the_user_vouches_for_never_an_error() {
        let report = checked("version: \"2.5.1\"", "version: \"2.99.0\"", &[]);
        assert!(report.ok, "{:#?}", report.problems);
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.field == "library.version" && p.message.contains("vouch")),
            "{:#?}",
            report.problems
        );
    }

    #[test]
    fn another_wheel_index_warns_that_it_may_serve_another_build() {
        let report = checked("whl/cu124", "whl/cu121", &[]);
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.field == "library.pip.index_url" && p.severity == Severity::Warning),
            "{:#?}",
            report.problems
        );
    }

    #[test]
    fn gpu_rules_apply_only_for_the_cards_named() {
        // torch 2.5.1's CUDA 12.4 build carries no Blackwell (12.0) kernels.
        let without = shipped(&[]);
        let with = shipped(&["12.0"]);
        assert!(without.ok);
        assert!(!with.ok, "{:#?}", with.problems);
        assert!(
            with.problems
                .iter()
                .any(|p| p.severity == Severity::Error && p.message.contains("12.0")),
            "{:#?}",
            with.problems
        );
        // A card the stack drives and compiles for adds no error.
        assert!(shipped(&["8.9"]).ok);
    }

    #[test]
    fn errors_sort_before_warnings() {
        let report = checked("\"595.71.05\"", "\"535.104.05\"", &[]);
        let severities: Vec<Severity> = report.problems.iter().map(|p| p.severity).collect();
        let mut sorted = severities.clone();
        sorted.sort();
        assert_eq!(severities, sorted);
    }
}
