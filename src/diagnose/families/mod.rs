//! The mechanism tier: recognises the *families* behind failure messages rather than single
//! sentences, so a message never seen before is still placed when its mechanism is known.
//!
//! - [`loader`]: a library that will not load (`cannot open shared object file`, `undefined
//!   symbol`, `Could not load library X`, Windows error 126/127), judged by *which* library it is
//!   and *where it lives* (a pip CUDA wheel in site-packages, the toolkit's folder, the driver's
//!   `libcuda`/`nvml`), and by the CUDA version its name carries against the one the log shows;
//!   a binary needing a newer glibc than the host's, by where that binary lives; an entry point
//!   the driver's own DLL lacks (a driver older than the program's CUDA).
//! - [`wheels`]: NVIDIA's CUDA wheels of two CUDA majors side by side in one environment
//!   (`nvidia-*-cu12` beside `nvidia-*-cu13`), the library's environment.
//! - [`codes`]: the CUDA runtime's error codes and names (legacy THC `error=N` and `cuda runtime
//!   error (N)` numbers translated to today's), and the driver's Xid numbers, as tables.
//! - [`status`]: the CUDA math libraries' status codes (cuBLAS, cuSOLVER, cuSPARSE, cuFFT), as a
//!   table of what each status points at.
//! - [`kernel_log`]: the driver's device nodes (`/dev/nvidia*` missing) and its NVRM kernel-log
//!   lines other than Xid (assertions, RmInitAdapter, fallen off the bus).
//! - [`messages`]: execution-provider and device lists the libraries print, version pairs
//!   (torch vs torchvision, cuDNN compiled vs loaded), allocator failures worded by ONNX Runtime,
//!   TensorFlow or thrust, extensions built without CUDA or for other GPUs, and the installers'
//!   own log lines (the `modpost` line, `cl.exe`, CMake's CUDA toolset).
//! - [`releases`]: a name a dependency's release removed or moved (NumPy 1.24's aliases and 2.0's
//!   ABI, torch 2.0's `torch._six`, Pillow 10, protobuf 4, huggingface_hub, setuptools and
//!   Python 3.12, mmcv 2, pytorch-lightning, scikit-image, SciPy, OpenCV's contrib wheel,
//!   fastai's majors), as a table of package, name, release and cure.
//! - [`symbols`]: undefined symbols placed by what they belong to (torch's C++ API, the CUDA
//!   driver API, the runtime's registration hooks).
//! - [`runtimes`]: the runtimes around CUDA: NCCL's result codes, XLA's DNN start-up, ONNX
//!   Runtime's provider library, the container toolkit's CUDA requirement.
//! - [`tensorrt`]: TensorRT on the way from a model to an engine: a plugin no library
//!   registered, a release without kernels for the card's SM, the `tensorrt` Python package
//!   missing or another release's API, torch2trt without a converter, INT8 on a card without
//!   fast INT8, the linker missing TensorRT's libraries.
//! - [`compile`]: nvcc's and NVRTC's compile errors placed by where they are (the toolkit's
//!   own headers, a CUDA intrinsic, a kernel the library generated, a library's thrust use older
//!   than CUDA 12's); the user's own code stays unknown.
//! - [`own`]: stackpin's own failure texts and a `failed-run.yaml` given to `diagnose`.
//! - [`windows`]: native Windows failures read from the tool's own line: pip's path past
//!   MAX_PATH, the MSVC build tools, their Windows SDK or the runtime missing, nvcc's Visual
//!   Studio set-up, the retired `tensorflow-gpu` package, Windows' illegal-instruction status (a
//!   build needing AVX).
//! - [`video`]: the GPU's video and JPEG engines (NVDEC, NVENC, nvJPEG's hardware decoder):
//!   a card without the engine or the codec, the NVENC session cap and API version, an ffmpeg
//!   built without NVIDIA's codecs.
//! - [`titles`]: failures in users' own words (an issue's title, a report's first line) whose
//!   threads agree on a layer: the driver not loading, a black screen after installing it, ONNX
//!   Runtime running on the CPU, cuDNN not found; read in a short message only.
//!
//! A [`Finding`] is *decisive* when its mechanism used evidence the catalogue cannot see (where
//! a library lives, a version pair, the cause line of an installer log): it then wins over a
//! catalogue entry. Otherwise it answers only when no catalogue entry matched, before the broad
//! rules. This module reads text only; the host context is applied by [`super::context_fix`].

pub mod codes;
pub mod compile;
pub mod kernel_log;
pub mod loader;
pub mod messages;
pub mod own;
pub mod releases;
mod rule;
pub mod runtimes;
pub mod status;
pub mod symbols;
pub mod tensorrt;
pub mod titles;
pub mod video;
pub mod wheels;
pub mod windows;

use super::FailureLayer;
use super::matcher::{self, Segment};

