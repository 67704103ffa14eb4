//! `stackpin plan`, `stackpin install` and `stackpin up`: the ordered chain, shown or run.

use std::path::PathBuf;

use anyhow::anyhow;

use super::chain::{InstallArgs, finish, not_fetched, run_install};
use super::valid_manifest::require_valid;
use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, finish_report, print_json};
use crate::exec::step::shell_words;
use crate::install;
use crate::install::plan::{self, Verdict};
use crate::install::resume::{self, ResumeRecord};
use crate::layers::live::LiveHost;

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

pub fn run_plan(args: &PlanArgs, global: &GlobalArgs) -> CmdResult {
    let m = require_valid(&args.manifest)?;
    let stack = global.archive().stack(&m.name);
    let files = match stack.read_lock() {
        Ok(lock) if stack.lock_path().exists() => install::archived_files(&stack, &lock),
        _ => not_fetched(&m, &stack),
    };
    let host = LiveHost::on(&crate::host::RealSystem, args.gpu);
    let host = if args.probe {
        host
    } else {
        host.without_verify_commands()
    };
    let plan = plan::plan(&m, stack.root(), &host, &files)?;
    let no_archive = !stack.lock_path().exists();
    finish_report(
        global,
        !plan.blocked(),
        || print_json(&plan),
        || print_plan(&plan, no_archive),
    )
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
                Verdict::Skipped { .. } => "skipped",
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
    print_readiness(&plan.readiness);
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
        if matches!(l.verdict, Verdict::Skipped { .. }) {
            say(
                &format!("    {}: nothing (never installed on this host)", l.layer),
                "      ",
            );
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

/// The Linux host's readiness for the runfiles: each finding, what it does, and its fix.
fn print_readiness(findings: &[install::readiness::Finding]) {
    use super::term::say;
    use install::readiness::Effect;
    if findings.is_empty() {
        return;
    }
    println!();
    println!("  host readiness (Linux):");
    for f in findings {
        let effect = match f.effect {
            Effect::Blocks => "BLOCKS",
            Effect::Skips => "skips",
            Effect::Warns => "warns",
            Effect::Prepares => "prepares",
        };
        say(&format!("    - {} {effect}: {}", f.layer, f.what), "      ");
        say(&format!("      fix: {}", f.fix), "        ");
    }
}

pub fn run(args: &InstallArgs, global: &GlobalArgs) -> CmdResult {
    let report = run_install(args, global)?;
    finish(&report, global)
}

/// `stackpin resume FILE`: what the boot task runs. Deletes the boot task (Windows), reads the
/// argv written beside `state.yaml`, removes the file (one resume per reboot), runs the command
/// with its output in `resume.log` beside it, records how it ended in `resume.yaml` (which
/// `status` reads), and exits with its status.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The argv file (`resume-argv.json` beside the stack's `state.yaml`).
    pub file: PathBuf,
}

pub fn run_resume(args: &ResumeArgs) -> CmdResult {
    let argv = crate::install::reboot::read_argv_file(&args.file).map_err(CliError::unusable)?;
    let _ = std::fs::remove_file(&args.file);
    // Before the chain goes on: a chain that needs another reboot registers a new task, which
    // must outlive this run.
    let deleted = delete_boot_task();
    let (program, rest) = argv.split_first().ok_or_else(|| {
        Failure::from(CliError::Usage(
            "the resume file holds no command".to_string(),
        ))
    })?;
    // `state.yaml`'s folder: where the argv file was.
    let state_path = args.file.with_file_name("state.yaml");
    let log_path = resume::log_path(&state_path);
    let record_path = resume::record_path(&state_path);
    let mut log = std::fs::File::create(&log_path).map_err(|e| {
        CliError::broke(anyhow!(e).context(format!("creating {}", log_path.display())))
    })?;
    {
        use std::io::Write;
        let _ = writeln!(
            log,
            "stackpin resume: {}\nstackpin resume: {deleted}",
            shell_words(&argv)
        );
    }
    let mut record = ResumeRecord::load(&record_path);
    record.last_resume = Some(resume::ResumeRun {
        started: jiff::Timestamp::now().to_string(),
        ended: None,
        outcome: None,
        ok: false,
        log: log_path.clone(),
    });
    let _ = record.save(&record_path);
    // No limit: the resumed chain runs installers with their own timeouts. Its output goes to
    // the log: the boot task has no console.
    let spec = crate::exec::Spec {
        program: program.into(),
        args: rest.iter().map(Into::into).collect(),
        env: Vec::new(),
        env_remove: Vec::new(),
        output: crate::exec::Output::Log(log),
        timeout: None,
        cwd: None,
        guarded: false,
        stdin: None,
    };
    let finished = crate::exec::run(spec);
    let outcome = match &finished {
        Ok(f) => f.end.to_string(),
        Err(e) => format!("{e:#}"),
    };
    let ok = finished
        .as_ref()
        .is_ok_and(|f| f.end == crate::exec::End::Exited(0));
    // Reloaded: the resumed chain may have recorded a reboot of its own meanwhile.
    let mut record = ResumeRecord::load(&record_path);
    if let Some(run) = record.last_resume.as_mut() {
        run.ended = Some(jiff::Timestamp::now().to_string());
        run.outcome = Some(outcome);
        run.ok = ok;
    }
    let _ = record.save(&record_path);
    let finished = finished
        .map_err(|e| CliError::broke(anyhow!(e).context(format!("starting `{program}`"))))?;
    if ok {
        Ok(Exit::Ok)
    } else {
        Err(Failure::from(CliError::Failed(format!(
            "the resumed `{}` ended: {}; log: {}",
            shell_words(&argv),
            finished.end,
            log_path.display()
        ))))
    }
}

/// Windows: deletes the boot task that started this resume; says what happened, for the log.
fn delete_boot_task() -> String {
    if !cfg!(windows) {
        return "no boot task to delete on this OS".to_string();
    }
    let cmd = crate::install::reboot::delete_task();
    let spec = crate::exec::Spec::captured(
        super::chain::system_program(&cmd[0]),
        &cmd[1..],
        std::time::Duration::from_secs(120),
    );
    match crate::exec::run(spec) {
        Ok(f) if f.end == crate::exec::End::Exited(0) => format!("`{}` done", shell_words(&cmd)),
        Ok(f) => format!("`{}` ended: {}", shell_words(&cmd), f.end),
        Err(e) => format!("`{}` failed: {e}", shell_words(&cmd)),
    }
}
