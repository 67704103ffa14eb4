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
use crate::host::context::under;
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
    /// `install` prepares it itself, with the consent it asks for before anything runs (the
    /// finding's `prepare` says how); the chain runs.
    Prepares,
}

/// What `install` does about a finding it prepares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Prepare {
    /// Writes `blacklist` (unless `write` is false: nouveau is blacklisted already), runs the
    /// distribution's initramfs tool (`initramfs`), and, when nouveau is loaded now, stops the
    /// chain at a reboot before the driver.
    BlacklistNouveau {
        blacklist: PathBuf,
        write: bool,
        initramfs: Vec<String>,
        reboot: bool,
    },
    /// Stops the display manager right before the driver's runfile (`--stop-display`).
    StopDisplay { argv: Vec<String> },
    /// The runfiles extract in `dir` (`--tmpdir`), a folder with room.
    ExtractIn { dir: PathBuf },
    /// Imports the module signing certificate for enrolment at the next boot, before the
    /// driver's runfile (`--module-signing-key` / `--module-signing-cert`).
    EnrollKey { argv: Vec<String> },
}

/// What the user allowed `install` to do or use beyond the manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Choices {
    /// `--stop-display`: stop a running display manager before the driver.
    pub stop_display: bool,
    /// `--module-signing-key KEY --module-signing-cert CERT`.
    pub signing: Option<Signing>,
    /// `--tmpdir DIR`: where the runfiles extract.
    pub tmpdir: Option<PathBuf>,
    /// Where the runfiles extract when `/tmp` is short and no `--tmpdir` was given: a folder in
    /// the stack's archive folder (on the archive's disk, which holds the runfiles already).
    pub spare_tmpdir: Option<PathBuf>,
}

impl Choices {
    /// These choices with the spare extraction folder in the stack's archive folder.
    pub fn with_spare(&self, stack_root: &Path) -> Choices {
        Choices {
            spare_tmpdir: self
                .spare_tmpdir
                .clone()
                .or_else(|| Some(spare_tmpdir(stack_root))),
            ..self.clone()
        }
    }
}

/// Where the runfiles extract when `/tmp` is short: `.extract` in the stack's archive folder.
pub fn spare_tmpdir(stack_root: &Path) -> PathBuf {
    stack_root.join(".extract")
}

/// A module signing key pair for Secure Boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signing {
    pub key: PathBuf,
    /// The X.509 certificate (DER), which `mokutil --import` enrolls.
    pub cert: PathBuf,
}

/// One readiness finding: its layer, what it does to the chain, what was seen and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub layer: Layer,
    pub effect: Effect,
    pub what: String,
    pub fix: String,
    /// What `install` does about it, when it prepares it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepare: Option<Prepare>,
}

impl Finding {
    fn new(layer: Layer, effect: Effect, what: String, fix: impl Into<String>) -> Self {
        Self {
            layer,
            effect,
            what,
            fix: fix.into(),
            prepare: None,
        }
    }

