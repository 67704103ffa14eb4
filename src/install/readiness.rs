//! Whether a Linux host is ready for the layers that will run, decided before anything runs:
//! every condition under which NVIDIA's driver runfile refuses (nouveau, a running X server, no
//! kernel headers or compiler, a package-managed driver), installs a module that never loads
//! (Secure Boot, a compiler other than the kernel's), or under which the CUDA runfile runs out
//! of room; and WSL or a container, where the driver is the host's and is never installed.
//!
//! [`judge`] is the decision: a pure function over the facts `host::readiness` read and what the
//! stack needs, tested as a table. [`findings`] gathers both for a manifest. `plan` shows every
//! finding, `install` and `up` refuse on those that block (with the preflight, all at once) and
//! skip a layer a finding skips. Reads nothing itself, runs nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::compat::{self, DriverRequirement};
use crate::host::readiness::LinuxFacts;
use crate::layers::{HostView, prove_layer};
use crate::manifest::{Layer, Manifest};
use crate::os::Os;
use crate::version::Version;

/// About how much the CUDA runfile unpacks into its temporary folder before it installs (a 12.x
/// runfile is 4–5 GB compressed; NVIDIA's own message when it runs out is "Not enough space on
/// parition mounted at /tmp", and its fix is `--tmpdir`).
pub const EXTRACT_NEED: u64 = 10 << 30;

/// About how much a CUDA 12.x toolkit takes in its root, with headroom.
pub const TOOLKIT_NEED: u64 = 8 << 30;

/// What a finding does to the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// `install` refuses before the first layer; `plan` shows the layer blocked.
    Blocks,
    /// The layer is not installed on this host at all (WSL, a container) and the chain goes on.
    Skips,
    /// Worth knowing; the chain runs.
    Warns,
}

/// One readiness finding: its layer, what it does to the chain, what was seen and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub layer: Layer,
    pub effect: Effect,
    pub what: String,
    pub fix: String,
}

impl Finding {
    fn new(layer: Layer, effect: Effect, what: String, fix: impl Into<String>) -> Self {
        Self {
            layer,
            effect,
            what,
            fix: fix.into(),
        }
    }

    pub fn blocks(&self) -> bool {
        self.effect == Effect::Blocks
    }

    /// `what; fix: fix`, as a refusal lists it.
    pub fn line(&self) -> String {
        format!("{}; fix: {}", self.what, self.fix)
    }
}

/// What the stack asks of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needs {
    /// The driver layer will run.
    pub driver: bool,
    /// The toolkit layer will run.
    pub toolkit: bool,
    /// `driver.run` passes `--dkms`.
    pub dkms: bool,
    /// `driver.run` names a module signing key pair.
    pub signing_key: bool,
    /// Where the CUDA runfile extracts (`--tmpdir=`, else `/tmp`).
    pub extract_dir: PathBuf,
    pub toolkit_root: PathBuf,
    /// The driver running now (under WSL or in a container: the host's).
    pub host_driver: Option<Version>,
    /// The pinned toolkit's minimum driver.
    pub min_driver: Option<Version>,
}

/// The readiness findings for a manifest whose `to_run` layers will run: empty when the stack
/// is not a Linux one, the host is not Linux, or neither the driver nor the toolkit runs.
pub fn findings(m: &Manifest, host: &dyn HostView, to_run: &[Layer]) -> Vec<Finding> {
    let (driver, toolkit) = (
        to_run.contains(&Layer::Driver),
        to_run.contains(&Layer::Toolkit),
    );
    if m.os != Os::Linux || !(driver || toolkit) {
        return Vec::new();
    }
    let extract_dir = tmpdir_arg(&m.toolkit.run).unwrap_or_else(|| PathBuf::from("/tmp"));
    let toolkit_root = PathBuf::from(&m.toolkit.root);
    let space_for = if toolkit {
        vec![extract_dir.clone(), toolkit_root.clone()]
    } else {
        Vec::new()
    };
    let Some(facts) = host.linux_facts(&space_for) else {
        return Vec::new();
    };
    let has = |flag: &str| m.driver.run.iter().any(|a| a.starts_with(flag));
    let needs = Needs {
        driver,
        toolkit,
        dkms: has("--dkms"),
        signing_key: has("--module-signing-secret-key") && has("--module-signing-public-key"),
        extract_dir,
        toolkit_root,
        host_driver: if driver { host.driver().version } else { None },
        min_driver: match compat::min_driver_for(&m.toolkit.version, Os::Linux) {
            DriverRequirement::Release { min, .. } => Some(min),
            DriverRequirement::Branch { floor, .. } => Some(floor),
            DriverRequirement::Unknown => None,
        },
    };
    let mut found = judge(&facts, &needs);
    // What the archived prerequisites install before the driver no longer blocks it.
    for f in found
        .iter_mut()
        .filter(|f| f.layer == Layer::Driver && f.blocks())
    {
        if let Some(fix) = super::prerequisites::covers(m, &facts, &f.what) {
            f.effect = Effect::Warns;
            f.fix = fix;
        }
    }
    found
}

