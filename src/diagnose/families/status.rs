//! The CUDA math libraries' status codes as a table: `CUBLAS_STATUS_…`, `CUSOLVER_STATUS_…`,
//! `CUSPARSE_STATUS_…` and cuFFT's `CUFFT_…` names, each placed by what the status means rather
//! than by which library printed it.
//!
//! The libraries share one status vocabulary (cuBLAS, cuSOLVER and cuSPARSE literally; cuFFT
//! with its own prefix), so one table serves all four: an allocation failure is the card's
//! memory whoever says it; "not initialised" is what a handle's creation reports when the card
//! has no memory left for it, or when the CUDA runtime cannot talk to the driver; an architecture
//! mismatch is a library build without this GPU's code; an execution failure is a kernel that
//! died (a library build that does not fit, or the card). Ambiguous statuses carry a second
//! layer and are never decisive, so a catalogue entry with a source still wins.
//! cuDNN's `CUDNN_STATUS_…` names stay in [`super::codes`] (they point at the cuDNN that loads).

use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{self, Driver, Hardware, Library, Memory, Toolkit};
use crate::diagnose::matcher::Segment;

/// One status, by the part of its name after the library's prefix.
struct Status {
    /// Lowercase suffixes: `alloc_failed` matches `CUBLAS_STATUS_ALLOC_FAILED` and
    /// `CUFFT_ALLOC_FAILED`.
    names: &'static [&'static str],
    id: &'static str,
    layer: FailureLayer,
    second: Option<FailureLayer>,
    cause: &'static str,
    fix: &'static str,
}

const MEMORY_FIX: &str = "Free the GPU (stop other GPU programs; `nvidia-smi` lists them) and halve the \
batch; `stackpin vram --peak PEAK --batch N --vram SIZE` names the largest batch that fits. If it fails at the first \
call with the card idle, check that the library's CUDA build fits the driver (`stackpin check MANIFEST`).";

const BUILD_FIX: &str = "Install a build of the training library made for this GPU and the \
CUDA it brings (a newer +cuXYZ wheel that lists the card's compute capability); remove other \
CUDA library copies from LD_LIBRARY_PATH / PATH so the library's own cuBLAS/cuFFT loads. Run \
once with CUDA_LAUNCH_BLOCKING=1 to see the failing call.";

const STATUSES: &[Status] = &[
    Status {
        names: &["alloc_failed"],
        id: "mem-status-alloc-failed",
        layer: Memory,
        second: None,
        cause: "A CUDA math library (cuBLAS, cuSOLVER, cuSPARSE, cuFFT) could not allocate GPU memory for its handle or workspace.",
        fix: MEMORY_FIX,
    },
    Status {
        names: &["not_initialized"],
        id: "mem-status-not-initialized",
        layer: Memory,
        second: Some(Driver),
        cause: "A CUDA math library could not create its handle: most often the GPU has no memory left for it, otherwise the CUDA runtime cannot use the driver (a runtime newer than the driver, or a broken driver state).",
        fix: "Free the GPU (stop other GPU programs; `nvidia-smi` lists them) and halve the batch (`stackpin vram --peak PEAK --batch N --vram SIZE` names a batch that fits). If it fails at the first call with the card idle, the library's CUDA needs a newer driver: install the pinned driver (`stackpin check MANIFEST` enforces the pair) and reboot.",
    },
    Status {
        names: &["arch_mismatch"],
        id: "lib-status-arch-mismatch",
        layer: Library,
        second: Some(Toolkit),
        cause: "The CUDA math library has no code for this GPU's architecture: the library (or the CUDA it brings) was built for other GPUs.",
        fix: BUILD_FIX,
    },
    Status {
        names: &["execution_failed", "exec_failed"],
        id: "lib-status-execution-failed",
        layer: Library,
        second: Some(Hardware),
        cause: "A CUDA math library's kernel failed on the GPU: a library build that does not fit this GPU or CUDA (the common case), an earlier asynchronous error, or a faulty card.",
        fix: "Run once with CUDA_LAUNCH_BLOCKING=1 to find the failing call; install the library build for this GPU and CUDA (its +cuXYZ wheel, other CUDA copies off LD_LIBRARY_PATH). If the call is in the project's own CUDA extension, rebuild that extension against the installed torch and CUDA, or run without it. If it strikes at random points, check dmesg for NVRM Xid lines and test the card.",
    },
    Status {
        names: &[
            "invalid_value",
            "not_supported",
            "invalid_plan",
            "invalid_type",
            "invalid_size",
        ],
        id: "lib-status-invalid-call",
        layer: Library,
        second: Some(Toolkit),
        cause: "A CUDA math library refused a call (invalid value / not supported): the library's build does not fit the cuBLAS/cuFFT that loads (another CUDA), or the call's shapes or types are not supported.",
        fix: BUILD_FIX,
    },
    Status {
        names: &["internal_error", "mapping_error", "setup_failed"],
        id: "lib-status-internal-error",
        layer: Library,
        second: Some(Memory),
        cause: "A CUDA math library failed internally: a library build whose CUDA does not support this GPU, a mismatched CUDA library on the loader path, or too little GPU memory for its workspace.",
        fix: "Install the library build whose CUDA supports this GPU (a newer +cuXYZ wheel) and keep other CUDA copies off LD_LIBRARY_PATH / PATH; if it only happens at large sizes, halve the batch (`stackpin vram --peak PEAK --batch N --vram SIZE`).",
    },
];

