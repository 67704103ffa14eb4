//! The one way stackpin starts a child process: installers, verify commands, the example,
//! `measure`, pip, nvidia-smi and the other probes, the prove sampler's monitor.
//!
//! Every child gets a tree of its own — a new process group on Unix, a Job Object on Windows
//! (through `process-wrap`) — so that:
//!
//! - a Ctrl-C at the terminal reaches stackpin alone; the first one waits for the child (an
//!   installer killed half-way is worse than one that finishes), the second ends the whole tree
//!   ([`interrupt`]);
//! - at the timeout the whole tree is killed, grandchildren included (NVIDIA's `.run` files are
//!   makeself archives that start `nvidia-installer` as a child; DataLoader workers are children
//!   of the example);
//! - stdout and stderr are drained on their own threads ([`drain`]) into the step's log, a
//!   bounded tail in bytes, a bounded capture, or a line callback — never into unbounded memory —
//!   and the runner never waits for ever on a pipe that a grandchild still holds: after the child
//!   exits, the pipes get [`PIPE_GRACE`] to close, then the rest of the tree is ended.
//!
//! It returns a typed [`End`]: exit code, signal, timed out, interrupted. What an end means
//! (an installer's 3010, a probe's failure) is the caller's business; this module prints nothing
//! and reads no environment variables.

pub mod drain;
pub mod guard;
pub mod interrupt;
pub mod step;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use process_wrap::std::{ChildWrapper, CommandWrap};

pub use drain::{LogCut, Tail, tail_lines};

/// How long the pipes may stay open after the child exited before the rest of its tree (a
/// grandchild that inherited them) is ended and the runner stops waiting.
pub const PIPE_GRACE: Duration = Duration::from_secs(2);

/// How often a running child is polled: short enough that a quick `nvidia-smi` costs nothing.
const POLL: Duration = Duration::from_millis(10);

/// Why a child could not be started or waited for.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("the command is empty")]
    EmptyCommand,
    #[error("cannot start `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("waiting for `{program}` failed")]
    Wait {
        program: String,
        #[source]
        source: io::Error,
    },
}

/// How a child's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited on its own with this code.
    Exited(i32),
    /// It was ended by this signal (Unix), not by stackpin.
    Signalled(i32),
    /// It ran past its timeout; stackpin ended its whole tree.
    TimedOut,
    /// The user pressed Ctrl-C twice; stackpin ended its whole tree.
    Interrupted,
    /// Its owner no longer needed it ([`Running::stop`]); stackpin ended its whole tree.
    Stopped,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Exited(code) => write!(f, "exit code {code}"),
            End::Signalled(signal) => write!(f, "killed by signal {signal}"),
            End::TimedOut => f.write_str("timed out; its whole process tree was ended"),
            End::Interrupted => f.write_str("Ctrl-C twice; its whole process tree was ended"),
            End::Stopped => f.write_str("stopped by stackpin with its whole process tree"),
        }
    }
}

impl End {
    /// The exit code when it exited on its own.
    pub fn code(self) -> Option<i32> {
        match self {
            End::Exited(code) => Some(code),
            _ => None,
        }
    }
}

/// Where a child's output goes.
pub enum Output {
    /// Both pipes are appended to this file (the step's log); a tail is kept for messages.
    Log(std::fs::File),
    /// Both pipes are kept in memory, each up to [`drain::CAPTURE_LIMIT`] bytes (probes).
    Capture,
    /// Each stdout line goes to the callback (a long-running monitor); stderr's tail is kept.
    Lines(Box<dyn FnMut(&str) + Send>),
}

/// What to run.
pub struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    /// Variables of stackpin's own environment the child must not see (pip's configuration).
    pub env_remove: Vec<OsString>,
    pub output: Output,
    /// `None`: no limit (the monitor, which its owner stops).
    pub timeout: Option<Duration>,
    /// The child's working folder; `None` keeps stackpin's own. Probes and every Python
    /// stackpin starts get a folder stackpin chose ([`neutral_dir`]), never the caller's, which
    /// may hold a `torch/` or `pip.py` of its own.
    pub cwd: Option<PathBuf>,
    /// Put a [`guard`] between stackpin and the child, so that the child's tree ends when
    /// stackpin ends, even by `kill -9` (installers, the example). No effect until the binary
    /// enabled the guard ([`guard::enable`]).
    pub guarded: bool,
    /// Bytes written to the child's stdin, which is then closed (a secret that must not be an
    /// argument, where any user reads it in `/proc`). A child given input is never guarded: the
    /// guard's stdin is its lifeline.
    pub stdin: Option<Vec<u8>>,
}

