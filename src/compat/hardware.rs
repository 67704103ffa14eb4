//! Two hardware tables of the release data: NVIDIA's PCI device IDs with each card's chip, name
//! and compute capability (`data/nvidia-pci.yaml`), so a card is known before any driver; and
//! the deepest paths inside pinned wheels (`data/wheel-paths.yaml`), from which the longest
//! Windows venv root that stays under MAX_PATH follows. Both are optional tables: a data set
//! packed before they existed still reads, and then knows no card and no wheel.

use serde::{Deserialize, Serialize};

/// `data/nvidia-pci.yaml`.
#[derive(Debug, Deserialize)]
pub(super) struct PciData {
    #[allow(dead_code)] // the set's date is `dataset`'s; kept so the table must carry its own
    read_on: String,
    devices: Vec<PciDevice>,
}

/// One NVIDIA PCI device: `2204` → GA102, GeForce RTX 3090, compute 8.6.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct PciDevice {
    /// The device ID, four lowercase hex digits.
    pub id: String,
    /// The chip code from pci.ids (`GA102GL`).
    pub chip: String,
    /// The card's name in pci.ids (`RTX A6000`, `A10G`, `GeForce RTX 3090`).
    pub name: String,
    /// Its compute capability, the key into the GPU generation rules.
    pub compute: String,
}

/// `data/wheel-paths.yaml`.
#[derive(Debug, Deserialize)]
pub(super) struct WheelPathData {
    #[allow(dead_code)] // the set's date is `dataset`'s; kept so the table must carry its own
    read_on: String,
    wheels: Vec<WheelPaths>,
}

/// The deepest file and folder inside one wheel, in characters below site-packages.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct WheelPaths {
    pub distribution: String,
    pub version: String,
    /// The local version of the index's build (`cu130`), `None` for the plain release.
    pub local: Option<String>,
    /// The longest file path as the wheel lists it.
    pub deepest_file: usize,
    /// The longest `__pycache__\*.cpython-3XX.pyc` pip's compile step writes (from a `.py`).
    pub deepest_pyc: usize,
    pub deepest_folder: usize,
    /// The deepest file itself, for the message.
    pub path: String,
}

impl PciData {
    pub(super) fn device(&self, id: &str) -> Option<&PciDevice> {
        let id = id.to_ascii_lowercase();
        self.devices.iter().find(|d| d.id == id)
    }
}

impl WheelPathData {
    /// The row for `distribution==version` built for `local` (`cu130`); without a row for that
    /// build, the plain release's.
    pub(super) fn wheel(
        &self,
        distribution: &str,
        version: &str,
        local: Option<&str>,
    ) -> Option<&WheelPaths> {
        let same = |w: &&WheelPaths| {
            w.distribution.eq_ignore_ascii_case(distribution) && w.version == version
        };
        let rows: Vec<&WheelPaths> = self.wheels.iter().filter(same).collect();
        rows.iter()
            .find(|w| w.local.as_deref() == local)
            .or_else(|| rows.iter().find(|w| w.local.is_none()))
            .copied()
    }
}
