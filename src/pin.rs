//! `stackpin pin`: a complete manifest for a library release, from the release data alone.
//!
//! Picks the newest toolkit release of the newest CUDA line the library supports as stable (or
//! the line asked for) whose build carries every target GPU's architecture, the newest driver
//! stackpin knows that meets that toolkit's minimum, drives every target GPU and has a standalone
//! download, and NVIDIA's real installer URLs; writes toolkit-only install arguments and the pip
//! section. The target GPUs and the host's Python come in with the request: probing the host is
//! the command's job.

// Errors are built once per command and carry versions for the message; boxing buys nothing.
#![allow(clippy::result_large_err)]

use crate::compat::{
    self, CudaSupport, DriverChannel, DriverRequirement, GpuMismatch, LibraryLookup,
    LibraryRelease, StackForGpu,
};
use crate::manifest::{
    DriverLayer, Example, Installer, LibraryInstaller, LibraryLayer, Manifest, PipSection, Role,
    SCHEMA, ToolkitLayer, ToolkitSource, ToolkitWheel, VramSettings, duration_text,
};
use crate::os::Os;
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
    /// The interpreter the manifest will use on this host and its version, when pinning for the
    /// OS stackpin runs on (`--python` overrides it).
    pub host_python: Option<(String, Version)>,
    /// The GPUs the stack must run on: `--gpu-arch`, or the host's when pinning for this host.
    pub gpus: Vec<TargetGpu>,
    /// The GPU's name as nvidia-smi reports it: picks the Windows driver package for its family.
    pub gpu_name: Option<String>,
    /// `--windows-server`: a data-center card gets NVIDIA's Windows Server driver file.
    pub windows_server: bool,
    /// `--unknown-release`: the user vouches for a release of a known line that the release data
    /// does not list; companions then come only from `with`.
    pub unknown_release: bool,
    /// `--with NAME==VERSION`: pip requirements pinned beside the library; one named like the
    /// data's companion (`torchvision`) replaces it.
    pub with: Vec<String>,
    /// What installs the library's wheels (`installer:`): uv unless asked otherwise or an
    /// existing manifest chose pip; a library without pip wheels ignores it.
    pub installer: LibraryInstaller,
    /// Where the toolkit comes from: the runfile (the default) or NVIDIA's component wheels,
    /// each pinned from the release data.
    pub toolkit_source: ToolkitSource,
}

/// A GPU a pinned stack must drive and compute on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetGpu {
    /// Compute capability, `6.1`.
    pub compute: String,
    /// What the user knows it by: `NVIDIA GeForce GTX 1080 (nvidia-smi)` or `--gpu-arch 6.1`.
    pub label: String,
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
    #[error(
        "{library} {version} is not a release in stackpin's data (the {line} line has {}); pin one of those, or pass --unknown-release to vouch for it{}",
        known.join(", "),
        companion.as_ref().map(|c| format!(" and name its {c} with --with {c}==VERSION")).unwrap_or_default()
    )]
    ReleaseNotInData {
        library: String,
        version: Version,
        line: String,
        known: Vec<String>,
        companion: Option<String>,
    },
    #[error(
        "--unknown-release: stackpin does not know which {companion} goes with {library} {version}; give it with --with {companion}==VERSION (from the release notes of {library} {version})"
    )]
    CompanionNotGiven {
        library: String,
        version: Version,
        companion: String,
    },
    #[error("--with `{given}`: write it as NAME==VERSION, e.g. torchvision==0.20.1")]
    BadWith { given: String },
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
    #[error("{library} {release} supports Python {min} to {max}, not {python}{}", wheels_reason(.wheels.as_deref()))]
    UnsupportedPython {
        library: String,
        release: Version,
        python: Version,
        min: Version,
        max: Version,
        /// The package index's wheel tags that bound the range, when the data records them.
        wheels: Option<String>,
    },
    #[error(
        "`{interpreter}` on this host is Python {python}, and {library} {release} supports Python {min} to {max}; install a Python in that range and pass --python X.Y, or pin another {library} release"
    )]
    HostPythonUnsupported {
        interpreter: String,
        python: Version,
        library: String,
        release: Version,
        min: Version,
        max: Version,
    },
    #[error(
        "{library} {version} cannot run on {}: {}. No CUDA line of {library} {version} fits; pin another {library} release for this GPU",
        gpus.join(", "),
        reasons.join("; ")
    )]
    NoBuildForGpu {
        library: String,
        version: Version,
        gpus: Vec<String>,
        reasons: Vec<String>,
    },
    #[error(
        "stackpin knows no {os} driver that meets CUDA {toolkit}'s minimum {min} and drives {}: {}; give --driver with an NVIDIA driver of a branch that drives it",
        gpus.join(", "),
        reasons.join("; ")
    )]
    NoDriverForGpu {
        os: Os,
        toolkit: Version,
        min: Version,
        gpus: Vec<String>,
        reasons: Vec<String>,
    },
    #[error("--driver {driver}: {}", reasons.join("; "))]
    DriverMissesGpu {
        driver: Version,
        reasons: Vec<String>,
    },
    #[error(
        "--driver {driver}: NVIDIA publishes {os} driver {driver} only inside a CUDA installer, not as a download of its own; {fix}"
    )]
    BundledDriver {
        driver: Version,
        os: Os,
        fix: String,
    },
}

