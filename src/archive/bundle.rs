//! Bundles: one zip holding a stack's manifest, lock, installers and proven-stack record, for a
//! rebuild without network. Installers are stored (they are compressed already), streamed and
//! verified against the lock on the way in; Zip64 covers files over 4 GiB. Unbundling refuses
//! any entry that could land outside the stack folder and audits the result before it counts.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

use super::audit::{AuditReport, audit_stack, fetched_lock};
use super::fetch::partial_path;
use super::layout::{HASH_BUFFER, make_read_only};
use super::{ArchiveError, Progress, StackDir};
use crate::manifest::Layer;

/// Files beside the layer folders that travel in a bundle.
const STACK_FILES: [&str; 4] = [
    "manifest.yaml",
    "stack.lock",
    "proven-stack.yaml",
    "proven-stack.svg",
];

/// What went into a bundle.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BundleSummary {
    pub path: PathBuf,
    pub entries: usize,
    pub bytes: u64,
}

/// Packs `stack` into `output`, verifying every installer against the lock as it is copied.
/// The zip is written as `<output>.partial` and renamed only when complete.
pub fn bundle(
    stack: &StackDir,
    output: &Path,
    progress: &dyn Progress,
) -> Result<BundleSummary, ArchiveError> {
    let lock = fetched_lock(stack)?;
    refuse_output_in_stack(stack, output)?;
    let partial = partial_path(output);
    match write_bundle(stack, &lock, output, &partial, progress) {
        Ok(summary) => {
            std::fs::rename(&partial, output)
                .map_err(|e| ArchiveError::io("renaming into place", output, e))?;
            Ok(summary)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// A zip library error while writing `partial`: a write that failed (a full disk) is the
/// disk's, exit 3 like any write; anything else is the bundle's.
fn zip_error(e: zip::result::ZipError, output: &Path, partial: &Path) -> ArchiveError {
    match e {
        zip::result::ZipError::Io(e) => ArchiveError::io("writing", partial, e),
        other => ArchiveError::Bundle {
            path: output.to_path_buf(),
            reason: other.to_string(),
        },
    }
}

/// Writes the whole zip into `partial` and syncs it.
fn write_bundle(
    stack: &StackDir,
    lock: &super::Lockfile,
    output: &Path,
    partial: &Path,
    progress: &dyn Progress,
) -> Result<BundleSummary, ArchiveError> {
    let file = File::create(partial).map_err(|e| ArchiveError::io("creating", partial, e))?;
    let gone = std::rc::Rc::new(std::cell::Cell::new(false));
    let sink = LetGo::new(file, std::rc::Rc::clone(&gone));
    let mut zip = zip::ZipWriter::new(BufWriter::with_capacity(HASH_BUFFER, sink));
    let summary = match write_entries(&mut zip, stack, lock, output, partial, progress) {
        Ok(summary) => summary,
        Err(e) => {
            // A ZipWriter dropped unfinished writes its directory itself and, when that fails
            // too (the disk is still full), prints its own error to stderr: let the file go.
            gone.set(true);
            drop(zip);
            return Err(e);
        }
    };
    let out = zip.finish().map_err(|e| zip_error(e, output, partial))?;
    let sink = out
        .into_inner()
        .map_err(|e| ArchiveError::io("writing", partial, e.into_error()))?;
    sink.inner
        .sync_all()
        .map_err(|e| ArchiveError::io("syncing", partial, e))?;
    Ok(summary)
}

/// The stack files, then every locked installer, each checked against its sha256 on the way.
fn write_entries<W: Write + std::io::Seek>(
    zip: &mut zip::ZipWriter<W>,
    stack: &StackDir,
    lock: &super::Lockfile,
    output: &Path,
    partial: &Path,
    progress: &dyn Progress,
) -> Result<BundleSummary, ArchiveError> {
    let name = stack.name();
    let mut summary = BundleSummary {
        path: output.to_path_buf(),
        entries: 0,
        bytes: 0,
    };
    let zip_err = |e| zip_error(e, output, partial);
    for extra in STACK_FILES {
        let path = stack.root().join(extra);
        match crate::fsutil::plain_file_below(stack.root(), &path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(ArchiveError::io("bundling", &path, e)),
        }
        let Ok(bytes) = crate::fsutil::read_bytes_capped(&path, crate::fsutil::SMALL_FILE_CAP)
        else {
            continue;
        };
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        zip.start_file(format!("{name}/{extra}"), options)
            .map_err(zip_err)?;
        zip.write_all(&bytes)
            .map_err(|e| ArchiveError::io("writing", partial, e))?;
        summary.entries += 1;
    }
    for entry in &lock.files {
        let path = stack.file_path(entry.layer, &entry.file);
        let label = format!("{}/{}", entry.layer, entry.file);
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(entry.size >= u64::from(u32::MAX))
            .unix_permissions(0o444);
        zip.start_file(format!("{name}/{label}"), options)
            .map_err(zip_err)?;
        crate::fsutil::plain_file_below(stack.root(), &path)
            .map_err(|e| ArchiveError::io("bundling", &path, e))?;
        let source = File::open(&path).map_err(|e| ArchiveError::io("reading", &path, e))?;
        progress.started(&label, Some(entry.size));
        let actual = copy_hashing(source, zip, |n| progress.advanced(&label, n))
            .map_err(|e| ArchiveError::io("writing", partial, e))?;
        progress.finished(&label);
        if !actual.eq_ignore_ascii_case(&entry.sha256) {
            return Err(ArchiveError::Corrupt {
                path,
                expected: entry.sha256.clone(),
                actual,
            });
        }
        summary.entries += 1;
        summary.bytes += entry.size;
    }
    Ok(summary)
}

/// The bundle's file, which can be let go after a failure (its first failed write, or a
/// refusal such as a corrupt installer): from then on writes and seeks only move a position, so whatever the zip library still writes on its way out goes nowhere and
/// succeeds. The partial is deleted afterwards.
struct LetGo {
    inner: File,
    gone: std::rc::Rc<std::cell::Cell<bool>>,
    pos: u64,
    len: u64,
}

impl LetGo {
    fn new(inner: File, gone: std::rc::Rc<std::cell::Cell<bool>>) -> Self {
        Self {
            inner,
            gone,
            pos: 0,
            len: 0,
        }
    }
}

impl Write for LetGo {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = if self.gone.get() {
            buf.len()
        } else {
            // The first failed write lets go: `finish` failing drops the writer, whose `Drop`
            // would try (and fail, and print) once more.
            self.inner.write(buf).inspect_err(|_| self.gone.set(true))?
        };
        self.pos += n as u64;
        self.len = self.len.max(self.pos);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.gone.get() {
            return Ok(());
        }
        self.inner.flush()
    }
}

impl std::io::Seek for LetGo {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        use std::io::SeekFrom;
        if !self.gone.get() {
            self.pos = self.inner.seek(to)?;
            self.len = self.len.max(self.pos);
            return Ok(self.pos);
        }
        let (base, delta) = match to {
            SeekFrom::Start(n) => (0, i128::from(n)),
            SeekFrom::Current(d) => (self.pos, i128::from(d)),
            SeekFrom::End(d) => (self.len, i128::from(d)),
        };
        self.pos = u64::try_from(i128::from(base) + delta)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}

/// A bundle written into the stack folder would replace an archived file, the lock or the
/// manifest copy it is made of (and then bundle itself): refused before a byte is written.
fn refuse_output_in_stack(stack: &StackDir, output: &Path) -> Result<(), ArchiveError> {
    let Ok(root) = stack.root().canonicalize() else {
        return Ok(());
    };
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(dir) = parent.canonicalize() else {
        return Ok(()); // the write itself will say the folder is missing
    };
    if dir.starts_with(&root) {
        return Err(ArchiveError::BundleOntoInput {
            path: output.to_path_buf(),
            why: format!(
                "it lies inside the stack folder {} that the bundle is made of{}",
                root.display(),
                if output.exists() {
                    " and would overwrite a file there"
                } else {
                    ""
                }
            ),
        });
    }
    Ok(())
}

/// Streams `source` into `sink`, returning the SHA-256 of what passed.
fn copy_hashing(
    mut source: impl Read,
    sink: &mut impl Write,
    mut advanced: impl FnMut(u64),
) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; HASH_BUFFER];
    loop {
        let n = source.read(&mut buf)?;
        if n == 0 {
            return Ok(hex::encode(hasher.finalize()));
        }
        hasher.update(&buf[..n]);
        sink.write_all(&buf[..n])?;
        advanced(n as u64);
    }
}

