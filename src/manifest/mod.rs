//! The manifest, schema 1: the YAML file that pins a stack's driver, toolkit and library.
//!
//! [`parse`] turns text into a [`Manifest`] strictly (unknown fields, wrong types and missing
//! fields are errors with `file:line:column`, the field path and a "did you mean");
//! [`validate`](validate::validate) then collects every semantic problem at once. Release-note
//! rules (minimum drivers, supported CUDA lines) live in `check`; this module knows nothing of
//! the network or the host.

pub mod exit_codes;
mod parse;
pub mod placeholder;
pub mod prerequisites;
mod source_map;
pub mod toolkit_wheels;
pub mod validate;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::os::Os;
use crate::version::Version;

pub use exit_codes::ExitCodes;
pub use parse::{ManifestError, parse, read, shown_value};
pub use prerequisites::Prerequisites;
pub use source_map::SourceMap;
pub use validate::{Problem, Severity, validate};

/// The schema version this build reads and writes.
pub const SCHEMA: u32 = 1;

/// Default example batch: the guide proves a stack at 64.
pub const DEFAULT_BATCH: u32 = 64;

/// Default share of VRAM a predicted peak may use.
pub const DEFAULT_VRAM_LINE: f64 = 0.8;

/// Default time an installer step may take.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Default time the example may take.
pub const DEFAULT_EXAMPLE_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// A whole manifest, mirroring the YAML field for field.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema: u32,
    #[serde(default)]
    pub role: Role,
    pub name: String,
    pub os: Os,
    /// A lab mirror tried before each original URL (any static server with the archive layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<String>,
    pub driver: DriverLayer,
    pub toolkit: ToolkitLayer,
    pub library: LibraryLayer,
    pub example: Example,
    #[serde(default)]
    pub vram: VramSettings,
}

/// What the stack is for: training, or the deployment runtime pinned apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Training,
    Inference,
}

/// One file to download, with its optional pinned checksum.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Installer {
    pub url: String,
    #[serde(default)]
    pub sha256: Option<String>,
}

impl Installer {
    /// The file name the archive stores this installer under: the URL's last path segment,
    /// percent-decoded, without query or fragment.
    pub fn file_name(&self) -> Option<String> {
        file_name_from_url(&self.url)
    }
}

/// The last path segment of a URL, percent-decoded; `None` when there is none.
pub fn file_name_from_url(url: &str) -> Option<String> {
    let without_fragment = url.split('#').next().unwrap_or(url);
    let without_query = without_fragment
        .split('?')
        .next()
        .unwrap_or(without_fragment);
    let after_scheme = without_query
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(without_query);
    let path = after_scheme.split_once('/').map(|(_, p)| p)?;
    let last = path.rsplit('/').next()?;
    let decoded = percent_decode(last);
    (!decoded.is_empty()).then_some(decoded)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 3 <= bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The GPU driver layer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverLayer {
    pub version: Version,
    pub installer: Installer,
    pub run: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Vec<String>>,
    /// Installer exit codes that mean success / reboot required (see [`ExitCodes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_codes: Option<ExitCodes>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text"
    )]
    pub timeout: Option<Duration>,
    /// The distribution packages the driver's module is built with, archived and installed
    /// offline before the driver ([`Prerequisites`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prerequisites: Option<Prerequisites>,
}

/// The CUDA toolkit layer: NVIDIA's runfile/installer (`source: runfile`, the default) run with
/// `run`, or NVIDIA's own wheels (`source: wheels`), every component pinned, unpacked into `root`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolkitLayer {
    pub version: Version,
    /// Where the toolkit comes from: `runfile` (the default) or `wheels`.
    #[serde(default, skip_serializing_if = "ToolkitSource::is_default")]
    pub source: ToolkitSource,
    /// The runfile or Windows installer (`source: runfile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer: Option<Installer>,
    /// The toolkit's own versioned folder (`/usr/local/cuda-12.4`).
    pub root: String,
    /// The installer's command (`source: runfile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run: Vec<String>,
    /// The index the component wheels come from (`source: wheels`); pip's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_url: Option<String>,
    /// Every component wheel of the release, pinned exactly (`source: wheels`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ToolkitWheel>,
    /// Lets the toolkit step install the display driver too (a warning instead of an error).
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_bundled_driver: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Vec<String>>,
    /// Installer exit codes that mean success / reboot required (see [`ExitCodes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_codes: Option<ExitCodes>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text"
    )]
    pub timeout: Option<Duration>,
}

/// Where the toolkit layer comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolkitSource {
    /// NVIDIA's runfile (Linux) or installer (Windows), run with `toolkit.run`.
    #[default]
    Runfile,
    /// NVIDIA's component wheels (`nvidia-cuda-nvcc`, …) unpacked into `toolkit.root`.
    Wheels,
}

