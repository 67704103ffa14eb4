//! One long-running monitor child (`nvidia-smi … -lms 100`, `typeperf … -si 1`): its stdout is
//! handed line by line to a callback on a reader thread, its stderr kept (the tail) to explain an
//! early exit, and it is killed on [`Monitor::stop`].
//!
//! What a line means is the caller's business; this only keeps the child and its pipes.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::SamplerError;

/// How much of a monitor's stderr is kept: enough for nvidia-smi's one-line NVML errors.
const STDERR_TAIL: usize = 2000;

/// A running monitor child and the threads reading its pipes.
pub(super) struct Monitor {
    program: PathBuf,
    child: Child,
    stdout_open: Arc<AtomicBool>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr_reader: Option<JoinHandle<String>>,
}

impl Monitor {
    /// Starts `program args…` and calls `on_line` for every line it prints on stdout.
    pub(super) fn spawn(
        program: &Path,
        args: &[String],
        what: &'static str,
        mut on_line: impl FnMut(&str) + Send + 'static,
    ) -> Result<Monitor, SamplerError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SamplerError::Spawn {
                program: program.to_path_buf(),
                what,
                source,
            })?;
        let stdout_open = Arc::new(AtomicBool::new(true));
        let stdout_reader = child.stdout.take().map(|stdout| {
            let open = Arc::clone(&stdout_open);
            std::thread::spawn(move || {
                // Lines that are not UTF-8 end the loop like EOF would; nvidia-smi prints ASCII.
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    on_line(&line);
                }
                open.store(false, Ordering::SeqCst);
            })
        });
        let stderr_reader = child.stderr.take().map(|stderr| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = BufReader::new(stderr).read_to_string(&mut text);
                tail(&text, STDERR_TAIL).trim().to_string()
            })
        });
        Ok(Monitor {
            program: program.to_path_buf(),
            child,
            stdout_open,
            stdout_reader,
            stderr_reader,
        })
    }

    /// Whether the child still has its stdout open (it is still sampling).
    pub(super) fn is_running(&self) -> bool {
        self.stdout_open.load(Ordering::SeqCst)
    }

    /// Kills the child, joins the readers, and says whether it had failed on its own before.
    pub(super) fn stop(mut self) -> Option<String> {
        let exited_early = self.child.try_wait().ok().flatten();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // One deadline for both readers, so a stuck pipe costs the grace once.
        let deadline = Instant::now() + READER_GRACE;
        if let Some(reader) = self
            .stdout_reader
            .take()
            .and_then(|r| finished_by(r, deadline))
        {
            let _ = reader.join();
        }
        let stderr = self
            .stderr_reader
            .take()
            .and_then(|r| finished_by(r, deadline))
            .and_then(|r| r.join().ok())
            .unwrap_or_default();
        let status = exited_early.filter(|s| !s.success())?;
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

/// How long a reader may take to see EOF after its child was killed.
const READER_GRACE: Duration = Duration::from_secs(2);

/// The reader, once it has finished; `None` (and the thread left to end on its own) when a
/// grandchild the monitor started still holds the pipe open after the kill.
fn finished_by<T>(reader: JoinHandle<T>, deadline: Instant) -> Option<JoinHandle<T>> {
    while !reader.is_finished() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Some(reader)
}

fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::Mutex;

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
            started.elapsed() < READER_GRACE + Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn tail_keeps_the_end_on_a_char_boundary() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("abcdef", 3), "def");
    }
}
