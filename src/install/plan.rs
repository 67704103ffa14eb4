//! The ordered plan: for each layer, what the host has next to what the manifest pins, a verdict,
//! and the exact argv `install` would run with each installer's archive state. `plan` prints it;
//! `install` executes it. Read-only: building a plan runs nothing but the host probes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::proof::{HostView, Proof, library_python, prove_layer};
use super::runner::{RunnerError, substitute};
use crate::compat::{self, LibraryLookup, Os};
use crate::manifest::{Layer, Manifest};

/// The archive state of one installer file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    /// Present and its sha256 matches the lock.
    Verified,
    Missing,
    Corrupt,
}

impl FileState {
    /// The word users see.
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Verified => "verified",
            FileState::Missing => "missing",
            FileState::Corrupt => "corrupt",
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
#[serde(tag = "verdict", rename_all = "kebab-case")]
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

/// The file pip reads in `install`: every archived wheel pinned by name, version and sha256, so
/// `--require-hashes` refuses anything else.
pub fn pip_requirements_path(stack: &Path) -> PathBuf {
    stack.join("library").join("requirements.stackpin.txt")
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
        let venv = m.library.venv.clone().unwrap_or_default();
        let venv_python = library_python(m).display().to_string();
        return Ok(vec![
            PlannedCommand {
                argv: vec![m.library.python.clone(), "-m".into(), "venv".into(), venv],
                installer: None,
            },
            PlannedCommand {
                argv: vec![
                    venv_python,
                    "-m".into(),
                    "pip".into(),
                    "install".into(),
                    "--no-index".into(),
                    "--find-links".into(),
                    stack.join("library").display().to_string(),
                    "--require-hashes".into(),
                    "-r".into(),
                    pip_requirements_path(stack).display().to_string(),
                ],
                installer: None,
            },
        ]);
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
    let arch_blocker = arch_blocker(m, host);
    let mut layers = Vec::new();
    for layer in Layer::ORDER {
        let proof = prove_layer(m, layer, host);
        let commands = layer_commands(m, stack, layer, files)?;
        let missing: Vec<&ArchivedFile> = files
            .iter()
            .filter(|f| f.layer == layer && f.state != FileState::Verified)
            .collect();
        let verdict = if proof.holds {
            Verdict::InPlace
        } else if layer == Layer::Library && arch_blocker.is_some() {
            Verdict::Blocked {
                why: arch_blocker.clone().unwrap_or_default(),
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
    Ok(Plan {
        stack: m.name.clone(),
        os: m.os,
        explain: explain(m, &driver, host),
        layers,
        notes,
    })
}

fn pinned_text(m: &Manifest, layer: Layer) -> String {
    match layer {
        Layer::Driver => format!("driver {}", m.driver.version),
        Layer::Toolkit => format!("CUDA {} in {}", m.toolkit.version, m.toolkit.root),
        Layer::Library => format!(
            "{} {} (CUDA {})",
            m.library.name, m.library.version, m.library.cuda
        ),
    }
}

/// A GPU the library build has no kernels for is a blocker, before anything is installed.
fn arch_blocker(m: &Manifest, host: &dyn HostView) -> Option<String> {
    let cap = host.compute_capability()?;
    let LibraryLookup::Known(release) =
        compat::library_release(&m.library.name, &m.library.version, m.os)
    else {
        return None;
    };
    let archs = release.archs.get(&m.library.cuda.major_minor())?;
    if archs.iter().any(|a| a == &cap) {
        return None;
    }
    Some(format!(
        "this GPU is compute capability {cap}; the {} {} build for CUDA {} has kernels for {} only. Pin another CUDA line of the library whose build lists {cap}",
        m.library.name,
        m.library.version,
        m.library.cuda,
        archs.join(", ")
    ))
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
    out.push(crate::library::cuda_build_words(
        &m.library.name,
        &m.library.cuda,
    ));
    out
}
