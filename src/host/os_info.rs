//! The operating system: family, distribution or Windows version (with its build number),
//! kernel, whether it is WSL, and whether stackpin runs as root / Administrator. Everything is
//! read through [`System`]: files under `/etc` and `/proc` on Linux, `cmd /c ver` and
//! `whoami /groups` on Windows. What to do with the answers is left to `install`.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::os::Os;

use super::system::System;

const QUICK: Duration = Duration::from_secs(15);

/// What the OS says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OsInfo {
    pub family: Os,
    /// `Ubuntu 22.04.4 LTS` or `Microsoft Windows [Version 10.0.22631.4317]`.
    pub name: Option<String>,
    /// `22.04` (os-release `VERSION_ID`) or `10.0.22631.4317`.
    pub version: Option<String>,
    /// The Windows build number (`22631`), which tells Windows 10 from 11.
    pub windows_build: Option<u32>,
    /// The Linux kernel release (`6.8.0-45-generic`).
    pub kernel: Option<String>,
    /// Linux under WSL 2: the driver lives on the Windows side.
    pub wsl: bool,
    /// Root on Linux, an elevated Administrator on Windows; `None` when it could not be told.
    pub admin: Option<bool>,
}

/// Reads the OS facts; never fails, unknown facts stay `None`.
pub fn probe(system: &dyn System) -> OsInfo {
    match system.os() {
        Os::Linux => linux(system),
        Os::Windows => windows(system),
    }
}

fn linux(system: &dyn System) -> OsInfo {
    let release = system
        .read_to_string(Path::new("/etc/os-release"))
        .unwrap_or_default();
    let kernel = system
        .read_to_string(Path::new("/proc/sys/kernel/osrelease"))
        .ok()
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    let wsl = kernel
        .as_deref()
        .is_some_and(|k| k.to_ascii_lowercase().contains("microsoft"))
        || system.env("WSL_DISTRO_NAME").is_some();
    let admin = system
        .read_to_string(Path::new("/proc/self/status"))
        .ok()
        .and_then(|s| effective_uid(&s))
        .map(|uid| uid == 0);
    OsInfo {
        family: Os::Linux,
        name: os_release_field(&release, "PRETTY_NAME"),
        version: os_release_field(&release, "VERSION_ID"),
        windows_build: None,
        kernel,
        wsl,
        admin,
    }
}

fn windows(system: &dyn System) -> OsInfo {
    let run = |program: &str, args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        system
            .run(Path::new(program), &args, QUICK)
            .ok()
            .filter(|o| o.success())
            .map(|o| o.stdout)
    };
    let ver = run("cmd", &["/c", "ver"]);
    let name = ver
        .as_deref()
        .and_then(|v| v.lines().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().to_string());
    let version = name.as_deref().and_then(windows_version);
    let windows_build = version
        .as_deref()
        .and_then(|v| v.split('.').nth(2))
        .and_then(|b| b.parse().ok());
    let admin = run("whoami", &["/groups"]).map(|g| elevated_integrity(&g));
    OsInfo {
        family: Os::Windows,
        name,
        version,
        windows_build,
        kernel: None,
        wsl: false,
        admin,
    }
}

/// Mandatory label SIDs of an elevated token: High (an administrator's elevated process) and
/// System (a service, a scheduled task run as SYSTEM, Ansible `become`, a deployment tool).
/// A filtered administrator token carries Medium (S-1-16-8192) and is not elevated.
const ELEVATED_INTEGRITY_SIDS: [&str; 2] = ["S-1-16-12288", "S-1-16-16384"];

/// Whether `whoami /groups` output shows a High or System integrity level.
fn elevated_integrity(groups: &str) -> bool {
    groups.lines().any(|line| {
        line.split_whitespace()
            .any(|word| ELEVATED_INTEGRITY_SIDS.contains(&word))
    })
}

/// `KEY="value"` or `KEY=value` from `/etc/os-release`.
fn os_release_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(key)?.strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_string())
    })
}

/// The second number of `Uid:` in `/proc/self/status` (real, effective, saved, fs).
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// `Microsoft Windows [Version 10.0.22631.4317]` → `10.0.22631.4317`.
fn windows_version(line: &str) -> Option<String> {
    let start = line.find("Version ")? + "Version ".len();
    let rest = &line[start..];
    let end = rest.find(']').unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;

    #[test]
    fn linux_reads_distribution_kernel_wsl_and_root() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file(
            "/etc/os-release",
            "NAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n",
        )
        .file(
            "/proc/sys/kernel/osrelease",
            "5.15.153.1-microsoft-standard-WSL2\n",
        )
        .file(
            "/proc/self/status",
            "Name:\tstackpin\nUid:\t1000\t0\t0\t0\n",
        );
        let info = probe(&sys);
        assert_eq!(info.name.as_deref(), Some("Ubuntu 22.04.4 LTS"));
        assert_eq!(info.version.as_deref(), Some("22.04"));
        assert!(info.wsl);
        assert_eq!(info.admin, Some(true), "effective uid 0 counts as root");
    }

    #[test]
    fn a_normal_user_is_not_root_and_unknown_facts_stay_unknown() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/proc/self/status", "Uid:\t1000\t1000\t1000\t1000\n");
        let info = probe(&sys);
        assert_eq!(info.admin, Some(false));
        assert_eq!(info.name, None);
        assert!(!info.wsl);
    }

    #[test]
    fn windows_build_number_and_elevation_come_from_child_processes() {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.answer(
            "cmd",
            &["/c", "ver"],
            0,
            "\r\nMicrosoft Windows [Version 10.0.22631.4317]\r\n",
        )
        .answer(
            "whoami",
            &["/groups"],
            0,
            "Mandatory Label\\High Mandatory Level Label S-1-16-12288\r\n",
        );
        let info = probe(&sys);
        assert_eq!(info.version.as_deref(), Some("10.0.22631.4317"));
        assert_eq!(info.windows_build, Some(22631));
        assert_eq!(info.admin, Some(true));
    }

    #[test]
    fn a_system_integrity_token_counts_as_elevated() {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.answer(
            "whoami",
            &["/groups"],
            0,
            "\r\nGROUP INFORMATION\r\n-----------------\r\n\r\n\
             Group Name                             Type             SID          Attributes\r\n\
             ====================================== ================ ============ ==================================================\r\n\
             BUILTIN\\Administrators                 Alias            S-1-5-32-544 Enabled by default, Enabled group, Group owner\r\n\
             Everyone                               Well-known group S-1-1-0      Mandatory group, Enabled by default, Enabled group\r\n\
             Mandatory Label\\System Mandatory Level Label            S-1-16-16384\r\n",
        );
        assert_eq!(probe(&sys).admin, Some(true));
    }

    #[test]
    fn a_medium_integrity_token_is_not_elevated_even_in_the_administrators_group() {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.answer(
            "whoami",
            &["/groups"],
            0,
            "BUILTIN\\Administrators Alias S-1-5-32-544 Group used for deny only\r\n\
             Mandatory Label\\Medium Mandatory Level Label S-1-16-8192\r\n\
             Unrelated S-1-16-122880\r\n",
        );
        assert_eq!(probe(&sys).admin, Some(false));
    }

    #[test]
    fn windows_without_answers_is_unknown_not_an_error() {
        let info = probe(&FakeSystem::new(Os::Windows));
        assert_eq!(info.windows_build, None);
        assert_eq!(info.admin, None);
    }
}
