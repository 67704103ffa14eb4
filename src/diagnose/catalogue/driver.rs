//! Driver-layer failures: the NVIDIA kernel driver, its installer, NVML, and a driver too old
//! for the CUDA runtime a library ships. Includes the guide's "GPU vanished after a Windows
//! feature update" family (nvidia-smi missing or failing, Code 43, no CUDA-capable device).

use super::{Entry, Specificity::*};
use crate::diagnose::FailureLayer::Driver;

/// The fix shared by every "the driver is gone or was replaced" entry.
const REINSTALL_FROM_ARCHIVE: &str = "Reinstall the pinned driver from the archive \
(`stackpin repair MANIFEST`, or run the archived driver installer by hand), reboot, then run \
`stackpin prove MANIFEST` again. `stackpin doctor MANIFEST` shows which driver is on the host now.";

/// "CUDA sees no device": whether `nvidia-smi` lists the GPU decides between a driver that lost
/// the card and a process that cannot reach a working one (tensorflow/tensorflow#7653: works
/// under sudo; NVIDIA/k8s-device-plugin#471: nvidia-smi works in the pod, CUDA sees nothing).
/// Torch's "No CUDA GPUs are available" was, in most resolved threads, the script's own
/// `os.environ["CUDA_VISIBLE_DEVICES"]` naming a GPU a one-GPU machine lacks (ziplab/PTQD#13,
/// Grace9994/CoMoSVC#6, jiaw-z/CoR-GS#23, KeYang8/WITT#34, Kent0n-Li/FGDM#7), hence the
/// example in the fix.
const NO_DEVICE_FIX: &str = "Run `nvidia-smi` as the same user, in the same container or pod. If \
it does not list the GPU, reinstall the pinned driver from the archive (`stackpin repair \
MANIFEST`), reboot, then run `stackpin prove MANIFEST` again. If it lists the GPU, the driver is \
fine and this process cannot reach it: CUDA_VISIBLE_DEVICES is empty or names a GPU index \
nvidia-smi does not list (a script or launcher that sets CUDA_VISIBLE_DEVICES=1 or 7 on a \
one-GPU machine: set it to 0 or remove it); /dev/nvidia-uvm is \
missing or not readable (it works as root: `sudo nvidia-modprobe -u -c=0`, add the user to the \
video/render group); or the container or pod was started without the GPU (`--gpus all`, the \
NVIDIA runtime as the default runtime, the pod's nvidia.com/gpu limit).";

