//! The archive state of each installer file a plan runs: present and verified against the lock,
//! missing, corrupt, or not archived yet. The plan shows it per command and preflight refuses on
//! it; neither owns it, so both read it from here.

use std::path::PathBuf;

use serde::Serialize;

use crate::manifest::Layer;

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
