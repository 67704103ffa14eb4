//! Context decides the fix: the same driver-layer message wants a different fix inside a
//! container (the host driver is fine; the container lost its devices), under WSL (the driver
//! is the Windows one; a Linux driver must never be installed there), or on a host whose
//! running kernel has no NVIDIA module (the kernel moved on, the driver was not rebuilt).
//!
//! Pure: takes a [`Diagnosis`], what kind of fix it has ([`Mechanism`]) and the
//! [`HostContext`] the CLI probed (or none, for a log from elsewhere).

use super::families::Mechanism;
use super::{Diagnosis, FailureLayer};
use crate::host::context::HostContext;

const CONTAINER_FIX: &str = "This runs in a container: the driver lives on the host and is not \
installed here. Check `nvidia-smi` on the host first: if it fails there too, the host has no \
working driver (the container runtime loads the host's libnvidia-ml and libcuda), so install or \
repair the pinned driver on the host itself (Docker Desktop and WSL use the Windows driver). If it works there, the container lost its GPU devices (common after `systemctl daemon-reload` with the systemd cgroup driver): restart the \
container, start it with the NVIDIA runtime (`--gpus all`, or `--runtime=nvidia`), and make the \
fix last by passing the device nodes (`--device /dev/nvidia0 --device /dev/nvidiactl --device \
/dev/nvidia-uvm`) or using the NVIDIA Container Toolkit's CDI specs (`nvidia-ctk cdi generate`). \
Never install a driver inside the container.";

const CONTAINER_BUILD_FIX: &str = "This runs in a container: a driver cannot be installed or \
built here. Install the pinned driver on the host (`stackpin install MANIFEST` there), then start the \
container with the NVIDIA runtime (`--gpus all`).";

/// The driver's video libraries (libnvcuvid, libnvidia-encode) in a container: the runtime mounts
/// the host's copies only when the container asks for the `video` capability, which the default
/// (`compute,utility`) does not (NVIDIA/DALI#2362, NVIDIA/CUDALibrarySamples#132).
const CONTAINER_VIDEO_FIX: &str = "This runs in a container: libnvcuvid and libnvidia-encode are \
the host driver's and the NVIDIA runtime mounts them only for the `video` driver capability, \
which its default (compute,utility) leaves out. Start the container with \
NVIDIA_DRIVER_CAPABILITIES=compute,utility,video (or all) in the image or `-e`, or `--gpus \
'all,\"capabilities=compute,utility,video\"'` (Compose: `capabilities: [gpu, video]`), and check \
on the host that the driver's video packages are installed (`ldconfig -p | grep nvcuvid`). Never \
install a driver inside the container.";

const WSL_FIX: &str = "This is WSL: the GPU driver is the Windows one, shared into Linux through \
/dev/dxg and /usr/lib/wsl/lib. Update the NVIDIA driver on the Windows side, run `wsl --update` \
and `wsl --shutdown`, and check /usr/lib/wsl/lib/libcuda.so. Never install a Linux NVIDIA \
driver inside WSL (remove one if it is there: it overrides the WSL libraries).";

/// WSL's GPU paravirtualisation limits pinned (page-locked) host memory far below the host's RAM,
/// and CUDA reports a refused pin as out of memory: microsoft/WSL#8447 (pin_memory=False cured
/// it with the card half empty), ddPn08/rvc-webui#78, docker/for-win#12733.
const WSL_PINNED_NOTE: &str = "Under WSL, pinned host memory is limited: if memory is still free \
on the card (`nvidia-smi`), set `pin_memory=False` in the DataLoader (vLLM already does under \
WSL) before lowering the batch.";

/// A GPU out-of-memory answer (not the host's RAM, shared memory or Windows' paging file),
/// which WSL's pinned-memory limit can cause, unless its fix already says so.
fn is_gpu_memory(d: &Diagnosis) -> bool {
    const HOST_SIDE: &[&str] = &["mem-host-", "mem-shm", "mem-dataloader", "mem-windows"];
    d.layer == FailureLayer::Memory
        && !HOST_SIDE.iter().any(|p| d.id.starts_with(p))
        && !d.fix.contains("pin_memory")
}

