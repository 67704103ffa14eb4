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

/// Only the example's own pid counts: the fallback where no tree can be read.
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

/// Windows: parent links from a process snapshot, taken again when a pid is not in the last
/// one (a child started since). The snapshot comes from one CIM query through PowerShell
/// (`Win32_Process`: ParentProcessId, ProcessId), or from `wmic process` where PowerShell gives
/// no answer (Wine's is a stub; `wmic` is an optional feature on Windows 11 24H2 and later).
/// A venv's `Scripts\python.exe` is a launcher that starts the real interpreter as its child,
/// and the child is the process that holds the GPU memory: without the tree it is never found.
pub struct WindowsSnapshot {
    snapshot: Box<dyn Fn() -> Option<HashMap<u32, u32>> + Send + Sync>,
    links: std::sync::Mutex<Links>,
}

/// The last snapshot, and the pids a fresh snapshot did not list (gone, or another machine's
/// view): asking again for those would cost a snapshot each time.
#[derive(Default)]
struct Links {
    parents: HashMap<u32, u32>,
    absent: std::collections::HashSet<u32>,
}

/// The PowerShell query: one `PARENT PID` line per process.
pub const CIM_PROCESS_QUERY: &str =
    "Get-CimInstance Win32_Process | ForEach-Object { \"$($_.ParentProcessId) $($_.ProcessId)\" }";

impl WindowsSnapshot {
    /// Snapshots taken by the host's PowerShell, then `wmic`.
    pub fn new() -> Self {
        Self::with_source(host_snapshot)
    }

    /// Snapshots from any source (tests).
    pub fn with_source(
        snapshot: impl Fn() -> Option<HashMap<u32, u32>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            snapshot: Box::new(snapshot),
            links: std::sync::Mutex::new(Links::default()),
        }
    }
}

impl Default for WindowsSnapshot {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessTree for WindowsSnapshot {
    fn parent(&self, pid: u32) -> Option<u32> {
        let mut links = self
            .links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(parent) = links.parents.get(&pid) {
            return Some(*parent);
        }
        if links.absent.contains(&pid) {
            return None;
        }
        // An unseen pid: a process started after the last snapshot. Take a new one.
        if let Some(fresh) = (self.snapshot)() {
            links.parents = fresh;
        }
        let parent = links.parents.get(&pid).copied();
        if parent.is_none() {
            links.absent.insert(pid);
        }
        parent
    }
}

/// Runs the CIM query, then `wmic`; the first that lists processes wins. Both are asked for by
/// their place under `%SystemRoot%` first (`System32\WindowsPowerShell\v1.0` and
/// `System32\wbem` are not always on PATH), then by name.
fn host_snapshot() -> Option<HashMap<u32, u32>> {
    let system32 = std::env::var_os("SystemRoot")
        .map_or_else(|| PathBuf::from(r"C:\Windows"), PathBuf::from)
        .join("System32");
    let powershell = system32.join(r"WindowsPowerShell\v1.0\powershell.exe");
    let wmic = system32.join(r"wbem\wmic.exe");
    let ps_args = [
        "-NoProfile",
        "-NonInteractive",
        "-Command",
        CIM_PROCESS_QUERY,
    ];
    let wmic_args = ["process", "get", "ParentProcessId,ProcessId"];
    ask(powershell.as_os_str(), &ps_args)
        .or_else(|| ask("powershell".as_ref(), &ps_args))
        .or_else(|| ask(wmic.as_os_str(), &wmic_args))
        .or_else(|| ask("wmic".as_ref(), &wmic_args))
}

/// How long one process snapshot may take (PowerShell's first start on a cold machine is slow).
const SNAPSHOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// One snapshot source: its parent links, or `None` when it cannot run or lists nothing.
fn ask(program: &std::ffi::OsStr, args: &[&str]) -> Option<HashMap<u32, u32>> {
    let spec = crate::exec::Spec::captured(program, args, SNAPSHOT_TIMEOUT);
    let out = crate::exec::run(spec).ok()?;
    let links = parse_parent_links(&decode_console(&out.stdout));
    (!links.is_empty()).then_some(links)
}

/// `wmic` writes UTF-16LE (with a BOM) when its output is a pipe; PowerShell writes the console
/// code page. Both come back as text here.
pub fn decode_console(bytes: &[u8]) -> String {
    let utf16 =
        bytes.starts_with(&[0xFF, 0xFE]) || (bytes.len() >= 4 && bytes[1] == 0 && bytes[3] == 0);
    if utf16 {
        let body = bytes.strip_prefix(&[0xFF, 0xFE]).unwrap_or(bytes);
        let units: Vec<u16> = body
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// `PARENT PID` lines (PowerShell's, and `wmic process get ParentProcessId,ProcessId`, whose
/// columns come in that order): pid → parent. Headers and blank lines are skipped.
pub fn parse_parent_links(text: &str) -> HashMap<u32, u32> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let parent = fields.next()?.parse().ok()?;
            let pid = fields.next()?.parse().ok()?;
            fields.next().is_none().then_some((pid, parent))
        })
        .collect()
}

