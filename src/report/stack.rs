//! One stack on one host, as the report shows it: the pins from the kept manifest, each file's
//! trust from the audit (or the lock, when the installers stayed on the host), the proof from the
//! record, doctor's last look, a failed run, and what is newer in the release data.

use std::path::PathBuf;

use serde::Serialize;

use super::lab::{LabState, lab_state};
use crate::archive::{self, FileStatus, Lockfile, Silent, StackDir};
use crate::doctor::seen::LastSeen;
use crate::install::state::ChainState;
use crate::manifest::{self, Layer, Manifest};
use crate::outdated::{self, HostGpu, HostGpus, Outdated};
use crate::record::{FAILED_RUN_FILE, FailedRun, ProvenStack};
use crate::status::{Stage, stage_of};
use crate::vram::Prediction;

/// The largest memory plot the page inlines; plotters writes about 40 KiB.
const MAX_PLOT_BYTES: u64 = 4 * 1024 * 1024;

/// How far a file can be trusted, in the three words the page uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Present and hashing to its lock line, which agrees with the pin.
    Verified,
    /// On disk but not what was locked or pinned (corrupt, untrusted lock line, a stray or a
    /// left-over partial): never run.
    Untrusted,
    /// Locked or pinned, not on disk (never fetched, or deleted).
    Missing,
    /// In the lock, but the installers stayed on the host (a records folder).
    NotCollected,
}

impl Trust {
    fn of(status: FileStatus) -> Self {
        match status {
            FileStatus::Ok => Trust::Verified,
            FileStatus::Missing | FileStatus::Incomplete => Trust::Missing,
            FileStatus::Corrupt
            | FileStatus::Untrusted
            | FileStatus::Unexpected
            | FileStatus::Partial => Trust::Untrusted,
        }
    }
}

/// The pinned layers, from the manifest fetch kept.
#[derive(Debug, Clone, Serialize)]
pub struct Pins {
    pub os: String,
    pub driver: String,
    pub toolkit: String,
    pub library: String,
    pub library_version: String,
    /// The CUDA line the library build was made for.
    pub cuda: String,
}

/// One archived (or pinned) file.
#[derive(Debug, Clone, Serialize)]
pub struct FileRow {
    pub layer: Layer,
    pub file: String,
    pub trust: Trust,
    /// The audit's own word (`ok`, `corrupt`, `untrusted`…); `null` when not audited.
    pub status: Option<FileStatus>,
    pub size: Option<u64>,
    pub url: Option<String>,
    /// The first 12 hex digits of the locked SHA-256.
    pub sha256_prefix: Option<String>,
    pub fetched_at: Option<String>,
}

/// Peak memory as one source saw it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceMib {
    /// `outside_per_process`, `framework_torch_max_reserved`, `allocated`, `context`, `baseline`.
    pub source: String,
    pub mib: f64,
}

/// The proof, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Proof {
    pub proven_at: String,
    pub hostname: String,
    pub gpu: Option<String>,
    pub vram_mib: Option<u64>,
    pub driver: Option<String>,
    /// The device the example reported (`cuda:0`).
    pub device: Option<String>,
    pub toolkit: String,
    pub library: String,
    pub batch: u32,
    pub duration_s: f64,
    /// The peak the predictions start from, and which view it is.
    pub peak_mib: f64,
    pub peak_authority: String,
    pub peak_by_source: Vec<SourceMib>,
    pub per_sample_mib: f64,
    pub line_share: f64,
    pub line_mib: f64,
    pub largest_safe_batch: Option<u32>,
    pub predictions: Vec<Prediction>,
}

/// The example run that failed to prove the stack (`failed-run.yaml`).
#[derive(Debug, Clone, Serialize)]
pub struct FailedSummary {
    pub failed_at: String,
    pub batch: u32,
    pub reason: String,
    pub layer: Option<String>,
}

/// One stack on one host.
#[derive(Debug, Clone, Serialize)]
pub struct StackReport {
    pub host: String,
    /// The stack's name; empty for a host that had none.
    pub stack: String,
    pub state: LabState,
    /// The date of the record that decided the state.
    pub date: Option<String>,
    pub stage: Stage,
    pub pins: Option<Pins>,
    /// Whether the installers were there to hash (false for a records folder without them).
    pub installers_collected: bool,
    pub files: Vec<FileRow>,
    pub proof: Option<Proof>,
    /// `proven-stack.svg`, the memory curve the page inlines.
    pub memory_plot: Option<PathBuf>,
    #[serde(skip)]
    pub memory_plot_svg: Option<String>,
    /// What `stackpin doctor` last saw (`doctor.yaml`), when it looked.
    pub doctor: Option<LastSeen>,
    pub failed_run: Option<FailedSummary>,
    /// Newer releases than the pins, from the release data in use.
    pub outdated: Option<Outdated>,
    /// Files that could not be read, each with what went wrong.
    pub problems: Vec<String>,
}

