//! The guards that keep a repaired driver from being replaced again: on Windows the policy that
//! keeps driver updates out of Windows Update; on Linux a package hold, when the driver came from
//! packages (a `.run` install belongs to no package manager, so there is nothing to hold).
//!
//! This module decides which command fits the host and runs it on request; printing it and
//! asking is the CLI's job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::compat::Os;
use crate::host::System;

const GUARD_TIMEOUT: Duration = Duration::from_secs(120);

/// The Windows policy: "Do not include drivers with Windows Updates".
pub const WINDOWS_POLICY: [&str; 10] = [
    "reg",
    "add",
    r"HKLM\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate",
    "/v",
    "ExcludeWUDriversInQualityUpdate",
    "/t",
    "REG_DWORD",
    "/d",
    "1",
    "/f",
];

/// A guard for this host: the command that applies it, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guard {
    /// What the guard does, in words.
    pub what: String,
    /// The command (argv) that applies it; empty when there is nothing to apply.
    pub argv: Vec<String>,
}

/// A guard could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("the guard has no command to run on this host")]
    Nothing,
    #[error("`{}` was not found on PATH; run the command by hand", program)]
    NotFound { program: String },
    #[error("`{command}` failed (exit {code:?}): {output}; run it by hand as root / Administrator")]
    Failed {
        command: String,
        code: Option<i32>,
        output: String,
    },
}

