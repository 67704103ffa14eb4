//! Why nvidia-smi fails on Linux after an upgrade: the running kernel has no NVIDIA module (a new
//! kernel booted and DKMS did not rebuild it), or the user-space library was upgraded under a
//! loaded module (driver/library mismatch until a reboot).
//!
//! Reads `/lib/modules/<kernel>`, `modinfo nvidia` and `dkms status` through [`System`]; what the
//! driver's state is comes from `host::nvidia_smi`, and what to do about it is the caller's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::host::System;

const QUICK: Duration = Duration::from_secs(15);

/// How deep to look for `nvidia*.ko` under `/lib/modules/<kernel>` (`updates/dkms/nvidia.ko.zst`
/// is three levels down; distribution packages use `kernel/drivers/video`, four).
const MAX_DEPTH: usize = 5;

/// What the module probes found for the running kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleFindings {
    pub kernel: String,
    /// `nvidia*.ko*` files under `/lib/modules/<kernel>`; `None` when the folder was unreadable.
    pub module_files: Option<Vec<PathBuf>>,
    /// `modinfo -F version nvidia` for the running kernel: `Some(version)`, or `None` when it
    /// failed or is not installed.
    pub modinfo_version: Option<String>,
    /// Kernels `dkms status` says have an NVIDIA module installed.
    pub dkms_kernels: Vec<String>,
}

impl ModuleFindings {
    /// True when every source that answered says there is no module for the running kernel.
    pub fn no_module_for_running_kernel(&self) -> bool {
        self.module_files.as_ref().is_some_and(Vec::is_empty) && self.modinfo_version.is_none()
    }

    /// The finding in one sentence with its fix, or `None` when a module is there.
    pub fn explain(&self) -> Option<String> {
        if !self.no_module_for_running_kernel() {
            return None;
        }
        let built_for = if self.dkms_kernels.is_empty() {
            String::new()
        } else {
            format!(" (dkms built it for {})", self.dkms_kernels.join(", "))
        };
        Some(format!(
            "the running kernel {} has no NVIDIA module{built_for}: DKMS did not rebuild it after \
             the kernel upgrade; run `sudo dkms autoinstall -k {}` (install the kernel headers \
             first) and reboot, or `stackpin repair` to reinstall the driver from the archive",
            self.kernel, self.kernel
        ))
    }
}

/// Looks for the running kernel's NVIDIA module everywhere it can be.
pub fn probe(system: &dyn System, kernel: &str) -> ModuleFindings {
    let dir = Path::new("/lib/modules").join(kernel);
    let module_files = system.is_dir(&dir).then(|| {
        let mut found = Vec::new();
        find_modules(system, &dir, MAX_DEPTH, &mut found);
        found
    });
    let modinfo_version = system.which("modinfo").and_then(|modinfo| {
        let args = ["-k", kernel, "-F", "version", "nvidia"].map(String::from);
        let out = system.run(&modinfo, &args, QUICK).ok()?;
        let v = out.stdout.trim().to_string();
        (out.success() && !v.is_empty()).then_some(v)
    });
    let dkms_kernels = system
        .which("dkms")
        .and_then(|dkms| system.run(&dkms, &["status".to_string()], QUICK).ok())
        .map(|out| dkms_installed_kernels(&out.stdout))
        .unwrap_or_default();
    ModuleFindings {
        kernel: kernel.to_string(),
        module_files,
        modinfo_version,
        dkms_kernels,
    }
}

fn find_modules(system: &dyn System, dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = system.read_dir(dir) else {
        return;
    };
    for entry in entries {
        let name = entry
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("nvidia") && name.contains(".ko") {
            found.push(entry);
        } else if depth > 0 && system.is_dir(&entry) {
            find_modules(system, &entry, depth - 1, found);
        }
    }
}

/// The kernels `dkms status` lists an installed NVIDIA module for. Both formats are read:
/// `nvidia/565.57.01, 6.8.0-49-generic, x86_64: installed` (dkms 3) and
/// `nvidia, 535.183.01, 5.15.0-119-generic, x86_64: installed` (dkms 2).
pub fn dkms_installed_kernels(status: &str) -> Vec<String> {
    let mut kernels = Vec::new();
    for line in status.lines() {
        let Some((head, state)) = line.rsplit_once(':') else {
            continue;
        };
        if !line.trim_start().starts_with("nvidia") || !state.trim().starts_with("installed") {
            continue;
        }
        let fields: Vec<&str> = head.split(',').map(str::trim).collect();
        // The kernel is the field before the architecture, in both formats.
        if fields.len() >= 3 {
            kernels.push(fields[fields.len() - 2].to_string());
        }
    }
    kernels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;
    use crate::os::Os;

    #[test]
    fn dkms_status_of_both_generations_names_the_kernels() {
        let status = "nvidia/565.57.01, 6.8.0-49-generic, x86_64: installed\n\
                      nvidia/565.57.01, 6.8.0-51-generic, x86_64: built\n\
                      nvidia, 535.183.01, 5.15.0-119-generic, x86_64: installed\n\
                      virtualbox/7.0.20, 6.8.0-49-generic, x86_64: installed\n";
        assert_eq!(
            dkms_installed_kernels(status),
            ["6.8.0-49-generic", "5.15.0-119-generic"]
        );
    }

    #[test]
    fn a_new_kernel_without_a_module_is_explained_with_the_kernels_dkms_built_for() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file(
            "/lib/modules/6.8.0-51-generic/kernel/drivers/net/e1000e.ko.zst",
            "",
        );
        sys.on_path.insert("dkms".into(), "/usr/sbin/dkms".into());
        sys.answer(
            "/usr/sbin/dkms",
            &["status"],
            0,
            "nvidia/565.57.01, 6.8.0-49-generic, x86_64: installed\n",
        );
        let found = probe(&sys, "6.8.0-51-generic");
        assert_eq!(found.module_files, Some(vec![]));
        let text = found.explain().expect("no module");
        assert!(
            text.contains("6.8.0-51-generic has no NVIDIA module"),
            "{text}"
        );
        assert!(
            text.contains("dkms built it for 6.8.0-49-generic"),
            "{text}"
        );
    }

    #[test]
    fn a_dkms_built_module_counts_as_present() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file(
            "/lib/modules/6.8.0-49-generic/updates/dkms/nvidia.ko.zst",
            "",
        );
        let found = probe(&sys, "6.8.0-49-generic");
        assert_eq!(found.module_files.as_ref().map(Vec::len), Some(1));
        assert_eq!(found.explain(), None);
    }

    #[test]
    fn an_unreadable_modules_folder_says_nothing_rather_than_guess() {
        let sys = FakeSystem::new(Os::Linux);
        assert_eq!(probe(&sys, "6.8.0-49-generic").explain(), None);
    }
}
