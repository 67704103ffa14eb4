//! The ordered install: driver → toolkit → library, never another order, each layer proven on
//! the host before the next. Every archived installer is re-hashed against the lock right before
//! it runs; a missing or changed file is refused, never executed. Where the chain stands lives in
//! `state.yaml`, so a reboot after the driver (or a failure) resumes at the right layer.
//!
//! Downloading is `archive`'s job; printing is the CLI's, through [`InstallReporter`].

pub mod exit_codes;
pub mod files;
pub mod plan;
pub mod preflight;
pub mod prepare;
pub mod prerequisites;
pub mod readiness;
pub mod reboot;
pub mod resume;
pub mod runfile_log;
pub mod state;
pub mod windows_update;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::archive::{self, ArchiveError, Lockfile, StackDir};
use crate::exec::step::{RunnerError, Step, StepOutcome, StepStatus, start_step};
use crate::fsutil::lock;
use crate::layers::{self, HostView, Proof, prove_layer};
use crate::manifest::placeholder::library_python;
use crate::manifest::{Layer, LibraryInstaller, Manifest, ToolkitSource};
use files::{ArchivedFile, FileState};
use plan::{PlannedCommand, layer_commands};
use state::{ChainState, LayerStatus, StateError};

/// Why the chain could not run or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "installing needs root (Linux) or Administrator (Windows); run it again with sudo / from an elevated prompt, or use --dry-run to see the plan"
    )]
    NotAdmin,
    #[error("the {layer} installer was refused before it ran")]
    Refused {
        layer: Layer,
        #[source]
        source: ArchiveError,
    },
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("{layer} step `{program}`")]
    Runner {
        layer: Layer,
        program: String,
        #[source]
        source: RunnerError,
    },
    #[error("cannot write the pip requirements {}", path.display())]
    Requirements {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The folder at `library.venv` is not a venv stackpin made: it is neither run nor replaced.
    #[error(
        "library: {why}; stackpin creates the venv fresh and replaces only one it made: move {venv} aside (or delete it), or set library.venv to a new folder"
    )]
    ForeignVenv { venv: String, why: String },
    /// Another stackpin installs on this machine (or proves this stack), and `--no-wait` was given.
    #[error(
        "{what} is held by {holder}: it is installing or proving now; run again when it has finished (without --no-wait to wait for it)"
    )]
    Busy { what: String, holder: String },
    #[error("cannot take the lock {}", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// stackpin could not do its part of a preparation (write the nouveau blacklist, make the
    /// extraction folder).
    #[error("driver preparation: {what}")]
    Prepare {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot mark the new venv {venv} as stackpin's")]
    VenvMarker {
        venv: String,
        #[source]
        source: std::io::Error,
    },
}

/// What `install` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    pub dry_run: bool,
    /// Layers to reinstall even though their proof holds.
    pub force: Vec<Layer>,
    /// Skip the root/Administrator check (containers, non-root toolkit prefixes, tests).
    pub skip_admin_check: bool,
    /// The machine-wide lock file: the driver and the toolkit are the machine's, so two stacks
    /// never install at once. `None`: no machine lock (unit tests).
    pub machine_lock: Option<PathBuf>,
    /// Answer at once, instead of waiting, when another stackpin holds a lock.
    pub no_wait: bool,
    /// What the user allowed beyond the manifest (`--stop-display`, `--tmpdir`, a module
    /// signing key pair).
    pub choices: readiness::Choices,
    /// Windows: the driver guard before the driver step, Windows Update paused for the toolkit.
    pub windows_update: windows_update::WindowsUpdateGuards,
}

/// Progress of the chain, for the CLI to show.
pub trait InstallReporter {
    fn layer_in_place(&self, proof: &Proof);
    fn step_started(&self, layer: Layer, argv: &[String]);
    fn step_finished(&self, layer: Layer, outcome: &StepOutcome);
    /// A step's outcome was judged other than its exit code says (a passing check after an
    /// unexpected code): said right after the step, which looked failed.
    fn warning(&self, _text: &str) {}
    /// Something worth a line while the chain waits (another stackpin holds a lock).
    fn note(&self, _text: &str) {}
}

/// A reporter that shows nothing.
pub struct QuietReporter;

impl InstallReporter for QuietReporter {
    fn layer_in_place(&self, _: &Proof) {}
    fn step_started(&self, _: Layer, _: &[String]) {}
    fn step_finished(&self, _: Layer, _: &StepOutcome) {}
}

/// What happened to one layer.
#[derive(Debug, Clone, Serialize)]
pub struct LayerResult {
    pub layer: Layer,
    pub action: LayerAction,
    pub proof: Proof,
    pub commands: Vec<PlannedCommand>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// Why the log holds less than the layer's step printed (a disk that filled up while it
    /// ran): the step's verdict stands, its record on disk does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_incomplete: Option<String>,
}

/// The action taken on a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerAction {
    AlreadyInPlace,
    WouldInstall,
    Installed,
    RebootPending,
    Failed,
    /// Not installed on this host at all (the driver under WSL or in a container).
    Skipped,
    /// The host was prepared for the driver (nouveau blacklisted, the initramfs rebuilt) and
    /// the driver installs after the reboot.
    Prepared,
}

/// How the chain ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum ChainEnd {
    Complete,
    DryRun,
    /// Stopped for a reboot; the same command continues afterwards.
    RebootRequired {
        after: Layer,
    },
    Failed {
        layer: Layer,
        why: String,
    },
    Interrupted {
        before: Layer,
    },
}

