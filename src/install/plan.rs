//! The ordered plan: for each layer, what the host has next to what the manifest pins, a verdict,
//! and the exact argv `install` would run with each installer's archive state. `plan` prints it;
//! `install` executes it. Read-only: building a plan runs nothing but the host probes.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::files::{ArchivedFile, FileState};
use super::readiness::Choices;
use crate::exec::step::RunnerError;
use crate::layers::{DriverSeen, HostView, Proof, prove_layer};
use crate::manifest::placeholder::{Placeholder, Values, library_python};
use crate::manifest::{Layer, LibraryInstaller, Manifest};
use crate::os::Os;

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
    ToInstall {
        reason: String,
    },
    /// Not installed on this host at all (the driver under WSL or in a container).
    Skipped {
        why: String,
    },
    Blocked {
        why: String,
    },
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
    /// A Linux host's readiness for the runfiles of the layers that will run: each finding with
    /// its layer, whether it blocks, and its fix.
    pub readiness: Vec<super::readiness::Finding>,
}

impl Plan {
    /// True when some layer is blocked.
    pub fn blocked(&self) -> bool {
        self.layers
            .iter()
            .any(|l| matches!(l.verdict, Verdict::Blocked { .. }))
    }
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
    let base = Values::layer(m, stack, layer);
    if layer == Layer::Library && m.library.pip.is_some() {
        return Ok(library_commands(m, stack));
    }
    let Some(run) = m.run(layer) else {
        return Ok(vec![]);
    };
    // Only the files the manifest names run with `run`: the driver's prerequisite packages sit
    // beside its runfile and are installed by their own step.
    let named: Vec<String> = m
        .installers(layer)
        .iter()
        .filter_map(|i| i.file_name())
        .collect();
    files
        .iter()
        .filter(|f| f.layer == layer && named.contains(&f.file))
        .map(|f| {
            let mut values = base.clone();
            values.set(Placeholder::Installer, f.path.display().to_string());
            Ok(PlannedCommand {
                argv: values.substitute(run)?,
                installer: Some(f.clone()),
            })
        })
        .collect()
}

/// Appends `extra` (readiness's `--tmpdir`, the module signing pair) to each command that runs
/// an archived runfile.
/// The driver's build prerequisites (archived .deb files) run before its runfile.
fn add_prerequisites_step(
    m: &Manifest,
    stack: &Path,
    host: &dyn HostView,
    layer: Layer,
    commands: &mut Vec<PlannedCommand>,
) {
    if layer != Layer::Driver {
        return;
    }
    let root = host.host_root();
    let step =
        super::prerequisites::planned(m, stack, root.as_deref()).map(|argv| PlannedCommand {
            argv,
            installer: None,
        });
    commands.splice(0..0, step);
}

