//! What a Linux host shows about its readiness for NVIDIA's runfiles, read before anything runs:
//! nouveau loaded or blacklisted, a display server, the running kernel's build folder and the
//! compiler it was built with, gcc/make/dkms, Secure Boot, a driver the package manager
//! installed, free space where the runfiles extract and install, and the WSL/container context.
//!
//! Every fact is read through [`System`], under `STACKPIN_HOST_ROOT` when it is set
//! ([`context::host_root`]): files first (`/proc/modules`, `/sys/module/nouveau`,
//! `/etc/modprobe.d`, `/tmp/.X*-lock`, `/lib/modules/$(uname -r)/build`, `/proc/version`, the
//! `SecureBoot-…` EFI variable, `/var/lib/dpkg/status`), then read-only commands (`gcc
//! --version`, `df -Pk`, `rpm -q`). Under a host root the programs are the root's own
//! (`<root>/usr/bin/gcc`), and the two commands that only describe the running machine
//! (`systemctl is-active display-manager`, `mokutil --sb-state`) are not asked. This module only
//! observes: what the facts mean for a stack is `install::readiness`'s decision.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::context::{self, under};
use super::system::System;

/// The EFI variable that holds the Secure Boot state: 4 bytes of attributes, then 1 = on.
/// (UEFI spec, "Globally Defined Variables", EFI_GLOBAL_VARIABLE GUID.)
pub const SECURE_BOOT_VAR: &str =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

/// The build tools the driver's kernel module needs (DKMS only when the runfile is told `--dkms`).
pub const BUILD_TOOLS: [&str; 3] = ["gcc", "make", "dkms"];

/// How long each read-only command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// Where the Linux module configuration lives (modprobe.d(5)).
const MODPROBE_DIRS: [&str; 4] = [
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
];

/// Where a program is looked for under a host root.
const ROOT_BIN_DIRS: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Packages that mean the package manager owns the driver (Debian/Ubuntu `nvidia-driver-550`,
/// NVIDIA's repositories' `cuda-drivers`, RPM Fusion's `akmod-nvidia`, Fedora/RHEL `kmod-nvidia`,
/// `xorg-x11-drv-nvidia`, `nvidia-driver`).
const DRIVER_PACKAGE_PREFIXES: [&str; 6] = [
    "nvidia-driver",
    "cuda-drivers",
    "akmod-nvidia",
    "kmod-nvidia",
    "xorg-x11-drv-nvidia",
    "nvidia-dkms-",
];

/// Secure Boot as the firmware reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecureBoot {
    pub enabled: bool,
    /// Where it was read: the EFI variable or `mokutil --sb-state`.
    pub read_from: String,
}

/// Free space at a folder (or its nearest existing parent), as `df -Pk` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FreeSpace {
    /// The folder asked about, as the host names it.
    pub path: PathBuf,
    /// The mount point holding it.
    pub mount: String,
    pub free_bytes: u64,
}

/// Everything read about a Linux host's readiness; unknown facts stay empty.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct LinuxFacts {
    /// The host root the facts were read under, when not `/`.
    pub root: Option<PathBuf>,
    pub kernel: Option<String>,
    /// Why this looks like a container, when it does.
    pub container: Option<String>,
    /// Why this looks like WSL, when it does.
    pub wsl: Option<String>,
    /// How nouveau was seen loaded (`/proc/modules lists nouveau`), when it is.
    pub nouveau_loaded: Option<String>,
    /// The file that blacklists nouveau, when one does.
    pub nouveau_blacklisted: Option<PathBuf>,
    /// How a display server was seen (`/tmp/.X0-lock exists`), when one runs.
    pub display: Option<String>,
    /// `nvidia_drm` is loaded: an older NVIDIA driver runs now.
    pub nvidia_drm_loaded: bool,
    /// The `nvidia` kernel module is loaded.
    pub nvidia_loaded: bool,
    /// `/lib/modules/<kernel>/build` as checked; `None` when the kernel is unknown.
    pub kernel_build: Option<PathBuf>,
    pub kernel_build_present: bool,
    /// Which of [`BUILD_TOOLS`] were not found.
    pub missing_tools: Vec<String>,
    /// The gcc version `/proc/version` says the kernel was built with.
    pub kernel_compiler: Option<String>,
    /// The version `gcc --version` reports.
    pub gcc: Option<String>,
    pub secure_boot: Option<SecureBoot>,
    /// Installed driver packages, `name version` each.
    pub packaged_drivers: Vec<String>,
    /// Free space at each folder asked about, in the order asked.
    pub space: Vec<FreeSpace>,
    /// The distribution's own initramfs tool as it would run: `update-initramfs -u`
    /// (Debian/Ubuntu), else `dracut -f` (Fedora/RHEL); `None` when neither is found.
    pub initramfs_tool: Option<Vec<String>>,
    /// `systemctl`, which stops the display manager on request (`--stop-display`).
    pub systemctl: Option<PathBuf>,
    /// `mokutil`, which enrolls a module signing key.
    pub mokutil: Option<PathBuf>,
}

