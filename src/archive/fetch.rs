//! `fetch`: turns a manifest into an archived stack. Decides each file's expected hash (the
//! manifest's pin, else the lock's), skips files already archived intact, downloads the rest in
//! parallel (mirror first when one is set), renames only verified files into place, and keeps
//! `stack.lock` current after every file so an interrupted fetch loses nothing.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use super::download::{Downloader, RetryPolicy, Timeouts};
use super::layout::{hash_file, make_read_only, remove_file};
use super::pip::{self, PipTarget};
use super::trust::VerifiedAgainst;
use super::uv::{UV_SOURCE_PREFIX, is_installer_entry};
use super::{ArchiveError, LockEntry, Lockfile, Progress, PublishedMismatch, StackDir};
use crate::manifest::{
    Layer, LibraryInstaller, Manifest, ToolkitSource, ToolkitWheel, validate::unsafe_file_name,
};

/// Knobs of a fetch; the CLI fills them from flags and environment variables.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Downloads at once.
    pub jobs: usize,
    /// Refuse any file whose sha256 is pinned in neither the manifest nor the lock.
    pub locked: bool,
    /// A lab mirror serving an archive folder with the same layout, tried first.
    pub mirror: Option<String>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// The fetch host's Python, used for `pip download`.
    pub python: String,
    /// The index uv's pinned wheel is downloaded from; `None` for pip's own default index.
    /// Never the library's indexes: uv is a tool of the install, not one of its dependencies.
    pub uv_index_url: Option<String>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            jobs: 3,
            locked: false,
            mirror: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            python: "python3".into(),
            uv_index_url: None,
        }
    }
}

/// How a file came to be in the archive this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOutcome {
    /// It was there and matched the lock: nothing downloaded.
    AlreadyArchived,
    /// Downloaded from its original URL.
    Downloaded,
    /// Downloaded from the lab mirror.
    Mirror,
    /// It was there but corrupt, and was downloaded again.
    Repaired,
}

/// One file the fetch dealt with.
#[derive(Debug, Clone, Serialize)]
pub struct FetchedFile {
    pub layer: Layer,
    pub file: String,
    pub sha256: String,
    pub size: u64,
    pub outcome: FileOutcome,
}

/// What a fetch did: the files that are now archived and the ones that failed.
#[derive(Debug)]
pub struct FetchReport {
    pub stack: PathBuf,
    pub files: Vec<FetchedFile>,
    pub errors: Vec<ArchiveError>,
}

impl FetchReport {
    /// Whether a file failed because the archive's disk is full: fetching again helps only
    /// once there is room.
    pub fn disk_full(&self) -> bool {
        self.disk_full_failures() > 0
    }

    /// How many files failed on a full disk.
    pub fn disk_full_failures(&self) -> usize {
        self.errors
            .iter()
            .filter(|e| crate::fsutil::disk_full_in_chain(*e))
            .count()
    }
}

/// A file to archive, with what it must hash to when that is already known.
struct Wanted {
    layer: Layer,
    file: String,
    url: String,
    expected: Option<String>,
    /// The size the lock recorded for this file at this URL: a download stops past it.
    locked_size: Option<u64>,
    /// What `expected` is (the lock keeps it); `None` for wheels an index served.
    verified: Option<VerifiedAgainst>,
}

/// Archives every installer of `manifest` into `<archive>/<name>/` and records it in the lock.
/// Errors that stop everything (a lock conflict, `--locked` refusals) come back as `Err`;
/// failures of single files are collected in the report while the others continue.
pub fn fetch(
    manifest: &Manifest,
    manifest_text: &str,
    archive: &super::Archive,
    config: &FetchConfig,
    progress: &dyn Progress,
) -> Result<FetchReport, ArchiveError> {
    let python_version = super::pip_python_version(manifest)?;
    let stack = archive.stack(&manifest.name);
    stack.create()?;
    let _guard = stack.lock(progress)?;
    let mut lock = stack.read_lock()?;
    lock.stack = manifest.name.clone();
    let wanted = plan(manifest, &lock, config.locked)?;
    announce(&wanted, &lock, progress);
    let path = stack.manifest_path();
    crate::fsutil::write_atomic(&path, manifest_text.as_bytes())
        .map_err(|e| ArchiveError::io("writing", path, e))?;

    let shared = Shared::new(&stack, lock, config, progress)?;
    let mut report = FetchReport {
        stack: stack.root().to_path_buf(),
        files: Vec::new(),
        errors: Vec::new(),
    };
    for result in shared.download_all(wanted, config.jobs) {
        match result {
            Ok(f) => report.files.push(f),
            Err(e) => report.errors.push(e),
        }
    }
    if manifest.toolkit.source == ToolkitSource::Wheels {
        shared.archive_components(manifest, python_version.as_ref(), config, &mut report)?;
    }
    if let Some(python_version) = python_version {
        shared.archive_library(manifest, python_version, config, &mut report);
    }
    if let Some(p) = &manifest.driver.prerequisites {
        match super::prerequisites::archive(p, &stack, &shared.lock, config.locked, progress) {
            Ok(files) => report
                .files
                .extend(files.into_iter().map(prerequisite_file)),
            Err(e) => report.errors.push(e),
        }
    }
    Ok(report)
}

