//! Which boot the machine is on, so that `install --reboot` can tell whether the reboot it asked
//! for really happened. Linux: the kernel's `boot_id` (new on every boot). Windows: the last
//! boot time from CIM (`Win32_OperatingSystem.LastBootUpTime`) through PowerShell, else `wmic`
//! (Wine's PowerShell is a stub; `wmic` is optional on Windows 11 24H2). `None` when the host
//! does not say; what a changed boot means is the caller's business.

use std::path::Path;
use std::time::Duration;

use super::System;
use crate::os::Os;

/// PowerShell's or wmic's first start on a cold machine is slow, never this slow.
const BOOT_QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// The PowerShell query: the boot time, in a form that is the same on every call of one boot.
pub const CIM_BOOT_QUERY: &str =
    "(Get-CimInstance Win32_OperatingSystem).LastBootUpTime.ToUniversalTime().ToString('o')";

/// The current boot's identity.
pub fn boot_id(system: &dyn System) -> Option<String> {
    match system.os() {
        Os::Linux => system
            .read_to_string(Path::new("/proc/sys/kernel/random/boot_id"))
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        Os::Windows => {
            let ask = |program: &str, args: &[&str]| {
                let path = system.which(program)?;
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                let out = system.run(&path, &args, BOOT_QUERY_TIMEOUT).ok()?;
                out.success().then(|| parse_boot(&out.stdout)).flatten()
            };
            ask(
                "powershell",
                &["-NoProfile", "-NonInteractive", "-Command", CIM_BOOT_QUERY],
            )
            .or_else(|| ask("wmic", &["os", "get", "LastBootUpTime", "/value"]))
        }
    }
}

/// The first line with text, without wmic's `LastBootUpTime=` key.
fn parse_boot(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.strip_prefix("LastBootUpTime=").unwrap_or(l).to_string())
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake::FakeSystem;

    #[test]
    fn linux_reads_the_kernels_boot_id() {
        let mut system = FakeSystem::new(Os::Linux);
        system.file("/proc/sys/kernel/random/boot_id", "5f1c\n");
        assert_eq!(boot_id(&system).as_deref(), Some("5f1c"));
        assert_eq!(boot_id(&FakeSystem::new(Os::Linux)), None);
    }

    #[test]
    fn windows_asks_powershell_then_wmic() {
        let mut system = FakeSystem::new(Os::Windows);
        system
            .on_path
            .insert("powershell".into(), "powershell".into());
        system.on_path.insert("wmic".into(), "wmic".into());
        system.answer("powershell", &[], 0, "\r\n");
        system.answer(
            "wmic",
            &["os"],
            0,
            "\r\n\r\nLastBootUpTime=20260102030405.500000+000\r\n",
        );
        assert_eq!(
            boot_id(&system).as_deref(),
            Some("20260102030405.500000+000")
        );
        system.answer("powershell", &["-NoProfile"], 0, "2026-01-02T03:04:05Z\n");
        assert_eq!(boot_id(&system).as_deref(), Some("2026-01-02T03:04:05Z"));
    }
}
