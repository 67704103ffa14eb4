//! `stackpin plan`, `stackpin install` and `stackpin up`: the ordered chain, shown or run.

use std::path::PathBuf;

use anyhow::anyhow;

use super::check_cmd::require_valid;
use super::term::CliReporter;
use super::{CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::archive::StackDir;
use crate::install::plan::{self, Verdict};
use crate::install::runner::shell_words;
use crate::install::{
    self, ChainEnd, InstallOptions, InstallReport, LayerAction, host_view::LiveHost,
};
use crate::manifest::Layer;

pub const PLAN_EXAMPLES: &str = "\
Examples:
  stackpin plan manifests/torch-2.5.1-cu124-linux.yaml
  stackpin plan manifests/torch-2.5.1-cu124-linux.yaml --gpu 1 --json
  stackpin plan manifests/torch-2.5.1-cu124-linux.yaml --probe

Read-only: runs nothing but the host probes; a layer's `verify:` command (code from the
manifest) is shown, not run, unless --probe is given. Exit 0 unless a layer is blocked (1).";

pub const INSTALL_EXAMPLES: &str = "\
Examples:
  sudo stackpin install manifests/torch-2.5.1-cu124-linux.yaml --dry-run
  sudo stackpin install manifests/torch-2.5.1-cu124-linux.yaml --yes --reboot
  sudo stackpin install manifests/torch-2.5.1-cu124-linux.yaml --force toolkit

Order: driver → toolkit → library; layers whose proof holds are skipped. After the driver a reboot
is usually needed: run the same command again afterwards (or pass --reboot to have it resume by itself).";

/// Arguments of `plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The stack's manifest.
    pub manifest: PathBuf,
    /// The GPU to check (index); default: the first that CUDA_VISIBLE_DEVICES allows.
    #[arg(long)]
    pub gpu: Option<u32>,
    /// Also run the manifest's `verify:` commands (code from the manifest: without this flag
    /// `plan` is read-only and only shows them).
    #[arg(long)]
    pub probe: bool,
}

/// Arguments of `install` (and `up`).
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The stack's manifest.
    pub manifest: PathBuf,
    /// Show what would run; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask before installing; required without a terminal or with --json (else exit 2).
    #[arg(long, short)]
    pub yes: bool,
    /// Reinstall a layer even if its proof holds (driver, toolkit, library).
    #[arg(long, value_name = "LAYER")]
    pub force: Vec<Layer>,
    /// When the driver needs a reboot: register a one-shot resume of this command and reboot.
    #[arg(long)]
    pub reboot: bool,
    /// Windows: how --reboot resumes: a boot task as SYSTEM (unattended) or RunOnce (at the next
    /// administrator logon).
    #[arg(long, value_enum, default_value = "task", value_name = "HOW")]
    pub resume_with: crate::install::reboot::WindowsResume,
    /// The GPU to prove against (index).
    #[arg(long)]
    pub gpu: Option<u32>,
    /// When another stackpin is working on this stack, exit 1 at once instead of waiting.
    #[arg(long)]
    pub no_wait: bool,
}

pub fn run_plan(args: &PlanArgs, global: &GlobalArgs) -> CmdResult {
    let m = require_valid(&args.manifest)?;
    let stack = StackDir::new(&global.archive_dir(), &m.name);
    let files = match stack.read_lock() {
        Ok(lock) if stack.lock_path().exists() => install::archived_files(&stack, &lock),
        _ => not_fetched(&m, &stack),
    };
    let host = LiveHost::new(args.gpu, &m);
    let host = if args.probe {
        host
    } else {
        host.without_verify_commands()
    };
    let plan = plan::plan(&m, stack.root(), &host, &files).map_err(Failure::input)?;
    let no_archive = !stack.lock_path().exists();
    if global.json {
        print_json(&plan)?;
    } else {
        print_plan(&plan, no_archive);
    }
    Ok(if plan.blocked() {
        Exit::Problem
    } else {
        Exit::Ok
    })
}

/// Before the first fetch: the manifest's installers, where fetch will put them, as missing.
fn not_fetched(m: &crate::manifest::Manifest, stack: &StackDir) -> Vec<plan::ArchivedFile> {
    Layer::ORDER
        .iter()
        .flat_map(|layer| m.installers(*layer).into_iter().map(move |i| (*layer, i)))
        .filter_map(|(layer, installer)| {
            let file = installer.file_name()?;
            Some(plan::ArchivedFile {
                layer,
                path: stack.file_path(layer, &file),
                file,
                sha256: installer.sha256.clone(),
                state: plan::FileState::Missing,
            })
        })
        .collect()
}

