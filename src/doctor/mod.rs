//! `doctor`: the live host against the proven-stack record and the manifest, as the guide's
//! checks before training — each pass, fail or unknown with its fix — and the drift that names
//! exactly what changed since the stack was proven ("driver 566.36 → 551.86").
//!
//! [`gather`] asks the host, the archive and the record once; [`judge`](checks::judge) turns
//! those facts into checks as plain functions. Reinstalling is [`repair`]'s job (through
//! `install` and `prove`); printing is the CLI's.

pub mod checks;
pub mod guard;
pub mod linux_module;
pub mod repair;
pub mod seen;
pub mod windows_driver;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::archive::{self, AuditReport, StackDir};
use crate::host::System;
use crate::install::state::ChainState;
use crate::layers::live::LiveHost;
use crate::layers::{DriverSeen, HostView, LibrarySeen, Proof};
use crate::manifest::{Layer, Manifest, Role};
use crate::os::Os;
use crate::record::ProvenStack;
use windows_driver::WindowsDriver;

pub use checks::judge;

/// A check's verdict. Unknown is reported and never fails the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Unknown,
}

impl Status {
    /// The word users see.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Unknown => "unknown",
        }
    }
}

/// One of the guide's checks before training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckId {
    /// Driver version recorded, and still the one on the host.
    Driver,
    /// Toolkit matches the release notes exactly and is still in its folder.
    Toolkit,
    /// The library imports with the stack's Python, as pinned, and sees the GPU: asked live.
    Library,
    /// The last install chain ended with every layer done: none failed or was interrupted.
    Install,
    /// The bundled example completed one pass: a record from at or after the last install.
    Example,
    /// Peak VRAM recorded at the working batch, with the largest safe batch.
    Vram,
    /// Installers archived, and the archive audits clean.
    Archive,
    /// The deployment runtime is pinned apart from the training machine.
    Deployment,
}

impl CheckId {
    /// What the check asks, in the guide's words.
    pub fn question(self) -> &'static str {
        match self {
            CheckId::Driver => "driver version recorded and still on the host",
            CheckId::Toolkit => "toolkit matches the release notes and is in its folder",
            CheckId::Library => "library imports, as pinned, and sees the GPU (asked live)",
            CheckId::Install => "last install finished: no layer failed or interrupted",
            CheckId::Example => "bundled example completed one pass since the last install",
            CheckId::Vram => "peak VRAM recorded at the working batch",
            CheckId::Archive => "installers archived and the archive audits clean",
            CheckId::Deployment => "deployment runtime pinned apart from this training stack",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub check: CheckId,
    pub status: Status,
    /// What was found.
    pub found: String,
    /// What to do, when the check did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// What changed on a layer since the stack was proven.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    pub layer: Layer,
    /// What the record says (`566.36`).
    pub recorded: String,
    /// What the host has now (`551.86`, `missing`, `no driver running`).
    pub now: String,
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} → {}", self.layer, self.recorded, self.now)
    }
}

/// Doctor's verdict on one stack.
#[derive(Debug, Clone, Serialize)]
pub struct Examination {
    pub stack: String,
    pub os: Os,
    /// The record compared against, when there is one.
    pub record: Option<PathBuf>,
    pub checks: Vec<Check>,
    pub drift: Vec<Drift>,
    /// Each layer's proof against the manifest's pins now.
    pub layers: Vec<Proof>,
    /// On Windows: who supplied the running driver, when PowerShell answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_driver: Option<WindowsDriver>,
    /// True when no check failed.
    pub ok: bool,
}

impl Examination {
    /// The layers whose proof no longer holds: what `repair` reinstalls, in install order.
    pub fn drifted_layers(&self) -> Vec<Layer> {
        self.layers
            .iter()
            .filter(|p| !p.holds)
            .map(|p| p.layer)
            .collect()
    }

    /// A check's outcome.
    pub fn check(&self, id: CheckId) -> Option<&Check> {
        self.checks.iter().find(|c| c.check == id)
    }
}

/// Doctor could not examine the stack at all (individual findings are checks, not errors).
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error("cannot read the archive folder {}", path.display())]
    ArchiveDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Everything the checks look at, gathered once.