/// The host's process tree: procfs on Linux, a process snapshot on Windows, the example's pid
/// alone elsewhere (see [`RootOnly`]).
pub fn host_tree() -> Box<dyn ProcessTree> {
    if cfg!(target_os = "linux") {
        Box::new(Procfs::new())
    } else if cfg!(windows) {
        Box::new(WindowsSnapshot::new())
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

    #[test]
    fn wmic_and_powershell_snapshots_give_parent_links() {
        // `wmic process get ParentProcessId,ProcessId` through a pipe: UTF-16LE with a BOM.
        let wmic = "ParentProcessId  ProcessId  \r\n0                4          \r\n4200             4300       \r\n\r\n";
        let mut bytes = vec![0xFF, 0xFE];
        for unit in wmic.encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        let links = parse_parent_links(&decode_console(&bytes));
        assert_eq!(links.get(&4300), Some(&4200));
        assert_eq!(links.get(&4), Some(&0));
        assert_eq!(links.len(), 2);
        // PowerShell's lines, in the console code page.
        let links = parse_parent_links(&decode_console(b"1200 1234\r\n1234 12345\r\n"));
        assert_eq!(links.get(&12345), Some(&1234));
    }

    #[test]
    fn a_launchers_child_started_after_the_snapshot_is_found_by_a_new_one() {
        // The venv launcher (1234) starts the real interpreter (12345) after the first snapshot.
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&calls);
        let tree = WindowsSnapshot::with_source(move || {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut links = HashMap::from([(1234, 900)]);
            if n > 0 {
                links.insert(12345, 1234);
            }
            Some(links)
        });
        assert_eq!(tree.parent(1234), Some(900), "the first snapshot");
        assert!(
            is_in_tree(&tree, 1234, 12345),
            "a second snapshot finds the child"
        );
        assert!(!is_in_tree(&tree, 12345, 1234));
        let taken = calls.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(tree.parent(4242), None, "a pid no snapshot lists");
        assert_eq!(tree.parent(4242), None);
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::SeqCst),
            taken + 1,
            "one snapshot per unknown pid, not one per question"
        );
    }

    #[cfg(windows)]
    #[test]
    fn the_windows_snapshot_sees_a_real_child_of_this_test() {
        let mut child = std::process::Command::new("cmd")
            .args(["/c", "ping", "-n", "30", "127.0.0.1"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("cmd runs");
        // The sampler snapshots again on every tick; under a loaded machine (Wine running the
        // whole suite in parallel) the first snapshot can come before the process list shows
        // the child, so the test gives it the few ticks the sampler would.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let found = loop {
            if is_in_tree(&WindowsSnapshot::new(), std::process::id(), child.id()) {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        };
        let _ = child.kill();
        let _ = child.wait();
        assert!(found);
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
