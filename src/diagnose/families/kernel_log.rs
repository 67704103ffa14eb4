//! The driver's footprint in the operating system: its device nodes (`/dev/nvidia0`,
//! `/dev/nvidiactl`, `/dev/nvidia-uvm`) and its `NVRM` lines in the kernel log.
//!
//! - A missing or unopenable device node means the driver's kernel module is not loaded (or did
//!   not create its nodes), or, in a container, that the container was started without the GPU's
//!   devices: the mechanism is [`Mechanism::DriverAccess`], so the host context picks the fix.
//! - NVRM lines other than Xid (those are [`super::codes`]): an assertion inside the driver
//!   (`nvAssertFailed`, `Assertion failed`) is a driver bug or a card the driver cannot handle;
//!   `RmInitAdapter failed` and a failed probe are the driver failing to bring the card up (an
//!   unsupported GPU, firmware, or a dead card); "fallen off the bus" is the card leaving the
//!   PCIe bus (hardware, the driver second). Each carries a second layer: a kernel log alone
//!   rarely decides between the driver and the card. An "API mismatch" is the loaded module of
//!   another release than the user-space driver (the driver alone).
//! - Around the kernel: another driver (nouveau, nvidiafb) holding the card so NVIDIA's probe is
//!   never called; the X server's NVIDIA driver failing to bring the card up; Fedora's akmods
//!   failing to build the module; dnf or yum unable to resolve the NVIDIA packages; apt finding
//!   no NVIDIA package of the name asked for.

use super::rule::{Rule, first_on_line};
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{self, Driver, Hardware, Toolkit};
use crate::diagnose::matcher::Segment;

const NODE_FIX: &str = "The NVIDIA kernel module is not loaded or did not create its device \
nodes: check `lsmod | grep nvidia` and `dmesg | grep NVRM`, load it (`sudo modprobe nvidia`, \
`sudo nvidia-modprobe -u -c=0` creates /dev/nvidia-uvm and /dev/nvidia0), and if it will not \
load reinstall the pinned driver (`stackpin repair MANIFEST`) and reboot. In a container, the \
container was started without the GPU: run it with `--gpus all` (NVIDIA Container Toolkit).";

const ASSERT_FIX: &str = "The driver hit an internal assertion: note the driver version and \
the NVRM lines, update to the newest release of the pinned driver branch (or the release the \
driver's issue tracker names as fixed) and reboot; if the same card keeps failing under \
another driver, check it as hardware (`nvidia-smi -q`, dmesg Xid lines).";

const INIT_FIX: &str = "The driver could not bring the GPU up: check that the installed driver \
supports this card (newer GPUs need a newer branch; some need the open kernel module, older \
ones the proprietary one), that nouveau is blacklisted, and reinstall the pinned driver \
(`stackpin repair MANIFEST`); if RmInitAdapter keeps failing on a driver that supports the card, \
reseat it and check its power cables: the card may be failing.";

const BUS_FIX: &str = "The GPU left the PCIe bus: check power (PSU capacity, cables), \
cooling, the slot and any riser; disable PCIe ASPM (`pcie_aspm=off`) if it happens when idle; \
reboot. If it recurs on a good power supply, replace the card.";

const MAP_FIX: &str = "The card is not answering on the PCIe bus: check `lspci -vv` for it and \
its link, its power cables, the slot and any riser; do not retrain or reset the PCIe link by hand \
(tools that do make the card drop off the bus); enable Above 4G decoding in the firmware if the \
card shows no memory region; reboot. If it recurs on good power and a good slot, replace the \
card.";

const NO_ADAPTER_FIX: &str = "Check that the machine has an NVIDIA GPU the system can see: \
`lspci | grep -i nvidia`. If none is listed, do not load the NVIDIA driver (remove its packages \
or blacklist the nvidia module; another vendor's card needs its own driver), or reseat the card \
and enable its slot in the firmware; in a VM, pass the GPU through first. If lspci lists it, \
the driver release does not support it: pin one that does.";

const API_MISMATCH_FIX: &str = "Reboot, or stop the programs using the GPU and reload the \
modules (`sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`), so \
the module that runs is the installed release. If the mismatch stays after a reboot, the module \
on disk is still the old one (`modinfo nvidia | grep ^version` against the driver packages): \
rebuild it for the installed release (`sudo dkms autoinstall`, or the kmod package of the same \
version) or reinstall the pinned driver (`stackpin repair MANIFEST`).";

