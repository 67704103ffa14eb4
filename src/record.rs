//! The proven-stack record, `<archive>/<name>/proven-stack.yaml`: what was proven, where, with
//! which files, and what the example measured, so a later `doctor` can compare the host with it
//! and a bug report can paste it.
//!
//! This module owns the schema, its vocabulary (which memory view and which framework counter a
//! figure comes from) and reading/writing it (atomically: an earlier record stays whole until
//! the new one is complete). Measuring is `prove`'s job and the batch arithmetic `vram`'s: the
//! predictions are the `vram` module's own [`Prediction`]s, so `prove` depends on this module and
//! never the reverse.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::{self, YamlError};
use crate::vram::Prediction;

/// Which view of GPU memory a figure comes from (`prove`'s sampler measures it; the record
/// names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySource {
    /// nvidia-smi's per-process figure, summed over the example's process tree (context included).
    PerProcess,
    /// Windows' `GPU Process Memory … Dedicated Usage` counter, what Task Manager shows.
    WindowsCounter,
    /// The card's `memory.used` minus the idle baseline: includes anything else that allocated
    /// during the run.
    DeviceDelta,
    /// No view produced a single figure.
    Unmeasured,
}

/// Which in-process figure stands for "the framework's peak".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameworkCounter {
    /// The allocator pool (what the card must hold for the framework).
    Reserved,
    /// Live tensors only (TensorFlow's only figure).
    Allocated,
}

/// The record's schema version; bumped when a field changes meaning.
pub const RECORD_SCHEMA: u32 = 1;

/// The record's file name inside the stack's folder.
pub const RECORD_FILE: &str = "proven-stack.yaml";

/// A proven stack: everything `prove` established in one successful run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProvenStack {
    /// [`RECORD_SCHEMA`] when written.
    pub record: u32,
    /// The manifest's `name`.
    pub stack: String,
    /// When the run ended, RFC 3339 in UTC (see [`now_rfc3339`]).
    pub proven_at: String,
    /// The machine it ran on.
    pub host: HostFacts,
    /// Every GPU the host reported; `example.gpu_index` says which one ran the example.
    pub gpus: Vec<GpuFacts>,
    pub toolkit: ToolkitFacts,
    pub library: LibraryFacts,
    /// The archived installers, with the sha256 the lock recorded.
    #[serde(default)]
    pub installers: Vec<InstallerFact>,
    pub example: ExampleRun,
    pub peak: PeakVram,
    /// Peak ÷ batch, in MiB: the memory one more sample costs under the one-point rule.
    pub per_sample_mib: f64,
    /// The share of VRAM predictions must stay under, and that share in MiB.
    pub line: VramLine,
    /// Predicted peak per configured batch (the `vram` module's plan).
    #[serde(with = "predictions_shape")]
    pub predictions: Vec<Prediction>,
    /// The largest configured batch predicted to stay under the line.
    pub largest_safe_batch: Option<u32>,
    /// The least-squares fit when several batch sizes were measured (`prove --fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<MeasuredFit>,
    /// The facts `python -m torch.utils.collect_env` prints, where stackpin knows them.
    pub environment: CollectEnv,
    /// Inference stacks: the example's latency against the line's cycle time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyCheck>,
}

/// `predictions` on disk exactly as records have always held them. They were written through
/// an untyped JSON value, whose objects sort their keys (`batch, bound, peak_mib, …`); writing
/// through one still keeps a record byte for byte what an older stackpin wrote, and a record from
/// one reads into the typed list (a `null` list, which the untyped field allowed, reads as none).
mod predictions_shape {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::vram::Prediction;

    pub fn serialize<S: Serializer>(
        predictions: &[Prediction],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serde_json::to_value(predictions)
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Prediction>, D::Error> {
        Ok(Option::<Vec<Prediction>>::deserialize(deserializer)?.unwrap_or_default())
    }
}

/// An inference example's per-request latency checked against the cycle time it must meet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyCheck {
    pub p50_ms: Option<f64>,
    pub p99_ms: f64,
    /// The manifest's `example.cycle_time_ms`.
    pub cycle_time_ms: f64,
    /// Whether p99 is at or under the cycle time: 99 requests in 100 finish within one cycle.
    pub meets: bool,
}

