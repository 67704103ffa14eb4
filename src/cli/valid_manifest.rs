//! "Must pass check": the manifest a command acts on (fetch, install, prove, up, measure, record)
//! is read, parsed and checked first; a manifest that fails `stackpin check` is refused (exit 1)
//! before anything runs.

use super::{CliError, Failure};
use crate::check;
use crate::manifest::{self, Severity};

/// Turns a failed check into a failure for commands that need a valid manifest first.
pub fn require_valid(path: &std::path::Path) -> Result<manifest::Manifest, Failure> {
    let text = crate::fsutil::read_text(path).map_err(|e| {
        Failure::from(manifest::ManifestError::Read {
            path: path.to_path_buf(),
            source: e,
        })
    })?;
    let m = manifest::parse(&text, path)?;
    let report = check::check(&m, Some(&text));
    if !report.ok {
        let first = report
            .problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect::<Vec<_>>()
            .join("\n  ");
        return Err(Failure::from(CliError::Refused(format!(
            "{} does not pass `stackpin check`:\n  {first}",
            path.display()
        ))));
    }
    Ok(m)
}
