//! The second tier: broad rules keyed on the stable vocabulary of each layer ("out of memory",
//! "invalid device function", "lib…so not found", "cuInit", "Xid"), tried only when no
//! catalogue entry matched.
//!
//! The catalogue ([`super::catalogue`]) is precise but narrow: a real message it has not seen
//! answers `unknown`. These rules place such a message on a layer when the words it uses belong
//! to one layer only, and say that the layer is *likely*, with the layer's general fix. When no
//! layer's vocabulary appears they match nothing: the answer stays `unknown`, never a guess.
//!
//! A rule matches a line when every group of terms has at least one term on that line (terms use
//! the catalogue's `*` syntax; the line is padded with a space at each end, so `" xid"` or
//! `"cuda error! 2 "` can demand a word boundary). Ranking: a rule for a warning programs print
//! while working comes last; then the matcher's causal order (hardware → driver → toolkit →
//! library → memory), then the first line, then rule order.
//! This module never reads files and never prints.

use super::FailureLayer::{self, Driver, Hardware, Library, Memory, Toolkit};
use super::matcher::{self, pattern_matches};

/// One broad rule: a layer's vocabulary, and the layer's general cause and fix.
#[derive(Debug)]
pub struct Rule {
    /// Stable identifier, `<layer>-likely-<what>`, shown to users and used by tests.
    pub id: &'static str,
    /// The layer the vocabulary belongs to.
    pub layer: FailureLayer,
    /// A line matches when it holds at least one term of every group.
    pub groups: &'static [&'static [&'static str]],
    /// When not empty, some line of the log must also hold one of these terms (the NVRM line
    /// that turns "busy or unavailable" into a hardware fault).
    pub with_line: &'static [&'static str],
    /// A warning that programs print while working (TensorRT's linked-vs-loaded pair): it
    /// places a log only when no other broad rule does.
    pub warning: bool,
    /// What probably went wrong, in one sentence (shown after "likely:").
    pub cause: &'static str,
    /// The layer's general fix.
    pub fix: &'static str,
    /// A real message this rule must recognise on its own (no catalogue entry matches it).
    pub example: &'static str,
}

/// One broad rule that matched, and where.
#[derive(Debug)]
pub struct BroadHit {
    /// The rule that matched.
    pub rule: &'static Rule,
    /// 1-based line number of the evidence.
    pub line_number: usize,
    /// The matched line, trimmed and shortened.
    pub evidence: String,
    /// The input up to and including the evidence line.
    pub before_len: usize,
}

/// Words on a line that say something failed; paired with a layer's nouns so that an
/// environment dump ("Nvidia driver version: 550.54") is not read as a failure.
const FAILED: &[&str] = &[
    "fail",
    "error",
    "not found",
    "cannot",
    "could not",
    "couldn't",
    "can't",
    "unable",
    "no such file",
    "not loaded",
    "insufficient",
    "mismatch",
    "too old",
    "not set",
];

const DRIVER_FIX: &str = "Check the driver first: `nvidia-smi` must list the GPU. Reinstall the \
driver the manifest pins from the archive (`stackpin install MANIFEST`), reboot, and make sure it is at \
least the version the toolkit's release notes require; then prove again.";

const TOOLKIT_FIX: &str = "Install the CUDA toolkit version the library was built for (the \
manifest's toolkit pin) and put its bin/lib folders on the path (CUDA_HOME, LD_LIBRARY_PATH or \
PATH on Windows); `stackpin doctor MANIFEST` shows what the host has.";

/// The toolkit's general fix, and the cause of an nvcc found in a shell but not in the build:
/// `sudo` resets PATH (speedinghzl/CCNet#56, traveller59/second.pytorch#7: "nvcc: not found"
/// under `sudo`, cured by running without it).
const TOOLKIT_MISSING_FIX: &str = "Install the CUDA toolkit version the library was built for \
(the manifest's toolkit pin) and put its bin/lib folders on the path (CUDA_HOME, LD_LIBRARY_PATH \
or PATH on Windows); `stackpin doctor MANIFEST` shows what the host has. If `nvcc --version` \
works in your shell but the build says nvcc is not found, the build ran under `sudo`, which \
resets PATH: run it without sudo, or as `sudo env PATH=\"$PATH\" …`.";

const LIBRARY_FIX: &str = "Reinstall the training library build the manifest pins (the exact \
+cuXYZ wheels, from the archive), in a venv with the Python it was built for; check its release \
notes list this GPU's compute capability.";

