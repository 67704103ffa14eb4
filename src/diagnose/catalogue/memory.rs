//! Memory and hardware failures: the guide's "out of memory at the first batch" and "runs at
//! 32, dies at 64", and the hardware faults (Xid 79, ECC, a lost GPU) that no reinstall fixes.

use super::{Entry, Specificity::*};
use crate::diagnose::FailureLayer::{Hardware, Memory};

/// Shared advice for every GPU out-of-memory entry; the matcher appends the batch it saw.
const OOM_FIX: &str = "Halve the batch and run again from a clean start (close other GPU \
programs; `nvidia-smi` lists them); where the batch is already 1 (at inference, often), shrink the input instead (image size, \
tiles, sequence length) and run under `torch.inference_mode()` or in half precision; if that still \
does not fit, the model needs a card with more memory. Then compare the peak with the \
prediction: `stackpin vram --peak PEAK --batch N --vram SIZE` (the peak measured at batch N, the \
card's memory) computes the largest batch that stays under the 80% line.";

pub(super) const MEMORY: &[Entry] = &[
    Entry {
        id: "mem-oom-other-process",
        layer: Memory,
        specificity: Specific,
        patterns: &["out of memory*process * has * memory in use"],
        cause: "The GPU ran out of memory and another process holds part of it.",
        fix: "Stop the other process (its PID is in the message; `nvidia-smi` lists it), restart \
              clean, and run again; compare the peak with `stackpin vram --peak PEAK --batch N --vram SIZE`.",
        example: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 \
                  has a total capacity of 79.15 GiB of which 5.56 MiB is free. Process 76883 has \
                  53.16 GiB memory in use.",
        source: "https://github.com/pytorch/pytorch/issues/16417 ; \
                 https://github.com/Tianhao-Qi/Mask2DiT/issues/4",
    },
    Entry {
        id: "mem-torch-oom",
        layer: Memory,
        specificity: Specific,
        patterns: &[
            "cuda out of memory",
            "outofmemoryerror",
            "cuda error: out of memory",
            "cudaerrormemoryallocation",
            // PyTorch's caching allocator's own sentence, quoted without its "CUDA out of
            // memory" head (ShannonAI/Self_Explaining_Structures_Improve_NLP_Models#6,
            // richard-peng-xia/MMed-RAG#38 with 2.1's "total capacty"): only a GPU allocation
            // names a total capacity, so the CPU allocator's "you tried to allocate" stays out.
            "tried to allocate*(gpu *total capacity",
            "tried to allocate*gpu * has a total capac",
        ],
        cause: "The GPU ran out of memory: the batch (at inference, the input) is too large for \
                this card (or memory fragmented after earlier steps).",
        fix: OOM_FIX,
        example: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. \
                  GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.",
        source: "https://github.com/pytorch/pytorch/issues/16417 ; \
                 https://github.com/murong-xu/CADS/issues/4 ; \
                 https://github.com/taohan10200/IIM/issues/28",
    },
    Entry {
        id: "mem-tf-oom",
        layer: Memory,
        specificity: Specific,
        patterns: &["oom when allocating tensor", "resourceexhaustederror"],
        cause: "TensorFlow ran out of GPU memory allocating a tensor: the batch is too large for \
                this card.",
        fix: OOM_FIX,
        example: "ResourceExhaustedError: OOM when allocating tensor with shape[25088,4096] and \
                  type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator \
                  GPU_0_bfc",
        source: "https://github.com/dBeker/Faster-RCNN-TensorFlow-Python3/issues/110",
    },
    Entry {
        id: "mem-cuda-driver-oom",
        layer: Memory,
        specificity: Specific,
        patterns: &["cuda_error_out_of_memory"],
        cause: "The CUDA driver could not allocate GPU memory: the card is full (TensorFlow and \
                JAX reserve most of it up front, or another process holds it).",
        fix: "Close other GPU programs (`nvidia-smi` lists them; parallel test or worker \
              processes each reserve their own share), let the library grow its memory instead \
              of reserving it (TensorFlow: TF_FORCE_GPU_ALLOW_GROWTH=true; JAX: \
              XLA_PYTHON_CLIENT_PREALLOCATE=false or a lower XLA_PYTHON_CLIENT_MEM_FRACTION), and \
              size the batch with `stackpin vram --peak PEAK --batch N --vram SIZE`.",
        example: "E tensorflow/stream_executor/cuda/cuda_driver.cc:924] failed to allocate 1.51G \
                  (1617277696 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
        source: "https://github.com/tensorflow/tensorflow/issues/12237",
    },
    Entry {
        id: "mem-cudamalloc-error-2",
        layer: Memory,
        specificity: Specific,
        patterns: &["cudasuccess (2 vs. 0)", "cudamalloc*out of memory"],
        cause: "cudaMalloc failed with error 2 (cudaErrorMemoryAllocation): the GPU ran out of \
                memory; Caffe-style checks print it as `error == cudaSuccess (2 vs. 0)`.",
        fix: OOM_FIX,
        example: "F0303 20:08:36.003052 42944 syncedmem.cpp:78] Check failed: error == \
                  cudaSuccess (2 vs. 0)  out of memory",
        source: "https://github.com/BVLC/caffe/issues/5353 ; \
                 https://github.com/torrvision/crfasrnn/issues/20",
    },
];

