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
    fn nccls_unhandled_cuda_error_with_nccl_and_cuda_matching_is_told_to_update_nccl() {
        // NVIDIA/nccl-tests#5: updating NCCL 1.0 settled it (round 26's NVIDIA/nccl#1024, a bug
        // fixed in NCCL 2.18.6, is the other thread behind the sentence; not a variant here).
        let log = "NCCL failure all_reduce.cu:95 'unhandled cuda error'";
        let d = crate::diagnose::diagnose(log).expect("a diagnosis");
        assert_eq!(d.id, "lib-nccl-unhandled-cuda", "{log}");
        assert!(d.fix.contains("update NCCL"), "{}", d.fix);
    }

    /// One entry audited against the threads its words occur in: real variants (thread,
    /// verbatim log), the entry each must reach, the second layer the threads showed, and what
    /// the fix must say for the resolutions found.
    struct Audited {
        id: &'static str,
        second: Option<FailureLayer>,
        fix_has: &'static [&'static str],
        variants: &'static [(&'static str, &'static str)],
    }

    const AUDITED: &[Audited] = &[
        Audited {
            id: "drv-cudnn-insufficient-driver",
            second: Some(FailureLayer::Memory),
            fix_has: &["TF_FORCE_GPU_ALLOW_GROWTH", "minimum"],
            variants: &[
                // Cured by a newer driver: 384.69 under CUDA 9.0's minimum.
                (
                    "localminimum/QANet#5",
                    "2018-03-23 11:55:55.959752: E tensorflow/stream_executor/cuda/cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n2018-03-23 11:55:55.959970: E tensorflow/stream_executor/cuda/cuda_dnn.cc:393] possibly insufficient driver version: 384.69.0",
                ),
                // 410.48 meets CUDA 10.0's minimum.
                (
                    "tensorflow/tensorflow#34214",
                    "2019-11-13 11:58:28.791219: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n2019-11-13 11:58:28.791275: E tensorflow/stream_executor/cuda/cuda_dnn.cc:337] Possibly insufficient driver version: 410.48.0",
                ),
                // 418.87 meets CUDA 10.1's minimum.
                (
                    "nanoporetech/medaka#236",
                    "2020-12-23 20:09:14.497776: E tensorflow/stream_executor/cuda/cuda_dnn.cc:328] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n2020-12-23 20:09:14.497855: E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Possibly insufficient driver version: 418.87.0\n2020-12-23 20:09:14.497879: F tensorflow/core/kernels/cudnn_rnn_ops.cc:1643] Check failed: stream->parent()->GetRnnAlgorithms(&algorithms)",
                ),
            ],
        },
        Audited {
            id: "lib-torch-cuda-unavailable-at-extension-build",
            second: Some(FailureLayer::Driver),
            fix_has: &["torch.cuda.is_available()", "+cpu", "--gpus all"],
            variants: &[
                // A CPU-only torch; a build node without the driver.
                (
                    "open-mmlab/mmdetection#281",
                    "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
                ),
                (
                    "microsoft/SpareNet#34",
                    "No CUDA runtime is found, using CUDA_HOME='/usr'",
                ),
                // A CPU-only torch from the project's environment.yml.
                (
                    "graphdeco-inria/gaussian-splatting#748",
                    r"No CUDA runtime is found, using CUDA_HOME='C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8'",
                ),
                (
                    "open-mmlab/mmdetection#1876",
                    "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nTraceback (most recent call last):\n  File \"setup.py\", line 171, in <module>\n    sources=['src/compiling_info.cpp']),\n  File \"setup.py\", line 101, in make_cuda_ext\n    raise EnvironmentError('CUDA is required to compile MMDetection!')\nOSError: CUDA is required to compile MMDetection!",
                ),
            ],
        },
        Audited {
            id: "drv-windows-code-43",
            second: Some(FailureLayer::Hardware),
            fix_has: &["clean install", "efifb:off", "another"],
            variants: &[
                // "Probably bricked GPU".
                (
                    "dartraiden/NVIDIA-patcher#531",
                    "`Windows has stopped this device because it has reported problems. (Code 43)`",
                ),
                (
                    "dartraiden/NVIDIA-patcher#576",
                    "And it says \"Windows has stopped this device because it has reported problems. (Code 43)",
                ),
            ],
        },
        Audited {
            id: "tk-cusolver-failed",
            second: Some(FailureLayer::Memory),
            fix_has: &["compute capability", "lower the batch"],
            variants: &[
                // GPU memory short: a smaller batch cured it.
                (
                    "PaddlePaddle/PaddleX#740",
                    "Cublas error, `CUSOLVER_STATUS_INTERNAL_ERROR`. An internal cuSolver operation failed.",
                ),
                // Gone with a newer CUDA and driver.
                (
                    "pytorch/pytorch#70122",
                    "RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED, when calling `cusolverDnDgetrf( handle, m, n, dA, ldda, static_cast<double*>(dataPtr.get()), ipiv, info)`",
                ),
                (
                    "KAIST-VCLAB/sphere-stereo#9",
                    "RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling `cusolverDnCreate(handle)`",
                ),
            ],
        },
        Audited {
            id: "lib-nccl-system-error",
            second: None,
            fix_has: &["--ipc=host", "NCCL_SOCKET_IFNAME", "--net host"],
            variants: &[
                // --net host: no usable IP interface in the container.
                (
                    "NVIDIA/nccl-tests#14",
                    "NCCL failure common.cu:874 'unhandled system error'",
                ),
                // NCCL_SOCKET_IFNAME=bond0; its title.
                (
                    "NVIDIA/nccl#697",
                    "ncclSystemError: System call (socket, malloc, munmap, etc) failed when training on two remote nodes",
                ),
                (
                    "vllm-project/vllm#5828",
                    "RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)",
                ),
            ],
        },
        Audited {
            id: "lib-segfault",
            second: Some(FailureLayer::Driver),
            fix_has: &["+cuXYZ", "libcuda.so", "nvidia-smi"],
            variants: &[
                // Under gdb the crash is in libcuda.so.1.
                (
                    "pytorch/pytorch#33135",
                    "it report `Segmentation fault (core dumped)`.",
                ),
                (
                    "pytorch/pytorch#4111",
                    "~$ python -c \"import torch; x = torch.randn(10).cuda()\"\nSegmentation fault (core dumped)",
                ),
            ],
        },
        Audited {
            id: "tk-nvcc-unsupported-arch",
            second: Some(FailureLayer::Library),
            fix_has: &["TORCH_CUDA_ARCH_LIST", "setup.py"],
            variants: &[
                // compute_35 removed from the project's setup.py.
                (
                    "lisa-analysis-tools/GBGPU#7",
                    "nvcc fatal   : Unsupported gpu architecture 'compute_35'\nerror: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",
                ),
                // libtorch's CMake default list, fixed in torch.
                (
                    "pytorch/pytorch#121099",
                    "2024-03-03T19:18:33.4939555Z nvcc fatal   : Unsupported gpu architecture 'compute_35'",
                ),
            ],
        },
        Audited {
            id: "drv-too-old-for-runtime",
            second: None,
            fix_has: &["newest driver", "--gpus all"],
            variants: &[
                // Only in Docker.
                (
                    "NVIDIA/DIGITS#1769",
                    "> Check failed: error == cudaSuccess (35 vs. 0)  CUDA driver version is insufficient for CUDA runtime version",
                ),
                // Its title; `--gpus all` cured it.
                (
                    "NVIDIA/nvidia-docker#400",
                    "CUDA driver version is insufficient for CUDA runtime version",
                ),
            ],
        },
        Audited {
            id: "lib-pip-no-matching-distribution",
            second: None,
            fix_has: &["64-bit", "index_url"],
            variants: &[
                // "Make sure it is 64-bit python".
                (
                    "pytorch/pytorch#79347",
                    "`ERROR: Could not find a version that satisfies the requirement torch (from versions: none)`\n`ERROR: No matching distribution found for torch`",
                ),
                (
                    "AUTOMATIC1111/stable-diffusion-webui#10592",
                    "Python 3.10.6 (tags/v3.10.6:9c7b4bd, Aug  1 2022, 21:38:17) [MSC v.1932 32 bit (Intel)]\nERROR: Could not find a version that satisfies the requirement torch==2.0.1 (from versions: none)\nERROR: No matching distribution found for torch==2.0.1",
                ),
            ],
        },
        Audited {
            id: "lib-windows-dll-load",
            second: None,
            fix_has: &["Visual C++", "64-bit Python"],
            variants: &[
                // A 32-bit component in the environment.
                (
                    "pytorch/pytorch#4518",
                    "from torch._C import *\nImportError: DLL load failed: The operating system cannot run %1.",
                ),
                // The VC++ redistributable cured it.
                (
                    "pytorch/pytorch#32916",
                    "from torch._C import * (ImportError: DLL load failed)",
                ),
            ],
        },
        Audited {
            id: "tk-cudnn-version-mismatch",
            second: Some(FailureLayer::Library),
            fix_has: &["LD_LIBRARY_PATH", "nvidia-cudnn"],
            variants: &[
                (
                    "facebookresearch/audiocraft#186",
                    "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 7, 0) but found runtime version (8, 6, 0). PyTorch already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the bundled cuDNN.Looks like your LD_LIBRARY_PATH contains incompatible version of cudnnPlease either remove it from the path or install cudnn (8, 7, 0)",
                ),
                // Fixed in the wheels' rpath.
                (
                    "pytorch/pytorch#80637",
                    "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against (8, 0, 3)",
                ),
                // conda install cudnn=7.1.2.
                (
                    "xingyizhou/CenterNet#119",
                    "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7605",
                ),
            ],
        },
        Audited {
            id: "drv-no-cuda-device",
            second: Some(FailureLayer::Library),
            fix_has: &["nvidia-smi", "CUDA_VISIBLE_DEVICES=1"],
            variants: &[
                // os.environ['CUDA_VISIBLE_DEVICES'] = '0' cured it.
                (
                    "jiaw-z/CoR-GS#23",
                    "    torch._C._cuda_init()\nRuntimeError: No CUDA GPUs are available`",
                ),
                // CUDA_VISIBLE_DEVICES=2 where nvidia-smi lists GPU 0.
                (
                    "pytorch/examples#115",
                    "(py35) ~/pytorch/examples/mnist$ CUDA_VISIBLE_DEVICES=2 python main.py\nTHCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=109 error=38 : no CUDA-capable device is detected",
                ),
            ],
        },
        Audited {
            id: "lib-invalid-device-function",
            second: None,
            fix_has: &["get_arch_list", "rebuild it on this machine"],
            variants: &[
                // Compiled on another cluster node; rebuilt in place.
                (
                    "pytorch/pytorch#1557",
                    "THCudaCheck FAIL file=/gpfsnyu/home/ks3286/pytorch/torch/lib/THC/generated/../generic/THCTensorMathPointwise.cu line=247 error=8 : invalid device function",
                ),
                // The local CUDA differed from the conda cudatoolkit torch used.
                (
                    "daerduoCarey/PyTorchEMD#11",
                    "RuntimeError: cuda runtime error (98) : invalid device function at /home/user/hdd/github/PyTorchEMD/cuda/emd_kernel.cu:190",
                ),
            ],
        },
        Audited {
            id: "drv-dkms-build-failed",
            second: None,
            fix_has: &["/var/lib/dkms/nvidia", "dkms remove"],
            variants: &[
                // A Wi-Fi driver's module, not the GPU stack's.
                (
                    "Mange/rtl8192eu-linux-driver#234",
                    "'make' all KVER=5.10.0-kali6-amd64.....(bad exit status: 2)\nError! Bad return status for module build on kernel: 5.10.0-kali6-amd64 (x86_64)\nConsult /var/lib/dkms/rtl8192eu/1.0/build/make.log for more information.",
                ),
                // The module's own build, fixed in a new release of it.
                (
                    "fmorgner/dev-cyber#9",
                    "==> dkms install --no-depmod cyber/42.1729.1939 -k 6.17.6-zen1-1-zen\n\nError! Bad return status for module build on kernel: 6.17.6-zen1-1-zen (x86_64)\nConsult /var/lib/dkms/cyber/42.1729.1939/build/make.log for more information.",
                ),
            ],
        },
        // Out of memory where the batch is already 1 (at inference): the threads shrank the
        // input (tiles, a smaller image) or moved to a card with more memory.
        Audited {
            id: "mem-torch-oom",
            second: None,
            fix_has: &[
                "Halve the batch",
                "batch is already 1",
                "shrink the input",
                "more memory",
            ],
            variants: &[
                (
                    "CosmiQ/solaris#361",
                    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 11.93 GiB total capacity; 8.75 GiB already allocated; 763.06 MiB free; 10.74 GiB reserved in total by PyTorch)",
                ),
                (
                    "leftthomas/SRGAN#60",
                    "RuntimeError: CUDA out of memory. Tried to allocate 878.00 MiB (GPU 0; 10.92 GiB total capacity; 9.48 GiB already allocated; 544.06 MiB free; 1.17 MiB cached)",
                ),
                (
                    "cv516Buaa/tph-yolov5#23",
                    "ret = input.softmax(dim)\nRuntimeError: CUDA out of memory. Tried to allocate 962.00 MiB (GPU 0; 3.81 GiB total capacity; 1.79 GiB already allocated; 725.00 MiB free; 1.93 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                ),
            ],
        },
    ];

    #[test]
    fn audited_entries_answer_their_threads_variants() {
        let mut failures = Vec::new();
        for a in AUDITED {
            for (source, log) in a.variants {
                let Some(d) = crate::diagnose::diagnose(log) else {
                    failures.push(format!("{}, {source}: no diagnosis", a.id));
                    continue;
                };
                if d.id != a.id {
                    failures.push(format!("{}, {source}: got {}", a.id, d.id));
                }
                if d.second_layer != a.second {
                    failures.push(format!("{}, {source}: second {:?}", a.id, d.second_layer));
                }
                for want in a.fix_has.iter().filter(|w| !d.fix.contains(**w)) {
                    failures.push(format!("{}, {source}: fix lacks {want:?}", a.id));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn audited_entries_leave_their_neighbours_words_to_them() {
        for (source, log, id) in [
            // A later line that names the cause decides over torch's extension-build note.
            (
                "open-mmlab/mmdetection#3193",
                "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nRuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at /pytorch/aten/src/THC/THCGeneral.cpp:47",
                "drv-no-cuda-device",
            ),
            // The CUDA runtime this library itself could not find stays the toolkit's.
            (
                "hannes-brt/hebel#20",
                "OSError: CUDA runtime library not found",
                "tk-runtime-library-not-found",
            ),
            // An AMD card's HIP out of memory under collect_env's +rocm report (its title
            // and its report): the ROCm entry is Generic.
            (
                "pytorch/pytorch#138002",
                "PyTorch version: 2.4.1+rocm6.1\nIs debug build: False\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.1.40091-a8dbc0c19\nGPU models and configuration: AMD Radeon RX 7900 XT (gfx1100)\ntorch/nn/modules/conv.py torch.OutOfMemoryError: HIP out of memory",
                "mem-torch-oom",
            ),
            // Alone, a ROCm build on an NVIDIA card is still that entry's.
            (
                "easydiffusion/easydiffusion#1477",
                "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
                "lib-rocm-build-on-nvidia",
            ),
        ] {
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.id, id, "{source}");
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
