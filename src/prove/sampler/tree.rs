//! Which processes belong to the example: the process tree below the example's own process.
//!
//! The example is often not the process that touches the GPU: a venv's `python` may be a launcher,
//! a shell wrapper may start the interpreter, a training script may start workers. nvidia-smi
//! rows are therefore attributed to the whole tree under the example's pid. The tree is behind
//! [`ProcessTree`] so tests can feed a fake one; the sampler decides what to do with the answer.

use std::collections::HashMap;
use std::path::PathBuf;

/// Parent links of running processes.
pub trait ProcessTree: Send + Sync {
    /// The parent of `pid`, or `None` when the process is gone or cannot be read.
    fn parent(&self, pid: u32) -> Option<u32>;
}

/// Deepest ancestry walked before giving up: real trees are a few levels deep, and a bound keeps
/// a cyclic fake or a racing pid reuse from looping.
const MAX_DEPTH: usize = 64;

/// Whether `pid` is `root` or a descendant of it.
pub fn is_in_tree(tree: &dyn ProcessTree, root: u32, pid: u32) -> bool {
    let mut current = pid;
    for _ in 0..MAX_DEPTH {
        if current == root {
            return true;
        }
        match tree.parent(current) {
            // pid 0 is the kernel's (and Windows' idle) process: the top of every tree.
            Some(parent) if parent != current && parent != 0 => current = parent,
            _ => return false,
        }
    }
    false
}

/// Linux: parent links read from `/proc/<pid>/stat`.
#[derive(Debug, Clone)]
pub struct Procfs {
    root: PathBuf,
}

impl Procfs {
    /// The host's `/proc`.
    pub fn new() -> Self {
        Self::at(PathBuf::from("/proc"))
    }

    /// A procfs mounted (or laid out by a test) elsewhere.
    pub fn at(root: PathBuf) -> Self {
        Self { root }
    }
}

impl Default for Procfs {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessTree for Procfs {
    fn parent(&self, pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(self.root.join(pid.to_string()).join("stat")).ok()?;
        parent_from_stat(&stat)
    }
}

/// The ppid field of a `/proc/<pid>/stat` line: `pid (comm) state ppid …`. The command name may
/// itself hold spaces and parentheses, so the fields are counted from the last `)`.
pub fn parent_from_stat(stat: &str) -> Option<u32> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// Only the example's own pid counts. The fallback where no tree can be read, and on Windows for
/// now: walking parents there needs a Toolhelp32 snapshot (`CreateToolhelp32Snapshot` through a
/// Windows API crate), which is not wired in yet. Under WDDM the per-process figure is `[N/A]`
/// anyway and the sampler falls back to the Windows counter or the card's delta, but note that a
/// venv's `python.exe` launcher starts the real interpreter as a child, which this tree misses.
#[derive(Debug, Clone, Copy, Default)]
pub struct RootOnly;

impl ProcessTree for RootOnly {
    fn parent(&self, _pid: u32) -> Option<u32> {
        None
    }
}

/// A fixed set of parent links, for tests and for callers that already know the tree.
#[derive(Debug, Clone, Default)]
pub struct StaticTree {
    parents: HashMap<u32, u32>,
}

impl StaticTree {
    /// A tree from `(child, parent)` pairs.
    pub fn new(links: impl IntoIterator<Item = (u32, u32)>) -> Self {
        Self {
            parents: links.into_iter().collect(),
        }
    }
}

impl ProcessTree for StaticTree {
    fn parent(&self, pid: u32) -> Option<u32> {
        self.parents.get(&pid).copied()
    }
}

/// The host's process tree: procfs on Linux, the example's pid alone elsewhere (see [`RootOnly`]).
pub fn host_tree() -> Box<dyn ProcessTree> {
    if cfg!(target_os = "linux") {
        Box::new(Procfs::new())
    } else {
        Box::new(RootOnly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ppid_even_when_the_command_name_has_spaces_and_parens() {
        assert_eq!(
            parent_from_stat("4242 (python3) S 4000 4242 4000 0 -1"),
            Some(4000)
        );
        assert_eq!(parent_from_stat("77 (my (odd) name) R 1 77 77 0"), Some(1));
        assert_eq!(parent_from_stat("garbage"), None);
        assert_eq!(parent_from_stat("1 (init) S"), None);
    }

    #[test]
    fn grandchildren_belong_to_the_tree_and_siblings_do_not() {
        // 100 = example; 101 its python child; 102 a worker; 200 some other training job.
        let tree = StaticTree::new([(101, 100), (102, 101), (100, 1), (200, 1)]);
        assert!(is_in_tree(&tree, 100, 100));
        assert!(is_in_tree(&tree, 100, 102));
        assert!(!is_in_tree(&tree, 100, 200));
        assert!(!is_in_tree(&tree, 100, 1));
        assert!(!is_in_tree(&tree, 100, 999), "an unknown pid is not ours");
    }

    #[test]
    fn a_cycle_in_the_links_ends_the_walk() {
        let tree = StaticTree::new([(5, 6), (6, 5)]);
        assert!(!is_in_tree(&tree, 100, 5));
    }

    #[test]
    fn root_only_counts_the_root_alone() {
        assert!(is_in_tree(&RootOnly, 7, 7));
        assert!(!is_in_tree(&RootOnly, 7, 8));
    }

    #[test]
    fn procfs_reads_a_laid_out_proc_folder() {
        let proc_dir = tempfile::tempdir().expect("tempdir");
        for (pid, ppid) in [(10, 1), (11, 10), (12, 11)] {
            let dir = proc_dir.path().join(pid.to_string());
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("stat"), format!("{pid} (sh) S {ppid} {pid} 0 0"))
                .expect("write");
        }
        let tree = Procfs::at(proc_dir.path().to_path_buf());
        assert!(is_in_tree(&tree, 10, 12));
        assert!(!is_in_tree(&tree, 11, 10));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn procfs_sees_a_real_child_of_this_test() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep runs");
        let me = std::process::id();
        let found = is_in_tree(&Procfs::new(), me, child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(found);
    }
}
