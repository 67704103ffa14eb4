//! The runtimes around CUDA that a training workstation also runs, each with its own failure
//! wording: NCCL's result codes (`ncclInvalidUsage`, `ncclInternalError`), XLA's "DNN library
//! initialization failed" trailer (JAX, TensorFlow on XLA), ONNX Runtime's execution-provider
//! library that will not load, JAX's check of the CUDA components it finds, cuDNN 8's zlib on
//! Windows, TensorRT engines built elsewhere, torch.compile's Triton on a GPU too old for it, a
//! jax/jaxlib pair that does not go together, apt's unmet dependencies of NVIDIA packages (and dpkg
//! failing on one: its install script or its unpacking), a failed make in the driver's DKMS folder,
//! torch.distributed's process-group misuse, TensorRT rejecting an exported model, the container
//! toolkit's CUDA requirement check, and from round 20 XLA's missing libdevice or ptxas (the
//! toolkit's compiler parts), podman's unresolvable NVIDIA CDI device (the container toolkit's
//! spec), a CUDA IPC handle opened outside its GPU or namespace, and a ggml CUDA op that failed
//! (llama.cpp's backend); from round 23 vLLM's own memory-budget checks, inductor without a
//! working Triton, the ptxas Triton runs refusing the GPU's sm name, and Triton's run-time link
//! against the driver's libcuda.so; from breadth pass brD torch.distributed's rendezvous port in
//! use, DDP's checks of unused parameters and of one model across ranks, a process ended by
//! SIGKILL (the out-of-memory killer) and torch's CPU allocator out of host RAM; from breadth
//! pass brE a CUDA library missing inside a `docker build` step (the build has no GPU runtime).
//!
//! The rules are rows of [`RULES`], read line by line: the first row whose log condition holds
//! ([`InLog`]: words some line of the log holds, or none does) and that matches the line names
//! it; a family is a row. What a row cannot say stays a function below: apt's and dpkg's lines,
//! whose layer is the NVIDIA package they name.
//!
//! Each is placed by what its mechanism says about the stack, with a second layer where the
//! threads split, and never decisive: a catalogue entry with a source, or a line that names the
//! cause (a cuDNN version pair, a cuDNN handle that could not be created, a missing `lib…so`),
//! wins. NCCL's remote errors ("remote process exited or there was a network error") and the
//! collective watchdog's timeouts name another rank's failure, not a layer: they stay `unknown`.

use super::rule::{
    Gated, InLog, Rule, first_allowed_in_log, first_allowed_on_line, read_where_allowed,
};
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Driver, Hardware, Library, Memory, Toolkit};
use crate::diagnose::matcher::Segment;

