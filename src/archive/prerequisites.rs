//! The driver's build prerequisites in the archive: the distribution's own `.deb` packages (the
//! headers for a kernel, the compiler, make, DKMS) with their whole dependency closure, resolved
//! and downloaded by apt itself against an empty package state in a scratch folder, so the set
//! installs on a target that has nothing yet and the fetch host's own apt state is never touched.
//! Each `.deb` lands in `driver/` and in `stack.lock` like every other file, with its sha256,
//! size and source (`apt:<distribution>/<package>=<version>`); audit and bundle need nothing
//! more. Installing them is `install`'s job.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::layout::{hash_file, make_read_only, remove_file};
use super::{ArchiveError, LockEntry, Lockfile, Progress, StackDir, verify_entry};
use crate::exec;
use crate::manifest::validate::unsafe_file_name;
use crate::manifest::{Layer, Prerequisites};

/// The start of a prerequisite's source in the lock: `apt:debian-12/make=4.3-4.1`.
pub const APT_SOURCE_PREFIX: &str = "apt:";

/// How long one apt-get run may take (the index update, or the download of the set).
const APT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The host's own apt sources, used when the manifest names none.
const HOST_SOURCE_LIST: &str = "/etc/apt/sources.list";
const HOST_SOURCE_PARTS: &str = "/etc/apt/sources.list.d";

/// How an archived prerequisite came to be there this time (`fetch` reports it as a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    AlreadyArchived,
    Downloaded,
    Repaired,
}

/// One archived prerequisite: its file in `driver/`, sha256 and size.
#[derive(Debug, Clone)]
pub(super) struct Archived {
    pub file: String,
    pub sha256: String,
    pub size: u64,
    pub outcome: Outcome,
}

/// A `.deb` as apt names its file: `<package>_<version>_<architecture>.deb`, the epoch's colon
/// written `%3a`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebId {
    pub package: String,
    pub version: String,
    pub architecture: String,
}

/// The package, version and architecture of an archived `.deb`, from its file name.
pub fn deb_identity(file: &str) -> Option<DebId> {
    let stem = file.strip_suffix(".deb")?;
    let mut parts = stem.split('_');
    let (package, version, architecture) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || package.is_empty() || version.is_empty() || architecture.is_empty()
    {
        return None;
    }
    Some(DebId {
        package: package.to_string(),
        version: version.replace("%3a", ":").replace("%3A", ":"),
        architecture: architecture.to_string(),
    })
}

/// True for a lock entry that is one of the driver's prerequisite packages.
pub fn is_prerequisite_entry(entry: &LockEntry) -> bool {
    entry.layer == Layer::Driver && entry.url.starts_with(APT_SOURCE_PREFIX)
}

/// The archived prerequisite packages, in lock order.
pub fn prerequisite_entries(lock: &Lockfile) -> Vec<&LockEntry> {
    lock.files
        .iter()
        .filter(|e| is_prerequisite_entry(e))
        .collect()
}

/// Archives the prerequisites: kept as they are when the lock's set is intact and holds every
/// package asked for; else resolved and downloaded by apt, each file hashed, refused when the
/// lock knows it with another hash (or not at all, with `--locked`), then moved into `driver/`
/// read-only and entered in the lock. Entries of an earlier set that apt no longer chose leave
/// the lock, so install never hands dpkg two versions of one package.
pub(super) fn archive(
    p: &Prerequisites,
    stack: &StackDir,
    lock: &Mutex<Lockfile>,
    locked: bool,
    progress: &dyn Progress,
) -> Result<Vec<Archived>, ArchiveError> {
    let existing: Vec<LockEntry> = read(lock, stack)?
        .files
        .iter()
        .filter(|e| is_prerequisite_entry(e))
        .cloned()
        .collect();
    if let Some(kept) = intact(p, stack, &existing) {
        return Ok(kept);
    }
    progress.note(&format!(
        "driver: apt-get download of the prerequisites for {}: {}",
        p.distribution,
        p.requested().join(" ")
    ));
    let scratch = tempfile::Builder::new()
        .prefix(".apt-")
        .tempdir_in(stack.root())
        .map_err(|e| ArchiveError::io("creating a scratch folder in", stack.root(), e))?;
    let apt = AptRoot::create(scratch.path(), p)?;
    apt.run(&["-q", "update"])?;
    let mut args = vec![
        "-q",
        "-y",
        "--download-only",
        "--no-install-recommends",
        "install",
    ];
    let requested = p.requested();
    args.extend(requested.iter().map(String::as_str));
    apt.run(&args)?;
    let mut files = Vec::new();
    for name in apt.downloaded()? {
        files.push(adopt(p, stack, lock, &apt.archives(), &name, locked)?);
    }
    drop_stale(stack, lock, &files, progress)?;
    Ok(files)
}