impl StackReport {
    /// A host that holds no stack: one "never tried" row so the host still shows.
    pub fn nothing_on(host: &str) -> Self {
        Self {
            host: host.to_string(),
            stack: String::new(),
            state: LabState::NeverTried,
            date: None,
            stage: Stage::Empty,
            pins: None,
            installers_collected: false,
            files: Vec::new(),
            proof: None,
            memory_plot: None,
            memory_plot_svg: None,
            doctor: None,
            failed_run: None,
            outdated: None,
            problems: Vec::new(),
        }
    }
}

/// Reads one stack folder. `hash` says whether to audit the installers (an archive) or only
/// list the lock when none came along (a records folder).
pub fn gather(stack: &StackDir, host: &str, hash: bool, threads: usize) -> StackReport {
    let mut problems = Vec::new();
    let mut note = |e: &dyn std::fmt::Display| problems.push(e.to_string());
    let manifest = read_optional(&stack.manifest_path(), manifest::read, &mut note);
    let record = read_optional(&stack.proven_stack_path(), ProvenStack::read, &mut note);
    let failed = read_optional(
        &stack.root().join(FAILED_RUN_FILE),
        FailedRun::read,
        &mut note,
    );
    let doctor = LastSeen::read(stack.root()).unwrap_or_else(|e| {
        note(&e);
        None
    });
    let state = ChainState::load(&stack.state_path()).unwrap_or_else(|e| {
        note(&e);
        ChainState::default()
    });
    let lock_present = stack.lock_path().is_file();
    let collected = hash || Layer::ORDER.iter().any(|&l| stack.layer_dir(l).is_dir());
    let files = files(
        stack,
        manifest.as_ref(),
        lock_present,
        collected,
        threads,
        &mut note,
    );
    let audit_ok = collected
        .then(|| !files.iter().any(|f| f.trust != Trust::Verified))
        .filter(|_| lock_present);
    let stage = stage_of(lock_present, &state, record.is_some());
    let state_at = state.layers.values().map(|l| l.at.clone()).max();
    let (lab, date) = lab_state(&super::lab::Seen {
        stage,
        audit_ok,
        proven_at: record.as_ref().map(|r| r.proven_at.as_str()),
        doctor: doctor.as_ref(),
        failed_at: failed.as_ref().map(|f| f.failed_at.as_str()),
        state_at: state_at.as_deref(),
    });
    let plot = stack.proven_plot_path();
    let memory_plot_svg = record.as_ref().and_then(|_| read_plot(&plot));
    StackReport {
        host: host.to_string(),
        stack: stack.name(),
        state: lab,
        date,
        stage,
        pins: manifest.as_ref().map(pins),
        installers_collected: collected,
        files,
        outdated: manifest
            .as_ref()
            .map(|m| outdated::outdated(m, &gpus_of(record.as_ref()))),
        proof: record.as_ref().map(proof),
        memory_plot: memory_plot_svg.as_ref().map(|_| plot),
        memory_plot_svg,
        doctor,
        failed_run: failed.map(|f| FailedSummary {
            failed_at: f.failed_at,
            batch: f.batch,
            reason: f.reason,
            layer: f.layer,
        }),
        problems,
    }
}

/// Reads a file that may not be there; a file that is there and does not read is a problem.
fn read_optional<T, E: std::fmt::Display>(
    path: &std::path::Path,
    read: impl Fn(&std::path::Path) -> Result<T, E>,
    note: &mut dyn FnMut(&dyn std::fmt::Display),
) -> Option<T> {
    if !path.is_file() {
        return None;
    }
    read(path).map_err(|e| note(&e)).ok()
}