/// The runtimes' rules, read line by line: the first row the log allows that matches a line
/// names it.
pub(super) const RULES: &[Gated] = &[
    // NCCL's own allocation on the GPU failing: its WARN line, or the last error an unhandled
    // CUDA error carries (NVIDIA/nccl#1235, openxla/xla#7201). The card's memory, whatever
    // NCCL's result code; it outranks the catalogue's NCCL entries, which name no layer's cause.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "mem-nccl-cuda-out-of-memory",
            patterns: &[],
            layer: Memory,
            second: Some(Library),
            cause: "NCCL could not allocate GPU memory for its buffers (its CUDA call failed with out of memory): the training process had already filled the card, so the communicator's set-up or a collective found no room; NCCL and the network are not at fault.",
            fix: "Leave NCCL room on every GPU: halve the per-GPU batch (or shard more: FSDP/ZeRO, gradient checkpointing), stop other programs on the cards (`nvidia-smi`), and create the process group before the model fills the GPU; `stackpin vram --peak PEAK --batch N --vram SIZE` names a batch that fits. NCCL_BUFFSIZE lowers NCCL's own share.",
            mechanism: Mechanism::Plain,
            decisive: true,
            judge: Some(is_nccl_out_of_memory),
        },
    },
    // NCCL's invalid usage with two ranks on one GPU ("Duplicate GPU detected" anywhere in the log),
    // then without: the program's ranks and GPUs.
    Gated {
        log: InLog {
            has: &[&["duplicate gpu detected"]],
            lacks: &[],
        },
        rule: Rule {
            id: "lib-nccl-invalid-usage",
            patterns: &[],
            layer: Library,
            second: None,
            cause: "NCCL refused to start: two ranks of the training run are on the same GPU (\"Duplicate GPU detected\"), so the program starts more processes than it gives GPUs, or never sets each rank's device.",
            fix: "Start one process per GPU (torchrun's --nproc_per_node no larger than the GPUs CUDA_VISIBLE_DEVICES leaves) and set each rank's device from its local rank (`torch.cuda.set_device(local_rank)`) before the first collective; do not hard-code one default GPU.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_nccl_invalid_usage),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-nccl-invalid-usage",
            patterns: &[],
            layer: Library,
            second: None,
            cause: "NCCL reports invalid usage: the training program's ranks, devices or collective calls do not match (two ranks on one GPU, ranks calling different collectives), or ranks run different NCCL versions.",
            fix: "Rerun with NCCL_DEBUG=WARN to read NCCL's reason; start one process per GPU with each rank's device set from its local rank, and install the same library build (and its NCCL) on every node.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_nccl_invalid_usage),
        },
    },
    // NCCL's internal error: the transport under the collective (P2P, shared memory, the network).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-nccl-internal-error",
            patterns: &[],
            layer: Library,
            second: Some(Hardware),
            cause: "NCCL failed inside a collective (internal error): NCCL 2.18 reports every network failure this way; otherwise its transport (GPU peer-to-peer, shared memory, the network interface) fails on this machine.",
            fix: "Rerun with NCCL_DEBUG=WARN (then INFO) and read the WARN line; try NCCL_P2P_DISABLE=1 (peer-to-peer blocked by IOMMU/ACS or unsupported between the cards), set NCCL_SOCKET_IFNAME to the right interface, and use a library build with a newer NCCL (2.19+).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_nccl_internal_error),
        },
    },
    // XLA's trailer says "look at the errors above": a line above that names the cause wins.
    Gated {
        log: InLog {
            has: &[],
            lacks: DNN_CAUSE_NAMED,
        },
        rule: Rule {
            id: "tk-xla-dnn-init",
            patterns: &["dnn library initialization failed"],
            layer: Toolkit,
            second: Some(Library),
            cause: "XLA could not start cuDNN (DNN library initialization failed): the cuDNN that loads does not fit the one the library was built with (an older or other-major cuDNN first on the loader path), or a cuDNN handle could not be created.",
            fix: "Read the lines above it for the cuDNN version pair. Install the library's own CUDA wheels in a fresh venv (JAX: `pip install -U \"jax[cuda12]\"`; TensorFlow: `tensorflow[and-cuda]`) and take other cuDNN copies (/usr/local/cuda*/lib64, a conda cudnn) off LD_LIBRARY_PATH; if a cuDNN handle failed with the card full, let the library grow its memory (XLA_PYTHON_CLIENT_PREALLOCATE=false).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // The TensorRT provider's own dependencies are TensorRT's libraries (nvinfer) on top
    // of CUDA and cuDNN: microsoft/onnxruntime#17394, #8325, jtydhr88/ComfyUI-Unique3D#32,
    // AUTOMATIC1111/stable-diffusion-webui-rembg#18.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "tk-ort-tensorrt-provider-load",
            patterns: &[],
            layer: Toolkit,
            second: Some(Library),
            cause: "ONNX Runtime's TensorRT execution-provider library is there but will not load (Windows error 126): TensorRT's own libraries (nvinfer, nvonnxparser) of the major this onnxruntime-gpu build needs, or the CUDA and cuDNN under them, are not on the loader path.",
            fix: "Install the TensorRT release this onnxruntime-gpu build names in its requirements (and the CUDA and cuDNN it sits on) and put TensorRT's lib folder on PATH (Windows) / LD_LIBRARY_PATH (the `tensorrt` wheel's `tensorrt_libs` folder works too); or, where no TensorRT is wanted, ask only for the CUDA and CPU providers (providers=[\"CUDAExecutionProvider\", \"CPUExecutionProvider\"]).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_ort_tensorrt_provider_load),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "tk-ort-provider-load",
            patterns: &[],
            layer: Toolkit,
            second: Some(Library),
            cause: "ONNX Runtime's CUDA/TensorRT execution-provider library is there but will not load: a CUDA or cuDNN library of the major version this onnxruntime-gpu build needs is missing from the loader path (Windows error 126), or the build is for another CUDA/cuDNN major.",
            fix: "Install the CUDA and cuDNN majors this onnxruntime-gpu release lists in its requirements (or the onnxruntime-gpu build for the CUDA/cuDNN you have), and put their bin folders on PATH (Windows) / lib folders on LD_LIBRARY_PATH; in Python, `import torch` before onnxruntime loads the CUDA libraries torch's wheels bring.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_ort_provider_load),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-jax-cuda-plugin-check",
            patterns: &[],
            layer: Library,
            second: Some(Toolkit),
            cause: "JAX's CUDA plugin failed its own check of the CUDA it loads (jaxlib's versions helpers, the plugin's version check): jax, jaxlib and the jax-cuda plugin are not one matching install with the CUDA wheels they need, so the CUDA backend does not start. The CUDA status it prints comes from that check, not from a failing driver.",
            fix: "Reinstall JAX as one set in the venv: `pip uninstall -y jax jaxlib jax-cuda12-plugin jax-cuda12-pjrt`, then `pip install -U \"jax[cuda12]\"` (or pin one release: `jax[cuda12]==X jaxlib==X`), which brings the plugin and the nvidia-* CUDA wheels it was built for; do not mix a conda jaxlib with pip plugins. `python -c \"import jax; print(jax.devices())\"` must list the GPU.",
            mechanism: Mechanism::Plain,
            decisive: true,
            judge: Some(is_jax_plugin_check),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "tk-jax-cuda-components",
            patterns: JAX_CUDA_COMPONENTS,
            layer: Toolkit,
            second: Some(Library),
            cause: "JAX's CUDA backend refused the CUDA or cuDNN it found: older than the one jaxlib was built against, or not found at all, so JAX falls back to the CPU.",
            fix: "Install JAX with its own CUDA wheels in a fresh venv (`pip install -U \"jax[cuda12]\"`) so the cuDNN and CUDA it loads are the ones it was built for, and take older copies (/usr/local/cuda*/lib64, a conda cudnn) off LD_LIBRARY_PATH; or pin a jaxlib built for the cuDNN you have.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "tk-cudnn8-zlibwapi",
            patterns: &[],
            layer: Toolkit,
            second: None,
            cause: "cuDNN 8 on Windows needs zlibwapi.dll (64-bit) on PATH, and it is missing (or a 32-bit copy was found, error 193).",
            fix: "Put the 64-bit zlibwapi.dll cuDNN 8's install guide names into the toolkit's bin folder (CUDA\\vX.Y\\bin, on PATH); torch's wheels ship one in torch\\lib. cuDNN 9 no longer needs it.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_zlibwapi_missing),
        },
    },
    // TensorRT 8's serializer says the same as a version-tag assertion
    // (NVIDIA/TensorRT#2041, HKUST-Aerial-Robotics/D2SLAM#52).
    // TensorRT 5-7's engine reader asserting the file's size against the size its own
    // format expects: an engine written by another TensorRT (Tianxiaomo/pytorch-YOLOv4#290,
    // fixed in the TensorRT container it was built for; wang-xinyu/tensorrtx#287;
    // NVIDIA-AI-IOT/tf_to_trt_image_classification#16, the cudnnEngine.cpp wording).
    // TensorRT 6-7's archive reader refusing the engine file's header (breadth pass brL:
    // NVIDIA/TensorRT#292, a TensorRT 7 engine read by TensorRT 6 on a Jetson;
    // enazoe/yolo-tensorrt#72, its length wording, answered with the CUDA/TensorRT
    // versions).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-tensorrt-engine-stale",
            patterns: &[
                "engine plan file is not compatible",
                "engine plan file is generated on an incompatible device",
                "version tag does not match",
                "mismatch between allocated memory size and expected size of serialized engine",
                "serialization error in verifyheader",
            ],
            layer: Library,
            second: Some(Toolkit),
            cause: "A serialized TensorRT engine was built by another TensorRT version or on another GPU than the one loading it: engines are not portable.",
            fix: "Rebuild the engine (delete the cached .engine/.plan file and let the program regenerate it) with the TensorRT and GPU it runs on; if two TensorRT versions are installed (the Python wheel and the system libnvinfer), keep one.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // vllm-project/vllm#2248, #17431, #27508, #2418, #25350, QwenLM/Qwen3#295.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "mem-vllm-kv-cache-budget",
            patterns: VLLM_KV_BUDGET,
            layer: Memory,
            second: Some(Library),
            cause: "vLLM's memory budget does not fit: it takes gpu_memory_utilization of the card (0.9 by default) for the weights, the activations and its KV cache, and after the weights too little is left for the cache blocks (or for the longest sequence, max_model_len), or the warm-up of its sampler ran the card out.",
            fix: "Fit vLLM's budget: if no other program holds the card (`nvidia-smi`), raise gpu_memory_utilization; lower max_model_len (the longest context) and max_num_seqs (sequences at once; where vLLM itself says to lower gpu_memory_utilization, the memory outside its share ran out: lower both); or use a quantised or smaller model, or spread it over more GPUs (tensor_parallel_size).",
            mechanism: Mechanism::Plain,
            decisive: true,
            judge: None,
        },
    },
    // Triton's own wording of CUDA's invalid image (200): the cubin its bundled ptxas
    // wrote is for a newer CUDA than the driver loads. triton-lang/triton#3001 (fixed by
    // driver 470 -> 535), triton-lang/triton#2971 and triton-lang/triton#4029 (driver 470
    // with a newer Triton),
    // vllm-project/vllm#5713 (fixed by a newer CUDA driver, or by the system's ptxas).
    // The bare CUDA wording stays the library's (`lib-code-invalid-image`).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "drv-triton-kernel-image-invalid",
            patterns: &["triton error [cuda]: device kernel image is invalid"],
            layer: Driver,
            second: Some(Library),
            cause: "Triton compiled a kernel the driver will not load (device kernel image is invalid): the ptxas bundled with this Triton release writes code for a newer CUDA than the installed NVIDIA driver supports.",
            fix: "Update the NVIDIA driver to one that supports the CUDA release of this Triton's bundled ptxas (`nvidia-smi` shows the driver's CUDA; 535 or later for CUDA 12); if the driver cannot change, point TRITON_PTXAS_PATH at the ptxas of a CUDA the driver supports, or install the older Triton (and the torch that pins it) that worked.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // woct0rdho/triton-windows#34 (pip outside ComfyUI's embedded Python),
    // welltop-cn/ComfyUI-TeaCache#40, pytorch/pytorch#125093, triton-lang/triton#4034.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-triton-not-installed",
            patterns: &["cannot find a working triton installation"],
            layer: Library,
            second: Some(Hardware),
            cause: "torch.compile's inductor backend found no working Triton: the triton package is missing from this Python (Windows needs the separate triton-windows package), too old for the torch build, or the GPU is older than Triton supports (compute capability 7.0).",
            fix: "Install the Triton that the torch build pins into the same Python that runs the program (`python -m pip install` with that interpreter; on Windows the triton-windows release for this torch), or run without torch.compile (the program's compile option off, or TORCHDYNAMO_DISABLE=1); on a card older than compute capability 7.0, run uncompiled.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-triton-gpu-too-old",
            patterns: &["too old to be supported by the triton gpu compiler"],
            layer: Library,
            second: Some(Hardware),
            cause: "torch.compile's Triton backend does not support this GPU's compute capability (it needs 7.0 or newer): the program asks a library feature the card cannot run.",
            fix: "Run without torch.compile (the program's compile option off, or TORCHDYNAMO_DISABLE=1); the eager library runs on this card. To compile, use a GPU of compute capability 7.0 or newer.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-jax-jaxlib-pair",
            patterns: &[],
            layer: Library,
            second: None,
            cause: "jax and jaxlib are installed at versions that do not go together (jax checks the pair on import).",
            fix: "Install jax and jaxlib of one release together in the venv (`pip install -U \"jax[cuda12]\"` installs the matching jaxlib and its CUDA plugin); do not mix a conda jaxlib with a pip jax.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_jaxlib_pair),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "drv-dkms-make-failed",
            patterns: &[],
            layer: Driver,
            second: None,
            cause: "DKMS could not build the NVIDIA kernel module: the make step in the driver's DKMS build folder failed (in any language), so the running kernel has no NVIDIA module.",
            fix: "Read the make.log it names for the first `error:`; install the running kernel's headers (linux-headers-$(uname -r), kernel-devel or kernel-headers) and rebuild (`sudo dkms autoinstall`); if the kernel is newer than the driver release supports, pin a newer driver release (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`) or boot the previous kernel. Reinstalling the same driver rebuilds the same way.",
            mechanism: Mechanism::DriverBuild,
            decisive: true,
            judge: Some(is_dkms_make_failed),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-dist-process-group",
            patterns: PROCESS_GROUP_MISUSE,
            layer: Library,
            second: None,
            cause: "torch.distributed's default process group is set up twice, or used before it is set up: the training program's launch or its own initialisation, not the GPU stack.",
            fix: "Start the program with the launcher it expects (torchrun, or its `--launcher pytorch` option) and call `init_process_group` once per process (guard it with `torch.distributed.is_initialized()`; in a notebook, restart the kernel before running the setup again).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-tensorrt-model-import",
            patterns: TRT_MODEL_IMPORT,
            layer: Library,
            second: Some(Toolkit),
            cause: "TensorRT could not turn the model into a network: the exported ONNX model has inputs, nodes or an opset this TensorRT does not accept (or names the build script does not expect).",
            fix: "Re-export the ONNX model from the training library with the opset and input names the build expects (simplify it, e.g. with onnx-simplifier), or use a TensorRT release that supports its operators; check the build script's input names against the model's.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_trt_layer_error),
        },
    },
    // tensorflow/tensorflow#60790, jax-ml/jax#4452, #6323, j-towns/vdvae-jax#1.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "tk-xla-libdevice-missing",
            patterns: XLA_LIBDEVICE,
            layer: Toolkit,
            second: None,
            cause: "XLA (the compiler under TensorFlow's jit and JAX) needs the CUDA toolkit's nvvm/libdevice (libdevice.10.bc) and found none in the folders it searched: no toolkit there, or one without its nvvm part.",
            fix: "Install the CUDA toolkit (or its compiler package: the nvidia-cuda-nvcc wheel, conda's cuda-nvcc), which carries nvvm/libdevice, and point XLA at the folder above nvvm: XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda (or that package's folder). TensorFlow's `tensorflow[and-cuda]` and JAX's `jax[cuda12]` extras bring their own.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // openxla/xla#5932, google/flax#2249, tensorflow/tensorflow#35423,
    // tensorflow/models#9847, google/trax#249, iot-salzburg/gpu-jupyter#93.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "tk-xla-ptxas",
            patterns: &[],
            layer: Toolkit,
            second: None,
            cause: "XLA compiles its GPU kernels with the CUDA toolkit's ptxas, and the ptxas it found is missing or too old (for XLA, or for this GPU's compute capability): it falls back to the driver's slower JIT, or fails.",
            fix: "Put a ptxas from a CUDA release new enough for the GPU first on PATH (CUDA 11.1+ for XLA at all, 11.8+ for compute capability 9.0, 12.8+ for Blackwell): install the toolkit, or only its compiler (the nvidia-cuda-nvcc wheel, conda's cuda-nvcc), or point XLA at the toolkit with XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_xla_ptxas),
        },
    },
    // ptxas refusing the GPU's architecture name: the ptxas Triton bundles (or was
    // pointed at) predates the card. triton-lang/triton#8539's fix, ModelTC/LightLLM#176
    // (sm_89 before triton 2.1), gpustack/gpustack#4372, vllm-project/vllm#31338.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-triton-ptxas-arch",
            patterns: &["is not defined for option 'gpu-name'"],
            layer: Library,
            second: Some(Toolkit),
            cause: "ptxas does not know this GPU's architecture (the sm_XX it names): the ptxas Triton runs (bundled in the triton package, or the one TRITON_PTXAS_PATH names) is from a CUDA release older than the card, so Triton cannot compile its kernels (torch.compile, vLLM, a Triton kernel of the program).",
            fix: "Use a Triton release that knows the card (the one a newer torch pins), or point Triton at a CUDA toolkit's ptxas new enough for it: TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (CUDA 12.8+ for RTX 50/sm_120, CUDA 13 for sm_110/sm_121); or run without torch.compile.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // Triton builds its launcher at run time and links it with -lcuda: the driver's
    // libcuda.so, which ld finds only as the unversioned link (pytorch/pytorch#94585,
    // #103417, #92745, #107960, state-spaces/mamba#123). A build's -lcuda stays the
    // linker family's (the toolkit's stub).
    Gated {
        log: InLog {
            has: &[RUNTIME_COMPILING],
            lacks: &[],
        },
        rule: Rule {
            id: "drv-triton-libcuda-link",
            patterns: &[],
            layer: Driver,
            second: Some(Toolkit),
            cause: "Triton (under torch.compile, vLLM or a Triton kernel) compiles a small launcher at run time and links it against the driver's libcuda.so, and the linker finds none: only libcuda.so.1 is there (no libcuda.so link, common in containers, WSL and Colab), or its folder is not in the linker cache.",
            fix: "Make the driver's libcuda.so findable: `ldconfig -p | grep libcuda` shows where libcuda.so.1 is; point Triton at that folder (TRITON_LIBCUDA_PATH=/usr/lib/x86_64-linux-gnu, /usr/lib/wsl/lib under WSL) or create the link (`sudo ln -s libcuda.so.1 libcuda.so` there, then `sudo ldconfig`); the toolkit's lib64/stubs on LIBRARY_PATH also works for linking.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_lcuda_link),
        },
    },
    // Triton's own words for the same.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "drv-triton-libcuda-link",
            patterns: &["libcuda.so cannot found"],
            layer: Driver,
            second: Some(Toolkit),
            cause: "Triton (under torch.compile, vLLM or a Triton kernel) compiles a small launcher at run time and links it against the driver's libcuda.so, and the linker finds none: only libcuda.so.1 is there (no libcuda.so link, common in containers, WSL and Colab), or its folder is not in the linker cache.",
            fix: "Make the driver's libcuda.so findable: `ldconfig -p | grep libcuda` shows where libcuda.so.1 is; point Triton at that folder (TRITON_LIBCUDA_PATH=/usr/lib/x86_64-linux-gnu, /usr/lib/wsl/lib under WSL) or create the link (`sudo ln -s libcuda.so.1 libcuda.so` there, then `sudo ldconfig`); the toolkit's lib64/stubs on LIBRARY_PATH also works for linking.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // NVIDIA/nvidia-container-toolkit#146, #434, NixOS/nixpkgs#420638,
    // gpustack/gpustack#3989; another vendor's CDI device names no NVIDIA layer
    // (moby/moby#47633).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "drv-container-cdi-unresolvable",
            patterns: &[],
            layer: Driver,
            second: None,
            cause: "The container engine (podman, or Docker/containerd in CDI mode) was asked for the NVIDIA CDI device (nvidia.com/gpu=…) and found no CDI spec naming it: the NVIDIA Container Toolkit's spec was never generated, is stale after a driver upgrade, unreadable, or in a folder the engine does not read.",
            fix: "On the host, generate the spec with the NVIDIA Container Toolkit (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, again after every driver upgrade), check that `nvidia-ctk cdi list` shows the name asked for, make the file readable for rootless use, and make sure the engine reads that folder (/etc/cdi, /var/run/cdi, or its --cdi-spec-dir: NixOS writes /run/cdi).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_nvidia_cdi_unresolvable),
        },
    },
    // triton-inference-server/server#6872, NVIDIA/nccl#360, modelscope/FunASR#704.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-cuda-ipc-handle",
            patterns: &[],
            layer: Library,
            second: Some(Driver),
            cause: "A CUDA IPC memory handle (GPU memory shared between processes) could not be opened: that works only for processes on the same GPU, in the same PID/IPC namespace, on a platform with CUDA IPC (not WSL2 or Windows).",
            fix: "Run both processes on the same GPU (the same CUDA_VISIBLE_DEVICES), let containers share the host's namespaces (`--ipc=host --pid=host`), and under WSL2 or Windows do not use CUDA shared memory: use system shared memory (Triton's system shared-memory API) or plain transfers instead.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_cuda_ipc_failure),
        },
    },
    // ggml-org/llama.cpp#24328, ggml-org/ggml#877, leejet/stable-diffusion.cpp#440.
    Gated {
        log: InLog {
            has: &[],
            lacks: OTHER_BACKEND_OR_MEMORY,
        },
        rule: Rule {
            id: "lib-ggml-cuda-op-failed",
            patterns: &[],
            layer: Library,
            second: None,
            cause: "llama.cpp's (ggml's) CUDA backend failed in one operation (the op it names, MUL_MAT, GET_ROWS, SCALE…): a bug or a limit of that ggml build's kernel for this model, context or GPU; the CUDA error printed after it says more.",
            fix: "Update llama.cpp (or the program that bundles it: ollama, llama-cpp-python, stable-diffusion.cpp) to a newer build, or go back to the last build that worked; meanwhile try without flash attention (-fa off), with a smaller batch (-b/-ub) or context, or without the option that triggers it.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_ggml_op_failed),
        },
    },
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "drv-container-cuda-requirement",
            patterns: &["requirement error: unsatisfied condition: cuda"],
            layer: Driver,
            second: None,
            cause: "The container toolkit refused the container: its image needs a newer CUDA than the host driver supports (the image's `cuda>=X.Y` requirement).",
            fix: "On the host, install a driver at least as new as the image's CUDA requires (the toolkit's release notes list the minimum driver), reboot, and start the container again; or use an image built for an older CUDA. Setting NVIDIA_DISABLE_REQUIRES=true only skips the check.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // thu-coai/CDial-GPT#103 (--master_port cured it), hao-ai-lab/FastVideo#575,
    // meta-llama/llama-cookbook#186, meta-pytorch/torchtune#1025 (two runs at once).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-dist-port-in-use",
            patterns: &[],
            layer: Library,
            second: None,
            cause: "torch.distributed's rendezvous store could not listen on its port (errno 98, address already in use): another process holds MASTER_PORT (29500 by default): an earlier run that has not exited (a leftover worker keeps the port) or a second training job on the same machine. The GPU stack is not involved.",
            fix: "Give this run its own port (`torchrun --master_port 29501 …`, `python -m torch.distributed.launch --master_port …`, or MASTER_PORT=…), or on one machine `torchrun --standalone`, which picks a free one; or find what holds the port (`ss -ltnp | grep 29500`) and stop that leftover run.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_dist_port_in_use),
        },
    },
    // "Address already in use" anywhere else in a log that launches torch.distributed: its
    // rendezvous store's port.
    Gated {
        log: InLog {
            has: &[DIST_LAUNCH],
            lacks: &[],
        },
        rule: Rule {
            id: "lib-dist-port-in-use",
            patterns: &["address already in use"],
            layer: Library,
            second: None,
            cause: "torch.distributed's rendezvous store could not listen on its port (errno 98, address already in use): another process holds MASTER_PORT (29500 by default): an earlier run that has not exited (a leftover worker keeps the port) or a second training job on the same machine. The GPU stack is not involved.",
            fix: "Give this run its own port (`torchrun --master_port 29501 …`, `python -m torch.distributed.launch --master_port …`, or MASTER_PORT=…), or on one machine `torchrun --standalone`, which picks a free one; or find what holds the port (`ss -ltnp | grep 29500`) and stop that leftover run.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // ImprintLab/MedSegDiff#27 (a layer defined but not used in forward),
    // aliyun/conditional-lane-detection#29, HamPerdredes/SOOD#33,
    // open-mmlab/mmdetection3d#488 (find_unused_parameters = True cured them).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-ddp-unused-parameters",
            patterns: DDP_UNUSED_PARAMETERS,
            layer: Library,
            second: None,
            cause: "DistributedDataParallel waited for gradients of parameters the loss never used (a layer built in __init__ but not called in forward, a branch taken on some steps only, an output left out of the loss): the training code against DDP's settings, not the GPU stack.",
            fix: "Pass find_unused_parameters=True to DistributedDataParallel (mmdet/mmcv configs: `find_unused_parameters = True`; Lightning: strategy=\"ddp_find_unused_parameters_true\"), or remove the unused layers and make every forward output part of the loss; TORCH_DISTRIBUTED_DEBUG=DETAIL names the parameters. Freeze what must not train (requires_grad=False) before wrapping the model.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // yifan123/flow_grpo#245 (the launcher's process count against the config),
    // ViTAE-Transformer/RSP#5 (the README's launch command), guoqincode/Open-AnimateAnyone#88.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-ddp-model-mismatch-across-ranks",
            patterns: &["ddp expects same model across all ranks"],
            layer: Library,
            second: None,
            cause: "DistributedDataParallel's start-up check found that the ranks built different models (another count of trainable parameters, often 0 on one rank): the processes run different configurations or launch commands, or the model is built or frozen differently on some ranks. The GPU stack is not involved.",
            fix: "Start every rank with the same command and config (the launcher's --nproc_per_node / num_processes equal to the GPUs the config expects, as the project's README launches it), and build, load and freeze the model the same way on every rank before wrapping it in DDP (set adapters and requires_grad first); a one-GPU run shows whether the model itself builds.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: None,
        },
    },
    // The kernel's out-of-memory killer (or a container's, WSL's or a scheduler's limit)
    // ends a process with SIGKILL: tdrussell/diffusion-pipe#9, meta-llama/codellama#118
    // (torchrun's exitcode -9), PKU-YuanGroup/Video-LLaVA#13, tloen/alpaca-lora#546 and
    // chatchat-space/Langchain-Chatchat#35 (the shell's "Killed" while loading shards).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "mem-host-process-killed",
            patterns: &[],
            layer: Memory,
            second: None,
            cause: "The process was ended with SIGKILL (torchrun's exitcode -9, the shell's \"Killed\"): the kernel's out-of-memory killer, or a container's, WSL's or a job scheduler's memory limit, took it when host RAM ran out, most often while a model's weights were loaded into RAM (once per process under torchrun) or as a training's data and loader workers grew. GPU memory running out raises an error instead.",
            fix: "Confirm it with `dmesg | grep -i -E 'killed process|out of memory'` (or the scheduler's job record) and watch `free -h` while it loads; then load the weights in half precision and straight to the GPU (torch_dtype=torch.float16 / bfloat16, low_cpu_mem_usage=True, device_map), start fewer processes (for a training: fewer loader workers, a shorter prefetch queue, less data held in RAM), or give the machine more RAM or swap (WSL: memory= and swap= in .wslconfig; docker --memory; SLURM --mem).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_sigkilled),
        },
    },
    // torch's CPU allocator (c10's alloc_cpu.cpp, TH's THGeneral "Buy new RAM!"):
    // easydiffusion/easydiffusion#289, ymcui/Chinese-LLaMA-Alpaca#18 (the RAM was too
    // small), lllyasviel/Fooocus#237 (a larger Windows paging file), amdegroot/ssd.pytorch#186.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "mem-host-cpu-allocator",
            patterns: &[],
            layer: Memory,
            second: None,
            cause: "torch's CPU allocator could not get host memory for a tensor (DefaultCPUAllocator, or the old TH \"Buy new RAM!\"): the machine's RAM (and on Windows its paging file) is too small for what the program holds on the CPU, such as a model's weights while they load or a dataset kept in memory. The GPU and its driver are not involved.",
            fix: "Watch the RAM while it runs (`free -h`, Task Manager): close other programs, load the weights in half precision or straight to the GPU (torch_dtype=torch.float16, low_cpu_mem_usage=True), use smaller inputs or batches on the CPU side; on Windows let the paging file grow (System > Advanced > Virtual memory: system managed, or 30-50 GB); or add RAM.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_cpu_allocator_out_of_memory),
        },
    },
    // vllm-project/vllm#19186 (a lower gpu_memory_utilization cured it), #15598
    // (--enforce-eager or a smaller --max-num-seqs), QwenLM/Qwen#819.
    Gated {
        log: InLog {
            has: VLLM_GRAPH_CAPTURE,
            lacks: &[],
        },
        rule: Rule {
            id: "mem-vllm-cuda-graph-capture",
            patterns: &["out of memory"],
            layer: Memory,
            second: None,
            cause: "The GPU ran out of memory while vLLM captured its CUDA graphs: the graphs (about 1-3 GiB per GPU) are allocated outside the gpu_memory_utilization share vLLM sized its KV cache for, so with that share near 1, or other programs on the card, the capture does not fit.",
            fix: "Lower gpu_memory_utilization (e.g. 0.9 to 0.8) so the graphs fit beside vLLM's share, or run without CUDA graphs (--enforce-eager / enforce_eager=True), or lower --max-num-seqs (fewer graph sizes to capture) and --max-model-len; check with `nvidia-smi` that no other program holds the card.",
            mechanism: Mechanism::Plain,
            decisive: true,
            judge: None,
        },
    },
    // torch's kernels print their failed check before "device-side assert triggered":
    // a pasted log often keeps only these lines. milesial/Pytorch-UNet#375 (n_classes
    // against the labels), hszhao/semseg#29, joe-siyuan-qiao/DetectoRS#13.
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-kernel-assert",
            patterns: &[],
            layer: Library,
            second: Some(Hardware),
            cause: "A check inside a GPU kernel failed (a torch kernel's `Assertion … failed` for one block and thread, the line before \"device-side assert triggered\"): almost always an index out of range in the data or the model's sizes, such as a label at or past the number of classes (`t >= 0 && t < n_classes`) or an id past an embedding; rarely a card that asserts where another runs the same step clean.",
            fix: "First tell the data from the card: run the step on the CPU (or with CUDA_LAUNCH_BLOCKING=1) to get the real index error. Then check the data against the model's sizes: labels in 0..num_classes-1 (an ignore value such as 255 set as ignore_index, the class count including the background), ids below the embedding size. If the CPU run is clean and the assert follows one GPU, run on another card and read `nvidia-smi -q -d ECC` (hardware).",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_kernel_assert),
        },
    },
    // Triton Inference Server finding no model version or file where it looks:
    // triton-inference-server/server#3687 (no numbered version folder), #4697
    // (--load-model given a path), #3384, clearml/clearml-serving#3 (model.pt missing).
    Gated {
        log: InLog::ANY,
        rule: Rule {
            id: "lib-triton-server-model-repository",
            patterns: &[],
            layer: Library,
            second: None,
            cause: "Triton Inference Server did not find the model where its repository layout says it must be: no numbered version folder (<model>/1/), no model file under the backend's default name in it (model.onnx, model.plan, model.pt, model.savedmodel), no config.pbtxt where one is required, or --load-model given a path instead of the model's name. The GPU stack is not involved.",
            fix: "Lay the repository out as Triton reads it: <repository>/<model name>/config.pbtxt and <repository>/<model name>/1/<model file> with the backend's default file name (or default_model_filename in config.pbtxt); pass --load-model the model's name; start with --strict-model-config=false (--disable-auto-complete-config off) where the backend can derive the config; the server log's model table names each model's status.",
            mechanism: Mechanism::Plain,
            decisive: false,
            judge: Some(is_triton_repository_layout),
        },
    },
];

