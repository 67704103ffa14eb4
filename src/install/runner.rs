//! Running one installer step: argv (never a shell string), placeholders substituted per
//! argument, stdout and stderr drained concurrently into one log file, a timeout, and the exit
//! code read as data (Windows 3010 / 1641 mean "reboot required").
//!
//! The child gets its own process group on Unix, so a Ctrl-C at the terminal reaches stackpin
//! alone: stackpin then waits for the installer to finish instead of leaving a half-installed
//! driver behind. What the outcome means for the chain is decided by the caller.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `ERROR_SUCCESS_REBOOT_REQUIRED`: the installer succeeded and needs a reboot to take effect.
pub const WINDOWS_REBOOT_REQUIRED: i32 = 3010;
/// `ERROR_SUCCESS_REBOOT_INITIATED`: the installer succeeded and started a reboot itself.
pub const WINDOWS_REBOOT_INITIATED: i32 = 1641;

/// How many of the last output lines are kept for the error message.
const TAIL_LINES: usize = 15;

/// Why a step could not be run or did not finish well.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("`{placeholder}` in `{arg}` has no value for this step")]
    MissingPlaceholder { arg: String, placeholder: String },
    #[error("the command is empty")]
    EmptyCommand,
    #[error("cannot start `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the log {}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("waiting for `{program}` failed")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// What an exit code means for the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepStatus {
    Succeeded,
    /// Succeeded, and the change takes effect after a reboot.
    RebootRequired,
    Failed,
    TimedOut,
}

impl StepStatus {
    /// The words users see.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Succeeded => "succeeded",
            StepStatus::RebootRequired => "succeeded, reboot required",
            StepStatus::Failed => "failed",
            StepStatus::TimedOut => "timed out",
        }
    }
}

/// Reads an installer's exit code as data.
pub fn status_for_exit_code(code: i32) -> StepStatus {
    match code {
        0 => StepStatus::Succeeded,
        WINDOWS_REBOOT_REQUIRED | WINDOWS_REBOOT_INITIATED => StepStatus::RebootRequired,
        _ => StepStatus::Failed,
    }
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct Step {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Variables of stackpin's own environment the child must not see (a hermetic pip or uv).
    pub env_remove: Vec<std::ffi::OsString>,
    pub log: PathBuf,
    pub timeout: Duration,
}

/// What happened when a step ran.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub status: StepStatus,
    /// The exit code; `None` when the process was killed (timeout) or ended by a signal.
    pub code: Option<i32>,
    pub tail: Vec<String>,
    pub log: PathBuf,
    pub duration: Duration,
}

/// Substitutes `{name}` placeholders in each argument. Arguments stay separate: a value with
/// spaces is still one argument, so paths like `C:\Program Files\…` need no quoting.
pub fn substitute(
    argv: &[String],
    values: &BTreeMap<&str, String>,
) -> Result<Vec<String>, RunnerError> {
    argv.iter()
        .map(|arg| {
            let mut out = String::with_capacity(arg.len());
            let mut rest = arg.as_str();
            while let Some(start) = rest.find('{') {
                out.push_str(&rest[..start]);
                let after = &rest[start + 1..];
                let Some(end) = after.find('}') else {
                    out.push_str(&rest[start..]);
                    rest = "";
                    break;
                };
                let name = &after[..end];
                match values.get(name) {
                    Some(value) => out.push_str(value),
                    None => {
                        return Err(RunnerError::MissingPlaceholder {
                            arg: arg.clone(),
                            placeholder: format!("{{{name}}}"),
                        });
                    }
                }
                rest = &after[end + 1..];
            }
            out.push_str(rest);
            Ok(out)
        })
        .collect()
}

/// Runs a step to completion (or its timeout), logging everything it prints.
///
/// A Ctrl-C at the terminal does not reach the child (own process group): the runner keeps
/// waiting, since an installer killed half-way is worse than one that finishes, and the chain
/// checks its interrupt flag before the next step.
pub fn run_step(step: &Step) -> Result<StepOutcome, RunnerError> {
    start_step(step)?.wait()
}

