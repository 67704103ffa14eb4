//! Release-note knowledge: each CUDA toolkit's minimum driver per OS, each library release's
//! CUDA lines, Python range, wheel index and GPU architectures, the drivers stackpin knows and
//! where NVIDIA publishes them, and the GPU generations (which driver branches drive a compute
//! capability, which toolkits compile for it). The tables live in `data/*.yaml` with their
//! sources and the date they were read; `dataset` says which set of them is in use (built in, or
//! an updated one) and keeps what this module's [`READER`] parsed of it, so a run parses them once.
//! This module answers questions. It touches no files and runs nothing, so every rule tests as a
//! plain function.

mod hardware;
pub use hardware::{PciDevice, WheelPaths};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::dataset::{DataSet, ReadTables, Reader, TableError};
use crate::library::LibraryTable;
use crate::os::Os;
use crate::version::Version;

/// An OS-keyed pair, as the release tables print them.
#[derive(Debug, Clone, Deserialize)]
struct PerOs<T> {
    linux: T,
    windows: T,
}

impl<T> PerOs<T> {
    fn get(&self, os: Os) -> &T {
        match os {
            Os::Linux => &self.linux,
            Os::Windows => &self.windows,
        }
    }
}

#[derive(Debug, Deserialize)]
struct CudaData {
    #[allow(dead_code)] // the set's date is `dataset`'s; kept so the table must carry its own
    read_on: String,
    toolkits: Vec<ToolkitRow>,
    branches: BTreeMap<String, String>,
    minor_version_floors: Vec<FloorRow>,
    installers: Vec<InstallerRow>,
}

/// One row of NVIDIA's "CUDA Toolkit and Corresponding Driver Versions" table.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolkitRow {
    pub version: Version,
    pub label: String,
    pub linux: Version,
    /// `None` where the table prints "N/A" (no Windows driver bundled).
    pub windows: Option<Version>,
    /// The source's grade when it is not NVIDIA's table itself (`B`, `C`; see data/cuda.yaml).
    #[serde(default)]
    pub grade: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FloorRow {
    major: u64,
    linux: Version,
    windows: Version,
}

#[derive(Debug, Deserialize)]
struct InstallerRow {
    version: Version,
    linux_driver: Version,
    windows_driver: Option<Version>,
}

#[derive(Debug, Deserialize)]
struct PytorchData {
    read_on: String,
    index_url_pattern: String,
    releases: Vec<PytorchRow>,
}

#[derive(Debug, Deserialize)]
struct PytorchRow {
    release: Version,
    versions: Vec<Version>,
    /// torch version → the torchvision release published for it (a table, never a formula).
    torchvision: BTreeMap<String, Version>,
    python: PythonRange,
    stable_cuda: Vec<Version>,
    experimental_cuda: Vec<Version>,
    wheel_tags: Vec<String>,
    #[serde(default)]
    cudnn: BTreeMap<String, String>,
    #[serde(default)]
    archs: BTreeMap<String, Vec<String>>,
}

/// The Python versions a library release supports, inclusive.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct PythonRange {
    pub min: Version,
    pub max: Version,
    /// Where the package index bounds the range: the wheel tags it has (`cp310-cp314`), read by
    /// `scripts/refresh-data.py`; shown when a Python outside the range is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheels: Option<String>,
}

impl PythonRange {
    /// True when `python` (`3.11` or `3.11.7`) is within the range by major.minor.
    pub fn contains(&self, python: &Version) -> bool {
        let line = Version::parse(&python.major_minor()).unwrap_or_else(|_| python.clone());
        line >= self.min && line <= self.max
    }
}

#[derive(Debug, Deserialize)]
struct TensorflowData {
    read_on: String,
    linux: Vec<TensorflowRow>,
    windows: Vec<TensorflowRow>,
}

#[derive(Debug, Clone, Deserialize)]
struct TensorflowRow {
    version: Version,
    python: PythonRange,
    cudnn: String,
    cuda: Version,
    /// The pip distribution holding the GPU build when it is not `tensorflow` (`tensorflow-gpu`
    /// before 2.1, whose `tensorflow` wheels are the CPU build).
    #[serde(default)]
    distribution: Option<String>,
}

/// `data/onnxruntime.yaml`: the deployment runtime's releases (see the file for sources).
#[derive(Debug, Deserialize)]
struct OnnxRuntimeData {
    read_on: String,
    releases: Vec<OnnxRuntimeRow>,
}

#[derive(Debug, Deserialize)]
struct OnnxRuntimeRow {
    release: Version,
    versions: Vec<Version>,
    python: PythonRange,
    /// Every toolkit line the build runs on (a 12.x build runs on any 12.x).
    cuda: Vec<Version>,
    /// The cuDNN major the build needs (`9.x`).
    cudnn: String,
    /// Packages the bundled inference script needs beside the runtime.
    #[serde(default)]
    extras: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct DriverData {
    read_on: String,
    url_patterns: UrlPatterns,
    linux: Vec<DriverRow>,
    windows: Vec<DriverRow>,
}

#[derive(Debug, Deserialize)]
struct UrlPatterns {
    desktop: PerOs<String>,
    #[serde(rename = "data-center")]
    data_center: PerOs<String>,
    /// NVIDIA's RTX Enterprise ("Quadro certified") pages.
    workstation: PerOs<String>,
}

/// Where NVIDIA publishes a driver release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriverChannel {
    /// The GeForce/RTX driver pages.
    #[default]
    Desktop,
    /// The data-center ("Tesla") driver pages.
    DataCenter,
    /// The RTX Enterprise / Quadro pages (RTX A4000, RTX 4000 Ada): on Windows in NVIDIA's
    /// `Quadro_Certified/` folder, with numbers of their own or shared with GeForce releases.
    Workstation,
    /// Only inside a CUDA toolkit installer: there is no standalone download.
    Bundled,
}

impl fmt::Display for DriverChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DriverChannel::Desktop => "desktop",
            DriverChannel::DataCenter => "data-center",
            DriverChannel::Workstation => "RTX workstation",
            DriverChannel::Bundled => "bundled with a CUDA installer only",
        })
    }
}

/// A driver release stackpin knows exists, with the evidence for it.
#[derive(Debug, Clone, Deserialize)]
pub struct DriverRow {
    pub version: Version,
    #[serde(default)]
    pub channel: DriverChannel,
    pub evidence: String,
    #[serde(default)]
    pub last_for: Vec<String>,
}

/// `data/gpus.yaml`: GPU generations by compute capability.
#[derive(Debug, Deserialize)]
struct GpuData {
    read_on: String,
    generations: Vec<GpuGeneration>,
}

/// One compute capability: its architecture's name and the driver branches and CUDA releases that
/// support it (see data/gpus.yaml for the sources).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct GpuGeneration {
    /// The compute capability, `6.1`.
    pub compute: String,
    /// The architecture, `Pascal`.
    pub name: String,
    pub first_driver_branch: u64,
    pub first_cuda: Version,
    /// `None` while NVIDIA's current drivers still support it.
    pub last_driver_branch: Option<u64>,
    /// `None` while the current toolkits still compile for it.
    pub last_cuda: Option<Version>,
}

/// `data/tools.yaml`: the tools archived beside a stack's layers, pinned (see the file).
#[derive(Debug, Deserialize)]
struct ToolsData {
    #[allow(dead_code)] // the set's date is `dataset`'s; kept so the table must carry its own
    read_on: String,
    uv: UvPin,
}

/// uv's release as the data pins it: the installer `pin` writes for the library layer.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct UvPin {
    pub version: Version,
    /// `linux-x86_64` / `windows-x86_64` → the wheel for that platform.
    wheels: BTreeMap<String, UvWheel>,
}

/// One pinned wheel (uv's, a CUDA component's): its file name on the index and its published
/// sha256.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct UvWheel {
    pub file: String,
    pub sha256: String,
}

