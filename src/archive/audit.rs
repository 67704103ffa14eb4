//! `audit`: re-hashes every archived file against the lock (and the manifest's pins) on all
//! cores and classifies each as ok, missing, corrupt, unexpected or partial. It repairs nothing;
//! `fetch` does that.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Serialize;

use super::layout::{PinConflict, hash_file, pin_conflict};
use super::{ArchiveError, Lockfile, Progress, StackDir};
use crate::manifest::{Layer, Manifest};

/// What the audit found for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    /// Present and matching the lock.
    Ok,
    /// In the lock (or the manifest) but not on disk.
    Missing,
    /// On disk with another hash than the lock or the manifest's pin.
    Corrupt,
    /// On disk but in no lock entry.
    Unexpected,
    /// A left-over `.partial` of an interrupted download.
    Partial,
    /// Its lock line disagrees with the manifest's pin: the file and its lock line were changed
    /// together, or the pin after the fetch. Never run, whatever the bytes hash to.
    Untrusted,
    /// Asked for by the manifest (a pip requirement) but not archived yet: a fetch stopped
    /// halfway. The archive is incomplete until `fetch` runs again.
    Incomplete,
}

impl FileStatus {
    /// Missing and corrupt files make an audit fail; the others are only reported.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            FileStatus::Missing
                | FileStatus::Corrupt
                | FileStatus::Untrusted
                | FileStatus::Incomplete
        )
    }
}

/// One file's verdict. `path` is relative to the stack folder (`driver/x.run`).
#[derive(Debug, Clone, Serialize)]
pub struct FileAudit {
    pub layer: Layer,
    pub path: String,
    pub status: FileStatus,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub size: Option<u64>,
    /// For `untrusted`: the pin, the lock's hash and the field that pins the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin_conflict: Option<PinConflict>,
}

/// The verdicts of one stack, in lock order, then the files the lock does not know.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    #[serde(skip)]
    pub stack: PathBuf,
    pub files: Vec<FileAudit>,
    /// What the lock's files were first checked against: how many are still trusted on first
    /// use because no checksum is published for them.
    pub trust: super::TrustSummary,
}

impl AuditReport {
    /// True when nothing is missing or corrupt.
    pub fn ok(&self) -> bool {
        !self.files.iter().any(|f| f.status.is_failure())
    }
}

/// A file to hash and what it must hash to.
struct Job {
    layer: Layer,
    file: String,
    expected: String,
    conflict: Option<PinConflict>,
}

/// Audits one stack folder; `manifest`, when given, adds its pins and its not-yet-fetched files.
/// The stack's lock, which only a fetch writes: a stack without one was never fetched (the
/// user's input, exit 2, with the fix to fetch first).
pub(super) fn fetched_lock(stack: &StackDir) -> Result<Lockfile, ArchiveError> {
    if !stack.lock_path().exists() {
        return Err(ArchiveError::NoLock {
            dir: stack.root().to_path_buf(),
        });
    }
    stack.read_lock()
}

