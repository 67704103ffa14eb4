//! The failure catalogue: real messages from public issue trackers, each mapped to the layer of
//! the stack that failed, with the cause and the fix a user can act on.
//!
//! This module is data only. Matching and ranking live in [`super::matcher`]; the entries are
//! split by layer into sibling files so each stays readable. Every entry names its source (an
//! issue thread or the upstream source file the text comes from) and carries one real example
//! message, which the tests feed back through the matcher.
//!
//! Pattern syntax (kept deliberately small so no regex engine is needed): a pattern is lowercase
//! text matched case-insensitively against one line of the log; `*` separates pieces that must
//! appear in that order on the same line. Patterns target the stable middle of a message, never
//! the log prefix (TensorFlow moved `tensorflow/stream_executor/...` to
//! `external/local_xla/xla/stream_executor/...`) or the exception class (PyTorch's OOM went
//! `RuntimeError` → `torch.cuda.OutOfMemoryError` → `torch.OutOfMemoryError`).

mod driver;
mod library;
mod memory;
mod toolkit;

use super::FailureLayer;

/// How much a match says about the cause.
///
/// PyTorch's trailer "CUDA kernel errors might be asynchronously reported" is deliberately not
/// an entry at all: it follows every CUDA error, names none, and filing it under a layer would
/// be a guess (it sent `unspecified launch failure` crashes, often hardware, to "library").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Specificity {
    /// The message names its cause (a version mismatch, a missing library, an OOM).
    Specific,
    /// A symptom many causes share ("Installation has failed", "Segmentation fault", a
    /// warning that is often harmless): it only wins when nothing specific matched.
    Generic,
}

/// One known failure.
#[derive(Debug)]
pub struct Entry {
    /// Stable identifier, `<layer>-<what>`, shown to users and used by tests.
    pub id: &'static str,
    /// The layer of the stack that failed.
    pub layer: FailureLayer,
    /// Whether the message names its cause or is a shared symptom.
    pub specificity: Specificity,
    /// Any one of these matching a line is a hit (syntax in the module docs).
    pub patterns: &'static [&'static str],
    /// What went wrong, in one sentence.
    pub cause: &'static str,
    /// What to do next, in the order to do it.
    pub fix: &'static str,
    /// A real message this entry must recognise (verbatim excerpt from the source).
    pub example: &'static str,
    /// Where the message was seen: issue thread(s) or upstream source file.
    pub source: &'static str,
}

