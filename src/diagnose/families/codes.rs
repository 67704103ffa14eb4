//! Two tables: the CUDA runtime's error codes (by number, by `cudaError…` / `CUDA_ERROR_…`
//! name, or by the sentence `cudaGetErrorString` prints), and the driver's Xid numbers from
//! `NVRM: Xid` kernel log lines.
//!
//! Numbers and names come from the CUDA runtime API's `cudaError` enum and NVIDIA's "Xid
//! Errors" table (docs.nvidia.com/deploy/xid-errors). An error code alone is read only on a line
//! that also says CUDA, so a Windows `Error code 126` or an HTTP 404 is not taken for one.
//! "unknown error" (30 / 999) is a driver fault only at initialisation (the classic state after
//! suspend/resume); mid-run it names nothing and stays unknown.

use super::{Finding, Mechanism, at, number_after};
use crate::diagnose::FailureLayer::{self, Driver, Hardware, Library, Memory, Toolkit};
use crate::diagnose::matcher::Segment;

/// One row of a code table.
struct Code {
    id: &'static str,
    numbers: &'static [u32],
    /// Lowercase names and sentences that identify it without a number.
    words: &'static [&'static str],
    layer: FailureLayer,
    second: Option<FailureLayer>,
    cause: &'static str,
    fix: &'static str,
    mechanism: Mechanism,
}

impl Code {
    /// The row's finding on the line that names it; a code alone is never decisive.
    fn finding(&self, seg: &Segment<'_>) -> Finding {
        at(
            seg,
            self.id,
            self.layer,
            self.second,
            self.cause,
            self.fix,
            self.mechanism,
            false,
        )
    }
}

const DRIVER_REINSTALL: &str = "Check `nvidia-smi`; reinstall the pinned driver from the archive \
(`stackpin repair MANIFEST`), reboot, and prove again.";

const HW_FIX: &str = "Reboot (or `nvidia-smi -r`), read `dmesg` for NVRM Xid lines and \
`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`; check power, cooling and seating. If it \
returns on the same card, have the card replaced: no reinstall fixes hardware.";