impl UvPin {
    /// The pinned wheel for `os` (x86_64, like every other file stackpin pins).
    pub fn wheel(&self, os: Os) -> Option<&UvWheel> {
        self.wheels.get(platform_key(os))
    }
}

/// uv's release pinned in the data set in use; `None` for a set made before the pin existed
/// (then `fetch` takes uv from the library's indexes, as such sets expect).
pub fn uv_pin() -> Option<&'static UvPin> {
    knowledge().tools.as_ref().map(|t| &t.uv)
}

/// `data/checksums.yaml`: the checksums published for installer URLs the data knows, each with
/// where it was read (see the file).
#[derive(Debug, Deserialize)]
struct ChecksumsData {
    #[allow(dead_code)] // the set's date is `dataset`'s; kept so the table must carry its own
    read_on: String,
    #[allow(dead_code)]
    #[serde(default)]
    sources: Vec<String>,
    published: Vec<PublishedChecksum>,
}

/// One installer's published sha256 and who published it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct PublishedChecksum {
    pub url: String,
    pub sha256: String,
    /// Where the value was read (`nixpkgs cudatoolkit/releases.nix@113ef7df`).
    pub source: String,
}

impl ChecksumsData {
    /// Every value must be a sha256 with a source: a set with a malformed one is refused by
    /// `data pack` and `data update` rather than failing a download later.
    fn checked(self) -> Result<Self, TableError> {
        for row in &self.published {
            let hex = row.sha256.len() == 64 && row.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex || row.source.trim().is_empty() || row.url.trim().is_empty() {
                return Err(TableError::Malformed {
                    name: "checksums.yaml".into(),
                    reason: format!(
                        "published checksum for `{}`: needs a url, a sha256 of 64 hexadecimal characters and a source",
                        row.url
                    ),
                });
            }
        }
        Ok(self)
    }
}

/// The checksum published for `url` in the data set in use, if one was found.
pub fn published_checksum(url: &str) -> Option<&'static PublishedChecksum> {
    knowledge()
        .checksums
        .as_ref()?
        .published
        .iter()
        .find(|p| p.url == url)
}

/// `data/cuda-wheels.yaml`: each CUDA release's component wheels as NVIDIA's `cuda-toolkit`
/// meta-package pins them (see the file for how they were read).
#[derive(Debug, Deserialize)]
struct CudaWheelsData {
    #[allow(dead_code)] // the set's date is `dataset`'s; kept so the table must carry its own
    read_on: String,
    #[allow(dead_code)]
    #[serde(default)]
    sources: Vec<String>,
    /// CUDA lines whose wheels carry no `nvcc` driver.
    #[serde(default)]
    without_nvcc: Vec<LineWithoutNvcc>,
    releases: Vec<WheelRelease>,
}

/// A CUDA line (`12`, `12.4`) whose component wheels cannot make a toolkit, and why.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct LineWithoutNvcc {
    pub line: String,
    pub why: String,
}

/// One CUDA release as wheels: the `cuda-toolkit` meta-package's version and its components.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct WheelRelease {
    /// The toolkit release (`13.0.2`), as in cuda.yaml.
    pub version: Version,
    /// The `cuda-toolkit` meta-package's own version (`13.0.2`, `13.0.3.0`).
    pub package: String,
    pub components: Vec<WheelComponent>,
}

/// One component of a release: its distribution, exact version and wheel per platform.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct WheelComponent {
    pub name: String,
    pub version: Version,
    /// `linux-x86_64` / `windows-x86_64` → the wheel for that platform.
    wheels: BTreeMap<String, UvWheel>,
}

impl WheelComponent {
    /// The component's wheel for `os` (x86_64), if NVIDIA publishes one.
    pub fn wheel(&self, os: Os) -> Option<&UvWheel> {
        self.wheels.get(platform_key(os))
    }
}

fn platform_key(os: Os) -> &'static str {
    match os {
        Os::Linux => "linux-x86_64",
        Os::Windows => "windows-x86_64",
    }
}

/// The component wheels of CUDA `toolkit` (exactly that release), when the data lists them.
pub fn toolkit_wheels(toolkit: &Version) -> Option<&'static WheelRelease> {
    knowledge()
        .cuda_wheels
        .as_ref()?
        .releases
        .iter()
        .find(|r| r.version.same_release(toolkit))
}

/// Every CUDA release the data lists as wheels, newest first as the file has them.
pub fn wheel_releases() -> &'static [WheelRelease] {
    knowledge()
        .cuda_wheels
        .as_ref()
        .map_or(&[], |w| w.releases.as_slice())
}

/// Why the wheels of `toolkit`'s line make no toolkit (`12.x` carries no nvcc), if they don't.
pub fn wheels_without_nvcc(toolkit: &Version) -> Option<&'static LineWithoutNvcc> {
    let line = toolkit.major_minor();
    let major = toolkit.major().to_string();
    knowledge()
        .cuda_wheels
        .as_ref()?
        .without_nvcc
        .iter()
        .find(|l| l.line == line || l.line == major)
}

struct Knowledge {
    cuda: CudaData,
    cuda_wheels: Option<CudaWheelsData>,
    pytorch: PytorchData,
    tensorflow: TensorflowData,
    onnxruntime: OnnxRuntimeData,
    drivers: DriverData,
    gpus: GpuData,
    libraries: LibraryTable,
    tools: Option<ToolsData>,
    checksums: Option<ChecksumsData>,
    pci: Option<hardware::PciData>,
    wheel_paths: Option<hardware::WheelPathData>,
}

fn knowledge() -> &'static Knowledge {
    // The set in use is the built-in one (covered by tests) or an updated one that `dataset`
    // had READER read before choosing it; either is read once per process and kept with the set.
    let tables = crate::dataset::in_use(&READER).set.read_by(&READER);
    match tables.downcast_ref::<Knowledge>() {
        Some(knowledge) => knowledge,
        // READER is the binary's only reader, so what the set keeps is always a `Knowledge`.
        None => panic!("the release data in use was read by a reader other than compat's"),
    }
}

impl Knowledge {
    /// Parses every table the binary needs; `table` gives a table's text by file name.
    fn from_tables<'t>(table: &dyn Fn(&str) -> Option<&'t str>) -> Result<Knowledge, TableError> {
        Ok(Knowledge {
            cuda: parse_table("cuda.yaml", table)?,
            // Optional: a set packed before cuda-wheels.yaml existed still reads.
            cuda_wheels: match table("cuda-wheels.yaml") {
                Some(_) => Some(parse_table("cuda-wheels.yaml", table)?),
                None => None,
            },
            pytorch: parse_table("pytorch.yaml", table)?,
            tensorflow: parse_table("tensorflow.yaml", table)?,
            onnxruntime: parse_table("onnxruntime.yaml", table)?,
            drivers: parse_table("drivers.yaml", table)?,
            gpus: parse_table("gpus.yaml", table)?,
            libraries: parse_table("libraries.yaml", table)?,
            // Optional: a set packed before tools.yaml existed still reads.
            tools: match table("tools.yaml") {
                Some(_) => Some(parse_table("tools.yaml", table)?),
                None => None,
            },
            // Optional: a set packed before checksums.yaml existed still reads.
            checksums: match table("checksums.yaml") {
                Some(_) => Some(parse_table::<ChecksumsData>("checksums.yaml", table)?.checked()?),
                None => None,
            },
            // Optional: sets packed before issue 35 have no hardware tables.
            pci: match table("nvidia-pci.yaml") {
                Some(_) => Some(parse_table("nvidia-pci.yaml", table)?),
                None => None,
            },
            wheel_paths: match table("wheel-paths.yaml") {
                Some(_) => Some(parse_table("wheel-paths.yaml", table)?),
                None => None,
            },
        })
    }
}

