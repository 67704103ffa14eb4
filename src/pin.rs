//! `stackpin pin`: a complete manifest for a library release, from the release data alone.
//!
//! Picks the newest toolkit release of the newest CUDA line the library supports as stable (or
//! the line asked for), the newest driver stackpin knows that meets that toolkit's minimum, and
//! NVIDIA's real installer URLs; writes toolkit-only install arguments and the pip section.

// Errors are built once per command and carry versions for the message; boxing buys nothing.
#![allow(clippy::result_large_err)]

use crate::compat::{self, CudaSupport, DriverRequirement, LibraryLookup, LibraryRelease, Os};
use crate::manifest::{
    DriverLayer, Example, Installer, LibraryLayer, Manifest, PipSection, Role, SCHEMA,
    ToolkitLayer, VramSettings, duration_text,
};
use crate::version::Version;

/// The cycle time written into a pinned inference manifest until the user sets the line's own:
/// a 30 frames-per-second camera.
pub const PINNED_CYCLE_TIME_MS: f64 = 33.0;

/// What the user asked `pin` for.
#[derive(Debug, Clone)]
pub struct PinRequest {
    pub library: String,
    pub version: Version,
    pub os: Os,
    pub toolkit: Option<Version>,
    pub driver: Option<Version>,
    pub python: Option<Version>,
}

/// A pinned manifest and the notes a user should read about how it was chosen.
#[derive(Debug, Clone)]
pub struct Pinned {
    pub manifest: Manifest,
    pub notes: Vec<String>,
    /// The manifest as YAML, with comments citing the release data.
    pub yaml: String,
}

/// Why `pin` could not write a manifest (exit 2: the request names something unknown).
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("stackpin has no release data for `{library}`; it knows {}", known.join(", "))]
    UnknownLibrary { library: String, known: Vec<String> },
    #[error("{library} {version} is not in stackpin's release data for {os}; known releases: {}", known.join(", "))]
    UnknownRelease {
        library: String,
        version: Version,
        os: Os,
        known: Vec<String>,
    },
    #[error("{library} {release} does not support CUDA {line}; it supports {supported}")]
    UnsupportedToolkit {
        library: String,
        release: Version,
        line: String,
        supported: String,
    },
    #[error(
        "CUDA {toolkit} is not in stackpin's release data, or NVIDIA's installer file name for it on {os} is unknown; known {line} releases: {known}"
    )]
    UnknownToolkit {
        toolkit: Version,
        os: Os,
        line: String,
        known: String,
    },
    #[error(
        "driver {driver} is below CUDA {toolkit}'s minimum {min} on {os}; give --driver {min} or newer"
    )]
    DriverTooOld {
        driver: Version,
        toolkit: Version,
        min: Version,
        os: Os,
    },
    #[error(
        "stackpin knows no {os} driver that meets CUDA {line} (needs ≥ {min}); give --driver with a newer NVIDIA driver"
    )]
    NoKnownDriver { os: Os, line: String, min: Version },
    #[error("{library} {release} supports Python {min} to {max}, not {python}")]
    UnsupportedPython {
        library: String,
        release: Version,
        python: Version,
        min: Version,
        max: Version,
    },
}

/// Pins a stack for a library release.
pub fn pin(req: &PinRequest) -> Result<Pinned, PinError> {
    let release = match compat::library_release(&req.library, &req.version, req.os) {
        LibraryLookup::Known(r) => r,
        LibraryLookup::UnknownRelease { known } => {
            return Err(PinError::UnknownRelease {
                library: req.library.clone(),
                version: req.version.clone(),
                os: req.os,
                known,
            });
        }
        LibraryLookup::UnknownLibrary => {
            return Err(PinError::UnknownLibrary {
                library: req.library.clone(),
                known: compat::KNOWN_LIBRARIES
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            });
        }
    };
    let mut notes = Vec::new();
    let (toolkit, driver, min) = choose_toolkit_and_driver(req, &release, &mut notes)?;
    let python = choose_python(req, &release)?;
    let manifest = build(req, &release, &toolkit, &driver, &python);
    notes.push(format!(
        "driver {driver} is the newest {} driver in stackpin's data of {} that meets CUDA {toolkit}'s minimum {min}; check https://www.nvidia.com/Download/index.aspx for a newer one and pin that",
        req.os,
        compat::drivers_read_on()
    ));
    let yaml = render(&manifest, &release, &min);
    Ok(Pinned {
        manifest,
        notes,
        yaml,
    })
}

