//! The ordered plan: for each layer, what the host has next to what the manifest pins, a verdict,
//! and the exact argv `install` would run with each installer's archive state. `plan` prints it;
//! `install` executes it. Read-only: building a plan runs nothing but the host probes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::proof::{HostView, Proof, library_python, prove_layer};
use super::runner::{RunnerError, substitute};
use crate::manifest::{Layer, LibraryInstaller, Manifest};
use crate::os::Os;

/// The archive state of one installer file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    /// Present and its sha256 matches the lock.
    Verified,
    Missing,
    Corrupt,
    /// A requirement the manifest asked for that a fetch stopped before archiving.
    Incomplete,
}

impl FileState {
    /// The word users see.
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Verified => "verified",
            FileState::Missing => "missing",
            FileState::Corrupt => "corrupt",
            FileState::Incomplete => "incomplete",
        }
    }
}

/// One archived file of a layer, in lock order.
#[derive(Debug, Clone, Serialize)]
pub struct ArchivedFile {
    pub layer: Layer,
    pub file: String,
    pub path: PathBuf,
    pub sha256: Option<String>,
    pub state: FileState,
}

/// One command `install` will run.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedCommand {
    pub argv: Vec<String>,
    /// The archived file this command runs, checked again right before it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installer: Option<ArchivedFile>,
}

/// What happens to a layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    InPlace,
    ToInstall { reason: String },
    Blocked { why: String },
}

/// One layer of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct LayerPlan {
    pub layer: Layer,
    pub pinned: String,
    pub proof: Proof,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub commands: Vec<PlannedCommand>,
    /// A reboot follows this layer (the driver, unless it is already in place).
    pub reboot_after: bool,
}

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub stack: String,
    pub os: Os,
    pub layers: Vec<LayerPlan>,
    /// One line each for the version numbers users confuse.
    pub explain: Vec<String>,
    /// Said plainly when there is no NVIDIA GPU or driver to talk to.
    pub notes: Vec<String>,
}

impl Plan {
    /// True when some layer is blocked.
    pub fn blocked(&self) -> bool {
        self.layers
            .iter()
            .any(|l| matches!(l.verdict, Verdict::Blocked { .. }))
    }
}

/// Placeholder values for a layer's commands.
pub fn placeholder_values(
    m: &Manifest,
    stack: &Path,
    layer: Layer,
) -> BTreeMap<&'static str, String> {
    let mut values = manifest_values(m);
    values.insert("files", stack.join(layer.as_str()).display().to_string());
    values
}

/// The placeholders a manifest alone defines (no archive needed): `{root}`, `{name}`,
/// `{python}` and `{venv}` — all that a layer's `verify:` command may use.
pub fn manifest_values(m: &Manifest) -> BTreeMap<&'static str, String> {
    let mut values = BTreeMap::new();
    values.insert("root", m.toolkit.root.clone());
    values.insert("name", m.name.clone());
    values.insert("python", library_python(m).display().to_string());
    if let Some(venv) = &m.library.venv {
        values.insert("venv", venv.clone());
    }
    values
}

/// The file pip (or uv) reads in `install`: every archived wheel pinned by name, version and
/// sha256, so `--require-hashes` refuses anything else. Derived from the lock at each install and
/// kept beside the layers, not in `library/`, where only the lock's files belong.
pub fn pip_requirements_path(stack: &Path) -> PathBuf {
    stack.join("requirements.stackpin.txt")
}

/// The commands of a layer, placeholders substituted, in lock order.
pub fn layer_commands(
    m: &Manifest,
    stack: &Path,
    layer: Layer,
    files: &[ArchivedFile],
) -> Result<Vec<PlannedCommand>, RunnerError> {
    let base = placeholder_values(m, stack, layer);
    if layer == Layer::Library && m.library.pip.is_some() {
        return Ok(library_commands(m, stack));
    }
    let Some(run) = m.run(layer) else {
        return Ok(vec![]);
    };
    files
        .iter()
        .filter(|f| f.layer == layer)
        .map(|f| {
            let mut values = base.clone();
            values.insert("installer", f.path.display().to_string());
            Ok(PlannedCommand {
                argv: substitute(run, &values)?,
                installer: Some(f.clone()),
            })
        })
        .collect()
}

/// A pip library's two commands: a fresh venv, then the archived wheels into it, offline, by
/// hash, from the stack's `library/` folder alone. `install` runs both hermetically (no `PIP_*`,
/// `UV_*` or `PYTHON*` variable of the caller, no pip configuration file).
fn library_commands(m: &Manifest, stack: &Path) -> Vec<PlannedCommand> {
    let venv = m.library.venv.clone().unwrap_or_default();
    let venv_python = library_python(m).display().to_string();
    let wheels = stack.join("library").display().to_string();
    let requirements = pip_requirements_path(stack).display().to_string();
    let strings = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (create, fill) = match m.library.installer {
        LibraryInstaller::Pip => {
            let mut create = vec![m.library.python.clone()];
            create.extend(strings(&["-m", "venv"]));
            create.push(venv);
            let mut fill = vec![venv_python];
            fill.extend(strings(&[
                "-m",
                "pip",
                "install",
                "--isolated",
                "--disable-pip-version-check",
                "--no-input",
                "--no-cache-dir",
                "--no-index",
                "--find-links",
            ]));
            fill.extend([wheels, "--require-hashes".into(), "-r".into(), requirements]);
            (create, fill)
        }
        LibraryInstaller::Uv => {
            let uv = crate::archive::uv_binary_path(stack).display().to_string();
            let mut create = vec![uv.clone()];
            create.extend(strings(&[
                "venv",
                "--no-config",
                "--offline",
                "--clear",
                "--python",
            ]));
            create.extend([m.library.python.clone(), venv]);
            let mut fill = vec![uv];
            fill.extend(strings(&["pip", "install", "--no-config", "--python"]));
            fill.push(venv_python);
            fill.extend(strings(&["--offline", "--no-index", "--find-links"]));
            fill.push(wheels);
            // --no-cache: a warm cache would install what it cached, not the archived bytes.
            fill.extend(strings(&[
                "--require-hashes",
                "--compile-bytecode",
                "--no-cache",
                "-r",
            ]));
            fill.push(requirements);
            (create, fill)
        }
    };
    vec![
        PlannedCommand {
            argv: create,
            installer: None,
        },
        PlannedCommand {
            argv: fill,
            installer: None,
        },
    ]
}