impl LatencyCheck {
    /// Checks a p99 against a cycle time.
    pub fn new(p50_ms: Option<f64>, p99_ms: f64, cycle_time_ms: f64) -> Self {
        Self {
            p50_ms,
            p99_ms,
            cycle_time_ms,
            meets: p99_ms <= cycle_time_ms,
        }
    }
}

/// When and where: the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    /// `linux` or `windows`.
    pub os: String,
    /// Distribution or Windows edition and build, as the host probe reports it.
    pub os_version: Option<String>,
    /// Linux kernel release (`uname -r`); none on Windows.
    pub kernel: Option<String>,
    pub cpu: Option<String>,
}

/// One GPU as the driver reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuFacts {
    pub index: u32,
    pub name: String,
    pub vram_mib: u64,
    /// e.g. `8.9`.
    pub compute_capability: Option<String>,
    pub driver: String,
    /// The newest CUDA the driver supports (nvidia-smi's "CUDA Version").
    pub driver_cuda: Option<String>,
}

/// The CUDA toolkit layer as found on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolkitFacts {
    pub version: String,
    pub root: PathBuf,
    /// `nvcc --version`'s release line.
    pub nvcc: Option<String>,
}

/// The training library as it reported itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryFacts {
    pub name: String,
    pub version: String,
    /// The CUDA the build was made for (`torch.version.cuda`).
    pub cuda_build: Option<String>,
    pub cudnn: Option<String>,
    /// Compiled GPU architectures (`torch.cuda.get_arch_list()`), e.g. `sm_89`.
    #[serde(default)]
    pub architectures: Vec<String>,
}

/// One archived installer, as the lock records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallerFact {
    /// `driver`, `toolkit` or `library`.
    pub layer: String,
    pub file: String,
    pub sha256: String,
    pub size: Option<u64>,
}

/// The example run that proved the stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExampleRun {
    /// The command after placeholder substitution.
    pub argv: Vec<String>,
    pub batch: u32,
    pub gpu_index: u32,
    pub duration_s: f64,
    pub exit_code: i32,
    pub samples_per_s: Option<f64>,
    /// Where its output went.
    pub log: PathBuf,
    /// The device the example reported it ran on (`cuda:0`, `/GPU:0`); `None` when it printed
    /// no `STACKPIN_RESULT` line or no `device` in it.
    #[serde(default)]
    pub device: Option<String>,
    /// That device's name as the framework saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// What showed that the run was on the GPU: the example's report and which memory view saw it.
    #[serde(default)]
    pub judged_by: String,
}

/// Peak GPU memory from both views, and which one the predictions use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakVram {
    /// The outside view (nvidia-smi / the Windows counter / the card's delta); includes the CUDA
    /// context.
    pub outside_mib: Option<u64>,
    pub outside_source: MemorySource,
    /// The card's `memory.used` just before the run.
    pub baseline_mib: Option<u64>,
    /// The framework's own peak (its allocator; no CUDA context).
    pub framework_mib: Option<f64>,
    pub framework_counter: Option<FrameworkCounter>,
    /// Live tensors only, when reported besides the pool.
    pub allocated_mib: Option<f64>,
    /// The example's estimate of the CUDA context.
    pub context_mib: Option<f64>,
    /// Which view `mib` is.
    pub authority: PeakAuthority,
    /// Why that view is the authority.
    #[serde(default)]
    pub authority_reason: String,
    /// Where the framework's figure comes from (the example's report and its counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework_source: Option<String>,
    /// The peak the predictions start from.
    pub mib: f64,
    /// Why a fallback view was used, and other measuring caveats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Which view stands for the run's peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakAuthority {
    /// Measured from outside: what the card had to hold for the example, context included.
    Outside,
    /// The framework's figure plus its context estimate (when the outside view was not per process).
    FrameworkPlusContext,
    /// The framework's figure alone (no context estimate available).
    Framework,
}

