//! `prove`: run the bundled example in the stack's environment while GPU memory is sampled from
//! outside, read the example's own report, predict every configured batch from the measured
//! peak, and write the proven-stack record and its plot. A run proves the stack only on the GPU
//! (`super::judge_gpu_run`): a failed run, or a clean one on the CPU or seen by no memory view,
//! never writes the record; it writes `failed-run.yaml` with the reason, the log and the layer.
//!
//! Layer checks, host facts and the sampler come from `layers`, `host` and `sampler`; what to
//! do about a layer not in place comes from the caller (install owns `state.yaml`): this module
//! only orchestrates and assembles the record, and imports nothing from `install`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::result_line::{ExampleReport, parse_output};
use super::sampler::{MemoryTrace, Sampler, SamplerError, host_tree};
use crate::archive::{Lockfile, StackDir};
use crate::exec::step::{RunnerError, Step, StepOutcome, StepStatus, start_step};
use crate::host::{self, HostReport, ProbeOptions, System};
use crate::layers::{HostView, Proof, prove_layer};
use crate::manifest::placeholder::{Placeholder, Values, library_python};
use crate::manifest::{Layer, Manifest};
use crate::os::Os;
use crate::record::{
    CollectEnv, ExampleRun, FailedRun, GpuFacts, HostFacts, InstallerFact, LatencyCheck,
    LibraryFacts, MeasuredFit, PeakVram, ProvenStack, RecordError, ToolkitFacts, VramLine,
};
use crate::vram::{self, BatchPlan, Measurement, PlanRequest, VramError};

