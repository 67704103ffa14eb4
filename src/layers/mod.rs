//! The layers on the host: what each layer (driver, toolkit, library) looks like there and
//! whether it holds, as DESIGN.md defines it: driver — the GPU utility reports the pinned
//! version; toolkit — its versioned folder exists, reports the pinned version and its nvcc
//! compiles a kernel for the target GPU's architecture; library — it
//! imports, reports its version and CUDA line, and sees the GPU. The facts come from a
//! [`HostView`] (the live one is [`live::LiveHost`]); the verdicts are plain functions.
//!
//! Install plans and checks with it, prove checks the layers before the example, doctor, up and
//! status read the same proofs: none of them owns it, so it depends on none of them.

pub mod live;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::host::kernel::KernelCompile;
use crate::manifest::placeholder::{Values, library_python};
use crate::manifest::{Layer, Manifest};
use crate::os::Os;
use crate::version::Version;

/// The driver as the host reports it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DriverSeen {
    /// The running driver's version, when nvidia-smi answered.
    pub version: Option<Version>,
    /// The newest CUDA that driver supports (nvidia-smi's "CUDA Version").
    pub cuda: Option<Version>,
    /// A one-line description of a bad state and its fix (no driver, mismatch, no nvidia-smi).
    pub problem: Option<String>,
    /// The bad state in two or three words, for tables.
    pub state: Option<String>,
    /// True for "Driver/library version mismatch": new files are on disk, the old module runs.
    pub reboot_pending: bool,
}

/// A toolkit folder as found on disk.
#[derive(Debug, Clone, Serialize)]
pub struct ToolkitSeen {
    pub root: PathBuf,
    /// The full version (`12.4.1`) from version.json / version.txt, if the folder has one.
    pub version: Option<Version>,
    /// The line nvcc reports (`12.4`), when only nvcc could be asked.
    pub nvcc_release: Option<Version>,
}

/// The library as its interpreter reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LibrarySeen {
    Present {
        version: Version,
        cuda: Option<Version>,
        gpu_visible: bool,
        arch_list: Vec<String>,
    },
    /// The interpreter ran but the import failed; `error` is its last line.
    ImportFailed { error: String },
    /// No interpreter at that path (the venv does not exist yet).
    NoInterpreter,
    /// A venv stackpin did not make (or whose `python` changed since): its interpreter was
    /// not run ([`crate::host::venv`]).
    Untrusted { why: String },
}

/// What the install chain, `plan`, prove and doctor ask of the host. [`live::LiveHost`] probes
/// it through a `System`: the real machine, or in unit tests `host::fake::FakeSystem`; the CLI
/// tests run the real one against fake programs on PATH.
pub trait HostView {
    fn os(&self) -> Os;
    fn is_admin(&self) -> bool;
    fn driver(&self) -> DriverSeen;
    fn toolkit(&self, root: &Path) -> Option<ToolkitSeen>;
    /// The toolkit at `root` compiles a small kernel for the target GPU's architecture
    /// ([`crate::host::kernel`]); `None` where this view does not ask (Windows, for now).
    fn kernel(&self, root: &Path) -> Option<KernelCompile>;
    fn library(&self, python: &Path, library: &str) -> LibrarySeen;
    /// What stands at a library's venv path ([`crate::host::venv`]).
    fn venv(&self, venv: &Path, python: &Path) -> crate::host::venv::VenvState;
    /// The selected GPU's compute capability (`8.6`), if a GPU was found.
    fn compute_capability(&self) -> Option<String>;
    /// Every GPU nvidia-smi lists that reports a compute capability: `(name, capability)`; with
    /// no GPU there (no driver yet), the NVIDIA cards the PCI bus shows and the data knows.
    fn gpus(&self) -> Vec<(String, String)>;
    /// The version of the interpreter `python` (a path or a program on PATH).
    fn interpreter_version(&self, python: &str) -> Result<Version, String>;
    /// Runs a manifest's `verify:` command; `Ok(true)` when it exits 0, `Err` with the reason
    /// when it cannot run.
    fn run_check(&self, argv: &[String]) -> Result<bool, String>;
    /// What a Linux host shows about its readiness for NVIDIA's runfiles, with the free space
    /// at each of `space_for`; `None` on a host that is not Linux (or a view that cannot tell).
    fn linux_facts(&self, _space_for: &[PathBuf]) -> Option<crate::host::readiness::LinuxFacts> {
        None
    }
    /// The folder the host's Linux paths are read (and dpkg installs) under: `STACKPIN_HOST_ROOT`
    /// (a mounted image, a test's fake root); `None` for `/`.
    fn host_root(&self) -> Option<PathBuf> {
        None
    }
    /// The programs behind this view, for the commands the chain runs around a layer (the
    /// Windows Update guards); `None` for a view that has none.
    fn system(&self) -> Option<&dyn crate::host::System> {
        None
    }
}