/// Where a bundle entry goes inside the stack folder, or why it is refused.
fn entry_target(
    name: &str,
    is_symlink: bool,
    is_dir: bool,
) -> Result<Option<(String, PathBuf)>, &'static str> {
    if is_symlink {
        return Err("symbolic links are never unpacked");
    }
    if name.starts_with('/') || name.starts_with('\\') || name.get(1..2) == Some(":") {
        return Err("it is an absolute path");
    }
    if name.contains('\\') {
        return Err("it contains a backslash, which Windows reads as a folder separator");
    }
    let path = Path::new(name);
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err("it escapes the target folder (`..`, `.` or a root)");
    }
    let parts: Vec<&str> = name.trim_end_matches('/').split('/').collect();
    let stack = parts.first().copied().unwrap_or_default();
    if is_dir {
        return Ok(None);
    }
    let rest = match parts.as_slice() {
        [_, file] if STACK_FILES.contains(file) => (*file).to_string(),
        [_, layer, file] if layer.parse::<Layer>().is_ok() => {
            if crate::manifest::validate::unsafe_file_name(file).is_some() {
                return Err("its file name is unsafe");
            }
            format!("{layer}/{file}")
        }
        _ => return Err("it is not part of a stack bundle (STACK/FILE or STACK/LAYER/FILE)"),
    };
    Ok(Some((stack.to_string(), PathBuf::from(rest))))
}

