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
use crate::outdated::index::{self, IndexOutdated};
use crate::outdated::{self, HostGpus, Outdated};

pub const EXAMPLES: &str = "\
Examples:
  stackpin outdated manifests/torch-2.5.1-cu124-linux.yaml
  stackpin outdated --all --json
  stackpin outdated --index manifests/torch-2.5.1-cu124-linux.yaml

Compares the pins with the release data in use (`stackpin data show`; `stackpin data update`
brings newer data): a newer driver in the same branch, a newer branch that still drives this
host's GPUs, a newer toolkit update in the same CUDA line, a newer library patch release.
Exit 0 when nothing is newer, 1 when something is.
With --index, the package indexes answer instead: the library's newer releases and the CUDA
builds they have (the index's `+cuXYZ` tags, else the release data's lines), and newer
`cuda-toolkit` releases, each judged against the driver; exit 1 when one fits, 3 when an index
cannot be read.";

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
    /// Ask the package indexes instead of the release data: newer library releases and their
    /// CUDA builds, and `cuda-toolkit` releases, judged against this host's driver (the stack's
    /// pinned one when the host's does not answer), with the data's answer beside them.
    #[arg(long)]
    pub index: bool,
    /// The default index to ask with --index (default: $PIP_INDEX_URL, else pip's own).
    #[arg(long, value_name = "URL", requires = "index")]
    pub index_url: Option<String>,
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
    let paths = stack_manifests(args, global)?;
    if args.index {
        return run_index(args, global, paths);
    }
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

/// The manifest given, or every fetched stack's under the archive.
fn stack_manifests(args: &OutdatedArgs, global: &GlobalArgs) -> Result<Vec<PathBuf>, Failure> {
    Ok(match &args.manifest {
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
    })
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

#[derive(Serialize)]
struct IndexStackJson<'a> {
    manifest: String,
    #[serde(flatten)]
    outdated: &'a IndexOutdated,
}

#[derive(Serialize)]
struct IndexJson<'a> {
    data: DataRef,
    /// Some newer release or toolkit on the indexes fits the driver.
    outdated: bool,
    stacks: Vec<IndexStackJson<'a>>,
}

/// `outdated --index`: the indexes' answer per stack; an index that cannot be read is an error
/// (exit 3), never "nothing newer".
fn run_index(args: &OutdatedArgs, global: &GlobalArgs, paths: Vec<PathBuf>) -> CmdResult {
    let mut results = Vec::new();
    let mut default_index = args.index_url.clone().or_else(|| {
        std::env::var("PIP_INDEX_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
    });
    for path in paths {
        let m = manifest::read(&path)?;
        let default = match &default_index {
            Some(url) => url.clone(),
            None => {
                let python = m.library.python.clone();
                let url = index::pip_default_index(&python)
                    .map_err(|e| Failure::from(CliError::Failed(e)))?;
                default_index = Some(url.clone());
                url
            }
        };
        let pip = m.library.pip.as_ref();
        let library = pip
            .into_iter()
            .flat_map(|p| p.index_url.iter().chain(&p.extra_index_urls))
            .filter(|u| u.trim_end_matches('/') != default.trim_end_matches('/'))
            .cloned()
            .collect();
        let indexes = index::Indexes { default, library };
        let (driver, whose) = match outdated::host_driver(&RealSystem, m.os) {
            Some(d) => (d, "this host's driver"),
            None => (
                m.driver.version.clone(),
                "the stack's pinned driver (this host's does not answer)",
            ),
        };
        let found = index::outdated_from_index(&m, &indexes, &index::HttpIndex, (&driver, whose))
            .map_err(|e| Failure::from(CliError::Failed(e.to_string())))?;
        results.push((path, found));
    }
    let any = results
        .iter()
        .any(|(_, o)| o.newer.iter().any(|n| n.fits) || o.toolkits.iter().any(|t| t.fits));
    let json = || {
        print_json(&IndexJson {
            data: dataset::data_ref(&crate::compat::READER),
            outdated: any,
            stacks: results
                .iter()
                .map(|(p, o)| IndexStackJson {
                    manifest: p.display().to_string(),
                    outdated: o,
                })
                .collect(),
        })
    };
    finish_report(global, !any, json, || {
        for (i, (path, o)) in results.iter().enumerate() {
            if i > 0 {
                println!();
            }
            print_index_human(path, o, global.quiet);
        }
    })
}

fn print_index_human(path: &std::path::Path, o: &IndexOutdated, quiet: bool) {
    let fitting = o.newer.iter().filter(|n| n.fits).count();
    println!(
        "{} ({}): {} newer {} on the index, {fitting} with a build for driver {} ({})",
        o.stack,
        path.display(),
        o.newer.len(),
        o.library,
        o.driver,
        o.driver_from
    );
    for n in &o.newer {
        let builds: Vec<String> = n
            .builds
            .iter()
            .map(|b| match (&b.min_driver, b.fits) {
                (_, true) => format!("CUDA {} fits", b.cuda),
                (Some(min), false) => format!("CUDA {} needs driver {min}", b.cuda),
                (None, false) => format!("CUDA {} (minimum driver not in the data)", b.cuda),
            })
            .collect();
        let builds = if builds.is_empty() {
            "CUDA builds unknown".to_string()
        } else {
            format!("{} (builds from the {})", builds.join(", "), n.builds_from)
        };
        let data = n
            .data_says
            .as_ref()
            .map(|d| format!("  [{d}]"))
            .unwrap_or_default();
        println!("  library  {} → {}  {builds}{data}", o.pinned, n.version);
    }
    print_toolkits(o);
    if !quiet {
        if !o.only_in_data.is_empty() {
            println!(
                "  note: in the release data but on no index asked: {}",
                o.only_in_data.join(", ")
            );
        }
        let mut asked = vec![format!("{} (default)", o.indexes.default)];
        asked.extend(o.indexes.library.iter().cloned());
        println!("  note: asked {}", asked.join(", "));
    }
}

/// The newest toolkit update that fits the driver, and the newest of all when it does not.
fn print_toolkits(o: &IndexOutdated) {
    let newest = o.toolkits.last();
    let newest_fitting = o.toolkits.iter().rev().find(|t| t.fits);
    if let Some(t) = newest_fitting {
        println!(
            "  toolkit  {} → {}  fits driver {} (needs {}; cuda-toolkit on the index)",
            o.toolkit,
            t.version,
            o.driver,
            t.min_driver.as_deref().unwrap_or("?")
        );
    }
    if let Some(t) = newest.filter(|t| !t.fits) {
        let need = match (&t.min_driver, &t.data_says) {
            (_, Some(d)) => d.clone(),
            (Some(min), None) => format!("needs driver {min}"),
            (None, None) => "minimum driver unknown".to_string(),
        };
        println!(
            "  toolkit  {} → {}  {need} (newest cuda-toolkit on the index)",
            o.toolkit, t.version
        );
    }
}
