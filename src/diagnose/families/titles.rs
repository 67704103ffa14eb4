//! Failures in users' own words: an issue's title or the one-line symptom a report opens with
//! ("Nvidia driver not loading", "Black screen after Nvidia driver installation", "Onnxruntime
//! not running on GPU", "cuDNN Not Found"), when that is all the message there is.
//!
//! Hold-out rounds keep a thread's title when it is the only verbatim failure text, and most
//! symptom phrasings split across layers ("torch.cuda.is_available() returns False", "CUDA
//! error: unknown error", "GPU not detected", "tensorflow not using GPU", "GPU memory not
//! released": each thread ends in another layer), so they stay unknown. The rules here keep only
//! the phrasings whose threads' resolutions agree on a layer (cited in
//! `tests/fixtures/diagnose/variants/titles.yaml`, with the near-misses they must not catch).
//!
//! They read a short message only (at most [`MAX_LINES`] non-empty lines): in a real log the
//! program's own lines name the cause better than a sentence a user wrote above them, so a long
//! log is left to the other families, the catalogue and the broad rules. None is decisive.

use super::rule::{Rule, find_each};
use super::{Finding, Mechanism};
use crate::diagnose::FailureLayer::{Driver, Hardware, Library, Toolkit};
use crate::diagnose::matcher::Segment;

/// A title, or a title with a line or two of its report; more is a log.
const MAX_LINES: usize = 3;

pub(super) const RULES: &[Rule] = &[
    // ONNX Runtime running on the CPU although a GPU is there: the CPU package shadowing
    // onnxruntime-gpu (microsoft/onnxruntime#3787; yolov5's detect.py installing it, #9302) or a
    // GPU build for another CUDA that silently falls back (#23612, cured by the build matching
    // Kaggle's CUDA).
    Rule {
        id: "lib-title-onnxruntime-on-cpu",
        patterns: &[],
        layer: Library,
        second: Some(Toolkit),
        cause: "ONNX Runtime ran the model on its CPU provider although a GPU is present: the CPU-only `onnxruntime` package is installed beside (and shadows) `onnxruntime-gpu`, or the session was created without the CUDA provider, or the onnxruntime-gpu build needs another CUDA / cuDNN major than the machine has, so it fell back to the CPU silently.",
        fix: "Keep only the GPU package: `pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu` (a tool that installs `onnxruntime` itself, such as yolov5's detect.py, undoes this: stop it from doing so). Pick the onnxruntime-gpu release whose CUDA and cuDNN majors match the machine (the ONNX Runtime CUDA requirements table; an older release if the machine's CUDA is older). Create the session with `providers=['CUDAExecutionProvider', 'CPUExecutionProvider']` and check `session.get_providers()`; `onnxruntime.get_device()` saying GPU proves only that the GPU package is installed.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(onnxruntime_ran_on_cpu),
    },
    // The desktop going black (or looping at the login screen) once the NVIDIA driver is
    // installed: a driver that does not fit the card (the open kernel modules on an RTX 50xx,
    // devleonardoamaral/debian-nvidia-installer#44), a broken or mixed installation
    // (bayasdev/envycontrol#132, negativo17/nvidia-driver#25), nouveau still loaded beside it
    // (timrichardson/Prime-Ubuntu-18.04#11). Hardware second: under GPU passthrough it was the
    // card's ROM (joeknock90/Single-GPU-Passthrough#95).
    Rule {
        id: "drv-title-black-screen-after-driver",
        patterns: &[],
        layer: Driver,
        second: Some(Hardware),
        cause: "The display stays black (or the login screen loops) once the NVIDIA driver is installed: the driver installed does not fit the card or the kernel (recent GPUs need the open kernel modules), two installations are mixed (the distribution's packages and NVIDIA's installer), or nouveau is still loaded beside it, so the display server cannot start on the NVIDIA driver.",
        fix: "Boot to a text console (Ctrl+Alt+F3, or add `3`/`nomodeset` to the kernel line) and read the display server's log (`journalctl -b`, /var/log/Xorg.0.log) and `lsmod | grep -E 'nvidia|nouveau'`. Purge every NVIDIA driver package and reinstall one driver from one source (the distribution's, or NVIDIA's, not both); on recent GPUs (RTX 40/50 series) choose the open kernel modules; blacklist nouveau and rebuild the initramfs; with Secure Boot on, enroll the module's key (MOK) or sign it. In a VM with the GPU passed through, give the VM the card's ROM file.",
        mechanism: Mechanism::DriverBuild,
        decisive: false,
        judge: Some(black_screen_with_the_driver),
    },
    // The NVIDIA driver not loading, after a reboot, a kernel update or an OS upgrade: its
    // kernel module was not rebuilt for the new kernel (void-linux/void-packages#14377,
    // pop-os/pop#690), Secure Boot refused it (canonical/nvidia-graphics-drivers#62,
    // gridhead/nvidia-auto-installer-for-fedora-linux#63), nouveau took the card
    // (negativo17/nvidia-driver#37: removed and reinstalled).
    Rule {
        id: "drv-title-driver-not-loading",
        patterns: &[],
        layer: Driver,
        second: None,
        cause: "The NVIDIA driver's kernel module is not loaded: after a kernel update it was not rebuilt for the new kernel (DKMS/akmods, missing headers), Secure Boot refused the unsigned module, or nouveau took the card first.",
        fix: "Check `lsmod | grep nvidia` and `dkms status` (or akmods) against the running kernel (`uname -r`). Rebuild the module for it: install that kernel's headers and reinstall the driver's DKMS package (`sudo dkms autoinstall`, `akmods --force`, or purge and reinstall the driver packages), then `sudo depmod -a`. With Secure Boot on, enroll the module's key (`mokutil --import` the DKMS key, then confirm at the next boot) or sign it; if nouveau is loaded, blacklist it and rebuild the initramfs. Reboot and check `nvidia-smi`.",
        mechanism: Mechanism::DriverBuild,
        decisive: false,
        judge: Some(driver_not_loading),
    },
    // cuDNN not found, in a user's words or a build tool's: the library is not installed for the
    // CUDA the program uses, or not where the program, the loader or CMake looks
    // (lltcggie/waifu2x-caffe#197: the DLL beside the exe; sparticlesteve/nersc-pytorch-build#5:
    // CUDNN_LIBRARY_PATH; amazon-archives/amazon-dsstne#133: -lcudnn; the program wanting cuDNN 8
    // on a cuDNN 7 machine, YaoFANGUK/video-subtitle-extractor#48). Library second: a program
    // built for another cuDNN major.
    Rule {
        id: "tk-title-cudnn-not-found",
        patterns: &[],
        layer: Toolkit,
        second: Some(Library),
        cause: "cuDNN could not be found: it is not installed for the CUDA version the program uses (a program built for cuDNN 8 finds only cuDNN 7), or it is installed where neither the program, the dynamic loader nor the build (CMake, the linker's -lcudnn) looks.",
        fix: "Install the cuDNN release the program was built for (its major: cudnn64_8.dll or libcudnn.so.8 means cuDNN 8) for the toolkit's CUDA version, and put it where it is looked for: its lib folder on LD_LIBRARY_PATH (Linux) or its bin folder on PATH / the DLL beside the program's exe (Windows); for a CMake build (torch from source) set CUDNN_LIBRARY_PATH and CUDNN_INCLUDE_PATH (or CUDNN_ROOT) to the folders holding libcudnn and cudnn.h; for the linker's `-lcudnn`, copy cuDNN into the toolkit's lib64 or add its folder with -L.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(cudnn_not_found),
    },
];