/// The finding that skips `layer` on this host, if one does (only the driver is ever skipped).
pub fn skipped(m: &Manifest, layer: Layer, host: &dyn HostView) -> Option<Finding> {
    if layer != Layer::Driver {
        return None;
    }
    findings(m, host, &[layer])
        .into_iter()
        .find(|f| f.layer == layer && f.effect == Effect::Skips)
}

/// The layers a chain runs: those whose proof does not hold, and those forced.
pub fn layers_to_run(m: &Manifest, host: &dyn HostView, force: &[Layer]) -> Vec<Layer> {
    Layer::ORDER
        .into_iter()
        .filter(|layer| force.contains(layer) || !prove_layer(m, *layer, host).holds)
        .collect()
}

/// `--tmpdir=DIR` (or `--tmpdir DIR`) in a runfile's argv.
fn tmpdir_arg(run: &[String]) -> Option<PathBuf> {
    run.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--tmpdir=")
            .map(PathBuf::from)
            .or_else(|| (a == "--tmpdir").then(|| run.get(i + 1).map(PathBuf::from))?)
    })
}

/// The decision: every finding the facts give for what the stack needs.
pub fn judge(facts: &LinuxFacts, needs: &Needs) -> Vec<Finding> {
    let mut out = Vec::new();
    if needs.driver {
        let guest = guest_driver(facts, needs);
        let skipped = guest.as_ref().is_some_and(|f| f.effect == Effect::Skips);
        out.extend(guest);
        // A driver that is the host's is not built here: nothing below applies to it.
        if !skipped {
            driver_findings(facts, needs, &mut out);
        }
    }
    if needs.toolkit {
        space_findings(facts, needs, &mut out);
    }
    out
}

/// Under WSL or in a container the driver is the host's: skipped when the host's driver runs the
/// pinned toolkit, else refused with where to install it.
fn guest_driver(facts: &LinuxFacts, needs: &Needs) -> Option<Finding> {
    let (place, why, host_fix) = match (&facts.wsl, &facts.container) {
        (Some(why), _) => (
            "WSL",
            why,
            "install or update the NVIDIA driver on Windows (WSL uses the Windows driver through /usr/lib/wsl/lib; a Linux driver installed inside WSL breaks it), then run install again",
        ),
        (None, Some(why)) => (
            "a container",
            why,
            "install or update the NVIDIA driver on the container's host, start the container with the GPU passed in (`docker run --gpus all`, the NVIDIA Container Toolkit), then run install again",
        ),
        (None, None) => return None,
    };
    let never = format!(
        "inside {place} ({why}) the driver layer is never installed: the kernel module is the host's"
    );
    Some(match (&needs.host_driver, &needs.min_driver) {
        (Some(v), Some(min)) if v < min => Finding::new(
            Layer::Driver,
            Effect::Blocks,
            format!(
                "{never}, and the host's driver {v} is older than {min}, the pinned toolkit's minimum"
            ),
            host_fix,
        ),
        (Some(v), _) => Finding::new(
            Layer::Driver,
            Effect::Skips,
            format!(
                "{never}; the host's driver {v} runs the pinned toolkit, so the chain goes on with the toolkit"
            ),
            "nothing to do here; to move to the pinned driver, update it on the host",
        ),
        (None, _) => Finding::new(
            Layer::Driver,
            Effect::Blocks,
            format!(
                "{never}, and no driver of the host's is reachable from here (nvidia-smi does not answer)"
            ),
            host_fix,
        ),
    })
}