const CUDA_CODES: &[Code] = &[
    Code {
        id: "mem-code-allocation",
        numbers: &[2],
        words: &["cudaerrormemoryallocation"],
        layer: Memory,
        second: None,
        cause: "cudaErrorMemoryAllocation (2): the GPU ran out of memory.",
        fix: "Halve the batch and run again with the card otherwise idle (`nvidia-smi` lists other programs); `stackpin vram --peak PEAK --batch N --vram SIZE` names the largest batch that fits.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-init",
        numbers: &[3],
        words: &["cudaerrorinitializationerror", "cuda_error_not_initialized"],
        layer: Driver,
        second: None,
        cause: "CUDA could not initialise the driver (cudaErrorInitializationError, 3).",
        fix: DRIVER_REINSTALL,
        mechanism: Mechanism::DriverAccess,
    },
    Code {
        id: "drv-code-stub-library",
        numbers: &[34],
        words: &[
            "cudaerrorstublibrary",
            "cuda_error_stub_library",
            "cuda driver is a stub library",
        ],
        layer: Driver,
        second: None,
        cause: "The toolkit's stub libcuda was loaded instead of the driver's (cudaErrorStubLibrary, 34): no driver is installed, or the stubs folder is on the loader path.",
        fix: "Take the toolkit's lib64/stubs folder off LD_LIBRARY_PATH; if `nvidia-smi` fails too, install the pinned driver (`stackpin install MANIFEST`).",
        mechanism: Mechanism::DriverAccess,
    },
    Code {
        id: "drv-code-insufficient-driver",
        numbers: &[35, 36],
        words: &[
            "cudaerrorinsufficientdriver",
            "driver version is insufficient for cuda runtime version",
            "cudaerrorcallrequiresnewerdriver",
            "cuda_error_system_driver_mismatch",
        ],
        layer: Driver,
        second: None,
        cause: "The driver is older than the CUDA runtime the program was built with (cudaErrorInsufficientDriver, 35).",
        fix: "Install a driver at least as new as the runtime's minimum (the manifest pins one; `stackpin check MANIFEST` enforces the one-way rule), reboot, and prove again.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-devices-unavailable",
        numbers: &[46],
        words: &["cudaerrordevicesunavailable", "busy or unavailable"],
        layer: Driver,
        second: Some(Hardware),
        cause: "CUDA finds the GPU busy or unavailable (cudaErrorDevicesUnavailable, 46): the card is in exclusive-process mode with another process on it, or the driver stack cannot hand it out (under WSL, a Windows driver or build that does not support it).",
        fix: "Check `nvidia-smi -q -d COMPUTE` (set Default mode with `nvidia-smi -c 0`) and the processes on the card; under WSL update the Windows NVIDIA driver and Windows/WSL. If dmesg shows NVRM errors for the card, treat it as hardware.",
        mechanism: Mechanism::DriverAccess,
    },
    Code {
        // pytorch/pytorch#38223, #25019, ggml-org/llama.cpp#21883 (round 20); variants:
        // tensorflow/tensorflow#42039, #49730, NVIDIA/nccl#241, NVIDIA/nccl-tests#324,
        // torch/cutorch#774 (the legacy "cuda runtime error (60)").
        id: "lib-code-too-many-peers",
        numbers: &[711],
        words: &[
            "cudaerrortoomanypeers",
            "cuda_error_too_many_peers",
            "cuda_too_many_peers",
            "peer mapping resources exhausted",
        ],
        layer: Library,
        second: Some(Driver),
        cause: "CUDA ran out of peer mappings (cudaErrorTooManyPeers, 711): each GPU can hold at most 8 peer-to-peer connections, and the program (or its framework) enabled peer access between more GPUs than that — every pair of more than 8 visible GPUs, with two-GPU boards counted twice.",
        fix: "Give each process at most 8 GPUs (CUDA_VISIBLE_DEVICES, fewer device ids, or one process per group of GPUs), or use a library build that enables peer access in groups or not at all (llama.cpp: the build before the regression, or one that fixes it). NCCL_P2P_DISABLE=1 changes only NCCL's own transport, not the framework's peer access.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // wdrink/PyDeepFakeDet#1, LuyaooChen/uninformed-students-pytorch#3 (`cuda:1` on a
        // one-GPU machine), wenwenyu/PICK-pytorch#14 (more processes than visible GPUs).
        id: "lib-code-invalid-device",
        numbers: &[101],
        words: &[
            "cudaerrorinvaliddevice",
            "cuda_error_invalid_device",
            "invalid device ordinal",
        ],
        layer: Library,
        second: Some(Driver),
        cause: "The program asks for a GPU index that is not there (invalid device ordinal, 101): a hard-coded `cuda:N`, more processes per node than visible GPUs, or CUDA_VISIBLE_DEVICES hiding cards; or the driver sees fewer GPUs than expected.",
        fix: "First tell the program from the machine: count the GPUs CUDA sees (`nvidia-smi -L`, and CUDA_VISIBLE_DEVICES). If the program asks past that count, make it use indices below it (`cuda:0` on one GPU; --nproc_per_node no larger than the visible GPUs). If `nvidia-smi` lists fewer cards than the machine has, see the driver.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "lib-code-no-kernel-image",
        numbers: &[98, 209],
        words: &[
            "cudaerrorinvaliddevicefunction",
            "cudaerrornokernelimagefordevice",
            "cuda_error_no_binary_for_gpu",
        ],
        layer: Library,
        second: None,
        cause: "The library's binaries carry no code for this GPU's architecture (no kernel image / invalid device function).",
        fix: "Install a build of the training library that lists this GPU's compute capability (a newer +cuXYZ wheel), or build it with TORCH_CUDA_ARCH_LIST set to the card's capability.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-no-device",
        numbers: &[100],
        words: &["cudaerrornodevice", "cuda_error_no_device"],
        layer: Driver,
        second: None,
        cause: "CUDA finds no GPU (cudaErrorNoDevice, 100): the driver does not see the card, or CUDA_VISIBLE_DEVICES hides it.",
        fix: "Run `nvidia-smi`: if it lists the GPU, unset or fix CUDA_VISIBLE_DEVICES; if not, reinstall the pinned driver (`stackpin repair MANIFEST`) and reboot.",
        mechanism: Mechanism::DriverAccess,
    },
    Code {
        id: "hw-code-ecc",
        numbers: &[214],
        words: &[
            "cudaerroreccuncorrectable",
            "uncorrectable ecc error encountered",
            "cuda_error_ecc_uncorrectable",
        ],
        layer: Hardware,
        second: None,
        cause: "The GPU's memory reported an uncorrectable ECC error (214).",
        fix: HW_FIX,
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "hw-code-nvlink",
        numbers: &[220],
        words: &[
            "cudaerrornvlinkuncorrectable",
            "uncorrectable nvlink error",
            "cuda_error_nvlink_uncorrectable",
        ],
        layer: Hardware,
        second: None,
        cause: "An uncorrectable NVLink error (220): the link between GPUs (bridge, board or GPU) faulted.",
        fix: "Read `nvidia-smi nvlink -s` and `nvidia-smi nvlink -e` for the failing link and dmesg for Xid 74; reseat or replace the NVLink bridge or board. Meanwhile run on one GPU (CUDA_VISIBLE_DEVICES=0) or with NCCL_P2P_DISABLE=1.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-ptx-toolchain",
        numbers: &[222],
        words: &[
            "cudaerrorunsupportedptxversion",
            "cuda_error_unsupported_ptx_version",
            // The CUDA error string; users retype it ("complied"), so the stable words only.
            "unsupported toolchain",
        ],
        layer: Driver,
        second: None,
        cause: "The program carries PTX from a newer CUDA than the driver can compile (222): the driver is too old.",
        fix: "Install a driver at least as new as the toolkit that built the program (the manifest's pin), reboot, and prove again.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "lib-code-illegal-address",
        numbers: &[700],
        words: &["cudaerrorillegaladdress", "cuda_error_illegal_address"],
        layer: Library,
        second: Some(Hardware),
        cause: "A GPU kernel accessed memory outside its allocation (illegal address, 700): usually a bug in a kernel of the library or of the model code.",
        fix: "First tell a kernel from the card: run once with CUDA_LAUNCH_BLOCKING=1 (or under `compute-sanitizer`) to find the kernel; the same kernel every time: try the library's newest patch release. If it strikes random kernels across library releases, run on another card and check `nvidia-smi -q -d ECC` and dmesg for Xid 31/48 (hardware).",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-launch-timeout",
        numbers: &[702],
        words: &[
            "cudaerrorlaunchtimeout",
            "the launch timed out and was terminated",
            "cuda_error_launch_timeout",
        ],
        layer: Driver,
        second: None,
        cause: "The display driver's watchdog (Windows TDR, or X's) killed a kernel that ran too long on a GPU that also drives a display.",
        fix: "Run training on a GPU without a display attached, or raise the watchdog: on Windows set TdrDelay (HKLM\\System\\CurrentControlSet\\Control\\GraphicsDrivers, e.g. 60) and reboot, or switch the card to TCC mode (`nvidia-smi -dm 1`); smaller batches shorten each kernel.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "hw-code-launch-failure",
        numbers: &[719],
        words: &[
            "cudaerrorlaunchfailure",
            "unspecified launch failure",
            "cuda_error_launch_failed",
        ],
        layer: Hardware,
        second: Some(Library),
        cause: "A GPU kernel died without a reason (unspecified launch failure, 719): a faulty or overheating card when it strikes at random points, a kernel bug when it repeats at the same one.",
        fix: "Check dmesg for NVRM Xid lines (13/31: a kernel; 48/79/94: the card) and `nvidia-smi -q -d TEMPERATURE,PERFORMANCE` for heat and throttling; run again with CUDA_LAUNCH_BLOCKING=1. If it repeats at random points, test the card with another one (or gpu-burn) and replace it; if it is always the same kernel, update the library.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // The driver API's name and the runtime's for one failure: the module's binary does not
        // load (arrayfire/arrayfire#2527, StanfordLegion/legion#660: the library's generated
        // code; cupy/cupy#8045: a release without the card's architecture).
        id: "lib-code-invalid-image",
        numbers: &[200],
        words: &[
            "cuda_error_invalid_image",
            "cudaerrorinvalidkernelimage",
            "device kernel image is invalid",
        ],
        layer: Library,
        second: Some(Driver),
        cause: "The GPU code of a module will not load (invalid kernel image, 200): the library (or its JIT) produced or shipped code this GPU and driver cannot run.",
        fix: "Install the library release that supports this GPU's compute capability (its release notes list them); if it generates kernels at run time, update it (or shorten what it JIT-compiles). If every CUDA program fails this way, update the driver.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // nicehash/excavator#54 and NVIDIA-AI-IOT/Lidar_AI_Solution#35 (a driver older than the
        // toolkit that wrote the PTX); huggingface/candle#3210 (PTX built for another target).
        id: "drv-code-invalid-ptx",
        numbers: &[218],
        words: &[
            "cuda_error_invalid_ptx",
            "cudaerrorinvalidptx",
            "ptx jit compilation failed",
        ],
        layer: Driver,
        second: Some(Library),
        cause: "The driver could not JIT-compile the program's PTX (218): most often the driver is older than the CUDA that wrote the PTX, otherwise the PTX was built for another target.",
        fix: "Install a driver at least as new as the toolkit that built the program (the manifest's pin; `stackpin check MANIFEST` enforces the pair), reboot, and run again; if the driver is current, rebuild the program for this GPU's compute capability.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-jit-compiler-missing",
        numbers: &[221],
        words: &[
            "cuda_error_jit_compiler_not_found",
            "cudaerrorjitcompilernotfound",
            "ptx jit compiler library not found",
        ],
        layer: Driver,
        second: None,
        cause: "The driver's PTX JIT compiler library (libnvidia-ptxjitcompiler) is missing (221): a partial driver install, or a container that was not given it.",
        fix: "Reinstall the pinned driver completely (`stackpin repair MANIFEST`); in a container, start it with the NVIDIA runtime and the compute capability (`--gpus all`, NVIDIA_DRIVER_CAPABILITIES=compute,utility).",
        mechanism: Mechanism::DriverAccess,
    },
    Code {
        // Kernel faults that name no layer by themselves, like an illegal address: pytorch/
        // pytorch#32893 and valeoai/WaffleIron#4 (misaligned address: fixed by another torch
        // build), NVIDIA/apex#124 (legacy `cuda runtime error (74)`).
        id: "lib-code-kernel-fault",
        numbers: &[714, 715, 716, 718],
        words: &[
            "cudaerrormisalignedaddress",
            "cuda_error_misaligned_address",
            "misaligned address",
            "cudaerrorillegalinstruction",
            "cuda_error_illegal_instruction",
            "an illegal instruction was encountered",
            "cudaerrorhardwarestackerror",
            "cuda_error_hardware_stack_error",
            "cudaerrorinvalidpc",
            "cuda_error_invalid_pc",
        ],
        layer: Library,
        second: Some(Hardware),
        cause: "A GPU kernel faulted (misaligned address, illegal instruction, stack error): usually a bug in a kernel of the library, an extension or the model code, or a library build that does not fit; rarely the card.",
        fix: "Run once with CUDA_LAUNCH_BLOCKING=1 to find the kernel; install the library build made for this GPU and CUDA (its newest patch release) and rebuild custom extensions against it. If it strikes random kernels, check dmesg for NVRM Xid lines and test the card.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // A kernel launched with more threads, registers or shared memory per block than the GPU
        // has (701): the kernel's launch settings against the card, fixed in the code that
        // launches it: laugh12321/TensorRT-YOLO#11 (32x32 blocks to 16x16), sxyu/svox2#6
        // (launch_bounds), fzi-forschungszentrum-informatik/gpu-voxels#112 (Jetson's build
        // setting), cuDisc/cuDisc#10 (fewer threads).
        id: "lib-code-launch-out-of-resources",
        numbers: &[701],
        words: &[
            "cudaerrorlaunchoutofresources",
            "cuda_error_launch_out_of_resources",
            "error_launch_out_of_resources",
            "too many resources requested for launch",
        ],
        layer: Library,
        second: Some(Hardware),
        cause: "A GPU kernel was launched with more threads, registers or shared memory per block than this GPU provides (too many resources requested for launch, 701): the kernel's launch settings (block size, launch bounds, a build option) do not fit the card, most often a smaller or older one (Jetson, a laptop GPU) than the code was tuned on.",
        fix: "Lower the kernel's block size or threads per block in the code that launches it (e.g. 32x32 to 16x16 threads, a CUDA_NUM_THREADS or build option, `__launch_bounds__`), or install the library release or build made for this GPU (its compute capability); run with CUDA_LAUNCH_BLOCKING=1 to find the kernel.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // A launch whose grid or block dimensions are invalid (9): an empty or oversized input,
        // or a bug in the library's or an extension's launch code: pytorch/pytorch#48573 (a
        // torch reduction, fixed in torch), Dao-AILab/causal-conv1d#48,
        // open-mmlab/mmdetection#1830 (the legacy `cuda runtime error (9)` of an mmdet op).
        id: "lib-code-invalid-launch-configuration",
        numbers: &[9],
        words: &[
            "cudaerrorinvalidconfiguration",
            "cuda_error_invalid_configuration",
            "invalid configuration argument",
        ],
        layer: Library,
        second: None,
        cause: "A GPU kernel was launched with an invalid grid or block shape (invalid configuration argument, 9): the library's or an extension's launch code got an input it does not handle (an empty tensor, a dimension past the grid's limit), or has a bug; the driver and the card are fine.",
        fix: "Run once with CUDA_LAUNCH_BLOCKING=1 to find the op, check its input for empty or very large dimensions (an empty batch, a huge sequence), and install the newest release of the library or extension that launches it (rebuilt against the installed torch and CUDA).",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-system-not-ready",
        numbers: &[802],
        words: &["cudaerrorsystemnotready", "system not yet initialized"],
        layer: Driver,
        second: None,
        cause: "CUDA reports the system not ready (802): on NVSwitch machines the fabric manager is not running.",
        fix: "Install and start nvidia-fabricmanager of exactly the driver's version (`systemctl enable --now nvidia-fabricmanager`), then retry.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "drv-code-unsupported-combination",
        numbers: &[803, 804],
        words: &[
            "cudaerrorsystemdrivermismatch",
            "unsupported display driver / cuda driver combination",
            "forward compatibility was attempted on non supported hw",
            "cudaerrorcompatnotsupportedondevice",
            "cuda_error_compat_not_supported_on_device",
        ],
        layer: Driver,
        second: None,
        cause: "The CUDA user-mode driver does not match the kernel driver (803/804): a mixed or half-upgraded driver, or a forward-compatibility package on a GPU that does not support it.",
        fix: "Remove other driver copies (cuda-compat packages, a toolkit's bundled driver), reinstall the pinned driver (`stackpin repair MANIFEST`), and reboot.",
        mechanism: Mechanism::DriverAccess,
    },
];