/// The chain's report.
#[derive(Debug, Clone, Serialize)]
pub struct InstallReport {
    pub stack: String,
    pub layers: Vec<LayerResult>,
    #[serde(flatten)]
    pub end: ChainEnd,
    /// The last output lines of a failed step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tail: Vec<String>,
    /// The Linux host's readiness findings this run acted on (what it prepared, what it warned
    /// about), as `plan --json` has them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub readiness: Vec<readiness::Finding>,
    /// The one-time password the MOK manager asks for at the next boot, when this run queued
    /// the module signing certificate for enrolment (Secure Boot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mok_password: Option<String>,
}

/// The archived files of every layer with their state, checked against the lock now.
pub fn archived_files(stack: &StackDir, lock: &Lockfile) -> Vec<ArchivedFile> {
    Layer::ORDER
        .iter()
        .flat_map(|layer| archive::layer_files(stack, lock, *layer))
        .map(|(entry, path)| {
            let state = match archive::verify_entry(stack, &entry) {
                Ok(_) => FileState::Verified,
                Err(ArchiveError::Missing { .. }) => FileState::Missing,
                Err(_) => FileState::Corrupt,
            };
            ArchivedFile {
                layer: entry.layer,
                file: entry.file,
                path,
                sha256: Some(entry.sha256),
                state,
            }
        })
        .chain(lock.incomplete.iter().map(|requirement| ArchivedFile {
            layer: Layer::Library,
            file: requirement.clone(),
            path: stack.layer_dir(Layer::Library),
            sha256: None,
            state: FileState::Incomplete,
        }))
        .collect()
}

/// One message per layer that `state` shows as started but never finished: stackpin was stopped
/// mid-step (`kill -9`, a power loss), so the layer is in an unknown state. Call it only when no
/// stackpin holds the stack's lock (else the step is simply running).
pub fn interrupted_steps(state: &ChainState) -> Vec<String> {
    state
        .layers
        .iter()
        .filter_map(|(layer, st)| match st.status {
            LayerStatus::Running => Some(format!(
                "the {layer} step was interrupted: stackpin stopped while it ran (started {}), so the {layer} is in an unknown state; run `stackpin install MANIFEST` to run it again",
                st.at
            )),
            LayerStatus::Failed if state.interrupted_at == Some(*layer) => Some(format!(
                "the {layer} step was interrupted at {}: stackpin was stopped and ended it with every process it started, so the {layer} is in an unknown state; run `stackpin install MANIFEST` to run it again",
                st.at
            )),
            _ => None,
        })
        .collect()
}

/// What to do about a layer that is not in place (prove's advice), from `state.yaml`: a layer that was installed
/// (or failed installing) is not fixed by installing again blindly.
pub fn missing_layer_advice(stack: &StackDir, layer: Layer) -> String {
    let state = ChainState::load(&stack.state_path()).ok();
    let entry = state.as_ref().and_then(|s| s.layers.get(&layer));
    match entry {
        Some(e) if e.status == LayerStatus::Done => format!(
            "`stackpin install` installed it ({}), so installing again will not help: run `stackpin doctor` to see what changed, and `stackpin diagnose` on the log",
            e.at
        ),
        Some(e) => format!(
            "its last install step ended {:?} at {}{}: read that log with `stackpin diagnose`, fix the cause, then run `stackpin install` again",
            e.status,
            e.at,
            e.log
                .as_ref()
                .map_or(String::new(), |l| format!(" (log {})", l.display()))
        ),
        None => "Run `stackpin install` first (or `stackpin plan` to see why)".to_string(),
    }
}

/// Runs the chain. `interrupted` is set by the Ctrl-C handler: the running installer finishes,
/// the state is saved, and the chain stops before the next step.
pub fn install(
    m: &Manifest,
    stack: &StackDir,
    host: &dyn HostView,
    options: &InstallOptions,
    interrupted: &AtomicBool,
    reporter: &dyn InstallReporter,
) -> Result<InstallReport, InstallError> {
    if !options.dry_run && !options.skip_admin_check && !host.is_admin() {
        return Err(InstallError::NotAdmin);
    }
    let lock = stack.read_lock()?;
    if !options.dry_run && !lock.incomplete.is_empty() {
        // Before the first layer: a half-fetched archive would install a driver and a toolkit
        // and then fail at the library, or install a library set pip never finished resolving.
        return Err(InstallError::Refused {
            layer: Layer::Library,
            source: ArchiveError::Incomplete {
                requirements: lock.incomplete.clone(),
            },
        });
    }
    let files = archived_files(stack, &lock);
    // The stack's own lock keeps two installs of it apart; these two keep every install apart
    // from a running proof of this stack and from any other install on the machine.
    let (_in_use, machine) = take_locks(stack, options, reporter)?;
    // With the machine's lock held, no other stackpin is between a pause and its undoing.
    if machine.is_some()
        && let (Some(system), Some(record)) = (
            host.system(),
            options
                .machine_lock
                .as_deref()
                .and_then(windows_update::pause_record_beside),
        )
    {
        windows_update::restore_left_pause(system, &record, reporter);
    }
    let state_path = stack.state_path();
    let mut state = ChainState::load(&state_path)?;
    let choices = options.choices.with_spare(stack.root());
    let to_run = readiness::layers_to_run(m, host, &options.force);
    let findings = readiness::findings(m, host, &to_run, &choices);
    let chain = Chain {
        m,
        stack,
        host,
        options,
        lock: &lock,
        files: &files,
        findings: &findings,
        choices: &choices,
        interrupted,
        around: Around {
            reporter,
            machine: machine.as_ref(),
        },
        mok_password: std::cell::RefCell::new(None),
    };
    let mut report = InstallReport {
        stack: m.name.clone(),
        layers: Vec::new(),
        end: if options.dry_run {
            ChainEnd::DryRun
        } else {
            ChainEnd::Complete
        },
        tail: Vec::new(),
        readiness: findings.clone(),
        mok_password: None,
    };
    for layer in Layer::ORDER {
        let end = chain.layer(layer, &mut state, &mut report)?;
        if let Some(password) = chain.mok_password.take() {
            report.mok_password = Some(password);
        }
        if let Some(end) = end {
            report.end = end;
            return Ok(report);
        }
    }
    Ok(report)
}

