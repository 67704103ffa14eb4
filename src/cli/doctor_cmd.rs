//! `stackpin doctor` and `stackpin repair`: the checks before training, the drift since the
//! stack was proven, and the repair from the archive with its guard.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::Parser;
use serde::Serialize;

use super::hints;
use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, finish_report, print_json};
use crate::archive::{Archive, StackDir};
use crate::doctor::guard::{self, Guard};
use crate::doctor::repair::{RepairContext, RepairError, RepairReport, repair};
use crate::doctor::seen::LastSeen;
use crate::doctor::{self, Examination, Status};
use crate::exit::ExitStatus;
use crate::host::RealSystem;
use crate::install::QuietReporter;
use crate::layers::live::LiveHost;
use crate::manifest::{self, Manifest};
use crate::os::Os;

pub const DOCTOR_EXAMPLES: &str = "\
Examples:
  stackpin doctor manifests/torch-2.5.1-cu124-linux.yaml
  stackpin doctor --all --json

Each check is pass, FAIL or unknown (unknown never fails). Exit 0 when nothing fails, 1 otherwise.
Drift names what changed since the stack was proven: \"driver 566.36 → 551.86\".";

pub const REPAIR_EXAMPLES: &str = "\
Examples:
  sudo stackpin repair manifests/torch-2.5.1-cu124-linux.yaml --yes
  sudo stackpin repair manifests/torch-2.5.1-cu124-windows.yaml --yes --apply-guard

Reinstalls only the drifted layers from the archive (never downloads unless --fetch), in order,
each verified; then proves the stack again and prints before → after. After a driver reinstall
that needs a reboot: reboot, then run the same command again.";

/// Arguments of `doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The stack's manifest.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub manifest: Option<PathBuf>,
    /// Every stack under the archive (each folder with a fetched manifest.yaml).
    #[arg(long)]
    pub all: bool,
    /// The GPU to check (index).
    #[arg(long)]
    pub gpu: Option<u32>,
}

/// Arguments of `repair`.
#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// The stack's manifest.
    pub manifest: PathBuf,
    /// Do not ask before reinstalling; required without a terminal or with --json (else exit 2).
    #[arg(long, short)]
    pub yes: bool,
    /// Fetch missing or corrupt installers first (repair never downloads otherwise).
    #[arg(long)]
    pub fetch: bool,
    /// Apply the guard against the driver being replaced again (needs root / Administrator).
    #[arg(long)]
    pub apply_guard: bool,
    /// The GPU to prove on (index).
    #[arg(long)]
    pub gpu: Option<u32>,
}

/// Reads and parses a manifest; release-note problems are left to the toolkit check.
fn read_manifest(path: &Path) -> Result<(Manifest, String), Failure> {
    let text = crate::fsutil::read_text(path).map_err(|source| {
        Failure::from(manifest::ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })
    })?;
    let m = manifest::parse(&text, path)?;
    Ok((m, text))
}

fn examine(m: &Manifest, text: &str, archive: &Archive, gpu: Option<u32>) -> Examination {
    let stack = archive.stack(&m.name);
    let pause_record =
        crate::install::windows_update::pause_record_beside(&super::defaults::machine_lock());
    doctor::examine(
        m,
        Some(text),
        &stack,
        &RealSystem,
        gpu,
        pause_record.as_deref(),
    )
}

/// `doctor --json`, one shape for MANIFEST and `--all` (as `status`): a single stack is the list
/// with one entry.
#[derive(Serialize)]
struct DoctorJson<'a> {
    archive: &'a Path,
    ok: bool,
    stacks: Vec<serde_json::Value>,
}

