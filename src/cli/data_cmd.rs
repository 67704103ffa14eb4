//! `stackpin data pack | update | show | reset`: the release data set in use, and how a newer
//! one is packed, published and installed over the built-in one.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::archive;
use crate::dataset::{self, DataRef, DataSet, DatasetError, Details, Source};
use crate::manifest::validate::{is_loopback_http, is_sha256};

pub const EXAMPLES: &str = "\
Examples:
  stackpin data show
  stackpin data pack data/ -o stackpin-data-2026-12-20.json
  stackpin data update --from https://lab-mirror/stackpin-data.json --sha256 <HEX>
  stackpin data update --from stackpin-data-2026-12-20.json
  stackpin data reset

The data folder is STACKPIN_DATA_DIR, else $XDG_DATA_HOME/stackpin (~/.local/share/stackpin) on
Linux and %LOCALAPPDATA%\\stackpin on Windows. Exit 1 when a set is refused (wrong sha256, invalid,
older than the one in use); the set in use is then unchanged.";

#[derive(Debug, clap::Args)]
pub struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum DataCommand {
    /// Validate a folder of tables with the binary's loader and pack it into one file.
    Pack(PackArgs),
    /// Fetch or read a packed set, verify it, and install it over the built-in set.
    Update(UpdateArgs),
    /// The set in use: built-in or updated, its date, sha256, sources and rows.
    Show,
    /// Remove the updated set: back to the built-in one.
    Reset,
}

#[derive(Debug, clap::Args)]
pub struct PackArgs {
    /// The folder of `*.yaml` tables (a copy of the repository's `data/`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The packed file to write.
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// An https URL (plain http only to a loopback host or with --sha256), or a file.
    #[arg(long, value_name = "URL|FILE")]
    pub from: String,
    /// The sha256 the packed file must have (as `data pack` printed it).
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// Install a set older than the one in use.
    #[arg(long)]
    pub allow_older: bool,
    #[command(flatten)]
    pub retry: super::fetch_args::RetryBaseArg,
}

pub fn run(args: &DataArgs, global: &GlobalArgs) -> CmdResult {
    match &args.command {
        DataCommand::Pack(a) => run_pack(a, global),
        DataCommand::Update(a) => run_update(a, global),
        DataCommand::Show => run_show(global),
        DataCommand::Reset => run_reset(global),
    }
}

/// Exit 1 for a set that is wrong, 2 for a file or folder that cannot be read, 3 for one that
/// cannot be written.
fn failure(e: DatasetError, writing: bool) -> Failure {
    Failure::from(if e.is_problem() {
        CliError::found(e)
    } else if writing {
        CliError::broke(e)
    } else {
        CliError::unusable(e)
    })
}

fn data_dir() -> Result<PathBuf, Failure> {
    dataset::data_dir(&|key| std::env::var_os(key))
        .ok_or_else(|| CliError::unusable(DatasetError::NoDataDir).into())
}

#[derive(Serialize)]
struct PackJson<'a> {
    file: String,
    schema: u32,
    read_on: &'a str,
    sha256: &'a str,
    tables: Vec<&'a str>,
}

fn run_pack(args: &PackArgs, global: &GlobalArgs) -> CmdResult {
    let set =
        dataset::pack_dir(&args.dir, &crate::compat::READER).map_err(|e| failure(e, false))?;
    crate::fsutil::write_atomic(&args.output, &set.packed()).map_err(|e| {
        CliError::broke(anyhow::Error::new(e).context(format!("writing {}", args.output.display())))
    })?;
    if global.json {
        print_json(&PackJson {
            file: args.output.display().to_string(),
            schema: set.schema,
            read_on: &set.read_on,
            sha256: set.sha256(),
            tables: set.table_names().collect(),
        })?;
    } else if !global.quiet {
        println!(
            "packed {} tables from {} (read on {}, schema {}) into {}",
            set.table_names().count(),
            args.dir.display(),
            set.read_on,
            set.schema,
            args.output.display()
        );
        println!("sha256 {}", set.sha256());
        println!(
            "publish it (the lab mirror serves it too), then on each workstation:\n  stackpin data update --from <URL> --sha256 {}",
            set.sha256()
        );
    }
    Ok(Exit::Ok)
}

