//! Library-layer failures: the wrong build of the training library (CPU-only, ROCm on an NVIDIA
//! machine, missing the GPU's architecture), pip finding no wheel, Windows DLL loading, and
//! errors raised inside the library's own kernels.

use super::{Entry, Specificity::*};
use crate::diagnose::FailureLayer::Library;

pub(super) const ENTRIES: &[Entry] = &[
    Entry {
        id: "lib-no-kernel-image",
        layer: Library,
        specificity: Specific,
        patterns: &[
            "no kernel image is available for execution on the device",
            "cudaerrornokernelimagefordevice",
        ],
        cause: "The library build carries no kernels for this GPU's architecture (a new card \
                with an old build, or an old card dropped by a new build).",
        fix: "Install the library build whose release notes list this GPU's compute capability \
              (for new GPUs, the build for the newer CUDA line); check with \
              `torch.cuda.get_arch_list()`.",
        example: "RuntimeError: CUDA error: no kernel image is available for execution on the \
                  device",
        source: "https://github.com/pytorch/pytorch/issues/81883",
    },
    Entry {
        id: "lib-gpu-arch-not-in-build",
        layer: Library,
        specificity: Specific,
        patterns: &["is not compatible with the current pytorch installation"],
        cause: "The installed PyTorch build was not compiled for this GPU's compute capability.",
        fix: "Pin the PyTorch build for the CUDA line that supports this GPU (`stackpin pin \
              --library torch==VERSION --os OS --toolkit X.Y`), fetch and install it.",
        example: "NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the \
                  current PyTorch installation.",
        source: "https://github.com/Turoad/CLRNet/issues/83",
    },
    Entry {
        id: "lib-cpu-only-build",
        layer: Library,
        specificity: Specific,
        patterns: &["torch not compiled with cuda enabled"],
        cause: "A CPU-only PyTorch wheel is installed (pip's default index, or a dependency \
                pulled the CPU build over the CUDA one).",
        fix: "Reinstall from the CUDA wheel index the manifest pins (library.pip.index_url, e.g. \
              .../whl/cu124) with the exact `+cuXYZ` versions; check `torch.version.cuda` is \
              not None.",
        example: "AssertionError: Torch not compiled with CUDA enabled",
        source: "https://github.com/facebookresearch/detectron2/issues/460",
    },
    Entry {
        id: "lib-rocm-build-on-nvidia",
        layer: Library,
        // Generic: a `+rocm` version and "No HIP GPUs are available" say which build is
        // installed, not that the machine is NVIDIA's. On AMD machines the same lines sit
        // beside another cause (pytorch/pytorch#138002: collect_env's 2.4.1+rocm6.1 above a HIP
        // out of memory; pytorch/pytorch#70036: No HIP GPUs on a ROCm install that did not see
        // its card; vllm-project/vllm#16840: a memory access fault under +rocm6.3), so a
        // specific message elsewhere in the log decides.
        specificity: Generic,
        patterns: &[
            "no hip gpus are available",
            "hiperrornodevice",
            "hiperrornobinaryforgpu",
            "0+rocm",
            "1+rocm",
            "2+rocm",
            "3+rocm",
            "4+rocm",
            "5+rocm",
            "6+rocm",
            "7+rocm",
            "8+rocm",
            "9+rocm",
        ],
        cause: "A ROCm (AMD) build of the library is installed, so it looks for AMD GPUs; on an \
                NVIDIA machine the CUDA wheel is needed.",
        fix: "Uninstall the +rocm wheels and install the +cuXYZ builds from the CUDA index the \
              manifest pins; never mix rocm and cu wheels of torch/torchvision/torchaudio.",
        example: "RuntimeError: No HIP GPUs are available",
        source: "https://github.com/modal-labs/modal-examples/issues/681 ; \
                 https://github.com/easydiffusion/easydiffusion/issues/1477 \
                 (hipErrorNoBinaryForGpu on an RTX 3050)",
    },
    Entry {
        id: "lib-python-version-no-wheel",
        layer: Library,
        specificity: Specific,
        patterns: &["ignored the following versions that require a different python version"],
        cause: "The pinned release publishes no wheels for this Python version.",
        fix: "Create the venv with a Python the release supports (library.python in the \
              manifest; `stackpin pin --library NAME==VERSION --os OS \
              --python X.Y`), or pin a release that has wheels for it.",
        example: "ERROR: Ignored the following versions that require a different python version: \
                  1.21.2 Requires-Python >=3.7,<3.11",
        source: "https://github.com/SEN1221TUD/Q2_2024/issues/7",
    },
    Entry {
        id: "lib-pip-no-matching-distribution",
        layer: Library,
        specificity: Specific,
        patterns: &[
            "could not find a version that satisfies the requirement",
            "no matching distribution found for",
        ],
        // The most frequent resolution of torch's "(from versions: none)" is a 32-bit Python,
        // for which no torch wheel exists (pytorch/pytorch#79347, pytorch/pytorch#41005,
        // pytorch/pytorch#39939, milksense/venus#8; AUTOMATIC1111/stable-diffusion-webui#10592
        // prints "32 bit (Intel)" above it); the fix names it before the index.
        cause: "pip found no wheel for this version on this index, platform and Python (a +cuXYZ \
                version needs the CUDA index; new Pythons lag behind releases; a 32-bit Python \
                has no torch wheels at all).",
        fix: "Check the venv's Python is 64-bit (`python -c \"import struct; \
              print(struct.calcsize('P') * 8)\"` prints 64) and has wheels for this release, \
              then that the manifest's index_url serves this `+cuXYZ` build; `stackpin pin \
              --library NAME==VERSION --os OS` picks a consistent set.",
        example: "ERROR: Could not find a version that satisfies the requirement \
                  torch==1.12.1+cu113 (from versions: none)",
        source: "https://github.com/runwayml/stable-diffusion/issues/14",
    },
    Entry {
        id: "lib-wheel-wrong-platform",
        layer: Library,
        specificity: Specific,
        patterns: &["is not a supported wheel on this platform"],
        cause: "The wheel was built for another Python version or platform (its cpXY / \
                win_amd64 / manylinux tags do not match this interpreter).",
        fix: "Fetch the wheels with the venv's own Python (`stackpin fetch MANIFEST` runs `pip download` \
              for the manifest's python), or create the venv with the Python the wheel's cpXY \
              tag names; a macOS or Windows machine needs that platform's wheel, not a \
              linux_x86_64 one. If the cpXY tag already is this Python's, its pip is too old for \
              the wheel's manylinux tag: upgrade pip (`python -m pip install -U pip`) or use a \
              newer Python build.",
        example: "ERROR: torchao-0.6.1+git-cp312-cp312-win_amd64.whl is not a supported wheel on \
                  this platform.",
        source: "https://github.com/kijai/ComfyUI-CogVideoXWrapper/issues/294",
    },
    Entry {
        id: "lib-windows-dll-load",
        layer: Library,
        specificity: Specific,
        // Resolutions: the Visual C++ runtime (pytorch/pytorch#32916: VCRUNTIME140_1.dll, the
        // redistributable cured it), a 32-bit piece in a 64-bit stack ("cannot run %1":
        // pytorch/pytorch#4518, 32-bit numpy/Python), a mixed install. All the library's own
        // install on Windows, so the layer stays; the fix names the 32-bit case.
        patterns: &["winerror 126*error loading", "importerror: dll load failed"],
        cause: "Windows could not load one of the library's DLLs or a dependency of it (missing \
                Visual C++ runtime, a 32-bit Python or package in a 64-bit install, a broken or \
                mixed install).",
        fix: "Install the current Microsoft Visual C++ Redistributable, then recreate the venv \
              with a 64-bit Python (\"cannot run %1\" / \"not a valid Win32 application\" \
              means a 32-bit piece) and reinstall the library from the archive; do not copy \
              DLLs by hand.",
        example: "OSError: [WinError 126] The specified module could not be found. Error loading \
                  \"\\.venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll\" or one of its \
                  dependencies.",
        source: "https://github.com/pytorch/pytorch/issues/129568 ; \
                 https://github.com/pytorch/pytorch/issues/28363",
    },
    Entry {
        id: "lib-nccl-system-error",
        layer: Library,
        specificity: Specific,
        // The threads' resolutions are two: the container's shared memory (NVIDIA/nccl#473:
        // --ipc=host) and the network interface NCCL picked (NVIDIA/nccl#697: NCCL_SOCKET_IFNAME
        // =bond0 among a dozen docker bridges; ROCm/rccl#328: NCCL_SOCKET_IFNAME=eth0 across
        // two nodes; NVIDIA/nccl-tests#14: --net host, no usable IP interface in the
        // container), once a stray NCCL_GRAPH_FILE (NVIDIA/nccl#1240). All NCCL's own
        // set-up, so the layer stays; the fix names the interface as well as /dev/shm.
        patterns: &["unhandled system error", "ncclsystemerror"],
        cause: "NCCL failed a system call: most often too little shared memory (/dev/shm) in a \
                container, or a network interface it cannot use.",
        fix: "Run containers with --ipc=host (or a larger --shm-size); rerun with NCCL_DEBUG=INFO \
              to see the failing call: a socket or 'Connection closed' warning is the network \
              interface, so set NCCL_SOCKET_IFNAME to the one the nodes share (eth0, bond0; \
              not docker0 or a bridge), or start the container with --net host; unset any \
              NCCL_GRAPH_FILE or NCCL_TOPO_FILE left in the environment or /etc/nccl.conf. For \
              one GPU, the example needs no NCCL at all.",
        example: "RuntimeError: NCCL Error 2: unhandled system error",
        source: "https://github.com/NVIDIA/nccl/issues/473",
    },
    // NCCL's error 1 is a CUDA call of its own failing, not a system call: in the threads
    // with a resolution the NCCL was built for another CUDA than the one installed
    // (NVIDIA/nccl-tests#6, NVIDIA/caffe#492: installing the libnccl2 for that CUDA fixed
    // it); its "Last error: Cuda failure N" line, when printed, names the CUDA error
    // (NVIDIA/nccl#1410). Generic: the words alone do not say which CUDA call. Where NCCL and
    // CUDA matched, a newer NCCL cured it (NVIDIA/nccl-tests#5: NCCL 1.0 to 2; NVIDIA/nccl#1024:
    // the bug fixed in 2.18.6, round 26's r26-07).
    Entry {
        id: "lib-nccl-unhandled-cuda",
        layer: Library,
        specificity: Generic,
        patterns: &["unhandled cuda error", "ncclunhandledcudaerror"],
        cause: "NCCL's own call into CUDA failed: most often an NCCL built for another CUDA \
                than the one the process runs (a system libnccl2 for another CUDA ahead of the \
                library's own), otherwise the CUDA error its \"Cuda failure N\" line names.",
        fix: "Rerun with NCCL_DEBUG=INFO and read the \"Last error: Cuda failure N\" line (run \
              `stackpin diagnose` on it). Check that NCCL and CUDA match: `python -c \"import \
              torch; print(torch.version.cuda, torch.cuda.nccl.version())\"`; a system NCCL must \
              be the libnccl2 build for this CUDA (`libnccl2=<version>+cudaX.Y`), and torch's \
              wheels bring their own (no system libnccl ahead of it on LD_LIBRARY_PATH). If \
              they match, update NCCL: releases have fixed bugs that raised it (a torch build \
              bundling a newer NCCL, or a newer nvidia-nccl wheel). For one GPU the example \
              needs no NCCL.",
        example: "NCCL failure common.cu:908 'unhandled cuda error'",
        source: "https://github.com/NVIDIA/nccl-tests/issues/6 ; \
                 https://github.com/NVIDIA/caffe/issues/492",
    },
    Entry {
        id: "lib-illegal-memory-access",
        layer: Library,
        specificity: Specific,
        patterns: &["an illegal memory access was encountered"],
        cause: "A GPU kernel read or wrote outside its memory: a bug in the library or a custom \
                op, or extensions built for another toolkit than the library; when it strikes at \
                random places and survives library upgrades, a faulty card.",
        fix: "First tell a kernel from the card: rerun with CUDA_LAUNCH_BLOCKING=1, or under \
              `compute-sanitizer python …`, to find the real call. The same kernel every time \
              is the library's or a custom op's: update the library, rebuild custom extensions \
              against the pinned toolkit. Random places, on every library release: run it on \
              another card and read `nvidia-smi -q -d ECC` and the Xid lines in `dmesg` / the \
              Windows event log (hardware). If it only comes with large batches or inputs, it \
              is often an out-of-memory in disguise: halve the batch.",
        example: "RuntimeError: CUDA error: an illegal memory access was encountered",
        source: "https://github.com/evo-design/evo/issues/136",
    },
    Entry {
        id: "lib-device-side-assert",
        layer: Library,
        specificity: Specific,
        patterns: &["device-side assert triggered"],
        cause: "A check inside a GPU kernel failed, almost always an index out of range (a \
                label >= the number of classes, a token id beyond the embedding); rarely a card \
                that asserts where another runs the same step clean.",
        fix: "First tell the data from the card: run the same step on the CPU (or with \
              CUDA_LAUNCH_BLOCKING=1) to get the real index error, then fix the data or the \
              model's sizes. If the CPU run is clean and the assert follows one GPU, run on \
              another card and read `nvidia-smi -q -d ECC` and the Xid lines in `dmesg` \
              (hardware).",
        example: "RuntimeError: CUDA error: device-side assert triggered",
        source: "https://github.com/WangYueFt/dcp/issues/30 ; \
                 https://github.com/pytorch/pytorch/issues/74079",
    },
    Entry {
        id: "lib-segfault",
        layer: Library,
        specificity: Generic,
        patterns: &["segmentation fault (core dumped)", "segmentation fault"],
        cause: "The process crashed in native code; with nothing else in the log the usual cause \
                is mixed builds (torch, torchvision, torchaudio for different CUDA/ROCm lines, or \
                a cuDNN that does not match).",
        // The driver is the second layer: torch.cuda.is_available() and .cuda() crashing
        // inside libcuda.so.1 under gdb (pytorch/pytorch#33135, pytorch/pytorch#926), and
        // nvidia-smi's own crash, which prints the same bare line; mixed or badly installed
        // builds are the rest (vchoutas/torch-mesh-isect#13: torch from the right channel;
        // yehengchen/Ubuntu-Deep-Learning-Environment-Setup#2: cuDNN reinstalled).
        fix: "Reinstall all library packages from one index with matching +cuXYZ tags (`pip \
              list | grep -i -e torch -e nvidia`), then prove again. If the command that \
              crashed is nvidia-smi itself, or a backtrace (`gdb -ex r --args python …`) ends \
              in libcuda.so, it is the driver: reinstall the pinned driver from the archive \
              (`stackpin repair MANIFEST`) and reboot.",
        example: ">>> from segmentation_models_pytorch import utils\nSegmentation fault (core \
                  dumped)",
        source: "https://github.com/qubvel-org/segmentation_models.pytorch/issues/904",
    },
    Entry {
        id: "lib-cpu-build-version",
        layer: Library,
        specificity: Generic,
        // A version ending in `+cpu` names the CPU-only wheel. Generic because environment
        // dumps (`collect_env`) paste it into unrelated reports, and on non-NVIDIA
        // accelerators (Ascend) the CPU wheel is correct; a specific cause in the same log wins.
        patterns: &[
            "0+cpu", "1+cpu", "2+cpu", "3+cpu", "4+cpu", "5+cpu", "6+cpu", "7+cpu", "8+cpu",
            "9+cpu",
        ],
        cause: "The CPU-only build of the library is installed (its version ends in +cpu), so \
                torch.cuda.is_available() is False whatever the driver and toolkit.",
        fix: "Reinstall from the CUDA wheel index the manifest pins (library.pip.index_url, \
              e.g. .../whl/cu124) with the exact `+cuXYZ` versions, then check \
              `torch.version.cuda` is not None.",
        example: "PyTorch version: 2.5.1+cpu",
        source: "https://github.com/vllm-project/vllm-ascend/issues/616",
    },
    Entry {
        id: "lib-gpu-kernel-fault-xid",
        layer: Library,
        specificity: Specific,
        patterns: &[
            "xid*: 13,",
            "xid*: 31,",
            "xid*: 43,",
            "graphics sm warp exception",
            "mmu fault",
        ],
        cause: "The kernel log records a GPU exception raised by a running program (Xid 13 \
                graphics/SM exception, Xid 31 MMU fault, Xid 43 GPU stopped processing): a \
                kernel of the library or a custom op faulted, not the stack beneath it.",
        fix: "First tell a kernel from the card: run the step under `compute-sanitizer` (or \
              with CUDA_LAUNCH_BLOCKING=1). An access it names is the library's or a custom \
              op's kernel: update the library, rebuild custom extensions against the pinned \
              toolkit. If it runs clean, or the same Xid repeats on one GPU with known-good \
              programs, run on another card and read `nvidia-smi -q -d ECC` (hardware).",
        example: "NVRM: Xid (PCI:0000:41:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0, \
                  SM 0): Illegal Instruction Encoding",
        source: "https://github.com/3dem/relion/issues/436 ; \
                 https://github.com/NVIDIA/NVSentinel/issues/271 (Xid 31: check the app)",
    },
    Entry {
        id: "lib-sanitizer-invalid-access",
        layer: Library,
        specificity: Specific,
        // Round 2 missed cuda-memcheck output; compute-sanitizer (its successor) prints the
        // same lines.
        patterns: &[
            "invalid __global__ read",
            "invalid __global__ write",
            "invalid __shared__ read",
            "invalid __shared__ write",
            "invalid __local__ read",
            "invalid __local__ write",
        ],
        cause: "compute-sanitizer / cuda-memcheck caught a GPU kernel reading or writing outside \
                its memory: a bug in the library, a custom op, or its input sizes.",
        fix: "The `at ...` line under the error names the kernel: fix or update that library or \
              op (or its input shapes); the driver and toolkit are not the cause.",
        example: "========= Invalid __global__ write of size 8 bytes",
        source: "https://github.com/ORNL/HeCBench/issues/131 ; \
                 https://github.com/NVIDIA/cuCollections/issues/539",
    },
    Entry {
        id: "lib-nccl-warn",
        layer: Library,
        specificity: Generic,
        patterns: &["nccl warn"],
        cause: "NCCL (the library's multi-GPU communication) reported a failure; the rest of \
                the line names the call.",
        fix: "Rerun with NCCL_DEBUG=INFO; check CUDA_VISIBLE_DEVICES and the ranks-per-node \
              match the GPUs, containers run with --ipc=host, and every rank uses the same \
              NCCL. For one GPU the example needs no NCCL.",
        example: "transport/p2p.cc:275 NCCL WARN Cuda failure 101 'invalid device ordinal'",
        source: "https://github.com/NVIDIA/nccl/issues/1948 ; \
                 https://github.com/NVIDIA/nccl/issues/932",
    },
    Entry {
        id: "lib-invalid-device-function",
        layer: Library,
        specificity: Specific,
        patterns: &["invalid device function", "cudaerrorinvaliddevicefunction"],
        cause: "The library's kernels were not built for this GPU's architecture (the older \
                wording of \"no kernel image\": CUDA error 8, invalid device function).",
        // Most threads name a CUDA extension rather than torch itself: built on another
        // machine's GPU (pytorch/pytorch#1557: compiled on another cluster node, rebuilt in
        // place), or against a CUDA other than torch's (daerduoCarey/PyTorchEMD#11: the local
        // CUDA 10.0 under a cudatoolkit 10.2 torch; weiyithu/SurroundOcc#100: mmcv); the fix
        // names the rebuild.
        fix: "Install the library build whose release notes list this GPU's compute capability \
              (`torch.cuda.get_arch_list()` shows what a build carries); a build for a newer \
              or older CUDA line may be needed. If the failing kernel is a CUDA extension's \
              (mmcv, a project's own .cu files), rebuild it on this machine with the toolkit \
              of torch's CUDA (`torch.version.cuda`) and this GPU in TORCH_CUDA_ARCH_LIST.",
        example: "RuntimeError: cuda runtime error (8) : invalid device function at \
                  /work/torch/lib/THC/generated/../generic/THCTensorMathPointwise.cu:246",
        source: "https://github.com/pytorch/tutorials/issues/8",
    },
    Entry {
        id: "lib-wheel-tags-mismatch",
        layer: Library,
        specificity: Generic,
        // Generic: `pip -v` lists this for every wheel of another platform even when a
        // matching one is then installed, so it only speaks when nothing else does.
        patterns: &["none of the wheel's tags match"],
        cause: "pip skipped the release's wheels because none is built for this Python and \
                platform, and fell back to a source build or to nothing.",
        fix: "Create the venv with a Python and OS the release publishes wheels for (the cpXY \
              and platform tags in the wheel names), or pin a release that has one; `stackpin \
              pin --library NAME==VERSION --os OS` picks a consistent set.",
        example: "Skipping link: none of the wheel's tags match: cp36-none-macosx_10_9_x86_64: \
                  torch-1.4.0-cp36-none-macosx_10_9_x86_64.whl",
        source: "https://github.com/pytorch/pytorch/issues/34798",
    },
    Entry {
        id: "lib-invalid-wheel",
        layer: Library,
        specificity: Specific,
        patterns: &["has an invalid wheel", "is not a valid wheel filename"],
        cause: "The downloaded wheel is damaged or misnamed (a truncated download, or a \
                corrupt upload), so pip cannot read its metadata.",
        fix: "Delete the wheel from the archive and fetch it again (`stackpin fetch MANIFEST` checks the \
              SHA-256); if the published file itself is bad, pin another build and tell its \
              maintainers.",
        example: "ERROR: torch-sparse has an invalid wheel, could not read \
                  'torch_sparse-0.6.18.dist-info/WHEEL' file",
        source: "https://github.com/Looong01/pyg-rocm-build/issues/6",
    },
    Entry {
        id: "lib-xgboost-gpu-updater",
        layer: Library,
        specificity: Specific,
        patterns: &["updater grow_gpu_hist", "updater gpu_hist"],
        cause: "The xgboost build or booster does not offer the GPU updater the configuration \
                names (a CPU-only build, or a linear booster asked for gpu_hist).",
        fix: "Install an xgboost build with CUDA support and use the GPU tree method with the \
              tree booster (`tree_method=\"hist\", device=\"cuda\"` in xgboost 2.x).",
        example: "Unknown linear updater grow_gpu_hist",
        source: "https://github.com/mdabros/SharpLearning/issues/89",
    },
    Entry {
        id: "lib-torch-cuda-unavailable-at-extension-build",
        layer: Library,
        // torch.utils.cpp_extension prints it when CUDA_HOME exists and torch.cuda.is_available()
        // is false (its _find_cuda_home, quoted in NVIDIA/MinkowskiEngine#223): the toolkit was
        // found, torch cannot use the GPU. The threads' resolutions: a CPU-only torch
        // (graphdeco-inria/gaussian-splatting#748, open-mmlab/mmdetection#281), a build on a
        // node or container without the driver (open-mmlab/mmdetection#281), a host where CUDA
        // saw no device (open-mmlab/mmdetection#3193). Generic: a later line that names which
        // (Torch not compiled with CUDA enabled, no CUDA-capable device) decides.
        specificity: Generic,
        patterns: &["no cuda runtime is found"],
        cause: "torch found the CUDA toolkit (CUDA_HOME) but cannot use the GPU: torch is a \
                CPU-only build, or this machine, container or build node has no working driver.",
        fix: "Run `python -c \"import torch; print(torch.__version__, torch.version.cuda, \
              torch.cuda.is_available())\"`. A `+cpu` version or a CUDA of None: install the \
              torch build for the pinned CUDA from the archive (`stackpin install MANIFEST`). \
              A CUDA build that answers False: `nvidia-smi` must list the GPU here (a build \
              container needs --gpus all, a cluster build a GPU node); to build an extension \
              without a GPU, set TORCH_CUDA_ARCH_LIST (and FORCE_CUDA=1 where the project \
              reads it).",
        example: "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
        source: "https://github.com/open-mmlab/mmdetection/issues/281 ; \
                 https://github.com/graphdeco-inria/gaussian-splatting/issues/748",
    },
    Entry {
        id: "lib-torchvision-ops-not-loaded",
        layer: Library,
        // torchvision's own check (torchvision/extension.py, _assert_has_ops) that its compiled
        // _C extension loaded: it fails when the torchvision build does not match the installed
        // torch (pytorch/vision#4222: the official image's pair; numz/sd-wav2lip-uhq#94: fixed by
        // reinstalling torch, torchvision and torchaudio together), whatever program calls nms.
        specificity: Specific,
        patterns: &["couldn't load custom c++ ops"],
        cause: "torchvision's compiled operators (its _C extension: nms, roi_align…) do not load \
                with the installed torch: the torchvision build was made for another torch \
                version or CUDA build, or was compiled from source with errors.",
        fix: "Install torch and torchvision as one matching pair from the same index and CUDA \
              build (torchvision's compatibility table, e.g. torch 2.1 with torchvision 0.16, \
              both +cu121): `pip install --force-reinstall torch==X torchvision==Y` in a clean \
              venv, with torchaudio pinned alongside if installed; a torchvision built from \
              source must be rebuilt against the installed torch.",
        example: "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and \
                  torchvision versions are incompatible, or if you had errors while compiling \
                  torchvision from source.",
        source: "https://github.com/pytorch/vision/issues/4222 ; \
                 https://github.com/numz/sd-wav2lip-uhq/issues/94",
    },
];
