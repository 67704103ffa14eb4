//! Toolkit-layer failures: the CUDA toolkit installer, nvcc, and a library that cannot load the
//! CUDA runtime or cuDNN it was built for (the guide's "library cannot load its CUDA runtime").

use super::{Entry, Specificity::*};
use crate::diagnose::FailureLayer::Toolkit;

/// The fix for every "the library cannot find the runtime it was built for" entry.
const INSTALL_NAMED_TOOLKIT: &str = "Toolkit and library disagree. Install the toolkit \
version the library's release notes name (the manifest's toolkit pin) side by side in its own \
folder and put its bin/lib on the path; do not upgrade the toolkit to the newest. `stackpin \
doctor MANIFEST` shows what the host has.";

// A compiled extension is linked against the CUDA runtime of the toolkit it was built with, so
// rebuilding it against the installed toolkit fixes it as well (round 21's r21-20: a project's
// `_C` module built for CUDA 9.0 on a CUDA 10.0 machine, fixed by rebuilding it).
const INSTALL_NAMED_TOOLKIT_OR_REBUILD: &str = "Toolkit and library disagree. Install the toolkit \
version the library's release notes name (the manifest's toolkit pin) side by side in its own \
folder and put its bin/lib on the path; do not upgrade the toolkit to the newest. A compiled \
extension of the project's own (a `_C` module built with setup.py) can instead be rebuilt against \
the installed toolkit: delete its build folder and build it again. `stackpin doctor MANIFEST` \
shows what the host has.";