/// Tells the progress reporter every file to come, with the size the lock knows for it.
fn announce(wanted: &[Wanted], lock: &Lockfile, progress: &dyn Progress) {
    let sizes: Vec<(String, Option<u64>)> = wanted
        .iter()
        .map(|w| {
            let known = lock
                .find(w.layer, &w.file)
                .filter(|e| e.url == w.url)
                .map(|e| e.size);
            (format!("{}/{}", w.layer, w.file), known)
        })
        .collect();
    progress.planned(&sizes);
}

/// An archived driver prerequisite, as the fetch reports every file.
fn prerequisite_file(a: super::prerequisites::Archived) -> FetchedFile {
    use super::prerequisites::Outcome;
    FetchedFile {
        layer: Layer::Driver,
        file: a.file,
        sha256: a.sha256,
        size: a.size,
        outcome: match a.outcome {
            Outcome::AlreadyArchived => FileOutcome::AlreadyArchived,
            Outcome::Downloaded => FileOutcome::Downloaded,
            Outcome::Repaired => FileOutcome::Repaired,
        },
    }
}

/// Resolves each installer's file name and expected hash, refusing conflicts before any download.
fn plan(manifest: &Manifest, lock: &Lockfile, locked: bool) -> Result<Vec<Wanted>, ArchiveError> {
    let mut wanted = Vec::new();
    for layer in Layer::ORDER {
        for installer in manifest.installers(layer) {
            let file = installer.file_name().unwrap_or_default();
            if let Some(why) = unsafe_file_name(&file) {
                return Err(ArchiveError::UnsafeName {
                    what: format!("{layer}.installer.url {}", installer.url),
                    name: file,
                    why,
                });
            }
            let pinned = installer.sha256.as_deref().map(str::to_ascii_lowercase);
            // A lock entry only speaks for the URL it was made from; a changed URL is a new file.
            let locked_entry = lock.find(layer, &file).filter(|e| e.url == installer.url);
            let locked_sha = locked_entry.map(|e| e.sha256.to_ascii_lowercase());
            if let (Some(p), Some(l)) = (&pinned, &locked_sha)
                && p != l
            {
                return Err(ArchiveError::LockConflict {
                    layer,
                    file,
                    locked: l.clone(),
                    pinned: p.clone(),
                });
            }
            let (expected, verified) = expected_hash(&installer.url, pinned, locked_entry)?;
            if locked && locked_sha.is_none() && installer.sha256.is_none() {
                return Err(ArchiveError::Unpinned {
                    layer,
                    file,
                    url: installer.url.clone(),
                });
            }
            wanted.push(Wanted {
                layer,
                file,
                url: installer.url.clone(),
                // Only when the lock's hash is the one expected: a new pin may mean a new size.
                locked_size: locked_entry
                    .map(|e| e.size)
                    .filter(|_| Some(&expected) == locked_sha.as_ref()),
                expected: Some(expected).filter(|e| !e.is_empty()),
                verified: Some(verified),
            });
        }
    }
    Ok(wanted)
}

