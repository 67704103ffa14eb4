//! Proving a stack: the example's own report, GPU memory sampled from outside, the plot, and
//! which of the two memory views the predictions start from.
//!
//! This half measures and reads; [`run`] runs the example inside the stack's environment (its
//! child through `exec::step`, behind the `run::ExampleRunner` seam) and writes the record
//! (`crate::record`). Installing is not its job.
//!
//! Typical use, as `run::LiveExample` does it:
//!
//! ```no_run
//! # use std::{path::Path, sync::Arc, time::Duration};
//! # use stackpin::exec::step::{Step, start_step};
//! # use stackpin::prove::{self, sampler::{self, Sampler}};
//! let sampler = Sampler::start(Path::new("nvidia-smi"), 0, Arc::from(sampler::host_tree()))?;
//! let step = Step {
//!     argv: vec!["python3".into(), "classify.py".into()],
//!     env: vec![],
//!     env_remove: vec![],
//!     log: "logs/example.log".into(),
//!     timeout: Duration::from_secs(20 * 60),
//!     cwd: None,
//! };
//! let child = start_step(&step)?;
//! sampler.attach(child.pid());
//! // … wait for the child, showing sampler.current_mib() in a spinner …
//! let trace = sampler.stop();
//! let report = prove::parse_output("…the example's captured output…")?;
//! let peak = prove::peak_vram(&trace, report.as_ref());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod measure;
pub mod result_line;
pub mod run;
pub mod sampler;
pub mod svg;

pub use result_line::{ExampleReport, RESULT_PREFIX, RanOn, ResultLineError, parse_output};
pub use sampler::{MemoryTrace, OtherProcess, ProcessSeries, ProcessTree, Sampler, SamplerError};

use crate::record::{FrameworkCounter, MemorySource, PeakAuthority, PeakVram};

/// Why a run that exited cleanly does not prove the stack: it was not on the GPU, or no view saw
/// it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotOnGpu {
    /// The example's report names the CPU.
    Cpu { device: String },
    /// The example's report names a device that is not an NVIDIA GPU.
    OtherDevice { device: String },
    /// No view saw the example on the GPU: nvidia-smi listed no process of its tree and the
    /// example reported no framework peak above zero (or no report at all).
    Unseen {
        device: Option<String>,
        reported: bool,
    },
}

impl std::fmt::Display for NotOnGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOnGpu::Cpu { device } => write!(
                f,
                "the example ran on the CPU (its STACKPIN_RESULT says device `{device}`)"
            ),
            NotOnGpu::OtherDevice { device } => write!(
                f,
                "the example ran on `{device}`, which is not an NVIDIA GPU"
            ),
            NotOnGpu::Unseen {
                device: Some(device),
                ..
            } => write!(
                f,
                "the example says it ran on `{device}`, but no memory view saw it on the GPU: \
                 nvidia-smi listed no process of its tree and it reported no framework peak above 0 MiB"
            ),
            NotOnGpu::Unseen {
                device: None,
                reported: false,
            } => write!(
                f,
                "the example printed no STACKPIN_RESULT line, so only the outside view can judge it, \
                 and nvidia-smi never listed a process of its tree on the GPU (the card's memory.used \
                 cannot tell its memory from another process's)"
            ),
            NotOnGpu::Unseen { device: None, .. } => write!(
                f,
                "the example's STACKPIN_RESULT names no device and reports no framework peak above 0 MiB, \
                 and nvidia-smi never listed a process of its tree on the GPU"
            ),
        }
    }
}

