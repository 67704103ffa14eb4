//! Proving a stack: the example's own report, GPU memory sampled from outside, the plot, and
//! which of the two memory views the predictions start from.
//!
//! This half measures and reads; running the example inside the stack's environment and writing
//! the record (`crate::record`) are wired in by the `prove` command. Installing is not its job.
//!
//! Typical use by the command:
//!
//! ```no_run
//! # use std::{path::Path, sync::Arc};
//! # use stackpin::prove::{self, sampler::{self, Sampler}};
//! let sampler = Sampler::start(Path::new("nvidia-smi"), 0, Arc::from(sampler::host_tree()))?;
//! let child = std::process::Command::new("python3").arg("classify.py").spawn()?;
//! sampler.attach(child.id());
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

pub use result_line::{
    ExampleReport, FrameworkCounter, RESULT_PREFIX, ResultLineError, parse_output,
};
pub use sampler::{MemorySource, MemoryTrace, ProcessSeries, ProcessTree, Sampler, SamplerError};

use crate::record::{PeakAuthority, PeakVram};

/// Both views of the run's peak and the one the predictions use, or `None` when neither view
/// produced a figure.
///
/// The outside view is the authority when it is per process (nvidia-smi or the Windows counter):
/// it is what the card had to hold, CUDA context included, which the framework's own counters
/// leave out. When only the card's delta is known, the framework's peak plus its context estimate
/// is preferred, because the delta also counts whatever else allocated on the card meanwhile;
/// without a context estimate the delta stays the authority, as it is the larger, safer figure.
pub fn peak_vram(trace: &MemoryTrace, report: Option<&ExampleReport>) -> Option<PeakVram> {
    let framework = report.and_then(ExampleReport::framework_peak_mib);
    let context = report.and_then(|r| r.context_mib);
    let outside = trace.peak_mib.map(|p| p as f64);
    let per_process = matches!(
        trace.source,
        MemorySource::PerProcess | MemorySource::WindowsCounter
    );
    let (authority, mib) = match (outside, framework, context) {
        (Some(o), _, _) if per_process => (PeakAuthority::Outside, o),
        (_, Some((f, _)), Some(c)) => (PeakAuthority::FrameworkPlusContext, f + c),
        (Some(o), _, _) => (PeakAuthority::Outside, o),
        (None, Some((f, _)), None) => (PeakAuthority::Framework, f),
        (None, None, _) => return None,
    };
    Some(PeakVram {
        outside_mib: trace.peak_mib,
        outside_source: trace.source,
        baseline_mib: trace.baseline_mib,
        framework_mib: framework.map(|(f, _)| f),
        framework_counter: framework.map(|(_, c)| c),
        allocated_mib: report.and_then(|r| r.peak_allocated_mib),
        context_mib: context,
        authority,
        mib,
        notes: trace.notes.clone(),
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
}