impl Guard {
    /// The Windows policy guard.
    pub fn windows() -> Guard {
        Guard {
            what: "keep driver updates out of Windows Update (policy \"Do not include drivers \
                   with Windows Updates\")"
                .to_string(),
            argv: WINDOWS_POLICY.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The command as a user types it (quoted where needed).
    pub fn command_line(&self) -> String {
        self.argv
            .iter()
            .map(|a| {
                if a.contains(' ') || a.contains('\\') {
                    format!("\"{a}\"")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the guard's command.
    pub fn apply(&self, system: &dyn System) -> Result<(), GuardError> {
        let (program, args) = self.argv.split_first().ok_or(GuardError::Nothing)?;
        let path = system.which(program).ok_or_else(|| GuardError::NotFound {
            program: program.clone(),
        })?;
        let out = system
            .run(&path, args, GUARD_TIMEOUT)
            .map_err(|e| GuardError::Failed {
                command: self.command_line(),
                code: None,
                output: e.to_string(),
            })?;
        if out.success() {
            Ok(())
        } else {
            Err(GuardError::Failed {
                command: self.command_line(),
                code: out.code,
                output: out.combined().trim().to_string(),
            })
        }
    }
}

/// The guard that fits this host, looking up which package owns `nvidia-smi` on Linux.
pub fn for_host(system: &dyn System, os: Os) -> Guard {
    match os {
        Os::Windows => Guard::windows(),
        Os::Linux => linux(system),
    }
}

fn linux(system: &dyn System) -> Guard {
    let Some(smi) = system.which("nvidia-smi") else {
        return Guard {
            what: "no nvidia-smi on PATH, so no driver package to hold".to_string(),
            argv: Vec::new(),
        };
    };
    if let Some(packages) = dpkg_owners(system, &smi) {
        let mut argv = vec!["apt-mark".to_string(), "hold".to_string()];
        argv.extend(packages.iter().cloned());
        return Guard {
            what: format!(
                "hold the driver's packages ({}) so unattended upgrades leave them alone",
                packages.join(", ")
            ),
            argv,
        };
    }
    if let Some(package) = rpm_owner(system, &smi) {
        return Guard {
            what: format!("lock the driver's package ({package}) at its version"),
            argv: vec![
                "dnf".to_string(),
                "versionlock".to_string(),
                "add".to_string(),
                package,
            ],
        };
    }
    Guard {
        what: format!(
            "{} belongs to no package (the .run installer put it there): no package manager \
             will replace it; a kernel upgrade can still leave it without a module (DKMS)",
            smi.display()
        ),
        argv: Vec::new(),
    }
}

/// `dpkg -S /usr/bin/nvidia-smi` → `nvidia-utils-565: /usr/bin/nvidia-smi` → the package names.
fn dpkg_owners(system: &dyn System, smi: &Path) -> Option<Vec<String>> {
    let dpkg = system.which("dpkg")?;
    let real = std::fs::canonicalize(smi).unwrap_or_else(|_| PathBuf::from(smi));
    let args = ["-S".to_string(), real.display().to_string()];
    let out = system.run(&dpkg, &args, GUARD_TIMEOUT).ok()?;
    if !out.success() {
        return None;
    }
    let packages = parse_dpkg_owners(&out.stdout);
    (!packages.is_empty()).then_some(packages)
}

/// The packages in `dpkg -S` output (`pkg1, pkg2: /path`), architecture qualifiers dropped.
pub fn parse_dpkg_owners(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((owners, _path)) = line.split_once(": ") else {
            continue;
        };
        for owner in owners.split(',') {
            let name = owner.trim().split(':').next().unwrap_or_default();
            if !name.is_empty() && !name.starts_with("diversion") && !out.iter().any(|o| o == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// `rpm -qf --qf %{NAME}\n /usr/bin/nvidia-smi` → `nvidia-driver-cuda`.
fn rpm_owner(system: &dyn System, smi: &Path) -> Option<String> {
    let rpm = system.which("rpm")?;
    let args = [
        "-qf".to_string(),
        "--qf".to_string(),
        "%{NAME}\n".to_string(),
        smi.display().to_string(),
    ];
    let out = system.run(&rpm, &args, GUARD_TIMEOUT).ok()?;
    let name = out.stdout.lines().next()?.trim().to_string();
    (out.success() && !name.is_empty() && !name.contains(' ')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;

    #[test]
    fn the_windows_guard_is_the_exact_policy_command() {
        assert_eq!(
            Guard::windows().command_line(),
            r#"reg add "HKLM\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate" /v ExcludeWUDriversInQualityUpdate /t REG_DWORD /d 1 /f"#
        );
    }

    #[test]
    fn dpkg_owners_are_read_without_architecture() {
        assert_eq!(
            parse_dpkg_owners("nvidia-utils-565:amd64: /usr/bin/nvidia-smi\n"),
            ["nvidia-utils-565"]
        );
        assert_eq!(
            parse_dpkg_owners(
                "nvidia-utils-550-server, nvidia-compute-utils-550: /usr/bin/nvidia-smi\n"
            ),
            ["nvidia-utils-550-server", "nvidia-compute-utils-550"]
        );
    }

    #[test]
    fn a_packaged_driver_on_debian_gets_an_apt_mark_hold() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path
            .insert("nvidia-smi".into(), "/usr/bin/nvidia-smi".into());
        sys.on_path.insert("dpkg".into(), "/usr/bin/dpkg".into());
        sys.answer(
            "/usr/bin/dpkg",
            &["-S"],
            0,
            "nvidia-utils-565: /usr/bin/nvidia-smi\n",
        );
        let guard = for_host(&sys, Os::Linux);
        assert_eq!(guard.command_line(), "apt-mark hold nvidia-utils-565");
    }

    #[test]
    fn a_packaged_driver_on_fedora_gets_a_versionlock() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path
            .insert("nvidia-smi".into(), "/usr/bin/nvidia-smi".into());
        sys.on_path.insert("rpm".into(), "/usr/bin/rpm".into());
        sys.answer("/usr/bin/rpm", &["-qf"], 0, "nvidia-driver-cuda\n");
        let guard = for_host(&sys, Os::Linux);
        assert_eq!(
            guard.command_line(),
            "dnf versionlock add nvidia-driver-cuda"
        );
    }

    #[test]
    fn a_runfile_driver_has_nothing_to_hold_and_says_why() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path
            .insert("nvidia-smi".into(), "/usr/bin/nvidia-smi".into());
        sys.on_path.insert("dpkg".into(), "/usr/bin/dpkg".into());
        sys.answer("/usr/bin/dpkg", &["-S"], 1, "");
        let guard = for_host(&sys, Os::Linux);
        assert!(guard.argv.is_empty());
        assert!(
            guard.what.contains("belongs to no package"),
            "{}",
            guard.what
        );
        assert!(matches!(guard.apply(&sys), Err(GuardError::Nothing)));
    }
}
