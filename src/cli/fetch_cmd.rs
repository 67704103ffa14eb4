//! `stackpin fetch MANIFEST`: archives a stack's installers (drawn by [`super::term::Bars`]).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use serde::Serialize;

use super::term::{Bars, failure, say, size_text};
use super::{CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::archive::{
    self, ArchiveError, FetchConfig, FetchedFile, FileOutcome, RetryPolicy, Timeouts,
};

pub const EXAMPLES: &str = "\
Examples:
  stackpin fetch manifests/torch-2.5.1-cu124-linux.yaml
  stackpin fetch my-stack.yaml --archive /srv/installers --jobs 4
  stackpin fetch my-stack.yaml --locked --mirror http://lab-mirror:8000

Exit 0 when every file is archived and verified, 1 on a checksum mismatch or a --locked refusal,
2 when the manifest cannot be used, 3 when a download or pip failed (run fetch again: it resumes).";

#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The manifest whose installers to archive.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// Refuse any file whose sha256 is pinned in neither the manifest nor stack.lock.
    #[arg(long)]
    pub locked: bool,
    /// Downloads at once.
    #[arg(long, short, default_value_t = 3, value_name = "N")]
    pub jobs: usize,
    /// A lab mirror (a static server of an archive folder) tried before each original URL.
    #[arg(long, value_name = "URL")]
    pub mirror: Option<String>,
    /// Seconds a connection may take to open.
    #[arg(
        long,
        default_value_t = 15,
        env = "STACKPIN_CONNECT_SECS",
        value_name = "SECS"
    )]
    pub connect_timeout: u64,
    /// Seconds a server may send nothing before the attempt is dropped and retried.
    #[arg(
        long,
        default_value_t = 30,
        env = "STACKPIN_STALL_SECS",
        value_name = "SECS"
    )]
    pub stall_timeout: u64,
    /// Attempts per file for transient failures (connect, timeout, 5xx, 429).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub attempts: u32,
    /// Milliseconds before the first retry, doubled each time (tests set 0).
    #[arg(
        long,
        default_value_t = 500,
        env = "STACKPIN_RETRY_BASE_MS",
        hide = true
    )]
    pub retry_base_ms: u64,
    /// The fetch host's Python that runs `pip download` for pip libraries.
    #[arg(
        long,
        default_value = "python3",
        env = "STACKPIN_PYTHON",
        value_name = "PROGRAM"
    )]
    pub python: String,
}

#[derive(Serialize)]
struct JsonFetch<'a> {
    ok: bool,
    stack: String,
    files: &'a [FetchedFile],
    errors: Vec<String>,
}

pub fn run(args: &FetchArgs, global: &GlobalArgs) -> CmdResult {
    let manifest = super::check_cmd::require_valid(&args.manifest)?;
    let text = std::fs::read_to_string(&args.manifest).map_err(|e| {
        Failure::input(
            anyhow::Error::new(e).context(format!("reading {}", args.manifest.display())),
        )
    })?;
    if manifest.library.pip.is_some() && manifest.library.python_version.is_none() {
        return Err(Failure::input(anyhow!(
            "{}: library.python_version is needed to fetch pip libraries (pip must know which Python's wheels to download); add e.g. `python_version: \"3.12\"`",
            args.manifest.display()
        )));
    }
    if args.jobs == 0 {
        return Err(Failure::input(anyhow!("--jobs 0: give at least 1")));
    }
    let config = FetchConfig {
        jobs: args.jobs,
        locked: args.locked,
        mirror: args.mirror.clone().or_else(|| manifest.mirror.clone()),
        timeouts: Timeouts {
            connect: Duration::from_secs(args.connect_timeout.max(1)),
            stall: Duration::from_secs(args.stall_timeout.max(1)),
        },
        retry: RetryPolicy {
            attempts: args.attempts.max(1),
            base: Duration::from_millis(args.retry_base_ms),
            ..RetryPolicy::default()
        },
        python: args.python.clone(),
    };
    let bars = Bars::new(global);
    let archive_dir = global.archive_dir();
    let stack = archive::StackDir::new(&archive_dir, &manifest.name);
    let report = bars
        .on_interrupt(stack.root(), || {
            archive::fetch(&manifest, &text, &archive_dir, &config, &bars)
        })
        .map_err(failure)?;
    bars.clear();
    for error in &report.errors {
        super::print_error(&anyhow!("{error}"));
    }
    let exit = if report.errors.is_empty() {
        Exit::Ok
    } else if report.errors.iter().any(ArchiveError::is_problem) {
        Exit::Problem
    } else {
        Exit::External
    };
    if global.json {
        print_json(&JsonFetch {
            ok: exit == Exit::Ok,
            stack: report.stack.display().to_string(),
            files: &report.files,
            errors: report.errors.iter().map(|e| e.to_string()).collect(),
        })?;
    } else if !global.quiet {
        for f in &report.files {
            let what = match f.outcome {
                FileOutcome::AlreadyArchived => "archived",
                FileOutcome::Downloaded => "downloaded",
                FileOutcome::Mirror => "mirror",
                FileOutcome::Repaired => "repaired",
            };
            say(
                &format!(
                    "{what:<11} {}/{} ({}) sha256 {}",
                    f.layer,
                    f.file,
                    size_text(f.size),
                    f.sha256
                ),
                "            ",
            );
        }
        match exit {
            Exit::Ok => say(
                &format!(
                    "{}: {} files archived and verified; next: stackpin audit {}",
                    report.stack.display(),
                    report.files.len(),
                    args.manifest.display()
                ),
                "  ",
            ),
            _ => say(
                &format!(
                    "{}: {} files failed; run `stackpin fetch {}` again to resume",
                    report.stack.display(),
                    report.errors.len(),
                    args.manifest.display()
                ),
                "  ",
            ),
        }
    }
    Ok(exit)
}
