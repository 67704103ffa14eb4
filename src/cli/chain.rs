//! The install chain as every command that runs it sees it (`install`, `repair`, `up`): its
//! flags, the preconditions refused before the first layer, the stack's lock, the reboot resume,
//! the report and the exit status its end maps to, written once so the same end exits the same
//! way in each.

use std::path::PathBuf;

use anyhow::anyhow;

use super::term::CliReporter;
use super::valid_manifest::require_valid;
use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::archive::StackDir;
use crate::exec::step::shell_words;
use crate::install::files;
use crate::install::{self, ChainEnd, InstallOptions, InstallReport, LayerAction};
use crate::layers::live::LiveHost;
use crate::manifest::Layer;

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
    /// The compute capability the toolkit proof compiles a kernel for (`9.0`); default: the
    /// GPU's own, else nvcc's default architecture.
    #[arg(long = "gpu-arch", value_name = "X.Y")]
    pub gpu_arch: Option<String>,
    /// When another stackpin is working on this stack, exit 1 at once instead of waiting.
    #[arg(long)]
    pub no_wait: bool,
}

/// `Ok` with the status to end on, or the failure to print; `failed` words a failed layer.
pub fn chain_exit(
    report: &InstallReport,
    failed: impl FnOnce(&Layer, &str) -> String,
) -> CmdResult {
    match &report.end {
        ChainEnd::Failed { layer, why } => Err(CliError::Failed(failed(layer, why)).into()),
        // Stopped between layers (Ctrl-C): the report says where; the run did not finish.
        ChainEnd::Interrupted { .. } => Ok(Exit::External),
        _ => Ok(Exit::Ok),
    }
}

/// Before the first fetch: the manifest's installers, where fetch will put them, as missing.
pub(super) fn not_fetched(
    m: &crate::manifest::Manifest,
    stack: &StackDir,
) -> Vec<files::ArchivedFile> {
    Layer::ORDER
        .iter()
        .flat_map(|layer| m.installers(*layer).into_iter().map(move |i| (*layer, i)))
        .filter_map(|(layer, installer)| {
            let file = installer.file_name()?;
            Some(files::ArchivedFile {
                layer,
                path: stack.file_path(layer, &file),
                file,
                sha256: installer.sha256.clone(),
                state: files::FileState::Missing,
            })
        })
        .collect()
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
        .map_err(Failure::from)
}

/// Runs the chain; `up` calls this between fetch and prove.
pub fn run_install(args: &InstallArgs, global: &GlobalArgs) -> Result<InstallReport, Failure> {
    let m = require_valid(&args.manifest)?;
    let stack = global.archive().stack(&m.name);
    let host =
        LiveHost::on(&crate::host::RealSystem, args.gpu).with_gpu_arch(args.gpu_arch.clone());
    let consent =
        super::consent::require_consent("install", args.yes || args.dry_run, global.json)?;
    refuse_unless_ready(&m, &stack, &host, args, global)?;
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
        machine_lock: Some(super::defaults::machine_lock()),
        no_wait: args.no_wait,
    };
    let reporter = CliReporter::new(global.quiet || global.json);
    // The error knows its exit status: refused 1, not admin or an unreadable lock/state 2.
    let report = install::install(&m, &stack, &host, &options, &interrupted, &reporter)?;
    if args.reboot && matches!(report.end, ChainEnd::RebootRequired { .. }) {
        reboot_now(&m, args, &stack.state_path(), &global.archive())?;
    }
    Ok(report)
}

/// Every precondition install can know before the first layer runs, refused all at once.
fn refuse_unless_ready(
    m: &crate::manifest::Manifest,
    stack: &StackDir,
    host: &LiveHost,
    args: &InstallArgs,
    global: &GlobalArgs,
) -> Result<(), Failure> {
    let files = match stack.read_lock() {
        Ok(lock) if stack.lock_path().exists() => install::archived_files(stack, &lock),
        _ => not_fetched(m, stack),
    };
    let problems = install::preflight::preflight(m, host, &files, &args.force);
    if problems.is_empty() {
        return Ok(());
    }
    if global.json {
        // The readiness findings as data beside the refusal's message, as `plan --json` has them.
        let to_run = install::readiness::layers_to_run(m, host, &args.force);
        print_json(&serde_json::json!({
            "stack": m.name,
            "problems": problems,
            "readiness": install::readiness::findings(m, host, &to_run),
        }))?;
    }
    Err(Failure::from(CliError::Refused(format!(
        "install refused before any layer ran ({} problem{}); nothing was installed:\n  - {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n  - ")
    ))))
}