/// cuDNN's status codes, as `CUDNN_STATUS_…` names: the cuDNN that loads does not fit the CUDA
/// or the library build (or, for a few, the card ran out of memory).
const CUDNN_STATUS: &[Code] = &[
    Code {
        // TensorFlow's "could not create cudnn handle" (any status): the threads resolve it as GPU
        // memory (TensorFlow reserves nearly all of it; another process holds the rest) far more
        // often than as a cuDNN that does not fit, and otherwise as the driver's state (a stale
        // compute cache in ~/.nv, a driver too old): never a confident toolkit verdict.
        id: "mem-cudnn-handle-create",
        numbers: &[],
        // "could not destroy cudnn handle" follows a failed creation: the same event. TensorFlow's
        // "Failed to get convolution algorithm. This is probably because cuDNN failed to
        // initialize" is the op's report of that failure (matterport/Mask_RCNN#1620,
        // tensorflow/tensorflow#36025, #25160: allow_growth / TF_FORCE_GPU_ALLOW_GROWTH cured it).
        words: &[
            "create cudnn handle",
            "destroy cudnn handle",
            "cudnncreate",
            "cudnn failed to initialize",
        ],
        layer: Memory,
        second: Some(Driver),
        cause: "cuDNN could not create its handle: most often the GPU has no memory left for it (TensorFlow reserves nearly all of it by default, or another process holds it), otherwise the driver's state (a stale CUDA compute cache, a driver too old for the cuDNN) or a cuDNN that does not fit the library.",
        fix: "Let the library grow its GPU memory instead of reserving it (TF_FORCE_GPU_ALLOW_GROWTH=true, or allow_growth in the session config) and stop other GPU programs (`nvidia-smi` lists them). If it fails with the card idle: delete the driver's compute cache (`rm -rf ~/.nv`), check the lines above for a driver or cuDNN version message, and install the driver and cuDNN the library's release notes name.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // A bare CUDNN_STATUS_NOT_INITIALIZED (PyTorch's "cuDNN error: …", cuDNN users' "CUDNN
        // failure: …") with no handle or version line: cuDNN's handle and workspace are the first
        // GPU allocations a convolution makes, so the threads resolve it as the card's memory
        // (haotian-liu/LLaVA#392, seanie12/Info-HCVAE#7, flexflow/flexflow-train#51), otherwise as
        // the library build that does not run on the card (Turoad/CLRNet#24: a +cu111 torch;
        // deepseek-ai/DeepSeek-VL#30), not as a cuDNN the user installed.
        id: "mem-cudnn-not-initialized",
        numbers: &[],
        words: &["cudnn_status_not_initialized"],
        layer: Memory,
        second: Some(Library),
        cause: "cuDNN could not initialise inside the library (CUDNN_STATUS_NOT_INITIALIZED with no version message): most often the card had no memory left for cuDNN's handle and workspace (the first allocations a convolution makes), otherwise the library build's cuDNN does not run on this GPU (a wheel for an older CUDA on a newer card, or another cuDNN copy loaded first).",
        fix: "Free the GPU (stop other GPU programs; `nvidia-smi` lists them) and halve the batch; `stackpin vram --peak PEAK --batch N --vram SIZE` names one that fits. If it fails at batch 1 with the card idle, install the library build for this GPU and CUDA in a fresh venv (a +cuXYZ wheel that lists the card's compute capability) and take other cuDNN copies off LD_LIBRARY_PATH / PATH.",
        mechanism: Mechanism::Plain,
    },
    Code {
        // A cuDNN kernel that launched and failed on the card: the threads resolve it as the
        // library build older than the GPU (an RTX 20/30 under a torch built for CUDA 9/10:
        // yanx27/Pointnet_Pointnet2_pytorch#229, zzhang1987/Factor-Graph-Neural-Network#4,
        // uci-cbcl/UFold#20), the toolkit where the library uses the system's CUDA
        // (traveller59/second.pytorch#43), or the model's own arguments; not a cuDNN version
        // mismatch first, as the other statuses are.
        id: "lib-cudnn-execution-failed",
        numbers: &[],
        words: &["cudnn_status_execution_failed"],
        layer: Library,
        second: Some(Toolkit),
        cause: "A cuDNN kernel launched and failed on the GPU (CUDNN_STATUS_EXECUTION_FAILED): most often the library build is older than the card (a torch or TensorFlow built for a CUDA before the GPU's architecture, e.g. an RTX 30 under CUDA 9/10), otherwise the system CUDA and cuDNN the library uses, or the model's own convolution arguments.",
        fix: "Install the library build for a CUDA that supports this GPU (torch's +cu11x/+cu12x wheel brings its own cuDNN; `torch.cuda.get_arch_list()` must list the card's sm_XY), or the CUDA and cuDNN the library release names where it uses the system's. If the versions fit, rerun with CUDA_LAUNCH_BLOCKING=1 to find the op and check its arguments (shapes, groups, dtypes); `torch.backends.cudnn.enabled = False` tells cuDNN apart from the rest.",
        mechanism: Mechanism::Plain,
    },
    Code {
        id: "tk-cudnn-status-mismatch",
        numbers: &[],
        words: &[
            "cudnn_status_bad_param",
            "cudnn_status_arch_mismatch",
            "cudnn_status_internal_error",
            "cudnn_status_mapping_error",
            "cudnn_status_runtime_prerequisite_missing",
            "cudnn_status_version_mismatch",
        ],
        layer: Toolkit,
        second: Some(Library),
        cause: "cuDNN failed inside the library: the cuDNN that loads does not fit the CUDA toolkit or the library build (another major, or a release without this GPU's architecture); internal errors are also what cuDNN says when the card is out of memory.",
        fix: "Install the cuDNN and CUDA versions the library release was built with (its release notes; pip libraries bring their own nvidia-cudnn wheel: remove other cuDNN copies from LD_LIBRARY_PATH / PATH). If it only happens at large batches, halve the batch; `stackpin vram --peak PEAK --batch N --vram SIZE` names one that fits.",
        mechanism: Mechanism::Plain,
    },
];