/// Read once in the whole log, after the lines: a CUDA library missing in a `docker build`.
pub(super) const IN_DOCKER_BUILD: &[Gated] = &[
    // A `docker build` step (`RUN python setup.py …`, `RUN python -c 'import torch'`) has no
    // GPU runtime: Docker builds with runc, so the driver's libcuda is not mounted, and on
    // Jetson the L4T images' CUDA libraries (libcurand, libcublas) come from the host through
    // the NVIDIA runtime too. dusty-nv/jetson-containers#121 (the maintainer: set the default
    // runtime to nvidia), #266; NVIDIA-AI-IOT/torch2trt#488 (the same, for its setup.py).
    Gated {
        log: InLog {
            has: &[DOCKER_BUILD],
            lacks: &[],
        },
        rule: Rule {
            id: "drv-container-build-without-gpu-runtime",
            patterns: &[],
            layer: Driver,
            second: Some(Toolkit),
            cause: "A `docker build` step loaded CUDA (importing torch or building an extension) and a CUDA library was not there: Docker runs build steps without the NVIDIA runtime, so the host driver's libcuda is not mounted, and on Jetson the L4T images' CUDA libraries (libcurand, libcublas, cuDNN) are mounted from the host by that runtime as well. Less often the image really lacks the CUDA runtime libraries.",
            fix: "Either give the build the NVIDIA runtime: set `\"default-runtime\": \"nvidia\"` in /etc/docker/daemon.json, restart Docker and build again (the maintainers' fix for Jetson's L4T images; BuildKit may need DOCKER_BUILDKIT=0); or keep CUDA out of the build: build the extension for named architectures (TORCH_CUDA_ARCH_LIST) without importing CUDA, and run anything that needs the GPU at `docker run --gpus all` time. If the library is missing at run time too, the image lacks the CUDA runtime: start from a CUDA (or L4T) base image.",
            mechanism: Mechanism::Plain,
            decisive: true,
            judge: Some(is_cuda_library_missing),
        },
    },
];

