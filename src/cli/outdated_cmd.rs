//! `stackpin outdated [MANIFEST | --all]`: per stack, what is newer in the release data in use
//! and what moving would mean. Exit 0 when nothing is newer, 1 when something is.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use super::{CliError, CmdResult, Failure, GlobalArgs, finish_report, print_json};
use crate::dataset::{self, DataRef};
use crate::host::RealSystem;
use crate::manifest;
use crate::os::Os;
use crate::outdated::{self, HostGpus, Outdated};

pub const EXAMPLES: &str = "\
Examples:
  stackpin outdated manifests/torch-2.5.1-cu124-linux.yaml
  stackpin outdated --all --json

Compares the pins with the release data in use (`stackpin data show`; `stackpin data update`
brings newer data): a newer driver in the same branch, a newer branch that still drives this
host's GPUs, a newer toolkit update in the same CUDA line, a newer library patch release.
Exit 0 when nothing is newer, 1 when something is.";

#[derive(Debug, clap::Args)]
pub struct OutdatedArgs {
    /// The stack's manifest.
    #[arg(
        required_unless_present = "all",
        conflicts_with = "all",
        value_name = "MANIFEST"
    )]
    pub manifest: Option<PathBuf>,
    /// Every stack under the archive (each folder with a fetched manifest.yaml).
    #[arg(long)]
    pub all: bool,
}

#[derive(Serialize)]
struct StackJson<'a> {
    manifest: String,
    #[serde(flatten)]
    outdated: &'a Outdated,
}

#[derive(Serialize)]
struct OutdatedJson<'a> {
    data: DataRef,
    outdated: bool,
    stacks: Vec<StackJson<'a>>,
}

pub fn run(args: &OutdatedArgs, global: &GlobalArgs) -> CmdResult {
    let paths = match &args.manifest {
        Some(path) => vec![path.clone()],
        None => {
            let archive = global.open_archive()?;
            // The stacks fetch wrote a manifest into: their pins are what is outdated.
            let dirs: Vec<_> = archive
                .stacks()?
                .into_iter()
                .map(|s| s.manifest_path())
                .filter(|p| p.is_file())
                .collect();
            if dirs.is_empty() {
                return Err(Failure::from(CliError::Usage(format!(
                    "no stacks under {}: run `stackpin fetch MANIFEST` first, or pass --archive",
                    archive.root().display()
                ))));
            }
            dirs
        }
    };
    let mut results = Vec::new();
    // The host is probed once per OS the stacks are for, not once per stack.
    let mut probed: HashMap<Os, HostGpus> = HashMap::new();
    for path in paths {
        let m = manifest::read(&path)?;
        let gpus = probed
            .entry(m.os)
            .or_insert_with(|| outdated::host_gpus(&RealSystem, m.os));
        results.push((path, outdated::outdated(&m, gpus)));
    }
    let any = results.iter().any(|(_, o)| !o.newer.is_empty());
    let json = || {
        print_json(&OutdatedJson {
            data: dataset::data_ref(&crate::compat::READER),
            outdated: any,
            stacks: results
                .iter()
                .map(|(p, o)| StackJson {
                    manifest: p.display().to_string(),
                    outdated: o,
                })
                .collect(),
        })
    };
    finish_report(global, !any, json, || print_human(&results, global.quiet))
}

fn print_human(results: &[(PathBuf, Outdated)], quiet: bool) {
    let in_use = dataset::in_use(&crate::compat::READER);
    for (i, (path, o)) in results.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let what = if o.newer.is_empty() {
            "nothing newer".to_string()
        } else {
            format!("{} newer", o.newer.len())
        };
        println!(
            "{} ({}): {what} in the {} release data of {}",
            o.stack,
            path.display(),
            in_use.source_word(),
            in_use.set.read_on
        );
        for n in &o.newer {
            println!(
                "  {:<8} {} → {}  {}",
                n.layer.as_str(),
                n.pinned,
                n.newer,
                n.meaning
            );
        }
        if !quiet {
            for note in &o.notes {
                println!("  note: {note}");
            }
        }
    }
    if !quiet && let Some(why) = &in_use.ignored {
        println!("note: {why}");
    }
}