#[derive(Debug)]
pub struct Facts<'a> {
    pub m: &'a Manifest,
    /// The manifest's text, to tell an explicit `role: training` from the default.
    pub manifest_text: Option<&'a str>,
    /// `Ok(None)`: no record yet; `Err`: a record that cannot be read, with why.
    pub record: Result<Option<ProvenStack>, String>,
    pub record_path: PathBuf,
    /// The install chain's state; the latest `at` is the last install.
    pub state: Option<ChainState>,
    /// Why `state.yaml` could not be read, when it exists but is unreadable.
    pub state_error: Option<String>,
    pub driver: DriverSeen,
    pub layers: Vec<Proof>,
    pub library: LibrarySeen,
    /// The audit, or why it could not run.
    pub audit: Result<AuditReport, String>,
    /// A proven inference-role stack elsewhere in the archive, by name.
    pub deployment_stack: Option<String>,
    /// Windows only, when the driver drifted: PowerShell's answer or why there is none.
    pub windows_driver: Option<Result<Vec<WindowsDriver>, String>>,
    /// Linux only, when no driver answers: the running kernel's module, explained.
    pub module_problem: Option<String>,
    /// A Windows Update pause a stackpin wrote down and never undid (it was killed mid-toolkit):
    /// the record's path.
    pub windows_update_left: Option<PathBuf>,
}

/// Examines one stack on the host behind `system` (the real machine, or a test's fake): asks
/// it everything once, then judges. `gpu` is `--gpu`.
pub fn examine(
    m: &Manifest,
    manifest_text: Option<&str>,
    stack: &StackDir,
    system: &dyn System,
    gpu: Option<u32>,
    pause_record: Option<&Path>,
) -> Examination {
    let host = LiveHost::on(system, gpu);
    let mut facts = gather(m, manifest_text, stack, &host, system);
    facts.windows_update_left = pause_record.filter(|p| p.exists()).map(Path::to_path_buf);
    judge(&facts)
}