/// Why `prove` could not prove the stack.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("the {} layer is not in place: {}. {advice}", proof.layer, proof.seen)]
    LayerMissing {
        proof: Proof,
        /// What to do next, from the install state: install when it never ran, doctor and
        /// diagnose when it did.
        advice: String,
    },
    #[error("no NVIDIA GPU to prove on: {0}")]
    NoGpu(String),
    #[error("cannot probe the host")]
    Host(#[from] host::HostError),
    #[error("cannot write the bundled examples into {}", path.display())]
    Examples {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the example could not be run")]
    Runner(#[from] RunnerError),
    #[error("cannot sample GPU memory")]
    Sampler(#[from] SamplerError),
    #[error("the example at batch {batch} failed: {why}")]
    ExampleFailed {
        batch: u32,
        why: String,
        failed_run: PathBuf,
        explanation: String,
        tail: Vec<String>,
    },
    #[error("the example at batch {batch} did not prove the stack on the GPU: {reason}")]
    NotOnGpu {
        batch: u32,
        reason: String,
        layer: String,
        failed_run: PathBuf,
        explanation: String,
    },
    #[error(
        "the manifest sets example.cycle_time_ms = {cycle_time_ms}, but the example reported no `p99_ms` in its STACKPIN_RESULT line; \
         use the bundled infer.py / infer_ort.py, or make your example print p50_ms and p99_ms"
    )]
    NoLatency { cycle_time_ms: f64 },
    #[error("the example finished but GPU memory could not be measured from any view: {0}")]
    Unmeasured(String),
    #[error("batch planning from the measured peak")]
    Vram(#[from] VramError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("cannot draw the memory plot")]
    Svg(#[from] super::svg::SvgError),
}

/// What `prove` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct ProveOptions {
    /// The batch to prove at (default: the manifest's, 64).
    pub batch: Option<u32>,
    /// Extra batches to measure for a least-squares fit (the proving batch is always measured).
    pub fit: Vec<u32>,
    pub gpu: Option<u32>,
}

/// Progress, for the CLI's spinner.
pub trait ProveReporter {
    fn run_started(&self, batch: u32, argv: &[String]);
    /// Called every few tens of milliseconds while the example runs.
    fn tick(&self, batch: u32, elapsed: Duration, current_mib: Option<u64>);
    fn run_finished(&self, batch: u32, peak: Option<f64>);
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct MeasuredRun {
    pub batch: u32,
    pub argv: Vec<String>,
    pub trace: MemoryTrace,
    pub report: Option<ExampleReport>,
    pub peak: PeakVram,
    pub duration: Duration,
    pub log: PathBuf,
    /// What showed that the run was on the GPU.
    pub judged_by: String,
}

/// The result of a successful proof.
#[derive(Debug, Clone)]
pub struct Proven {
    pub record: ProvenStack,
    pub plan: BatchPlan,
    pub record_path: PathBuf,
    pub plot_path: PathBuf,
}

/// What prove sees of the world, handed in by its caller (the CLI's real machine, a test's
/// fake), so its orchestration runs without the real host.
pub struct ProveHost<'a> {
    /// The machine the host report (GPU, driver, toolkit, library) is probed through.
    pub system: &'a dyn System,
    /// The layers as the host shows them (asked before the example runs).
    pub view: &'a dyn HostView,
    /// Runs the example while GPU memory is sampled ([`LiveExample`] on the real machine).
    pub example: &'a dyn ExampleRunner,
    /// What to do about a layer that is not in place (from install's `state.yaml`: a layer
    /// that was installed is not fixed by installing again); see
    /// `install::missing_layer_advice`.
    pub advice: &'a dyn Fn(Layer) -> String,
}

/// Proves the stack: layers first, then the example at the proving batch (and the fit batches).
pub fn prove(
    m: &Manifest,
    stack: &StackDir,
    host: &ProveHost<'_>,
    options: &ProveOptions,
    reporter: &dyn ProveReporter,
) -> Result<Proven, ProveError> {
    let view = host.view;
    for layer in Layer::ORDER {
        let proof = prove_layer(m, layer, view);
        if !proof.holds {
            // A library that is there but blind is the driver's business, not install's.
            let advice = crate::layers::blind_library(m, layer, view)
                .unwrap_or_else(|| (host.advice)(layer));
            return Err(ProveError::LayerMissing { proof, advice });
        }
    }
    let report = probe_host(host.system, m, options.gpu)?;
    let gpu = report
        .gpu()
        .cloned()
        .ok_or_else(|| ProveError::NoGpu(report.selected_gpu.reason.clone()))?;
    let smi = report
        .driver
        .nvidia_smi
        .clone()
        .ok_or_else(|| ProveError::NoGpu("nvidia-smi was not found".into()))?;
    let examples =
        crate::examples::write_examples(stack.root()).map_err(|source| ProveError::Examples {
            path: stack.root().join("examples"),
            source,
        })?;
    let batch = options.batch.unwrap_or(m.example.batch);
    let mut batches = vec![batch];
    for b in &options.fit {
        if !batches.contains(b) {
            batches.push(*b);
        }
    }
    let ctx = RunContext {
        m,
        stack,
        smi: &smi,
        gpu_index: gpu.index,
        examples: &examples,
        host: &report,
        example: host.example,
        reporter,
    };
    let mut runs = Vec::new();
    for b in batches {
        runs.push(measure_once(&ctx, b)?);
    }
    let main = &runs[0];
    let measurements: Vec<Measurement> = runs
        .iter()
        .map(|r| Measurement {
            batch: r.batch,
            peak_mib: r.peak.mib,
        })
        .collect();
    let vram_mib = gpu.memory_total_mib.unwrap_or(0) as f64;
    let plan = vram::plan(&PlanRequest {
        measurements: &measurements,
        vram_mib,
        line: m.vram.line,
        batches: &m.vram.batches,
        dataset_mib: main.report.as_ref().and_then(|r| r.dataset_mib),
    })?;
    let mut record = assemble(m, stack, &report, &gpu, main, &plan, &runs);
    record.latency = latency_check(m, main.report.as_ref())?;
    let record_path = stack.proven_stack_path();
    record.write(&record_path)?;
    let plot_path = stack.proven_plot_path();
    let predictions: Vec<(u32, f64)> = plan
        .predictions
        .iter()
        .map(|p| (p.batch, p.peak_mib))
        .collect();
    super::svg::write(
        &plot_path,
        &super::svg::ProofChart {
            stack: &m.name,
            trace: &main.trace,
            vram_mib: gpu.memory_total_mib.unwrap_or(0),
            line_share: m.vram.line,
            measured_batch: main.batch,
            predictions: &predictions,
        },
    )?;
    Ok(Proven {
        record,
        plan,
        record_path,
        plot_path,
    })
}

/// The latency check when the manifest states a cycle time: p99 against it, recorded whether it
/// meets it or not (the CLI turns a miss into exit 1).
fn latency_check(
    m: &Manifest,
    report: Option<&ExampleReport>,
) -> Result<Option<LatencyCheck>, ProveError> {
    let Some(cycle_time_ms) = m.example.cycle_time_ms else {
        return Ok(None);
    };
    let p99 = report
        .and_then(|r| r.p99_ms)
        .ok_or(ProveError::NoLatency { cycle_time_ms })?;
    Ok(Some(LatencyCheck::new(
        report.and_then(|r| r.p50_ms),
        p99,
        cycle_time_ms,
    )))
}

fn probe_host(
    system: &dyn System,
    m: &Manifest,
    gpu: Option<u32>,
) -> Result<HostReport, ProveError> {
    let options = ProbeOptions {
        gpu,
        // A `library.verify:` override is the layer's proof (no Python to import the library
        // from, as under Wine); the record then keeps the manifest's pins for the library.
        python: m.library.verify.is_none().then(|| library_python(m)),
        library: m.library.name.clone(),
        toolkit_roots: vec![PathBuf::from(&m.toolkit.root)],
        ..ProbeOptions::default()
    };
    Ok(host::probe(system, &options)?)
}

/// The example's environment: the toolkit's `bin` first on PATH and its libraries on the loader
/// path, so the stack runs as pinned whatever else is installed.
pub(crate) fn stack_env(m: &Manifest) -> Vec<(String, String)> {
    let root = Path::new(&m.toolkit.root);
    let sep = if m.os == Os::Windows { ";" } else { ":" };
    let prepend = |var: &str, dir: PathBuf| {
        let old = std::env::var(var).unwrap_or_default();
        let value = if old.is_empty() {
            dir.display().to_string()
        } else {
            format!("{}{sep}{old}", dir.display())
        };
        (var.to_string(), value)
    };
    let mut env = vec![prepend("PATH", root.join("bin"))];
    if m.os == Os::Linux {
        env.push(prepend("LD_LIBRARY_PATH", root.join("lib64")));
    }
    env.push(("CUDA_HOME".into(), m.toolkit.root.clone()));
    env
}

/// What every example run of one proof shares.
struct RunContext<'a> {
    m: &'a Manifest,
    stack: &'a StackDir,
    smi: &'a Path,
    gpu_index: u32,
    examples: &'a Path,
    host: &'a HostReport,
    example: &'a dyn ExampleRunner,
    reporter: &'a dyn ProveReporter,
}

/// Runs the example once while GPU memory is sampled from outside: `started` just before the
/// child starts, `tick` while it runs (elapsed, the current sample). The log holds its output.
pub trait ExampleRunner {
    fn run(
        &self,
        step: &Step,
        sample: &SampleAt<'_>,
        started: &mut dyn FnMut(),
        tick: &mut dyn FnMut(Duration, Option<u64>),
    ) -> Result<(StepOutcome, MemoryTrace), ProveError>;
}

/// Where the example's GPU memory is sampled: nvidia-smi and the GPU the example is given.
pub struct SampleAt<'a> {
    pub smi: &'a Path,
    pub gpu_index: u32,
}