/// XLA's trailer says "look at the errors above": a line above that names the cause wins.
const DNN_CAUSE_NAMED: &[&str] = &[
    "cudnn handle",
    "loaded runtime cudnn library",
    "cudnn version",
    "cudnn_status",
    "out of memory",
];

/// A link step that runs while a program runs (Triton's launcher under torch.compile or vLLM),
/// not a build's: inductor, vLLM, or Triton's own modules ("Triton" alone also names the
/// inference server, whose builds link -lcuda like any other).
const RUNTIME_COMPILING: &[&str] = &[
    "_inductor",
    "torch._dynamo",
    "triton/runtime",
    "triton/compiler",
    "triton/backends",
    "triton.runtime",
    "/.triton/",
    "enginecore",
    "vllm",
];

/// ggml's op failure is read as the library only on NVIDIA and when the log does not say the
/// card was full (that is memory, and the memory rules read it).
const OTHER_BACKEND_OR_MEMORY: &[&str] = &["rocm error", "hip error", "out of memory"];

/// vLLM capturing its CUDA graphs: the graphs' memory lies outside gpu_memory_utilization's
/// share, so an out-of-memory error then has its own cure.
const VLLM_GRAPH_CAPTURE: &[&[&str]] = &[
    &["vllm", "enforce_eager", "enforce-eager"],
    &[
        "capturing cudagraphs",
        "capturing the model for cuda graphs",
        "capturing cuda graph",
        "capture_end",
    ],
];