/// A step whose child is running; its output is being drained into the log.
pub struct RunningStep {
    child: std::process::Child,
    program: String,
    log: Arc<Mutex<std::fs::File>>,
    log_path: PathBuf,
    tail: Arc<Mutex<VecDeque<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    started: Instant,
    timeout: Duration,
}

/// Starts a step's child with its output drained into the log; [`RunningStep::wait`] ends it.
pub fn start_step(step: &Step) -> Result<RunningStep, RunnerError> {
    let program = step.argv.first().ok_or(RunnerError::EmptyCommand)?.clone();
    if let Some(dir) = step.log.parent() {
        std::fs::create_dir_all(dir).map_err(|source| RunnerError::Log {
            path: step.log.clone(),
            source,
        })?;
    }
    let log_file = std::fs::File::create(&step.log).map_err(|source| RunnerError::Log {
        path: step.log.clone(),
        source,
    })?;
    let log = Arc::new(Mutex::new(log_file));
    if let Ok(mut f) = log.lock() {
        let _ = writeln!(f, "$ {}", shell_words(&step.argv));
    }

    let mut cmd = Command::new(&program);
    cmd.args(&step.argv[1..]);
    for name in &step.env_remove {
        cmd.env_remove(name);
    }
    cmd.envs(step.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    own_process_group(&mut cmd);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|source| RunnerError::Spawn {
        program: program.clone(),
        source,
    })?;

    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|pipe| {
        let (log, tail) = (Arc::clone(&log), Arc::clone(&tail));
        std::thread::spawn(move || drain(pipe, &log, &tail))
    })
    .collect();
    Ok(RunningStep {
        child,
        program,
        log,
        log_path: step.log.clone(),
        tail,
        readers,
        started,
        timeout: step.timeout,
    })
}

impl RunningStep {
    /// The child's process id (the root of the tree whose GPU memory is sampled).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Seconds since the child started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Waits for the child (killing it at its timeout), drains its output and writes the exit
    /// line into the log. `tick` runs about every 20 ms while waiting (for a spinner).
    pub fn wait_with(mut self, tick: &mut dyn FnMut(Duration)) -> Result<StepOutcome, RunnerError> {
        let deadline = self.started + self.timeout;
        let mut timed_out = false;
        let exit = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(source) => {
                    return Err(RunnerError::Wait {
                        program: self.program.clone(),
                        source,
                    });
                }
            }
            if Instant::now() >= deadline {
                timed_out = true;
                let _ = self.child.kill();
                break self.child.wait().map_err(|source| RunnerError::Wait {
                    program: self.program.clone(),
                    source,
                })?;
            }
            tick(self.started.elapsed());
            std::thread::sleep(Duration::from_millis(20));
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let code = exit.code();
        let status = match (timed_out, code) {
            (true, _) => StepStatus::TimedOut,
            (false, Some(c)) => status_for_exit_code(c),
            (false, None) => StepStatus::Failed,
        };
        if let Ok(mut f) = self.log.lock() {
            let _ = writeln!(
                f,
                "# exit: {}{}",
                code.map_or("killed".to_string(), |c| c.to_string()),
                if timed_out { " (timed out)" } else { "" }
            );
            let _ = f.sync_all();
        }
        let tail = self
            .tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        Ok(StepOutcome {
            status,
            code,
            tail,
            log: self.log_path.clone(),
            duration: self.started.elapsed(),
        })
    }

    /// Waits without a tick.
    pub fn wait(self) -> Result<StepOutcome, RunnerError> {
        self.wait_with(&mut |_| {})
    }
}

fn drain(pipe: Box<dyn Read + Send>, log: &Mutex<std::fs::File>, tail: &Mutex<VecDeque<String>>) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if let Ok(mut f) = log.lock() {
                    let _ = f.write_all(&buf);
                }
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                if let Ok(mut t) = tail.lock() {
                    if t.len() == TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        }
    }
}

#[cfg(unix)]
fn own_process_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(not(unix))]
fn own_process_group(_cmd: &mut Command) {}

/// The argv as a user could paste it into a shell, for logs and `--dry-run`.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:{}+,@%\\".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A log file name for a layer step: `<layer>-<UTC timestamp>.log`.
pub fn log_name(prefix: &str) -> String {
    let now = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    format!("{prefix}-{now}.log")
}

