//! The stack's folder in the archive and its `stack.lock`: paths, reading and writing the lock
//! atomically, the file lock that keeps two fetches apart, and the re-hash before an installer
//! runs. Downloading and auditing build on this; nothing here touches the network.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ArchiveError, Progress};
use crate::fsutil::{self, YamlError};
use crate::manifest::{Layer, Manifest};

/// Version of the `stack.lock` format this build reads and writes.
pub const LOCK_SCHEMA: u32 = 1;

/// The folder of one stack in the archive, `<archive>/<name>/`, and the paths inside it.
#[derive(Debug, Clone)]
pub struct StackDir {
    root: PathBuf,
}

impl StackDir {
    /// The stack called `name` inside the archive folder `archive`.
    pub fn new(archive: &Path, name: &str) -> Self {
        Self {
            root: archive.join(name),
        }
    }

    /// A stack folder given directly.
    pub fn at(root: PathBuf) -> Self {
        Self { root }
    }

    /// `<archive>/<name>/`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The stack's name: its folder's name.
    pub fn name(&self) -> String {
        self.root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// `driver/`, `toolkit/` or `library/`: where a layer's installers live.
    pub fn layer_dir(&self, layer: Layer) -> PathBuf {
        self.root.join(layer.as_str())
    }

    /// Where an archived installer lives.
    pub fn file_path(&self, layer: Layer, file: &str) -> PathBuf {
        self.layer_dir(layer).join(file)
    }

    /// `stack.lock`: per file its layer, name, URL, sha256, size and fetch time.
    pub fn lock_path(&self) -> PathBuf {
        self.root.join("stack.lock")
    }

    /// `manifest.yaml`: the copy of the manifest that was fetched.
    pub fn manifest_path(&self) -> PathBuf {
        self.root.join("manifest.yaml")
    }

    /// `logs/`: one log per installer and per example run.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// `state.yaml`: where an install chain stands across a reboot.
    pub fn state_path(&self) -> PathBuf {
        self.root.join("state.yaml")
    }

    /// `proven-stack.yaml`: the record of the proven stack.
    pub fn proven_stack_path(&self) -> PathBuf {
        self.root.join("proven-stack.yaml")
    }

    /// `proven-stack.svg`: the record's memory plot.
    pub fn proven_plot_path(&self) -> PathBuf {
        self.root.join("proven-stack.svg")
    }

    /// Creates the stack folder and its three layer folders.
    pub fn create(&self) -> Result<(), ArchiveError> {
        for layer in Layer::ORDER {
            let dir = self.layer_dir(layer);
            std::fs::create_dir_all(&dir).map_err(|e| ArchiveError::io("creating", dir, e))?;
        }
        Ok(())
    }

    /// `.stackpin-busy`: the file whose OS lock keeps two stackpins apart on one stack.
    pub fn busy_path(&self) -> PathBuf {
        self.root.join(".stackpin-busy")
    }

    /// `.stackpin-in-use`: shared by every running proof of the stack, exclusive for an
    /// install, so an install never replaces the venv under a running example.
    pub fn in_use_path(&self) -> PathBuf {
        self.root.join(".stackpin-in-use")
    }

    /// Takes the stack's file lock without waiting: `None` while another process holds it
    /// (a fetch, an install, a repair, an `up`).
    pub fn try_lock(&self) -> Result<Option<StackLock>, ArchiveError> {
        self.acquire(None)
    }

    /// Takes the stack's file lock; with `wait` false, another holder is an error
    /// ([`ArchiveError::Busy`]) instead of a wait.
    pub fn lock_or_fail(
        &self,
        wait: bool,
        progress: &dyn Progress,
    ) -> Result<StackLock, ArchiveError> {
        if wait {
            return self.lock(progress);
        }
        self.try_lock()?.ok_or_else(|| ArchiveError::Busy {
            dir: self.root.clone(),
        })
    }

    /// Takes the stack's file lock, waiting (after `progress.note`) while another process has it.
    /// The OS releases it when the holder exits, even after `kill -9`; the marker file itself is
    /// removed when the holder is dropped, and one left by a killed run is recognised as stale
    /// (its lock is free) and taken over.
    pub fn lock(&self, progress: &dyn Progress) -> Result<StackLock, ArchiveError> {
        self.acquire(Some(progress))?
            .ok_or_else(|| ArchiveError::Busy {
                dir: self.root.clone(),
            })
    }

    /// The lock, waiting when `wait` gives a reporter and answering `None` at once otherwise.
    fn acquire(&self, wait: Option<&dyn Progress>) -> Result<Option<StackLock>, ArchiveError> {
        // A separate file: stack.lock itself is replaced by rename, and a lock on a replaced
        // inode would protect nothing. Because the holder deletes the marker, a waiter may wake
        // up holding a deleted inode; it then starts over on the current file.
        let path = self.busy_path();
        loop {
            let mut file = File::options()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| ArchiveError::io("opening the file lock", &path, e))?;
            match (file.try_lock(), wait) {
                (Ok(()), _) => {}
                (Err(std::fs::TryLockError::WouldBlock), None) => return Ok(None),
                (Err(std::fs::TryLockError::WouldBlock), Some(progress)) => {
                    progress.note(&format!(
                        "another stackpin is working on {}; waiting for it to finish",
                        self.root.display()
                    ));
                    file.lock()
                        .map_err(|e| ArchiveError::io("waiting for the file lock", &path, e))?;
                }
                (Err(std::fs::TryLockError::Error(e)), _) => {
                    return Err(ArchiveError::io("taking the file lock", &path, e));
                }
            }
            if !same_file(&file, &path) {
                continue;
            }
            let mut previous = String::new();
            let _ = file.read_to_string(&mut previous);
            if let (Some(pid), Some(progress)) = (previous.trim().strip_prefix("pid "), wait) {
                progress.note(&format!(
                    "{} was left by a stackpin that was stopped (pid {pid}); its lock is free, so it is stale and taken over",
                    path.display()
                ));
            }
            let _ = file.set_len(0);
            let _ = std::io::Write::write_all(
                &mut file,
                format!("pid {}\n", std::process::id()).as_bytes(),
            );
            return Ok(Some(StackLock { file, path }));
        }
    }