/// The stack's proof lock and the machine's install lock (none for a dry run).
fn take_locks(
    stack: &StackDir,
    options: &InstallOptions,
    reporter: &dyn InstallReporter,
) -> Result<(Option<lock::HeldLock>, Option<lock::HeldLock>), InstallError> {
    if options.dry_run {
        return Ok((None, None));
    }
    let in_use = take_lock(
        &stack.in_use_path(),
        lock::Mode::Exclusive,
        "this stack's proof lock",
        options,
        reporter,
    )?;
    let machine = match &options.machine_lock {
        Some(path) => Some(take_lock(
            path,
            lock::Mode::Exclusive,
            "the machine's install lock",
            options,
            reporter,
        )?),
        None => None,
    };
    Ok((Some(in_use), machine))
}

/// One run of the chain: what every layer's turn reads.
struct Chain<'a> {
    m: &'a Manifest,
    stack: &'a StackDir,
    host: &'a dyn HostView,
    options: &'a InstallOptions,
    lock: &'a Lockfile,
    files: &'a [ArchivedFile],
    findings: &'a [readiness::Finding],
    choices: &'a readiness::Choices,
    interrupted: &'a AtomicBool,
    around: Around<'a>,
    /// Set when a preparation queued the signing certificate with a one-time password.
    mok_password: std::cell::RefCell<Option<String>>,
}

