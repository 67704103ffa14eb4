//! `prove`: run the bundled example in the stack's environment while GPU memory is sampled from
//! outside, read the example's own report, predict every configured batch from the measured
//! peak, and write the proven-stack record and its plot. A failed run never writes the record;
//! it writes `failed-run.yaml` with the log and an explanation by layer.
//!
//! Layer checks, host facts and the sampler come from `install::proof`, `host` and `sampler`;
//! this module only orchestrates and assembles the record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::result_line::{ExampleReport, parse_output};
use super::sampler::{MemoryTrace, Sampler, SamplerError, host_tree};
use crate::archive::{Lockfile, StackDir};
use crate::compat::Os;
use crate::host::{self, HostReport, ProbeOptions, RealSystem};
use crate::install::plan::placeholder_values;
use crate::install::proof::{HostView, Proof, library_python, prove_layer};
use crate::install::runner::{self, RunnerError, Step, StepStatus, start_step};
use crate::manifest::{Layer, Manifest};
use crate::record::{
    CollectEnv, ExampleRun, FailedRun, GpuFacts, HostFacts, InstallerFact, LatencyCheck,
    LibraryFacts, MeasuredFit, PeakVram, ProvenStack, RecordError, ToolkitFacts, VramLine,
};
use crate::vram::{self, BatchPlan, Measurement, PlanRequest, VramError};

/// Why `prove` could not prove the stack.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("the {} layer is not in place: {}. Run `stackpin install` first (or `stackpin plan` to see why)", proof.layer, proof.seen)]
    LayerMissing { proof: Proof },
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
    #[error("example step")]
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
    #[error(
        "the manifest sets example.cycle_time_ms = {cycle_time_ms}, but the example reported no `p99_ms` in its STACKPIN_RESULT line; \
         use the bundled infer.py / infer_ort.py, or make your example print p50_ms and p99_ms"
    )]
    NoLatency { cycle_time_ms: f64 },
    #[error("the example finished but GPU memory could not be measured from any view: {0}")]
    Unmeasured(String),
    #[error("batch planning")]
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
}

/// The result of a successful proof.
#[derive(Debug, Clone)]
pub struct Proven {
    pub record: ProvenStack,
    pub plan: BatchPlan,
    pub record_path: PathBuf,
    pub plot_path: PathBuf,
}

