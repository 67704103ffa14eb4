//! `measure`: any command (an inference service, a test, a training script) run under the prove
//! sampler, and its GPU memory per process: the peak, and the level it holds after warm-up.
//!
//! "Reserved after warm-up" is the median of the last half of a process's samples (by count).
//! Frameworks reserve memory in steps while the first requests run (kernels load, the allocator
//! grows its pool) and then hold a plateau; the median of the second half reads that plateau
//! and ignores both the climb and a single spike. A run too short to have a plateau reports the
//! median of what there is, which is why the sample count is reported beside it.
//!
//! `--baseline` runs a one-tensor script for a stack's library (the `baseline_<probe>()` function
//! of the library probe script, chosen by `data/libraries.yaml`), so the figure is the CUDA
//! context plus the framework runtime alone: the fixed per-process cost `budget` plans with. The
//! script says where its tensor landed (`STACKPIN_BASELINE {"gpu": …, "device": …}`); a tensor on
//! the CPU (TensorFlow and ONNX Runtime fall back without an error) or a run in which nothing was
//! measured is refused rather than handed out as a zero budget ([`judge_baseline`]). This module
//! runs and summarises; picking the GPU and printing are the CLI's, sampling is `sampler`'s.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sampler::{ProcessSeries, Sampler, SamplerError, host_tree};
use crate::compat;
use crate::exec::step::{RunnerError, Step, StepStatus, start_step};
use crate::host::library_probe::PROBE_SCRIPT;
use crate::library::LibraryDescription;
use crate::manifest::Manifest;
use crate::manifest::placeholder::library_python;
use crate::record::MemorySource;

/// How long the baseline script holds its one tensor: long enough for the sampler (100 ms
/// loop) to read a steady figure many times.
pub const BASELINE_HOLD_S: u32 = 2;

/// Why a command could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot run the command")]
    Runner(#[from] RunnerError),
    #[error("cannot sample GPU memory")]
    Sampler(#[from] SamplerError),
    #[error(
        "library `{library}`: stackpin has no one-tensor baseline for it (it has one for {known}: the libraries data/libraries.yaml describes); \
         run `stackpin measure -- YOUR-SERVICE` instead, or measure a script that only initialises the runtime"
    )]
    NoBaselineScript { library: String, known: String },
}

/// The line the baseline script prints before it holds its tensor.
pub const BASELINE_PREFIX: &str = "STACKPIN_BASELINE";

/// Where the baseline script's tensor landed, as the library itself said.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct BaselineReport {
    /// True when the library put the tensor (or session) on the GPU.
    pub gpu: bool,
    /// The library's own words: `cuda:0`, `/job:localhost/…/device:CPU:0`, `CPUExecutionProvider`.
    pub device: String,
}

/// The last `STACKPIN_BASELINE {json}` line of the script's output, if it printed one.
pub fn baseline_report(output: &str) -> Option<BaselineReport> {
    output.lines().rev().find_map(|line| {
        let json = line.trim().strip_prefix(BASELINE_PREFIX)?;
        serde_json::from_str(json.trim()).ok()
    })
}

/// Why a baseline run gives no figure to budget with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaselineRefusal {
    #[error(
        "the one-tensor baseline ran on the CPU ({device}): {title} placed its tensor there without an error, \
         so there is no GPU figure to put in a budget. Ask the stack's Python what `{gpus}` says \
         (`stackpin host --python PY --library {library}`): the driver, the toolkit's libraries or a CPU-only build"
    )]
    OnCpu {
        title: String,
        library: String,
        device: String,
        gpus: String,
    },
    #[error(
        "the one-tensor baseline measured nothing on GPU {gpu_index} ({detail}); a zero is not a budget. \
         Check that the script runs on that GPU (--gpu N) and that nvidia-smi lists its process"
    )]
    NothingMeasured { gpu_index: u32, detail: String },
    #[error(
        "the one-tensor baseline printed no {BASELINE_PREFIX} line, so where its tensor landed is unknown; its output is in {}",
        log.display()
    )]
    NoReport { log: PathBuf },
}

/// The fixed per-process cost a baseline run measured, or why it is refused: a tensor the library
/// put on the CPU first (whatever was measured), then a run with no GPU memory at all, then a
/// script that never said where its tensor went.
pub fn judge_baseline(
    description: &LibraryDescription,
    memory: &CommandMemory,
    report: Option<&BaselineReport>,
) -> Result<u64, BaselineRefusal> {
    if let Some(r) = report.filter(|r| !r.gpu) {
        return Err(BaselineRefusal::OnCpu {
            title: description.title.clone(),
            library: description.name.clone(),
            device: r.device.clone(),
            gpus: description.asks.gpus.clone(),
        });
    }
    let peak = memory.peak_mib.filter(|&mib| mib > 0);
    let Some(peak) = peak else {
        return Err(BaselineRefusal::NothingMeasured {
            gpu_index: memory.gpu_index,
            detail: match memory.peak_mib {
                Some(_) => "its processes held 0 MiB".to_string(),
                None if memory.notes.is_empty() => {
                    "nvidia-smi listed none of its processes".to_string()
                }
                None => memory.notes.join("; "),
            },
        });
    };
    if report.is_none() {
        return Err(BaselineRefusal::NoReport {
            log: memory.log.clone(),
        });
    }
    Ok(peak)
}

