//! The command line: clap definitions, human vs `--json` output, and exit codes.
//!
//! Business rules live in the library modules; each `cmd_*` here turns arguments into a call and
//! the result into text or JSON. Exit codes (documented in README):
//! 0 ok · 1 the check found a problem · 2 usage or input error · 3 an external step failed.

mod audit_cmd;
mod budget_cmd;
mod bundle_cmd;
mod check_cmd;
mod data_cmd;
mod diagnose_cmd;
mod doctor_cmd;
mod fetch_cmd;
mod host_cmd;
mod install_cmd;
mod measure_cmd;
mod outdated_cmd;
mod pin_cmd;
mod prove_cmd;
mod record_cmd;
mod status_cmd;
mod vram_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Exit statuses shared by every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything checked out.
    Ok = 0,
    /// The tool ran fine and found a problem: drift, a corrupt file, incompatible pins.
    Problem = 1,
    /// The user's input could not be used: bad flags, unreadable or invalid files.
    Input = 2,
    /// Something outside stackpin failed: a download, an installer, the example.
    External = 3,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// An error on its way out, with the exit status it maps to.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub error: anyhow::Error,
}

impl Failure {
    /// The user's input was wrong (exit 2).
    pub fn input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Input,
            error: error.into(),
        }
    }

    /// A check found a problem (exit 1).
    pub fn problem(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Problem,
            error: error.into(),
        }
    }

    /// An external step failed (exit 3).
    pub fn external(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::External,
            error: error.into(),
        }
    }
}

/// What every command returns: the exit status to end with, or a failure to print.
pub type CmdResult = Result<Exit, Failure>;

const AFTER_HELP: &str = "\
Exit codes: 0 ok, 1 a check found a problem, 2 usage or input error, 3 an external step failed.

Examples:
  stackpin check manifests/torch-2.5.1-cu124-linux.yaml
  stackpin pin --library torch==2.5.1 --os linux -o my-stack.yaml";

/// Pin, archive, install and prove a deep-learning training stack.
#[derive(Debug, Parser)]
#[command(name = "stackpin", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts, before or after the subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Print one JSON document on stdout instead of human output.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bars and no informational lines; errors still go to stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// The installer archive (default ./installers).
    #[arg(long, global = true, env = "STACKPIN_ARCHIVE", value_name = "DIR")]
    pub archive: Option<PathBuf>,
}

impl GlobalArgs {
    /// The archive folder, `./installers` unless `--archive` or `STACKPIN_ARCHIVE` says otherwise.
    pub fn archive_dir(&self) -> PathBuf {
        self.archive
            .clone()
            .unwrap_or_else(|| PathBuf::from("installers"))
    }
}

// Parsed once per run; boxing the larger argument structs would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate manifests against stackpin's release-note data, without touching the host.
    #[command(after_help = check_cmd::EXAMPLES)]
    Check(check_cmd::CheckArgs),
    /// Write a complete, checked manifest for a library release from the release data.
    #[command(after_help = pin_cmd::EXAMPLES)]
    Pin(pin_cmd::PinArgs),
    /// Print what this machine has: OS, GPUs and driver, CUDA toolkits, the training library.
    #[command(after_help = host_cmd::EXAMPLES)]
    Host(host_cmd::HostArgs),
    /// Predict peak GPU memory per batch size from a measured peak, and the largest safe batch.
    #[command(after_help = vram_cmd::EXAMPLES)]
    Vram(vram_cmd::VramArgs),
    /// Inference memory budget: per-process fixed costs, models, merging, the card to plan for.
    #[command(after_help = budget_cmd::EXAMPLES)]
    Budget(budget_cmd::BudgetArgs),
    /// Any command's GPU memory per process: peak and after warm-up; `--baseline` for budget.
    #[command(after_help = measure_cmd::EXAMPLES)]
    Measure(measure_cmd::MeasureArgs),
    /// Records beside a trained model: `record export` writes the stack it came from.
    Record(record_cmd::RecordArgs),
    /// Name the layer, cause and fix of a failure log (example, installer, traceback).
    #[command(after_help = diagnose_cmd::EXAMPLES)]
    Diagnose(diagnose_cmd::DiagnoseArgs),
    /// Download every installer into the archive, verified, with a stack.lock.
    #[command(after_help = fetch_cmd::EXAMPLES)]
    Fetch(fetch_cmd::FetchArgs),
    /// Re-hash archived installers against stack.lock and report each file.
    #[command(after_help = audit_cmd::EXAMPLES)]
    Audit(audit_cmd::AuditArgs),
    /// Pack a stack's manifest, lock, installers and record into one zip.
    #[command(after_help = bundle_cmd::EXAMPLES)]
    Bundle(bundle_cmd::BundleArgs),
    /// Unpack a bundle into the archive (refusing unsafe entries) and audit it.
    #[command(after_help = bundle_cmd::EXAMPLES)]
    Unbundle(bundle_cmd::UnbundleArgs),
    /// Show, layer by layer, what the host has next to the pins and what install would run.
    #[command(after_help = install_cmd::PLAN_EXAMPLES)]
    Plan(install_cmd::PlanArgs),
    /// Install driver → toolkit → library from the archive, each verified on the host.
    #[command(after_help = install_cmd::INSTALL_EXAMPLES)]
    Install(install_cmd::InstallArgs),
    /// Run the bundled example at batch 64, measure peak GPU memory, write the proven-stack record.
    #[command(after_help = prove_cmd::PROVE_EXAMPLES)]
    Prove(prove_cmd::ProveArgs),
    /// fetch → install → prove, resumable across the reboot after the driver.
    #[command(after_help = prove_cmd::UP_EXAMPLES)]
    Up(prove_cmd::UpArgs),
    /// Check the host against the proven record before training: drift, archive, proof, VRAM.
    #[command(after_help = doctor_cmd::DOCTOR_EXAMPLES)]
    Doctor(doctor_cmd::DoctorArgs),
    /// Reinstall only the drifted layers from the archive, prove again, offer the guard.
    #[command(after_help = doctor_cmd::REPAIR_EXAMPLES)]
    Repair(doctor_cmd::RepairArgs),
    /// Summarise every stack on this host: lock, audit, install state, proven record.
    #[command(after_help = status_cmd::EXAMPLES)]
    Status(status_cmd::StatusArgs),
    /// The release data in use, and a newer set: `data pack`, `update`, `show`, `reset`.
    #[command(after_help = data_cmd::EXAMPLES)]
    Data(data_cmd::DataArgs),
    /// What is newer in the release data than a stack's pins, and what moving would mean.
    #[command(after_help = outdated_cmd::EXAMPLES)]
    Outdated(outdated_cmd::OutdatedArgs),
}