/// A `docker build` log: the legacy builder's step lines and its failure line, BuildKit's.
const DOCKER_BUILD: &[&str] = &[
    "---> running in ",
    "the command '/bin/sh -c",
    "failed to solve: process \"/bin/sh -c",
];

/// A log that launches torch.distributed: its port errors are the rendezvous store's.
const DIST_LAUNCH: &[&str] = &[
    "torch.distributed",
    "torchrun",
    "master_port",
    "init_process_group",
];

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let allowed = read_where_allowed(RULES, segments);
    let mut found = Vec::new();
    // The lines after dpkg's "Errors were encountered while processing:" list the packages.
    let mut listed = false;
    for seg in segments {
        let lower = &seg.lower;
        let listing = listed;
        listed = if lower.contains("errors were encountered while processing:") {
            true
        } else {
            listed && !lower.trim().contains(' ') && !lower.trim().is_empty()
        };
        let finding = first_allowed_on_line(RULES, &allowed, seg)
            .or_else(|| apt_unmet(seg, lower))
            .or_else(|| apt_not_installable(seg, lower))
            .or_else(|| dpkg_failed(seg, listing));
        found.extend(finding);
    }
    found.extend(first_allowed_in_log(IN_DOCKER_BUILD, segments));
    found
}

/// A CUDA library (the toolkit's or the driver's) the loader could not open.
fn is_cuda_library_missing(lower: &str) -> bool {
    lower.contains("cannot open shared object file")
        && ["libcu", "libnv", "libcudnn"]
            .iter()
            .any(|l| lower.contains(l))
}

