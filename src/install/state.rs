//! Where an install chain stands, in `<archive>/<name>/state.yaml`: which layers are done,
//! which failed (with the log), and whether a reboot is pending after the driver. It survives the
//! reboot, so the next run of the same command continues with the toolkit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::{self, YamlError};
use crate::manifest::Layer;

/// The chain's state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a stackpin state file ({reason}); move it away and run again", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The shared YAML helper's errors, in the state file's words (a parse error without the
/// parser's snippet: the file is stackpin's own, the line is enough).
impl From<YamlError> for StateError {
    fn from(e: YamlError) -> Self {
        match e {
            YamlError::Read { path, source } => StateError::Read { path, source },
            YamlError::Parse { path, source } => StateError::Parse {
                path,
                reason: source.without_snippet().to_string(),
            },
            YamlError::Encode { path, reason } => StateError::Write {
                path,
                source: std::io::Error::other(reason),
            },
            YamlError::Write { path, source } => StateError::Write { path, source },
        }
    }
}

/// Where one layer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerStatus {
    /// Installed and proven on the host.
    Done,
    /// Installed; proof waits for a reboot.
    #[serde(alias = "reboot-pending")]
    RebootPending,
    /// The installer or its proof failed; the next run retries from here.
    Failed,
    /// The step was started and has not finished: while stackpin runs, it is running; found
    /// by a later run, stackpin was stopped mid-step (`kill -9`, a power loss) and the layer is
    /// in an unknown state.
    Running,
}

/// The record of one layer's last step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerState {
    pub status: LayerStatus,
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The whole chain's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChainState {
    #[serde(default)]
    pub layers: BTreeMap<Layer, LayerState>,
    /// Set when the chain stopped because Ctrl-C was pressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_at: Option<Layer>,
    /// What install prepared on the host for the driver (nouveau blacklisted, the display
    /// manager stopped, a signing certificate imported), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prepared: Vec<Prepared>,
}

/// One preparation install did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    pub what: String,
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
}

impl ChainState {
    /// Reads the state, or an empty one when the file does not exist yet.
    pub fn load(path: &Path) -> Result<Self, StateError> {
        Ok(fsutil::read_yaml_if_present(path)?.unwrap_or_default())
    }

    /// Writes the state atomically.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        Ok(fsutil::write_yaml(path, "", self)?)
    }

    /// Records a layer's new status, stamped now.
    pub fn mark(
        &mut self,
        layer: Layer,
        status: LayerStatus,
        log: Option<PathBuf>,
        detail: Option<String>,
    ) {
        self.layers.insert(
            layer,
            LayerState {
                status,
                at: jiff::Timestamp::now().to_string(),
                log,
                detail,
            },
        );
    }

    /// Records a preparation, stamped now.
    pub fn prepared(&mut self, what: &str, log: Option<PathBuf>) {
        self.prepared.push(Prepared {
            what: what.to_string(),
            at: jiff::Timestamp::now().to_string(),
            log,
        });
    }

    /// The status of a layer, if it ran before.
    pub fn status(&self, layer: Layer) -> Option<LayerStatus> {
        self.layers.get(&layer).map(|s| s.status)
    }
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for StateError {
    fn exit(&self) -> Exit {
        match self {
            StateError::Read { .. } | StateError::Parse { .. } => Exit::Input,
            _ => Exit::External,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.yaml");
        assert_eq!(
            ChainState::load(&path).expect("empty"),
            ChainState::default()
        );
        let mut state = ChainState::default();
        state.mark(
            Layer::Driver,
            LayerStatus::RebootPending,
            None,
            Some("595.71.05".into()),
        );
        state.mark(
            Layer::Toolkit,
            LayerStatus::Failed,
            Some(dir.path().join("t.log")),
            None,
        );
        state.save(&path).expect("save");
        let back = ChainState::load(&path).expect("load");
        assert_eq!(back, state);
        assert_eq!(back.status(Layer::Driver), Some(LayerStatus::RebootPending));
        assert_eq!(back.status(Layer::Library), None);
    }

    #[test]
    fn a_garbled_state_file_names_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.yaml");
        std::fs::write(&path, "layers: [1, 2").expect("write");
        let err = ChainState::load(&path).expect_err("garbled");
        assert!(err.to_string().contains("state.yaml"));
    }
}