    /// Reads `stack.lock`; an absent lock is an empty one.
    pub fn read_lock(&self) -> Result<Lockfile, ArchiveError> {
        let path = self.lock_path();
        match fsutil::read_text(&path) {
            Ok(text) => Lockfile::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lockfile::new(&self.name())),
            Err(source) => Err(lock_error(YamlError::Read { path, source })),
        }
    }

    /// Writes `stack.lock` through a temporary file and a rename.
    pub fn write_lock(&self, lock: &Lockfile) -> Result<(), ArchiveError> {
        let path = self.lock_path();
        fsutil::write_yaml(
            &path,
            "# written by stackpin fetch; one entry per archived file\n",
            lock,
        )
        .map_err(lock_error)
    }
}

/// Held while a fetch or unbundle changes a stack; dropping it removes the marker and releases
/// the file lock (in that order, so no one can lock the marker between the two).
#[derive(Debug)]
pub struct StackLock {
    file: File,
    path: PathBuf,
}

impl Drop for StackLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// True when `path` still names the file that `file` has open (not a marker deleted meanwhile).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Windows refuses to open a file that is being deleted, so a lock taken is on the live file.
#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

/// The shared YAML helper's errors about `stack.lock`, in the archive's words: a lock that does
/// not read or encode is a bad lock; reading or writing the file is I/O.
fn lock_error(e: YamlError) -> ArchiveError {
    match e {
        YamlError::Read { path, source } => ArchiveError::io("reading", path, source),
        YamlError::Parse { path, source } => ArchiveError::BadLock {
            path,
            reason: source.to_string(),
        },
        YamlError::Encode { path, reason } => ArchiveError::BadLock { path, reason },
        YamlError::Write { path, source } => ArchiveError::io("writing", path, source),
    }
}

/// `stack.lock`: what was archived, so audits and installs can prove each file unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    pub schema: u32,
    pub stack: String,
    #[serde(default)]
    pub files: Vec<LockEntry>,
    /// What the manifest asked for that is not archived yet (pip requirements whose download
    /// failed or was cut off): while this is not empty the archive is incomplete, and audit,
    /// status, plan and install say so instead of trusting the files that are there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
}

