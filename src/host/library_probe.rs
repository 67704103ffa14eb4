//! The library as the interpreter sees it: an embedded Python script, run as
//! `{python} -c SCRIPT probe PROBE MODULE DISTRIBUTION`, prints one JSON line with the library's
//! version, the CUDA and cuDNN it was built for, whether it sees a GPU, what it carries (compiled
//! architectures; ONNX Runtime's providers and device) and the device's capability. Which probe
//! function and module a library uses is data ([`crate::library`]); a library without a
//! description gets the generic probe (version only). An import failure is a typed result
//! carrying Python's error text; explaining it is left to the diagnose module.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::version::Version;

use super::HostError;
use super::system::System;

/// The probe script, compiled into the binary so a lone stackpin can run it.
pub const PROBE_SCRIPT: &str = include_str!("library_probe.py");

/// Importing torch with CUDA can take a while on a cold disk; a hang is still a hang.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(180);

/// What the library reported about itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LibraryInfo {
    pub library: String,
    /// The release without a local suffix: `2.5.1` for `2.5.1+cu124`.
    pub version: Version,
    /// The version exactly as the library printed it.
    pub version_text: String,
    /// The CUDA line the build was made for (`torch.version.cuda`); `None` for a CPU build.
    pub cuda: Option<String>,
    pub cudnn: Option<String>,
    pub cuda_available: bool,
    pub device_count: u32,
    /// Compiled GPU architectures, e.g. `sm_80`, `sm_90`.
    pub arch_list: Vec<String>,
    /// Compute capability of device 0 as the library sees it, e.g. `8.9`.
    pub device_capability: Option<String>,
    pub device_name: Option<String>,
    /// Execution providers the build carries (ONNX Runtime's `get_available_providers()`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<String>,
    /// The build's device kind (ONNX Runtime's `get_device()`: `GPU` or `CPU`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The interpreter's version.
    pub python: Option<String>,
}

/// The probe's outcome: the library answered, or it could not be imported.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LibraryProbe {
    /// Boxed: the report is large and the import failure small.
    Found(Box<LibraryInfo>),
    /// `import` raised; `error` is Python's `Type: message`.
    ImportFailed {
        library: String,
        error: String,
        python: Option<String>,
    },
}

/// The JSON line the script prints, field for field.
#[derive(Debug, Deserialize)]
struct ProbeLine {
    library: String,
    ok: bool,
    python: Option<String>,
    error: Option<String>,
    version: Option<String>,
    cuda: Option<String>,
    cudnn: Option<String>,
    #[serde(default)]
    cuda_available: bool,
    #[serde(default)]
    device_count: u32,
    #[serde(default)]
    arch_list: Vec<String>,
    device_capability: Option<String>,
    device_name: Option<String>,
    #[serde(default)]
    providers: Vec<String>,
    device: Option<String>,
}

/// The interpreter's arguments that probe `library` (a manifest's `library.name`). `isolated`
/// for a venv's interpreter (`-I`: no `PYTHON*` variable, no user site, no working folder on
/// `sys.path`): what counts is what the venv holds. A user's own interpreter keeps its
/// environment (a library on `PYTHONPATH`, a module system's variables); every probe runs from
/// a folder stackpin chose, never the caller's, so a `torch/` there is not imported.
pub fn probe_args(library: &str, isolated: bool) -> Vec<String> {
    let target = crate::compat::libraries().probe_target(library);
    let isolation = isolated.then(|| "-I".to_string());
    isolation
        .into_iter()
        .chain([
            "-c".to_string(),
            PROBE_SCRIPT.to_string(),
            "probe".to_string(),
            target.probe,
            target.module,
            target.distribution,
        ])
        .collect()
}

/// Runs the probe for `library` with `python`: a described library reports its CUDA build and
/// GPU; any other reports its version only (`__version__` or its distribution's). `Err` when the
/// interpreter cannot run or prints no JSON.
pub fn probe(
    system: &dyn System,
    python: &Path,
    library: &str,
    timeout: Duration,
) -> Result<LibraryProbe, HostError> {
    let venv = super::venv::venv_of(system, python);
    if let Some(venv) = &venv
        && let super::venv::VenvState::Foreign { why } = super::venv::state(system, venv, python)
    {
        return Err(HostError::Probe {
            python: python.to_path_buf(),
            detail: format!("not run: {why}"),
        });
    }
    let args = probe_args(library, venv.is_some());
    let out = system.run(python, &args, timeout)?;
    let line = out
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| HostError::Probe {
            python: python.to_path_buf(),
            detail: format!(
                "no JSON line (exit {:?}); stderr: {}",
                out.code,
                last_line(&out.stderr)
            ),
        })?;
    parse_line(line).map_err(|detail| HostError::Probe {
        python: python.to_path_buf(),
        detail,
    })
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(empty)")
}