/// The sha256 a file at `url` must have and what vouches for it: the manifest's pin, else the
/// lock's, else the checksum published for the URL in the release data, else nothing yet (an
/// empty hash: trust on first use). A pin or lock that disagrees with a published checksum is
/// refused: one of them is not the publisher's file.
fn expected_hash(
    url: &str,
    pinned: Option<String>,
    locked: Option<&LockEntry>,
) -> Result<(String, VerifiedAgainst), ArchiveError> {
    let published = crate::compat::published_checksum(url);
    let disagrees = |what: &str, what_short: &str, actual: &str| {
        published
            .filter(|p| !p.sha256.eq_ignore_ascii_case(actual))
            .map(|p| {
                ArchiveError::PublishedMismatch(Box::new(PublishedMismatch {
                    url: url.to_string(),
                    what: what.into(),
                    what_short: what_short.into(),
                    published: p.sha256.to_ascii_lowercase(),
                    actual: actual.to_string(),
                    source_name: p.source.clone(),
                }))
            })
    };
    let vouched = |fallback: VerifiedAgainst| match published {
        Some(p) => VerifiedAgainst::Published(p.source.clone()),
        None => fallback,
    };
    if let Some(pin) = pinned {
        if let Some(e) = disagrees("the manifest's sha256 pin", "pin", &pin) {
            return Err(e);
        }
        return Ok((pin, vouched(VerifiedAgainst::ManifestPin)));
    }
    if let Some(entry) = locked {
        let sha = entry.sha256.to_ascii_lowercase();
        if let Some(e) = disagrees("stack.lock's sha256", "lock", &sha) {
            return Err(e);
        }
        let recorded = entry
            .verified_against
            .clone()
            .unwrap_or(VerifiedAgainst::TrustOnFirstUse);
        return Ok((sha, vouched(recorded)));
    }
    Ok(match published {
        Some(p) => (
            p.sha256.to_ascii_lowercase(),
            VerifiedAgainst::Published(p.source.clone()),
        ),
        None => (String::new(), VerifiedAgainst::TrustOnFirstUse),
    })
}

/// What the download threads share.
struct Shared<'a> {
    stack: &'a StackDir,
    lock: Mutex<Lockfile>,
    downloader: Downloader,
    mirror: Option<(&'a str, Downloader)>,
    progress: &'a dyn Progress,
}

impl<'a> Shared<'a> {
    fn new(
        stack: &'a StackDir,
        lock: Lockfile,
        config: &'a FetchConfig,
        progress: &'a dyn Progress,
    ) -> Result<Self, ArchiveError> {
        let mirror_downloader = Downloader::new(
            config.timeouts,
            RetryPolicy {
                attempts: 1,
                ..config.retry
            },
        )?;
        Ok(Shared {
            stack,
            lock: Mutex::new(lock),
            downloader: Downloader::new(config.timeouts, config.retry)?,
            mirror: config.mirror.as_deref().map(|m| (m, mirror_downloader)),
            progress,
        })
    }
}