pub(super) const ENTRIES: &[Entry] = &[
    Entry {
        id: "tk-cudart-not-loaded",
        layer: Toolkit,
        specificity: Specific,
        patterns: &[
            "could not load dynamic library 'libcudart",
            "could not load dynamic library 'cudart64_",
            "cudart64_*.dll not found",
            "could not locate cudart64_",
        ],
        cause: "The library cannot load its CUDA runtime (cudart): the toolkit it was built for \
                is not installed or not on the library path.",
        fix: INSTALL_NAMED_TOOLKIT,
        example: "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load \
                  dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open \
                  shared object file: No such file or directory",
        source: "https://github.com/jax-ml/jax/issues/3746 ; \
                 https://github.com/tensorflow/tensorflow/issues/45930 ; \
                 https://github.com/tensorflow/tensorflow/issues/57103",
    },
    Entry {
        id: "tk-cudart-import-error",
        layer: Toolkit,
        specificity: Specific,
        patterns: &["libcudart.so*cannot open shared object file"],
        cause: "A compiled extension cannot load the CUDA runtime it was linked against: that \
                toolkit version is missing from the library path.",
        fix: INSTALL_NAMED_TOOLKIT_OR_REBUILD,
        example: "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or \
                  directory",
        source: "https://github.com/CannyLab/tsne-cuda/issues/126",
    },
    Entry {
        id: "tk-cuda-libs-not-loaded",
        layer: Toolkit,
        specificity: Specific,
        patterns: &[
            "could not load dynamic library 'libcublas",
            "could not load dynamic library 'libcufft",
            "could not load dynamic library 'libcurand",
            "could not load dynamic library 'libcusolver",
            "could not load dynamic library 'libcusparse",
            "could not load dynamic library 'cublas64_",
            "libcublas*cannot open shared object file",
            "libcufft*cannot open shared object file",
            "libcurand*cannot open shared object file",
            "libcusolver*cannot open shared object file",
            "libcusparse*cannot open shared object file",
            "libnvrtc*cannot open shared object file",
            "cublas64_*not found",
            "cublas64_*cannot be loaded",
            "cublaslt64_*not found",
            // Round 2 missed cusolver64_11.dll: every CUDA library DLL (Windows `name64_NN.dll`)
            // and shared object (Linux `libname.so.NN`) the toolkit ships is listed here.
            "could not load dynamic library 'libcublaslt",
            "could not load dynamic library 'libnvrtc",
            "could not load dynamic library 'libnvjitlink",
            "could not load dynamic library 'libnccl",
            "could not load dynamic library 'cublaslt64_",
            "could not load dynamic library 'cufft64_",
            "could not load dynamic library 'curand64_",
            "could not load dynamic library 'cusolver64_",
            "could not load dynamic library 'cusolvermg64_",
            "could not load dynamic library 'cusparse64_",
            "could not load dynamic library 'nvrtc64_",
            "could not load dynamic library 'nvjitlink",
            "cufft64_*not found",
            "curand64_*not found",
            "cusolver64_*not found",
            "cusparse64_*not found",
            "nvrtc64_*not found",
            "nvjitlink*.dll*not found",
            "could not locate cublas",
            "could not locate cufft",
            "could not locate curand",
            "could not locate cusolver",
            "could not locate cusparse",
            "could not locate nvrtc",
            "libnvjitlink*cannot open shared object file",
            // Not `libnccl-net.so`: NCCL logs that plugin's absence at INFO level, harmless.
            "libnccl.so*cannot open shared object file",
            "cannot find libnccl.so",
        ],
        cause: "The library cannot load a CUDA library of the toolkit it was built for (cuBLAS, \
                cuBLASLt, cuFFT, cuRAND, cuSOLVER, cuSPARSE, NVRTC, nvJitLink or NCCL).",
        fix: INSTALL_NAMED_TOOLKIT,
        example: "W tensorflow/stream_executor/platform/default/dso_loader.cc:59] Could not load \
                  dynamic library 'libcublas.so.10'; dlerror: libcublas.so.10:cannot open shared \
                  object file: No such file or directory",
        source: "https://github.com/tensorflow/tensorflow/issues/44312 ; \
                 https://github.com/NVIDIA-AI-IOT/torch2trt/issues/785 ; \
                 https://github.com/jianchang512/stt/issues/52 ; \
                 https://github.com/tensorflow/tensorflow/issues/53054 (cusolver64_11.dll) ; \
                 https://github.com/opendatalab/MinerU/issues/1907 (libnvJitLink.so.12) ; \
                 https://github.com/NVIDIA/nccl-tests/issues/85 (libnccl.so.2) ; \
                 https://github.com/hacksider/Deep-Live-Cam/issues/1063 (Could not locate \
                 cublas64_10.dll)",
    },
    Entry {
        id: "tk-cudnn-not-loaded",
        layer: Toolkit,
        specificity: Specific,
        patterns: &[
            "could not load library libcudnn",
            "please make sure libcudnn*is in your library path",
            "could not load dynamic library 'libcudnn",
            "could not load dynamic library 'cudnn64_",
            "cudnn64_*not found",
            "cudnn_*64_*.dll*not found",
            "could not locate cudnn",
            "libcudnn*cannot open shared object file",
        ],
        cause: "cuDNN is missing or the wrong major version: the library was built for a cuDNN \
                that is not on the library path.",
        fix: "Install the cuDNN release the library's release notes name for this toolkit (for \
              pip libraries, the nvidia-cudnn wheel the library pins) and put it on the library \
              path; do not mix cuDNN majors.",
        example: "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: \
                  cannot open shared object file: No such file or directory",
        source: "https://github.com/jhj0517/Whisper-WebUI/issues/294 ; \
                 https://github.com/theislab/scarches/issues/211 (libcudnn.so.8)",
    },
    Entry {
        id: "tk-cudnn-version-mismatch",
        layer: Toolkit,
        specificity: Specific,
        patterns: &[
            "loaded runtime cudnn library*but source was compiled with",
            "cudnn version incompatibility",
            "cudnn version mismatch",
        ],
        // The library is the second layer: torch's wheels bundle their cuDNN, and the older
        // copy that wins is a system one on LD_LIBRARY_PATH (pytorch/pytorch#80637: the 1.12
        // wheels' rpath let it win, fixed in the wheels; RaleLee/Co-GAT#2: reinstall torch with
        // its cuDNN); a toolkit cuDNN installed to match cured the others (gladiaio/gladia#928,
        // xingyizhou/CenterNet#119).
        cause: "The cuDNN found at run time is older than the one the library was compiled with.",
        fix: "Install the cuDNN version the library's release notes name (equal major, equal or \
              newer minor) and remove older copies from the library path. A torch wheel brings \
              its own cuDNN: take the other cuDNN folder off LD_LIBRARY_PATH (or reinstall \
              torch with its nvidia-cudnn wheel) instead of installing another.",
        example: "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:447] Loaded runtime \
                  CuDNN library: 8.7.0 but source was compiled with: 8.9.4.  CuDNN library needs \
                  to have matching major version and equal or higher minor version.",
        source: "https://github.com/bmaltais/kohya_ss/issues/2787 ; \
                 https://github.com/tensorflow/tensorflow/issues/39842 ; \
                 https://github.com/bmaltais/kohya_ss/issues/1096",
    },
    Entry {
        id: "tk-tf-cannot-dlopen-gpu-libraries",
        layer: Toolkit,
        specificity: Generic,
        patterns: &["cannot dlopen some gpu libraries"],
        cause: "TensorFlow could not load one or more CUDA/cuDNN libraries and fell back to the \
                CPU.",
        fix: "Run `stackpin diagnose` on the full log: the 'Could not load dynamic library' lines \
              above name the missing file. Install the toolkit and cuDNN the release notes name.",
        example: "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1956] Cannot dlopen some GPU \
                  libraries. Please make sure the missing libraries mentioned above are \
                  installed properly if you would like to use GPU.",
        source: "https://github.com/tensorflow/tensorflow/issues/60646",
    },
    Entry {
        id: "tk-cuda-home-mismatch",
        layer: Toolkit,
        specificity: Specific,
        patterns: &["detected cuda version*mismatches the version that was used to compile"],
        cause: "An extension build found a toolkit (CUDA_HOME / nvcc on PATH) of another \
                version than the one the library was built for.",
        fix: "Install the toolkit the library's release notes name side by side, and point \
              CUDA_HOME and PATH at its folder for the build; do not switch the library to fit \
              whatever toolkit is first on PATH.",
        example: "The detected CUDA version (11.8) mismatches the version that was used to \
                  compile PyTorch (12.4). Please make sure to use the same CUDA versions.",
        source: "https://github.com/icip-cas/AutoAlign/issues/25",
    },
    Entry {
        id: "tk-nvcc-unsupported-arch",
        layer: Toolkit,
        specificity: Specific,
        // The library is the second layer: most resolved threads changed the architecture list
        // the project's build asked for, not the toolkit (lisa-analysis-tools/GBGPU#7 and
        // PaddlePaddle/FastDeploy#2024: compute_35 removed from setup.py / cuda.cmake under
        // CUDA 12; pytorch/pytorch#121099: libtorch's CMake default list, fixed in torch;
        // ggml-org/llama.cpp#13271: CMAKE_CUDA_ARCHITECTURES set by hand).
        // nvcc's wording for a -arch value it has no code for (inducer/pycuda#437: sm_89 under
        // CUDA 11.6; HazyResearch/butterfly#23: sm_30 under CUDA 11.2).
        patterns: &[
            "unsupported gpu architecture",
            "is not defined for option 'gpu-architecture'",
        ],
        cause: "nvcc does not know the requested GPU architecture: the toolkit is too old for a \
                new GPU (compute_120 needs CUDA 12.8+) or too new for an old one (CUDA 12 \
                dropped sm_35), or the build's own architecture list names one this toolkit \
                does not have.",
        fix: "Build with the toolkit the library's release notes name for this GPU generation, or \
              drop the unsupported arch from TORCH_CUDA_ARCH_LIST / CMAKE_CUDA_ARCHITECTURES \
              (or from the -gencode list in the project's setup.py or CMake files).",
        example: "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
        source: "https://github.com/ggml-org/llama.cpp/issues/13271 ; \
                 https://github.com/lisa-analysis-tools/GBGPU/issues/7 ; \
                 https://github.com/inducer/pycuda/issues/437 ; \
                 https://github.com/HazyResearch/butterfly/issues/23",
    },
    Entry {
        id: "tk-gcc-unsupported",
        layer: Toolkit,
        specificity: Specific,
        patterns: &["unsupported gnu version! gcc versions later than"],
        cause: "The host gcc is newer than this CUDA toolkit supports.",
        fix: "Install the gcc the toolkit supports and point nvcc at it (-ccbin, \
              CUDAHOSTCXX), or use the newer toolkit the library's release notes allow; avoid \
              -allow-unsupported-compiler.",
        example: "#error -- unsupported GNU version! gcc versions later than 12 are not \
                  supported! The nvcc flag '-allow-unsupported-compiler' can be used to override \
                  this version check",
        source: "https://github.com/NVlabs/instant-ngp/issues/1562",
    },
    Entry {
        id: "tk-inst-windows-failed",
        layer: Toolkit,
        specificity: Specific,
        patterns: &["cuda installer failed"],
        cause: "The Windows CUDA installer failed, most often in its Visual Studio Integration \
                component.",
        fix: "Run the archived toolkit installer again with only the toolkit components (clear \
              Visual Studio Integration, and never the bundled driver), then verify `nvcc \
              --version` in the toolkit's folder.",
        example: "CUDA Installer Failed",
        source: "https://github.com/philferriere/dlwin/issues/47",
    },
    Entry {
        id: "tk-inst-runfile-failed",
        layer: Toolkit,
        // Generic: the Linux runfile prints it for any step that failed, the driver's included.
        specificity: Generic,
        patterns: &[
            "see log at /var/log/cuda-installer.log",
            "[error]: boost::filesystem::*no space left on device",
        ],
        cause: "The CUDA toolkit's Linux runfile installer failed; its own log names the step \
                (most often no room left in /tmp or the install folder, or the bundled driver \
                step).",
        fix: "Read /var/log/cuda-installer.log: \"No space left on device\" needs room in /tmp \
              (the runfile unpacks several GB there: free it or pass `--tmpdir=DIR`) and in the \
              install folder; a failed driver step is the NVIDIA driver's (run `stackpin \
              diagnose /var/log/nvidia-installer.log`), or leave the driver out with \
              `--toolkit --silent` when one is already installed. Then run the archived runfile \
              again.",
        example: "An error occurred during extraction. See log at /var/log/cuda-installer.log \
                  for details.",
        source: "https://github.com/compiler-explorer/infra/pull/286 ; \
                 https://github.com/replicate/setup-cog/issues/14",
    },
    Entry {
        id: "tk-runtime-library-not-found",
        layer: Toolkit,
        specificity: Specific,
        // torch's "No CUDA runtime is found, using CUDA_HOME=…" is no longer here: it is
        // printed when CUDA_HOME was found, so the toolkit is there (lib-torch-cuda-unavailable-
        // at-extension-build).
        patterns: &["cuda runtime library not found"],
        cause: "The library found no CUDA runtime: the toolkit is not installed, or its lib \
                folder is not on the library path (CUDA_HOME / LD_LIBRARY_PATH).",
        fix: INSTALL_NAMED_TOOLKIT,
        example: "OSError: CUDA runtime library not found",
        source: "https://github.com/hannes-brt/hebel/issues/20",
    },
    Entry {
        id: "tk-cusolver-failed",
        layer: Toolkit,
        specificity: Specific,
        // The toolkit in most resolved threads: CUDA 11 dropped the GPU (AlTarFramework/
        // altar#33), a cuSOLVER bug fixed in a later CUDA (pytorch/pytorch#75391: CUDA 11.6's
        // syevd, fixed in 11.7; pytorch/pytorch#70122: gone with a newer CUDA and driver). But
        // Paddle's INTERNAL_ERROR was GPU memory short (PaddlePaddle/PaddleX#740,
        // PaddlePaddle/PaddleFormers#1049: a smaller batch or input size cured it), so memory
        // is the second layer and the fix says when it is memory.
        patterns: &["cusolver error", "cusolver_status_internal_error"],
        cause: "cuSOLVER (a CUDA toolkit library) failed inside its own call: most often this \
                toolkit no longer supports the GPU (CUDA 11 dropped compute capability 3.0), \
                has a cuSOLVER bug a later release fixed, or the toolkit and the library \
                disagree; an INTERNAL_ERROR with the GPU's memory nearly full is memory.",
        fix: "Check the GPU's compute capability against the toolkit's release notes and pin the \
              newest toolkit that still lists it (with a library build for that toolkit); \
              `stackpin check MANIFEST` tests the pins. If `nvidia-smi` shows the GPU's memory \
              nearly full when it fails (CUSOLVER_STATUS_INTERNAL_ERROR, or creating its \
              handle), lower the batch or input size first.",
        example: "CUSOLVER Error 7 at /home/ti/tools/src/pyre/extensions/cuda/cusolver.cc:39",
        source: "https://github.com/AlTarFramework/altar/issues/33",
    },
    Entry {
        id: "tk-cudnn-compiled-runtime-mismatch",
        layer: Toolkit,
        // Caffe2's own check (common_cudnn.h, in Detectron and onnx-caffe2 builds) that the cuDNN
        // loaded at run time is the one it was compiled against; its threads' cause is a second
        // cuDNN install found first (facebookresearch/Detectron#139, #574).
        specificity: Specific,
        patterns: &["cudnn compiled (*) and runtime (*) versions mismatch"],
        cause: "The cuDNN loaded at run time is another version than the one the library \
                (Caffe2) was compiled against: two cuDNN installs, and the other one is found \
                first on the library path.",
        fix: "Keep one cuDNN: the version the library was built with (the first number, e.g. \
              7102 = 7.1.2). Find the copies (`ldconfig -p | grep -i cudnn`, the toolkit's lib64, \
              a conda env's lib), remove the other or take its folder off LD_LIBRARY_PATH; or \
              rebuild the library against the cuDNN that is loaded.",
        example: "RuntimeError: [enforce fail at common_cudnn.h:108] version_match || \
                  backwards_compatible_7 || patch_compatible. cuDNN compiled (7102) and runtime \
                  (7005) versions mismatch",
        source: "https://github.com/facebookresearch/Detectron/issues/139 ; \
                 https://github.com/facebookresearch/Detectron/issues/574",
    },
];
