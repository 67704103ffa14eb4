//! Fakes as hostile as the real thing, for the trust-chain and runner tests: a `.run` stand-in
//! whose child sleeps holding the pipes (NVIDIA's makeself archives start `nvidia-installer` as a
//! child), an archived installer rewritten together with its lock line, an installer that prints
//! one 300 MB line, and the helpers that watch a stackpin run from outside without ever hanging
//! the test suite on a stackpin that hangs.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The lowercase SHA-256 of some bytes.
pub fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A shell script that starts a child which sleeps for five minutes holding stdout and stderr,
/// writes the child's pid to `pidfile`, and waits for it.
pub fn child_holding_the_pipes(pidfile: &Path) -> String {
    format!(
        "#!/bin/sh\necho 'Verifying archive integrity... All good.'\nsleep 300 &\necho $! > '{}'\nwait\n",
        pidfile.display()
    )
}

/// A script that prints one line of `bytes` bytes with no newline, then fails.
pub fn one_enormous_line(bytes: u64) -> String {
    format!(
        "#!/bin/sh\nhead -c {bytes} /dev/zero | tr '\\0' x\necho 'ERROR: the end of it' >&2\nexit 1\n"
    )
}

/// Rewrites an archived (read-only) file with `body` and its `stack.lock` line with the new
/// hash, as anyone who can write the archive can. Returns (old hash, new hash).
pub fn tamper_with_lock(stack: &Path, layer: &str, file: &str, body: &str) -> (String, String) {
    let path = stack.join(layer).join(file);
    let old = sha(&std::fs::read(&path).expect("archived file"));
    let mut perms = std::fs::metadata(&path).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).expect("writable");
    std::fs::write(&path, body).expect("tampered");
    let new = sha(body.as_bytes());
    let lock = stack.join("stack.lock");
    let text = std::fs::read_to_string(&lock).expect("lock");
    assert!(text.contains(&old), "the lock names the file's hash");
    std::fs::write(&lock, text.replace(&old, &new)).expect("lock rewritten");
    (old, new)
}

/// Whether a process is alive (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The pid a fake wrote into `pidfile`, waiting up to 20 s for it to appear.
pub fn pid_in(pidfile: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never written",
            pidfile.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `pid` to be gone, up to `within`.
pub fn gone_within(pid: u32, within: Duration) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Sends a signal by name with the system's `kill` (the tests use no unsafe code).
pub fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status();
}

/// Sends a signal by name to a whole process group.
pub fn signal_group(pgid: u32, name: &str) {
    let _ = Command::new("kill")
        .args([format!("-{name}"), "--".into(), format!("-{pgid}")])
        .status();
}

/// A stackpin run whose output goes to files (never pipes a grandchild could hold open).
pub struct Watched {
    pub child: Child,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
}

/// What a watched run left.
#[derive(Debug)]
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
    /// The highest resident set size seen while it ran (`VmHWM`), KiB.
    pub peak_rss_kib: u64,
}

impl Finished {
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl Watched {
    /// Starts `cmd` with stdout and stderr redirected to files in `dir` named after `tag`.
    pub fn start(mut cmd: Command, dir: &Path, tag: &str) -> Self {
        let out = dir.join(format!("{tag}.stdout"));
        let err = dir.join(format!("{tag}.stderr"));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("stackpin starts");
        Self {
            child,
            out,
            err,
            started: Instant::now(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit`; past it, kills stackpin and fails the test (a hang is a failure,
    /// never a hung test suite). `cleanup` pids are killed either way.
    pub fn finish(mut self, limit: Duration, cleanup: &[u32]) -> Finished {
        let mut peak = 0;
        let status = loop {
            if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", self.pid())) {
                peak = peak.max(vm_hwm_kib(&status));
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break Some(status);
            }
            if self.started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for &pid in cleanup {
            signal(pid, "KILL");
        }
        let finished = Finished {
            code: status.and_then(|s| s.code()),
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
            took: self.started.elapsed(),
            peak_rss_kib: peak,
        };
        assert!(
            status.is_some(),
            "stackpin was still running after {limit:?} and was killed: {}",
            finished.text()
        );
        finished
    }
}

fn vm_hwm_kib(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
