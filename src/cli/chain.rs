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
use crate::install::resume::{self, ResumeRecord};
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
    /// The interpreter the library layer uses instead of the manifest's `library.python`. The
    /// resume after `--reboot` on Windows passes the one the user's PATH found at reboot time:
    /// the boot task runs as SYSTEM, whose PATH has no per-user Python.
    #[arg(long, value_name = "PATH")]
    pub library_python: Option<String>,
    /// Windows: do not write the driver guard (the two policies that keep Windows Update from
    /// replacing the driver) before the driver step. Windows Update is still paused for the
    /// toolkit step.
    #[arg(long)]
    pub no_guard: bool,
    #[command(flatten)]
    pub prepare: PrepareArgs,
}

/// What `install` and `up` may do to ready a Linux host beyond the manifest (README, Install).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PrepareArgs {
    /// Linux: stop a running display manager (`systemctl stop display-manager`) right before
    /// the driver's runfile. This ends the desktop session; it is not started again (the
    /// driver's reboot starts it).
    #[arg(long)]
    pub stop_display: bool,
    /// Linux: the folder NVIDIA's runfiles extract in (`--tmpdir`), on a disk with about 10 GiB
    /// free. Default: /tmp, or `.extract` in the stack's archive folder when /tmp is too small.
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<PathBuf>,
    /// Linux with Secure Boot: the private key the driver's module is signed with (give
    /// --module-signing-cert too).
    #[arg(long, value_name = "KEY", requires = "module_signing_cert")]
    pub module_signing_key: Option<PathBuf>,
    /// Linux with Secure Boot: the key's X.509 certificate (DER), enrolled with `mokutil
    /// --import` (confirmed at the next boot in the MOK manager).
    #[arg(long, value_name = "CERT", requires = "module_signing_key")]
    pub module_signing_cert: Option<PathBuf>,
}

impl PrepareArgs {
    /// The choices, with every path absolute (the resume after a reboot runs elsewhere) and
    /// checked to exist.
    pub fn choices(&self) -> Result<install::readiness::Choices, Failure> {
        let existing = |path: &PathBuf, flag: &str, what: &str| -> Result<PathBuf, Failure> {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            if absolute.exists() {
                Ok(absolute)
            } else {
                Err(CliError::Usage(format!(
                    "{flag} {}: no such {what}; {}",
                    path.display(),
                    if flag == "--tmpdir" {
                        "create it first (on a disk with about 10 GiB free)"
                    } else {
                        "make a key pair with `openssl` (see README, Install) or give the right path"
                    }
                ))
                .into())
            }
        };
        let signing = match (&self.module_signing_key, &self.module_signing_cert) {
            (Some(key), Some(cert)) => Some(install::readiness::Signing {
                key: existing(key, "--module-signing-key", "file")?,
                cert: existing(cert, "--module-signing-cert", "file")?,
            }),
            _ => None,
        };
        Ok(install::readiness::Choices {
            stop_display: self.stop_display,
            signing,
            tmpdir: match &self.tmpdir {
                Some(dir) => Some(existing(dir, "--tmpdir", "folder")?),
                None => None,
            },
            spare_tmpdir: None,
        })
    }
}

/// The manifest as this run uses it: `--library-python` in place of `library.python`.
pub(super) fn with_library_python(
    mut m: crate::manifest::Manifest,
    library_python: Option<&str>,
) -> crate::manifest::Manifest {
    if let Some(python) = library_python {
        m.library.python = python.to_string();
    }
    m
}