/// Unpacks a bundle into `<archive>/<stack>/`, then audits it; only a clean audit keeps it.
/// `<stack>` is the name in the bundle's manifest, where `install` looks, even when the folder
/// inside the zip was renamed.
pub fn unbundle(
    zip_path: &Path,
    archive: &super::Archive,
    progress: &dyn Progress,
) -> Result<(StackDir, AuditReport), ArchiveError> {
    let archive = archive.root();
    let bad = |reason: String| ArchiveError::Bundle {
        path: zip_path.to_path_buf(),
        reason,
    };
    let unreadable = |reason: String| ArchiveError::BundleUnreadable {
        path: zip_path.to_path_buf(),
        reason,
    };
    let file = File::open(zip_path).map_err(|e| unreadable(format!("cannot open it: {e}")))?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| unreadable(format!("not a readable zip: {e}")))?;
    let (folder, plan) = plan_entries(&mut zip, zip_path)?;
    let name = match manifest_name(&mut zip, &plan).map_err(bad)? {
        Some(name) => name,
        None => folder,
    };
    let target = StackDir::new(archive, &name);
    if let Some(same) = already_unpacked(&mut zip, &plan, &target, progress)? {
        // The same stack, intact, is already there: unbundling it again changes nothing.
        return Ok((target, same));
    }
    if target.lock_path().exists() {
        return Err(bad(format!(
            "{} already holds this stack; run `stackpin audit {}` on it, or move it away and unbundle again",
            target.root().display(),
            target.manifest_path().display()
        )));
    }
    std::fs::create_dir_all(archive).map_err(|e| ArchiveError::io("creating", archive, e))?;
    let scratch = tempfile::Builder::new()
        .prefix(".unbundle-")
        .tempdir_in(archive)
        .map_err(|e| ArchiveError::io("creating a scratch folder in", archive, e))?;
    let staged = StackDir::at(scratch.path().join(&name));
    staged.create()?;
    unpack_entries(&mut zip, &plan, &staged).map_err(|e| match e {
        Unpack::Bad(reason) => bad(reason),
        Unpack::Archive(e) => e,
    })?;
    let report = audit_staged(&staged, zip_path, progress)?;
    for (_, rel) in &plan {
        if rel.components().count() == 2 {
            make_read_only(&staged.root().join(rel))?;
        }
    }
    move_into_place(&staged, &target).map_err(|e| match e {
        Unpack::Bad(reason) => bad(reason),
        Unpack::Archive(e) => e,
    })?;
    let report = AuditReport {
        stack: target.root().to_path_buf(),
        ..report
    };
    Ok((target, report))
}

/// Why unpacking stopped: the bundle's fault, or the archive's.
enum Unpack {
    Bad(String),
    Archive(ArchiveError),
}

impl From<ArchiveError> for Unpack {
    fn from(e: ArchiveError) -> Self {
        Unpack::Archive(e)
    }
}

/// Judges every name before a single byte is written: the stack folder the entries share, and
/// each entry's index with its path inside the stack.
fn plan_entries<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    zip_path: &Path,
) -> Result<(String, Vec<(usize, PathBuf)>), ArchiveError> {
    let bad = |reason: String| ArchiveError::Bundle {
        path: zip_path.to_path_buf(),
        reason,
    };
    let mut plan = Vec::new();
    let mut stack_name: Option<String> = None;
    for i in 0..zip.len() {
        let entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().map_err(|e| bad(e.to_string()))?.to_string();
        let target = entry_target(&name, entry.is_symlink(), entry.is_dir()).map_err(|why| {
            ArchiveError::UnsafeEntry {
                path: zip_path.to_path_buf(),
                entry: name.clone(),
                why,
            }
        })?;
        let Some((stack, rel)) = target else { continue };
        match &stack_name {
            None => stack_name = Some(stack),
            Some(s) if *s != stack => {
                return Err(bad(format!(
                    "holds two stacks (`{s}` and `{stack}`); a bundle holds one"
                )));
            }
            Some(_) => {}
        }
        plan.push((i, rel));
    }
    let name = stack_name.ok_or_else(|| bad("holds no stack".into()))?;
    Ok((name, plan))
}