/// CUDNN_STATUS_BAD_PARAM from cuDNN's recurrent kernels: the threads resolve it as the call the
/// library made for that input, not as a cuDNN that does not fit: Keras' cuDNN LSTM/GRU with a
/// mask that is not strictly right-padded (tensorflow/tensorflow#33069, #33148), chainer's
/// NStepLSTM under cuDNN (himkt/pyner#38: cuDNN off cured it), darknet's RNN layer (AlexeyAB/
/// darknet#3766, fixed in darknet). The same status without a recurrent layer stays the
/// version-mismatch row's (twhui/LiteFlowNet3#6: CUDA and cuDNN versions).
const CUDNN_RNN_BAD_PARAM: Code = Code {
    id: "lib-cudnn-rnn-bad-param",
    numbers: &[],
    words: &[],
    layer: Library,
    second: Some(Toolkit),
    cause: "cuDNN's recurrent kernels (LSTM, GRU, RNN) refused the arguments the library passed for this input (CUDNN_STATUS_BAD_PARAM): a mask or padding that is not strictly right-padded (Keras' cuDNN LSTM/GRU), sequence lengths or sizes outside what cuDNN's RNN accepts, or the library's own bug in setting up the RNN; rarely a cuDNN that does not fit the library.",
    fix: "Make the input fit cuDNN's RNN path: in Keras pad at the end (padding='post') so masks are strictly right-padded, drop zero-length sequences, or use a layer setting that takes the generic kernel; to confirm, run the RNN without cuDNN (`torch.backends.cudnn.enabled = False`, chainer's use_cudnn='never'), and update the library (darknet fixed its RNN layer). If every cuDNN call fails this way, install the cuDNN and CUDA the library release names.",
    mechanism: Mechanism::Plain,
};