impl Shared<'_> {
    /// Downloads the planned installers, `jobs` at once; the results come back in plan order.
    fn download_all(
        &self,
        wanted: Vec<Wanted>,
        jobs: usize,
    ) -> Vec<Result<FetchedFile, ArchiveError>> {
        let queue = Mutex::new(wanted.into_iter().enumerate().collect::<VecDeque<_>>());
        let results = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..jobs.max(1) {
                s.spawn(|| {
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                        let Some((i, want)) = next else { break };
                        let result = self.archive_one(&want);
                        if let Ok(mut r) = results.lock() {
                            r.push((i, result));
                        }
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_default();
        results.sort_by_key(|(i, _)| *i);
        results.into_iter().map(|(_, r)| r).collect()
    }

    /// A wheel toolkit's component wheels, each by its pin.
    fn archive_components(
        &self,
        manifest: &Manifest,
        python_version: Option<&crate::version::Version>,
        config: &FetchConfig,
        report: &mut FetchReport,
    ) -> Result<(), ArchiveError> {
        // Component wheels are `py3-none-<platform>`: any Python's tags select them.
        let any_python = match python_version {
            Some(v) => v.clone(),
            None => crate::version::Version::parse("3.12")
                .map_err(|e| ArchiveError::Pip(e.to_string()))?,
        };
        let tool = PipTarget {
            os: manifest.os,
            python_version: any_python,
            index_url: manifest.toolkit.index_url.clone(),
            extra_index_urls: Vec::new(),
            requirements: Vec::new(),
        };
        let pip_run = PipRun::of(config);
        for component in &manifest.toolkit.components {
            match self.archive_component(&tool, &pip_run, component) {
                Ok(file) => report.files.push(file),
                Err(e) => report.errors.push(e),
            }
        }
        Ok(())
    }

    /// The library's wheels through pip, then uv from the data's pin when it installs them.
    fn archive_library(
        &self,
        manifest: &Manifest,
        python_version: crate::version::Version,
        config: &FetchConfig,
        report: &mut FetchReport,
    ) {
        let Some(pip_section) = &manifest.library.pip else {
            return;
        };
        let target = PipTarget {
            os: manifest.os,
            python_version,
            index_url: pip_section.index_url.clone(),
            extra_index_urls: pip_section.extra_index_urls.clone(),
            requirements: pip_section.requirements.clone(),
        };
        let pip_run = PipRun::of(config);
        match self.archive_pip(&target, &pip_run, config.locked) {
            Ok(files) => report.files.extend(files),
            Err(e) => report.errors.push(e),
        }
        if manifest.library.installer == LibraryInstaller::Uv && report.errors.is_empty() {
            let uv = crate::compat::uv_pin().and_then(|pin| {
                pin.wheel(manifest.os).map(|wheel| PinnedWheel {
                    requirement: format!("uv=={}", pin.version),
                    file: wheel.file.clone(),
                    sha256: wheel.sha256.to_ascii_lowercase(),
                    index_url: config.uv_index_url.clone(),
                })
            });
            match self.archive_uv(&target, &pip_run, uv.as_ref()) {
                Ok(file) => report.files.push(file),
                Err(e) => report.errors.push(e),
            }
        }
    }

    fn archive_one(&self, want: &Wanted) -> Result<FetchedFile, ArchiveError> {
        let final_path = self.stack.file_path(want.layer, &want.file);
        let label = format!("{}/{}", want.layer, want.file);
        let mut outcome = FileOutcome::Downloaded;
        if final_path.exists() {
            if let Some(expected) = &want.expected {
                let (actual, size) = hash_file(&final_path, None)
                    .map_err(|e| ArchiveError::io("reading", &final_path, e))?;
                if &actual == expected {
                    self.record(want, &actual, size)?;
                    self.progress.archived(&label, size);
                    return Ok(self.fetched(want, actual, size, FileOutcome::AlreadyArchived));
                }
                self.progress.note(&format!(
                    "{label} is corrupt (sha256 {actual}, expected {expected}); fetching it again"
                ));
                outcome = FileOutcome::Repaired;
            }
            // Unknown to the lock and unpinned: nothing proves it, so it is fetched afresh.
            remove_file(&final_path)?;
        }
        let partial = partial_path(&final_path);
        let mut from_mirror = None;
        if let (Some((mirror, downloader)), Some(expected)) = (&self.mirror, &want.expected) {
            // Only files with a known hash come from the mirror: nothing else could prove its copy.
            let url = mirror_url(mirror, &self.stack.name(), want.layer, &want.file);
            match downloader.download_at_most(
                &url,
                &partial,
                &label,
                want.locked_size,
                self.progress,
            ) {
                Ok((actual, size)) if &actual == expected => from_mirror = Some((actual, size)),
                Ok((actual, _)) => {
                    remove_file(&partial)?;
                    self.progress.note(&format!(
                        "{label}: the mirror's copy has sha256 {actual}, expected {expected}; using {}",
                        want.url
                    ));
                }
                // This side's disk is full: upstream would land on the same disk.
                Err(e) if crate::fsutil::disk_full_in_chain(&e) => {
                    self.progress.finished(&label);
                    return Err(e);
                }
                Err(e) => self
                    .progress
                    .note(&format!("{label}: mirror failed ({e}); using {}", want.url)),
            }
            self.progress.finished(&label);
        }
        let (actual, size) = match from_mirror {
            Some(done) => {
                outcome = FileOutcome::Mirror;
                done
            }
            None => {
                let result = self.downloader.download_at_most(
                    &want.url,
                    &partial,
                    &label,
                    want.locked_size,
                    self.progress,
                );
                self.progress.finished(&label);
                result?
            }
        };
        if let Some(expected) = &want.expected
            && &actual != expected
        {
            remove_file(&partial)?;
            return Err(match &want.verified {
                Some(VerifiedAgainst::Published(source)) => {
                    ArchiveError::PublishedMismatch(Box::new(PublishedMismatch {
                        url: want.url.clone(),
                        what: "the download".into(),
                        what_short: "download".into(),
                        published: expected.clone(),
                        actual,
                        source_name: source.clone(),
                    }))
                }
                _ => ArchiveError::Checksum {
                    url: want.url.clone(),
                    expected: expected.clone(),
                    actual,
                },
            });
        }
        std::fs::rename(&partial, &final_path)
            .map_err(|e| ArchiveError::io("renaming into place", &final_path, e))?;
        make_read_only(&final_path)?;
        self.record(want, &actual, size)?;
        self.progress.archived(&label, size);
        Ok(self.fetched(want, actual, size, outcome))
    }

    fn fetched(
        &self,
        want: &Wanted,
        sha256: String,
        size: u64,
        outcome: FileOutcome,
    ) -> FetchedFile {
        FetchedFile {
            layer: want.layer,
            file: want.file.clone(),
            sha256,
            size,
            outcome,
        }
    }

    /// Enters a verified file in the lock and writes the lock at once.
    fn record(&self, want: &Wanted, sha256: &str, size: u64) -> Result<(), ArchiveError> {
        let mut lock = self.lock.lock().map_err(|_| ArchiveError::BadLock {
            path: self.stack.lock_path(),
            reason: "a download thread panicked while updating it".into(),
        })?;
        let same_file = lock
            .find(want.layer, &want.file)
            .filter(|e| e.url == want.url && e.sha256 == sha256 && e.size == size);
        if same_file.is_some_and(|e| e.verified_against == want.verified) {
            return Ok(());
        }
        // The same bytes newly vouched for (a checksum published since) keep their download time.
        let fetched_at = same_file
            .map(|e| e.fetched_at.clone())
            .unwrap_or_else(|| jiff::Timestamp::now().to_string());
        lock.upsert(LockEntry {
            layer: want.layer,
            file: want.file.clone(),
            url: want.url.clone(),
            sha256: sha256.to_string(),
            size,
            fetched_at,
            verified_against: want.verified.clone(),
        });
        self.stack.write_lock(&lock)
    }

    /// pip wheels: reuse the archived set when it is complete and intact; fetch a missing or
    /// corrupt wheel alone by its exact pin from the lock; run the whole resolution only for a
    /// first fetch or an incomplete one. Until the set is in, the lock lists the requirements as
    /// `incomplete`, so a fetch cut off halfway never looks like a finished archive.
    fn archive_pip(
        &self,
        target: &PipTarget,
        pip_run: &PipRun,
        locked: bool,
    ) -> Result<Vec<FetchedFile>, ArchiveError> {
        let source = target.source();
        let (existing, incomplete) = self
            .lock
            .lock()
            .map(|l| {
                let files: Vec<LockEntry> = l
                    .files
                    .iter()
                    .filter(|e| e.url == source)
                    .cloned()
                    .collect();
                // uv alone missing (its own download failed) leaves the library's set whole.
                (files, l.incomplete.iter().any(|r| r != "uv"))
            })
            .map_err(|_| self.poisoned())?;
        if !existing.is_empty() && !incomplete {
            return self.repair_wheels(target, pip_run, existing);
        }
        self.progress.note(&format!(
            "library: pip download {}",
            target.requirements.join(" ")
        ));
        self.set_incomplete(target.requirements.clone())?;
        let scratch = self.scratch()?;
        pip::download(
            &pip_run.python,
            target,
            scratch.path(),
            &pip_run.watch(self.progress),
        )?;
        let mut files = Vec::new();
        for name in pip::file_names(scratch.path()) {
            let known = existing.iter().find(|e| e.file == name);
            if known.is_none() && locked {
                return Err(ArchiveError::Unpinned {
                    layer: Layer::Library,
                    file: name,
                    url: source,
                });
            }
            let expected = known.map(|e| e.sha256.to_ascii_lowercase());
            files.push(self.move_wheel(
                Layer::Library,
                scratch.path(),
                &name,
                &source,
                expected,
            )?);
        }
        self.set_incomplete(Vec::new())?;
        Ok(files)
    }

    /// An archived set that was complete once: each intact wheel stays; each missing or corrupt
    /// one is fetched alone (`name==version`, `--no-deps`) and must hash to the lock's sha256.
    fn repair_wheels(
        &self,
        target: &PipTarget,
        pip_run: &PipRun,
        existing: Vec<LockEntry>,
    ) -> Result<Vec<FetchedFile>, ArchiveError> {
        let mut files = Vec::new();
        for entry in existing {
            if super::verify_entry(self.stack, &entry).is_ok() {
                files.push(FetchedFile {
                    layer: Layer::Library,
                    file: entry.file,
                    sha256: entry.sha256,
                    size: entry.size,
                    outcome: FileOutcome::AlreadyArchived,
                });
                continue;
            }
            files.push(self.fetch_one_wheel(target, pip_run, &entry)?);
        }
        Ok(files)
    }

    /// Fetches the wheel of one lock entry by its exact pin and verifies it against the lock.
    fn fetch_one_wheel(
        &self,
        target: &PipTarget,
        pip_run: &PipRun,
        entry: &LockEntry,
    ) -> Result<FetchedFile, ArchiveError> {
        let Some((name, version)) = wheel_name_version(&entry.file) else {
            return Err(ArchiveError::Pip(format!(
                "library/{} is missing or corrupt and is not a wheel stackpin can fetch alone; delete its entry from stack.lock and run `stackpin fetch` again",
                entry.file
            )));
        };
        let pin = format!("{name}=={version}");
        self.progress.note(&format!(
            "library/{} is missing or corrupt; fetching {pin} alone",
            entry.file
        ));
        let scratch = self.scratch()?;
        pip::download_one(
            &pip_run.python,
            target,
            &pin,
            scratch.path(),
            &pip_run.watch(self.progress),
        )?;
        if !scratch.path().join(&entry.file).is_file() {
            return Err(ArchiveError::Pip(format!(
                "pip download {pin} did not produce {} (it got: {}); the index no longer serves the archived build",
                entry.file,
                pip::file_names(scratch.path()).join(", ")
            )));
        }
        let mut fetched = self.move_wheel(
            Layer::Library,
            scratch.path(),
            &entry.file,
            &entry.url,
            Some(entry.sha256.to_ascii_lowercase()),
        )?;
        fetched.outcome = FileOutcome::Repaired;
        Ok(fetched)
    }

    /// Hashes a downloaded file, checks it against `expected`, moves it into the layer folder
    /// read-only, and enters it in the lock.
    fn move_wheel(
        &self,
        layer: Layer,
        from_dir: &Path,
        name: &str,
        source: &str,
        expected: Option<String>,
    ) -> Result<FetchedFile, ArchiveError> {
        if let Some(why) = unsafe_file_name(name) {
            return Err(ArchiveError::UnsafeName {
                what: "a file pip downloaded".into(),
                name: name.to_string(),
                why,
            });
        }
        let from = from_dir.join(name);
        let (actual, size) =
            hash_file(&from, None).map_err(|e| ArchiveError::io("reading", &from, e))?;
        if let Some(expected) = &expected
            && !expected.eq_ignore_ascii_case(&actual)
        {
            return Err(ArchiveError::Checksum {
                url: format!("{source} ({name})"),
                expected: expected.clone(),
                actual,
            });
        }
        let to = self.stack.file_path(layer, name);
        let outcome = if to.exists() {
            FileOutcome::Repaired
        } else {
            FileOutcome::Downloaded
        };
        remove_file(&to)?;
        std::fs::rename(&from, &to).map_err(|e| ArchiveError::io("renaming into place", &to, e))?;
        make_read_only(&to)?;
        let want = Wanted {
            layer,
            file: name.to_string(),
            url: source.to_string(),
            expected: None,
            locked_size: None,
            verified: None,
        };
        self.record(&want, &actual, size)?;
        Ok(self.fetched(&want, actual, size, outcome))
    }

    /// uv's own wheel for the target platform, beside the library's: kept when intact; else
    /// the release data's pin (`pinned`), from its own index and checked against its published
    /// sha256; without a pin (an older data set), from the library's indexes as before.
    fn archive_uv(
        &self,
        target: &PipTarget,
        pip_run: &PipRun,
        pinned: Option<&PinnedWheel>,
    ) -> Result<FetchedFile, ArchiveError> {
        let existing = self
            .lock
            .lock()
            .map_err(|_| self.poisoned())?
            .files
            .iter()
            .find(|e| is_installer_entry(e))
            .cloned();
        if let Some(entry) = existing {
            if super::verify_entry(self.stack, &entry).is_ok() {
                return Ok(FetchedFile {
                    layer: Layer::Library,
                    file: entry.file,
                    sha256: entry.sha256,
                    size: entry.size,
                    outcome: FileOutcome::AlreadyArchived,
                });
            }
            if pinned.is_none() {
                return self.fetch_one_wheel(target, pip_run, &entry);
            }
        }
        if let Some(pinned) = pinned {
            return self.archive_pinned_uv(target, pip_run, pinned);
        }
        self.progress
            .note("library: pip download uv (the installer of the library layer)");
        self.set_incomplete(vec!["uv".into()])?;
        let scratch = self.scratch()?;
        pip::download_one(
            &pip_run.python,
            target,
            "uv",
            scratch.path(),
            &pip_run.watch(self.progress),
        )?;
        let names = pip::file_names(scratch.path());
        let Some(name) = names
            .iter()
            .find(|n| n.starts_with("uv-") && n.ends_with(".whl"))
        else {
            return Err(ArchiveError::Pip(format!(
                "pip download uv gave no uv wheel (got: {}); the manifest's indexes must serve uv for the target platform, or set `library.installer: pip`",
                names.join(", ")
            )));
        };
        let source = format!("{UV_SOURCE_PREFIX}{}", target.source());
        let fetched = self.move_wheel(Layer::Library, scratch.path(), name, &source, None)?;
        self.set_incomplete(Vec::new())?;
        Ok(fetched)
    }

    /// uv's wheel as the release data pins it: `pip download --no-deps uv==X` from the pin's
    /// index alone, then the pinned file, refused unless its sha256 is the published one.
    fn archive_pinned_uv(
        &self,
        target: &PipTarget,
        pip_run: &PipRun,
        pinned: &PinnedWheel,
    ) -> Result<FetchedFile, ArchiveError> {
        let tool = PipTarget {
            os: target.os,
            python_version: target.python_version.clone(),
            index_url: pinned.index_url.clone(),
            extra_index_urls: Vec::new(),
            requirements: Vec::new(),
        };
        self.progress.note(&format!(
            "library: pip download {} (the installer of the library layer, pinned in the release data)",
            pinned.requirement
        ));
        self.set_incomplete(vec!["uv".into()])?;
        let scratch = self.scratch()?;
        pip::download_one(
            &pip_run.python,
            &tool,
            &pinned.requirement,
            scratch.path(),
            &pip_run.watch(self.progress),
        )?;
        if !scratch.path().join(&pinned.file).is_file() {
            return Err(ArchiveError::Pip(format!(
                "pip download {} did not produce {} (it got: {}); the index at {} must serve the pinned wheel",
                pinned.requirement,
                pinned.file,
                pip::file_names(scratch.path()).join(", "),
                pinned.index_url.as_deref().unwrap_or("pip's default index")
            )));
        }
        let source = format!("{UV_SOURCE_PREFIX}{}", tool.source());
        let fetched = self.move_wheel(
            Layer::Library,
            scratch.path(),
            &pinned.file,
            &source,
            Some(pinned.sha256.clone()),
        )?;
        self.set_incomplete(Vec::new())?;
        Ok(fetched)
    }

    /// One component wheel of a wheel toolkit: kept when the lock has it intact, else
    /// `pip download --no-deps NAME==VERSION` from the toolkit's index, refused unless the file
    /// is the pinned one with the pinned sha256.
    fn archive_component(
        &self,
        tool: &PipTarget,
        pip_run: &PipRun,
        component: &ToolkitWheel,
    ) -> Result<FetchedFile, ArchiveError> {
        let sha256 = component.sha256.to_ascii_lowercase();
        let existing = self
            .lock
            .lock()
            .map_err(|_| self.poisoned())?
            .find(Layer::Toolkit, &component.file)
            .cloned();
        if let Some(entry) = existing
            && entry.sha256.eq_ignore_ascii_case(&sha256)
            && super::verify_entry(self.stack, &entry).is_ok()
        {
            return Ok(FetchedFile {
                layer: Layer::Toolkit,
                file: entry.file,
                sha256: entry.sha256,
                size: entry.size,
                outcome: FileOutcome::AlreadyArchived,
            });
        }
        let requirement = component.requirement();
        self.progress
            .note(&format!("toolkit: pip download {requirement}"));
        let scratch = self.scratch()?;
        pip::download_one(
            &pip_run.python,
            tool,
            &requirement,
            scratch.path(),
            &pip_run.watch(self.progress),
        )?;
        if !scratch.path().join(&component.file).is_file() {
            return Err(ArchiveError::Pip(format!(
                "pip download {requirement} did not produce {} (it got: {}); the index at {} must serve the pinned wheel",
                component.file,
                pip::file_names(scratch.path()).join(", "),
                tool.index_url.as_deref().unwrap_or("pip's default index")
            )));
        }
        self.move_wheel(
            Layer::Toolkit,
            scratch.path(),
            &component.file,
            &tool.source(),
            Some(sha256),
        )
    }

    /// pip writes into a scratch folder beside the layer; only hashed files move into place.
    fn scratch(&self) -> Result<tempfile::TempDir, ArchiveError> {
        tempfile::Builder::new()
            .prefix(".pip-download-")
            .tempdir_in(self.stack.root())
            .map_err(|e| ArchiveError::io("creating a scratch folder in", self.stack.root(), e))
    }

    /// Records (and writes at once) what is asked for but not archived yet.
    fn set_incomplete(&self, wanted: Vec<String>) -> Result<(), ArchiveError> {
        let mut lock = self.lock.lock().map_err(|_| self.poisoned())?;
        if lock.incomplete == wanted {
            return Ok(());
        }
        lock.incomplete = wanted;
        self.stack.write_lock(&lock)
    }

    fn poisoned(&self) -> ArchiveError {
        ArchiveError::BadLock {
            path: self.stack.lock_path(),
            reason: "a download thread panicked while updating it".into(),
        }
    }
}

/// A tool's wheel as the release data pins it, and the index it is fetched from.
struct PinnedWheel {
    /// `uv==0.13.10`.
    requirement: String,
    file: String,
    /// Lowercase hex, as published by the index.
    sha256: String,
    /// `None` for pip's default index.
    index_url: Option<String>,
}

/// The interpreter pip runs under and how its runs are watched.
struct PipRun {
    python: String,
    stall: std::time::Duration,
}

impl PipRun {
    fn of(config: &FetchConfig) -> Self {
        PipRun {
            python: config.python.clone(),
            stall: config.timeouts.stall,
        }
    }

    fn watch<'a>(&self, progress: &'a dyn Progress) -> pip::Watch<'a> {
        pip::Watch {
            progress,
            stall: self.stall.max(pip::PIP_MIN_STALL),
        }
    }
}