/// The release tables' reader, the binary's one [`Reader`]: `data pack` and `data update`
/// accept a set only when it reads, and the set in use is the one it read.
pub struct TablesReader;

/// What every caller of `dataset` hands it to read a set.
pub static READER: TablesReader = TablesReader;

impl Reader for TablesReader {
    fn read(&self, set: &DataSet) -> Result<ReadTables, TableError> {
        let knowledge = Knowledge::from_tables(&|name| set.table(name))?;
        Ok(Arc::new(knowledge))
    }
}

fn parse_table<'t, T: serde::de::DeserializeOwned>(
    name: &str,
    table: &dyn Fn(&str) -> Option<&'t str>,
) -> Result<T, TableError> {
    let text = table(name).ok_or_else(|| TableError::Missing { name: name.into() })?;
    serde_saphyr::from_str(text).map_err(|e| TableError::Malformed {
        name: name.into(),
        reason: e.to_string(),
    })
}

/// `data/libraries.yaml` in the set in use: how to talk to each library (its lookups are
/// [`LibraryTable`]'s).
pub fn libraries() -> &'static LibraryTable {
    &knowledge().libraries
}

/// The date of the release data in use (the newest of its tables'), shown in notes and
/// warnings about unknown releases.
pub fn data_date() -> &'static str {
    &crate::dataset::in_use(&READER).set.read_on
}

/// What the release notes require of the driver for a toolkit release on one OS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverRequirement {
    /// The per-release "Toolkit Driver Version" row.
    Release { min: Version, label: String },
    /// No per-release number for this OS (Windows 13.x prints N/A; 13.3+ give a branch only):
    /// the driver branch of that CUDA line applies.
    Branch { floor: Version, line: String },
    /// The toolkit release is not in stackpin's tables.
    Unknown,
}

/// The minimum driver for `toolkit` on `os`, from the release-notes tables.
pub fn min_driver_for(toolkit: &Version, os: Os) -> DriverRequirement {
    let data = &knowledge().cuda;
    let row = data
        .toolkits
        .iter()
        .find(|r| r.version.same_release(toolkit) || padded_eq(&r.version, toolkit));
    if let Some(row) = row {
        match os {
            Os::Linux => {
                return DriverRequirement::Release {
                    min: row.linux.clone(),
                    label: row.label.clone(),
                };
            }
            Os::Windows => {
                if let Some(min) = &row.windows {
                    return DriverRequirement::Release {
                        min: min.clone(),
                        label: row.label.clone(),
                    };
                }
            }
        }
    }
    let line = toolkit.major_minor();
    match data.branches.get(&line) {
        Some(branch) => match Version::parse(branch) {
            Ok(floor) => DriverRequirement::Branch { floor, line },
            Err(_) => DriverRequirement::Unknown,
        },
        None => DriverRequirement::Unknown,
    }
}

/// `12.4` pinned as `12.4.0` and the reverse count as the same release.
fn padded_eq(a: &Version, b: &Version) -> bool {
    let pad = |v: &Version| {
        let mut p = v.parts().to_vec();
        p.resize(4, 0);
        p
    };
    pad(a) == pad(b)
}

/// The minor-version-compatibility floor of a CUDA major (the oldest driver its runtime loads on).
pub fn minor_version_floor(major: u64, os: Os) -> Option<Version> {
    knowledge()
        .cuda
        .minor_version_floors
        .iter()
        .find(|f| f.major == major)
        .map(|f| match os {
            Os::Linux => f.linux.clone(),
            Os::Windows => f.windows.clone(),
        })
}

/// Every toolkit release of a CUDA line (`12.4`) in the tables, newest first.
pub fn toolkit_releases(line: &str) -> Vec<&'static ToolkitRow> {
    let mut rows: Vec<_> = knowledge()
        .cuda
        .toolkits
        .iter()
        .filter(|r| r.version.major_minor() == line)
        .collect();
    rows.sort_by(|a, b| b.version.cmp(&a.version));
    rows
}

/// True when the tables know this exact toolkit release.
pub fn toolkit_known(toolkit: &Version) -> bool {
    knowledge()
        .cuda
        .toolkits
        .iter()
        .any(|r| padded_eq(&r.version, toolkit))
}

/// NVIDIA's local installer URL for a toolkit release, where the installer file name is known.
pub fn toolkit_installer_url(toolkit: &Version, os: Os) -> Option<String> {
    let row = knowledge()
        .cuda
        .installers
        .iter()
        .find(|r| padded_eq(&r.version, toolkit))?;
    let v = &row.version;
    if v.major() < 11 {
        // 10.x lived under `<major.minor>/Prod/`, and 10.0's files carry no extension.
        let line = v.major_minor();
        let ext = |e: &str| {
            if line == "10.0" {
                String::new()
            } else {
                e.to_string()
            }
        };
        let base = format!(
            "https://developer.download.nvidia.com/compute/cuda/{line}/Prod/local_installers"
        );
        return Some(match (os, &row.windows_driver) {
            (Os::Linux, _) => format!("{base}/cuda_{v}_{}_linux{}", row.linux_driver, ext(".run")),
            (Os::Windows, Some(d)) => format!("{base}/cuda_{v}_{d}_win10{}", ext(".exe")),
            (Os::Windows, None) => return None,
        });
    }
    let base = format!("https://developer.download.nvidia.com/compute/cuda/{v}/local_installers");
    match os {
        Os::Linux => Some(format!("{base}/cuda_{v}_{}_linux.run", row.linux_driver)),
        Os::Windows => {
            // Up to 11.4.3 / 11.5.0 the file was `_win10.exe`; 13.x carries no driver number.
            let old_name =
                *v <= Version::parse("11.5.0").ok()? && *v != Version::parse("11.4.4").ok()?;
            let suffix = if old_name { "win10" } else { "windows" };
            Some(match &row.windows_driver {
                Some(d) => format!("{base}/cuda_{v}_{d}_{suffix}.exe"),
                None => format!("{base}/cuda_{v}_{suffix}.exe"),
            })
        }
    }
}

/// The drivers stackpin knows for an OS, newest first.
pub fn known_drivers(os: Os) -> Vec<&'static DriverRow> {
    let data = &knowledge().drivers;
    let mut rows: Vec<_> = match os {
        Os::Linux => data.linux.iter().collect(),
        Os::Windows => data.windows.iter().collect(),
    };
    rows.sort_by(|a, b| b.version.cmp(&a.version));
    rows
}

/// Where NVIDIA publishes a driver release for a card stackpin was not told about: the known
/// row's channel, else the desktop pages (a driver the user names from NVIDIA's driver search is
/// a desktop download unless stackpin knows otherwise). Workstation rows never decide it: NVIDIA
/// gives some numbers to both its GeForce and its RTX Enterprise pages (566.14, 596.36), and only
/// a card named as a workstation card gets that package (`pin --gpu-name`).
pub fn driver_channel(driver: &Version, os: Os) -> DriverChannel {
    known_drivers(os)
        .into_iter()
        .find(|r| &r.version == driver && r.channel != DriverChannel::Workstation)
        .map_or(DriverChannel::Desktop, |r| r.channel)
}

/// NVIDIA's download URL for a driver release on an OS, following its channel; `None` for a
/// driver published only inside a CUDA installer.
pub fn driver_url(driver: &Version, os: Os) -> Option<String> {
    driver_url_in(driver, os, driver_channel(driver, os))
}

/// NVIDIA's download URL for a driver release in a given channel (the data's URL pattern).
pub fn driver_url_in(driver: &Version, os: Os, channel: DriverChannel) -> Option<String> {
    let patterns = &knowledge().drivers.url_patterns;
    let pattern = match channel {
        DriverChannel::Desktop => patterns.desktop.get(os),
        DriverChannel::DataCenter => patterns.data_center.get(os),
        DriverChannel::Workstation => patterns.workstation.get(os),
        DriverChannel::Bundled => return None,
    };
    Some(pattern.replace("{version}", &driver.to_string()))
}