fn print_plan(plan: &plan::Plan, no_archive: bool) {
    use super::term::say;
    say(&format!("plan for {} ({})", plan.stack, plan.os), "  ");
    for note in &plan.notes {
        say(&format!("  note: {note}"), "        ");
    }
    println!();
    let rows: Vec<Vec<String>> = plan
        .layers
        .iter()
        .map(|l| {
            let verdict = match &l.verdict {
                Verdict::InPlace => "in place",
                Verdict::ToInstall { .. } => "to install",
                Verdict::Blocked { .. } => "BLOCKED",
            };
            vec![
                l.layer.as_str().to_string(),
                l.pinned.clone(),
                verdict.to_string(),
                l.proof.seen.clone(),
            ]
        })
        .collect();
    let width = super::term::report_width();
    let table = super::term::table(
        &["layer", "pinned", "verdict", "host"],
        &rows,
        width,
        Some(2),
    );
    anstream::print!("{table}");
    for l in &plan.layers {
        if let Verdict::Blocked { why } = &l.verdict {
            say(&format!("  {} why: {why}", l.layer), "    ");
        }
    }
    println!();
    println!("  what the numbers mean:");
    for line in &plan.explain {
        say(&format!("    - {line}"), "      ");
    }
    println!();
    println!("  install would run, in this order:");
    let mut n = 0;
    for l in &plan.layers {
        if matches!(l.verdict, Verdict::InPlace) {
            say(&format!("    {}: nothing (proof holds)", l.layer), "      ");
            continue;
        }
        for c in &l.commands {
            n += 1;
            let state = c
                .installer
                .as_ref()
                .map(|f| format!("   [{}: {}]", f.file, f.state.as_str()))
                .unwrap_or_default();
            say(
                &format!("    {n}. {}{state}", shell_words(&c.argv)),
                "       ",
            );
        }
        if l.commands.is_empty() {
            say(
                &format!("    {}: no archived installer yet", l.layer),
                "      ",
            );
        }
        if l.reboot_after {
            say(
                "       → reboot after the driver, then run the same command again",
                "         ",
            );
        }
    }
    if no_archive {
        println!();
        say(
            "  the archive has no lock for this stack yet: run `stackpin fetch` first",
            "  ",
        );
    }
}

/// Takes the stack's lock (the one `fetch` takes), so two installs, repairs or `up`s of one
/// stack never run side by side: waits with a message, or with `no_wait` exits 1 at once.
/// A stack that was never fetched has no folder and nothing to guard: `install` says so next.
pub(super) fn take_stack_lock(
    stack: &StackDir,
    no_wait: bool,
    global: &GlobalArgs,
) -> Result<Option<crate::archive::StackLock>, Failure> {
    if !stack.root().is_dir() {
        return Ok(None);
    }
    struct Waiting(bool);
    impl crate::archive::Progress for Waiting {
        fn started(&self, _: &str, _: Option<u64>) {}
        fn advanced(&self, _: &str, _: u64) {}
        fn finished(&self, _: &str) {}
        fn note(&self, text: &str) {
            if !self.0 {
                eprintln!("{text}");
            }
        }
    }
    stack
        .lock_or_fail(!no_wait, &Waiting(global.quiet || global.json))
        .map(Some)
        .map_err(|e| {
            if e.is_problem() {
                Failure::problem(e)
            } else {
                Failure::external(e)
            }
        })
}