/// The share of VRAM predictions must stay under.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VramLine {
    pub share: f64,
    pub mib: f64,
    /// The card's total the share applies to.
    pub vram_mib: u64,
}

/// `fixed + per_sample × batch`, fitted by least squares over measured runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredFit {
    pub fixed_mib: f64,
    pub per_sample_mib: f64,
    /// The measured points `(batch, peak MiB)`.
    pub points: Vec<(u32, f64)>,
}

/// The labels `python -m torch.utils.collect_env` prints, in its order. Other labels may be
/// recorded too; they are printed after these.
pub const COLLECT_ENV_LABELS: &[&str] = &[
    "PyTorch version",
    "Is debug build",
    "CUDA used to build PyTorch",
    "OS",
    "GCC version",
    "Libc version",
    "Python version",
    "Python platform",
    "Is CUDA available",
    "CUDA runtime version",
    "CUDA_MODULE_LOADING set to",
    "GPU models and configuration",
    "Nvidia driver version",
    "cuDNN version",
    "CPU",
    "Versions of relevant libraries",
];

/// The facts `torch.utils.collect_env` gathers, under its own labels, where stackpin knows them.
/// Written (YAML and `--json`) under snake_case keys (`cuda_used_to_build_pytorch`); records
/// written before that, under the prose labels, still read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CollectEnv {
    /// collect_env label → value; only the facts stackpin knows.
    #[serde(
        serialize_with = "env_keys::serialize",
        deserialize_with = "env_keys::deserialize"
    )]
    pub facts: BTreeMap<String, String>,
}

/// collect_env's prose labels ↔ the snake_case keys the record and `--json` carry.
mod env_keys {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::COLLECT_ENV_LABELS;

    /// The frameworks whose name `prove` writes into a label (`CUDA used to build PyTorch`).
    const FRAMEWORKS: &[&str] = &["PyTorch", "TensorFlow"];

    /// `CUDA used to build PyTorch` → `cuda_used_to_build_pytorch`.
    pub fn key(label: &str) -> String {
        let mut key = String::with_capacity(label.len());
        for c in label.chars() {
            if c.is_ascii_alphanumeric() {
                key.push(c.to_ascii_lowercase());
            } else if !key.is_empty() && !key.ends_with('_') {
                key.push('_');
            }
        }
        key.trim_end_matches('_').to_string()
    }

    /// The prose label of a key: collect_env's own where it has one; a label from an older
    /// record (prose already) is kept as it is.
    pub fn label(key_or_label: &str) -> String {
        if key_or_label != key(key_or_label) {
            return key_or_label.to_string();
        }
        let mut known = COLLECT_ENV_LABELS.iter().map(|l| l.to_string()).chain(
            FRAMEWORKS
                .iter()
                .flat_map(|f| [format!("{f} version"), format!("CUDA used to build {f}")]),
        );
        if let Some(found) = known.find(|l| key(l) == key_or_label) {
            return found;
        }
        if let Some(name) = key_or_label.strip_prefix("cuda_used_to_build_") {
            return format!("CUDA used to build {name}");
        }
        if let Some(name) = key_or_label.strip_suffix("_version") {
            return format!("{name} version");
        }
        let mut words = key_or_label.replace('_', " ");
        if let Some(first) = words.get(..1) {
            words.replace_range(..1, &first.to_ascii_uppercase());
        }
        words
    }

