//! `stackpin prove` and `stackpin up` (fetch → install → prove).

use std::path::PathBuf;

use anyhow::anyhow;
use serde::Serialize;

use super::chain::{
    InstallArgs, chain_ended, check_long_paths, end_exit, finish, reboot_now,
    refuse_remote_folders, with_library_python,
};
use super::term::{Bars, CliReporter, Spinner, fetched_line, render_batch_plan};
use super::valid_manifest::require_valid;
use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::host::RealSystem;
use crate::install::{ChainEnd, InstallOptions, InstallReport};
use crate::layers::live::LiveHost;
use crate::prove::run::{
    LiveExample, ProveError, ProveHost, ProveOptions, ProveReporter, Proven, prove,
};
use crate::record::MemorySource;
use crate::record::PeakAuthority;
use crate::up::{UpEnd, UpError, UpReporter, UpRequest, UpStep, up};

pub const PROVE_EXAMPLES: &str = "\
Examples:
  stackpin prove manifests/torch-2.5.1-cu124-linux.yaml
  stackpin prove manifests/torch-2.5.1-cu124-linux.yaml --fit 16,32,64
  stackpin prove manifests/torch-2.5.1-cu124-linux.yaml --batch 96 --gpu 1

Writes <archive>/<name>/proven-stack.yaml and proven-stack.svg only when the example ran on the
GPU (its STACKPIN_RESULT names a cuda/GPU device and a memory view saw it there). A run on the
CPU, or one no view saw on the GPU, writes failed-run.yaml with the reason and the layer and
exits 1; a failed example writes it too and exits 3. An earlier record stays as it was.";

pub const UP_EXAMPLES: &str = "\
Examples:
  sudo stackpin up manifests/torch-2.5.1-cu124-linux.yaml --yes
  sudo stackpin up manifests/torch-2.5.1-cu124-linux.yaml --yes --mirror http://lab-mirror:8000 --json

fetch → install → prove, resumable: after the driver's reboot run the same command again.";

/// Arguments of `prove`.
#[derive(Debug, clap::Args)]
pub struct ProveArgs {
    /// The stack's manifest.
    pub manifest: PathBuf,
    #[command(flatten)]
    pub options: ProveFlags,
}

/// The flags `prove` and `up` share.
#[derive(Debug, Clone, clap::Args)]
pub struct ProveFlags {
    /// The batch to prove at (default: the manifest's `example.batch`, 64); at least 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: Option<u32>,
    /// Also measure these batches and fit `fixed + per_sample × batch` (e.g. 16,32,64).
    #[arg(long, value_delimiter = ',', value_name = "B,B,…", value_parser = clap::value_parser!(u32).range(1..))]
    pub fit: Vec<u32>,
    /// The GPU to prove on (index); default: the first that CUDA_VISIBLE_DEVICES allows.
    #[arg(long)]
    pub gpu: Option<u32>,
}

impl ProveFlags {
    fn options(&self) -> ProveOptions {
        ProveOptions {
            batch: self.batch,
            fit: self.fit.clone(),
            gpu: self.gpu,
        }
    }
}

/// Arguments of `up`.
#[derive(Debug, clap::Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub fetch: super::fetch_args::FetchArgs,
    /// Do not ask before installing; required without a terminal or with --json (else exit 2).
    #[arg(long, short)]
    pub yes: bool,
    /// When the driver needs a reboot: register a one-shot resume of this command and reboot.
    #[arg(long)]
    pub reboot: bool,
    /// When another stackpin is working on this stack, exit 1 at once instead of waiting.
    #[arg(long)]
    pub no_wait: bool,
    /// The interpreter the library layer uses instead of the manifest's `library.python` (the
    /// resume after `--reboot` on Windows passes the one found at reboot time).
    #[arg(long, value_name = "PATH")]
    pub library_python: Option<String>,
    /// Windows: do not write the driver guard before the driver step (see `install --no-guard`).
    #[arg(long)]
    pub no_guard: bool,
    #[command(flatten)]
    pub prepare: super::chain::PrepareArgs,
    #[command(flatten)]
    pub prove: ProveFlags,
}