/// The example as a real child (through `exec::step`) with nvidia-smi's monitor watching its
/// process tree.
pub struct LiveExample;

impl ExampleRunner for LiveExample {
    fn run(
        &self,
        step: &Step,
        sample: &SampleAt<'_>,
        started: &mut dyn FnMut(),
        tick: &mut dyn FnMut(Duration, Option<u64>),
    ) -> Result<(StepOutcome, MemoryTrace), ProveError> {
        let sampler = Sampler::start(sample.smi, sample.gpu_index, Arc::from(host_tree()))?;
        started();
        let running = start_step(step)?;
        sampler.attach(running.pid());
        let outcome = running.wait_with(&mut |elapsed| tick(elapsed, sampler.current_mib()))?;
        Ok((outcome, sampler.stop()))
    }
}

fn measure_once(ctx: &RunContext<'_>, batch: u32) -> Result<MeasuredRun, ProveError> {
    let RunContext {
        m,
        stack,
        smi,
        gpu_index,
        examples,
        reporter,
        ..
    } = *ctx;
    let mut values = Values::layer(m, stack.root(), Layer::Library);
    values
        .set(Placeholder::Examples, examples.display().to_string())
        .set(Placeholder::Batch, batch.to_string());
    let argv = values.substitute(&m.example.run)?;
    let mut env = stack_env(m);
    // The example must see the GPU the sampler watches.
    env.push(("CUDA_VISIBLE_DEVICES".into(), gpu_index.to_string()));
    env.push(("PYTHONUNBUFFERED".into(), "1".into()));
    let step = Step {
        argv: argv.clone(),
        env,
        env_remove: Vec::new(),
        log: stack
            .logs_dir()
            .join(crate::exec::step::log_name(&format!("example-b{batch}"))),
        timeout: m.example_timeout(),
        cwd: None,
    };
    let (outcome, trace) = ctx.example.run(
        &step,
        &SampleAt { smi, gpu_index },
        &mut || reporter.run_started(batch, &argv),
        &mut |elapsed, mib| reporter.tick(batch, elapsed, mib),
    )?;
    let output = std::fs::read_to_string(&outcome.log).unwrap_or_default();
    let parsed = parse_output(&output);
    let failure = match (outcome.status, &parsed) {
        // The result line is the example's last: a log that stopped short has lost it.
        (StepStatus::Succeeded, _) if outcome.log_cut.is_some() => outcome
            .log_warning("the example")
            .map(|w| format!("its result cannot be read: {w}")),
        (StepStatus::Succeeded, Ok(_)) => None,
        (StepStatus::TimedOut, _) => Some(format!(
            "it ran past its timeout of {}s and was stopped",
            m.example_timeout().as_secs()
        )),
        (StepStatus::Succeeded, Err(e)) => {
            Some(format!("its STACKPIN_RESULT line is unreadable: {e}"))
        }
        (_, _) => Some(match outcome.code {
            Some(code) => format!("it exited with code {code}"),
            None => "it was killed by a signal".to_string(),
        }),
    };
    let run = FailedContext {
        batch,
        argv: &argv,
        outcome: &outcome,
        trace: &trace,
    };
    if let Some(why) = failure {
        return Err(fail(ctx, &run, &output, why));
    }
    let report = parsed.ok().flatten();
    // A clean exit proves nothing unless the example ran on the GPU and a view saw it there.
    let judged_by = match super::judge_gpu_run(&trace, report.as_ref()) {
        Ok(judged_by) => judged_by,
        Err(not_on_gpu) => return Err(not_proven(ctx, &run, report.as_ref(), &not_on_gpu)),
    };
    let peak = super::peak_vram(&trace, report.as_ref()).ok_or_else(|| {
        ProveError::Unmeasured(if trace.notes.is_empty() {
            "no nvidia-smi row, counter or framework figure".to_string()
        } else {
            trace.notes.join("; ")
        })
    })?;
    reporter.run_finished(batch, Some(peak.mib));
    Ok(MeasuredRun {
        batch,
        argv,
        trace,
        report,
        peak,
        duration: outcome.duration,
        log: outcome.log,
        judged_by,
    })
}

