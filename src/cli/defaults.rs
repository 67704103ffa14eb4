//! Defaults that depend on who runs stackpin, and the test-only hooks that bend them.
//!
//! The archive's default is a fixed per-machine folder for root/Administrator
//! (`/var/lib/stackpin`, `%ProgramData%\stackpin`), so `sudo stackpin install` finds what
//! `sudo stackpin fetch` archived whatever folder it runs in; for anyone else it is
//! `./installers`. `--archive` and `STACKPIN_ARCHIVE` always win.
//!
//! Test hooks exist only in debug builds (`cargo build`, `cargo test`, scripts/test-fleet.sh and
//! scripts/test-windows.sh all build that profile); a release build ignores them:
//! - `STACKPIN_SKIP_ADMIN_CHECK` (any value): install and repair run without root/Administrator.
//! - `STACKPIN_TEST_ADMIN=0|1`: the archive default as a non-admin (`0`) or admin (`1`) would get
//!   it, so tests that run as root never write into `/var/lib/stackpin`.
//! - `STACKPIN_TEST_BOOT_ID=ID`: the boot `install --reboot` believes the machine is on, so a
//!   test can play a reboot that really happened (or one that did not) without rebooting.

use std::path::PathBuf;

use crate::host::{RealSystem, System};
use crate::os::Os;

/// The archive folder for the user running this, when neither `--archive` nor
/// `STACKPIN_ARCHIVE` names one.
pub fn default_archive() -> PathBuf {
    let system = RealSystem;
    let admin =
        test_admin().unwrap_or_else(|| crate::host::os_info::probe(&system).admin.unwrap_or(false));
    archive_for(admin, system.os(), system.env("ProgramData"))
}

/// The per-machine folder for an admin, `./installers` otherwise.
fn archive_for(admin: bool, os: Os, program_data: Option<String>) -> PathBuf {
    if !admin {
        return PathBuf::from("installers");
    }
    match os {
        Os::Linux => PathBuf::from("/var/lib/stackpin"),
        Os::Windows => PathBuf::from(program_data.unwrap_or_else(|| r"C:\ProgramData".to_string()))
            .join("stackpin"),
    }
}

/// The machine-wide install lock: `STACKPIN_LOCK_DIR/machine.lock` when set, else a folder
/// only root or Administrator writes (`/run/stackpin`, `%ProgramData%\stackpin`) for them, and
/// the user's own temporary folder for anyone else (who installs no driver).
pub fn machine_lock() -> PathBuf {
    let system = RealSystem;
    let dir = match system.env("STACKPIN_LOCK_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let admin = crate::host::os_info::probe(&system).admin.unwrap_or(false);
            lock_dir_for(admin, system.os(), system.env("ProgramData"))
        }
    };
    dir.join("machine.lock")
}

fn lock_dir_for(admin: bool, os: Os, program_data: Option<String>) -> PathBuf {
    match (admin, os) {
        (true, Os::Linux) => PathBuf::from("/run/stackpin"),
        (true, Os::Windows) => {
            PathBuf::from(program_data.unwrap_or_else(|| r"C:\ProgramData".to_string()))
                .join("stackpin")
        }
        (false, _) => std::env::temp_dir().join(format!(
            "stackpin-{}",
            std::env::var("USER")
                .or_else(|_| std::env::var("USERNAME"))
                .unwrap_or_else(|_| "user".into())
        )),
    }
}

/// The boot the machine is on (`STACKPIN_TEST_BOOT_ID` in a debug build), `None` when unknown.
pub fn boot_id() -> Option<String> {
    if cfg!(debug_assertions)
        && let Ok(id) = std::env::var("STACKPIN_TEST_BOOT_ID")
    {
        return Some(id);
    }
    crate::host::boot::boot_id(&RealSystem)
}

/// Whether install and repair skip the root/Administrator check: only ever in debug builds.
pub fn skip_admin_check() -> bool {
    cfg!(debug_assertions) && std::env::var_os("STACKPIN_SKIP_ADMIN_CHECK").is_some()
}

/// `STACKPIN_TEST_ADMIN` in a debug build; `None` (ask the OS) in a release build.
fn test_admin() -> Option<bool> {
    if !cfg!(debug_assertions) {
        return None;
    }
    match std::env::var("STACKPIN_TEST_ADMIN").ok()?.as_str() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_gets_installers_in_the_current_folder() {
        assert_eq!(
            archive_for(false, Os::Linux, None),
            PathBuf::from("installers")
        );
        assert_eq!(
            archive_for(false, Os::Windows, Some(r"C:\ProgramData".into())),
            PathBuf::from("installers")
        );
    }

    #[test]
    fn root_gets_var_lib_stackpin() {
        assert_eq!(
            archive_for(true, Os::Linux, None),
            PathBuf::from("/var/lib/stackpin")
        );
    }

    #[test]
    fn administrator_gets_program_data_stackpin() {
        assert_eq!(
            archive_for(true, Os::Windows, Some(r"D:\Data".into())),
            PathBuf::from(r"D:\Data").join("stackpin")
        );
        assert_eq!(
            archive_for(true, Os::Windows, None),
            PathBuf::from(r"C:\ProgramData").join("stackpin")
        );
    }
}