impl ToolkitSource {
    fn is_default(&self) -> bool {
        *self == ToolkitSource::Runfile
    }
}

/// One component wheel of a wheel toolkit, pinned to its exact version and file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolkitWheel {
    /// The distribution, `nvidia-cuda-nvcc`.
    pub name: String,
    /// Its exact version, `13.0.88` (not the toolkit's release number).
    pub version: Version,
    /// The wheel for the manifest's OS, as the index names it.
    pub file: String,
    /// Its published sha256.
    pub sha256: String,
}

impl ToolkitWheel {
    /// `nvidia-cuda-nvcc==13.0.88`: what `pip download` is asked for.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.name, self.version)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The training library layer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryLayer {
    pub name: String,
    pub version: Version,
    /// The CUDA line the library build was made for (`12.4`).
    pub cuda: Version,
    /// The interpreter that creates the virtual environment.
    #[serde(default = "default_python")]
    pub python: String,
    /// The Python version wheels are fetched for (`3.11`); needed to archive another OS's stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_version: Option<Version>,
    /// The virtual environment pip libraries go into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venv: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pip: Option<PipSection>,
    /// What installs pip libraries into the venv: `pip` (the default) or `uv`, whose wheel
    /// `fetch` archives beside the library's and `install` runs from the archive.
    #[serde(default, skip_serializing_if = "LibraryInstaller::is_default")]
    pub installer: LibraryInstaller,
    /// Non-pip libraries: files to archive, each run with `run`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub installers: Vec<Installer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Vec<String>>,
    /// Installer exit codes that mean success / reboot required (see [`ExitCodes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_codes: Option<ExitCodes>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text"
    )]
    pub timeout: Option<Duration>,
}

fn default_python() -> String {
    "python3".into()
}

/// pip libraries: `fetch` downloads wheels into the archive, `install` installs them offline.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipSection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_url: Option<String>,
    /// More indexes searched at fetch only (old torch builds were published this way);
    /// `install` never looks at an index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_index_urls: Vec<String>,
    pub requirements: Vec<String>,
}

/// The program that installs a pip library's archived wheels into the venv.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LibraryInstaller {
    /// `python -m venv` + `pip install --no-index --require-hashes`.
    #[default]
    Pip,
    /// `uv venv` + `uv pip install --offline --no-index --require-hashes --compile-bytecode`,
    /// uv itself run from its archived wheel.
    Uv,
}

impl LibraryInstaller {
    fn is_default(&self) -> bool {
        *self == LibraryInstaller::Pip
    }
}

/// The bundled example that proves the stack.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    pub run: Vec<String>,
    #[serde(default = "default_batch")]
    pub batch: u32,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text"
    )]
    pub timeout: Option<Duration>,
    /// Inference stacks: the p99 latency the line-side controller must meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_time_ms: Option<f64>,
}

fn default_batch() -> u32 {
    DEFAULT_BATCH
}

/// The batch planner's settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VramSettings {
    #[serde(default = "default_line")]
    pub line: f64,
    #[serde(default = "default_batches")]
    pub batches: Vec<u32>,
}

impl Default for VramSettings {
    fn default() -> Self {
        Self {
            line: DEFAULT_VRAM_LINE,
            batches: default_batches(),
        }
    }
}

fn default_line() -> f64 {
    DEFAULT_VRAM_LINE
}

fn default_batches() -> Vec<u32> {
    vec![16, 32, 48, 64, 96, 128]
}

/// The three layers, always in install order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Driver,
    Toolkit,
    Library,
}

impl Layer {
    /// Driver → toolkit → library: the only order that works.
    pub const ORDER: [Layer; 3] = [Layer::Driver, Layer::Toolkit, Layer::Library];

    /// The folder name inside the stack's archive, and the word users see.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Driver => "driver",
            Layer::Toolkit => "toolkit",
            Layer::Library => "library",
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "driver" => Ok(Layer::Driver),
            "toolkit" => Ok(Layer::Toolkit),
            "library" => Ok(Layer::Library),
            other => Err(format!(
                "unknown layer `{other}`; the layers are driver, toolkit, library"
            )),
        }
    }
}

impl Manifest {
    /// The installers of a layer that are downloaded as files (pip wheels are resolved by pip).
    pub fn installers(&self, layer: Layer) -> Vec<&Installer> {
        match layer {
            Layer::Driver => vec![&self.driver.installer],
            Layer::Toolkit => self.toolkit.installer.iter().collect(),
            Layer::Library => self.library.installers.iter().collect(),
        }
    }