/// What to run and where to watch it.
#[derive(Debug, Clone)]
pub struct MeasureRequest {
    /// The command, as given (never through a shell).
    pub argv: Vec<String>,
    /// Extra environment for the command (the stack's toolkit for `--baseline`).
    pub env: Vec<(String, String)>,
    /// The nvidia-smi to sample with.
    pub smi: PathBuf,
    /// The GPU index nvidia-smi is asked about.
    pub gpu_index: u32,
    /// Where the command's output is logged.
    pub log: PathBuf,
    pub timeout: Duration,
}

/// One process of the command's tree, as nvidia-smi listed it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessMemory {
    pub pid: u32,
    /// Whether this is the command itself (not a child it started).
    pub root: bool,
    pub peak_mib: u64,
    /// The median of the last half of this process's samples (see the module header).
    pub reserved_after_warmup_mib: Option<u64>,
    pub samples: usize,
}

/// The command's GPU memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandMemory {
    pub argv: Vec<String>,
    pub gpu_index: u32,
    /// The view the figures come from (per process unless nvidia-smi could not say).
    pub source: MemorySource,
    /// The highest sum over the command's processes at one moment.
    pub peak_mib: Option<u64>,
    /// The tree's sum after warm-up: the median of the last half of the summed samples.
    pub reserved_after_warmup_mib: Option<u64>,
    /// The card's `memory.used` before the command started.
    pub card_baseline_mib: Option<u64>,
    pub processes: Vec<ProcessMemory>,
    pub exit_code: Option<i32>,
    pub status: StepStatus,
    pub duration_s: f64,
    pub log: PathBuf,
    /// Fallbacks and caveats from the sampler.
    pub notes: Vec<String>,
}

/// The median of the last half of `samples` (by count; an odd count gives the middle element
/// to the last half), or `None` without samples.
pub fn after_warmup(samples: &[(u64, u64)]) -> Option<u64> {
    let tail = &samples[samples.len() / 2..];
    let mut values: Vec<u64> = tail.iter().map(|&(_, mib)| mib).collect();
    values.sort_unstable();
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[n / 2]),
        // Even count: the lower middle, a figure that was actually observed.
        n => Some(values[n / 2 - 1]),
    }
}

/// Runs the command under the sampler; `tick` is called while it runs with the elapsed time and
/// the latest figure, for a spinner. A command that fails is still measured: its status says so.
pub fn measure(
    request: &MeasureRequest,
    tick: &mut dyn FnMut(Duration, Option<u64>),
) -> Result<CommandMemory, MeasureError> {
    let step = Step {
        argv: request.argv.clone(),
        env: request.env.clone(),
        env_remove: Vec::new(),
        log: request.log.clone(),
        timeout: request.timeout,
        cwd: None,
    };
    let sampler = Sampler::start(&request.smi, request.gpu_index, Arc::from(host_tree()))?;
    let running = match start_step(&step) {
        Ok(running) => running,
        Err(e) => {
            sampler.stop();
            return Err(e.into());
        }
    };
    sampler.attach(running.pid());
    let root_pid = running.command_pid();
    let outcome = running.wait_with(&mut |elapsed| tick(elapsed, sampler.current_mib()));
    let (trace, series) = sampler.stop_with_processes();
    let outcome = outcome?;
    let per_process = trace.source == MemorySource::PerProcess;
    Ok(CommandMemory {
        argv: request.argv.clone(),
        gpu_index: request.gpu_index,
        source: trace.source,
        peak_mib: trace.peak_mib,
        reserved_after_warmup_mib: after_warmup(&trace.samples),
        card_baseline_mib: trace.baseline_mib,
        processes: if per_process {
            rows(&series, root_pid)
        } else {
            Vec::new()
        },
        exit_code: outcome.code,
        status: outcome.status,
        duration_s: outcome.duration.as_secs_f64(),
        log: outcome.log,
        notes: trace.notes,
    })
}

fn rows(series: &[ProcessSeries], root_pid: u32) -> Vec<ProcessMemory> {
    let mut rows: Vec<ProcessMemory> = series
        .iter()
        .filter_map(|s| {
            Some(ProcessMemory {
                pid: s.pid,
                root: s.pid == root_pid,
                peak_mib: s.samples.iter().map(|&(_, mib)| mib).max()?,
                reserved_after_warmup_mib: after_warmup(&s.samples),
                samples: s.samples.len(),
            })
        })
        .collect();
    // Largest first: the process a user would look at.
    rows.sort_by(|a, b| b.peak_mib.cmp(&a.peak_mib).then(a.pid.cmp(&b.pid)));
    rows
}