fn driver_findings(facts: &LinuxFacts, needs: &Needs, out: &mut Vec<Finding>) {
    let blocks = |what: String, fix: String| Finding::new(Layer::Driver, Effect::Blocks, what, fix);
    let warns = |what: String, fix: String| Finding::new(Layer::Driver, Effect::Warns, what, fix);
    let blacklist_steps = "write /etc/modprobe.d/blacklist-nouveau.conf with the lines `blacklist nouveau` and `options nouveau modeset=0`, rebuild the initramfs (`update-initramfs -u` on Debian/Ubuntu, `dracut -f` on Fedora/RHEL), reboot, then run install again";
    match (&facts.nouveau_loaded, &facts.nouveau_blacklisted) {
        (Some(seen), blacklist) => out.push(blocks(
            format!(
                "nouveau is loaded ({seen}): the driver's runfile stops with \"ERROR: The Nouveau kernel driver is currently in use by your system.\""
            ),
            match blacklist {
                Some(file) => format!(
                    "it is already blacklisted in {} but still loaded: rebuild the initramfs (`update-initramfs -u` or `dracut -f`), reboot, then run install again",
                    file.display()
                ),
                None => blacklist_steps.to_string(),
            },
        )),
        (None, None) => out.push(warns(
            "nouveau is not loaded now but not blacklisted either: it can claim the GPU at a later boot".to_string(),
            blacklist_steps.replace(", then run install again", ""),
        )),
        (None, Some(_)) => {}
    }
    if let Some(seen) = &facts.display {
        out.push(blocks(
            format!(
                "a display server is running ({seen}): the runfile stops with \"ERROR: You appear to be running an X server; please exit X before installing.\""
            ),
            "stop it from a text console (Ctrl+Alt+F3): `sudo systemctl isolate multi-user.target` (or `sudo systemctl stop display-manager`; this ends the desktop session), then run install again".to_string(),
        ));
    } else if facts.nvidia_drm_loaded {
        out.push(warns(
            "nvidia_drm is loaded (an NVIDIA driver runs now): the runfile stops with \"ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded in your kernel\" while something uses it".to_string(),
            "stop what uses the GPU (nvidia-persistenced, CUDA programs, a compositor) before installing".to_string(),
        ));
    }
    if let (Some(build), false) = (&facts.kernel_build, facts.kernel_build_present) {
        let kernel = facts.kernel.as_deref().unwrap_or("the running kernel");
        out.push(blocks(
            format!(
                "no kernel headers for the running kernel {kernel} ({} is missing): the runfile stops with \"ERROR: Unable to find the kernel source tree for the currently running kernel.\"",
                build.display()
            ),
            format!(
                "install the headers of exactly this kernel: `apt-get install linux-headers-{kernel}` (Debian/Ubuntu) or `dnf install kernel-devel-{kernel}` (Fedora/RHEL); an offline lab installs them from packages archived for this kernel"
            ),
        ));
    }
    let missing: Vec<&str> = facts
        .missing_tools
        .iter()
        .map(String::as_str)
        .filter(|t| *t != "dkms" || needs.dkms)
        .collect();
    if !missing.is_empty() {
        let words = missing.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>();
        out.push(blocks(
            format!(
                "{} not found{}: the driver's kernel module cannot be built",
                words.join(", "),
                if missing.contains(&"dkms") { " (driver.run passes --dkms)" } else { "" }
            ),
            format!(
                "install them: `apt-get install {list}` (Debian/Ubuntu) or `dnf install {list}` (Fedora/RHEL)",
                list = missing.join(" ")
            ),
        ));
    }
    if let (Some(kernel), Some(gcc)) = (&facts.kernel_compiler, &facts.gcc)
        && kernel != gcc
    {
        let major = |v: &str| v.split('.').next().unwrap_or_default().to_string();
        let effect = if major(kernel) == major(gcc) {
            Effect::Warns
        } else {
            Effect::Blocks
        };
        out.push(Finding::new(
            Layer::Driver,
            effect,
            format!(
                "the kernel was built with gcc {kernel} but `gcc` here is {gcc}: the runfile's \"CC version check failed\", and a module built by another compiler may not load"
            ),
            format!(
                "install the kernel's compiler (`apt-get install gcc-{k}` / `dnf install gcc`) and make it the `gcc` the runfile finds (`update-alternatives`), or update the kernel to one built with gcc {gcc}",
                k = major(kernel)
            ),
        ));
    }
    if let Some(sb) = facts.secure_boot.as_ref().filter(|s| s.enabled) {
        out.push(if needs.signing_key {
            warns(
                format!("Secure Boot is on ({}): the module is signed with the key driver.run names", sb.read_from),
                "enroll its public key before the reboot: `mokutil --import PUBLIC_KEY` (it asks for a one-time password), then at the next boot choose \"Enroll MOK\" in the blue MOK manager and type that password; without it the module does not load".to_string(),
            )
        } else {
            blocks(
                format!(
                    "Secure Boot is on ({}): an unsigned module builds and installs, then \"The kernel module failed to load. Secure boot is enabled on this system\" — the driver is dead after the reboot",
                    sb.read_from
                ),
                "choose one: sign the module — add `--module-signing-secret-key=KEY` and `--module-signing-public-key=PUBLIC_KEY` to driver.run and enroll the public key with `mokutil --import PUBLIC_KEY` (confirmed at the next boot in the MOK manager); or turn Secure Boot off in the firmware settings".to_string(),
            )
        });
    }
    if !facts.packaged_drivers.is_empty() {
        out.push(blocks(
            format!(
                "the package manager installed a driver ({}): the runfile conflicts with it, and the CUDA runfile says \"Existing package manager installation of the driver found\"",
                facts.packaged_drivers.join(", ")
            ),
            "remove it first (`apt-get purge 'nvidia-driver-*' cuda-drivers` or `dnf remove akmod-nvidia cuda-drivers`), reboot, then run install again; or pin the manifest to that driver and leave the driver to the package manager".to_string(),
        ));
    }
}