/// True when the path looks like it is on Windows' side (`C:\…`), for venv interpreter paths.
pub fn is_windows_path(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s.len() > 2 && s.as_bytes()[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("installer", "/a/b c.run".to_string()),
            ("root", r"C:\Program Files\CUDA\v12.4".to_string()),
        ])
    }

    #[test]
    fn placeholders_are_substituted_per_argument() {
        let argv = vec![
            "sh".to_string(),
            "{installer}".to_string(),
            "--toolkitpath={root}".to_string(),
        ];
        let out = substitute(&argv, &values()).expect("substitutes");
        assert_eq!(out[1], "/a/b c.run");
        assert_eq!(out[2], r"--toolkitpath=C:\Program Files\CUDA\v12.4");
        assert_eq!(out.len(), 3, "a value with spaces stays one argument");
    }

    #[test]
    fn a_placeholder_without_value_is_an_error() {
        let argv = vec!["{python}".to_string()];
        assert!(matches!(
            substitute(&argv, &values()),
            Err(RunnerError::MissingPlaceholder { .. })
        ));
    }

    #[test]
    fn exit_codes_are_data() {
        assert_eq!(status_for_exit_code(0), StepStatus::Succeeded);
        assert_eq!(status_for_exit_code(3010), StepStatus::RebootRequired);
        assert_eq!(status_for_exit_code(1641), StepStatus::RebootRequired);
        assert_eq!(status_for_exit_code(1), StepStatus::Failed);
    }

    #[cfg(unix)]
    #[test]
    fn output_of_both_pipes_reaches_the_log_and_the_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = Step {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 7".into(),
            ],
            env: vec![],
            env_remove: vec![],
            log: dir.path().join("logs/x.log"),
            timeout: Duration::from_secs(30),
        };
        let outcome = run_step(&step).expect("runs");
        assert_eq!(outcome.code, Some(7));
        assert_eq!(outcome.status, StepStatus::Failed);
        let log = std::fs::read_to_string(&outcome.log).expect("log");
        for word in ["out1", "out3", "err1", "err3", "# exit: 7"] {
            assert!(log.contains(word), "{word} missing from {log}");
        }
        assert!(outcome.tail.iter().any(|l| l == "err3"));
    }

    #[cfg(unix)]
    #[test]
    fn a_chatty_child_cannot_deadlock_the_runner() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 2 MB on each pipe: far beyond a pipe buffer, so both must be drained concurrently.
        let step = Step {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "head -c 2000000 /dev/zero | tr '\\0' x; head -c 2000000 /dev/zero | tr '\\0' y >&2".into(),
            ],
            env: vec![],
            env_remove: vec![],
            log: dir.path().join("chatty.log"),
            timeout: Duration::from_secs(60),
        };
        let outcome = run_step(&step).expect("runs");
        assert_eq!(outcome.status, StepStatus::Succeeded);
        assert!(std::fs::metadata(&outcome.log).expect("log").len() >= 4_000_000);
    }

    #[cfg(unix)]
    #[test]
    fn a_step_past_its_timeout_is_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = Step {
            argv: vec!["sleep".into(), "30".into()],
            env: vec![],
            env_remove: vec![],
            log: dir.path().join("slow.log"),
            timeout: Duration::from_millis(300),
        };
        let outcome = run_step(&step).expect("runs");
        assert_eq!(outcome.status, StepStatus::TimedOut);
        assert!(outcome.duration < Duration::from_secs(10));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = Step {
            argv: vec!["/no/such/installer.run".into()],
            env: vec![],
            env_remove: vec![],
            log: dir.path().join("x.log"),
            timeout: Duration::from_secs(5),
        };
        let err = run_step(&step).expect_err("cannot spawn");
        assert!(err.to_string().contains("/no/such/installer.run"));
    }

    #[test]
    fn shell_words_quote_only_what_needs_it() {
        let argv = vec!["sh".to_string(), "a b".to_string(), "--x=1".to_string()];
        assert_eq!(shell_words(&argv), "sh 'a b' --x=1");
    }
}