/// The stack name the bundle's `manifest.yaml` gives, read with a cap before anything is
/// unpacked; `None` when the bundle has no manifest (a hand-made zip).
fn manifest_name<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    plan: &[(usize, PathBuf)],
) -> Result<Option<String>, String> {
    let Some((i, _)) = plan
        .iter()
        .find(|(_, rel)| rel == Path::new("manifest.yaml"))
    else {
        return Ok(None);
    };
    let entry = zip.by_index(*i).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    entry
        .take(crate::fsutil::SMALL_FILE_CAP)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("its manifest.yaml does not read: {e}"))?;
    let text = crate::fsutil::decode_text(bytes)
        .map_err(|e| format!("its manifest.yaml does not read: {e}"))?;
    let manifest = crate::manifest::parse(&text, Path::new("manifest.yaml"))
        .map_err(|e| format!("its manifest.yaml cannot be read ({e}); nothing was kept"))?;
    let name = manifest.name;
    let safe = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if !safe {
        return Err(format!(
            "its manifest.yaml names the stack `{}`, which cannot name a folder; nothing was kept",
            crate::manifest::shown_value(&name)
        ));
    }
    Ok(Some(name))
}

/// Writes each planned entry into `staged`, no larger than its stack.lock allows (the lock
/// first, small: a zip bomb stops at the first byte past its locked size, not a full disk).
fn unpack_entries<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    plan: &[(usize, PathBuf)],
    staged: &StackDir,
) -> Result<(), Unpack> {
    let sizes = bundled_sizes(zip, plan).map_err(Unpack::Bad)?;
    for (i, rel) in plan {
        let mut entry = zip.by_index(*i).map_err(|e| Unpack::Bad(e.to_string()))?;
        let cap = if rel.components().count() == 2 {
            sizes.get(rel).copied().unwrap_or(0)
        } else {
            crate::fsutil::SMALL_FILE_CAP
        };
        if entry.size() > cap {
            return Err(Unpack::Bad(format!(
                "`{}` says it inflates to {} bytes, more than the {cap} its stack.lock allows; refused before unpacking",
                rel.display(),
                entry.size()
            )));
        }
        let dest = staged.root().join(rel);
        let mut out = File::create(&dest).map_err(|e| ArchiveError::io("creating", &dest, e))?;
        let copied = std::io::copy(&mut (&mut entry).take(cap + 1), &mut out)
            .map_err(|e| ArchiveError::io("unpacking into", &dest, e))?;
        if copied > cap {
            return Err(Unpack::Bad(format!(
                "`{}` inflates past the {cap} bytes its stack.lock allows; refused while unpacking",
                rel.display()
            )));
        }
        out.sync_all()
            .map_err(|e| ArchiveError::io("syncing", &dest, e))?;
    }
    Ok(())
}

/// The staged stack's audit: pin → lock → bytes against the manifest that travels in the
/// bundle (a file rewritten together with its lock line still disagrees with the pin).
fn audit_staged(
    staged: &StackDir,
    zip_path: &Path,
    progress: &dyn Progress,
) -> Result<AuditReport, ArchiveError> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let bundled = bundled_manifest(staged).map_err(|reason| ArchiveError::Bundle {
        path: zip_path.to_path_buf(),
        reason,
    })?;
    let report = audit_stack(staged, bundled.as_ref(), threads, progress)?;
    if report.ok() {
        return Ok(report);
    }
    let failed: Vec<String> = report
        .files
        .iter()
        .filter(|f| f.status.is_failure())
        .map(|f| match &f.pin_conflict {
            Some(c) => c.clone().into_error().to_string(),
            None => format!("{} {:?}", f.path, f.status).to_lowercase(),
        })
        .collect();
    Err(ArchiveError::BundleFailedAudit {
        path: zip_path.to_path_buf(),
        failed: failed.join(", "),
    })
}

