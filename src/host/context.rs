//! The context a failure happened in, as `diagnose` needs it to pick a fix: inside a container
//! or not, under WSL or not, the running kernel against the kernels the NVIDIA module was built
//! for, Windows or Linux.
//!
//! Everything is read through [`System`]: `/.dockerenv`, `/run/.containerenv`, `/proc/1/cgroup`,
//! `nvidia-container-cli` on PATH; `/usr/lib/wsl`, `/dev/dxg`, the kernel name; the running
//! kernel and `/lib/modules/*/…/nvidia.ko*`; `/proc/driver/nvidia/version`. `STACKPIN_HOST_ROOT`
//! (read through the same trait, [`host_root`]) prefixes those paths, to inspect a mounted system
//! image, and lets the CLI tests give a fake one. This module only observes; what the facts mean for a
//! fix is left to `diagnose`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::os::Os;

use super::system::System;

/// The environment variable that roots the probed paths elsewhere than `/`.
pub const ROOT_VAR: &str = "STACKPIN_HOST_ROOT";

/// What the host says about where a failure happened.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct HostContext {
    /// `linux` or `windows`.
    pub os: Option<Os>,
    /// Why this looks like a container (`/.dockerenv exists`), when it does.
    pub container: Option<String>,
    /// Why this looks like WSL (`/dev/dxg exists`), when it does.
    pub wsl: Option<String>,
    /// The running kernel release.
    pub kernel: Option<String>,
    /// Kernels under /lib/modules that hold an NVIDIA module, oldest name first.
    pub nvidia_module_kernels: Vec<String>,
    /// The loaded NVIDIA kernel driver's version, when one is loaded.
    pub loaded_driver: Option<String>,
    /// `nvidia-container-cli` is on PATH (this host runs GPU containers).
    pub container_toolkit: bool,
}

impl HostContext {
    /// The running kernel has no NVIDIA module while another kernel has one: the kernel moved
    /// on (an upgrade) and the driver was not built for it.
    pub fn kernel_without_module(&self) -> bool {
        match &self.kernel {
            Some(k) => {
                !self.nvidia_module_kernels.is_empty() && !self.nvidia_module_kernels.contains(k)
            }
            None => false,
        }
    }

    /// One line for people: what was found.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(os) = self.os {
            parts.push(format!("{os:?}").to_lowercase());
        }
        if let Some(why) = &self.container {
            parts.push(format!("a container ({why})"));
        }
        if let Some(why) = &self.wsl {
            parts.push(format!("WSL ({why})"));
        }
        if let Some(k) = &self.kernel {
            parts.push(format!("kernel {k}"));
        }
        if self.kernel_without_module() {
            parts.push(format!(
                "NVIDIA module built only for {}",
                self.nvidia_module_kernels.join(", ")
            ));
        }
        if let Some(v) = &self.loaded_driver {
            parts.push(format!("driver {v} loaded"));
        }
        parts.join(", ")
    }
}

/// Reads the context; never fails, unknown facts stay empty.
pub fn probe(system: &dyn System) -> HostContext {
    let os = system.os();
    let container_toolkit = system.which("nvidia-container-cli").is_some();
    if os == Os::Windows {
        return HostContext {
            os: Some(os),
            container_toolkit,
            ..HostContext::default()
        };
    }
    let root = host_root(system);
    let at = |p: &str| under(root.as_deref(), p);
    let read = |p: &str| system.read_to_string(&at(p)).ok();
    let kernel = read("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    HostContext {
        os: Some(os),
        container: container(system, &at, read("/proc/1/cgroup"), system.env("container")),
        wsl: wsl(system, &at, kernel.as_deref()),
        nvidia_module_kernels: module_kernels(system, &at("/lib/modules")),
        loaded_driver: read("/proc/driver/nvidia/version").and_then(|v| driver_version(&v)),
        kernel,
        container_toolkit,
    }
}

/// The folder the Linux paths are read under: `STACKPIN_HOST_ROOT` when set (a mounted system
/// image, a test's fake root), else `None` for `/`. Honoured in release builds too: every reading
/// under it is a file read or a read-only command, so a lab can check its golden image before
/// it is deployed.
pub fn host_root(system: &dyn System) -> Option<PathBuf> {
    system
        .env(ROOT_VAR)
        .filter(|r| !r.is_empty() && r != "/")
        .map(PathBuf::from)
}

/// `path` (absolute, as on the host) under `root`.
pub fn under(root: Option<&Path>, path: &str) -> PathBuf {
    match root {
        Some(r) => r.join(path.trim_start_matches('/')),
        None => PathBuf::from(path),
    }
}