/// Proves the stack: layers first, then the example at the proving batch (and the fit batches).
pub fn prove(
    m: &Manifest,
    stack: &StackDir,
    view: &dyn HostView,
    options: &ProveOptions,
    reporter: &dyn ProveReporter,
) -> Result<Proven, ProveError> {
    for layer in Layer::ORDER {
        let proof = prove_layer(m, layer, view);
        if !proof.holds {
            return Err(ProveError::LayerMissing { proof });
        }
    }
    let report = probe_host(m, options.gpu)?;
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
    let mut runs = Vec::new();
    for b in batches {
        runs.push(measure_once(
            m, stack, &smi, gpu.index, &examples, b, reporter,
        )?);
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

fn probe_host(m: &Manifest, gpu: Option<u32>) -> Result<HostReport, ProveError> {
    let options = ProbeOptions {
        gpu,
        // A `library.verify:` override is the layer's proof (no Python to import the library
        // from, as under Wine); the record then keeps the manifest's pins for the library.
        python: m.library.verify.is_none().then(|| library_python(m)),
        library: m.library.name.clone(),
        toolkit_roots: vec![PathBuf::from(&m.toolkit.root)],
        ..ProbeOptions::default()
    };
    Ok(host::probe(&RealSystem, &options)?)
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

fn measure_once(
    m: &Manifest,
    stack: &StackDir,
    smi: &Path,
    gpu_index: u32,
    examples: &Path,
    batch: u32,
    reporter: &dyn ProveReporter,
) -> Result<MeasuredRun, ProveError> {
    let mut values = placeholder_values(m, stack.root(), Layer::Library);
    values.insert("examples", examples.display().to_string());
    values.insert("batch", batch.to_string());
    let argv = runner::substitute(&m.example.run, &values)?;
    let mut env = stack_env(m);
    // The example must see the GPU the sampler watches.
    env.push(("CUDA_VISIBLE_DEVICES".into(), gpu_index.to_string()));
    env.push(("PYTHONUNBUFFERED".into(), "1".into()));
    let step = Step {
        argv: argv.clone(),
        env,
        log: stack
            .logs_dir()
            .join(runner::log_name(&format!("example-b{batch}"))),
        timeout: m.example_timeout(),
    };
    let sampler = Sampler::start(smi, gpu_index, Arc::from(host_tree()))?;
    reporter.run_started(batch, &argv);
    let running = start_step(&step)?;
    sampler.attach(running.pid());
    let outcome =
        running.wait_with(&mut |elapsed| reporter.tick(batch, elapsed, sampler.current_mib()))?;
    let trace = sampler.stop();
    let output = std::fs::read_to_string(&outcome.log).unwrap_or_default();
    let parsed = parse_output(&output);
    let failure = match (outcome.status, &parsed) {
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
    if let Some(why) = failure {
        return Err(fail(m, stack, batch, &argv, &outcome, &trace, &output, why));
    }
    let report = parsed.ok().flatten();
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
    })
}

#[allow(clippy::too_many_arguments)] // the failure record needs all of them; built once
fn fail(
    m: &Manifest,
    stack: &StackDir,
    batch: u32,
    argv: &[String],
    outcome: &runner::StepOutcome,
    trace: &MemoryTrace,
    output: &str,
    why: String,
) -> ProveError {
    let diagnosis = crate::diagnose::diagnose(output);
    let (layer, explanation) = match &diagnosis {
        Some(d) => (Some(d.layer.as_str().to_string()), format!("{} — {}", d.cause, d.fix)),
        None => (
            None,
            "no known failure matched the example's output; read the log, then `stackpin diagnose LOG`".to_string(),
        ),
    };
    let failed = FailedRun {
        record: crate::record::RECORD_SCHEMA,
        stack: m.name.clone(),
        failed_at: crate::record::now_rfc3339(),
        argv: argv.to_vec(),
        batch,
        exit_code: outcome.code,
        timed_out: outcome.status == StepStatus::TimedOut,
        duration_s: outcome.duration.as_secs_f64(),
        log: outcome.log.clone(),
        layer,
        explanation: explanation.clone(),
        peak_outside_mib: trace.peak_mib,
        last_lines: outcome.tail.clone(),
    };
    let path = stack.root().join("failed-run.yaml");
    let _ = failed.write(&path);
    ProveError::ExampleFailed {
        batch,
        why,
        failed_run: path,
        explanation,
        tail: outcome.tail.clone(),
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
    let library = match &report.library {
        Some(host::LibraryProbe::Found(info)) => LibraryFacts {
            name: m.library.name.clone(),
            version: info.version_text.clone(),
            cuda_build: info.cuda.clone(),
            cudnn: info.cudnn.clone(),
            architectures: info.arch_list.clone(),
        },
        _ => LibraryFacts {
            name: m.library.name.clone(),
            version: m.library.version.to_string(),
            cuda_build: Some(m.library.cuda.to_string()),
            cudnn: None,
            architectures: vec![],
        },
    };
    let toolkit = report
        .toolkits
        .iter()
        .find(|t| t.root == Path::new(&m.toolkit.root));
    let installers = stack
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
        .unwrap_or_default();
    let fit = (runs.len() >= 2)
        .then_some(plan.fit.as_ref())
        .flatten()
        .map(|f| MeasuredFit {
            fixed_mib: f.fixed_mib,
            per_sample_mib: f.per_sample_mib,
            points: runs.iter().map(|r| (r.batch, r.peak.mib)).collect(),
        });
    let mut environment = BTreeMap::new();
    environment.insert("PyTorch version".to_string(), library.version.clone());
    if let Some(c) = &library.cuda_build {
        environment.insert("CUDA used to build PyTorch".to_string(), c.clone());
    }
    if let Some(name) = &report.os.name {
        environment.insert("OS".to_string(), name.clone());
    }
    environment.insert(
        "GPU models and configuration".to_string(),
        format!("GPU {}: {}", gpu.index, gpu.name),
    );
    environment.insert(
        "Nvidia driver version".to_string(),
        gpu.driver_version.clone(),
    );
    if let Some(c) = &library.cudnn {
        environment.insert("cuDNN version".to_string(), c.clone());
    }
    environment.insert("Is CUDA available".to_string(), "True".to_string());
    ProvenStack {
        record: crate::record::RECORD_SCHEMA,
        stack: m.name.clone(),
        proven_at: crate::record::now_rfc3339(),
        host: HostFacts {
            hostname: hostname(),
            os: report.os.family.to_string(),
            os_version: report.os.version.clone(),
            kernel: report.os.kernel.clone(),
            cpu: None,
        },
        gpus: report
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
            .collect(),
        toolkit: ToolkitFacts {
            version: toolkit
                .and_then(|t| t.version.as_ref())
                .map_or_else(|| m.toolkit.version.to_string(), |v| v.to_string()),
            root: PathBuf::from(&m.toolkit.root),
            nvcc: toolkit.and_then(|t| t.nvcc.clone()),
        },
        library,
        installers,
        example: ExampleRun {
            argv: main.argv.clone(),
            batch: main.batch,
            gpu_index: gpu.index,
            duration_s: main.duration.as_secs_f64(),
            exit_code: 0,
            samples_per_s: main.report.as_ref().and_then(|r| r.samples_per_s),
            log: main.log.clone(),
        },
        peak: main.peak.clone(),
        per_sample_mib: plan.per_sample_mib,
        line: VramLine {
            share: m.vram.line,
            mib: plan.line_mib,
            vram_mib: gpu.memory_total_mib.unwrap_or(0),
        },
        predictions: serde_json::to_value(&plan.predictions).unwrap_or_default(),
        largest_safe_batch: plan.largest_safe_batch,
        fit,
        environment: CollectEnv { facts: environment },
        latency: None,
    }
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