/// The error with its exit status, layer and fix (`crate::exit`); a failed example's message
/// also carries the explanation, the failure record and the last lines for the terminal.
fn prove_failure(e: ProveError) -> Failure {
    let detail = match &e {
        ProveError::ExampleFailed {
            explanation,
            failed_run,
            tail,
            ..
        } => Some(format!(
            "{e}\n  explanation: {explanation}\n  record of the failure: {}{}",
            failed_run.display(),
            if tail.is_empty() {
                String::new()
            } else {
                format!("\n  last lines:\n    | {}", tail.join("\n    | "))
            }
        )),
        ProveError::NotOnGpu {
            explanation,
            failed_run,
            layer,
            ..
        } => Some(format!(
            "{e}\n  layer: {layer}\n  explanation: {explanation}\n  record of the failure: {}",
            failed_run.display()
        )),
        _ => None,
    };
    let mut failure = Failure::from(e);
    if let Some(detail) = detail {
        failure.error = anyhow!(detail);
    }
    failure
}

fn run_prove(
    manifest: &std::path::Path,
    flags: &ProveFlags,
    global: &GlobalArgs,
) -> Result<Proven, Failure> {
    let m = require_valid(manifest)?;
    let stack = global.archive().stack(&m.name);
    // Shared with other proofs, exclusive for an install: no install replaces the venv under a
    // running example, and none starts until the proof has finished.
    let _in_use = if stack.root().is_dir() {
        let quiet = global.quiet || global.json;
        let note = |text: &str| {
            if !quiet {
                eprintln!("note: {text}");
            }
        };
        let path = stack.in_use_path();
        match crate::fsutil::lock::acquire(&path, crate::fsutil::lock::Mode::Shared, Some(&note)) {
            Ok(Ok(held)) => Some(held),
            Ok(Err(_)) => None,
            Err(e) => {
                return Err(Failure::from(CliError::unusable(
                    anyhow!(e).context(format!("taking the proof lock {}", path.display())),
                )));
            }
        }
    } else {
        None
    };
    let system = RealSystem;
    let view = LiveHost::on(&system, flags.gpu);
    let spinner = Spinner::new(global);
    let host = ProveHost {
        system: &system,
        view: &view,
        example: &LiveExample,
        advice: &|layer| crate::install::missing_layer_advice(&stack, layer),
    };
    prove(&m, &stack, &host, &flags.options(), &spinner).map_err(prove_failure)
}

pub fn run(args: &ProveArgs, global: &GlobalArgs) -> CmdResult {
    let _ = crate::exec::interrupt::on_ctrl_c("waiting for the example to finish");
    let proven = run_prove(&args.manifest, &args.options, global)?;
    if global.json {
        print_json(&proven.record)?;
    } else {
        print_proven(&proven);
    }
    latency_verdict(&proven)
}

/// Exit 1 when an inference stack's p99 latency is over its cycle time (the record keeps the
/// numbers either way: the stack works, it is too slow for the line).
fn latency_verdict(p: &Proven) -> CmdResult {
    match p.record.latency {
        Some(l) if !l.meets => Err(Failure::from(CliError::Refused(format!(
            "p99 latency {:.2} ms is over the cycle time of {} ms (p50 {}); the stack runs but misses the line's cycle. \
             Use a faster GPU or a smaller model or input, or correct example.cycle_time_ms; recorded in {}",
            l.p99_ms,
            l.cycle_time_ms,
            l.p50_ms
                .map_or("not reported".to_string(), |v| format!("{v:.2} ms")),
            p.record_path.display()
        )))),
        _ => Ok(Exit::Ok),
    }
}

