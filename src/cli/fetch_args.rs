//! The flags of `fetch`, shared with `up` (which fetches first) and turned into the archive's
//! [`FetchConfig`] in one place; and one fetch under the bars and Ctrl-C ([`fetch_stack`]),
//! shared by `fetch` and `repair --fetch` so neither command module calls the other.

use std::path::PathBuf;
use std::time::Duration;

use super::term::Bars;
use super::{CliError, Exit, Failure, GlobalArgs};
use crate::archive::{self, FetchConfig, FetchReport, RetryPolicy, Timeouts};
use crate::exit::ExitStatus;

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
    #[command(flatten)]
    pub retry: RetryBaseArg,
    /// The fetch host's Python that runs `pip download` for pip libraries.
    #[arg(
        long,
        default_value = "python3",
        env = "STACKPIN_PYTHON",
        value_name = "PROGRAM"
    )]
    pub python: String,
    /// The index uv's wheel (pinned in the release data) is downloaded from, for a
    /// `library.installer: uv` stack; pip's default index when not given. Never the library's
    /// indexes.
    #[arg(long, value_name = "URL", env = "STACKPIN_UV_INDEX_URL")]
    pub uv_index_url: Option<String>,
}

/// The hidden knob of every command that downloads (`fetch`, `up`, `data update`): the wait
/// before the first retry, which the tests set to 0.
#[derive(Debug, clap::Args)]
pub struct RetryBaseArg {
    /// Milliseconds before the first retry of a download, doubled each time (tests set 0).
    #[arg(
        long,
        default_value_t = 500,
        env = "STACKPIN_RETRY_BASE_MS",
        hide = true
    )]
    pub retry_base_ms: u64,
}

impl RetryBaseArg {
    /// The default retry policy with this first wait.
    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(self.retry_base_ms),
            ..RetryPolicy::default()
        }
    }
}

impl FetchArgs {
    /// The archive's knobs from the flags; `manifest_mirror` is the manifest's `mirror:`, used
    /// when `--mirror` is not given.
    pub fn config(&self, manifest_mirror: Option<&str>) -> Result<FetchConfig, Failure> {
        if self.jobs == 0 {
            return Err(Failure::from(CliError::Usage(
                "--jobs 0: give at least 1".to_string(),
            )));
        }
        Ok(FetchConfig {
            jobs: self.jobs,
            locked: self.locked,
            mirror: self
                .mirror
                .clone()
                .or_else(|| manifest_mirror.map(str::to_string)),
            timeouts: Timeouts {
                connect: Duration::from_secs(self.connect_timeout.max(1)),
                stall: Duration::from_secs(self.stall_timeout.max(1)),
            },
            retry: RetryPolicy {
                attempts: self.attempts.max(1),
                ..self.retry.policy()
            },
            python: self.python.clone(),
            uv_index_url: self.uv_index_url.clone(),
        })
    }
}

/// A fetch that ran to its end: what it did file by file, and the status it ends on.
pub struct Fetched {
    pub report: FetchReport,
    pub exit: Exit,
}

/// Fetches the stack of `args.manifest` (which must pass check) into the archive, drawing bars
/// unless `global` is quiet, and prints each failed file's error; the caller prints the rest.
pub fn fetch_stack(args: &FetchArgs, global: &GlobalArgs) -> Result<Fetched, Failure> {
    let manifest = super::valid_manifest::require_valid(&args.manifest)?;
    let text = crate::fsutil::read_text(&args.manifest).map_err(|e| {
        CliError::unusable(
            anyhow::Error::new(e).context(format!("reading {}", args.manifest.display())),
        )
    })?;
    let config = args.config(manifest.mirror.as_deref())?;
    let bars = Bars::new(global);
    let archive = global.archive();
    let stack = archive.stack(&manifest.name);
    let report = bars.on_interrupt(stack.root(), || {
        archive::fetch(&manifest, &text, &archive, &config, &bars)
    })?;
    bars.clear();
    for error in &report.errors {
        super::print_error_chain(error);
    }
    if report.disk_full() {
        super::print_fix(&super::error::full_disk_advice(
            super::error::Elsewhere::Archive,
        ));
    }
    // Each failed file says its own status; the one to act on first ends the run.
    let exit = Exit::worst(report.errors.iter().map(ExitStatus::exit));
    Ok(Fetched { report, exit })
}