const MEMORY_FIX: &str = "Halve the batch and run again from a clean start (close other GPU \
programs; `nvidia-smi` lists them); where the batch is already 1 (at inference, often), shrink the input instead (image size, \
tiles, sequence length) and run under `torch.inference_mode()` or in half precision; if that still \
does not fit, the model needs a card with more memory. `stackpin vram --peak PEAK --batch N \
--vram SIZE` names the largest batch that fits.";

const HARDWARE_FIX: &str = "Reboot (or reset the GPU with `nvidia-smi -r`), then read `dmesg` \
for NVRM Xid lines and `nvidia-smi -q` for ECC and retired pages; check power, cooling and \
seating. If it returns on the same card, have it replaced: no reinstall fixes hardware.";

/// Every broad rule, in tie-break order.
pub const RULES: &[Rule] = &[
    Rule {
        id: "hw-likely-bus-or-reset",
        layer: Hardware,
        groups: &[&[
            "fallen off the bus",
            "nv_err_reset_required",
            "gpu reset required",
            "gpu is lost",
            "pcie bus error",
        ]],
        with_line: &[],
        warning: false,
        cause: "The GPU itself stopped answering (off the bus, lost, or waiting for a reset).",
        fix: HARDWARE_FIX,
        example: "pcieport 0000:00:01.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer",
    },
    Rule {
        id: "hw-likely-ecc",
        layer: Hardware,
        // Not bare "ECC", "Retired Pages" or "Uncorrectable": `nvidia-smi` and `nvidia-smi -q`
        // print those as headers on every healthy card, and logs often carry that output.
        groups: &[&[
            "uncorrectable ecc",
            "ecc error encountered",
            "ecc error detected",
            "ecc errors detected",
            "cuda_error_ecc",
            "double bit error",
            "row remapping fail",
        ]],
        with_line: &[],
        warning: false,
        cause: "The GPU's memory reports errors (ECC): a hardware fault.",
        fix: HARDWARE_FIX,
        example: "GPU 1: ECC errors detected in the framebuffer; please reset",
    },
    Rule {
        id: "hw-likely-xid",
        layer: Hardware,
        groups: &[&[" xid", "xid ("]],
        with_line: &[],
        warning: false,
        cause: "The driver logged an Xid error: the GPU (or its power, heat or bus) faulted.",
        fix: HARDWARE_FIX,
        example: "NVRM: Xid (PCI:0000:3b:00): 109, pid=2261, name=python, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x3c046",
    },
    Rule {
        id: "hw-likely-busy-with-nvrm",
        layer: Hardware,
        groups: &[&["busy or unavailable", "cudaerrordevicesunavailable"]],
        with_line: &["nvrm:"],
        warning: false,
        cause: "CUDA finds the GPU busy or unavailable while the driver logs a fault for it \
                (NVRM): the card is in a bad state.",
        fix: HARDWARE_FIX,
        example: "CUDA error: all CUDA-capable devices are busy or unavailable\n\
                  NVRM: GPU at PCI:0000:41:00: GPU-1b2c3d4e",
    },
    Rule {
        id: "drv-likely-driver-named",
        layer: Driver,
        groups: &[&[
            "cudaerrorinsufficientdriver",
            "cuda_error_system_driver_mismatch",
            "cudaerrorsystemdrivermismatch",
            "nvrm:",
        ]],
        with_line: &[],
        warning: false,
        cause: "The GPU driver reported the failure (NVRM) or is too old for the CUDA runtime.",
        fix: DRIVER_FIX,
        example: "NVRM: API mismatch: the client has the version 550.54, but this kernel module \
                  has the version 535.161.",
    },
    Rule {
        id: "drv-likely-driver-failed",
        layer: Driver,
        groups: &[
            &[
                "cuinit",
                "nvml",
                "nvidia-smi",
                "nvidia driver",
                "cuda driver",
                "nvidia.ko",
                "nvidia kernel module",
                "nvidia-uvm",
                "nvidia-modeset",
                "nouveau",
            ],
            FAILED,
        ],
        with_line: &[],
        warning: false,
        cause: "A part of the GPU driver (cuInit, NVML, nvidia-smi or its kernel module) failed.",
        fix: DRIVER_FIX,
        example: "nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: 0x0000c67e:0:0:0x0000000f",
    },
    Rule {
        id: "tk-likely-cuda-library-missing",
        layer: Toolkit,
        // Not TensorRT's libnvinfer: TensorFlow warns it is missing on every start.
        groups: &[
            &[
                "libcudart",
                "libcublas",
                "libcufft",
                "libcurand",
                "libcusolver",
                "libcusparse",
                "libcudnn",
                "libnvrtc",
                "libnvjitlink",
                "libnccl",
                "libcupti",
                "libnvtoolsext",
                "libnpp",
                "cudart64_",
                "cublas64_",
                "cublaslt64_",
                "cufft64_",
                "curand64_",
                "cusolver64_",
                "cusparse64_",
                "cudnn64_",
                "cudnn_ops",
                "cudnn_cnn",
                "nvrtc64_",
                "cupti64_",
            ],
            &[
                "not found",
                "cannot open",
                "no such file",
                "could not load",
                "couldn't load",
                "unable to load",
                "failed to load",
                "cannot find",
                "could not find",
                "could not locate",
                "not loaded",
            ],
        ],
        with_line: &[],
        warning: false,
        cause: "A CUDA toolkit library the training library needs cannot be found or loaded.",
        fix: TOOLKIT_FIX,
        example: "ImportError: libnvToolsExt.so.1: cannot open shared object file: No such file",
    },
    Rule {
        id: "tk-likely-cuda-library-status",
        layer: Toolkit,
        groups: &[&[
            "cusolver_status",
            "cusolver error",
            "cublas_status_not_initialized",
            "cusparse_status",
            "runtime library not found",
        ]],
        with_line: &[],
        warning: false,
        cause: "A CUDA toolkit library (cuSOLVER, cuBLAS, cuSPARSE) failed to start or run: the \
                toolkit is missing, mismatched, or does not support this GPU.",
        fix: TOOLKIT_FIX,
        example: "RuntimeError: cusolver_status_invalid_value when calling cusolverDnSgetrf",
    },
    Rule {
        id: "tk-likely-toolkit-missing",
        layer: Toolkit,
        // Not "cuda runtime": old PyTorch wrote every CUDA error as "cuda runtime error (N)",
        // out of memory included.
        groups: &[&["nvcc", "cuda_home", "cuda toolkit"], FAILED],
        with_line: &[],
        warning: false,
        cause: "The CUDA toolkit (nvcc, CUDA_HOME, the runtime) was not found or failed.",
        fix: TOOLKIT_MISSING_FIX,
        example: "/bin/sh: 1: nvcc: not found",
    },
    // TensorRT printing the cuDNN or cuBLAS it was built with beside the one it loaded: a
    // warning on every start where they differ, so it places a log only when nothing else
    // fails (an out-of-memory after it is the cause). wang-xinyu/tensorrtx#1031,
    // NVIDIA/TensorRT#3534 (a maintainer: a warning, it can be ignored), shouxieai/tensorRT_Pro#49,
    // NVIDIA/TensorRT#2580 (Myelin's error wording of the same pair).
    Rule {
        id: "tk-likely-tensorrt-linked-vs-loaded",
        layer: Toolkit,
        groups: &[
            &[
                "tensorrt was linked against cudnn",
                "tensorrt was linked against cublas",
                "compiled against cublaslt",
                "compiled against cublas ",
                "compiled against cudnn",
            ],
            &["but loaded", "but running against"],
        ],
        with_line: &[],
        warning: true,
        cause: "TensorRT loaded another cuDNN or cuBLAS than the one it was built with (it prints the pair): a warning that is usually harmless, unless TensorRT then fails inside that library.",
        fix: "If the program works, the warning can be left. To remove it, or when TensorRT then fails in cuDNN/cuBLAS, make the versions TensorRT names the ones that load: install the cuDNN (or the CUDA release whose cuBLAS) its release notes list, put that copy first on the loader path (LD_LIBRARY_PATH, PATH on Windows; a library's own cuDNN, such as torch's, is loaded first when it is imported first), and remove older copies.",
        example: "[W] [TRT] TensorRT was linked against cuBLAS/cuBLAS LT 11.6.3 but loaded cuBLAS/cuBLAS LT 11.5.1",
    },
    Rule {
        id: "lib-likely-arch-or-build",
        layer: Library,
        groups: &[&[
            "invalid device function",
            "no kernel image",
            "sm_*is not compatible",
            "sm_*not compatible with",
            "nobinaryforgpu",
            "no binary for gpu",
            "not compiled with cuda",
            "not built with cuda",
            "built without cuda",
            "compiled without cuda",
            "without cuda support",
            "gpu_hist",
        ]],
        with_line: &[],
        warning: false,
        cause: "The installed build of the training library carries no GPU code for this card \
                (wrong architecture, or a CPU-only build).",
        fix: LIBRARY_FIX,
        example: "CUDA kernel failed : no kernel image for this card (sm_120)",
    },
    Rule {
        id: "lib-likely-wheel",
        layer: Library,
        groups: &[&[
            "not a supported wheel",
            "none of the wheel's tags",
            "invalid wheel",
            "no matching distribution",
            "could not find a version that satisfies",
            "requires a different python",
        ]],
        with_line: &[],
        warning: false,
        cause: "pip could not install the training library: no wheel fits this Python and \
                platform, or the wheel is damaged.",
        fix: LIBRARY_FIX,
        example: "ERROR: flash_attn-2.5.0.whl is not a supported wheel here",
    },
    Rule {
        id: "mem-likely-oom",
        layer: Memory,
        groups: &[&[
            "out of memory",
            "oom when allocating",
            "cuda error: 2 ",
            "cuda error! 2 ",
            "cuda error 2 ",
            "cudaerrormemoryallocation",
            "resource_exhausted",
            "resourceexhausted",
            "cuda_error_out_of_memory",
            "cublas_status_alloc_failed",
            "cudnn_status_alloc_failed",
            "not enough gpu memory",
            "insufficient gpu memory",
            "failed to allocate*on device",
        ]],
        with_line: &[],
        warning: false,
        cause: "The GPU ran out of memory: the batch (or another process) does not fit.",
        fix: MEMORY_FIX,
        example: "CUDA error! 2",
    },
];