pub fn add_runfile_args(commands: &mut [PlannedCommand], extra: &[String]) {
    if extra.is_empty() {
        return;
    }
    for c in commands.iter_mut() {
        if c.installer
            .as_ref()
            .is_some_and(|f| f.file.ends_with(".run"))
        {
            c.argv.extend(extra.iter().cloned());
        }
    }
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
            // -I: no PYTHON* variable, no user site, and not the working folder on sys.path (a
            // `venv.py` or `pip/` there would run as root). --clear: a fresh venv, never one
            // with a `.pth` left in it; install replaces only a venv it made (host::venv).
            let mut create = vec![m.library.python.clone()];
            create.extend(strings(&["-I", "-m", "venv", "--clear"]));
            create.push(venv);
            let mut fill = vec![venv_python];
            fill.extend(strings(&[
                "-I",
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
    if let Some(why) = super::preflight::foreign_venv(m, host) {
        blockers.push((Layer::Library, why));
    }
    let proofs: Vec<Proof> = Layer::ORDER
        .into_iter()
        .map(|layer| prove_layer(m, layer, host))
        .collect();
    let to_run: Vec<Layer> = proofs
        .iter()
        .filter(|p| !p.holds)
        .map(|p| p.layer)
        .collect();
    // `plan` has no flags of install's: it shows what a plain `install --yes` would do.
    let choices = Choices::default().with_spare(stack);
    let readiness = super::readiness::findings(m, host, &to_run, &choices);
    blockers.extend(
        readiness
            .iter()
            .filter(|f| f.blocks())
            .map(|f| (f.layer, f.line())),
    );
    let mut layers = Vec::new();
    for (layer, proof) in Layer::ORDER.into_iter().zip(proofs) {
        let skipped = super::readiness::skipped(&readiness, layer);
        let mut commands = layer_commands(m, stack, layer, files)?;
        let extra = super::readiness::extra_args(m, layer, &readiness, &choices);
        add_runfile_args(&mut commands, &extra);
        add_prerequisites_step(m, stack, host, layer, &mut commands);
        let why: Vec<&str> = blockers
            .iter()
            .filter(|(l, _)| *l == layer)
            .map(|(_, why)| why.as_str())
            .collect();
        let verdict = verdict(layer, &proof, files, skipped, &why);
        layers.push(LayerPlan {
            layer,
            pinned: pinned_text(m, layer),
            reboot_after: layer == Layer::Driver && !proof.holds && skipped.is_none(),
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
        readiness,
    })
}

/// One layer's verdict from its proof, its archived files, a finding that skips it and the
/// reasons that block it.
fn verdict(
    layer: Layer,
    proof: &Proof,
    files: &[ArchivedFile],
    skipped: Option<&super::readiness::Finding>,
    why: &[&str],
) -> Verdict {
    let missing: Vec<&ArchivedFile> = files
        .iter()
        .filter(|f| f.layer == layer && f.state != FileState::Verified)
        .collect();
    let incomplete: Vec<&str> = files
        .iter()
        .filter(|f| f.layer == layer && f.state == FileState::Incomplete)
        .map(|f| f.file.as_str())
        .collect();
    if !incomplete.is_empty() {
        Verdict::Blocked {
            why: format!(
                "{} not archived yet (a fetch stopped before it finished); incomplete: run `stackpin fetch`",
                incomplete.join(", ")
            ),
        }
    } else if proof.holds {
        Verdict::InPlace
    } else if let Some(skip) = skipped {
        Verdict::Skipped {
            why: skip.what.clone(),
        }
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
    }
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
fn explain(m: &Manifest, driver: &DriverSeen, host: &dyn HostView) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    //! Planning against the fake host (nothing is spawned): for a host with no driver, the
    //! pinned driver, an older one, the toolkit there or not, the library there, the verdict
    //! and the exact argv `install` would run for each layer.

    use super::*;
    use crate::host::fake::FakeSystem;
    use crate::layers::live::LiveHost;

    const LINUX: &str = include_str!("../../manifests/torch-2.5.1-cu124-linux.yaml");
    const STACK: &str = "/archive/installers/torch-2.5.1-cu124-linux";

    const DRIVER_RUN: &str = "NVIDIA-Linux-x86_64-595.71.05.run";
    const TOOLKIT_RUN: &str = "cuda_12.4.1_550.54.15_linux.run";
    const VENV: &str = "/opt/stackpin/torch-2.5.1-cu124-linux";

    /// A path below `root` as the host's `Path::join` writes it (`\\` on Windows).
    fn joined(root: &str, parts: &[&str]) -> String {
        parts
            .iter()
            .fold(Path::new(root).to_path_buf(), |path, part| path.join(part))
            .display()
            .to_string()
    }

    fn in_stack(parts: &[&str]) -> String {
        joined(STACK, parts)
    }

    fn manifest() -> Manifest {
        crate::manifest::parse(LINUX, Path::new("m.yaml")).expect("shipped manifest parses")
    }

    /// The host's `python3`, which creates the venv, at the pinned Python.
    fn with_python(mut sys: FakeSystem) -> FakeSystem {
        sys.on_path
            .insert("python3".to_string(), PathBuf::from("/usr/bin/python3"));
        sys.answer("/usr/bin/python3", &["--version"], 0, "Python 3.12.3\n");
        sys
    }

    fn archived(layer: Layer, file: &str, state: FileState) -> ArchivedFile {
        ArchivedFile {
            layer,
            file: file.to_string(),
            path: Path::new(STACK).join(layer.as_str()).join(file),
            sha256: Some("0".repeat(64)),
            state,
        }
    }

    fn verified_files() -> Vec<ArchivedFile> {
        vec![
            archived(Layer::Driver, DRIVER_RUN, FileState::Verified),
            archived(Layer::Toolkit, TOOLKIT_RUN, FileState::Verified),
        ]
    }

    fn plan_on(sys: &FakeSystem, files: &[ArchivedFile]) -> Plan {
        plan(
            &manifest(),
            Path::new(STACK),
            &LiveHost::on(sys, None),
            files,
        )
        .expect("plans")
    }

    fn layer(p: &Plan, layer: Layer) -> &LayerPlan {
        p.layers
            .iter()
            .find(|l| l.layer == layer)
            .expect("every layer is planned")
    }

    fn argv(l: &LayerPlan) -> Vec<Vec<String>> {
        l.commands.iter().map(|c| c.argv.clone()).collect()
    }

    fn to_install(reason: &str) -> Verdict {
        Verdict::ToInstall {
            reason: reason.to_string(),
        }
    }

    #[test]
    fn a_host_without_a_driver_installs_every_layer_from_the_archive_in_order() {
        let p = plan_on(&with_python(FakeSystem::bare_linux()), &verified_files());
        assert_eq!(
            p.layers.iter().map(|l| l.layer).collect::<Vec<_>>(),
            Layer::ORDER
        );
        assert!(!p.blocked());
        assert_eq!(
            p.notes,
            [
                "no working NVIDIA driver on this machine — nvidia-smi not found: no NVIDIA driver is installed (it ships nvidia-smi); `stackpin install` installs the pinned one"
            ]
        );

        let driver = layer(&p, Layer::Driver);
        assert_eq!(driver.verdict, to_install("no nvidia-smi"));
        assert!(driver.reboot_after, "a reboot follows a new driver");
        let installer = in_stack(&["driver", DRIVER_RUN]);
        assert_eq!(argv(driver), [["sh", &installer, "--silent", "--dkms"]]);
        assert_eq!(
            driver.commands[0]
                .installer
                .as_ref()
                .map(|f| f.file.as_str()),
            Some(DRIVER_RUN),
            "the archived file is checked again right before it runs"
        );

        let toolkit = layer(&p, Layer::Toolkit);
        assert_eq!(
            toolkit.verdict,
            to_install("/usr/local/cuda-12.4 does not exist")
        );
        let installer = in_stack(&["toolkit", TOOLKIT_RUN]);
        assert_eq!(
            argv(toolkit),
            [[
                "sh",
                installer.as_str(),
                "--silent",
                "--toolkit",
                "--toolkitpath=/usr/local/cuda-12.4",
                "--no-man-page"
            ]]
        );
        assert!(!toolkit.reboot_after);

        let library = layer(&p, Layer::Library);
        assert!(matches!(library.verdict, Verdict::ToInstall { .. }));
        let commands = argv(library);
        assert_eq!(
            commands[0],
            ["python3", "-I", "-m", "venv", "--clear", VENV]
        );
        assert_eq!(commands[1][0], joined(VENV, &["bin", "python"]));
        assert!(
            commands[1]
                .windows(2)
                .any(|w| w[0] == "--find-links" && w[1] == in_stack(&["library"]))
                && commands[1].contains(&"--require-hashes".to_string())
                && commands[1].contains(&"--no-index".to_string()),
            "offline, by hash, from the archive: {:?}",
            commands[1]
        );
    }

    #[test]
    fn the_pinned_driver_is_in_place_and_needs_no_reboot() {
        let mut sys = FakeSystem::bare_linux();
        sys.with_driver("595.71.05");
        let p = plan_on(&with_python(sys), &verified_files());
        let driver = layer(&p, Layer::Driver);
        assert_eq!(driver.verdict, Verdict::InPlace);
        assert_eq!(driver.proof.seen, "driver 595.71.05 active");
        assert!(!driver.reboot_after);
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        assert_eq!(
            layer(&p, Layer::Toolkit).verdict,
            to_install("/usr/local/cuda-12.4 does not exist")
        );
    }

    #[test]
    fn an_older_driver_is_replaced_naming_both_versions() {
        let mut sys = FakeSystem::bare_linux();
        sys.with_driver("550.54.15");
        let p = plan_on(&with_python(sys), &verified_files());
        let driver = layer(&p, Layer::Driver);
        assert_eq!(
            driver.verdict,
            to_install("driver 550.54.15 active, 595.71.05 pinned")
        );
        assert!(driver.reboot_after);
        assert_eq!(argv(driver).len(), 1);
    }

    #[test]
    fn a_host_with_every_layer_as_pinned_has_nothing_to_install() {
        let sys = with_python(FakeSystem::linux_host("595.71.05", "2.5.1+cu124"));
        let p = plan_on(&sys, &verified_files());
        for l in &p.layers {
            assert_eq!(l.verdict, Verdict::InPlace, "{}: {}", l.layer, l.proof.seen);
            assert!(!l.reboot_after);
        }
        assert_eq!(
            layer(&p, Layer::Toolkit).proof.seen,
            "CUDA 12.4.1 in /usr/local/cuda-12.4; a kernel compiled for sm_89"
        );
        assert_eq!(
            layer(&p, Layer::Library).proof.seen,
            "torch 2.5.1 built for CUDA 12.4, sees the GPU"
        );
    }

    #[test]
    fn a_present_toolkit_with_a_missing_library_installs_only_the_library() {
        let mut sys = FakeSystem::bare_linux();
        sys.with_driver("595.71.05").with_toolkit();
        let p = plan_on(&with_python(sys), &verified_files());
        assert_eq!(layer(&p, Layer::Driver).verdict, Verdict::InPlace);
        assert_eq!(layer(&p, Layer::Toolkit).verdict, Verdict::InPlace);
        assert_eq!(
            layer(&p, Layer::Library).verdict,
            to_install("no interpreter for torch yet")
        );
    }

    #[test]
    fn an_installer_not_archived_yet_sends_the_user_to_fetch_first() {
        let files = vec![
            archived(Layer::Driver, DRIVER_RUN, FileState::Missing),
            archived(Layer::Toolkit, TOOLKIT_RUN, FileState::Verified),
        ];
        let p = plan_on(&with_python(FakeSystem::bare_linux()), &files);
        assert_eq!(
            layer(&p, Layer::Driver).verdict,
            to_install(&format!(
                "no nvidia-smi; archive not ready ({DRIVER_RUN} missing): run `stackpin fetch` first"
            ))
        );
        assert!(!p.blocked(), "fetch fixes it: not a blocker");
    }

    #[test]
    fn the_wrong_python_blocks_the_library_layer_alone() {
        let mut sys = FakeSystem::bare_linux();
        sys.on_path
            .insert("python3".to_string(), PathBuf::from("/usr/bin/python3"));
        sys.answer("/usr/bin/python3", &["--version"], 0, "Python 3.10.12\n");
        let p = plan_on(&sys, &verified_files());
        assert!(p.blocked());
        assert!(matches!(
            layer(&p, Layer::Driver).verdict,
            Verdict::ToInstall { .. }
        ));
        let Verdict::Blocked { why } = &layer(&p, Layer::Library).verdict else {
            panic!("the library is not blocked");
        };
        assert!(
            why.contains("Python 3.10.12") && why.contains("3.12"),
            "{why}"
        );
    }
}
