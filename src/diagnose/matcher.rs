//! Finds the catalogue entries a log matches and picks the one that names the cause.
//!
//! The ranking rule, in order:
//! 1. **Specific beats generic.** A message that names its cause ("driver version is
//!    insufficient") beats a shared symptom ("Segmentation fault", "Installation has failed").
//! 2. **Causal order of layers.** hardware → driver → toolkit → library → memory: a fault lower
//!    in the stack causes the errors above it (a driver too old makes the library's import
//!    fail; a GPU off the bus makes nvidia-smi fail), so the lowest layer with a hit wins.
//! 3. **First in the log.** Within one layer the earliest matching line wins: the first error
//!    usually causes the ones after it.
//! 4. **Catalogue order** breaks the last tie (two entries on the same line): more specific
//!    entries are listed first (the OOM naming another process before the plain OOM).
//!
//! Matching is plain case-insensitive text, line by line; see [`super::catalogue`] for the
//! pattern syntax. This module never reads files and never prints.

use std::borrow::Cow;

use super::FailureLayer;
use super::catalogue::{self, Entry, Specificity};

/// The longest evidence line we hand back; logs can carry megabyte-long lines (progress bars).
const EVIDENCE_MAX_CHARS: usize = 400;

/// One catalogue entry that matched, and where.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The entry that matched.
    pub entry: &'static Entry,
    /// 1-based line number of the evidence in the input.
    pub line_number: usize,
    /// The matched line, trimmed and shortened to a readable length.
    pub evidence: String,
    /// The input up to and including the evidence line (for context such as the batch size).
    pub before_len: usize,
}

/// Every entry that matches `text`, each at its first matching line, in catalogue order.
pub fn hits(text: &str) -> Vec<Hit> {
    let segments: Vec<Segment> = segments(text).collect();
    let mut found = Vec::new();
    for entry in catalogue::entries() {
        let first = segments.iter().find(|seg| {
            entry
                .patterns
                .iter()
                .any(|p| pattern_matches(p, &seg.lower))
        });
        if let Some(seg) = first {
            found.push(Hit {
                entry,
                line_number: seg.line_number,
                evidence: shorten(seg.text.trim()),
                before_len: seg.end,
            });
        }
    }
    found
}

/// The hit that best names the cause, by the rule in the module docs; `None` when nothing
/// matched.
pub fn best(text: &str) -> Option<Hit> {
    hits(text)
        .into_iter()
        .enumerate()
        .min_by_key(|(order, hit)| {
            (
                specificity_rank(hit.entry.specificity),
                causal_rank(hit.entry.layer),
                hit.line_number,
                *order,
            )
        })
        .map(|(_, hit)| hit)
}

/// Whether every `*`-separated piece of `pattern` occurs in `line`, in order.
pub fn pattern_matches(pattern: &str, line: &str) -> bool {
    let mut rest = line;
    for piece in pattern.split('*') {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

fn specificity_rank(s: Specificity) -> u8 {
    match s {
        Specificity::Specific => 0,
        Specificity::Generic => 1,
    }
}

/// Lower layers of the stack come first: their faults cause the messages above them.
pub(super) fn causal_rank(layer: FailureLayer) -> u8 {
    match layer {
        FailureLayer::Hardware => 0,
        FailureLayer::Driver => 1,
        FailureLayer::Toolkit => 2,
        FailureLayer::Library => 3,
        FailureLayer::Memory => 4,
        FailureLayer::Unknown => 5,
    }
}

/// One piece of a line that patterns are matched against.
pub(super) struct Segment<'a> {
    /// 1-based line number in the input.
    pub(super) line_number: usize,
    /// The piece as written; a wrapped line joined to its continuation ([`segments`]).
    pub(super) text: Cow<'a, str>,
    /// The piece, lowercased for matching.
    pub(super) lower: String,
    /// Byte offset just past the piece in the input.
    pub(super) end: usize,
}

/// Lines numbered the way an editor numbers them (`\n`, with `\r\n` tolerated), each cut
/// further at lone `\r`: progress bars and Windows installers redraw a line with `\r`, and
/// only the piece that matched is useful evidence. A message wrapped over two lines as pasted
/// (a terminal's or a forum's width: "CUDA error: an illegal memory" / "access was
/// encountered") is one segment, numbered by its first line: see [`continues`].
pub(super) fn segments(text: &str) -> impl Iterator<Item = Segment<'_>> {
    let mut pieces: Vec<Segment<'_>> = Vec::new();
    let mut line_start = 0;
    let mut previous_whole = false;
    for (index, raw) in text.split('\n').enumerate() {
        let base = line_start;
        line_start += raw.len() + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let whole = !line.contains('\r');
        if whole
            && previous_whole
            && let Some(last) = pieces.last_mut()
            && last.line_number == index
            && continues(&last.text, line)
        {
            let joined = format!("{} {}", last.text.trim_end(), line);
            last.lower = joined.to_lowercase();
            last.text = Cow::Owned(joined);
            last.end = base + line.len();
            // A third line joins no further: a wrap is one break.
            previous_whole = false;
            continue;
        }
        previous_whole = whole && raw == line;
        let mut piece_start = base;
        for piece in raw.split('\r') {
            let start = piece_start;
            piece_start += piece.len() + 1;
            pieces.push(Segment {
                line_number: index + 1,
                text: Cow::Borrowed(piece),
                lower: piece.to_lowercase(),
                end: start + piece.len(),
            });
        }
    }
    pieces.into_iter()
}

