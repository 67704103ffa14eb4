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
    /// The piece as written.
    pub(super) text: &'a str,
    /// The piece, lowercased for matching.
    pub(super) lower: String,
    /// Byte offset just past the piece in the input.
    pub(super) end: usize,
}

/// Lines numbered the way an editor numbers them (`\n`, with `\r\n` tolerated), each cut
/// further at lone `\r`: progress bars and Windows installers redraw a line with `\r`, and
/// only the piece that matched is useful evidence.
pub(super) fn segments(text: &str) -> impl Iterator<Item = Segment<'_>> {
    let mut line_start = 0;
    text.split('\n').enumerate().flat_map(move |(index, line)| {
        let base = line_start;
        line_start += line.len() + 1;
        let mut piece_start = base;
        line.split('\r').map(move |piece| {
            let start = piece_start;
            piece_start += piece.len() + 1;
            Segment {
                line_number: index + 1,
                text: piece,
                lower: piece.to_lowercase(),
                end: start + piece.len(),
            }
        })
    })
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
    fn very_long_evidence_lines_are_shortened() {
        let log = format!("{} CUDA out of memory", "x".repeat(5000));
        let hit = best(&log).expect("an OOM");
        assert_eq!(hit.evidence.chars().count(), EVIDENCE_MAX_CHARS + 1);
    }
}
