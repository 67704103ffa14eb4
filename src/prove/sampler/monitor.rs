//! One long-running monitor child (`nvidia-smi … -lms 100`, `typeperf … -si 1`): its stdout is
//! handed line by line to a callback on a reader thread, its stderr kept (the tail) to explain an
//! early exit, and it is killed on [`Monitor::stop`].
//!
//! What a line means is the caller's business; this only keeps the child and its pipes.

use std::path::{Path, PathBuf};

use super::SamplerError;
use crate::exec;

/// A running monitor child (started by [`crate::exec`], in a tree of its own).
pub(super) struct Monitor {
    program: PathBuf,
    running: exec::Running,
}

impl Monitor {
    /// Starts `program args…` and calls `on_line` for every line it prints on stdout.
    pub(super) fn spawn(
        program: &Path,
        args: &[String],
        what: &'static str,
        on_line: impl FnMut(&str) + Send + 'static,
    ) -> Result<Monitor, SamplerError> {
        let spec = exec::Spec {
            program: program.into(),
            args: args.iter().map(Into::into).collect(),
            env: Vec::new(),
            env_remove: Vec::new(),
            output: exec::Output::Lines(Box::new(on_line)),
            timeout: None,
            cwd: Some(exec::neutral_dir()),
            // `nvidia-smi -l` samples for ever: it must not outlive a killed stackpin.
            guarded: true,
            stdin: None,
        };
        let running = exec::start(spec).map_err(|e| SamplerError::Spawn {
            program: program.to_path_buf(),
            what,
            source: match e {
                exec::ExecError::Spawn { source, .. } | exec::ExecError::Wait { source, .. } => {
                    source
                }
                exec::ExecError::EmptyCommand => std::io::Error::other("the command is empty"),
            },
        })?;
        Ok(Monitor {
            program: program.to_path_buf(),
            running,
        })
    }

    /// Whether the child still has its stdout open (it is still sampling).
    pub(super) fn is_running(&self) -> bool {
        self.running.stdout_open()
    }

    /// Ends the child and its tree, and says whether it had failed on its own before.
    pub(super) fn stop(self) -> Option<String> {
        let finished = self.running.stop().ok()?;
        let status = match finished.end {
            exec::End::Exited(0) | exec::End::Stopped => return None,
            end => end,
        };
        let stderr = String::from_utf8_lossy(&finished.stderr).trim().to_string();
        let said = if stderr.is_empty() {
            String::new()
        } else {
            format!(": {stderr}")
        };
        Some(format!(
            "`{}` stopped early ({status}){said}",
            self.program.display()
        ))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    type Lines = Arc<Mutex<Vec<String>>>;

    fn collect(lines: &Lines) -> impl FnMut(&str) + Send + 'static {
        let lines = Arc::clone(lines);
        move |line| lines.lock().expect("lock").push(line.to_string())
    }

    #[test]
    fn hands_every_stdout_line_to_the_callback() {
        let lines = Lines::default();
        let monitor = Monitor::spawn(
            Path::new("sh"),
            &["-c".into(), "echo 1; echo 2; exec sleep 30".into()],
            "test",
            collect(&lines),
        )
        .expect("sh runs");
        let waited = std::time::Instant::now();
        while lines.lock().expect("lock").len() < 2 && waited.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(monitor.is_running());
        // Killed, not failed on its own: nothing to report.
        assert_eq!(monitor.stop(), None);
        assert_eq!(*lines.lock().expect("lock"), ["1", "2"]);
    }

    #[test]
    fn an_early_failure_is_reported_with_its_stderr() {
        let monitor = Monitor::spawn(
            Path::new("sh"),
            &[
                "-c".into(),
                "echo 'Failed to initialize NVML: Unknown Error' >&2; exit 9".into(),
            ],
            "test",
            |_| {},
        )
        .expect("sh runs");
        let waited = std::time::Instant::now();
        while monitor.is_running() && waited.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let note = monitor.stop().expect("reported");
        assert!(note.contains("Failed to initialize NVML"), "{note}");
        assert!(note.contains("stopped early"), "{note}");
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let err = Monitor::spawn(Path::new("/nonexistent/nvidia-smi"), &[], "test", |_| {})
            .err()
            .expect("fails");
        assert!(err.to_string().contains("/nonexistent/nvidia-smi"), "{err}");
    }

    #[test]
    fn stop_does_not_hang_on_a_grandchild_holding_the_pipe() {
        use std::time::Duration;
        // sh forks `sleep`, which inherits stdout and outlives the kill of sh.
        let monitor = Monitor::spawn(
            Path::new("sh"),
            &["-c".into(), "echo 1; sleep 5; echo 2".into()],
            "test",
            |_| {},
        )
        .expect("sh runs");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let started = std::time::Instant::now();
        monitor.stop();
        assert!(
            started.elapsed() < exec::PIPE_GRACE + Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }
}
