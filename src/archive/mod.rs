//! The installer archive: `<archive>/<name>/{driver,toolkit,library}/`, its `stack.lock`, and the
//! operations on it — fetch (stream + hash in one pass, resume, retry, mirror, pip wheels),
//! audit (re-hash everything against the lock), and zip bundles for an offline rebuild.
//!
//! This module prints nothing and draws no bars: it reports through [`Progress`], and the CLI
//! decides what the user sees. It reads no environment variables: knobs arrive as
//! [`FetchConfig`]. Running installers is `install`'s job; it calls [`verify_entry`] first.

mod audit;
mod bundle;
mod download;
mod fetch;
mod http_error;
mod layout;
mod pip;
mod prerequisites;
mod root;
mod toolkit_wheels;
mod trust;
mod uv;

use std::path::PathBuf;

pub use audit::{AuditReport, FileAudit, FileStatus, audit_stack};
pub use bundle::{BundleSummary, bundle, unbundle};
pub use download::{RetryPolicy, Timeouts, download_one, redirect_downgrades};
pub use fetch::wheel_name_version;
pub use fetch::{FetchConfig, FetchReport, FetchedFile, FileOutcome, fetch};
pub use layout::{
    LockEntry, Lockfile, PinConflict, StackDir, StackLock, hash_file, layer_files, manifest_pin,
    pin_conflict, pin_conflicts, stage_verified, verify_entry, verify_pinned,
};
pub use pip::{PIP_LABEL, PipTarget, foreign_variables, hermetic_settings, is_foreign_variable};
pub use prerequisites::{
    APT_SOURCE_PREFIX, DebId, deb_identity, is_prerequisite_entry, prerequisite_entries,
};
pub use root::Archive;
pub use toolkit_wheels::{ENV_FILE, UnpackedToolkit, env_script, install_toolkit_wheels};
pub use trust::{TrustSummary, VerifiedAgainst, summarize as trust_summary};
pub use uv::{UV_SOURCE_PREFIX, extract_uv, is_installer_entry, uv_binary_path, uv_entry};

use crate::manifest::Layer;

/// The Python whose wheels a pip library is fetched for: pip must know which Python's wheels to
/// download, so a manifest with a pip library names `library.python_version` (none without pip).
pub fn pip_python_version(
    manifest: &crate::manifest::Manifest,
) -> Result<Option<crate::version::Version>, ArchiveError> {
    match (&manifest.library.pip, &manifest.library.python_version) {
        (None, _) => Ok(None),
        (Some(_), Some(version)) => Ok(Some(version.clone())),
        (Some(_), None) => Err(ArchiveError::NoPythonVersion {
            stack: manifest.name.clone(),
        }),
    }
}

/// Where a fetch, audit or bundle reports what it is doing; the CLI draws bars from it.
///
/// Implementations must be cheap and thread-safe: downloads and hashing run in parallel and
/// call these from several threads, each naming the file it speaks of.
pub trait Progress: Sync {
    /// Work on `file` began; `total` is its size in bytes when known.
    fn started(&self, file: &str, total: Option<u64>);
    /// `bytes` more of `file` were downloaded or hashed.
    fn advanced(&self, file: &str, bytes: u64);
    /// Work on `file` ended, well or not.
    fn finished(&self, file: &str);
    /// Something the user should know while waiting (another fetch holds the lock, a retry).
    fn note(&self, text: &str);
    /// Before any work: every file this run will deal with, and its size where already known
    /// (from the lock), so a total can count the files not yet started.
    fn planned(&self, _files: &[(String, Option<u64>)]) {}
    /// `bytes` of `file` were already on disk (a kept partial) and are not downloaded again:
    /// they count toward the file's size, never toward the download rate.
    fn resumed(&self, file: &str, bytes: u64) {
        self.advanced(file, bytes);
    }
    /// `file` is archived and verified, `bytes` in all.
    fn archived(&self, _file: &str, _bytes: u64) {}
}

