//! What happens when stdout or stderr cannot be written: `stackpin plan | head -c1` (the reader
//! closed the pipe) ends quietly with the status a shell gives a program ended by SIGPIPE, 141;
//! `stackpin status > /dev/full` (no space) is an error on stderr with exit 3, never a panic and
//! a backtrace.
//!
//! Every `println!` in the command line goes through std's or anstream's macros, which panic
//! with "failed printing to stdout: …" on a write error; one panic hook reads that message, so
//! no call site needs its own handling.

use std::io::Write;

use crate::exit::Exit;

/// The status after a closed pipe: 128 + SIGPIPE, as a shell reports it.
pub const CLOSED_PIPE_STATUS: i32 = 141;

/// Installs the hook (once, at the start of `main`); other panics keep the default report.
pub fn end_cleanly_when_output_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        match output_failure(message) {
            Some(OutputFailure::Closed) => std::process::exit(CLOSED_PIPE_STATUS),
            Some(OutputFailure::Failed { stream, reason }) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "error: cannot write to {stream}: {reason}; free space where the output goes, or send it elsewhere"
                );
                std::process::exit(i32::from(Exit::External.code()));
            }
            None => default(info),
        }
    }));
}

/// Why printing failed, read from std's panic message.
#[derive(Debug, PartialEq, Eq)]
enum OutputFailure<'a> {
    /// The reader went away (EPIPE; on Windows "the pipe is being closed").
    Closed,
    Failed {
        stream: &'a str,
        reason: &'a str,
    },
}

fn output_failure(message: &str) -> Option<OutputFailure<'_>> {
    let (stream, reason) = message
        .strip_prefix("failed printing to stdout: ")
        .map(|r| ("stdout", r))
        .or_else(|| {
            message
                .strip_prefix("failed printing to stderr: ")
                .map(|r| ("stderr", r))
        })?;
    let closed = [
        "Broken pipe",
        "os error 32",
        "os error 232",
        "pipe is being closed",
    ]
    .iter()
    .any(|sign| reason.contains(sign));
    Some(if closed || stream == "stderr" {
        OutputFailure::Closed
    } else {
        OutputFailure::Failed { stream, reason }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_quiet_and_a_full_disk_is_an_error() {
        assert_eq!(
            output_failure("failed printing to stdout: Broken pipe (os error 32)"),
            Some(OutputFailure::Closed)
        );
        assert_eq!(
            output_failure("failed printing to stdout: No space left on device (os error 28)"),
            Some(OutputFailure::Failed {
                stream: "stdout",
                reason: "No space left on device (os error 28)"
            })
        );
        assert_eq!(output_failure("index out of bounds"), None);
    }
}