/// Words that place a log at a recurrent layer.
const RECURRENT: &[&str] = &["rnn", "lstm", "gru"];

/// "unknown error" (30 before CUDA 10.1, 999 after), read as a driver fault only at start-up.
const UNKNOWN_AT_INIT: Code = Code {
    id: "drv-code-unknown-at-init",
    numbers: &[30, 999],
    words: &[
        "cudaerrorunknown",
        "cuda unknown error",
        "cuda_error_unknown",
        "unknown error",
    ],
    layer: Driver,
    second: Some(Hardware),
    cause: "CUDA fails to initialise with an unknown error: the driver's state is broken, most often after suspend/resume (nvidia_uvm), or the driver is half loaded.",
    fix: "Reload the driver's modules: stop GPU programs, `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm` (or reboot); after suspend/resume this is the known cure. If it stays, reinstall the pinned driver (`stackpin repair MANIFEST`); if dmesg shows Xid errors, see the hardware.",
    mechanism: Mechanism::DriverAccess,
};

/// Words that place a line at CUDA's start-up.
const AT_INIT: &[&str] = &[
    "initialization",
    "initialize",
    "cuinit",
    "getdevicecount",
    "is_available",
    "cudasetdevice",
    "device_count",
    // THC's and torch's start-up: `THCGeneral.c(pp)` holds THCudaInit; `_cuda_init` and
    // `_lazy_init` are torch's first CUDA call.
    "thcgeneral",
    "_cuda_init",
    "lazy_init",
];