fn any_of(line: &str, terms: &[&str]) -> bool {
    terms.iter().any(|term| line.contains(term))
}

/// ONNX Runtime named with a run on the CPU or not on the GPU; not a question about CPU-only
/// inference or speed, nor ORT's per-node CPU fallback (a warning of a working GPU session).
fn onnxruntime_ran_on_cpu(line: &str) -> bool {
    any_of(line, &["onnxruntime", "onnx runtime"])
        && any_of(
            line,
            &[
                " on cpu",
                " on the cpu",
                "defaults to cpuexecutionprovider",
                "not running on gpu",
                "not run on gpu",
                "not using gpu",
                "not using the gpu",
                "not use gpu",
                "doesn't use gpu",
                "never on gpu",
            ],
        )
        && !any_of(
            line,
            &[
                "slower",
                "how to",
                "cpu only",
                "cpu-only",
                "cpu inference",
                "fallback to cpu execution for node",
            ],
        )
}

/// A black or blank screen, or a login loop, with the NVIDIA driver named; not black images
/// a model generated (fp16 NaNs), nor a screen going black mid-run (a crash under load).
fn black_screen_with_the_driver(line: &str) -> bool {
    any_of(
        line,
        &[
            "black screen",
            "blank screen",
            "blank black screen",
            "screen blank",
            "screen goes black",
            "login loop",
            "doesn't login",
            "can't login",
            "cannot login",
        ],
    ) && any_of(line, &["nvidia", "driver"])
        && !any_of(
            line,
            &["image", "video", "output", "render", "train", "under load"],
        )
}

/// The NVIDIA driver named as not loading or no longer working, or nouveau named as still
/// holding the card after the NVIDIA driver was installed.
fn driver_not_loading(line: &str) -> bool {
    nouveau_still_loaded(line) || named_driver_not_loading(line)
}

fn nouveau_still_loaded(line: &str) -> bool {
    line.contains("nouveau") && any_of(line, &["still loaded", "loaded instead", "blocking nvidia"])
}

fn named_driver_not_loading(line: &str) -> bool {
    any_of(
        line,
        &[
            "nvidia driver",
            "nvidia drivers",
            "nvidia kernel module",
            "nvidia module",
        ],
    ) && any_of(
        line,
        &[
            "not loading",
            "not load",
            "n't load",
            "failed to load",
            "fails to load",
            "stops working",
            "stopped working",
            "not working after",
            "lost after",
        ],
    )
}

/// cuDNN named as not found; not cuDNN finding no algorithm for a convolution (a working cuDNN
/// without a kernel for those shapes or that memory).
fn cudnn_not_found(line: &str) -> bool {
    line.contains("cudnn")
        && any_of(
            line,
            &[
                "not found",
                "cannot find",
                "can not find",
                "could not find",
                "couldn't find",
                "unable to find",
                "找不到",
            ],
        )
        && !line.contains("algo")
}

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let lines = segments
        .iter()
        .filter(|seg| !seg.text.trim().is_empty())
        .count();
    if lines > MAX_LINES {
        return Vec::new();
    }
    find_each(RULES, segments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::matcher;

    #[test]
    fn a_long_log_is_left_to_the_other_families() {
        let title = "Nvidia driver not loading";
        let short: Vec<_> = matcher::segments(title).collect();
        assert_eq!(find(&short).len(), 1);
        let log = format!("{title}\nline two\nline three\nline four");
        let long: Vec<_> = matcher::segments(&log).collect();
        assert!(find(&long).is_empty());
    }
}