/// `torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl` → (`torch`, `2.5.1+cu124`).
pub fn wheel_name_version(file: &str) -> Option<(String, String)> {
    let stem = file.strip_suffix(".whl")?;
    let mut parts = stem.split('-');
    let name = parts.next()?.replace('_', "-");
    let version = parts.next()?.to_string();
    (!name.is_empty() && !version.is_empty()).then_some((name, version))
}

/// `<file>.partial` beside the final name.
pub(crate) fn partial_path(final_path: &Path) -> PathBuf {
    let mut name = final_path.as_os_str().to_os_string();
    name.push(".partial");
    PathBuf::from(name)
}

/// Where a lab mirror serves a file: the same layout as the archive folder.
fn mirror_url(mirror: &str, stack: &str, layer: Layer, file: &str) -> String {
    let mut encoded = String::new();
    for c in file.chars() {
        match c {
            '%' => encoded.push_str("%25"),
            ' ' => encoded.push_str("%20"),
            '#' => encoded.push_str("%23"),
            '?' => encoded.push_str("%3F"),
            '+' => encoded.push_str("%2B"),
            c => encoded.push(c),
        }
    }
    format!("{}/{stack}/{layer}/{encoded}", mirror.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_urls_follow_the_archive_layout() {
        assert_eq!(
            mirror_url(
                "http://lab:8000/",
                "s",
                Layer::Library,
                "torch-2.5.1+cu124.whl"
            ),
            "http://lab:8000/s/library/torch-2.5.1%2Bcu124.whl"
        );
    }

    #[test]
    fn partial_sits_beside_the_final_name() {
        assert_eq!(
            partial_path(Path::new("/a/driver/x.run")),
            PathBuf::from("/a/driver/x.run.partial")
        );
    }
}