impl Chain<'_> {
    /// The layer's commands as install runs them: the manifest's, plus `--tmpdir` and the
    /// module signing pair where readiness asked for them.
    fn commands(&self, layer: Layer) -> Result<Vec<PlannedCommand>, InstallError> {
        let m = self.m;
        let mut commands =
            layer_commands(m, self.stack.root(), layer, self.files).map_err(|source| {
                InstallError::Runner {
                    layer,
                    program: m
                        .run(layer)
                        .and_then(|r| r.first().cloned())
                        .unwrap_or_default(),
                    source,
                }
            })?;
        let extra = readiness::extra_args(m, layer, self.findings, self.choices);
        plan::add_runfile_args(&mut commands, &extra);
        Ok(commands)
    }

    /// One layer's turn; `Some(end)` when the chain stops here.
    fn layer(
        &self,
        layer: Layer,
        state: &mut ChainState,
        report: &mut InstallReport,
    ) -> Result<Option<ChainEnd>, InstallError> {
        let state_path = self.stack.state_path();
        let before = prove_layer(self.m, layer, self.host);
        let commands = self.commands(layer)?;
        let forced = self.options.force.contains(&layer);
        let result = |action, proof| LayerResult {
            layer,
            action,
            proof,
            commands: commands.clone(),
            log: None,
            log_incomplete: None,
        };
        if before.holds && !forced {
            self.around.reporter.layer_in_place(&before);
            if !self.options.dry_run && state.status(layer) != Some(LayerStatus::Done) {
                state.mark(layer, LayerStatus::Done, None, Some(before.seen.clone()));
                state.save(&state_path)?;
            }
            report
                .layers
                .push(result(LayerAction::AlreadyInPlace, before));
            return Ok(None);
        }
        if let Some(skip) = readiness::skipped(self.findings, layer) {
            // Under WSL or in a container the driver is the host's: never installed here.
            let seen = skip.what.clone();
            report
                .layers
                .push(result(LayerAction::Skipped, Proof { seen, ..before }));
            return Ok(None);
        }
        if self.options.dry_run {
            report
                .layers
                .push(result(LayerAction::WouldInstall, before));
            return Ok(None);
        }
        if layer == Layer::Driver
            && !forced
            && state.status(layer) == Some(LayerStatus::RebootPending)
        {
            // Installed last time; its proof waits for the reboot that has not happened yet.
            report
                .layers
                .push(result(LayerAction::RebootPending, before));
            return Ok(Some(ChainEnd::RebootRequired { after: layer }));
        }
        if self.interrupted.load(Ordering::Relaxed) {
            state.interrupted_at = Some(layer);
            state.save(&state_path)?;
            return Ok(Some(ChainEnd::Interrupted { before: layer }));
        }
        // The host's preparation for the driver runs here, after consent and before the
        // runfile. The driver's build prerequisites archived with the stack (issue 34, item 3)
        // belong here too, before nouveau's: a `prepare_prerequisites` beside it.
        if layer == Layer::Driver
            && let Some(end) = self.prepare_nouveau(state, report, &before, &commands)?
        {
            return Ok(Some(end));
        }
        self.run_and_judge(layer, before, commands, state, report)
    }

    /// nouveau blacklisted and the initramfs rebuilt, before the driver; `Some(end)` when the
    /// chain stops here: at the reboot that unloads nouveau, or at the tool's failure.
    fn prepare_nouveau(
        &self,
        state: &mut ChainState,
        report: &mut InstallReport,
        before: &Proof,
        commands: &[PlannedCommand],
    ) -> Result<Option<ChainEnd>, InstallError> {
        let Some(how) = self.findings.iter().find_map(|f| match &f.prepare {
            Some(p @ readiness::Prepare::BlacklistNouveau { .. }) => Some(p),
            _ => None,
        }) else {
            return Ok(None);
        };
        let state_path = self.stack.state_path();
        let done = match prepare::run(how, self.stack, &self.around)? {
            Ok(done) => done,
            Err(refused) => {
                state.mark(
                    Layer::Driver,
                    LayerStatus::Failed,
                    refused.log.clone(),
                    Some(refused.why.clone()),
                );
                state.save(&state_path)?;
                report.layers.push(LayerResult {
                    layer: Layer::Driver,
                    action: LayerAction::Failed,
                    proof: before.clone(),
                    commands: commands.to_vec(),
                    log: refused.log,
                    log_incomplete: None,
                });
                report.tail = refused.tail;
                return Ok(Some(ChainEnd::Failed {
                    layer: Layer::Driver,
                    why: refused.why,
                }));
            }
        };
        state.prepared(&done.what, done.log.clone());
        state.save(&state_path)?;
        if !done.reboot {
            return Ok(None);
        }
        report.layers.push(LayerResult {
            layer: Layer::Driver,
            action: LayerAction::Prepared,
            proof: Proof {
                seen: format!(
                    "{}; nouveau is still loaded until the reboot, then the driver installs",
                    done.what
                ),
                ..before.clone()
            },
            commands: commands.to_vec(),
            log: done.log,
            log_incomplete: None,
        });
        Ok(Some(ChainEnd::RebootRequired {
            after: Layer::Driver,
        }))
    }

    /// Runs the layer's step(s), proves it, and records what happened.
    fn run_and_judge(
        &self,
        layer: Layer,
        before: Proof,
        commands: Vec<PlannedCommand>,
        state: &mut ChainState,
        report: &mut InstallReport,
    ) -> Result<Option<ChainEnd>, InstallError> {
        let (m, host) = (self.m, self.host);
        let state_path = self.stack.state_path();
        // Marked before the step starts: a run killed now (kill -9, power loss) is seen as
        // interrupted at this layer by status, doctor and the next install, never as done.
        state.mark(layer, LayerStatus::Running, None, None);
        state.save(&state_path)?;
        let mut result = match self.run_layer_guarded(layer, &commands, state) {
            Ok(result) => result,
            Err(e) => {
                state.mark(layer, LayerStatus::Failed, None, Some(e.to_string()));
                state.save(&state_path)?;
                return Err(e);
            }
        };
        let after = prove_layer(m, layer, host);
        let codes = exit_codes::codes_for(m.os, layer, m.exit_codes(layer));
        if let Some(warning) = exit_codes::accepted_with_warning(
            layer,
            result.status,
            result.code,
            &codes,
            // A check that held before the step (a forced reinstall) says nothing about what
            // this installer did: only a layer the step brought about can excuse its code.
            after.holds && !before.holds,
        ) {
            exit_codes::note_in_log(result.log.as_deref(), &warning);
            self.around.reporter.warning(&warning);
            result.status = StepStatus::Succeeded;
        }
        let (action, status, mut end) = judge(layer, &result, &after);
        // A driver runfile that failed names its log; the log's first ERROR: line is the cause.
        if let Some(ChainEnd::Failed { why, .. }) = &mut end
            && layer == Layer::Driver
            && let Some((log, line)) = runfile_log::first_error(&result.tail)
        {
            why.push_str(&format!("; {} says: {line}", log.display()));
        }
        // A library that is there but blind points at the driver, not at its installer.
        if let Some(ChainEnd::Failed { why, .. }) = &mut end
            && let Some(blind) = layers::blind_library(m, layer, host)
        {
            *why = blind;
        }
        state.mark(layer, status, result.log.clone(), Some(after.seen.clone()));
        // A step ended by a stop request is where the chain was interrupted, not a failure of
        // the installer: status and the next install say so.
        state.interrupted_at = (result.status == StepStatus::Interrupted).then_some(layer);
        state.save(&state_path)?;
        report.layers.push(LayerResult {
            layer,
            action,
            proof: after,
            commands,
            log: result.log.clone(),
            log_incomplete: result.log_incomplete.clone(),
        });
        if end.is_some() {
            report.tail = result.tail;
        }
        Ok(end)
    }

    /// Where a Windows Update pause is written down: beside the machine's install lock.
    fn pause_record(&self) -> Option<PathBuf> {
        windows_update::pause_record_beside(self.options.machine_lock.as_deref()?)
    }

    /// [`Self::run_layer`] with what the options ask around it on Windows (the driver guard
    /// before the driver, Windows Update paused for the toolkit: [`windows_update::around`]).
    fn run_layer_guarded(
        &self,
        layer: Layer,
        commands: &[PlannedCommand],
        state: &mut ChainState,
    ) -> Result<LayerRun, InstallError> {
        let guards = self.options.windows_update;
        match self.host.system() {
            Some(system) => {
                let record = self.pause_record();
                windows_update::around(
                    layer,
                    guards,
                    record.as_deref(),
                    system,
                    self.around.reporter,
                    || self.run_layer(layer, commands, state),
                )
            }
            None => self.run_layer(layer, commands, state),
        }
    }

    /// Runs a layer: checks its archived files, readies a hermetic library, then its commands.
    fn run_layer(
        &self,
        layer: Layer,
        commands: &[PlannedCommand],
        state: &mut ChainState,
    ) -> Result<LayerRun, InstallError> {
        let (m, stack, lock) = (self.m, self.stack, self.lock);
        check_archived(m, stack, lock, layer)?;
        let hermetic = layer == Layer::Library && m.library.pip.is_some();
        if hermetic {
            ready_hermetic_library(m, stack, lock, self.host)?;
        }
        // The driver's build prerequisites, from the archive, before the driver's own step.
        if layer == Layer::Driver
            && let Some(failed) = prerequisites::install(m, stack, lock, self.host, &self.around)?
        {
            return Ok(failed);
        }
        if layer == Layer::Toolkit && m.toolkit.source == ToolkitSource::Wheels {
            return unpack_toolkit_wheels(m, stack, lock, self.around.reporter);
        }
        // Right before the runfiles, once per run: the display manager stopped, the signing
        // certificate imported, the extraction folder made.
        let before_first: Vec<&readiness::Prepare> =
            self.findings
                .iter()
                .filter_map(|f| f.prepare.as_ref())
                .filter(|p| match p {
                    readiness::Prepare::StopDisplay { .. }
                    | readiness::Prepare::EnrollKey { .. } => layer == Layer::Driver,
                    readiness::Prepare::ExtractIn { .. } => {
                        matches!(layer, Layer::Driver | Layer::Toolkit)
                    }
                    readiness::Prepare::BlacklistNouveau { .. } => false,
                })
                .collect();
        // The display last: a desktop session is never ended for a step that then fails.
        let mut before_first = before_first;
        before_first.sort_by_key(|p| matches!(p, readiness::Prepare::StopDisplay { .. }));
        let steps = LayerSteps {
            layer,
            commands,
            hermetic,
            before_first: &before_first,
        };
        self.run_commands(&steps, state)
    }

    /// The layer's commands in order, each installer staged from verified bytes first.
    fn run_commands(
        &self,
        steps: &LayerSteps<'_>,
        state: &mut ChainState,
    ) -> Result<LayerRun, InstallError> {
        let (m, stack, layer) = (self.m, self.stack, steps.layer);
        let mut last = LayerRun {
            status: StepStatus::Succeeded,
            code: Some(0),
            log: None,
            tail: Vec::new(),
            refused: None,
            log_incomplete: None,
        };
        for (i, command) in steps.commands.iter().enumerate() {
            // Held until the step ends; dropping it deletes the staged copy.
            let mut _staging = None;
            let mut argv = command.argv.clone();
            if let Some(file) = &command.installer {
                let (staged, dir) = stage(m, stack, self.lock, layer, file)?;
                argv = run_staged(&argv, &file.path, &staged);
                _staging = Some(dir);
            }
            if i == 0
                && let Some(refused) = self.before_first(steps.before_first, state)?
            {
                return Ok(refused);
            }
            let prefix = if steps.commands.len() > 1 {
                format!("{layer}-{}", i + 1)
            } else {
                layer.to_string()
            };
            let outcome = self.run_step(layer, argv, &prefix, steps.hermetic)?;
            let stop = !matches!(
                outcome.status,
                StepStatus::Succeeded | StepStatus::RebootRequired
            );
            let reboot = outcome.status == StepStatus::RebootRequired;
            let log_incomplete = last
                .log_incomplete
                .take()
                .or_else(|| outcome.log_warning(&layer.to_string()));
            last = LayerRun {
                status: if reboot || last.status == StepStatus::RebootRequired {
                    if stop {
                        outcome.status
                    } else {
                        StepStatus::RebootRequired
                    }
                } else {
                    outcome.status
                },
                code: outcome.code,
                log: Some(outcome.log),
                tail: outcome.tail,
                refused: None,
                log_incomplete,
            };
            if stop {
                break;
            }
            if steps.hermetic
                && i == 0
                && let Some(venv) = &m.library.venv
            {
                crate::host::venv::mark(Path::new(venv), &library_python(m), &m.name).map_err(
                    |source| InstallError::VenvMarker {
                        venv: venv.clone(),
                        source,
                    },
                )?;
            }
        }
        Ok(last)
    }

    /// The preparations due right before a layer's first installer; a failed one is the
    /// layer's run (failed, with the tool's log), and no installer starts.
    fn before_first(
        &self,
        prepares: &[&readiness::Prepare],
        state: &mut ChainState,
    ) -> Result<Option<LayerRun>, InstallError> {
        for how in prepares {
            match prepare::run(how, self.stack, &self.around)? {
                Ok(done) => {
                    if done.enrolment_password.is_some() {
                        *self.mok_password.borrow_mut() = done.enrolment_password;
                    }
                    state.prepared(&done.what, done.log)
                }
                Err(refused) => {
                    return Ok(Some(LayerRun {
                        status: StepStatus::Failed,
                        code: None,
                        log: refused.log,
                        tail: refused.tail,
                        refused: Some(refused.why),
                        log_incomplete: None,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Starts one step of a layer and waits for it, its process tree recorded in the machine
    /// lock while it runs.
    fn run_step(
        &self,
        layer: Layer,
        argv: Vec<String>,
        prefix: &str,
        hermetic: bool,
    ) -> Result<StepOutcome, InstallError> {
        let (m, reporter, machine) = (self.m, self.around.reporter, self.around.machine);
        let (env, env_remove) = if hermetic {
            (archive::hermetic_settings(), archive::foreign_variables())
        } else {
            (Vec::new(), Vec::new())
        };
        let step = Step {
            argv,
            env,
            env_remove,
            log: self
                .stack
                .logs_dir()
                .join(crate::exec::step::log_name(prefix)),
            timeout: m.timeout(layer),
            cwd: None,
        };
        reporter.step_started(layer, &step.argv);
        let mut outcome = run_recorded(&step, layer, machine)?;
        let codes = exit_codes::codes_for(m.os, layer, m.exit_codes(layer));
        outcome.status = exit_codes::step_status(outcome.status, outcome.code, &codes);
        reporter.step_finished(layer, &outcome);
        Ok(outcome)
    }
}

/// Starts `step` and waits for it, its process tree recorded in the machine lock while it runs
/// (for a stackpin that takes the lock after this one died).
fn run_recorded(
    step: &Step,
    layer: Layer,
    machine: Option<&lock::HeldLock>,
) -> Result<StepOutcome, InstallError> {
    let runner_error = |source| InstallError::Runner {
        layer,
        program: step.argv.first().cloned().unwrap_or_default(),
        source,
    };
    let running = start_step(step).map_err(runner_error)?;
    if let Some(machine) = machine {
        machine.record_tree(Some(running.pid()));
    }
    let outcome = running.wait();
    if let Some(machine) = machine {
        machine.record_tree(None);
    }
    outcome.map_err(runner_error)
}

/// What running a layer's commands produced.
struct LayerRun {
    status: StepStatus,
    code: Option<i32>,
    log: Option<PathBuf>,
    tail: Vec<String>,
    /// Why a preparation before the installer failed (no installer ran).
    refused: Option<String>,
    /// A step's log that misses part of its output ([`StepOutcome::log_warning`]).
    log_incomplete: Option<String>,
}

/// What a layer's steps run among: the reporter, the machine lock they record into.
#[derive(Clone, Copy)]
struct Around<'a> {
    reporter: &'a dyn InstallReporter,
    machine: Option<&'a lock::HeldLock>,
}

/// One layer's commands and what runs before the first.
struct LayerSteps<'a> {
    layer: Layer,
    commands: &'a [PlannedCommand],
    hermetic: bool,
    before_first: &'a [&'a readiness::Prepare],
}

/// Every file the manifest names for this layer must be archived and locked: a layer whose
/// installer is not in the archive has nothing verified to run.
fn check_archived(
    m: &Manifest,
    stack: &StackDir,
    lock: &Lockfile,
    layer: Layer,
) -> Result<(), InstallError> {
    for installer in m.installers(layer) {
        let file = installer.file_name().unwrap_or_default();
        if lock.find(layer, &file).is_none() {
            return Err(InstallError::Refused {
                layer,
                source: ArchiveError::Missing {
                    layer,
                    path: stack.file_path(layer, &file),
                    file,
                },
            });
        }
    }
    Ok(())
}

/// A pip library's venv checked as stackpin's, its pinned requirements written, uv extracted.
fn ready_hermetic_library(
    m: &Manifest,
    stack: &StackDir,
    lock: &Lockfile,
    host: &dyn HostView,
) -> Result<(), InstallError> {
    let layer = Layer::Library;
    // Asked again here, not only in the preflight: `repair` and `up` come this way too.
    if let (Some(why), Some(venv)) = (preflight::foreign_venv(m, host), m.library.venv.as_ref()) {
        return Err(InstallError::ForeignVenv {
            venv: venv.clone(),
            why,
        });
    }
    write_pip_requirements(m, stack, lock)?;
    if m.library.installer == LibraryInstaller::Uv {
        let entry = archive::uv_entry(lock).ok_or_else(|| InstallError::Refused {
            layer,
            source: ArchiveError::Incomplete {
                requirements: vec!["uv (library.installer: uv)".into()],
            },
        })?;
        archive::extract_uv(stack, entry)
            .map_err(|source| InstallError::Refused { layer, source })?;
    }
    Ok(())
}

/// NVIDIA's wheels are unpacked, not run: verified against the lock and the manifest's sha256,
/// then laid out in the toolkit's root; the layer's proof follows as for a runfile.
fn unpack_toolkit_wheels(
    m: &Manifest,
    stack: &StackDir,
    lock: &Lockfile,
    reporter: &dyn InstallReporter,
) -> Result<LayerRun, InstallError> {
    let unpacked = archive::install_toolkit_wheels(stack, lock, m).map_err(|source| {
        InstallError::Refused {
            layer: Layer::Toolkit,
            source,
        }
    })?;
    reporter.note(&format!(
        "toolkit: {} files of {} wheels in {}; its environment (CUDA_HOME, PATH, LD_LIBRARY_PATH) is in {}",
        unpacked.files,
        m.toolkit.components.len(),
        unpacked.root.display(),
        unpacked.env_file.display()
    ));
    Ok(LayerRun {
        status: StepStatus::Succeeded,
        code: Some(0),
        log: None,
        tail: Vec::new(),
        refused: None,
        log_incomplete: None,
    })
}

/// A verified copy of `file` in a fresh staging folder (deleted when the folder is dropped).
fn stage(
    m: &Manifest,
    stack: &StackDir,
    lock: &Lockfile,
    layer: Layer,
    file: &ArchivedFile,
) -> Result<(PathBuf, tempfile::TempDir), InstallError> {
    let entry = lock
        .find(layer, &file.file)
        .ok_or_else(|| InstallError::Refused {
            layer,
            source: ArchiveError::Missing {
                layer,
                file: file.file.clone(),
                path: file.path.clone(),
            },
        })?;
    let dir = staging_dir(stack).map_err(|source| InstallError::Refused {
        layer,
        source: ArchiveError::io("creating a staging folder for", &file.path, source),
    })?;
    let staged = archive::stage_verified(stack, m, entry, dir.path())
        .map_err(|source| InstallError::Refused { layer, source })?;
    Ok((staged, dir))
}

/// Takes one of install's locks, waiting (with a note) unless `--no-wait`.
fn take_lock(
    path: &Path,
    mode: lock::Mode,
    what: &str,
    options: &InstallOptions,
    reporter: &dyn InstallReporter,
) -> Result<lock::HeldLock, InstallError> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let note = |text: &str| reporter.note(text);
    let wait: Option<&dyn Fn(&str)> = if options.no_wait { None } else { Some(&note) };
    match lock::acquire(path, mode, wait) {
        Ok(Ok(held)) => Ok(held),
        Ok(Err(holder)) => Err(InstallError::Busy {
            what: format!("{what} ({})", path.display()),
            holder: holder.describe(),
        }),
        Err(source) => Err(InstallError::Lock {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A fresh, owner-only folder for one step's verified copy of its installer. On Unix it sits in
/// the stack folder (mode 0700, the same file system as the archive, so `noexec` on /tmp does
/// not matter); on Windows in the user's own temporary folder, whose ACL admits only the user,
/// the administrators and SYSTEM.
fn staging_dir(stack: &StackDir) -> std::io::Result<tempfile::TempDir> {
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix(".staging-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            b.permissions(std::fs::Permissions::from_mode(0o700));
        }
        b
    };
    if cfg!(windows) {
        builder.tempdir()
    } else {
        builder.tempdir_in(stack.root())
    }
}

/// The argv with the archived installer's path replaced by its verified, staged copy.
fn run_staged(
    argv: &[String],
    archived: &std::path::Path,
    staged: &std::path::Path,
) -> Vec<String> {
    let (from, to) = (archived.display().to_string(), staged.display().to_string());
    argv.iter().map(|a| a.replace(&from, &to)).collect()
}

/// Decides a layer's outcome from its installer's status and the proof afterwards.
fn judge(
    layer: Layer,
    run: &LayerRun,
    after: &Proof,
) -> (LayerAction, LayerStatus, Option<ChainEnd>) {
    match run.status {
        StepStatus::Failed | StepStatus::TimedOut | StepStatus::Interrupted => {
            let why = match (run.status, run.code) {
                _ if run.refused.is_some() => run.refused.clone().unwrap_or_default(),
                (StepStatus::TimedOut, _) => {
                    "the installer ran past its timeout and was stopped, with every process it started".to_string()
                }
                (StepStatus::Interrupted, _) => {
                    "stackpin was stopped (Ctrl-C twice, SIGTERM or SIGHUP): the installer and every process it started were ended".to_string()
                }
                (_, Some(code)) => format!("the installer exited with code {code}"),
                (_, None) => "the installer was killed by a signal".to_string(),
            };
            (
                LayerAction::Failed,
                LayerStatus::Failed,
                Some(ChainEnd::Failed { layer, why }),
            )
        }
        _ if after.holds && run.status != StepStatus::RebootRequired => {
            (LayerAction::Installed, LayerStatus::Done, None)
        }
        // A new driver is not active until the old kernel module is gone: reboot, then continue.
        _ if layer == Layer::Driver || run.status == StepStatus::RebootRequired => (
            LayerAction::RebootPending,
            LayerStatus::RebootPending,
            Some(ChainEnd::RebootRequired { after: layer }),
        ),
        _ => (
            LayerAction::Failed,
            LayerStatus::Failed,
            Some(ChainEnd::Failed {
                layer,
                why: format!(
                    "the installer exited 0 but the {layer} is not there: {}",
                    after.seen
                ),
            }),
        ),
    }
}

/// Every archived wheel pinned by name, version and hash, for `pip --require-hashes`.
fn write_pip_requirements(
    m: &Manifest,
    stack: &StackDir,
    lock: &Lockfile,
) -> Result<(), InstallError> {
    let mut lines = vec![
        "# Written by stackpin from stack.lock: every archived wheel, pinned by hash.".to_string(),
    ];
    // uv's own wheel installs the library; it is not part of it.
    let wheels: Vec<_> = archive::layer_files(stack, lock, Layer::Library)
        .into_iter()
        .filter(|(entry, _)| !archive::is_installer_entry(entry))
        .collect();
    verify_wheels(m, stack, wheels.iter().map(|(entry, _)| entry).collect())?;
    for (entry, path) in &wheels {
        if let Some((name, version)) = wheel_name_version(&entry.file) {
            lines.push(format!("{name}=={version} --hash=sha256:{}", entry.sha256));
        } else {
            // Not a wheel (an sdist or a data file): pip can still use it by path.
            lines.push(format!("{} --hash=sha256:{}", path.display(), entry.sha256));
        }
    }
    let path = plan::pip_requirements_path(stack.root());
    crate::fsutil::write_atomic(&path, (lines.join("\n") + "\n").as_bytes())
        .map_err(|source| InstallError::Requirements { path, source })
}

/// Re-hashes every wheel against the lock and the manifest's pins before the installer sees
/// one, on every core and largest first: a torch set is ~3 GB, and this is most of the library
/// step's own time. The first refusal wins; nothing is installed after one.
fn verify_wheels(
    m: &Manifest,
    stack: &StackDir,
    mut wheels: Vec<&archive::LockEntry>,
) -> Result<(), InstallError> {
    wheels.sort_by_key(|entry| std::cmp::Reverse(entry.size));
    let queue = std::sync::Mutex::new(wheels.into_iter());
    let refused = std::sync::Mutex::new(None);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.next());
                    let Some(entry) = next else { break };
                    if let Err(source) = archive::verify_pinned(stack, m, entry) {
                        if let Ok(mut first) = refused.lock() {
                            first.get_or_insert(source);
                        }
                        break;
                    }
                }
            });
        }
    });
    match refused.into_inner() {
        Ok(Some(source)) => Err(InstallError::Refused {
            layer: Layer::Library,
            source,
        }),
        _ => Ok(()),
    }
}

