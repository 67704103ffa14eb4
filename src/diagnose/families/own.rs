//! stackpin's own failure texts, and a `failed-run.yaml` handed to `diagnose`.
//!
//! `install` and `prove` say what they saw in their own words ("the installer exited 0 but the
//! library is not there: torch 2.5.1 built for CUDA 12.4, sees no GPU", "torch 2.5.1 is
//! installed but sees no GPU", "the example ran on the CPU"). Those texts are stable and name
//! their layer, so they are *known*: a library that imports but sees no GPU is the driver layer;
//! a CPU build of the library is the library layer. A `failed-run.yaml` (see
//! [`crate::record::FailedRun`]) is diagnosed from its last lines and explanation, and falls
//! back to the layer the record itself names.

use crate::diagnose::FailureLayer::{self, Driver, Library, Toolkit};
use crate::diagnose::matcher;
use crate::record::FailedRun;

/// Where these answers come from, shown as the source of a known diagnosis.
pub const SOURCE: &str = "stackpin's own message (src/install, src/prove)";

/// One recognised stackpin text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnHit {
    pub id: &'static str,
    pub layer: FailureLayer,
    pub cause: &'static str,
    pub fix: &'static str,
    pub line_number: usize,
    pub evidence: String,
    pub before_len: usize,
}

const NO_GPU_CAUSE: &str = "The training library is installed and imports, but sees no GPU: the \
driver layer is what fails (no driver, a driver not loaded, or a GPU hidden from this process).";
const NO_GPU_FIX: &str = "Run `nvidia-smi`: it must list the GPU. If it fails, install or repair \
the pinned driver (`stackpin repair MANIFEST`) and reboot; if it works, check \
CUDA_VISIBLE_DEVICES and that the library's CUDA build is not newer than the driver's CUDA \
(`stackpin doctor MANIFEST`). Do not reinstall the library: it is there.";
const CPU_BUILD_CAUSE: &str = "The training library installed is a CPU-only build (+cpu, or \
built for no CUDA), so it can never see the GPU.";
const CPU_BUILD_FIX: &str = "Install the +cuXYZ build the manifest pins from the archive \
(`stackpin install MANIFEST --force library`); a CPU wheel usually comes from pip's default \
index instead of the library's CUDA index.";

/// The first stackpin text in `text`, if any.
pub fn find(text: &str) -> Option<OwnHit> {
    matcher::segments(text).find_map(|seg| {
        let lower = &seg.lower;
        let cpu_build = lower.contains("+cpu")
            || lower.contains("built for no cuda")
            || lower.contains("cpu-only build")
            || lower.contains("cpu build");
        let no_gpu = lower.contains("sees no gpu");
        let (id, layer, cause, fix) = if lower.contains("the example ran on the cpu")
            || lower.contains("installed but sees no gpu")
            || (lower.contains("exited 0 but the library is not there") && no_gpu)
        {
            if cpu_build {
                ("lib-stackpin-cpu-build", Library, CPU_BUILD_CAUSE, CPU_BUILD_FIX)
            } else {
                ("drv-stackpin-library-sees-no-gpu", Driver, NO_GPU_CAUSE, NO_GPU_FIX)
            }
        } else if lower.contains("exited 0 but the library is not there") {
            (
                "lib-stackpin-library-not-there",
                Library,
                "The library's installer finished but the library does not import with the stack's Python, or reports another version or CUDA build.",
                "Read the pip log under the stack's logs/ folder; reinstall from the archive (`stackpin install MANIFEST --force library`) with the Python the manifest names.",
            )
        } else if lower.contains("exited 0 but the toolkit is not there") {
            (
                "tk-stackpin-toolkit-not-there",
                Toolkit,
                "The toolkit installer finished but the toolkit folder or its nvcc is not where the manifest says (toolkit.root).",
                "Check toolkit.root against the installer's --toolkitpath and its log under logs/; install again with `stackpin install MANIFEST --force toolkit`.",
            )
        } else if lower.contains("exited 0 but the driver is not there") {
            (
                "drv-stackpin-driver-not-there",
                Driver,
                "The driver installer finished but nvidia-smi does not report the pinned driver.",
                "Reboot (a new driver loads only then) and run the same command again; if nvidia-smi still fails, read the driver installer's log under logs/.",
            )
        } else {
            return None;
        };
        Some(OwnHit {
            id,
            layer,
            cause,
            fix,
            line_number: seg.line_number,
            evidence: matcher::shorten(seg.text.trim()),
            before_len: seg.end,
        })
    })
}

/// A `failed-run.yaml`, when `text` is one.
pub fn failed_run(text: &str) -> Option<FailedRun> {
    if !(text.contains("failed_at:") && text.contains("explanation:")) {
        return None;
    }
    serde_saphyr::from_str(text).ok()
}

/// The text of a failed run to diagnose: the batch it ran (for the memory advice), its last
/// lines, then why prove refused it and its explanation.
pub fn failed_run_text(run: &FailedRun) -> String {
    let mut text = format!("batch {}\n", run.batch);
    text.push_str(&run.last_lines.join("\n"));
    text.push('\n');
    if !run.reason.is_empty() {
        text.push_str(&run.reason);
        text.push('\n');
    }
    text.push_str(&run.explanation);
    text
}

/// The layer a failed run's own record names, when it is one of ours.
pub fn failed_run_layer(run: &FailedRun) -> Option<FailureLayer> {
    match run.layer.as_deref()? {
        "driver" => Some(Driver),
        "toolkit" => Some(Toolkit),
        "library" => Some(Library),
        "memory" => Some(FailureLayer::Memory),
        "hardware" => Some(FailureLayer::Hardware),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The wordings of each answer are data: tests/fixtures/diagnose/variants/own.yaml.

    #[test]
    fn the_other_layers_not_there_are_named() {
        assert_eq!(
            find("the installer exited 0 but the toolkit is not there: /usr/local/cuda-12.4 does not exist").map(|h| h.layer),
            Some(Toolkit)
        );
        assert_eq!(
            find("the installer exited 0 but the library is not there: torch does not import")
                .map(|h| h.id),
            Some("lib-stackpin-library-not-there")
        );
        assert_eq!(find("all good"), None);
    }

    #[test]
    fn a_failed_run_record_is_read_back() {
        let yaml = "record: 1\nstack: s\nfailed_at: 2026-11-30T10:00:00Z\nargv: [python]\nbatch: 64\n\
                    exit_code: 1\ntimed_out: false\nduration_s: 1.5\nlog: logs/example.log\n\
                    layer: example\nexplanation: the example failed\nlast_lines: [\"boom\"]\n";
        let run = failed_run(yaml).expect("parses");
        assert_eq!(run.batch, 64);
        assert_eq!(failed_run_layer(&run), None);
        assert!(failed_run_text(&run).starts_with("batch 64\nboom\n"));
        assert_eq!(failed_run("explanation: only"), None);
    }
}