fn print_proven(p: &Proven) {
    let r = &p.record;
    println!("proven: {} on {}", r.stack, r.host.hostname);
    if let Some(gpu) = r.gpus.iter().find(|g| g.index == r.example.gpu_index) {
        println!(
            "  GPU {}: {} ({} MiB, compute {}), driver {}",
            gpu.index,
            gpu.name,
            gpu.vram_mib,
            gpu.compute_capability.as_deref().unwrap_or("?"),
            gpu.driver
        );
    }
    println!(
        "  toolkit: CUDA {} in {}",
        r.toolkit.version,
        r.toolkit.root.display()
    );
    println!(
        "  library: {} {} (CUDA {}, cuDNN {})",
        r.library.name,
        r.library.version,
        r.library.cuda_build.as_deref().unwrap_or("?"),
        r.library.cudnn.as_deref().unwrap_or("?")
    );
    println!(
        "  example: batch {} in {:.1}s{}",
        r.example.batch,
        r.example.duration_s,
        r.example
            .samples_per_s
            .map_or(String::new(), |s| format!(", {s:.0} samples/s"))
    );
    let source = match r.peak.outside_source {
        MemorySource::PerProcess => "nvidia-smi, per process",
        MemorySource::WindowsCounter => "Windows GPU process counter",
        MemorySource::DeviceDelta => "the card's memory.used over its idle baseline",
        MemorySource::Unmeasured => "not measured",
    };
    let outside = r
        .peak
        .outside_mib
        .map_or("—".into(), |m| format!("{m} MiB ({source})"));
    let framework = r
        .peak
        .framework_mib
        .map_or("—".into(), |m| format!("{m:.0} MiB"));
    let authority = match r.peak.authority {
        PeakAuthority::Outside => "the outside view, CUDA context included",
        PeakAuthority::FrameworkPlusContext => "the framework's peak plus its CUDA context",
        PeakAuthority::Framework => "the framework's peak alone (no context estimate)",
    };
    println!(
        "  ran on: {} ({})",
        r.example.device.as_deref().unwrap_or("not reported"),
        r.example.judged_by
    );
    println!("  peak GPU memory: outside {outside}; framework {framework}");
    println!("  predictions use {:.0} MiB: {authority}", r.peak.mib);
    if !r.peak.authority_reason.is_empty() {
        println!("    why: {}", r.peak.authority_reason);
    }
    for note in &r.peak.notes {
        println!("    note: {note}");
    }
    if let Some(l) = &r.latency {
        println!(
            "  latency: p50 {} ms, p99 {:.2} ms against a cycle time of {} ms: {}",
            l.p50_ms.map_or("—".to_string(), |v| format!("{v:.2}")),
            l.p99_ms,
            l.cycle_time_ms,
            if l.meets { "meets it" } else { "OVER" }
        );
    }
    println!();
    print!("{}", render_batch_plan(&p.plan));
    println!();
    println!("record: {}", p.record_path.display());
    println!("plot:   {}", p.plot_path.display());
}

#[derive(Serialize)]
struct UpJson<'a> {
    stack: String,
    install: &'a InstallReport,
    reboot_required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    proven: Option<&'a crate::record::ProvenStack>,
    #[serde(skip_serializing_if = "Option::is_none")]
    record: Option<String>,
}

/// What `up` shows while it runs: the fetch's bars and notes, the chain's steps, the example's
/// spinner; with `--json` or `--quiet` only what goes to stderr anyway.
struct UpView {
    bars: Bars,
    install: CliReporter,
    spinner: Spinner,
    /// `--quiet` or `--json`: nothing on stdout but the one document.
    quiet: bool,
}

impl UpReporter for UpView {
    fn step(&self, step: UpStep) {
        if step == UpStep::Install {
            // The fetch is over: its bars make way for the chain's lines.
            self.bars.clear();
        }
    }
    fn fetched(&self, report: &crate::archive::FetchReport) {
        self.bars.clear();
        if self.quiet {
            return;
        }
        // As `fetch` prints them: what each file took, then the count.
        for f in &report.files {
            println!("{}", fetched_line(f));
        }
        println!(
            "{}: {} files archived and verified",
            report.stack.display(),
            report.files.len()
        );
    }
    fn fetch(&self) -> &dyn crate::archive::Progress {
        &self.bars
    }
    fn install(&self) -> &dyn crate::install::InstallReporter {
        &self.install
    }
    fn prove(&self) -> &dyn ProveReporter {
        &self.spinner
    }
}

/// `up --reboot`: when the chain stopped for a reboot, register the resume of `up` and reboot.
fn up_reboot(
    args: &UpArgs,
    m: &crate::manifest::Manifest,
    report: &crate::install::InstallReport,
    archive: &crate::archive::Archive,
) -> Result<(), Failure> {
    if args.reboot
        && let ChainEnd::RebootRequired { after } = report.end
    {
        let install = InstallArgs {
            manifest: args.fetch.manifest.clone(),
            dry_run: false,
            yes: true,
            force: vec![],
            reboot: true,
            resume_with: Default::default(),
            gpu: args.prove.gpu,
            gpu_arch: None,
            no_wait: args.no_wait,
            library_python: args.library_python.clone(),
            no_guard: args.no_guard,
            prepare: args.prepare.clone(),
        };
        let prepared = report
            .layers
            .last()
            .is_some_and(|l| l.action == crate::install::LayerAction::Prepared);
        reboot_now(
            m,
            &install,
            (after, prepared),
            &archive.stack(&m.name).state_path(),
            archive,
        )?;
    }
    Ok(())
}