    pub fn serialize<S: Serializer>(
        facts: &BTreeMap<String, String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        facts
            .iter()
            .map(|(label, value)| (key(label), value))
            .collect::<BTreeMap<_, _>>()
            .serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        let read = BTreeMap::<String, String>::deserialize(deserializer)?;
        Ok(read.into_iter().map(|(k, v)| (label(&k), v)).collect())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_label_round_trips_through_its_snake_case_key() {
            for l in COLLECT_ENV_LABELS.iter().copied().chain([
                "TensorFlow version",
                "CUDA used to build TensorFlow",
                "onnxruntime version",
                "Extra fact",
            ]) {
                let k = key(l);
                assert!(
                    k.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                    "{l} -> {k}"
                );
                assert_eq!(label(&k), l, "{k}");
            }
            assert_eq!(
                key("CUDA used to build PyTorch"),
                "cuda_used_to_build_pytorch"
            );
            assert_eq!(
                key("CUDA_MODULE_LOADING set to"),
                "cuda_module_loading_set_to"
            );
        }

        #[test]
        fn a_record_written_under_prose_labels_still_reads() {
            let old = "PyTorch version: 2.5.1\nIs CUDA available: 'True'\n";
            let env: super::super::CollectEnv = serde_saphyr::from_str(old).expect("old record");
            assert_eq!(env.facts["Is CUDA available"], "True");
            let json = serde_json::to_value(&env).expect("json");
            assert_eq!(json["pytorch_version"], "2.5.1");
            assert_eq!(json["is_cuda_available"], "True");
        }
    }
}

impl CollectEnv {
    /// The facts in collect_env's `Label: value` form and label order, ready to paste into a
    /// bug report.
    pub fn to_text(&self) -> String {
        let known = COLLECT_ENV_LABELS.iter().copied();
        let others = self
            .facts
            .keys()
            .map(String::as_str)
            .filter(|k| !COLLECT_ENV_LABELS.contains(k));
        let mut out = String::new();
        for label in known.chain(others) {
            if let Some(value) = self.facts.get(label) {
                let _ = writeln!(out, "{label}: {value}");
            }
        }
        out
    }
}

/// The file a failed example run leaves instead of a record.
pub const FAILED_RUN_FILE: &str = "failed-run.yaml";

/// A run that did not prove the stack: written instead of (never over) the proven record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    pub record: u32,
    pub stack: String,
    /// RFC 3339, UTC.
    pub failed_at: String,
    pub argv: Vec<String>,
    pub batch: u32,
    /// None when it was killed (timeout) or never started.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_s: f64,
    /// The example's full output.
    pub log: PathBuf,
    /// Why the run did not prove the stack, in one line ("the example ran on the CPU: …").
    #[serde(default)]
    pub reason: String,
    /// The device the example reported it ran on, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The layer the failure points at (`driver`, `toolkit`, `library`, `example`), when known.
    pub layer: Option<String>,
    /// What went wrong and what to do next, in words.
    pub explanation: String,
    /// The outside peak reached before the failure, if any was measured.
    pub peak_outside_mib: Option<u64>,
    /// The last lines of the output (an OOM traceback, say).
    #[serde(default)]
    pub last_lines: Vec<String>,
}

impl FailedRun {
    /// Writes the failure record atomically.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        Ok(fsutil::write_yaml(path, "", self)?)
    }

    /// Reads a failure record.
    pub fn read(path: &Path) -> Result<FailedRun, RecordError> {
        Ok(fsutil::read_yaml(path)?)
    }
}

/// Now, as the RFC 3339 UTC timestamp the records use.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().to_string()
}

/// Reading or writing a record failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("could not write the proven-stack record {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not read the proven-stack record {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a proven-stack record stackpin can read ({message}); run `stackpin prove` again to rewrite it"
    )]
    Parse { path: PathBuf, message: String },
    #[error("could not encode the proven-stack record as YAML: {message}")]
    Encode { message: String },
    #[error(
        "{path} is a record of schema {found}, this stackpin reads schema {RECORD_SCHEMA}; upgrade stackpin or prove again"
    )]
    Schema { path: PathBuf, found: u32 },
}