pub(super) const HARDWARE: &[Entry] = &[
    Entry {
        id: "hw-fallen-off-bus",
        layer: Hardware,
        specificity: Specific,
        patterns: &["fallen off the bus", "xid*: 79,"],
        cause: "The GPU dropped off the PCIe bus (Xid 79): power, heat, seating or firmware, \
                not software.",
        fix: "Check power connectors and the PSU, reseat the card, watch temperatures, update \
              the system BIOS; cap clocks (`nvidia-smi -lgc`) to test for power. Reboot before \
              proving again.",
        example: "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.",
        source: "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507 ; \
                 https://github.com/pop-os/pop/issues/3363",
    },
    Entry {
        id: "hw-ecc-uncorrectable",
        layer: Hardware,
        specificity: Specific,
        patterns: &[
            "uncorrectable ecc error",
            "cuda_error_ecc_uncorrectable",
            "xid*: 48,",
            "double bit error (dbe)",
        ],
        cause: "The GPU's memory reported an uncorrectable ECC error: a hardware fault.",
        fix: "Reboot (or reset the GPU) and prove again; if it returns, run the vendor memory \
              test and replace the card. No reinstall fixes it.",
        example: "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        source: "https://github.com/vllm-project/vllm/issues/5222 ; \
                 https://github.com/NVIDIA/gpu-operator/issues/1146 (Xid 48, DBE)",
    },
    Entry {
        id: "hw-gpu-lost",
        layer: Hardware,
        specificity: Specific,
        patterns: &[
            "gpu is lost",
            "reboot the system to recover this gpu",
            "unable to determine the device handle for gpu*unknown error",
        ],
        cause: "The driver lost contact with the GPU (it stopped answering under load); only a \
                reboot recovers it.",
        fix: "Reboot and prove again; if it repeats, check power, cooling and seating of the \
              card (reseat it), and look for Xid errors in `dmesg`.",
        example: "Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  \
                  Reboot the system to recover this GPU",
        source: "https://github.com/AlexeyAB/darknet/issues/86 ; \
                 https://github.com/NVIDIA/open-gpu-kernel-modules/issues/387",
    },
    Entry {
        id: "hw-reset-required",
        layer: Hardware,
        specificity: Specific,
        patterns: &["nv_err_reset_required", "nvrm:*reset required"],
        cause: "The driver marked the GPU as needing a reset (NV_ERR_RESET_REQUIRED): the card is \
                in a bad state, so CUDA reports it \"busy or unavailable\".",
        fix: "Stop every process on that GPU, reset it (`nvidia-smi -r -i N`) or reboot, and \
              prove again; if it returns on the same card, check its health (`nvidia-smi -q`, \
              Xid lines in `dmesg`) and have it replaced.",
        example: "[373871.354096] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required \
                  [NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ \
                  kernel_channel.c:2827",
        source: "https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/982",
    },
];
