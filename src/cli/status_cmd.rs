//! `stackpin status [MANIFEST | --all]`: one summary per stack in the archive — lock present,
//! audit counts, where the install chain stands (`state.yaml`) and what the proven-stack record
//! says — as text or as one JSON document a fleet tool (Ansible) can register and report.
//!
//! It only reads: hashing is `archive::audit_stack`'s, the chain's state `install::state`'s and the
//! record's schema `record`'s. A file it cannot read is reported on its stack, not fatal, so one
//! broken stack does not hide the others.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::Serialize;

use super::{CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::archive::{self, AuditReport, FileStatus, Silent, StackDir};
use crate::install::state::{ChainState, LayerStatus};
use crate::manifest::{self, Layer, Manifest};
use crate::record::ProvenStack;

pub const EXAMPLES: &str = "\
Examples:
  stackpin status --all
  stackpin status --all --archive /srv/installers --json
  stackpin status manifests/torch-2.5.1-cu124-linux.yaml

Without MANIFEST every stack folder in the archive is summarised (as with --all). Re-hashes every
archived file, like `stackpin audit`. Exit 0 when nothing is wrong (a pending reboot is not wrong),
1 when a file is missing or corrupt, a layer failed, or a state file or record cannot be read.";

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The manifest whose stack to summarise (its pins are audited too).
    #[arg(value_name = "MANIFEST", conflicts_with = "all")]
    pub manifest: Option<PathBuf>,
    /// Summarise every stack in the archive (the default without MANIFEST).
    #[arg(long)]
    pub all: bool,
}

/// How far a stack has come, the one word a fleet report shows per host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// The stack's folder holds nothing stackpin wrote yet.
    Empty,
    /// Installers archived (a lock exists); nothing installed.
    Fetched,
    /// Some layers are installed, not all.
    Installing,
    /// The driver is installed and waits for a reboot.
    RebootPending,
    /// A layer's installer or proof failed; the next `install`/`up` retries it.
    Failed,
    /// stackpin was stopped while a layer's step ran (`kill -9`, a power loss): that layer is in
    /// an unknown state until `install` runs it again.
    Interrupted,
    /// All three layers are installed; no proven-stack record yet.
    Installed,
    /// A proven-stack record exists.
    Proven,
}

/// The audit's verdicts, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AuditCounts {
    pub ok: usize,
    pub missing: usize,
    pub corrupt: usize,
    pub unexpected: usize,
    pub partial: usize,
    /// Lock lines that disagree with the manifest's pin.
    pub untrusted: usize,
    /// Requirements a fetch stopped before archiving.
    pub incomplete: usize,
}

impl AuditCounts {
    fn of(report: &AuditReport) -> Self {
        let count = |s: FileStatus| report.files.iter().filter(|f| f.status == s).count();
        Self {
            ok: count(FileStatus::Ok),
            missing: count(FileStatus::Missing),
            corrupt: count(FileStatus::Corrupt),
            unexpected: count(FileStatus::Unexpected),
            partial: count(FileStatus::Partial),
            untrusted: count(FileStatus::Untrusted),
            incomplete: count(FileStatus::Incomplete),
        }
    }

    /// Missing and corrupt files fail an audit; strays and partials are only reported.
    fn passed(&self) -> bool {
        self.missing == 0 && self.corrupt == 0 && self.untrusted == 0 && self.incomplete == 0
    }
}

/// The proven-stack record, reduced to what a fleet report shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProvenSummary {
    pub proven_at: String,
    pub hostname: String,
    /// The GPU that ran the example.
    pub gpu: Option<String>,
    pub batch: u32,
    /// The peak the predictions start from, MiB.
    pub peak_mib: f64,
    pub largest_safe_batch: Option<u32>,
    pub record: PathBuf,
}