/// A [`Progress`] that reports nothing, for callers (and tests) without a screen.
pub struct Silent;

impl Progress for Silent {
    fn started(&self, _: &str, _: Option<u64>) {}
    fn advanced(&self, _: &str, _: u64) {}
    fn finished(&self, _: &str) {}
    fn note(&self, _: &str) {}
}

/// Everything that can go wrong in the archive, with the values a user needs to act.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "checksum mismatch for {url}\n  expected sha256 {expected}\n  actual   sha256 {actual}\n  the download was deleted; if the publisher really changed the file, update the pin after checking why"
    )]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },
    /// A file, pin or lock line that disagrees with the checksum published for its URL.
    #[error("{0}")]
    PublishedMismatch(Box<PublishedMismatch>),
    #[error(
        "{layer}/{file}: the lock says sha256 {locked} but the manifest pins {pinned}; a lock is never rewritten silently: fix the pin, or delete the entry from stack.lock if the new file is the one you want"
    )]
    LockConflict {
        layer: Layer,
        file: String,
        locked: String,
        pinned: String,
    },
    #[error(
        "{layer}/{file}: stack.lock says sha256 {locked}, but the manifest's `{field}` pins {pinned}; the file and its lock line do not match the pin, so it is not trusted and will not be run; fix: if the manifest is right, delete the file and its stack.lock entry and run `stackpin fetch` again (or restore the archive from a trusted bundle); if the publisher really changed the file, check why, then update `{field}`"
    )]
    PinMismatch {
        layer: Layer,
        file: String,
        field: String,
        pinned: String,
        locked: String,
    },
    #[error(
        "--locked: {layer}/{file} ({url}) has no sha256 in the manifest or the lock; pin `sha256:` or run `stackpin fetch` once without --locked"
    )]
    Unpinned {
        layer: Layer,
        file: String,
        url: String,
    },
    #[error("download of {url} failed after {attempts} attempt(s): {reason}")]
    Download {
        url: String,
        attempts: u32,
        reason: String,
    },
    #[error("{what}: the file name `{name}` is unsafe: {why}")]
    UnsafeName {
        what: String,
        name: String,
        why: &'static str,
    },
    #[error(
        "{path}: not a valid stack.lock: {reason}; restore it from a bundle or delete it and fetch again"
    )]
    BadLock { path: PathBuf, reason: String },
    #[error(
        "{}: not written: {why}; write the bundle somewhere else with `-o` (e.g. `-o stack.zip` in another folder)",
        path.display()
    )]
    BundleOntoInput { path: PathBuf, why: String },
    #[error("no stack.lock in {dir}; run `stackpin fetch MANIFEST` first")]
    NoLock { dir: PathBuf },
    #[error(
        "stack {stack}: library.python_version is needed to fetch pip libraries (pip must know which Python's wheels to download); add e.g. `python_version: \"3.12\"` to the manifest"
    )]
    NoPythonVersion { stack: String },
    #[error(
        "the archive {} does not exist; pass the archive folder with --archive DIR (or STACKPIN_ARCHIVE), or run `stackpin fetch MANIFEST` to start one there",
        dir.display()
    )]
    NoArchive { dir: PathBuf },
    #[error(
        "{layer}/{file} is missing from the archive ({path}); run `stackpin fetch` to fetch it again"
    )]
    Missing {
        layer: Layer,
        file: String,
        path: PathBuf,
    },
    #[error(
        "{path} is corrupt: expected sha256 {expected}, found {actual}; it will not be run; run `stackpin fetch` to fetch it again"
    )]
    Corrupt {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "another stackpin is working on {} (a fetch, install, repair or up); --no-wait was given, so nothing was done; run the same command again when it has finished",
        dir.display()
    )]
    Busy { dir: PathBuf },
    #[error("{0}")]
    Pip(String),
    /// apt could not archive the driver's prerequisites (`driver.prerequisites`).
    #[error("driver prerequisites: {0}")]
    Prerequisites(String),
    #[error(
        "the archive is incomplete: {} not archived yet (a fetch stopped before it finished); incomplete: run `stackpin fetch MANIFEST`",
        requirements.join(", ")
    )]
    Incomplete { requirements: Vec<String> },
    #[error("bundle {path}: {reason}")]
    Bundle { path: PathBuf, reason: String },
    /// The bundle file is missing, unreadable or not a zip: an input error.
    #[error("bundle {path}: {reason}; give the path of a zip written by `stackpin bundle`")]
    BundleUnreadable { path: PathBuf, reason: String },
    /// The unpacked files failed their audit: a problem found, nothing was kept.
    #[error("bundle {path}: failed its audit ({failed}); nothing was kept")]
    BundleFailedAudit { path: PathBuf, failed: String },
    #[error("bundle {path}: entry `{entry}` refused: {why}; nothing was unpacked")]
    UnsafeEntry {
        path: PathBuf,
        entry: String,
        why: &'static str,
    },
    #[error("{0} file(s) failed; see the errors above")]
    Several(usize),
}

