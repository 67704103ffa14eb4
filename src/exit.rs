//! Exit statuses and the errors that know theirs: each module's error enum says which row of
//! README's exit-code table it belongs to, so `?` carries the code to the command line's edge
//! instead of each call site picking one by hand.
//!
//! This module prints nothing; `cli` turns an [`Exit`] into the process's status and the JSON
//! document's `exit_code`.

/// Exit statuses shared by every command (README, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Exit {
    /// Everything checked out.
    Ok = 0,
    /// The tool ran fine and found a problem: drift, a corrupt file, incompatible pins.
    Problem = 1,
    /// The user's input could not be used: bad flags, unreadable or invalid files.
    Input = 2,
    /// Something outside stackpin failed: a download, an installer, the example.
    External = 3,
}

impl Exit {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

/// An error that knows its exit status, and where it can, the layer it points at and the fix.
pub trait ExitStatus: std::error::Error {
    /// The row of the exit-code table this error belongs to.
    fn exit(&self) -> Exit;
    /// The stack layer (`driver`, `toolkit`, `library`, `example`) the failure points at.
    fn layer(&self) -> Option<String> {
        None
    }
    /// What to do next, when the error knows it apart from its message.
    fn fix(&self) -> Option<String> {
        None
    }
}

// Which row each module's errors belong to. Kept in one table so the whole mapping reads at a
// glance against README's; a variant added later falls into its enum's default row.

use crate::archive::ArchiveError;
use crate::install::InstallError;
use crate::install::runner::RunnerError;
use crate::install::state::StateError;
use crate::prove::run::ProveError;
use crate::record::RecordError;

impl ExitStatus for ArchiveError {
    fn exit(&self) -> Exit {
        match self {
            // An archived file or lock that is not what was pinned: refused, never run.
            e if e.is_problem() && !matches!(e, ArchiveError::BadLock { .. }) => Exit::Problem,
            // A bundle whose content is wrong: a corrupt bundle, refused.
            ArchiveError::Bundle { .. } => Exit::Problem,
            // An unreadable or invalid file the user handed over (a lock, a bundle).
            ArchiveError::BadLock { .. }
            | ArchiveError::NoLock { .. }
            | ArchiveError::BundleUnreadable { .. } => Exit::Input,
            ArchiveError::Io { action, .. } if matches!(*action, "reading" | "opening") => {
                Exit::Input
            }
            _ => Exit::External,
        }
    }
}

impl ExitStatus for StateError {
    fn exit(&self) -> Exit {
        match self {
            StateError::Read { .. } | StateError::Parse { .. } => Exit::Input,
            _ => Exit::External,
        }
    }
}

impl ExitStatus for RunnerError {
    fn exit(&self) -> Exit {
        match self {
            RunnerError::MissingPlaceholder { .. } | RunnerError::EmptyCommand => Exit::Input,
            _ => Exit::External,
        }
    }
}

impl ExitStatus for InstallError {
    fn exit(&self) -> Exit {
        match self {
            InstallError::Refused { .. } => Exit::Problem,
            InstallError::NotAdmin => Exit::Input,
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

impl ExitStatus for RecordError {
    fn exit(&self) -> Exit {
        match self {
            RecordError::Read { .. } | RecordError::Parse { .. } | RecordError::Schema { .. } => {
                Exit::Input
            }
            _ => Exit::External,
        }
    }
}

impl ExitStatus for ProveError {
    fn exit(&self) -> Exit {
        match self {
            // A layer out of place, no GPU, a run that was not on the GPU: the check found it.
            ProveError::LayerMissing { .. }
            | ProveError::NoGpu(_)
            | ProveError::NotOnGpu { .. } => Exit::Problem,
            ProveError::Runner(e) => e.exit(),
            ProveError::Record(e) => e.exit(),
            _ => Exit::External,
        }
    }

    fn layer(&self) -> Option<String> {
        match self {
            ProveError::LayerMissing { proof, .. } => Some(proof.layer.to_string()),
            ProveError::NoGpu(_) => Some("driver".to_string()),
            ProveError::NotOnGpu { layer, .. } => Some(layer.clone()),
            ProveError::ExampleFailed { .. } | ProveError::NoLatency { .. } => {
                Some("example".to_string())
            }
            _ => None,
        }
    }

    fn fix(&self) -> Option<String> {
        match self {
            ProveError::LayerMissing { advice, .. } => Some(advice.clone()),
            ProveError::NotOnGpu { explanation, .. }
            | ProveError::ExampleFailed { explanation, .. } => Some(explanation.clone()),
            _ => None,
        }
    }
}

impl ExitStatus for crate::manifest::ManifestError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

impl ExitStatus for crate::pin::PinError {
    fn exit(&self) -> Exit {
        // A request that is fine but fits no stack to the host or its GPUs is a finding.
        if self.is_problem() {
            Exit::Problem
        } else {
            Exit::Input
        }
    }
}

impl ExitStatus for crate::budget::BudgetError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

impl ExitStatus for crate::vram::VramError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

impl ExitStatus for crate::diagnose::DiagnoseError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

impl ExitStatus for crate::doctor::DoctorError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

impl ExitStatus for crate::host::HostError {
    fn exit(&self) -> Exit {
        match self {
            crate::host::HostError::NoSuchGpu { .. } => Exit::Input,
            _ => Exit::External,
        }
    }
}

impl ExitStatus for crate::deployment::DeploymentError {
    fn exit(&self) -> Exit {
        match self {
            crate::deployment::DeploymentError::Write { .. } => Exit::External,
            // The model or the record the user named could not be read.
            _ => Exit::Input,
        }
    }
}

impl ExitStatus for crate::prove::SamplerError {
    fn exit(&self) -> Exit {
        Exit::External
    }
}

impl ExitStatus for crate::prove::measure::MeasureError {
    fn exit(&self) -> Exit {
        match self {
            crate::prove::measure::MeasureError::Runner(e) => e.exit(),
            crate::prove::measure::MeasureError::NoBaselineScript { .. } => Exit::Input,
            _ => Exit::External,
        }
    }
}

impl ExitStatus for crate::doctor::repair::RepairError {
    fn exit(&self) -> Exit {
        match self {
            crate::doctor::repair::RepairError::Install(e) => e.exit(),
            crate::doctor::repair::RepairError::Prove(e) => e.exit(),
        }
    }

    fn layer(&self) -> Option<String> {
        match self {
            crate::doctor::repair::RepairError::Install(e) => e.layer(),
            crate::doctor::repair::RepairError::Prove(e) => e.layer(),
        }
    }

    fn fix(&self) -> Option<String> {
        match self {
            crate::doctor::repair::RepairError::Install(e) if e.exit() == Exit::Problem => Some(
                "the archive cannot rebuild this layer: run `stackpin repair MANIFEST --fetch`"
                    .to_string(),
            ),
            crate::doctor::repair::RepairError::Install(e) => e.fix(),
            crate::doctor::repair::RepairError::Prove(e) => e.fix(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn codes_follow_the_readme_table() {
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Problem.code(), 1);
        assert_eq!(Exit::Input.code(), 2);
        assert_eq!(Exit::External.code(), 3);
    }
}