impl ProvenSummary {
    fn of(record: &ProvenStack, path: &Path) -> Self {
        Self {
            proven_at: record.proven_at.clone(),
            hostname: record.host.hostname.clone(),
            gpu: record
                .gpus
                .iter()
                .find(|g| g.index == record.example.gpu_index)
                .map(|g| g.name.clone()),
            batch: record.example.batch,
            peak_mib: record.peak.mib,
            largest_safe_batch: record.largest_safe_batch,
            record: path.to_path_buf(),
        }
    }
}

/// One stack's summary.
#[derive(Debug, Serialize)]
pub struct StackStatus {
    pub stack: String,
    pub path: PathBuf,
    pub stage: Stage,
    /// Whether `stack.lock` exists.
    pub lock: bool,
    /// Audit counts; `null` without a lock.
    pub audit: Option<AuditCounts>,
    /// `state.yaml` as the install chain left it (empty layers when it never ran).
    pub install: ChainState,
    /// `null` until `prove` (or `up`) wrote a record.
    pub proven: Option<ProvenSummary>,
    /// Files that could not be read, each with what to do.
    pub problems: Vec<String>,
    /// Whether another stackpin (a fetch, install, repair or up) holds the stack's lock now.
    pub busy: bool,
}

impl StackStatus {
    /// True when this stack needs someone's attention (exit 1).
    fn has_problem(&self) -> bool {
        !self.problems.is_empty()
            || self.stage == Stage::Failed
            || self.stage == Stage::Interrupted
            || self.audit.is_some_and(|a| !a.passed())
    }
}

/// The stage a stack is at, from its lock, chain state and record.
pub fn stage_of(lock: bool, state: &ChainState, proven: bool) -> Stage {
    let statuses: Vec<Option<LayerStatus>> =
        Layer::ORDER.iter().map(|&l| state.status(l)).collect();
    if statuses.contains(&Some(LayerStatus::Failed)) {
        Stage::Failed
    } else if statuses.contains(&Some(LayerStatus::Running)) {
        Stage::Interrupted
    } else if statuses.contains(&Some(LayerStatus::RebootPending)) {
        Stage::RebootPending
    } else if proven {
        Stage::Proven
    } else if statuses.iter().all(|s| *s == Some(LayerStatus::Done)) {
        Stage::Installed
    } else if statuses.iter().any(Option::is_some) {
        Stage::Installing
    } else if lock {
        Stage::Fetched
    } else {
        Stage::Empty
    }
}

/// Summarises one stack folder; `manifest`, when given, adds its pins to the audit.
pub fn stack_status(stack: &StackDir, manifest: Option<&Manifest>, threads: usize) -> StackStatus {
    let mut problems = Vec::new();
    let lock = stack.lock_path().is_file();
    let audit = if lock {
        match archive::audit_stack(stack, manifest, threads, &Silent) {
            Ok(report) => {
                problems.extend(
                    report
                        .files
                        .iter()
                        .filter_map(|f| f.pin_conflict.clone())
                        .map(|c| c.into_error().to_string()),
                );
                Some(AuditCounts::of(&report))
            }
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        }
    } else {
        None
    };
    let install = ChainState::load(&stack.state_path()).unwrap_or_else(|e| {
        problems.push(e.to_string());
        ChainState::default()
    });
    // A layer marked running while no stackpin holds the stack's lock was cut off mid-step.
    let busy = stack.root().is_dir() && matches!(stack.try_lock(), Ok(None));
    if !busy {
        problems.extend(crate::install::interrupted_steps(&install));
    }
    let record_path = stack.proven_stack_path();
    let proven = if record_path.is_file() {
        match ProvenStack::read(&record_path) {
            Ok(record) => Some(ProvenSummary::of(&record, &record_path)),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        }
    } else {
        None
    };
    StackStatus {
        stack: stack.name(),
        path: stack.root().to_path_buf(),
        stage: match stage_of(lock, &install, proven.is_some()) {
            Stage::Interrupted if busy => Stage::Installing,
            stage => stage,
        },
        busy,
        lock,
        audit,
        install,
        proven,
        problems,
    }
}

