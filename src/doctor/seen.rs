//! `doctor.yaml` in a stack's folder: what doctor last saw there — when, whether every check
//! passed, the drift it named and the checks that failed — so a report read later (on another
//! machine, from collected records) can say "drifted since …" without probing the host again.
//!
//! Only `doctor` writes it (never `repair`: a repair ends with a new proof, which outdates it);
//! readers compare `seen_at` with the record's `proven_at`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Check, Drift, Examination, Status};
use crate::archive::StackDir;
use crate::fsutil::{self, YamlError};

/// The file's name inside a stack's folder.
pub const SEEN_FILE: &str = "doctor.yaml";

const HEADER: &str =
    "# What `stackpin doctor` last saw on this stack; written by doctor, read by report.\n";

/// Doctor's last verdict on one stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastSeen {
    /// When doctor looked, RFC 3339 UTC.
    pub seen_at: String,
    /// True when no check failed.
    pub ok: bool,
    /// What changed on each layer since the stack was proven.
    #[serde(default)]
    pub drift: Vec<Drift>,
    /// The checks that did not pass, with what was found and the fix.
    #[serde(default)]
    pub failed: Vec<Check>,
}

impl LastSeen {
    /// The examination, as it is kept.
    pub fn of(exam: &Examination, seen_at: String) -> Self {
        Self {
            seen_at,
            ok: exam.ok,
            drift: exam.drift.clone(),
            failed: exam
                .checks
                .iter()
                .filter(|c| c.status == Status::Fail)
                .cloned()
                .collect(),
        }
    }

    /// Where `stack` keeps it.
    pub fn path(stack: &StackDir) -> PathBuf {
        stack.root().join(SEEN_FILE)
    }

    /// What doctor last saw in the stack folder `dir`; `None` when it never looked.
    pub fn read(dir: &Path) -> Result<Option<Self>, YamlError> {
        fsutil::read_yaml_if_present(&dir.join(SEEN_FILE))
    }

    /// Keeps it in `stack`'s folder, atomically; a stack without a folder keeps nothing.
    pub fn write(&self, stack: &StackDir) -> Result<(), YamlError> {
        if !stack.root().is_dir() {
            return Ok(());
        }
        fsutil::write_yaml(&Self::path(stack), HEADER, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::CheckId;
    use crate::manifest::Layer;

    #[test]
    fn what_doctor_saw_round_trips_and_a_stack_without_a_folder_keeps_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let seen = LastSeen {
            seen_at: "2026-03-01T10:00:00Z".into(),
            ok: false,
            drift: vec![Drift {
                layer: Layer::Driver,
                recorded: "595.71.05".into(),
                now: "590.48.01".into(),
            }],
            failed: vec![Check {
                check: CheckId::Driver,
                status: Status::Fail,
                found: "driver 590.48.01 running".into(),
                fix: Some("stackpin repair".into()),
            }],
        };
        let stack = StackDir::at(dir.path().join("s"));
        seen.write(&stack).expect("no folder, no file");
        assert!(!LastSeen::path(&stack).exists());
        std::fs::create_dir_all(stack.root()).expect("folder");
        seen.write(&stack).expect("written");
        assert_eq!(LastSeen::read(stack.root()).expect("reads"), Some(seen));
        assert_eq!(
            LastSeen::read(&dir.path().join("none")).expect("absent"),
            None
        );
    }
}
