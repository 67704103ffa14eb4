//! `stackpin diagnose [LOG | -] [--host auto|none]`: names the layer, cause and fix of a
//! failure log.
//!
//! Reading and matching live in [`crate::diagnose`]; the host context comes from
//! [`crate::host::context`]. This file only picks the context and prints; the verdict is [`super::finish_report`]'s.

use std::path::PathBuf;

use super::term::shown;
use super::{CmdResult, GlobalArgs, finish_report, print_json};
use crate::diagnose::{self, Diagnosis, FailureLayer};
use crate::host::{RealSystem, context};

pub const EXAMPLES: &str = "\
Examples:
  stackpin diagnose installers/torch-2.5.1-cu124-linux/logs/example.log
  stackpin diagnose installers/torch-2.5.1-cu124-linux/failed-run.yaml
  python train.py 2>&1 | stackpin diagnose -
  stackpin diagnose pasted-from-a-colleague.log --host none --json

On the machine that failed, the fix fits the host (a container, WSL, a kernel the driver was not
built for); `--host none` is for a log from elsewhere.

Exit 0 when a layer was named, 1 when no known failure matched (layer \"unknown\": nothing is
guessed), 2 when the log cannot be read.";

/// Whose context decides the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HostMode {
    /// This machine: the log comes from here.
    Auto,
    /// No host: the log comes from another machine.
    None,
}

#[derive(Debug, clap::Args)]
pub struct DiagnoseArgs {
    /// The failure to read: an example log, an installer log, a pasted traceback, or a
    /// `failed-run.yaml`. `-` (or nothing, when piped) reads standard input.
    #[arg(value_name = "LOG")]
    pub log: Option<PathBuf>,
    /// `auto`: look at this machine (container, WSL, kernel vs driver) to pick the fix;
    /// `none`: the log is from elsewhere, give the fix without host context.
    #[arg(long, value_enum, default_value = "auto")]
    pub host: HostMode,
}

pub fn run(args: &DiagnoseArgs, global: &GlobalArgs) -> CmdResult {
    let excerpt = diagnose::read_log(args.log.as_deref())?;
    let host = match args.host {
        HostMode::Auto => Some(context::probe(&RealSystem)),
        HostMode::None => None,
    };
    let mut diagnosis =
        diagnose::diagnose_in(&excerpt.text, host.as_ref()).unwrap_or_else(Diagnosis::unknown);
    // Line numbers in the whole log, not in the excerpt a long log was read into.
    diagnosis.line = diagnosis.line.map(|line| excerpt.original_line(line));
    // A log nothing matched is a finding: stackpin cannot name the layer.
    finish_report(
        global,
        diagnosis.layer != FailureLayer::Unknown,
        || print_json(&diagnosis),
        || print_human(&diagnosis),
    )
}

fn print_human(d: &Diagnosis) {
    use std::fmt::Write as _;
    use std::io::Write as _;
    let mut out = String::new();
    let _ = match d.second_layer {
        Some(second) => writeln!(out, "layer:    {} (or {second})", d.layer),
        None => writeln!(out, "layer:    {}", d.layer),
    };
    // The log's own words (its lines, the files they name) are shown, never obeyed.
    let _ = writeln!(out, "cause:    {}", shown(&d.cause));
    let _ = writeln!(out, "fix:      {}", shown(&d.fix));
    if let Some(context) = &d.context {
        let _ = writeln!(out, "context:  {}", shown(context));
    }
    let _ = match (&d.evidence, d.line) {
        (Some(evidence), Some(line)) => {
            writeln!(out, "evidence: line {line}: {}", shown(evidence))
        }
        (Some(evidence), None) => writeln!(out, "evidence: {}", shown(evidence)),
        _ => writeln!(
            out,
            "evidence: none (no line of the log matched a known failure)"
        ),
    };
    if let Some(source) = &d.source {
        let _ = writeln!(out, "known as: {} (seen in {source})", d.id);
    }
    // A closed pipe (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
}