/// The archived set, when every file verifies and every package asked for is in it.
fn intact(p: &Prerequisites, stack: &StackDir, existing: &[LockEntry]) -> Option<Vec<Archived>> {
    if existing.is_empty() {
        return None;
    }
    let ids: Vec<DebId> = existing
        .iter()
        .filter_map(|e| deb_identity(&e.file))
        .collect();
    let has = |wanted: &String| {
        let (name, version) = match wanted.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (wanted.as_str(), None),
        };
        ids.iter()
            .any(|id| id.package == name && version.is_none_or(|v| v == id.version))
    };
    if !p.requested().iter().all(has) {
        return None;
    }
    if !existing.iter().all(|e| verify_entry(stack, e).is_ok()) {
        return None;
    }
    Some(
        existing
            .iter()
            .map(|e| Archived {
                file: e.file.clone(),
                sha256: e.sha256.clone(),
                size: e.size,
                outcome: Outcome::AlreadyArchived,
            })
            .collect(),
    )
}

/// Hashes one downloaded `.deb`, checks it against the lock, moves it into `driver/` read-only
/// and enters it in the lock (written at once).
fn adopt(
    p: &Prerequisites,
    stack: &StackDir,
    lock: &Mutex<Lockfile>,
    from_dir: &Path,
    name: &str,
    locked: bool,
) -> Result<Archived, ArchiveError> {
    let id = match (unsafe_file_name(name), deb_identity(name)) {
        (None, Some(id)) => id,
        (why, _) => {
            return Err(ArchiveError::UnsafeName {
                what: "a package apt downloaded".into(),
                name: name.to_string(),
                why: why.unwrap_or("it is not named <package>_<version>_<architecture>.deb"),
            });
        }
    };
    let source = format!(
        "{APT_SOURCE_PREFIX}{}/{}={}",
        p.distribution, id.package, id.version
    );
    let from = from_dir.join(name);
    let (actual, size) =
        hash_file(&from, None).map_err(|e| ArchiveError::io("reading", &from, e))?;
    let known = read(lock, stack)?.find(Layer::Driver, name).cloned();
    match &known {
        None if locked => {
            return Err(ArchiveError::Unpinned {
                layer: Layer::Driver,
                file: name.to_string(),
                url: source,
            });
        }
        // The same package at the same version is the same bytes in every mirror of the
        // distribution: another hash means the file or the lock was changed.
        Some(entry) if !entry.sha256.eq_ignore_ascii_case(&actual) => {
            return Err(ArchiveError::Checksum {
                url: source,
                expected: entry.sha256.to_ascii_lowercase(),
                actual,
            });
        }
        _ => {}
    }
    let to = stack.file_path(Layer::Driver, name);
    let outcome = match &known {
        Some(entry) if verify_entry(stack, entry).is_ok() => Outcome::AlreadyArchived,
        Some(_) => Outcome::Repaired,
        None => Outcome::Downloaded,
    };
    if outcome != Outcome::AlreadyArchived {
        remove_file(&to)?;
        std::fs::rename(&from, &to).map_err(|e| ArchiveError::io("renaming into place", &to, e))?;
        make_read_only(&to)?;
    }
    let mut guard = lock.lock().map_err(|_| poisoned(stack))?;
    guard.upsert(LockEntry {
        layer: Layer::Driver,
        file: name.to_string(),
        url: source,
        sha256: actual.clone(),
        size,
        fetched_at: jiff::Timestamp::now().to_string(),
        // apt checked it against the distribution's signed package index (counted by `audit`
        // with the other files a package index served).
        verified_against: None,
    });
    stack.write_lock(&guard)?;
    Ok(Archived {
        file: name.to_string(),
        sha256: actual,
        size,
        outcome,
    })
}