/// Asks the host, the archive and the record everything the checks need.
pub fn gather<'a>(
    m: &'a Manifest,
    manifest_text: Option<&'a str>,
    stack: &StackDir,
    host: &dyn HostView,
    system: &dyn System,
) -> Facts<'a> {
    let record_path = stack.proven_stack_path();
    let record = if record_path.exists() {
        ProvenStack::read(&record_path)
            .map(Some)
            .map_err(|e| e.to_string())
    } else {
        Ok(None)
    };
    let (state, state_error) = match ChainState::load(&stack.state_path()) {
        Ok(state) => (Some(state), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let driver = host.driver();
    let layers: Vec<Proof> = Layer::ORDER
        .iter()
        .map(|l| crate::layers::prove_layer(m, *l, host))
        .collect();
    let library = host.library(
        &crate::manifest::placeholder::library_python(m),
        &m.library.name,
    );
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let audit =
        archive::audit_stack(stack, Some(m), threads, &archive::Silent).map_err(|e| e.to_string());
    let archive_root = stack.root().parent().unwrap_or(Path::new("."));
    let deployment_stack = proven_inference_stack(archive_root, &m.name);
    let driver_drifted = !layers.first().is_some_and(|p| p.holds);
    let windows_driver =
        (driver_drifted && system.os() == Os::Windows).then(|| windows_driver::query(system));
    // The host's readiness first (nouveau, Secure Boot): it says why a module that is there
    // does not load; then the module itself (none for the running kernel).
    let module_problem =
        (driver.version.is_none() && !driver.reboot_pending && system.os() == Os::Linux)
            .then(|| {
                host.linux_facts(&[])
                    .and_then(|f| crate::install::readiness::explain_dead_driver(&f))
                    .or_else(|| {
                        let kernel = crate::host::os_info::probe(system).kernel?;
                        linux_module::probe(system, &kernel).explain()
                    })
            })
            .flatten();
    Facts {
        m,
        manifest_text,
        record,
        record_path,
        state,
        state_error,
        driver,
        layers,
        library,
        audit,
        deployment_stack,
        windows_driver,
        module_problem,
        windows_update_left: None,
    }
}

/// The name of another stack in the archive that is the deployment runtime (role inference)
/// and has been proven.
fn proven_inference_stack(archive_root: &Path, this: &str) -> Option<String> {
    let stacks = crate::archive::Archive::at(archive_root).stacks().ok()?;
    stacks.into_iter().find_map(|stack| {
        let dir = stack.root();
        let name = stack.name();
        if name == this || !dir.join(crate::record::RECORD_FILE).is_file() {
            return None;
        }
        let m = crate::manifest::read(&dir.join("manifest.yaml")).ok()?;
        (m.role == Role::Inference).then_some(name)
    })
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for DoctorError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

#[cfg(test)]
mod tests {
    //! doctor against a fake host that spawns nothing: every answer nvidia-smi, nvcc's folder,
    //! the venv's Python and PowerShell give comes from a table.

    use super::*;
    use crate::host::fake::{FakeSystem, SMI_HEADER, VENV_PYTHON, gpu_row};
    use crate::host::nvidia_smi::QUERY_GPU;

    const LINUX: &str = include_str!("../../manifests/torch-2.5.1-cu124-linux.yaml");
    const WINDOWS: &str = include_str!("../../manifests/torch-2.5.1-cu124-windows.yaml");

    fn manifest(text: &str) -> Manifest {
        crate::manifest::parse(text, Path::new("m.yaml")).expect("shipped manifest parses")
    }

    /// A Linux host where the shipped Linux stack holds: driver, toolkit folder and venv.
    fn linux_host(driver: &str, torch: &str) -> FakeSystem {
        FakeSystem::linux_host(driver, torch)
    }

    /// The record the stack got when it was proven with exactly its pins.
    fn record(m: &Manifest) -> ProvenStack {
        crate::record::TestRecord {
            stack: &m.name,
            os: m.os.name(),
            gpu: "NVIDIA L4",
            vram_mib: 23034,
            driver: &m.driver.version.to_string(),
            driver_cuda: "12.8",
            toolkit_root: &m.toolkit.root,
        }
        .proven()
    }

    /// Examines `text`'s stack, proven earlier, on `sys`, with an archive in a temp dir.
    fn examine_on(text: &str, sys: &FakeSystem) -> Examination {
        let m = manifest(text);
        let archive = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(archive.path(), &m.name);
        std::fs::create_dir_all(stack.root()).expect("stack folder");
        record(&m)
            .write(&stack.proven_stack_path())
            .expect("record written");
        examine(&m, Some(text), &stack, sys, None, None)
    }

    fn verdict(exam: &Examination, id: CheckId) -> (Status, String) {
        let check = exam.check(id).expect("check present");
        (check.status, check.found.clone())
    }

    fn drift(exam: &Examination) -> Vec<String> {
        exam.drift.iter().map(ToString::to_string).collect()
    }

    /// The exam fails `id`'s check and finds only `layer` drifted; what that check found.
    fn fails_only(exam: &Examination, id: CheckId, layer: Layer) -> String {
        assert!(!exam.ok);
        let (status, found) = verdict(exam, id);
        assert_eq!(status, Status::Fail, "{found}");
        assert_eq!(exam.drifted_layers(), [layer]);
        found
    }

    #[test]
    fn a_healthy_host_passes_every_layer_check_with_no_drift() {
        let exam = examine_on(LINUX, &linux_host("595.71.05", "2.5.1+cu124"));
        for id in [CheckId::Driver, CheckId::Toolkit, CheckId::Library] {
            let (status, found) = verdict(&exam, id);
            assert_eq!(status, Status::Pass, "{id:?}: {found}");
        }
        assert_eq!(drift(&exam), Vec::<String>::new());
        assert!(exam.drifted_layers().is_empty());
        assert_eq!(
            exam.windows_driver, None,
            "PowerShell is only asked on Windows"
        );
    }

    #[test]
    fn a_changed_driver_is_drift_naming_both_versions() {
        let exam = examine_on(LINUX, &linux_host("590.48.01", "2.5.1+cu124"));
        fails_only(&exam, CheckId::Driver, Layer::Driver);
        assert_eq!(drift(&exam), ["driver 595.71.05 → 590.48.01"]);
    }

    #[test]
    fn a_changed_toolkit_is_drift_naming_both_versions() {
        let mut sys = linux_host("595.71.05", "2.5.1+cu124");
        sys.file(
            "/usr/local/cuda-12.4/version.json",
            r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.0"}}"#,
        );
        let exam = examine_on(LINUX, &sys);
        fails_only(&exam, CheckId::Toolkit, Layer::Toolkit);
        assert_eq!(
            drift(&exam),
            ["toolkit 12.4.1 → CUDA 12.4.0 in /usr/local/cuda-12.4, 12.4.1 pinned"]
        );
    }

    #[test]
    fn a_changed_library_is_drift_naming_both_versions() {
        let exam = examine_on(LINUX, &linux_host("595.71.05", "2.6.0+cu124"));
        fails_only(&exam, CheckId::Library, Layer::Library);
        assert_eq!(drift(&exam), ["library torch 2.5.1+cu124 → 2.6.0"]);
    }

    #[test]
    fn a_toolkit_gone_from_its_folder_fails_and_is_reinstalled() {
        let mut sys = linux_host("595.71.05", "2.5.1+cu124");
        sys.files
            .retain(|p, _| !p.starts_with("/usr/local/cuda-12.4"));
        sys.dirs
            .retain(|p, _| !p.starts_with("/usr/local/cuda-12.4"));
        let exam = examine_on(LINUX, &sys);
        let found = fails_only(&exam, CheckId::Toolkit, Layer::Toolkit);
        assert!(found.contains("/usr/local/cuda-12.4"), "{found}");
    }

    #[test]
    fn a_broken_venv_fails_the_library_check_with_the_import_error() {
        let mut sys = linux_host("595.71.05", "2.5.1+cu124");
        sys.programs.remove(Path::new(VENV_PYTHON));
        sys.answer(
            VENV_PYTHON,
            &["-c"],
            0,
            r#"{"library": "torch", "python": "3.12.3", "ok": false, "error": "ImportError: libcudnn.so.9: cannot open shared object file"}"#,
        );
        let exam = examine_on(LINUX, &sys);
        let found = fails_only(&exam, CheckId::Library, Layer::Library);
        assert!(found.contains("libcudnn.so.9"), "{found}");
    }

    #[test]
    fn a_venv_without_its_python_fails_the_library_check() {
        let mut sys = linux_host("595.71.05", "2.5.1+cu124");
        sys.files.remove(Path::new(VENV_PYTHON));
        let exam = examine_on(LINUX, &sys);
        fails_only(&exam, CheckId::Library, Layer::Library);
    }

    #[test]
    fn a_driver_replaced_by_a_windows_feature_update_is_named_with_its_provider_and_date() {
        let m = manifest(WINDOWS);
        let pinned = m.driver.version.to_string();
        let mut sys = FakeSystem::new(Os::Windows);
        let smi = "C:/Windows/System32/nvidia-smi.exe";
        let ps = "C:/Windows/System32/WindowsPowerShell/v1.0/powershell.exe";
        sys.on_path.insert("nvidia-smi".into(), PathBuf::from(smi));
        sys.on_path.insert("powershell".into(), PathBuf::from(ps));
        let command = ["-NoProfile", "-NonInteractive", "-Command"];
        let ask = |query: &str| {
            let mut argv = command.to_vec();
            argv.push(query);
            argv.into_iter().map(String::from).collect::<Vec<_>>()
        };
        sys.answer(smi, &[QUERY_GPU], 0, &gpu_row("551.86"))
            .answer(smi, &[], 0, SMI_HEADER)
            .answer(
                ps,
                &ask(windows_driver::QUERY).iter().map(String::as_str).collect::<Vec<_>>(),
                0,
                r#"{"DeviceName": "NVIDIA L4", "DriverVersion": "31.0.15.5186",
                    "DriverProviderName": "NVIDIA", "InfName": "oem42.inf", "DriverDate": "2024-03-15"}"#,
            )
            .answer(
                ps,
                &ask(windows_driver::UPDATE_HISTORY_QUERY)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                0,
                r#"{"Title": "NVIDIA - Display - 31.0.15.5186", "Date": "2030-01-02"}"#,
            );
        let exam = examine_on(WINDOWS, &sys);
        assert!(!exam.ok);
        assert_eq!(drift(&exam)[0], format!("driver {pinned} → 551.86"));
        let (status, found) = verdict(&exam, CheckId::Driver);
        assert_eq!(status, Status::Fail);
        assert!(found.contains("provider NVIDIA, oem42.inf"), "{found}");
        assert!(
            found.contains("installed by Windows Update")
                && found.contains("on 2030-01-02, after the stack was proven"),
            "{found}"
        );
        assert!(
            exam.windows_driver.is_some(),
            "the driver PowerShell named is kept"
        );
        assert!(exam.drifted_layers().contains(&Layer::Driver));
    }
}