pub use archive::wheel_name_version;

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for InstallError {
    fn exit(&self) -> Exit {
        match self {
            InstallError::Refused { .. } => Exit::Problem,
            InstallError::NotAdmin => Exit::Input,
            InstallError::ForeignVenv { .. } => Exit::Problem,
            InstallError::Busy { .. } => Exit::Problem,
            InstallError::Lock { .. } => Exit::Input,
            InstallError::Archive(e) => e.exit(),
            InstallError::State(e) => e.exit(),
            InstallError::Runner { source, .. } => source.exit(),
            _ => Exit::External,
        }
    }

    fn layer(&self) -> Option<String> {
        match self {
            InstallError::Refused { layer, .. } | InstallError::Runner { layer, .. } => {
                Some(layer.to_string())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_names_give_name_and_version() {
        assert_eq!(
            wheel_name_version("torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl"),
            Some(("torch".into(), "2.5.1+cu124".into()))
        );
        assert_eq!(
            wheel_name_version("typing_extensions-4.12.2-py3-none-any.whl"),
            Some(("typing-extensions".into(), "4.12.2".into()))
        );
        assert_eq!(wheel_name_version("x.tar.gz"), None);
    }

    /// How `judge` decides `layer` after an installer that ended with `status` and `code`, when
    /// the proof afterwards `holds` or not.
    fn judged(
        layer: Layer,
        status: StepStatus,
        code: Option<i32>,
        holds: bool,
    ) -> (LayerAction, LayerStatus, Option<ChainEnd>) {
        let run = LayerRun {
            status,
            code,
            log: None,
            tail: vec![],
            refused: None,
            log_incomplete: None,
        };
        let proof = Proof {
            layer: Layer::Driver,
            holds,
            seen: "seen".into(),
            reboot_pending: false,
        };
        judge(layer, &run, &proof)
    }

    #[test]
    fn a_driver_that_is_not_active_after_install_waits_for_a_reboot() {
        let (action, status, end) = judged(Layer::Driver, StepStatus::Succeeded, Some(0), false);
        assert_eq!(action, LayerAction::RebootPending);
        assert_eq!(status, LayerStatus::RebootPending);
        assert_eq!(
            end,
            Some(ChainEnd::RebootRequired {
                after: Layer::Driver
            })
        );
    }

    #[test]
    fn a_toolkit_missing_after_exit_0_is_a_failure_not_a_reboot() {
        let (action, _, end) = judged(Layer::Toolkit, StepStatus::Succeeded, Some(0), false);
        assert_eq!(action, LayerAction::Failed);
        assert!(matches!(
            end,
            Some(ChainEnd::Failed {
                layer: Layer::Toolkit,
                ..
            })
        ));
    }

    #[test]
    fn windows_3010_on_the_toolkit_stops_for_a_reboot() {
        let (action, _, end) = judged(Layer::Toolkit, StepStatus::RebootRequired, Some(3010), true);
        assert_eq!(action, LayerAction::RebootPending);
        assert_eq!(
            end,
            Some(ChainEnd::RebootRequired {
                after: Layer::Toolkit
            })
        );
    }

    #[test]
    fn a_failed_exit_code_is_named() {
        let (_, _, end) = judged(Layer::Toolkit, StepStatus::Failed, Some(2), false);
        match end {
            Some(ChainEnd::Failed { why, .. }) => assert!(why.contains("code 2")),
            other => panic!("expected failure, got {other:?}"),
        }
    }

    #[test]
    fn an_unreadable_lock_or_state_is_an_input_error_and_a_corrupt_file_a_problem() {
        let path = std::path::PathBuf::from("installers/x/stack.lock");
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            ArchiveError::io("reading", path.clone(), denied()).exit(),
            Exit::Input
        );
        let bad = ArchiveError::BadLock {
            path: path.clone(),
            reason: "not YAML".into(),
        };
        assert_eq!(InstallError::Archive(bad).exit(), Exit::Input);
        let state = StateError::Parse {
            path: path.clone(),
            reason: "not YAML".into(),
        };
        assert_eq!(InstallError::State(state).exit(), Exit::Input);
        let corrupt = ArchiveError::Corrupt {
            path,
            expected: "a".repeat(64),
            actual: "b".repeat(64),
        };
        assert_eq!(corrupt.exit(), Exit::Problem);
    }
}
