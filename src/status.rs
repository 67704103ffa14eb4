//! Where each stack in the archive stands: lock present, audit counts, where the install chain
//! stands (`state.yaml`) and what the proven-stack record says, reduced to one stage word. What
//! `stackpin status` shows and a fleet tool (Ansible) registers; this module prints nothing.
//!
//! It only reads: hashing is `archive::audit_stack`'s, the chain's state `install::state`'s and the
//! record's schema `record`'s. A file it cannot read is reported on its stack, not fatal, so one
//! broken stack does not hide the others.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::archive::{self, AuditReport, FileStatus, Silent, StackDir};
use crate::install::state::{ChainState, LayerStatus};
use crate::manifest::{Layer, Manifest};
use crate::record::ProvenStack;

/// How far a stack has come, the one word a fleet report shows per host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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
    pub fn passed(&self) -> bool {
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
    /// How the last unattended resume after `install --reboot` ended (`resume.yaml`); `null`
    /// when none ran.
    pub last_resume: Option<crate::install::resume::ResumeRun>,
}

impl StackStatus {
    /// True when this stack needs someone's attention (exit 1).
    pub fn has_problem(&self) -> bool {
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

/// Whether a stackpin holds the stack's lock now (a fetch, install, repair or up is running).
pub fn busy(stack: &StackDir) -> bool {
    stack.root().is_dir() && matches!(stack.try_lock(), Ok(None))
}

/// The steps of `stack` that an earlier run left marked running: a layer marked running while no
/// stackpin holds the stack's lock was cut off mid-step (while one holds it, it is simply
/// running). A state file that cannot be read names none here; `stack_status` reports it.
pub fn interrupted(stack: &StackDir) -> Vec<String> {
    if busy(stack) {
        return Vec::new();
    }
    ChainState::load(&stack.state_path())
        .map(|state| crate::install::interrupted_steps(&state))
        .unwrap_or_default()
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
    let busy = busy(stack);
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
        last_resume: crate::install::resume::ResumeRecord::load(
            &crate::install::resume::record_path(&stack.state_path()),
        )
        .last_resume,
        lock,
        audit,
        install,
        proven,
        problems,
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
    fn the_stage_is_decided_from_the_lock_the_layers_and_the_record() {
        use Layer::{Driver, Library, Toolkit};
        use LayerStatus::{Done, Failed, RebootPending};
        type Marks = &'static [(Layer, LayerStatus)];
        let all_done: Marks = &[(Driver, Done), (Toolkit, Done), (Library, Done)];
        // (lock, layer marks, proven record, stage): a bare folder is empty and a locked one
        // fetched; a pending reboot outranks an older record and a failed layer everything; three
        // done layers are installed until a record proves them, fewer are still installing.
        let table: &[(bool, Marks, bool, Stage)] = &[
            (false, &[], false, Stage::Empty),
            (true, &[], false, Stage::Fetched),
            (true, &[(Driver, RebootPending)], true, Stage::RebootPending),
            (
                true,
                &[(Driver, Done), (Toolkit, Failed)],
                true,
                Stage::Failed,
            ),
            (true, all_done, false, Stage::Installed),
            (true, all_done, true, Stage::Proven),
            (true, &[(Driver, Done)], false, Stage::Installing),
        ];
        for &(lock, marks, proven, want) in table {
            assert_eq!(
                stage_of(lock, &state(marks), proven),
                want,
                "lock {lock}, {marks:?}, proven {proven}"
            );
        }
    }

    #[test]
    fn a_step_left_running_is_interrupted_unless_a_stackpin_holds_the_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::at(dir.path().join("s"));
        std::fs::create_dir_all(stack.root()).expect("stack folder");
        state(&[(Layer::Toolkit, LayerStatus::Running)])
            .save(&stack.state_path())
            .expect("state");
        let cut = interrupted(&stack);
        assert_eq!(cut.len(), 1, "{cut:?}");
        assert!(cut[0].contains("toolkit step was interrupted"), "{cut:?}");
        let held = stack.try_lock().expect("lock").expect("free");
        assert!(busy(&stack));
        assert!(
            interrupted(&stack).is_empty(),
            "a held lock means it is running"
        );
        drop(held);
        assert!(interrupted(&StackDir::at(dir.path().join("none"))).is_empty());
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
}
