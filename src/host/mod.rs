//! What is on this machine: the OS and whether we are root/Administrator, every NVIDIA GPU and
//! the driver's state (via `nvidia-smi`), the CUDA toolkits on disk, and the training library as
//! an interpreter sees it. All of it goes through the narrow [`System`] trait so tests can fake
//! the host. This module only observes; it knows nothing of manifests, and deciding what the
//! findings mean for a stack is left to `plan`, `install` and `prove`.

pub mod boot;
pub mod context;
#[cfg(test)]
pub mod fake;
pub mod gpu_select;
pub mod interpreter;
pub mod kernel;
pub mod library_probe;
pub mod nvidia_smi;
pub mod os_info;
pub mod pci;
pub mod readiness;
pub mod system;
pub mod toolkits;
pub mod venv;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use gpu_select::GpuChoice;
pub use library_probe::{LibraryInfo, LibraryProbe};
pub use nvidia_smi::{DriverProbe, DriverState, Gpu};
pub use os_info::OsInfo;
pub use system::{RealSystem, RunOutput, System};
pub use toolkits::{ToolkitInfo, find_toolkit, find_toolkits};

/// Why a host probe could not answer.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("could not run `{}`", program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` did not finish within {}s and was stopped", program.display(), after.as_secs())]
    TimedOut { program: PathBuf, after: Duration },
    #[error("cannot read the output of {what}: `{line}`; expected {expected}")]
    Parse {
        what: String,
        line: String,
        expected: String,
    },
    #[error(
        "--gpu {requested}: no such GPU; nvidia-smi lists {}",
        list_or_none(available)
    )]
    NoSuchGpu { requested: u32, available: Vec<u32> },
    #[error("the library probe run with `{}` failed: {detail}; check that this is the stack's Python interpreter", python.display())]
    Probe { python: PathBuf, detail: String },
}

fn list_or_none(indices: &[u32]) -> String {
    if indices.is_empty() {
        return "no GPU".to_string();
    }
    let list: Vec<String> = indices.iter().map(u32::to_string).collect();
    format!("GPU {}", list.join(", "))
}

/// What to probe and how long each program may take.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// `--gpu N`; `None` picks the first GPU `CUDA_VISIBLE_DEVICES` allows.
    pub gpu: Option<u32>,
    /// The interpreter for the library probe; `None` skips it.
    pub python: Option<PathBuf>,
    /// The library to probe, as a manifest names it (`torch`, `onnxruntime-gpu`).
    pub library: String,
    /// Toolkit folders to look at besides the usual places (a manifest's `toolkit.root`).
    pub toolkit_roots: Vec<PathBuf>,
    pub smi_timeout: Duration,
    pub library_timeout: Duration,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            gpu: None,
            python: None,
            library: "torch".to_string(),
            toolkit_roots: vec![],
            smi_timeout: nvidia_smi::DEFAULT_TIMEOUT,
            library_timeout: library_probe::PROBE_TIMEOUT,
        }
    }
}

/// Everything stackpin knows about the host, as `stackpin host --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostReport {
    pub os: OsInfo,
    pub driver: DriverProbe,
    /// The GPU this run uses, and why.
    pub selected_gpu: GpuChoice,
    pub toolkits: Vec<ToolkitInfo>,
    /// Present when an interpreter was given.
    pub library: Option<LibraryProbe>,
}

impl HostReport {
    /// The chosen GPU's details, when one is chosen.
    pub fn gpu(&self) -> Option<&Gpu> {
        let index = self.selected_gpu.index?;
        self.driver.gpus.iter().find(|g| g.index == index)
    }
}

/// How long each nvidia-smi call may take: `STACKPIN_NVIDIA_SMI_TIMEOUT` seconds, else the default.
pub fn smi_timeout(system: &dyn System) -> Duration {
    system
        .env("STACKPIN_NVIDIA_SMI_TIMEOUT")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(nvidia_smi::DEFAULT_TIMEOUT)
}

/// `--gpu N` must name a GPU nvidia-smi lists: the one contract of every command that takes the
/// flag, checked before the command does anything ([`HostError::NoSuchGpu`], exit 2, naming the
/// GPUs there are). `None` always passes.
pub fn require_gpu(system: &dyn System, requested: Option<u32>) -> Result<(), HostError> {
    let Some(n) = requested else {
        return Ok(());
    };
    gpu_select::choose(&listed_gpus(system), Some(n), None).map(|_| ())
}