/// Turns the script's JSON line into a [`LibraryProbe`].
pub fn parse_line(line: &str) -> Result<LibraryProbe, String> {
    let p: ProbeLine = serde_json::from_str(line).map_err(|e| format!("bad JSON ({e}): {line}"))?;
    if !p.ok {
        return Ok(LibraryProbe::ImportFailed {
            library: p.library,
            error: p.error.unwrap_or_else(|| "unknown error".to_string()),
            python: p.python,
        });
    }
    let text = p.version.ok_or("the probe printed no version")?;
    let version = Version::parse(&text)
        .map_err(|e| format!("{} version: {e}", p.library))?
        .public();
    Ok(LibraryProbe::Found(Box::new(LibraryInfo {
        library: p.library,
        version,
        version_text: text,
        cuda: p.cuda,
        cudnn: p.cudnn,
        cuda_available: p.cuda_available,
        device_count: p.device_count,
        arch_list: p.arch_list,
        device_capability: p.device_capability,
        device_name: p.device_name,
        providers: p.providers,
        device: p.device,
        python: p.python,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;
    use crate::os::Os;

    const TORCH_LINE: &str = r#"{"library": "torch", "python": "3.11.7", "version": "2.5.1+cu124", "cuda": "12.4", "cudnn": "90100", "cuda_available": true, "device_count": 1, "arch_list": ["sm_50", "sm_80", "sm_90"], "device_capability": "8.9", "device_name": "NVIDIA L4", "ok": true}"#;

    #[test]
    fn a_local_suffix_is_accepted_as_the_release() {
        let LibraryProbe::Found(info) = parse_line(TORCH_LINE).expect("parses") else {
            panic!("expected Found");
        };
        assert_eq!(info.version, Version::parse("2.5.1").expect("v"));
        assert_eq!(info.version.to_string(), "2.5.1");
        assert_eq!(info.version_text, "2.5.1+cu124");
        assert_eq!(info.cuda.as_deref(), Some("12.4"));
        assert_eq!(info.arch_list.len(), 3);
    }

    #[test]
    fn an_import_error_is_a_typed_result_with_the_text() {
        let line = r#"{"library": "torch", "python": "3.12.3", "ok": false, "error": "ModuleNotFoundError: No module named 'torch'"}"#;
        assert_eq!(
            parse_line(line).expect("parses"),
            LibraryProbe::ImportFailed {
                library: "torch".into(),
                error: "ModuleNotFoundError: No module named 'torch'".into(),
                python: Some("3.12.3".into()),
            }
        );
    }

    #[test]
    fn probe_runs_the_embedded_script_and_skips_noise_before_the_json() {
        let mut sys = FakeSystem::new(Os::Linux);
        let stdout = format!("a warning printed by torch\n{TORCH_LINE}\n");
        sys.answer(
            "/venv/bin/python",
            &["-c", PROBE_SCRIPT, "probe", "torch", "torch", "torch"],
            0,
            &stdout,
        );
        let result = probe(&sys, Path::new("/venv/bin/python"), "torch", PROBE_TIMEOUT);
        assert!(matches!(result, Ok(LibraryProbe::Found(_))), "{result:?}");
    }

    #[test]
    fn an_interpreter_that_prints_no_json_is_an_error_naming_it() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.answer("/venv/bin/python", &[], 1, "");
        let err = probe(&sys, Path::new("/venv/bin/python"), "torch", PROBE_TIMEOUT)
            .expect_err("no JSON");
        assert!(err.to_string().contains("/venv/bin/python"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn the_script_reports_a_missing_module_through_real_python() {
        use crate::host::system::RealSystem;
        let Some(python) = RealSystem.which("python3") else {
            return; // no interpreter on this machine; the CLI tests cover the real run
        };
        let sys = RealSystem;
        let result = probe(&sys, &python, "tensorflow", PROBE_TIMEOUT);
        // Either outcome is a well-formed answer; a crash or unparsable output is the bug.
        assert!(result.is_ok(), "{result:?}");
    }
}