/// Parses the command line, runs the command, prints errors once and returns the exit code.
pub fn main() -> ExitCode {
    let cli = parse_cli();
    let result = match &cli.command {
        Command::Check(args) => check_cmd::run(args, &cli.global),
        Command::Pin(args) => pin_cmd::run(args, &cli.global),
        Command::Host(args) => host_cmd::run(args, &cli.global),
        Command::Vram(args) => vram_cmd::run(args, &cli.global),
        Command::Budget(args) => budget_cmd::run(args, &cli.global),
        Command::Measure(args) => measure_cmd::run(args, &cli.global),
        Command::Record(args) => record_cmd::run(args, &cli.global),
        Command::Diagnose(args) => diagnose_cmd::run(args, &cli.global),
        Command::Fetch(args) => fetch_cmd::run(args, &cli.global),
        Command::Audit(args) => audit_cmd::run(args, &cli.global),
        Command::Bundle(args) => bundle_cmd::run_bundle(args, &cli.global),
        Command::Unbundle(args) => bundle_cmd::run_unbundle(args, &cli.global),
        Command::Plan(args) => install_cmd::run_plan(args, &cli.global),
        Command::Install(args) => install_cmd::run(args, &cli.global),
        Command::Prove(args) => prove_cmd::run(args, &cli.global),
        Command::Up(args) => prove_cmd::run_up(args, &cli.global),
        Command::Doctor(args) => doctor_cmd::run_doctor(args, &cli.global),
        Command::Repair(args) => doctor_cmd::run_repair(args, &cli.global),
        Command::Status(args) => status_cmd::run(args, &cli.global),
        Command::Data(args) => data_cmd::run(args, &cli.global),
        Command::Outdated(args) => outdated_cmd::run(args, &cli.global),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(failure) => {
            print_error(&failure.error);
            failure.exit.into()
        }
    }
}

/// Parses the command line; `--version` also names the release data in use (looked up only
/// when asked for, so other commands do not pay for it).
fn parse_cli() -> Cli {
    let asks_version = std::env::args_os().any(|a| a == "--version" || a == "-V");
    if !asks_version {
        return Cli::parse();
    }
    let in_use = crate::dataset::in_use();
    let version = format!(
        "{} (release data of {}, {})",
        env!("CARGO_PKG_VERSION"),
        in_use.set.read_on,
        in_use.source_word()
    );
    // clap takes a `'static` version string; this runs once per process.
    let version: &'static str = Box::leak(version.into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// `error: …` then one `caused by: …` line per source, the house format.
pub fn print_error(error: &anyhow::Error) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "error: {error}");
    for cause in error.chain().skip(1) {
        let _ = writeln!(stderr, "  caused by: {cause}");
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::external(anyhow::Error::new(e).context("encoding JSON output")))?;
    // `writeln!` instead of `println!`: a closed pipe (`| head`) is not worth a panic.
    let _ = writeln!(std::io::stdout().lock(), "{text}");
    Ok(())
}