/// Every folder of the archive that holds something stackpin writes, sorted by name. A missing
/// archive is an empty one: a host that has not fetched yet is a state, not an error.
fn stack_dirs(archive_dir: &Path) -> Result<Vec<StackDir>, Failure> {
    let entries = match std::fs::read_dir(archive_dir) {
        Ok(entries) => entries,
        // A mistyped --archive is an input error, as in `audit`, never "ok, no stacks".
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Failure::input(anyhow!(
                "the archive {} does not exist; pass the archive folder with --archive DIR (or STACKPIN_ARCHIVE), or run `stackpin fetch MANIFEST` to start one there",
                archive_dir.display()
            )));
        }
        Err(e) => {
            return Err(Failure::input(anyhow::Error::new(e).context(format!(
                "listing the archive {}; pass --archive DIR or set STACKPIN_ARCHIVE",
                archive_dir.display()
            ))));
        }
    };
    let markers = [
        "stack.lock",
        "manifest.yaml",
        "state.yaml",
        "proven-stack.yaml",
    ];
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| markers.iter().any(|m| p.join(m).is_file()))
        .collect();
    dirs.sort();
    Ok(dirs.into_iter().map(StackDir::at).collect())
}

#[derive(Serialize)]
struct StatusJson<'a> {
    archive: PathBuf,
    ok: bool,
    stacks: &'a [StackStatus],
}

pub fn run(args: &StatusArgs, global: &GlobalArgs) -> CmdResult {
    let archive_dir = global.archive_dir();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let stacks: Vec<StackStatus> = match &args.manifest {
        Some(path) => {
            let m = manifest::read(path)?;
            let stack = StackDir::new(&archive_dir, &m.name);
            vec![stack_status(&stack, Some(&m), threads)]
        }
        None => stack_dirs(&archive_dir)?
            .iter()
            .map(|stack| stack_status(stack, None, threads))
            .collect(),
    };
    let ok = !stacks.iter().any(StackStatus::has_problem);
    if global.json {
        print_json(&StatusJson {
            archive: archive_dir.clone(),
            ok,
            stacks: &stacks,
        })?;
    } else if stacks.is_empty() {
        if !global.quiet {
            println!(
                "{}: no stack yet; run `stackpin fetch MANIFEST` or `stackpin up MANIFEST`",
                archive_dir.display()
            );
        }
    } else {
        for s in &stacks {
            print_human(s);
        }
    }
    if ok {
        Ok(Exit::Ok)
    } else if global.json {
        // The document already says what is wrong; one line on stderr keeps logs readable.
        Err(Failure::problem(anyhow!(
            "a stack in {} needs attention; see `problems`, `stage` and `audit` above",
            archive_dir.display()
        )))
    } else {
        Ok(Exit::Problem)
    }
}

fn stage_word(stage: Stage) -> &'static str {
    match stage {
        Stage::Empty => "empty",
        Stage::Fetched => "fetched",
        Stage::Installing => "installing",
        Stage::RebootPending => "reboot pending",
        Stage::Failed => "FAILED",
        Stage::Interrupted => "INTERRUPTED",
        Stage::Installed => "installed, not proven",
        Stage::Proven => "proven",
    }
}