/// Removes the prerequisites of an earlier set that apt did not choose this time.
fn drop_stale(
    stack: &StackDir,
    lock: &Mutex<Lockfile>,
    kept: &[Archived],
    progress: &dyn Progress,
) -> Result<(), ArchiveError> {
    let mut guard = lock.lock().map_err(|_| poisoned(stack))?;
    let stale: Vec<LockEntry> = guard
        .files
        .iter()
        .filter(|e| is_prerequisite_entry(e) && !kept.iter().any(|k| k.file == e.file))
        .cloned()
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    for entry in &stale {
        progress.note(&format!(
            "driver/{}: no longer part of the prerequisites; removed",
            entry.file
        ));
        remove_file(&stack.file_path(Layer::Driver, &entry.file))?;
    }
    guard
        .files
        .retain(|e| !stale.iter().any(|s| s.layer == e.layer && s.file == e.file));
    stack.write_lock(&guard)
}

fn read(lock: &Mutex<Lockfile>, stack: &StackDir) -> Result<Lockfile, ArchiveError> {
    lock.lock().map(|l| l.clone()).map_err(|_| poisoned(stack))
}

fn poisoned(stack: &StackDir) -> ArchiveError {
    ArchiveError::BadLock {
        path: stack.lock_path(),
        reason: "a download thread panicked while updating it".into(),
    }
}

/// A scratch apt: its own configuration, index lists, cache and an empty package state, so apt
/// resolves the whole closure as for a bare target and changes nothing of the host's.
struct AptRoot {
    dir: PathBuf,
}

impl AptRoot {
    fn create(dir: &Path, p: &Prerequisites) -> Result<Self, ArchiveError> {
        for sub in [
            "etc/apt/apt.conf.d",
            "etc/apt/preferences.d",
            "etc/apt/sources.list.d",
            "lists/partial",
            "archives/partial",
            "log",
        ] {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path).map_err(|e| ArchiveError::io("creating", path, e))?;
        }
        let text = dir.display().to_string();
        if text.contains(['"', '\n']) {
            return Err(ArchiveError::Prerequisites(format!(
                "the archive's path {text} holds a quote or a line break, which apt's configuration cannot carry; use another archive folder"
            )));
        }
        let (list, parts) = if p.sources.is_empty() {
            host_distribution_matches(&p.distribution)?;
            (HOST_SOURCE_LIST.to_string(), HOST_SOURCE_PARTS.to_string())
        } else {
            let list = dir.join("etc/apt/sources.list");
            write(&list, &format!("{}\n", p.sources.join("\n")))?;
            (
                list.display().to_string(),
                dir.join("etc/apt/sources.list.d").display().to_string(),
            )
        };
        write(&dir.join("status"), "")?;
        let config = format!(
            "Dir \"{text}/\";\n\
             Dir::State \"{text}/\";\n\
             Dir::State::lists \"{text}/lists/\";\n\
             Dir::State::status \"{text}/status\";\n\
             Dir::Cache \"{text}/\";\n\
             Dir::Cache::archives \"{text}/archives/\";\n\
             Dir::Log \"{text}/log/\";\n\
             Dir::Etc::sourcelist \"{list}\";\n\
             Dir::Etc::sourceparts \"{parts}\";\n\
             Dir::Etc::trusted \"/etc/apt/trusted.gpg\";\n\
             Dir::Etc::trustedparts \"/etc/apt/trusted.gpg.d/\";\n\
             APT::Architecture \"{arch}\";\n\
             APT::Architectures {{ \"{arch}\"; }};\n\
             APT::Install-Recommends \"false\";\n\
             APT::Install-Suggests \"false\";\n\
             APT::Sandbox::User \"root\";\n\
             Debug::NoLocking \"true\";\n\
             Acquire::Languages \"none\";\n",
            arch = p.architecture,
        );
        write(&dir.join("apt.conf"), &config)?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    fn archives(&self) -> PathBuf {
        self.dir.join("archives")
    }

