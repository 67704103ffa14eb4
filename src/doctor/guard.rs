//! The guards that keep a repaired driver from being replaced again: on Windows two policies
//! (drivers left out of quality updates, and no driver search on Windows Update when a device is
//! set up again); on Linux a package hold, when the driver came from
//! packages (a `.run` install belongs to no package manager, so there is nothing to hold).
//!
//! This module decides which command fits the host and runs it on request; printing it and
//! asking is the CLI's job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::host::System;
use crate::os::Os;

const GUARD_TIMEOUT: Duration = Duration::from_secs(120);

// The two Windows policies live beside the other Windows installer facts, where `install`
// applies them before the driver step too.
pub use crate::windows_installers::{WINDOWS_DRIVER_SEARCH, WINDOWS_POLICY};

/// What the two Windows policies cover, and what they leave open, for doctor and repair.
pub const WINDOWS_COVERAGE: &str = "keeps drivers out of Windows Update's quality updates \
    (ExcludeWUDriversInQualityUpdate=1) and stops Windows from fetching a driver from Windows \
    Update when it sets the card up again (DriverSearching\\SearchOrderConfig=0); it does not \
    stop a feature update from migrating or replacing the driver, nor a driver installed by hand \
    or by the vendor's tools: doctor still checks the running driver";

/// A guard for this host: the command that applies it, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guard {
    /// What the guard does, in words.
    pub what: String,
    /// The command (argv) that applies it; empty when there is nothing to apply.
    pub argv: Vec<String>,
    /// Further commands applied after `argv`, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<Vec<String>>,
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

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
impl crate::exit::ExitStatus for GuardError {
    fn exit(&self) -> crate::exit::Exit {
        // The command was asked for (`--apply-guard`) and the host's own tool did not do it.
        crate::exit::Exit::External
    }
}

impl Guard {
    /// The Windows guard: both policies.
    pub fn windows() -> Guard {
        Guard {
            what: WINDOWS_COVERAGE.to_string(),
            argv: WINDOWS_POLICY.iter().map(|s| s.to_string()).collect(),
            more: vec![
                WINDOWS_DRIVER_SEARCH
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            ],
        }
    }

    /// The commands as a user types them (quoted where needed), one per line.
    pub fn command_line(&self) -> String {
        std::iter::once(&self.argv)
            .chain(&self.more)
            .map(|argv| quoted(argv))
            .collect::<Vec<_>>()
            .join("\n  ")
    }

    /// Runs the guard's commands, stopping at the first that fails.
    pub fn apply(&self, system: &dyn System) -> Result<(), GuardError> {
        if self.argv.is_empty() {
            return Err(GuardError::Nothing);
        }
        for argv in std::iter::once(&self.argv).chain(&self.more) {
            run_one(system, argv)?;
        }
        Ok(())
    }
}

/// One command as a user types it.
fn quoted(argv: &[String]) -> String {
    argv.iter()
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

fn run_one(system: &dyn System, argv: &[String]) -> Result<(), GuardError> {
    let (program, args) = argv.split_first().ok_or(GuardError::Nothing)?;
    let path = system.which(program).ok_or_else(|| GuardError::NotFound {
        program: program.clone(),
    })?;
    let out = system
        .run(&path, args, GUARD_TIMEOUT)
        .map_err(|e| GuardError::Failed {
            command: quoted(argv),
            code: None,
            output: e.to_string(),
        })?;
    if out.success() {
        Ok(())
    } else {
        Err(GuardError::Failed {
            command: quoted(argv),
            code: out.code,
            output: out.combined().trim().to_string(),
        })
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
            more: Vec::new(),
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
            more: Vec::new(),
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
            more: Vec::new(),
        };
    }
    Guard {
        what: format!(
            "{} belongs to no package (the .run installer put it there): no package manager \
             will replace it; a kernel upgrade can still leave it without a module (DKMS)",
            smi.display()
        ),
        argv: Vec::new(),
        more: Vec::new(),
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
    fn the_windows_guard_sets_both_policies_and_says_what_they_cover() {
        let guard = Guard::windows();
        assert_eq!(
            guard.command_line(),
            "reg add \"HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\" /v ExcludeWUDriversInQualityUpdate /t REG_DWORD /d 1 /f\n  \
             reg add \"HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\DriverSearching\" /v SearchOrderConfig /t REG_DWORD /d 0 /f"
        );
        assert!(guard.what.contains("quality updates"), "{}", guard.what);
        assert!(guard.what.contains("SearchOrderConfig=0"), "{}", guard.what);
        assert!(guard.what.contains("does not"), "{}", guard.what);
    }

    #[test]
    fn applying_the_windows_guard_runs_the_second_policy_too() {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.on_path
            .insert("reg".into(), "C:/Windows/System32/reg.exe".into());
        sys.answer(
            "C:/Windows/System32/reg.exe",
            &["add", WINDOWS_POLICY[2]],
            0,
            "",
        )
        .answer(
            "C:/Windows/System32/reg.exe",
            &["add", WINDOWS_DRIVER_SEARCH[2]],
            1,
            "",
        );
        let err = Guard::windows().apply(&sys).expect_err("the second fails");
        assert!(
            matches!(&err, GuardError::Failed { command, .. } if command.contains("SearchOrderConfig")),
            "{err}"
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
    fn a_guard_that_could_not_be_applied_is_an_external_failure() {
        use crate::exit::{Exit, ExitStatus};
        let failed = GuardError::Failed {
            command: "apt-mark hold nvidia-utils-565".into(),
            code: Some(100),
            output: String::new(),
        };
        assert_eq!(failed.exit(), Exit::External);
        assert_eq!(GuardError::Nothing.exit(), Exit::External);
    }

    /// A Linux host with nvidia-smi in /usr/bin and the package tool `tool` beside it.
    fn packaged_linux(tool: &str) -> FakeSystem {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path
            .insert("nvidia-smi".into(), "/usr/bin/nvidia-smi".into());
        sys.on_path
            .insert(tool.into(), format!("/usr/bin/{tool}").into());
        sys
    }

    #[test]
    fn a_packaged_driver_on_debian_gets_an_apt_mark_hold() {
        let mut sys = packaged_linux("dpkg");
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
        let mut sys = packaged_linux("rpm");
        sys.answer("/usr/bin/rpm", &["-qf"], 0, "nvidia-driver-cuda\n");
        let guard = for_host(&sys, Os::Linux);
        assert_eq!(
            guard.command_line(),
            "dnf versionlock add nvidia-driver-cuda"
        );
    }

    #[test]
    fn a_runfile_driver_has_nothing_to_hold_and_says_why() {
        let mut sys = packaged_linux("dpkg");
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