/// One Xid row: the numbers, their layer, and why.
struct Xid {
    numbers: &'static [u32],
    id: &'static str,
    layer: FailureLayer,
    second: Option<FailureLayer>,
    cause: &'static str,
}

const XIDS: &[Xid] = &[
    Xid {
        numbers: &[13, 31, 43],
        id: "lib-xid-application-fault",
        layer: Library,
        second: Some(Hardware),
        cause: "an application's kernel faulted (graphics exception, memory page fault, or a stopped channel): a bug in the library or the model code, rarely the card",
    },
    Xid {
        numbers: &[32],
        id: "hw-xid-push-buffer",
        layer: Hardware,
        second: Some(FailureLayer::Driver),
        cause: "the GPU received a corrupted push-buffer stream (bus error, memory corruption, heat, or a driver fault)",
    },
    Xid {
        numbers: &[48, 63, 64, 92, 94, 95],
        id: "hw-xid-memory-ecc",
        layer: Hardware,
        second: None,
        cause: "the GPU's memory reported ECC errors or a page-retirement / row-remapping event",
    },
    Xid {
        numbers: &[61, 62],
        id: "hw-xid-microcontroller",
        layer: Hardware,
        second: Some(FailureLayer::Driver),
        cause: "the GPU's internal micro-controller halted",
    },
    Xid {
        numbers: &[74],
        id: "hw-xid-nvlink",
        layer: Hardware,
        second: None,
        cause: "an NVLink error: the link between GPUs faulted",
    },
    Xid {
        numbers: &[79, 154],
        id: "hw-xid-off-the-bus",
        layer: Hardware,
        second: None,
        cause: "the GPU fell off the PCIe bus (power, heat, riser or card)",
    },
    Xid {
        // The GSP firmware ships with the driver; its RPC timeouts were driver bugs (fixed in
        // 525.105.17, per NVIDIA's release notes) far more often than cards.
        numbers: &[119, 120],
        id: "drv-xid-gsp",
        layer: FailureLayer::Driver,
        second: Some(Hardware),
        cause: "the GPU's GSP firmware stopped answering",
    },
];

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found = Vec::new();
    let driver_fault_logged = segments.iter().any(|s| s.lower.contains("nvrm:"));
    // A log about a recurrent layer: cuDNN's RNN API or the layer's own name.
    let recurrent = segments
        .iter()
        .any(|s| RECURRENT.iter().any(|w| s.lower.contains(w)));
    for seg in segments {
        if let Some(f) = xid(seg) {
            found.push(f);
            continue;
        }
        let lower = &seg.lower;
        let number = lower
            .contains("cuda")
            .then(|| error_number(lower))
            .flatten()
            .map(|n| {
                if is_legacy(lower) {
                    current_number(n)
                } else {
                    n
                }
            });
        let row = CUDA_CODES.iter().find(|c| {
            c.words.iter().any(|w| lower.contains(w))
                || number.is_some_and(|n| c.numbers.contains(&n))
        });
        if let Some(c) = row {
            // "Busy or unavailable" next to an NVRM fault for the card is the card's state.
            if c.id == "drv-code-devices-unavailable" && driver_fault_logged {
                continue;
            }
            // ggml's op failure line names the op; the runtimes family reads it.
            if c.id == "lib-code-invalid-launch-configuration"
                && lower.contains("ggml_cuda_compute_forward:")
            {
                continue;
            }
            found.push(c.finding(seg));
            continue;
        }
        if let Some(c) = CUDNN_STATUS
            .iter()
            .find(|c| c.words.iter().any(|w| lower.contains(w)))
        {
            if lower.contains("cudnn_status_bad_param") && recurrent {
                found.push(CUDNN_RNN_BAD_PARAM.finding(seg));
            } else {
                found.push(c.finding(seg));
            }
            continue;
        }
        let c = &UNKNOWN_AT_INIT;
        let unknown = c.words.iter().any(|w| lower.contains(w))
            || number.is_some_and(|n| c.numbers.contains(&n));
        // "CUDA unknown error" (those words in that order) is torch's device-count wording at
        // start-up (c10's CUDAFunctions), so it is at initialisation by itself.
        let at_init =
            lower.contains("cuda unknown error") || AT_INIT.iter().any(|w| lower.contains(w));
        if unknown && lower.contains("cuda") && at_init {
            found.push(c.finding(seg));
        }
    }
    found
}

