//! A log of any size read as a stream into a bounded excerpt: what `diagnose` then matches.
//!
//! A failure is told by a handful of lines: the traceback at the end, an error line somewhere
//! before it, a driver message near the start. A training log can be gigabytes (a progress bar
//! per step), and matching all of it would take minutes and the memory of the whole file. So
//! the log is read once, line by line, and kept is: its first lines, its last lines, and a few
//! lines around every line that looks like trouble (an error word, CUDA, NVIDIA, a kernel
//! message), the most recent of those when they are many. A log smaller than the excerpt is
//! kept whole, so nothing changes for the logs people paste.
//!
//! Memory is bounded by the caps below whatever the input (one line without a newline
//! included: it is kept by its first [`LINE_CAP`] bytes); time is one pass over the bytes.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};

/// The first bytes of the log kept whole.
pub const HEAD_CAP: usize = 64 * 1024;
/// The last bytes of the log kept whole.
pub const TAIL_CAP: usize = 256 * 1024;
/// The lines around trouble kept from the middle (the most recent ones win).
pub const WINDOWS_CAP: usize = 512 * 1024;
/// The longest line kept (its first bytes); the rest of it is skipped.
pub const LINE_CAP: usize = 16 * 1024;
/// Lines kept before and after a line that looks like trouble.
const BEFORE: usize = 3;
const AFTER: usize = 12;

/// Words whose line is worth keeping from the middle of a long log. Case-sensitive on purpose
/// (one pass, no lowering of a gigabyte): both common spellings are listed.
const TROUBLE: &[&str] = &[
    "rror",
    "ERROR",
    "atal",
    "FATAL",
    "ailed",
    "FAILED",
    "Traceback",
    "xception",
    "CUDA",
    "cuda",
    "NVRM",
    "Xid",
    "nvidia",
    "NVIDIA",
    "Killed",
    "killed",
    "egmentation",
    "core dumped",
    "arning",
    "WARN",
    "not found",
    "No such",
    "undefined symbol",
    "annot ",
    "nable to",
    "out of memory",
    "OOM",
    "cudnn",
    "cuDNN",
    "nccl",
    "NCCL",
    "libc",
    ".so",
    ".dll",
    "abort",
];

/// What was kept of a log.
#[derive(Debug, Clone, Default)]
pub struct Excerpt {
    /// The kept lines, joined with newlines, in the log's order.
    pub text: String,
    /// For each kept line, its line number in the whole log (1-based).
    line_numbers: Vec<usize>,
    /// Lines in the whole log.
    pub total_lines: usize,
    /// Bytes in the whole log.
    pub total_bytes: u64,
    /// True when lines were left out.
    pub cut: bool,
}

impl Excerpt {
    /// The whole-log line number of the excerpt's line `line` (1-based), as diagnose reports it.
    pub fn original_line(&self, line: usize) -> usize {
        line.checked_sub(1)
            .and_then(|i| self.line_numbers.get(i).copied())
            .unwrap_or(line)
    }

    /// An excerpt of text already in memory (a decoded UTF-16 log).
    pub fn of_text(text: &str) -> Excerpt {
        let mut keeper = Keeper::default();
        for line in text.lines() {
            keeper.push(line);
        }
        keeper.total_bytes = text.len() as u64;
        keeper.finish()
    }
}

/// Reads `reader` to its end into an excerpt. Bytes that are not UTF-8 are replaced.
pub fn read(reader: impl Read) -> std::io::Result<Excerpt> {
    let mut reader = BufReader::with_capacity(256 * 1024, reader);
    let mut keeper = Keeper::default();
    let mut line: Vec<u8> = Vec::with_capacity(4096);
    loop {
        line.clear();
        let (ended, read) = read_line_capped(&mut reader, &mut line)?;
        keeper.total_bytes += read as u64;
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        keeper.push(text.trim_end_matches(['\n', '\r']));
        if !ended {
            break;
        }
    }
    Ok(keeper.finish())
}

/// Reads one line into `line`, keeping at most [`LINE_CAP`] bytes of it and skipping the rest.
/// Returns (whether more may follow, the bytes consumed).
fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
) -> std::io::Result<(bool, usize)> {
    let mut consumed = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((false, consumed));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = LINE_CAP.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok((true, consumed));
        }
    }
}

/// The matcher for [`TROUBLE`], built once.
fn trouble() -> &'static aho_corasick::AhoCorasick {
    static MATCHER: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    MATCHER.get_or_init(|| {
        // Built from constant words: it cannot fail.
        aho_corasick::AhoCorasick::new(TROUBLE).expect("constant words build a matcher")
    })
}

