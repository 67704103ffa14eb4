//! Running one logged step (an installer, a layer command, prove's example, `measure`'s
//! command): argv (never a shell string), placeholders substituted per argument, stdout and
//! stderr drained concurrently into one log file, a timeout, and the exit code read as data
//! (Windows 3010 / 1641 mean "reboot required"). Install, prove and the CLI share it.
//!
//! The child is started by [`crate::exec`], in a process tree of its own: a Ctrl-C at the
//! terminal reaches stackpin alone, which then waits for the installer to finish instead of
//! leaving a half-installed driver behind; the timeout ends the whole tree. What the outcome
//! means for the chain is decided by the caller.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::{self, End, ExecError};

/// `ERROR_SUCCESS_REBOOT_REQUIRED`: the installer succeeded and needs a reboot to take effect.
pub const WINDOWS_REBOOT_REQUIRED: i32 = 3010;
/// `ERROR_SUCCESS_REBOOT_INITIATED`: the installer succeeded and started a reboot itself.
pub const WINDOWS_REBOOT_INITIATED: i32 = 1641;

/// How many of the last output lines are shown in the error message (from a tail bounded in
/// bytes, so one enormous line is shown by its end).
const TAIL_LINES: usize = 15;

/// Why a step could not be run or did not finish well.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("`{placeholder}` in `{arg}` has no value for this step")]
    MissingPlaceholder { arg: String, placeholder: String },
    #[error("cannot write the log {}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An empty command, or a child that could not be started or waited for: the process
    /// runner's own words.
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// What an exit code means for the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Succeeded,
    /// Succeeded, and the change takes effect after a reboot.
    #[serde(alias = "reboot-required")]
    RebootRequired,
    Failed,
    #[serde(alias = "timed-out")]
    TimedOut,
    /// Ctrl-C was pressed twice and the step's process tree was ended.
    Interrupted,
}

impl StepStatus {
    /// The words users see.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Succeeded => "succeeded",
            StepStatus::RebootRequired => "succeeded, reboot required",
            StepStatus::Failed => "failed",
            StepStatus::TimedOut => "timed out",
            StepStatus::Interrupted => "interrupted",
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
    /// The working folder; `None` keeps stackpin's own (a manifest's command may name files
    /// relative to it). Python steps get a folder stackpin chose.
    pub cwd: Option<PathBuf>,
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
    /// Set when the log holds less than the step printed (a write failed: a full disk).
    pub log_cut: Option<exec::LogCut>,
}

impl StepOutcome {
    /// What a user must know about a log that is missing part of the step's output, or `None`
    /// when the log is whole.
    pub fn log_warning(&self, what: &str) -> Option<String> {
        let cut = self.log_cut.as_ref()?;
        let why = if cut.disk_full {
            "the disk that holds it is full"
        } else {
            "writing it failed"
        };
        let ended = match self.status {
            StepStatus::Succeeded | StepStatus::RebootRequired => {
                format!("The step itself ran to its end ({})", self.status.as_str())
            }
            other => format!("The step {}", other.as_str()),
        };
        Some(format!(
            "{what}'s log {} is incomplete: it stops at byte {} because {why} ({}). \
             {ended}; what it printed after that is missing from the log. \
             Free space on that disk before the next step writes there.",
            self.log.display(),
            cut.written,
            cut.reason,
        ))
    }
}

/// Substitutes `{name}` placeholders in each argument. Arguments stay separate: a value with
/// spaces is still one argument, so paths like `C:\Program Files\…` need no quoting. Which
/// names exist and what they stand for is `manifest::placeholder`'s vocabulary; this only
/// replaces them.
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
/// A Ctrl-C at the terminal does not reach the child (a tree of its own): the runner keeps
/// waiting, since an installer killed half-way is worse than one that finishes, and the chain
/// checks its interrupt flag before the next step. A second Ctrl-C ends the tree.
pub fn run_step(step: &Step) -> Result<StepOutcome, RunnerError> {
    start_step(step)?.wait()
}

/// A step whose child (and its tree) is running; its output is being drained into the log.
pub struct RunningStep {
    running: exec::Running,
    log_path: PathBuf,
}

/// Starts a step's child with its output drained into the log; [`RunningStep::wait`] ends it.
pub fn start_step(step: &Step) -> Result<RunningStep, RunnerError> {
    if step.argv.is_empty() {
        return Err(ExecError::EmptyCommand.into());
    }
    if let Some(dir) = step.log.parent() {
        std::fs::create_dir_all(dir).map_err(|source| RunnerError::Log {
            path: step.log.clone(),
            source,
        })?;
    }
    let mut log = std::fs::File::create(&step.log).map_err(|source| RunnerError::Log {
        path: step.log.clone(),
        source,
    })?;
    let _ = writeln!(log, "$ {}", shell_words(&step.argv));
    let mut spec = exec::Spec::logged(&step.argv, &step.env, log, step.timeout)?;
    spec.env_remove = step.env_remove.clone();
    spec.cwd = step.cwd.clone();
    // A step is an installer, a layer's command or the example: it ends with stackpin.
    spec.guarded = true;
    let running = exec::start(spec)?;
    Ok(RunningStep {
        running,
        log_path: step.log.clone(),
    })
}