/// The shared YAML helper's errors, in the record's words.
impl From<YamlError> for RecordError {
    fn from(e: YamlError) -> Self {
        match e {
            YamlError::Read { path, source } => RecordError::Read { path, source },
            YamlError::Parse { path, source } => RecordError::Parse {
                path,
                message: source.to_string(),
            },
            YamlError::Encode { reason, .. } => RecordError::Encode { message: reason },
            YamlError::Write { path, source } => RecordError::Write { path, source },
        }
    }
}

impl ProvenStack {
    /// The record as YAML text.
    pub fn to_yaml(&self) -> Result<String, RecordError> {
        Ok(fsutil::to_yaml(self, Path::new(RECORD_FILE))?)
    }

    /// Writes the record to `path` atomically: readers see the old record or the new one, never
    /// half of it.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        Ok(fsutil::write_yaml(path, "", self)?)
    }

    /// Reads a record written by [`write`](Self::write).
    pub fn read(path: &Path) -> Result<ProvenStack, RecordError> {
        let record: ProvenStack = fsutil::read_yaml(path)?;
        if record.record != RECORD_SCHEMA {
            return Err(RecordError::Schema {
                path: path.to_path_buf(),
                found: record.record,
            });
        }
        Ok(record)
    }
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for RecordError {
    fn exit(&self) -> Exit {
        match self {
            RecordError::Read { .. } | RecordError::Parse { .. } | RecordError::Schema { .. } => {
                Exit::Input
            }
            _ => Exit::External,
        }
    }
}

/// A record as `prove` writes it, for the tests of the modules that read records (doctor,
/// status): one GPU, a 2560 MiB peak, the 80 % line of its VRAM.
#[cfg(test)]
pub(crate) struct TestRecord<'a> {
    pub stack: &'a str,
    pub os: &'a str,
    pub gpu: &'a str,
    pub vram_mib: u64,
    pub driver: &'a str,
    pub driver_cuda: &'a str,
    pub toolkit_root: &'a str,
}