fn supported_lines(release: &LibraryRelease) -> String {
    let mut text = release
        .stable_cuda
        .iter()
        .map(|c| c.major_minor())
        .collect::<Vec<_>>()
        .join(", ");
    text.push_str(" (stable)");
    if !release.experimental_cuda.is_empty() {
        text.push_str(&format!(
            ", {} (experimental)",
            release
                .experimental_cuda
                .iter()
                .map(|c| c.major_minor())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    text
}

/// The driver floor a toolkit needs on an OS, if the tables know one.
fn driver_floor(toolkit: &Version, os: Os) -> Option<Version> {
    match compat::min_driver_for(toolkit, os) {
        DriverRequirement::Release { min, .. } => Some(min),
        DriverRequirement::Branch { floor, .. } => Some(floor),
        DriverRequirement::Unknown => None,
    }
}

fn choose_toolkit_and_driver(
    req: &PinRequest,
    release: &LibraryRelease,
    notes: &mut Vec<String>,
) -> Result<(Version, Version, Version), PinError> {
    let candidates: Vec<Version> = match &req.toolkit {
        Some(asked) => {
            if release.cuda_support(asked) == CudaSupport::Unsupported {
                return Err(PinError::UnsupportedToolkit {
                    library: release.library.clone(),
                    release: release.release.clone(),
                    line: asked.major_minor(),
                    supported: supported_lines(release),
                });
            }
            if release.cuda_support(asked) == CudaSupport::Experimental {
                notes.push(format!(
                    "{} {} lists CUDA {} as experimental",
                    release.library,
                    release.release,
                    asked.major_minor()
                ));
            }
            vec![asked.clone()]
        }
        None => {
            let mut lines = release.stable_cuda.clone();
            lines.sort_by(|a, b| b.cmp(a));
            lines
        }
    };
    let mut last_error = None;
    for line in &candidates {
        match pin_line(req, line) {
            Ok(found) => {
                if line.major_minor() != candidates[0].major_minor() {
                    notes.push(format!(
                        "pinned CUDA {} instead of {}: {}",
                        line.major_minor(),
                        candidates[0].major_minor(),
                        last_error
                            .as_ref()
                            .map(|e: &PinError| e.to_string())
                            .unwrap_or_default()
                    ));
                }
                return Ok(found);
            }
            Err(e @ PinError::DriverTooOld { .. }) => return Err(e),
            Err(e) => {
                if last_error.is_none() {
                    last_error = Some(e);
                }
            }
        }
    }
    Err(last_error.unwrap_or_else(|| PinError::UnsupportedToolkit {
        library: release.library.clone(),
        release: release.release.clone(),
        line: "-".into(),
        supported: supported_lines(release),
    }))
}

/// The toolkit release (exact if asked, else the newest with a known installer) and its driver.
fn pin_line(req: &PinRequest, asked: &Version) -> Result<(Version, Version, Version), PinError> {
    let line = asked.major_minor();
    let releases = compat::toolkit_releases(&line);
    let exact = asked.parts().len() > 2;
    let toolkit = releases
        .iter()
        .map(|r| r.version.clone())
        .filter(|v| !exact || v == asked)
        .find(|v| compat::toolkit_installer_url(v, req.os).is_some())
        .ok_or_else(|| PinError::UnknownToolkit {
            toolkit: asked.clone(),
            os: req.os,
            line: line.clone(),
            known: releases
                .iter()
                .map(|r| r.version.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let min = driver_floor(&toolkit, req.os).ok_or_else(|| PinError::UnknownToolkit {
        toolkit: toolkit.clone(),
        os: req.os,
        line: line.clone(),
        known: String::new(),
    })?;
    let driver = match &req.driver {
        Some(d) if d < &min => {
            return Err(PinError::DriverTooOld {
                driver: d.clone(),
                toolkit,
                min,
                os: req.os,
            });
        }
        Some(d) => d.clone(),
        None => compat::known_drivers(req.os)
            .into_iter()
            .map(|d| d.version.clone())
            .find(|d| d >= &min)
            .ok_or(PinError::NoKnownDriver {
                os: req.os,
                line,
                min: min.clone(),
            })?,
    };
    Ok((toolkit, driver, min))
}

/// The asked Python, or the newest the release supports up to 3.12 (what current LTS
/// distributions ship), so wheels exist and the interpreter is easy to get.
fn choose_python(req: &PinRequest, release: &LibraryRelease) -> Result<Version, PinError> {
    if let Some(py) = &req.python {
        if !release.python.contains(py) {
            return Err(PinError::UnsupportedPython {
                library: release.library.clone(),
                release: release.release.clone(),
                python: py.clone(),
                min: release.python.min.clone(),
                max: release.python.max.clone(),
            });
        }
        return Ok(py.clone());
    }
    let ceiling = Version::parse("3.12").unwrap_or_else(|_| release.python.max.clone());
    Ok(if release.python.max <= ceiling {
        release.python.max.clone()
    } else if release.python.min <= ceiling {
        ceiling
    } else {
        release.python.min.clone()
    })
}

/// Windows CUDA sub-packages for a training workstation: compiler, runtime and the math
/// libraries, never `Display.Driver` (PyTorch CI's list, trimmed to what training needs).
fn windows_subpackages(line: &str) -> Vec<String> {
    [
        "nvcc",
        "cudart",
        "cublas",
        "cublas_dev",
        "cufft",
        "cufft_dev",
        "curand",
        "curand_dev",
        "cusolver",
        "cusolver_dev",
        "cusparse",
        "cusparse_dev",
        "nvrtc",
        "nvrtc_dev",
        "nvtx",
        "thrust",
        "cuda_profiler_api",
    ]
    .iter()
    .map(|p| format!("{p}_{line}"))
    .collect()
}

fn stack_name(req: &PinRequest, release: &LibraryRelease, toolkit: &Version) -> String {
    format!(
        "{}-{}-cu{}{}-{}",
        release.library,
        req.version.public(),
        toolkit.major(),
        toolkit.minor(),
        req.os
    )
}

fn build(
    req: &PinRequest,
    release: &LibraryRelease,
    toolkit: &Version,
    driver: &Version,
    python: &Version,
) -> Manifest {
    let name = stack_name(req, release, toolkit);
    let line = toolkit.major_minor();
    let toolkit_url = compat::toolkit_installer_url(toolkit, req.os).unwrap_or_default();
    let (driver_run, toolkit_root, toolkit_run, python_cmd, venv) = match req.os {
        Os::Linux => (
            vec!["sh", "{installer}", "--silent", "--dkms"],
            format!("/usr/local/cuda-{line}"),
            vec![
                "sh",
                "{installer}",
                "--silent",
                "--toolkit",
                "--toolkitpath={root}",
                "--no-man-page",
            ]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
            "python3".to_string(),
            format!("/opt/stackpin/{name}"),
        ),
        Os::Windows => (
            vec!["{installer}", "-s", "-noreboot"],
            format!(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v{line}"),
            ["{installer}".to_string(), "-s".to_string()]
                .into_iter()
                .chain(windows_subpackages(&line))
                .collect(),
            "python".to_string(),
            format!(r"C:\stackpin\{name}"),
        ),
    };
    let described = crate::library::describe(&release.library);
    let inference = described.is_some_and(|d| d.is_inference());
    // The library's bundled example, as data/libraries.yaml names it.
    let run = described.map_or_else(
        || {
            crate::library::describe("torch")
                .map(|d| d.example_run())
                .unwrap_or_default()
        },
        |d| d.example_run(),
    );
    let example = if inference {
        // The deployment runtime alone: one request at a time, timed against a cycle time.
        Example {
            run,
            batch: 1,
            timeout: Some(crate::manifest::DEFAULT_EXAMPLE_TIMEOUT),
            cycle_time_ms: Some(PINNED_CYCLE_TIME_MS),
        }
    } else {
        Example {
            run,
            batch: crate::manifest::DEFAULT_BATCH,
            timeout: Some(crate::manifest::DEFAULT_EXAMPLE_TIMEOUT),
            cycle_time_ms: None,
        }
    };
    Manifest {
        schema: SCHEMA,
        role: if inference {
            Role::Inference
        } else {
            Role::Training
        },
        name,
        os: req.os,
        mirror: None,
        driver: DriverLayer {
            version: driver.clone(),
            installer: Installer {
                url: compat::driver_url(driver, req.os),
                sha256: None,
            },
            run: driver_run.into_iter().map(String::from).collect(),
            verify: None,
            timeout: None,
        },
        toolkit: ToolkitLayer {
            version: toolkit.clone(),
            installer: Installer {
                url: toolkit_url,
                sha256: None,
            },
            root: toolkit_root,
            run: toolkit_run,
            allow_bundled_driver: false,
            verify: None,
            timeout: None,
        },
        library: LibraryLayer {
            name: release.library.clone(),
            version: req.version.public(),
            cuda: Version::parse(&line).unwrap_or_else(|_| toolkit.clone()),
            python: python_cmd,
            python_version: Some(python.clone()),
            venv: Some(venv),
            pip: Some(PipSection {
                index_url: release.index_urls.get(&line).cloned(),
                requirements: release.requirements(&req.version.public()),
            }),
            installers: vec![],
            run: None,
            verify: None,
            timeout: None,
        },
        example,
        vram: VramSettings::default(),
    }
}

/// A YAML string: JSON's double-quoted form is valid YAML and escapes Windows backslashes.
fn q(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

fn list(items: &[String]) -> String {
    format!(
        "[{}]",
        items.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
    )
}

/// Writes the manifest with comments that cite where each pin came from.
pub fn render(m: &Manifest, release: &LibraryRelease, min_driver: &Version) -> String {
    let line = m.toolkit.version.major_minor();
    let mut y = String::new();
    let mut push = |s: &str| {
        y.push_str(s);
        y.push('\n');
    };
    push(&format!(
        "# {} {} + CUDA {} on {} — written by `stackpin pin` from release data read {}.",
        m.library.name, m.library.version, m.toolkit.version, m.os, release.read_on
    ));
    let notes_url = if compat::is_inference_runtime(&m.library.name) {
        "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements"
    } else if m.library.name == "tensorflow" {
        match m.os {
            Os::Linux => "https://www.tensorflow.org/install/source#gpu",
            Os::Windows => "https://www.tensorflow.org/install/source_windows#gpu",
        }
    } else {
        "https://github.com/pytorch/pytorch/blob/main/RELEASE.md"
    };
    push(&format!(
        "# {} {} supports CUDA {} ({notes_url}).",
        m.library.name,
        release.release,
        supported_lines(release)
    ));
    push(&format!(
        "# CUDA {}: minimum driver {} on {} (CUDA Toolkit Release Notes, \"CUDA Driver\" table:",
        m.toolkit.version, min_driver, m.os
    ));
    push("#   https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html).");
    push(&format!("schema: {}", m.schema));
    push(match m.role {
        Role::Training => "role: training",
        Role::Inference => "role: inference",
    });
    push(&format!("name: {}", m.name));
    push(&format!("os: {}", m.os));
    push("driver:");
    push(&format!(
        "  version: {}   # newest known at pin time; check NVIDIA for a newer one",
        q(&m.driver.version.to_string())
    ));
    push("  installer:");
    push(&format!("    url: {}", m.driver.installer.url));
    push("    sha256: null   # NVIDIA publishes none; the lock records it at the first fetch");
    if m.os == Os::Windows {
        push(
            "  # NVIDIA documents no silent flags for the driver; -s -noreboot is community practice.",
        );
    }
    push(&format!("  run: {}", list(&m.driver.run)));
    push("toolkit:");
    push(&format!("  version: {}", q(&m.toolkit.version.to_string())));
    push("  installer:");
    push(&format!("    url: {}", m.toolkit.installer.url));
    push("    sha256: null");
    push(&format!("  root: {}", q(&m.toolkit.root)));
    match m.os {
        Os::Linux => push("  # --toolkit alone: never the driver bundled in the runfile."),
        Os::Windows => push("  # Sub-packages listed: a bare -s would install Display.Driver too."),
    }
    push(&format!("  run: {}", list(&m.toolkit.run)));
    push("library:");
    push(&format!("  name: {}", m.library.name));
    push(&format!("  version: {}", q(&m.library.version.to_string())));
    push(&format!("  cuda: {}", q(&line)));
    push(&format!("  python: {}", m.library.python));
    if let Some(py) = &m.library.python_version {
        push(&format!(
            "  python_version: {}   # supported: {} to {}",
            q(&py.to_string()),
            release.python.min,
            release.python.max
        ));
    }
    if let Some(venv) = &m.library.venv {
        push(&format!("  venv: {}", q(venv)));
    }
    if let Some(pip) = &m.library.pip {
        push("  pip:");
        if let Some(index) = &pip.index_url {
            push(&format!("    index_url: {index}"));
        }
        push(&format!("    requirements: {}", list(&pip.requirements)));
    }
    push("example:");
    push(&format!("  run: {}", list(&m.example.run)));
    push(&format!("  batch: {}", m.example.batch));
    if let Some(ms) = m.example.cycle_time_ms {
        push(&format!(
            "  cycle_time_ms: {ms}   # the line's cycle time: set yours; prove fails when p99 exceeds it"
        ));
    }
    if let Some(t) = m.example.timeout {
        push(&format!("  timeout: {}", duration_text::format(t)));
    }
    push("vram:");
    push(&format!("  line: {}", m.vram.line));
    push(&format!(
        "  batches: [{}]",
        m.vram
            .batches
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;
    use crate::manifest;
    use std::path::Path;

    fn v(s: &str) -> Version {
        Version::parse(s).expect("version")
    }

    fn request(lib: &str, ver: &str, os: Os) -> PinRequest {
        PinRequest {
            library: lib.into(),
            version: v(ver),
            os,
            toolkit: None,
            driver: None,
            python: None,
        }
    }

    #[test]
    fn torch_2_5_1_pins_cuda_12_4_and_a_driver_at_or_above_the_minimum() {
        let linux = pin(&request("torch", "2.5.1", Os::Linux)).expect("pin linux");
        assert_eq!(linux.manifest.toolkit.version.major_minor(), "12.4");
        assert!(linux.manifest.driver.version >= v("550.54.15"));
        let windows = pin(&request("torch", "2.5.1", Os::Windows)).expect("pin windows");
        assert_eq!(windows.manifest.toolkit.version.major_minor(), "12.4");
        assert!(windows.manifest.driver.version >= v("551.78"));
        assert!(
            !windows
                .manifest
                .toolkit
                .run
                .iter()
                .any(|a| a == "Display.Driver")
        );
    }

    #[test]
    fn every_release_in_the_data_pins_to_a_manifest_that_checks_clean() {
        for os in [Os::Linux, Os::Windows] {
            for lib in compat::KNOWN_LIBRARIES {
                for version in compat::known_releases(lib, os) {
                    let pinned = pin(&request(lib, &version.to_string(), os))
                        .unwrap_or_else(|e| panic!("pin {lib} {version} {os}: {e}"));
                    let parsed = manifest::parse(&pinned.yaml, Path::new("pinned.yaml"))
                        .unwrap_or_else(|e| {
                            panic!("{lib} {version} {os} does not parse: {e}\n{}", pinned.yaml)
                        });
                    let report = check::check(&parsed, Some(&pinned.yaml));
                    assert!(
                        report.ok,
                        "{lib} {version} on {os} fails check: {:#?}\n{}",
                        report.problems, pinned.yaml
                    );
                }
            }
        }
    }

    #[test]
    fn asking_for_an_unsupported_line_names_the_supported_ones() {
        let mut req = request("torch", "2.5.1", Os::Linux);
        req.toolkit = Some(v("12.6"));
        let err = pin(&req).expect_err("12.6 is not a torch 2.5 line");
        assert!(err.to_string().contains("12.4"), "{err}");
    }

    #[test]
    fn a_given_driver_below_the_minimum_is_refused() {
        let mut req = request("torch", "2.5.1", Os::Linux);
        req.driver = Some(v("550.54.14"));
        assert!(matches!(pin(&req), Err(PinError::DriverTooOld { .. })));
        req.driver = Some(v("550.54.15"));
        assert_eq!(
            pin(&req).expect("at the minimum").manifest.driver.version,
            v("550.54.15")
        );
    }

    #[test]
    fn unknown_release_lists_what_is_known() {
        let err = pin(&request("torch", "9.9.0", Os::Linux)).expect_err("unknown");
        assert!(err.to_string().contains("2.5"), "{err}");
        assert!(matches!(
            pin(&request("mxnet", "1.9.1", Os::Linux)),
            Err(PinError::UnknownLibrary { .. })
        ));
    }
}
