//! `stackpin record export MANIFEST --model FILE [-o OUT]`: the model's stack record beside a
//! trained model. The record's contents are [`crate::deployment`]'s; this finds the proven
//! record in the archive, picks the output path and prints.

use std::path::PathBuf;

use clap::Subcommand;

use super::valid_manifest::require_valid;
use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::deployment::{self, VersionSource};
use crate::record::ProvenStack;

pub const EXAMPLES: &str = "\
Examples:
  stackpin record export manifests/torch-2.5.1-cu124-linux.yaml --model runs/det.onnx
  stackpin record export stack.yaml --model det.pt -o deploy/det.stack.yaml --json

Writes FILE.stack.yaml beside the model (or OUT): driver, toolkit and library versions from the
stack's proven-stack record in the archive when there is one, else the manifest's pins (the
record says which in `versions_from`), the GPU it was proven on, and the model's sha256.";

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    #[command(subcommand)]
    pub command: RecordCommand,
}

#[derive(Debug, Subcommand)]
pub enum RecordCommand {
    /// Write beside a trained model the training stack it came from and the model's sha256.
    #[command(after_help = EXAMPLES)]
    Export(ExportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The training stack's manifest.
    pub manifest: PathBuf,
    /// The trained model file.
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// Where to write the record (default: FILE.stack.yaml beside the model).
    #[arg(long, short, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

pub fn run(args: &RecordArgs, global: &GlobalArgs) -> CmdResult {
    match &args.command {
        RecordCommand::Export(export) => run_export(export, global),
    }
}

fn run_export(args: &ExportArgs, global: &GlobalArgs) -> CmdResult {
    let m = require_valid(&args.manifest)?;
    let record_path = global.archive().stack(&m.name).proven_stack_path();
    let proven = if record_path.is_file() {
        Some(ProvenStack::read(&record_path)?)
    } else {
        None
    };
    // A model that cannot be read is the user's input (exit 2): the error knows its row.
    let record = deployment::export(&m, proven.as_ref(), &args.model)?;
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| deployment::default_path(&args.model));
    record.write(&out)?;
    if global.json {
        print_json(&serde_json::json!({ "path": out, "record": record }))?;
        return Ok(Exit::Ok);
    }
    println!("wrote {}", out.display());
    println!(
        "  model: {} sha256 {} ({} bytes)",
        record.model.file, record.model.sha256, record.model.size
    );
    println!(
        "  stack: {} — driver {}, CUDA {}, {} {}",
        record.stack, record.driver, record.toolkit, record.library.name, record.library.version
    );
    match (&record.gpu, record.versions_from) {
        (Some(gpu), VersionSource::ProvenStack) => println!(
            "  versions from the proven-stack record ({}), GPU {} ({} MiB)",
            record_path.display(),
            gpu.name,
            gpu.vram_mib
        ),
        _ => println!(
            "  versions from the manifest's pins: the stack has no proven-stack record in {} \
             (run `stackpin prove` to record what the host really has and its GPU)",
            global.archive().root().display()
        ),
    }
    if record.model.size == 0 {
        return Err(Failure::from(CliError::Refused(format!(
            "the model {} is empty (0 bytes); was the training run's save step reached?",
            args.model.display()
        ))));
    }
    Ok(Exit::Ok)
}