impl LinuxFacts {
    /// The free space reading for `path`, when it could be read.
    pub fn space_at(&self, path: &Path) -> Option<&FreeSpace> {
        self.space.iter().find(|s| s.path == path)
    }
}

/// Reads the facts; `space_for` names the folders whose free space matters (where the runfiles
/// extract, the toolkit root). Never fails.
pub fn read(system: &dyn System, space_for: &[PathBuf]) -> LinuxFacts {
    let root = context::host_root(system);
    let root = root.as_deref();
    let read = |p: &str| system.read_to_string(&under(root, p)).ok();
    let ctx = context::probe(system);
    let modules = read("/proc/modules").unwrap_or_default();
    let loaded = |name: &str| {
        modules
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name))
    };
    let nouveau_loaded = if loaded("nouveau") {
        Some("/proc/modules lists nouveau".to_string())
    } else if system.is_dir(&under(root, "/sys/module/nouveau")) {
        Some("/sys/module/nouveau exists".to_string())
    } else {
        None
    };
    let kernel_build = ctx
        .kernel
        .as_ref()
        .map(|k| PathBuf::from(format!("/lib/modules/{k}/build")));
    let kernel_build_present = kernel_build
        .as_ref()
        .is_some_and(|b| system.is_dir(&under(root, &b.display().to_string())));
    let missing_tools = BUILD_TOOLS
        .iter()
        .filter(|t| program(system, root, t).is_none())
        .map(|t| t.to_string())
        .collect();
    let gcc = program(system, root, "gcc")
        .and_then(|gcc| {
            system
                .run(&gcc, &["--version".into()], COMMAND_TIMEOUT)
                .ok()
        })
        .filter(|out| out.success())
        .and_then(|out| out.stdout.lines().next().and_then(gcc_version));
    LinuxFacts {
        root: root.map(Path::to_path_buf),
        nouveau_loaded,
        nouveau_blacklisted: nouveau_blacklist(system, root),
        display: display(system, root),
        nvidia_drm_loaded: loaded("nvidia_drm"),
        nvidia_loaded: loaded("nvidia"),
        kernel_build,
        kernel_build_present,
        missing_tools,
        kernel_compiler: read("/proc/version").and_then(|v| kernel_compiler(&v)),
        gcc,
        secure_boot: secure_boot(system, root),
        packaged_drivers: packaged_drivers(system, root),
        space: space_for
            .iter()
            .filter_map(|p| free_space(system, root, p))
            .collect(),
        kernel: ctx.kernel,
        container: ctx.container,
        wsl: ctx.wsl,
        initramfs_tool: initramfs_tool(system, root),
        systemctl: program(system, root, "systemctl"),
        mokutil: program(system, root, "mokutil"),
    }
}

/// The initramfs tool the distribution ships: Debian's `update-initramfs` where it exists (it
/// calls dracut itself on a Debian that uses dracut), else `dracut`.
fn initramfs_tool(system: &dyn System, root: Option<&Path>) -> Option<Vec<String>> {
    let argv = |path: PathBuf, flag: &str| vec![path.display().to_string(), flag.to_string()];
    program(system, root, "update-initramfs")
        .map(|p| argv(p, "-u"))
        .or_else(|| program(system, root, "dracut").map(|p| argv(p, "-f")))
}

/// A program on `PATH`, or under a host root in its usual folders.
fn program(system: &dyn System, root: Option<&Path>, name: &str) -> Option<PathBuf> {
    match root {
        None => system.which(name),
        Some(_) => ROOT_BIN_DIRS
            .iter()
            .map(|d| under(root, &format!("{d}/{name}")))
            .find(|p| system.exists(p)),
    }
}