#[cfg(test)]
impl TestRecord<'_> {
    pub fn proven(&self) -> ProvenStack {
        serde_json::from_value(serde_json::json!({
            "record": 1, "stack": self.stack,
            "proven_at": "2026-12-01T10:00:00Z",
            "host": {"hostname": "ws-01", "os": self.os, "os_version": null, "kernel": null, "cpu": null},
            "gpus": [{"index": 0, "name": self.gpu, "vram_mib": self.vram_mib,
                      "compute_capability": "8.9", "driver": self.driver,
                      "driver_cuda": self.driver_cuda}],
            "toolkit": {"version": "12.4.1", "root": self.toolkit_root, "nvcc": null},
            "library": {"name": "torch", "version": "2.5.1+cu124", "cuda_build": "12.4", "cudnn": null},
            "example": {"argv": [], "batch": 64, "gpu_index": 0, "duration_s": 40.0,
                        "exit_code": 0, "samples_per_s": null, "log": "x.log"},
            "peak": {"outside_mib": 2560, "outside_source": "per_process", "baseline_mib": null,
                     "framework_mib": null, "framework_counter": null, "allocated_mib": null,
                     "context_mib": null, "authority": "outside", "mib": 2560.0},
            "per_sample_mib": 40.0,
            "line": {"share": 0.8, "mib": (self.vram_mib as f64 * 8.0).round() / 10.0,
                     "vram_mib": self.vram_mib},
            "predictions": [], "largest_safe_batch": 192, "environment": {}
        }))
        .expect("a test record reads")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vram::{Bound, Verdict};

    /// A record as a GTX-class 5 GiB card would produce it for the guide's example.
    fn sample() -> ProvenStack {
        let mut env = CollectEnv::default();
        for (k, v) in [
            ("PyTorch version", "2.5.1+cu124"),
            ("CUDA used to build PyTorch", "12.4"),
            ("Nvidia driver version", "565.57.01"),
            ("Python version", "3.11.7"),
            ("cuDNN version", "90100"),
            ("Extra fact", "kept"),
        ] {
            env.facts.insert(k.to_string(), v.to_string());
        }
        ProvenStack {
            record: RECORD_SCHEMA,
            stack: "torch-2.5.1-cu124-linux".into(),
            proven_at: "2026-12-01T10:00:00Z".into(),
            host: HostFacts {
                hostname: "ws-01".into(),
                os: "linux".into(),
                os_version: Some("Ubuntu 24.04.1 LTS".into()),
                kernel: Some("6.8.0-49-generic".into()),
                cpu: None,
            },
            gpus: vec![GpuFacts {
                index: 0,
                name: "NVIDIA GeForce RTX 3050".into(),
                vram_mib: 5120,
                compute_capability: Some("8.6".into()),
                driver: "565.57.01".into(),
                driver_cuda: Some("12.7".into()),
            }],
            toolkit: ToolkitFacts {
                version: "12.4.1".into(),
                root: PathBuf::from("/usr/local/cuda-12.4"),
                nvcc: Some("Cuda compilation tools, release 12.4, V12.4.131".into()),
            },
            library: LibraryFacts {
                name: "torch".into(),
                version: "2.5.1".into(),
                cuda_build: Some("12.4".into()),
                cudnn: Some("90100".into()),
                architectures: vec!["sm_80".into(), "sm_86".into(), "sm_90".into()],
            },
            installers: vec![InstallerFact {
                layer: "driver".into(),
                file: "NVIDIA-Linux-x86_64-565.57.01.run".into(),
                sha256: "a".repeat(64),
                size: Some(383_000_000),
            }],
            example: ExampleRun {
                argv: vec![
                    "/opt/stackpin/venv/bin/python".into(),
                    "examples/classify.py".into(),
                    "--batch-size".into(),
                    "64".into(),
                ],
                batch: 64,
                gpu_index: 0,
                duration_s: 41.5,
                exit_code: 0,
                samples_per_s: Some(410.25),
                log: PathBuf::from("installers/torch/logs/example-64.log"),
                device: Some("cuda:0".into()),
                device_name: Some("NVIDIA GeForce RTX 3050".into()),
                judged_by: "the example reported cuda:0 and nvidia-smi listed its process".into(),
            },
            peak: PeakVram {
                outside_mib: Some(2560),
                outside_source: MemorySource::PerProcess,
                baseline_mib: Some(310),
                framework_mib: Some(2304.0),
                framework_counter: Some(FrameworkCounter::Reserved),
                allocated_mib: Some(1890.5),
                context_mib: Some(256.0),
                authority: PeakAuthority::Outside,
                authority_reason: "nvidia-smi listed the example's process".into(),
                framework_source: None,
                mib: 2560.0,
                notes: vec![],
            },
            per_sample_mib: 40.0,
            line: VramLine {
                share: 0.8,
                mib: 4096.0,
                vram_mib: 5120,
            },
            predictions: vec![
                Prediction {
                    batch: 96,
                    peak_mib: 3840.0,
                    percent: 75.0,
                    verdict: Verdict::Fits,
                    bound: Some(Bound {
                        peak_mib: 3960.0,
                        percent: 77.34375,
                        verdict: Verdict::Fits,
                    }),
                },
                Prediction {
                    batch: 128,
                    peak_mib: 5120.0,
                    percent: 100.0,
                    verdict: Verdict::OutOfMemory,
                    bound: None,
                },
            ],
            largest_safe_batch: Some(96),
            fit: Some(MeasuredFit {
                fixed_mib: 300.0,
                per_sample_mib: 34.375,
                points: vec![(32, 1400.0), (64, 2500.0)],
            }),
            environment: env,
            latency: None,
        }
    }

    #[test]
    fn a_record_reads_back_exactly_as_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECORD_FILE);
        let record = sample();
        record.write(&path).expect("written");
        assert_eq!(ProvenStack::read(&path).expect("read back"), record);
    }

    /// A record as stackpin wrote it while `predictions` was an untyped JSON value (its
    /// objects' keys sorted: `bound` before `peak_mib`), verbatim.
    const UNTYPED_PREDICTIONS_RECORD: &str = r#"record: 1
