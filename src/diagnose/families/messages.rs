//! Message families that are not loader failures or error codes: execution providers and
//! device lists the libraries print, version pairs printed in the message, allocator failures
//! in each library's words, the driver's state as NVML reports it, the NVIDIA container stack's
//! own lines (its hook, ldconfig, privileges, cgroup device rules, driver service; Kubernetes'
//! runtime handler and device plugin), conda's missing or too old `__cuda` and its CUDA pins that
//! cannot agree, pixi's manifest without a cuda requirement, and the installers' own log
//! lines (where the evidence is the line that names the cause: the `modpost` line, not the
//! installer's generic `ERROR: An error occurred while performing the step`).

use super::rule::{Rule, find_each};
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Driver, Hardware, Library, Memory, Toolkit};
use crate::diagnose::matcher::Segment;

pub(super) const RULES: &[Rule] = &[
    // bitsandbytes' own setup: the wheel looks for a CUDA binary of its own that fits the CUDA
    // runtime it finds (libbitsandbytes_cudaXYZ.so / .dll) and falls back to the CPU one.
    Rule {
        id: "lib-bitsandbytes-cuda-setup",
        patterns: &[
            "cuda setup failed despite",
            "cuda setup: cuda detection failed",
            "cuda setup: required library version not found",
            "cuda_setup: warning! libcudart.so not found",
            "could not find the bitsandbytes cuda binary",
            "bitsandbytes was compiled without gpu support",
            "libbitsandbytes_cpu*undefined symbol",
            "cannot find*libbitsandbytes_cuda",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "bitsandbytes could not load a CUDA build of its own: the installed release has no binary for this CUDA version or operating system (old releases: Linux only, a fixed list of CUDA versions), or it cannot find the CUDA runtime (libcudart) to choose one, so it fell back to its CPU library.",
        fix: "Upgrade bitsandbytes (`pip install --upgrade bitsandbytes`: current releases ship builds for every supported CUDA and for Windows) and run `python -m bitsandbytes` to see which binary and CUDA it picks. If it still cannot find the CUDA runtime, point it at the installed one: BNB_CUDA_VERSION=XYZ (the CUDA the library uses) and the toolkit's lib64 on LD_LIBRARY_PATH.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch itself not importable: the interpreter that runs the code (a Jupyter kernel or
    // IPython of another conda environment, base Anaconda's python) is not the one torch was
    // installed into; the threads' cure was the environment's own kernel, not a reinstall of CUDA
    // (pytorch/pytorch#16103, unit8co/vegans#1, jasonppy/VoiceCraft#89). The closing quote keeps
    // torch's own submodules ('torch._C') and other packages ('torchtext') out.
    Rule {
        id: "lib-torch-module-missing-in-interpreter",
        patterns: &["no module named 'torch'"],
        layer: Library,
        second: None,
        cause: "Python cannot find torch at all: the interpreter running this code is not the environment torch was installed into (a Jupyter kernel or IPython from another conda environment or from base Anaconda, a build step in an isolated environment), or torch was never installed there.",
        fix: "Print `sys.executable` where it fails and compare it with the environment where `import torch` works; run the code with that environment's python (for Jupyter: `python -m ipykernel install --user --name ENV` from inside the environment, then choose that kernel), or install torch into the interpreter that runs it. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A library above torch that the vision repositories import (mmcv, diffusers) not importable
    // at all: it is not installed in the interpreter that runs the script (a webui's or a tool's
    // own venv, a notebook's kernel), or a switch between its packages (mmcv to mmcv-full) left
    // none behind. The threads' cure was installing it into that environment:
    // CrazyBoyM/dreambooth-for-diffusion#5, FahimF/sd-gui#9, hako-mikan/sd-webui-supermerger#9
    // (inside the webui's venv), open-mmlab/mmcv#1226, open-mmlab/mmdetection#3271 (a clean
    // reinstall of mmcv-full). The closing quote keeps submodules out ('mmcv._ext' is the ops
    // build, 'diffusers.modeling_utils' an API of another release), and a name that is not in
    // the table stays unknown: "No module named X" alone says nothing of which layer X belongs to
    // (a repository's own package run outside its root, a driver tool's Python module). Round 36
    // added basicsr, the super-resolution toolbox GFPGAN, Real-ESRGAN and the web UIs' restorers
    // import (invoke-ai/InvokeAI#4029, machineminded/Fooocus-inswapper#9,
    // Mikubill/sd-webui-controlnet#2675: installed into the venv that runs it); easyocr stays out,
    // its other threads word it only in the user's words. Round 37 added insightface, which the
    // face nodes of ComfyUI and the web UIs (IPAdapter FaceID, ReActor, InstantID) import
    // (Acly/krita-ai-diffusion#365, Gourieff/comfyui-reactor-node#515, Gourieff/ComfyUI-ReActor#172:
    // the prebuilt wheel for that Python installed into the UI's embedded Python); its
    // 'insightface.app' (a partial install) is left alone. numpy too: a tool started with
    // another Python than the one its requirements went into (oxysoft/stable-diffusion-webui#1,
    // lllyasviel/Fooocus#1665, OpenHands/OpenHands#520: installed in another environment);
    // numpy's own submodules ('numpy.core._multiarray_umath', a source folder shadowing it) stay out.
    // Round 38 added keras_core, the Keras 3 preview that keras_cv 0.6 imports without declaring
    // it (keras-team/keras-cv#2026, #1944: installed with `pip install keras-core`); its
    // submodules ('keras_core.src...') stay out by the closing quote.
    Rule {
        id: "lib-package-module-missing-in-interpreter",
        patterns: &[
            "no module named 'mmcv'",
            "no module named 'diffusers'",
            "no module named 'basicsr'",
            "no module named 'insightface'",
            "no module named 'numpy'",
            "no module named 'keras_core'",
        ],
        layer: Library,
        second: None,
        cause: "Python cannot find this library at all: it is not installed in the interpreter that runs the script (a web UI's or tool's own venv, a Jupyter kernel of another environment), or uninstalling one of its packages (mmcv before mmcv-full) removed the module the other needed.",
        fix: "Print `sys.executable` where it fails and install the library into that interpreter (`<that python> -m pip install diffusers`; mmcv with `mim install` or from OpenMMLab's wheel index for the installed torch and CUDA, after `pip uninstall -y mmcv mmcv-full` until none is left); for a web UI activate its venv first (a portable ComfyUI: `python_embeded\\python.exe -m pip install ...`; insightface: the prebuilt wheel for that Python's version). Then check `python -c \"import mmcv\"` with the same python. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // TensorFlow's own module lacking an attribute the code calls: the code and the installed
    // release disagree on the API (TF 1's tf.ConfigProto / tf.Session under TF 2, a tf.config
    // call newer or older than the release), whatever the driver and toolkit are.
    // tensorflow/tensorflow#33504, pnshiralkar/text-to-handwriting#3, fizyr/keras-retinanet#1492,
    // kerlomz/captcha_trainer#83 (the v1 module's config).
    Rule {
        id: "lib-tensorflow-api-missing",
        patterns: &["module 'tensorflow*has no attribute"],
        layer: Library,
        second: None,
        cause: "The code calls a TensorFlow API the installed TensorFlow does not have: it was written for another release (TF 1's tf.ConfigProto or tf.Session under TF 2, a tf.config function added or removed in a later 2.x).",
        fix: "Check `tf.__version__` against the release the code was written for and install that one (e.g. 1.15 for TF 1 code; the manifest's library pin), or port the call (tf.compat.v1.ConfigProto, tf.config.experimental.* on 2.0). The driver and toolkit need no change for this error.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // Installer log lines.
    Rule {
        id: "drv-installer-kernel-too-new",
        patterns: &[
            "uses gpl-only symbol",
            "modpost: gpl-incompatible module",
            "unknown symbol in module",
        ],
        layer: Driver,
        second: None,
        cause: "The driver's kernel module does not build against the running kernel (modpost: GPL-only or unknown symbols): the kernel is newer than this driver release supports.",
        fix: "Pin a newer driver release whose notes support this kernel (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`), fetch and install it; or boot the older kernel the driver was built for. Reinstalling the same driver will fail the same way.",
        mechanism: Mechanism::DriverBuild,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "drv-installer-compile-error",
        patterns: &[
            "nvidia*error: implicit declaration of function",
            "nv-linux.h*error:",
            "conftest*error: ",
            "error: too few arguments to function*nv",
            // The module's own sources named by their folder, whatever the compiler's language:
            // open-gpu-kernel-modules#1112 (nv-timer.h, kernel 7.0), #840 (nvidia-uvm, a
            // translated gcc), NixOS/nixpkgs#539211 (os-interface.c).
            "common/inc/nv-*implicit declaration of function",
            "nvidia-uvm/*implicit declaration of function",
            "nvidia-drm/*implicit declaration of function",
            "nvidia-modeset/*implicit declaration of function",
            // kbuild failing on one of the module's objects: NixOS/nixpkgs#280427
            // (kernel-open/nvidia/libspdm_shash.o, kernel 6.7), flydiscohuebr/nvidia-304#6
            // (nvidia.o, kernel 6.15).
            "makefile.build:*kernel-open/nvidia*] error ",
            "makefile.build:*: nvidia.o] error ",
            "makefile.build:*/nvidia-uvm/*] error ",
            "makefile.build:*/nvidia-drm/*] error ",
            "makefile.build:*/nvidia-modeset/*] error ",
        ],
        layer: Driver,
        second: None,
        cause: "The driver's kernel module does not compile against the running kernel's headers: the kernel's API changed after this driver release.",
        fix: "Pin a newer driver release that supports this kernel (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`), or boot the older kernel; reinstalling the same driver will fail the same way.",
        mechanism: Mechanism::DriverBuild,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "drv-installer-module-build-failed",
        patterns: &[
            "dkms module*nvidia*failed to build",
            "building dkms module*nvidia*failed",
            "nvidia*kernel module failed to build",
            "nvidia*kernel module was not created",
        ],
        layer: Driver,
        second: None,
        cause: "The NVIDIA kernel module did not build for the running kernel: its headers are missing, or the kernel is newer than this driver release supports.",
        fix: "Install the headers of the kernel named in the log (linux-headers-$(uname -r), kernel-devel or kernel-headers) and build again; if it still fails, pin a newer driver release that supports this kernel (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`), or boot the previous kernel.",
        mechanism: Mechanism::DriverBuild,
        decisive: true,
        judge: None,
    },
    // nvcc on Windows refusing a cl.exe on PATH other than the one -ccbin names (the x86 tools
    // of a developer prompt, another Visual Studio, another program's cl.exe wrapper). Before the
    // generic nvcc rule, whose fix is about flags. AlexeyAB/darknet#271, NVIDIA/cuda-samples#222.
    Rule {
        id: "tk-nvcc-host-compiler-mismatch",
        patterns: &["cl.exe*in path*different than*-ccbin"],
        layer: Toolkit,
        second: None,
        cause: "nvcc found a cl.exe on PATH other than the host compiler -ccbin names (the 32-bit HostX86 tools a developer prompt puts first, another Visual Studio's, or another program's cl.exe wrapper) and refuses to mix the two.",
        fix: "Use one host compiler: build from the x64 Native Tools prompt of the Visual Studio that -ccbin names (its HostX64\\x64 folder first on PATH), or take the other cl.exe's folder off PATH; then build again.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // make's own failure line for a target inside the NVIDIA .run installer's kernel tree
    // (NVIDIA-Linux-<arch>-<version>/kernel): the driver's kernel module did not compile, when
    // the log holds neither the installer's own ERROR line nor the compiler's. Not decisive: a
    // modpost or compiler line naming why outranks it. microsoft/pai#2040 (384.111's nvidia-uvm),
    // NixOS/nixpkgs#332350 (550.78 against kernel 6.10).
    Rule {
        id: "drv-installer-module-make-failed",
        patterns: &["make*nvidia-linux-*/kernel*] error "],
        layer: Driver,
        second: None,
        cause: "The NVIDIA driver's kernel module failed to compile (make stopped inside the installer's kernel folder): most often the kernel is newer than this driver release supports, or its headers or compiler do not match the running kernel.",
        fix: "Read the first compiler error above make's lines (or /var/log/nvidia-installer.log); install the headers of the running kernel (`uname -r`); if the kernel is newer than the release supports, pin a newer driver release (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`) or boot the kernel the driver supports. Reinstalling the same driver fails the same way.",
        mechanism: Mechanism::DriverBuild,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "tk-nvcc-fatal",
        patterns: &["nvcc fatal"],
        layer: Toolkit,
        second: None,
        cause: "nvcc refused its command line or input: the build passes it flags it cannot parse (with CMake's old FindCUDA, a flag list with quotes or spaces), or the toolkit cannot do what was asked.",
        fix: "Run the build verbosely (VERBOSE=1 make, or ninja -v) to see the nvcc command; with CMake's FindCUDA quote the flag list (`set(nvcc_flags \"@nvcc_flags@\")` in run_nvcc.cmake) or move to enable_language(CUDA) / FindCUDAToolkit; check that the toolkit version supports the flags and architectures used.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "drv-smi-cuda-version-err",
        patterns: &["cuda version: err!"],
        layer: Driver,
        second: None,
        cause: "nvidia-smi cannot read the CUDA version from the driver: the driver's user-space library (libcuda) is missing or belongs to another driver version (under WSL, a Linux driver shadowing /usr/lib/wsl/lib).",
        fix: "Make the driver's own libcuda the one that loads: reinstall the pinned driver so its libraries match the kernel module (`stackpin repair MANIFEST`); under WSL remove any Linux NVIDIA driver package and keep /usr/lib/wsl/lib first on the loader path.",
        mechanism: Mechanism::DriverAccess,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "tk-installer-no-host-compiler",
        patterns: &[
            "cannot find compiler 'cl.exe'",
            "cannot find compiler \"cl.exe\"",
            "cl.exe*is not recognized",
            "no supported version of visual studio",
        ],
        layer: Toolkit,
        second: None,
        cause: "nvcc on Windows needs the MSVC host compiler (cl.exe), and none is on PATH: the toolkit is there, Visual Studio's C++ tools are not.",
        fix: "Install Visual Studio (or its Build Tools) with \"Desktop development with C++\", then build from the \"x64 Native Tools Command Prompt\" or add the folder holding cl.exe (VC\\Tools\\MSVC\\<ver>\\bin\\Hostx64\\x64) to PATH. The CUDA toolkit itself needs no reinstall.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "tk-installer-no-cuda-toolset",
        patterns: &[
            "no cuda toolset found",
            "cuda.props*was not found",
            "the imported project*cuda*.props",
        ],
        layer: Toolkit,
        second: None,
        cause: "Visual Studio has no CUDA build customisation: the toolkit's Visual Studio integration was not installed (or was installed before Visual Studio).",
        fix: "Copy the files of CUDA\\vX.Y\\extras\\visual_studio_integration\\MSBuildExtensions into Visual Studio's MSBuild\\Microsoft\\VC\\<ver>\\BuildCustomizations (or rerun the toolkit installer with its Visual Studio Integration component); or configure CMake with -T cuda=<toolkit folder>, or use the Ninja generator.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "tk-installer-host-compiler-too-new",
        patterns: &[
            "unsupported gnu version",
            "unsupported microsoft visual studio version",
            "-allow-unsupported-compiler",
        ],
        layer: Toolkit,
        second: None,
        cause: "The host compiler is newer than this nvcc supports.",
        fix: "Install a host compiler the toolkit supports and pass it to nvcc (`-ccbin g++-12`, CUDAHOSTCXX, or CMAKE_CUDA_HOST_COMPILER), or pin a newer CUDA toolkit that supports this compiler.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "tk-cuda-home-unset",
        patterns: &[
            "cuda_home environment variable is not set",
            // torch's "No CUDA runtime is found, using CUDA_HOME=…" found CUDA_HOME: the
            // catalogue's lib-torch-cuda-unavailable-at-extension-build (mmdetection#281).
            "cuda_home is not set",
        ],
        layer: Toolkit,
        second: None,
        cause: "A CUDA extension build needs the toolkit (nvcc) and CUDA_HOME does not point at one.",
        fix: "Set CUDA_HOME to the toolkit's own folder (e.g. /usr/local/cuda-12.4, the manifest's toolkit.root) and put its bin on PATH; if no toolkit is there, install the pinned one (`stackpin install MANIFEST`).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // OpenCV's configure step without the cuDNN its CUDA DNN backend needs: FindCUDNN found no
    // library or header (a cuDNN installed elsewhere, or only the one bundled in a wheel).
    // chrismeunier/OpenCV-CUDA-installation#5 (cuDNN 9 in its own folder on Windows),
    // opencv/opencv#16449 (the files copied into CUDA but CUDNN_LIBRARY / CUDNN_INCLUDE_DIR
    // still not found), Oneflow-Inc/oneflow#10375 (CUDNN_LIBRARY given as a folder).
    Rule {
        id: "tk-cmake-cudnn-not-found",
        patterns: &[
            "dnn: cuda backend requires cudnn",
            "could not find cudnn (missing:",
        ],
        layer: Toolkit,
        second: None,
        cause: "The build's CMake did not find the cuDNN it requires (its library file or its headers; OpenCV's CUDA DNN backend needs it): cuDNN is not installed for this CUDA, it is in a folder CMake does not search, or CUDNN_LIBRARY names a folder instead of the library file.",
        fix: "Install the cuDNN release made for this CUDA (its archive extracted into the CUDA folder, or the developer package with headers), then configure again from a clean build folder with CUDNN_LIBRARY set to the library file and CUDNN_INCLUDE_DIR to the folder holding cudnn.h; for OpenCV, OPENCV_DNN_CUDA=OFF builds without the CUDA DNN backend instead.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "tk-cmake-no-cuda-compiler",
        patterns: &[
            "failed to find nvcc",
            "no cmake_cuda_compiler could be found",
            "could not find nvcc",
            "cmake_cuda_compiler*could not be found",
        ],
        layer: Toolkit,
        second: None,
        cause: "The build cannot find nvcc: no CUDA toolkit is installed or its bin folder is not on PATH.",
        fix: "Install the pinned CUDA toolkit and point the build at it (CUDACXX=/usr/local/cuda-X.Y/bin/nvcc or CMAKE_CUDA_COMPILER, and its bin on PATH).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // CMake's own report of a CUDA toolkit it cannot find whole (FindCUDA, FindCUDAToolkit,
    // the CUDA language's library root): nvcc may be there, the headers or cudart are not where
    // it looks. rogerdahl/cuda-benoit#1, heavyai/heavydb#18, griegler/octnet#6,
    // stereolabs/zed-ros-wrapper#668, NVIDIA-AI-IOT/deepstream_tao_apps#65.
    // CMake's CUDA language failing to run nvcc at all: "The CUDA compiler identification is
    // unknown", then no default architecture (or an empty/invalid CMAKE_CUDA_ARCHITECTURES when
    // nvcc is given by hand). NVlabs/instant-ngp#841 (another CMake fixed it), #1044, #707,
    // NVIDIA/nvbandwidth#3, quokka-astro/quokka#706 ("a CUDA 12.6 path issue"),
    // NVIDIA/GPUStressTest#11 (CUDA_HOME and CMAKE_CUDA_COMPILER pointed at the toolkit).
    Rule {
        id: "tk-cmake-no-cuda-architecture",
        patterns: &[
            "failed to detect a default cuda architecture",
            "cmake_cuda_architectures must be non-empty if set",
            "cmake_cuda_architectures must be valid if set",
        ],
        layer: Toolkit,
        second: None,
        cause: "CMake could not compile its test program with the CUDA compiler it found (\"The CUDA compiler identification is unknown\"), so it has no default architecture: nvcc is missing from PATH or is another toolkit than the one configured, the host compiler does not work with it, or this CMake is too old (or too new) for this CUDA release.",
        fix: "Point CMake at one working toolkit: `-DCMAKE_CUDA_COMPILER=/usr/local/cuda-X.Y/bin/nvcc` (or CUDACXX) with that toolkit's bin on PATH and CUDA_HOME set to it, delete the build folder's CMakeCache.txt, and configure again; if nvcc itself runs, give the GPU's architecture (`-DCMAKE_CUDA_ARCHITECTURES=86`) or use a CMake release that knows this CUDA.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "tk-cmake-cuda-not-found",
        patterns: &[
            "could not find cuda (missing:",
            "could not find cudatoolkit (missing:",
            "couldn't find cuda library root",
        ],
        layer: Toolkit,
        second: None,
        cause: "CMake found no complete CUDA toolkit: it looks for nvcc, the headers (cuda_runtime.h) and libcudart under one toolkit root, and part of that is missing or lives elsewhere (a runtime-only or package install, a second toolkit, a root it was not told).",
        fix: "Install the toolkit's development parts (the runfile, or the cuda-toolkit-X-Y package, not only the runtime), then point CMake at that root: -DCUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda-X.Y (FindCUDA) or -DCUDAToolkit_ROOT=/usr/local/cuda-X.Y with CUDACXX=/usr/local/cuda-X.Y/bin/nvcc; one library it names can be given directly (-DCUDA_CUDART_LIBRARY=/usr/local/cuda-X.Y/lib64/libcudart.so). Delete CMakeCache.txt before configuring again.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // xformers' compiled operators that will not load: a build for another torch (its own
    // "built for … (you have …)" pair) or one without CUDA. yangjianxin1/Firefly#258,
    // cubiq/PuLID_ComfyUI#103, Vchitect/SEINE#27, camenduru/DeepCache-colab#2.
    Rule {
        id: "lib-xformers-build-mismatch",
        patterns: &[
            "xformers can't load c++/cuda extensions",
            "xformers was built for:",
            "xformers wasn't build with cuda support",
            "xformers wasn't built with cuda support",
            // The dispatcher's own line, when the log holds nothing else: most often the same
            // build (facebookresearch/xformers#1186, #799, yufu-wang/PromptHMR#4); its "is not
            // supported because" lines name the rest (device=cpu, a dtype, the GPU's capability).
            "no operator found for `memory_efficient_attention_",
            // Round 37: the dispatcher's reason for one operator ("operator wasn't built", a build
            // without it: IgorAherne/trellis-stable-projectorz#52, yufu-wang/PromptHMR#4) and older
            // releases' "No such operator xformers::... - did you forget to build xformers"
            // (facebookresearch/xformers#650, #671: flash attention disabled at build time;
            // mayuelala/FollowYourPose#37: rebuilt for the card), the same build family.
            "operator wasn't built - see `python -m xformers.info`",
            "no such operator xformers*did you forget to build xformers",
        ],
        layer: Library,
        second: None,
        cause: "xformers' compiled operators do not load: the installed xformers was built for another torch (or CUDA, or Python) than the one installed, or is a build without CUDA, so memory_efficient_attention finds no operator.",
        fix: "Install the xformers release built for the installed torch, from the same CUDA wheel index as torch (`pip install -U xformers` with torch's --index-url), or the torch version xformers names under \"built for\"; `python -m xformers.info` must list the memory_efficient_attention operators as available. If they are available, read the \"is not supported because\" lines: device=cpu means the tensors are on the CPU (a torch without CUDA, or the model not moved to the GPU); a dtype or capability reason asks for fp16/bf16 or another attention. Without a fitting build, turn xformers off (diffusers: skip enable_xformers_memory_efficient_attention) and use torch's scaled_dot_product_attention.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The kernel refusing the NVIDIA module (modprobe's and insmod's words, Xorg's): the reason is
    // in the kernel log. MrMEEE/bumblebee-Old-and-abbandoned#318 and #196 ("No such device"),
    // MrMEEE/ironhide#41 (Xorg), GoogleCloudPlatform/container-engine-accelerators#302 (insmod).
    // Secure Boot's "Key was rejected" is its own catalogue entry and wins.
    Rule {
        id: "drv-module-load-refused",
        patterns: &[
            "error inserting nvidia",
            "could not insert 'nvidia",
            "insmod*nvidia*.ko*exit status",
            "failed to load the nvidia kernel module",
            "failed to load module*nvidia*.ko",
        ],
        layer: Driver,
        second: None,
        cause: "The kernel refused to load the NVIDIA module: it was built for another kernel, Secure Boot rejects it unsigned, nouveau holds the card, or this driver release does not support the GPU.",
        fix: "Read why in the kernel log (`sudo dmesg | grep -iE 'nvidia|nvrm' | tail`): \"Key was rejected\" or \"Required key not available\" is Secure Boot (sign the module or enroll its key with mokutil); \"Unknown symbol\" or \"disagrees about version of symbol\" means it was built for another kernel (install the headers of `uname -r` and rebuild it with DKMS); \"No such device\" or NVRM naming the GPU as unsupported means this release does not support the card (pin one that does: `stackpin pin --library NAME==VERSION --os linux --driver VERSION`); nouveau bound to the card needs blacklisting and a rebuilt initramfs.",
        mechanism: Mechanism::DriverBuild,
        decisive: false,
        judge: None,
    },
    // The kernel refusing a module whose signature is not from a key it trusts (Secure Boot, or
    // module.sig_enforce): the NVIDIA installer's own report of it
    // (Bumblebee-Project/Bumblebee#656) and the kernel's PKCS#7 line (matthieugras/Prime-Ubuntu-18.04#8
    // for nvidia under prime-select, Whonix/lkrg#4, juhovh/xmm7360_usb#2). Not decisive: without
    // enforcement the kernel only taints and loads, and another finding in the same log names
    // more. The tainting notice ("module verification failed: signature and/or required key
    // missing") is no refusal and is left alone.
    Rule {
        id: "drv-module-signature-untrusted",
        patterns: &[
            "kernel module failed to load, because it was not signed by a key that is trusted by the kernel",
            "pkcs#7 signature not signed with a trusted key",
        ],
        layer: Driver,
        second: None,
        cause: "The kernel refused the NVIDIA kernel module because its signature is not from a key the kernel trusts: Secure Boot (or module signature enforcement) is on and the module was built unsigned, or signed with a key that was never enrolled.",
        fix: "Either sign the module with a key the kernel trusts and enroll it: install the driver with DKMS/akmods signing (or the .run installer's --module-signing-secret-key/--module-signing-public-key), `sudo mokutil --import` the public key, reboot and confirm it in the MOK manager; or disable Secure Boot in the firmware. Then check `lsmod | grep nvidia` and `nvidia-smi`.",
        mechanism: Mechanism::DriverBuild,
        decisive: false,
        judge: None,
    },
    // TensorFlow resolving CUDA runtime functions in the cudart it loaded and not finding them:
    // that cudart is another CUDA than the release was built for, or the driver is older than it.
    // tensorflow/tensorflow#34820, #32381, #34354, jpcurbelo/human-body-reshape-DL-paper#4.
    Rule {
        id: "tk-tf-cuda-symbol-not-found",
        patterns: &["cudageterrorstring symbol", "status: cuda*symbol not found"],
        layer: Toolkit,
        second: Some(Driver),
        cause: "TensorFlow could not find CUDA runtime functions in the CUDA runtime it loaded: that runtime is another CUDA version than the one this TensorFlow release was built for, or the driver is older than that CUDA.",
        fix: "Install the CUDA (and cuDNN) version this TensorFlow release lists in its tested build configurations and put its bin folder first on PATH (Windows) / its lib64 on LD_LIBRARY_PATH, with a driver at least that CUDA's minimum; or install the TensorFlow release built for the CUDA you have (TensorFlow 2.15+ on Linux: `tensorflow[and-cuda]` brings its own).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // CUDA failing while it only counts the GPUs, with "out of memory": nothing is allocated yet,
    // so the card is not full; under WSL it is the GPU path (pytorch/pytorch#150048,
    // microsoft/WSL#9092: a Linux-side libcuda or symlinks shadowing /usr/lib/wsl/lib).
    Rule {
        id: "drv-device-count-out-of-memory",
        patterns: &["cudagetdevicecount()*error 2: out of memory"],
        layer: Driver,
        second: None,
        cause: "CUDA failed while only counting the GPUs, with \"out of memory\": nothing was allocated yet, so the card is not full. Under WSL (where this is common) the GPU path is broken: a Linux driver's or CUDA toolkit's libcuda, or hand-made symlinks, shadow the WSL driver library.",
        fix: "Under WSL: keep /usr/lib/wsl/lib first on the loader path (remove Linux NVIDIA driver packages and any libcuda symlinks made by hand, run `sudo ldconfig`), update the Windows NVIDIA driver, then `wsl --update` and `wsl --shutdown`; never install a Linux driver there. On a Linux host: check `nvidia-smi` for a process holding the GPU or an exclusive compute mode, then reboot.",
        mechanism: Mechanism::DriverAccess,
        decisive: true,
        judge: None,
    },
    // nvidia-smi itself crashing: it is the driver's own tool, so the process that crashed names
    // the layer (the generic "segmentation fault" entry is the library's wheels). Under WSL it is
    // the Windows driver's WSL libraries in a given release. Nevuly/WSL2-Linux-Kernel-Rolling#13,
    // microsoft/WSL#11510, #11277, #11870.
    Rule {
        id: "drv-smi-segfault",
        patterns: &[
            "nvidia-smi*segmentation fault",
            "segmentation fault*nvidia-smi",
        ],
        layer: Driver,
        second: None,
        cause: "nvidia-smi itself crashed: it is the driver's own tool, so the driver's user-space libraries (libnvidia-ml) do not fit the kernel module, or, under WSL, the Windows driver's WSL libraries (/usr/lib/wsl/lib) crash in this driver release.",
        fix: "Under WSL: update (or roll back) the Windows NVIDIA driver, run `wsl --update` and `wsl --shutdown`, and never install a Linux NVIDIA driver inside WSL. On Linux: reinstall the pinned driver so its libraries match the kernel module (`stackpin repair MANIFEST`) and reboot. The training library needs no reinstall for this.",
        mechanism: Mechanism::DriverAccess,
        decisive: true,
        judge: None,
    },
    // The container runtime mounting the host's (or WSL's) driver libraries into the container
    // and finding one already there: the image or the WSL distro carries NVIDIA driver libraries of
    // its own. NVIDIA/nvidia-container-toolkit#289, NVIDIA/nvidia-docker#1551, #1699.
    // Docker asked for `--runtime=nvidia` that it does not know: the NVIDIA container runtime is
    // not installed or not registered in the daemon's configuration (daemon.json), or the daemon
    // was not restarted after. NVIDIA/nvidia-docker#578, #1236, #501, #838,
    // D34DC3N73R/netdata-glibc#2 (a restart after editing daemon.json fixed it),
    // dusty-nv/jetson-containers#122, KiaraGrouwstra/nix-config#101 (NixOS' enableNvidia).
    Rule {
        id: "drv-container-unknown-runtime",
        patterns: &["unknown runtime specified nvidia"],
        layer: Driver,
        second: None,
        cause: "Docker has no runtime named nvidia: the NVIDIA container toolkit is not installed, or its runtime is not registered in Docker's daemon configuration, or Docker was not restarted after it was.",
        fix: "Install the NVIDIA container toolkit, register its runtime (`sudo nvidia-ctk runtime configure --runtime=docker`, which writes /etc/docker/daemon.json) and restart Docker (`sudo systemctl restart docker`); or drop `--runtime=nvidia` and run with `--gpus all`. The host driver needs no reinstall when `nvidia-smi` works on the host.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "drv-container-mount-exists",
        patterns: &[
            "nvidia-container-cli*mount error*file exists",
            "mount error: file creation failed*libnvidia*file exists",
        ],
        layer: Driver,
        second: None,
        cause: "The container runtime mounts the host's NVIDIA driver libraries (under WSL, the Windows driver's from /usr/lib/wsl/lib) into the container and finds a file of that name already there: the image, or the WSL distro itself, carries NVIDIA driver libraries of its own.",
        fix: "Take the driver libraries out of what the runtime mounts into: build the image without NVIDIA driver packages (no libnvidia-*, cuda-drivers or nvidia-utils in the Dockerfile; the CUDA base images leave them out), and under WSL remove every Linux NVIDIA driver package from the distro (`dpkg -l | grep -i nvidia`), keeping /usr/lib/wsl/lib. Then start the container again with `--gpus all`.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // The container runtime not finding the driver library it mounts: under WSL the Windows
    // driver's /usr/lib/wsl/lib/libcuda.so.1. NVIDIA/nvidia-docker#1225.
    Rule {
        id: "drv-container-mount-missing",
        patterns: &["nvidia-container-cli*mount error: stat failed*no such file"],
        layer: Driver,
        second: None,
        cause: "The container runtime cannot find a driver library it mounts into the container: the driver's user-space libraries are missing where it looks (under WSL, /usr/lib/wsl/lib/libcuda.so.1 from the Windows driver).",
        fix: "Under WSL: install a Windows NVIDIA driver with WSL support, run `wsl --update` and `wsl --shutdown`, and check that /usr/lib/wsl/lib/libcuda.so.1 exists; never install a Linux driver inside WSL. On a Linux host: `nvidia-smi` must work there; reinstall the pinned driver on the host (`stackpin repair MANIFEST`) so its libraries are in place, then restart Docker.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // Windows out of commit while a library maps its DLLs ("The paging file is too small",
    // WinError 1455): every process importing torch commits the CUDA DLLs' memory up front, so
    // it fails on the DLL the loader was at, which is no broken wheel. prophesier/diff-svc#24
    // (cudnn_adv_infer64_8.dll), thu-ml/tianshou#297 (too many vector environments), #527,
    // zbf1991/WeCLIP#5 (Windows' Chinese wording, the same code), oatsu-gh/enunu_training_kit#8.
    // The Chinese text without the code after "DLL load failed" (szad670401/HyperLPR#49,
    // atomicoo/tacotron2-mandarin#5, tpoisonooo/ROGRAG#28) would otherwise read as a broken DLL;
    // Rust's io::Error gives the code as "(os error 1455)" (Acly/krita-ai-diffusion#1898,
    // VectorSpaceLab/OmniGen#181: safetensors mapping a checkpoint).
    Rule {
        id: "mem-windows-paging-file",
        patterns: &[
            "winerror 1455",
            "the paging file is too small for this operation",
            "页面文件太小",
            "(os error 1455)",
        ],
        layer: Memory,
        second: None,
        cause: "Windows ran out of virtual memory (its commit limit) while loading the library's DLLs: the paging file is too small. Every process that imports torch (each DataLoader worker or spawned process) commits the CUDA DLLs' memory up front, so it fails on whichever DLL it was loading; the DLL itself is fine.",
        fix: "Let Windows grow the paging file: System Properties > Advanced > Performance > Settings > Advanced > Virtual memory, \"System managed size\" (or a larger custom size) on a drive with free space, then reboot. Start fewer processes at once (a smaller DataLoader num_workers, fewer parallel environments); reinstalling the library does not help.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // The linker (not the loader) missing a CUDA library it was told to link: the toolkit's
    // library folder is not on its search path (-L, LIBRARY_PATH; LD_LIBRARY_PATH is for running),
    // or a conda compiler searches only its environment. fireice-uk/xmr-stak-nvidia#53
    // (-lcudart_static), ivan-chai/torch-linear-assignment#2 (a conda ld; the system toolkit
    // fixed it), ggml-org/llama.cpp#7508 (-lcuda).
    Rule {
        id: "tk-linker-cuda-library",
        patterns: &[
            "cannot find -lcud",
            "cannot find -lcublas",
            "cannot find -lcufft",
            "cannot find -lcurand",
            "cannot find -lcusolver",
            "cannot find -lcusparse",
            "cannot find -lnvrtc",
            "cannot find -lnvtoolsext",
            "cannot find -lnccl",
        ],
        layer: Toolkit,
        second: None,
        cause: "The linker cannot find a CUDA library the build links (-lcudart, -lcudadevrt, -lcublas, …): the toolkit's library folder is not on the linker's search path (it reads -L and LIBRARY_PATH, not LD_LIBRARY_PATH), the toolkit there has no development copy of it, or a conda compiler searches only its own environment.",
        fix: "Give the linker the toolkit's library folder: -L/usr/local/cuda/lib64 (or LIBRARY_PATH=/usr/local/cuda/lib64, CUDA_HOME for a setup.py build, the project's --with-cuda / CUDA path option); install the toolkit's development package (the runfile, or cuda-toolkit-X-Y / cuda-cudart-dev-X-Y) if lib64 has no libcudart.so; with a conda compiler install the CUDA runtime into that environment or point -L at the system toolkit. -lcuda links the stub in lib64/stubs.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The persistence daemon failing to start: it opens every GPU through the driver, so the
    // reason is the driver's module or a permission the daemon lacks. NVIDIA/nvidia-persistenced#11
    // (GH200: NUMA auto-online needs root), fgci-org/ansible-role-cuda#20 (the service failing in
    // CI on three distributions).
    Rule {
        id: "drv-persistenced-failed",
        patterns: &[
            "nvidia-persistenced failed to initialize",
            "failed to start nvidia-persistenced",
            "unable to start service nvidia-persistenced",
        ],
        layer: Driver,
        second: None,
        cause: "The NVIDIA persistence daemon could not start: it opens every GPU through the driver, so the driver's kernel module is not loaded (or did not load for this kernel), or the daemon lacks a permission it needs (on Grace Hopper it writes /sys/devices/system/memory/auto_online_blocks and must run as root; its folder /var/run/nvidia-persistenced must be writable).",
        fix: "Read the daemon's own reason (`journalctl -u nvidia-persistenced -b`, or `sudo nvidia-persistenced --verbose`). Check the driver first: `nvidia-smi` and `lsmod | grep nvidia`; a module that does not load for this kernel needs rebuilding for it (DKMS, the kernel's headers) or a driver that supports it. On GH200/Grace systems run the daemon as root (no --user in its unit). Then `sudo systemctl restart nvidia-persistenced`.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // NVML refusing memory or MIG-profile queries for lack of the MIG monitor capability: on a
    // MIG-enabled GPU a container (the device plugin, GFD, a pod) reads MIG state only with
    // NVIDIA_MIG_MONITOR_DEVICES=all or privileged. NVIDIA/k8s-device-plugin#1683 ("error
    // getting parent memory info"), NVIDIA/nvidia-container-toolkit#842 (pynvml in a pod on a MIG
    // device), NVIDIA/gpu-feature-discovery#6 (a maintainer: the variable is missing).
    Rule {
        id: "drv-mig-monitor-permission",
        patterns: &[
            "memory info: insufficient pe",
            "nvmlerror_nopermission",
            "error getting mig profile*insufficient pe",
        ],
        layer: Driver,
        second: None,
        cause: "NVML refused a memory or MIG query for lack of permission: on a MIG-enabled GPU a container (the Kubernetes device plugin, GPU feature discovery, a pod) may read MIG state only when it is given the driver's MIG monitor capability.",
        fix: "Give the container the MIG monitor capability: set NVIDIA_MIG_MONITOR_DEVICES=all in the device plugin's (and GPU feature discovery's) deployment — the NVIDIA helm chart and GPU operator do — or run it privileged; outside a container run the tool as root or grant /proc/driver/nvidia/capabilities/mig/monitor. Off MIG, an NVML call that changes settings (clocks, power limits) needs root. The driver itself needs no reinstall.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Execution providers and device lists.
    Rule {
        id: "lib-provider-cpu-package",
        patterns: &[
            "execution provider is not enabled in this build",
            "cudaexecutionprovider' is not in available provider",
            "cudaexecutionprovider is not in available provider",
            "available providers: 'cpuexecutionprovider'",
            "available providers: ['cpuexecutionprovider']",
            "available providers: ['azureexecutionprovider', 'cpuexecutionprovider']",
        ],
        layer: Library,
        second: None,
        cause: "The ONNX Runtime that Python imports has no CUDA execution provider: the CPU-only `onnxruntime` package is installed beside (and shadows) `onnxruntime-gpu`.",
        fix: "Uninstall both and install only the GPU build for this CUDA: `pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu` (the variant for the toolkit's CUDA major); check with `onnxruntime.get_available_providers()`.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: Some(lists_only_cpu_providers),
    },
    // InsightFace's own print of the providers each model's ONNX Runtime session got, when the
    // list is the CPU one alone: with onnxruntime-gpu installed the session fell back to the CPU,
    // because the CPU package shadows the GPU one or because the CUDA provider could not load the
    // CUDA / cuDNN libraries its build needs (cured by importing torch first, whose wheels load
    // them). deepinsight/insightface#2394 (only onnxruntime-gpu installed), #2756 (in docker),
    // Mikubill/sd-webui-controlnet#3038 (the web UI's insightface preprocessor). A list with
    // CUDAExecutionProvider is a session on the GPU and is left alone.
    Rule {
        id: "lib-insightface-session-on-cpu",
        patterns: &["applied providers: ['cpuexecutionprovider']"],
        layer: Library,
        second: Some(Toolkit),
        cause: "InsightFace's ONNX Runtime sessions run on the CPU provider only: the onnxruntime imported has no usable CUDA execution provider, either because the CPU-only `onnxruntime` package shadows `onnxruntime-gpu`, or because the CUDA provider could not load the CUDA / cuDNN libraries its build was made for.",
        fix: "Check `pip list | grep onnxruntime`: keep only onnxruntime-gpu (`pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu`). Then check `onnxruntime.get_available_providers()` and the warnings printed before this line: where CUDAExecutionProvider is listed but not applied, install the onnxruntime-gpu build for the CUDA and cuDNN majors the machine has (the ONNX Runtime CUDA requirements table), or `import torch` before insightface so torch's CUDA libraries are loaded, and pass providers=['CUDAExecutionProvider', 'CPUExecutionProvider'] to FaceAnalysis.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The TensorRT provider is never in onnxruntime-gpu's wheel: where it cannot be created,
    // TensorRT's libraries (or the CUDA ones they need) are not installed or not on the loader
    // path. microsoft/onnxruntime#9986 (only the pip TensorRT wrapper; told to install TensorRT
    // itself), danielgatis/rembg#370 (a container without TensorRT), microsoft/onnxruntime#12639
    // (TensorRT's lib folder added to LD_LIBRARY_PATH).
    Rule {
        id: "tk-provider-tensorrt-failed",
        patterns: &["failed to create tensorrtexecutionprovider"],
        layer: Toolkit,
        second: Some(Library),
        cause: "ONNX Runtime could not start its TensorRT execution provider: the TensorRT libraries this onnxruntime-gpu build needs (and the CUDA and cuDNN ones under them) are not installed or not on the loader path; a pip TensorRT wrapper alone is not enough.",
        fix: "Install the TensorRT release the ONNX Runtime TensorRT requirements table names for this onnxruntime-gpu (the tar/zip or deb package, or the tensorrt wheels with their libs), and put its lib folder on the loader path (LD_LIBRARY_PATH; PATH on Windows) next to CUDA's and cuDNN's; or drop TensorrtExecutionProvider from the providers list and run on the CUDA one.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "lib-provider-cuda-failed",
        patterns: &["failed to create cudaexecutionprovider"],
        layer: Library,
        second: Some(Toolkit),
        cause: "ONNX Runtime could not start its CUDA execution provider: the CPU-only package is installed, or the onnxruntime-gpu build needs another CUDA / cuDNN major than the machine has.",
        fix: "Check `pip list | grep onnxruntime`: keep only onnxruntime-gpu. Then match its build to the machine: the ONNX Runtime CUDA requirements table names the CUDA and cuDNN major each release needs; install that build (or that CUDA / cuDNN) and make its libraries loadable.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Version pairs.
    Rule {
        id: "lib-version-torch-torchvision",
        patterns: &[
            "pytorch and torchvision were compiled with different cuda",
            "operator torchvision::nms does not exist",
            "torchvision*requires torch==",
            "could not find the operator torchvision::",
            "no such operator torchvision::",
            "no such operator image::",
        ],
        layer: Library,
        second: None,
        cause: "torch and torchvision come from different builds (another version or another CUDA).",
        fix: "Reinstall torch and torchvision as the matching pair from the same index (the manifest's `library.pip.requirements`, e.g. torch 2.5.1 with torchvision 0.20.1, both +cu124), in a clean venv.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "tk-version-cudnn-compiled-vs-loaded",
        patterns: &[
            "loaded runtime cudnn library:*but source was compiled with",
            "cudnn version incompatibility",
            "was compiled against*but found runtime version",
            // PaddlePaddle's start-up warning: "The installed Paddle is compiled with CUDNN 7.6,
            // but CUDNN version in your machine is 7.5" (PaddlePaddle/Paddle#42566,
            // PaddlePaddle/PaddleOCR#997); cured by the cuDNN it names or by removing the older
            // copy found first (PaddlePaddle/Paddle#37349, PaddlePaddle/Paddle#26954).
            "is compiled with cudnn*but cudnn version in your machine is",
        ],
        layer: Toolkit,
        second: Some(Library),
        cause: "The cuDNN that loads is not the one the library was compiled against: another cuDNN (a system copy or an older install) comes first on the loader path.",
        fix: "Install the cuDNN version the library was built with (its release notes, or the version the message names) and remove the other copy from LD_LIBRARY_PATH / PATH (`ldconfig -p | grep cudnn` shows which loads); pip-installed libraries should load their own nvidia-cudnn wheel.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A vision library's own CUDA ops missing from its build: the library itself was built (or
    // installed as a wheel) without CUDA, whatever torch, the driver and the toolkit can do.
    // MMCV's dispatcher has no CUDA kernel registered for the op: `mmcv` 1.x or `mmcv-lite`
    // (no ops), a wheel for another torch/CUDA, or a source build on a node without a GPU
    // (open-mmlab/mmdetection#7788, open-mmlab/mmdetection#10841, open-mmlab/mmcv#2439).
    Rule {
        id: "lib-mmcv-ops-without-cuda",
        patterns: &["implementation for device cuda*not found"],
        layer: Library,
        second: None,
        cause: "MMCV has no CUDA kernel for this op: the installed mmcv was built without its CUDA ops (plain `mmcv` 1.x or `mmcv-lite`, a wheel for another torch or CUDA, or a source build on a machine where torch saw no GPU).",
        fix: "Install the mmcv built with CUDA ops for this torch and CUDA: `mim install mmcv` (2.x) or `mmcv-full` (1.x) from OpenMMLab's wheel index for your cuXXX/torchX.Y, after uninstalling the other mmcv. Building from source: MMCV_WITH_OPS=1 FORCE_CUDA=1 (needed where the build node has no GPU) and TORCH_CUDA_ARCH_LIST for the card.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A torch C++/CUDA extension (detectron2's `_C`, GroundingDINO's `_C`, an mmdet 1.x op)
    // compiled without CUDA: setup.py builds the CPU-only extension when torch cannot see CUDA
    // or CUDA_HOME at build time (facebookresearch/detectron2#55, the maintainer's answer;
    // UTAustin-SwarmLab/Neuro-Symbolic-Video-Search-Temporal-Logic#1; pip's build isolation
    // installing a CPU torch, IDEA-Research/Grounded-Segment-Anything#15).
    Rule {
        id: "lib-extension-built-without-cuda",
        patterns: &[
            "not compiled with gpu support",
            "failed to load custom c++ ops. running on cpu mode only",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "The library's own C++/CUDA extension was built without CUDA (or did not build): its setup.py compiles the CPU-only extension when torch sees no CUDA or CUDA_HOME is unset at build time, so its ops have no GPU code.",
        fix: "Rebuild the extension with CUDA: check `python -c 'import torch; from torch.utils.cpp_extension import CUDA_HOME; print(torch.cuda.is_available(), CUDA_HOME)'` prints True and the toolkit matching torch.version.cuda (set CUDA_HOME if not; FORCE_CUDA=1 on a node without a GPU), remove the old build (build/ and the _C*.so), and reinstall with `pip install --no-build-isolation -e .` so the build uses this environment's CUDA torch.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // OpenCV built without CUDA: the pip opencv-python wheels and the distributions' packages
    // have no CUDA modules, so the DNN module falls back to the CPU and cv2.cuda throws
    // (opencv/opencv-python#398, opencv/opencv#15858, emgucv/emgucv#4). OpenCV's other branch,
    // "unable to use CUDA backend; switching to CPU", is a CUDA build that found no device, and
    // is not this. OpenCV's throw_no_cuda ("The called functionality is disabled for current
    // build or platform") is a CUDA function that this build left out: OpenCV without CUDA
    // (opencv/opencv#7344: "rebuild ... with CUDA support"), or cudacodec built without NVCUVID
    // (opencv/opencv#11220, cured by the Video Codec SDK's headers and WITH_NVCUVID=ON;
    // opencv/opencv#14034).
    Rule {
        id: "lib-opencv-built-without-cuda",
        patterns: &[
            "dnn module was not built with cuda backend",
            "the library is compiled without cuda support",
            "disabled for current build or platform*throw_no_cuda",
        ],
        layer: Library,
        second: None,
        cause: "The OpenCV that Python (or the program) loads was built without CUDA, or without the CUDA part this call needs: the pip opencv-python wheels and the distributions' packages have no CUDA modules, so the DNN module falls back to the CPU and cv2.cuda calls throw; cudacodec's VideoReader also needs NVCUVID, which the build leaves out unless the Video Codec SDK's headers are found.",
        fix: "Build OpenCV with opencv_contrib and -DWITH_CUDA=ON -DWITH_CUDNN=ON -DOPENCV_DNN_CUDA=ON -DCUDA_ARCH_BIN=<the card's compute capability> (for cudacodec also -DWITH_NVCUVID=ON with the Video Codec SDK's nvcuvid.h and cuviddec.h in the CUDA include folder, until the CMake summary lists NVCUVID), then uninstall pip's opencv-python / opencv-contrib-python so that build is the one imported (`cv2.getBuildInformation()` lists CUDA and cuDNN), or use a distribution of OpenCV built with CUDA (e.g. Emgu CV's -cuda package).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch's TorchScript ONNX exporter has no symbolic for an op at the requested opset
    // (pulp-platform/nemo#16: fixed by opset_version=11; pytorch/pytorch#49005): the exporter
    // and the model, not the GPU stack.
    Rule {
        id: "lib-onnx-export-unsupported-operator",
        patterns: &["exporting the operator*to onnx opset version*is not supported"],
        layer: Library,
        second: None,
        cause: "torch's ONNX exporter has no conversion for this operator at the requested opset: the op was added to ONNX (or to the exporter) in a later opset or torch release, or not at all.",
        fix: "Export with the opset the message names (`torch.onnx.export(..., opset_version=N)` where it says \"Support for this operator was added in version N\"); if it names none, upgrade torch, or replace the op with supported ones, register a custom symbolic (`torch.onnx.register_custom_op_symbolic`) or try the dynamo exporter (`dynamo=True`). The driver and toolkit need no change.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // numba's CUDA target compiles through the toolkit's NVVM, which the driver does not ship
    // (xinzhuma/monodle#23; NVIDIA/numba-cuda#69: raised when no toolkit is installed).
    Rule {
        id: "tk-numba-nvvm-missing",
        patterns: &["libnvvm cannot be found"],
        layer: Toolkit,
        second: None,
        cause: "numba's CUDA target cannot find the toolkit's NVVM library (libnvvm.so / nvvm64_*.dll) and libdevice: no CUDA toolkit is installed where numba looks, or CUDA_HOME points elsewhere.",
        fix: "Install the CUDA toolkit's compiler libraries for numba (conda: `cudatoolkit` for CUDA 11, `cuda-nvcc cuda-nvrtc` for CUDA 12; pip: `numba-cuda[cu12]`), or set CUDA_HOME to one toolkit root (a single path, not a list); `numba -s` shows what it finds.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Allocator failures in each library's words.
    Rule {
        id: "mem-allocator-failed",
        patterns: &[
            "bfcarena*failed to allocate",
            "failed to allocate memory for requested buffer",
            "ran out of memory trying to allocate",
            "outofmemoryerror",
            "out of memory while trying to allocate",
            "triton*out of memory",
            "cudamalloc failed: out of memory",
            "cumemalloc*cuda_error_out_of_memory",
        ],
        layer: Memory,
        second: None,
        cause: "The library's GPU allocator could not get the memory it asked for: the model, batch or number of parallel sessions does not fit on the card.",
        fix: "Lower what runs at once (batch size, execution threads or parallel sessions, max memory setting) and run with the card otherwise idle (`nvidia-smi` lists other programs); `stackpin vram --peak PEAK --batch N --vram SIZE` names the largest batch that fits.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The driver's state as NVML reports it.
    Rule {
        id: "drv-nvml-driver-not-loaded",
        patterns: &[
            "nvmlerror_drivernotloaded",
            "nvml_error_driver_not_loaded",
            "nvidia kernel module is not loaded",
            "nvidia driver is not loaded",
        ],
        layer: Driver,
        second: None,
        cause: "NVML finds no NVIDIA kernel module loaded: after a kernel upgrade the .run driver was not rebuilt, or the module failed to load.",
        fix: "Check `lsmod | grep nvidia` and `dmesg | grep -i nvidia`; install the headers of the running kernel and reinstall the pinned driver with --dkms (`stackpin repair MANIFEST`) so it rebuilds for new kernels, then reboot.",
        mechanism: Mechanism::DriverAccess,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "drv-nvml-unknown-error",
        patterns: &[
            "failed to initialize nvml: unknown error",
            "nvml error: unknown error",
            "nvml_error_unknown",
            "nvmlerror_unknown",
        ],
        layer: Driver,
        second: None,
        cause: "NVML cannot reach the GPU (unknown error). Inside a container this is the container losing its /dev/nvidia* device access (after `systemctl daemon-reload` with the systemd cgroup driver); on a host, a broken driver state.",
        fix: "If this ran in a container: the host driver is fine — restart the container, and stop it from recurring by giving the runtime the device nodes (`--device /dev/nvidia*`, or the NVIDIA Container Toolkit's cgroup setting / `nvidia-ctk` CDI). On a host: reboot, then reinstall the pinned driver (`stackpin repair MANIFEST`) if it stays.",
        mechanism: Mechanism::DriverAccess,
        decisive: false,
        judge: None,
    },
    // A Dockerfile's nvidia/cuda base tag that Docker Hub no longer has: NVIDIA deletes the
    // images of CUDA releases past support and the tags without a patch number (11.1-devel,
    // latest), so rebuilding an old Dockerfile cannot pull its base. Docker's "manifest for
    // nvidia/cuda:X not found: manifest unknown" (mateuszbuda/brain-segmentation-pytorch#47,
    // NVIDIA/nvidia-docker#1454, agrimgupta92/metamorph#3), podman's "reading manifest … in
    // docker.io/nvidia/cuda: manifest unknown" (NVIDIA/nvidia-docker#1768), BuildKit's "failed to
    // solve: nvidia/cuda:X: docker.io/nvidia/cuda:X: not found" (allenai/ai2thor-docker#15,
    // open-mmlab/OpenPCDet#1410, NVlabs/BundleSDF#30, anibali/docker-pytorch#46). Another image's
    // missing tag (floydhub/dl-docker:gpu, kaixhin/cuda-torch:latest) is not CUDA's.
    Rule {
        id: "tk-container-cuda-image-tag-gone",
        patterns: &[
            "nvidia/cuda:*manifest unknown",
            "failed to solve*nvidia/cuda:*: not found",
            "error: docker.io/nvidia/cuda:*: not found",
        ],
        layer: Toolkit,
        second: None,
        cause: "The base image, an nvidia/cuda tag, is no longer on Docker Hub: NVIDIA deletes the images of CUDA releases past their support and the short tags (11.1-devel without its patch number, latest), so rebuilding an older Dockerfile cannot pull the CUDA release it names.",
        fix: "Change FROM (or the build argument that names the CUDA version) to an nvidia/cuda tag that exists: the same CUDA release with its patch number (11.1.1-devel-ubuntu18.04, 11.3.1-cudnn8-devel-ubuntu20.04) or a newer CUDA release that the project's library builds and the host driver support (NVIDIA's container-images/cuda project lists the supported tags), then build again. The host's driver and GPU are not involved.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "drv-container-no-gpu-runtime",
        patterns: &[
            "could not select device driver*with capabilities: [[gpu]]",
            "unknown or invalid runtime name: nvidia",
        ],
        layer: Driver,
        second: None,
        cause: "Docker has no NVIDIA runtime to give the container the GPU: the NVIDIA Container Toolkit is not installed or not configured on the host.",
        fix: "On the host (not in the container): `nvidia-smi` must work; install the NVIDIA Container Toolkit (nvidia-container-toolkit), run `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker; a Docker installed as a snap cannot use it.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    Rule {
        id: "drv-wsl-gpu-blocked",
        patterns: &[
            "gpu access blocked by the operating system",
            "wsl*libcuda.so*not found",
            "/dev/dxg*no such file",
        ],
        layer: Driver,
        second: None,
        cause: "Under WSL the GPU belongs to the Windows driver, and Windows does not hand it to Linux (old Windows driver or WSL, or GPU paravirtualisation off).",
        fix: "Update the NVIDIA driver on the Windows side and WSL itself (`wsl --update`, then `wsl --shutdown`); never install a Linux NVIDIA driver inside WSL (it breaks /usr/lib/wsl/lib/libcuda.so).",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // The container runtime was asked for a GPU it cannot find among the host's: an index past
    // the GPUs there are (`--gpus 2` asks for two; `device=2` is the third), a UUID of a card that
    // is gone, or a value such as `false`. NVIDIA/nvidia-docker#1283,
    // NVIDIA/nvidia-container-toolkit#632, #29, #108.
    Rule {
        id: "drv-container-unknown-device",
        patterns: &["nvidia-container-cli*device error:*unknown device"],
        layer: Driver,
        second: None,
        cause: "The container runtime was asked for a GPU the host does not have: an index past the number of GPUs (`--gpus 2` asks for two GPUs, `device=2` for the third), the UUID of a card that was replaced or dropped, or a value such as `false` in NVIDIA_VISIBLE_DEVICES.",
        fix: "Run `nvidia-smi -L` on the host and request only the GPUs it lists (`--gpus all`, `--gpus 1`, `--gpus '\"device=0\"'`, or their UUIDs); recreate a container that keeps an old UUID. Under Kubernetes, make the device plugin's device-list strategy match the toolkit's (`accept-nvidia-visible-devices-as-volume-mounts`). If `nvidia-smi -L` lists fewer GPUs than the machine has, one dropped off: read `dmesg` for Xid lines. The driver needs no reinstall.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Breadth pass brE: the NVIDIA container stack's own failures, each named by its tool's line.
    // The hook binary Docker's runtime configuration names is missing: the old
    // nvidia-container-runtime-hook package was retired (its binary is now
    // nvidia-container-toolkit), a half-removed or --nodeps install. NVIDIA/nvidia-docker#1337
    // (a maintainer: the package has been end-of-life for a year), #958, #875.
    Rule {
        id: "drv-container-runtime-hook-missing",
        patterns: &["nvidia-container-runtime-hook*executable file not found"],
        layer: Driver,
        second: None,
        cause: "The NVIDIA container runtime's prestart hook (nvidia-container-runtime-hook) is not installed where Docker's runtime configuration looks: the retired nvidia-container-runtime-hook / nvidia-docker2 packages were removed or upgraded half-way (the hook now ships in nvidia-container-toolkit), or the toolkit was installed without its dependencies.",
        fix: "On the host, install the current NVIDIA container toolkit from NVIDIA's repository (`nvidia-container-toolkit`, which brings libnvidia-container1 and libnvidia-container-tools) and remove the retired nvidia-docker2 / nvidia-container-runtime packages' leftovers; then `sudo nvidia-ctk runtime configure --runtime=docker`, `sudo systemctl restart docker`, and run with `--gpus all`. The host driver needs no change when `nvidia-smi` works there.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // nvidia-container-cli running ldconfig to refresh the container's library cache and failing:
    // the ldconfig path in the toolkit's config.toml does not exist on this distribution
    // (`@/sbin/ldconfig.real` is Ubuntu's), or ldconfig cannot run in the container's namespace.
    // NVIDIA/nvidia-docker#587 (a maintainer: set ldconfig = "@/sbin/ldconfig.real" on Debian),
    // #914, NVIDIA/nvidia-container-toolkit#147, hekmak/Conf-net#5.
    Rule {
        id: "drv-container-ldcache",
        patterns: &["nvidia-container-cli*ldcache error"],
        layer: Driver,
        second: None,
        cause: "The NVIDIA container toolkit mounted the host's driver libraries into the container and could not run ldconfig to register them: the ldconfig path in its configuration does not exist on this host (`@/sbin/ldconfig.real` is Ubuntu's, `@/sbin/ldconfig` the others'), or ldconfig fails inside the image (a broken /etc/ld.so.cache, a user-namespace or security policy that stops it).",
        fix: "Check the `ldconfig = ` line in /etc/nvidia-container-runtime/config.toml against the host (`ls -l /sbin/ldconfig*`): `@/sbin/ldconfig.real` on Ubuntu, `@/sbin/ldconfig` on Debian, RHEL and the rest; keep the `@` (it means the host's binary). Upgrade the NVIDIA container toolkit, and if one image alone fails, run `ldconfig` in it (or rebuild it from a CUDA base image). The host driver needs no change.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // nvidia-container-cli refused a privilege or capability change it makes before mounting the
    // driver: SELinux enforcing on the host, or a rootless/user-namespaced engine whose ID map the
    // toolkit could not handle. NVIDIA/enroot#88 (SELinux: setenforce 0 fixed it),
    // NVIDIA/nvidia-container-toolkit#99 (subuid ranges above 65536, a bug of older releases).
    Rule {
        id: "drv-container-cli-permission",
        patterns: &[
            "nvidia-container-cli: permission error",
            "nvidia-container-cli*privilege change failed",
            "nvidia-container-cli*capability change failed",
        ],
        layer: Driver,
        second: None,
        cause: "The NVIDIA container toolkit could not change privileges or capabilities before mounting the driver into the container: a security policy on the host (SELinux enforcing) forbids it, or the engine runs rootless or in a user namespace whose ID mapping (very large subuid ranges) older libnvidia-container releases could not handle.",
        fix: "On the host: check SELinux (`getenforce`; with Enforcing, load the NVIDIA container SELinux policy or test with `sudo setenforce 0`), upgrade the NVIDIA container toolkit (nvidia-container-toolkit and libnvidia-container1 together), and for rootless Docker or Podman follow the toolkit's rootless set-up (`no-cgroups = true` in /etc/nvidia-container-runtime/config.toml) or use CDI (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, then `--device nvidia.com/gpu=all`). The driver needs no reinstall.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // nvidia-container-cli adding the GPU's device rules to a cgroup v2 eBPF device filter and
    // being refused: rootless or nested engines (LXC, Proxmox), kernels whose eBPF hardening
    // hides the existing program. NVIDIA/libnvidia-container#154 (an LXC container),
    // NVIDIA/nvidia-container-toolkit#678, #139 (no-cgroups = true; a maintainer: current releases
    // no longer update the eBPF programs), NVIDIA/libnvidia-container#176 (Bottlerocket's JIT
    // hardening), #209.
    Rule {
        id: "drv-container-device-rules",
        patterns: &["nvidia-container-cli*failed to add device rules"],
        layer: Driver,
        second: None,
        cause: "The NVIDIA container toolkit could not add the GPU's device rules to the container's cgroup v2 device filter (an eBPF program): the engine runs rootless or nested (inside LXC or Proxmox) where it may not query or replace that program, or the kernel's eBPF hardening keeps the existing filter from being read.",
        fix: "Upgrade the NVIDIA container toolkit (current releases leave the eBPF device filter to the engine); for rootless or nested engines set `no-cgroups = true` in /etc/nvidia-container-runtime/config.toml and pass the devices explicitly (`--device /dev/nvidia0 --device /dev/nvidiactl --device /dev/nvidia-uvm`), or use CDI (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, then `--device nvidia.com/gpu=all`). In an LXC container allow the NVIDIA devices in its cgroup configuration. The host driver needs no change.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Kubernetes' containerd asked for the `nvidia` runtime handler (a RuntimeClass, the GPU
    // operator's pods) that its configuration lacks: the toolkit wrote another config.toml than the
    // one this containerd reads (k0s, RKE2, k3s keep their own), or containerd was not restarted.
    // NVIDIA/gpu-operator#730, #549, #413, #1323 (k0s: the config containerd really reads).
    Rule {
        id: "drv-k8s-nvidia-runtime-not-configured",
        patterns: &[
            "no runtime for \"nvidia\" is configured",
            "no runtime for nvidia is configured",
        ],
        layer: Driver,
        second: None,
        cause: "Kubernetes asked containerd for the `nvidia` runtime handler (a RuntimeClass, or the GPU operator's own pods) and containerd has none configured: the NVIDIA container toolkit (or the GPU operator's toolkit daemonset) wrote its runtime into a config.toml this containerd does not read, or containerd was not restarted after.",
        fix: "On the GPU node, configure containerd's nvidia runtime in the file containerd really loads (`sudo nvidia-ctk runtime configure --runtime=containerd`, then `sudo systemctl restart containerd`); with the GPU operator, point its toolkit at that file and socket (toolkit env CONTAINERD_CONFIG and CONTAINERD_SOCKET: k0s, RKE2 and k3s keep their own paths). `kubectl get runtimeclass nvidia` must name the handler containerd has. The driver needs no reinstall.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // The Kubernetes device plugin's own hint after NVML would not load in its pod: the pod did
    // not run under the NVIDIA runtime, which mounts the host's libnvidia-ml.
    // NVIDIA/k8s-device-plugin#23 (setting the default runtime fixed it), #182, #444, #303.
    Rule {
        id: "drv-k8s-device-plugin-nvml",
        patterns: &[
            "failed to start nvml with error",
            "did you set the docker default runtime to",
        ],
        layer: Driver,
        second: None,
        cause: "The Kubernetes NVIDIA device plugin could not load NVML in its pod: the pod did not run under the NVIDIA container runtime (the node's default runtime is runc, or no RuntimeClass nvidia), so the host's driver libraries were not mounted into it; or the node has no working driver.",
        fix: "On the GPU node, check `nvidia-smi` first. Then make the NVIDIA runtime the default of the node's engine (`sudo nvidia-ctk runtime configure --runtime=containerd --set-as-default`, or `--runtime=docker --set-as-default`, and restart it), or deploy the plugin with `runtimeClassName: nvidia`; restart the plugin's pod and check that `kubectl describe node` lists nvidia.com/gpu. Off the GPU nodes, keep the plugin away with a nodeSelector.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // NVML refusing the GPU for lack of permission in a container (or to a non-root user): the
    // device nodes' SELinux labels or group the container's process may not use, a rootless
    // engine. NVIDIA/nvidia-container-toolkit#33 (`setsebool -P container_use_devices 1` fixed
    // it), NVIDIA/nvidia-docker#676 (a maintainer: SELinux labels, restorecon), #1523,
    // NVIDIA/gpu-operator#679, NVIDIA/nvidia-container-toolkit#268 (rootless podman).
    Rule {
        id: "drv-container-nvml-permission",
        patterns: &[
            "nvml error: insufficient permissions",
            "failed to initialize nvml: insufficient permissions",
        ],
        layer: Driver,
        second: None,
        cause: "NVML may not open the GPU's device nodes (/dev/nvidiactl, /dev/nvidia*): in a container their SELinux labels or group forbid the container's process (SELinux enforcing, a rootless engine whose user lacks the device group), outside one the user is not allowed the devices.",
        fix: "On an SELinux host let containers use the devices (`sudo setsebool -P container_use_devices 1`, or relabel the driver's files: `nvidia-container-cli -k list | sudo restorecon -v -f -`); `--privileged` as a test only. Rootless Podman or Docker: use CDI (`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, `--device nvidia.com/gpu=all`) and the device group the host gives /dev/nvidia* (`ls -l /dev/nvidia*`). Outside a container, run as a user allowed the devices. The driver needs no reinstall.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // nvidia-container-cli's driver RPC service (it queries the host driver through NVML) failing
    // before any mount: the driver side, never the image. NVIDIA/nvidia-container-toolkit#556 (a
    // maintainer: usually persistence mode off; removing a conflicting icaclient fixed it for two
    // users), NVIDIA/nvidia-docker#1252, #1675, dusty-nv/jetson-containers#102, #1246 (a driver
    // container's root that did not exist).
    Rule {
        id: "drv-container-driver-rpc",
        patterns: &[
            "nvidia-container-cli*driver error: failed to process request",
            "nvidia-container-cli*driver rpc error",
        ],
        layer: Driver,
        second: None,
        cause: "The NVIDIA container toolkit's driver service failed while it asked the host driver about the GPUs, before anything was mounted into the container: the host driver is not in a state it can query (persistence mode off or nvidia-persistenced not running, a half-loaded or mismatched driver), the driver root it was told to use (a driver container's /run/nvidia/driver) is missing, or another program's copy of an NVIDIA library sits in the way.",
        fix: "On the host: `nvidia-smi` must work; enable persistence (`sudo systemctl enable --now nvidia-persistenced`, or `sudo nvidia-smi -pm 1`) and start the container again. Run `sudo nvidia-container-cli -k -d /dev/tty info` for the toolkit's own reason; check `root =` in /etc/nvidia-container-runtime/config.toml (only a driver container sets it); remove software that ships its own NVIDIA libraries (Citrix icaclient did) and upgrade the toolkit. Reinstall the pinned driver only if `nvidia-smi` fails too.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Docker's client older than 19.03 has no --gpus flag: NVIDIA/nvidia-docker#1199 (a
    // maintainer: update the docker client to 19.03), pytorch/serve#627 (the client outdated),
    // #1165, adobe/sbmc#3. "unknown flag: --gpus all" is one argument holding the flag and its value
    // (a script's or devcontainer.json's quoting: NVIDIA/nvidia-docker#1200,
    // microsoft/vscode-remote-release#2366), the user's own command: no finding.
    Rule {
        id: "drv-container-docker-without-gpus-flag",
        patterns: &[],
        layer: Driver,
        second: None,
        cause: "The docker command line tool does not know the --gpus flag: the client is older than Docker 19.03 (the server may be newer: the client package, docker-ce-cli, is separate), so it never asks for the NVIDIA runtime's GPUs.",
        fix: "Upgrade the Docker client to 19.03 or newer (`docker version` shows Client and Server; on Debian/Ubuntu `sudo apt-get install docker-ce-cli`), then `docker run --gpus all …` with the NVIDIA container toolkit installed; with an old client, `--runtime=nvidia` (nvidia-docker2) is the equivalent. Where a script or devcontainer.json passes \"--gpus all\" as one argument, pass \"--gpus\" and \"all\" separately.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(is_old_docker_gpus_flag),
    },
    // conda's solver found no `__cuda` virtual package for a CUDA build: conda sets it from the
    // driver it finds, and a machine without a GPU driver (a `docker build`, a CI or login node)
    // has none. openmm/NNPOps#96 (CONDA_OVERRIDE_CUDA fixed it),
    // conda-forge/tensorflow-feedstock#216 (a Docker build).
    Rule {
        id: "drv-conda-no-cuda-virtual-package",
        patterns: &["nothing provides __cuda"],
        layer: Driver,
        second: None,
        cause: "conda's solver was asked for a CUDA build of a package and found no `__cuda` virtual package: conda sets it from the NVIDIA driver it finds on the machine, and this one has none it can see (a `docker build`, a CI runner or a cluster's login node without a GPU, or a driver that does not load).",
        fix: "Where the environment is built without a GPU (a Dockerfile, CI, a login node), tell conda the CUDA the target's driver supports: `CONDA_OVERRIDE_CUDA=12.4 conda install …` (or `ENV CONDA_OVERRIDE_CUDA=12.4` in the Dockerfile), the CUDA version `nvidia-smi` shows on the machine that will run it. On a GPU machine, `conda info` must list `__cuda`; if it does not, `nvidia-smi` fails too: fix the driver first.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // conda/mamba's solver found a `__cuda` virtual package, but older than the package asks
    // for: cudatoolkit X (and what pins it) constrains `__cuda >= X`, and `__cuda` is the CUDA the
    // installed driver supports. MPI-Dortmund/tomotwin-cryoet#3 (cured by a newer driver),
    // mamba-org/mamba#969 (worked around with a cudatoolkit build without the constraint: the
    // package's side, hence library second). conda's own hint "specifications were found to be
    // incompatible with your CUDA driver" is left alone: conda names `__cuda` there even when
    // another pin is the conflict (conda/conda#9897).
    Rule {
        id: "drv-conda-cuda-virtual-package-too-old",
        patterns: &["has constraint __cuda*conflicting with __cuda"],
        layer: Driver,
        second: Some(Library),
        cause: "conda's solver found the machine's `__cuda` virtual package (the CUDA version the installed NVIDIA driver supports) older than the package asks for: a cudatoolkit (or a package pinned to it) built for a newer CUDA than this driver runs.",
        fix: "Either update the NVIDIA driver to one whose CUDA (the \"CUDA Version\" `nvidia-smi` shows) is at least the package's, or ask for the build of the driver's CUDA: `conda info` shows `__cuda=X.Y`; pin cudatoolkit=X.Y (conda-forge: cuda-version=X.Y) and the framework build for it. Do not force the solve with CONDA_OVERRIDE_CUDA on the machine that runs it: the CUDA runtime refuses a driver older than itself.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // pixi's solver (rattler) without a `__cuda` candidate: pixi solves the lock file from the
    // manifest's `[system-requirements]` (cuda = "12"), not from the machine, so a CUDA build
    // (jaxlib *cuda*, pytorch cuda*) cannot be locked until the manifest declares it.
    // prefix-dev/pixi#1288 (cured by `[system-requirements] cuda = "12"`), prefix-dev/pixi#3949.
    Rule {
        id: "lib-pixi-no-cuda-system-requirement",
        patterns: &["__cuda*for which no candidates were found"],
        layer: Library,
        second: None,
        cause: "pixi could not lock a CUDA build (jaxlib, pytorch, …) because its solve has no `__cuda` virtual package: pixi takes `__cuda` from the manifest's `[system-requirements]` (or the workspace's platform), not from the machine's driver, and this manifest (or this feature or environment) declares no cuda.",
        fix: "Declare the CUDA the target machines' driver supports in the manifest: `[system-requirements]` `cuda = \"12\"` (pixi.toml; `[tool.pixi.system-requirements]` in pyproject.toml; or in the feature of the GPU environment: `pixi workspace system-requirements add cuda 12`), then `pixi lock`. Installing that lock on a machine without a GPU driver (CI, a docker build) also needs CONDA_OVERRIDE_CUDA=12.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // conda/mamba cannot find one set of packages whose CUDA pins agree: packages built against
    // different cudatoolkit / cuda-version ranges, or channels (and their priority) that do not
    // carry the matching CUDA packages. The conflict names cudatoolkit itself, not `__cuda` (the
    // driver's side, the rule above). NVIDIA/cudf#11070 (a package's own duplicate pin),
    // Kaggle/docker-python#791 (channels missing: -c nvidia -c conda-forge),
    // torchmd/torchmd-net#249 (mamba where conda solved it), pytorch/benchmark#150. A log that
    // also names `__cuda` goes to the `__cuda` rules above: they come first in the table.
    Rule {
        id: "lib-conda-cuda-pins-conflict",
        patterns: &[
            "requires cudatoolkit*but none of the providers can be installed",
            "package cudatoolkit conflicts for:",
            "cudatoolkit is not installable because it conflicts with any installable versions",
        ],
        layer: Library,
        second: None,
        cause: "conda's solver found no set of packages whose CUDA pins agree: the packages asked for were built against different cudatoolkit / cuda-version ranges, one pins cudatoolkit twice or too tightly, or the channels given (and their priority) do not carry the CUDA packages that would match. The driver is not what the solver rejected: no `__cuda` constraint is named.",
        fix: "Pin one CUDA for the whole environment (conda-forge: `cuda-version=X.Y`; older: `cudatoolkit=X.Y`) and ask every CUDA package for builds of it, with the channels their install guide lists in that order (e.g. `-c rapidsai -c conda-forge -c nvidia`); build a fresh environment rather than changing the CUDA of an existing one, and if mamba fails where conda solves (or the reverse), try the other solver. `conda search <pkg> --info` shows each build's cudatoolkit pin.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // NVRTC compiles at run time and loads its builtins library (libnvrtc-builtins.so.X.Y,
    // nvrtc-builtins64_XYZ.dll) of its own release by name from the loader path. It is missing
    // when libnvrtc came from a package (a conda env, a wheel, an app's bundled lib folder) whose
    // folder is not on the loader path, or when the libnvrtc that loaded belongs to another
    // release than the builtins present. The threads' cures split: the package's side (a wheel or
    // bundle that does not find its own builtins) and the loader path to the env's CUDA libraries
    // (lfranke/TRIPS#13); WisconsinAIVision/yolact_edge#186, nanoporetech/dorado#1319 variants.
    Rule {
        id: "lib-nvrtc-builtins-not-found",
        patterns: &[
            "failed to open libnvrtc-builtins",
            "failed to open nvrtc-builtins64_",
            "make sure that libnvrtc-builtins*is installed correctly",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "NVRTC (the CUDA runtime compiler a library uses for its JIT kernels) could not load its builtins library of the same release (libnvrtc-builtins.so.X.Y / nvrtc-builtins64_XYZ.dll): the libnvrtc that loaded came from a package (torch's or an app's lib folder, a wheel, a conda env) whose builtins are not on the loader path, or from another CUDA release than the builtins installed.",
        fix: "Put the builtins of the same release as the loaded libnvrtc on the loader path: for a conda env `export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH` (with cuda-nvrtc of that X.Y installed); for pip, the nvidia-cuda-nvrtc wheel of that major and its lib folder; otherwise the toolkit's lib64 of that release. `ldd`/`ls` on the libnvrtc in use shows which release it is; a package that bundles libnvrtc without its builtins needs its fixed release.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // PyTorch's CUDA *driver* API calls (C10_CUDA_DRIVER_CHECK: the expandable_segments allocator's
    // cuMemCreate / cuMemMap / cuMemSetAccess, symmetric memory) refused: a full card, or a driver
    // whose virtual-memory calls fail with memory free (WSL's GPU paravirtualisation, Jetson).
    // unslothai/unsloth#2401 (out of memory, Jetson), pytorch/pytorch#192330 (unknown error,
    // WSL2), microsoft/WSL#41176 (device not ready, WSL2).
    Rule {
        id: "mem-torch-driver-api-alloc",
        patterns: &[
            "cuda driver error: out of memory",
            "cuda driver error: unknown error",
            "cuda driver error: device not ready",
            "cuda driver error: operation not supported",
        ],
        layer: Memory,
        second: Some(Driver),
        cause: "PyTorch's allocator asked the CUDA driver's virtual-memory API for GPU memory (the expandable_segments allocator, or symmetric memory) and the driver refused: the card is full, or the driver's virtual-memory calls fail with memory still free (under WSL's GPU paravirtualisation and on Jetson).",
        fix: "If PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) sets expandable_segments:True, set expandable_segments:False and run again: under WSL and on Jetson those calls fail with memory free. Otherwise the card is really full: close other GPU programs (`nvidia-smi` lists them), lower the batch or the framework's memory budget (vLLM: --gpu-memory-utilization), and size it with `stackpin vram --peak PEAK --batch N --vram SIZE`; under WSL the usable memory sits below what `nvidia-smi` shows free.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // WSL's dxg bridge refusing to make an allocation resident (ENOMEM): the program asks for more
    // than WSL's GPU paravirtualisation gives, below what nvidia-smi shows free.
    // syv-ai/qwen38-27b-rtx3090#2, microsoft/WSL#41176. The dxg adapter-info lines
    // (`dxgkio_query_adapter_info: Ioctl failed: -22`) are no cause: healthy boots print them too.
    Rule {
        id: "mem-wsl-dxg-make-resident",
        patterns: &["dxgkio_make_resident*-12"],
        layer: Memory,
        second: Some(Driver),
        cause: "Under WSL the GPU's paravirtualisation (dxg) could not make an allocation resident (ENOMEM): the program asks for more GPU memory than WSL lets it have, which sits below what `nvidia-smi` shows free, or PyTorch's expandable_segments allocator makes virtual-memory calls WSL refuses.",
        fix: "Lower the memory the program asks for (batch, context length; vLLM: --gpu-memory-utilization) and set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False; keep the Windows NVIDIA driver and WSL current (`wsl --update`, then `wsl --shutdown`). Never install a Linux NVIDIA driver inside WSL.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // flash-attn's own check of the GPU's architecture (2.x: compute capability 8.0 or newer;
    // 1.x said Turing): a V100 or T4 cannot run it, and an Ampere card that says so has a
    // flash-attn build that does not fit. vllm-project/vllm#8189, Dao-AILab/flash-attention#762,
    // microsoft/MInference#51 (V100S), Dao-AILab/flash-attention#1485 (A800).
    // TensorFlow's "DNN library is not found": cuDNN did not initialise for the convolution.
    // Alone, most often a cuDNN that is missing or older than the one TensorFlow was built with
    // (tensorflow/text#1167, tensorflow/tensorflow#62170, edwardyehuang/CAR#1 with "Loaded runtime
    // CuDNN library" lines); also the GPU out of memory when cuDNN starts (the maintainer's first
    // guess in edwardyehuang/CAR#1; googlecolab/colabtools#3870). With the version line, the
    // catalogue's cuDNN mismatch entry answers instead.
    Rule {
        id: "tk-tf-dnn-library-not-found",
        patterns: &["dnn library is not found"],
        layer: Toolkit,
        second: Some(Memory),
        cause: "TensorFlow could not start cuDNN for a convolution: usually the cuDNN it loads is missing or older than the one it was built with (look above for \"Loaded runtime CuDNN library\"), otherwise the GPU had no memory left when cuDNN started.",
        fix: "Install the cuDNN version TensorFlow's release was built with (its tested build configurations; with pip, `pip install tensorflow[and-cuda]` brings its own) and remove older copies from LD_LIBRARY_PATH / PATH; if the versions match, let TensorFlow grow its memory (TF_FORCE_GPU_ALLOW_GROWTH=true) and stop other GPU programs.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    Rule {
        id: "lib-flash-attn-gpu-too-old",
        patterns: &["flashattention only supports * gpus or newer"],
        layer: Library,
        second: Some(Hardware),
        cause: "flash-attn checks the GPU's architecture and refuses it: FlashAttention 2 runs only on compute capability 8.0 or newer (Ampere, Ada, Hopper), so a V100, T4 or RTX 20xx cannot use it; on an Ampere or newer card this message means the flash-attn build does not fit the GPU or torch.",
        fix: "On an older GPU turn flash-attn off and use another attention implementation: transformers `attn_implementation=\"sdpa\"` (or \"eager\"), the tool's own flash-attention switch off, vLLM another backend (VLLM_ATTENTION_BACKEND=XFORMERS); or run on an Ampere or newer GPU. On an Ampere or newer GPU, reinstall flash-attn built for the installed torch and CUDA (`pip install flash-attn --no-build-isolation`).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The frameworks above torch ask `torch.cuda.is_available()` (or `device_count()`) before
    // anything runs and word a False in their own terms: Lightning's device parser ("You
    // requested GPUs: [0] But your machine only has: []", Lightning-AI/pytorch-lightning#899),
    // its accelerator connector ("GPUAccelerator can not run on your system since the
    // accelerator is not available", open-edge-platform/anomalib#510; "No supported gpu backend
    // found!", microsoft/mattergen#217), YOLOv5/YOLOv7's select_device ("CUDA unavailable,
    // invalid device 0 requested", WongKinYiu/yolov7#1248), Ultralytics' ("torch.cuda.is_available():
    // False" under "Invalid CUDA 'device=0' requested", ogkalu2/comic-translate#17), accelerate's
    // mixed-precision check ("fp16 mixed precision requires a GPU", bmaltais/kohya_ss#719) and
    // transformers' TrainingArguments ("... can only be used on CUDA devices", LHRLAB/ChatKBQA#13).
    // The cures of the threads that state one are a CPU-only torch (#899, anomalib#510,
    // comic-translate#17; lightning or diffusers[torch] pulled it in: Lightning-AI/pytorch-
    // lightning#18968), but is_available() is also False when torch cannot reach the driver (a
    // driver older than the wheel's CUDA: hiyouga/LlamaFactory#1132, where torch's own warning
    // says so and the catalogue answers): the library first, the driver second. Left alone: an
    // index past the GPUs there are ("only has: [0]", YOLOv5's "Invalid CUDA '--device 0'"
    // raised for either cause) and Lightning's "GPU available: True" banner.
    Rule {
        id: "lib-framework-sees-no-cuda",
        patterns: &[
            "but your machine only has: []",
            "gpuaccelerator can not run on your system since the accelerator is not available",
            "no supported gpu backend found",
            "cuda unavailable, invalid device * requested",
            "torch.cuda.is_available(): false",
            "fp16 mixed precision requires a gpu",
            "(`--fp16_full_eval`) can only be used on cuda devices",
        ],
        layer: Library,
        second: Some(Driver),
        cause: "The training framework (Lightning, YOLOv5/Ultralytics, accelerate, transformers' Trainer) asked torch for a CUDA device and torch said there is none (torch.cuda.is_available() is False): most often the installed torch is the CPU-only build (pip's default on Windows, or a dependency such as lightning or diffusers[torch] replaced the CUDA build), otherwise torch cannot reach the driver (none loaded, or older than the CUDA the wheel was built with).",
        fix: "Run `python -c \"import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\"`. A `+cpu` version or `None` for the CUDA version is the CPU build: reinstall torch and torchvision from the CUDA wheel index the manifest pins (e.g. .../whl/cu121), then install the framework after them (or with `--no-deps`) so it does not pull the CPU build back. With a CUDA build, run `nvidia-smi`: no driver, or a driver older than the wheel's CUDA, is the cause (install or update the driver). On a Mac there is no CUDA: pass accelerator='mps' or 'cpu'.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // PyTorch's DataLoader workers (torch.multiprocessing) hand batches over in shared memory
    // (/dev/shm), 64 MB by default in a Docker container: the worker dies of SIGBUS, or the
    // shared file cannot be written. bytedance/Protenix#2, fastai/docker-containers#21,
    // idiap/ESLAM#20, NVIDIA/flownet2-pytorch#43, Duankaiwen/CenterNet#56.
    Rule {
        id: "mem-shm-dataloader-workers",
        patterns: &[
            "dataloader worker*killed by signal: bus",
            "dataloader's workers are out of shared memory",
            "unexpected bus error encountered in worker",
            "insufficient shared memory (shm)",
            "unable to write to file </torch",
        ],
        layer: Memory,
        second: None,
        cause: "PyTorch's DataLoader workers pass batches to the training process through shared memory (/dev/shm) and it ran out: a container's default /dev/shm is 64 MB, far below a few batches; the GPU and the host's RAM are not the limit.",
        fix: "Give the container more shared memory: `docker run --shm-size=16g` (or `--ipc=host`; Kubernetes: an emptyDir with medium: Memory mounted at /dev/shm) and check it with `df -h /dev/shm`; or lower the DataLoader's num_workers (0 loads in the main process) or the batch size. Outside a container, free or enlarge /dev/shm itself.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // bfloat16 asked of a GPU older than Ampere (compute capability below 8.0), refused by the
    // library that checks it: transformers' TrainingArguments, accelerate, vLLM.
    // tatsu-lab/stanford_alpaca#133, OptimalScale/LMFlow#88, vllm-project/vllm#946,
    // canopyai/Orpheus-TTS#44.
    Rule {
        id: "lib-bf16-gpu-too-old",
        patterns: &[
            "your setup doesn't support bf16/gpu",
            "bf16 mixed precision requires pytorch >= 1.10 and a supported device",
            "bfloat16 is only supported on gpus with compute capability of at least 8.0",
        ],
        layer: Library,
        second: Some(Hardware),
        cause: "The library was asked for bfloat16 (bf16) and refuses this GPU: bf16 needs compute capability 8.0 or newer (Ampere, Ada, Hopper), which a V100, T4, P100, P40 or RTX 20xx does not have; accelerate also says it when torch is older than 1.10 or has no CUDA.",
        fix: "Ask for float16 or float32 instead of bf16: transformers `fp16=True` (not `bf16=True`) or `--fp16`, accelerate `--mixed_precision fp16`, vLLM `--dtype half` (or `--dtype float`), the tool's own precision setting; or run on an Ampere or newer GPU. On an Ampere or newer GPU, check that torch is 1.10 or newer with CUDA (`torch.cuda.is_bf16_supported()`).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A DataLoader worker ended by SIGKILL ("signal: Killed") is the kernel's out-of-memory
    // killer or a scheduler's memory limit taking host RAM back: open-mmlab/mmrotate#501 (16 to
    // 24 GB cured it), gemcollector/RL-ViGen#17 (memory growing over the episodes),
    // thangvubk/SoftGroup#18, pytorch/pytorch#8976 (SLURM's --mem-per-cpu). Bus error is the
    // shared-memory rule's; a segmentation fault or "Terminated" says nothing of memory.
    Rule {
        id: "mem-dataloader-worker-oom-killed",
        patterns: &["dataloader worker*killed by signal: killed"],
        layer: Memory,
        second: None,
        cause: "A DataLoader worker was ended with SIGKILL (\"signal: Killed\"): the kernel's out-of-memory killer, or a job scheduler's or container's memory limit, took it when host RAM ran out. The GPU and its driver are not involved; shared memory running out shows as \"signal: Bus error\" instead.",
        fix: "Confirm it with `dmesg | grep -i -E 'killed process|out of memory'` (or the scheduler's job record) and watch `free -h` while it runs; then use fewer DataLoader workers (num_workers=0-2), a smaller batch or prefetch_factor, and load samples in __getitem__ instead of holding the dataset in every worker; or give the job more RAM (SLURM --mem, docker --memory) or swap.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch refusing an op on two floating-point precisions (half or bfloat16 against float32):
    // the model, an adapter or the input was cast and another part was not, or a half model runs
    // outside autocast. robometer/robometer#38 (autocast cured it), clovaai/donut#141 (the
    // transformers release the code was written for), axolotl-ai-cloud/axolotl#473 (a peft
    // patch), OpenGVLab/DCNv4#24 (an extension's backward without bf16). Integer dtypes (a loss
    // given float targets) are the user's data, not this family.
    Rule {
        id: "lib-mixed-precision-dtype-mismatch",
        patterns: &[],
        layer: Library,
        second: None,
        cause: "A torch op got tensors of two floating-point precisions (half or bfloat16 against float32): the model, an adapter (LoRA, peft) or the input was cast to one precision and another part was not, or a half-precision model runs outside autocast; the code and the library release it calls disagree on the dtype. The driver, toolkit and GPU are not involved.",
        fix: "Run the forward pass under autocast (`with torch.autocast(\"cuda\", dtype=torch.float16)`, or bfloat16) or cast the model and its inputs to one dtype (`model.to(dtype)`, `inputs.to(model.dtype)`); check the project's precision flags (fp16/bf16, 8-bit loading) against its scripts, and install the transformers/peft releases it pins (newer ones often fix the cast).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(mixes_float_precisions),
    },
    // torch's GradScaler (AMP loss scaling) refusing how it is used: float16 gradients it will
    // not unscale (trainable weights loaded in half), or stepped without scaler.scale(loss) or
    // with no gradients recorded (a second scaler beside accelerate's own).
    // ShivamShrirao/diffusers#131, pytorch/pytorch#74739 (fp16 weights), huggingface/accelerate#357
    // (accelerate drives the scaler itself), Haochen-Wang409/HPM#10.
    Rule {
        id: "lib-grad-scaler-misuse",
        patterns: &[
            "attempting to unscale fp16 gradients",
            "but _scale is none",
            "no inf checks were recorded",
        ],
        layer: Library,
        second: None,
        cause: "torch's GradScaler (mixed precision's loss scaling) refused how the training code uses it: it unscales float32 gradients only, so trainable weights loaded in float16 give gradients it refuses; or the loop stepped it without scaler.scale(loss) first, or stepped an optimizer it recorded no gradients for (a scaler of its own beside accelerate's or Lightning's). The driver, toolkit and GPU are not involved.",
        fix: "Keep the trainable weights in float32 under fp16 mixed precision (no `.half()` or torch_dtype=float16 for the trained part; LoRA/peft adapters in float32, or the peft release the project pins), or train in bf16 without a scaler; call scaler.scale(loss).backward(), scaler.step(optimizer), scaler.update() in that order, and under accelerate or Lightning let them drive the scaler (or use the project's fp16 code path).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // mmcv's compiled operators (mmcv._ext) are not in the installed package: the lite `mmcv`
    // 1.x package carries none (mmcv-full does), or the wheel or source build has no ops for this
    // torch and CUDA. chenhang98/BPR#13, open-mmlab/mmdetection#3272,
    // XLearning-SCU/2022-CVPR-AirNet#5, open-edge-platform/geti#2557 (mim install mmcv-full).
    Rule {
        id: "lib-mmcv-ops-missing",
        patterns: &[
            "no module named 'mmcv._ext'",
            "no module named \"mmcv._ext\"",
        ],
        layer: Library,
        second: None,
        cause: "mmcv's compiled CUDA operators (mmcv._ext) are not installed: the lite `mmcv` 1.x package has none (they are in `mmcv-full`), or the mmcv wheel or source build was made without ops, or for another torch and CUDA than the installed ones.",
        fix: "Uninstall every mmcv (`pip uninstall -y mmcv mmcv-full`) and install the build with ops for the installed torch and CUDA: `pip install -U openmim && mim install mmcv-full` for OpenMMLab 1.x code (mmdet 2.x), `mim install \"mmcv>=2.0.0\"` for 2.x code, or pip with the wheel index mmcv's installation guide names for your torch and CUDA versions; a source build needs MMCV_WITH_OPS=1 and nvcc of torch's CUDA. `python -c \"import mmcv.ops\"` must then import.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // OpenMMLab codebases (mmdet, mmseg, mmdet3d, ...) check on import that the installed mmcv
    // is in the range they support. open-mmlab/mmdetection#5803, #4058, #11636,
    // open-mmlab/mmcv#3096 (mim install mmcv==2.1.0 for mmdet 3.x).
    Rule {
        id: "lib-mmcv-version-range",
        patterns: &["mmcv==* is used but incompatible"],
        layer: Library,
        second: None,
        cause: "The OpenMMLab codebase (mmdet, mmseg, mmdet3d, ...) supports only the mmcv versions in the range it prints, and the installed mmcv is outside it: the two were installed for different OpenMMLab generations (mmdet 2.x wants mmcv-full 1.x, mmdet 3.x wants mmcv 2.0-2.1).",
        fix: "Install an mmcv inside the printed range, built for the installed torch and CUDA (`pip uninstall -y mmcv mmcv-full`, then `mim install \"mmcv>=X,<Y\"` with the printed bounds), or the release of the codebase that accepts the installed mmcv; keep one mmcv package only. Do not edit the version check: the ops of another mmcv generation fail later.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // NVIDIA apex installed without its C++/CUDA extensions (`--cpp_ext --cuda_ext` lost: the
    // unrelated `apex` package, a pip that drops --global-option, build isolation hiding torch),
    // so its fused modules are missing. NVIDIA/apex#499, #633 (fused_adam_cuda), #866 (amp_C),
    // #1193 and openai/vdvae#11 (FusedAdam requires cuda extensions), NVIDIA/apex#86,
    // Alpha-VLLM/LLaMA2-Accessory#8.
    Rule {
        id: "lib-apex-cuda-ext-missing",
        patterns: &[
            "no module named 'fused_layer_norm_cuda'",
            "no module named 'fused_adam_cuda'",
            "no module named 'amp_c'",
            "no module named 'fused_dense_cuda'",
            "no module named 'syncbn'",
            "apex.optimizers.fused*requires cuda extensions",
            "apex was installed without --cuda_ext",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "NVIDIA apex is installed without its C++/CUDA extensions (fused_layer_norm_cuda, amp_C, fused_adam_cuda, ...): it was installed from Python only (`pip install apex` is another package; a newer pip drops --global-option; build isolation hides torch), or the extension build failed quietly, most often because nvcc's CUDA is not torch's.",
        fix: "Build apex from its repository with the extensions, in the venv that runs it: `pip uninstall -y apex`, then in the apex checkout `pip install -v --no-cache-dir --no-build-isolation --config-settings \"--build-option=--cpp_ext\" --config-settings \"--build-option=--cuda_ext\" ./` with nvcc of the CUDA that `torch.version.cuda` names (CUDA_HOME); the log must show the CUDA extensions compiling. Or drop apex for torch's own LayerNorm, torch.optim.AdamW(fused=True) and torch.amp.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // detectron2's compiled operators (detectron2._C) are not built in the environment that runs
    // it (run from the source folder before building, a build that failed). The maintainer's
    // answer in facebookresearch/detectron2#444, #157 and #538: build it as INSTALL.md says;
    // collect_env's own line in #2211 and #2241.
    Rule {
        id: "lib-detectron2-ops-not-built",
        patterns: &[
            "cannot import name '_c' from 'detectron2",
            "detectron2._c*failed to import",
            "detectron2._c*not built correctly",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "detectron2's compiled operators (detectron2._C) are not built for this environment: the source folder is run before it was built, the build failed (look for nvcc or compiler errors in its log), or it was built in another venv.",
        fix: "Build detectron2 in the venv that runs it: `python -m pip install -e detectron2` from the checkout (or pip from its repository) with torch installed first and CUDA_HOME pointing at the toolkit of `torch.version.cuda`; run your script from outside the source folder, and check with `python -m detectron2.utils.collect_env` that detectron2._C imports. After a torch upgrade delete build/ and **/*.so and build again.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torchvision's compiled ops without CUDA kernels (only CPU, Meta, ... registered): a CPU
    // torchvision beside a CUDA torch, or a source build that skipped CUDA.
    // ltdrdata/ComfyUI-Impact-Pack#915 (reinstall the torch packages as one set),
    // easybuilders/easybuild-easyblocks#2931 (FORCE_CUDA for a source build).
    Rule {
        id: "lib-torchvision-ops-without-cuda",
        patterns: &["could not run 'torchvision::*with arguments from the 'cuda' backend"],
        layer: Library,
        second: None,
        cause: "torchvision's compiled operators have no CUDA kernels: a CPU-only torchvision (or one from another index or version) is installed beside a CUDA torch, or torchvision was built from source without CUDA.",
        fix: "Reinstall torch, torchvision and torchaudio together from the same CUDA wheel index with matching versions (`pip install torch==X torchvision==Y torchaudio==Z --index-url <torch's cuXYZ index>`, the manifest's `library.pip.requirements`) and check that `torchvision.__version__` carries the same +cuXYZ as torch; for a source build set FORCE_CUDA=1.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Triton's check of a compiled kernel's shared memory against the GPU's per-block limit
    // (triton/compiler/compiler.py raises OutOfResources): the kernel's tile configuration (block
    // sizes, num_stages) needs more on-chip memory than this card has; GPU memory (VRAM) is not
    // the limit. OpenSpaceAI/DEST3D#2 and alipay/PainlessInferenceAcceleration#35 (lower
    // num_stages), Yuliang-Liu/MonkeyOCR#25 (a patch), FlashML-org/FreeToken#246 (RTX 20 series
    // not supported), state-spaces/mamba#387.
    Rule {
        id: "lib-triton-shared-memory-limit",
        patterns: &["out of resource: shared memory"],
        layer: Library,
        second: Some(Hardware),
        cause: "A Triton kernel of the library is configured for more on-chip shared memory per block than this GPU has (Required above the Hardware limit: about 100 KB on consumer and older cards against 164-228 KB on A100/H100): the library's tile sizes or num_stages were tuned for a bigger GPU. It is not GPU memory: a smaller batch does not help.",
        fix: "Update the library (newer releases tune their Triton kernels per GPU) or use its setting for smaller tiles or fewer stages (num_stages, block sizes; the project's patch for this GPU); otherwise switch the library to its non-Triton path or run on a GPU it supports. Freeing GPU memory changes nothing.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // CUPTI refused by the driver: since 418.43 the driver lets only administrators read the
    // GPU performance counters (NVIDIA's ERR_NVGPUCTRPERM), so every profiler on CUPTI fails
    // the same way (TensorFlow's cupti_tracer, Paddle's device_tracer, habitat, Nsight
    // Compute). PaddlePaddle/Paddle#35857 (a container: --cap-add SYS_ADMIN as root),
    // geoffxy/habitat#5, HazyResearch/ThunderKittens#73 (ncu's wording). torch's Kineto prints
    // the code as a hint ("If you see CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, refer to ...") with
    // other errors: that line is left alone (`cupti_privileges_refused`).
    Rule {
        id: "drv-cupti-counters-admin-only",
        patterns: &[],
        layer: Driver,
        second: None,
        cause: "The NVIDIA driver restricts the GPU performance counters to administrators (its default since 418.43), so the profiler (CUPTI: TensorBoard's or torch.profiler's GPU trace, Nsight Compute) is refused; training itself is not affected.",
        fix: "Allow profiling for all users in the driver (`options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d/, then rebuild the initramfs and reboot; on Windows the NVIDIA Control Panel's developer setting), or run the profiler as root; in a container start it with `--cap-add SYS_ADMIN`. Or turn the GPU profiling off (TensorBoard's profile_batch=0).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(cupti_privileges_refused),
    },
    // triton's compiled part (triton/_C/libtriton.so, and in 3.x the NVIDIA backend's _C) is not
    // where the package looks: a source checkout imported before it was built, an editable
    // install run from elsewhere, or an incomplete wheel. triton-lang/triton#4272 (built with
    // `pip install -e python`), ByteDance-Seed/Triton-distributed#28. A module triton's release
    // moved ('triton.code_gen', 'triton.common') and a folder named triton shadowing the package
    // ("'triton' is not a package") are other causes, left alone.
    Rule {
        id: "lib-triton-compiled-module-missing",
        patterns: &[
            "no module named 'triton._c",
            "no module named `triton._c",
            "no module named 'triton.backends.nvidia._c",
            "no module named `triton.backends.nvidia._c",
        ],
        layer: Library,
        second: None,
        cause: "The installed triton package lacks its compiled part (triton._C / libtriton, or the NVIDIA backend's _C): a source checkout imported before it was built, an editable install used from another folder, or an incomplete wheel for this Python.",
        fix: "Reinstall triton as a complete build for this interpreter: the triton release the installed torch pins (`pip install --force-reinstall triton==<the version torch requires>`, see `pip show torch`), or from a source checkout build it (`pip install -e python`, or a plain `pip install .`) before importing.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch.utils.cpp_extension builds C++/CUDA extensions with ninja and cannot run it: not
    // installed in the venv, or not on the PATH of the process (a Jupyter kernel, an IDE,
    // Windows). NX-AI/xlstm#76, zhanghang1989/PyTorch-Encoding#89, #167 (ninja.exe on PATH).
    Rule {
        id: "tk-build-ninja-missing",
        patterns: &["ninja is required to load c++ extension"],
        layer: Toolkit,
        second: None,
        cause: "PyTorch's extension builder (torch.utils.cpp_extension) compiles C++/CUDA extensions with ninja, and ninja is not installed in this environment or not on the PATH of the process that builds (a Jupyter kernel or IDE started with another PATH; on Windows, ninja.exe's folder missing from PATH).",
        fix: "Install ninja in the same venv (`pip install ninja`) and check that `ninja --version` runs from the same shell or kernel (on Windows put ninja.exe's folder on PATH); then build again. The build also needs the CUDA toolkit of torch's CUDA (CUDA_HOME) and a host compiler.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch.utils.cpp_extension's own table of architectures: an arch in TORCH_CUDA_ARCH_LIST,
    // or the visible GPU's, that the installed torch does not know (a torch older than the
    // card, an arch newer than its CUDA). OpenBMB/BMTrain#83 (9.0+PTX taken off the list),
    // tianzhi0549/FCOS#385 (CUDA 11.1 or newer for 8.6), NVIDIA/apex#615.
    Rule {
        id: "lib-torch-extension-arch-unknown",
        patterns: &["unknown cuda arch (*) or gpu not supported"],
        layer: Library,
        second: Some(Toolkit),
        cause: "Building a CUDA extension, torch's cpp_extension met a GPU architecture it does not know: TORCH_CUDA_ARCH_LIST names an arch newer than this torch and its CUDA support, or the GPU itself is newer than the installed torch (8.6 needs a torch for CUDA 11.1+, 8.9 and 9.0 CUDA 11.8+, Blackwell CUDA 12.8+).",
        fix: "Set TORCH_CUDA_ARCH_LIST to the archs this torch knows and the GPU needs (e.g. \"8.0;8.6+PTX\"; unset it to build for the visible GPU), or install a torch (and a matching CUDA toolkit for nvcc) new enough for the GPU, then rebuild the extension from a clean build folder.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // tiny-cuda-nn's torch bindings are built per compute capability (tinycudann_bindings/_86_C
    // …); at import it looks for the card's and finds none: the extension was built on another
    // GPU or for TCNN_CUDA_ARCHITECTURES that leave this card out. NVlabs/tiny-cuda-nn#434
    // (rebuilt with TCNN_CUDA_ARCHITECTURES), umautobots/LONER#6 (re-installed for the card),
    // NVlabs/tiny-cuda-nn#245 (an RTX 4090: 89 needs a toolkit and torch of CUDA 11.8+), #490.
    Rule {
        id: "lib-extension-not-built-for-this-gpu",
        patterns: &["could not find compatible * extension for compute capability"],
        layer: Library,
        second: Some(Toolkit),
        cause: "The library's CUDA extension was compiled for other GPU architectures than this card's compute capability (tiny-cuda-nn builds one binding per architecture, chosen at build time from the GPU it was built on or TCNN_CUDA_ARCHITECTURES), so at import there is no build for this GPU.",
        fix: "Rebuild the extension on (or for) this GPU: `pip uninstall tinycudann` (delete leftover tinycudann* folders in site-packages), then set TCNN_CUDA_ARCHITECTURES to the card's compute capability without the dot (e.g. 86, or \"70;86\" for a cluster with both) and reinstall the torch bindings with `--no-build-isolation`; a card newer than the toolkit (89 and 90 need CUDA 11.8+) needs nvcc and torch of a CUDA that knows it.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // thrust's scratch allocation on the GPU failing (`temporary_buffer::allocate:
    // get_temporary_buffer failed`, thrust's bad_alloc from sort/unique/reduce): the device is
    // out of memory. zeliu98/CloserLook3D#33 (batch_size=100 with 42 of 48 GiB in use; smaller
    // batches train), NVIDIA/MinkowskiEngine#288, #331, PaddlePaddle/Paddle#20021 (argsort of a
    // large tensor).
    Rule {
        id: "mem-thrust-temporary-buffer",
        patterns: &["get_temporary_buffer failed"],
        layer: Memory,
        second: Some(Library),
        cause: "thrust (used by the library's CUDA ops: sorting, unique, reductions) could not allocate its temporary buffer on the GPU: the device is out of memory at that step, the input (points, voxels, elements to sort) being larger than the memory left.",
        fix: "Lower the batch size or the number of points/voxels per sample and run again with the card otherwise idle (`nvidia-smi` lists other programs); `torch.cuda.empty_cache()` between steps returns torch's cached blocks that thrust cannot use. If it fails with memory free, report the op and input size to the library.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // JAX's backend start-up failing for CUDA without a reason another rule reads (the CUDA
    // components check, the plugin check, a driver status): jax, jaxlib and its CUDA wheels are
    // not one install for this machine. magenta/mt3#145 (jax[cuda12_pip] instead of
    // cuda11_local), google-deepmind/clrs#98 (jaxlib's version), jax-ml/jax#20722.
    Rule {
        id: "lib-jax-cuda-backend-init",
        // A driver status on the same line is the codes family's, which ranks first.
        patterns: &[
            "cuda backend failed to initialize",
            "unable to initialize backend 'cuda'",
            "backend 'cuda' failed to initialize",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "JAX could not start its CUDA backend and fell back to the CPU: the installed jaxlib has no working CUDA plugin for this machine (a CPU-only jaxlib, a jaxlib or jax-cuda plugin of another release than jax, a `cuda11_local`/`cuda12_local` install whose CUDA is not on the loader path).",
        fix: "Reinstall JAX as one set with its own CUDA wheels in the venv: `pip uninstall -y jax jaxlib jax-cuda12-plugin jax-cuda12-pjrt`, then `pip install -U \"jax[cuda12]\"` (or a pinned `jax[cuda12]==X`); take other CUDA copies off LD_LIBRARY_PATH, and run with TF_CPP_MIN_LOG_LEVEL=0 to read the underlying reason. `python -c \"import jax; print(jax.devices())\"` must list the GPU.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The C++ runtime that loads (libstdc++) older than the one a package was built against:
    // the system's /usr/lib copy found before a conda env's newer one, or an env whose own copy
    // is old. pytorch/pytorch#157709 (the env's libstdc++.so.6 link missing),
    // VKCOM/YouTokenToMe#113 (conda's libgcc and the env's lib on LD_LIBRARY_PATH),
    // kvcache-ai/ktransformers#524, FFTAI/Wiki-GRx-Gym#6 (the env's libstdcxx-ng outdated).
    // Its C++ ABI version nodes (CXXABI_1.3.x) are the same library's:
    // ContinuumIO/anaconda-issues#5191 (an old conda libgcc; cured by libgcc-ng),
    // OSGeo/gdal#1759 (the system's copy first), CompuCell3D/CompuCell3D#830.
    Rule {
        id: "lib-libstdcxx-too-old",
        patterns: &[
            "version `glibcxx_3.4.*' not found",
            "version 'glibcxx_3.4.*' not found",
            "version `cxxabi_1.3.*' not found",
            "version 'cxxabi_1.3.*' not found",
        ],
        layer: Library,
        second: None,
        cause: "The C++ runtime that loads (libstdc++.so.6) is older than the one this package was built against: usually the system's copy is found before the newer one in the conda env (or the env's own libstdc++ is outdated, or its libstdc++.so.6 link is missing). The GPU stack is not involved.",
        fix: "Give the process a libstdc++ with that GLIBCXX (or CXXABI) version: in a conda env `conda install -c conda-forge libstdcxx-ng` (or `libgcc`) and put $CONDA_PREFIX/lib first on LD_LIBRARY_PATH (restore its libstdc++.so.6 link if it is missing); outside conda update the system's libstdc++6 (the GCC runtime) or install a build of the package for this OS. Check with `strings <the libstdc++.so.6 it names> | grep -E 'GLIBCXX|CXXABI'`.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // TensorRT's builder finding no tactic for a layer within the memory it may use (its
    // workspace / memory-pool limit), or none this release has for the layer's type and
    // precision. dusty-nv/jetson-inference#1499 and NVIDIA/TensorRT#1766 (a larger workspace),
    // tensorflow/tensorrt#120 (a newer TF-TRT for conv2d_transpose), tensorflow/tensorflow#32518.
    Rule {
        id: "mem-tensorrt-no-tactic",
        patterns: &["could not find any implementation for node"],
        layer: Memory,
        second: Some(Library),
        cause: "TensorRT's builder found no implementation (tactic) for a layer that fits the memory it may use: the workspace / memory-pool limit is too small for the layer's kernels (or the GPU has too little free memory); otherwise this TensorRT release has no kernel for that layer's type, shape or precision.",
        fix: "Build again with a larger workspace: trtexec --memPoolSize=workspace:4096 (--workspace=4096 before TensorRT 8.4), in Python config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 4 << 30), with other GPU programs stopped; if it still fails, the layer is not supported as built: upgrade TensorRT (or TF-TRT / the exporter), or export the layer another way or in another precision (fp16/fp32 instead of int8).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A C/C++ compile that cannot find the CUDA toolkit's headers (cuda_runtime.h and the math
    // libraries'): no toolkit with its development part, or one the build does not look in.
    // NVIDIA/nccl#131 (conda's cuda-toolkit), open-mmlab/mmdetection#71 (a newer CUDA),
    // CharlesShang/DCNv2#20 and HawkAaron/warp-transducer#70 (the toolkit's include folder
    // added), Yuliang-Liu/Box_Discretization_Network#41.
    Rule {
        id: "tk-cuda-headers-missing",
        patterns: &[
            "fatal error: cuda_runtime.h:",
            "fatal error: cuda_runtime_api.h:",
            "fatal error: cuda.h:",
            "fatal error: cublas_v2.h:",
            "fatal error: cusparse.h:",
            "fatal error: cuda_fp16.h:",
            "fatal error: curand.h:",
            "fatal error: cufft.h:",
            "fatal error: cusolverdn.h:",
            "cannot open include file: 'cuda_runtime",
            "cannot open include file: 'cuda.h'",
        ],
        layer: Toolkit,
        second: None,
        cause: "The compiler cannot find the CUDA toolkit's headers (cuda_runtime.h and those of cuBLAS, cuSPARSE, ...): no CUDA toolkit with its development part is installed (a driver or runtime-only install, pip's CUDA wheels without the compiler), or the build looks in another folder than the toolkit's include/.",
        fix: "Install the full CUDA toolkit of torch's CUDA version (the runfile or the cuda-toolkit-X-Y package; in conda `conda install -c nvidia cuda-toolkit=X.Y`) and point the build at it: CUDA_HOME=/usr/local/cuda-X.Y with its bin on PATH (CPATH=$CUDA_HOME/include for a setup.py that does not add it); `ls $CUDA_HOME/include/cuda_runtime.h` must find the file. Then build again from a clean build folder.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch refusing CUDA in a process forked after the parent had started it (a DataLoader
    // worker, a multiprocessing pool, a server's workers): the program's start method, not the
    // GPU stack. pytorch/pytorch#40403 (set_start_method('spawn') under __main__),
    // traveller59/spconv#408 (no CUDA inside DataLoader workers), BBC-Esq/VectorDB-Plugin#112,
    // IDEA-CCNL/Fengshenbang-LM#259.
    Rule {
        id: "lib-cuda-in-forked-process",
        patterns: &["cannot re-initialize cuda in forked subprocess"],
        layer: Library,
        second: None,
        cause: "CUDA was already started in the parent process, and a child made with fork (multiprocessing's default on Linux: DataLoader workers, a process pool, a server's workers) tried to use it; CUDA cannot be used again in a forked child. The driver and toolkit are fine.",
        fix: "Start the children with spawn: `torch.multiprocessing.set_start_method('spawn', force=True)` at the top of the `if __name__ == '__main__':` block (vLLM: VLLM_WORKER_MULTIPROC_METHOD=spawn), or keep CUDA out of the parent until the workers exist and out of DataLoader workers (move tensors to the GPU in the main loop, not in the Dataset).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // torch.load meeting tensors saved on a GPU while this torch sees no CUDA: a CPU-only torch
    // (most threads), or no GPU visible to the process. kleinlee/DH_live#22 and
    // xieKKKi/person_find#3 (a CPU torch; install the CUDA build), hkchengrex/Cutie#37 (no GPU:
    // map_location), seoungwugoh/STM#16.
    Rule {
        id: "lib-torch-load-without-cuda",
        patterns: &[
            "attempting to deserialize object on a cuda device but torch.cuda.is_available() is false",
        ],
        layer: Library,
        second: Some(Driver),
        cause: "The checkpoint holds tensors saved on a GPU, and this torch sees no CUDA: most often a CPU-only torch is installed (`torch.version.cuda` is None), otherwise the process sees no GPU (driver not reachable, CUDA_VISIBLE_DEVICES empty, a machine without one).",
        fix: "Check `python -c \"import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\"`: with None for CUDA, reinstall torch from the CUDA wheel index the manifest pins (`+cuXYZ`); with a CUDA build but False, run `nvidia-smi` and check CUDA_VISIBLE_DEVICES. To run on the CPU on purpose, load with `torch.load(path, map_location=\"cpu\")`.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // cuDNN's search for a convolution algorithm finding none that runs: the card's memory in
    // most resolved threads (a smaller batch or another, free GPU), a torch whose cuDNN does
    // not fit otherwise. zcablii/LSKNet#67 (the second card, a smaller batch),
    // TQTQliu/MVSGaussian#18 (insufficient GPU memory: another GPU index worked).
    Rule {
        id: "mem-cudnn-no-valid-algorithm",
        patterns: &["unable to find a valid cudnn algorithm to run convolution"],
        layer: Memory,
        second: Some(Library),
        cause: "cuDNN found no convolution algorithm that can run with the GPU memory left: the card is (nearly) full, from this program's batch or another process; less often the torch build's cuDNN does not support the convolution on this GPU.",
        fix: "Check `nvidia-smi` for memory held by other processes and pick a free GPU (CUDA_VISIBLE_DEVICES); lower the batch size or input resolution and run again; if it fails with the card free, reinstall torch from its CUDA wheel index so its own cuDNN is used (no older libcudnn on LD_LIBRARY_PATH), or set torch.backends.cudnn.benchmark=False.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // TensorFlow skipping a GPU whose compute capability is below the minimum its build
    // supports (the prebuilt wheels: 3.5, later releases more; a build's own list): the card
    // stays unused and TensorFlow runs on the CPU. tensorflow/tensorflow#17445 (3.5 for the
    // binaries, 3.0 only from source), #23385 (a docker image built for 7.0),
    // tensorflow/tfjs#1819 (the C library's 6.0), tensorflow/serving#223 (a build's configured list).
    Rule {
        id: "lib-tf-gpu-below-build-minimum",
        patterns: &[
            "ignoring visible gpu device*the minimum required cuda capability is",
            "ignoring gpu device*the minimum required cuda capability is",
        ],
        layer: Library,
        second: Some(Hardware),
        cause: "TensorFlow ignores this GPU: its compute capability is below the minimum the installed TensorFlow build was compiled for (the prebuilt wheels need 3.5 or more, newer releases and some images more), so it runs on the CPU. The driver and toolkit are not the cause.",
        fix: "Use a TensorFlow build whose compute capabilities include this card: an older release or image built for it, or a build from source with TF_CUDA_COMPUTE_CAPABILITIES set to the card's capability (e.g. 3.0); otherwise run on a newer GPU. A driver or CUDA reinstall does not change this.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // flash-attn's backward pass for a head dimension larger than this GPU's on-chip shared
    // memory allows (1.x: above 64 only on A100/H100; 2.x: above 192), and the fused kernels' own
    // architecture checks, worded by TORCH_CHECK: 1.x's sm80 check, 1.x's sm75/sm8x-only check on
    // a Hopper card (an H20: xiaomi-mlab/Orion#14, cured by flash-attn 2.x), torch 2.0's own
    // fused attention asking for sm80/sm90 at large head dims on RTX 3090/4090
    // (pytorch/pytorch#98140, closed there as torch's own). Dao-AILab/flash-attention#51 and #69 (the
    // maintainer: backward with head dim 128 needs an A100; FlashAttention-2 lifts it),
    // Meituan-AutoML/MobileVLM#40, VITA-Group/LLaGA#16, modelscope/ms-swift#9 (flash attention
    // switched off). The same wording with a tensor's `is_cuda()` (input left on the CPU) is the
    // user's code: not read.
    Rule {
        id: "lib-flash-attn-head-dim-backward",
        patterns: &[
            "flashattention backward for head dim > * requires a100 or h100",
            "head dim > * backward requires a100 or h100",
            "expected is_sm* to be true, but got false",
        ],
        layer: Library,
        second: Some(Hardware),
        cause: "Training (the backward pass) through flash-attn with a head dimension this GPU cannot hold in its on-chip shared memory: flash-attn 1.x runs the backward pass for head dim above 64 only on A100/H100 (sm80/sm90), flash-attn 2 up to 192 on any Ampere or newer card and above that only on A100/H100. Inference (the forward pass) still works. The same kernels check the architecture outright: flash-attn 1.x runs only on sm75/sm8x (not on Hopper), and torch 2.0's own fused attention asked for sm80/sm90 at some head sizes (a torch issue: upgrade torch).",
        fix: "Upgrade to flash-attn 2 built for the installed torch (`pip install -U flash-attn --no-build-isolation`), which trains head dims up to 192 on RTX 30/40 and A40/A6000; otherwise turn flash attention off for training (transformers `attn_implementation=\"sdpa\"`, the tool's flash-attention switch off) or train on an A100/H100. When the check is torch's own (no flash-attn in the traceback), upgrade torch or turn its fused kernels off (`torch.backends.cuda.enable_flash_sdp(False)`, `enable_mem_efficient_sdp(False)`).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The DataLoader's workers pass tensors as file descriptors of shared memory
    // (file_descriptor sharing) and the process runs out of open files: the receiving side gets
    // no descriptor. pytorch/pytorch#973 (the file_system strategy as workaround),
    // DonsetPG/graph-physics#22 (ulimit 1024; file_system or a larger ulimit), pytorch/pytorch#41465.
    Rule {
        id: "mem-dataloader-fd-limit",
        patterns: &["received 0 items of ancdata"],
        layer: Memory,
        second: Some(Library),
        cause: "PyTorch's DataLoader workers hand tensors over as open file descriptors of shared memory (the file_descriptor sharing strategy), and the process hit its open-file limit (ulimit -n, often 1024), most often because the loop keeps many batches alive; the GPU is not involved.",
        fix: "Switch the sharing strategy after importing torch: `torch.multiprocessing.set_sharing_strategy('file_system')`, or raise the open-file limit (`ulimit -n 65535`, or the container's nofile limit); keep fewer batches alive (copy or convert what you store, e.g. `.numpy().copy()`), or use fewer workers (num_workers=0 works around it).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // pip compiling mmcv-full (or mmcv 2) from source and failing: no prebuilt wheel matched the
    // installed torch, CUDA and Python, so pip fell back to building its CUDA ops. The cure in
    // the threads was the prebuilt package for that torch and CUDA (open-mmlab/mmdetection#12051,
    // HolyWu/vs-basicvsrpp#22); the same summary closes open-mmlab/mmcv#1055, #934 and
    // open-mmlab/mmdetection#4900. When the log keeps the compiler's own error above the summary
    // (nvcc not found, CUDA_HOME wrong: open-mmlab/mmcv#693), the compile family reads that line
    // and its toolkit finding outranks this one, so the toolkit is this rule's second layer.
    Rule {
        id: "lib-mmcv-wheel-built-from-source",
        patterns: &[
            "failed building wheel for mmcv",
            "building wheel for mmcv-full (setup.py) ... error",
            "building wheel for mmcv (setup.py) ... error",
            "running setup.py install for mmcv-full ... error",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "pip found no prebuilt mmcv wheel for the installed torch, CUDA and Python, fell back to compiling mmcv's CUDA ops from source, and the build failed (a compiler or nvcc that does not fit, often on Windows or a new torch). The compiler's own error above this summary, when the log keeps it, names the build's cause.",
        fix: "Install the prebuilt mmcv built for the installed torch and CUDA instead of compiling it: `mim install \"mmcv-full==X\"` (or \"mmcv==2.x\"), or pip with OpenMMLab's wheel index for your cuXXX/torchX.Y (its install table lists the pairs it ships), after `pip uninstall -y mmcv mmcv-full`; pick a torch that table covers if yours is too new. Build from source only with nvcc of `torch.version.cuda` (CUDA_HOME) and a supported host compiler.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Python's ImportError for a name an installed package's module lacks, the module's file in
    // site-packages or dist-packages: the code and the installed package are from different
    // releases (an API moved or removed: mmcv 2 against mmseg 0.x, torchvision's transforms.v2,
    // diffusers' embeddings), or one package's files are mixed or shadowed by another package of
    // the same name. m87-labs/moondream#70 (torchvision's ToImage: check the torch version),
    // RSer-XDU/G-FSDet#15 (mmcv's Config: the mmcv version the codebase names). Left alone: a
    // circular import ("from partially initialized module"), "(unknown location)" and a module
    // outside the installed packages (the project's own code, a torch hub checkout).
    Rule {
        id: "lib-installed-package-name-missing",
        patterns: &[
            "cannot import name '*' from '*' (*site-packages",
            "cannot import name '*' from '*' (*dist-packages",
        ],
        layer: Library,
        second: None,
        cause: "The code imports a name that the installed package's module does not define: the code and that package come from different releases (the name was added, moved or removed in another version), or the package in site-packages is not the one the code expects (a mixed install, another package with the same name).",
        fix: "Compare the package's version (`pip show PACKAGE`, `python -c \"import PACKAGE; print(PACKAGE.__version__, PACKAGE.__file__)\"`) with the one the project's requirements or install guide name, and install that one (`pip install PACKAGE==X`, for OpenMMLab `mim install`), or the project's release written for the installed one; when the package's own files import each other, reinstall it cleanly (`pip uninstall -y PACKAGE` until none is left). The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // setuptools' own dependency check in `setup.py develop` / `setup.py install` (easy_install):
    // an installed distribution outside the range another package requires. The threads' cure is
    // the version the requirement names, or an older duplicate copy removed:
    // open-mmlab/OpenPCDet#773 (numpy for scikit-image, a former numpy deleted),
    // selimsami/qforce#7 and nanoporetech/pomoxis#18 (numpy for numba and fast5-research).
    Rule {
        id: "lib-setuptools-installed-version-conflict",
        patterns: &["error: * is installed but * is required by {"],
        layer: Library,
        second: None,
        cause: "setuptools' dependency check (setup.py develop / install) found an installed package outside the version range another package requires: the environment holds a release (or an older duplicate copy) that package does not accept.",
        fix: "Install a version inside the range the message names (`pip install \"numpy<1.21\"` for \"numpy<1.21 is required by {...}\"), or remove the older duplicate copy (`pip uninstall` until none is left, a user-site copy in ~/.local), then run the install again, preferably with pip (`pip install -e .`), whose resolver picks compatible versions. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A C++/CUDA extension's own source passing `tensor.type()` (a DeprecatedTypeProperties) to
    // AT_DISPATCH, which newer PyTorch headers accept only as a ScalarType: the extension was
    // written for an older torch than it is built against. The threads' cure is `.scalar_type()`
    // in the extension's source, or the torch it was written for: sjtu-medialab/RwkvCompress#9,
    // xiawj-hub/CTLIB#21 (the patch), jinpeng0528/BalConpas#5 (MultiScaleDeformableAttention),
    // amajee11us/SMILe-FSOD#3 (gcc's wording), PKU-VCL-3DV/SLAM3R#45, mattiasegu/sambamotr#9.
    Rule {
        id: "lib-extension-source-older-than-torch",
        patterns: &["deprecatedtypeproperties* to *scalartype"],
        layer: Library,
        second: Some(Toolkit),
        cause: "The extension's own C++/CUDA source passes `tensor.type()` (a deprecated DeprecatedTypeProperties) where the installed PyTorch's headers (AT_DISPATCH_*) need a ScalarType: the extension was written for an older PyTorch than the one it is built against.",
        fix: "Patch the extension's sources: replace `X.type()` with `X.scalar_type()` in its AT_DISPATCH_* calls (and `x.type().is_cuda()` with `x.is_cuda()` in its checks), then rebuild; or build it against the older PyTorch release the project names. The CUDA toolkit and the driver are not the cause.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // A torchvision module the code imports that the installed torchvision no longer (or not
    // yet) has: torchvision removed transforms.functional_tensor in 0.17 (deprecated in 0.15,
    // renamed _functional_tensor) and models.utils (load_state_dict_from_url moved to torch.hub),
    // and code written before that (basicsr 1.4.2's degradations.py under GFPGAN, Real-ESRGAN and
    // the web UIs; older model zoos) imports the old path. The threads' cure is the torchvision the
    // code was written for, or the import patched to the new path: XPixelGroup/BasicSR#663,
    // vladmandic/sdnext#2543, ashleykleynhans/runpod-worker-real-esrgan#3, TencentARC/GFPGAN#539
    // (functional_tensor), median-research-group/LibMTL#62, ultralytics/ultralytics#13155
    // (models.utils). The dot keeps torchvision itself missing ("No module named 'torchvision'",
    // the environment) out.
    Rule {
        id: "lib-torchvision-module-moved",
        patterns: &["no module named 'torchvision."],
        layer: Library,
        second: None,
        cause: "The code imports a torchvision module that the installed torchvision does not have: it was written against another release (transforms.functional_tensor was removed in torchvision 0.17, after being made private in 0.15; models.utils' load_state_dict_from_url moved to torch.hub), so the code and the installed torchvision disagree on the module's path.",
        fix: "Check `python -c \"import torch, torchvision; print(torch.__version__, torchvision.__version__)\"` against the versions the project names, and either install the torchvision the code was written for together with its paired torch (e.g. torchvision 0.16 / torch 2.1 for transforms.functional_tensor), or patch the import to the new path (`torchvision.transforms.functional` for rgb_to_grayscale in basicsr's degradations.py; `torch.hub` for load_state_dict_from_url), or upgrade the package that carries the old import. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // basicsr's losses package reorganised in 1.4.0 (losses.losses split into basic_loss and
    // gan_loss), so GFPGAN's code and the installed basicsr from releases on either side of it
    // cannot import each other's module: TencentARC/GFPGAN#215 (gan_loss missing from an older
    // basicsr; the cure a basicsr 1.4 or the older GFPGAN with basicsr 1.3.5), TencentARC/GFPGAN#361
    // (losses.losses missing from basicsr 1.4.2). basicsr missing altogether is the rule above;
    // 'basicsr.version' (a source checkout never set up) is left alone.
    Rule {
        id: "lib-basicsr-losses-release-mismatch",
        patterns: &["no module named 'basicsr.losses."],
        layer: Library,
        second: None,
        cause: "The code imports a basicsr losses module that the installed basicsr does not have: basicsr 1.4.0 reorganised its losses package (losses.losses split into basic_loss and gan_loss), and GFPGAN's code and the installed basicsr come from releases on either side of that change.",
        fix: "Install the basicsr release the GFPGAN (or other) code was written for: `pip install basicsr==1.3.5` with a GFPGAN from before July 2022, or basicsr 1.4.x with a current GFPGAN (`pip install --upgrade gfpgan basicsr`), then `python -c \"import basicsr, gfpgan; print(basicsr.__version__, gfpgan.__version__)\"`. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Deformable DETR's multi-scale deformable attention op, which Deformable DETR's descendants
    // (DINO, Meta-DETR, ViT-Adapter, GroundingDINO) compile from their own ops folder: when it
    // was not built, or built for another torch or Python, the module is missing or has no
    // forward function, and the Python side finds the name on whatever it imported instead
    // (GroundingDINO's `_C`, torch._C). The threads' cure was compiling the op (make.sh / setup.py
    // build install) for the installed torch: ZhangGongjie/Meta-DETR#27, tgxs002/CORA#7 (no
    // module), fundamentalvision/Deformable-DETR#220 (built, but for another Python and torch),
    // open-mmlab/mmcv#2138 (the same missing function); Mask2Former's guarded import says so in
    // its own words ("Please compile MultiScaleDeformableAttention CUDA op"):
    // Picsart-AI-Research/SeMask-Segmentation#17, UX-Decoder/LLaVA-Grounding#6; and the op's own
    // CUDA entry point missing from its .so (built without its .cu, or for another torch and
    // CUDA; cured by the matching torch and a rebuild): SHI-Labs/OneFormer#81,
    // fundamentalvision/Deformable-DETR#225. MMCV's own op without a CUDA kernel
    // ("ms_deform_attn_impl_forward: implementation for device cuda:0 not found") is MMCV's ops
    // build, its own rule.
    Rule {
        id: "lib-deformable-attention-op-not-built",
        patterns: &[
            "has no attribute 'ms_deform_attn_forward'",
            "no module named 'multiscaledeformableattention'",
            "please compile multiscaledeformableattention cuda op",
            "undefined symbol: *ms_deform_attn_cuda_forward",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "The multi-scale deformable attention CUDA op (Deformable DETR's MultiScaleDeformableAttention, compiled by the repository from its ops folder) is not built, or was built for another torch or Python, so its forward function cannot be found.",
        fix: "Compile the op in the environment that runs the code: from the repository's ops folder (models/ops, detection/ops) run `sh make.sh` or `python setup.py build install` (GroundingDINO: `pip install --no-build-isolation -e .` from its root, after removing build/), with CUDA_HOME set to the toolkit matching torch.version.cuda; then run the folder's test.py. Rebuild it after changing torch or Python.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The deformable-convolution CUDA ops that vision repositories compile from their own
    // folders: InternImage's ops_dcnv3 (module DCNv3), DCNv4's DCNv4_op (DCNv4, its `ext`) and
    // CharlesShang's DCNv2 (`_ext`, vendored by CenterNet, FairMOT, AECR-Net and the video
    // restorers). Not built (or built for another torch or Python), the module is missing or has
    // no forward function. The threads' cure was compiling the op (make.sh / setup.py build
    // install) or installing its wheel for the installed torch: OpenGVLab/InternImage#84,
    // ViTAE-Transformer/SAMRS#29 (DCNv3), OpenGVLab/DCNv4#101 (DCNv4), OpenGVLab/InternImage#241
    // (dcnv3_forward missing), CharlesShang/DCNv2#39, GlassyWu/AECR-Net#26 (`_ext`). The quote
    // before `_ext` keeps MMCV's own mmcv._ext (MMCV's ops build) out; a missing dcn_v2.py (a
    // source file, ifzhang/FairMOT#541) is not the op.
    Rule {
        id: "lib-deformable-conv-op-not-built",
        patterns: &[
            "no module named 'dcnv3'",
            "no module named 'dcnv4'",
            "has no attribute 'dcnv3_forward'",
            "no module named '_ext'",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "The deformable-convolution CUDA op the repository compiles from its own folder (InternImage's DCNv3, DCNv4's DCNv4_op, DCNv2's `_ext`) is not built in this environment, or was built for another torch or Python, so the module or its forward function cannot be found.",
        fix: "Compile the op in the environment that runs the code: from its folder (ops_dcnv3, DCNv4_op, DCNv2) remove build/ and run `sh make.sh` or `python setup.py build install`, with CUDA_HOME set to the toolkit matching torch.version.cuda, then run the folder's test.py; or install the op's wheel built for your torch, CUDA and Python. Rebuild it after changing torch or Python.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The selective-scan and causal-conv1d CUDA ops that Mamba's vision descendants (VMamba,
    // Vision Mamba, SegMamba, the Mamba U-Nets) import as modules of their own: mamba_ssm's and
    // causal-conv1d's setup.py build selective_scan_cuda and causal_conv1d_cuda, and VMamba's
    // kernels/selective_scan builds selective_scan_cuda_core / _oflex; when that build was skipped
    // (no nvcc, a wheel for another torch, the repository's vendored copy never installed) the
    // Python side has no module, or a guarded import leaves the name undefined. The threads' cure
    // was installing (building) the op for the installed torch: state-spaces/mamba#237,
    // ge-xing/SegMamba#52, YonghengSun1997/R2Gen-Mamba#1, MzeroMiko/VMamba#313 and #308 (the
    // guarded import), Dao-AILab/causal-conv1d#9. An op that is there but asks torch for a
    // symbol it lacks (undefined symbol) is the loader's built-for-other-torch check.
    Rule {
        id: "lib-mamba-scan-op-not-built",
        patterns: &[
            "no module named 'selective_scan_cuda",
            "name 'selective_scan_cuda* is not defined",
            "no module named 'causal_conv1d_cuda'",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "The selective-scan / causal-conv1d CUDA op (mamba_ssm's selective_scan_cuda, causal-conv1d's causal_conv1d_cuda, VMamba's selective_scan_cuda_core / _oflex) is not installed in this environment: its build was skipped or failed (no nvcc, a prebuilt wheel for another torch or CUDA), or the repository's own copy of the kernels was never installed.",
        fix: "Install the op for the installed torch: a mamba-ssm / causal-conv1d wheel whose name matches torch's version, CUDA major, C++ ABI (`python -c \"import torch; print(torch.__version__, torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI)\"`) and Python, or build it (`pip install --no-build-isolation mamba-ssm causal-conv1d`; VMamba: `pip install kernels/selective_scan`) with CUDA_HOME set to the toolkit matching torch.version.cuda; then `python -c \"import torch, selective_scan_cuda\"` (import torch first).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Round 37: pip's resolver, after an install, listing installed packages whose pins the
    // environment no longer meets ("X requires Y==v, but you have Y w which is incompatible"):
    // one install replaced a version another package was built or tested with (torch under
    // torchvision, torchaudio or xformers; transformers or tokenizers under another tool). The
    // threads' cure is the version pair that agrees, or separate environments:
    // R3gm/SD_diffusers_interactive#20 (torchtext's pin), declare-lab/TangoFlux#7 (xformers' pin;
    // a conda environment of its own), MrForExample/ComfyUI-AnimateAnyone-Evolved#30 (protobuf),
    // tenstorrent/tt-forge#806 (the pair corrected in the requirements). A torchvision line
    // (torch/torch7#1249) stays with the torch / torchvision pair's own family, and pip's "No
    // matching distribution found" (no build of that version on the index) with pip's.
    Rule {
        id: "lib-pip-resolver-version-conflict",
        patterns: &["requires *, but you have * which is incompatible"],
        layer: Library,
        second: None,
        cause: "pip's resolver reports installed packages whose requirements the environment no longer meets: installing one package (or a requirements file) replaced a version another installed package pins (torch under torchvision, torchaudio or xformers; transformers or tokenizers under another tool), so those packages now come from releases that were not built or tested together.",
        fix: "Install versions that agree: the version the line names for the package that requires it (`pip install torch==2.3.0` for \"torchvision 0.18.0 requires torch==2.3.0\"), or the release of the requiring package made for the version you need (the torchvision / torchaudio / xformers paired with your torch); then `pip check` lists what is still inconsistent. Give tools whose pins conflict their own venv or conda environment instead of one shared one. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Round 37: ComfyUI reporting torch's out-of-memory error by its message alone: the line is
    // "Allocation on device" with nothing after it (torch.OutOfMemoryError's text under ComfyUI's
    // allocator; its error report puts it after "Exception Message:", its log after "!!! Exception
    // during processing !!!"). Comfy-Org/ComfyUI#4852 (the report names torch.OutOfMemoryError),
    // kijai/ComfyUI-SUPIR#150, daniabib/ComfyUI_ProPainter_Nodes#3, smthemex/ComfyUI_Diffree#2,
    // Comfy-Org/ComfyUI#7853. The allocator's "Allocation on device 0 would exceed allowed memory"
    // goes on (another family's line), so only a line ending with the words is read.
    Rule {
        id: "mem-comfyui-allocation-on-device",
        patterns: &[],
        layer: Memory,
        second: None,
        cause: "The GPU ran out of memory: ComfyUI reports torch's out-of-memory error (torch.OutOfMemoryError) by its message alone, \"Allocation on device\", when a node's models and tensors (the resolution, the frame count or batch, the models kept loaded) need more memory than the card has free.",
        fix: "Lower what the workflow holds at once: a smaller resolution, fewer frames or a smaller batch, a smaller or quantised model (fp16, fp8, GGUF); start ComfyUI with --lowvram (or --novram) so it offloads models, unload models between runs, and close other programs that use the GPU (`nvidia-smi` lists them). If the same workflow fitted before an update, compare with the ComfyUI and node releases it ran under.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(ends_with_allocation_on_device),
    },
    // Round 37: bitsandbytes not importable in a LoRA trainer's venv: sd-scripts (kohya_ss,
    // lora-scripts) raises its own "No bitsandbytes / bitsandbytesがインストールされていないようです"
    // when `import bitsandbytes` fails, and the Windows bitsandbytes 0.41.x builds lack their own
    // cuda_setup/paths.py, which cuda_setup.main imports (jllllll/bitsandbytes-windows-webui#22).
    // The threads' cure was one bitsandbytes reinstalled cleanly (the trainer's setup choice):
    // bmaltais/kohya_ss#1999, #1692, #1798, #1918 (the maintainer: the optional bitsandbytes
    // version of the setup), Akegarasu/lora-scripts#228 (reinstalling bitsandbytes cured it).
    // bitsandbytes' own CUDA set-up lines are the rule at the top of this table.
    Rule {
        id: "lib-bitsandbytes-import-broken",
        patterns: &[
            "importerror: no bitsandbytes / bitsandbytes",
            "no module named 'bitsandbytes.cuda_setup.paths'",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "bitsandbytes does not import in the trainer's environment: it is missing, or the installed release is broken or mixed (the Windows bitsandbytes 0.41.x builds lack cuda_setup/paths.py, which their own cuda_setup.main imports; an install over another copy leaves a partial package), or its CUDA set-up fails on import. sd-scripts (kohya_ss, lora-scripts) then raises its own \"No bitsandbytes\" ImportError for the 8-bit optimizer.",
        fix: "Inside the trainer's venv (activate it first) run `python -c \"import bitsandbytes\"` to see the real error; reinstall one bitsandbytes cleanly: `pip uninstall -y bitsandbytes bitsandbytes-windows` until none is left, then the release the trainer's setup offers (kohya_ss' setup menu: its optional bitsandbytes versions) or a current one (`pip install -U bitsandbytes`: releases from 0.43 ship Windows builds), and check with `python -m bitsandbytes`. Or choose an optimizer that does not need it (AdamW instead of AdamW8bit).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Round 37: transformers' lazy import reporting, on its own line, that flash-attn's compiled
    // extension (flash_attn_2_cuda) would not load: a flash-attn build for another torch, CUDA,
    // Python or C++ ABI (an undefined symbol, a DLL that does not load). When the log keeps the
    // loader's own line, the loader family reads it the same way. The threads' cure was the
    // flash-attn wheel for the installed torch, or a rebuild against it:
    // prometheus-eval/prometheus-eval#23 (the versions of torch and flash-attn not matching),
    // oobabooga/textgen#4357 (flash-attn 2.5.8's wheel for that CUDA and torch),
    // Dao-AILab/flash-attention#1612, 2U1/Qwen-VL-Series-Finetune#49 (the maintainer: torch and
    // flash-attn conflict, reinstall flash-attn). transformers' own missing name
    // ("cannot import name 'is_flash_attn_greater_or_equal_2_10'") is another release pair: not read.
    Rule {
        id: "lib-transformers-flash-attn-extension-not-loading",
        patterns: &[
            "failed to import transformers*because of the following error*flash_attn_2_cuda",
        ],
        layer: Library,
        second: Some(Toolkit),
        cause: "transformers could not import a model module because flash-attn's compiled extension (flash_attn_2_cuda) does not load: the installed flash-attn was built for another torch, CUDA, Python or C++ ABI (an undefined torch symbol, a Windows DLL that will not load), or its build never finished.",
        fix: "Install the flash-attn build that matches the installed torch: the release's prebuilt wheel named for your CUDA, torch, C++ ABI and Python (cuXXXtorchX.Ycxx11abiFALSE/TRUE-cpXY), or rebuild it against this torch with `pip install flash-attn --no-build-isolation --no-cache-dir`; check with `python -c \"import flash_attn_2_cuda\"`. Or uninstall flash-attn so transformers falls back to its sdpa attention.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // Round 37: Python's site module failing on setuptools' distutils-precedence.pth at start-up:
    // the .pth left in site-packages imports setuptools' _distutils_hack, which is missing or from
    // another setuptools release (a partial uninstall or upgrade, a copied environment). The
    // threads' cure was setuptools reinstalled into that Python: genid/Yleaf#13 (`pip install -U
    // pip setuptools`), pypa/setuptools#2983 (after an upgrade, "has no attribute
    // 'ensure_shim'"), Jacklinkk/TorchGRL#6, pdm-project/pdm#821,
    // Second-Hand-Friends/kleinanzeigen-bot#227. Usually a warning: the error after it, when there
    // is one, names the real failure.
    Rule {
        id: "lib-setuptools-distutils-shim-broken",
        patterns: &["error processing line 1 of *distutils-precedence.pth"],
        layer: Library,
        second: None,
        cause: "Python's start-up could not run setuptools' distutils-precedence.pth: the file in site-packages imports setuptools' _distutils_hack, which is missing or from another setuptools release (a partial uninstall or upgrade, an environment copied or patched by hand), so that environment's packages are not consistent. Python goes on without it; an error after these lines names what then fails.",
        fix: "Reinstall setuptools into the Python that prints it: `<that python> -m pip install --upgrade --force-reinstall pip setuptools` (a portable bundle: its own python_embeded\\python.exe), then reinstall the tool's requirements with the same python; if setuptools cannot be repaired, delete the stray distutils-precedence.pth from that site-packages. The driver and the CUDA toolkit are not involved.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // InvokeAI's start-up line naming the device its choose_torch_device() picked: `cpu` when
    // torch in its venv cannot see CUDA. On a machine meant to use an NVIDIA GPU the threads'
    // cure was the torch build: invoke-ai/InvokeAI#1202 (torch reinstalled from the CUDA
    // requirements), #2460 (a +cpu torch where +cu117 belonged). The driver is second: a torch
    // with CUDA also says cpu when no driver answers. `cuda` or `mps` there is no failure.
    Rule {
        id: "lib-invokeai-device-type-cpu",
        patterns: &["using device_type cpu"],
        judge: None,
        layer: Library,
        second: Some(Driver),
        mechanism: Mechanism::Plain,
        cause: "InvokeAI chose the CPU because torch in its environment cannot use CUDA: most often the installed torch is a CPU-only build (its version ends in +cpu, or the installer's \"choose for me\" or a later package pulled the CPU wheel), less often the NVIDIA driver is missing or too old for that torch's CUDA.",
        fix: "In InvokeAI's own environment (its .venv, or the launcher's developer console) run `python -c \"import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\"`. A +cpu version or None: reinstall torch and torchvision from PyTorch's CUDA wheel index for a CUDA the driver supports (or rerun the installer and choose the NVIDIA GPU option explicitly). A CUDA build that still says False: check `nvidia-smi` and update the driver to the one that torch's CUDA needs.",
        decisive: false,
    },
];

/// ComfyUI's out-of-memory line: "Allocation on device" and nothing after it (its report's
/// "Exception Message:" or its log's "!!! Exception during processing !!!" may come before).
fn ends_with_allocation_on_device(lower: &str) -> bool {
    lower.trim_end().ends_with("allocation on device")
}

/// torch's "expected scalar type X but found Y" where both are floating-point precisions.
fn mixes_float_precisions(lower: &str) -> bool {
    const FLOATS: &[&str] = &["half", "float", "bfloat16", "double"];
    let Some(at) = lower.find("expected scalar type ") else {
        return false;
    };
    let rest = &lower[at + "expected scalar type ".len()..];
    let mut words = rest.split_whitespace();
    let (Some(expected), Some("but"), Some("found"), Some(found)) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return false;
    };
    let found = found.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    expected != found && FLOATS.contains(&expected) && FLOATS.contains(&found)
}

/// ONNX Runtime's own print of the providers its build carries, judged by what is in it: a list
/// with the CPU provider and no GPU one is the CPU-only package, whatever else it names (the
/// Azure provider joined the CPU package in 1.16; a `providers=` missing from the call, which
/// "This ORT build has [...] enabled" asks for, only matters once a GPU provider is there).
/// Starry-Wind/StarRailAssistant#705, AUTOMATIC1111/stable-diffusion-webui#7486.
fn lists_only_cpu_providers(lower: &str) -> bool {
    const GPU_PROVIDERS: &[&str] = &[
        "cudaexecutionprovider",
        "tensorrtexecutionprovider",
        "rocmexecutionprovider",
        "migraphxexecutionprovider",
    ];
    ["this ort build has [", "available providers: "]
        .iter()
        .filter_map(|marker| lower.find(marker).map(|at| &lower[at + marker.len()..]))
        .any(|rest| {
            let list = rest.split([']', '\n']).next().unwrap_or(rest);
            list.contains("cpuexecutionprovider") && !GPU_PROVIDERS.iter().any(|g| list.contains(g))
        })
}

/// CUPTI's privileges code as a failure, not torch Kineto's hint that names it
/// ("If you see CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, refer to ..."); ncu's ERR_NVGPUCTRPERM.
fn cupti_privileges_refused(line: &str) -> bool {
    (line.contains("cupti_error_insufficient_privileges") && !line.contains("if you see"))
        || line.contains("err_nvgpuctrperm - the user does not have permission")
}

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found: Vec<Finding> = segments.iter().filter_map(code_43_named).take(1).collect();
    found.extend(find_each(RULES, segments));
    found.extend(collect_env_cpu_build(segments));
    found.extend(segments.iter().find_map(conda_cpu_build));
    found
}

/// Docker's "unknown flag: --gpus" with nothing of the flag's value after it: an old client. With a
/// value ("--gpus all") the flag and its value came as one argument, the caller's quoting.
fn is_old_docker_gpus_flag(lower: &str) -> bool {
    lower
        .split("unknown flag: --gpus")
        .nth(1)
        .is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.is_empty()
                || rest.starts_with("see ")
                || !rest.starts_with(|c: char| c.is_alphanumeric() || c == '"' || c == '\'')
        })
}

/// conda's own record of a CPU-only PyTorch: a package list (`conda list`) or an install plan
/// naming pytorch, torchvision or torchaudio with a `_cpu` build string (`py3.8_cpu_0`,
/// `pytorch/win-64::pytorch-1.10.0-py3.8_cpu_0`), the `cpuonly` / `cpu-only` package that pins
/// those builds, or the `pytorch-mutex` row set to `cpu`. Such an environment cannot see the GPU
/// whatever the driver and toolkit are (conda/conda#11001, pytorch/pytorch#32369). A CUDA build
/// string (`py3.8_cuda11.3_cudnn8.2.0_0`, `py38_cu113`) and a command that asks for `cpuonly`
/// on purpose name nothing.
fn conda_cpu_build(seg: &Segment<'_>) -> Option<Finding> {
    const TORCH_PACKAGES: &[&str] = &["pytorch", "pytorch-nightly", "torchvision", "torchaudio"];
    const PINS: &[&str] = &["cpuonly", "cpu-only"];
    let lower = seg.lower.trim();
    if ["install", "create", "remove", "uninstall"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return None;
    }
    // conda-forge's CPU builds start with it (`cpu_py37h14e09b7_1`).
    let cpu_build = |build: &str| {
        build.contains("_cpu_") || build.ends_with("_cpu") || build.starts_with("cpu_")
    };
    // A plan's `channel/subdir::name-version-build`.
    let in_plan = lower.split_whitespace().any(|token| {
        token.split_once("::").is_some_and(|(_, spec)| {
            PINS.iter().any(|p| spec.starts_with(&format!("{p}-")))
                || TORCH_PACKAGES.iter().any(|name| {
                    spec.strip_prefix(name)
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(|rest| {
                            rest.starts_with(|c: char| c.is_ascii_digit()) && cpu_build(rest)
                        })
                })
        })
    });
    // A list's `name  version  build  channel` row (mamba's plan puts a `+` first).
    let columns: Vec<&str> = lower
        .strip_prefix("+ ")
        .unwrap_or(lower)
        .split_whitespace()
        .collect();
    let in_list = match columns.as_slice() {
        [name, version, build, ..] if version.starts_with(|c: char| c.is_ascii_digit()) => {
            (TORCH_PACKAGES.contains(name) && cpu_build(build))
                || PINS.contains(name)
                || (*name == "pytorch-mutex" && *build == "cpu")
        }
        _ => false,
    };
    // The "will be downloaded" table's and the download progress's `name-version | build`
    // row (pytorch/pytorch#30957: `cpuonly-1.0 | 2 KB | ###`).
    let in_table = lower.split_once('|').is_some_and(|(package, rest)| {
        let package = package.trim();
        let build = rest.split_whitespace().next().unwrap_or("");
        let versioned = |name: &str| {
            package
                .strip_prefix(name)
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        };
        PINS.iter().any(|p| versioned(p))
            || (versioned("pytorch-mutex") && build == "cpu")
            || (TORCH_PACKAGES.iter().any(|n| versioned(n)) && cpu_build(build))
    });
    if !(in_plan || in_list || in_table) {
        return None;
    }
    Some(at(
        seg,
        "lib-conda-cpu-build",
        Library,
        None,
        "conda installed the CPU-only PyTorch (a `_cpu` build, the cpuonly package or pytorch-mutex set to cpu): this environment cannot use the GPU, whatever the driver and toolkit are.",
        "Remove the CPU pin (`conda remove cpuonly`, or a fresh environment) and install the CUDA build from one channel: the pytorch-cuda package for the driver's CUDA, or ask for the build outright (`pytorch=*=*cuda*`) so conda cannot fall back to the CPU one; with pip, the CUDA wheel index the manifest pins. Check that `torch.version.cuda` is not None.",
        Mechanism::Plain,
        false,
    ))
}

/// Windows' Code 43 named without Device Manager's sentence ("Nvidia Code 43", "error 43" in a
/// passthrough VM, "Code43"): the catalogue's entry needs "(Code 43)". Another program's exit
/// status or a legacy CUDA error 43 is not it, so a line with those words is left alone; a line
/// must name the GPU, its driver or Windows, or be a short title of its own.
/// joeknock90/Single-GPU-Passthrough#5, DualCoder/vgpu_unlock#102, arutar/FrankenDriver#61,
/// cyberus-technology/virtualbox-kvm#34.
fn code_43_named(seg: &Segment<'_>) -> Option<Finding> {
    const NAMES: &[&str] = &["code 43", "code43", "error 43"];
    const NOT_IT: &[&str] = &[
        "exit", "return", "status", "cuda", "errno", "http", "process", "signal",
    ];
    const GPU: &[&str] = &[
        "nvidia",
        "gpu",
        "geforce",
        "rtx",
        "gtx",
        "quadro",
        "tesla",
        "graphics",
        "device manager",
        "windows",
        "driver",
        "passthrough",
    ];
    let lower = seg.lower.trim();
    let named = NAMES.iter().any(|name| {
        lower.match_indices(name).any(|(at, _)| {
            let after = lower[at + name.len()..].chars().next();
            !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    });
    if !named || NOT_IT.iter().any(|w| lower.contains(w)) {
        return None;
    }
    // A short line of its own is a title ("Code43"); a build tool's "make: *** [all] Error 43"
    // is not.
    let title = lower.len() <= 24 && !lower.contains([':', '*', '[']);
    if !(GPU.iter().any(|w| lower.contains(w)) || title) {
        return None;
    }
    Some(at(
        seg,
        "drv-windows-code-43-named",
        Driver,
        Some(Hardware),
        "Windows stopped the GPU with Code 43: the NVIDIA driver started and found the card not working. On a physical machine the driver does not fit the card (a Windows Update driver swapped in, a mobile or mining card the package does not list) or the card or its slot fails; in a virtual machine the guest's driver sees a hypervisor it refuses or a card the host still holds.",
        "Reinstall the pinned NVIDIA driver with a clean install (DDU first if Windows Update swapped it), reboot, and prove again; keep driver updates out of Windows Update (`stackpin repair MANIFEST --apply-guard`). In a VM with GPU passthrough, release the card from the host (its framebuffer: video=efifb:off) and hide the hypervisor (KVM hidden state, a vendor_id). If Code 43 stays after a clean install, test the card in another machine or slot.",
        Mechanism::Plain,
        false,
    ))
}

/// torch's environment report (`python -m torch.utils.collect_env`) of a CPU-only build: the
/// CUDA it was built with "Could not collect" / "None" while the report shows CUDA on the machine
/// (a CUDA runtime version, an NVIDIA driver version, a GPU line). Such a torch cannot see the GPU
/// whatever the driver and toolkit are (pytorch/pytorch#122924, #108607). A `+cpu` version is
/// the catalogue's; a report without CUDA on the machine (a Mac) names nothing.
fn collect_env_cpu_build(segments: &[Segment<'_>]) -> Option<Finding> {
    let after = |seg: &Segment<'_>, label: &str| -> Option<String> {
        seg.lower
            .trim_start()
            .strip_prefix(label)
            .map(|v| v.trim().to_string())
    };
    let seg = segments.iter().find(|seg| {
        after(seg, "cuda used to build pytorch:")
            .is_some_and(|v| v == "could not collect" || v == "none")
    })?;
    let starts_with_digit = |v: &str| v.starts_with(|c: char| c.is_ascii_digit());
    let cuda_on_machine = segments.iter().any(|s| {
        after(s, "cuda runtime version:").is_some_and(|v| starts_with_digit(&v))
            || after(s, "nvidia driver version:").is_some_and(|v| starts_with_digit(&v))
            || s.lower.contains("gpu 0:")
    });
    if !cuda_on_machine {
        return None;
    }
    Some(at(
        seg,
        "lib-torch-cpu-build-report",
        Library,
        None,
        "torch's environment report shows a CPU-only build (no CUDA version it was built with) on a machine that has CUDA: this PyTorch cannot use the GPU, whatever the driver and toolkit are.",
        "Uninstall torch, torchvision and torchaudio and reinstall them from the CUDA wheel index for the driver (the manifest's library.pip.index_url, e.g. .../whl/cu124, with the exact `+cuXYZ` versions; with conda, the pytorch-cuda package instead of cpuonly, from one channel); check that `torch.version.cuda` is not None.",
        Mechanism::Plain,
        false,
    ))
}

// The variants of each rule are data: tests/fixtures/diagnose/variants/messages.yaml.