pub fn run_doctor(args: &DoctorArgs, global: &GlobalArgs) -> CmdResult {
    let archive = global.archive();
    let exams = match &args.manifest {
        Some(path) => {
            let (m, text) = read_manifest(path)?;
            vec![(path.clone(), examine(&m, &text, &archive, args.gpu))]
        }
        None => {
            // The stacks fetch wrote a manifest into: doctor reads the pins from it.
            let dirs: Vec<StackDir> = global
                .open_archive()?
                .stacks()?
                .into_iter()
                .filter(|s| s.manifest_path().is_file())
                .collect();
            if dirs.is_empty() {
                return Err(Failure::from(CliError::Usage(format!(
                    "no stacks under {}: run `stackpin fetch MANIFEST` first, or pass --archive",
                    archive.root().display()
                ))));
            }
            let mut exams = Vec::new();
            for dir in dirs {
                let (m, text) = read_manifest(&dir.manifest_path())?;
                exams.push((dir.manifest_path(), examine(&m, &text, &archive, args.gpu)));
            }
            exams
        }
    };
    // What doctor saw stays in each stack's folder (`doctor.yaml`) for `report` to show later;
    // a stack folder that refuses it costs a warning, never the verdict.
    let seen_at = crate::record::now_rfc3339();
    for (_, exam) in &exams {
        let seen = LastSeen::of(exam, seen_at.clone());
        if let Err(e) = seen.write(&archive.stack(&exam.stack)) {
            eprintln!("warning: {e}");
        }
    }
    // A layer left marked running by a stackpin that was stopped mid-step is in an unknown state.
    let interrupted: Vec<String> = exams
        .iter()
        .flat_map(|(_, e)| crate::status::interrupted(&archive.stack(&e.stack)))
        .collect();
    for line in &interrupted {
        eprintln!("interrupted: {line}");
    }
    let ok = exams.iter().all(|(_, e)| e.ok) && interrupted.is_empty();
    let json = || {
        // Each stack's fixes name its own manifest (`--all` walks several).
        let mut stacks = Vec::new();
        for (manifest, exam) in &exams {
            let mut value = serde_json::to_value(exam).map_err(|e| {
                CliError::broke(anyhow::Error::new(e).context("encoding JSON output"))
            })?;
            hints::for_stack(manifest, || hints::complete_value(&mut value));
            stacks.push(value);
        }
        print_json(&DoctorJson {
            archive: archive.root(),
            ok,
            stacks,
        })
    };
    finish_report(global, ok, json, || {
        for (i, (manifest, exam)) in exams.iter().enumerate() {
            if i > 0 {
                println!();
            }
            hints::for_stack(manifest, || print_examination(exam));
        }
    })
}

fn print_examination(exam: &Examination) {
    use super::term::{say, say_verdict};
    say(&format!("doctor: {} ({})", exam.stack, exam.os), "  ");
    for d in &exam.drift {
        say_verdict(&format!("  drift: {d}"), "    ", "drift");
    }
    if let Some(d) = &exam.windows_driver {
        say(
            &format!("  running driver: {} — {}", d.describe(), d.origin(None)),
            "    ",
        );
        say(
            &format!(
                "  guard (repair --apply-guard): {}",
                guard::WINDOWS_COVERAGE
            ),
            "    ",
        );
    }
    for c in &exam.checks {
        let status = c.status.as_str();
        say_verdict(
            &format!("  {status:<8} {}: {}", c.check.question(), c.found),
            "           ",
            status,
        );
        if let Some(fix) = &c.fix {
            say(&format!("           fix: {fix}"), "                ");
        }
    }
    let failed = exam
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .count();
    if failed == 0 {
        say(
            "ready to train: every check passed or could not be told",
            "  ",
        );
    } else {
        say_verdict(&format!("{failed} check(s) failed"), "  ", "failed");
    }
}

/// Runs `stackpin fetch MANIFEST` through its own argument parser, so its defaults and
/// environment knobs apply exactly as on the command line.
fn fetch_first(manifest: &Path, global: &GlobalArgs) -> Result<(), Failure> {
    #[derive(Parser)]
    struct FetchOnly {
        #[command(flatten)]
        fetch: super::fetch_args::FetchArgs,
    }
    let parsed = FetchOnly::try_parse_from([std::ffi::OsStr::new("fetch"), manifest.as_os_str()])
        .map_err(|e| Failure::from(CliError::Usage(format!("fetch arguments: {e}"))))?;
    let quiet = GlobalArgs {
        json: false,
        quiet: global.quiet || global.json,
        archive: global.archive.clone(),
        color: global.color,
    };
    match super::fetch_args::fetch_stack(&parsed.fetch, &quiet)?.exit {
        Exit::Ok => Ok(()),
        _ => Err(Failure::from(CliError::Refused(
            "fetch did not archive every installer; nothing was reinstalled".to_string(),
        ))),
    }
}

fn confirm(
    m: &Manifest,
    layers: &[manifest::Layer],
    consent: super::consent::Consent,
) -> Result<(), Failure> {
    let names: Vec<&str> = layers.iter().map(|l| l.as_str()).collect();
    let question = format!(
        "reinstall {} of {} from the archive and prove it again?",
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        },
        m.name
    );
    consent.confirm(&question, "reinstalled")
}

#[derive(Serialize)]
struct RepairJson<'a> {
    #[serde(flatten)]
    report: &'a RepairReport,
    guard: &'a Guard,
    guard_applied: bool,
    /// The driver was reinstalled and waits for a reboot before the stack can be proven.
    reboot_required: bool,
}