const GSP_FIX: &str = "Update to the newest driver of the branch (GSP RPC timeouts of the first \
525 drivers were fixed in 525.105.17), or turn the GSP firmware off on the proprietary module \
(`NVreg_EnableGpuFirmware=0` in /etc/modprobe.d, then reboot); if the timeouts follow one card \
across drivers, check it as hardware.";

/// The GSP firmware's timeout wordings.
const GSP_TIMEOUT: &[&str] = &[
    "rpc from gsp",
    "gsp rpc timeout",
    "gsp timeout",
    "timeout waiting for gsp",
    // The driver's GSP heartbeat check (kgsp): NVIDIA/open-gpu-kernel-modules#1200, #1080.
    "gsp rm heartbeat timed out",
    "_kgspisheartbeattimedout",
    "libos heartbeat timed out",
];

/// The driver failing to map the card's registers (its BARs).
const MAPPING_FAILED: &[&str] = &[
    "cannot attach gpu",
    "osinitnvmapping failed",
    "failed to map",
    "bar0 is 0m",
];

/// The module finding no NVIDIA card at all.
/// (`found!` and `probed!` both: ValveSoftware/SteamOS#209, mattshma/bigdata#133.)
const NO_ADAPTER: &[&str] = &["no nvidia graphics adapter", "no nvidia gpu found"];

/// Words for a device node that cannot be used.
const NODE_FAILED: &[&str] = &[
    "does not exist",
    "no such file",
    "could not open",
    "couldn't open",
    "cannot open",
    "failed to open",
    "not found",
    "permission denied",
    "operation not permitted",
];

const XORG_FIX: &str = "Read the kernel's reason first: `dmesg | grep -i nvrm` (and run \
`stackpin diagnose` on it). After a driver or kernel upgrade, reboot, and if it persists reinstall \
the pinned driver so the kernel module and the X driver are one release (`stackpin repair \
MANIFEST`), or roll back to the release that worked if the upgrade broke the card; check that \
the module is loaded (`lsmod | grep nvidia`). On a hybrid laptop (PRIME, \
Bumblebee/bbswitch) make sure the discrete GPU is powered on and the X configuration's BusID is \
the one `lspci` lists. If NVRM says the GPU fell off the bus, check it as hardware.";

const WSL_NO_ADAPTER_FIX: &str = "Run `nvidia-smi` inside WSL first. If it fails: check that the \
distribution runs under WSL 2 (`wsl -l -v`; `wsl --set-version DISTRO 2`), update WSL (`wsl \
--update`, then `wsl --shutdown`) and install the current Windows NVIDIA driver (it carries the \
WSL support; never a Linux driver inside WSL), and use Docker Desktop's WSL 2 backend. If the \
machine has no NVIDIA GPU, run the container without `--gpus` (or the project's CPU image).";

const CGROUP_FIX: &str = "Upgrade the NVIDIA container toolkit from NVIDIA's repository \
(nvidia-container-toolkit and libnvidia-container1 1.8 or newer support cgroup v2), run `sudo \
nvidia-ctk runtime configure --runtime=docker` and restart Docker. Where the toolkit cannot manage \
cgroups (rootless Docker, some Kubernetes set-ups), set `no-cgroups = true` in \
/etc/nvidia-container-runtime/config.toml and pass the /dev/nvidia* devices explicitly. The host \
driver needs no change.";

const PROBE_NOT_CALLED_FIX: &str = "Blacklist the driver that holds the card: `blacklist \
nouveau` and `options nouveau modeset=0` (and `blacklist nvidiafb`) in /etc/modprobe.d/, rebuild \
the initramfs (`sudo update-initramfs -u`, `sudo dracut --force`, `sudo mkinitcpio -P`), reboot, \
then `lsmod | grep nouveau` must print nothing and `nvidia-smi` must list the GPU.";

/// The X server's NVIDIA driver failing on the card (`(EE) NVIDIA(GPU-0): …`).
const XORG_INIT_FAILED: &[&str] = &[
    "failed to initialize the nvidia gpu at pci",
    "failed to initialize the nvidia graphics device",
];

const AKMODS_FIX: &str = "Read the failed.log akmods names (/var/cache/akmods/nvidia/…failed.log): \
install what it lacks (a build dependency such as gcc-c++, and `kernel-devel` for the running \
kernel: `sudo dnf install gcc-c++ kernel-devel-$(uname -r)`), then rebuild with `sudo akmods \
--force --kernels $(uname -r)` and reboot. If the module's sources do not build against this \
kernel, update akmod-nvidia from the same repository (a broken package there is fixed in an \
update) or boot the previous kernel until a release that supports it arrives.";