/// Every entry, in catalogue order (the last tie-breaker when two entries match the same line).
pub fn entries() -> impl Iterator<Item = &'static Entry> {
    memory::HARDWARE
        .iter()
        .chain(driver::ENTRIES)
        .chain(toolkit::ENTRIES)
        .chain(library::ENTRIES)
        .chain(memory::MEMORY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_cuda_runfiles_wording_of_a_missing_kernel_source_is_the_installers_entry() {
        // koszullab/instaGRAAL#10: the CUDA runfile's driver step, not nvidia-installer's words.
        let log = "The driver installation is unable to locate the kernel source,Please make sure that the kernel source packages are installed and set up correctly.";
        let d = crate::diagnose::diagnose(log).expect("a diagnosis");
        assert_eq!(d.id, "drv-inst-no-kernel-source");
    }

    #[test]
    fn nccls_unhandled_cuda_error_is_its_own_cuda_call_not_a_system_call() {
        for log in [
            // TheAtticusProject/cuad#9.
            "terminate called after throwing an instance of 'std::runtime_error'\n  what():  NCCL Error 1: unhandled cuda error",
            // NVIDIA/caffe#492 (cured by the libnccl2 for the installed CUDA).
            "Check failed: result == ncclSuccess (1 vs. 0)  unhandled cuda error",
            // NVIDIA/nccl#1410 (its last error names the CUDA call's failure).
            "[rank7]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.\n[rank7]: Last error:\n[rank7]: Cuda failure 1 'invalid argument'",
            // fanq15/FewX#74.
            "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:32, unhandled cuda error, NCCL version 2.4.8",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "lib-nccl-unhandled-cuda", "{log}");
            assert!(d.fix.contains("Cuda failure N"), "{}", d.fix);
            assert!(!d.fix.contains("--ipc=host"), "{}", d.fix);
        }
        // NCCL's system error keeps the shared-memory fix (NVIDIA/nccl#473).
        let d = crate::diagnose::diagnose("RuntimeError: NCCL Error 2: unhandled system error")
            .expect("a diagnosis");
        assert_eq!(d.id, "lib-nccl-system-error");
        assert!(d.fix.contains("--ipc=host"), "{}", d.fix);
    }

    #[test]
    fn tensorflows_possibly_insufficient_driver_is_the_driver_then_memory() {
        for log in [
            // localminimum/QANet#5 (cured by a newer driver: 384.69 under CUDA 9.0's minimum).
            "2018-03-23 11:55:55.959752: E tensorflow/stream_executor/cuda/cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n2018-03-23 11:55:55.959970: E tensorflow/stream_executor/cuda/cuda_dnn.cc:393] possibly insufficient driver version: 384.69.0",
            // tensorflow/tensorflow#34214 (410.48 meets CUDA 10.0's minimum).
            "2019-11-13 11:58:28.791219: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n2019-11-13 11:58:28.791275: E tensorflow/stream_executor/cuda/cuda_dnn.cc:337] Possibly insufficient driver version: 410.48.0",
            // nanoporetech/medaka#236 (418.87 meets CUDA 10.1's minimum).
            "2020-12-23 20:09:14.497776: E tensorflow/stream_executor/cuda/cuda_dnn.cc:328] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n2020-12-23 20:09:14.497855: E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Possibly insufficient driver version: 418.87.0\n2020-12-23 20:09:14.497879: F tensorflow/core/kernels/cudnn_rnn_ops.cc:1643] Check failed: stream->parent()->GetRnnAlgorithms(&algorithms)",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "drv-cudnn-insufficient-driver", "{log}");
            assert_eq!(d.layer, FailureLayer::Driver, "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Memory), "{log}");
            assert!(d.fix.contains("TF_FORCE_GPU_ALLOW_GROWTH"), "{}", d.fix);
        }
    }

    #[test]
    fn torchs_no_cuda_runtime_with_a_cuda_home_is_torch_or_the_driver_not_the_toolkit() {
        for log in [
            // open-mmlab/mmdetection#281 (a CPU-only torch; a build node without the driver).
            "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
            // microsoft/SpareNet#34.
            "No CUDA runtime is found, using CUDA_HOME='/usr'",
            // graphdeco-inria/gaussian-splatting#748 (a CPU-only torch from environment.yml).
            r"No CUDA runtime is found, using CUDA_HOME='C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8'",
            // open-mmlab/mmdetection#1876.
            "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nTraceback (most recent call last):\n  File \"setup.py\", line 171, in <module>\n    sources=['src/compiling_info.cpp']),\n  File \"setup.py\", line 101, in make_cuda_ext\n    raise EnvironmentError('CUDA is required to compile MMDetection!')\nOSError: CUDA is required to compile MMDetection!",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(
                d.id, "lib-torch-cuda-unavailable-at-extension-build",
                "{log}"
            );
            assert_eq!(d.second_layer, Some(FailureLayer::Driver), "{log}");
            assert!(d.fix.contains("torch.cuda.is_available()"), "{}", d.fix);
        }
        // open-mmlab/mmdetection#3193: a later line that names the cause decides.
        let d = crate::diagnose::diagnose(
            "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nRuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at /pytorch/aten/src/THC/THCGeneral.cpp:47",
        )
        .expect("a diagnosis");
        assert_eq!(d.id, "drv-no-cuda-device");
        // hannes-brt/hebel#20's own wording stays the toolkit's.
        let d = crate::diagnose::diagnose("OSError: CUDA runtime library not found")
            .expect("a diagnosis");
        assert_eq!(d.id, "tk-runtime-library-not-found");
    }

    #[test]
    fn device_managers_code_43_is_the_driver_then_the_card() {
        for log in [
            // dartraiden/NVIDIA-patcher#531 ("Probably bricked GPU").
            "`Windows has stopped this device because it has reported problems. (Code 43)`",
            // dartraiden/NVIDIA-patcher#576.
            "And it says \"Windows has stopped this device because it has reported problems. (Code 43)",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "drv-windows-code-43", "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Hardware), "{log}");
            assert!(d.fix.contains("efifb:off"), "{}", d.fix);
        }
    }

    #[test]
    fn cusolvers_failure_is_the_toolkit_then_memory() {
        for log in [
            // PaddlePaddle/PaddleX#740 (GPU memory short: a smaller batch cured it).
            "Cublas error, `CUSOLVER_STATUS_INTERNAL_ERROR`. An internal cuSolver operation failed.",
            // pytorch/pytorch#70122 (gone with a newer CUDA and driver).
            "RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED, when calling `cusolverDnDgetrf( handle, m, n, dA, ldda, static_cast<double*>(dataPtr.get()), ipiv, info)`",
            // KAIST-VCLAB/sphere-stereo#9.
            "RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling `cusolverDnCreate(handle)`",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "tk-cusolver-failed", "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Memory), "{log}");
            assert!(d.fix.contains("lower the batch"), "{}", d.fix);
        }
    }

    #[test]
    fn nccls_system_error_fix_names_the_network_interface_too() {
        for log in [
            // NVIDIA/nccl-tests#14 (--net host: no usable IP interface in the container).
            "NCCL failure common.cu:874 'unhandled system error'",
            // NVIDIA/nccl#697 (NCCL_SOCKET_IFNAME=bond0), its title.
            "ncclSystemError: System call (socket, malloc, munmap, etc) failed when training on two remote nodes",
            // vllm-project/vllm#5828.
            "RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "lib-nccl-system-error", "{log}");
            assert!(d.fix.contains("NCCL_SOCKET_IFNAME"), "{}", d.fix);
            assert!(d.fix.contains("--ipc=host"), "{}", d.fix);
        }
    }

    #[test]
    fn a_bare_segfault_is_the_library_then_the_driver() {
        for log in [
            // pytorch/pytorch#33135 (gdb: the crash is in libcuda.so.1).
            "it report `Segmentation fault (core dumped)`.",
            // pytorch/pytorch#4111.
            "~$ python -c \"import torch; x = torch.randn(10).cuda()\"\nSegmentation fault (core dumped)",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "lib-segfault", "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Driver), "{log}");
            assert!(d.fix.contains("libcuda.so"), "{}", d.fix);
        }
    }

    #[test]
    fn nvccs_unsupported_architecture_is_the_toolkit_then_the_builds_list() {
        for log in [
            // lisa-analysis-tools/GBGPU#7 (compute_35 removed from setup.py).
            "nvcc fatal   : Unsupported gpu architecture 'compute_35'\nerror: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",
            // pytorch/pytorch#121099 (libtorch's CMake default list).
            "2024-03-03T19:18:33.4939555Z nvcc fatal   : Unsupported gpu architecture 'compute_35'",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "tk-nvcc-unsupported-arch", "{log}");
            assert_eq!(d.layer, FailureLayer::Toolkit, "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Library), "{log}");
            assert!(d.fix.contains("setup.py"), "{}", d.fix);
        }
    }

    #[test]
    fn a_rocm_version_in_an_environment_report_yields_to_the_failure_beside_it() {
        // pytorch/pytorch#138002 (its title and its collect_env report): an AMD card's HIP out
        // of memory.
        let log = "PyTorch version: 2.4.1+rocm6.1\nIs debug build: False\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.1.40091-a8dbc0c19\nGPU models and configuration: AMD Radeon RX 7900 XT (gfx1100)\ntorch/nn/modules/conv.py torch.OutOfMemoryError: HIP out of memory";
        let d = crate::diagnose::diagnose(log).expect("a diagnosis");
        assert_eq!(d.layer, FailureLayer::Memory, "{}", d.id);
        // Alone, the ROCm build is still the answer (easydiffusion/easydiffusion#1477).
        let d = crate::diagnose::diagnose(
            "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
        )
        .expect("a diagnosis");
        assert_eq!(d.id, "lib-rocm-build-on-nvidia");
    }

    #[test]
    fn an_insufficient_driver_fix_names_a_container_started_without_the_gpu() {
        for log in [
            // NVIDIA/DIGITS#1769 (only in Docker).
            "> Check failed: error == cudaSuccess (35 vs. 0)  CUDA driver version is insufficient for CUDA runtime version",
            // NVIDIA/nvidia-docker#400's title (`--gpus all` cured it).
            "CUDA driver version is insufficient for CUDA runtime version",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "drv-too-old-for-runtime", "{log}");
            assert!(d.fix.contains("--gpus all"), "{}", d.fix);
        }
    }

    #[test]
    fn pip_finding_no_torch_names_a_32_bit_python_first() {
        for log in [
            // pytorch/pytorch#79347 ("Make sure it is 64-bit python").
            "`ERROR: Could not find a version that satisfies the requirement torch (from versions: none)`\n`ERROR: No matching distribution found for torch`",
            // AUTOMATIC1111/stable-diffusion-webui#10592.
            "Python 3.10.6 (tags/v3.10.6:9c7b4bd, Aug  1 2022, 21:38:17) [MSC v.1932 32 bit (Intel)]\nERROR: Could not find a version that satisfies the requirement torch==2.0.1 (from versions: none)\nERROR: No matching distribution found for torch==2.0.1",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "lib-pip-no-matching-distribution", "{log}");
            assert!(d.fix.contains("64-bit"), "{}", d.fix);
        }
    }

    #[test]
    fn a_windows_dll_load_failure_fix_names_the_runtime_and_a_32_bit_piece() {
        for log in [
            // pytorch/pytorch#4518 (a 32-bit component in the environment).
            "from torch._C import *\nImportError: DLL load failed: The operating system cannot run %1.",
            // pytorch/pytorch#32916 (the VC++ redistributable cured it).
            "from torch._C import * (ImportError: DLL load failed)",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "lib-windows-dll-load", "{log}");
            assert!(d.fix.contains("Visual C++"), "{}", d.fix);
            assert!(d.fix.contains("64-bit Python"), "{}", d.fix);
        }
    }

    #[test]
    fn a_cudnn_version_mismatch_is_the_toolkit_then_the_wheels_own_cudnn() {
        for log in [
            // facebookresearch/audiocraft#186 (torch 2.0.1+cu118).
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 7, 0) but found runtime version (8, 6, 0). PyTorch already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the bundled cuDNN.Looks like your LD_LIBRARY_PATH contains incompatible version of cudnnPlease either remove it from the path or install cudnn (8, 7, 0)",
            // pytorch/pytorch#80637 (fixed in the wheels).
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)",
            // xingyizhou/CenterNet#119 (conda install cudnn=7.1.2).
            "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7605",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "tk-cudnn-version-mismatch", "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Library), "{log}");
            assert!(d.fix.contains("LD_LIBRARY_PATH"), "{}", d.fix);
        }
    }

    #[test]
    fn cuda_seeing_no_gpu_is_the_driver_then_the_programs_device_choice() {
        for log in [
            // jiaw-z/CoR-GS#23 (os.environ['CUDA_VISIBLE_DEVICES'] = '0' cured it).
            "    torch._C._cuda_init()\nRuntimeError: No CUDA GPUs are available`",
            // pytorch/examples#115 (CUDA_VISIBLE_DEVICES=2 on a machine with fewer GPUs).
            "(py35) ~/pytorch/examples/mnist$ CUDA_VISIBLE_DEVICES=2 python main.py\nTHCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=109 error=38 : no CUDA-capable device is detected",
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, "drv-no-cuda-device", "{log}");
            assert_eq!(d.layer, FailureLayer::Driver, "{log}");
            assert_eq!(d.second_layer, Some(FailureLayer::Library), "{log}");
            assert!(d.fix.contains("CUDA_VISIBLE_DEVICES=1"), "{}", d.fix);
        }
    }

    #[test]
    fn catalogue_holds_at_least_45_entries() {
        assert!(
            entries().count() >= 45,
            "only {} entries",
            entries().count()
        );
    }

    #[test]
    fn ids_are_unique_and_prefixed_by_their_layer() {
        let mut seen = HashSet::new();
        for e in entries() {
            assert!(seen.insert(e.id), "duplicate id {}", e.id);
            let prefix = match e.layer {
                FailureLayer::Driver => "drv-",
                FailureLayer::Toolkit => "tk-",
                FailureLayer::Library => "lib-",
                FailureLayer::Memory => "mem-",
                FailureLayer::Hardware => "hw-",
                FailureLayer::Unknown => panic!("{} is filed under unknown", e.id),
            };
            assert!(
                e.id.starts_with(prefix),
                "{} should start with {prefix}",
                e.id
            );
        }
    }

    #[test]
    fn patterns_are_lowercase_with_no_empty_pieces() {
        for e in entries() {
            assert!(!e.patterns.is_empty(), "{} has no pattern", e.id);
            for p in e.patterns {
                assert_eq!(
                    *p,
                    p.to_lowercase(),
                    "{}: pattern {p:?} must be lowercase",
                    e.id
                );
                assert!(
                    p.split('*').all(|piece| !piece.trim().is_empty()),
                    "{}: pattern {p:?} has an empty piece",
                    e.id
                );
            }
        }
    }

    #[test]
    fn every_entry_names_a_public_source_and_says_what_to_do() {
        for e in entries() {
            assert!(e.source.contains("https://"), "{} has no source URL", e.id);
            assert!(
                !e.cause.is_empty() && !e.fix.is_empty(),
                "{} lacks cause or fix",
                e.id
            );
            assert!(!e.example.is_empty(), "{} has no example", e.id);
        }
    }
}