impl RunningStep {
    /// The child's process id (the root of the tree whose GPU memory is sampled).
    pub fn pid(&self) -> u32 {
        self.running.pid()
    }

    /// The command's own process id: under the guard, the guard's child ([`exec::Running::command_pid`]).
    pub fn command_pid(&self) -> u32 {
        self.running.command_pid()
    }

    /// Seconds since the child started.
    pub fn elapsed(&self) -> Duration {
        self.running.elapsed()
    }

    /// Waits for the child (ending its tree at its timeout or the second Ctrl-C), drains its
    /// output and writes the exit line into the log. `tick` runs while waiting (for a spinner).
    pub fn wait_with(self, tick: &mut dyn FnMut(Duration)) -> Result<StepOutcome, RunnerError> {
        let finished = self.running.wait_with(tick)?;
        let code = finished.end.code();
        let status = match finished.end {
            End::Exited(c) => status_for_exit_code(c),
            End::Signalled(_) => StepStatus::Failed,
            End::TimedOut => StepStatus::TimedOut,
            End::Interrupted | End::Stopped => StepStatus::Interrupted,
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log_path)
        {
            // Written only where the disk has room again (the step freed what it filled).
            if let Some(cut) = &finished.log_cut {
                let _ = writeln!(
                    f,
                    "\n# stackpin: the output after byte {} of this log is missing: {}",
                    cut.written, cut.reason
                );
            }
            let _ = writeln!(f, "# exit: {}", exit_words(finished.end));
            let _ = f.sync_all();
        }
        Ok(StepOutcome {
            status,
            code,
            tail: exec::tail_lines(&finished.tail.text(), TAIL_LINES),
            log: self.log_path,
            duration: finished.duration,
            log_cut: finished.log_cut,
        })
    }

    /// Waits without a tick.
    pub fn wait(self) -> Result<StepOutcome, RunnerError> {
        self.wait_with(&mut |_| {})
    }
}

/// The log's last line for an end.
fn exit_words(end: End) -> String {
    match end {
        End::Exited(code) => code.to_string(),
        other => format!("killed ({other})"),
    }
}

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

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for RunnerError {
    fn exit(&self) -> Exit {
        match self {
            RunnerError::MissingPlaceholder { .. } | RunnerError::Exec(ExecError::EmptyCommand) => {
                Exit::Input
            }
            _ => Exit::External,
        }
    }
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

    /// A step with no environment of its own.
    fn bare_step(argv: &[&str], log: PathBuf, timeout: Duration) -> Step {
        Step {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            env: vec![],
            env_remove: vec![],
            log,
            timeout,
            cwd: None,
        }
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
        let step = bare_step(
            &[
                "sh",
                "-c",
                "for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 7",
            ],
            dir.path().join("logs/x.log"),
            Duration::from_secs(30),
        );
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
        let step = bare_step(
            &[
                "sh",
                "-c",
                "head -c 2000000 /dev/zero | tr '\\0' x; head -c 2000000 /dev/zero | tr '\\0' y >&2",
            ],
            dir.path().join("chatty.log"),
            Duration::from_secs(60),
        );
        let outcome = run_step(&step).expect("runs");
        assert_eq!(outcome.status, StepStatus::Succeeded);
        assert!(std::fs::metadata(&outcome.log).expect("log").len() >= 4_000_000);
    }

    #[cfg(unix)]
    #[test]
    fn a_step_past_its_timeout_is_killed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = bare_step(
            &["sleep", "30"],
            dir.path().join("slow.log"),
            Duration::from_millis(300),
        );
        let outcome = run_step(&step).expect("runs");
        assert_eq!(outcome.status, StepStatus::TimedOut);
        assert!(outcome.duration < Duration::from_secs(10));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = bare_step(
            &["/no/such/installer.run"],
            dir.path().join("x.log"),
            Duration::from_secs(5),
        );
        let err = run_step(&step).expect_err("cannot spawn");
        assert!(err.to_string().contains("/no/such/installer.run"));
    }

    #[test]
    fn shell_words_quote_only_what_needs_it() {
        let argv = vec!["sh".to_string(), "a b".to_string(), "--x=1".to_string()];
        assert_eq!(shell_words(&argv), "sh 'a b' --x=1");
    }
}