impl Spec {
    /// An argv (program first) whose output is written to `log`.
    pub fn logged(
        argv: &[String],
        env: &[(String, String)],
        log: std::fs::File,
        timeout: Duration,
    ) -> Result<Spec, ExecError> {
        let (program, args) = argv.split_first().ok_or(ExecError::EmptyCommand)?;
        Ok(Spec {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            env: env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
            env_remove: Vec::new(),
            output: Output::Log(log),
            timeout: Some(timeout),
            cwd: None,
            guarded: false,
            stdin: None,
        })
    }

    /// A program whose output is captured (a probe), with a timeout.
    pub fn captured(
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        timeout: Duration,
    ) -> Spec {
        Spec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            env_remove: Vec::new(),
            output: Output::Capture,
            timeout: Some(timeout),
            cwd: Some(neutral_dir()),
            guarded: false,
            stdin: None,
        }
    }

    /// The same, with `input` on the child's stdin.
    pub fn with_stdin(mut self, input: impl Into<Vec<u8>>) -> Spec {
        self.stdin = Some(input.into());
        self
    }
}

/// A working folder that holds nothing a child could pick up by accident: `/` on Unix (only
/// root writes there), the user's own temporary folder on Windows.
pub fn neutral_dir() -> PathBuf {
    if cfg!(windows) {
        std::env::temp_dir()
    } else {
        PathBuf::from("/")
    }
}

/// A program named by a relative path (`./venv/bin/python`) made absolute against stackpin's
/// own working folder, so that it still names the same file when the child runs elsewhere.
fn program_for(program: &Path, cwd_changes: bool) -> PathBuf {
    let relative_path = program.is_relative() && program.components().count() > 1;
    if cwd_changes && relative_path {
        std::path::absolute(program).unwrap_or_else(|_| program.to_path_buf())
    } else {
        program.to_path_buf()
    }
}

/// What a finished child left.
#[derive(Debug, Clone)]
pub struct Finished {
    pub end: End,
    /// The last bytes of its output (both pipes, in arrival order), for messages.
    pub tail: Tail,
    /// Captured stdout / stderr ([`Output::Capture`] only; stderr's tail with [`Output::Lines`]).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub duration: Duration,
    /// Set when the log ([`Output::Log`]) stopped short of the output: a write failed.
    pub log_cut: Option<LogCut>,
}

/// A running child and the threads draining its pipes.
pub struct Running {
    child: Box<dyn ChildWrapper>,
    /// A guarded child's stdin, held open for as long as stackpin lives: its end is the
    /// guard's signal that stackpin is gone.
    _lifeline: Option<std::process::ChildStdin>,
    guarded: bool,
    program: String,
    started: Instant,
    timeout: Option<Duration>,
    pipes: Receiver<drain::PipeDone>,
    open_pipes: usize,
    tail: std::sync::Arc<std::sync::Mutex<Tail>>,
    stdout_open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    log: Option<std::sync::Arc<std::sync::Mutex<drain::LogFile>>>,
    stop_now: bool,
    finished: bool,
}

/// Starts a child in a tree of its own with its pipes drained as `spec.output` says.
pub fn start(spec: Spec) -> Result<Running, ExecError> {
    let program = spec.program.to_string_lossy().into_owned();
    if program.is_empty() {
        return Err(ExecError::EmptyCommand);
    }
    let target = program_for(Path::new(&spec.program), spec.cwd.is_some());
    let guarded = if spec.guarded && spec.stdin.is_none() {
        guard::wrap(target.as_os_str(), &spec.args)
    } else {
        None
    };
    let mut command = match &guarded {
        Some((exe, args)) => {
            let mut c = Command::new(exe);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new(&target);
            c.args(&spec.args);
            c
        }
    };
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    if let Some(dir) = &spec.cwd {
        command.current_dir(dir);
    }
    command
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        // A guard learns that stackpin is gone when this pipe closes (see [`guard`]).
        .stdin(if guarded.is_some() || spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut wrap = CommandWrap::from(command);
    own_tree(&mut wrap);
    let started = Instant::now();
    let mut child = wrap.spawn().map_err(|source| ExecError::Spawn {
        program: program.clone(),
        source,
    })?;
    let stdout = child.stdout().take();
    let stderr = child.stderr().take();
    let mut lifeline = child.stdin().take();
    if let Some(input) = spec.stdin {
        // Written on a thread of its own: a child that prints before it reads cannot block us.
        if let Some(mut pipe) = lifeline.take() {
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&input);
            });
        }
    }
    let drains = drain::start(stdout, stderr, spec.output);
    Ok(Running {
        child,
        guarded: lifeline.is_some(),
        _lifeline: lifeline,
        program,
        started,
        timeout: spec.timeout,
        pipes: drains.done,
        open_pipes: drains.count,
        tail: drains.tail,
        stdout_open: drains.stdout_open,
        log: drains.log,
        stop_now: false,
        finished: false,
    })
}

