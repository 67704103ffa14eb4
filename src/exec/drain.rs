//! Draining a child's stdout and stderr: one thread per pipe, reading fixed-size chunks (never
//! whole lines, so one 300 MB line without a newline costs one buffer), each chunk going to the
//! log, a capture capped at [`CAPTURE_LIMIT`], or a line callback (lines capped at
//! [`LINE_LIMIT`]), and into a tail of the last [`TAIL_BYTES`] bytes shared by both pipes.
//!
//! Each thread reports on a channel when its pipe closes; the runner decides how long to wait.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use super::Output;

/// The bytes of output kept for messages (both pipes together).
pub const TAIL_BYTES: usize = 8 * 1024;
/// The most a captured pipe keeps (a probe's answer is a few KiB).
pub const CAPTURE_LIMIT: usize = 8 * 1024 * 1024;
/// The longest line handed to a line callback; the rest of a longer line is dropped.
pub const LINE_LIMIT: usize = 64 * 1024;
/// The longest line shown in a message; a longer one shows its end, marked with `…`.
pub const SHOWN_LINE_CHARS: usize = 400;

const CHUNK: usize = 64 * 1024;

/// The last bytes a child printed, [`TAIL_BYTES`] per pipe: a flood on stdout never pushes
/// the error that stderr printed last out of the message.
#[derive(Debug, Clone, Default)]
pub struct Tail {
    stdout: Ring,
    stderr: Ring,
}

#[derive(Debug, Clone, Default)]
struct Ring {
    bytes: std::collections::VecDeque<u8>,
}

impl Ring {
    fn push(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(TAIL_BYTES);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        String::from_utf8_lossy(&all).into_owned()
    }
}

impl Tail {
    fn push(&mut self, pipe: Pipe, chunk: &[u8]) {
        match pipe {
            Pipe::Stdout => self.stdout.push(chunk),
            Pipe::Stderr => self.stderr.push(chunk),
        }
    }

    /// The tail as text (lossy): stdout's last bytes, then stderr's (where errors are), each at
    /// most [`TAIL_BYTES`].
    pub fn text(&self) -> String {
        let (out, err) = (self.stdout.text(), self.stderr.text());
        match (out.is_empty(), err.is_empty()) {
            (_, true) => out,
            (true, false) => err,
            (false, false) => format!("{}\n{err}", out.trim_end_matches('\n')),
        }
    }
}

/// The last `max_lines` lines of `text`, trimmed, each at most [`SHOWN_LINE_CHARS`] characters
/// (a longer line keeps its end, where an error message usually is).
pub fn tail_lines(text: &str, max_lines: usize) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(max_lines)..]
        .iter()
        .map(|line| {
            let count = line.chars().count();
            if count <= SHOWN_LINE_CHARS {
                line.to_string()
            } else {
                let end: String = line.chars().skip(count - SHOWN_LINE_CHARS).collect();
                format!("…{end}")
            }
        })
        .collect()
}

/// Which pipe a thread drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    Stdout,
    Stderr,
}

/// A drained pipe: what it kept (a capture, or stderr's tail for a monitor).
pub struct PipeDone {
    pub pipe: Pipe,
    pub kept: Vec<u8>,
}

/// A step's log as the drain threads write it: the bytes it holds and, once a write failed
/// (a full disk), why the rest is missing. After the first failure nothing more is written, so
/// the log ends where the loss begins.
#[derive(Debug)]
pub(super) struct LogFile {
    file: std::fs::File,
    written: u64,
    cut: Option<LogCut>,
}

/// A log that stopped short of the child's output: how much it holds and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCut {
    /// Bytes the log file holds where the loss begins (the command line stackpin wrote first
    /// included).
    pub written: u64,
    /// The write's own error, e.g. `No space left on device (os error 28)`.
    pub reason: String,
    /// The disk (or the user's quota) was full.
    pub disk_full: bool,
}

impl LogFile {
    fn write(&mut self, chunk: &[u8]) {
        if self.cut.is_some() {
            return;
        }
        match self.file.write_all(chunk) {
            Ok(()) => self.written += chunk.len() as u64,
            Err(e) => {
                // What the file holds: the command line stackpin wrote first, and any part of
                // the chunk that did fit.
                let held = self.file.metadata().map_or(self.written, |m| m.len());
                self.cut = Some(LogCut {
                    written: held,
                    disk_full: crate::fsutil::is_disk_full(&e),
                    reason: e.to_string(),
                })
            }
        }
    }
}

/// What happened to the log, read once the pipes are drained.
pub(super) fn log_cut(log: &Option<Arc<Mutex<LogFile>>>) -> Option<LogCut> {
    let log = log.as_ref()?;
    let guard = log.lock().ok()?;
    guard.cut.clone()
}

enum Sink {
    Log(Arc<Mutex<LogFile>>),
    Keep(usize),
    Lines(Box<dyn FnMut(&str) + Send>),
}

/// The drain threads of one child.
pub(super) struct Drains {
    /// Each thread reports here when its pipe closes.
    pub done: Receiver<PipeDone>,
    /// How many threads there are.
    pub count: usize,
    pub tail: Arc<Mutex<Tail>>,
    /// False once stdout reached EOF.
    pub stdout_open: Arc<AtomicBool>,
    /// The log both pipes write ([`Output::Log`] only).
    pub log: Option<Arc<Mutex<LogFile>>>,
}