/// Advice a launcher prints on every exit, whatever the cause: ComfyUI portable's
/// run_nvidia_gpu.bat echoes "If you see this and ComfyUI did not start try updating your Nvidia
/// Drivers" after python stops, also on the newest driver (Comfy-Org/ComfyUI#10981, #13798). Its
/// words are no evidence of a layer, so no broad rule reads that line.
const LAUNCHER_ADVICE: &[&str] = &["if you see this and comfyui did not start"];

/// The broad rule that best places `text`, by the rule in the module docs; `None` when no
/// layer's vocabulary appears.
pub fn best(text: &str) -> Option<BroadHit> {
    let segments: Vec<(matcher::Segment<'_>, String)> = matcher::segments(text)
        .filter(|seg| !LAUNCHER_ADVICE.iter().any(|a| seg.lower.contains(a)))
        .map(|seg| {
            let padded = format!(" {} ", seg.lower);
            (seg, padded)
        })
        .collect();
    let line_holds =
        |terms: &[&str], padded: &str| terms.iter().any(|t| pattern_matches(t, padded));
    RULES
        .iter()
        .enumerate()
        .filter(|(_, rule)| {
            rule.with_line.is_empty() || segments.iter().any(|(_, p)| line_holds(rule.with_line, p))
        })
        .filter_map(|(order, rule)| {
            let (seg, _) = segments
                .iter()
                .find(|(_, p)| rule.groups.iter().all(|group| line_holds(group, p)))?;
            Some((order, rule, seg))
        })
        .min_by_key(|(order, rule, seg)| {
            (
                rule.warning,
                matcher::causal_rank(rule.layer),
                seg.line_number,
                *order,
            )
        })
        .map(|(_, rule, seg)| BroadHit {
            rule,
            line_number: seg.line_number,
            evidence: matcher::shorten(seg.text.trim()),
            before_len: seg.end,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn a_launchers_exit_advice_names_no_layer() {
        let echo = "K:\\ComfyUI_windows_portable_3>echo If you see this and ComfyUI did not start try updating your Nvidia Drivers to the latest. If you get a c10.dll error you need to install vc redist that you can find: https://aka.ms/vc14/vc_redist.x64.exe\n\
                    If you see this and ComfyUI did not start try updating your Nvidia Drivers to the latest. If you get a c10.dll error you need to install vc redist that you can find: https://aka.ms/vc14/vc_redist.x64.exe";
        assert!(best(echo).is_none());
        let with_cause = format!("RuntimeError: cuInit failed: unknown error\n{echo}");
        assert_eq!(
            best(&with_cause).map(|h| h.rule.id),
            Some("drv-likely-driver-failed")
        );
    }

    #[test]
    fn every_rule_example_is_placed_by_that_rule_alone() {
        for rule in RULES {
            let hit = best(rule.example).unwrap_or_else(|| panic!("{}: no hit", rule.id));
            assert_eq!(hit.rule.id, rule.id, "{}", rule.example);
        }
    }

    #[test]
    fn rule_ids_are_unique_and_say_likely_under_their_layer() {
        let mut seen = HashSet::new();
        for rule in RULES {
            assert!(seen.insert(rule.id), "duplicate {}", rule.id);
            let prefix = match rule.layer {
                Driver => "drv-likely-",
                Toolkit => "tk-likely-",
                Library => "lib-likely-",
                Memory => "mem-likely-",
                Hardware => "hw-likely-",
                FailureLayer::Unknown => panic!("{} is filed under unknown", rule.id),
            };
            assert!(rule.id.starts_with(prefix), "{}", rule.id);
            for term in rule.groups.iter().flat_map(|g| g.iter()) {
                assert_eq!(*term, term.to_lowercase(), "{}: {term:?}", rule.id);
            }
        }
    }

    #[test]
    fn tensorrts_linked_versus_loaded_pair_is_the_toolkit_only_when_nothing_else_fails() {
        for log in [
            // wang-xinyu/tensorrtx#1031.
            "[07/01/2022-17:03:23] [W] [TRT] TensorRT was linked against cuDNN 8.1.0 but loaded cuDNN 8.0.5",
            // NVIDIA/TensorRT#3534.
            "[TRT] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.8.0",
            // shouxieai/tensorRT_Pro#49.
            "][trt_builder.cpp:36]:NVInfer: TensorRT was linked against cuBLAS/cuBLAS LT 11.6.3 but loaded cuBLAS/cuBLAS LT 11.3.1",
            // NVIDIA/TensorRT#2580 (Myelin's wording).
            "[E] [TRT] 1: [raiiMyelinGraph.h::RAIIMyelinGraph::24] Error Code 1: Myelin (Compiled against cuBLASLt 11.5.2.0 but running against cuBLASLt 11.5.1.0.)",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(
                (d.id.as_str(), d.layer),
                ("tk-likely-tensorrt-linked-vs-loaded", Toolkit),
                "{log}"
            );
        }
        // Nor before a failure only the broad rules place.
        let log = "[W] [TRT] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.7.0\nCUDA error! 2";
        assert_eq!(best(log).map(|h| h.rule.layer), Some(Memory));
        // The warning before TensorRT's own out-of-memory is not the cause (ceccocats/tkDNN#143).
        let log = "TENSORRT LOG: TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.6.0\n\
                   TENSORRT LOG: ../rtSafe/safeRuntime.cpp (25) - Cuda Error in allocate: 2 (out of memory)";
        assert_eq!(
            crate::diagnose::diagnose(log).map(|d| d.layer),
            Some(Memory)
        );
    }

    #[test]
    fn no_layer_vocabulary_means_no_hit() {
        let clean = "epoch 3/10 loss 0.412\nNvidia driver version: 550.54.15\n\
                     CUDA runtime version: 12.4.131\nGPU 0: NVIDIA A100-SXM4-80GB\n";
        assert!(best(clean).is_none());
    }

    #[test]
    fn error_codes_need_a_word_boundary() {
        assert_eq!(best("CUDA error! 2").map(|h| h.rule.layer), Some(Memory));
        assert!(best("CUDA error: 209 at kernel.cu:10").is_none());
    }

    #[test]
    fn busy_is_hardware_only_with_a_driver_fault_line() {
        assert!(best("CUDA error: CUDA-capable device(s) is/are busy or unavailable").is_none());
        let with_nvrm = "CUDA error: CUDA-capable device(s) is/are busy or unavailable\n\
                         [12.3] NVRM: GPU 0000:41:00.0: RmInitAdapter failed!";
        let hit = best(with_nvrm).expect("a hit");
        assert_eq!(hit.rule.id, "hw-likely-busy-with-nvrm");
        assert_eq!(hit.line_number, 1);
    }

    #[test]
    fn a_lower_layer_wins_over_a_higher_one_in_the_same_log() {
        let log = "RuntimeError: CUDA error: out of memory\n\
                   [99.1] NVRM: Xid (PCI:0000:01:00): 62, pid=77, Internal micro-controller halt";
        assert_eq!(best(log).map(|h| h.rule.layer), Some(Hardware));
    }
}