/// The date the driver list was read.
pub fn drivers_read_on() -> &'static str {
    &knowledge().drivers.read_on
}

/// The date the GPU generation table was read.
pub fn gpus_read_on() -> &'static str {
    &knowledge().gpus.read_on
}

/// A compute capability as `major.minor` (`8.6`), or `None` when `text` is not one.
pub fn compute_capability(text: &str) -> Option<String> {
    let v = Version::parse(text.trim()).ok()?;
    (v.parts().len() <= 2).then(|| v.major_minor())
}

/// The NVIDIA card with PCI device ID `id` (`2204`), if the data knows it.
pub fn pci_device(id: &str) -> Option<&'static PciDevice> {
    knowledge().pci.as_ref()?.device(id)
}

/// The deepest paths of the wheel `distribution==version` (`local`: the index's build, `cu130`).
pub fn wheel_paths(
    distribution: &str,
    version: &str,
    local: Option<&str>,
) -> Option<&'static WheelPaths> {
    knowledge()
        .wheel_paths
        .as_ref()?
        .wheel(distribution, version, local)
}

/// Every compute capability in the GPU table, oldest first.
pub fn gpu_generations() -> &'static [GpuGeneration] {
    &knowledge().gpus.generations
}

/// The generation of a compute capability (`6.1` → Pascal), if the table knows it.
pub fn gpu_generation(compute: &str) -> Option<&'static GpuGeneration> {
    let cc = compute_capability(compute)?;
    knowledge()
        .gpus
        .generations
        .iter()
        .find(|g| g.compute == cc)
}

/// The driver branch a release belongs to (`R580`). Linux numbers it by the major; Windows
/// releases of a branch carry the next few majors too (R580: 580.88, 581.15), so there the
/// major rounds down to the branch's multiple of five, except R418 (418.96 to 426.00).
pub fn driver_branch(driver: &Version, os: Os) -> u64 {
    let major = driver.major();
    match os {
        Os::Linux => major,
        Os::Windows if (418..430).contains(&major) => 418,
        Os::Windows => major - major % 5,
    }
}

/// Whether a driver branch drives a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drives {
    Yes,
    /// The branch predates the generation; `first` is the first branch that drives it.
    TooOld {
        first: u64,
    },
    /// The generation's support ended; `last` is the last branch that drives it.
    TooNew {
        last: u64,
    },
    /// The compute capability is not in the table.
    Unknown,
}

/// Whether driver branch `branch` drives a GPU of compute capability `compute`.
pub fn drives(branch: u64, compute: &str) -> Drives {
    let Some(g) = gpu_generation(compute) else {
        return Drives::Unknown;
    };
    if branch < g.first_driver_branch {
        return Drives::TooOld {
            first: g.first_driver_branch,
        };
    }
    match g.last_driver_branch {
        Some(last) if branch > last => Drives::TooNew { last },
        _ => Drives::Yes,
    }
}

/// Whether a toolkit line compiles for a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolkitFit {
    Yes,
    /// The line predates the generation; `first` is the first CUDA release that supports it.
    TooOld {
        first: Version,
    },
    /// The generation was removed; `last` is the last CUDA line that supports it.
    TooNew {
        last: Version,
    },
    Unknown,
}

/// Whether CUDA `toolkit` (its `major.minor` line) supports compute capability `compute`.
pub fn toolkit_supports(toolkit: &Version, compute: &str) -> ToolkitFit {
    let Some(g) = gpu_generation(compute) else {
        return ToolkitFit::Unknown;
    };
    let line = |v: &Version| (v.major(), v.minor());
    if line(toolkit) < line(&g.first_cuda) {
        return ToolkitFit::TooOld {
            first: g.first_cuda.clone(),
        };
    }
    match &g.last_cuda {
        Some(last) if line(toolkit) > line(last) => ToolkitFit::TooNew { last: last.clone() },
        _ => ToolkitFit::Yes,
    }
}

/// Whether a build with kernels for `archs` (`["7.0", "8.0"]`) runs on `compute`. NVIDIA's rule:
/// a cubin for X.y runs on X.z with z ≥ y, never on another major (Blackwell compatibility guide).
pub fn archs_carry(archs: &[String], compute: &str) -> bool {
    let Some(cc) = compute_capability(compute).and_then(|c| Version::parse(&c).ok()) else {
        return false;
    };
    archs
        .iter()
        .filter_map(|a| Version::parse(a).ok())
        .any(|a| a.major() == cc.major() && a.minor() <= cc.minor())
}

/// Why a stack does not fit a GPU, one rule each; `check`, `plan`, `pin` and `install` word
/// their findings from these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuMismatch {
    #[error(
        "compute capability {compute} is not in stackpin's GPU table of {}; you vouch for driver, toolkit and build",
        gpus_read_on()
    )]
    UnknownCapability { compute: String },
    #[error(
        "driver {driver} (R{branch}) predates {name} GPUs (compute {compute}): they need R{first} or newer"
    )]
    DriverTooOld {
        compute: String,
        name: String,
        driver: Version,
        branch: u64,
        first: u64,
    },
    #[error(
        "driver {driver} (R{branch}) does not drive {name} GPUs (compute {compute}): R{last} is the last branch that does; pin a driver of R{last} or older"
    )]
    DriverTooNew {
        compute: String,
        name: String,
        driver: Version,
        branch: u64,
        last: u64,
    },
    #[error(
        "CUDA {toolkit} predates {name} GPUs (compute {compute}): they need CUDA {first} or newer"
    )]
    ToolkitTooOld {
        compute: String,
        name: String,
        toolkit: Version,
        first: Version,
    },
    #[error(
        "CUDA {toolkit} no longer supports {name} GPUs (compute {compute}): CUDA {last} is the last line that does"
    )]
    ToolkitTooNew {
        compute: String,
        name: String,
        toolkit: Version,
        last: Version,
    },
    #[error(
        "the {library} {version} build for CUDA {line} has kernels for compute {} only, none that runs on {name} (compute {compute})",
        archs.join(", ")
    )]
    BuildLacksArch {
        compute: String,
        name: String,
        library: String,
        version: Version,
        line: String,
        archs: Vec<String>,
    },
}

impl GpuMismatch {
    /// The manifest field the finding is about.
    pub fn field(&self) -> &'static str {
        match self {
            GpuMismatch::UnknownCapability { .. } => "gpu",
            GpuMismatch::DriverTooOld { .. } | GpuMismatch::DriverTooNew { .. } => "driver.version",
            GpuMismatch::ToolkitTooOld { .. } | GpuMismatch::ToolkitTooNew { .. } => {
                "toolkit.version"
            }
            GpuMismatch::BuildLacksArch { .. } => "library.cuda",
        }
    }

    /// What to do about a finding on a pinned stack (`check`, `plan`, `install`).
    pub fn fix(&self) -> String {
        match self {
            GpuMismatch::UnknownCapability { .. } => String::new(),
            GpuMismatch::DriverTooOld { first, .. } => format!("pin a driver of R{first} or newer"),
            GpuMismatch::DriverTooNew { .. } => String::new(),
            GpuMismatch::ToolkitTooOld { compute, .. }
            | GpuMismatch::ToolkitTooNew { compute, .. }
            | GpuMismatch::BuildLacksArch { compute, .. } => format!(
                "`stackpin pin --gpu-arch {compute}` picks a toolkit line and build that carry it"
            ),
        }
    }

    /// The finding and its fix, for a stack that is already pinned.
    pub fn with_fix(&self) -> String {
        match self.fix() {
            fix if fix.is_empty() => self.to_string(),
            fix => format!("{self}; {fix}"),
        }
    }

    /// An unknown compute capability is a warning; every other finding is an error.
    pub fn is_error(&self) -> bool {
        !matches!(self, GpuMismatch::UnknownCapability { .. })
    }
}

