//! `stackpin report [--records DIR] -o lab.html`: the lab at a glance as one self-contained HTML
//! page (and with `--json` the same facts as one document), from the archive or from a folder of
//! records collected from many hosts. What the page says is `crate::report`'s; this module reads
//! the flags, refuses to write over its own input, and writes the page atomically.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::report::{self, Lab};

pub const EXAMPLES: &str = "\
Examples:
  stackpin report -o lab.html
  stackpin report --archive /srv/installers -o lab.html
  stackpin report --records records/ -o lab.html --json

The page needs no network: styles and the memory curves are inline and it loads nothing. From
--archive (default) it shows the stacks of one archive, each installer re-hashed like `stackpin
audit`; from --records the stacks each host sent (records/<host>/<stack>/…, see docs/report.md).
Exit 0 when the page was written, whatever it shows (`needs_person` in --json says who needs a
person); 2 when the input cannot be read or -o points into it.";

/// Arguments of `report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A folder of records collected from many hosts: `DIR/<host>/<stack>/{proven-stack.yaml,
    /// state.yaml, stack.lock, manifest.yaml, doctor.yaml, …}`; without it, the archive.
    #[arg(long, value_name = "DIR")]
    pub records: Option<PathBuf>,
    /// Where to write the HTML page (required unless --json).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Serialize)]
struct ReportJson<'a> {
    /// The page written, when -o was given.
    path: Option<&'a Path>,
    /// The hosts that need a person, most urgent first.
    needs_person: Vec<&'a str>,
    #[serde(flatten)]
    lab: &'a Lab,
}

pub fn run(args: &ReportArgs, global: &GlobalArgs) -> CmdResult {
    if args.output.is_none() && !global.json {
        return Err(Failure::from(CliError::Usage(
            "report needs -o FILE for the page (or --json for the facts alone)".to_string(),
        )));
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let input = match &args.records {
        Some(dir) => dir.clone(),
        None => global.archive().root().to_path_buf(),
    };
    if let Some(output) = &args.output {
        refuse_writing_into(&input, output)?;
    }
    let lab = match &args.records {
        Some(dir) => report::from_records(dir, threads)?,
        None => report::from_archive(&input, threads)?,
    };
    if let Some(output) = &args.output {
        crate::fsutil::write_atomic(output, report::html::render(&lab).as_bytes()).map_err(
            |e| {
                CliError::broke(
                    anyhow::Error::new(e).context(format!("writing {}", output.display())),
                )
            },
        )?;
    }
    let needs_person: Vec<&str> = lab
        .matrix
        .iter()
        .filter(|h| h.needs_person)
        .map(|h| h.host.as_str())
        .collect();
    if global.json {
        print_json(&ReportJson {
            path: args.output.as_deref(),
            needs_person,
            lab: &lab,
        })?;
    } else if !global.quiet {
        if let Some(output) = &args.output {
            println!(
                "wrote {}: {} host(s), {} stack(s)",
                output.display(),
                lab.matrix.len(),
                lab.stacks.len()
            );
        }
        for host in &lab.matrix {
            let words: Vec<String> = host
                .cells
                .iter()
                .map(|c| format!("{} {}", c.stack, c.state.word()))
                .collect();
            let mark = if host.needs_person {
                "needs a person"
            } else {
                "ok"
            };
            println!("  {} ({mark}): {}", host.host, words.join(" · "));
        }
    }
    Ok(Exit::Ok)
}

/// Refuses an output inside the folder the report reads: the page would land among the records
/// it describes (or over one of them).
fn refuse_writing_into(input: &Path, output: &Path) -> Result<(), Failure> {
    let Ok(input) = std::fs::canonicalize(input) else {
        // A missing input is reported by the reader, with its own words.
        return Ok(());
    };
    let resolved = match std::fs::canonicalize(output) {
        Ok(path) => Some(path),
        Err(_) => {
            let parent = output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::canonicalize(parent)
                .ok()
                .zip(output.file_name())
                .map(|(dir, name)| dir.join(name))
        }
    };
    match resolved {
        Some(path) if path.starts_with(&input) => Err(Failure::from(CliError::Usage(format!(
            "-o {} lies inside the input {}: write the page outside the folder it reports on",
            output.display(),
            input.display()
        )))),
        _ => Ok(()),
    }
}