/// Old PyTorch/Torch (THC) printed CUDA errors as `THCudaCheck FAIL file=… error=N : …` or
/// `cuda runtime error (N) : …`, with numbers from before CUDA 10.1 renumbered the enum.
fn is_legacy(lower: &str) -> bool {
    lower.contains("thcudacheck") || lower.contains("cuda runtime error (")
}

/// Today's number for a pre-CUDA-10.1 code (the ones the tables know; others unchanged):
/// 4 launch failure, 6 launch timeout, 8 invalid device function, 10 invalid device, 30 unknown,
/// 38 no device, 48 no kernel image, 60 too many peers, 74 misaligned address. None of these numbers is used by the
/// renumbered enum for another error the tables know.
fn current_number(legacy: u32) -> u32 {
    match legacy {
        4 => 719,
        6 => 702,
        8 => 98,
        10 => 101,
        30 => 999,
        38 => 100,
        48 => 209,
        60 => 711,
        74 => 716,
        n => n,
    }
}

/// A CUDA error number on the line: `error 35`, `error: 35`, `code=100`, `error code 30`,
/// `cuda runtime error (8)`, TensorRT's `Cuda Error in allocate: 2` (the call named between
/// "in" and the colon), and a CUDA call's return value printed after it (`cuInit() returned
/// 100`, deviceQuery's `cudaGetDeviceCount returned 999`). A process's `exit code N` is no CUDA
/// code: setuptools' `error: command '/usr/local/cuda-12.1/bin/nvcc' failed with exit code 2`
/// names nvcc's exit status (NVIDIA/MinkowskiEngine#594, facebookresearch/ConvNeXt-V2#20), not
/// cudaErrorMemoryAllocation.
fn error_number(lower: &str) -> Option<u32> {
    ["error code", "code", "error", "failure"]
        .iter()
        .find_map(|word| {
            lower
                .match_indices(word)
                .filter(|(at, _)| !lower[..*at].trim_end().ends_with("exit"))
                .find_map(|(at, _)| number_after(lower, at + word.len()))
        })
        .or_else(|| call_returned(lower))
        .or_else(|| {
            let after = lower.find("cuda error in ")? + "cuda error in ".len();
            let colon = after + lower.get(after..)?.find(':')?;
            // One word (the call) between "in" and the colon.
            let call = lower.get(after..colon)?;
            if call.is_empty() || call.contains(' ') {
                return None;
            }
            number_after(lower, colon + 1)
        })
}