/// The stack a GPU is checked against: the driver (when pinned), the toolkit, and the library
/// build's architectures (when the release data knows them).
#[derive(Debug, Clone, Copy)]
pub struct StackForGpu<'a> {
    pub os: Os,
    pub driver: Option<&'a Version>,
    pub toolkit: &'a Version,
    pub library: Option<(&'a LibraryRelease, &'a Version)>,
}

/// Every rule a stack breaks on a GPU of compute capability `compute`.
pub fn gpu_mismatches(stack: &StackForGpu<'_>, compute: &str) -> Vec<GpuMismatch> {
    let Some(g) = gpu_generation(compute) else {
        return vec![GpuMismatch::UnknownCapability {
            compute: compute.to_string(),
        }];
    };
    let (compute, name) = (g.compute.clone(), g.name.clone());
    let mut out = Vec::new();
    if let Some(driver) = stack.driver {
        let branch = driver_branch(driver, stack.os);
        match drives(branch, &compute) {
            Drives::TooOld { first } => out.push(GpuMismatch::DriverTooOld {
                compute: compute.clone(),
                name: name.clone(),
                driver: driver.clone(),
                branch,
                first,
            }),
            Drives::TooNew { last } => out.push(GpuMismatch::DriverTooNew {
                compute: compute.clone(),
                name: name.clone(),
                driver: driver.clone(),
                branch,
                last,
            }),
            Drives::Yes | Drives::Unknown => {}
        }
    }
    match toolkit_supports(stack.toolkit, &compute) {
        ToolkitFit::TooOld { first } => out.push(GpuMismatch::ToolkitTooOld {
            compute: compute.clone(),
            name: name.clone(),
            toolkit: stack.toolkit.clone(),
            first,
        }),
        ToolkitFit::TooNew { last } => out.push(GpuMismatch::ToolkitTooNew {
            compute: compute.clone(),
            name: name.clone(),
            toolkit: stack.toolkit.clone(),
            last,
        }),
        ToolkitFit::Yes | ToolkitFit::Unknown => {}
    }
    if let Some((release, version)) = stack.library {
        let line = stack.toolkit.major_minor();
        if let Some(archs) = release.archs.get(&line)
            && !archs_carry(archs, &compute)
        {
            out.push(GpuMismatch::BuildLacksArch {
                compute,
                name,
                library: release.library.clone(),
                version: version.clone(),
                line,
                archs: archs.clone(),
            });
        }
    }
    out
}

/// Training libraries stackpin has release data for.
pub const KNOWN_LIBRARIES: &[&str] = &["torch", "tensorflow", "onnxruntime-gpu"];

/// One release of a training library, as the release notes describe it.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryRelease {
    pub library: String,
    /// The release line the tables are keyed by (`2.5` for torch, `2.17.0` for tensorflow).
    pub release: Version,
    /// Full versions known in this line (`2.5.0`, `2.5.1`).
    pub versions: Vec<Version>,
    pub stable_cuda: Vec<Version>,
    pub experimental_cuda: Vec<Version>,
    pub python: PythonRange,
    /// CUDA line → cuDNN version the build uses.
    pub cudnn: BTreeMap<String, String>,
    /// CUDA line → compute capabilities the build has kernels for, where known.
    pub archs: BTreeMap<String, Vec<String>>,
    /// CUDA line → pip index URL; absent for libraries on pip's default index.
    pub index_urls: BTreeMap<String, String>,
    /// Companion package pinned with the library (`torchvision`): library version → its release.
    companion: Option<(String, BTreeMap<String, Version>)>,
    /// Further pip requirements pinned with the library (what its bundled example needs).
    extras: Vec<String>,
    /// The pip distribution that holds the GPU build, when it is not the library's own name.
    distribution: Option<String>,
    pub read_on: String,
}

/// How CUDA line support is graded by the library's release notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaSupport {
    Stable,
    Experimental,
    Unsupported,
}

impl LibraryRelease {
    /// Whether the release notes list `line` (`12.4`) as stable, experimental, or not at all.
    pub fn cuda_support(&self, line: &Version) -> CudaSupport {
        let same = |v: &Version| v.major_minor() == line.major_minor();
        if self.stable_cuda.iter().any(same) {
            CudaSupport::Stable
        } else if self.experimental_cuda.iter().any(same) {
            CudaSupport::Experimental
        } else {
            CudaSupport::Unsupported
        }
    }

    /// The pip requirements for `version` built for CUDA `line`, companions included.
    pub fn requirements(&self, version: &Version) -> Vec<String> {
        let mut reqs = vec![self.requirement_name(version)];
        if let Some(pair) = self.companion_for(version) {
            reqs.push(pair);
        }
        reqs.extend(self.extras.iter().cloned());
        reqs
    }

    /// The companion package pinned with every release of this library (`torchvision`), if any.
    pub fn companion_name(&self) -> Option<&str> {
        self.companion.as_ref().map(|(name, _)| name.as_str())
    }

    /// The companion requirement (`torchvision==0.15.2`) published for `version`, from the
    /// pairing table; `None` when the table has no pair for it.
    pub fn companion_for(&self, version: &Version) -> Option<String> {
        let (name, pairs) = self.companion.as_ref()?;
        pairs
            .iter()
            .find(|(lib, _)| Version::parse(lib).is_ok_and(|v| padded_eq(&v, version)))
            .map(|(_, companion)| format!("{name}=={companion}"))
    }

    fn requirement_name(&self, version: &Version) -> String {
        if let Some(distribution) = &self.distribution {
            return format!("{distribution}=={version}");
        }
        match self.library.as_str() {
            // From 2.14 on, `tensorflow[and-cuda]` brings cuDNN and the CUDA libraries from pip;
            // the system toolkit stays pinned to the tested configuration for nvcc and XLA.
            "tensorflow"
                if self.release
                    >= Version::parse("2.14").unwrap_or_else(|_| self.release.clone()) =>
            {
                format!("tensorflow[and-cuda]=={version}")
            }
            _ => format!("{}=={version}", self.library),
        }
    }
}

/// The result of looking a library release up in the tables.
#[derive(Debug, Clone)]
pub enum LibraryLookup {
    Known(Box<LibraryRelease>),
    /// The library is known but this release is not; `known` lists the releases that are.
    UnknownRelease {
        known: Vec<String>,
    },
    UnknownLibrary,
}

/// Finds a library release for an OS. Torch is keyed by `major.minor`, TensorFlow by the
/// version in its tested-configuration table (`2.16.1` also matches `2.16.x`).
pub fn library_release(library: &str, version: &Version, os: Os) -> LibraryLookup {
    match library {
        "torch" | "pytorch" => torch_release(version),
        "tensorflow" | "tensorflow-gpu" | "tensorflow_gpu" => tensorflow_release(version, os),
        "onnxruntime-gpu" | "onnxruntime" => onnxruntime_release(version),
        _ => LibraryLookup::UnknownLibrary,
    }
}

/// The row of a release table whose line (`major.minor`) is `version`'s, or, when none is, the
/// lookup result that lists the releases the table knows.
fn find_release<'a, T>(
    rows: &'a [T],
    version: &Version,
    release: impl Fn(&T) -> &Version,
) -> Result<&'a T, LibraryLookup> {
    let line = version.major_minor();
    rows.iter()
        .find(|r| release(r).major_minor() == line)
        .ok_or_else(|| LibraryLookup::UnknownRelease {
            known: rows.iter().map(|r| release(r).to_string()).collect(),
        })
}

