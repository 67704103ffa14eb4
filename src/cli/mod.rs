//! The command line: clap definitions, human vs `--json` output, and exit codes.
//!
//! Business rules live in the library modules; each `*_cmd` here turns arguments into a call and
//! the result into text or JSON. Exit codes (documented in README, defined in `crate::exit`):
//! 0 ok · 1 the check found a problem · 2 usage or input error · 3 an external step failed.
//! Errors that know their code (`crate::exit::ExitStatus`) carry it through `?`; a report's
//! verdict (0 or 1) is chosen in [`finish_report`]. No command module imports another: what two
//! share lives in a non-command module (`term`, `chain`, `fetch_args`, `valid_manifest`,
//! `consent`). With `--json` every exit path prints exactly one document on stdout, built here
//! at the edge.

mod audit_cmd;
mod budget_cmd;
mod bundle_cmd;
mod chain;
mod check_cmd;
mod completions_cmd;
mod consent;
mod data_cmd;
mod defaults;
mod diagnose_cmd;
mod doctor_cmd;
mod error;
mod fetch_args;
mod fetch_cmd;
pub mod hints;
mod host_cmd;
mod install_cmd;
mod measure_cmd;
mod outdated_cmd;
mod pin_cmd;
mod prove_cmd;
mod record_cmd;
mod report_cmd;
mod status_cmd;
mod term;
mod valid_manifest;
mod vram_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use crate::exit::Exit;
use crate::exit::ExitStatus;
pub use error::CliError;

/// An error on its way out, with the exit status it maps to and, where known, the layer it
/// points at and the fix (the `--json` document's `error`).
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub error: anyhow::Error,
    pub layer: Option<String>,
    pub fix: Option<String>,
}

impl Failure {
    /// An error that knows its own exit status, layer and fix.
    pub fn from_error<E>(error: E) -> Self
    where
        E: ExitStatus + Send + Sync + 'static,
    {
        Self {
            exit: error.exit(),
            layer: error.layer(),
            fix: error.fix(),
            error: anyhow::Error::new(error),
        }
    }
}

/// `?` on an error that knows its exit status carries that status to the edge.
impl<E> From<E> for Failure
where
    E: ExitStatus + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        Self::from_error(error)
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
    /// The installer archive [default: /var/lib/stackpin as root, %ProgramData%\stackpin as
    /// Administrator, ./installers otherwise]
    #[arg(long, global = true, env = "STACKPIN_ARCHIVE", value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// Colour for errors, warnings and verdicts: auto (a terminal, unless NO_COLOR is set),
    /// always, never.
    #[arg(long, global = true, value_enum, default_value_t, value_name = "WHEN")]
    pub color: term::ColorWhen,
}

impl GlobalArgs {
    /// The archive: `--archive` or `STACKPIN_ARCHIVE`, else a fixed per-machine folder for
    /// root/Administrator and `./installers` for anyone else; there yet or not.
    pub fn archive(&self) -> crate::archive::Archive {
        crate::archive::Archive::at(
            self.archive
                .clone()
                .unwrap_or_else(defaults::default_archive),
        )
    }