/// Moves the audited stack to its place. An empty leftover (e.g. layer folders from a failed
/// fetch) may be replaced; anything else not.
fn move_into_place(staged: &StackDir, target: &StackDir) -> Result<(), Unpack> {
    if target.root().exists() {
        for layer in Layer::ORDER {
            let _ = std::fs::remove_dir(target.layer_dir(layer));
        }
        let _ = std::fs::remove_file(target.root().join(".stackpin-busy"));
        std::fs::remove_dir(target.root()).map_err(|e| {
            Unpack::Bad(format!(
                "{} exists and is not empty ({e}); move it away first",
                target.root().display()
            ))
        })?;
    }
    std::fs::rename(staged.root(), target.root())
        .map_err(|e| ArchiveError::io("moving into place", target.root(), e))?;
    Ok(())
}

/// The audit of the stack already at `target` when it is this bundle's stack, unchanged: its
/// `stack.lock` is byte for byte the bundle's and every file still passes the audit against the
/// lock and the manifest's pins. `None` when anything differs (then unbundle refuses as before).
/// Each layer file's size as the bundle's own `stack.lock` gives it (`driver/NAME` → bytes),
/// read with a cap before anything else is unpacked. A bundle without a lock has no sizes:
/// its installers are refused at their first byte.
fn bundled_sizes<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    plan: &[(usize, PathBuf)],
) -> Result<std::collections::HashMap<PathBuf, u64>, String> {
    let mut sizes = std::collections::HashMap::new();
    let Some((i, _)) = plan.iter().find(|(_, rel)| rel == Path::new("stack.lock")) else {
        return Ok(sizes);
    };
    let entry = zip.by_index(*i).map_err(|e| e.to_string())?;
    let mut text = String::new();
    entry
        .take(crate::fsutil::SMALL_FILE_CAP + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("its stack.lock does not read: {e}"))?;
    if text.len() as u64 > crate::fsutil::SMALL_FILE_CAP {
        return Err("its stack.lock is larger than any lock stackpin writes".into());
    }
    let lock: super::Lockfile = crate::fsutil::parse_yaml(&text, Path::new("stack.lock"))
        .map_err(|e| format!("its stack.lock does not read: {e}"))?;
    for file in &lock.files {
        sizes.insert(Path::new(file.layer.as_str()).join(&file.file), file.size);
    }
    Ok(sizes)
}

fn already_unpacked<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    plan: &[(usize, PathBuf)],
    target: &StackDir,
    progress: &dyn Progress,
) -> Result<Option<AuditReport>, ArchiveError> {
    let Ok(existing) = std::fs::read(target.lock_path()) else {
        return Ok(None);
    };
    let Some((index, _)) = plan.iter().find(|(_, rel)| rel == Path::new("stack.lock")) else {
        return Ok(None);
    };
    let mut bundled = Vec::new();
    let read = zip
        .by_index(*index)
        .map_err(std::io::Error::other)
        .and_then(|mut entry| entry.read_to_end(&mut bundled));
    if read.is_err() || bundled != existing {
        return Ok(None);
    }
    let Ok(manifest) = bundled_manifest(target) else {
        return Ok(None);
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let report = audit_stack(target, manifest.as_ref(), threads, progress)?;
    Ok(report.ok().then_some(report))
}

/// The bundle's `manifest.yaml`, when it has one (bundles always do; a hand-made zip may not).
fn bundled_manifest(staged: &StackDir) -> Result<Option<crate::manifest::Manifest>, String> {
    let path = staged.manifest_path();
    if !path.is_file() {
        return Ok(None);
    }
    crate::manifest::read(&path)
        .map(Some)
        .map_err(|e| format!("its manifest.yaml cannot be read ({e}); nothing was kept"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_outside_the_stack_are_refused() {
        assert!(entry_target("../evil.run", false, false).is_err());
        assert!(entry_target("s/../../evil.run", false, false).is_err());
        assert!(entry_target("/etc/passwd", false, false).is_err());
        assert!(entry_target("C:/x/y", false, false).is_err());
        assert!(entry_target("s\\..\\x", false, false).is_err());
        assert!(entry_target("s/driver/x.run", true, false).is_err());
        assert!(entry_target("s/bin/x.run", false, false).is_err());
        assert!(entry_target("s/driver/sub/x.run", false, false).is_err());
    }

    #[test]
    fn stack_files_and_layer_files_are_accepted() {
        assert_eq!(
            entry_target("s/driver/x.run", false, false),
            Ok(Some(("s".into(), PathBuf::from("driver/x.run"))))
        );
        assert_eq!(
            entry_target("s/stack.lock", false, false),
            Ok(Some(("s".into(), PathBuf::from("stack.lock"))))
        );
        assert_eq!(entry_target("s/driver/", false, true), Ok(None));
    }
}