fn torch_release(version: &Version) -> LibraryLookup {
    let data = &knowledge().pytorch;
    let row = match find_release(&data.releases, version, |r| &r.release) {
        Ok(row) => row,
        Err(unknown) => return unknown,
    };
    let index_urls = row
        .stable_cuda
        .iter()
        .chain(&row.experimental_cuda)
        .filter_map(|cuda| {
            let tag = format!("cu{}{}", cuda.major(), cuda.minor());
            row.wheel_tags.contains(&tag).then(|| {
                (
                    cuda.major_minor(),
                    data.index_url_pattern.replace("{tag}", &tag),
                )
            })
        })
        .collect();
    let cudnn = row
        .cudnn
        .iter()
        .flat_map(|(k, v)| {
            if k == "all" {
                row.stable_cuda
                    .iter()
                    .chain(&row.experimental_cuda)
                    .map(|c| (c.major_minor(), v.clone()))
                    .collect::<Vec<_>>()
            } else {
                vec![(k.clone(), v.clone())]
            }
        })
        .collect();
    LibraryLookup::Known(Box::new(LibraryRelease {
        library: "torch".into(),
        release: row.release.clone(),
        versions: row.versions.clone(),
        stable_cuda: row.stable_cuda.clone(),
        experimental_cuda: row.experimental_cuda.clone(),
        python: row.python.clone(),
        cudnn,
        archs: row.archs.clone(),
        index_urls,
        companion: Some(("torchvision".into(), row.torchvision.clone())),
        extras: vec![],
        distribution: None,
        read_on: data.read_on.clone(),
    }))
}

fn tensorflow_release(version: &Version, os: Os) -> LibraryLookup {
    let data = &knowledge().tensorflow;
    let rows = match os {
        Os::Linux => &data.linux,
        Os::Windows => &data.windows,
    };
    let row = match find_release(rows, version, |r| &r.version) {
        Ok(row) => row,
        Err(unknown) => return unknown,
    };
    let cuda_line = row.cuda.major_minor();
    LibraryLookup::Known(Box::new(LibraryRelease {
        library: "tensorflow".into(),
        release: row.version.clone(),
        versions: vec![row.version.clone()],
        stable_cuda: vec![row.cuda.clone()],
        experimental_cuda: vec![],
        python: row.python.clone(),
        cudnn: BTreeMap::from([(cuda_line, row.cudnn.clone())]),
        archs: BTreeMap::new(),
        index_urls: BTreeMap::new(),
        companion: None,
        extras: vec![],
        distribution: row.distribution.clone(),
        read_on: data.read_on.clone(),
    }))
}

/// Whether a library is a deployment runtime (an inference stack's library) rather than a
/// training library.
pub fn is_inference_runtime(library: &str) -> bool {
    libraries()
        .describe(library)
        .is_some_and(|d| d.is_inference())
}

/// ONNX Runtime is keyed by `major.minor`; every CUDA line of a row is stable (the docs' table
/// names one build per release, compatible with the whole CUDA major).
fn onnxruntime_release(version: &Version) -> LibraryLookup {
    let data = &knowledge().onnxruntime;
    let row = match find_release(&data.releases, version, |r| &r.release) {
        Ok(row) => row,
        Err(unknown) => return unknown,
    };
    LibraryLookup::Known(Box::new(LibraryRelease {
        library: "onnxruntime-gpu".into(),
        release: row.release.clone(),
        versions: row.versions.clone(),
        stable_cuda: row.cuda.clone(),
        experimental_cuda: vec![],
        python: row.python.clone(),
        cudnn: row
            .cuda
            .iter()
            .map(|c| (c.major_minor(), row.cudnn.clone()))
            .collect(),
        archs: BTreeMap::new(),
        index_urls: BTreeMap::new(),
        companion: None,
        extras: row.extras.clone(),
        distribution: None,
        read_on: data.read_on.clone(),
    }))
}

/// The releases of a library the tables know, newest first (for `pin` and error messages).
pub fn known_releases(library: &str, os: Os) -> Vec<Version> {
    let mut out: Vec<Version> = match library {
        "torch" | "pytorch" => {
            newest_of_each(knowledge().pytorch.releases.iter().map(|r| &r.versions))
        }
        "tensorflow" => match os {
            Os::Linux => &knowledge().tensorflow.linux,
            Os::Windows => &knowledge().tensorflow.windows,
        }
        .iter()
        .map(|r| r.version.clone())
        .collect(),
        "onnxruntime-gpu" | "onnxruntime" => {
            newest_of_each(knowledge().onnxruntime.releases.iter().map(|r| &r.versions))
        }
        _ => vec![],
    };
    out.sort_by(|a, b| b.cmp(a));
    out
}

