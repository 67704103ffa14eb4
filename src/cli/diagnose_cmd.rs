//! `stackpin diagnose [LOG | -]`: names the layer, cause and fix of a failure log.
//!
//! Reading and matching live in [`crate::diagnose`]; this file only prints and picks the exit
//! code.

use std::path::PathBuf;

use super::{CmdResult, Exit, GlobalArgs, print_json};
use crate::diagnose::{self, Diagnosis, FailureLayer};

pub const EXAMPLES: &str = "\
Examples:
  stackpin diagnose installers/torch-2.5.1-cu124-linux/logs/example.log
  python train.py 2>&1 | stackpin diagnose -
  stackpin diagnose /var/log/nvidia-installer.log --json

Exit 0 when a layer was named, 1 when no known failure matched (layer \"unknown\": nothing is
guessed), 2 when the log cannot be read.";

#[derive(Debug, clap::Args)]
pub struct DiagnoseArgs {
    /// The failure to read: an example log, an installer log or a pasted traceback. `-` (or
    /// nothing, when piped) reads standard input.
    #[arg(value_name = "LOG")]
    pub log: Option<PathBuf>,
}

pub fn run(args: &DiagnoseArgs, global: &GlobalArgs) -> CmdResult {
    let text = diagnose::read_log(args.log.as_deref())?;
    let diagnosis = diagnose::diagnose_or_unknown(&text);
    if global.json {
        print_json(&diagnosis)?;
    } else {
        print_human(&diagnosis);
    }
    Ok(match diagnosis.layer {
        FailureLayer::Unknown => Exit::Problem,
        _ => Exit::Ok,
    })
}

fn print_human(d: &Diagnosis) {
    println!("layer:    {}", d.layer);
    println!("cause:    {}", d.cause);
    println!("fix:      {}", d.fix);
    match (&d.evidence, d.line) {
        (Some(evidence), Some(line)) => println!("evidence: line {line}: {evidence}"),
        (Some(evidence), None) => println!("evidence: {evidence}"),
        _ => println!("evidence: none (no line of the log matched a known failure)"),
    }
    if let Some(source) = &d.source {
        println!("known as: {} (seen in {source})", d.id);
    }
}