/// One finished run, as the failure record needs it.
struct FailedContext<'a> {
    batch: u32,
    argv: &'a [String],
    outcome: &'a StepOutcome,
    trace: &'a MemoryTrace,
}

/// The reason, layer and explanation for a clean run that did not prove the stack on the GPU,
/// from what the library said about itself (the host probe, else the example's report).
fn not_on_gpu_layer(
    m: &Manifest,
    host: &HostReport,
    report: Option<&ExampleReport>,
    not_on_gpu: &super::NotOnGpu,
) -> (String, String, String) {
    let lib = &m.library.name;
    let version = host.driver.gpus.first().map(|g| g.driver_version.clone());
    let driver = match (&version, &host.driver.cuda_supported) {
        (Some(v), Some(c)) => format!("nvidia-smi reports driver {v} (CUDA up to {c})"),
        (Some(v), None) => format!("nvidia-smi reports driver {v}"),
        _ => "nvidia-smi reports no working driver".to_string(),
    };
    let (version, cuda_build, sees_gpu) = match &host.library {
        Some(host::LibraryProbe::Found(info)) => (
            info.version_text.clone(),
            info.cuda.clone(),
            Some(info.cuda_available && info.device_count > 0),
        ),
        _ => {
            let reported = |key: &str| {
                report
                    .and_then(|r| r.versions.get(key))
                    .and_then(version_text)
            };
            (
                reported(lib).unwrap_or_else(|| m.library.version.to_string()),
                reported("cuda"),
                None,
            )
        }
    };
    if !matches!(not_on_gpu, super::NotOnGpu::Cpu { .. }) {
        return (
            not_on_gpu.to_string(),
            "example".to_string(),
            format!(
                "{not_on_gpu}. Make the example run on the GPU and print `STACKPIN_RESULT` with \
                 `\"device\": \"cuda\"` and its framework peak (the bundled examples do); {driver}"
            ),
        );
    }
    match (cuda_build, sees_gpu) {
        (None, _) => (
            format!("the example ran on the CPU: {lib} {version} is a CPU build"),
            "library".to_string(),
            format!(
                "{lib} {version} was built without CUDA; the manifest pins the CUDA {} build: \
                 reinstall the library from the archive (`stackpin install --force library`) and check \
                 the wheel index (library.pip.index_url)",
                m.library.cuda
            ),
        ),
        (Some(_), Some(true)) => (
            format!("the example ran on the CPU although {lib} {version} sees the GPU"),
            "example".to_string(),
            format!(
                "{lib} sees the GPU, so the example chose the CPU: check its --device and \
                 example.run in the manifest; {driver}"
            ),
        ),
        (Some(cuda), _) => (
            format!("the example ran on the CPU: {lib} {version} sees no GPU"),
            "driver".to_string(),
            format!(
                "{lib} {version} is built for CUDA {cuda} but sees no GPU — the driver layer: {driver}. \
                 Run `stackpin doctor` to compare the driver with the pins, and check \
                 CUDA_VISIBLE_DEVICES and the container's GPU access (--gpus all)"
            ),
        ),
    }
}

/// A version value as an example prints it: a string, or a number (cuDNN's `90100`).
fn version_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Writes `failed-run.yaml` for a run that exited cleanly but did not prove the stack.
fn not_proven(
    ctx: &RunContext<'_>,
    run: &FailedContext<'_>,
    report: Option<&ExampleReport>,
    not_on_gpu: &super::NotOnGpu,
) -> ProveError {
    let (reason, layer, explanation) = not_on_gpu_layer(ctx.m, ctx.host, report, not_on_gpu);
    let path = write_failed_run(
        ctx,
        run,
        FailedFacts {
            reason: reason.clone(),
            device: report.and_then(|r| r.device.clone()),
            layer: Some(layer.clone()),
            explanation: explanation.clone(),
        },
    );
    ProveError::NotOnGpu {
        batch: run.batch,
        reason,
        layer,
        failed_run: path,
        explanation,
    }
}