/// What a family recognised, before the context decides the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable identifier, `<layer>-<family>-<what>`.
    pub id: &'static str,
    pub layer: FailureLayer,
    /// The other layer the message may belong to when it is ambiguous.
    pub second: Option<FailureLayer>,
    pub cause: String,
    pub fix: String,
    /// Which kind of fix the host context may change.
    pub mechanism: Mechanism,
    /// Wins over a catalogue entry (see the module docs).
    pub decisive: bool,
    /// 1-based line of the evidence.
    pub line_number: usize,
    /// The line that names the cause, trimmed and shortened.
    pub evidence: String,
    /// Byte offset just past the evidence.
    pub before_len: usize,
}

/// The kinds of fix that depend on the host the failure happened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// The driver cannot be reached (NVML, cuInit, no device, module not loaded).
    DriverAccess,
    /// The driver's kernel module did not build or load for the running kernel.
    DriverBuild,
    /// One of the driver's video libraries (`libnvcuvid`, `libnvidia-encode`) is missing: in a
    /// container the runtime mounts them only with the `video` driver capability.
    DriverVideo,
    /// The fix does not depend on the host.
    Plain,
}

/// The finding that best names the cause: decisive first, then the causal order of layers,
/// then the first line; `None` when no family recognised anything.
pub fn best(text: &str) -> Option<Finding> {
    best_of(&all(text))
}

/// Every family's findings in `text`, in the families' order.
pub fn all(text: &str) -> Vec<Finding> {
    let segments: Vec<Segment<'_>> = matcher::segments(text).collect();
    let mut found = Vec::new();
    found.extend(loader::find(text, &segments));
    found.extend(wheels::find(&segments));
    found.extend(codes::find(&segments));
    // Before `messages`: a release's removed name outranks its broad name-missing rule on a line.
    found.extend(releases::find(&segments));
    found.extend(messages::find(&segments));
    found.extend(status::find(&segments));
    found.extend(kernel_log::find(&segments));
    found.extend(runtimes::find(&segments));
    found.extend(tensorrt::find(&segments));
    found.extend(compile::find(&segments));
    found.extend(windows::find(&segments));
    found.extend(video::find(&segments));
    found.extend(titles::find(&segments));
    found
}

/// Of `found` (in the families' order), the finding that best names the cause: see [`best`].
pub fn best_of(found: &[Finding]) -> Option<Finding> {
    found
        .iter()
        .enumerate()
        .min_by_key(|(order, f)| {
            (
                !f.decisive,
                matcher::causal_rank(f.layer),
                f.line_number,
                *order,
            )
        })
        .map(|(_, f)| f.clone())
}

/// A finding anchored on `seg`.
#[allow(clippy::too_many_arguments)] // a plain constructor; every field is named at the call
pub(super) fn at(
    seg: &Segment<'_>,
    id: &'static str,
    layer: FailureLayer,
    second: Option<FailureLayer>,
    cause: impl Into<String>,
    fix: impl Into<String>,
    mechanism: Mechanism,
    decisive: bool,
) -> Finding {
    Finding {
        id,
        layer,
        second,
        cause: cause.into(),
        fix: fix.into(),
        mechanism,
        decisive,
        line_number: seg.line_number,
        evidence: matcher::shorten(seg.text.trim()),
        before_len: seg.end,
    }
}

/// The digits right after `at` in `s` (spaces, `:`, `=`, `(` skipped first).
pub(super) fn number_after(s: &str, at: usize) -> Option<u32> {
    let rest = s
        .get(at..)?
        .trim_start_matches([' ', ':', '=', '(', '#', '\t']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 6 {
        return None;
    }
    // A number glued to letters ("10ms", "3rd") is not a code.
    let next = rest[digits.len()..].chars().next();
    if next.is_some_and(|c| c.is_ascii_alphabetic() || c == '.') {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_after_a_word_skip_separators_and_refuse_glued_units() {
        assert_eq!(number_after("error 35 here", 5), Some(35));
        assert_eq!(number_after("code=100(cudaerrornodevice)", 4), Some(100));
        assert_eq!(number_after("error: 10ms", 5), None);
        assert_eq!(number_after("release 12.1", 7), None);
        assert_eq!(number_after("error", 5), None);
    }

    #[test]
    fn a_decisive_finding_beats_an_earlier_plain_one() {
        let log = "RuntimeError: CUDA error: unspecified launch failure\n\
                   nvcc fatal   : Cannot find compiler 'cl.exe' in PATH";
        let f = best(log).expect("a finding");
        assert!(f.decisive);
        assert_eq!(f.layer, FailureLayer::Toolkit);
    }
}

/// The families' real failure messages, kept as data in `tests/fixtures/diagnose/variants/`
/// (the format is in its README.md): each entry names what a family must find for every
/// variant, with the public thread the variant was copied from.
#[cfg(test)]
mod variants;
