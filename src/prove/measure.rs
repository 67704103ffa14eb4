//! `measure`: any command (an inference service, a test, a training script) run under the prove
//! sampler, and its GPU memory per process: the peak, and the level it holds after warm-up.
//!
//! "Reserved after warm-up" is the median of the last half of a process's samples (by count).
//! Frameworks reserve memory in steps while the first requests run (kernels load, the allocator
//! grows its pool) and then hold a plateau; the median of the second half reads that plateau
//! and ignores both the climb and a single spike. A run too short to have a plateau reports the
//! median of what there is, which is why the sample count is reported beside it.
//!
//! `--baseline` runs a one-tensor script for a stack's library, so the figure is the CUDA context
//! plus the framework runtime alone: the fixed per-process cost `budget` plans with. This module
//! runs and summarises; picking the GPU and printing are the CLI's, sampling is `sampler`'s.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::sampler::{MemorySource, ProcessSeries, Sampler, SamplerError, host_tree};
use crate::install::proof::library_python;
use crate::install::runner::{RunnerError, Step, StepStatus, start_step};
use crate::manifest::Manifest;

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
        "library `{library}`: stackpin has no one-tensor baseline script for it (it has one for torch and tensorflow); \
         run `stackpin measure -- YOUR-SERVICE` instead, or measure a script that only initialises the runtime"
    )]
    NoBaselineScript { library: String },
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
    };
    let sampler = Sampler::start(&request.smi, request.gpu_index, Arc::from(host_tree()))?;
    let running = match start_step(&step) {
        Ok(running) => running,
        Err(e) => {
            sampler.stop();
            return Err(e.into());
        }
    };
    let root_pid = running.pid();
    sampler.attach(root_pid);
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

/// The one-tensor script for the stack's library, run with the stack's Python: it initialises
/// CUDA and the framework, holds one tiny tensor for [`BASELINE_HOLD_S`] seconds and exits.
pub fn baseline_argv(m: &Manifest) -> Result<Vec<String>, MeasureError> {
    let script = match m.library.name.as_str() {
        "torch" | "pytorch" => format!(
            "import time, torch; x = torch.zeros(1, device='cuda'); torch.cuda.synchronize(); time.sleep({BASELINE_HOLD_S})"
        ),
        "tensorflow" | "tensorflow-gpu" => format!(
            "import time, tensorflow as tf\nwith tf.device('/GPU:0'):\n    x = tf.zeros([1])\n_ = x.numpy(); time.sleep({BASELINE_HOLD_S})"
        ),
        other => {
            return Err(MeasureError::NoBaselineScript {
                library: other.to_string(),
            });
        }
    };
    Ok(vec![
        library_python(m).display().to_string(),
        "-c".to_string(),
        script,
    ])
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