/// The newest version of each release line: a PyTorch or ONNX Runtime row holds all of a
/// line's versions, and its newest stands for it.
fn newest_of_each<'a>(lines: impl Iterator<Item = &'a Vec<Version>>) -> Vec<Version> {
    lines.filter_map(|v| v.iter().max().cloned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).expect("test version")
    }

    /// A release the tables must know.
    fn known(library: &str, version: &Version, os: Os) -> Box<LibraryRelease> {
        match library_release(library, version, os) {
            LibraryLookup::Known(release) => release,
            _ => panic!("{library} {version} on {os} is in the table"),
        }
    }

    #[test]
    fn every_table_parses_and_carries_its_date() {
        let k = knowledge();
        assert_eq!(k.cuda.read_on, "2026-12-07");
        assert_eq!(k.pytorch.read_on, "2026-12-07");
        assert_eq!(k.tensorflow.read_on, "2026-12-07");
        assert_eq!(k.drivers.read_on, "2026-12-07");
        assert_eq!(k.gpus.read_on, "2026-12-07");
        assert!(k.cuda.toolkits.len() >= 56, "10.0 → 13.2 rows");
        assert!(k.pytorch.releases.len() >= 17, "torch 1.12 → 2.14");
    }

    #[test]
    fn cuda_12_4_1_needs_550_54_15_on_linux_and_551_78_on_windows() {
        assert_eq!(
            min_driver_for(&v("12.4.1"), Os::Linux),
            DriverRequirement::Release {
                min: v("550.54.15"),
                label: "CUDA 12.4 Update 1".into()
            }
        );
        match min_driver_for(&v("12.4.1"), Os::Windows) {
            DriverRequirement::Release { min, .. } => assert_eq!(min, v("551.78")),
            other => panic!("expected a release row, got {other:?}"),
        }
    }

    #[test]
    fn windows_13x_falls_back_to_the_branch_floor() {
        assert_eq!(
            min_driver_for(&v("13.0.2"), Os::Windows),
            DriverRequirement::Branch {
                floor: v("580"),
                line: "13.0".into()
            }
        );
        // 13.4 has no per-release row on either OS, only its branch.
        assert!(matches!(
            min_driver_for(&v("13.4.1"), Os::Linux),
            DriverRequirement::Branch { .. }
        ));
        assert_eq!(
            min_driver_for(&v("9.2"), Os::Linux),
            DriverRequirement::Unknown
        );
    }

    #[test]
    fn every_release_row_from_10_0_to_13_2_is_present() {
        for line in [
            "10.0", "10.1", "10.2", "11.0", "11.1", "11.2", "11.3", "11.4", "11.5", "11.6", "11.7",
            "11.8", "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0",
            "13.1", "13.2",
        ] {
            assert!(
                !toolkit_releases(line).is_empty(),
                "no rows for CUDA {line}"
            );
        }
        assert!(toolkit_releases("12.7").is_empty(), "there is no CUDA 12.7");
    }

    #[test]
    fn torch_2_5_supports_12_4_stable_and_has_its_wheel_index() {
        let rel = known("torch", &v("2.5.1"), Os::Linux);
        assert_eq!(rel.cuda_support(&v("12.4")), CudaSupport::Stable);
        assert_eq!(rel.cuda_support(&v("12.6")), CudaSupport::Unsupported);
        assert_eq!(
            rel.index_urls.get("12.4").map(String::as_str),
            Some("https://download.pytorch.org/whl/cu124")
        );
        assert_eq!(
            rel.requirements(&v("2.5.1")),
            vec!["torch==2.5.1", "torchvision==0.20.1"]
        );
        assert_eq!(rel.cudnn.get("12.4").map(String::as_str), Some("9.1.0.70"));
    }

    #[test]
    fn torch_python_ranges_follow_the_wheels_on_the_index() {
        // No cp315 wheel of 2.13 or 2.14 on the index; 2.15.0 has cp311-cp315 (none for 3.10).
        for release in ["2.13.0", "2.14.0", "2.14.1"] {
            let rel = known("torch", &v(release), Os::Linux);
            assert!(!rel.python.contains(&v("3.15")), "{release}");
            assert!(rel.python.contains(&v("3.14")), "{release}");
            assert_eq!(rel.python.wheels.as_deref(), Some("cp310-cp314"));
        }
        let rel = known("torch", &v("2.15.0"), Os::Linux);
        assert!(rel.python.contains(&v("3.15")) && !rel.python.contains(&v("3.10")));
        assert_eq!(
            rel.requirements(&v("2.15.0")),
            vec!["torch==2.15.0", "torchvision==0.29.2"]
        );
        assert_eq!(rel.cudnn.get("13.2").map(String::as_str), Some("9.26.0.51"));
        let rel = known("torch", &v("2.14.1"), Os::Linux);
        assert_eq!(
            rel.requirements(&v("2.14.1")),
            vec!["torch==2.14.1", "torchvision==0.29.1"]
        );
    }

    #[test]
    fn torch_2_11_cu130_cudnn_is_the_wheels_requires_dist() {
        let rel = known("torch", &v("2.11.0"), Os::Linux);
        assert_eq!(rel.cudnn.get("13.0").map(String::as_str), Some("9.19.0.56"));
    }

    #[test]
    fn tensorflow_2_0_0_gpu_build_is_the_tensorflow_gpu_distribution() {
        for os in [Os::Linux, Os::Windows] {
            let rel = known("tensorflow", &v("2.0.0"), os);
            assert_eq!(rel.requirements(&v("2.0.0")), vec!["tensorflow-gpu==2.0.0"]);
            assert!(!rel.python.contains(&v("3.4")) && rel.python.contains(&v("3.5")));
        }
        let rel = known("tensorflow", &v("2.1.0"), Os::Linux);
        assert_eq!(rel.requirements(&v("2.1.0")), vec!["tensorflow==2.1.0"]);
    }

    #[test]
    fn every_published_checksum_is_for_a_url_the_data_writes() {
        let rows = &knowledge()
            .checksums
            .as_ref()
            .expect("data/checksums.yaml")
            .published;
        assert!(rows.len() >= 20, "{}", rows.len());
        let mut written: Vec<String> = [Os::Linux, Os::Windows]
            .into_iter()
            .flat_map(|os| {
                known_drivers(os)
                    .into_iter()
                    .filter_map(move |d| driver_url_in(&d.version, os, d.channel))
            })
            .collect();
        written.extend(
            knowledge()
                .cuda
                .installers
                .iter()
                .filter_map(|i| toolkit_installer_url(&i.version, Os::Linux)),
        );
        for row in rows {
            assert!(written.contains(&row.url), "no data row writes {}", row.url);
            assert_eq!(
                published_checksum(&row.url).map(|p| &p.sha256),
                Some(&row.sha256)
            );
        }
        let cuda_12_4_0 = toolkit_installer_url(&v("12.4.0"), Os::Linux).expect("12.4.0");
        let published = published_checksum(&cuda_12_4_0).expect("nixpkgs publishes 12.4.0's");
        assert!(published.source.contains("nixpkgs"), "{}", published.source);
        assert!(published_checksum("https://example.test/none.run").is_none());
        let workstation =
            driver_url_in(&v("596.36"), Os::Windows, DriverChannel::Workstation).expect("a file");
        assert!(
            workstation.contains("/Quadro_Certified/596.36/"),
            "{workstation}"
        );
        assert!(published_checksum(&workstation).is_some());
        // Without a card, a number NVIDIA also gives its GeForce pages is a GeForce download.
        let unnamed = driver_url(&v("596.36"), Os::Windows).expect("a download");
        assert!(
            unnamed.contains("/Windows/596.36/596.36-desktop-"),
            "{unnamed}"
        );
    }

    #[test]
    fn a_malformed_published_checksum_is_refused_with_the_table_named() {
        let bad = ChecksumsData {
            read_on: "2026-12-07".into(),
            sources: vec![],
            published: vec![PublishedChecksum {
                url: "https://example.test/a.run".into(),
                sha256: "abc".into(),
                source: "s".into(),
            }],
        };
        let err = bad.checked().expect_err("not a sha256");
        assert!(err.to_string().contains("checksums.yaml"), "{err}");
    }

    #[test]
    fn uv_is_pinned_with_a_sha256_per_platform() {
        let uv = uv_pin().expect("data/tools.yaml pins uv");
        for os in [Os::Linux, Os::Windows] {
            let wheel = uv.wheel(os).expect("a wheel per OS");
            assert!(
                wheel.file.starts_with(&format!("uv-{}-", uv.version)),
                "{}",
                wheel.file
            );
            assert_eq!(wheel.sha256.len(), 64);
        }
    }

    #[test]
    fn jetson_thor_compute_11_0_is_a_generation_from_cuda_13_0() {
        let thor = gpu_generation("11.0").expect("compute capability 11.0");
        assert_eq!(thor.first_cuda, v("13.0"));
        assert_eq!(thor.first_driver_branch, 580);
    }

    #[test]
    fn cuda_updates_12_8_2_to_13_1_2_have_installers_and_grade_b_minimums() {
        for (version, os) in [
            ("12.8.2", Os::Windows),
            ("12.9.2", Os::Windows),
            ("13.0.3", Os::Linux),
            ("13.1.2", Os::Linux),
        ] {
            assert!(
                toolkit_installer_url(&v(version), Os::Linux).is_some(),
                "{version}"
            );
            assert!(
                toolkit_installer_url(&v(version), os).is_some(),
                "{version} {os}"
            );
        }
    }

    #[test]
    fn torch_2_4_lists_12_4_as_experimental() {
        let rel = known("torch", &v("2.4.1"), Os::Linux);
        assert_eq!(rel.cuda_support(&v("12.4")), CudaSupport::Experimental);
    }

    #[test]
    fn onnxruntime_gpu_1_20_runs_on_any_cuda_12_line_with_cudnn_9() {
        let r = known("onnxruntime-gpu", &v("1.20.2"), Os::Linux);
        assert_eq!(r.cuda_support(&v("12.4")), CudaSupport::Stable);
        assert_eq!(r.cuda_support(&v("11.8")), CudaSupport::Unsupported);
        assert_eq!(r.cudnn.get("12.4").map(String::as_str), Some("9.x"));
        assert!(!r.python.contains(&v("3.9")), "1.20 dropped Python 3.9");
        let reqs = r.requirements(&v("1.20.2"));
        assert_eq!(reqs[0], "onnxruntime-gpu==1.20.2");
        assert!(reqs.iter().any(|q| q.starts_with("onnx==")), "{reqs:?}");
    }

    #[test]
    fn onnxruntime_1_18_on_pypi_is_the_cuda_11_8_cudnn_8_build() {
        let r = known("onnxruntime", &v("1.18.1"), Os::Windows);
        assert_eq!(r.cuda_support(&v("11.8")), CudaSupport::Stable);
        assert_eq!(r.cuda_support(&v("12.4")), CudaSupport::Unsupported);
        assert!(matches!(
            library_release("onnxruntime-gpu", &v("1.9.0"), Os::Linux),
            LibraryLookup::UnknownRelease { .. }
        ));
        assert_eq!(known_releases("onnxruntime-gpu", Os::Linux)[0], v("1.31.1"));
    }

    #[test]
    fn onnxruntime_gpu_moved_to_cuda_13_with_1_27_and_1_20_1_is_not_on_the_index() {
        let r = known("onnxruntime-gpu", &v("1.27.0"), Os::Linux);
        assert_eq!(r.cuda_support(&v("13.0")), CudaSupport::Stable);
        assert_eq!(r.cuda_support(&v("12.9")), CudaSupport::Unsupported);
        assert!(
            !r.python.contains(&v("3.10")),
            "no cp310 wheels from 1.24 on"
        );
        let r = known("onnxruntime-gpu", &v("1.20.2"), Os::Linux);
        assert!(r.versions.contains(&v("1.20.2")));
        assert!(
            !r.versions.contains(&v("1.20.1")),
            "never published as a GPU wheel"
        );
    }

    #[test]
    fn tensorflow_has_no_native_windows_gpu_after_2_10() {
        assert!(matches!(
            library_release("tensorflow", &v("2.17.0"), Os::Windows),
            LibraryLookup::UnknownRelease { .. }
        ));
        assert!(matches!(
            library_release("tensorflow", &v("2.10.0"), Os::Windows),
            LibraryLookup::Known(_)
        ));
    }

    #[test]
    fn unknown_library_and_release_are_reported() {
        assert!(matches!(
            library_release("jax", &v("0.4.30"), Os::Linux),
            LibraryLookup::UnknownLibrary
        ));
        match library_release("torch", &v("3.0.0"), Os::Linux) {
            LibraryLookup::UnknownRelease { known } => assert!(known.contains(&"2.5".to_string())),
            other => panic!("expected unknown release, got {other:?}"),
        }
    }

    #[test]
    fn installer_urls_follow_nvidia_file_names() {
        assert_eq!(
            toolkit_installer_url(&v("12.4.1"), Os::Linux).as_deref(),
            Some(
                "https://developer.download.nvidia.com/compute/cuda/12.4.1/local_installers/cuda_12.4.1_550.54.15_linux.run"
            )
        );
        assert_eq!(
            toolkit_installer_url(&v("12.4.1"), Os::Windows).as_deref(),
            Some(
                "https://developer.download.nvidia.com/compute/cuda/12.4.1/local_installers/cuda_12.4.1_551.78_windows.exe"
            )
        );
        assert_eq!(
            toolkit_installer_url(&v("13.0.2"), Os::Windows).as_deref(),
            Some(
                "https://developer.download.nvidia.com/compute/cuda/13.0.2/local_installers/cuda_13.0.2_windows.exe"
            )
        );
        assert!(
            toolkit_installer_url(&v("11.4.3"), Os::Windows)
                .is_some_and(|u| u.ends_with("_win10.exe"))
        );
    }

    #[test]
    fn known_drivers_are_sorted_newest_first() {
        let linux = known_drivers(Os::Linux);
        assert!(linux.windows(2).all(|w| w[0].version > w[1].version));
        assert!(known_drivers(Os::Windows)[0].version >= v("581.15"));
    }

    #[test]
    fn r580_is_the_last_branch_for_pascal_and_blackwell_needs_r570() {
        assert_eq!(drives(580, "6.1"), Drives::Yes);
        assert_eq!(drives(590, "6.1"), Drives::TooNew { last: 580 });
        assert_eq!(drives(595, "8.9"), Drives::Yes);
        assert_eq!(drives(565, "12.0"), Drives::TooOld { first: 570 });
        assert_eq!(drives(570, "12.0"), Drives::Yes);
        assert_eq!(drives(570, "4.2"), Drives::Unknown);
        // Windows numbers R580 as 580.88 and 581.15.
        assert_eq!(driver_branch(&v("581.15"), Os::Windows), 580);
        assert_eq!(driver_branch(&v("576.40"), Os::Windows), 575);
        assert_eq!(driver_branch(&v("590.48.01"), Os::Linux), 590);
    }

    #[test]
    fn toolkits_support_a_generation_from_its_first_cuda_to_its_last() {
        assert_eq!(
            toolkit_supports(&v("12.4.1"), "12.0"),
            ToolkitFit::TooOld { first: v("12.8") }
        );
        assert_eq!(toolkit_supports(&v("12.8.1"), "12.0"), ToolkitFit::Yes);
        assert_eq!(toolkit_supports(&v("12.9.1"), "7.0"), ToolkitFit::Yes);
        assert_eq!(
            toolkit_supports(&v("13.0.2"), "7.0"),
            ToolkitFit::TooNew { last: v("12.9") }
        );
    }

    #[test]
    fn a_build_runs_on_a_later_minor_of_its_major_only() {
        let archs: Vec<String> = ["7.0", "8.0", "9.0"].map(String::from).to_vec();
        assert!(archs_carry(&archs, "8.6"), "sm_80 cubins run on 8.6");
        assert!(archs_carry(&archs, "7.5"), "sm_70 cubins run on 7.5");
        assert!(!archs_carry(&archs, "6.1"), "no 6.x kernels");
        assert!(!archs_carry(&archs, "12.0"), "no Blackwell kernels");
    }

    #[test]
    fn every_generation_in_the_table_has_a_name_and_a_known_capability() {
        let names: Vec<&str> = gpu_generations().iter().map(|g| g.name.as_str()).collect();
        for name in [
            "Maxwell",
            "Pascal",
            "Volta",
            "Turing",
            "Ampere",
            "Ada",
            "Hopper",
            "Blackwell",
        ] {
            assert!(names.contains(&name), "{name} missing");
        }
        assert_eq!(gpu_generation("8.9").map(|g| g.name.as_str()), Some("Ada"));
        assert_eq!(
            gpu_generation("12").map(|g| g.compute.as_str()),
            Some("12.0")
        );
    }

    #[test]
    fn driver_urls_follow_the_channel_and_bundled_drivers_have_none() {
        assert_eq!(
            driver_url(&v("570.133.20"), Os::Linux).as_deref(),
            Some(
                "https://us.download.nvidia.com/tesla/570.133.20/NVIDIA-Linux-x86_64-570.133.20.run"
            )
        );
        assert!(driver_url(&v("595.71.05"), Os::Linux).is_some_and(|u| u.contains("/XFree86/")));
        assert_eq!(driver_url(&v("551.78"), Os::Windows), None);
        assert!(
            driver_url(&v("580.88"), Os::Windows).is_some_and(|u| u.ends_with(
                "580.88-data-center-tesla-desktop-win10-win11-64bit-dch-international.exe"
            ))
        );
    }

    #[test]
    fn torchvision_comes_from_the_pairing_table() {
        for (torch, vision) in [
            ("2.0.0", "0.15.1"),
            ("2.0.1", "0.15.2"),
            ("2.5.1", "0.20.1"),
        ] {
            let rel = known("torch", &v(torch), Os::Linux);
            assert_eq!(
                rel.requirements(&v(torch)),
                vec![format!("torch=={torch}"), format!("torchvision=={vision}")]
            );
        }
    }

    #[test]
    fn cuda_12_3_2_and_13_3_are_known_with_their_grades() {
        assert!(toolkit_known(&v("12.3.2")));
        assert!(toolkit_installer_url(&v("12.3.2"), Os::Linux).is_some());
        assert!(
            toolkit_installer_url(&v("13.2.2"), Os::Linux)
                .is_some_and(|u| u.ends_with("cuda_13.2.2_595.71.05_linux.run"))
        );
        let rows = toolkit_releases("13.3");
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.grade.as_deref() == Some("C")));
    }

    #[test]
    fn python_range_is_inclusive_by_minor() {
        let r = PythonRange {
            min: v("3.9"),
            max: v("3.12"),
            wheels: None,
        };
        assert!(r.contains(&v("3.12.7")));
        assert!(r.contains(&v("3.9")));
        assert!(!r.contains(&v("3.13")));
    }
}