/// Runs the chain; `up` calls this between fetch and prove.
pub fn run_install(args: &InstallArgs, global: &GlobalArgs) -> Result<InstallReport, Failure> {
    let m = require_valid(&args.manifest)?;
    let stack = StackDir::new(&global.archive_dir(), &m.name);
    let host = LiveHost::new(args.gpu, &m);
    let consent =
        super::consent::require_consent("install", args.yes || args.dry_run, global.json)?;
    refuse_unless_ready(&m, &stack, &host, args)?;
    consent.confirm(
        &format!(
            "install {} on this machine (driver → toolkit → library)?",
            m.name
        ),
        "installed",
    )?;
    check_long_paths(&m, args.dry_run)?;
    let _busy = if args.dry_run {
        None
    } else {
        take_stack_lock(&stack, args.no_wait, global)?
    };
    // Holding the lock, a layer still marked running was cut off mid-step by an earlier run.
    if !global.quiet
        && let Ok(state) = install::state::ChainState::load(&stack.state_path())
    {
        for line in install::interrupted_steps(&state) {
            eprintln!("note: {line}");
        }
    }
    let interrupted = crate::exec::interrupt::on_ctrl_c(
        "waiting for the running installer to finish, then stopping",
    );
    let options = InstallOptions {
        dry_run: args.dry_run,
        force: args.force.clone(),
        skip_admin_check: super::defaults::skip_admin_check(),
    };
    let reporter = CliReporter::new(global.quiet || global.json);
    // The error knows its exit status: refused 1, not admin or an unreadable lock/state 2.
    let report = install::install(&m, &stack, &host, &options, &interrupted, &reporter)?;
    if args.reboot && matches!(report.end, ChainEnd::RebootRequired { .. }) {
        reboot_now(&m, args, &stack.state_path(), &global.archive_dir())?;
    }
    Ok(report)
}

/// Every precondition install can know before the first layer runs, refused all at once.
fn refuse_unless_ready(
    m: &crate::manifest::Manifest,
    stack: &StackDir,
    host: &LiveHost,
    args: &InstallArgs,
) -> Result<(), Failure> {
    let files = match stack.read_lock() {
        Ok(lock) if stack.lock_path().exists() => install::archived_files(stack, &lock),
        _ => not_fetched(m, stack),
    };
    let problems = install::preflight::preflight(m, host, &files, &args.force);
    if problems.is_empty() {
        return Ok(());
    }
    Err(Failure::problem(anyhow!(
        "install refused before any layer ran ({} problem{}); nothing was installed:\n  - {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n  - ")
    )))
}

/// Windows: pip cannot write past MAX_PATH unless LongPathsEnabled is set or the venv root is
/// short; stop before the chain rather than after the driver and toolkit (issue 19, item 6).
fn check_long_paths(m: &crate::manifest::Manifest, dry_run: bool) -> Result<(), Failure> {
    use crate::windows_installers::{
        LONG_PATHS_QUERY, long_path_problem, parse_long_paths_enabled,
    };
    if dry_run || m.os != crate::compat::Os::Windows || !cfg!(windows) || m.library.pip.is_none() {
        return Ok(());
    }
    let query = crate::exec::Spec::captured("reg", LONG_PATHS_QUERY, REBOOT_COMMAND_TIMEOUT);
    let enabled = crate::exec::run(query)
        .ok()
        .and_then(|out| parse_long_paths_enabled(&String::from_utf8_lossy(&out.stdout)));
    match long_path_problem(enabled, m.library.venv.as_deref()) {
        Some(why) => Err(Failure::problem(anyhow!(why))),
        None => Ok(()),
    }
}

fn reboot_now(
    m: &crate::manifest::Manifest,
    args: &InstallArgs,
    state_path: &std::path::Path,
    archive: &std::path::Path,
) -> Result<(), Failure> {
    use crate::install::reboot;
    let exe = std::env::current_exe().map_err(Failure::external)?;
    let workdir = std::env::current_dir().map_err(Failure::external)?;
    // What the user ran (`up` resumes `up`; `--gpu`, `--archive` and the rest survive).
    let ran: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argv = reboot::resume_argv(&exe.display().to_string(), &ran, archive);
    if m.os == crate::compat::Os::Linux {
        crate::fsutil::write_atomic(
            &reboot::unit_path(),
            reboot::systemd_unit(&argv, &workdir).as_bytes(),
        )
        .map_err(|e| Failure::external(anyhow!(e).context("writing the resume unit")))?;
    }
    let task_xml = reboot::task_xml_path(state_path);
    if m.os == crate::compat::Os::Windows && args.resume_with == reboot::WindowsResume::Task {
        let argv_file = reboot::argv_path(state_path);
        crate::fsutil::write_atomic(&argv_file, reboot::argv_file_text(&argv).as_bytes())
            .and_then(|()| {
                crate::fsutil::write_atomic(
                    &task_xml,
                    &reboot::utf16_file(&reboot::task_xml(&exe, &argv_file, &workdir)),
                )
            })
            .map_err(|e| Failure::external(anyhow!(e).context("writing the resume task")))?;
    }
    for cmd in reboot::register_and_reboot(m.os, args.resume_with, &argv, &workdir, &task_xml) {
        let spec = crate::exec::Spec::captured(&cmd[0], &cmd[1..], REBOOT_COMMAND_TIMEOUT);
        let finished = crate::exec::run(spec);
        if !finished.is_ok_and(|f| f.end == crate::exec::End::Exited(0)) {
            return Err(Failure::external(anyhow!(
                "`{}` failed; reboot by hand, then run the same command again",
                shell_words(&cmd)
            )));
        }
    }
    Ok(())
}