stack: torch-2.5.1-cu124-linux
proven_at: "2026-12-01T10:00:00Z"
host:
  hostname: ws-01
  os: linux
  os_version: Ubuntu 24.04.1 LTS
  kernel: 6.8.0-49-generic
  cpu: null
gpus:
- index: 0
  name: NVIDIA GeForce RTX 3050
  vram_mib: 5120
  compute_capability: "8.6"
  driver: "565.57.01"
  driver_cuda: "12.7"
toolkit:
  version: "12.4.1"
  root: /usr/local/cuda-12.4
  nvcc: Cuda compilation tools, release 12.4, V12.4.131
library:
  name: torch
  version: "2.5.1"
  cuda_build: "12.4"
  cudnn: "90100"
  architectures:
  - sm_80
  - sm_86
  - sm_90
installers:
- layer: driver
  file: NVIDIA-Linux-x86_64-565.57.01.run
  sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  size: 383000000
example:
  argv:
  - /opt/stackpin/venv/bin/python
  - examples/classify.py
  - --batch-size
  - "64"
  batch: 64
  gpu_index: 0
  duration_s: 41.5
  exit_code: 0
  samples_per_s: 410.25
  log: installers/torch/logs/example-64.log
  device: cuda:0
  device_name: NVIDIA GeForce RTX 3050
  judged_by: the example reported cuda:0 and nvidia-smi listed its process
peak:
  outside_mib: 2560
  outside_source: per_process
  baseline_mib: 310
  framework_mib: 2304.0
  framework_counter: reserved
  allocated_mib: 1890.5
  context_mib: 256.0
  authority: outside
  authority_reason: nvidia-smi listed the example's process
  mib: 2560.0
per_sample_mib: 40.0
line:
  share: 0.8
  mib: 4096.0
  vram_mib: 5120
predictions:
- batch: 96
  bound:
    peak_mib: 3960.0
    percent: 77.34375
    verdict: fits
  peak_mib: 3840.0
  percent: 75.0
  verdict: fits
- batch: 128
  peak_mib: 5120.0
  percent: 100.0
  verdict: out_of_memory
largest_safe_batch: 96
fit:
  fixed_mib: 300.0
  per_sample_mib: 34.375
  points:
  - - 32
    - 1400.0
  - - 64
    - 2500.0
environment:
  cuda_used_to_build_pytorch: "12.4"
  cudnn_version: "90100"
  extra_fact: kept
  nvidia_driver_version: "565.57.01"
  python_version: "3.11.7"
  pytorch_version: 2.5.1+cu124