/// The library a baseline is for, from the manifest's `library.name`.
pub fn baseline_library(m: &Manifest) -> Result<&'static LibraryDescription, MeasureError> {
    compat::libraries()
        .describe(&m.library.name)
        .ok_or_else(|| MeasureError::NoBaselineScript {
            library: m.library.name.clone(),
            known: compat::libraries().names().join(", "),
        })
}

/// The one-tensor script for the stack's library, run with the stack's Python: it initialises
/// CUDA and the framework, puts one tiny tensor (ONNX Runtime: a one-node session) on the GPU,
/// says where it landed, holds it for [`BASELINE_HOLD_S`] seconds and exits.
pub fn baseline_argv(m: &Manifest) -> Result<Vec<String>, MeasureError> {
    let description = baseline_library(m)?;
    Ok(vec![
        library_python(m).display().to_string(),
        "-c".to_string(),
        PROBE_SCRIPT.to_string(),
        "baseline".to_string(),
        description.probe.clone(),
        description.module.clone(),
        BASELINE_HOLD_S.to_string(),
    ])
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for MeasureError {
    fn exit(&self) -> Exit {
        match self {
            MeasureError::Runner(e) => e.exit(),
            MeasureError::NoBaselineScript { .. } => Exit::Input,
            _ => Exit::External,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[u64]) -> Vec<(u64, u64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as u64 * 100, v))
            .collect()
    }

    #[test]
    fn after_warmup_reads_the_plateau_not_the_climb_or_a_spike() {
        let climb_then_plateau = series(&[10, 300, 600, 880, 900, 900, 2000, 900, 900, 900]);
        assert_eq!(after_warmup(&climb_then_plateau), Some(900));
    }

    #[test]
    fn after_warmup_of_an_even_tail_is_an_observed_value() {
        assert_eq!(after_warmup(&series(&[1, 2, 500, 700])), Some(500));
        assert_eq!(after_warmup(&series(&[42])), Some(42));
        assert_eq!(after_warmup(&[]), None);
    }

    fn memory(peak_mib: Option<u64>) -> CommandMemory {
        CommandMemory {
            argv: vec!["python".into()],
            gpu_index: 0,
            source: MemorySource::PerProcess,
            peak_mib,
            reserved_after_warmup_mib: peak_mib,
            card_baseline_mib: Some(300),
            processes: vec![],
            exit_code: Some(0),
            status: StepStatus::Succeeded,
            duration_s: 2.5,
            log: PathBuf::from("/logs/baseline.log"),
            notes: vec![],
        }
    }

    fn tensorflow() -> &'static LibraryDescription {
        compat::libraries()
            .describe("tensorflow")
            .expect("described")
    }

    #[test]
    fn a_baseline_report_is_read_from_the_last_line_that_carries_it() {
        let out = "warning: something\nSTACKPIN_BASELINE {\"gpu\": true, \"device\": \"cuda:0\"}\n";
        assert_eq!(
            baseline_report(out),
            Some(BaselineReport {
                gpu: true,
                device: "cuda:0".into()
            })
        );
        assert_eq!(baseline_report("no line here"), None);
    }

    #[test]
    fn a_tensor_on_the_cpu_is_refused_even_when_memory_was_seen() {
        let cpu = BaselineReport {
            gpu: false,
            device: "/job:localhost/replica:0/task:0/device:CPU:0".into(),
        };
        let err =
            judge_baseline(tensorflow(), &memory(Some(250)), Some(&cpu)).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("ran on the CPU"), "{text}");
        assert!(text.contains("list_physical_devices"), "{text}");
        assert!(!text.contains("torch"), "TensorFlow's own words: {text}");
    }

    #[test]
    fn a_baseline_that_measured_nothing_or_zero_is_refused() {
        let gpu = BaselineReport {
            gpu: true,
            device: "cuda:0".into(),
        };
        for peak in [None, Some(0)] {
            let err = judge_baseline(tensorflow(), &memory(peak), Some(&gpu)).expect_err("zero");
            assert!(
                matches!(err, BaselineRefusal::NothingMeasured { .. }),
                "{err}"
            );
        }
        assert_eq!(
            judge_baseline(tensorflow(), &memory(Some(480)), Some(&gpu)),
            Ok(480)
        );
        assert!(matches!(
            judge_baseline(tensorflow(), &memory(Some(480)), None),
            Err(BaselineRefusal::NoReport { .. })
        ));
    }

    #[test]
    fn rows_put_the_largest_process_first_and_mark_the_root() {
        let s = vec![
            ProcessSeries {
                pid: 10,
                samples: series(&[100, 200]),
            },
            ProcessSeries {
                pid: 11,
                samples: series(&[300, 900, 880]),
            },
            ProcessSeries {
                pid: 12,
                samples: vec![],
            },
        ];
        let r = rows(&s, 10);
        assert_eq!(r.len(), 2, "a process without samples is no row");
        assert_eq!((r[0].pid, r[0].peak_mib, r[0].root), (11, 900, false));
        assert_eq!(r[0].reserved_after_warmup_mib, Some(880));
        assert_eq!((r[1].pid, r[1].root), (10, true));
    }
}