/// Container or WSL evidence in the log itself: a failure pasted from a container (`docker:
/// Error response from daemon`, `nvidia-container-cli: …`) wants the container's fix even when
/// `diagnose` runs elsewhere or with `--host none`.
pub fn from_log(text: &str) -> Option<HostContext> {
    let lower = text.to_lowercase();
    const CONTAINER: &[&str] = &[
        "docker: error response from daemon",
        "oci runtime create failed",
        "nvidia-container-cli:",
        "container_linux.go",
        "docker run ",
    ];
    // WSL names itself in kernel releases (`…-microsoft-standard-WSL2`), its library folder, its
    // GPU bridge's device and kernel-log lines (`/dev/dxg`, `misc dxg: dxgk: …`) and in the titles
    // users write ("WSL2 Ubuntu 22.04 …": ollama/ollama#684; microsoft/WSL#9099, #13734 show the
    // dxg lines next to a CUDA that finds no GPU). The module's name alone (dxgkrnl) is not WSL:
    // Hyper-V Linux guests build it with DKMS (staralt/dxgkrnl-dkms#7, round 15's r15-12).
    const WSL: &[&str] = &[
        "microsoft-standard",
        "/usr/lib/wsl/",
        "/dev/dxg",
        "misc dxg",
        "wsl2",
    ];
    let container = CONTAINER.iter().find(|m| lower.contains(*m));
    let wsl = WSL.iter().find(|m| lower.contains(*m));
    if container.is_none() && wsl.is_none() {
        return None;
    }
    Some(HostContext {
        container: container.map(|m| format!("the log shows `{}`", m.trim_end_matches(':').trim())),
        wsl: wsl.map(|m| format!("the log shows `{m}`")),
        ..HostContext::default()
    })
}

/// The host's context, with the log's container or WSL evidence added where the host has none.
pub fn merge(host: Option<&HostContext>, log: Option<HostContext>) -> Option<HostContext> {
    match (host, log) {
        (None, log) => log,
        (Some(h), None) => Some(h.clone()),
        (Some(h), Some(l)) => {
            let mut merged = h.clone();
            if merged.container.is_none() && merged.wsl.is_none() {
                merged.container = l.container;
                merged.wsl = l.wsl;
            }
            Some(merged)
        }
    }
}

/// The kind of fix a catalogue entry has, by its id.
pub fn mechanism_of_entry(id: &str) -> Mechanism {
    // A driver/library version mismatch is the host's own driver (a module older than its
    // libraries), in a container too: its fix (reboot, reinstall) is the host's whatever the
    // context (round 7: r7-16, r7-18).
    if !id.starts_with("drv-") || id == "drv-nvml-version-mismatch" {
        return Mechanism::Plain;
    }
    let building = [
        "inst-",
        "dkms",
        "secure-boot",
        "compiler",
        "kernel-source",
        "module-missing",
    ];
    if building.iter().any(|b| id.contains(b)) {
        Mechanism::DriverBuild
    } else {
        Mechanism::DriverAccess
    }
}