/// The number after "returned" when the word before it is a CUDA API call (`cuInit()`,
/// `cudaGetDeviceCount`): the call's error code. Anything else that "returned" a number (a
/// command's exit status, `torch.cuda.device_count()` returning 0) is no code.
fn call_returned(lower: &str) -> Option<u32> {
    lower.match_indices(" returned ").find_map(|(at, word)| {
        let call = lower[..at].rsplit(' ').next()?.trim_end_matches("()");
        let is_call = call.starts_with("cu")
            && call.len() > 3
            && call.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_call {
            return None;
        }
        number_after(lower, at + word.len())
    })
}

fn xid(seg: &Segment<'_>) -> Option<Finding> {
    let lower = &seg.lower;
    let at_word = lower.find("xid")?;
    let mut rest = &lower[at_word + 3..];
    // "Xid (PCI:0000:02:00): 79, …": skip the device in parentheses.
    if let Some(inner) = rest.trim_start().strip_prefix('(') {
        rest = &inner[inner.find(')')? + 1..];
    }
    let number = number_after(rest, 0)?;
    if matches!(number, 13 | 31 | 43)
        && let Some(name) = graphics_process(lower)
    {
        return Some(at(
            seg,
            "drv-xid-graphics-process-fault",
            FailureLayer::Driver,
            Some(Hardware),
            format!(
                "The driver logged Xid {number} for {name}, a desktop or graphics program, not a CUDA computation: a fault in the graphics driver's handling of that program (a console switch, a Vulkan or browser workload), in a given driver release; no training library is involved."
            ),
            "Update to (or roll back to) a driver release without the fault; note the driver version and whether the open or the proprietary kernel module shows it. If the same Xid follows every program and every driver release, test the card as for hardware faults.",
            Mechanism::Plain,
            true,
        ));
    }
    let row = XIDS.iter().find(|x| x.numbers.contains(&number))?;
    let cause = format!("The driver logged Xid {number}: {}.", row.cause);
    let fix = if row.layer == Library {
        "First tell a kernel from the card: run the step under `compute-sanitizer` (or with CUDA_LAUNCH_BLOCKING=1) to find the kernel, then update the training library (or fix the custom kernel); if it runs clean, or the same Xid follows every program, run on another card and read `nvidia-smi -q -d ECC` (hardware)."
    } else if number == 74 {
        "Read `nvidia-smi nvlink -e` for the failing link; reseat or replace the NVLink bridge or board. Meanwhile run with NCCL_P2P_DISABLE=1 or on one GPU."
    } else if matches!(number, 119 | 120) {
        "Reboot; if it returns, update to the newest driver of the branch or disable the GSP firmware (NVreg_EnableGpuFirmware=0 on the proprietary module); if it follows the card, replace it."
    } else {
        HW_FIX
    };
    // NVIDIA's Xid table is authoritative for the card's own faults: they outrank a catalogue
    // entry that reads the same log as an application fault.
    let decisive = row.layer == Hardware;
    Some(at(
        seg,
        row.id,
        row.layer,
        row.second,
        cause,
        fix,
        Mechanism::Plain,
        decisive,
    ))
}

/// The process an Xid line names (`name=chrome,`) when it is a desktop or graphics program,
/// whose faults are the graphics driver's, not a CUDA library's.
fn graphics_process(lower: &str) -> Option<&str> {
    const GRAPHICS: &[&str] = &[
        "chrome",
        "chromium",
        "firefox",
        "xorg",
        "gnome-shell",
        "kwin_wayland",
        "kwin_x11",
        "plasmashell",
        "mutter",
        "steam",
        "steamwebhelper",
        "unrealeditor",
        "electron",
        "discord",
        "mpv",
        "vlc",
        "obs",
    ];
    let at = lower.find("name=")?;
    let rest = &lower[at + "name=".len()..];
    let name = rest.split([',', ' ']).next().filter(|n| !n.is_empty())?;
    (GRAPHICS.contains(&name) || name.ends_with(".exe")).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::matcher;

    // The variants of each rule are data: tests/fixtures/diagnose/variants/codes.yaml.

    fn first(text: &str) -> Option<Finding> {
        let segments: Vec<_> = matcher::segments(text).collect();
        find(&segments).into_iter().next()
    }

    #[test]
    fn a_windows_loader_code_is_not_a_cuda_error() {
        assert_eq!(
            first("Could not load library cudnn_ops_infer64_8.dll. Error code 126"),
            None
        );
        assert_eq!(
            first("HTTP error 404 while fetching https://example.test/x"),
            None
        );
    }

    #[test]
    fn only_a_cuda_call_returns_a_code() {
        assert_eq!(
            call_returned("cuda not supported: cuinit() returned 100"),
            Some(100)
        );
        assert_eq!(call_returned("cudagetdevicecount returned 999"), Some(999));
        assert_eq!(call_returned("torch.cuda.device_count() returned 0"), None);
        assert_eq!(call_returned("cuda check: subprocess returned 1"), None);
        assert_eq!(call_returned("cuinit() returned"), None);
    }
}