/// Decides whether a run that exited cleanly proves the stack on the GPU, and says what showed
/// it. The example's own word is required where it gives one (`device`), and at least one
/// memory view must have seen it on the card: nvidia-smi listed its process tree, or its
/// framework peak is above zero. Without a report line the outside view judges alone.
pub fn judge_gpu_run(
    trace: &MemoryTrace,
    report: Option<&ExampleReport>,
) -> Result<String, NotOnGpu> {
    let device = report.and_then(|r| r.device.clone());
    let framework = report
        .and_then(ExampleReport::framework_peak_mib)
        .map(|(mib, _)| mib)
        .filter(|&mib| mib > 0.0);
    let outside = if trace.saw_the_tree() {
        Some(match trace.source {
            MemorySource::WindowsCounter => {
                "nvidia-smi listed its process ([N/A]) and the Windows GPU counter measured it"
            }
            _ if trace.unavailable_rows > 0 && trace.source != MemorySource::PerProcess => {
                "nvidia-smi listed its process on the GPU ([N/A] per-process memory)"
            }
            _ => "nvidia-smi listed its process tree on the GPU",
        })
    } else {
        None
    };
    let seen = match (outside, framework) {
        (Some(o), Some(f)) => format!("{o}; its framework peak was {f:.0} MiB"),
        (Some(o), None) => o.to_string(),
        (None, Some(f)) => format!(
            "its framework peak was {f:.0} MiB (nvidia-smi listed no process of its tree: the container case)"
        ),
        (None, None) => String::new(),
    };
    match (RanOn::of(device.as_deref()), report) {
        (RanOn::Cpu, _) => Err(NotOnGpu::Cpu {
            device: device.unwrap_or_default(),
        }),
        (RanOn::Other, _) => Err(NotOnGpu::OtherDevice {
            device: device.unwrap_or_default(),
        }),
        _ if seen.is_empty() => Err(NotOnGpu::Unseen {
            device,
            reported: report.is_some(),
        }),
        (RanOn::Gpu, _) => Ok(format!(
            "the example reported device {}; {seen}",
            device.unwrap_or_default()
        )),
        (_, None) if outside.is_some() => Ok(format!(
            "no STACKPIN_RESULT line: judged by the outside view alone; {seen}"
        )),
        (_, None) => Err(NotOnGpu::Unseen {
            device: None,
            reported: false,
        }),
        (_, Some(_)) => Ok(format!("the example named no device; {seen}")),
    }
}