/// `d` with the fix the host context calls for; unchanged without context, off the driver
/// layer, or when nothing in the context matters.
pub fn apply(mut d: Diagnosis, mechanism: Mechanism, context: Option<&HostContext>) -> Diagnosis {
    let Some(ctx) = context else {
        return d;
    };
    if let Some(why) = &ctx.wsl
        && is_gpu_memory(&d)
    {
        d.fix = format!("{} {WSL_PINNED_NOTE}", d.fix);
        d.context = Some(format!("WSL ({why})"));
        return d;
    }
    if d.layer != FailureLayer::Driver || mechanism == Mechanism::Plain {
        return d;
    }
    if let Some(why) = &ctx.wsl {
        d.fix = WSL_FIX.to_string();
        d.context = Some(format!("WSL ({why})"));
    } else if let Some(why) = &ctx.container {
        d.fix = match mechanism {
            Mechanism::DriverBuild => CONTAINER_BUILD_FIX,
            Mechanism::DriverVideo => CONTAINER_VIDEO_FIX,
            _ => CONTAINER_FIX,
        }
        .to_string();
        d.context = Some(format!("a container ({why})"));
    } else if let Some(kernel) = &ctx.kernel {
        let built_for = ctx.nvidia_module_kernels.join(", ");
        if ctx.kernel_without_module() {
            d.fix = format!(
                "The running kernel {kernel} has no NVIDIA module (one was built for {built_for}): \
                 the kernel was upgraded and the driver not rebuilt. Install the headers of \
                 {kernel} and rebuild the module (`sudo dkms autoinstall`, or reinstall the \
                 pinned driver with --dkms: `stackpin repair MANIFEST`); if the build fails with \
                 modpost or compile errors, {kernel} is newer than this driver supports: pin a \
                 newer driver release (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`) or boot {built_for}."
            );
            d.context = Some(format!(
                "kernel {kernel}, NVIDIA module built only for {built_for}"
            ));
        } else if mechanism == Mechanism::DriverBuild {
            d.fix = format!("{} The running kernel is {kernel}.", d.fix);
            d.context = Some(format!("kernel {kernel}"));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::{diagnose, diagnose_in};
    use crate::host::context::probe;
    use crate::host::system::FakeSystem;
    use crate::os::Os;

    const NVML: &str = "root@098b49afe624:/# nvidia-smi\nFailed to initialize NVML: Unknown Error";

    /// What the host probe sees inside a Docker container.
    fn container() -> crate::host::context::HostContext {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/.dockerenv", "");
        probe(&sys)
    }

    fn in_a_container(log: &str) -> crate::diagnose::Diagnosis {
        diagnose_in(log, Some(&container())).expect("a hit")
    }

    #[test]
    fn a_driver_video_library_missing_in_a_container_asks_for_the_video_capability() {
        // NVIDIA/DALI#2362: the runtime's default capabilities leave libnvcuvid out.
        let log = "Assert on \"lib_handle_\" failed: Failed to load libnvcuvid.so, needed by the VideoReader operator.";
        let d = in_a_container(log);
        assert_eq!(d.layer, FailureLayer::Driver);
        assert!(
            d.fix
                .contains("NVIDIA_DRIVER_CAPABILITIES=compute,utility,video"),
            "{}",
            d.fix
        );
        assert!(!d.fix.contains("restart the container"), "{}", d.fix);
        // Outside a container the driver's video packages are the fix.
        let host = diagnose(log).expect("a hit");
        assert!(host.fix.contains("libnvidia-decode-XXX"), "{}", host.fix);
    }

    #[test]
    fn an_nvml_failure_in_a_container_says_the_host_driver_is_fine() {
        let d = in_a_container(NVML);
        assert_eq!(d.layer, FailureLayer::Driver);
        assert!(d.fix.contains("restart the container"), "{}", d.fix);
        assert!(
            d.fix
                .contains("Never install a driver inside the container"),
            "{}",
            d.fix
        );
        assert!(!d.fix.contains("stackpin repair"), "{}", d.fix);
        assert_eq!(
            d.context.as_deref(),
            Some("a container (/.dockerenv exists)")
        );
    }

    #[test]
    fn a_driver_failure_under_wsl_never_says_install_a_linux_driver() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/dev/dxg", "").dir("/usr/lib/wsl/lib");
        for log in [
            NVML,
            "RuntimeError: Found no NVIDIA driver on your system.",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        ] {
            let d = diagnose_in(log, Some(&probe(&sys))).expect("a hit");
            assert!(
                d.fix
                    .contains("Never install a Linux NVIDIA driver inside WSL"),
                "{log}: {}",
                d.fix
            );
            assert!(d.fix.contains("Windows side"), "{}", d.fix);
        }
    }

    #[test]
    fn a_gpu_out_of_memory_under_wsl_names_its_pinned_memory_limit() {
        // microsoft/WSL#8447: "RuntimeError: CUDA error: out of memory" with half the card free,
        // cured by pin_memory=False.
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/dev/dxg", "").dir("/usr/lib/wsl/lib");
        let log = "RuntimeError: CUDA error: out of memory";
        let d = diagnose_in(log, Some(&probe(&sys))).expect("a hit");
        assert_eq!(d.layer, FailureLayer::Memory);
        assert!(d.fix.contains("pin_memory=False"), "{}", d.fix);
        assert!(
            d.context.as_deref().is_some_and(|c| c.starts_with("WSL")),
            "{:?}",
            d.context
        );
        // Off WSL the same line keeps the plain out-of-memory fix.
        let d = diagnose(log).expect("a hit");
        assert!(!d.fix.contains("pin_memory"), "{}", d.fix);
        assert_eq!(d.context, None);
        // The host's RAM under WSL is not the pinned-memory limit (meta-llama/codellama#118).
        let d = diagnose_in(
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 29066) of binary: /home/zlu/miniconda3/envs/torch/bin/python",
            Some(&probe(&sys)),
        )
        .expect("a hit");
        assert!(!d.fix.contains("pin_memory"), "{}", d.fix);
    }

    #[test]
    fn a_kernel_without_the_nvidia_module_gets_the_rebuild_fix() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/proc/sys/kernel/osrelease", "6.8.0-50-generic\n")
            .file("/lib/modules/6.5.0-41-generic/updates/dkms/nvidia.ko", "")
            .dir("/lib/modules/6.8.0-50-generic/kernel");
        let log = "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded";
        let d = diagnose_in(log, Some(&probe(&sys))).expect("a hit");
        assert!(
            d.fix
                .contains("running kernel 6.8.0-50-generic has no NVIDIA module"),
            "{}",
            d.fix
        );
        assert!(d.fix.contains("boot 6.5.0-41-generic"), "{}", d.fix);
        let modpost = "ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol '__rcu_read_lock'";
        let d = diagnose_in(modpost, Some(&probe(&sys))).expect("a hit");
        assert!(d.fix.contains("newer driver release"), "{}", d.fix);
    }

    #[test]
    fn without_context_or_off_the_driver_layer_the_fix_is_unchanged() {
        let ctx = container();
        assert_eq!(diagnose_in(NVML, None), diagnose(NVML));
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.";
        assert_eq!(diagnose_in(oom, Some(&ctx)), diagnose(oom));
        let bare = probe(&FakeSystem::new(Os::Linux));
        assert_eq!(diagnose_in(NVML, Some(&bare)), diagnose(NVML));
    }

    #[test]
    fn a_log_that_shows_the_container_runtime_gets_the_container_fix_without_a_host() {
        let log = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n\
                   nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file";
        let d = diagnose(log).expect("a hit");
        assert!(
            d.fix
                .contains("Never install a driver inside the container"),
            "{}",
            d.fix
        );
        assert_eq!(
            d.context.as_deref(),
            Some("a container (the log shows `nvidia-container-cli`)")
        );
        assert_eq!(from_log("epoch 1 loss 0.3"), None);
    }

    #[test]
    fn a_log_that_names_wsl_or_its_dxg_bridge_gets_the_wsl_fix_without_a_host() {
        for log in [
            // ollama/ollama#684 (the title).
            "WSL2 Ubuntu 22.04 GPU \"CUDA error 100\" ggml-cuda.cu:5522 ggml-cuda.cu:4883 no CUDA-capable device is detected",
            // microsoft/WSL#9099: dxg lines beside an nvidia-smi that finds no GPU.
            "[    3.894321] misc dxg: dxgk: dxgkio_query_adapter_info: Ioctl failed: -22\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            // microsoft/WSL#13734: the kernel release.
            "Kernel: Linux 6.6.87.2-microsoft-standard-WSL2 #1 SMP PREEMPT_DYNAMIC\nRuntimeError: Found no NVIDIA driver on your system.",
        ] {
            let d = diagnose(log).expect("a hit");
            assert_eq!(d.layer, FailureLayer::Driver, "{log}");
            assert!(
                d.fix
                    .contains("Never install a Linux NVIDIA driver inside WSL"),
                "{log}: {}",
                d.fix
            );
            assert!(
                d.context
                    .as_deref()
                    .is_some_and(|c| c.starts_with("WSL (the log shows")),
                "{:?}",
                d.context
            );
        }
    }

    #[test]
    fn a_dxgkrnl_module_built_by_dkms_on_a_linux_guest_is_not_wsl() {
        // staralt/dxgkrnl-dkms#7: a Hyper-V guest building the GPU-PV module for its own kernel.
        let log = "make -j12 KERNELRELEASE=6.12.12+bpo-amd64 -C /lib/modules/6.12.12+bpo-amd64/build M=/var/lib/dkms/dxgkrnl/be3283570/build...(bad exit status: 2)\n\
                   Error! Bad return status for module build on kernel: 6.12.12+bpo-amd64 (x86_64)";
        assert_eq!(from_log(log), None);
        let d = diagnose(log).expect("a hit");
        assert_eq!(d.layer, FailureLayer::Driver);
        assert!(!d.fix.contains("This is WSL"), "{}", d.fix);
    }

    #[test]
    fn a_version_mismatch_seen_through_the_container_runtime_keeps_the_host_fix() {
        let log = "stderr: nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown";
        let d = diagnose(log).expect("a hit");
        assert!(
            d.fix.starts_with("Reboot so the new kernel module loads"),
            "{}",
            d.fix
        );
        assert_eq!(d.context, None);
    }

    #[test]
    fn a_missing_device_node_in_a_container_gets_the_container_fix_and_on_a_host_the_module() {
        let log = "no NVIDIA GPU device is present: /dev/nvidia0 does not exist";
        let d = in_a_container(log);
        assert_eq!(d.layer, FailureLayer::Driver);
        assert!(
            d.fix
                .contains("Never install a driver inside the container"),
            "{}",
            d.fix
        );
        let d = diagnose(log).expect("a hit");
        assert!(d.fix.contains("modprobe nvidia"), "{}", d.fix);
    }

    #[test]
    fn a_driver_build_failure_in_a_container_sends_the_install_to_the_host() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/proc/1/cgroup", "12:devices:/docker/0123abcd\n");
        let log = "ERROR: Unable to find the kernel source tree for the currently running kernel.";
        let d = diagnose_in(log, Some(&probe(&sys))).expect("a hit");
        assert!(
            d.fix.contains("Install the pinned driver on the host"),
            "{}",
            d.fix
        );
    }
}