pub fn run_up(args: &UpArgs, global: &GlobalArgs) -> CmdResult {
    // Consent before the first download: a refusal after minutes of fetching helps nobody.
    super::consent::require_consent("up", args.yes, global.json)?.confirm(
        &format!(
            "fetch, install and prove {} on this machine?",
            args.fetch.manifest.display()
        ),
        "installed",
    )?;
    let (m, text) = up_manifest(args, global)?;
    let config = args.fetch.config(m.mirror.as_deref())?;
    check_long_paths(&m, false)?;
    // The fetch and the chain print nothing on stdout here, so `up --json` stays one document.
    let quiet = GlobalArgs {
        json: false,
        quiet: global.quiet || global.json,
        archive: global.archive.clone(),
        color: global.color,
    };
    let view = UpView {
        bars: Bars::new(&quiet),
        install: CliReporter::new(quiet.quiet),
        spinner: Spinner::new(global),
        quiet: quiet.quiet,
    };
    let interrupted = crate::exec::interrupt::on_ctrl_c(
        "waiting for the running installer to finish, then stopping",
    );
    let archive = global.archive();
    let choices = args.prepare.choices()?;
    let gpu = args.prove.gpu;
    let system = RealSystem;
    let host = || -> Box<dyn crate::layers::HostView + '_> { Box::new(LiveHost::on(&system, gpu)) };
    let request = UpRequest {
        manifest: &m,
        manifest_text: &text,
        archive: &archive,
        fetch: &config,
        install: &InstallOptions {
            dry_run: false,
            force: vec![],
            skip_admin_check: super::defaults::skip_admin_check(),
            machine_lock: Some(super::defaults::machine_lock()),
            no_wait: args.no_wait,
            choices,
            windows_update: super::chain::windows_update_guards(&m, args.no_guard),
        },
        prove: &args.prove.options(),
        no_wait: args.no_wait,
        interrupted: &interrupted,
        host: &host,
        system: &system,
        example: &LiveExample,
    };
    let end = up(&request, &view).map_err(|e| match e {
        UpError::Prove(e) => prove_failure(e),
        UpError::FetchIncomplete { errors } => {
            view.bars.clear();
            for error in &errors {
                super::print_error(&anyhow!("{error}"));
            }
            Failure::from(UpError::FetchIncomplete { errors })
        }
        e => Failure::from(e),
    })?;
    let (report, proven) = match end {
        UpEnd::Stopped(report) => (report, None),
        UpEnd::Proven { install, proven } => (install, Some(proven)),
    };
    let reboot_required = matches!(report.end, ChainEnd::RebootRequired { .. });
    if !reboot_required {
        chain_ended(&report, &archive.stack(&m.name).state_path());
    }
    up_reboot(args, &m, &report, &archive)?;
    up_finished(&report, proven.as_deref(), reboot_required, global)
}

/// The manifest `up` runs (with `--library-python` in place) and its text for the archive.
fn up_manifest(
    args: &UpArgs,
    global: &GlobalArgs,
) -> Result<(crate::manifest::Manifest, String), Failure> {
    let m = with_library_python(
        require_valid(&args.fetch.manifest)?,
        args.library_python.as_deref(),
    );
    if args.reboot {
        refuse_remote_folders(&m, &args.fetch.manifest, &global.archive())?;
    }
    let text = crate::fsutil::read_text(&args.fetch.manifest).map_err(|e| {
        CliError::unusable(
            anyhow::Error::new(e).context(format!("reading {}", args.fetch.manifest.display())),
        )
    })?;
    Ok((m, text))
}

/// What `up` prints once the chain ended: the proof, or where the chain stopped.
fn up_finished(
    report: &crate::install::InstallReport,
    proven: Option<&Proven>,
    reboot_required: bool,
    global: &GlobalArgs,
) -> CmdResult {
    let Some(proven) = proven else {
        if global.json {
            print_json(&UpJson {
                stack: report.stack.clone(),
                install: report,
                reboot_required,
                proven: None,
                record: None,
            })?;
            // One JSON document on stdout; the failure itself goes to stderr with its exit code.
            return end_exit(report);
        }
        return finish(report, global);
    };
    if global.json {
        print_json(&UpJson {
            stack: report.stack.clone(),
            install: report,
            reboot_required,
            proven: Some(&proven.record),
            record: Some(proven.record_path.display().to_string()),
        })?;
    } else {
        print_proven(proven);
    }
    latency_verdict(proven)
}