/// The index of the GPU a command started now uses, chosen as every command chooses it
/// ([`gpu_select`]): `--gpu N`, else the first GPU `CUDA_VISIBLE_DEVICES` allows (an index or a
/// `GPU-…` UUID), else the first GPU; `requested` (or 0) when nvidia-smi lists none it may use.
pub fn gpu_in_use(system: &dyn System, requested: Option<u32>) -> u32 {
    let visible = system.env("CUDA_VISIBLE_DEVICES");
    gpu_select::choose(&listed_gpus(system), requested, visible.as_deref())
        .ok()
        .and_then(|choice| choice.index)
        .or(requested)
        .unwrap_or(0)
}

/// The GPUs nvidia-smi lists now (under WSL, Windows' nvidia-smi), within the timeout knob.
fn listed_gpus(system: &dyn System) -> Vec<Gpu> {
    let wsl = os_info::probe(system).wsl;
    nvidia_smi::probe(system, wsl, smi_timeout(system)).gpus
}

/// Probes the whole host. Driver trouble is a [`DriverState`], never an error; errors are for
/// what the caller asked wrongly: a GPU that does not exist, an interpreter that cannot run.
pub fn probe(system: &dyn System, options: &ProbeOptions) -> Result<HostReport, HostError> {
    let os = os_info::probe(system);
    let driver = nvidia_smi::probe(system, os.wsl, options.smi_timeout);
    let visible = system.env("CUDA_VISIBLE_DEVICES");
    let selected_gpu = gpu_select::choose(&driver.gpus, options.gpu, visible.as_deref())?;
    let toolkits = find_toolkits(system, &options.toolkit_roots);
    let library = match &options.python {
        Some(python) => Some(library_probe::probe(
            system,
            python,
            &options.library,
            options.library_timeout,
        )?),
        None => None,
    };
    Ok(HostReport {
        os,
        driver,
        selected_gpu,
        toolkits,
        library,
    })
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for HostError {
    fn exit(&self) -> Exit {
        match self {
            HostError::NoSuchGpu { .. } => Exit::Input,
            _ => Exit::External,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::Os;
    use system::FakeSystem;

    #[test]
    fn a_host_without_nvidia_smi_still_reports_os_and_toolkits() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file(
            "/usr/local/cuda-12.4/version.json",
            r#"{"cuda":{"version":"12.4.1"}}"#,
        );
        let report = probe(&sys, &ProbeOptions::default()).expect("probes");
        assert!(matches!(report.driver.state, DriverState::NoSmi { .. }));
        assert_eq!(report.selected_gpu.index, None);
        assert_eq!(report.toolkits.len(), 1);
        assert_eq!(report.library, None);
    }

    #[test]
    fn asking_for_a_gpu_on_a_host_without_one_names_the_problem() {
        let sys = FakeSystem::new(Os::Linux);
        let options = ProbeOptions {
            gpu: Some(0),
            ..ProbeOptions::default()
        };
        let err = probe(&sys, &options).expect_err("no GPU 0");
        assert_eq!(
            err.to_string(),
            "--gpu 0: no such GPU; nvidia-smi lists no GPU"
        );
    }

    #[test]
    fn cuda_visible_devices_from_the_system_picks_the_gpu() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path
            .insert("nvidia-smi".into(), "/bin/nvidia-smi".into());
        sys.env.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
        sys.answer(
            "/bin/nvidia-smi",
            &[nvidia_smi::QUERY_GPU],
            0,
            "0, A, GPU-a, 570.1, 100, 8.0\n1, B, GPU-b, 570.1, 200, 9.0\n",
        )
        .answer("/bin/nvidia-smi", &[], 0, "");
        let report = probe(&sys, &ProbeOptions::default()).expect("probes");
        assert_eq!(report.gpu().map(|g| g.name.as_str()), Some("B"));
        assert_eq!(report.driver.cuda_supported, None);
        assert_eq!(
            gpu_in_use(&sys, None),
            1,
            "the GPU CUDA_VISIBLE_DEVICES allows"
        );
        assert_eq!(gpu_in_use(&sys, Some(0)), 0, "--gpu wins");
    }

    #[test]
    fn without_a_listed_gpu_a_command_uses_the_one_asked_for_or_0() {
        let sys = FakeSystem::new(Os::Linux);
        assert_eq!(gpu_in_use(&sys, None), 0);
        assert_eq!(gpu_in_use(&sys, Some(3)), 3);
    }
}