"#;

    #[test]
    fn a_record_written_with_untyped_predictions_reads_typed_and_writes_back_byte_for_byte() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECORD_FILE);
        std::fs::write(&path, UNTYPED_PREDICTIONS_RECORD).expect("write");
        let record = ProvenStack::read(&path).expect("an old record reads");
        assert_eq!(record.predictions, sample().predictions);
        assert_eq!(record.predictions[0].verdict, Verdict::Fits);
        assert_eq!(
            record.predictions[0].bound.as_ref().map(|b| b.peak_mib),
            Some(3960.0)
        );
        assert_eq!(record.predictions[1].verdict, Verdict::OutOfMemory);
        assert_eq!(record, sample());
        assert_eq!(
            record.to_yaml().expect("encodes"),
            UNTYPED_PREDICTIONS_RECORD,
            "the typed record writes what the untyped one wrote"
        );
    }

    #[test]
    fn a_record_whose_untyped_predictions_were_null_reads_as_none() {
        let yaml = UNTYPED_PREDICTIONS_RECORD.replacen(
            &UNTYPED_PREDICTIONS_RECORD[UNTYPED_PREDICTIONS_RECORD
                .find("predictions:")
                .expect("predictions")
                ..UNTYPED_PREDICTIONS_RECORD
                    .find("largest_safe_batch:")
                    .expect("largest")],
            "predictions: null\n",
            1,
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECORD_FILE);
        std::fs::write(&path, yaml).expect("write");
        let record = ProvenStack::read(&path).expect("reads");
        assert!(record.predictions.is_empty());
    }

    #[test]
    fn the_yaml_uses_the_documented_field_names() {
        let yaml = sample().to_yaml().expect("encodes");
        for key in [
            "proven_at:",
            "kernel:",
            "compute_capability:",
            "driver_cuda:",
            "nvcc:",
            "cuda_build:",
            "architectures:",
            "sha256:",
            "argv:",
            "samples_per_s:",
            "log:",
            "outside_mib: 2560",
            "authority: outside",
            "outside_source: per_process",
            "per_sample_mib: 40",
            "largest_safe_batch: 96",
            "fixed_mib: 300",
            "pytorch_version: 2.5.1+cu124",
        ] {
            assert!(yaml.contains(key), "missing `{key}` in\n{yaml}");
        }
    }

    #[test]
    fn a_record_without_a_fit_omits_it() {
        let record = ProvenStack {
            fit: None,
            ..sample()
        };
        let yaml = record.to_yaml().expect("encodes");
        assert!(!yaml.contains("fit:"));
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECORD_FILE);
        record.write(&path).expect("written");
        assert_eq!(ProvenStack::read(&path).expect("read back").fit, None);
    }

    #[test]
    fn a_record_of_another_schema_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECORD_FILE);
        let yaml = sample()
            .to_yaml()
            .expect("encodes")
            .replacen("record: 1", "record: 9", 1);
        std::fs::write(&path, yaml).expect("write");
        let err = ProvenStack::read(&path).expect_err("schema 9");
        assert!(matches!(err, RecordError::Schema { found: 9, .. }));
        assert!(err.to_string().contains("prove again"), "{err}");
    }

    #[test]
    fn a_damaged_record_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RECORD_FILE);
        std::fs::write(&path, "record: 1\nstack: [unclosed\n").expect("write");
        let err = ProvenStack::read(&path).expect_err("damaged");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn collect_env_text_follows_collect_envs_order() {
        let text = sample().environment.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "PyTorch version: 2.5.1+cu124",
                "CUDA used to build PyTorch: 12.4",
                "Python version: 3.11.7",
                "Nvidia driver version: 565.57.01",
                "cuDNN version: 90100",
                "Extra fact: kept",
            ]
        );
    }

    #[test]
    fn a_failed_run_round_trips_and_never_touches_the_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let record_path = dir.path().join(RECORD_FILE);
        sample().write(&record_path).expect("earlier record");
        let before = std::fs::read(&record_path).expect("read");
        let failed = FailedRun {
            record: RECORD_SCHEMA,
            stack: "torch-2.5.1-cu124-linux".into(),
            failed_at: now_rfc3339(),
            argv: vec!["python".into(), "classify.py".into()],
            batch: 256,
            exit_code: Some(1),
            timed_out: false,
            duration_s: 12.0,
            log: PathBuf::from("logs/example-256.log"),
            reason: "it exited with code 1".into(),
            device: Some("cuda:0".into()),
            layer: Some("example".into()),
            explanation: "CUDA out of memory at batch 256: lower the batch".into(),
            peak_outside_mib: Some(5050),
            last_lines: vec!["torch.OutOfMemoryError: CUDA out of memory.".into()],
        };
        let path = dir.path().join(FAILED_RUN_FILE);
        failed.write(&path).expect("written");
        assert_eq!(FailedRun::read(&path).expect("read back"), failed);
        assert_eq!(std::fs::read(&record_path).expect("read"), before);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let now = now_rfc3339();
        assert!(now.ends_with('Z'), "{now}");
        assert!(now.parse::<jiff::Timestamp>().is_ok(), "{now}");
    }
}