/// Fedora's akmods failing to build the NVIDIA kmod (`nvidia-kmod`, `nvidia-470xx-kmod`).
/// negativo17/nvidia-driver#188, roworu/nvidia-fedora-secureboot#2, ublue-os/hwe#116,
/// Frogging-Family/linux-tkg#375; a build dependency it lacks: negativo17/nvidia-driver#192,
/// terrapkg/packages#10361 (gcc-c++, fixed by installing it).
fn akmods_failed(segments: &[Segment<'_>]) -> Option<Finding> {
    let needed = segments.iter().find_map(|seg| {
        let lower = seg.lower.trim();
        let (what, by) = lower.split_once(" is needed by ")?;
        let by = by.split_whitespace().next()?;
        ((by.starts_with("nvidia") && by.contains("kmod")) || by.starts_with("kmod-nvidia")).then(
            || {
                (
                    seg,
                    what.rsplit([' ', '\t', ':'])
                        .next()
                        .unwrap_or(what)
                        .to_string(),
                )
            },
        )
    });
    if let Some((seg, package)) = needed {
        return Some(at(
            seg,
            "drv-akmods-build-failed",
            Driver,
            None,
            format!(
                "akmods cannot build the NVIDIA kernel module: its build needs {package}, which is not installed, so no module exists for the running kernel."
            ),
            format!(
                "Install it (`sudo dnf install {package}`, with `kernel-devel-$(uname -r)` if missing), then rebuild with `sudo akmods --force --kernels $(uname -r)` and reboot."
            ),
            Mechanism::DriverBuild,
            true,
        ));
    }
    let seg = segments.iter().find(|seg| {
        let lower = &seg.lower;
        (lower.contains("building and installing nvidia") && lower.contains("[failed]"))
            || (lower.contains("building rpms failed") && lower.contains("akmods/nvidia"))
            || lower.contains("package has no %description: kmod-nvidia")
    })?;
    Some(at(
        seg,
        "drv-akmods-build-failed",
        Driver,
        None,
        "akmods could not build the NVIDIA kernel module (kmod-nvidia) for the running kernel: a build dependency or the kernel's headers are missing, the akmod package is broken, or its sources do not build against this kernel.",
        AKMODS_FIX,
        Mechanism::DriverBuild,
        true,
    ))
}

/// The layer of an RPM package, by its name (an epoch `3:` and a `module(` stream prefix are
/// ignored): the NVIDIA package names of both package managers, RPM's own among them.
fn rpm_layer(name: &str) -> Option<FailureLayer> {
    let name = name
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start_matches(':')
        .trim_start_matches("module(");
    super::runtimes::nvidia_package_layer(name)
}

/// dnf's (and yum's) dependency problem naming an NVIDIA package: "Problem: package P requires
/// X, but none of the providers can be installed", "package P … conflicts with Q", "nothing
/// provides requested module(nvidia-driver:…)", "nothing provides X needed by P". The layer is
/// the package's.
/// gridhead/nvidia-auto-installer-for-fedora-linux#283 (akmods unavailable), terrapkg/packages#14008
/// and #14097 (a repository mid-update), NVIDIA/yum-packaging-precompiled-kmod#50 (two kmod
/// packages), amazonlinux/amazon-linux-2023#316 (a module stream the repository lacks).
fn rpm_problem(seg: &Segment<'_>) -> Option<Finding> {
    let lower = seg.lower.trim();
    let unresolved = [
        "but none of the providers can be installed",
        "but no providers can be installed",
        " conflicts with ",
        "nothing provides ",
    ];
    if !unresolved.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let named = if let Some(at) = lower.find("needed by ") {
        lower[at + "needed by ".len()..].split_whitespace().next()
    } else if let Some(at) = lower.find("requested module(") {
        lower[at + "requested ".len()..].split_whitespace().next()
    } else if let Some(at) = lower.find("package ") {
        lower[at + "package ".len()..].split_whitespace().next()
    } else {
        None
    }?;
    let layer = rpm_layer(named)?;
    let fix = "Keep the NVIDIA packages from one repository and one version: do not mix RPM Fusion, negativo17, NVIDIA's CUDA repository or a distribution's own NVIDIA packages; remove the other set (`sudo dnf remove '*nvidia*'`) and install from one, or let dnf replace the conflicting packages (`--allowerasing`). A repository caught mid-update (a package requiring a newer one not yet published) is fixed by `sudo dnf upgrade --refresh` a little later; a missing module stream or a package no enabled repository provides (akmods) needs that repository enabled. Then install the pinned version (`stackpin install MANIFEST`).";
    Some(super::runtimes::package_failure(
        seg,
        layer,
        (
            "drv-rpm-dependency-problem",
            "The package manager (dnf or yum) cannot resolve the NVIDIA driver packages: a package they need is not in the enabled repositories, or packages of two repositories or versions conflict.".to_string(),
        ),
        (
            "tk-rpm-dependency-problem",
            "The package manager (dnf or yum) cannot resolve the CUDA toolkit packages: a package they need is not in the enabled repositories, or packages of two CUDA versions or repositories conflict (the `cuda` meta-package also pulls a driver).".to_string(),
        ),
        fix,
    ))
}

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found: Vec<Finding> = segments.iter().filter_map(on_line).collect();
    found.extend(akmods_failed(segments));
    found.extend(segments.iter().find_map(rpm_problem));
    found.extend(segments.iter().find_map(apt_missing));
    found
}