/// The library prefixes a status follows.
const PREFIXES: &[&str] = &[
    "cublas_status_",
    "cusolver_status_",
    "cusparse_status_",
    "cufft_",
];

/// Old PyTorch (THC) wrote cuBLAS statuses as sentences: `cublas runtime error : <sentence>`.
const THC_SENTENCES: &[(&str, &str)] = &[
    ("resource allocation failed", "alloc_failed"),
    ("library not initialized", "not_initialized"),
    ("the gpu program failed to execute", "execution_failed"),
    ("architecture mismatch", "arch_mismatch"),
    (
        "an invalid numeric value was used as an argument",
        "invalid_value",
    ),
    ("an internal operation failed", "internal_error"),
];

/// The library prefix and the status name on a line, if it carries one.
fn status_on(lower: &str) -> Option<(&'static str, &str)> {
    if let Some(found) = PREFIXES.iter().find_map(|p| {
        let at = lower.find(p)?;
        Some((*p, &lower[at + p.len()..]))
    }) {
        return Some(found);
    }
    // Paddle's older enforce message: "PaddleCheckError: CUBLAS: not initialized, at […]".
    if lower.contains("cublas: not initialized") {
        return Some(("cublas_status_", "not_initialized"));
    }
    if !lower.contains("cublas runtime error") {
        return None;
    }
    THC_SENTENCES
        .iter()
        .find(|(sentence, _)| lower.contains(sentence))
        .map(|(_, name)| ("cublas_status_", *name))
}

/// Paddle creates its cuBLAS handle when it sets up the GPU (`CublasHandleHolder` in
/// cuda_helper.h), before any tensor is allocated, with the cuBLAS it loads at run time from the
/// CUDA toolkit on the loader path: "not initialised" there is that cuBLAS (missing, or of
/// another CUDA than the paddlepaddle-gpu build), not the card's memory.
const PADDLE_HANDLE: &[&str] = &["fluid/platform/cuda_helper.h", "cublashandleholder"];

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let paddle_handle = segments
        .iter()
        .any(|seg| PADDLE_HANDLE.iter().any(|w| seg.lower.contains(w)));
    segments
        .iter()
        .filter_map(|seg| {
            let (prefix, suffix) = status_on(&seg.lower)?;
            let row = STATUSES
                .iter()
                .find(|s| s.names.iter().any(|n| suffix.starts_with(n)))?;
            if paddle_handle && row.id == "mem-status-not-initialized" {
                return Some(at(
                    seg,
                    "tk-status-paddle-cublas-handle",
                    Toolkit,
                    Some(Library),
                    "Paddle could not create its cuBLAS handle while setting up the GPU (cuda_helper.h, before any training step): the cuBLAS it loads from the CUDA toolkit on the loader path is missing or of another CUDA release than the paddlepaddle-gpu build (or that CUDA is newer than the driver).",
                    "Install the paddlepaddle-gpu build made for the CUDA release on the machine (its post1xx / cu1xx suffix names the CUDA), or the CUDA and cuDNN that build names, with that toolkit's lib64 first on LD_LIBRARY_PATH; check with `paddle.utils.run_check()`, and that `nvidia-smi` shows a driver for that CUDA.",
                    Mechanism::Plain,
                    false,
                ));
            }
            let (layer, second, fix) = placed(prefix, row);
            Some(at(
                seg,
                row.id,
                layer,
                second,
                row.cause,
                fix,
                Mechanism::Plain,
                false,
            ))
        })
        .collect()
}

/// cuSOLVER and cuSPARSE failures other than memory are read as the toolkit's (the threads
/// behind the catalogue's `tk-cusolver-failed`: a CUDA release that dropped the GPU, or a
/// mismatched copy on the loader path), with the library second.
fn placed(prefix: &str, row: &Status) -> (FailureLayer, Option<FailureLayer>, &'static str) {
    let solver = matches!(prefix, "cusolver_status_" | "cusparse_status_");
    if solver && row.layer == Library {
        (Toolkit, Some(Library), BUILD_FIX)
    } else {
        (row.layer, row.second, row.fix)
    }
}

// The variants of each rule are tests/fixtures/diagnose/variants/status.yaml, checked by
// families::variants.