/// Starts a child and waits for it; the short form for probes and one-off commands.
pub fn run(spec: Spec) -> Result<Finished, ExecError> {
    start(spec)?.wait()
}

#[cfg(unix)]
fn own_tree(wrap: &mut CommandWrap) {
    wrap.wrap(process_wrap::std::ProcessGroup::leader());
}

#[cfg(windows)]
fn own_tree(wrap: &mut CommandWrap) {
    // A console process group of its own: Ctrl-C reaches stackpin alone, which waits for the
    // child on the first and ends its tree (the Job Object) on the second.
    wrap.wrap(process_wrap::std::CreationFlags(
        windows::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP,
    ));
    wrap.wrap(process_wrap::std::JobObject);
}

#[cfg(not(any(unix, windows)))]
fn own_tree(_wrap: &mut CommandWrap) {}

impl Running {
    /// The child's process id (the root of its tree).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The command's own process id: the child's, or under a guard the guard's only child
    /// (read from `/proc` on Linux, waiting up to a second for the guard to start it; elsewhere
    /// the guard's own id, the root of the same tree).
    pub fn command_pid(&self) -> u32 {
        let pid = self.pid();
        if !self.guarded || !cfg!(target_os = "linux") {
            return pid;
        }
        let children = format!("/proc/{pid}/task/{pid}/children");
        for _ in 0..50 {
            if let Some(child) = std::fs::read_to_string(&children)
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse().ok())
            {
                return child;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        pid
    }

    /// Time since the child started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the child itself has exited (its tree may live on until [`Running::wait`]).
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Whether the child's stdout is still open (a monitor still sampling).
    pub fn stdout_open(&self) -> bool {
        self.stdout_open.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Ends a child that its owner no longer needs (a monitor), with its tree. A child that had
    /// already exited keeps its own end (`Exited`, `Signalled`); else the end is `Stopped`.
    pub fn stop(mut self) -> Result<Finished, ExecError> {
        self.stop_now = true;
        self.wait()
    }

    /// Ends the whole tree now (Unix: SIGKILL to the process group; Windows: the Job Object).
    pub fn kill_tree(&mut self) {
        let _ = self.child.start_kill();
    }

    /// Waits without a tick.
    pub fn wait(self) -> Result<Finished, ExecError> {
        self.wait_with(&mut |_| {})
    }

    /// Waits for the child, ending its tree at the timeout or at the second Ctrl-C, then drains
    /// its pipes (see [`PIPE_GRACE`]). `tick` runs about every 10 ms while waiting.
    pub fn wait_with(mut self, tick: &mut dyn FnMut(Duration)) -> Result<Finished, ExecError> {
        let deadline = self.timeout.map(|t| self.started + t);
        let mut ended_by_us = None;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(source) => return Err(self.wait_error(source)),
            }
            if self.stop_now {
                ended_by_us = Some(End::Stopped);
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                ended_by_us = Some(End::TimedOut);
            } else if interrupt::stop_requested() {
                ended_by_us = Some(End::Interrupted);
            }
            if ended_by_us.is_some() {
                self.kill_tree();
                break self.child.wait().map_err(|e| self.wait_error(e))?;
            }
            tick(self.started.elapsed());
            std::thread::sleep(POLL);
        };
        self.finished = true;
        let (stdout, stderr) = self.collect_pipes();
        let end = ended_by_us.unwrap_or_else(|| end_of(status));
        let tail = self.tail.lock().map(|t| t.clone()).unwrap_or_default();
        Ok(Finished {
            end,
            tail,
            stdout,
            stderr,
            duration: self.started.elapsed(),
            log_cut: drain::log_cut(&self.log),
        })
    }