/// One archived file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    pub layer: Layer,
    /// The file name inside the layer's folder.
    pub file: String,
    /// Where it came from (`pip:INDEX` for wheels that pip resolved).
    pub url: String,
    pub sha256: String,
    pub size: u64,
    /// RFC 3339 time of the download.
    pub fetched_at: String,
    /// What the first download was checked against; absent for wheels an index served (their
    /// installer checks the index's sha256) and in locks written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_against: Option<super::trust::VerifiedAgainst>,
}

impl Lockfile {
    /// An empty lock for the stack `name`.
    pub fn new(name: &str) -> Self {
        Self {
            schema: LOCK_SCHEMA,
            stack: name.to_string(),
            files: Vec::new(),
            incomplete: Vec::new(),
        }
    }

    /// Parses lock text; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ArchiveError> {
        fsutil::parse_yaml::<Lockfile>(text, path)
            .map_err(lock_error)?
            .checked(path, text)
    }

    /// The lock as read, if its schema is this stackpin's and every entry could have been
    /// written by a fetch: a safe file name, a sha256 of 64 hex digits, each file once. A lock
    /// edited by hand into something else is invalid input (exit 2), named by its line.
    fn checked(self, path: &Path, text: &str) -> Result<Self, ArchiveError> {
        let bad = |line: Option<usize>, reason: String| ArchiveError::BadLock {
            path: path.to_path_buf(),
            reason: match line {
                Some(line) => format!("line {line}: {reason}"),
                None => reason,
            },
        };
        if self.schema != LOCK_SCHEMA {
            return Err(bad(
                None,
                format!("schema {} (this stackpin reads {LOCK_SCHEMA})", self.schema),
            ));
        }
        let file_lines = key_lines(text, "file");
        let sha_lines = key_lines(text, "sha256");
        for (i, entry) in self.files.iter().enumerate() {
            let name = format!(
                "{}/{}",
                entry.layer,
                crate::manifest::shown_value(&entry.file)
            );
            if let Some(why) = crate::manifest::validate::unsafe_file_name(&entry.file) {
                return Err(bad(
                    file_lines.get(i).copied(),
                    format!("the entry `{name}` would lie outside the stack's folder ({why})"),
                ));
            }
            let sha = &entry.sha256;
            if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(
                    sha_lines.get(i).copied(),
                    format!(
                        "the sha256 of `{name}` has {} characters; a sha256 is 64 hexadecimal digits (`sha256sum` prints it)",
                        sha.chars().count()
                    ),
                ));
            }
            if let Some(first) = self.files[..i]
                .iter()
                .position(|e| e.layer == entry.layer && e.file == entry.file)
            {
                let lines = match (file_lines.get(first), file_lines.get(i)) {
                    (Some(a), Some(b)) => format!(" (lines {a} and {b})"),
                    _ => String::new(),
                };
                return Err(bad(
                    file_lines.get(i).copied(),
                    format!("`{name}` is listed twice{lines}; delete one of the entries"),
                ));
            }
        }
        Ok(self)
    }

    /// The entry for a layer's file.
    pub fn find(&self, layer: Layer, file: &str) -> Option<&LockEntry> {
        self.files
            .iter()
            .find(|e| e.layer == layer && e.file == file)
    }

    /// Adds or replaces the entry for the same layer and file, keeping lock order by layer.
    pub fn upsert(&mut self, entry: LockEntry) {
        match self
            .files
            .iter_mut()
            .find(|e| e.layer == entry.layer && e.file == entry.file)
        {
            Some(existing) => *existing = entry,
            None => {
                self.files.push(entry);
                // Stable: within a layer, files keep the order they were added in.
                self.files.sort_by_key(|e| e.layer);
            }
        }
    }
}