/// Notes (retries) go to stderr; a data set is too small for a bar.
struct Notes {
    show: bool,
}

impl archive::Progress for Notes {
    fn started(&self, _: &str, _: Option<u64>) {}
    fn advanced(&self, _: &str, _: u64) {}
    fn finished(&self, _: &str) {}
    fn note(&self, text: &str) {
        if self.show {
            let _ = writeln!(std::io::stderr().lock(), "note: {text}");
        }
    }
}

/// The most a release data set may be: the packed set is well under a megabyte.
const DATA_SET_CAP: u64 = 16 * 1024 * 1024;

/// Reads `--from`: a URL through the archive's download machinery, or a file.
fn read_source(args: &UpdateArgs, dir: &Path, global: &GlobalArgs) -> Result<Vec<u8>, Failure> {
    let lower = args.from.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        if lower.contains("://") {
            return Err(Failure::from(CliError::Usage(format!(
                "--from `{}`: only https URLs (or plain http to a loopback host or with --sha256) and files are read",
                args.from
            ))));
        }
        return crate::fsutil::read_bytes_capped(Path::new(&args.from), DATA_SET_CAP).map_err(
            |e| {
                CliError::unusable(anyhow::Error::new(e).context(format!("reading {}", args.from)))
                    .into()
            },
        );
    }
    if lower.starts_with("http://") && args.sha256.is_none() && !is_loopback_http(&lower) {
        return Err(Failure::from(CliError::Usage(format!(
            "--from `{}` is plain http and no --sha256 is given, so nothing could prove the set is intact; use https, or pass --sha256",
            args.from
        ))));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::broke(anyhow::Error::new(e).context(format!("creating {}", dir.display())))
    })?;
    // A partial left by another URL would be continued as if it were this one: start clean.
    let partial = dir.join(".release-data.download.partial");
    let _ = std::fs::remove_file(&partial);
    let retry = args.retry.policy();
    let notes = Notes {
        show: !global.quiet && !global.json,
    };
    let result = archive::download_one(&args.from, &partial, retry, DATA_SET_CAP, &notes)
        .map_err(|e| CliError::broke(e).into())
        .and_then(|_| {
            std::fs::read(&partial).map_err(|e| {
                CliError::broke(
                    anyhow::Error::new(e).context(format!("reading {}", partial.display())),
                )
                .into()
            })
        });
    let _ = std::fs::remove_file(&partial);
    result
}

#[derive(Serialize)]
struct UpdateJson<'a> {
    installed: bool,
    data: DataRef,
    previous: DataRef,
    from: &'a str,
    file: String,
}

fn run_update(args: &UpdateArgs, global: &GlobalArgs) -> CmdResult {
    if let Some(hex) = &args.sha256
        && !is_sha256(hex)
    {
        return Err(Failure::from(CliError::Usage(format!(
            "--sha256 `{hex}` is not 64 hex digits"
        ))));
    }
    let dir = data_dir()?;
    let bytes = read_source(args, &dir, global)?;
    let current = dataset::in_use(&crate::compat::READER);
    let update = dataset::Update {
        bytes: &bytes,
        from: &args.from,
        expected_sha256: args.sha256.as_deref(),
        current: current.set,
        allow_older: args.allow_older,
    };
    let (set, installed) =
        dataset::install(&dir, &update, &crate::compat::READER).map_err(|e| failure(e, true))?;
    let previous = DataRef {
        read_on: current.set.read_on.clone(),
        sha256: current.set.sha256().to_string(),
        source: current.source_word(),
    };
    if global.json {
        print_json(&UpdateJson {
            installed: true,
            data: DataRef {
                read_on: set.read_on.clone(),
                sha256: set.sha256().to_string(),
                source: "updated",
            },
            previous,
            from: &args.from,
            file: installed.file.display().to_string(),
        })?;
    } else if !global.quiet {
        println!(
            "installed the release data set of {} (sha256 {}) into {}",
            set.read_on,
            set.sha256(),
            installed.file.display()
        );
        println!(
            "  was: the {} set of {} (sha256 {})",
            previous.source, previous.read_on, previous.sha256
        );
        if set.read_on < dataset::built_in().read_on {
            println!(
                "  note: it is older than this binary's built-in set ({}); it is used because of --allow-older",
                dataset::built_in().read_on
            );
        }
    }
    Ok(Exit::Ok)
}