/// A `blacklist nouveau` line in a modprobe.d file, or `modprobe.blacklist=nouveau` on the
/// kernel command line.
fn nouveau_blacklist(system: &dyn System, root: Option<&Path>) -> Option<PathBuf> {
    for dir in MODPROBE_DIRS {
        for file in system.read_dir(&under(root, dir)).unwrap_or_default() {
            if file.extension().is_none_or(|e| e != "conf") {
                continue;
            }
            let text = system.read_to_string(&file).unwrap_or_default();
            let blacklists = text.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words == ["blacklist", "nouveau"]
            });
            if blacklists {
                let name = file.file_name().map(PathBuf::from).unwrap_or_default();
                return Some(Path::new(dir).join(name));
            }
        }
    }
    let cmdline = system
        .read_to_string(&under(root, "/proc/cmdline"))
        .unwrap_or_default();
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("modprobe.blacklist="))
        .any(|list| list.split(',').any(|m| m == "nouveau"))
        .then(|| PathBuf::from("/proc/cmdline"))
}

/// An X lock file (`/tmp/.X0-lock`), or the display manager systemd reports active.
fn display(system: &dyn System, root: Option<&Path>) -> Option<String> {
    let lock = system
        .read_dir(&under(root, "/tmp"))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| Some(p.file_name()?.to_str()?.to_string()))
        .find(|n| n.starts_with(".X") && n.ends_with("-lock"));
    if let Some(name) = lock {
        return Some(format!(
            "/tmp/{name} exists (an X server holds display :{})",
            { name.trim_start_matches(".X").trim_end_matches("-lock") }
        ));
    }
    if root.is_some() {
        return None;
    }
    let systemctl = system.which("systemctl")?;
    let args = ["is-active", "display-manager"].map(String::from);
    let out = system.run(&systemctl, &args, COMMAND_TIMEOUT).ok()?;
    (out.stdout.trim() == "active")
        .then(|| "`systemctl is-active display-manager` says active".to_string())
}

/// The EFI variable, else (on the running machine) `mokutil --sb-state`.
fn secure_boot(system: &dyn System, root: Option<&Path>) -> Option<SecureBoot> {
    if let Ok(bytes) = system.read_to_string(&under(root, SECURE_BOOT_VAR))
        && let Some(value) = bytes.as_bytes().get(4)
    {
        return Some(SecureBoot {
            enabled: *value == 1,
            read_from: "the SecureBoot EFI variable".to_string(),
        });
    }
    if root.is_some() {
        return None;
    }
    let mokutil = system.which("mokutil")?;
    let out = system
        .run(&mokutil, &["--sb-state".into()], COMMAND_TIMEOUT)
        .ok()?;
    let text = out.combined().to_ascii_lowercase();
    let enabled = if text.contains("secureboot enabled") {
        true
    } else if text.contains("secureboot disabled") {
        false
    } else {
        return None;
    };
    Some(SecureBoot {
        enabled,
        read_from: "`mokutil --sb-state`".to_string(),
    })
}

/// Driver packages dpkg's status file lists as installed, then those `rpm -q` knows.
fn packaged_drivers(system: &dyn System, root: Option<&Path>) -> Vec<String> {
    let status = system
        .read_to_string(&under(root, "/var/lib/dpkg/status"))
        .unwrap_or_default();
    let mut found = dpkg_drivers(&status);
    if let Some(rpm) = program(system, root, "rpm") {
        let mut args: Vec<String> = Vec::new();
        if let Some(r) = root {
            args.extend(["--root".into(), r.display().to_string()]);
        }
        args.extend(["-q", "--qf", "%{NAME} %{VERSION}\\n"].map(String::from));
        args.extend(
            [
                "cuda-drivers",
                "akmod-nvidia",
                "kmod-nvidia",
                "nvidia-driver",
            ]
            .map(String::from),
        );
        if let Ok(out) = system.run(&rpm, &args, COMMAND_TIMEOUT) {
            found.extend(
                out.stdout
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.contains("not installed"))
                    .map(str::to_string),
            );
        }
    }
    found
}