    /// Runs `apt-get ARGS` under this configuration; a failure carries apt's last lines.
    fn run(&self, args: &[&str]) -> Result<(), ArchiveError> {
        let mut spec = exec::Spec::captured("apt-get", args.iter().copied(), APT_TIMEOUT);
        spec.env = vec![(
            OsString::from("APT_CONFIG"),
            self.dir.join("apt.conf").into_os_string(),
        )];
        let finished = exec::run(spec).map_err(|e| {
            ArchiveError::Prerequisites(format!(
                "cannot run apt-get to archive the driver's prerequisites: {}; fetch them on a machine with apt (Debian, Ubuntu), or remove driver.prerequisites",
                std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string)
            ))
        })?;
        if finished.end == exec::End::Exited(0) {
            return Ok(());
        }
        let said = format!(
            "{}\n{}",
            String::from_utf8_lossy(&finished.stdout),
            String::from_utf8_lossy(&finished.stderr)
        );
        let tail = exec::tail_lines(&said, 12).join("\n    ");
        Err(ArchiveError::Prerequisites(format!(
            "`apt-get {}` failed ({}); check driver.prerequisites (the package names, `kernel:`, `sources:`) against the distribution. apt said:\n    {tail}",
            args.join(" "),
            finished.end,
        )))
    }

    /// The `.deb` files apt put in the cache, sorted by name.
    fn downloaded(&self) -> Result<Vec<String>, ArchiveError> {
        let dir = self.archives();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| ArchiveError::io("reading", &dir, e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".deb"))
            .collect();
        names.sort();
        Ok(names)
    }
}

fn write(path: &Path, text: &str) -> Result<(), ArchiveError> {
    std::fs::write(path, text).map_err(|e| ArchiveError::io("writing", path, e))
}

/// Without `sources:`, the host's own apt sources are used: only right when the host runs the
/// distribution the packages are for.
fn host_distribution_matches(distribution: &str) -> Result<(), ArchiveError> {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let host = format!("{}-{}", field("ID"), field("VERSION_ID"));
    if host == distribution {
        return Ok(());
    }
    Err(ArchiveError::Prerequisites(format!(
        "driver.prerequisites are for {distribution} but this machine runs {host}, so its own apt sources would fetch the wrong packages; add `sources:` with {distribution}'s apt lines (`deb URL SUITE main`), or fetch on a {distribution} machine"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apts_file_names_give_package_version_and_architecture() {
        assert_eq!(
            deb_identity("gcc_4%3a12.2.0-3_amd64.deb"),
            Some(DebId {
                package: "gcc".into(),
                version: "4:12.2.0-3".into(),
                architecture: "amd64".into(),
            })
        );
        assert_eq!(
            deb_identity("dkms_3.0.10-8+deb12u1_all.deb").map(|d| d.version),
            Some("3.0.10-8+deb12u1".into())
        );
        assert_eq!(deb_identity("NVIDIA-Linux-x86_64-595.71.05.run"), None);
        assert_eq!(deb_identity("a_b.deb"), None);
        assert_eq!(deb_identity("a_b_c_d.deb"), None);
    }

    #[test]
    fn only_apt_sourced_driver_files_are_prerequisites() {
        let entry = |layer, url: &str| LockEntry {
            layer,
            file: "make_4.3-4.1_amd64.deb".into(),
            url: url.into(),
            sha256: "a".repeat(64),
            size: 1,
            fetched_at: String::new(),
            verified_against: None,
        };
        assert!(is_prerequisite_entry(&entry(
            Layer::Driver,
            "apt:debian-12/make=4.3-4.1"
        )));
        assert!(!is_prerequisite_entry(&entry(
            Layer::Driver,
            "https://x.test/make_4.3-4.1_amd64.deb"
        )));
        assert!(!is_prerequisite_entry(&entry(
            Layer::Library,
            "apt:debian-12/make=4.3-4.1"
        )));
    }
}