/// Whether `next` is the rest of `line`, broken by the width of a terminal or a forum: `line`
/// is an error message cut mid-phrase (it names an error or a failure and ends in a word, not in
/// punctuation), and `next` starts at the margin with a lowercase word that is no message kind
/// (`error`, `warning`) and no program's prefix (`ld:`, `dpkg:`), followed by another word (not a
/// version: a package list's row). Anything else stays two lines.
fn continues(line: &str, next: &str) -> bool {
    let line = line.trim_end();
    let lower = line.to_lowercase();
    let cut_mid_phrase = line.ends_with(|c: char| c.is_ascii_alphanumeric())
        && ["error", "failed", "exception"]
            .iter()
            .any(|w| lower.contains(w));
    let words: Vec<&str> = next.split_whitespace().take(3).collect();
    let first_word = words
        .first()
        .copied()
        .unwrap_or_default()
        .trim_end_matches(['.', ',', ';']);
    // A line of its own starts with a message's kind ("error MSB3721: …", "warning: …").
    const KINDS: &[&str] = &[
        "error",
        "warning",
        "fatal",
        "note",
        "info",
        "failed",
        "exception",
    ];
    cut_mid_phrase
        && next.starts_with(|c: char| c.is_ascii_lowercase())
        && first_word.chars().all(|c| c.is_ascii_alphabetic())
        && !KINDS.contains(&first_word)
        && words.len() >= 2
        && !words[..2].iter().any(|w| w.contains(':'))
        // "torch 2.1.0": a package list's row, not the rest of a sentence.
        && words[1].starts_with(|c: char| c.is_alphabetic() || c == '`')
        && !next.contains(" : ")
}

pub(super) fn shorten(line: &str) -> String {
    if line.chars().count() <= EVIDENCE_MAX_CHARS {
        return line.to_string();
    }
    let mut short: String = line.chars().take(EVIDENCE_MAX_CHARS).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_must_appear_in_order_on_one_line() {
        assert!(pattern_matches(
            "nvcc fatal*unsupported gpu",
            "nvcc fatal : unsupported gpu arch"
        ));
        assert!(!pattern_matches(
            "unsupported gpu*nvcc fatal",
            "nvcc fatal : unsupported gpu"
        ));
        assert!(!pattern_matches("a*b", "a"));
    }

    #[test]
    fn line_numbers_follow_newlines_and_evidence_is_the_redrawn_piece() {
        let text = "ok\r\nstep 1/30\rCUDA out of memory. Tried to allocate 2 MiB\n";
        let hit = best(text).expect("an OOM");
        assert_eq!(hit.entry.id, "mem-torch-oom");
        assert_eq!(hit.line_number, 2);
        assert_eq!(hit.evidence, "CUDA out of memory. Tried to allocate 2 MiB");
    }

    #[test]
    fn a_driver_too_old_beats_the_import_error_it_causes() {
        let log = "ImportError: libcudart.so.12: cannot open shared object file: No such file\n\
                   RuntimeError: The NVIDIA driver on your system is too old (found version 11040).";
        assert_eq!(best(log).expect("a hit").entry.id, "drv-too-old-for-torch");
    }

    #[test]
    fn a_specific_cause_beats_a_generic_symptom_above_it() {
        let log = "ERROR: Installation has failed.  Please see the file '/var/log/nvidia-installer.log'\n\
                   ERROR: The Nouveau kernel driver is currently in use by your system.";
        assert_eq!(
            best(log).expect("a hit").entry.id,
            "drv-inst-nouveau-in-use"
        );
    }

    #[test]
    fn within_a_layer_the_first_error_wins() {
        let log = "ERROR: Ignored the following versions that require a different python version: 2.3.0\n\
                   ERROR: No matching distribution found for torch==2.3.1";
        assert_eq!(
            best(log).expect("a hit").entry.id,
            "lib-python-version-no-wheel"
        );
    }

    #[test]
    fn an_oom_naming_another_process_beats_the_plain_oom_on_the_same_line() {
        let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. \
                   Process 4242 has 53.16 GiB memory in use.";
        assert_eq!(best(log).expect("a hit").entry.id, "mem-oom-other-process");
    }

    #[test]
    fn a_message_wrapped_as_pasted_is_one_segment_and_a_new_line_is_not() {
        // The forum's width broke evo-design/evo#136's line; the entry reads it whole, on the
        // first line.
        let wrapped = "RuntimeError: CUDA error: an illegal memory\naccess was encountered\nnext";
        let joined: Vec<_> = segments(wrapped).collect();
        assert_eq!(joined.len(), 2);
        assert_eq!(
            joined[0].lower,
            "runtimeerror: cuda error: an illegal memory access was encountered"
        );
        assert_eq!(joined[0].line_number, 1);
        let hit = best(wrapped).expect("the entry");
        assert_eq!(hit.entry.id, "lib-illegal-memory-access");
        // A line of its own stays one: a message kind, a program's prefix, a list row.
        for two in [
            "kernel.cu(12): error: identifier \"myHelper\" is undefined\nerror MSB3721: The command exited with code 2.",
            "RuntimeError: CUDA error: unknown error\nld: cannot find -lcuda",
            "ERROR: could not build wheels for torch\ntorch 2.1.0",
            "error while loading shared libraries\nkilled",
        ] {
            assert_eq!(segments(two).count(), 2, "{two}");
        }
    }

    #[test]
    fn very_long_evidence_lines_are_shortened() {
        let log = format!("{} CUDA out of memory", "x".repeat(5000));
        let hit = best(&log).expect("an OOM");
        assert_eq!(hit.evidence.chars().count(), EVIDENCE_MAX_CHARS + 1);
    }
}
