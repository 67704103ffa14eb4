//! The live host behind [`HostView`]: the `host` module's probes through the [`System`] its
//! caller hands in, asked fresh on every call so a proof after an installer sees what the
//! installer changed.

use std::path::Path;
use std::time::Duration;

use super::{DriverSeen, HostView, LibrarySeen, ToolkitSeen};
use crate::host::kernel::KernelCompile;
use crate::host::{self, DriverState, LibraryProbe, System};
use crate::os::Os;
use crate::version::Version;

/// The machine stackpin runs on, seen through a [`System`] (the real one, or a test's fake).
pub struct LiveHost<'s> {
    system: &'s dyn System,
    gpu: Option<u32>,
    wsl: bool,
    smi_timeout: Duration,
    /// Whether a manifest's `verify:` commands may run (`plan` without `--probe`: no).
    run_checks: bool,
    /// The architecture the toolkit proof compiles for (`--gpu-arch`), before the GPU's own.
    gpu_arch: Option<String>,
}

impl<'s> LiveHost<'s> {
    /// Probes the host behind `system` (the CLI's `RealSystem`, a test's fake), with `--gpu`
    /// when given.
    pub fn on(system: &'s dyn System, gpu: Option<u32>) -> Self {
        let wsl = host::os_info::probe(system).wsl;
        let smi_timeout = host::smi_timeout(system);
        Self {
            system,
            gpu,
            wsl,
            smi_timeout,
            run_checks: true,
            gpu_arch: None,
        }
    }

    /// The toolkit proof compiles for this compute capability (`9.0`, `sm_90`) instead of the
    /// selected GPU's (`--gpu-arch`).
    pub fn with_gpu_arch(mut self, arch: Option<String>) -> Self {
        self.gpu_arch = arch;
        self
    }

    /// A host that never runs a manifest's `verify:` commands (code from a manifest that may
    /// not be trusted yet): their proofs say so instead. `plan` is read-only this way.
    pub fn without_verify_commands(mut self) -> Self {
        self.run_checks = false;
        self
    }
}

impl HostView for LiveHost<'_> {
    fn os(&self) -> Os {
        self.system.os()
    }

    fn system(&self) -> Option<&dyn System> {
        Some(self.system)
    }

    fn is_admin(&self) -> bool {
        host::os_info::probe(self.system).admin.unwrap_or(false)
    }

    fn driver(&self) -> DriverSeen {
        let probe = host::nvidia_smi::probe(self.system, self.wsl, self.smi_timeout);
        let version = match probe.state {
            DriverState::Ok => probe
                .gpus
                .first()
                .and_then(|g| Version::parse(&g.driver_version).ok()),
            _ => None,
        };
        DriverSeen {
            version,
            cuda: probe.cuda_supported.clone(),
            problem: probe.state.fix(),
            state: (probe.state != DriverState::Ok).then(|| probe.state.label().to_string()),
            reboot_pending: matches!(probe.state, DriverState::Mismatch { .. }),
        }
    }

    fn toolkit(&self, root: &Path) -> Option<ToolkitSeen> {
        let info = host::find_toolkit(self.system, root)?;
        let (version, nvcc_release) = if info.exact_update_known {
            (info.version.clone(), None)
        } else {
            (None, info.version.clone())
        };
        Some(ToolkitSeen {
            root: info.root,
            version,
            nvcc_release,
        })
    }

    fn kernel(&self, root: &Path) -> Option<KernelCompile> {
        // The Windows toolkit proof stays `nvcc --version` until its fakes carry an nvcc.exe.
        if self.system.os() == Os::Windows {
            return None;
        }
        let arch = self
            .gpu_arch
            .clone()
            .or_else(|| self.compute_capability())
            .and_then(|c| host::kernel::sm_arch(&c));
        Some(host::kernel::compile_kernel(
            self.system,
            root,
            arch.as_deref(),
        ))
    }

    fn library(&self, python: &Path, library: &str) -> LibrarySeen {
        if !self.system.exists(python) && python.components().count() > 1 {
            return LibrarySeen::NoInterpreter;
        }
        // A venv's interpreter runs what the venv holds: only one stackpin made is run.
        if let Some(venv) = host::venv::venv_of(self.system, python)
            && let host::venv::VenvState::Foreign { why } =
                host::venv::state(self.system, &venv, python)
        {
            return LibrarySeen::Untrusted { why };
        }
        match host::library_probe::probe(
            self.system,
            python,
            library,
            host::library_probe::PROBE_TIMEOUT,
        ) {
            Ok(LibraryProbe::Found(info)) => LibrarySeen::Present {
                version: info.version,
                cuda: info.cuda.as_deref().and_then(|c| Version::parse(c).ok()),
                gpu_visible: info.cuda_available && info.device_count > 0,
                arch_list: info.arch_list,
            },
            Ok(LibraryProbe::ImportFailed { error, .. }) => LibrarySeen::ImportFailed { error },
            Err(_) => LibrarySeen::NoInterpreter,
        }
    }

    fn venv(&self, venv: &Path, python: &Path) -> host::venv::VenvState {
        host::venv::state(self.system, venv, python)
    }

    fn run_check(&self, argv: &[String]) -> Result<bool, String> {
        if !self.run_checks {
            return Err(
                "not run: `plan` is read-only and runs no verify command; `stackpin plan --probe` runs it"
                    .to_string(),
            );
        }
        let (program, args) = argv.split_first().ok_or("the command is empty")?;
        let program = self
            .system
            .which(program)
            .unwrap_or_else(|| std::path::PathBuf::from(program));
        self.system
            .run(&program, args, Duration::from_secs(120))
            .map(|out| out.code == Some(0))
            .map_err(|e| e.to_string())
    }

    fn gpus(&self) -> Vec<(String, String)> {
        let probe = host::nvidia_smi::probe(self.system, self.wsl, self.smi_timeout);
        if probe.gpus.is_empty() && !self.wsl {
            // No driver yet (a fresh machine): the cards on the PCI bus, by device ID, so the
            // generation rules refuse a stack before its driver rather than at the library.
            return host::pci::probe(self.system)
                .into_iter()
                .filter_map(|g| Some((g.label(), g.known?.compute.clone())))
                .collect();
        }
        probe
            .gpus
            .into_iter()
            .filter(|g| self.gpu.is_none_or(|i| i == g.index))
            .filter_map(|g| Some((g.name, g.compute_cap?)))
            .collect()
    }

    fn interpreter_version(&self, python: &str) -> Result<Version, String> {
        host::interpreter::version(self.system, python).map_err(|e| e.to_string())
    }

    fn linux_facts(&self, space_for: &[std::path::PathBuf]) -> Option<host::readiness::LinuxFacts> {
        (self.system.os() == Os::Linux).then(|| host::readiness::read(self.system, space_for))
    }

    fn host_root(&self) -> Option<std::path::PathBuf> {
        host::context::host_root(self.system)
    }

    fn compute_capability(&self) -> Option<String> {
        let probe = host::nvidia_smi::probe(self.system, self.wsl, self.smi_timeout);
        let visible = self.system.env("CUDA_VISIBLE_DEVICES");
        let choice = host::gpu_select::choose(&probe.gpus, self.gpu, visible.as_deref()).ok()?;
        let index = choice.index?;
        probe
            .gpus
            .iter()
            .find(|g| g.index == index)
            .and_then(|g| g.compute_cap.clone())
    }
}
