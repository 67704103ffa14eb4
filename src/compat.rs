//! Release-note knowledge compiled into the binary: each CUDA toolkit's minimum driver per OS,
//! each library release's CUDA lines, Python range, wheel index and GPU architectures, and the
//! drivers stackpin knows. The tables live in `data/*.yaml` with their sources and the date they
//! were read; this module parses them once and answers questions. It touches no files and runs
//! nothing, so every rule tests as a plain function.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::version::Version;

/// The operating system a stack is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Windows,
}

impl Os {
    /// The OS this binary runs on (anything not Windows is treated as Linux).
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

impl fmt::Display for Os {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        })
    }
}

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
    torchvision: Version,
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
    url_patterns: PerOs<String>,
    linux: Vec<DriverRow>,
    windows: Vec<DriverRow>,
}

/// A driver release stackpin knows exists, with the evidence for it.
#[derive(Debug, Clone, Deserialize)]
pub struct DriverRow {
    pub version: Version,
    pub evidence: String,
    #[serde(default)]
    pub last_for: Vec<String>,
}

struct Knowledge {
    cuda: CudaData,
    pytorch: PytorchData,
    tensorflow: TensorflowData,
    onnxruntime: OnnxRuntimeData,
    drivers: DriverData,
    libraries: crate::library::LibraryTable,
}

fn knowledge() -> &'static Knowledge {
    static DATA: OnceLock<Knowledge> = OnceLock::new();
    DATA.get_or_init(|| Knowledge {
        cuda: parse_table("data/cuda.yaml", include_str!("../data/cuda.yaml")),
        pytorch: parse_table("data/pytorch.yaml", include_str!("../data/pytorch.yaml")),
        tensorflow: parse_table(
            "data/tensorflow.yaml",
            include_str!("../data/tensorflow.yaml"),
        ),
        onnxruntime: parse_table(
            "data/onnxruntime.yaml",
            include_str!("../data/onnxruntime.yaml"),
        ),
        drivers: parse_table("data/drivers.yaml", include_str!("../data/drivers.yaml")),
        libraries: parse_table(
            "data/libraries.yaml",
            include_str!("../data/libraries.yaml"),
        ),
    })
}

/// The tables are compiled in and covered by tests, so a parse failure is a build defect, not
/// user input: fail loudly with the table's name rather than limp on with partial knowledge.
fn parse_table<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> T {
    match serde_saphyr::from_str(text) {
        Ok(value) => value,
        Err(e) => panic!("stackpin's built-in release table {name} is malformed: {e}"),
    }
}

/// `data/libraries.yaml`: how to talk to each library (see [`crate::library`]).
pub fn library_table() -> &'static crate::library::LibraryTable {
    &knowledge().libraries
}

/// The date the release tables were read, shown in warnings about unknown releases.
pub fn data_date() -> &'static str {
    &knowledge().cuda.read_on
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

/// NVIDIA's download URL for a driver release on an OS.
pub fn driver_url(driver: &Version, os: Os) -> String {
    knowledge()
        .drivers
        .url_patterns
        .get(os)
        .replace("{version}", &driver.to_string())
}

/// The date the driver list was read.
pub fn drivers_read_on() -> &'static str {
    &knowledge().drivers.read_on
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
    /// Companion packages pinned with the library (`torchvision`), version per library version.
    companion: Option<(String, Version)>,
    /// Further pip requirements pinned with the library (what its bundled example needs).
    extras: Vec<String>,
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
        if let Some((name, minor)) = &self.companion {
            let patch = version.parts().get(2).copied().unwrap_or(0);
            reqs.push(format!("{name}=={minor}.{patch}"));
        }
        reqs.extend(self.extras.iter().cloned());
        reqs
    }

    fn requirement_name(&self, version: &Version) -> String {
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
        read_on: data.read_on.clone(),
    }))
}

/// Whether a library is a deployment runtime (an inference stack's library) rather than a
/// training library.
pub fn is_inference_runtime(library: &str) -> bool {
    crate::library::describe(library).is_some_and(|d| d.is_inference())
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
        read_on: data.read_on.clone(),
    }))
}

/// The releases of a library the tables know, newest first (for `pin` and error messages).
pub fn known_releases(library: &str, os: Os) -> Vec<Version> {
    let mut out: Vec<Version> = match library {
        "torch" | "pytorch" => knowledge()
            .pytorch
            .releases
            .iter()
            .filter_map(|r| r.versions.iter().max().cloned())
            .collect(),
        "tensorflow" => match os {
            Os::Linux => &knowledge().tensorflow.linux,
            Os::Windows => &knowledge().tensorflow.windows,
        }
        .iter()
        .map(|r| r.version.clone())
        .collect(),
        "onnxruntime-gpu" | "onnxruntime" => knowledge()
            .onnxruntime
            .releases
            .iter()
            .filter_map(|r| r.versions.iter().max().cloned())
            .collect(),
        _ => vec![],
    };
    out.sort_by(|a, b| b.cmp(a));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).expect("test version")
    }

    #[test]
    fn every_table_parses_and_carries_its_date() {
        let k = knowledge();
        assert_eq!(k.cuda.read_on, "2026-11-29");
        assert_eq!(k.pytorch.read_on, "2026-11-29");
        assert_eq!(k.tensorflow.read_on, "2026-11-29");
        assert_eq!(k.drivers.read_on, "2026-11-29");
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
        let LibraryLookup::Known(rel) = library_release("torch", &v("2.5.1"), Os::Linux) else {
            panic!("torch 2.5 should be known");
        };
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
    fn torch_2_4_lists_12_4_as_experimental() {
        let LibraryLookup::Known(rel) = library_release("torch", &v("2.4.1"), Os::Linux) else {
            panic!("torch 2.4 should be known");
        };
        assert_eq!(rel.cuda_support(&v("12.4")), CudaSupport::Experimental);
    }

    #[test]
    fn onnxruntime_gpu_1_20_runs_on_any_cuda_12_line_with_cudnn_9() {
        let LibraryLookup::Known(r) = library_release("onnxruntime-gpu", &v("1.20.2"), Os::Linux)
        else {
            panic!("1.20 is in the table");
        };
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
        let LibraryLookup::Known(r) = library_release("onnxruntime", &v("1.18.1"), Os::Windows)
        else {
            panic!("1.18 is in the table");
        };
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
        let LibraryLookup::Known(r) = library_release("onnxruntime-gpu", &v("1.27.0"), Os::Linux)
        else {
            panic!("1.27 is in the table");
        };
        assert_eq!(r.cuda_support(&v("13.0")), CudaSupport::Stable);
        assert_eq!(r.cuda_support(&v("12.9")), CudaSupport::Unsupported);
        assert!(
            !r.python.contains(&v("3.10")),
            "no cp310 wheels from 1.24 on"
        );
        let LibraryLookup::Known(r) = library_release("onnxruntime-gpu", &v("1.20.2"), Os::Linux)
        else {
            panic!("1.20 is in the table");
        };
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
    fn python_range_is_inclusive_by_minor() {
        let r = PythonRange {
            min: v("3.9"),
            max: v("3.12"),
        };
        assert!(r.contains(&v("3.12.7")));
        assert!(r.contains(&v("3.9")));
        assert!(!r.contains(&v("3.13")));
    }
}