/// `Ok` with the status to end on, or the failure to print; `failed` words a failed layer.
pub fn chain_exit(
    report: &InstallReport,
    failed: impl FnOnce(&Layer, &str) -> String,
) -> CmdResult {
    match &report.end {
        ChainEnd::Failed { layer, why } => Err(CliError::Failed(failed(layer, why)).into()),
        // Stopped between layers (Ctrl-C): the run did not finish, and the error says so in
        // its own words rather than as a failed step.
        ChainEnd::Interrupted { before } => Err(CliError::Failed(format!(
            "interrupted (Ctrl-C) before the {before} step, which did not start; the layers before it are installed: run the same command again to go on from the {before}"
        ))
        .into()),
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
    let m = with_library_python(
        require_valid(&args.manifest)?,
        args.library_python.as_deref(),
    );
    let stack = global.archive().stack(&m.name);
    if args.reboot && !args.dry_run {
        refuse_remote_folders(&m, &args.manifest, &global.archive())?;
    }
    let host =
        LiveHost::on(&crate::host::RealSystem, args.gpu).with_gpu_arch(args.gpu_arch.clone());
    let consent =
        super::consent::require_consent("install", args.yes || args.dry_run, global.json)?;
    let choices = args.prepare.choices()?.with_spare(stack.root());
    let prepares = refuse_unless_ready(&m, &stack, &host, args, &choices, global)?;
    consent.confirm(
        &format!(
            "install {} on this machine (driver → toolkit → library)?{}",
            m.name,
            prepares
                .iter()
                .map(|p| format!("\n  install prepares first: {p}"))
                .collect::<String>()
                + &guard_question(&m, args.no_guard)
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
        choices,
        windows_update: windows_update_guards(&m, args.no_guard),
    };
    let reporter = CliReporter::new(global.quiet || global.json);
    if !global.quiet && !global.json && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        let record = ResumeRecord::load(&resume::record_path(&stack.state_path()));
        if let Some(line) = record.last_resume_line() {
            eprintln!("note: {line}");
        }
    }
    // The error knows its exit status: refused 1, not admin or an unreadable lock/state 2.
    let report = install::install(&m, &stack, &host, &options, &interrupted, &reporter)?;
    if !args.dry_run {
        chain_ended(&report, &stack.state_path());
    }
    if args.reboot
        && let ChainEnd::RebootRequired { after } = report.end
    {
        let prepared = report
            .layers
            .last()
            .is_some_and(|l| l.action == LayerAction::Prepared);
        reboot_now(
            &m,
            args,
            (after, prepared),
            &stack.state_path(),
            &global.archive(),
        )?;
    }
    Ok(report)
}

/// What the chain does about Windows Update on this host: on Windows (the real one, not a
/// Windows manifest read elsewhere) the driver guard unless `--no-guard`, and the toolkit's pause.
pub(super) fn windows_update_guards(
    m: &crate::manifest::Manifest,
    no_guard: bool,
) -> install::windows_update::WindowsUpdateGuards {
    let windows = m.os == crate::os::Os::Windows && cfg!(windows);
    install::windows_update::WindowsUpdateGuards::for_install(windows, no_guard)
}

/// The consent question's second half on Windows: what the guard writes, so a yes covers it.
pub(super) fn guard_question(m: &crate::manifest::Manifest, no_guard: bool) -> String {
    if m.os != crate::os::Os::Windows || no_guard {
        return String::new();
    }
    "\n  before the driver, stackpin keeps Windows Update from replacing it (policies \
     ExcludeWUDriversInQualityUpdate=1 and DriverSearching\\SearchOrderConfig=0; --no-guard \
     to skip), and pauses Windows Update during the toolkit"
        .to_string()
}

/// A chain that ended without asking for a reboot starts the count of `--reboot`'s reboots
/// afresh; the last resume's account stays for `status`.
pub(super) fn chain_ended(report: &InstallReport, state_path: &std::path::Path) {
    if matches!(
        report.end,
        ChainEnd::RebootRequired { .. } | ChainEnd::Interrupted { .. } | ChainEnd::DryRun
    ) {
        return;
    }
    let path = resume::record_path(state_path);
    let mut record = ResumeRecord::load(&path);
    if !record.reboots.is_empty() {
        record.reboots.clear();
        let _ = record.save(&path);
    }
}

/// Windows `--reboot`: the boot task runs as SYSTEM, which sees no user's mapped drive and
/// reaches no share; an archive, working folder or manifest there is refused before any layer.
pub(super) fn refuse_remote_folders(
    m: &crate::manifest::Manifest,
    manifest: &std::path::Path,
    archive: &crate::archive::Archive,
) -> Result<(), Failure> {
    if m.os != crate::os::Os::Windows || !cfg!(windows) {
        return Ok(());
    }
    let workdir = std::env::current_dir().map_err(CliError::broke)?;
    let folders = [
        ("the archive", archive.root().to_path_buf()),
        ("the working folder", workdir),
        ("the manifest", manifest.to_path_buf()),
    ];
    for (what, path) in folders {
        let absolute = std::path::absolute(&path).unwrap_or(path);
        let canonical = std::fs::canonicalize(&absolute).ok();
        let shown = absolute.display().to_string();
        if let Some(why) = resume::remote_folder(
            &shown,
            canonical.as_ref().map(|c| c.to_string_lossy()).as_deref(),
        ) {
            return Err(CliError::Refused(format!(
                "--reboot cannot resume from {what} {shown}: it is {why}, and the boot task runs as SYSTEM, which sees no user's mapped drives and reaches no share; copy it to a local folder (e.g. C:\\stackpin), or reboot by hand and run the same command again"
            ))
            .into());
        }
    }
    Ok(())
}

/// Every precondition install can know before the first layer runs, refused all at once; when
/// none blocks, what install will prepare on the host (for the consent question).
fn refuse_unless_ready(
    m: &crate::manifest::Manifest,
    stack: &StackDir,
    host: &LiveHost,
    args: &InstallArgs,
    choices: &install::readiness::Choices,
    global: &GlobalArgs,
) -> Result<Vec<String>, Failure> {
    let files = match stack.read_lock() {
        Ok(lock) if stack.lock_path().exists() => install::archived_files(stack, &lock),
        _ => not_fetched(m, stack),
    };
    let (problems, findings) = install::preflight::checked(m, host, &files, &args.force, choices);
    if problems.is_empty() {
        return Ok(findings
            .iter()
            .filter(|f| f.effect == install::readiness::Effect::Prepares)
            .map(|f| format!("{}: {}", f.layer, f.fix))
            .collect());
    }
    if global.json {
        // The readiness findings as data beside the refusal's message, as `plan --json` has them.
        print_json(&serde_json::json!({
            "stack": m.name,
            "problems": problems,
            "readiness": findings,
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
    match long_path_problem(enabled, m) {
        Some(why) => Err(CliError::Refused(why.to_string()).into()),
        None => Ok(()),
    }
}

/// Registers the resume of this command and reboots, once [`count_the_reboot`] allows it;
/// `after` is the layer that asked for the reboot.
pub(super) fn reboot_now(
    m: &crate::manifest::Manifest,
    args: &InstallArgs,
    (after, prepared): (Layer, bool),
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
    let mut argv = reboot::resume_argv(&exe.display().to_string(), &ran, archive.root());
    if m.os == crate::os::Os::Windows
        && args.library_python.is_none()
        && let Some(python) = resolved_interpreter(&m.library.python)
    {
        argv.extend(["--library-python".to_string(), python]);
    }
    count_the_reboot(state_path, after, prepared)?;
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
        let spec =
            crate::exec::Spec::captured(system_program(&cmd[0]), &cmd[1..], REBOOT_COMMAND_TIMEOUT);
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

/// `schtasks`, `shutdown`, `systemctl` as the PATH finds them (the way every other probe finds
/// its program), else by name.
pub(super) fn system_program(name: &str) -> std::ffi::OsString {
    use crate::host::System;
    crate::host::RealSystem
        .which(name)
        .map_or_else(|| name.into(), PathBuf::into_os_string)
}

/// The interpreter as the user's PATH finds it now, absolute; `None` when it already is a path
/// or is not found (the resume then reports the library layer's own error).
fn resolved_interpreter(python: &str) -> Option<String> {
    use crate::host::System;
    if std::path::Path::new(python).components().count() > 1 {
        return None;
    }
    let found = crate::host::RealSystem.which(python)?;
    Some(
        std::path::absolute(&found)
            .unwrap_or(found)
            .display()
            .to_string(),
    )
}

/// Records the reboot about to be asked for, or refuses it: past [`resume::MAX_REBOOTS`], or
/// when the same layer asked for the last one and the machine has booted since.
fn count_the_reboot(
    state_path: &std::path::Path,
    after: Layer,
    prepared: bool,
) -> Result<(), Failure> {
    let path = resume::record_path(state_path);
    let mut record = ResumeRecord::load(&path);
    let boot = super::defaults::boot_id();
    if let Some(why) = resume::decide(&record, after, prepared, boot.as_deref()).refusal() {
        return Err(CliError::Failed(why).into());
    }
    record.reboots.push(resume::RebootRequest {
        after,
        at: jiff::Timestamp::now().to_string(),
        boot,
        prepared,
    });
    record
        .save(&path)
        .map_err(|e| CliError::broke(anyhow!(e).context("recording the reboot")))?;
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
            LayerAction::Prepared => "prepared",
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
        ChainEnd::RebootRequired { .. }
            if report
                .layers
                .last()
                .is_some_and(|l| l.action == LayerAction::Prepared) =>
        {
            println!(
                "the host is prepared for the driver, which installs after a reboot (nouveau is still loaded until then): reboot, then run the same command again (--reboot does both)"
            )
        }
        ChainEnd::RebootRequired { after } => println!(
            "the {after} is installed but takes effect after a reboot: reboot, then run the same command again"
        ),
        _ => {}
    }
    if let (Some(password), ChainEnd::RebootRequired { .. }) = (&report.mok_password, &report.end) {
        println!(
            "Secure Boot: at this reboot the blue MOK manager screen asks to enroll the module signing key: choose \"Enroll MOK\", \"Continue\", \"Yes\", type the one-time password {password}, then \"Reboot\"; without it the driver's module does not load"
        );
    }
    match &report.end {
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
        ChainEnd::Complete | ChainEnd::DryRun | ChainEnd::RebootRequired { .. } => {}
    }
}