/// Lines read whatever their prefix; the first rule that matches a line names it.
pub(super) const ANY_LINE: &[Rule] = &[
    // The container toolkit under WSL finding no GPU adapter (dxcore): WSL 1, a Windows driver
    // without WSL support, WSL not updated, or no NVIDIA GPU at all. Plain: the container fix
    // ("the host driver is fine") would be wrong here. OpenBMB/UltraRAG#12 (wsl --update and the
    // WSL driver), AbdBarho/stable-diffusion-webui-docker#117 (WSL 1),
    // IDEA-Research/Grounded-Segment-Anything#506 and xencon/aixcl#142 (no NVIDIA GPU).
    Rule {
        id: "drv-container-wsl-no-adapter",
        patterns: &["wsl environment detected but no adapters were found"],
        judge: None,
        layer: Driver,
        second: Some(Hardware),
        cause: "The NVIDIA container toolkit detected WSL but no GPU adapter through it: the distribution runs under WSL 1, the Windows NVIDIA driver or WSL itself lacks GPU support (too old), or the machine has no NVIDIA GPU.",
        fix: WSL_NO_ADAPTER_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    // libnvidia-container looking for the cgroup v1 devices controller on a cgroup v2 host: a
    // container toolkit older than 1.8, or one told to manage cgroups where it cannot.
    // NVIDIA/nvidia-docker#1447, #1486, #1660 (#1643's answer: upgrade), saharmor/dalle-playground#105.
    Rule {
        id: "drv-container-cgroup-devices",
        patterns: &["cgroup subsystem devices not found"],
        judge: None,
        layer: Driver,
        second: None,
        cause: "The NVIDIA container toolkit looked for the cgroup v1 devices controller and the host has none: it runs cgroup v2 (Ubuntu 21.10+, Debian 11+, Fedora 31+, Arch) and the installed libnvidia-container is older than 1.8 or configured to manage cgroups itself.",
        fix: CGROUP_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    // The X server's own line, no NVRM prefix: it names no cause, the kernel log does.
    // Bumblebee-Project/Bumblebee#922 (a driver upgrade), #615, #463; ewagner12/all-ways-egpu#58.
    Rule {
        id: "drv-xorg-gpu-init-failed",
        patterns: XORG_INIT_FAILED,
        judge: None,
        layer: Driver,
        second: Some(Hardware),
        cause: "The X server's NVIDIA driver could not bring the GPU up; the kernel log says why: most often the kernel module and the X driver are not one release (after a driver or kernel upgrade), the module is not loaded, or on a hybrid laptop the discrete GPU is powered off or not the one the X configuration names; otherwise the card left the bus.",
        fix: XORG_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    Rule {
        id: "drv-device-node-missing",
        patterns: &[],
        judge: Some(device_node_failed),
        layer: Driver,
        second: None,
        cause: "A GPU device node (/dev/nvidia*) is missing or cannot be opened: the NVIDIA kernel module is not loaded, or a container was started without the GPU's devices.",
        fix: NODE_FIX,
        mechanism: Mechanism::DriverAccess,
        decisive: false,
    },
    // The GSP firmware's own words, with or without the NVRM prefix and the Xid 119 number.
    Rule {
        id: "drv-gsp-timeout",
        patterns: &[],
        judge: Some(gsp_timed_out),
        layer: Driver,
        second: Some(Hardware),
        cause: "The GPU's GSP firmware (shipped with the driver) stopped answering the driver's calls: most often a driver bug (the first 525 drivers), otherwise a card in a bad state.",
        fix: GSP_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
];

/// The driver's own NVRM lines other than Xid (those are [`super::codes`]'); the first rule that
/// matches a line names it.
pub(super) const NVRM_LINE: &[Rule] = &[
    // stackhpc/ansible-slurm-appliance#287, Frogging-Family/nvidia-all#394,
    // NVIDIA/nvidia-docker#182 (round 20); variants: negativo17/nvidia-driver#43,
    // ublue-os/bazzite#2668, saharmor/dalle-playground#104.
    Rule {
        id: "drv-nvrm-api-mismatch",
        patterns: &["api mismatch"],
        judge: None,
        layer: Driver,
        second: None,
        cause: "The loaded NVIDIA kernel module is another release than the driver's user-space libraries (the NVRM API mismatch names both versions): the driver was upgraded or downgraded without its new module being loaded, or the module on disk was not rebuilt for it.",
        fix: API_MISMATCH_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    Rule {
        id: "hw-nvrm-off-the-bus",
        patterns: &["fallen off the bus"],
        judge: None,
        layer: Hardware,
        second: Some(Driver),
        cause: "The driver reports that the GPU has fallen off the PCIe bus (power, heat, the slot or riser, or the card).",
        fix: BUS_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    // The driver cannot map the card's registers (its PCIe BARs): the card is not answering on
    // the bus (it dropped off after a link retrain, power or a riser) or the firmware gave it no
    // address space. RmInitAdapter fails after it, so this line names the cause.
    Rule {
        id: "hw-nvrm-cannot-map",
        patterns: MAPPING_FAILED,
        judge: None,
        layer: Hardware,
        second: Some(Driver),
        cause: "The driver cannot reach the GPU's registers over PCIe (cannot attach / map it): the card is not answering on the bus (power, a riser, a PCIe link retrain or reset), or the firmware gave it no address space.",
        fix: MAP_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    // The module loaded, but another driver had already claimed the card, so NVIDIA's probe never
    // ran: MrMEEE/ironhide#41, mattshma/bigdata#133 (its "No NVIDIA graphics adapter probed!"
    // follows on a later line).
    Rule {
        id: "drv-nvrm-probe-not-called",
        patterns: &["probe routine was not called"],
        judge: None,
        layer: Driver,
        second: None,
        cause: "The NVIDIA kernel module loaded but never probed the GPU: another driver (nouveau, nvidiafb, rivafb) had already claimed it.",
        fix: PROBE_NOT_CALLED_FIX,
        mechanism: Mechanism::Plain,
        // Decisive: the "No NVIDIA graphics adapter probed!" and nvidia-smi's failure that
        // follow are its consequences, whichever line comes first.
        decisive: true,
    },
    Rule {
        id: "drv-nvrm-no-adapter",
        patterns: NO_ADAPTER,
        judge: None,
        layer: Driver,
        second: Some(Hardware),
        cause: "The NVIDIA kernel module loaded but found no NVIDIA GPU on the PCIe bus: the machine has none (another vendor's card), or the card is not seated, disabled in the firmware, or given to a VM.",
        fix: NO_ADAPTER_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    Rule {
        id: "drv-nvrm-assertion",
        patterns: &["assert"],
        judge: None,
        layer: Driver,
        second: Some(Hardware),
        cause: "The NVIDIA driver hit an internal assertion (NVRM): a driver bug, or a card state the driver cannot handle.",
        fix: ASSERT_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    Rule {
        id: "drv-nvrm-init-failed",
        patterns: &[
            "rminitadapter failed",
            "probe routine failed",
            "no nvidia devices probed",
            "rm_init_adapter failed",
        ],
        judge: None,
        layer: Driver,
        second: Some(Hardware),
        cause: "The NVIDIA driver could not initialise the GPU (NVRM): a driver that does not support the card, a firmware or module problem, or a failing card.",
        fix: INIT_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
];

fn device_node_failed(lower: &str) -> bool {
    lower.contains("/dev/nvidia") && NODE_FAILED.iter().any(|w| lower.contains(w))
}

fn gsp_timed_out(lower: &str) -> bool {
    !lower.contains("xid") && GSP_TIMEOUT.iter().any(|w| lower.contains(w))
}

/// One line's finding: the rules for any line first, then, on an NVRM line that is no Xid, the
/// driver's own.
fn on_line(seg: &Segment<'_>) -> Option<Finding> {
    let nvrm = seg.lower.contains("nvrm") && !seg.lower.contains("xid");
    first_on_line(ANY_LINE, seg).or_else(|| nvrm.then(|| first_on_line(NVRM_LINE, seg)).flatten())
}

/// The package apt cannot find: "E: Unable to locate package P", "E: Package 'P' has no
/// installation candidate", "Package P is not available, but is referred to by another package".
fn apt_missing_package(lower: &str) -> Option<&str> {
    let name = if let Some(at) = lower.find("unable to locate package ") {
        lower[at + "unable to locate package ".len()..]
            .split_whitespace()
            .next()
    } else if let Some(at) = lower.find("e: package '") {
        let rest = &lower[at + "e: package '".len()..];
        rest.contains("has no installation candidate")
            .then(|| rest.split('\'').next())
            .flatten()
    } else if let Some(at) = lower.find("package ") {
        let rest = &lower[at + "package ".len()..];
        rest.contains(" is not available, but is referred to by another package")
            .then(|| rest.split_whitespace().next())
            .flatten()
    } else {
        None
    }?;
    Some(name.trim_matches(|c: char| c == '\'' || c == '"' || c == '`'))
}

/// apt finding no NVIDIA package of the name asked for: the repository that carries it is not
/// enabled or not refreshed, or that name or version does not exist for this release. The layer
/// is the package's (the container toolkit's packages are the driver's side, as its other
/// failures are). oddmario/NVIDIA-Ubuntu-Driver-Guide#5 (a branch the PPA does not carry),
/// Golovin-Andrey/xiaomi-mi-13-ubuntu#11, NVIDIA/nvidia-docker#716 (its repository not added);
/// the toolkit's: tensorflow/tensorflow#7398, dennishilk/nvidia-driver#1 (`cuda` is only in
/// NVIDIA's repository), Lancelot39/Causal-Copilot#49.
fn apt_missing(seg: &Segment<'_>) -> Option<Finding> {
    let package = apt_missing_package(&seg.lower)?;
    let layer = super::runtimes::nvidia_package_layer(package)?;
    Some(if layer == Driver {
        at(
            seg,
            "drv-apt-package-not-found",
            Driver,
            None,
            format!(
                "apt cannot find the NVIDIA package {package}: the repository that carries it is not enabled or not refreshed, or no package of that name or driver branch exists for this release."
            ),
            "Run `sudo apt update`, then list what exists: `apt search nvidia-driver` or `ubuntu-drivers devices`, and install one of those names (a branch the repository does not carry cannot be installed from it). Enable the component that carries the driver (Ubuntu: restricted, or the graphics-drivers PPA for newer branches; Debian: contrib, non-free and non-free-firmware). For the container toolkit (nvidia-container-toolkit, nvidia-docker2) add NVIDIA's container toolkit repository and its key first.",
            Mechanism::Plain,
            false,
        )
    } else {
        at(
            seg,
            "tk-apt-package-not-found",
            Toolkit,
            None,
            format!(
                "apt cannot find the CUDA package {package}: the `cuda*` packages come from NVIDIA's CUDA repository, which is not added (or not refreshed) on this machine, or that name does not exist."
            ),
            "Add NVIDIA's CUDA repository for this distribution release (install its cuda-keyring package, or the local repository .deb and the key it prints), run `sudo apt update`, and install the versioned name it lists (`apt search cuda-toolkit`); or install the distribution's own toolkit (`nvidia-cuda-toolkit`) if its version is the one the library needs.",
            Mechanism::Plain,
            false,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::FailureLayer;
    use crate::diagnose::matcher;

    // The variants of each rule are data: tests/fixtures/diagnose/variants/kernel_log.yaml.

    #[test]
    fn the_mapping_line_after_rminitadapter_names_the_card_off_the_bus_on_each_line() {
        let dropped = "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:894)\n\
                       NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n\
                       NVRM: osInitNvMapping: *** Cannot attach gpu\n\
                       NVRM: RmInitAdapter: osInitNvMapping failed, bailing out of RmInitAdapter";
        let segments: Vec<_> = matcher::segments(dropped).collect();
        let hw: Vec<_> = find(&segments)
            .into_iter()
            .filter(|f| f.id == "hw-nvrm-cannot-map")
            .collect();
        assert_eq!(hw.len(), 2, "{hw:?}");
        assert_eq!(
            (hw[0].layer, hw[0].second),
            (FailureLayer::Hardware, Some(Driver))
        );
    }
}