/// A layer's proof: whether it holds and, either way, what was seen.
#[derive(Debug, Clone, Serialize)]
pub struct Proof {
    pub layer: Layer,
    pub holds: bool,
    pub seen: String,
    /// The driver is installed but not active until a reboot.
    pub reboot_pending: bool,
}

/// Proves one layer against the host: the layer's `verify:` command when the manifest gives
/// one, else the default proof of DESIGN.md.
pub fn prove_layer(m: &Manifest, layer: Layer, host: &dyn HostView) -> Proof {
    let verify = match layer {
        Layer::Driver => m.driver.verify.as_ref(),
        Layer::Toolkit => m.toolkit.verify.as_ref(),
        Layer::Library => m.library.verify.as_ref(),
    };
    if let Some(argv) = verify {
        // A placeholder without a value fails the proof: running the command with a literal
        // `{…}` in it would prove nothing.
        let argv = match Values::manifest(m).substitute(argv) {
            Ok(argv) => argv,
            Err(e) => {
                return Proof {
                    layer,
                    holds: false,
                    seen: format!("the verify command cannot run: {e}"),
                    reboot_pending: false,
                };
            }
        };
        let (holds, seen) = match host.run_check(&argv) {
            Ok(true) => (true, format!("`{}` passed", argv.join(" "))),
            Ok(false) => (false, format!("`{}` failed", argv.join(" "))),
            Err(why) => (false, format!("`{}` could not run: {why}", argv.join(" "))),
        };
        return Proof {
            layer,
            holds,
            seen,
            reboot_pending: false,
        };
    }
    match layer {
        Layer::Driver => driver_proof(m, &host.driver()),
        Layer::Toolkit => {
            let root = Path::new(&m.toolkit.root);
            let proof = toolkit_proof(m, host.toolkit(root));
            if !proof.holds {
                return proof;
            }
            match host.kernel(root) {
                Some(kernel) => with_kernel(proof, &kernel),
                None => proof,
            }
        }
        Layer::Library => library_proof(m, &host.library(&library_python(m), &m.library.name)),
    }
}

/// The driver proof: nvidia-smi reports the pinned version.
pub fn driver_proof(m: &Manifest, seen: &DriverSeen) -> Proof {
    let pinned = &m.driver.version;
    let (holds, text) = match (&seen.version, &seen.problem) {
        (Some(v), _) if v.same_release(pinned) => (true, format!("driver {v} active")),
        (Some(v), _) => (false, format!("driver {v} active, {pinned} pinned")),
        (None, Some(problem)) => (false, seen.state.clone().unwrap_or_else(|| problem.clone())),
        (None, None) => (false, "no NVIDIA driver answered".to_string()),
    };
    Proof {
        layer: Layer::Driver,
        holds,
        seen: text,
        reboot_pending: seen.reboot_pending,
    }
}

/// The toolkit proof: the versioned folder exists and reports the pinned version. When only
/// nvcc could be asked it reports the line (`12.4`), which is accepted with that said.
pub fn toolkit_proof(m: &Manifest, seen: Option<ToolkitSeen>) -> Proof {
    let pinned = &m.toolkit.version;
    let (holds, text) = match seen {
        None => (false, format!("{} does not exist", m.toolkit.root)),
        Some(t) => match (&t.version, &t.nvcc_release) {
            (Some(v), _) if v.same_release(pinned) || v.public() == pinned.public() => {
                (true, format!("CUDA {v} in {}", t.root.display()))
            }
            (Some(v), _) => (
                false,
                format!("CUDA {v} in {}, {pinned} pinned", t.root.display()),
            ),
            (None, Some(line)) if line.major_minor() == pinned.major_minor() => (
                true,
                format!(
                    "nvcc release {line} in {} (the update is not recorded there)",
                    t.root.display()
                ),
            ),
            (None, Some(line)) => (
                false,
                format!(
                    "nvcc release {line} in {}, {pinned} pinned",
                    t.root.display()
                ),
            ),
            (None, None) => (
                false,
                format!("{} exists but reports no CUDA version", t.root.display()),
            ),
        },
    };
    Proof {
        layer: Layer::Toolkit,
        holds,
        seen: text,
        reboot_pending: false,
    }
}