fn space_findings(facts: &LinuxFacts, needs: &Needs, out: &mut Vec<Finding>) {
    let extract = facts.space_at(&needs.extract_dir);
    let root = facts.space_at(&needs.toolkit_root);
    let short = |have: u64, need: u64| have < need;
    if let (Some(e), Some(r)) = (extract, root)
        && e.mount == r.mount
        && short(e.free_bytes, EXTRACT_NEED + TOOLKIT_NEED)
        && !short(e.free_bytes, EXTRACT_NEED)
    {
        out.push(Finding::new(
            Layer::Toolkit,
            Effect::Blocks,
            format!(
                "{} and {} share {} with {} free: the CUDA runfile needs about {} to extract and {} to install",
                needs.extract_dir.display(),
                needs.toolkit_root.display(),
                e.mount,
                gib(e.free_bytes),
                gib(EXTRACT_NEED),
                gib(TOOLKIT_NEED)
            ),
            extract_fix(&needs.extract_dir),
        ));
        return;
    }
    if let Some(e) = extract.filter(|e| short(e.free_bytes, EXTRACT_NEED)) {
        out.push(Finding::new(
            Layer::Toolkit,
            Effect::Blocks,
            format!(
                "only {} free in {} (on {}): the CUDA runfile extracts about {} there and stops with \"Not enough space on parition mounted at {}\"",
                gib(e.free_bytes),
                needs.extract_dir.display(),
                e.mount,
                gib(EXTRACT_NEED),
                e.mount
            ),
            extract_fix(&needs.extract_dir),
        ));
    }
    if let Some(r) = root.filter(|r| short(r.free_bytes, TOOLKIT_NEED)) {
        out.push(Finding::new(
            Layer::Toolkit,
            Effect::Blocks,
            format!(
                "only {} free for the toolkit root {} (on {}); the toolkit needs about {}",
                gib(r.free_bytes),
                needs.toolkit_root.display(),
                r.mount,
                gib(TOOLKIT_NEED)
            ),
            format!(
                "free space on {}, or set toolkit.root to a folder on a disk with room",
                r.mount
            ),
        ));
    }
}

/// Bytes as people read disk sizes here: `9.5 GiB`.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