/// `Package:` stanzas of dpkg's status file that are NVIDIA driver packages and installed.
pub fn dpkg_drivers(status: &str) -> Vec<String> {
    status
        .split("\n\n")
        .filter_map(|stanza| {
            let field = |name: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(str::trim))
            };
            let package = field("Package:")?;
            let installed = field("Status:").is_some_and(|s| s.ends_with(" installed"));
            let driver = DRIVER_PACKAGE_PREFIXES
                .iter()
                .any(|p| package.starts_with(p));
            (installed && driver).then(|| match field("Version:") {
                Some(v) => format!("{package} {v}"),
                None => package.to_string(),
            })
        })
        .collect()
}

/// `df -Pk` at `path`'s nearest existing folder.
fn free_space(system: &dyn System, root: Option<&Path>, path: &Path) -> Option<FreeSpace> {
    let df = program(system, root, "df")?;
    let mut at = under(root, &path.display().to_string());
    while !system.exists(&at) {
        at = at.parent()?.to_path_buf();
    }
    let args = ["-Pk".to_string(), at.display().to_string()];
    let out = system.run(&df, &args, COMMAND_TIMEOUT).ok()?;
    let (free_kib, mount) = parse_df(&out.stdout)?;
    Some(FreeSpace {
        path: path.to_path_buf(),
        mount,
        free_bytes: free_kib.saturating_mul(1024),
    })
}

/// The POSIX `df -Pk` line: `Filesystem 1024-blocks Used Available Capacity Mounted-on`.
pub fn parse_df(text: &str) -> Option<(u64, String)> {
    let line = text.lines().nth(1)?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let available = fields.get(3)?.parse().ok()?;
    let mount = fields.get(5..)?.join(" ");
    Some((available, mount))
}

/// The gcc version in `/proc/version`: `(gcc version 9.4.0 (Ubuntu …))`,
/// `(x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld …)`,
/// `(gcc (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3), GNU ld …)`. `None` for a clang-built kernel.
pub fn kernel_compiler(proc_version: &str) -> Option<String> {
    let from = proc_version.find("gcc")?;
    let rest = &proc_version[from..];
    let end = rest.find(", GNU ld").unwrap_or(rest.len());
    gcc_version(&rest[..end])
}