    /// The install command of a layer.
    pub fn run(&self, layer: Layer) -> Option<&[String]> {
        match layer {
            Layer::Driver => Some(&self.driver.run),
            Layer::Toolkit => (self.toolkit.source == ToolkitSource::Runfile)
                .then_some(self.toolkit.run.as_slice()),
            Layer::Library => self.library.run.as_deref(),
        }
    }

    /// The step timeout of a layer (default 60 minutes).
    pub fn timeout(&self, layer: Layer) -> Duration {
        match layer {
            Layer::Driver => self.driver.timeout,
            Layer::Toolkit => self.toolkit.timeout,
            Layer::Library => self.library.timeout,
        }
        .unwrap_or(DEFAULT_STEP_TIMEOUT)
    }

    /// The exit codes a layer declared, if any (`install::exit_codes` supplies the defaults).
    pub fn exit_codes(&self, layer: Layer) -> Option<&ExitCodes> {
        match layer {
            Layer::Driver => self.driver.exit_codes.as_ref(),
            Layer::Toolkit => self.toolkit.exit_codes.as_ref(),
            Layer::Library => self.library.exit_codes.as_ref(),
        }
    }

    /// The example's timeout (default 20 minutes).
    pub fn example_timeout(&self) -> Duration {
        self.example.timeout.unwrap_or(DEFAULT_EXAMPLE_TIMEOUT)
    }

    /// The stack's folder in an archive.
    pub fn stack_dir(&self, archive: &Path) -> PathBuf {
        archive.join(&self.name)
    }
}

/// Durations written as `90s`, `20m`, `1h` or `1h30m`.
pub mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Parses `90s`, `20m`, `1h`, `1h30m`; a bare number is seconds.
    pub fn parse(text: &str) -> Result<Duration, String> {
        let text = text.trim();
        if let Ok(secs) = text.parse::<u64>() {
            return Ok(Duration::from_secs(secs));
        }
        let mut total = 0u64;
        let mut number = String::new();
        for c in text.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                _ => {
                    return Err(format!(
                        "`{text}` is not a duration; write it like 90s, 20m or 1h"
                    ));
                }
            };
            let n: u64 = number
                .parse()
                .map_err(|_| format!("`{text}` is not a duration; write it like 90s, 20m or 1h"))?;
            total = total.saturating_add(n.saturating_mul(unit));
            number.clear();
        }
        if !number.is_empty() || total == 0 {
            return Err(format!(
                "`{text}` is not a positive duration; write it like 90s, 20m or 1h"
            ));
        }
        Ok(Duration::from_secs(total))
    }

    /// Writes the shortest exact form (`20m`, `1h`, `95s`).
    pub fn format(d: Duration) -> String {
        let secs = d.as_secs();
        if secs.is_multiple_of(3600) {
            format!("{}h", secs / 3600)
        } else if secs.is_multiple_of(60) {
            format!("{}m", secs / 60)
        } else {
            format!("{secs}s")
        }
    }

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        text.map(|t| parse(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_come_from_the_url_path_decoded() {
        let f = |u: &str| file_name_from_url(u);
        assert_eq!(
            f("https://us.download.nvidia.com/XFree86/Linux-x86_64/565.57.01/NVIDIA-Linux-x86_64-565.57.01.run").as_deref(),
            Some("NVIDIA-Linux-x86_64-565.57.01.run")
        );
        assert_eq!(
            f("https://x.test/whl/torch-2.5.1%2Bcu124-cp311.whl#sha256=ab").as_deref(),
            Some("torch-2.5.1+cu124-cp311.whl")
        );
        assert_eq!(f("https://x.test/"), None);
        assert_eq!(f("https://x.test"), None);
        assert_eq!(f("https://x.test/a/..").as_deref(), Some(".."));
    }

    #[test]
    fn durations_read_and_write() {
        assert_eq!(duration_text::parse("20m"), Ok(Duration::from_secs(1200)));
        assert_eq!(duration_text::parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration_text::parse("90"), Ok(Duration::from_secs(90)));
        assert!(duration_text::parse("soon").is_err());
        assert!(duration_text::parse("0m").is_err());
        assert!(duration_text::parse("5").is_ok());
        assert_eq!(duration_text::format(Duration::from_secs(1200)), "20m");
    }

    #[test]
    fn layers_order_driver_toolkit_library() {
        assert!(Layer::Driver < Layer::Toolkit && Layer::Toolkit < Layer::Library);
        assert_eq!("toolkit".parse::<Layer>(), Ok(Layer::Toolkit));
        assert!("gpu".parse::<Layer>().is_err());
    }
}