/// The state of one pass.
#[derive(Default)]
struct Keeper {
    line_no: usize,
    total_bytes: u64,
    head: Vec<(usize, String)>,
    head_bytes: usize,
    /// The last lines seen (the tail, and the lines before a trouble line).
    tail: VecDeque<(usize, String)>,
    tail_bytes: usize,
    windows: VecDeque<(usize, String)>,
    windows_bytes: usize,
    /// Lines still to keep after the last trouble line.
    after: usize,
    cut: bool,
}

impl Keeper {
    fn push(&mut self, line: &str) {
        self.line_no += 1;
        let n = self.line_no;
        if self.head_bytes + line.len() < HEAD_CAP && self.tail.is_empty() {
            self.head_bytes += line.len() + 1;
            self.head.push((n, line.to_string()));
            return;
        }
        let trouble = trouble().is_match(line);
        if trouble {
            // The lines just before it, still in the tail, go into the windows too.
            let start = self.tail.len().saturating_sub(BEFORE);
            let before: Vec<(usize, String)> = self.tail.iter().skip(start).cloned().collect();
            for kept in before {
                self.keep_in_window(kept);
            }
            self.after = AFTER;
        }
        if trouble || self.after > 0 {
            self.after = self.after.saturating_sub(usize::from(!trouble));
            self.keep_in_window((n, line.to_string()));
        }
        self.tail_bytes += line.len() + 1;
        self.tail.push_back((n, line.to_string()));
        while self.tail_bytes > TAIL_CAP {
            match self.tail.pop_front() {
                Some((_, old)) => {
                    self.tail_bytes -= old.len() + 1;
                    self.cut = true;
                }
                None => break,
            }
        }
    }

    fn keep_in_window(&mut self, (n, line): (usize, String)) {
        if self.windows.back().is_some_and(|(last, _)| *last >= n) {
            return;
        }
        self.windows_bytes += line.len() + 1;
        self.windows.push_back((n, line));
        while self.windows_bytes > WINDOWS_CAP {
            match self.windows.pop_front() {
                Some((_, old)) => self.windows_bytes -= old.len() + 1,
                None => break,
            }
        }
    }

    fn finish(self) -> Excerpt {
        let mut lines: Vec<(usize, String)> = self.head;
        lines.extend(self.windows);
        lines.extend(self.tail);
        lines.sort_by_key(|(n, _)| *n);
        lines.dedup_by_key(|(n, _)| *n);
        let cut = self.cut || lines.len() < self.line_no;
        let mut text = String::with_capacity(lines.iter().map(|(_, l)| l.len() + 1).sum());
        let mut line_numbers = Vec::with_capacity(lines.len());
        for (n, line) in lines {
            text.push_str(&line);
            text.push('\n');
            line_numbers.push(n);
        }
        Excerpt {
            text,
            line_numbers,
            total_lines: self.line_no,
            total_bytes: self.total_bytes,
            cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_log_is_kept_whole_with_its_own_line_numbers() {
        let log = "step 1\nstep 2\nRuntimeError: CUDA error: out of memory\n";
        let e = read(log.as_bytes()).expect("reads");
        assert_eq!(e.text, log);
        assert!(!e.cut);
        assert_eq!(e.original_line(3), 3);
        assert_eq!(e.total_lines, 3);
    }

    #[test]
    fn a_long_log_keeps_its_head_its_tail_and_the_trouble_in_between() {
        let mut log = String::from("NVRM: driver 550 loaded\n");
        for i in 0..200_000 {
            log.push_str(&format!("epoch 1 step {i} loss 0.5 |██████████| 12 it/s\n"));
            if i == 100_000 {
                log.push_str("ImportError: libcudnn.so.9: cannot open shared object file\n");
            }
        }
        log.push_str("Traceback (most recent call last):\nRuntimeError: the end\n");
        let e = read(log.as_bytes()).expect("reads");
        assert!(e.cut);
        assert!(e.text.len() < HEAD_CAP + TAIL_CAP + WINDOWS_CAP + LINE_CAP);
        assert!(e.text.starts_with("NVRM: driver 550 loaded\n"));
        assert!(e.text.ends_with("RuntimeError: the end\n"));
        let at = e
            .text
            .lines()
            .position(|l| l.starts_with("ImportError: libcudnn"))
            .expect("the trouble in the middle is kept");
        assert_eq!(e.original_line(at + 1), 100_003);
        assert_eq!(e.total_lines, 200_004);
    }

    #[test]
    fn one_endless_line_is_kept_by_its_start_in_bounded_memory() {
        let reader = std::io::repeat(b'x').take(50 * 1024 * 1024);
        let e = read(reader).expect("reads");
        assert_eq!(e.total_bytes, 50 * 1024 * 1024);
        assert_eq!(e.text.len(), LINE_CAP + 1);
    }
}
