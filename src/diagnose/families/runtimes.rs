//! The runtimes around CUDA that a training workstation also runs, each with its own failure
//! wording: NCCL's result codes (`ncclInvalidUsage`, `ncclInternalError`), XLA's "DNN library
//! initialization failed" trailer (JAX, TensorFlow on XLA), ONNX Runtime's execution-provider
//! library that will not load, JAX's check of the CUDA components it finds, cuDNN 8's zlib on
//! Windows, TensorRT engines built elsewhere, torch.compile's Triton on a GPU too old for it, a
//! jax/jaxlib pair that does not go together, apt's unmet dependencies of NVIDIA packages, a failed
//! make in the driver's DKMS folder, torch.distributed's process-group misuse, TensorRT rejecting an
//! exported model, the container toolkit's CUDA requirement check, and from round 20 XLA's
//! missing libdevice or ptxas (the toolkit's compiler parts), podman's unresolvable NVIDIA CDI
//! device (the container toolkit's spec), a CUDA IPC handle opened outside its GPU or namespace,
//! and a ggml CUDA op that failed (llama.cpp's backend).
//!
//! Each is placed by what its mechanism says about the stack, with a second layer where the
//! threads split, and never decisive: a catalogue entry with a source, or a line that names the
//! cause (a cuDNN version pair, a cuDNN handle that could not be created, a missing `lib…so`),
//! wins. NCCL's remote errors ("remote process exited or there was a network error") and the
//! collective watchdog's timeouts name another rank's failure, not a layer: they stay `unknown`.

