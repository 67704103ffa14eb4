//! The exit status an install chain's end maps to, for every command that runs the chain
//! (`install`, `repair`, `up`): written once so the same end exits the same way in each.

use super::{CliError, CmdResult, Exit};
use crate::install::{ChainEnd, InstallReport};
use crate::manifest::Layer;

/// `Ok` with the status to end on, or the failure to print; `failed` words a failed layer.
pub fn chain_exit(
    report: &InstallReport,
    failed: impl FnOnce(&Layer, &str) -> String,
) -> CmdResult {
    match &report.end {
        ChainEnd::Failed { layer, why } => Err(CliError::Failed(failed(layer, why)).into()),
        // Stopped between layers (Ctrl-C): the report says where; the run did not finish.
        ChainEnd::Interrupted { .. } => Ok(Exit::External),
        _ => Ok(Exit::Ok),
    }
}