/// A torch kernel's failed check: `file.cu:N: kernel: block: [x,y,z], thread: [x,y,z] Assertion
/// `…` failed.`
fn is_kernel_assert(lower: &str) -> bool {
    lower.contains("block: [")
        && lower.contains("thread: [")
        && lower.contains("assertion `")
        && lower.contains("failed")
}

/// Triton Inference Server's own words for a model it cannot find in its repository.
fn is_triton_repository_layout(lower: &str) -> bool {
    lower.contains("no model version was found")
        || lower.contains("no version is available")
        || lower.contains("model configuration is not provided for model")
        || (lower.contains("unable to find '") && lower.contains("for model instance"))
}

/// torch.distributed's own words when its rendezvous store cannot take its port (c10d's
/// socket.cpp, `DistNetworkError`, and torch before 1.11's bare `RuntimeError`); in a log that
/// launches torch.distributed any "address already in use" is read by the row after it.
fn is_dist_port_in_use(lower: &str) -> bool {
    if !lower.contains("address already in use") {
        return false;
    }
    [
        "server socket has failed",
        "[c10d]",
        "distnetworkerror",
        "tcpstore",
    ]
    .iter()
    .any(|w| lower.contains(w))
        || lower
            .trim_start()
            .starts_with("runtimeerror: address already in use")
}

/// DDP's reducer words for parameters that got no gradient (torch/csrc/distributed/c10d/reducer.cpp).
const DDP_UNUSED_PARAMETERS: &[&str] = &[
    "expected to have finished reduction in the prior iteration",
    "parameters which did not receive grad for rank",
];

/// A process ended by SIGKILL: torch elastic's report of a worker (`failed (exitcode: -9)`,
/// `Signal 9 (SIGKILL) received by PID`) or the shell's bare `Killed`, alone on its line or
/// ending a progress bar.
fn is_sigkilled(lower: &str) -> bool {
    let line = lower.trim();
    line.contains("failed (exitcode: -9)")
        || line.contains("signal 9 (sigkill) received by pid")
        || line == "killed"
        || (line.ends_with("]killed") && line.contains("it/s"))
        // Keras's progress bar, unterminated like tqdm's, with the shell's "Killed" glued to it:
        // keras-team/keras#3476 (fewer workers and a shorter queue cured it).
        || (line.ends_with("killed") && line.contains("] - eta:"))
}

/// torch's CPU allocator out of host memory.
fn is_cpu_allocator_out_of_memory(lower: &str) -> bool {
    // TH's THGeneral.c says "you tried to allocate" from THAlloc and "you tried to reallocate"
    // from THRealloc (Lua Torch growing a tensor: Atcold/torch-Video-Tutorials#2); both are the
    // same host allocator giving up, so the phrase stops before the verb.
    (lower.contains("defaultcpuallocator")
        && (lower.contains("not enough memory") || lower.contains("can't allocate memory")))
        || (lower.contains("not enough memory: you tried to") && lower.contains("buy new ram"))
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

/// JAX's CUDA plugin failing its own check of the CUDA it loads: jaxlib's versions helpers
/// (`jaxlib/cuda/versions_helpers.cc: operation … failed`) or JAX saying no CUDA-enabled jaxlib
/// is installed. A status that names the driver (no device, a driver too old) is left to the
/// codes family. NixOS/nixpkgs#375186 (the jax package without its CUDA libraries),
/// google-deepmind/mujoco_playground#137 (reinstalling jax, jaxlib and the plugins fixed it).
fn is_jax_plugin_check(lower: &str) -> bool {
    const DRIVER_NAMED: &[&str] = &[
        "cuda_error_no_device",
        "cuda_error_insufficient_driver",
        "cuda_error_system_driver_mismatch",
        "cuda_error_system_not_ready",
        "cuda_error_compat_not_supported_on_device",
    ];
    let helper = lower.contains("jaxlib/cuda/versions_helpers") && lower.contains("failed");
    (helper && !DRIVER_NAMED.iter().any(|w| lower.contains(w)))
        || lower.contains("a cuda-enabled jaxlib is not installed")
}

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
    // apt writes "pkg : Depends: …"; pasted logs often lose the space ("pkg: Depends: …").
    let (package, rest) = lower.trim().split_once(": depends:")?;
    if !(rest.contains("not going to be installed")
        || rest.contains("is to be installed")
        || rest.contains("not installed"))
    {
        return None;
    }
    // The package is the word before " : Depends:" (a title may run into it on one line).
    let package = package.split_whitespace().last()?;
    let layer = nvidia_package_layer(package)?;
    let fix = "Do not mix NVIDIA packages of two versions or two repositories (the distribution's and NVIDIA's CUDA repository): `sudo apt --fix-broken install`, purge the half-installed set (`sudo apt purge 'nvidia-*' 'libnvidia-*'` for the driver), keep one repository, then install the pinned version again (`stackpin install MANIFEST` installs it from the archive).";
    Some(package_failure(
        seg,
        layer,
        (
            "drv-apt-unmet-dependencies",
            "The package manager cannot install the NVIDIA driver: its packages' dependencies are unmet (a mix of versions or repositories, or a half-finished earlier install).".to_string(),
        ),
        (
            "tk-apt-unmet-dependencies",
            "The package manager cannot install the CUDA toolkit packages: their dependencies are unmet (a mix of CUDA versions or repositories; the `cuda` meta-package also pulls a driver).".to_string(),
        ),
        fix,
    ))
}