/// The lines (1-based) where `key:` starts an entry field, in order: the n-th is the n-th
/// entry's, as fetch writes one `file:` and one `sha256:` per entry.
fn key_lines(text: &str, key: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// The archived files of one layer, in lock order, with their paths.
pub fn layer_files(stack: &StackDir, lock: &Lockfile, layer: Layer) -> Vec<(LockEntry, PathBuf)> {
    lock.files
        .iter()
        .filter(|e| e.layer == layer)
        .map(|e| (e.clone(), stack.file_path(layer, &e.file)))
        .collect()
}

/// Re-hashes one archived file against its lock entry right before it is run; returns its path.
/// A missing or changed file is an error, so nothing unverified is ever executed.
pub fn verify_entry(stack: &StackDir, entry: &LockEntry) -> Result<PathBuf, ArchiveError> {
    let path = stack.file_path(entry.layer, &entry.file);
    let (actual, _) = match hash_file(&path, None) {
        Ok(h) => h,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ArchiveError::Missing {
                layer: entry.layer,
                file: entry.file.clone(),
                path,
            });
        }
        Err(e) => return Err(ArchiveError::io("reading", path, e)),
    };
    if !actual.eq_ignore_ascii_case(&entry.sha256) {
        return Err(ArchiveError::Corrupt {
            path,
            expected: entry.sha256.to_ascii_lowercase(),
            actual,
        });
    }
    Ok(path)
}

/// A lock entry that disagrees with the manifest's pin: the file and its lock line were changed
/// together (anyone who can write the archive can), or the pin was changed after the fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinConflict {
    pub layer: Layer,
    pub file: String,
    /// The manifest field that pins the file (`driver.installer.sha256`).
    pub field: String,
    pub pinned: String,
    pub locked: String,
}

impl PinConflict {
    /// The refusal, with both hashes and the fix.
    pub fn into_error(self) -> ArchiveError {
        ArchiveError::PinMismatch {
            layer: self.layer,
            file: self.file,
            field: self.field,
            pinned: self.pinned,
            locked: self.locked,
        }
    }
}

/// The sha256 the manifest pins for a layer's archived file, and the field that pins it.
pub fn manifest_pin(m: &Manifest, layer: Layer, file: &str) -> Option<(String, String)> {
    m.installers(layer)
        .iter()
        .enumerate()
        .find(|(_, inst)| inst.file_name().as_deref() == Some(file))
        .and_then(|(i, inst)| {
            let field = match layer {
                Layer::Library => format!("library.installers[{i}].sha256"),
                other => format!("{other}.installer.sha256"),
            };
            inst.sha256
                .as_deref()
                .map(|sha| (sha.to_ascii_lowercase(), field))
        })
}

/// Pin → lock for one entry: the lock must carry the manifest's pin where there is one.
/// Unpinned files (NVIDIA publishes no checksum) are trusted on first use: the lock speaks alone.
pub fn pin_conflict(m: &Manifest, entry: &LockEntry) -> Option<PinConflict> {
    let (pinned, field) = manifest_pin(m, entry.layer, &entry.file)?;
    (!pinned.eq_ignore_ascii_case(&entry.sha256)).then(|| PinConflict {
        layer: entry.layer,
        file: entry.file.clone(),
        field,
        pinned,
        locked: entry.sha256.to_ascii_lowercase(),
    })
}

/// Every lock entry that disagrees with the manifest's pins.
pub fn pin_conflicts(m: &Manifest, lock: &Lockfile) -> Vec<PinConflict> {
    lock.files
        .iter()
        .filter_map(|e| pin_conflict(m, e))
        .collect()
}

/// Pin → lock → bytes: the entry must carry the manifest's pin (where there is one) and the file
/// must hash to it. Returns the file's path.
pub fn verify_pinned(
    stack: &StackDir,
    m: &Manifest,
    entry: &LockEntry,
) -> Result<PathBuf, ArchiveError> {
    if let Some(conflict) = pin_conflict(m, entry) {
        return Err(conflict.into_error());
    }
    verify_entry(stack, entry)
}