impl PinError {
    /// True when the request is fine but the stack cannot fit the target host or GPUs (exit 1);
    /// every other error is in the request itself (exit 2).
    pub fn is_problem(&self) -> bool {
        matches!(
            self,
            PinError::HostPythonUnsupported { .. }
                | PinError::NoBuildForGpu { .. }
                | PinError::NoDriverForGpu { .. }
                | PinError::DriverMissesGpu { .. }
        )
    }
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
    let requirements = requirements(req, &release)?;
    let mut notes = Vec::new();
    let python = choose_python(req, &release, &mut notes)?;
    let (toolkit, driver, min) = choose_toolkit_and_driver(req, &release, &mut notes)?;
    let mut manifest = build(req, &release, &toolkit, &driver, &python);
    if let Some(pip) = manifest.library.pip.as_mut() {
        pip.requirements = requirements;
    }
    notes.push(driver_note(req, &driver, &toolkit, &min));
    notes.extend(bundled_note(req.os, &driver, &toolkit));
    let yaml = render(&manifest, &release, &min, req.driver.is_some());
    Ok(Pinned {
        manifest,
        notes,
        yaml,
    })
}

/// The pip requirements: the data's for a release it lists, with `--with` replacing or adding;
/// for a release it does not list, only with `--unknown-release`, and then every companion the
/// line has must come from `--with` — a companion version is never guessed.
fn requirements(req: &PinRequest, release: &LibraryRelease) -> Result<Vec<String>, PinError> {
    let version = req.version.public();
    let with = req
        .with
        .iter()
        .map(|given| match given.split_once("==") {
            Some((name, v)) if !name.trim().is_empty() && !v.trim().is_empty() => Ok((
                requirement_name(name),
                format!("{}=={}", name.trim(), v.trim()),
            )),
            _ => Err(PinError::BadWith {
                given: given.clone(),
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let known = release.versions.iter().any(|v| same_padded(v, &version));
    let companion = release.companion_name();
    if !known && !req.unknown_release {
        return Err(PinError::ReleaseNotInData {
            library: release.library.clone(),
            version,
            line: release.release.to_string(),
            known: release.versions.iter().map(Version::to_string).collect(),
            companion: companion.map(str::to_string),
        });
    }
    if !known
        && let Some(c) = companion
        && !with.iter().any(|(name, _)| name == &requirement_name(c))
    {
        return Err(PinError::CompanionNotGiven {
            library: release.library.clone(),
            version,
            companion: c.to_string(),
        });
    }
    // An unknown release never gets the data's companion pair: that would be a guess.
    let mut reqs: Vec<String> = release
        .requirements(&version)
        .into_iter()
        .filter(|r| known || companion.is_none_or(|c| requirement_name(r) != requirement_name(c)))
        .collect();
    for (name, requirement) in with {
        reqs.retain(|r| requirement_name(r) != name);
        reqs.push(requirement);
    }
    Ok(reqs)
}

/// The distribution name of a requirement, normalised the way pip compares them.
fn requirement_name(requirement: &str) -> String {
    requirement
        .split(['=', '<', '>', '!', '~', '[', ';', ' '])
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
        .replace(['_', '.'], "-")
}

/// `2.5` and `2.5.0` name the same release.
fn same_padded(a: &Version, b: &Version) -> bool {
    let pad = |v: &Version| {
        let mut p = v.parts().to_vec();
        p.resize(4, 0);
        p
    };
    pad(a) == pad(b)
}

/// How the driver was chosen, in words: `--driver` is the user's choice, never "the newest".
fn driver_note(req: &PinRequest, driver: &Version, toolkit: &Version, min: &Version) -> String {
    let gpus = if req.gpus.is_empty() {
        String::new()
    } else {
        format!(
            " and drives {}",
            req.gpus
                .iter()
                .map(|g| g.label.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let channel = pinned_channel(req, driver);
    if req.driver.is_some() {
        format!(
            "driver {driver} as given with --driver ({channel} download); it meets CUDA {toolkit}'s minimum {min}{gpus}"
        )
    } else {
        format!(
            "driver {driver} ({channel} download) is the newest {} driver in stackpin's data of {} that meets CUDA {toolkit}'s minimum {min}{gpus}; check https://www.nvidia.com/Download/index.aspx for a newer one and pin that",
            req.os,
            compat::drivers_read_on()
        )
    }
}

/// Says so when a newer driver than the pinned one exists only inside a CUDA installer: it is
/// never offered, because NVIDIA publishes no download of it.
fn bundled_note(os: Os, driver: &Version, toolkit: &Version) -> Option<String> {
    let skipped: Vec<String> = compat::known_drivers(os)
        .into_iter()
        .filter(|d| d.channel == DriverChannel::Bundled && &d.version > driver)
        .map(|d| d.version.to_string())
        .collect();
    (!skipped.is_empty()).then(|| {
        format!(
            "not offered: {os} driver {} (NVIDIA publishes it only inside a CUDA installer, and CUDA {toolkit} is installed without its bundled driver)",
            skipped.join(", ")
        )
    })
}

/// Every rule a toolkit line (and, when given, a driver) breaks on the target GPUs, each worded
/// with the card it is about.
fn gpu_reasons(
    req: &PinRequest,
    release: &LibraryRelease,
    toolkit: &Version,
    driver: Option<&Version>,
) -> Vec<String> {
    let version = req.version.public();
    let stack = StackForGpu {
        os: req.os,
        driver,
        toolkit,
        library: Some((release, &version)),
    };
    req.gpus
        .iter()
        .flat_map(|gpu| {
            compat::gpu_mismatches(&stack, &gpu.compute)
                .into_iter()
                .filter(GpuMismatch::is_error)
                .map(move |m| format!("{}: {m}", gpu.label))
        })
        .collect()
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
            // Stable lines first, newest first; experimental ones only when no stable line fits.
            let mut stable = release.stable_cuda.clone();
            stable.sort_by(|a, b| b.cmp(a));
            let mut experimental = release.experimental_cuda.clone();
            experimental.sort_by(|a, b| b.cmp(a));
            stable.into_iter().chain(experimental).collect()
        }
    };
    let mut last_error = None;
    let mut gpu_refusals = Vec::new();
    for line in &candidates {
        let reasons = gpu_reasons(req, release, line, None);
        if !reasons.is_empty() {
            gpu_refusals.extend(reasons);
            continue;
        }
        match pin_line(req, line) {
            Ok(found) => {
                if line.major_minor() != candidates[0].major_minor() {
                    let why = gpu_refusals
                        .first()
                        .cloned()
                        .or_else(|| last_error.as_ref().map(|e: &PinError| e.to_string()))
                        .unwrap_or_default();
                    notes.push(format!(
                        "pinned CUDA {} instead of {}: {why}",
                        line.major_minor(),
                        candidates[0].major_minor(),
                    ));
                    if release.cuda_support(line) == CudaSupport::Experimental {
                        notes.push(format!(
                            "{} {} lists CUDA {} as experimental",
                            release.library,
                            release.release,
                            line.major_minor()
                        ));
                    }
                }
                return Ok(found);
            }
            Err(
                e @ (PinError::DriverTooOld { .. }
                | PinError::BundledDriver { .. }
                | PinError::DriverMissesGpu { .. }),
            ) => return Err(e),
            Err(e) => {
                if last_error.is_none() {
                    last_error = Some(e);
                }
            }
        }
    }
    if last_error.is_none() && !gpu_refusals.is_empty() {
        return Err(PinError::NoBuildForGpu {
            library: release.library.clone(),
            version: req.version.public(),
            gpus: req.gpus.iter().map(|g| g.label.clone()).collect(),
            reasons: gpu_refusals,
        });
    }
    Err(last_error.unwrap_or_else(|| PinError::UnsupportedToolkit {
        library: release.library.clone(),
        release: release.release.clone(),
        line: "-".into(),
        supported: supported_lines(release),
    }))
}

/// The component wheels of CUDA `toolkit` for `os` as the release data pins them; `None` when
/// the data lists no wheels for that release, or one of its components has none for `os`.
fn wheel_components(toolkit: &Version, os: Os) -> Option<Vec<ToolkitWheel>> {
    if compat::wheels_without_nvcc(toolkit).is_some() {
        return None;
    }
    compat::toolkit_wheels(toolkit)?
        .components
        .iter()
        .map(|c| {
            c.wheel(os).map(|w| ToolkitWheel {
                name: c.name.clone(),
                version: c.version.clone(),
                file: w.file.clone(),
                sha256: w.sha256.to_ascii_lowercase(),
            })
        })
        .collect()
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
        .find(|v| match req.toolkit_source {
            ToolkitSource::Runfile => compat::toolkit_installer_url(v, req.os).is_some(),
            ToolkitSource::Wheels => wheel_components(v, req.os).is_some(),
        })
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
        Some(d) => given_driver(req, d, &toolkit, &min)?,
        None => newest_fitting_driver(req, &toolkit, &min, &line)?,
    };
    Ok((toolkit, driver, min))
}

/// The newest driver that meets `min`, has a download of its own and drives every target GPU.
fn newest_fitting_driver(
    req: &PinRequest,
    toolkit: &Version,
    min: &Version,
    line: &str,
) -> Result<Version, PinError> {
    let wanted = card_channel(req);
    let offered: Vec<Version> = compat::known_drivers(req.os)
        .into_iter()
        .filter(|d| d.channel != DriverChannel::Bundled && &d.version >= min)
        // Without a card named, a workstation package is never guessed: it refuses GeForce cards.
        .filter(|d| match wanted {
            Some(c) => c == d.channel,
            None => d.channel != DriverChannel::Workstation,
        })
        .map(|d| d.version.clone())
        .collect();
    if offered.is_empty() {
        return Err(PinError::NoKnownDriver {
            os: req.os,
            line: line.to_string(),
            min: min.clone(),
        });
    }
    let gpu_reasons_for = |d: &Version| driver_reasons(req, toolkit, d);
    if let Some(d) = offered.iter().find(|d| gpu_reasons_for(d).is_empty()) {
        return Ok(d.clone());
    }
    Err(PinError::NoDriverForGpu {
        os: req.os,
        toolkit: toolkit.clone(),
        min: min.clone(),
        gpus: req.gpus.iter().map(|g| g.label.clone()).collect(),
        reasons: offered.first().map(gpu_reasons_for).unwrap_or_default(),
    })
}

/// The driver URL: on Windows the card's family picks the package (GeForce, RTX workstation,
/// data center, Windows Server); without a name, the row's channel decides. A bundled-only
/// driver never gets here: `given_driver` refuses it and `newest_fitting_driver` never offers it.
fn driver_url(req: &PinRequest, driver: &Version) -> String {
    match (req.os, req.gpu_name.as_deref()) {
        (Os::Windows, Some(name)) => {
            crate::windows_installers::driver_url_for(driver, Some(name), req.windows_server)
        }
        _ => compat::driver_url(driver, req.os).unwrap_or_default(),
    }
}

/// On Windows with a named card: the channel its version must come from, since NVIDIA numbers
/// data-center and RTX workstation releases apart from GeForce ones (a GeForce number under
/// `tesla/` or `Quadro_Certified/` is no file).
fn card_channel(req: &PinRequest) -> Option<DriverChannel> {
    use crate::windows_installers::{CardFamily, card_family};
    if req.os != Os::Windows {
        return None;
    }
    Some(match card_family(req.gpu_name.as_deref()?) {
        CardFamily::DataCenter => DriverChannel::DataCenter,
        CardFamily::RtxWorkstation => DriverChannel::Workstation,
        CardFamily::GeForce => DriverChannel::Desktop,
    })
}

/// The channel whose file `pin` writes for `driver`: the named card's, else the data's.
fn pinned_channel(req: &PinRequest, driver: &Version) -> DriverChannel {
    card_channel(req).unwrap_or_else(|| compat::driver_channel(driver, req.os))
}

/// The driver rules alone (the toolkit line was already checked against the GPUs).
fn driver_reasons(req: &PinRequest, toolkit: &Version, driver: &Version) -> Vec<String> {
    let stack = StackForGpu {
        os: req.os,
        driver: Some(driver),
        toolkit,
        library: None,
    };
    req.gpus
        .iter()
        .flat_map(|gpu| {
            compat::gpu_mismatches(&stack, &gpu.compute)
                .into_iter()
                .filter(|m| m.is_error() && m.field() == "driver.version")
                .map(move |m| format!("{}: {m}", gpu.label))
        })
        .collect()
}

/// `--driver`: refused when NVIDIA publishes it only inside a CUDA installer, or when it does
/// not drive a target GPU.
fn given_driver(
    req: &PinRequest,
    driver: &Version,
    toolkit: &Version,
    min: &Version,
) -> Result<Version, PinError> {
    if compat::driver_channel(driver, req.os) == DriverChannel::Bundled {
        let fix = match newest_fitting_driver(req, toolkit, min, &toolkit.major_minor()) {
            Ok(d) => format!(
                "give --driver {d} (a {} download that meets CUDA {toolkit}'s minimum {min}), or leave --driver out",
                pinned_channel(req, &d)
            ),
            Err(_) => format!(
                "give --driver with a standalone NVIDIA driver ≥ {min} from https://www.nvidia.com/Download/index.aspx"
            ),
        };
        return Err(PinError::BundledDriver {
            driver: driver.clone(),
            os: req.os,
            fix,
        });
    }
    let reasons = driver_reasons(req, toolkit, driver);
    if !reasons.is_empty() {
        return Err(PinError::DriverMissesGpu {
            driver: driver.clone(),
            reasons,
        });
    }
    Ok(driver.clone())
}

/// The refusal's reason from the index: `; the package index has its wheels for cp310-cp314 only`.
fn wheels_reason(wheels: Option<&str>) -> String {
    wheels
        .map(|w| format!("; the package index has its wheels for {w} only"))
        .unwrap_or_default()
}

/// The asked Python; else, when pinning for this host, the version of the interpreter the
/// manifest will use (its wheels are what pip will need); else the newest the release supports up
/// to 3.12 (what current LTS distributions ship). The note says which.
fn choose_python(
    req: &PinRequest,
    release: &LibraryRelease,
    notes: &mut Vec<String>,
) -> Result<Version, PinError> {
    if let (None, Some((interpreter, version))) = (&req.python, &req.host_python) {
        let line = Version::parse(&version.major_minor()).unwrap_or_else(|_| version.clone());
        if !release.python.contains(&line) {
            return Err(PinError::HostPythonUnsupported {
                interpreter: interpreter.clone(),
                python: version.clone(),
                library: release.library.clone(),
                release: release.release.clone(),
                min: release.python.min.clone(),
                max: release.python.max.clone(),
            });
        }
        notes.push(format!(
            "python_version {line}: `{interpreter}` on this host is Python {version}, the interpreter the manifest uses; --python overrides"
        ));
        return Ok(line);
    }
    if let Some(py) = &req.python {
        notes.push(format!("python_version {py}: as given with --python"));
        if !release.python.contains(py) {
            return Err(PinError::UnsupportedPython {
                library: release.library.clone(),
                release: release.release.clone(),
                python: py.clone(),
                min: release.python.min.clone(),
                max: release.python.max.clone(),
                wheels: release.python.wheels.clone(),
            });
        }
        return Ok(py.clone());
    }
    let ceiling = Version::parse("3.12").unwrap_or_else(|_| release.python.max.clone());
    let chosen = if release.python.max <= ceiling {
        release.python.max.clone()
    } else if release.python.min <= ceiling {
        ceiling
    } else {
        release.python.min.clone()
    };
    notes.push(format!(
        "python_version {chosen}: not pinning for this host's interpreter, so the newest Python {} {} supports up to 3.12; give --python X.Y for the target machine's",
        release.library, release.release
    ));
    Ok(chosen)
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

/// Where a stack's parts go on an OS, and how its installers and Python are called there.
struct OsLayout {
    driver_run: Vec<String>,
    toolkit_root: String,
    toolkit_run: Vec<String>,
    python: String,
    venv: String,
}

impl OsLayout {
    /// `line` is the toolkit's CUDA line (`12.4`), `name` the stack's name.
    fn new(os: Os, line: &str, name: &str) -> Self {
        match os {
            Os::Linux => OsLayout {
                driver_run: strings(&["sh", "{installer}", "--silent", "--dkms"]),
                toolkit_root: format!("/usr/local/cuda-{line}"),
                toolkit_run: strings(&[
                    "sh",
                    "{installer}",
                    "--silent",
                    "--toolkit",
                    "--toolkitpath={root}",
                    "--no-man-page",
                ]),
                python: "python3".to_string(),
                venv: format!("/opt/stackpin/{name}"),
            },
            Os::Windows => OsLayout {
                driver_run: crate::windows_installers::driver_run(),
                toolkit_root: format!(
                    r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v{line}"
                ),
                toolkit_run: crate::windows_installers::toolkit_run(line),
                python: "python".to_string(),
                venv: format!(r"C:\stackpin\{name}"),
            },
        }
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn build(
    req: &PinRequest,
    release: &LibraryRelease,
    toolkit: &Version,
    driver: &Version,
    python: &Version,
) -> Manifest {
    let name = stack_name(req, release, toolkit);
    let layout = OsLayout::new(req.os, &toolkit.major_minor(), &name);
    let (role, example) = pinned_example(&release.library);
    Manifest {
        schema: SCHEMA,
        role,
        name,
        os: req.os,
        mirror: None,
        driver: driver_layer(req, driver, layout.driver_run),
        toolkit: toolkit_layer(req, toolkit, layout.toolkit_root, layout.toolkit_run),
        library: library_layer(req, release, toolkit, python, layout.python, layout.venv),
        example,
        vram: VramSettings::default(),
    }
}

/// The library's bundled example, as data/libraries.yaml names it: an inference runtime's runs
/// one request at a time against a cycle time, a training library's at the default batch.
fn pinned_example(library: &str) -> (Role, Example) {
    let described = crate::compat::libraries().describe(library);
    let run = described.map_or_else(
        || {
            crate::compat::libraries()
                .describe("torch")
                .map(|d| d.example_run())
                .unwrap_or_default()
        },
        |d| d.example_run(),
    );
    if described.is_some_and(|d| d.is_inference()) {
        let example = Example {
            run,
            batch: 1,
            timeout: Some(crate::manifest::DEFAULT_EXAMPLE_TIMEOUT),
            cycle_time_ms: Some(PINNED_CYCLE_TIME_MS),
        };
        (Role::Inference, example)
    } else {
        let example = Example {
            run,
            batch: crate::manifest::DEFAULT_BATCH,
            timeout: Some(crate::manifest::DEFAULT_EXAMPLE_TIMEOUT),
            cycle_time_ms: None,
        };
        (Role::Training, example)
    }
}

/// An installer pinned to the checksum published for its URL, where the release data holds one
/// (data/checksums.yaml): the manifest then verifies the first download on its own.
fn published_installer(url: String) -> Installer {
    let sha256 = compat::published_checksum(&url).map(|p| p.sha256.clone());
    Installer { url, sha256 }
}

fn driver_layer(req: &PinRequest, driver: &Version, run: Vec<String>) -> DriverLayer {
    // The card's family picks the Windows package (GeForce, RTX workstation, data center, Server);
    // a bundled-only driver never gets here: `given_driver` refuses it and
    // `newest_fitting_driver` never offers it.
    let url = driver_url(req, driver);
    DriverLayer {
        version: driver.clone(),
        installer: published_installer(url),
        run,
        exit_codes: (req.os == Os::Windows).then(crate::windows_installers::driver_exit_codes),
        verify: None,
        timeout: None,
        prerequisites: None,
    }
}

/// The toolkit from NVIDIA's installer (toolkit-only arguments) or from its component wheels.
fn toolkit_layer(
    req: &PinRequest,
    toolkit: &Version,
    root: String,
    installer_run: Vec<String>,
) -> ToolkitLayer {
    let (installer, run, components) = match req.toolkit_source {
        ToolkitSource::Runfile => {
            let url = compat::toolkit_installer_url(toolkit, req.os).unwrap_or_default();
            let installer = published_installer(url);
            (Some(installer), installer_run, Vec::new())
        }
        ToolkitSource::Wheels => {
            let components = wheel_components(toolkit, req.os).unwrap_or_default();
            (None, Vec::new(), components)
        }
    };
    ToolkitLayer {
        version: toolkit.clone(),
        source: req.toolkit_source,
        installer,
        root,
        run,
        index_url: None,
        components,
        allow_bundled_driver: false,
        exit_codes: None,
        verify: None,
        timeout: None,
    }
}

fn library_layer(
    req: &PinRequest,
    release: &LibraryRelease,
    toolkit: &Version,
    python_version: &Version,
    python: String,
    venv: String,
) -> LibraryLayer {
    let line = toolkit.major_minor();
    LibraryLayer {
        name: release.library.clone(),
        version: req.version.public(),
        cuda: Version::parse(&line).unwrap_or_else(|_| toolkit.clone()),
        python,
        python_version: Some(python_version.clone()),
        venv: Some(venv),
        pip: Some(PipSection {
            index_url: release.index_urls.get(&line).cloned(),
            extra_index_urls: vec![],
            requirements: release.requirements(&req.version.public()),
        }),
        installer: req.installer,
        installers: vec![],
        run: None,
        exit_codes: None,
        verify: None,
        timeout: None,
    }
}

/// The YAML of a wheel toolkit below `version:`: its source, root and every component.
fn wheel_toolkit_lines(m: &Manifest) -> Vec<String> {
    let t = &m.toolkit;
    let package = compat::toolkit_wheels(&t.version)
        .map(|r| r.package.clone())
        .unwrap_or_else(|| t.version.to_string());
    let mut out = vec![
        format!(
            "  # NVIDIA's own wheels, each pinned to the version cuda-toolkit=={package} names (never a mix: see README \"Install\")."
        ),
        "  source: wheels".to_string(),
        "  # Unpacked here by stackpin, offline; a folder of your own needs no root.".to_string(),
        format!("  root: {}", q(&t.root)),
        "  components:".to_string(),
    ];
    for c in &t.components {
        out.push(format!("    - name: {}", c.name));
        out.push(format!("      version: {}", q(&c.version.to_string())));
        out.push(format!("      file: {}", c.file));
        out.push(format!("      sha256: {}", c.sha256));
    }
    out
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
pub fn render(
    m: &Manifest,
    release: &LibraryRelease,
    min_driver: &Version,
    driver_given: bool,
) -> String {
    let sections = [
        header_lines(m, release, min_driver),
        identity_lines(m),
        driver_lines(m, driver_given),
        toolkit_lines(m),
        library_lines(m, release),
        example_lines(m),
        vram_lines(m),
    ];
    let mut y = String::new();
    for line in sections.iter().flatten() {
        y.push_str(line);
        y.push('\n');
    }
    y
}

/// The comments above the manifest: what was pinned, and the release notes each pin cites.
fn header_lines(m: &Manifest, release: &LibraryRelease, min_driver: &Version) -> Vec<String> {
    let mut out = vec![
        format!(
            "# {} {} + CUDA {} on {} — written by `stackpin pin` from release data read {}.",
            m.library.name, m.library.version, m.toolkit.version, m.os, release.read_on
        ),
        format!(
            "# {} {} supports CUDA {} ({}).",
            m.library.name,
            release.release,
            supported_lines(release),
            release_notes_url(&m.library.name, m.os)
        ),
    ];
    let graded_b = compat::toolkit_releases(&m.toolkit.version.major_minor())
        .iter()
        .any(|r| r.version == m.toolkit.version && r.grade.as_deref() == Some("B"));
    if graded_b {
        // NVIDIA's table has no row for it: the data holds the installer's bundled driver.
        out.push(format!(
            "# CUDA {}: minimum driver {} on {} (the driver bundled in NVIDIA's installer; the release notes'",
            m.toolkit.version, min_driver, m.os
        ));
        out.push(
            "#   \"CUDA Driver\" table has no row for this update, grade B in stackpin's data)."
                .to_string(),
        );
    } else {
        out.push(format!(
            "# CUDA {}: minimum driver {} on {} (CUDA Toolkit Release Notes, \"CUDA Driver\" table:",
            m.toolkit.version, min_driver, m.os
        ));
        out.push(
            "#   https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html).".to_string(),
        );
    }
    out
}

/// Where a library's release notes list the CUDA lines it supports.
fn release_notes_url(library: &str, os: Os) -> &'static str {
    if compat::is_inference_runtime(library) {
        "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements"
    } else if library == "tensorflow" {
        match os {
            Os::Linux => "https://www.tensorflow.org/install/source#gpu",
            Os::Windows => "https://www.tensorflow.org/install/source_windows#gpu",
        }
    } else {
        "https://github.com/pytorch/pytorch/blob/main/RELEASE.md"
    }
}

/// The top-level keys: schema, role, name and OS.
fn identity_lines(m: &Manifest) -> Vec<String> {
    let role = match m.role {
        Role::Training => "role: training",
        Role::Inference => "role: inference",
    };
    vec![
        format!("schema: {}", m.schema),
        role.to_string(),
        format!("name: {}", m.name),
        format!("os: {}", m.os),
    ]
}

/// An installer's `sha256:` line: the pinned value with where it was published, or `null` with
/// `unknown`'s comment.
fn sha256_line(installer: &Installer, unknown: &str) -> String {
    match &installer.sha256 {
        Some(sha256) => {
            let source = compat::published_checksum(&installer.url)
                .map(|p| format!("published ({})", p.source))
                .unwrap_or_else(|| "pinned".to_string());
            format!("    sha256: {sha256}   # {source}; fetch refuses other bytes")
        }
        None => format!("    sha256: null{unknown}"),
    }
}

/// The `driver:` section, saying whether its version was given or picked.
fn driver_lines(m: &Manifest, driver_given: bool) -> Vec<String> {
    let origin = if driver_given {
        "as given with --driver"
    } else {
        "newest known at pin time; check NVIDIA for a newer one"
    };
    let mut out = vec![
        "driver:".to_string(),
        format!(
            "  version: {}   # {origin}",
            q(&m.driver.version.to_string())
        ),
        "  installer:".to_string(),
        format!("    url: {}", m.driver.installer.url),
        sha256_line(
            &m.driver.installer,
            "   # NVIDIA publishes none; the lock records it at the first fetch",
        ),
    ];
    if m.os == Os::Windows {
        out.push(
            "  # -s -noreboot -noeula as NVIDIA's cuda-python CI runs it; the package fits the card family (--gpu-name)."
                .to_string(),
        );
    }
    out.push(format!("  run: {}", list(&m.driver.run)));
    if let Some(codes) = &m.driver.exit_codes {
        out.push(format!(
            "  exit_codes: {{success: {:?}, reboot: {:?}}}   # the driver's setup exits 1 when it needs a reboot",
            codes.success, codes.reboot
        ));
    }
    out
}

/// The `toolkit:` section: NVIDIA's component wheels, or its installer with toolkit-only arguments.
fn toolkit_lines(m: &Manifest) -> Vec<String> {
    let mut out = vec![
        "toolkit:".to_string(),
        format!("  version: {}", q(&m.toolkit.version.to_string())),
    ];
    if m.toolkit.source == ToolkitSource::Wheels {
        out.extend(wheel_toolkit_lines(m));
    } else {
        out.extend(runfile_toolkit_lines(m));
    }
    out
}

/// The YAML of an installer toolkit below `version:`: its installer, root and arguments.
fn runfile_toolkit_lines(m: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(installer) = &m.toolkit.installer {
        out.push("  installer:".to_string());
        out.push(format!("    url: {}", installer.url));
        out.push(sha256_line(installer, ""));
    }
    out.push(format!("  root: {}", q(&m.toolkit.root)));
    out.push(match m.os {
        Os::Linux => "  # --toolkit alone: never the driver bundled in the runfile.".to_string(),
        Os::Windows => "  # -n: never reboot by itself. Sub-packages listed (a bare -s would install Display.Driver too); lists in README \"Windows\".".to_string(),
    });
    out.push(format!("  run: {}", list(&m.toolkit.run)));
    out
}

/// The `library:` section, with the Python range the release supports.
fn library_lines(m: &Manifest, release: &LibraryRelease) -> Vec<String> {
    let lib = &m.library;
    let mut out = vec![
        "library:".to_string(),
        format!("  name: {}", lib.name),
        format!("  version: {}", q(&lib.version.to_string())),
        format!("  cuda: {}", q(&m.toolkit.version.major_minor())),
        format!("  python: {}", lib.python),
    ];
    if let Some(py) = &lib.python_version {
        out.push(format!(
            "  python_version: {}   # supported: {} to {}",
            q(&py.to_string()),
            release.python.min,
            release.python.max
        ));
    }
    if let Some(venv) = &lib.venv {
        out.push(format!("  venv: {}", q(venv)));
    }
    if lib.installer == LibraryInstaller::Uv {
        out.push(
            "  installer: uv   # its wheel is pinned in the release data; `installer: pip` to use pip"
                .to_string(),
        );
    }
    if let Some(pip) = &lib.pip {
        out.push("  pip:".to_string());
        if let Some(index) = &pip.index_url {
            out.push(format!("    index_url: {index}"));
        }
        out.push(format!("    requirements: {}", list(&pip.requirements)));
    }
    out
}

/// The `example:` section.
fn example_lines(m: &Manifest) -> Vec<String> {
    let example = &m.example;
    let mut out = vec![
        "example:".to_string(),
        format!("  run: {}", list(&example.run)),
        format!("  batch: {}", example.batch),
    ];
    if let Some(ms) = example.cycle_time_ms {
        out.push(format!(
            "  cycle_time_ms: {ms}   # the line's cycle time: set yours; prove fails when p99 exceeds it"
        ));
    }
    if let Some(t) = example.timeout {
        out.push(format!("  timeout: {}", duration_text::format(t)));
    }
    out
}

/// The `vram:` section.
fn vram_lines(m: &Manifest) -> Vec<String> {
    let batches: Vec<String> = m.vram.batches.iter().map(u32::to_string).collect();
    vec![
        "vram:".to_string(),
        format!("  line: {}", m.vram.line),
        format!("  batches: [{}]", batches.join(", ")),
    ]
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for PinError {
    fn exit(&self) -> Exit {
        // A request that is fine but fits no stack to the host or its GPUs is a finding.
        if self.is_problem() {
            Exit::Problem
        } else {
            Exit::Input
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;
    use crate::manifest;
    use std::path::Path;

    use crate::version::v;

    fn request(lib: &str, ver: &str, os: Os) -> PinRequest {
        PinRequest {
            library: lib.into(),
            version: v(ver),
            os,
            toolkit: None,
            driver: None,
            python: None,
            host_python: None,
            gpus: vec![],
            gpu_name: None,
            windows_server: false,
            unknown_release: false,
            with: vec![],
            installer: LibraryInstaller::Uv,
            toolkit_source: ToolkitSource::Runfile,
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

    /// Releases whose every CUDA build needs a driver the data knows on Linux only: torch 2.15.0
    /// (CUDA 13.2, R595; no Windows R595 driver with evidence yet). `pin` refuses them on Windows
    /// with "knows no windows driver ... give --driver"; adding such a driver to drivers.yaml
    /// empties this list.
    const NO_KNOWN_WINDOWS_DRIVER: &[&str] = &["torch 2.15.0"];

    /// Pins, or `None` for a release listed in [`NO_KNOWN_WINDOWS_DRIVER`] refused for that reason.
    fn pin_or_known_gap(req: &PinRequest) -> Option<Result<Pinned, PinError>> {
        match pin(req) {
            Err(PinError::NoKnownDriver {
                os: Os::Windows, ..
            }) if NO_KNOWN_WINDOWS_DRIVER
                .contains(&format!("{} {}", req.library, req.version).as_str()) =>
            {
                None
            }
            other => Some(other),
        }
    }

    #[test]
    fn every_release_in_the_data_pins_to_a_manifest_that_checks_clean() {
        for os in [Os::Linux, Os::Windows] {
            for lib in compat::KNOWN_LIBRARIES {
                for version in compat::known_releases(lib, os) {
                    let Some(pinned) = pin_or_known_gap(&request(lib, &version.to_string(), os))
                    else {
                        continue;
                    };
                    let pinned = pinned.unwrap_or_else(|e| panic!("pin {lib} {version} {os}: {e}"));
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
    fn every_pin_for_each_gpu_generation_checks_clean_for_that_gpu_or_is_refused_for_it() {
        for os in [Os::Linux, Os::Windows] {
            for g in compat::gpu_generations() {
                let mut pinned_any = false;
                for lib in compat::KNOWN_LIBRARIES {
                    for version in compat::known_releases(lib, os) {
                        let mut req = request(lib, &version.to_string(), os);
                        req.gpus = vec![TargetGpu {
                            compute: g.compute.clone(),
                            label: format!("--gpu-arch {}", g.compute),
                        }];
                        let pinned = match pin_or_known_gap(&req) {
                            None => continue,
                            Some(Ok(p)) => p,
                            Some(Err(e)) if e.is_problem() => continue,
                            Some(Err(e)) => {
                                panic!("pin {lib} {version} {os} for {}: {e}", g.compute)
                            }
                        };
                        pinned_any = true;
                        let parsed = manifest::parse(&pinned.yaml, Path::new("pinned.yaml"))
                            .expect("a pinned manifest parses");
                        let report = check::check_for_gpus(
                            &parsed,
                            Some(&pinned.yaml),
                            std::slice::from_ref(&g.compute),
                        );
                        assert!(
                            report.ok,
                            "{lib} {version} on {os} for compute {} fails check: {:#?}\n{}",
                            g.compute, report.problems, pinned.yaml
                        );
                    }
                }
                assert!(pinned_any, "nothing pins for compute {} on {os}", g.compute);
            }
        }
    }

    #[test]
    fn a_pascal_card_gets_an_r580_driver_and_a_blackwell_card_no_torch_2_5() {
        let mut req = request("torch", "2.5.1", Os::Linux);
        req.gpus = vec![TargetGpu {
            compute: "6.1".into(),
            label: "GTX 1080".into(),
        }];
        let pinned = pin(&req).expect("torch 2.5.1 runs on Pascal");
        assert_eq!(pinned.manifest.driver.version.major(), 580);
        req.gpus[0].compute = "12.0".into();
        let err = pin(&req).expect_err("no torch 2.5.1 build for sm_120");
        assert!(err.is_problem(), "{err}");
        assert!(err.to_string().contains("Blackwell"), "{err}");
    }

    #[test]
    fn a_bundled_only_driver_is_refused_with_the_fix() {
        let mut req = request("torch", "2.5.1", Os::Windows);
        req.driver = Some(v("551.78"));
        let err = pin(&req).expect_err("551.78 ships only inside the CUDA installer");
        assert!(matches!(err, PinError::BundledDriver { .. }), "{err}");
        assert!(err.to_string().contains("--driver 581.15"), "{err}");
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

    fn reqs(p: &Pinned) -> Vec<String> {
        p.manifest
            .library
            .pip
            .as_ref()
            .map(|pip| pip.requirements.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_patch_release_the_data_does_not_list_is_refused_with_the_fix() {
        let err = pin(&request("torch", "2.5.9", Os::Linux)).expect_err("not in the data");
        assert!(matches!(err, PinError::ReleaseNotInData { .. }), "{err}");
        assert!(!err.is_problem(), "a request error: exit 2");
        let text = err.to_string();
        assert!(text.contains("2.5.1"), "{text}");
        assert!(text.contains("--unknown-release"), "{text}");
        assert!(text.contains("--with torchvision==VERSION"), "{text}");
    }

    #[test]
    fn unknown_release_never_guesses_the_companion() {
        let mut req = request("torch", "2.5.9", Os::Linux);
        req.unknown_release = true;
        let err = pin(&req).expect_err("companion missing");
        assert!(matches!(err, PinError::CompanionNotGiven { .. }), "{err}");
        req.with = vec!["TorchVision==0.20.9".into()];
        let pinned = pin(&req).expect("vouched for");
        let reqs = reqs(&pinned);
        assert!(reqs.contains(&"torch==2.5.9".to_string()), "{reqs:?}");
        assert!(
            reqs.contains(&"TorchVision==0.20.9".to_string()),
            "{reqs:?}"
        );
        assert_eq!(
            reqs.iter()
                .filter(|r| requirement_name(r) == "torchvision")
                .count(),
            1,
            "{reqs:?}"
        );
    }

    #[test]
    fn with_replaces_the_datas_companion_and_adds_others() {
        let mut req = request("torch", "2.5.1", Os::Linux);
        req.with = vec!["torchvision==0.20.0".into(), "numpy==1.26.4".into()];
        let reqs = reqs(&pin(&req).expect("pinned"));
        assert!(
            reqs.contains(&"torchvision==0.20.0".to_string()),
            "{reqs:?}"
        );
        assert!(
            !reqs.contains(&"torchvision==0.20.1".to_string()),
            "{reqs:?}"
        );
        assert!(reqs.contains(&"numpy==1.26.4".to_string()), "{reqs:?}");
    }

    #[test]
    fn with_without_a_version_is_refused() {
        let mut req = request("torch", "2.5.1", Os::Linux);
        req.with = vec!["torchvision".into()];
        assert!(matches!(pin(&req), Err(PinError::BadWith { .. })));
    }

    #[test]
    fn a_release_given_without_its_patch_counts_as_the_listed_one() {
        let tf = pin(&request("tensorflow", "2.17", Os::Linux));
        assert!(tf.is_ok(), "{:?}", tf.err().map(|e| e.to_string()));
    }
}
