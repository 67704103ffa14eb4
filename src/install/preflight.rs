//! What `install` checks before the first layer runs, so it refuses with every problem at once
//! instead of stopping half-way (a driver installed, then pip failing offline): the interpreter's
//! version against `library.python_version`, each GPU's generation against the pinned driver, the
//! toolkit and the library build, and an archive that is complete and verified for every layer
//! that will run, and a Linux host's readiness for the runfiles (`readiness`). `plan` shows the
//! same findings per layer. Runs nothing but the host probes.

use std::path::Path;

use serde::Serialize;

use super::files::{ArchivedFile, FileState};
use crate::compat::{self, LibraryLookup, StackForGpu};
use crate::host::venv::VenvState;
use crate::layers::HostView;
use crate::manifest::placeholder::library_python;
use crate::manifest::{Layer, Manifest};
use crate::version::Version;

/// The interpreter the manifest creates its environment with, as this host has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InterpreterSeen {
    /// `library.python`: `python3`, or a path.
    pub interpreter: String,
    /// `library.python_version`, the Python the wheels were fetched for.
    pub pinned: Version,
    /// What `{interpreter} --version` said, or why it could not say.
    pub found: Result<Version, String>,
}

impl InterpreterSeen {
    /// The line `plan` shows beside the pins.
    pub fn explain(&self) -> String {
        match &self.found {
            Ok(v) => format!(
                "Python {v}: `{}` on this host, which creates the environment (pinned: python_version {})",
                self.interpreter, self.pinned
            ),
            Err(e) => format!(
                "Python: unknown on this host — {e} (pinned: python_version {})",
                self.pinned
            ),
        }
    }

    /// Why the library layer cannot install with this interpreter, if it cannot.
    pub fn blocker(&self) -> Option<String> {
        match &self.found {
            Ok(v) if v.major_minor() == self.pinned.major_minor() => None,
            Ok(v) => Some(format!(
                "`{}` on this host is Python {v}, but the manifest pins python_version {} (the archived wheels are for Python {}); pin again on this host (`stackpin pin` takes the host's Python) or point library.python at a Python {} interpreter",
                self.interpreter,
                self.pinned,
                self.pinned.major_minor(),
                self.pinned.major_minor()
            )),
            Err(e) => Some(format!(
                "the manifest pins python_version {} but {e}; install Python {} first",
                self.pinned,
                self.pinned.major_minor()
            )),
        }
    }
}

/// The interpreter check, for manifests that pin a `python_version`.
pub fn interpreter(m: &Manifest, host: &dyn HostView) -> Option<InterpreterSeen> {
    let pinned = m.library.python_version.clone()?;
    Some(InterpreterSeen {
        interpreter: m.library.python.clone(),
        found: host.interpreter_version(&m.library.python),
        pinned,
    })
}

/// The GPU-generation rules for every GPU on the host, each finding with the layer it blocks.
pub fn gpu_findings(m: &Manifest, host: &dyn HostView) -> Vec<(Layer, String)> {
    let release = match compat::library_release(&m.library.name, &m.library.version, m.os) {
        LibraryLookup::Known(r) => Some(r),
        _ => None,
    };
    let version = m.library.version.public();
    let stack = StackForGpu {
        os: m.os,
        driver: Some(&m.driver.version),
        toolkit: &m.toolkit.version,
        library: release.as_deref().map(|r| (r, &version)),
    };
    host.gpus()
        .into_iter()
        .flat_map(|(name, compute)| {
            compat::gpu_mismatches(&stack, &compute)
                .into_iter()
                .filter(compat::GpuMismatch::is_error)
                .map(move |mismatch| {
                    let layer = match mismatch.field() {
                        "driver.version" => Layer::Driver,
                        "toolkit.version" => Layer::Toolkit,
                        _ => Layer::Library,
                    };
                    (layer, format!("{name}: {}", mismatch.with_fix()))
                })
        })
        .collect()
}

/// Why the pip library's venv folder must not be replaced: it holds something stackpin did not
/// make (a user's own venv, a planted `.pth`, a `python` relinked since). `None` when the
/// folder is absent, empty, or a venv stackpin made, which install then recreates fresh.
pub fn foreign_venv(m: &Manifest, host: &dyn HostView) -> Option<String> {
    m.library.pip.as_ref()?;
    let venv = m.library.venv.as_ref()?;
    match host.venv(Path::new(venv), &library_python(m)) {
        VenvState::Foreign { why } => Some(format!(
            "{why}; stackpin creates the venv fresh and replaces only one it made: move {venv} aside (or delete it), or set library.venv to a new folder"
        )),
        VenvState::Absent | VenvState::Ours => None,
    }
}

/// Every reason `install` must not start, given the layers that will run (proof does not hold,
/// or `--force`). Empty when the chain may start.
pub fn preflight(
    m: &Manifest,
    host: &dyn HostView,
    files: &[ArchivedFile],
    force: &[Layer],
    choices: &super::readiness::Choices,
) -> Vec<String> {
    checked(m, host, files, force, choices).0
}