fn print_human(s: &StackStatus) {
    anstream::println!("{}: {}", s.stack, super::term::verdict(stage_word(s.stage)));
    match &s.audit {
        Some(a) if a.incomplete > 0 => println!(
            "  archive: incomplete: run `stackpin fetch MANIFEST` ({} requirement(s) not archived yet)",
            a.incomplete
        ),
        Some(a) => println!(
            "  archive: stack.lock; {} ok, {} missing, {} corrupt, {} unexpected, {} partial, {} untrusted{}",
            a.ok,
            a.missing,
            a.corrupt,
            a.unexpected,
            a.partial,
            a.untrusted,
            if a.passed() {
                ""
            } else {
                "; run `stackpin fetch MANIFEST` to repair"
            }
        ),
        None => println!("  archive: no stack.lock; run `stackpin fetch MANIFEST`"),
    }
    let layers: Vec<String> = Layer::ORDER
        .iter()
        .map(|&l| {
            let word = match s.install.status(l) {
                None => "not run",
                Some(LayerStatus::Done) => "done",
                Some(LayerStatus::RebootPending) => "reboot pending",
                Some(LayerStatus::Failed) => "failed",
                Some(LayerStatus::Running) if s.busy => "running now",
                Some(LayerStatus::Running) => "INTERRUPTED mid-step",
            };
            format!("{l} {word}")
        })
        .collect();
    println!("  install: {}", layers.join(" · "));
    for (layer, st) in &s.install.layers {
        if st.status == LayerStatus::Failed
            && let Some(log) = &st.log
        {
            println!("           {layer} log: {}", log.display());
        }
    }
    match &s.proven {
        Some(p) => println!(
            "  proven:  {} on {}{}, batch {} peak {:.0} MiB, largest safe batch {}",
            super::term::timestamp_text(&p.proven_at),
            p.hostname,
            p.gpu
                .as_deref()
                .map_or(String::new(), |g| format!(" ({g})")),
            p.batch,
            p.peak_mib,
            p.largest_safe_batch
                .map_or("none".to_string(), |b| b.to_string())
        ),
        None => println!("  proven:  no record yet; `stackpin prove MANIFEST` writes one"),
    }
    for problem in &s.problems {
        println!("  problem: {problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(marks: &[(Layer, LayerStatus)]) -> ChainState {
        let mut s = ChainState::default();
        for &(layer, status) in marks {
            s.mark(layer, status, None, None);
        }
        s
    }

    #[test]
    fn a_bare_folder_is_empty_and_a_locked_one_fetched() {
        assert_eq!(stage_of(false, &ChainState::default(), false), Stage::Empty);
        assert_eq!(
            stage_of(true, &ChainState::default(), false),
            Stage::Fetched
        );
    }

    #[test]
    fn a_pending_reboot_outranks_an_older_record() {
        let s = state(&[(Layer::Driver, LayerStatus::RebootPending)]);
        assert_eq!(stage_of(true, &s, true), Stage::RebootPending);
    }

    #[test]
    fn a_failed_layer_outranks_everything() {
        let s = state(&[
            (Layer::Driver, LayerStatus::Done),
            (Layer::Toolkit, LayerStatus::Failed),
        ]);
        assert_eq!(stage_of(true, &s, true), Stage::Failed);
    }

    #[test]
    fn three_done_layers_are_installed_until_a_record_proves_them() {
        let s = state(&[
            (Layer::Driver, LayerStatus::Done),
            (Layer::Toolkit, LayerStatus::Done),
            (Layer::Library, LayerStatus::Done),
        ]);
        assert_eq!(stage_of(true, &s, false), Stage::Installed);
        assert_eq!(stage_of(true, &s, true), Stage::Proven);
        let partial = state(&[(Layer::Driver, LayerStatus::Done)]);
        assert_eq!(stage_of(true, &partial, false), Stage::Installing);
    }

    #[test]
    fn a_garbled_state_file_is_a_problem_on_its_stack_not_a_crash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::at(dir.path().join("s"));
        std::fs::create_dir_all(stack.root()).expect("stack folder");
        std::fs::write(stack.state_path(), "layers: [1, 2").expect("state");
        let status = stack_status(&stack, None, 1);
        assert_eq!(status.stage, Stage::Empty);
        assert_eq!(status.problems.len(), 1, "{:?}", status.problems);
        assert!(status.problems[0].contains("state.yaml"));
        assert!(status.has_problem());
    }

    #[test]
    fn a_missing_archive_is_an_input_error_and_an_empty_one_lists_no_stack() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = stack_dirs(&dir.path().join("nowhere")).expect_err("missing");
        assert_eq!(err.exit, Exit::Input);
        assert!(err.error.to_string().contains("nowhere"), "{}", err.error);
        let stacks = stack_dirs(dir.path()).expect("an empty archive");
        assert!(stacks.is_empty());
    }
}