/// Pin → lock → bytes, closing the window between the check and the run: copies the archived
/// file into `private_dir` (created fresh per step by the caller, owner-only) while hashing the
/// bytes it copies, and returns the copy's path only when those bytes match the lock (and the
/// manifest's pin). The archive's file is never run in place, so rewriting it after the check
/// changes nothing that runs. A copy that does not match is deleted.
pub fn stage_verified(
    stack: &StackDir,
    m: &Manifest,
    entry: &LockEntry,
    private_dir: &Path,
) -> Result<PathBuf, ArchiveError> {
    if let Some(conflict) = pin_conflict(m, entry) {
        return Err(conflict.into_error());
    }
    let path = stack.file_path(entry.layer, &entry.file);
    if let Err(e) = crate::fsutil::plain_file_below(stack.root(), &path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(ArchiveError::io("refusing to run", path, e));
    }
    let mut source = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ArchiveError::Missing {
                layer: entry.layer,
                file: entry.file.clone(),
                path,
            });
        }
        Err(e) => return Err(ArchiveError::io("reading", path, e)),
    };
    let staged = private_dir.join(&entry.file);
    let actual = copy_hashing(&mut source, &staged)
        .map_err(|e| ArchiveError::io("copying into the staging folder", &staged, e))?;
    if !actual.eq_ignore_ascii_case(&entry.sha256) {
        let _ = std::fs::remove_file(&staged);
        return Err(ArchiveError::Corrupt {
            path,
            expected: entry.sha256.to_ascii_lowercase(),
            actual,
        });
    }
    Ok(staged)
}

/// Copies `source` to a new owner-only file at `dest`, hashing the bytes as they are written.
fn copy_hashing(source: &mut File, dest: &Path) -> std::io::Result<String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o700);
    }
    let mut out = options.open(dest)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; HASH_BUFFER];
    loop {
        let n = source.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        std::io::Write::write_all(&mut out, &buf[..n])?;
    }
    out.sync_all()?;
    Ok(hex::encode(hasher.finalize()))
}

/// Size of the read buffer when hashing: large enough that syscalls vanish next to SHA-256.
pub(crate) const HASH_BUFFER: usize = 1 << 20;

/// SHA-256 (lowercase hex) and size of a file, reporting bytes to `progress` as it goes.
pub fn hash_file(
    path: &Path,
    progress: Option<(&dyn Progress, &str)>,
) -> std::io::Result<(String, u64)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; HASH_BUFFER];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
        if let Some((p, name)) = progress {
            p.advanced(name, n as u64);
        }
    }
    Ok((hex::encode(hasher.finalize()), total))
}

/// Marks a verified file read-only, so an accidental write cannot change it unnoticed: 0444 on
/// Unix (readable by a lab mirror's web server, writable by no one), the read-only attribute on
/// Windows.
pub(crate) fn make_read_only(path: &Path) -> Result<(), ArchiveError> {
    let mut perms = std::fs::metadata(path)
        .map_err(|e| ArchiveError::io("reading permissions of", path, e))?
        .permissions();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        perms.set_mode(0o444);
    }
    #[cfg(not(unix))]
    perms.set_readonly(true);
    std::fs::set_permissions(path, perms).map_err(|e| ArchiveError::io("making read-only", path, e))
}