fn container(
    system: &dyn System,
    at: &dyn Fn(&str) -> PathBuf,
    cgroup: Option<String>,
    env: Option<String>,
) -> Option<String> {
    for marker in ["/.dockerenv", "/run/.containerenv"] {
        if system.exists(&at(marker)) {
            return Some(format!("{marker} exists"));
        }
    }
    let cgroup = cgroup.unwrap_or_default();
    let runtimes = ["docker", "kubepods", "containerd", "libpod", "lxc"];
    if let Some(name) = runtimes.iter().find(|r| cgroup.contains(*r)) {
        return Some(format!("/proc/1/cgroup names {name}"));
    }
    env.filter(|e| !e.is_empty())
        .map(|e| format!("container={e} is set"))
}

fn wsl(system: &dyn System, at: &dyn Fn(&str) -> PathBuf, kernel: Option<&str>) -> Option<String> {
    for marker in ["/dev/dxg", "/usr/lib/wsl"] {
        if system.exists(&at(marker)) {
            return Some(format!("{marker} exists"));
        }
    }
    kernel
        .filter(|k| k.to_ascii_lowercase().contains("microsoft"))
        .map(|k| format!("kernel {k}"))
}

/// Kernels under `/lib/modules` with an `nvidia.ko*` in one of the usual module folders.
fn module_kernels(system: &dyn System, modules: &Path) -> Vec<String> {
    const FOLDERS: &[&str] = &[
        "updates/dkms",
        "extra",
        "kernel/drivers/video",
        "updates",
        "kernel/drivers/video/nvidia",
    ];
    let mut kernels: Vec<String> = system
        .read_dir(modules)
        .unwrap_or_default()
        .into_iter()
        .filter(|dir| {
            FOLDERS.iter().any(|f| {
                let folder = dir.join(f);
                system.read_dir(&folder).is_ok_and(|files| {
                    files.iter().any(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("nvidia.ko"))
                    })
                })
            })
        })
        .filter_map(|dir| Some(dir.file_name()?.to_str()?.to_string()))
        .collect();
    kernels.sort();
    kernels
}

/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 …` → `550.54.15`.
fn driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("Kernel Module"))?;
    line.split_whitespace()
        .find(|w| {
            w.split('.').count() >= 2
                && w.split('.')
                    .all(|p| p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty())
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;

    /// What a Linux host shows that has only the file at `path`, holding `text`.
    fn linux_with(path: &str, text: &str) -> HostContext {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file(path, text);
        probe(&sys)
    }

    #[test]
    fn a_docker_container_is_named_by_its_marker_file_or_cgroup() {
        assert_eq!(
            linux_with("/.dockerenv", "").container.as_deref(),
            Some("/.dockerenv exists")
        );
        assert_eq!(
            linux_with("/proc/1/cgroup", "0::/kubepods/besteffort/pod1/abc\n")
                .container
                .as_deref(),
            Some("/proc/1/cgroup names kubepods")
        );
        let bare = FakeSystem::new(Os::Linux);
        assert_eq!(
            probe(&bare),
            HostContext {
                os: Some(Os::Linux),
                ..HostContext::default()
            }
        );
    }

    #[test]
    fn wsl_is_named_by_dxg_or_the_wsl_library_folder_or_the_kernel() {
        assert_eq!(
            linux_with("/dev/dxg", "").wsl.as_deref(),
            Some("/dev/dxg exists")
        );
        let kernel = linux_with(
            "/proc/sys/kernel/osrelease",
            "5.15.153.1-microsoft-standard-WSL2\n",
        );
        assert!(kernel.wsl.is_some_and(|w| w.contains("microsoft")));
    }

    #[test]
    fn a_kernel_newer_than_the_built_module_is_seen() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/proc/sys/kernel/osrelease", "6.8.0-50-generic\n")
            .file(
                "/lib/modules/6.5.0-41-generic/updates/dkms/nvidia.ko.zst",
                "",
            )
            .dir("/lib/modules/6.8.0-50-generic/kernel");
        let ctx = probe(&sys);
        assert_eq!(ctx.nvidia_module_kernels, vec!["6.5.0-41-generic"]);
        assert!(ctx.kernel_without_module());
        assert!(
            ctx.describe()
                .contains("NVIDIA module built only for 6.5.0-41-generic")
        );
        sys.file("/lib/modules/6.8.0-50-generic/updates/dkms/nvidia.ko", "");
        assert!(!probe(&sys).kernel_without_module());
    }

    #[test]
    fn paths_are_read_under_the_host_root_when_it_is_set() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.env.insert(ROOT_VAR.into(), "/img".into());
        sys.file("/img/.dockerenv", "").file(
            "/img/proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n",
        );
        let ctx = probe(&sys);
        assert!(ctx.container.is_some());
        assert_eq!(ctx.loaded_driver.as_deref(), Some("550.54.15"));
    }

    #[test]
    fn windows_is_named_without_reading_linux_paths() {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.file("/.dockerenv", "");
        let ctx = probe(&sys);
        assert_eq!(ctx.os, Some(Os::Windows));
        assert_eq!(ctx.container, None);
    }
}