/// Windows: pip cannot write past MAX_PATH unless LongPathsEnabled is set or the venv root is
/// short; stop before the chain rather than after the driver and toolkit (issue 19, item 6).
pub(super) fn check_long_paths(
    m: &crate::manifest::Manifest,
    dry_run: bool,
) -> Result<(), Failure> {
    use crate::windows_installers::{
        LONG_PATHS_QUERY, long_path_problem, parse_long_paths_enabled,
    };
    if dry_run || m.os != crate::os::Os::Windows || !cfg!(windows) || m.library.pip.is_none() {
        return Ok(());
    }
    let query = crate::exec::Spec::captured("reg", LONG_PATHS_QUERY, REBOOT_COMMAND_TIMEOUT);
    let enabled = crate::exec::run(query)
        .ok()
        .and_then(|out| parse_long_paths_enabled(&String::from_utf8_lossy(&out.stdout)));
    match long_path_problem(enabled, m.library.venv.as_deref()) {
        Some(why) => Err(CliError::Refused(why.to_string()).into()),
        None => Ok(()),
    }
}

pub(super) fn reboot_now(
    m: &crate::manifest::Manifest,
    args: &InstallArgs,
    state_path: &std::path::Path,
    archive: &crate::archive::Archive,
) -> Result<(), Failure> {
    use crate::install::reboot;
    let exe = std::env::current_exe().map_err(CliError::broke)?;
    let workdir = std::env::current_dir().map_err(CliError::broke)?;
    // What the user ran (`up` resumes `up`; `--gpu`, `--archive` and the rest survive).
    let ran: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argv = reboot::resume_argv(&exe.display().to_string(), &ran, archive.root());
    if m.os == crate::os::Os::Linux {
        crate::fsutil::write_atomic(
            &reboot::unit_path(),
            reboot::systemd_unit(&argv, &workdir).as_bytes(),
        )
        .map_err(|e| CliError::broke(anyhow!(e).context("writing the resume unit")))?;
    }
    let task_xml = reboot::task_xml_path(state_path);
    if m.os == crate::os::Os::Windows && args.resume_with == reboot::WindowsResume::Task {
        let argv_file = reboot::argv_path(state_path);
        crate::fsutil::write_atomic(&argv_file, reboot::argv_file_text(&argv).as_bytes())
            .and_then(|()| {
                crate::fsutil::write_atomic(
                    &task_xml,
                    &reboot::utf16_file(&reboot::task_xml(&exe, &argv_file, &workdir)),
                )
            })
            .map_err(|e| CliError::broke(anyhow!(e).context("writing the resume task")))?;
    }
    for cmd in reboot::register_and_reboot(m.os, args.resume_with, &argv, &workdir, &task_xml) {
        let spec = crate::exec::Spec::captured(&cmd[0], &cmd[1..], REBOOT_COMMAND_TIMEOUT);
        let finished = crate::exec::run(spec);
        if !finished.is_ok_and(|f| f.end == crate::exec::End::Exited(0)) {
            return Err(Failure::from(CliError::Failed(format!(
                "`{}` failed; reboot by hand, then run the same command again",
                shell_words(&cmd)
            ))));
        }
    }
    Ok(())
}

/// How long registering the resume and asking for the reboot may take (`systemctl`, `reg`,
/// `shutdown` answer in seconds).
const REBOOT_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// `install --json`: the chain's report and, as in `up` and `repair`, whether it stopped for a
/// reboot.
#[derive(serde::Serialize)]
struct InstallJson<'a> {
    #[serde(flatten)]
    report: &'a InstallReport,
    reboot_required: bool,
}

/// Prints the chain's report and maps its end to an exit code.
pub fn finish(report: &InstallReport, global: &GlobalArgs) -> CmdResult {
    if global.json {
        print_json(&InstallJson {
            report,
            reboot_required: matches!(report.end, ChainEnd::RebootRequired { .. }),
        })?;
    } else {
        print_report(report, global.quiet);
    }
    end_exit(report)
}

/// The exit status a chain's end maps to; a failure carries its message for stderr.
pub fn end_exit(report: &InstallReport) -> CmdResult {
    super::chain::chain_exit(report, |layer, why| {
        format!(
            "the {layer} layer failed: {why}{}",
            report
                .layers
                .last()
                .and_then(|l| l.log.as_ref())
                .map(|p| format!("; log: {}", p.display()))
                .unwrap_or_default()
        )
    })
}

fn print_report(report: &InstallReport, quiet: bool) {
    for l in &report.layers {
        let word = match l.action {
            LayerAction::AlreadyInPlace => "in place",
            LayerAction::WouldInstall => "would run",
            LayerAction::Installed => "installed",
            LayerAction::RebootPending => "reboot pending",
            LayerAction::Failed => "FAILED",
            LayerAction::Skipped => "skipped",
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
        ChainEnd::Failed { layer, why } => {
            eprintln!(
                "the chain stopped at the {layer}; the next run retries from there. Last lines:"
            );
            for line in &report.tail {
                eprintln!("  | {line}");
            }
            // `why` carries the runfile log's first ERROR: line when the driver named its log.
            let seen = format!("{}\n{why}", report.tail.join("\n"));
            if let Some(d) = crate::diagnose::diagnose(&seen) {
                eprintln!("diagnosis ({}): {} — {}", d.layer.as_str(), d.cause, d.fix);
            }
        }
        ChainEnd::Interrupted { before } => {
            println!("interrupted before the {before}; run the same command again to continue")
        }
    }
}