/// Deletes an archived file even when it is read-only (Windows refuses otherwise).
pub(crate) fn remove_file(path: &Path) -> Result<(), ArchiveError> {
    if let Ok(meta) = std::fs::metadata(path) {
        let mut perms = meta.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        let _ = std::fs::set_permissions(path, perms);
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ArchiveError::io("deleting", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(layer: Layer, file: &str, sha: &str) -> LockEntry {
        LockEntry {
            layer,
            file: file.into(),
            url: format!("https://example.test/{file}"),
            sha256: sha.into(),
            size: 3,
            fetched_at: "2026-01-01T00:00:00Z".into(),
            verified_against: None,
        }
    }

    #[test]
    fn lock_round_trips_through_yaml_in_layer_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        let mut lock = Lockfile::new("s");
        lock.upsert(entry(Layer::Library, "b.whl", &"bb".repeat(32)));
        lock.upsert(entry(Layer::Driver, "a.run", &"aa".repeat(32)));
        lock.upsert(entry(Layer::Library, "c.whl", &"cc".repeat(32)));
        stack.write_lock(&lock).expect("write");
        let back = stack.read_lock().expect("read");
        assert_eq!(back, lock);
        let names: Vec<_> = back.files.iter().map(|e| e.file.as_str()).collect();
        assert_eq!(names, ["a.run", "b.whl", "c.whl"]);
        let lib = layer_files(&stack, &back, Layer::Library);
        assert_eq!(lib.len(), 2);
        assert!(lib[0].1.ends_with("library/b.whl"));
    }

    #[test]
    fn lock_with_a_path_in_a_file_name_is_refused() {
        let text = "schema: 1\nstack: s\nfiles:\n- layer: driver\n  file: ../x.run\n  url: u\n  sha256: aa\n  size: 1\n  fetched_at: t\n";
        let err = Lockfile::parse(text, Path::new("stack.lock")).expect_err("unsafe");
        assert!(err.to_string().contains("../x.run"), "{err}");
        assert!(err.to_string().contains("line 5"), "{err}");
    }

    #[test]
    fn a_hand_edited_lock_is_refused_at_its_line() {
        let sha = "ab".repeat(32);
        let entry = |file: &str, sha: &str| {
            format!(
                "- layer: driver\n  file: {file}\n  url: u\n  sha256: {sha}\n  size: 1\n  fetched_at: t\n"
            )
        };
        let head = "schema: 1\nstack: s\nfiles:\n";
        let short = format!("{head}{}", entry("a.run", &sha[1..]));
        let err = Lockfile::parse(&short, Path::new("stack.lock")).expect_err("63 digits");
        assert!(
            err.to_string()
                .contains("line 7: the sha256 of `driver/a.run` has 63"),
            "{err}"
        );
        let twice = format!("{head}{}{}", entry("a.run", &sha), entry("a.run", &sha));
        let err = Lockfile::parse(&twice, Path::new("stack.lock")).expect_err("twice");
        assert!(
            err.to_string().contains("listed twice (lines 5 and 11)"),
            "{err}"
        );
        assert_eq!(
            crate::exit::ExitStatus::exit(&err),
            crate::exit::Exit::Input
        );
    }

    #[test]
    fn verify_entry_refuses_missing_and_changed_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        let path = stack.file_path(Layer::Driver, "a.run");
        // sha256("abc")
        let good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let e = entry(Layer::Driver, "a.run", good);
        assert!(matches!(
            verify_entry(&stack, &e),
            Err(ArchiveError::Missing { .. })
        ));
        std::fs::write(&path, b"abc").expect("write");
        assert_eq!(verify_entry(&stack, &e).expect("ok"), path);
        remove_file(&path).expect("remove");
        std::fs::write(&path, b"abd").expect("write");
        assert!(matches!(
            verify_entry(&stack, &e),
            Err(ArchiveError::Corrupt { .. })
        ));
    }

    struct Notes(std::sync::Mutex<Vec<String>>);
    impl Progress for Notes {
        fn started(&self, _: &str, _: Option<u64>) {}
        fn advanced(&self, _: &str, _: u64) {}
        fn finished(&self, _: &str) {}
        fn note(&self, text: &str) {
            self.0.lock().expect("notes").push(text.into());
        }
    }

    #[test]
    fn second_lock_holder_is_told_to_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        let first = stack.lock(&super::super::Silent).expect("first");
        let notes = Notes(Default::default());
        std::thread::scope(|s| {
            let waiter = s.spawn(|| stack.lock(&notes).map(|_| ()));
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(first);
            waiter.join().expect("join").expect("second lock");
        });
        let notes = notes.0.into_inner().expect("notes");
        assert!(notes.iter().any(|n| n.contains("waiting")), "{notes:?}");
        assert!(
            !stack.busy_path().exists(),
            "the marker is removed with the lock"
        );
    }

    #[test]
    fn a_marker_left_by_a_killed_run_is_stale_and_taken_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        std::fs::write(stack.busy_path(), "pid 4242\n").expect("stale marker");
        let notes = Notes(Default::default());
        let held = stack.lock(&notes).expect("lock");
        let notes = notes.0.into_inner().expect("notes");
        assert!(
            notes
                .iter()
                .any(|n| n.contains("stale") && n.contains("4242")),
            "{notes:?}"
        );
        drop(held);
        assert!(!stack.busy_path().exists());
    }
}