#[derive(Serialize)]
struct ShowJson<'a> {
    data: DataRef,
    schema: u32,
    dir: Option<String>,
    file: Option<String>,
    from: Option<&'a str>,
    installed_at: Option<&'a str>,
    /// Why an updated set in the data folder is not used.
    ignored: Option<&'a str>,
    built_in: DataRef,
    #[serde(flatten)]
    details: &'a Details,
}

fn built_in_ref() -> DataRef {
    let b = dataset::built_in();
    DataRef {
        read_on: b.read_on.clone(),
        sha256: b.sha256().to_string(),
        source: "built-in",
    }
}

fn run_show(global: &GlobalArgs) -> CmdResult {
    let in_use = dataset::in_use(&crate::compat::READER);
    let set: &DataSet = in_use.set;
    let installed = match &in_use.source {
        Source::Updated(i) => Some(i),
        Source::BuiltIn => None,
    };
    if global.json {
        return print_json(&ShowJson {
            data: dataset::data_ref(&crate::compat::READER),
            schema: set.schema,
            dir: in_use.dir.as_ref().map(|d| d.display().to_string()),
            file: installed.map(|i| i.file.display().to_string()),
            from: installed.and_then(|i| i.from.as_deref()),
            installed_at: installed.and_then(|i| i.installed_at.as_deref()),
            ignored: in_use.ignored.as_deref(),
            built_in: built_in_ref(),
            details: set.details(),
        })
        .map(|()| Exit::Ok);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "release data in use: the {} set of {} (schema {})",
        in_use.source_word(),
        set.read_on,
        set.schema
    );
    let _ = writeln!(out, "  sha256    {}", set.sha256());
    if let Some(i) = installed {
        let from = i.from.as_deref().unwrap_or("unknown");
        let at = i
            .installed_at
            .as_deref()
            .map_or("unknown".to_string(), super::term::timestamp_text);
        let _ = writeln!(
            out,
            "  file      {} (from {from}, installed {at})",
            i.file.display()
        );
        let b = dataset::built_in();
        let _ = writeln!(
            out,
            "  built-in  {} (sha256 {}); `stackpin data reset` goes back to it",
            b.read_on,
            b.sha256()
        );
    } else if let Some(dir) = &in_use.dir {
        let _ = writeln!(out, "  data dir  {} (no updated set in use)", dir.display());
    }
    if let Some(why) = &in_use.ignored {
        let _ = writeln!(out, "  ignored   {why}");
    }
    let details = set.details();
    for (i, (name, info)) in details.tables.iter().enumerate() {
        let label = if i == 0 { "tables" } else { "" };
        let _ = writeln!(
            out,
            "  {label:<9} {name:<18} read on {}, {} rows",
            info.read_on, info.rows
        );
    }
    for (i, source) in details.sources.iter().enumerate() {
        let label = if i == 0 { "sources" } else { "" };
        let _ = writeln!(out, "  {label:<9} {}", super::term::shown(source));
    }
    // `write!` instead of `print!`: a closed pipe (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(Exit::Ok)
}

#[derive(Serialize)]
struct ResetJson {
    removed: bool,
    data: DataRef,
}

fn run_reset(global: &GlobalArgs) -> CmdResult {
    let dir = data_dir()?;
    let removed = dataset::reset(&dir).map_err(|e| failure(e, true))?;
    if global.json {
        print_json(&ResetJson {
            removed,
            data: built_in_ref(),
        })?;
    } else if !global.quiet {
        let b = dataset::built_in();
        if removed {
            println!(
                "removed the updated set from {}; using the built-in set of {} (sha256 {})",
                dir.display(),
                b.read_on,
                b.sha256()
            );
        } else {
            println!(
                "no updated set in {}; already using the built-in set of {}",
                dir.display(),
                b.read_on
            );
        }
    }
    Ok(Exit::Ok)
}