/// Both views of the run's peak and the one the predictions use, or `None` when neither view
/// produced a figure.
///
/// The outside view is the authority when it is per process (nvidia-smi or the Windows counter):
/// it is what the card had to hold, CUDA context included, which the framework's own counters
/// leave out. When only the card's delta is known, the framework's peak plus its context estimate
/// is preferred, because the delta also counts whatever else allocated on the card meanwhile;
/// without a context estimate the delta stays the authority, as it is the larger, safer figure,
/// unless another process came or changed on the card during the run: then the delta is not the
/// example's and the framework's own peak is all that is left.
pub fn peak_vram(trace: &MemoryTrace, report: Option<&ExampleReport>) -> Option<PeakVram> {
    let framework = report.and_then(ExampleReport::framework_peak_mib);
    let context = report.and_then(|r| r.context_mib);
    let outside = trace.peak_mib.map(|p| p as f64);
    let per_process = matches!(
        trace.source,
        MemorySource::PerProcess | MemorySource::WindowsCounter
    );
    let others: Vec<String> = trace
        .disturbing_others()
        .map(|o| {
            let mib = match (o.min_mib, o.max_mib) {
                (Some(a), Some(b)) if a == b => format!("{a} MiB"),
                (Some(a), Some(b)) => format!("{a}–{b} MiB"),
                _ => "[N/A] MiB".to_string(),
            };
            let when = if o.before_run { "changed" } else { "appeared" };
            format!("pid {} ({mib}) {when} on the card during the run", o.pid)
        })
        .collect();
    let disturbed = trace.source == MemorySource::DeviceDelta && !others.is_empty();
    let (authority, mib, reason) = match (outside, framework, context) {
        (Some(o), _, _) if per_process => (
            PeakAuthority::Outside,
            o,
            "nvidia-smi saw the example's own processes: what the card held for it, CUDA context included"
                .to_string(),
        ),
        (_, Some((f, _)), Some(c)) => (
            PeakAuthority::FrameworkPlusContext,
            f + c,
            if disturbed {
                "another process was on the card during the run, so the card's delta is not the example's alone: the example's own peak plus its CUDA context estimate".to_string()
            } else if outside.is_some() {
                "the outside view is the card's memory.used over its idle baseline, which counts any other process: the example's own peak plus its CUDA context estimate".to_string()
            } else {
                "no outside figure: the example's own peak plus its CUDA context estimate".to_string()
            },
        ),
        (Some(_), Some((f, _)), None) if disturbed => (
            PeakAuthority::Framework,
            f,
            "another process was on the card during the run and the example gave no context estimate: the framework's peak alone (no CUDA context)".to_string(),
        ),
        (Some(o), _, _) => (
            PeakAuthority::Outside,
            o,
            "the card's memory.used over its idle baseline (no context estimate from the example): the larger, safer figure".to_string(),
        ),
        (None, Some((f, _)), None) => (
            PeakAuthority::Framework,
            f,
            "no outside figure and no context estimate: the framework's peak alone".to_string(),
        ),
        (None, None, _) => return None,
    };
    let mut notes = trace.notes.clone();
    if trace.source == MemorySource::DeviceDelta {
        notes.extend(others);
    }
    Some(PeakVram {
        outside_mib: trace.peak_mib,
        outside_source: trace.source,
        baseline_mib: trace.baseline_mib,
        framework_mib: framework.map(|(f, _)| f),
        framework_counter: framework.map(|(_, c)| c),
        framework_source: framework.map(|(_, c)| {
            format!(
                "the example's STACKPIN_RESULT ({})",
                match c {
                    FrameworkCounter::Reserved => "peak_reserved_mib: the allocator's pool",
                    FrameworkCounter::Allocated => "peak_allocated_mib: live tensors",
                }
            )
        }),
        allocated_mib: report.and_then(|r| r.peak_allocated_mib),
        context_mib: context,
        authority,
        authority_reason: reason,
        mib,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(source: MemorySource, peak: Option<u64>) -> MemoryTrace {
        MemoryTrace {
            source,
            samples: peak.map(|p| vec![(100, p)]).unwrap_or_default(),
            peak_mib: peak,
            baseline_mib: Some(300),
            device_samples: vec![],
            unavailable_rows: 0,
            notes: vec!["a note".into()],
            others: vec![],
        }
    }

    fn torch_report() -> ExampleReport {
        ExampleReport {
            peak_reserved_mib: Some(2304.0),
            peak_allocated_mib: Some(1890.0),
            context_mib: Some(250.0),
            ..Default::default()
        }
    }

    #[test]
    fn per_process_outside_view_is_the_authority_and_both_views_are_kept() {
        let peak = peak_vram(
            &trace(MemorySource::PerProcess, Some(2560)),
            Some(&torch_report()),
        )
        .expect("measured");
        assert_eq!(peak.authority, PeakAuthority::Outside);
        assert_eq!(peak.mib, 2560.0);
        assert_eq!(peak.framework_mib, Some(2304.0));
        assert_eq!(peak.framework_counter, Some(FrameworkCounter::Reserved));
        assert_eq!(peak.allocated_mib, Some(1890.0));
        assert_eq!(peak.notes, ["a note"]);
    }

    #[test]
    fn a_device_delta_gives_way_to_framework_plus_context() {
        let peak = peak_vram(
            &trace(MemorySource::DeviceDelta, Some(3100)),
            Some(&torch_report()),
        )
        .expect("measured");
        assert_eq!(peak.authority, PeakAuthority::FrameworkPlusContext);
        assert_eq!(peak.mib, 2554.0);
        assert_eq!(peak.outside_mib, Some(3100));
    }

    #[test]
    fn a_device_delta_stays_when_the_framework_gives_no_context() {
        let tf = ExampleReport {
            peak_allocated_mib: Some(1500.0),
            ..Default::default()
        };
        let peak =
            peak_vram(&trace(MemorySource::DeviceDelta, Some(2100)), Some(&tf)).expect("measured");
        assert_eq!(peak.authority, PeakAuthority::Outside);
        assert_eq!(peak.mib, 2100.0);
        assert_eq!(peak.framework_counter, Some(FrameworkCounter::Allocated));
    }

    #[test]
    fn the_framework_alone_when_nothing_was_measured_outside() {
        let tf = ExampleReport {
            peak_allocated_mib: Some(1500.0),
            ..Default::default()
        };
        let peak = peak_vram(&trace(MemorySource::Unmeasured, None), Some(&tf)).expect("reported");
        assert_eq!(peak.authority, PeakAuthority::Framework);
        assert_eq!(peak.mib, 1500.0);
    }

    #[test]
    fn no_figure_from_either_view_is_none() {
        assert_eq!(
            peak_vram(&trace(MemorySource::Unmeasured, None), None),
            None
        );
        let empty = ExampleReport::default();
        assert_eq!(
            peak_vram(&trace(MemorySource::Unmeasured, None), Some(&empty)),
            None
        );
    }

    fn report(device: Option<&str>, reserved: Option<f64>) -> ExampleReport {
        ExampleReport {
            device: device.map(str::to_string),
            peak_reserved_mib: reserved,
            context_mib: reserved.map(|_| 250.0),
            ..Default::default()
        }
    }

    #[test]
    fn a_run_is_a_gpu_proof_only_on_the_gpu_and_seen_there() {
        let per_process = trace(MemorySource::PerProcess, Some(2560));
        let delta = trace(MemorySource::DeviceDelta, Some(1500));
        let nothing = trace(MemorySource::Unmeasured, None);
        let cases: [(&MemoryTrace, Option<ExampleReport>, bool); 9] = [
            (
                &per_process,
                Some(report(Some("cuda:0"), Some(2304.0))),
                true,
            ),
            // The container: no per-process rows, the example's own GPU report and peak.
            (&delta, Some(report(Some("cuda"), Some(2304.0))), true),
            (&nothing, Some(report(Some("/GPU:0"), Some(900.0))), true),
            // The CPU, whatever the card did meanwhile.
            (&delta, Some(report(Some("cpu"), None)), false),
            (&per_process, Some(report(Some("cpu"), None)), false),
            (&nothing, Some(report(Some("mps"), Some(100.0))), false),
            // Says cuda, but no view saw it there.
            (&delta, Some(report(Some("cuda"), Some(0.0))), false),
            // No result line: the outside view judges alone, and the card's delta cannot.
            (&per_process, None, true),
            (&delta, None, false),
        ];
        for (i, (trace, report, proven)) in cases.iter().enumerate() {
            let verdict = judge_gpu_run(trace, report.as_ref());
            assert_eq!(verdict.is_ok(), *proven, "case {i}: {verdict:?}");
        }
        let cpu = judge_gpu_run(&delta, Some(&report(Some("cpu"), None))).expect_err("cpu");
        assert!(cpu.to_string().contains("ran on the CPU"), "{cpu}");
        let outside_only = judge_gpu_run(&per_process, None).expect("outside view");
        assert!(
            outside_only.contains("judged by the outside view alone"),
            "{outside_only}"
        );
    }

    #[test]
    fn another_process_that_moves_during_a_delta_run_is_named_and_dethrones_the_delta() {
        let mut delta = trace(MemorySource::DeviceDelta, Some(3100));
        delta.others = vec![OtherProcess {
            pid: 4242,
            min_mib: Some(0),
            max_mib: Some(1500),
            before_run: false,
        }];
        let tf = ExampleReport {
            peak_allocated_mib: Some(1500.0),
            ..Default::default()
        };
        let peak = peak_vram(&delta, Some(&tf)).expect("measured");
        assert_eq!(peak.authority, PeakAuthority::Framework, "{peak:?}");
        assert!(
            peak.notes.iter().any(|n| n.contains("pid 4242")),
            "{peak:?}"
        );
        // A job that sat still on the card since before the run is in the baseline: harmless.
        delta.others[0] = OtherProcess {
            pid: 4242,
            min_mib: Some(7000),
            max_mib: Some(7000),
            before_run: true,
        };
        let peak = peak_vram(&delta, Some(&tf)).expect("measured");
        assert_eq!(peak.authority, PeakAuthority::Outside, "{peak:?}");
    }
}