pub fn audit_stack(
    stack: &StackDir,
    manifest: Option<&Manifest>,
    threads: usize,
    progress: &dyn Progress,
) -> Result<AuditReport, ArchiveError> {
    let lock = fetched_lock(stack)?;
    let mut jobs: Vec<Job> = lock
        .files
        .iter()
        .map(|e| Job {
            layer: e.layer,
            file: e.file.clone(),
            expected: e.sha256.to_ascii_lowercase(),
            conflict: manifest.and_then(|m| pin_conflict(m, e)),
        })
        .collect();
    let mut files = Vec::new();
    if let Some(m) = manifest {
        // A wheel toolkit's components are pinned in the manifest by file and sha256.
        let components = m
            .toolkit
            .components
            .iter()
            .map(|c| (Layer::Toolkit, c.file.clone(), Some(c.sha256.clone())));
        let installers = Layer::ORDER.into_iter().flat_map(|layer| {
            m.installers(layer)
                .into_iter()
                .filter_map(move |inst| Some((layer, inst.file_name()?, inst.sha256.clone())))
        });
        for (layer, name, pin) in installers.chain(components) {
            let pin = pin.as_deref().map(str::to_ascii_lowercase);
            match jobs.iter_mut().find(|j| j.layer == layer && j.file == name) {
                // The manifest's pin is the stronger claim: a lock that disagrees is wrong.
                Some(job) => job.expected = pin.unwrap_or_else(|| job.expected.clone()),
                None => files.push(FileAudit {
                    layer,
                    path: format!("{layer}/{name}"),
                    status: FileStatus::Missing,
                    expected: pin,
                    actual: None,
                    size: None,
                    pin_conflict: None,
                }),
            }
        }
    }
    files.extend(lock.incomplete.iter().map(|requirement| FileAudit {
        layer: Layer::Library,
        path: format!("library/{requirement}"),
        status: FileStatus::Incomplete,
        expected: None,
        actual: None,
        size: None,
        pin_conflict: None,
    }));
    let mut hashed = hash_all(stack, jobs.iter().collect(), threads, progress);
    hashed.append(&mut files);
    hashed.extend(strays(stack, &jobs)?);
    Ok(AuditReport {
        stack: stack.root().to_path_buf(),
        files: hashed,
        trust: super::trust_summary(&lock),
    })
}

/// Hashes the jobs on `threads` threads, returning verdicts in job order.
fn hash_all(
    stack: &StackDir,
    jobs: Vec<&Job>,
    threads: usize,
    progress: &dyn Progress,
) -> Vec<FileAudit> {
    // Largest first: the threads then finish together instead of one hashing the biggest wheel
    // alone at the end (results are put back in lock order below).
    let mut jobs: Vec<(usize, &Job)> = jobs.into_iter().enumerate().collect();
    jobs.sort_by_key(|(_, job)| {
        let size = std::fs::metadata(stack.file_path(job.layer, &job.file)).map_or(0, |m| m.len());
        std::cmp::Reverse(size)
    });
    let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                    let Some((i, job)) = next else { break };
                    let verdict = audit_one(stack, job, progress);
                    if let Ok(mut d) = done.lock() {
                        d.push((i, verdict));
                    }
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_default();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, v)| v).collect()
}