pub fn run_repair(args: &RepairArgs, global: &GlobalArgs) -> CmdResult {
    let (m, text) = read_manifest(&args.manifest)?;
    let report = crate::check::check(&m, Some(&text));
    if !report.ok {
        return Err(Failure::from(CliError::Refused(format!(
            "{} does not pass `stackpin check`; fix the pins before repairing",
            args.manifest.display()
        ))));
    }
    let consent = super::consent::require_consent("repair", args.yes, global.json)?;
    if args.fetch {
        fetch_first(&args.manifest, global)?;
    }
    let archive = global.archive();
    let stack = archive.stack(&m.name);
    let exam = examine(&m, &text, &archive, args.gpu);
    let plan = crate::doctor::repair::RepairPlan::from_examination(&exam);
    if !plan.is_empty() {
        confirm(&m, &plan.reinstall, consent)?;
    }
    let interrupted = crate::exec::interrupt::on_ctrl_c(
        "waiting for the running installer to finish, then stopping",
    );
    let host = LiveHost::on(&RealSystem, args.gpu);
    let quiet = global.quiet || global.json;
    let install_reporter = super::term::CliReporter::new(quiet);
    let ctx = RepairContext {
        system: &RealSystem,
        host: &host,
        example: &crate::prove::run::LiveExample,
        install_reporter: if quiet {
            &QuietReporter
        } else {
            &install_reporter
        },
        prove_reporter: &super::term::Spinner::new(global),
        interrupted: &interrupted,
        skip_admin_check: super::defaults::skip_admin_check(),
        machine_lock: Some(super::defaults::machine_lock()),
        gpu: args.gpu,
    };
    let report = repair(&m, &stack, &exam, &ctx).map_err(repair_failure)?;
    let guard = guard::for_host(&RealSystem, m.os);
    let guard_applied = args.apply_guard && !guard.argv.is_empty();
    if guard_applied {
        guard.apply(&RealSystem)?;
    }
    if global.json {
        print_json(&RepairJson {
            report: &report,
            guard: &guard,
            guard_applied,
            reboot_required: report.reboot_required(),
        })?;
    } else {
        print_repair(&report, &guard, guard_applied, m.os);
    }
    match &report.install {
        Some(install) => super::chain::chain_exit(install, |layer, why| {
            format!("the {layer} layer failed during the repair: {why}")
        }),
        None => Ok(Exit::Ok),
    }
}

/// The error with the exit status it knows (`crate::exit`); a refused layer also says that the
/// archive cannot rebuild it.
fn repair_failure(e: RepairError) -> Failure {
    // Classified once, by the error itself: a refused layer is a problem found.
    let refused = matches!(&e, RepairError::Install(inner) if inner.exit() == Exit::Problem);
    let mut failure = Failure::from(e);
    if refused {
        failure.error = anyhow!(
            "{:#}; the archive cannot rebuild this layer: run `stackpin repair MANIFEST --fetch`",
            failure.error
        );
    }
    failure
}

fn print_repair(report: &RepairReport, guard: &Guard, applied: bool, os: Os) {
    if report.plan.is_empty() {
        println!(
            "nothing to repair: {} matches its proven record",
            report.stack
        );
    } else if report.plan.reinstall.is_empty() {
        println!("no layer drifted; proving {} again", report.stack);
    }
    if !report.changes.is_empty() {
        println!("repaired {}, before → after:", report.stack);
    }
    for c in &report.changes {
        println!("  {:<8} {} → {}", c.layer.as_str(), c.before, c.after);
    }
    if report.reboot_required() {
        println!(
            "the driver is reinstalled but takes effect after a reboot: reboot, then run the same \
             `stackpin repair` again to finish and prove the stack"
        );
    }
    if let (Some(before), Some(after)) = (&report.proven_at.0, &report.proven_at.1)
        && report.proven.is_some()
    {
        println!(
            "  record   proven {} → proven {}",
            super::term::timestamp_text(before),
            super::term::timestamp_text(after)
        );
    } else if let Some(after) = report.proven.as_ref().map(|r| &r.proven_at) {
        println!(
            "  record   none → proven {}",
            super::term::timestamp_text(after)
        );
    }
    let what = match os {
        Os::Windows => "guard (Windows Update)",
        Os::Linux => "guard (package hold)",
    };
    if guard.argv.is_empty() {
        println!("{what}: {}", guard.what);
    } else if applied {
        println!("{what}: applied `{}`", guard.command_line());
    } else {
        println!(
            "{what}: {}; run as root / Administrator, or pass --apply-guard:\n  {}",
            guard.what,
            guard.command_line()
        );
    }
}