/// The toolkit proof completed by the compile: it holds only when the kernel compiled, and says
/// for which architecture; a failure carries the compiler's own message.
pub fn with_kernel(proof: Proof, kernel: &KernelCompile) -> Proof {
    let arch = kernel
        .arch
        .clone()
        .unwrap_or_else(|| "nvcc's default architecture (no GPU seen; give --gpu-arch)".into());
    let (holds, seen) = if kernel.ok {
        (
            true,
            format!("{}; a kernel compiled for {arch}", proof.seen),
        )
    } else {
        (
            false,
            format!(
                "{}, but it cannot compile a kernel for {arch}: {}",
                proof.seen,
                kernel.message.as_deref().unwrap_or("nvcc failed")
            ),
        )
    };
    Proof {
        holds,
        seen,
        ..proof
    }
}

/// When the library is installed as pinned but sees no GPU, the words that send the user to the
/// driver layer instead of the library ("torch 2.5.1 is installed but sees no GPU — the driver
/// layer: nvidia-smi …"); `None` otherwise (or with a `verify:` override, which is its own proof).
pub fn blind_library(m: &Manifest, layer: Layer, host: &dyn HostView) -> Option<String> {
    if layer != Layer::Library || m.library.verify.is_some() {
        return None;
    }
    let LibrarySeen::Present {
        version,
        cuda: Some(cuda),
        gpu_visible: false,
        ..
    } = host.library(&library_python(m), &m.library.name)
    else {
        return None;
    };
    let as_pinned = version.same_release(&m.library.version.public())
        && cuda.major_minor() == m.library.cuda.major_minor();
    if !as_pinned {
        return None;
    }
    let driver = host.driver();
    let smi = match (&driver.version, &driver.cuda, &driver.problem) {
        (Some(v), Some(c), _) => format!(
            "nvidia-smi reports driver {v} (CUDA up to {c}); check CUDA_VISIBLE_DEVICES and the container's GPU access"
        ),
        (Some(v), None, _) => format!("nvidia-smi reports driver {v}"),
        (None, _, Some(problem)) => format!("nvidia-smi: {problem}"),
        (None, _, None) => "nvidia-smi reports no working driver".to_string(),
    };
    Some(format!(
        "{} {version} is installed but sees no GPU — the driver layer: {smi}; run `stackpin doctor`",
        m.library.name
    ))
}

/// The library proof: the pinned version, built for the pinned CUDA line, sees the GPU.
pub fn library_proof(m: &Manifest, seen: &LibrarySeen) -> Proof {
    let lib = &m.library;
    let (holds, text) = match seen {
        LibrarySeen::NoInterpreter => (false, format!("no interpreter for {} yet", lib.name)),
        LibrarySeen::Untrusted { why } => (false, format!("not run: {why}")),
        LibrarySeen::ImportFailed { error } => {
            (false, format!("import {} failed: {error}", lib.name))
        }
        LibrarySeen::Present {
            version,
            cuda,
            gpu_visible,
            ..
        } => {
            let version_ok = version.same_release(&lib.version.public());
            // Only the libraries stackpin describes report their CUDA build and GPU.
            let Some(described) = crate::compat::libraries().describe(&lib.name) else {
                return Proof {
                    layer: Layer::Library,
                    holds: version_ok,
                    seen: format!(
                        "{} {version} (its CUDA build and GPU are not checked: stackpin has no probe for {})",
                        lib.name, lib.name
                    ),
                    reboot_pending: false,
                };
            };
            let cuda_ok = cuda
                .as_ref()
                .is_some_and(|c| described.cuda_match.accepts(c, &lib.cuda));
            let cuda_text = cuda
                .as_ref()
                .map_or("no CUDA".to_string(), |c| format!("CUDA {c}"));
            let gpu_text = if *gpu_visible {
                "sees the GPU".to_string()
            } else {
                described.no_gpu_words()
            };
            (
                version_ok && cuda_ok && *gpu_visible,
                format!("{} {version} built for {cuda_text}, {gpu_text}", lib.name),
            )
        }
    };
    Proof {
        layer: Layer::Library,
        holds,
        seen: text,
        reboot_pending: false,
    }
}