    /// The archive that must already be there: a missing folder is the user's input (exit 2).
    pub fn open_archive(&self) -> Result<crate::archive::Archive, crate::archive::ArchiveError> {
        crate::archive::Archive::open(self.archive().root())
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
    Fetch(fetch_args::FetchArgs),
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
    /// Read-only: it runs no installer and no `verify:` command from the manifest (it shows
    /// them); `--probe` runs the `verify:` commands.
    #[command(after_help = install_cmd::PLAN_EXAMPLES)]
    Plan(install_cmd::PlanArgs),
    /// Install driver → toolkit → library from the archive, each verified on the host.
    #[command(after_help = install_cmd::INSTALL_EXAMPLES)]
    Install(chain::InstallArgs),
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
    /// The lab at a glance: one self-contained HTML page of every host's stacks, proofs,
    /// memory and archive trust, from the archive or from records collected from many hosts.
    #[command(after_help = report_cmd::EXAMPLES)]
    Report(report_cmd::ReportArgs),
    /// Run the command saved by `install --reboot` (what the Windows boot task runs).
    #[command(hide = true)]
    Resume(install_cmd::ResumeArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    #[command(after_help = completions_cmd::COMPLETIONS_EXAMPLES)]
    Completions(completions_cmd::CompletionsArgs),
    /// Print stackpin's man page (roff), generated from the same definitions as --help.
    #[command(after_help = completions_cmd::MAN_EXAMPLES)]
    Man(completions_cmd::ManArgs),
    /// The release data in use, and a newer set: `data pack`, `update`, `show`, `reset`.
    #[command(after_help = data_cmd::EXAMPLES)]
    Data(data_cmd::DataArgs),
    /// What is newer in the release data than a stack's pins, and what moving would mean.
    #[command(after_help = outdated_cmd::EXAMPLES)]
    Outdated(outdated_cmd::OutdatedArgs),
}

impl Command {
    /// The commands that can stop for a reboot: their `--json` document always carries
    /// `reboot_required`, on failure paths too (false there).
    fn can_stop_for_reboot(&self) -> bool {
        matches!(
            self,
            Command::Install(_) | Command::Up(_) | Command::Repair(_)
        )
    }

    /// The manifest the command was given, for the commands that take one.
    fn manifest(&self) -> Option<&std::path::Path> {
        let path = match self {
            Command::Check(a) if a.manifests.len() == 1 => &a.manifests[0],
            Command::Fetch(a) => &a.manifest,
            Command::Audit(a) => a.manifest.as_ref()?,
            Command::Bundle(a) => &a.manifest,
            Command::Plan(a) => &a.manifest,
            Command::Install(a) => &a.manifest,
            Command::Prove(a) => &a.manifest,
            Command::Up(a) => &a.fetch.manifest,
            Command::Doctor(a) => a.manifest.as_ref()?,
            Command::Repair(a) => &a.manifest,
            Command::Status(a) => a.manifest.as_ref()?,
            Command::Outdated(a) => a.manifest.as_ref()?,
            Command::Measure(a) => a.manifest.as_ref()?,
            Command::Record(a) => match &a.command {
                record_cmd::RecordCommand::Export(e) => &e.manifest,
            },
            _ => return None,
        };
        Some(path)
    }

    /// `--gpu N`, for the commands that take it.
    fn gpu(&self) -> Option<u32> {
        match self {
            Command::Host(a) => a.gpu,
            Command::Measure(a) => a.gpu,
            Command::Plan(a) => a.gpu,
            Command::Install(a) => a.gpu,
            Command::Prove(a) => a.options.gpu,
            Command::Up(a) => a.prove.gpu,
            Command::Doctor(a) => a.gpu,
            Command::Repair(a) => a.gpu,
            _ => None,
        }
    }
}

/// One contract for `--gpu` (issue 20): a GPU that is not there is an input error (exit 2) in
/// every command, before the command reads or runs anything.
fn require_gpu_flag(command: &Command) -> Result<(), Failure> {
    crate::host::require_gpu(&crate::host::RealSystem, command.gpu())?;
    Ok(())
}

/// Parses the command line, runs the command, prints errors once and returns the exit code.
pub fn main() -> ExitCode {
    term::closed_output::end_cleanly_when_output_fails();
    let cli = parse_cli();
    JSON_RUN.store(cli.global.json, std::sync::atomic::Ordering::SeqCst);
    term::init_color(cli.global.color);
    hints::set_current(hints::Invocation {
        manifest: cli.command.manifest().map(Into::into),
        archive: cli.global.archive.clone(),
        gpu: cli.command.gpu(),
        up: matches!(cli.command, Command::Up(_)),
    });
    let result = require_gpu_flag(&cli.command).and_then(|()| match &cli.command {
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
        Command::Report(args) => report_cmd::run(args, &cli.global),
        Command::Resume(args) => install_cmd::run_resume(args),
        Command::Completions(args) => completions_cmd::run_completions(args),
        Command::Man(args) => completions_cmd::run_man(args),
        Command::Data(args) => data_cmd::run(args, &cli.global),
        Command::Outdated(args) => outdated_cmd::run(args, &cli.global),
    });
    let mut result = result;
    let exit = match &mut result {
        Ok(exit) => *exit,
        Err(failure) => {
            print_error(&failure.error);
            if let Some(fix) = error::full_disk_fix(failure, &cli.command) {
                print_fix(&fix);
                failure.fix = Some(fix);
            }
            failure.exit
        }
    };
    if cli.global.json {
        if exit != Exit::Ok && result.is_ok() {
            // The command chose a failing status beside its report: say so for a human too.
            let _ = writeln!(
                std::io::stderr().lock(),
                "error: exit {}: {}",
                exit.code(),
                exit.meaning()
            );
        }
        print_document(
            exit,
            result.as_ref().err(),
            cli.command.can_stop_for_reboot(),
        );
    }
    exit.into()
}

/// The one JSON document a `--json` run prints, whatever the exit path: what the command
/// reported (kept by [`print_json`]) with `schema_version`, `ok`, `exit_code`, on failure
/// `error`, and for the commands that can stop for a reboot `reboot_required` beside it
/// (docs/json.md).
static DOCUMENT: std::sync::Mutex<Option<serde_json::Value>> = std::sync::Mutex::new(None);

/// The version of the `--json` documents' shape; a change that renames or removes a field
/// bumps it, so scripts (the Ansible role) can tell.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Rounds every non-integer number to 3 decimals: `19660.800000000003` is arithmetic noise, not
/// a fact (MiB, seconds and shares need no more).
fn round_floats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            if let Some(rounded) = n
                .as_f64()
                .map(|f| (f * 1000.0).round() / 1000.0)
                .and_then(serde_json::Number::from_f64)
            {
                *n = rounded;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(round_floats),
        serde_json::Value::Object(map) => map.values_mut().for_each(round_floats),
        _ => {}
    }
}

/// Builds the final document from the command's report (if any) and how the run ended.
pub fn envelope(
    report: Option<serde_json::Value>,
    exit: Exit,
    failure: Option<&Failure>,
) -> serde_json::Value {
    let mut report = report;
    if let Some(value) = report.as_mut() {
        round_floats(value);
        hints::complete_value(value);
    }
    let mut doc = match report {
        Some(serde_json::Value::Object(map)) => map,
        Some(other) => {
            let mut map = serde_json::Map::new();
            map.insert("report".to_string(), other);
            map
        }
        None => serde_json::Map::new(),
    };
    doc.insert(
        "schema_version".to_string(),
        serde_json::Value::from(JSON_SCHEMA_VERSION),
    );
    doc.insert("ok".to_string(), serde_json::Value::Bool(exit == Exit::Ok));
    doc.insert(
        "exit_code".to_string(),
        serde_json::Value::from(exit.code()),
    );
    if let Some(f) = failure {
        let mut error = serde_json::Map::new();
        let message = with_causes(f.error.as_ref());
        error.insert(
            "message".to_string(),
            serde_json::Value::from(hints::complete(&message)),
        );
        if let Some(layer) = &f.layer {
            error.insert("layer".to_string(), serde_json::Value::from(layer.clone()));
        }
        if let Some(fix) = &f.fix {
            error.insert(
                "fix".to_string(),
                serde_json::Value::from(hints::complete(fix)),
            );
        }
        doc.insert("error".to_string(), serde_json::Value::Object(error));
    } else if exit != Exit::Ok && !doc.contains_key("error") {
        // The command reported its findings and chose the exit status itself (a check found a
        // problem): the document still says, in one place, that the run failed and why.
        doc.insert(
            "error".to_string(),
            serde_json::json!({ "message": exit.meaning() }),
        );
    }
    serde_json::Value::Object(doc)
}

/// Whether this run prints one JSON document (`--json`), for the paths that end the process
/// from a signal's watcher rather than through [`main`]'s return.
static JSON_RUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ends the process on an interruption (Ctrl-C, SIGTERM) that stopped the work where it stood:
/// `message` on stderr and, under `--json`, in the one document on stdout, exit 3.
pub(in crate::cli) fn exit_interrupted(message: String) -> ! {
    let exit = Exit::External;
    let failure = Failure {
        exit,
        error: anyhow::anyhow!(message),
        layer: None,
        fix: None,
    };
    print_error(&failure.error);
    if JSON_RUN.load(std::sync::atomic::Ordering::SeqCst) {
        print_document(exit, Some(&failure), false);
    }
    std::process::exit(i32::from(exit.code()))
}

fn print_document(exit: Exit, failure: Option<&Failure>, can_stop_for_reboot: bool) {
    let report = DOCUMENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    let mut doc = envelope(report, exit, failure);
    if can_stop_for_reboot && let serde_json::Value::Object(map) = &mut doc {
        // A run that ended before the chain reported (bad input, a failed download) did not
        // stop for a reboot; scripts read the key without checking that it is there.
        map.entry("reboot_required")
            .or_insert(serde_json::Value::Bool(false));
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_string());
    // `writeln!` instead of `println!`: a closed pipe (`| head`) is not worth a panic.
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Parses the command line; `--version` also names the release data in use (looked up only
/// when asked for, so other commands do not pay for it).
fn parse_cli() -> Cli {
    let asks_version = std::env::args_os().any(|a| a == "--version" || a == "-V");
    if !asks_version {
        let matches = with_examples_for_width(Cli::command()).get_matches();
        return Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    }
    let in_use = crate::dataset::in_use(&crate::compat::READER);
    let version = format!(
        "{} (release data of {}, {})",
        env!("CARGO_PKG_VERSION"),
        in_use.set.read_on,
        in_use.source_word()
    );
    // clap takes a `'static` version string; this runs once per process.
    let version: &'static str = Box::leak(version.into_boxed_str());
    let matches = with_examples_for_width(Cli::command().version(version)).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Every subcommand's examples broken to the terminal's width (see
/// [`term::examples_for_width`]), so clap's reflow never splits a command mid-line.
fn with_examples_for_width(cmd: clap::Command) -> clap::Command {
    // clap wraps help at the terminal width, at most 100 columns.
    let width = term::width().min(100);
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let mut cmd = match cmd.get_after_help().map(ToString::to_string) {
        Some(help) => cmd.after_help(term::examples_for_width(&help, width)),
        None => cmd,
    };
    for name in names {
        cmd = cmd.mut_subcommand(name, |sub| {
            match sub.get_after_help().map(ToString::to_string) {
                Some(help) => sub.after_help(term::examples_for_width(&help, width)),
                None => sub,
            }
        });
    }
    cmd
}

/// `error: …` then one `caused by: …` line per source, the house format.
pub fn print_error(error: &anyhow::Error) {
    print_error_chain(error.as_ref());
}

/// [`print_error`] for an error that is not (yet) an `anyhow::Error`: one of several a command
/// reports before it ends.
pub fn print_error_chain(error: &(dyn std::error::Error + 'static)) {
    let mut stderr = anstream::stderr().lock();
    let _ = writeln!(
        stderr,
        "{} {}",
        term::error_label(),
        hints::complete(&error.to_string())
    );
    let mut cause = error.source();
    while let Some(e) = cause {
        let _ = writeln!(stderr, "  caused by: {}", hints::complete(&e.to_string()));
        cause = e.source();
    }
}

/// An error and its causes on one line, as the `--json` documents write them.
pub(in crate::cli) fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": caused by: ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// The next step under an error, when the error's words do not hold it.
pub(in crate::cli) fn print_fix(fix: &str) {
    let _ = writeln!(
        anstream::stderr().lock(),
        "  what to do: {}",
        hints::complete(fix)
    );
}

/// Keeps a command's `--json` report; it is printed once, at the edge, as one document with
/// `ok` and `exit_code` beside it (a later report replaces an earlier one).
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), Failure> {
    let value = serde_json::to_value(value)
        .map_err(|e| CliError::broke(anyhow::Error::new(e).context("encoding JSON output")))?;
    *DOCUMENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(value);
    Ok(())
}

/// Ends a command on its report: `json` keeps the `--json` document (it calls [`print_json`]),
/// else `human` draws it; the status is the report's verdict, 0 when it found nothing and 1
/// when it found a problem (README's table), chosen here for every report-shaped command.
pub fn finish_report(
    global: &GlobalArgs,
    ok: bool,
    json: impl FnOnce() -> Result<(), Failure>,
    human: impl FnOnce(),
) -> CmdResult {
    if global.json {
        json()?;
    } else {
        human();
    }
    Ok(Exit::verdict(ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_carries_its_schema_version_and_no_float_noise() {
        let report = serde_json::json!({
            "line_mib": 19660.800000000003,
            "batches": [{"peak_gib": 2.4999999999999996, "batch": 64}],
        });
        let doc = envelope(Some(report), Exit::Ok, None);
        assert_eq!(doc["schema_version"], JSON_SCHEMA_VERSION);
        assert_eq!(doc["line_mib"], 19660.8);
        assert_eq!(doc["batches"][0]["peak_gib"], 2.5);
        assert_eq!(doc["batches"][0]["batch"], 64, "integers stay integers");
        assert_eq!(doc["ok"], true);
    }
}