fn audit_one(stack: &StackDir, job: &Job, progress: &dyn Progress) -> FileAudit {
    let path = stack.file_path(job.layer, &job.file);
    let label = format!("{}/{}", job.layer, job.file);
    let size = std::fs::metadata(&path).ok().map(|m| m.len());
    progress.started(&label, size);
    let hashed = crate::fsutil::plain_file_below(stack.root(), &path)
        .and_then(|()| hash_file(&path, Some((progress, &label))));
    progress.finished(&label);
    let (status, actual, size) = match hashed {
        Ok((actual, size)) if actual == job.expected => (FileStatus::Ok, Some(actual), Some(size)),
        Ok((actual, size)) => (FileStatus::Corrupt, Some(actual), Some(size)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (FileStatus::Missing, None, None),
        // Unreadable counts as corrupt: the installer could not be verified, so it must not run.
        Err(e) => (FileStatus::Corrupt, Some(format!("unreadable: {e}")), size),
    };
    FileAudit {
        layer: job.layer,
        path: label,
        // Pin → lock comes first: a lock line that disagrees with the pin is never trusted.
        status: if job.conflict.is_some() {
            FileStatus::Untrusted
        } else {
            status
        },
        expected: Some(job.expected.clone()),
        actual,
        size,
        pin_conflict: job.conflict.clone(),
    }
}

/// Files in the layer folders that no lock entry names.
fn strays(stack: &StackDir, jobs: &[Job]) -> Result<Vec<FileAudit>, ArchiveError> {
    let known: HashSet<(Layer, &str)> = jobs.iter().map(|j| (j.layer, j.file.as_str())).collect();
    let mut out = Vec::new();
    for layer in Layer::ORDER {
        let dir = stack.layer_dir(layer);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(ArchiveError::io("listing", dir, e)),
        };
        let mut found: Vec<(String, Option<u64>)> = entries
            .filter_map(Result::ok)
            .map(|e| {
                let size = e.metadata().ok().map(|m| m.len());
                (e.file_name().to_string_lossy().into_owned(), size)
            })
            .filter(|(name, _)| !known.contains(&(layer, name.as_str())))
            .collect();
        found.sort();
        for (name, size) in found {
            let status = if name.ends_with(".partial") {
                FileStatus::Partial
            } else {
                FileStatus::Unexpected
            };
            out.push(FileAudit {
                layer,
                path: format!("{layer}/{name}"),
                status,
                expected: None,
                actual: None,
                size,
                pin_conflict: None,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{LockEntry, Lockfile, Silent};

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    fn stack_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, StackDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        let mut lock = Lockfile::new("s");
        for (name, bytes) in files {
            std::fs::write(stack.file_path(Layer::Toolkit, name), bytes).expect("write");
            lock.upsert(LockEntry {
                layer: Layer::Toolkit,
                file: (*name).into(),
                url: "https://example.test/x".into(),
                sha256: ABC.into(),
                size: 3,
                fetched_at: "t".into(),
                verified_against: None,
            });
        }
        stack.write_lock(&lock).expect("lock");
        (dir, stack)
    }

    fn status_of(report: &AuditReport, path: &str) -> FileStatus {
        report
            .files
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.status)
            .unwrap_or_else(|| panic!("{path} not in {report:?}"))
    }

    #[test]
    fn audit_classifies_ok_corrupt_missing_stray_and_partial() {
        let (_dir, stack) = stack_with(&[("a.run", b"abc"), ("b.run", b"abX"), ("c.run", b"abc")]);
        std::fs::remove_file(stack.file_path(Layer::Toolkit, "c.run")).expect("rm");
        std::fs::write(stack.file_path(Layer::Driver, "stray.run"), b"x").expect("stray");
        std::fs::write(stack.file_path(Layer::Driver, "d.run.partial"), b"x").expect("partial");
        let report = audit_stack(&stack, None, 2, &Silent).expect("audit");
        assert_eq!(status_of(&report, "toolkit/a.run"), FileStatus::Ok);
        assert_eq!(status_of(&report, "toolkit/b.run"), FileStatus::Corrupt);
        assert_eq!(status_of(&report, "toolkit/c.run"), FileStatus::Missing);
        assert_eq!(
            status_of(&report, "driver/stray.run"),
            FileStatus::Unexpected
        );
        assert_eq!(
            status_of(&report, "driver/d.run.partial"),
            FileStatus::Partial
        );
        assert!(!report.ok());
    }

    #[test]
    fn strays_and_partials_alone_do_not_fail_the_audit() {
        let (_dir, stack) = stack_with(&[("a.run", b"abc")]);
        std::fs::write(stack.file_path(Layer::Library, "x.whl.partial"), b"x").expect("partial");
        let report = audit_stack(&stack, None, 1, &Silent).expect("audit");
        assert!(report.ok(), "{report:?}");
    }

    #[test]
    fn requirements_a_fetch_left_out_make_the_archive_incomplete() {
        let (_dir, stack) = stack_with(&[("a.run", b"abc")]);
        let mut lock = stack.read_lock().expect("lock");
        lock.incomplete = vec!["torch==2.5.1".into()];
        stack.write_lock(&lock).expect("write");
        let report = audit_stack(&stack, None, 1, &Silent).expect("audit");
        assert_eq!(
            status_of(&report, "library/torch==2.5.1"),
            FileStatus::Incomplete
        );
        assert!(!report.ok());
    }

    #[test]
    fn a_stack_without_a_lock_says_to_fetch_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err =
            audit_stack(&StackDir::new(dir.path(), "s"), None, 1, &Silent).expect_err("no lock");
        assert!(err.to_string().contains("stackpin fetch"), "{err}");
    }
}