/// The words of a failure record.
struct FailedFacts {
    reason: String,
    device: Option<String>,
    layer: Option<String>,
    explanation: String,
}

/// Writes `failed-run.yaml` beside (never over) the proven record and returns its path.
fn write_failed_run(ctx: &RunContext<'_>, run: &FailedContext<'_>, facts: FailedFacts) -> PathBuf {
    let failed = FailedRun {
        record: crate::record::RECORD_SCHEMA,
        stack: ctx.m.name.clone(),
        failed_at: crate::record::now_rfc3339(),
        argv: run.argv.to_vec(),
        batch: run.batch,
        exit_code: run.outcome.code,
        timed_out: run.outcome.status == StepStatus::TimedOut,
        duration_s: run.outcome.duration.as_secs_f64(),
        log: run.outcome.log.clone(),
        reason: facts.reason,
        device: facts.device,
        layer: facts.layer,
        explanation: facts.explanation,
        peak_outside_mib: run.trace.peak_mib,
        last_lines: run.outcome.tail.clone(),
    };
    let path = ctx.stack.root().join(crate::record::FAILED_RUN_FILE);
    let _ = failed.write(&path);
    path
}

fn fail(ctx: &RunContext<'_>, run: &FailedContext<'_>, output: &str, why: String) -> ProveError {
    let diagnosis = crate::diagnose::diagnose(output);
    let (layer, explanation) = match &diagnosis {
        Some(d) => (Some(d.layer.as_str().to_string()), format!("{} — {}", d.cause, d.fix)),
        None => (
            None,
            "no known failure matched the example's output; read the log, then `stackpin diagnose LOG`".to_string(),
        ),
    };
    let device = parse_output(output).ok().flatten().and_then(|r| r.device);
    let path = write_failed_run(
        ctx,
        run,
        FailedFacts {
            reason: format!("the example at batch {}: {why}", run.batch),
            device,
            layer,
            explanation: explanation.clone(),
        },
    );
    ProveError::ExampleFailed {
        batch: run.batch,
        why,
        failed_run: path,
        explanation,
        tail: run.outcome.tail.clone(),
    }
}

fn assemble(
    m: &Manifest,
    stack: &StackDir,
    report: &HostReport,
    gpu: &host::Gpu,
    main: &MeasuredRun,
    plan: &BatchPlan,
    runs: &[MeasuredRun],
) -> ProvenStack {
    let probe = match &report.library {
        Some(host::LibraryProbe::Found(info)) => Some(&**info),
        _ => None,
    };
    let library = library_facts(m, main, probe);
    let environment = collect_env(m, report, gpu, &library, main, probe);
    ProvenStack {
        record: crate::record::RECORD_SCHEMA,
        stack: m.name.clone(),
        proven_at: crate::record::now_rfc3339(),
        host: host_facts(report),
        gpus: gpu_facts(report),
        toolkit: toolkit_facts(m, report),
        library,
        installers: installer_facts(stack),
        example: example_run(main, gpu),
        peak: main.peak.clone(),
        per_sample_mib: plan.per_sample_mib,
        line: VramLine {
            share: m.vram.line,
            mib: plan.line_mib,
            vram_mib: gpu.memory_total_mib.unwrap_or(0),
        },
        predictions: plan.predictions.clone(),
        largest_safe_batch: plan.largest_safe_batch,
        fit: measured_fit(plan, runs),
        environment,
        latency: None,
    }
}

/// The probe's facts first; where it has none (a `verify:` override, no Python to ask) the
/// example's own report, and only then the manifest's pins.
fn library_facts(
    m: &Manifest,
    main: &MeasuredRun,
    probe: Option<&host::LibraryInfo>,
) -> LibraryFacts {
    let reported = |key: &str| {
        main.report
            .as_ref()
            .and_then(|r| r.versions.get(key))
            .and_then(version_text)
    };
    LibraryFacts {
        name: m.library.name.clone(),
        version: probe
            .map(|i| i.version_text.clone())
            .or_else(|| reported(&m.library.name))
            .unwrap_or_else(|| m.library.version.to_string()),
        cuda_build: probe
            .and_then(|i| i.cuda.clone())
            .or_else(|| reported("cuda"))
            .or_else(|| probe.is_none().then(|| m.library.cuda.to_string())),
        cudnn: probe
            .and_then(|i| i.cudnn.clone())
            .or_else(|| reported("cudnn")),
        architectures: probe.map(|i| i.arch_list.clone()).unwrap_or_default(),
    }
}