fn extract_fix(dir: &Path) -> String {
    format!(
        "free space in {}, or give the runfile a folder with room: add `--tmpdir=/var/tmp/cuda-extract` (a folder on a disk with {} free; create it first) to toolkit.run",
        dir.display(),
        gib(EXTRACT_NEED)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::readiness::{FreeSpace, SecureBoot};

    /// A workstation that is ready for both runfiles.
    fn ready() -> LinuxFacts {
        LinuxFacts {
            kernel: Some("6.8.0-50-generic".into()),
            nouveau_blacklisted: Some("/etc/modprobe.d/blacklist-nouveau.conf".into()),
            kernel_build: Some("/lib/modules/6.8.0-50-generic/build".into()),
            kernel_build_present: true,
            kernel_compiler: Some("13.2.0".into()),
            gcc: Some("13.2.0".into()),
            space: vec![
                space("/tmp", "/", 100 << 30),
                space("/usr/local/cuda-12.4", "/", 100 << 30),
            ],
            ..LinuxFacts::default()
        }
    }

    fn space(path: &str, mount: &str, free: u64) -> FreeSpace {
        FreeSpace {
            path: path.into(),
            mount: mount.into(),
            free_bytes: free,
        }
    }

    fn needs() -> Needs {
        Needs {
            driver: true,
            toolkit: true,
            dkms: true,
            signing_key: false,
            extract_dir: "/tmp".into(),
            toolkit_root: "/usr/local/cuda-12.4".into(),
            host_driver: None,
            min_driver: Some(Version::parse("550.54.14").expect("version")),
        }
    }

    /// Each finding as `(layer, effect, a word of what)`.
    fn judged(facts: &LinuxFacts, needs: &Needs) -> Vec<(Layer, Effect, String)> {
        judge(facts, needs)
            .into_iter()
            .map(|f| (f.layer, f.effect, f.what))
            .collect()
    }

    #[test]
    fn each_precondition_gives_its_finding_with_its_effect() {
        type Change = fn(&mut LinuxFacts, &mut Needs);
        let cases: Vec<(&str, Change, Layer, Effect, &str)> = vec![
            (
                "nouveau loaded",
                |f, _| f.nouveau_loaded = Some("/proc/modules lists nouveau".into()),
                Layer::Driver,
                Effect::Blocks,
                "Nouveau kernel driver is currently in use",
            ),
            (
                "nouveau not blacklisted",
                |f, _| f.nouveau_blacklisted = None,
                Layer::Driver,
                Effect::Warns,
                "not blacklisted",
            ),
            (
                "X running",
                |f, _| f.display = Some("/tmp/.X0-lock exists".into()),
                Layer::Driver,
                Effect::Blocks,
                "running an X server",
            ),
            (
                "old driver busy",
                |f, _| f.nvidia_drm_loaded = true,
                Layer::Driver,
                Effect::Warns,
                "nvidia-drm",
            ),
            (
                "no headers",
                |f, _| f.kernel_build_present = false,
                Layer::Driver,
                Effect::Blocks,
                "kernel source tree",
            ),
            (
                "no compiler",
                |f, _| f.missing_tools = vec!["gcc".into(), "make".into()],
                Layer::Driver,
                Effect::Blocks,
                "`gcc`, `make` not found",
            ),
            (
                "no dkms with --dkms",
                |f, _| f.missing_tools = vec!["dkms".into()],
                Layer::Driver,
                Effect::Blocks,
                "`dkms` not found (driver.run passes --dkms)",
            ),
            (
                "other gcc major",
                |f, _| f.gcc = Some("12.3.0".into()),
                Layer::Driver,
                Effect::Blocks,
                "CC version check failed",
            ),
            (
                "other gcc patch",
                |f, _| f.gcc = Some("13.3.0".into()),
                Layer::Driver,
                Effect::Warns,
                "CC version check failed",
            ),
            (
                "Secure Boot, no key",
                |f, _| {
                    f.secure_boot = Some(SecureBoot {
                        enabled: true,
                        read_from: "x".into(),
                    })
                },
                Layer::Driver,
                Effect::Blocks,
                "Secure boot is enabled",
            ),
            (
                "Secure Boot, key given",
                |f, n| {
                    f.secure_boot = Some(SecureBoot {
                        enabled: true,
                        read_from: "x".into(),
                    });
                    n.signing_key = true;
                },
                Layer::Driver,
                Effect::Warns,
                "signed with the key",
            ),
            (
                "packaged driver",
                |f, _| f.packaged_drivers = vec!["nvidia-driver-550 550.54.15".into()],
                Layer::Driver,
                Effect::Blocks,
                "package manager installed a driver",
            ),
            (
                "small /tmp",
                |f, _| f.space[0] = space("/tmp", "/tmp", 2 << 30),
                Layer::Toolkit,
                Effect::Blocks,
                "Not enough space on parition",
            ),
            (
                "small root",
                |f, _| f.space[1] = space("/usr/local/cuda-12.4", "/usr", 1 << 30),
                Layer::Toolkit,
                Effect::Blocks,
                "toolkit root",
            ),
            (
                "shared disk too small for both",
                |f, _| {
                    f.space[0].free_bytes = 12 << 30;
                    f.space[1].free_bytes = 12 << 30;
                },
                Layer::Toolkit,
                Effect::Blocks,
                "share /",
            ),
            (
                "container, no host driver",
                |f, _| f.container = Some("/.dockerenv exists".into()),
                Layer::Driver,
                Effect::Blocks,
                "inside a container",
            ),
            (
                "WSL, host driver too old",
                |f, n| {
                    f.wsl = Some("/dev/dxg exists".into());
                    n.host_driver = Some(Version::parse("531.0").expect("v"));
                },
                Layer::Driver,
                Effect::Blocks,
                "older than 550.54.14",
            ),
            (
                "WSL, host driver fine",
                |f, n| {
                    f.wsl = Some("/dev/dxg exists".into());
                    n.host_driver = Some(Version::parse("560.94").expect("v"));
                },
                Layer::Driver,
                Effect::Skips,
                "never installed",
            ),
        ];
        assert!(judge(&ready(), &needs()).is_empty(), "a ready host");
        for (name, change, layer, effect, words) in cases {
            let (mut facts, mut needs) = (ready(), needs());
            change(&mut facts, &mut needs);
            let found = judged(&facts, &needs);
            assert!(
                found
                    .iter()
                    .any(|(l, e, what)| *l == layer && *e == effect && what.contains(words)),
                "{name}: {found:?}"
            );
        }
    }

    #[test]
    fn a_skipped_driver_brings_none_of_the_build_findings() {
        let mut facts = LinuxFacts {
            wsl: Some("/dev/dxg exists".into()),
            ..LinuxFacts::default()
        };
        facts.missing_tools = vec!["gcc".into()];
        let needs = Needs {
            host_driver: Some(Version::parse("560.94").expect("v")),
            toolkit: false,
            ..needs()
        };
        let found = judged(&facts, &needs);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, Effect::Skips);
    }

    #[test]
    fn a_container_without_headers_or_dkms_names_each_missing_piece() {
        let facts = LinuxFacts {
            container: Some("/.dockerenv exists".into()),
            kernel: Some("6.8.0-1017-azure".into()),
            kernel_build: Some("/lib/modules/6.8.0-1017-azure/build".into()),
            missing_tools: vec!["dkms".into()],
            kernel_compiler: Some("13.2.0".into()),
            gcc: Some("12.2.0".into()),
            ..LinuxFacts::default()
        };
        let found = judged(
            &facts,
            &Needs {
                toolkit: false,
                ..needs()
            },
        );
        let blocking: Vec<&str> = found
            .iter()
            .filter(|(_, e, _)| *e == Effect::Blocks)
            .map(|(_, _, w)| w.as_str())
            .collect();
        assert_eq!(blocking.len(), 4, "{found:?}");
        assert!(blocking[0].contains("container"), "{blocking:?}");
    }

    #[test]
    fn nothing_is_said_for_layers_that_do_not_run_and_dkms_only_when_asked_for() {
        let mut facts = ready();
        facts.nouveau_loaded = Some("x".into());
        facts.space[0].free_bytes = 0;
        let none = Needs {
            driver: false,
            toolkit: false,
            ..needs()
        };
        assert!(judge(&facts, &none).is_empty());
        let mut no_dkms = ready();
        no_dkms.missing_tools = vec!["dkms".into()];
        assert!(
            judge(
                &no_dkms,
                &Needs {
                    dkms: false,
                    ..needs()
                }
            )
            .is_empty()
        );
    }

    #[test]
    fn the_runfiles_tmpdir_flag_moves_the_extraction() {
        let run = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(
            tmpdir_arg(&run(&["sh", "x.run", "--tmpdir=/data/tmp"])),
            Some(PathBuf::from("/data/tmp"))
        );
        assert_eq!(
            tmpdir_arg(&run(&["sh", "x.run", "--tmpdir", "/data/tmp"])),
            Some(PathBuf::from("/data/tmp"))
        );
        assert_eq!(tmpdir_arg(&run(&["sh", "x.run", "--silent"])), None);
    }
}