/// Starts one thread per pipe.
pub(super) fn start(
    stdout: Option<impl Read + Send + 'static>,
    stderr: Option<impl Read + Send + 'static>,
    output: Output,
) -> Drains {
    let tail = Arc::new(Mutex::new(Tail::default()));
    let stdout_open = Arc::new(AtomicBool::new(stdout.is_some()));
    let mut log = None;
    let (out_sink, err_sink) = match output {
        Output::Log(file) => {
            let file = Arc::new(Mutex::new(LogFile {
                file,
                written: 0,
                cut: None,
            }));
            log = Some(Arc::clone(&file));
            (Sink::Log(Arc::clone(&file)), Sink::Log(file))
        }
        Output::Capture => (Sink::Keep(CAPTURE_LIMIT), Sink::Keep(CAPTURE_LIMIT)),
        Output::Lines(callback) => (Sink::Lines(callback), Sink::Keep(TAIL_BYTES)),
    };
    let (tx, rx) = channel();
    let mut count = 0;
    if let Some(pipe) = stdout {
        spawn(pipe, Pipe::Stdout, out_sink, &tail, &tx, Some(&stdout_open));
        count += 1;
    }
    if let Some(pipe) = stderr {
        spawn(pipe, Pipe::Stderr, err_sink, &tail, &tx, None);
        count += 1;
    }
    Drains {
        done: rx,
        count,
        tail,
        stdout_open,
        log,
    }
}

fn spawn(
    pipe: impl Read + Send + 'static,
    which: Pipe,
    sink: Sink,
    tail: &Arc<Mutex<Tail>>,
    tx: &Sender<PipeDone>,
    open: Option<&Arc<AtomicBool>>,
) {
    let (tail, tx, open) = (Arc::clone(tail), tx.clone(), open.cloned());
    std::thread::spawn(move || {
        let kept = pump(pipe, which, sink, &tail);
        if let Some(open) = open {
            open.store(false, Ordering::SeqCst);
        }
        let _ = tx.send(PipeDone { pipe: which, kept });
    });
}

/// Reads until EOF or an error; returns what a `Keep` sink kept.
fn pump(mut pipe: impl Read, which: Pipe, mut sink: Sink, tail: &Mutex<Tail>) -> Vec<u8> {
    let mut buf = vec![0u8; CHUNK];
    let mut kept = Vec::new();
    let mut line = Vec::new();
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        if let Ok(mut t) = tail.lock() {
            t.push(which, chunk);
        }
        match &mut sink {
            Sink::Log(file) => {
                if let Ok(mut f) = file.lock() {
                    f.write(chunk);
                }
            }
            Sink::Keep(limit) => keep(&mut kept, chunk, *limit),
            Sink::Lines(callback) => split_lines(&mut line, chunk, callback.as_mut()),
        }
    }
    if let Sink::Lines(callback) = &mut sink
        && !line.is_empty()
    {
        callback(String::from_utf8_lossy(&line).trim_end());
    }
    kept
}

/// Keeps the first `limit` bytes for a capture, or the last `limit` for a stderr tail
/// (`limit == TAIL_BYTES`).
fn keep(kept: &mut Vec<u8>, chunk: &[u8], limit: usize) {
    if limit == TAIL_BYTES {
        kept.extend_from_slice(chunk);
        let excess = kept.len().saturating_sub(limit);
        kept.drain(..excess);
    } else {
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

fn split_lines(line: &mut Vec<u8>, chunk: &[u8], callback: &mut (dyn FnMut(&str) + Send)) {
    for piece in chunk.split_inclusive(|&b| b == b'\n') {
        let room = LINE_LIMIT.saturating_sub(line.len());
        let complete = piece.last() == Some(&b'\n');
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        if complete {
            callback(String::from_utf8_lossy(line).trim_end());
            line.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_only_the_last_bytes() {
        let mut tail = Tail::default();
        tail.push(Pipe::Stdout, &vec![b'a'; TAIL_BYTES * 3]);
        tail.push(Pipe::Stdout, b"\nthe end\n");
        let text = tail.text();
        assert_eq!(text.len(), TAIL_BYTES);
        assert!(text.ends_with("the end\n"));
    }

    #[test]
    fn a_flood_on_stdout_never_pushes_out_the_last_error() {
        let mut tail = Tail::default();
        tail.push(Pipe::Stderr, b"ERROR: disk full\n");
        tail.push(Pipe::Stdout, &vec![b'x'; TAIL_BYTES * 4]);
        let lines = tail_lines(&tail.text(), 15);
        assert_eq!(lines.last().map(String::as_str), Some("ERROR: disk full"));
    }

    #[test]
    fn a_long_line_is_shown_by_its_end() {
        let text = format!("{}ERROR: disk full\n", "x".repeat(10_000));
        let lines = tail_lines(&text, 15);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with('…'));
        assert!(lines[0].ends_with("ERROR: disk full"));
        assert_eq!(lines[0].chars().count(), SHOWN_LINE_CHARS + 1);
    }

    #[test]
    fn lines_split_across_chunks_reach_the_callback_whole() {
        let mut seen = Vec::new();
        let mut line = Vec::new();
        let mut callback = |l: &str| seen.push(l.to_string());
        split_lines(&mut line, b"12, 3", &mut callback);
        split_lines(&mut line, b"4\n56, 7\n8", &mut callback);
        assert_eq!(seen, ["12, 34", "56, 7"]);
        assert_eq!(line, b"8");
    }

    #[test]
    fn a_capture_stops_at_its_limit() {
        let mut kept = Vec::new();
        keep(&mut kept, &[1; 10], 15);
        keep(&mut kept, &[2; 10], 15);
        assert_eq!(kept.len(), 15);
        assert_eq!(kept[14], 2);
    }
}