    /// Waits for the drain threads; when a grandchild still holds the pipes after
    /// [`PIPE_GRACE`], ends the tree and gives the threads one more grace, then leaves them.
    fn collect_pipes(&mut self) -> (Vec<u8>, Vec<u8>) {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut deadline = Instant::now() + PIPE_GRACE;
        let mut killed = false;
        while self.open_pipes > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.pipes.recv_timeout(left) {
                Ok(done) => {
                    self.open_pipes -= 1;
                    match done.pipe {
                        drain::Pipe::Stdout => stdout = done.kept,
                        drain::Pipe::Stderr => stderr = done.kept,
                    }
                }
                Err(RecvTimeoutError::Timeout) if !killed => {
                    self.kill_tree();
                    killed = true;
                    deadline = Instant::now() + PIPE_GRACE;
                }
                // A process outside the tree (one that left it on purpose) holds the pipes:
                // its reader threads are left behind rather than waited on for ever.
                Err(_) => break,
            }
        }
        (stdout, stderr)
    }

    fn wait_error(&self, source: io::Error) -> ExecError {
        ExecError::Wait {
            program: self.program.clone(),
            source,
        }
    }
}

impl Drop for Running {
    /// A child that was never waited for (an error path, a stopped monitor) does not outlive
    /// its owner: its tree is ended and reaped.
    fn drop(&mut self) {
        if !self.finished {
            self.kill_tree();
            let _ = self.child.wait();
        }
    }
}

#[cfg(unix)]
fn end_of(status: ExitStatus) -> End {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => End::Exited(code),
        (None, Some(signal)) => End::Signalled(signal),
        (None, None) => End::Exited(-1),
    }
}

#[cfg(not(unix))]
fn end_of(status: ExitStatus) -> End {
    End::Exited(status.code().unwrap_or(-1))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn alive(pid: &str) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    }

    fn sh(script: &str, timeout: Duration) -> Spec {
        Spec::captured("sh", ["-c", script], timeout)
    }

    #[test]
    fn input_reaches_the_childs_stdin_and_is_closed_after_it() {
        // `cat` ends only when its stdin closes: a pipe left open would hang until the timeout.
        let spec = sh(
            "read a; read b; echo \"$b,$a\"; cat",
            Duration::from_secs(20),
        )
        .with_stdin("one\ntwo\nrest\n");
        let finished = run(spec).expect("runs");
        assert_eq!(finished.end, End::Exited(0));
        assert_eq!(String::from_utf8_lossy(&finished.stdout), "two,one\nrest\n");
    }

    #[test]
    fn the_timeout_ends_the_grandchild_that_holds_the_pipes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let started = Instant::now();
        let finished = run(sh(&script, Duration::from_millis(500))).expect("runs");
        assert_eq!(finished.end, End::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let pid = std::fs::read_to_string(&pidfile).expect("pid written");
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !alive(pid.trim()),
            "the grandchild {pid} outlived the timeout"
        );
    }

    #[test]
    fn an_exit_does_not_wait_for_ever_on_pipes_a_grandchild_holds() {
        let started = Instant::now();
        let finished =
            run(sh("echo hi; sleep 60 & exit 4", Duration::from_secs(60))).expect("runs");
        assert_eq!(finished.end, End::Exited(4));
        assert_eq!(finished.stdout, b"hi\n");
        assert!(
            started.elapsed() < PIPE_GRACE * 2 + Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_signal_is_reported_as_a_signal() {
        let finished = run(sh("kill -TERM $$", Duration::from_secs(10))).expect("runs");
        assert_eq!(finished.end, End::Signalled(15));
    }

    #[test]
    fn a_logged_child_streams_everything_to_the_log_and_keeps_a_bounded_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.log");
        let log = std::fs::File::create(&path).expect("log");
        let argv = [
            "sh",
            "-c",
            "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo last",
        ]
        .map(String::from);
        let spec = Spec::logged(&argv, &[], log, Duration::from_secs(30)).expect("spec");
        let finished = run(spec).expect("runs");
        assert_eq!(finished.end, End::Exited(0));
        assert_eq!(std::fs::metadata(&path).expect("log").len(), 1_000_006);
        let tail = finished.tail.text();
        assert_eq!(tail.len(), drain::TAIL_BYTES);
        assert!(tail.ends_with("\nlast\n"));
    }
}