use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Driver, Hardware, Library, Toolkit};
use crate::diagnose::matcher::Segment;

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found = Vec::new();
    let any = |words: &[&str]| {
        segments
            .iter()
            .any(|s| words.iter().any(|w| s.lower.contains(w)))
    };
    let duplicate_gpu = any(&["duplicate gpu detected"]);
    // ggml's op failure is read as the library only on NVIDIA and when the log does not say the
    // card was full (that is memory, and the memory rules read it).
    let other_backend_or_memory = any(&["rocm error", "hip error", "out of memory"]);
    // XLA's trailer says "look at the errors above": a line above that names the cause wins.
    let dnn_cause_named = any(&[
        "cudnn handle",
        "loaded runtime cudnn library",
        "cudnn version",
        "cudnn_status",
        "out of memory",
    ]);
    for seg in segments {
        let lower = &seg.lower;
        if let Some(f) = nccl(seg, lower, duplicate_gpu) {
            found.push(f);
        } else if lower.contains("dnn library initialization failed") && !dnn_cause_named {
            found.push(at(
                seg,
                "tk-xla-dnn-init",
                Toolkit,
                Some(Library),
                "XLA could not start cuDNN (DNN library initialization failed): the cuDNN that loads does not fit the one the library was built with (an older or other-major cuDNN first on the loader path), or a cuDNN handle could not be created.",
                "Read the lines above it for the cuDNN version pair. Install the library's own CUDA wheels in a fresh venv (JAX: `pip install -U \"jax[cuda12]\"`; TensorFlow: `tensorflow[and-cuda]`) and take other cuDNN copies (/usr/local/cuda*/lib64, a conda cudnn) off LD_LIBRARY_PATH; if a cuDNN handle failed with the card full, let the library grow its memory (XLA_PYTHON_CLIENT_PREALLOCATE=false).",
                Mechanism::Plain,
                false,
            ));
        } else if is_ort_provider_load(lower) && lower.contains("onnxruntime_providers_tensorrt") {
            // The TensorRT provider's own dependencies are TensorRT's libraries (nvinfer) on top
            // of CUDA and cuDNN: microsoft/onnxruntime#17394, #8325, jtydhr88/ComfyUI-Unique3D#32,
            // AUTOMATIC1111/stable-diffusion-webui-rembg#18.
            found.push(at(
                seg,
                "tk-ort-tensorrt-provider-load",
                Toolkit,
                Some(Library),
                "ONNX Runtime's TensorRT execution-provider library is there but will not load (Windows error 126): TensorRT's own libraries (nvinfer, nvonnxparser) of the major this onnxruntime-gpu build needs, or the CUDA and cuDNN under them, are not on the loader path.",
                "Install the TensorRT release this onnxruntime-gpu build names in its requirements (and the CUDA and cuDNN it sits on) and put TensorRT's lib folder on PATH (Windows) / LD_LIBRARY_PATH (the `tensorrt` wheel's `tensorrt_libs` folder works too); or, where no TensorRT is wanted, ask only for the CUDA and CPU providers (providers=[\"CUDAExecutionProvider\", \"CPUExecutionProvider\"]).",
                Mechanism::Plain,
                false,
            ));
        } else if is_ort_provider_load(lower) {
            found.push(at(
                seg,
                "tk-ort-provider-load",
                Toolkit,
                Some(Library),
                "ONNX Runtime's CUDA/TensorRT execution-provider library is there but will not load: a CUDA or cuDNN library of the major version this onnxruntime-gpu build needs is missing from the loader path (Windows error 126), or the build is for another CUDA/cuDNN major.",
                "Install the CUDA and cuDNN majors this onnxruntime-gpu release lists in its requirements (or the onnxruntime-gpu build for the CUDA/cuDNN you have), and put their bin folders on PATH (Windows) / lib folders on LD_LIBRARY_PATH; in Python, `import torch` before onnxruntime loads the CUDA libraries torch's wheels bring.",
                Mechanism::Plain,
                false,
            ));
        } else if JAX_CUDA_COMPONENTS.iter().any(|w| lower.contains(w)) {
            found.push(at(
                seg,
                "tk-jax-cuda-components",
                Toolkit,
                Some(Library),
                "JAX's CUDA backend refused the CUDA or cuDNN it found: older than the one jaxlib was built against, or not found at all, so JAX falls back to the CPU.",
                "Install JAX with its own CUDA wheels in a fresh venv (`pip install -U \"jax[cuda12]\"`) so the cuDNN and CUDA it loads are the ones it was built for, and take older copies (/usr/local/cuda*/lib64, a conda cudnn) off LD_LIBRARY_PATH; or pin a jaxlib built for the cuDNN you have.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("zlibwapi.dll")
            && (lower.contains("could not locate") || lower.contains("could not load"))
        {
            found.push(at(
                seg,
                "tk-cudnn8-zlibwapi",
                Toolkit,
                None,
                "cuDNN 8 on Windows needs zlibwapi.dll (64-bit) on PATH, and it is missing (or a 32-bit copy was found, error 193).",
                "Put the 64-bit zlibwapi.dll cuDNN 8's install guide names into the toolkit's bin folder (CUDA\\vX.Y\\bin, on PATH); torch's wheels ship one in torch\\lib. cuDNN 9 no longer needs it.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("engine plan file is not compatible")
            || lower.contains("engine plan file is generated on an incompatible device")
        {
            found.push(at(
                seg,
                "lib-tensorrt-engine-stale",
                Library,
                Some(Toolkit),
                "A serialized TensorRT engine was built by another TensorRT version or on another GPU than the one loading it: engines are not portable.",
                "Rebuild the engine (delete the cached .engine/.plan file and let the program regenerate it) with the TensorRT and GPU it runs on; if two TensorRT versions are installed (the Python wheel and the system libnvinfer), keep one.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("too old to be supported by the triton gpu compiler") {
            found.push(at(
                seg,
                "lib-triton-gpu-too-old",
                Library,
                Some(Hardware),
                "torch.compile's Triton backend does not support this GPU's compute capability (it needs 7.0 or newer): the program asks a library feature the card cannot run.",
                "Run without torch.compile (the program's compile option off, or TORCHDYNAMO_DISABLE=1); the eager library runs on this card. To compile, use a GPU of compute capability 7.0 or newer.",
                Mechanism::Plain,
                false,
            ));
        } else if JAXLIB_PAIR.iter().all(|w| lower.contains(w))
            || lower.contains("is newer than and incompatible with jax version")
        {
            found.push(at(
                seg,
                "lib-jax-jaxlib-pair",
                Library,
                None,
                "jax and jaxlib are installed at versions that do not go together (jax checks the pair on import).",
                "Install jax and jaxlib of one release together in the venv (`pip install -U \"jax[cuda12]\"` installs the matching jaxlib and its CUDA plugin); do not mix a conda jaxlib with a pip jax.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("/var/lib/dkms/nvidia")
            && (lower.contains("*** [") || lower.contains("error") || lower.contains("consult "))
        {
            found.push(at(
                seg,
                "drv-dkms-make-failed",
                Driver,
                None,
                "DKMS could not build the NVIDIA kernel module: the make step in the driver's DKMS build folder failed (in any language), so the running kernel has no NVIDIA module.",
                "Read the make.log it names for the first `error:`; install the running kernel's headers (linux-headers-$(uname -r), kernel-devel or kernel-headers) and rebuild (`sudo dkms autoinstall`); if the kernel is newer than the driver release supports, pin a newer driver release (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`) or boot the previous kernel. Reinstalling the same driver rebuilds the same way.",
                Mechanism::DriverBuild,
                true,
            ));
        } else if PROCESS_GROUP_MISUSE.iter().any(|w| lower.contains(w)) {
            found.push(at(
                seg,
                "lib-dist-process-group",
                Library,
                None,
                "torch.distributed's default process group is set up twice, or used before it is set up: the training program's launch or its own initialisation, not the GPU stack.",
                "Start the program with the launcher it expects (torchrun, or its `--launcher pytorch` option) and call `init_process_group` once per process (guard it with `torch.distributed.is_initialized()`; in a notebook, restart the kernel before running the setup again).",
                Mechanism::Plain,
                false,
            ));
        } else if TRT_MODEL_IMPORT.iter().any(|w| lower.contains(w)) || is_trt_layer_error(lower) {
            found.push(at(
                seg,
                "lib-tensorrt-model-import",
                Library,
                Some(Toolkit),
                "TensorRT could not turn the model into a network: the exported ONNX model has inputs, nodes or an opset this TensorRT does not accept (or names the build script does not expect).",
                "Re-export the ONNX model from the training library with the opset and input names the build expects (simplify it, e.g. with onnx-simplifier), or use a TensorRT release that supports its operators; check the build script's input names against the model's.",
                Mechanism::Plain,
                false,
            ));
        } else if let Some(f) = apt_unmet(seg, lower) {
            found.push(f);
        } else if XLA_LIBDEVICE.iter().any(|w| lower.contains(w)) {
            // tensorflow/tensorflow#60790, jax-ml/jax#4452, #6323, j-towns/vdvae-jax#1.
            found.push(at(
                seg,
                "tk-xla-libdevice-missing",
                Toolkit,
                None,
                "XLA (the compiler under TensorFlow's jit and JAX) needs the CUDA toolkit's nvvm/libdevice (libdevice.10.bc) and found none in the folders it searched: no toolkit there, or one without its nvvm part.",
                "Install the CUDA toolkit (or its compiler package: the nvidia-cuda-nvcc wheel, conda's cuda-nvcc), which carries nvvm/libdevice, and point XLA at the folder above nvvm: XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda (or that package's folder). TensorFlow's `tensorflow[and-cuda]` and JAX's `jax[cuda12]` extras bring their own.",
                Mechanism::Plain,
                false,
            ));
        } else if is_xla_ptxas(lower) {
            // openxla/xla#5932, google/flax#2249, tensorflow/tensorflow#35423,
            // tensorflow/models#9847, google/trax#249, iot-salzburg/gpu-jupyter#93.
            found.push(at(
                seg,
                "tk-xla-ptxas",
                Toolkit,
                None,
                "XLA compiles its GPU kernels with the CUDA toolkit's ptxas, and the ptxas it found is missing or too old (for XLA, or for this GPU's compute capability): it falls back to the driver's slower JIT, or fails.",
                "Put a ptxas from a CUDA release new enough for the GPU first on PATH (CUDA 11.1+ for XLA at all, 11.8+ for compute capability 9.0, 12.8+ for Blackwell): install the toolkit, or only its compiler (the nvidia-cuda-nvcc wheel, conda's cuda-nvcc), or point XLA at the toolkit with XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("unresolvable cdi devices") && lower.contains("nvidia.com/") {
            // NVIDIA/nvidia-container-toolkit#146, #434, NixOS/nixpkgs#420638,
            // gpustack/gpustack#3989; another vendor's CDI device names no NVIDIA layer
            // (moby/moby#47633).
            found.push(at(
                seg,
                "drv-container-cdi-unresolvable",
                Driver,
                None,
                "The container engine (podman, or Docker/containerd in CDI mode) was asked for the NVIDIA CDI device (nvidia.com/gpu=…) and found no CDI spec naming it: the NVIDIA Container Toolkit's spec was never generated, is stale after a driver upgrade, unreadable, or in a folder the engine does not read.",
                "On the host, generate the spec with the NVIDIA Container Toolkit (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, again after every driver upgrade), check that `nvidia-ctk cdi list` shows the name asked for, make the file readable for rootless use, and make sure the engine reads that folder (/etc/cdi, /var/run/cdi, or its --cdi-spec-dir: NixOS writes /run/cdi).",
                Mechanism::Plain,
                false,
            ));
        } else if is_cuda_ipc_failure(lower) {
            // triton-inference-server/server#6872, NVIDIA/nccl#360, modelscope/FunASR#704.
            found.push(at(
                seg,
                "lib-cuda-ipc-handle",
                Library,
                Some(Driver),
                "A CUDA IPC memory handle (GPU memory shared between processes) could not be opened: that works only for processes on the same GPU, in the same PID/IPC namespace, on a platform with CUDA IPC (not WSL2 or Windows).",
                "Run both processes on the same GPU (the same CUDA_VISIBLE_DEVICES), let containers share the host's namespaces (`--ipc=host --pid=host`), and under WSL2 or Windows do not use CUDA shared memory: use system shared memory (Triton's system shared-memory API) or plain transfers instead.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("ggml_cuda_compute_forward:")
            && lower.contains(" failed")
            && !other_backend_or_memory
        {
            // ggml-org/llama.cpp#24328, ggml-org/ggml#877, leejet/stable-diffusion.cpp#440.
            found.push(at(
                seg,
                "lib-ggml-cuda-op-failed",
                Library,
                None,
                "llama.cpp's (ggml's) CUDA backend failed in one operation (the op it names, MUL_MAT, GET_ROWS, SCALE…): a bug or a limit of that ggml build's kernel for this model, context or GPU; the CUDA error printed after it says more.",
                "Update llama.cpp (or the program that bundles it: ollama, llama-cpp-python, stable-diffusion.cpp) to a newer build, or go back to the last build that worked; meanwhile try without flash attention (-fa off), with a smaller batch (-b/-ub) or context, or without the option that triggers it.",
                Mechanism::Plain,
                false,
            ));
        } else if lower.contains("requirement error: unsatisfied condition: cuda") {
            found.push(at(
                seg,
                "drv-container-cuda-requirement",
                Driver,
                None,
                "The container toolkit refused the container: its image needs a newer CUDA than the host driver supports (the image's `cuda>=X.Y` requirement).",
                "On the host, install a driver at least as new as the image's CUDA requires (the toolkit's release notes list the minimum driver), reboot, and start the container again; or use an image built for an older CUDA. Setting NVIDIA_DISABLE_REQUIRES=true only skips the check.",
                Mechanism::Plain,
                false,
            ));
        }
    }
    found
}

/// JAX's own check of the CUDA components it finds (jax/_src/xla_bridge.py, jaxlib's
/// versions helpers): each phrase names a CUDA or cuDNN that does not fit.
const JAX_CUDA_COMPONENTS: &[&str] = &[
    "but jax was built against version",
    "outdated cudnn installation found",
    "outdated cuda installation found",
    "unable to load cudnn. is it installed",
    "unable to load cuda. is it installed",
];

/// XLA's own words for the CUDA toolkit's libdevice it cannot find (nvptx_compiler.cc,
/// nvptx_helper.cc, gpu_backend_lib.cc).
const XLA_LIBDEVICE: &[&str] = &[
    "libdevice not found at",
    "can't find libdevice directory",
    "libdevice is required by this hlo module but was not found",
];

/// XLA's (and TensorFlow's asm_compiler's) words for a ptxas that is missing or too old.
fn is_xla_ptxas(lower: &str) -> bool {
    [
        "ptxas too old",
        "ptxas does not support cc",
        "can't find ptxas binary",
        "bin/ptxas not found",
        "couldn't invoke ptxas",
        "couldn't get ptxas version",
        "couldn't find a suitable version of ptxas",
        "no ptx compilation provider is available",
    ]
    .iter()
    .any(|w| lower.contains(w))
        || (lower.contains("you are using ptxas") && lower.contains("which is older than"))
}

/// A CUDA IPC handle that could not be opened (Triton's CUDA shared memory, NCCL's transport,
/// cudaIpcOpenMemHandle itself).
fn is_cuda_ipc_failure(lower: &str) -> bool {
    let ipc = lower.contains("cuda ipc handle")
        || lower.contains("cudaipchandle")
        || lower.contains("cudaipcopenmemhandle");
    ipc && (lower.contains("failed") || lower.contains("invalid") || lower.contains("error"))
}

/// torch.distributed's own messages about the default process group (distributed_c10d.py).
const PROCESS_GROUP_MISUSE: &[&str] = &[
    "trying to initialize the default process group twice",
    "default process group has not been initialized",
];

/// TensorRT's ONNX parser and network checks rejecting the model (nvonnxparser, trtexec).
const TRT_MODEL_IMPORT: &[&str] = &[
    "failed to parse the onnx",
    "failure while parsing onnx",
    "unsupported_node:",
    "invalid_graph:",
    "in the network inputs! please make sure the input tensor names",
    "network must have at least one output",
];

/// jax's import-time check of jaxlib (jax/_src/lib/__init__.py).
const JAXLIB_PAIR: &[&str] = &["jaxlib is version", "version of jax requires"];

/// apt's "unmet dependencies" line for an NVIDIA package: the package manager cannot install
/// the driver (or the toolkit) because packages of two versions or two repositories are mixed.
/// Only the line that names the package (`pkg : Depends: …`) counts; the layer is the package's.
fn apt_unmet(seg: &Segment<'_>, lower: &str) -> Option<Finding> {
    let (package, rest) = lower.trim().split_once(" : depends:")?;
    if !(rest.contains("not going to be installed")
        || rest.contains("is to be installed")
        || rest.contains("not installed"))
    {
        return None;
    }
    // The package is the word before " : Depends:" (a title may run into it on one line).
    let package = package.split_whitespace().last()?;
    let driver = [
        "nvidia-",
        "libnvidia",
        "cuda-drivers",
        "xserver-xorg-video-nvidia",
    ]
    .iter()
    .any(|p| package.starts_with(p));
    let toolkit = ["cuda-", "libcudnn", "libnccl"]
        .iter()
        .any(|p| package.starts_with(p))
        || package == "cuda";
    let fix = "Do not mix NVIDIA packages of two versions or two repositories (the distribution's and NVIDIA's CUDA repository): `sudo apt --fix-broken install`, purge the half-installed set (`sudo apt purge 'nvidia-*' 'libnvidia-*'` for the driver), keep one repository, then install the pinned version again (`stackpin install MANIFEST` installs it from the archive).";
    if driver {
        Some(at(
            seg,
            "drv-apt-unmet-dependencies",
            Driver,
            None,
            "The package manager cannot install the NVIDIA driver: its packages' dependencies are unmet (a mix of versions or repositories, or a half-finished earlier install).",
            fix,
            Mechanism::Plain,
            false,
        ))
    } else if toolkit {
        Some(at(
            seg,
            "tk-apt-unmet-dependencies",
            Toolkit,
            Some(Driver),
            "The package manager cannot install the CUDA toolkit packages: their dependencies are unmet (a mix of CUDA versions or repositories; the `cuda` meta-package also pulls a driver).",
            fix,
            Mechanism::Plain,
            false,
        ))
    } else {
        None
    }
}

/// NCCL's result codes on a line that names NCCL: invalid usage (the program's ranks and GPUs)
/// and internal errors (the transport under the collective: P2P, shared memory, the network).
fn nccl(seg: &Segment<'_>, lower: &str, duplicate_gpu: bool) -> Option<Finding> {
    if !lower.contains("nccl") {
        return None;
    }
    if lower.contains("invalid usage") || lower.contains("ncclinvalidusage") {
        let (cause, fix) = if duplicate_gpu {
            (
                "NCCL refused to start: two ranks of the training run are on the same GPU (\"Duplicate GPU detected\"), so the program starts more processes than it gives GPUs, or never sets each rank's device.",
                "Start one process per GPU (torchrun's --nproc_per_node no larger than the GPUs CUDA_VISIBLE_DEVICES leaves) and set each rank's device from its local rank (`torch.cuda.set_device(local_rank)`) before the first collective; do not hard-code one default GPU.",
            )
        } else {
            (
                "NCCL reports invalid usage: the training program's ranks, devices or collective calls do not match (two ranks on one GPU, ranks calling different collectives), or ranks run different NCCL versions.",
                "Rerun with NCCL_DEBUG=WARN to read NCCL's reason; start one process per GPU with each rank's device set from its local rank, and install the same library build (and its NCCL) on every node.",
            )
        };
        return Some(at(
            seg,
            "lib-nccl-invalid-usage",
            Library,
            None,
            cause,
            fix,
            Mechanism::Plain,
            false,
        ));
    }
    if lower.contains("internal error") || lower.contains("ncclinternalerror") {
        return Some(at(
            seg,
            "lib-nccl-internal-error",
            Library,
            Some(Hardware),
            "NCCL failed inside a collective (internal error): NCCL 2.18 reports every network failure this way; otherwise its transport (GPU peer-to-peer, shared memory, the network interface) fails on this machine.",
            "Rerun with NCCL_DEBUG=WARN (then INFO) and read the WARN line; try NCCL_P2P_DISABLE=1 (peer-to-peer blocked by IOMMU/ACS or unsupported between the cards), set NCCL_SOCKET_IFNAME to the right interface, and use a library build with a newer NCCL (2.19+).",
            Mechanism::Plain,
            false,
        ));
    }
    None
}

/// TensorRT's own error about one layer of the network it is building: `(Unnamed Layer* N)
/// [Type]: …` on an error line (NVIDIA/TensorRT#229, onnx/onnx-tensorrt#264,
/// NVIDIA-AI-IOT/torch2trt#406, microsoft/onnxruntime#1837), or its shape-tensor check
/// (NVIDIA/TensorRT#2088, #2755). Its warnings about layers are no cause.
fn is_trt_layer_error(lower: &str) -> bool {
    let erroring = lower.contains("error") || lower.contains("[e]");
    erroring
        && ((lower.contains("(unnamed layer*") && lower.contains(") ["))
            || lower.contains("ishufflelayer applied to shape tensor"))
}

/// ONNX Runtime's provider library (`onnxruntime_providers_cuda` / `_tensorrt`) failing to load
/// with no dependency named on the line (the loader family reads a named `lib…so`).
fn is_ort_provider_load(lower: &str) -> bool {
    (lower.contains("onnxruntime_providers_cuda")
        || lower.contains("onnxruntime_providers_tensorrt"))
        && (lower.contains("loadlibrary failed") || lower.contains("failed to load library"))
        && !lower.contains("cannot open shared object file")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::FailureLayer;
    use crate::diagnose::matcher;

    fn first(text: &str) -> Option<Finding> {
        let segments: Vec<_> = matcher::segments(text).collect();
        find(&segments).into_iter().next()
    }

    fn layers(text: &str) -> Option<(&'static str, FailureLayer, Option<FailureLayer>)> {
        first(text).map(|f| (f.id, f.layer, f.second))
    }

    #[test]
    fn nccl_invalid_usage_is_the_programs_ranks_and_names_the_duplicate_gpu() {
        // verl-project/verl#161, NVIDIA/nccl#1241, Peterande/D-FINE#289 (one device per rank).
        for log in [
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA device 10",
            "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1287, invalid usage, NCCL version 2.17.1\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\nDuplicate GPU detected : rank 3 and rank 2 both on CUDA device e2000",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("lib-nccl-invalid-usage", Library),
                "{log}"
            );
            assert!(f.fix.contains("set_device"), "{}", f.fix);
        }
        // horovod/horovod#3929: the bare result, no duplicate named.
        let f = first("ncclCommInitRank failed: invalid usage").expect("a finding");
        assert!(f.fix.contains("NCCL_DEBUG=WARN"), "{}", f.fix);
    }

    #[test]
    fn nccl_internal_errors_are_likely_the_library_with_the_transport_second() {
        // MariusBeckerIESE/ChatBot_AI#7, NVIDIA/nccl#1247, NVIDIA/nccl#1092.
        for log in [
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, internal error - please report this issue to the NCCL developers, NCCL version 2.18.1",
            "ncclInternalError: Internal check failed.\nLast error:\nAttribute busid of node nic not found",
        ] {
            assert_eq!(
                layers(log),
                Some(("lib-nccl-internal-error", Library, Some(Hardware))),
                "{log}"
            );
        }
    }

    #[test]
    fn another_ranks_failure_names_no_layer() {
        for log in [
            "RuntimeError: NCCL communicator was aborted on rank 1.  Original reason for failure was: NCCL error: remote process exited or there was a network error",
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600054 milliseconds before timing out.",
        ] {
            assert_eq!(first(log), None, "{log}");
        }
    }

    #[test]
    fn xlas_dnn_start_up_failure_is_the_cudnn_that_loads_unless_a_line_above_names_the_cause() {
        // jax-ml/jax#15742, #16082 (the trailer alone), cloudhan/jax-windows-builder#34.
        for log in [
            "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details.",
            "XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details.",
        ] {
            assert_eq!(
                layers(log),
                Some(("tk-xla-dnn-init", Toolkit, Some(Library))),
                "{log}"
            );
        }
        // jax-ml/jax#23145: the handle line above names the cause (the memory family reads it).
        let log = "E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\njaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed";
        assert_eq!(first(log), None);
    }

    #[test]
    fn onnx_runtimes_provider_dll_that_will_not_load_is_the_cuda_it_needs() {
        // microsoft/onnxruntime#14837, microsoft/onnxruntime#22491 (cuDNN 8 under a build for 9).
        for log in [
            "onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\" when trying to load \"E:\\x\\build\\examples\\Release\\onnxruntime_providers_cuda.dll\"",
            "[E:onnxruntime:Default, provider_bridge_ort.cc:1992 onnxruntime::TryGetProviderInfo_CUDA] D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1637 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\" when trying to load \"C:\\Work\\SD-ComfyUI\\python_embeded\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll\"",
        ] {
            assert_eq!(
                layers(log),
                Some(("tk-ort-provider-load", Toolkit, Some(Library))),
                "{log}"
            );
        }
        // A named dependency is the loader family's.
        assert_eq!(
            first(
                "FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcufft.so.10: cannot open shared object file: No such file or directory"
            ),
            None
        );
    }

    #[test]
    fn jaxs_check_of_the_cuda_components_is_the_toolkit() {
        // MIT-REALM/gcbfplus#1, conda-forge/jax-feedstock#149, jax-ml/jax#20519.
        for log in [
            "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8906, which is newer. The copy of cuDNN that is installed must be at least as new as the version against which JAX was built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
            "CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA components:\nOutdated cuDNN installation found.\nVersion JAX was built against: 8907",
            "CUDA backend failed to initialize: Unable to load cuDNN. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
        ] {
            assert_eq!(
                layers(log),
                Some(("tk-jax-cuda-components", Toolkit, Some(Library))),
                "{log}"
            );
        }
    }

    #[test]
    fn cudnn_8s_zlib_on_windows_is_the_toolkit() {
        // PaddlePaddle/PaddleOCR#8400, AlexeyAB/darknet#8551, lightvector/KataGo#828.
        for log in [
            "Could not locate zlibwapi.dll. Please make sure it is in your library path!",
            "Could not load library zlibwapi.dll. Error code 193. Please verify that the library is built correctly for your processor architecture (32-bit, 64-bit)",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!((f.id, f.layer), ("tk-cudnn8-zlibwapi", Toolkit), "{log}");
            assert!(f.fix.contains("bin"), "{}", f.fix);
        }
    }

    #[test]
    fn a_tensorrt_engine_from_another_version_is_rebuilt() {
        // NVIDIA/retinanet-examples#314, SthPhoenix/InsightFace-REST#84.
        for log in [
            "6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.0.0 got 8.0.1, please rebuild.",
            "[05/02/2022-15:17:45] [TRT] [E] 6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.2.3 got 8.2.1, please rebuild.",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("lib-tensorrt-engine-stale", Library),
                "{log}"
            );
            assert!(f.fix.contains("Rebuild"), "{}", f.fix);
        }
    }

    #[test]
    fn a_gpu_too_old_for_triton_runs_without_compile() {
        // karpathy/nanoGPT#157 (compile = False), MIC-DKFZ/nnUNet#2188 (nnUNet_compile=f).
        for log in [
            "RuntimeError: Found NVIDIA GeForce GTX 1080 which is too old to be supported by the triton GPU compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1",
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Found NVIDIA GeForce GTX 1070 which is too old to be supported by the triton GPU compiler, which is used as the backend.",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer, f.second),
                ("lib-triton-gpu-too-old", Library, Some(Hardware)),
                "{log}"
            );
            assert!(f.fix.contains("torch.compile"), "{}", f.fix);
        }
    }

    #[test]
    fn a_jax_and_jaxlib_that_do_not_go_together_are_the_library() {
        // jax-ml/jax#15876, Zuricho/ParallelFold#13, jax-ml/jax#17638.
        for log in [
            "RuntimeError: jaxlib is version 0.3.25, but this version of jax requires version >= 0.4.7.",
            "ValueError: jaxlib is version 0.1.69, but this version of jax requires version 0.1.74.",
            "RuntimeError: jaxlib version 0.4.14 is newer than and incompatible with jax version 0.4.6. Please update your jax and/or jaxlib packages.",
        ] {
            assert_eq!(
                layers(log),
                Some(("lib-jax-jaxlib-pair", Library, None)),
                "{log}"
            );
        }
    }

    #[test]
    fn apts_unmet_dependencies_are_the_layer_of_the_package_named() {
        // rajeshroy402/DeepStream-dGPU-Installation#6, david-xinyuwei/david-share#3,
        // dlandon/zoneminder.machine.learning#65: the driver's packages.
        for log in [
            "The following packages have unmet dependencies:\n nvidia-dkms-510 : Depends: nvidia-kernel-common-510 (>= 510.73.05) but 510.47.03-0ubuntu1 is to be installed",
            "The following packages have unmet dependencies:\n nvidia-driver-565 : Depends: libnvidia-gl-565 (= 565.57.01-0ubuntu1) but it is not going to be installed",
            " cuda-drivers : Depends: nvidia-compute-utils-440 (>= 440.33.01) but it is not installed",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("drv-apt-unmet-dependencies", Driver),
                "{log}"
            );
            assert!(f.fix.contains("--fix-broken"), "{}", f.fix);
        }
        // NVIDIA/nvidia-docker#1285: the toolkit's packages.
        assert_eq!(
            layers(
                "The following packages have unmet dependencies: cuda-cudart-dev-10-1 : Depends: cuda-cudart-10-1 (>= 10.1.243) but 10.1.105-1 is to be installed"
            )
            .map(|(id, layer, _)| (id, layer)),
            Some(("tk-apt-unmet-dependencies", Toolkit))
        );
        // Another package's unmet dependency, or the bare summary, names no GPU layer.
        assert_eq!(
            first(" jdk-11.0.2 : Depends: libasound2 but it is not going to be installed"),
            None
        );
        assert_eq!(
            first("E: Unable to correct problems, you have held broken packages."),
            None
        );
    }

    #[test]
    fn a_failed_make_in_the_drivers_dkms_folder_is_the_driver_build_in_any_language() {
        // Tk-Glitch/PKGBUILDS#414, NVIDIA/open-gpu-kernel-modules#635,
        // clearlinux/distribution#1133.
        for log in [
            "make[1]: *** [Makefile:1652: /var/lib/dkms/nvidia/435.27.08/build] Error 2",
            "Consult /var/lib/dkms/nvidia/545.29.02/build/make.log for more information.",
            "       Consult /var/lib/dkms/nvidia/390.87/build/make.log for more",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!((f.id, f.layer), ("drv-dkms-make-failed", Driver), "{log}");
            assert_eq!(f.mechanism, Mechanism::DriverBuild);
        }
        // Another module's DKMS failure (xanmod/linux#46), or a module signed after a good build
        // (Frogging-Family/linux-tkg#1044), names no NVIDIA failure.
        assert_eq!(
            first("Consult /var/lib/dkms/bbswitch/0.8/build/make.log for more information."),
            None
        );
        assert_eq!(
            first("Signing module /var/lib/dkms/nvidia/565.77/build/nvidia.ko"),
            None
        );
    }

    #[test]
    fn torch_distributed_process_group_misuse_is_the_program() {
        // SwinTransformer/Swin-Transformer-Object-Detection#150,
        // CVIU-CSU/M2MRF-Lesion-Segmentation#16, SLDGroup/GreedyViG#1 (fixed by the launcher).
        for log in [
            "RuntimeError: trying to initialize the default process group twice!",
            "    raise RuntimeError(\"trying to initialize the default process group \"\nRuntimeError: trying to initialize the default process group twice!",
            "RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.",
        ] {
            assert_eq!(
                layers(log),
                Some(("lib-dist-process-group", Library, None)),
                "{log}"
            );
        }
    }

    #[test]
    fn tensorrt_rejecting_the_exported_model_is_the_library_with_tensorrt_second() {
        // TrojanXu/yolov5-tensorrt#12 (TensorRT 6 too old for the export), GeekAlexis/FastMOT#232,
        // linghu8812/tensorrt_inference#61.
        for log in [
            "ERROR: Failed to parse the ONNX file.\nIn node 0 (importModel): INVALID_GRAPH: Assertion failed: tensors.count(input_name)",
            "2021-12-23 10:38:38 [   ERROR] In node -1 (scaleHelper): UNSUPPORTED_NODE: Assertion failed: dims.nbDims == 4 || dims.nbDims == 5",
            "[03/09/2021-10:37:07] [E] Failure while parsing ONNX file",
        ] {
            assert_eq!(
                layers(log),
                Some(("lib-tensorrt-model-import", Library, Some(Toolkit))),
                "{log}"
            );
        }
    }

    #[test]
    fn tensorrts_error_about_one_layer_is_tensorrt_rejecting_the_model() {
        for log in [
            // microsoft/onnxruntime#1837 (the onnx-tensorrt parser claims an Int32 subgraph).
            "2019-09-14 01:19:53.088405688 [W:onnxruntime:test, tensorrt_execution_provider.h:28 log] [2019-09-14 01:19:53   ERROR] (Unnamed Layer* 0) [ElementWise]: elementwise inputs must not be Int32",
            // NVIDIA/TensorRT#229.
            "[10/19/2019-19:37:48] [E] [TRT] (Unnamed Layer* 121) [Shuffle]: IShuffleLayer applied to shape tensor must have 0 or 1 reshape dimensions: dimensions were [1,4]",
            // NVIDIA-AI-IOT/torch2trt#406.
            "[TensorRT] ERROR: (Unnamed Layer* 0) [Shuffle]: uninferred dimensions are not an exact divisor of input dimensions, so inferred dimension cannot be calculated",
            // NVIDIA/TensorRT#2088.
            "[06/23/2022-16:16:49] [E] Error[4]: [shuffleNode.cpp::symbolicExecute::389] Error Code 4: Internal Error (Reshape_3: IShuffleLayer applied to shape tensor must have 0 or 1 reshape dimensions: dimensions were [-1,2])",
        ] {
            assert_eq!(
                layers(log),
                Some(("lib-tensorrt-model-import", Library, Some(Toolkit))),
                "{log}"
            );
        }
        // A warning about a layer names no failure.
        assert_eq!(
            first("[W] [TRT] (Unnamed Layer* 5) [Constant]: weights are all zero"),
            None
        );
    }

    #[test]
    fn onnx_runtimes_tensorrt_provider_that_will_not_load_names_tensorrt() {
        for log in [
            // microsoft/onnxruntime#17394.
            "EP Error D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1131 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\" when trying to load \"C:\\path\\to\\my\\repo\\.venv\\lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll\"",
            // microsoft/onnxruntime#8325.
            "2021-07-07 19:07:55.8302585 [E:onnxruntime:Default, provider_bridge_ort.cc:1001 onnxruntime::ProviderLibrary::Get] LoadLibrary failed with error 126 \"The specified module could not be found.\" when trying to load \"C:\\Python\\Python39\\lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll\"",
            // jtydhr88/ComfyUI-Unique3D#32.
            "[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\" when trying to load \"G:\\Comfy3D\\ComfyUI_Windows_portable\\python_embeded\\Lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll\"",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer, f.second),
                ("tk-ort-tensorrt-provider-load", Toolkit, Some(Library)),
                "{log}"
            );
            assert!(f.fix.contains("TensorRT's lib folder"), "{}", f.fix);
        }
    }

    #[test]
    fn the_container_toolkits_cuda_requirement_is_the_host_driver() {
        // NVIDIA/nvidia-docker#1442 (host driver older than 450), nodefluxio/vortex#106.
        for log in [
            "docker: Error response from daemon: OCI runtime create failed: container_linux.go:370: starting container process caused: process_linux.go:459: container init caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.0, please update your driver to a newer version, or use an earlier cuda container: unknown.",
            "nvidia-container-cli: requirement error: unsatisfied condition: cuda >= 9.0",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("drv-container-cuda-requirement", Driver),
                "{log}"
            );
            assert!(f.fix.contains("host"), "{}", f.fix);
        }
    }

    #[test]
    fn xlas_missing_libdevice_is_the_toolkits_nvvm_part() {
        // jax-ml/jax#4452, #6323, j-towns/vdvae-jax#1 (variants of round 20's r20-01..03).
        for log in [
            "2020-10-05 16:30:40.039587: W external/org_tensorflow/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:70] Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the program we try to run uses routines from libdevice.",
            "RuntimeError: Internal: libdevice not found at ./libdevice.10.bc",
            "    return backend.compile(built_c, compile_options=options)\nRuntimeError: Internal: libdevice not found at ./libdevice.10.bc",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("tk-xla-libdevice-missing", Toolkit),
                "{log}"
            );
            assert!(f.fix.contains("xla_gpu_cuda_data_dir"), "{}", f.fix);
        }
    }

    #[test]
    fn xlas_missing_or_old_ptxas_is_the_toolkits_compiler() {
        // tensorflow/tensorflow#35423, tensorflow/models#9847, google/trax#249,
        // iot-salzburg/gpu-jupyter#93 (variants of round 20's r20-19, r20-20).
        for log in [
            "TF 2.0 XLA JIT reporting error: \"./bin/ptxas not found\"",
            "  (0) Not found: ./bin/ptxas not found\n\t [[{{node cluster_0_1/xla_compile}}]]",
            "2020-01-19 09:33:13.557530: W external/org_tensorflow/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:73] Can't find ptxas binary in ${CUDA_DIR}/bin.  Will back to the GPU driver for PTX -> sass compilation.  This is OK so long as you don't see a warning below about an out-of-date driver version.",
            "Couldn't invoke ptxas",
        ] {
            assert_eq!(layers(log), Some(("tk-xla-ptxas", Toolkit, None)), "{log}");
        }
        // ptxas's own fatal error about a .target (IBMSparkGPU/GPUEnabler#34) is no XLA fallback.
        assert_eq!(
            first(
                "ptxas fatal   : SM version specified by .target is higher than default SM version assumed"
            ),
            None
        );
    }

    #[test]
    fn an_unresolvable_nvidia_cdi_device_is_the_container_toolkits_spec() {
        // NVIDIA/nvidia-container-toolkit#434 (Docker in CDI mode), gpustack/gpustack#3989
        // (Kubernetes' management.nvidia.com names).
        for log in [
            "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: could not apply required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=all: unknown.",
            "            devices: unresolvable CDI devices management.nvidia.com/gpu=0,",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("drv-container-cdi-unresolvable", Driver),
                "{log}"
            );
            assert!(f.fix.contains("nvidia-ctk cdi generate"), "{}", f.fix);
        }
        // Another vendor's CDI device (moby/moby#47633) names no NVIDIA layer.
        assert_eq!(
            first(
                "docker: Error response from daemon: CDI device injection failed: unresolvable CDI devices spidernet.io/test=demo1."
            ),
            None
        );
    }

    #[test]
    fn a_cuda_ipc_handle_that_will_not_open_is_how_the_processes_share_the_gpu() {
        // NVIDIA/nccl#360 (containers: another PID namespace), modelscope/FunASR#704 (Triton
        // under Docker on Windows).
        for log in [
            "failed to open CUDA IPC handle at cuda initialization",
            "Error log：tritonclient.utils.InferenceServerException: [StatusCode.INTERNAL] in ensemble 'infer_pipeline', Failed to process the request(s) for model instance 'scoring_0_0', message: Failed to open the cudaIpcHandle. error: invalid resource handle",
        ] {
            assert_eq!(
                layers(log),
                Some(("lib-cuda-ipc-handle", Library, Some(Driver))),
                "{log}"
            );
        }
    }

    #[test]
    fn a_failed_ggml_cuda_op_is_the_llama_cpp_build_unless_the_card_was_full() {
        // ggml-org/ggml#877 (GET_ROWS past a grid limit), leejet/stable-diffusion.cpp#440
        // (SCALE at a large resolution), spiritbuun/buun-llama-cpp#29 (the title alone).
        for log in [
            "ggml_cuda_compute_forward: GET_ROWS failed\nCUDA error: invalid configuration argument\n  current device: 0, in function ggml_cuda_compute_forward at /home/john/errorisol/ggml/src/ggml-cuda.cu:2285",
            "ggml_cuda_compute_forward: SCALE failed. CUDA error: invalid configuration argument",
            "Eval bug: ggml_cuda_compute_forward: GET_ROWS failed with turbo3 and DFlash",
        ] {
            let f = first(log).expect("a finding");
            assert_eq!(
                (f.id, f.layer),
                ("lib-ggml-cuda-op-failed", Library),
                "{log}"
            );
        }
        // A full card is read by the memory rules; ROCm's HIP backend is not NVIDIA's stack.
        for log in [
            "ggml_cuda_compute_forward: MUL_MAT failed\nCUDA error: out of memory",
            "ggml_cuda_compute_forward: MUL failed\nROCm error: invalid device function",
        ] {
            assert_eq!(first(log), None, "{log}");
        }
    }
}