fn host_facts(report: &HostReport) -> HostFacts {
    HostFacts {
        hostname: hostname(),
        os: report.os.family.to_string(),
        os_version: report.os.version.clone(),
        kernel: report.os.kernel.clone(),
        cpu: None,
    }
}

fn gpu_facts(report: &HostReport) -> Vec<GpuFacts> {
    report
        .driver
        .gpus
        .iter()
        .map(|g| GpuFacts {
            index: g.index,
            name: g.name.clone(),
            vram_mib: g.memory_total_mib.unwrap_or(0),
            compute_capability: g.compute_cap.clone(),
            driver: g.driver_version.clone(),
            driver_cuda: report.driver.cuda_supported.as_ref().map(|v| v.to_string()),
        })
        .collect()
}

/// The toolkit the host probe found at the manifest's root; the manifest's pin where it found none.
fn toolkit_facts(m: &Manifest, report: &HostReport) -> ToolkitFacts {
    let toolkit = report
        .toolkits
        .iter()
        .find(|t| t.root == Path::new(&m.toolkit.root));
    ToolkitFacts {
        version: toolkit
            .and_then(|t| t.version.as_ref())
            .map_or_else(|| m.toolkit.version.to_string(), |v| v.to_string()),
        root: PathBuf::from(&m.toolkit.root),
        nvcc: toolkit.and_then(|t| t.nvcc.clone()),
    }
}

