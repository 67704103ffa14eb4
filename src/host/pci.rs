//! NVIDIA cards found by their PCI device ID, before any NVIDIA driver is installed: on Windows
//! from `Win32_PnPSignedDriver`'s `HardWareID` (`PCI\VEN_10DE&DEV_2204&SUBSYS_…`), which the
//! card carries under Microsoft's Basic Display Adapter too; on Linux from
//! `/sys/bus/pci/devices/*/{vendor,device,class}`. The ID goes through the release data's PCI
//! table (`compat::pci_device`) to a name and a compute capability, so the GPU generation rules
//! can refuse a stack before the driver, when `nvidia-smi` does not exist yet.
//!
//! This module only reads and looks up; refusing is the caller's (`install::preflight`).

use std::path::Path;
use std::time::Duration;

use super::System;
use crate::compat::{self, PciDevice};
use crate::os::Os;

/// NVIDIA's PCI vendor ID.
pub const NVIDIA_VENDOR: &str = "10de";

/// Every display-class device's hardware IDs, one per line (the most specific first).
pub const WINDOWS_QUERY: &str = "Get-CimInstance Win32_PnPSignedDriver -Filter \"DeviceClass='DISPLAY'\" | \
     ForEach-Object { $_.HardWareID }";

/// PowerShell's first start on a cold machine is slow.
const POWERSHELL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where Linux lists PCI devices.
const SYSFS_PCI: &str = "/sys/bus/pci/devices";

/// One NVIDIA card on the bus: its device ID and, when the data knows it, what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciGpu {
    /// Four lowercase hex digits, `2204`.
    pub device_id: String,
    pub known: Option<&'static PciDevice>,
}

impl PciGpu {
    /// `NVIDIA GeForce RTX 3090 (PCI 10de:2204)`, or the bare ID when unknown.
    pub fn label(&self) -> String {
        match self.known {
            Some(d) => format!("NVIDIA {} (PCI {NVIDIA_VENDOR}:{})", d.name, self.device_id),
            None => format!("an NVIDIA card (PCI {NVIDIA_VENDOR}:{})", self.device_id),
        }
    }
}

/// The NVIDIA device IDs in hardware-ID text (`PCI\VEN_10DE&DEV_2204…`), each once, in order.
pub fn device_ids_in(text: &str) -> Vec<String> {
    let upper = text.to_ascii_uppercase();
    let mut out: Vec<String> = Vec::new();
    for (at, _) in upper.match_indices("VEN_10DE&DEV_") {
        let id = &upper[at + "VEN_10DE&DEV_".len()..];
        let id: String = id.chars().take(4).collect();
        let id = id.to_ascii_lowercase();
        if id.len() == 4 && id.chars().all(|c| c.is_ascii_hexdigit()) && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The NVIDIA cards on this host's PCI bus, looked up in the release data.
pub fn probe(system: &dyn System) -> Vec<PciGpu> {
    let ids = match system.os() {
        Os::Windows => windows_ids(system),
        Os::Linux => linux_ids(system),
    };
    ids.into_iter()
        .map(|device_id| PciGpu {
            known: compat::pci_device(&device_id),
            device_id,
        })
        .collect()
}

fn windows_ids(system: &dyn System) -> Vec<String> {
    let Some(program) = system.which("powershell") else {
        return Vec::new();
    };
    let args: Vec<String> = ["-NoProfile", "-NonInteractive", "-Command", WINDOWS_QUERY]
        .into_iter()
        .map(String::from)
        .collect();
    match system.run(&program, &args, POWERSHELL_TIMEOUT) {
        Ok(out) if out.success() => device_ids_in(&out.stdout),
        _ => Vec::new(),
    }
}

/// NVIDIA display controllers (class 0x03xxxx: VGA and 3D) in sysfs.
fn linux_ids(system: &dyn System) -> Vec<String> {
    let Ok(devices) = system.read_dir(Path::new(SYSFS_PCI)) else {
        return Vec::new();
    };
    let read = |dir: &Path, name: &str| {
        system
            .read_to_string(&dir.join(name))
            .map(|t| t.trim().trim_start_matches("0x").to_ascii_lowercase())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for dir in devices {
        if read(&dir, "vendor") != NVIDIA_VENDOR || !read(&dir, "class").starts_with("03") {
            continue;
        }
        let id = read(&dir, "device");
        if id.len() == 4 && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake::FakeSystem;

    #[test]
    fn hardware_ids_under_the_basic_display_adapter_give_the_device() {
        let text = "PCI\\VEN_10DE&DEV_1B80&SUBSYS_119E10DE&REV_A1\r\nPCI\\VEN_10DE&DEV_1B80&SUBSYS_119E10DE\r\nPCI\\VEN_10DE&DEV_1B80&CC_030000\r\nPCI\\VEN_1414&DEV_008E\r\n";
        assert_eq!(device_ids_in(text), ["1b80"]);
        assert!(device_ids_in("PCI\\VEN_8086&DEV_3E92").is_empty());
    }

    #[test]
    fn windows_asks_powershell_for_the_display_devices() {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.on_path
            .insert("powershell".into(), "C:/windows/powershell.exe".into());
        sys.answer(
            "C:/windows/powershell.exe",
            &["-NoProfile"],
            0,
            "PCI\\VEN_10DE&DEV_2237&SUBSYS_152F10DE&REV_A1\r\n",
        );
        let gpus = probe(&sys);
        assert_eq!(gpus.len(), 1);
        assert_eq!(gpus[0].known.map(|d| d.name.as_str()), Some("A10G"));
        assert_eq!(gpus[0].label(), "NVIDIA A10G (PCI 10de:2237)");
    }

    #[test]
    fn linux_reads_the_display_class_devices_in_sysfs() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
            .file("/sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n")
            .file("/sys/bus/pci/devices/0000:01:00.0/device", "0x1e07\n")
            .file("/sys/bus/pci/devices/0000:01:00.1/vendor", "0x10de\n")
            .file("/sys/bus/pci/devices/0000:01:00.1/class", "0x040300\n")
            .file("/sys/bus/pci/devices/0000:01:00.1/device", "0x10f7\n");
        let gpus = probe(&sys);
        assert_eq!(gpus.len(), 1, "the audio function is not a GPU: {gpus:?}");
        assert_eq!(gpus[0].known.map(|d| d.compute.as_str()), Some("7.5"));
    }
}