fn read_plot(path: &std::path::Path) -> Option<String> {
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_PLOT_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Each file's row: audited against the lock (and the pins) when the installers are here, the
/// lock's lines when they stayed on the host, the manifest's installers when nothing was fetched.
fn files(
    stack: &StackDir,
    manifest: Option<&Manifest>,
    lock_present: bool,
    collected: bool,
    threads: usize,
    note: &mut dyn FnMut(&dyn std::fmt::Display),
) -> Vec<FileRow> {
    if !lock_present {
        return manifest.map(pinned_but_missing).unwrap_or_default();
    }
    let lock = match stack.read_lock() {
        Ok(lock) => lock,
        Err(e) => {
            note(&e);
            return Vec::new();
        }
    };
    if !collected {
        return lock
            .files
            .iter()
            .map(|e| row(&lock, e.layer, &e.file, Trust::NotCollected, None, None))
            .collect();
    }
    match archive::audit_stack(stack, manifest, threads, &Silent) {
        Ok(report) => report
            .files
            .iter()
            .map(|f| {
                let file = f.path.split_once('/').map_or(f.path.as_str(), |(_, n)| n);
                row(
                    &lock,
                    f.layer,
                    file,
                    Trust::of(f.status),
                    Some(f.status),
                    f.size,
                )
            })
            .collect(),
        Err(e) => {
            note(&e);
            Vec::new()
        }
    }
}

fn row(
    lock: &Lockfile,
    layer: Layer,
    file: &str,
    trust: Trust,
    status: Option<FileStatus>,
    size: Option<u64>,
) -> FileRow {
    let entry = lock.find(layer, file);
    FileRow {
        layer,
        file: file.to_string(),
        trust,
        status,
        size: size.or(entry.map(|e| e.size)),
        url: entry.map(|e| e.url.clone()),
        sha256_prefix: entry.map(|e| e.sha256.chars().take(12).collect()),
        fetched_at: entry.map(|e| e.fetched_at.clone()),
    }
}

fn pinned_but_missing(m: &Manifest) -> Vec<FileRow> {
    Layer::ORDER
        .iter()
        .flat_map(|&layer| {
            m.installers(layer).into_iter().map(move |inst| FileRow {
                layer,
                file: inst.file_name().unwrap_or_else(|| inst.url.clone()),
                trust: Trust::Missing,
                status: Some(FileStatus::Missing),
                size: None,
                url: Some(inst.url.clone()),
                sha256_prefix: inst.sha256.as_ref().map(|h| h.chars().take(12).collect()),
                fetched_at: None,
            })
        })
        .collect()
}

fn pins(m: &Manifest) -> Pins {
    Pins {
        os: m.os.to_string(),
        driver: m.driver.version.to_string(),
        toolkit: m.toolkit.version.to_string(),
        library: m.library.name.to_string(),
        library_version: m.library.version.to_string(),
        cuda: m.library.cuda.to_string(),
    }
}

/// The GPUs the proof ran on stand in for the host's: the report probes no machine.
fn gpus_of(record: Option<&ProvenStack>) -> HostGpus {
    match record {
        Some(r) if !r.gpus.is_empty() => HostGpus::Known(
            r.gpus
                .iter()
                .map(|g| HostGpu {
                    name: g.name.clone(),
                    compute_cap: g.compute_capability.clone(),
                })
                .collect(),
        ),
        _ => HostGpus::Unknown("no proof yet: the host's GPUs are not known".to_string()),
    }
}

/// An enum's snake_case name, as its serde spelling (the JSON's).
pub(super) fn word<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn proof(r: &ProvenStack) -> Proof {
    let gpu = r.gpus.iter().find(|g| g.index == r.example.gpu_index);
    let p = &r.peak;
    let mut sources = Vec::new();
    if let Some(mib) = p.outside_mib {
        let source = format!("outside_{}", word(&p.outside_source));
        sources.push(SourceMib {
            source,
            mib: mib as f64,
        });
    }
    if let Some(mib) = p.framework_mib {
        let counter = p.framework_counter.as_ref().map(word).unwrap_or_default();
        let source = format!("framework_{counter}")
            .trim_end_matches('_')
            .to_string();
        sources.push(SourceMib { source, mib });
    }
    for (source, mib) in [
        ("allocated", p.allocated_mib),
        ("context", p.context_mib),
        ("baseline", p.baseline_mib.map(|b| b as f64)),
    ] {
        if let Some(mib) = mib {
            sources.push(SourceMib {
                source: source.to_string(),
                mib,
            });
        }
    }
    Proof {
        proven_at: r.proven_at.clone(),
        hostname: r.host.hostname.clone(),
        gpu: gpu.map(|g| g.name.clone()),
        vram_mib: gpu.map(|g| g.vram_mib),
        driver: gpu.map(|g| g.driver.clone()),
        device: r.example.device.clone(),
        toolkit: r.toolkit.version.clone(),
        library: format!("{} {}", r.library.name, r.library.version),
        batch: r.example.batch,
        duration_s: r.example.duration_s,
        peak_mib: p.mib,
        peak_authority: word(&p.authority),
        peak_by_source: sources,
        per_sample_mib: r.per_sample_mib,
        line_share: r.line.share,
        line_mib: r.line.mib,
        largest_safe_batch: r.largest_safe_batch,
        predictions: r.predictions.clone(),
    }
}