/// apt's "pkg : Depends: dep but it is not installable": no enabled repository provides dep at
/// all (not a version clash, which apt words otherwise). An NVIDIA dependency names its own layer:
/// the repository that carries it (NVIDIA's CUDA repository, the distribution's non-free part) is
/// not enabled, or carries another release. Otherwise an NVIDIA package whose dependency this OS
/// release lacks names the package's layer: it was built for another release.
fn apt_not_installable(seg: &Segment<'_>, lower: &str) -> Option<Finding> {
    let line = lower.trim();
    // A second dependency of the same package is printed on its own line, "Depends: dep …".
    let (package, rest) = match line.split_once(": depends:") {
        Some((package, rest)) => (package.split_whitespace().last(), rest),
        None => (None, line.strip_prefix("depends:")?),
    };
    if !rest.contains("but it is not installable") {
        return None;
    }
    let dep = rest.split_whitespace().next()?;
    let by_dep = cuda_package_layer(dep);
    let layer = by_dep.or_else(|| package.and_then(cuda_package_layer))?;
    let (id, name) = if layer == Driver {
        ("drv-apt-package-not-installable", "NVIDIA driver")
    } else {
        ("tk-apt-package-not-installable", "CUDA toolkit")
    };
    let (cause, fix) = if by_dep.is_some() {
        (
            format!(
                "apt finds no enabled repository that provides {dep}, a package of the {name}: the repository that carries it (NVIDIA's CUDA repository for this OS release, or the distribution's non-free / multiverse part) is not enabled, or carries it under another name or release."
            ),
            format!(
                "Enable the repository that provides {dep} for this OS release (NVIDIA's CUDA repository for `cuda` and `cuda-*`/`libcublas-*` packages, the distribution's non-free or multiverse part for its own `libcudart*` and nvidia-cuda-toolkit packages), run `sudo apt update`, then install again. A package that depends on NVIDIA's `cuda` needs the toolkit from NVIDIA's repository, not the distribution's nvidia-cuda-toolkit; `stackpin install MANIFEST` installs the pinned {name} from the archive."
            ),
        )
    } else {
        (
            format!(
                "{} needs {dep}, which no enabled repository of this OS release provides: the {name} package was built for another release of the distribution.",
                package.unwrap_or("the package")
            ),
            format!(
                "Install the {name} release built for this OS release (NVIDIA's repository for this distribution version, or the distribution's own packages) instead of one made for another release; do not force the package in. `stackpin install MANIFEST` installs the pinned {name} from the archive."
            ),
        )
    };
    Some(at(
        seg,
        id,
        layer,
        None,
        cause,
        fix,
        Mechanism::Plain,
        false,
    ))
}

/// An NVIDIA package's layer by its name, with the distributions' CUDA runtime library
/// packages (Debian's `libcudart8.0`, `libcublas-dev`, `libcufile-11-5`) read as the toolkit's.
fn cuda_package_layer(package: &str) -> Option<crate::diagnose::FailureLayer> {
    const RUNTIME: &[&str] = &[
        "libcudart",
        "libcublas",
        "libcufft",
        "libcurand",
        "libcusolver",
        "libcusparse",
        "libnvrtc",
        "libnvjitlink",
        "libnpp",
        "libnvjpeg",
        "libcufile",
        "libcupti",
        "libnvtoolsext",
        "libnvblas",
    ];
    if RUNTIME.iter().any(|p| package.starts_with(p)) {
        return Some(Toolkit);
    }
    nvidia_package_layer(package)
}

/// The layer an NVIDIA package belongs to, by its name, in apt's and RPM's namings: the
/// driver's packages (`nvidia-*`, `libnvidia-*`, `cuda-drivers`, the X driver, Ubuntu's prebuilt
/// modules, RPM's `akmod-nvidia`, `kmod-nvidia-*`, `dkms-nvidia`, `xorg-x11-drv-nvidia*`) or the
/// toolkit's (`cuda-*`, `cuda`, cuDNN, NCCL, and the distributions' `nvidia-cuda-*` /
/// `nvidia-cudnn` packages of the toolkit); another package names no GPU layer.
pub(super) fn nvidia_package_layer(package: &str) -> Option<crate::diagnose::FailureLayer> {
    // `cuda-drivers` is the driver's meta-package in NVIDIA's CUDA repository.
    if package.starts_with("cuda-drivers") {
        return Some(Driver);
    }
    let toolkit = [
        "cuda-",
        "libcudnn",
        "cudnn",
        "libnccl",
        "nvidia-cuda-",
        "nvidia-cudnn",
    ]
    .iter()
    .any(|p| package.starts_with(p))
        || package == "cuda";
    // Ubuntu's prebuilt kernel modules of the driver: linux-modules-nvidia-470-5.11.0-44-generic.
    let driver = [
        "nvidia-",
        "libnvidia",
        "xserver-xorg-video-nvidia",
        "linux-modules-nvidia",
        "linux-objects-nvidia",
        "akmod-nvidia",
        "kmod-nvidia",
        "dkms-nvidia",
        "xorg-x11-drv-nvidia",
    ]
    .iter()
    .any(|p| package.starts_with(p));
    if toolkit {
        Some(Toolkit)
    } else if driver {
        Some(Driver)
    } else {
        None
    }
}