/// What [`ArchiveError::PublishedMismatch`] carries.
#[derive(Debug, thiserror::Error)]
#[error(
    "{what} of {url} disagrees with the checksum published for it\n  published sha256 {published} ({source_name})\n  {what_short:<9} sha256 {actual}\n  nothing was archived under the file's name; fetch it again later, or from a mirror you trust, and report a file that keeps disagreeing"
)]
pub struct PublishedMismatch {
    pub url: String,
    /// `the download`, `the manifest's sha256 pin`, `stack.lock's sha256`.
    pub what: String,
    /// A short label for the second hash line (`download`, `pin`, `lock`).
    pub what_short: String,
    pub published: String,
    pub actual: String,
    /// Where the published value was read (the data set's `checksums.yaml`).
    pub source_name: String,
}

impl ArchiveError {
    /// Wraps an I/O error with what was being done to which path.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// True when the error is about the archive's content (a check found a problem, exit 1)
    /// rather than about reaching or writing things (exit 3).
    pub fn is_problem(&self) -> bool {
        matches!(
            self,
            Self::Checksum { .. }
                | Self::PublishedMismatch(_)
                | Self::LockConflict { .. }
                | Self::PinMismatch { .. }
                | Self::Busy { .. }
                | Self::Unpinned { .. }
                | Self::Missing { .. }
                | Self::Corrupt { .. }
                | Self::UnsafeName { .. }
                | Self::UnsafeEntry { .. }
                | Self::BundleFailedAudit { .. }
                | Self::BadLock { .. }
                | Self::Incomplete { .. }
        )
    }
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for ArchiveError {
    fn exit(&self) -> Exit {
        match self {
            // An archived file or lock that is not what was pinned: refused, never run.
            e if e.is_problem() && !matches!(e, ArchiveError::BadLock { .. }) => Exit::Problem,
            // A bundle whose content is wrong: a corrupt bundle, refused.
            ArchiveError::Bundle { .. } => Exit::Problem,
            // An unreadable or invalid file the user handed over (a lock, a bundle).
            ArchiveError::BadLock { .. }
            | ArchiveError::NoLock { .. }
            | ArchiveError::NoArchive { .. }
            | ArchiveError::NoPythonVersion { .. }
            | ArchiveError::BundleOntoInput { .. }
            | ArchiveError::BundleUnreadable { .. } => Exit::Input,
            // A file the user named that cannot be read; a full disk is never the input's fault.
            ArchiveError::Io { action, source, .. }
                if matches!(*action, "reading" | "opening")
                    && !crate::fsutil::is_disk_full(source) =>
            {
                Exit::Input
            }
            _ => Exit::External,
        }
    }
}