/// The first bare `X.Y[.Z]` in a gcc banner: `gcc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0` →
/// `13.3.0`.
pub fn gcc_version(banner: &str) -> Option<String> {
    banner
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .find(|w| {
            w.contains('.')
                && w.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;
    use crate::os::Os;

    #[test]
    fn the_kernel_compiler_is_read_from_each_distributions_proc_version() {
        let cases = [
            (
                "Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP",
                Some("11.4.0"),
            ),
            (
                "Linux version 6.8.0-50-generic (buildd@lcy02-amd64-092) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #50-Ubuntu",
                Some("13.2.0"),
            ),
            (
                "Linux version 5.4.0-42-generic (buildd@lgw01-amd64-038) (gcc version 9.3.0 (Ubuntu 9.3.0-10ubuntu2)) #46-Ubuntu SMP",
                Some("9.3.0"),
            ),
            (
                "Linux version 6.11.4-301.fc41.x86_64 (mockbuild@x) (gcc (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3), GNU ld version 2.43.1-2.fc41) #1 SMP",
                Some("14.2.1"),
            ),
            (
                "Linux version 6.6.0 (x@y) (clang version 17.0.6, LLD 17.0.6) #1",
                None,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(kernel_compiler(text).as_deref(), want, "{text}");
        }
        assert_eq!(
            gcc_version("gcc (Debian 12.2.0-14+deb12u1) 12.2.0").as_deref(),
            Some("12.2.0")
        );
    }

    #[test]
    fn df_gives_the_available_kib_and_the_mount() {
        let out = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n\
                   tmpfs              4096000   100000   3996000       3% /tmp\n";
        assert_eq!(parse_df(out), Some((3_996_000, "/tmp".to_string())));
        assert_eq!(parse_df("garbage"), None);
    }

    #[test]
    fn only_installed_nvidia_driver_packages_count() {
        let status = "Package: nvidia-driver-550\nStatus: install ok installed\nVersion: 550.54.15-0ubuntu1\n\n\
                      Package: nvidia-driver-535\nStatus: deinstall ok config-files\nVersion: 535.1\n\n\
                      Package: cuda-drivers\nStatus: install ok installed\nVersion: 560.35.03-1\n\n\
                      Package: gcc\nStatus: install ok installed\nVersion: 4:13.2.0-7\n";
        assert_eq!(
            dpkg_drivers(status),
            vec![
                "nvidia-driver-550 550.54.15-0ubuntu1",
                "cuda-drivers 560.35.03-1"
            ]
        );
    }

    /// A workstation root at `/img` with the pieces each test changes.
    fn image() -> FakeSystem {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.env.insert(context::ROOT_VAR.into(), "/img".into());
        sys.file("/img/proc/sys/kernel/osrelease", "6.8.0-50-generic\n")
            .file(
                "/img/proc/version",
                "Linux version 6.8.0-50-generic (b@h) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld 2.42) #50",
            )
            .file("/img/proc/modules", "nouveau 2314240 1 - Live 0x0\nvideo 77824 1 nouveau, Live 0x0\n")
            .file("/img/tmp/.X0-lock", "       1234\n")
            .file("/img/usr/bin/gcc", "")
            .file("/img/usr/bin/make", "")
            .file("/img/usr/bin/df", "")
            .file(
                "/img/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
                "\u{6}\0\0\0\u{1}",
            )
            .file("/img/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\noptions nouveau modeset=0\n")
            .dir("/img/lib/modules/6.8.0-50-generic/build");
        sys.answer("/img/usr/bin/gcc", &["--version"], 0, "gcc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0\n")
            .answer(
                "/img/usr/bin/df",
                &["-Pk"],
                0,
                "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sda2 100 50 2048 50% /\n",
            );
        sys
    }

    #[test]
    fn a_mounted_image_is_read_under_its_root_with_its_own_programs() {
        let facts = read(&image(), &[PathBuf::from("/tmp")]);
        assert_eq!(facts.root, Some(PathBuf::from("/img")));
        assert_eq!(
            facts.nouveau_loaded.as_deref(),
            Some("/proc/modules lists nouveau")
        );
        assert_eq!(
            facts.nouveau_blacklisted,
            Some(PathBuf::from("/etc/modprobe.d/blacklist-nouveau.conf"))
        );
        assert!(
            facts
                .display
                .as_deref()
                .is_some_and(|d| d.contains(".X0-lock"))
        );
        assert!(facts.kernel_build_present);
        assert_eq!(facts.missing_tools, vec!["dkms"]);
        assert_eq!(facts.kernel_compiler.as_deref(), Some("13.2.0"));
        assert_eq!(facts.gcc.as_deref(), Some("13.3.0"));
        assert_eq!(facts.secure_boot.as_ref().map(|s| s.enabled), Some(true));
        assert_eq!(
            facts.space_at(Path::new("/tmp")).map(|s| s.free_bytes),
            Some(2048 * 1024)
        );
    }

    #[test]
    fn a_bare_root_shows_no_headers_no_tools_and_asks_no_running_machine_command() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.env.insert(context::ROOT_VAR.into(), "/img".into());
        sys.file("/img/proc/sys/kernel/osrelease", "6.8.0-50-generic\n");
        // On PATH, but the image's own programs are the ones that count; systemd and mokutil
        // describe the running machine, not the image.
        sys.on_path.insert("gcc".into(), "/usr/bin/gcc".into());
        sys.on_path
            .insert("systemctl".into(), "/bin/systemctl".into());
        sys.answer("/bin/systemctl", &["is-active"], 0, "active\n");
        let facts = read(&sys, &[]);
        assert!(!facts.kernel_build_present);
        assert_eq!(
            facts.kernel_build,
            Some(PathBuf::from("/lib/modules/6.8.0-50-generic/build"))
        );
        assert_eq!(facts.missing_tools, vec!["gcc", "make", "dkms"]);
        assert_eq!(facts.display, None);
        assert_eq!(facts.secure_boot, None);
    }

    #[test]
    fn the_running_machine_asks_systemd_and_mokutil() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path
            .insert("systemctl".into(), "/bin/systemctl".into());
        sys.on_path.insert("mokutil".into(), "/bin/mokutil".into());
        sys.answer("/bin/systemctl", &["is-active"], 0, "active\n")
            .answer("/bin/mokutil", &["--sb-state"], 0, "SecureBoot disabled\n");
        let facts = read(&sys, &[]);
        assert!(facts.display.is_some_and(|d| d.contains("display-manager")));
        assert_eq!(
            facts.secure_boot,
            Some(SecureBoot {
                enabled: false,
                read_from: "`mokutil --sb-state`".into()
            })
        );
    }
}