/// A package manager's failure on an NVIDIA package, in its layer's words: the driver's alone,
/// or the toolkit's with the driver second (NVIDIA's `cuda` meta-package also pulls a driver).
/// `layer` is [`nvidia_package_layer`]'s answer: the driver's or the toolkit's.
pub(super) fn package_failure(
    seg: &Segment<'_>,
    layer: crate::diagnose::FailureLayer,
    driver: (&'static str, String),
    toolkit: (&'static str, String),
    fix: &'static str,
) -> Finding {
    let ((id, cause), second) = if layer == Driver {
        (driver, None)
    } else {
        (toolkit, Some(Driver))
    };
    at(seg, id, layer, second, cause, fix, Mechanism::Plain, false)
}

/// The package a dpkg failure line names, lowercased: "dpkg: error processing package P (…)",
/// "dpkg: error processing archive /path/NN-P_version_arch.deb (…)", "Errors were encountered
/// while processing: P", apt's "installed P package post-installation script … returned error
/// exit status N", or (`listed`) a line of the list after "Errors were encountered while
/// processing:" (a package name or a .deb path alone on its line).
fn dpkg_package(lower: &str, listed: bool) -> Option<String> {
    let trimmed = lower.trim();
    let named = if let Some(at) = trimmed.find("error processing package ") {
        trimmed[at + "error processing package ".len()..]
            .split_whitespace()
            .next()
    } else if let Some(at) = trimmed.find("error processing archive ") {
        trimmed[at + "error processing archive ".len()..]
            .split_whitespace()
            .next()
    } else if let Some(at) = trimmed.find("errors were encountered while processing:") {
        trimmed[at + "errors were encountered while processing:".len()..]
            .split_whitespace()
            .next()
    } else if let Some(at) = trimmed.find(" package post-installation script") {
        trimmed[..at].split_whitespace().last()
    } else if listed && !trimmed.contains(' ') {
        Some(trimmed)
    } else {
        None
    }?;
    // A .deb path: its file name is `NN-package_version_arch.deb` (apt's numbered temporary
    // copy) or `package_version_arch.deb`.
    let file = named.rsplit('/').next()?;
    let package = if file.ends_with(".deb") {
        let stem = file.split('_').next()?;
        stem.split_once('-')
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            .map_or(stem, |(_, rest)| rest)
    } else {
        file
    };
    (!package.is_empty()).then(|| package.to_string())
}

/// dpkg failing on an NVIDIA package while apt installs it: the package's install script (its
/// DKMS build, update-initramfs, a helper it runs) or its unpacking failed, and the layer is the
/// package's. A DKMS build failure the log shows is read by its own rule (decisive); another
/// package's failure (a Wi-Fi module's DKMS build) names no GPU layer.
fn dpkg_failed(seg: &Segment<'_>, listed: bool) -> Option<Finding> {
    let package = dpkg_package(&seg.lower, listed)?;
    let layer = nvidia_package_layer(&package)?;
    let fix = "Read the lines just above dpkg's error for the step that failed (a DKMS build names its make.log, a tool such as update-initramfs is `not found`, a helper script prints a traceback) and repair that, then finish the install: `sudo dpkg --configure -a` and `sudo apt --fix-broken install`. If packages of two versions or repositories are mixed, purge the half-installed set (`sudo apt purge 'nvidia-*' 'libnvidia-*'` for the driver) and install the pinned version again (`stackpin install MANIFEST` installs it from the archive).";
    Some(package_failure(
        seg,
        layer,
        (
            "drv-dpkg-package-failed",
            format!(
                "dpkg could not install or configure the NVIDIA driver package {package}: its install script (the kernel module's DKMS build, update-initramfs, a helper it runs) or its unpacking failed, so the driver is half installed."
            ),
        ),
        (
            "tk-dpkg-package-failed",
            format!(
                "dpkg could not install or configure the CUDA toolkit package {package}: its install script or its unpacking failed (a mix of CUDA versions or repositories; the `cuda` meta-package also pulls a driver)."
            ),
        ),
        fix,
    ))
}

/// NCCL's own allocation on the GPU failing, on a line that names NCCL.
fn is_nccl_out_of_memory(lower: &str) -> bool {
    lower.contains("nccl") && lower.contains("cuda failure") && lower.contains("out of memory")
}

/// NCCL's invalid-usage result, on a line that names NCCL.
fn is_nccl_invalid_usage(lower: &str) -> bool {
    lower.contains("nccl")
        && (lower.contains("invalid usage") || lower.contains("ncclinvalidusage"))
}

/// NCCL's internal-error result, on a line that names NCCL.
fn is_nccl_internal_error(lower: &str) -> bool {
    lower.contains("nccl")
        && (lower.contains("internal error") || lower.contains("ncclinternalerror"))
}

/// TensorRT's own error about one layer of the network it is building: `(Unnamed Layer* N)
/// [Type]: …` on an error line (NVIDIA/TensorRT#229, onnx/onnx-tensorrt#264,
/// NVIDIA-AI-IOT/torch2trt#406, microsoft/onnxruntime#1837), or its shape-tensor check
/// (NVIDIA/TensorRT#2088, #2755). Its warnings about layers are no cause.
fn is_trt_layer_error(lower: &str) -> bool {
    let erroring = lower.contains("error") || lower.contains("[e]");
    // A CUDA error while TensorRT times a layer's tactics ("Get cuda error during
    // getBestTactic") is that CUDA call's (NVIDIA/TensorRT#840: out of memory), not the layer's.
    erroring
        && !lower.contains("cuda error")
        && ((lower.contains("(unnamed layer*") && lower.contains(") ["))
            || lower.contains("ishufflelayer applied to shape tensor"))
}

/// vLLM's own checks of its memory budget: no room for the cache blocks, a negative KV cache
/// after profiling, the longest sequence not fitting, the sampler's warm-up out of memory.
const VLLM_KV_BUDGET: &[&str] = &[
    "no available memory for the cache blocks",
    "memory reserved for kv cache is -",
    "than the maximum number of tokens that can be stored in kv cache",
    "which is larger than the available kv cache memory",
    "out of memory occurred when warming up sampler",
];

/// `ld: cannot find -lcuda`: the driver's library, not -lcudart or -lcublas.
fn is_lcuda_link(lower: &str) -> bool {
    lower.match_indices("cannot find -lcuda").any(|(at, w)| {
        !lower[at + w.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// ONNX Runtime's provider library (`onnxruntime_providers_cuda` / `_tensorrt`) failing to load
/// with no dependency named on the line (the loader family reads a named `lib…so`).
fn is_ort_provider_load(lower: &str) -> bool {
    (lower.contains("onnxruntime_providers_cuda")
        || lower.contains("onnxruntime_providers_tensorrt"))
        && (lower.contains("loadlibrary failed") || lower.contains("failed to load library"))
        && !lower.contains("cannot open shared object file")
}

/// ONNX Runtime's TensorRT provider library failing to load: TensorRT's own libraries under it.
fn is_ort_tensorrt_provider_load(lower: &str) -> bool {
    is_ort_provider_load(lower) && lower.contains("onnxruntime_providers_tensorrt")
}

/// cuDNN 8's zlibwapi.dll missing on Windows.
fn is_zlibwapi_missing(lower: &str) -> bool {
    lower.contains("zlibwapi.dll")
        && (lower.contains("could not locate") || lower.contains("could not load"))
}

/// jax's import-time check of jaxlib, in either wording.
fn is_jaxlib_pair(lower: &str) -> bool {
    JAXLIB_PAIR.iter().all(|w| lower.contains(w))
        || lower.contains("is newer than and incompatible with jax version")
}

/// A failed make in the driver's DKMS build folder.
fn is_dkms_make_failed(lower: &str) -> bool {
    lower.contains("/var/lib/dkms/nvidia")
        && (lower.contains("*** [") || lower.contains("error") || lower.contains("consult "))
}

/// An NVIDIA CDI device the container engine cannot resolve.
fn is_nvidia_cdi_unresolvable(lower: &str) -> bool {
    lower.contains("unresolvable cdi devices") && lower.contains("nvidia.com/")
}

/// One ggml CUDA op failing (llama.cpp's backend).
fn is_ggml_op_failed(lower: &str) -> bool {
    lower.contains("ggml_cuda_compute_forward:") && lower.contains(" failed")
}

// The variants of each rule are tests/fixtures/diagnose/variants/runtimes.yaml, checked by
// families::variants.