/// How long registering the resume and asking for the reboot may take (`systemctl`, `reg`,
/// `shutdown` answer in seconds).
const REBOOT_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

pub fn run(args: &InstallArgs, global: &GlobalArgs) -> CmdResult {
    let report = run_install(args, global)?;
    finish(&report, global)
}

/// `stackpin resume FILE`: what the boot task runs. Reads the argv written beside `state.yaml`,
/// removes the file (one resume per reboot), runs the command and exits with its status.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The argv file (`resume-argv.json` beside the stack's `state.yaml`).
    pub file: PathBuf,
}

pub fn run_resume(args: &ResumeArgs) -> CmdResult {
    let argv = crate::install::reboot::read_argv_file(&args.file).map_err(Failure::input)?;
    let _ = std::fs::remove_file(&args.file);
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| Failure::input(anyhow!("the resume file holds no command")))?;
    // No limit: the resumed chain runs installers with their own timeouts. Its output goes on
    // to ours (the task's), line by line.
    let spec = crate::exec::Spec {
        program: program.into(),
        args: rest.iter().map(Into::into).collect(),
        env: Vec::new(),
        env_remove: Vec::new(),
        output: crate::exec::Output::Lines(Box::new(|line| println!("{line}"))),
        timeout: None,
    };
    let finished = crate::exec::run(spec)
        .map_err(|e| Failure::external(anyhow!(e).context(format!("starting `{program}`"))))?;
    if finished.end == crate::exec::End::Exited(0) {
        Ok(Exit::Ok)
    } else {
        Err(Failure::external(anyhow!(
            "the resumed `{}` ended: {}",
            shell_words(&argv),
            finished.end
        )))
    }
}

/// Prints the chain's report and maps its end to an exit code.
pub fn finish(report: &InstallReport, global: &GlobalArgs) -> CmdResult {
    if global.json {
        print_json(report)?;
    } else {
        print_report(report, global.quiet);
    }
    end_exit(report)
}

/// The exit status a chain's end maps to; a failure carries its message for stderr.
pub fn end_exit(report: &InstallReport) -> CmdResult {
    match &report.end {
        ChainEnd::Failed { layer, why } => Err(Failure::external(anyhow!(
            "the {layer} layer failed: {why}{}",
            report
                .layers
                .last()
                .and_then(|l| l.log.as_ref())
                .map(|p| format!("; log: {}", p.display()))
                .unwrap_or_default()
        ))),
        ChainEnd::Interrupted { .. } => Ok(Exit::External),
        _ => Ok(Exit::Ok),
    }
}

fn print_report(report: &InstallReport, quiet: bool) {
    for l in &report.layers {
        let word = match l.action {
            LayerAction::AlreadyInPlace => "in place",
            LayerAction::WouldInstall => "would run",
            LayerAction::Installed => "installed",
            LayerAction::RebootPending => "reboot pending",
            LayerAction::Failed => "FAILED",
        };
        println!("{:<8} {:<15} {}", l.layer.as_str(), word, l.proof.seen);
        if l.action == LayerAction::WouldInstall && !quiet {
            for c in &l.commands {
                println!("           $ {}", shell_words(&c.argv));
            }
        }
    }
    match &report.end {
        ChainEnd::Complete => println!("all three layers are in place and proven on this host"),
        ChainEnd::DryRun => println!("dry run: nothing was run"),
        ChainEnd::RebootRequired { after } => println!(
            "the {after} is installed but takes effect after a reboot: reboot, then run the same command again"
        ),
        ChainEnd::Failed { layer, .. } => {
            eprintln!(
                "the chain stopped at the {layer}; the next run retries from there. Last lines:"
            );
            for line in &report.tail {
                eprintln!("  | {line}");
            }
            if let Some(d) = crate::diagnose::diagnose(&report.tail.join("\n")) {
                eprintln!("diagnosis ({}): {} — {}", d.layer.as_str(), d.cause, d.fix);
            }
        }
        ChainEnd::Interrupted { before } => {
            println!("interrupted before the {before}; run the same command again to continue")
        }
    }
}