    /// A finding `install` prepares with `how`.
    fn prepares(layer: Layer, what: String, fix: impl Into<String>, how: Prepare) -> Self {
        Self {
            prepare: Some(how),
            ..Self::new(layer, Effect::Prepares, what, fix)
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
    /// What the user allowed beyond the manifest.
    pub choices: Choices,
}

/// The readiness findings for a manifest whose `to_run` layers will run, given what the user
/// allowed (`choices`): empty when the stack is not a Linux one, the host is not Linux, or
/// neither the driver nor the toolkit runs.
pub fn findings(
    m: &Manifest,
    host: &dyn HostView,
    to_run: &[Layer],
    choices: &Choices,
) -> Vec<Finding> {
    let (driver, toolkit) = (
        to_run.contains(&Layer::Driver),
        to_run.contains(&Layer::Toolkit),
    );
    if m.os != Os::Linux || !(driver || toolkit) {
        return Vec::new();
    }
    let extract_dir = tmpdir_arg(&m.toolkit.run)
        .or_else(|| choices.tmpdir.clone())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let toolkit_root = PathBuf::from(&m.toolkit.root);
    let space_for = if toolkit {
        let mut at = vec![extract_dir.clone(), toolkit_root.clone()];
        at.extend(choices.spare_tmpdir.clone());
        at
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
        choices: choices.clone(),
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

/// The finding that skips `layer` among `findings`, if one does (only the driver is ever
/// skipped).
pub fn skipped(findings: &[Finding], layer: Layer) -> Option<&Finding> {
    findings
        .iter()
        .find(|f| f.layer == layer && f.effect == Effect::Skips)
}

/// The arguments `install` adds to `layer`'s runfile: `--tmpdir=DIR` for both runfiles (the
/// folder `--tmpdir` named, or the one with room a finding chose), and the module signing pair
/// for the driver's; none where the manifest's own `run` already says it.
pub fn extra_args(
    m: &Manifest,
    layer: Layer,
    findings: &[Finding],
    choices: &Choices,
) -> Vec<String> {
    let run = match (m.os, layer) {
        (Os::Linux, Layer::Driver) => &m.driver.run,
        (Os::Linux, Layer::Toolkit) => &m.toolkit.run,
        _ => return Vec::new(),
    };
    let mut extra = Vec::new();
    let chosen = findings.iter().find_map(|f| match &f.prepare {
        Some(Prepare::ExtractIn { dir }) => Some(dir.clone()),
        _ => None,
    });
    if let Some(dir) = choices.tmpdir.clone().or(chosen)
        && tmpdir_arg(run).is_none()
    {
        extra.push(format!("--tmpdir={}", dir.display()));
    }
    if let (Layer::Driver, Some(signing)) = (layer, &choices.signing)
        && !run.iter().any(|a| a.starts_with("--module-signing-"))
    {
        extra.push(format!(
            "--module-signing-secret-key={}",
            signing.key.display()
        ));
        extra.push(format!(
            "--module-signing-public-key={}",
            signing.cert.display()
        ));
    }
    extra
}

/// Why an installed driver does not answer, when the host's readiness explains it (for
/// `doctor`): nouveau holds the GPU, or Secure Boot refuses an unsigned (or unenrolled) module.
pub fn explain_dead_driver(facts: &LinuxFacts) -> Option<String> {
    if let Some(seen) = &facts.nouveau_loaded {
        return Some(format!(
            "nouveau is loaded ({seen}): it holds the GPU, so the NVIDIA module cannot load; blacklist it and rebuild the initramfs (`stackpin install MANIFEST --yes` does both and stops at a reboot), then reboot"
        ));
    }
    let sb = facts.secure_boot.as_ref().filter(|s| s.enabled)?;
    (!facts.nvidia_loaded).then(|| format!(
        "Secure Boot is on ({}) and the nvidia module is not loaded: the module was built but the kernel refuses to load it (unsigned, or signed with a key that was never enrolled); enroll the key (`mokutil --import CERT`, then \"Enroll MOK\" at the next boot) or reinstall with `stackpin repair`/`install --force driver --module-signing-key KEY --module-signing-cert CERT`, or turn Secure Boot off in the firmware settings",
        sb.read_from
    ))
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
    out.extend(nouveau_finding(facts));
    out.extend(display_finding(facts, needs));
    build_findings(facts, needs, out);
    out.extend(compiler_finding(facts));
    out.extend(secure_boot_finding(facts, needs));
    if !facts.packaged_drivers.is_empty() {
        out.push(Finding::new(
            Layer::Driver,
            Effect::Blocks,
            format!(
                "the package manager installed a driver ({}): the runfile conflicts with it, and the CUDA runfile says \"Existing package manager installation of the driver found\"",
                facts.packaged_drivers.join(", ")
            ),
            "remove it first (`apt-get purge 'nvidia-driver-*' cuda-drivers` or `dnf remove akmod-nvidia cuda-drivers`), reboot, then run install again; or pin the manifest to that driver and leave the driver to the package manager",
        ));
    }
}

/// The modprobe.d file stackpin writes to keep nouveau off the GPU.
pub const NOUVEAU_BLACKLIST: &str = "/etc/modprobe.d/blacklist-nouveau.conf";

/// nouveau loaded (the runfile refuses) or not blacklisted (it may claim the GPU at a later
/// boot): prepared by `install` where the distribution's initramfs tool is found, else blocked
/// (loaded) or warned about (not blacklisted) with the steps by hand.
fn nouveau_finding(facts: &LinuxFacts) -> Option<Finding> {
    let blacklist_steps = format!(
        "write {NOUVEAU_BLACKLIST} with the lines `blacklist nouveau` and `options nouveau modeset=0`, rebuild the initramfs (`update-initramfs -u` on Debian/Ubuntu, `dracut -f` on Fedora/RHEL), reboot, then run install again"
    );
    let (what, by_hand, loaded) = match (&facts.nouveau_loaded, &facts.nouveau_blacklisted) {
        (Some(seen), blacklist) => (
            format!(
                "nouveau is loaded ({seen}): the driver's runfile stops with \"ERROR: The Nouveau kernel driver is currently in use by your system.\""
            ),
            match blacklist {
                Some(file) => format!(
                    "it is already blacklisted in {} but still loaded: rebuild the initramfs (`update-initramfs -u` or `dracut -f`), reboot, then run install again",
                    file.display()
                ),
                None => blacklist_steps,
            },
            true,
        ),
        (None, None) => (
            "nouveau is not loaded now but not blacklisted either: it can claim the GPU at a later boot".to_string(),
            blacklist_steps.replace(", then run install again", ""),
            false,
        ),
        (None, Some(_)) => return None,
    };
    let Some(tool) = &facts.initramfs_tool else {
        let effect = if loaded {
            Effect::Blocks
        } else {
            Effect::Warns
        };
        return Some(Finding::new(
            Layer::Driver,
            effect,
            what,
            format!(
                "{by_hand} (neither update-initramfs nor dracut was found, so install cannot do it)"
            ),
        ));
    };
    let write = facts.nouveau_blacklisted.is_none();
    let blacklist = under(facts.root.as_deref(), NOUVEAU_BLACKLIST);
    let tool_words = crate::exec::step::shell_words(tool);
    let fix = format!(
        "install prepares it with the consent it asks for: {}rebuilds the initramfs with `{tool_words}`{}. By hand: {by_hand}",
        if write {
            format!(
                "writes {NOUVEAU_BLACKLIST} (`blacklist nouveau`, `options nouveau modeset=0`), "
            )
        } else {
            String::new()
        },
        if loaded {
            ", and stops at a reboot before the driver; after it the same command (or --reboot's resume) installs the driver"
        } else {
            ", then goes on with the driver"
        }
    );
    Some(Finding::prepares(
        Layer::Driver,
        what,
        fix,
        Prepare::BlacklistNouveau {
            blacklist,
            write,
            initramfs: tool.clone(),
            reboot: loaded,
        },
    ))
}

/// A display server: blocks, unless `--stop-display` lets install stop the display manager.
fn display_finding(facts: &LinuxFacts, needs: &Needs) -> Option<Finding> {
    if let Some(seen) = &facts.display {
        let what = format!(
            "a display server is running ({seen}): the runfile stops with \"ERROR: You appear to be running an X server; please exit X before installing.\""
        );
        return Some(match (&facts.systemctl, needs.choices.stop_display) {
            (Some(systemctl), true) => Finding::prepares(
                Layer::Driver,
                what,
                "install stops it (`systemctl stop display-manager`, asked for with --stop-display) right before the driver's runfile: this ends the desktop session, and it is not started again (the new driver needs a reboot, which starts it)",
                Prepare::StopDisplay {
                    argv: vec![
                        systemctl.display().to_string(),
                        "stop".into(),
                        "display-manager".into(),
                    ],
                },
            ),
            _ => Finding::new(
                Layer::Driver,
                Effect::Blocks,
                what,
                "run install again with --stop-display (it stops the display manager before the driver; this ends the desktop session), or stop it yourself from a text console (Ctrl+Alt+F3): `sudo systemctl isolate multi-user.target` (or `sudo systemctl stop display-manager`), then run install again",
            ),
        });
    }
    facts.nvidia_drm_loaded.then(|| Finding::new(
        Layer::Driver,
        Effect::Warns,
        "nvidia_drm is loaded (an NVIDIA driver runs now): the runfile stops with \"ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded in your kernel\" while something uses it".to_string(),
        "stop what uses the GPU (nvidia-persistenced, CUDA programs, a compositor) before installing",
    ))
}

/// The running kernel's headers and the build tools the module needs.
fn build_findings(facts: &LinuxFacts, needs: &Needs, out: &mut Vec<Finding>) {
    if let (Some(build), false) = (&facts.kernel_build, facts.kernel_build_present) {
        let kernel = facts.kernel.as_deref().unwrap_or("the running kernel");
        out.push(Finding::new(
            Layer::Driver,
            Effect::Blocks,
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
        out.push(Finding::new(
            Layer::Driver,
            Effect::Blocks,
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
}

/// A gcc other than the kernel's: another major blocks, another minor or patch warns.
fn compiler_finding(facts: &LinuxFacts) -> Option<Finding> {
    let (kernel, gcc) = (facts.kernel_compiler.as_ref()?, facts.gcc.as_ref()?);
    if kernel == gcc {
        return None;
    }
    let major = |v: &str| v.split('.').next().unwrap_or_default().to_string();
    let effect = if major(kernel) == major(gcc) {
        Effect::Warns
    } else {
        Effect::Blocks
    };
    Some(Finding::new(
        Layer::Driver,
        effect,
        format!(
            "the kernel was built with gcc {kernel} but `gcc` here is {gcc}: the runfile's \"CC version check failed\", and a module built by another compiler may not load"
        ),
        format!(
            "install the kernel's compiler (`apt-get install gcc-{k}` / `dnf install gcc`) and make it the `gcc` the runfile finds (`update-alternatives`), or update the kernel to one built with gcc {gcc}",
            k = major(kernel)
        ),
    ))
}

/// How to make a module signing key pair, as NVIDIA's README does.
pub const OPENSSL_KEY_PAIR: &str = "openssl req -new -x509 -newkey rsa:2048 -nodes -days 36500 -outform DER -keyout /root/mok.key -out /root/mok.der -subj \"/CN=NVIDIA module signing/\"";

/// Secure Boot on: never a silent dead driver. A key pair given to install: the runfile signs
/// the module and install imports the certificate with mokutil; one in driver.run: a warning to
/// enroll it; none: refused with both ways out.
fn secure_boot_finding(facts: &LinuxFacts, needs: &Needs) -> Option<Finding> {
    let sb = facts.secure_boot.as_ref().filter(|s| s.enabled)?;
    let on = format!("Secure Boot is on ({})", sb.read_from);
    let enrol = "at the next boot the blue MOK manager screen appears: choose \"Enroll MOK\", then \"Continue\" and \"Yes\", and type the enrolment password, then \"Reboot\"; without it the module does not load";
    Some(match (&needs.choices.signing, &facts.mokutil) {
        (Some(signing), Some(mokutil)) => Finding::prepares(
            Layer::Driver,
            format!(
                "{on}: the runfile signs the module with {} and install enrolls {} with `mokutil --import` before the driver",
                signing.key.display(),
                signing.cert.display()
            ),
            format!(
                "{enrol}; the password is a one-time one install makes (hashed by `mokutil --generate-hash`, given with `--hash-file`: root's own password is never needed) and prints"
            ),
            Prepare::EnrollKey {
                argv: vec![
                    mokutil.display().to_string(),
                    "--import".into(),
                    signing.cert.display().to_string(),
                ],
            },
        ),
        (Some(_), None) => Finding::new(
            Layer::Driver,
            Effect::Blocks,
            format!(
                "{on} and a signing key was given, but `mokutil` was not found: the key cannot be enrolled"
            ),
            "install mokutil (`apt-get install mokutil` / `dnf install mokutil`), then run install again",
        ),
        (None, _) if needs.signing_key => Finding::new(
            Layer::Driver,
            Effect::Warns,
            format!("{on}: the module is signed with the key driver.run names"),
            format!(
                "enroll its public key before the reboot: `mokutil --import PUBLIC_KEY` (it asks for a one-time password); {enrol}"
            ),
        ),
        (None, _) => Finding::new(
            Layer::Driver,
            Effect::Blocks,
            format!(
                "{on}: an unsigned module builds and installs, then \"The kernel module failed to load. Secure boot is enabled on this system\" — the driver is dead after the reboot"
            ),
            format!(
                "choose one: turn Secure Boot off in the firmware settings; or sign the module — make a key pair once (`{OPENSSL_KEY_PAIR}`) and run install again with `--module-signing-key /root/mok.key --module-signing-cert /root/mok.der`: the runfile signs the module (--module-signing-secret-key / --module-signing-public-key) and install enrolls the certificate with `mokutil --import`, confirmed at the next boot in the MOK manager"
            ),
        ),
    })
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
        if let Some(moved) = spare_extract(facts, needs, e) {
            out.push(moved);
        } else {
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

/// `/tmp` is short and nobody named another folder: the runfiles extract in the spare folder
/// (in the archive) when its disk has room, also for the toolkit when they share it.
fn spare_extract(
    facts: &LinuxFacts,
    needs: &Needs,
    tmp: &crate::host::readiness::FreeSpace,
) -> Option<Finding> {
    if needs.choices.tmpdir.is_some() || needs.extract_dir != Path::new("/tmp") {
        return None;
    }
    let dir = needs.choices.spare_tmpdir.as_ref()?;
    let spare = facts.space_at(dir)?;
    let shares_root = facts
        .space_at(&needs.toolkit_root)
        .is_some_and(|r| r.mount == spare.mount);
    let need = EXTRACT_NEED + if shares_root { TOOLKIT_NEED } else { 0 };
    if spare.free_bytes < need {
        return None;
    }
    Some(Finding::prepares(
        Layer::Toolkit,
        format!(
            "only {} free in /tmp (on {}): the CUDA runfile extracts about {} and would stop with \"Not enough space on parition mounted at {}\"; it extracts in {} instead ({} free on {})",
            gib(tmp.free_bytes),
            tmp.mount,
            gib(EXTRACT_NEED),
            tmp.mount,
            dir.display(),
            gib(spare.free_bytes),
            spare.mount
        ),
        format!(
            "nothing to do: install passes `--tmpdir={}` to the runfiles; to choose another folder, give install `--tmpdir DIR`",
            dir.display()
        ),
        Prepare::ExtractIn { dir: dir.clone() },
    ))
}

/// Bytes as people read disk sizes here: `9.5 GiB`.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

fn extract_fix(dir: &Path) -> String {
    format!(
        "free space in {}, or give the runfiles a folder with room: run install with `--tmpdir DIR` (a folder on a disk with {} free)",
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
            choices: Choices::default(),
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
                "nouveau loaded, update-initramfs here",
                |f, _| {
                    f.nouveau_loaded = Some("/proc/modules lists nouveau".into());
                    f.nouveau_blacklisted = None;
                    f.initramfs_tool = Some(vec!["/usr/sbin/update-initramfs".into(), "-u".into()]);
                },
                Layer::Driver,
                Effect::Prepares,
                "Nouveau kernel driver is currently in use",
            ),
            (
                "X running, --stop-display",
                |f, n| {
                    f.display = Some("/tmp/.X0-lock exists".into());
                    f.systemctl = Some("/usr/bin/systemctl".into());
                    n.choices.stop_display = true;
                },
                Layer::Driver,
                Effect::Prepares,
                "running an X server",
            ),
            (
                "Secure Boot, key pair given to install",
                |f, n| {
                    f.secure_boot = Some(SecureBoot {
                        enabled: true,
                        read_from: "x".into(),
                    });
                    f.mokutil = Some("/usr/bin/mokutil".into());
                    n.choices.signing = Some(Signing {
                        key: "/root/mok.key".into(),
                        cert: "/root/mok.der".into(),
                    });
                },
                Layer::Driver,
                Effect::Prepares,
                "install enrolls /root/mok.der",
            ),
            (
                "small /tmp, room in the archive",
                |f, n| {
                    f.space[0] = space("/tmp", "/tmp", 2 << 30);
                    f.space
                        .push(space("/var/lib/stackpin/t/.extract", "/", 100 << 30));
                    n.choices.spare_tmpdir = Some("/var/lib/stackpin/t/.extract".into());
                },
                Layer::Toolkit,
                Effect::Prepares,
                "extracts in /var/lib/stackpin/t/.extract instead",
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
