//! OS file locks that keep stackpins apart, and the note each holder leaves in its lock file:
//! its own pid and, while a step runs, the process tree of that step.
//!
//! The OS releases a lock when its holder dies, even by `kill -9`; an installer the holder
//! started may live on (a guard ends it, see `exec::guard`, but a guard can be killed too). So
//! a lock whose holder is gone is stale only when the tree it recorded is gone as well: until
//! then [`acquire`] waits for that tree, or says who holds the lock.
//!
//! The lock files are never deleted (a waiter then always locks the live file), are opened
//! without following a symbolic link (a lock folder such as `/run/lock` is writable by all),
//! and hold a few short lines.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a waiter looks again at a tree that outlived its stackpin.
const TREE_POLL: Duration = Duration::from_millis(200);

/// The most of a lock file that is read: a pid and a tree are a few bytes.
const NOTE_CAP: u64 = 4096;

/// Exclusive (install, repair) or shared (prove, measure: many at once, no install meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Exclusive,
    Shared,
}

/// Who holds (or last held) a lock, as its file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    /// The stackpin that took it.
    pub pid: Option<u32>,
    /// The process group (Unix) of the step it was running.
    pub tree: Option<u32>,
}

impl Holder {
    fn parse(text: &str) -> Holder {
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        Holder {
            pid: field("pid "),
            tree: field("tree "),
        }
    }

    /// "stackpin pid 4242 (its installer's process group 4250 still runs)".
    pub fn describe(&self) -> String {
        let who = match self.pid {
            Some(pid) => format!("stackpin pid {pid}"),
            None => "another stackpin".to_string(),
        };
        match self.tree {
            Some(tree) if tree_alive(tree) => {
                format!("{who} (the step it started, process group {tree}, still runs)")
            }
            _ => who,
        }
    }
}

/// A lock this process holds; dropping it releases the lock.
#[derive(Debug)]
pub struct HeldLock {
    file: File,
    path: PathBuf,
}

impl HeldLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records the process tree of the step that is starting (`None` when it ended), so that a
    /// stackpin taking the lock after this one died can wait for that tree.
    pub fn record_tree(&self, tree: Option<u32>) {
        let mut note = format!("pid {}\n", std::process::id());
        if let Some(tree) = tree {
            note.push_str(&format!("tree {tree}\n"));
        }
        let mut file = &self.file;
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = file.write_all(note.as_bytes());
        let _ = file.sync_data();
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Takes the lock at `path` (creating the file). `wait`: `Some(note)` waits for the holder,
/// saying so once through `note`; `None` answers `Err(holder)` at once when it is held.
pub fn acquire(
    path: &Path,
    mode: Mode,
    wait: Option<&dyn Fn(&str)>,
) -> io::Result<Result<HeldLock, Holder>> {
    let file = open(path)?;
    let taken = match mode {
        Mode::Exclusive => file.try_lock(),
        Mode::Shared => file.try_lock_shared(),
    };
    match (taken, wait) {
        (Ok(()), _) => {}
        (Err(std::fs::TryLockError::WouldBlock), None) => return Ok(Err(holder_of(&file))),
        (Err(std::fs::TryLockError::WouldBlock), Some(note)) => {
            note(&format!(
                "{} is held by {}; waiting for it to finish",
                path.display(),
                holder_of(&file).describe()
            ));
            match mode {
                Mode::Exclusive => file.lock()?,
                Mode::Shared => file.lock_shared()?,
            }
        }
        (Err(std::fs::TryLockError::Error(e)), _) => return Err(e),
    }
    let held = HeldLock {
        file,
        path: path.to_path_buf(),
    };
    if mode == Mode::Exclusive {
        // The holder before is gone; a step it started may not be.
        let before = holder_of(&held.file);
        if let Some(tree) = before.tree.filter(|t| tree_alive(*t)) {
            let Some(note) = wait else {
                return Ok(Err(before));
            };
            note(&format!(
                "a step started by stackpin pid {} (which is gone) still runs as process group {tree}; waiting for it to end before anything else is installed",
                before.pid.map_or("?".to_string(), |p| p.to_string())
            ));
            while tree_alive(tree) {
                std::thread::sleep(TREE_POLL);
            }
        }
        held.record_tree(None);
    }
    Ok(Ok(held))
}

/// Opens (or creates) the lock file without following a symbolic link.
fn open(path: &Path) -> io::Result<File> {
    let mut options = File::options();
    options.create(true).truncate(false).read(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::libc::O_NOFOLLOW);
        options.mode(0o644);
    }
    options.open(path).map_err(|e| {
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if link {
            io::Error::other(format!(
                "{} is a symbolic link; a lock file must be a plain file (remove the link)",
                path.display()
            ))
        } else {
            e
        }
    })
}

fn holder_of(file: &File) -> Holder {
    let mut text = String::new();
    let mut reader = file;
    let _ = reader.rewind();
    let _ = reader.take(NOTE_CAP).read_to_string(&mut text);
    Holder::parse(&text)
}

/// True while any process is in process group `tree` (Linux: read from `/proc`). Elsewhere
/// the guard's Job Object ends the tree with its stackpin, and nothing is waited for.
pub fn tree_alive(tree: u32) -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`: comm may hold spaces and parens; read after the last.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
        pgrp == Some(tree) && state != Some("Z")
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_second_exclusive_holder_is_told_who_holds_it_and_a_shared_one_waits_too() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("machine.lock");
        let first = acquire(&path, Mode::Exclusive, None)
            .expect("io")
            .expect("free");
        let second = acquire(&path, Mode::Exclusive, None).expect("io");
        assert_eq!(
            second.expect_err("held").pid,
            Some(std::process::id()),
            "the holder's pid is recorded"
        );
        assert!(acquire(&path, Mode::Shared, None).expect("io").is_err());
        drop(first);
        let a = acquire(&path, Mode::Shared, None)
            .expect("io")
            .expect("free");
        let b = acquire(&path, Mode::Shared, None)
            .expect("io")
            .expect("free");
        assert!(acquire(&path, Mode::Exclusive, None).expect("io").is_err());
        drop((a, b));
    }

    #[test]
    fn a_lock_whose_holder_died_is_stale_only_when_its_tree_is_gone() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("machine.lock");
        // A step that outlives its stackpin: a process group of its own, still running.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep");
        std::fs::write(&path, format!("pid 999999\ntree {}\n", child.id())).expect("note");
        let held = acquire(&path, Mode::Exclusive, None).expect("io");
        assert_eq!(held.expect_err("tree alive").tree, Some(child.id()));
        child.kill().expect("kill");
        child.wait().expect("reap");
        let held = acquire(&path, Mode::Exclusive, None).expect("io");
        assert!(held.is_ok(), "the tree is gone: the lock is stale");
    }

    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me").expect("target");
        let path = dir.path().join("machine.lock");
        std::os::unix::fs::symlink(&target, &path).expect("link");
        let err = acquire(&path, Mode::Exclusive, None).expect_err("refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).expect("target"), "keep me");
    }
}