/// The installers the stack's lock records; none when there is no lock to read.
fn installer_facts(stack: &StackDir) -> Vec<InstallerFact> {
    stack
        .read_lock()
        .map(|lock: Lockfile| {
            lock.files
                .iter()
                .map(|e| InstallerFact {
                    layer: e.layer.to_string(),
                    file: e.file.clone(),
                    sha256: e.sha256.clone(),
                    size: Some(e.size),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn example_run(main: &MeasuredRun, gpu: &host::Gpu) -> ExampleRun {
    let report = main.report.as_ref();
    ExampleRun {
        argv: main.argv.clone(),
        batch: main.batch,
        gpu_index: gpu.index,
        duration_s: main.duration.as_secs_f64(),
        exit_code: 0,
        samples_per_s: report.and_then(|r| r.samples_per_s),
        log: main.log.clone(),
        device: report.and_then(|r| r.device.clone()),
        device_name: report.and_then(|r| r.device_name.clone()),
        judged_by: main.judged_by.clone(),
    }
}

/// The fitted line, recorded only when two or more runs measured it.
fn measured_fit(plan: &BatchPlan, runs: &[MeasuredRun]) -> Option<MeasuredFit> {
    (runs.len() >= 2)
        .then_some(plan.fit.as_ref())
        .flatten()
        .map(|f| MeasuredFit {
            fixed_mib: f.fixed_mib,
            per_sample_mib: f.per_sample_mib,
            points: runs.iter().map(|r| (r.batch, r.peak.mib)).collect(),
        })
}

/// The collect_env facts, each from what was measured: the host probe, the library's own
/// answer, the example's report. A fact nobody reported is left out rather than assumed.
fn collect_env(
    m: &Manifest,
    report: &HostReport,
    gpu: &host::Gpu,
    library: &LibraryFacts,
    main: &MeasuredRun,
    probe: Option<&host::LibraryInfo>,
) -> CollectEnv {
    let framework = match m.library.name.as_str() {
        "torch" => "PyTorch".to_string(),
        "tensorflow" => "TensorFlow".to_string(),
        other => other.to_string(),
    };
    let mut facts = BTreeMap::new();
    facts.insert(format!("{framework} version"), library.version.clone());
    if let Some(c) = &library.cuda_build {
        facts.insert(format!("CUDA used to build {framework}"), c.clone());
    }
    if let Some(name) = &report.os.name {
        facts.insert("OS".to_string(), name.clone());
    }
    let python = probe.and_then(|i| i.python.clone()).or_else(|| {
        main.report
            .as_ref()
            .and_then(|r| r.versions.get("python"))
            .and_then(version_text)
    });
    if let Some(p) = python {
        facts.insert("Python version".to_string(), p);
    }
    facts.insert(
        "GPU models and configuration".to_string(),
        format!("GPU {}: {}", gpu.index, gpu.name),
    );
    facts.insert(
        "Nvidia driver version".to_string(),
        gpu.driver_version.clone(),
    );
    if let Some(c) = &library.cudnn {
        facts.insert("cuDNN version".to_string(), c.clone());
    }
    // What the library answered when asked; without a probe, what the example's run showed.
    let available = match (
        probe,
        main.report.as_ref().and_then(|r| r.device.as_deref()),
    ) {
        (Some(info), _) => Some(if info.cuda_available { "True" } else { "False" }.to_string()),
        (None, Some(device)) if super::RanOn::of(Some(device)) == super::RanOn::Gpu => {
            Some(format!("True (the example ran on {device})"))
        }
        _ => None,
    };
    if let Some(a) = available {
        facts.insert("Is CUDA available".to_string(), a);
    }
    CollectEnv { facts }
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .or_else(|_| std::env::var("COMPUTERNAME"))
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for ProveError {
    fn exit(&self) -> Exit {
        match self {
            // A layer out of place, no GPU, a run that was not on the GPU: the check found it.
            ProveError::LayerMissing { .. }
            | ProveError::NoGpu(_)
            | ProveError::NotOnGpu { .. } => Exit::Problem,
            ProveError::Runner(e) => e.exit(),
            ProveError::Record(e) => e.exit(),
            _ => Exit::External,
        }
    }

    fn layer(&self) -> Option<String> {
        match self {
            ProveError::LayerMissing { proof, .. } => Some(proof.layer.to_string()),
            ProveError::NoGpu(_) => Some("driver".to_string()),
            ProveError::NotOnGpu { layer, .. } => Some(layer.clone()),
            ProveError::ExampleFailed { .. } | ProveError::NoLatency { .. } => {
                Some("example".to_string())
            }
            _ => None,
        }
    }

    fn fix(&self) -> Option<String> {
        match self {
            ProveError::LayerMissing { advice, .. } => Some(advice.clone()),
            ProveError::NotOnGpu { explanation, .. }
            | ProveError::ExampleFailed { explanation, .. } => Some(explanation.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    //! prove's orchestration against the fake host and a fake example: nothing is spawned. What
    //! a user would check: which layer stopped the proof and what to do, whether a record or a
    //! failure record was written.

    use std::cell::Cell;

    use super::*;
    use crate::host::fake::FakeSystem;
    use crate::layers::live::LiveHost;
    use crate::record::MemorySource;

    const LINUX: &str = include_str!("../../manifests/torch-2.5.1-cu124-linux.yaml");

    fn manifest() -> Manifest {
        crate::manifest::parse(LINUX, Path::new("m.yaml")).expect("shipped manifest parses")
    }

    /// An example that prints `line` and exits 0; nvidia-smi saw its process tree at
    /// `seen_mib` (`None`: no outside view saw it). It counts its runs.
    struct FakeExample {
        line: &'static str,
        seen_mib: Option<u64>,
        runs: Cell<u32>,
    }

    impl FakeExample {
        fn printing(line: &'static str) -> Self {
            FakeExample {
                line,
                seen_mib: None,
                runs: Cell::new(0),
            }
        }

        fn seen_at(mut self, mib: u64) -> Self {
            self.seen_mib = Some(mib);
            self
        }
    }

    impl ExampleRunner for FakeExample {
        fn run(
            &self,
            step: &Step,
            _sample: &SampleAt<'_>,
            started: &mut dyn FnMut(),
            _tick: &mut dyn FnMut(Duration, Option<u64>),
        ) -> Result<(StepOutcome, MemoryTrace), ProveError> {
            self.runs.set(self.runs.get() + 1);
            started();
            if let Some(dir) = step.log.parent() {
                std::fs::create_dir_all(dir).expect("log folder");
            }
            std::fs::write(&step.log, format!("{}\n", self.line)).expect("log");
            let outcome = StepOutcome {
                status: StepStatus::Succeeded,
                code: Some(0),
                tail: vec![self.line.to_string()],
                log: step.log.clone(),
                duration: Duration::from_secs(1),
                log_cut: None,
            };
            let trace = MemoryTrace {
                source: match self.seen_mib {
                    Some(_) => MemorySource::PerProcess,
                    None => MemorySource::Unmeasured,
                },
                samples: self
                    .seen_mib
                    .map(|mib| vec![(0, mib / 2), (500, mib)])
                    .unwrap_or_default(),
                peak_mib: self.seen_mib,
                baseline_mib: None,
                device_samples: vec![],
                unavailable_rows: 0,
                notes: vec![],
                others: vec![],
            };
            Ok((outcome, trace))
        }
    }

    struct Silent;

    impl ProveReporter for Silent {
        fn run_started(&self, _batch: u32, _argv: &[String]) {}
        fn tick(&self, _batch: u32, _elapsed: Duration, _current_mib: Option<u64>) {}
        fn run_finished(&self, _batch: u32, _peak: Option<f64>) {}
    }

    fn prove_on(
        sys: &FakeSystem,
        example: &FakeExample,
        stack: &StackDir,
    ) -> Result<Proven, ProveError> {
        let view = LiveHost::on(sys, None);
        let host = ProveHost {
            system: sys,
            view: &view,
            example,
            advice: &|layer| format!("install the {layer} (advice from the caller)"),
        };
        prove(&manifest(), stack, &host, &ProveOptions::default(), &Silent)
    }

    #[test]
    fn a_missing_layer_stops_prove_before_the_example_with_the_callers_advice() {
        let mut sys = FakeSystem::bare_linux();
        sys.with_driver("595.71.05").with_library("2.5.1+cu124");
        let archive = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(archive.path(), &manifest().name);
        let example = FakeExample::printing("never printed");
        let err = prove_on(&sys, &example, &stack).expect_err("the toolkit is missing");
        assert!(matches!(
            &err,
            ProveError::LayerMissing { proof, .. } if proof.layer == Layer::Toolkit
        ));
        assert_eq!(
            err.to_string(),
            "the toolkit layer is not in place: /usr/local/cuda-12.4 does not exist. \
             install the toolkit (advice from the caller)"
        );
        assert_eq!(example.runs.get(), 0, "the example never ran");
        assert!(!stack.root().join("examples").exists());
        assert!(!stack.proven_stack_path().exists());
    }

    #[test]
    fn a_run_the_example_says_was_on_the_cpu_is_not_a_proof() {
        let sys = FakeSystem::linux_host("595.71.05", "2.5.1+cu124");
        let archive = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(archive.path(), &manifest().name);
        std::fs::create_dir_all(stack.root()).expect("stack folder");
        let example = FakeExample::printing(
            r#"STACKPIN_RESULT {"device": "cpu", "batch": 64, "samples_per_s": 12.0}"#,
        );
        let err = prove_on(&sys, &example, &stack).expect_err("a CPU run proves nothing");
        assert_eq!(example.runs.get(), 1);
        let ProveError::NotOnGpu {
            batch,
            reason,
            layer,
            failed_run,
            ..
        } = &err
        else {
            panic!("not a NotOnGpu: {err:?}");
        };
        assert_eq!(*batch, 64);
        assert_eq!(
            reason,
            "the example ran on the CPU although torch 2.5.1+cu124 sees the GPU"
        );
        assert_eq!(
            layer, "example",
            "torch sees the GPU: the example chose the CPU"
        );
        assert!(failed_run.is_file(), "failed-run.yaml is written");
        assert!(!stack.proven_stack_path().exists(), "no proven record");
        assert_eq!(err.exit(), Exit::Problem);
    }

    #[test]
    fn a_run_on_the_gpu_writes_the_record_with_the_peak_nvidia_smi_saw() {
        let sys = FakeSystem::linux_host("595.71.05", "2.5.1+cu124");
        let archive = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(archive.path(), &manifest().name);
        std::fs::create_dir_all(stack.root()).expect("stack folder");
        let example = FakeExample::printing(r#"STACKPIN_RESULT {"device": "cuda:0", "batch": 64}"#)
            .seen_at(2560);
        let proven = prove_on(&sys, &example, &stack).expect("a GPU run proves the stack");
        assert_eq!(example.runs.get(), 1, "one run at the proving batch");
        assert_eq!(proven.record_path, stack.proven_stack_path());
        assert!(proven.record_path.is_file() && proven.plot_path.is_file());
        assert!(!stack.root().join(crate::record::FAILED_RUN_FILE).exists());
        let record = &proven.record;
        assert_eq!(record.example.batch, 64);
        assert_eq!(record.example.argv[2], "--batch-size");
        assert_eq!(record.example.argv[3], "64");
        assert_eq!(record.peak.outside_mib, Some(2560));
        assert_eq!(record.gpus[0].name, "NVIDIA L4");
        assert_eq!(record.library.version, "2.5.1+cu124");
        assert_eq!(record.toolkit.version, "12.4.1");
    }

    #[test]
    fn a_cpu_build_of_the_library_is_named_as_the_layer_to_fix() {
        let mut sys = FakeSystem::linux_host("595.71.05", "2.5.1+cu124");
        sys.programs
            .remove(Path::new(crate::host::fake::VENV_PYTHON));
        sys.answer(
            crate::host::fake::VENV_PYTHON,
            &["-c"],
            0,
            r#"{"library": "torch", "python": "3.12.3", "version": "2.5.1+cu124", "cuda": null, "cuda_available": false, "device_count": 0, "arch_list": [], "ok": true}"#,
        );
        let archive = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(archive.path(), &manifest().name);
        std::fs::create_dir_all(stack.root()).expect("stack folder");
        let example = FakeExample::printing(r#"STACKPIN_RESULT {"device": "cpu"}"#);
        let err = prove_on(&sys, &example, &stack).expect_err("a CPU build proves nothing");
        // The library layer's own proof already fails on a CPU build: prove stops there.
        assert!(
            matches!(&err, ProveError::LayerMissing { proof, .. } if proof.layer == Layer::Library),
            "{err}"
        );
        assert_eq!(example.runs.get(), 0);
    }
}
