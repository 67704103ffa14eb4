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
pub mod windows_driver;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::archive::{self, AuditReport, StackDir};
use crate::compat::Os;
use crate::host::System;
use crate::install::proof::{self, DriverSeen, HostView, LibrarySeen, Proof};
use crate::install::state::ChainState;
use crate::manifest::{Layer, Manifest, Role};
use crate::record::ProvenStack;
use windows_driver::WindowsDriver;

pub use checks::judge;

/// A check's verdict. Unknown is reported and never fails the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
        .map(|l| proof::prove_layer(m, *l, host))
        .collect();
    let library = host.library(&proof::library_python(m), &m.library.name);
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let audit =
        archive::audit_stack(stack, Some(m), threads, &archive::Silent).map_err(|e| e.to_string());
    let archive_root = stack.root().parent().unwrap_or(Path::new("."));
    let deployment_stack = proven_inference_stack(archive_root, &m.name);
    let driver_drifted = !layers.first().is_some_and(|p| p.holds);
    let windows_driver =
        (driver_drifted && system.os() == Os::Windows).then(|| windows_driver::query(system));
    let module_problem =
        (driver.version.is_none() && !driver.reboot_pending && system.os() == Os::Linux)
            .then(|| {
                let kernel = crate::host::os_info::probe(system).kernel?;
                linux_module::probe(system, &kernel).explain()
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