/// Builds the plan for a manifest on this host.
pub fn plan(
    m: &Manifest,
    stack: &Path,
    host: &dyn HostView,
    files: &[ArchivedFile],
) -> Result<Plan, RunnerError> {
    let mut notes = Vec::new();
    let driver = host.driver();
    if driver.version.is_none() {
        notes.push(match &driver.problem {
            Some(p) => format!("no working NVIDIA driver on this machine — {p}"),
            None => "no NVIDIA GPU or driver found on this machine".to_string(),
        });
    }
    // The host's GPUs against the pinned generation rules, and its Python against the pin.
    let mut blockers = super::preflight::gpu_findings(m, host);
    let interpreter = super::preflight::interpreter(m, host);
    if let Some(why) = interpreter.as_ref().and_then(|i| i.blocker()) {
        blockers.push((Layer::Library, why));
    }
    let mut layers = Vec::new();
    for layer in Layer::ORDER {
        let proof = prove_layer(m, layer, host);
        let commands = layer_commands(m, stack, layer, files)?;
        let missing: Vec<&ArchivedFile> = files
            .iter()
            .filter(|f| f.layer == layer && f.state != FileState::Verified)
            .collect();
        let why: Vec<&str> = blockers
            .iter()
            .filter(|(l, _)| *l == layer)
            .map(|(_, why)| why.as_str())
            .collect();
        let incomplete: Vec<&str> = files
            .iter()
            .filter(|f| f.layer == layer && f.state == FileState::Incomplete)
            .map(|f| f.file.as_str())
            .collect();
        let verdict = if !incomplete.is_empty() {
            Verdict::Blocked {
                why: format!(
                    "{} not archived yet (a fetch stopped before it finished); incomplete: run `stackpin fetch`",
                    incomplete.join(", ")
                ),
            }
        } else if proof.holds {
            Verdict::InPlace
        } else if !why.is_empty() {
            Verdict::Blocked {
                why: why.join("; "),
            }
        } else if !missing.is_empty() {
            // Not a blocker: `fetch` archives (or repairs) the file, then install can run.
            Verdict::ToInstall {
                reason: format!(
                    "{}; archive not ready ({}): run `stackpin fetch` first",
                    proof.seen,
                    missing
                        .iter()
                        .map(|f| format!("{} {}", f.file, f.state.as_str()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        } else {
            Verdict::ToInstall {
                reason: proof.seen.clone(),
            }
        };
        layers.push(LayerPlan {
            layer,
            pinned: pinned_text(m, layer),
            reboot_after: layer == Layer::Driver && !proof.holds,
            proof,
            verdict,
            commands,
        });
    }
    let mut explain = explain(m, &driver, host);
    if let Some(i) = &interpreter {
        explain.push(i.explain());
    }
    Ok(Plan {
        stack: m.name.clone(),
        os: m.os,
        explain,
        layers,
        notes,
    })
}

fn pinned_text(m: &Manifest, layer: Layer) -> String {
    match layer {
        Layer::Driver => format!("driver {}", m.driver.version),
        Layer::Toolkit => format!("CUDA {} in {}", m.toolkit.version, m.toolkit.root),
        Layer::Library => match &m.library.python_version {
            Some(py) => format!(
                "{} {} (CUDA {}, Python {py})",
                m.library.name, m.library.version, m.library.cuda
            ),
            None => format!(
                "{} {} (CUDA {})",
                m.library.name, m.library.version, m.library.cuda
            ),
        },
    }
}

/// The numbers users confuse, one line each.
fn explain(m: &Manifest, driver: &super::proof::DriverSeen, host: &dyn HostView) -> Vec<String> {
    let mut out = Vec::new();
    match &driver.version {
        Some(v) => out.push(format!(
            "driver version {v}: the kernel driver now running (pinned: {})",
            m.driver.version
        )),
        None => out.push(format!(
            "driver version: none running yet (pinned: {})",
            m.driver.version
        )),
    }
    out.push(match &driver.cuda {
        Some(c) => format!(
            "CUDA {c} (nvidia-smi's \"CUDA Version\"): the newest CUDA this driver can run — not an installed toolkit"
        ),
        None => "driver's CUDA: unknown until a driver runs (nvidia-smi's \"CUDA Version\" is the newest CUDA a driver can run, not an installed toolkit)".to_string(),
    });
    let toolkit = host.toolkit(Path::new(&m.toolkit.root));
    out.push(
        match toolkit
            .as_ref()
            .and_then(|t| t.version.clone().or(t.nvcc_release.clone()))
        {
            Some(v) => format!(
                "nvcc {v}: the compiler of the toolkit in {} (pinned: {})",
                m.toolkit.root, m.toolkit.version
            ),
            None => format!(
                "nvcc: not installed yet in {} (pinned: {})",
                m.toolkit.root, m.toolkit.version
            ),
        },
    );
    out.push(crate::compat::libraries().cuda_build_words(&m.library.name, &m.library.cuda));
    out
}