/// [`preflight`]'s problems with the readiness findings they came from, each layer proven and
/// the host read once.
pub fn checked(
    m: &Manifest,
    host: &dyn HostView,
    files: &[ArchivedFile],
    force: &[Layer],
    choices: &super::readiness::Choices,
) -> (Vec<String>, Vec<super::readiness::Finding>) {
    let to_run = super::readiness::layers_to_run(m, host, force);
    let mut problems = Vec::new();
    // The Linux host's readiness for the runfiles (nouveau, X, headers, Secure Boot, space, …).
    let findings = super::readiness::findings(m, host, &to_run, choices);
    problems.extend(
        findings
            .iter()
            .filter(|f| f.blocks())
            .map(|f| format!("{}: {}", f.layer, f.line())),
    );
    if to_run.contains(&Layer::Library)
        && let Some(why) = interpreter(m, host).and_then(|i| i.blocker())
    {
        problems.push(format!("library: {why}"));
    }
    if to_run.contains(&Layer::Library)
        && let Some(why) = foreign_venv(m, host)
    {
        problems.push(format!("library: {why}"));
    }
    problems.extend(
        gpu_findings(m, host)
            .into_iter()
            .filter(|(layer, _)| to_run.contains(layer))
            .map(|(layer, why)| format!("{layer}: {why}")),
    );
    for layer in &to_run {
        if !m.installers(*layer).is_empty() && !files.iter().any(|f| f.layer == *layer) {
            problems.push(format!(
                "{layer}: the archive has no {layer} installer in its lock; run `stackpin fetch`"
            ));
        }
        let bad: Vec<String> = files
            .iter()
            .filter(|f| f.layer == *layer && f.state != FileState::Verified)
            .map(|f| format!("{} {}", f.file, f.state.as_str()))
            .collect();
        let incomplete = files
            .iter()
            .any(|f| f.layer == *layer && f.state == FileState::Incomplete);
        if incomplete {
            // A fetch that stopped halfway: nothing is wrong with what is there, it is not all there.
            problems.push(format!(
                "{layer}: the archive is incomplete ({}): a fetch stopped before it finished; incomplete: run `stackpin fetch`",
                bad.join(", ")
            ));
        } else if !bad.is_empty() {
            problems.push(format!(
                "{layer}: the archive is not complete and verified ({}); run `stackpin fetch` (or `stackpin audit` to see why)",
                bad.join(", ")
            ));
        }
    }
    (problems, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(found: Result<&str, &str>) -> InterpreterSeen {
        InterpreterSeen {
            interpreter: "python3".into(),
            pinned: Version::parse("3.12").expect("version"),
            found: found
                .map(|v| Version::parse(v).expect("version"))
                .map_err(str::to_string),
        }
    }

    #[test]
    fn the_interpreter_blocks_only_on_another_minor_or_when_it_is_missing() {
        assert_eq!(seen(Ok("3.12.7")).blocker(), None);
        let other = seen(Ok("3.11.9")).blocker().expect("3.11 is not 3.12");
        assert!(
            other.contains("Python 3.11.9") && other.contains("3.12"),
            "{other}"
        );
        let missing = seen(Err("`python3` is not on PATH"))
            .blocker()
            .expect("no interpreter");
        assert!(missing.contains("not on PATH"), "{missing}");
    }
}

#[cfg(test)]
mod fresh_machine_tests {
    //! A Windows machine before any NVIDIA driver: no nvidia-smi, the card under Microsoft's
    //! Basic Display Adapter with its PCI hardware ID. The generation rules must still see it.
    use super::*;
    use crate::host::fake::FakeSystem;
    use crate::layers::live::LiveHost;
    use crate::os::Os;
    use crate::windows_installers::{CardFamily, card_family};

    fn fresh_windows_with(device: &str) -> FakeSystem {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.on_path
            .insert("powershell".into(), "C:/windows/powershell.exe".into());
        sys.answer(
            "C:/windows/powershell.exe",
            &["-NoProfile"],
            0,
            &format!(
                "PCI\\VEN_10DE&DEV_{device}&SUBSYS_00000000&REV_A1\r\nPCI\\VEN_10DE&DEV_{device}&CC_030000\r\n"
            ),
        );
        sys
    }

    fn torch_cu130() -> Manifest {
        let text = include_str!("../../manifests/torch-2.14.0-cu130-windows.yaml");
        crate::manifest::parse(text, std::path::Path::new("torch-cu130.yaml")).expect("parses")
    }

    #[test]
    fn device_ids_pick_generation_package_and_refusal_before_any_driver() {
        let m = torch_cu130();
        // (device ID, generation, driver package, refused by CUDA 13)
        let cases = [
            ("1B80", "Pascal", CardFamily::GeForce, true), // GeForce GTX 1080
            ("1E07", "Turing", CardFamily::GeForce, false), // GeForce RTX 2080 Ti
            ("2237", "Ampere", CardFamily::DataCenter, false), // A10G
            ("2230", "Ampere", CardFamily::DataCenter, false), // RTX A6000
        ];
        for (device, generation, family, refused) in cases {
            let sys = fresh_windows_with(device);
            let host = LiveHost::on(&sys, None);
            let gpus = host.gpus();
            assert_eq!(gpus.len(), 1, "{device}: {gpus:?}");
            let (label, compute) = &gpus[0];
            let known = compat::gpu_generation(compute).map(|g| g.name.as_str());
            assert_eq!(known, Some(generation), "{device}: {label}");
            let name = compat::pci_device(device)
                .expect("in the table")
                .name
                .as_str();
            assert_eq!(card_family(name), family, "{device}: {name}");
            let findings = gpu_findings(&m, &host);
            assert_eq!(!findings.is_empty(), refused, "{device}: {findings:?}");
            if refused {
                let (layer, why) = &findings[0];
                assert!(why.contains("PCI 10de:1b80"), "names the card: {why}");
                assert!(
                    *layer == Layer::Driver || *layer == Layer::Toolkit,
                    "refused at a layer before the library: {layer:?} {why}"
                );
            }
        }
    }
}