pub(super) const ENTRIES: &[Entry] = &[
    Entry {
        id: "drv-smi-cannot-reach-driver",
        layer: Driver,
        specificity: Specific,
        patterns: &["couldn't communicate with the nvidia driver"],
        cause: "nvidia-smi cannot talk to the kernel driver: the module is not loaded (a new \
                kernel without a DKMS rebuild, Secure Boot refusing an unsigned module, or a \
                Windows feature update that replaced the NVIDIA driver).",
        fix: "Check that the module exists for the running kernel (`dkms status` against \
              `uname -r`): if it was never built for this kernel, install the kernel's headers \
              and rebuild, pin a driver release that supports the kernel, or boot a kernel the \
              driver supports; otherwise reinstall the pinned driver from the archive \
              (`stackpin repair MANIFEST`), reboot, and run `stackpin prove MANIFEST` again. \
              On a hosted notebook (Colab, Kaggle) the session has no GPU: choose a GPU runtime \
              (Runtime > Change runtime type, or the notebook's accelerator setting).",
        example: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. \
                  Make sure that the latest NVIDIA driver is installed and running.",
        source: "https://github.com/ci-for-research/self-hosted-runners/issues/40",
    },
    Entry {
        id: "drv-nvml-library-missing",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "couldn't find libnvidia-ml.so",
            "libnvidia-ml.so.1: cannot open shared object file",
        ],
        cause: "The driver's management library (libnvidia-ml) is missing or not on the loader \
                path: the driver is not installed, half removed, or (in a container) not \
                mounted in.",
        fix: "On the host: reinstall the pinned driver from the archive (`stackpin repair \
              MANIFEST`) and reboot. In a container: `nvidia-smi` must work on the host first; \
              run `ldconfig` in the container or start it with the NVIDIA runtime.",
        example: "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make \
                  sure that the NVIDIA Display Driver is properly installed and present in your \
                  system.",
        source: "https://github.com/NVIDIA/nvidia-docker/issues/1163",
    },
    Entry {
        id: "drv-nvml-version-mismatch",
        layer: Driver,
        specificity: Specific,
        patterns: &["driver/library version mismatch"],
        cause: "The loaded kernel module is older than the driver's user-space libraries: the \
                driver was upgraded (often by unattended upgrades) and the machine not rebooted.",
        fix: "Reboot so the new kernel module loads. If the mismatch stays, reinstall the pinned \
              driver from the archive (`stackpin repair MANIFEST`) and hold the driver package so \
              upgrades cannot swap it again.",
        example: "Failed to initialize NVML: Driver/library version mismatch",
        source: "https://github.com/tinygrad/open-gpu-kernel-modules/issues/47",
    },
    Entry {
        id: "drv-inst-module-in-use",
        layer: Driver,
        specificity: Specific,
        patterns: &["appears to already be loaded in your kernel"],
        cause: "The driver installer cannot replace a kernel module that is in use (X server, \
                a CUDA program or the persistence daemon holds it).",
        fix: "Stop the display manager and every GPU program (`systemctl isolate \
              multi-user.target`, stop nvidia-persistenced), then run the archived driver \
              installer again.",
        example: "ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded in \
                  your kernel.  This may be because it is in use (for example, by an X server, \
                  a CUDA program, or the NVIDIA Persistence Daemon)",
        source: "https://github.com/Arc-Compute/LibVF.IO/issues/20",
    },
    Entry {
        id: "drv-inst-nouveau-in-use",
        layer: Driver,
        specificity: Specific,
        patterns: &["nouveau kernel driver is currently in use"],
        cause: "The open-source nouveau driver owns the GPU, so the NVIDIA driver cannot load.",
        fix: "Blacklist nouveau (`blacklist nouveau` and `options nouveau modeset=0` in \
              /etc/modprobe.d/), rebuild the initramfs, reboot, then run the archived driver \
              installer again.",
        example: "ERROR: The Nouveau kernel driver is currently in use by your system.  This \
                  driver is incompatible with the NVIDIA driver, and must be disabled before \
                  proceeding.",
        source: "https://github.com/ApolloAuto/apollo/issues/2466 ; \
                 https://github.com/BenedictThompson-zz/Azure-Ethereum-mine/issues/2",
    },
    Entry {
        id: "drv-inst-no-kernel-source",
        layer: Driver,
        specificity: Specific,
        // The CUDA runfile's driver step words it "unable to locate the kernel source"
        // (koszullab/instaGRAAL#10).
        patterns: &[
            "unable to find the kernel source tree",
            "unable to locate the kernel source",
        ],
        cause: "The driver installer needs the headers of the running kernel to build its \
                module, and they are not installed.",
        fix: "Install the headers for `uname -r` (linux-headers-$(uname -r), or kernel-devel on \
              Red Hat), then run the archived driver installer again with --dkms.",
        example: "ERROR: Unable to find the kernel source tree for the currently running kernel. \
                  Please make sure you have installed the kernel source files for your kernel",
        source: "https://github.com/Bumblebee-Project/Bumblebee/issues/925 ; \
                 https://github.com/koszullab/instaGRAAL/issues/10",
    },
    Entry {
        id: "drv-inst-cannot-load-module",
        layer: Driver,
        specificity: Specific,
        // The installer's wording for one module by name: lebensterben/awesome-clear-linux#9,
        // clearlinux/distribution#1994 (nvidia-drm, fixed by another kernel).
        patterns: &[
            "unable to load the kernel module",
            "unable to load the 'nvidia",
        ],
        cause: "The freshly built NVIDIA module would not load: built against other kernel \
                sources or another gcc, nouveau still owns the GPU, or this driver does not \
                support the card.",
        fix: "Read 'Kernel module load error' at the end of /var/log/nvidia-installer.log; \
              disable nouveau and Secure Boot (or sign the module), install matching kernel \
              headers, then run the archived installer again.",
        example: "ERROR: Unable to load the kernel module 'nvidia-modeset.ko'.  This happens most \
                  frequently when this kernel module was built against the wrong or improperly \
                  configured kernel sources",
        source: "https://github.com/NVIDIA/nvidia-installer (source string, tag 590.48.01) ; \
                 https://github.com/NVIDIA/aerial-cuda-accelerated-ran/issues/31 ; \
                 https://github.com/clearlinux/distribution/issues/1994",
    },
    Entry {
        id: "drv-inst-gpu-not-supported",
        layer: Driver,
        specificity: Specific,
        patterns: &["you do not appear to have an nvidia gpu supported by the"],
        cause: "The pinned driver release does not support the GPU in this machine (too new or \
                too old for that driver branch).",
        fix: "Pin a driver release whose supported-chips list names this card (`stackpin pin \
              --library NAME==VERSION --os OS --driver VERSION`), fetch it, and install again.",
        example: "WARNING: You do not appear to have an NVIDIA GPU supported by the 410.48 NVIDIA \
                  Linux graphics driver installed in this system.",
        source: "https://github.com/koszullab/instaGRAAL/issues/10",
    },
    Entry {
        id: "drv-inst-x-server-running",
        layer: Driver,
        specificity: Generic,
        patterns: &["you appear to be running an x server"],
        cause: "The driver installer ran while X was up; it may miss problems or fail to \
                replace loaded modules.",
        fix: "Switch to a text console (`systemctl isolate multi-user.target`) and run the \
              archived driver installer again.",
        example: "You appear to be running an X server.  Installing the NVIDIA driver while X is \
                  running is not recommended",
        source: "https://github.com/NVIDIA/nvidia-installer (source string, tag 590.48.01)",
    },
    Entry {
        id: "drv-inst-no-drm-module",
        layer: Driver,
        specificity: Generic,
        patterns: &["the nvidia-drm module will not be installed"],
        cause: "The installer skipped nvidia-drm (DRM-KMS); harmless for compute, but it often \
                sits next to the real error in a failed install.",
        fix: "Look further in /var/log/nvidia-installer.log for the first ERROR line; for \
              compute-only machines this warning alone needs no action.",
        example: "WARNING: The nvidia-drm module will not be installed. As a result, DRM-KMS will \
                  not function with this installation of the NVIDIA driver.",
        source: "https://github.com/pytorch/pytorch/issues/88352",
    },
    Entry {
        id: "drv-inst-failed",
        layer: Driver,
        specificity: Generic,
        patterns: &["installation has failed*nvidia-installer.log"],
        cause: "The NVIDIA driver installer failed; its log names the step.",
        fix: "Open /var/log/nvidia-installer.log and run `stackpin diagnose` on it: the first \
              ERROR line names the cause (nouveau, kernel headers, a module in use).",
        example: "ERROR: Installation has failed.  Please see the file \
                  '/var/log/nvidia-installer.log' for details.",
        source: "https://github.com/ApolloAuto/apollo/issues/2466",
    },
    Entry {
        id: "drv-inst-windows-incompatible",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "installer cannot continue",
            "graphics driver is not compatible with",
        ],
        cause: "The Windows driver installer refused this card or this Windows build (wrong \
                package: notebook vs desktop, DCH vs standard, or a card this branch does not \
                support).",
        fix: "Pin the driver package NVIDIA lists for this exact card and Windows version, fetch \
              it into the archive and install again.",
        example: "Nvidia installer cannot continue. This nvndia graphics driver is not compatible \
                  with your device.",
        source: "https://github.com/dartraiden/NVIDIA-patcher/issues/293",
    },
    Entry {
        id: "drv-too-old-for-runtime",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "driver version is insufficient for cuda runtime version",
            "cuda driver version is insufficient",
            "cudaerrorinsufficientdriver",
        ],
        // The driver in every resolved thread; in a container the host's driver can also be
        // missing from it altogether, a container started without the GPU (NVIDIA/nvidia-docker
        // #400: `--gpus all` cured it), so the fix says that too when no host context is known.
        cause: "The driver is older than the minimum the CUDA runtime needs: the one-way rule \
                (newer driver with older toolkit works; the reverse fails) is broken.",
        fix: "Install the newest driver for the card (at least the toolkit's minimum; `stackpin \
              check MANIFEST` names it), reboot, and prove again; under WSL2 that is the \
              Windows driver (it brings WSL's libcuda), never a Linux driver inside WSL. In a \
              container, `nvidia-smi` must work inside it: start it with the GPU (`--gpus all` \
              or the NVIDIA runtime) before changing the host's driver. Do not downgrade the \
              toolkit to fit an old driver.",
        example: "CUDA error: 35 (0x23) cudaErrorInsufficientDriver : CUDA driver version is \
                  insufficient for CUDA runtime version",
        source: "https://github.com/Chia-Network/bladebit/issues/431 ; \
                 https://github.com/nagadomi/nunif/issues/702",
    },
    Entry {
        id: "drv-too-old-for-torch",
        layer: Driver,
        specificity: Specific,
        patterns: &["the nvidia driver on your system is too old"],
        cause: "PyTorch's CUDA build needs a newer driver than the one installed.",
        // The message's own alternative ("install a PyTorch version that has been compiled with
        // your version of the CUDA driver"): where the driver is not the user's to change (a
        // hosted notebook, a shared server) that build is the fix.
        fix: "Install the newest driver for the card (at least the toolkit's minimum; `stackpin \
              check MANIFEST` names it), reboot and prove again. Where the driver cannot be \
              changed (a hosted notebook, a shared server), install the torch build for the CUDA \
              the driver supports instead (the `found version` it prints is that CUDA: 10010 \
              is 10.1, a +cu101 build).",
        example: "RuntimeError: The NVIDIA driver on your system is too old (found version \
                  11040). Please update your GPU driver",
        source: "https://github.com/lllyasviel/Fooocus/issues/1313",
    },
    Entry {
        id: "drv-ptx-unsupported-toolchain",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "ptx*unsupported toolchain",
            "cudaerrorunsupportedptxversion",
        ],
        cause: "Code was compiled by a newer CUDA toolkit than the installed driver can JIT: the \
                driver is too old for the toolkit.",
        fix: "Install the newest driver for the card (at least the toolkit's minimum), reboot, \
              and prove again; keep the toolkit the release notes name.",
        example: "Cuda failure: 222 the provided PTX was compiled with an unsupported toolchain.",
        source: "https://github.com/mit-han-lab/inter-operator-scheduler/issues/4 ; \
                 https://github.com/NVIDIA/CUDALibrarySamples/issues/47",
    },
    Entry {
        id: "drv-unsupported-combination",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "unsupported display driver / cuda driver combination",
            "error 803",
        ],
        cause: "The CUDA driver library (libcuda) and the kernel module come from different \
                driver versions, or a forward-compatibility package does not fit this GPU.",
        fix: "Remove stray libcuda copies (cuda-compat, containers' bundled drivers), reinstall \
              the pinned driver from the archive, reboot, and prove again.",
        example: "Error 803: system has unsupported display driver / cuda driver combination",
        source: "https://github.com/superlinked/sie/issues/43",
    },
    Entry {
        id: "drv-fabric-manager",
        layer: Driver,
        specificity: Specific,
        patterns: &["error 802", "system not yet initialized"],
        cause: "On NVSwitch systems CUDA waits for the fabric manager, which is not running or \
                does not match the driver version.",
        fix: "Install nvidia-fabricmanager of exactly the driver's version, enable and start it, \
              then prove again.",
        example: "Error 802: system not yet initialized",
        source: "https://github.com/gpustack/gpustack/issues/1254",
    },
    Entry {
        id: "drv-torch-no-driver",
        layer: Driver,
        specificity: Specific,
        patterns: &["found no nvidia driver on your system"],
        cause: "The library finds no NVIDIA driver at all: never installed, or removed/replaced \
                (a Windows feature update, a kernel update without DKMS).",
        fix: "First check that this machine has an NVIDIA GPU at all (`lspci | grep -i nvidia`, \
              Device Manager on Windows; a cloud notebook must be on a GPU runtime, a laptop's \
              Intel/AMD graphics are not one). If it has one, install the pinned driver from the \
              archive (`stackpin repair MANIFEST`, or the archived installer by hand), reboot, and \
              prove again; `stackpin doctor MANIFEST` shows which driver the host has now.",
        example: "RuntimeError: Found no NVIDIA driver on your system. Please check that you have \
                  an NVIDIA GPU and installed a driver",
        source: "https://github.com/princeton-nlp/SimCSE/issues/244 ; \
                 https://github.com/AbnerHqC/GaitSet/issues/95",
    },
    Entry {
        id: "drv-cuda-init-failed",
        layer: Driver,
        specificity: Specific,
        patterns: &["cuda driver initialization failed"],
        cause: "cuInit failed: the driver is missing, not loaded, or does not match its \
                user-space libraries.",
        fix: REINSTALL_FROM_ARCHIVE,
        example: "UserWarning: CUDA initialization: CUDA driver initialization failed, you might \
                  not have a CUDA gpu.",
        source: "https://github.com/wenet-e2e/wenet/issues/700",
    },
    Entry {
        id: "drv-no-cuda-device",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "no cuda-capable device is detected",
            "cuda_error_no_device",
            "cudaerrornodevice",
            "no cuda gpus are available",
        ],
        cause: "CUDA sees no GPU: the GPU vanished from the driver's view, typically after a \
                Windows feature or cumulative update replaced the NVIDIA driver, or a kernel \
                update without a reboot or DKMS rebuild (also: CUDA_VISIBLE_DEVICES hides it).",
        fix: NO_DEVICE_FIX,
        example: "E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:267] failed call \
                  to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        source: "https://github.com/microsoft/WSL/issues/9272 ; \
                 https://github.com/tensorflow/tensorflow/issues/44869 ; \
                 https://github.com/lllyasviel/Fooocus/issues/1189 ; \
                 https://github.com/NVIDIA/cuda-samples/issues/34 (cudaErrorNoDevice)",
    },
    Entry {
        id: "drv-kernel-driver-not-running",
        layer: Driver,
        specificity: Specific,
        patterns: &["kernel driver does not appear to be running on this host"],
        cause: "No NVIDIA kernel module is loaded (/proc/driver/nvidia/version is missing).",
        fix: REINSTALL_FROM_ARCHIVE,
        example: "kernel driver does not appear to be running on this host (16c54693e7f2): \
                  /proc/driver/nvidia/version does not exist",
        source: "https://github.com/tensorflow/tensorflow/issues/44869",
    },
    Entry {
        id: "drv-module-missing-for-kernel",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "modprobe: fatal: module nvidia",
            "could not find module by name 'nvidia",
            // modprobe naming the module without "Module" (Witko/nvidia-xrun#144), and
            // mkinitcpio not finding the modules it was told to put in the initramfs
            // (NVIDIA/open-gpu-kernel-modules#352, korvahannu/arch-nvidia-drivers-installation-guide#9).
            "modprobe: fatal: nvidia*not found in directory",
            "error: module not found: `nvidia",
            "error: module not found: 'nvidia",
        ],
        cause: "The running kernel has no NVIDIA module: the kernel was updated and DKMS did not \
                rebuild the driver for it, or the driver package installed is built for another \
                kernel.",
        fix: "Install the headers for the running kernel and rebuild (`dkms autoinstall`), or \
              reinstall the archived driver with --dkms (`stackpin repair MANIFEST`); reboot and \
              prove again. On Arch the package must match the kernel: nvidia for linux, \
              nvidia-lts for linux-lts, nvidia-dkms with the kernel's headers for any other.",
        example: "modprobe: FATAL: Module nvidia not found.",
        source: "https://github.com/NVIDIA/nvidia-docker/issues/365 ; \
                 https://github.com/Witko/nvidia-xrun/issues/144 ; \
                 https://github.com/NVIDIA/open-gpu-kernel-modules/issues/352 ; \
                 https://github.com/korvahannu/arch-nvidia-drivers-installation-guide/issues/9",
    },
    Entry {
        id: "drv-dkms-build-failed",
        layer: Driver,
        // Generic: DKMS prints this line for every module it builds, and in the threads that
        // quote it most modules are not NVIDIA's (Mange/rtl8192eu-linux-driver#234: a Wi-Fi
        // driver; fmorgner/dev-cyber#9, Kimplul/hid-tmff2#140, marqs85/db9_gpio_rpi#5: their
        // own modules' build bugs, fixed in those modules). The NVIDIA module's own build names
        // /var/lib/dkms/nvidia on the next line, which the DKMS family reads decisively; this
        // entry is left the line alone, or another GPU module's (dxgkrnl).
        specificity: Generic,
        patterns: &[
            "bad return status for module build on kernel",
            "dkms autoinstall*failed for nvidia",
        ],
        cause: "DKMS could not build a kernel module for the new kernel: the NVIDIA driver's \
                (this driver branch does not support the kernel, or its headers are missing: \
                after the next reboot there is no driver), unless the make.log it names belongs \
                to another module.",
        fix: "Read the make.log the message names. If it is under /var/lib/dkms/nvidia…: install \
              the headers for the new kernel, or pin a driver release that supports it and \
              reinstall from the archive; until then boot the previous kernel. If it is another \
              module's (a Wi-Fi, gamepad or vendor module), the GPU stack is not the cause: \
              update that module or remove it (`sudo dkms remove MODULE/VERSION --all`) so the \
              kernel's packages can finish installing.",
        example: "Error! Bad return status for module build on kernel: 6.4.1-zen1-1-zen (x86_64)",
        source: "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/526",
    },
    Entry {
        id: "drv-container-driver-not-loaded",
        layer: Driver,
        specificity: Specific,
        patterns: &["nvml error: driver not loaded"],
        cause: "The container runtime finds no loaded NVIDIA driver on the host.",
        fix: "Fix the host first: `nvidia-smi` must work there. Reinstall the pinned driver from \
              the archive if it does not, reboot, then start the container again.",
        example: "nvidia-container-cli: initialization error: nvml error: driver not loaded: \
                  unknown.",
        source: "https://github.com/NVIDIA/nvidia-docker/issues/1393",
    },
    Entry {
        id: "drv-windows-code-43",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "(code 43)",
            "windows has stopped this device because it has reported problems",
        ],
        // The card itself is the resolution in several threads behind this sentence
        // (dartraiden/NVIDIA-patcher#531, this entry's source: "Probably bricked GPU";
        // arutar/FrankenDriver#77: "a hardware error, not a driver error", the card fails on
        // that platform; arutar/FrankenDriver#61: a faulty card if another machine fails too),
        // so hardware is its second layer; in a passthrough VM's guest it is the host's
        // configuration (QaidVoid/Complete-Single-GPU-Passthrough#12: efifb:off cured it).
        cause: "Windows stopped the GPU (Device Manager, Code 43): the driver it loaded does not \
                work with the card, the signature of a feature update that swapped in its own \
                driver; a failing card reports the same.",
        fix: "Reinstall the pinned NVIDIA driver from the archive with a clean install, reboot, \
              and prove again; keep driver updates out of Windows Update (`stackpin repair \
              MANIFEST --apply-guard`). In a virtual machine with GPU passthrough, release the \
              card from the host (video=efifb:off) and hide the hypervisor from the guest's \
              driver. If Code 43 stays after a clean install, test the card in another \
              machine.",
        example: "Windows has stopped this device because it has reported problems. (Code 43)",
        source: "https://github.com/dartraiden/NVIDIA-patcher/issues/531",
    },
    Entry {
        id: "drv-windows-smi-missing",
        layer: Driver,
        specificity: Specific,
        patterns: &["nvidia-smi*is not recognized as an internal or external command"],
        cause: "nvidia-smi is gone from this Windows machine: the NVIDIA driver was removed or \
                replaced (a Windows feature update installs its own display driver without it).",
        fix: REINSTALL_FROM_ARCHIVE,
        example: "'nvidia-smi' is not recognized as an internal or external command, operable \
                  program or batch file.",
        source: "https://github.com/vosen/ZLUDA/issues/213",
    },
    Entry {
        id: "drv-linux-smi-missing",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "nvidia-smi: command not found",
            "no such file or directory: 'nvidia-smi'",
        ],
        cause: "nvidia-smi is not installed: the NVIDIA driver is missing (removed by a package \
                upgrade, or never installed; nouveau may be in use).",
        fix: REINSTALL_FROM_ARCHIVE,
        example: "FileNotFoundError: [Errno 2] No such file or directory: 'nvidia-smi': \
                  'nvidia-smi'",
        source: "https://github.com/peci1/nvidia-htop/issues/23",
    },
    Entry {
        id: "drv-libcuda-missing",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "error: libcuda.so: cannot open shared object file",
            "could not load dynamic library 'libcuda.so",
            "libcuda.so.1: cannot open shared object file",
        ],
        cause: "libcuda, the driver's CUDA library, is not on the loader path: no driver, or on \
                WSL the Windows driver's /usr/lib/wsl/lib is missing from the path.",
        fix: "On WSL add /usr/lib/wsl/lib to LD_LIBRARY_PATH (and never install a Linux driver \
              inside WSL); on Linux reinstall the pinned driver from the archive and prove \
              again. In a container, start it with the NVIDIA runtime (`docker run --gpus all`): \
              the runtime mounts the host driver's libcuda, the image has none of its own.",
        example: "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open \
                  shared object file: No such file or directory",
        source: "https://github.com/open-mmlab/mmdetection3d/issues/2132 ; \
                 https://github.com/OpenTalker/SadTalker/issues/323",
    },
    Entry {
        id: "drv-cudnn-insufficient-driver",
        layer: Driver,
        specificity: Specific,
        patterns: &["possibly insufficient driver version"],
        // TensorFlow prints this after every CUDNN_STATUS_NOT_INITIALIZED with whatever driver
        // is loaded, without comparing it to anything: a driver update cured it where the
        // driver was below the toolkit's minimum (localminimum/QANet#5: 384.69 under CUDA 9.0's
        // 384.81), but the same line names drivers that meet the minimum (tensorflow/
        // tensorflow#34214: 410.48 for CUDA 10.0; nanoporetech/medaka#236: 418.87 for 10.1;
        // tensorflow/tensorflow#30254: 387.26 for 9.0), where GPU memory taken before cuDNN
        // starts is the cause and memory growth cures it (DeepLabCut/DeepLabCut#1299). Hence
        // memory as the second layer, and a fix that compares the printed version first.
        cause: "cuDNN could not start (CUDNN_STATUS_NOT_INITIALIZED) and TensorFlow prints the \
                loaded driver's version: a driver older than the toolkit needs, or, when that \
                version meets the toolkit's minimum, GPU memory already taken when cuDNN starts.",
        fix: "Compare the driver version on this line with the minimum the release notes give \
              for TensorFlow's CUDA. Below it: install the newest driver for the card, reboot \
              and prove again. At or above it: the driver is fine and the GPU's memory is \
              short when cuDNN starts: let TensorFlow grow its memory \
              (TF_FORCE_GPU_ALLOW_GROWTH=true, or tf.config.experimental.set_memory_growth), \
              stop other processes on the GPU (`nvidia-smi`), or lower the batch size.",
        example: "E tensorflow/stream_executor/cuda/cuda_dnn.cc:360] Possibly insufficient driver \
                  version: 384.111.0",
        source: "https://github.com/thtrieu/darkflow/issues/930",
    },
    Entry {
        id: "drv-segfault-in-libcuda",
        layer: Driver,
        specificity: Specific,
        patterns: &["sigsegv*from*libcuda.so", "in ?? () from*libcuda.so"],
        cause: "The process crashed inside libcuda, the driver's library: driver and library \
                builds disagree, or the driver is damaged.",
        fix: "Reinstall the newest driver from the archive, check the library was built for the \
              toolkit the release notes name, and prove again.",
        example: "0x00007fffe958f5ca in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1",
        source: "https://github.com/pytorch/pytorch/issues/6449",
    },
    Entry {
        id: "drv-cuinit-failed",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "failed call to cuinit",
            "cuda_error_unknown",
            "unexpected error from cudagetdevicecount",
        ],
        // Round 2 missed `cuInit: CUDA_ERROR_UNKNOWN`. cuInit and cudaGetDeviceCount are the
        // first calls into the driver, so their failure is the driver's (device nodes missing
        // for a non-root user, nvidia_uvm not loaded after a suspend, a forward-compatibility
        // package on an unsupported GPU: "Error 804").
        cause: "The CUDA driver failed to initialise (cuInit / cudaGetDeviceCount): the driver \
                is half loaded (nvidia_uvm missing, /dev/nvidia* not accessible to this user) \
                or does not match its user-space libraries.",
        fix: "Check `nvidia-smi` works for this user and that /dev/nvidia-uvm exists (`sudo \
              modprobe nvidia_uvm`); reboot after a driver update or a suspend; if it stays, \
              reinstall the pinned driver from the archive (`stackpin repair MANIFEST`) and \
              remove cuda-compat packages.",
        example: "E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: \
                  CUDA_ERROR_UNKNOWN: unknown error",
        source: "https://github.com/tensorflow/tensorflow/issues/32623 ; \
                 https://github.com/PKU-YuanGroup/Video-LLaVA/issues/22 (cudaGetDeviceCount, \
                 Error 804)",
    },
    Entry {
        id: "drv-smi-no-devices",
        layer: Driver,
        specificity: Specific,
        patterns: &["no devices were found"],
        cause: "The NVIDIA driver is loaded but could not initialise the GPU: this driver \
                release does not support the card, or the firmware settings hide it (Above 4G \
                decoding / Resizable BAR off), or a passthrough VM hides it.",
        fix: "Read the NVRM lines in `dmesg` (RmInitAdapter failed names the step): pin a \
              driver release that lists this card, enable Above 4G decoding in the BIOS, and \
              reinstall from the archive. If dmesg says the GPU fell off the bus, it is \
              hardware.",
        example: "No devices were found",
        source: "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862 ; \
                 https://github.com/JackHack96/dell-xps-9570-ubuntu-respin/issues/125",
    },
    Entry {
        id: "drv-secure-boot-rejects-module",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "key was rejected by service",
            "loading of module with unavailable key is rejected",
            "required key not available",
        ],
        cause: "Secure Boot refused to load the unsigned NVIDIA kernel module.",
        fix: "Either disable Secure Boot in the firmware, or sign the module: reinstall the \
              archived driver with DKMS module signing and enrol the key with `mokutil \
              --import`, reboot and confirm the key in the MOK manager, then prove again.",
        example: "modprobe: ERROR: could not insert 'xpad': Key was rejected by service",
        source: "https://github.com/paroj/xpad/issues/312 ; \
                 https://github.com/JafarAkhondali/acer-predator-turbo-and-rgb-keyboard-linux-module/issues/113",
    },
    Entry {
        id: "drv-module-compiler-mismatch",
        layer: Driver,
        specificity: Specific,
        patterns: &[
            "failed cc version check",
            "cc version check failed",
            "compiler version check failed",
        ],
        cause: "The NVIDIA kernel module is being built with another gcc than the one that \
                built the running kernel, and the installer's compiler check stopped.",
        fix: "Install the gcc the kernel was built with (the version /proc/version names) and \
              point CC at it, or update the kernel and its headers together so they match; \
              then run the archived driver installer again. Avoid IGNORE_CC_MISMATCH.",
        example: "*** Failed CC version check. Bailing out! ***",
        source: "https://github.com/GoogleCloudPlatform/compute-gpu-installation/issues/15 ; \
                 https://github.com/Bumblebee-Project/Bumblebee/issues/712",
    },
    Entry {
        id: "drv-inst-windows-failed",
        layer: Driver,
        specificity: Generic,
        patterns: &["nvidia installer failed", "graphics driver: failed"],
        cause: "The Windows NVIDIA driver installer failed; its own log names the component.",
        fix: "Run the archived driver installer again with a clean install (`-s -clean \
              -noreboot`), read %ProgramData%\\NVIDIA Corporation\\Installer2 logs for the \
              first failed component, and check the package fits this card and Windows build.",
        example: "NVIDIA Installer Failed",
        source: "https://github.com/sk1080/nvidia-kvm-patcher/issues/47",
    },
    Entry {
        id: "drv-wsl-libcuda-not-symlink",
        layer: Driver,
        specificity: Generic,
        patterns: &["libcuda.so.1 is not a symbolic link"],
        // ldconfig prints this on every package install in WSL: the Windows driver mounts
        // copies instead of links. Harmless on its own, so it only wins when nothing specific
        // matched.
        cause: "WSL's driver libraries in /usr/lib/wsl/lib (from the Windows NVIDIA driver) are \
                copies, not symbolic links; ldconfig warns. Harmless unless libcuda fails to \
                load.",
        fix: "Nothing to install inside WSL (never a Linux driver there). If CUDA really fails, \
              update the Windows NVIDIA driver and add /usr/lib/wsl/lib to LD_LIBRARY_PATH; \
              the warning alone needs no action.",
        example: "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link",
        source: "https://github.com/microsoft/WSL/issues/5548 ; \
                 https://github.com/microsoft/WSL/issues/11229",
    },
    Entry {
        id: "drv-container-started-without-gpu",
        layer: Driver,
        specificity: Specific,
        // The CUDA images' entrypoint banner (nvidia/cuda, NGC): printed when the container
        // sees no driver, i.e. it was started without the NVIDIA runtime's GPUs (older images
        // name nvidia-docker, newer ones the Container Toolkit).
        patterns: &["the nvidia driver was not detected"],
        cause: "The CUDA container image sees no NVIDIA driver: the container was started \
                without the GPUs (no `--gpus`, or no NVIDIA Container Toolkit on the host), or \
                the host has no working driver.",
        fix: "Check the host first: `nvidia-smi` must work there (install the pinned driver from \
              the archive if it does not). Install the NVIDIA Container Toolkit on the host, \
              configure Docker for it (`sudo nvidia-ctk runtime configure --runtime=docker`, \
              then restart Docker) and start the container with `--gpus all` (Compose: a GPU \
              device reservation; very old setups: `nvidia-docker run`).",
        example: "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be \
                  available.",
        source: "https://github.com/NVIDIA/nvidia-docker/issues/1071 ; \
                 https://github.com/NVIDIA/nvidia-docker/issues/1548",
    },
];
