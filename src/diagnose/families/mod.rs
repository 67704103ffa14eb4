//! The mechanism tier: recognises the *families* behind failure messages rather than single
//! sentences, so a message never seen before is still placed when its mechanism is known.
//!
//! - [`loader`]: a library that will not load (`cannot open shared object file`, `undefined
//!   symbol`, `Could not load library X`, Windows error 126/127), judged by *which* library it is
//!   and *where it lives* (a pip CUDA wheel in site-packages, the toolkit's folder, the driver's
//!   `libcuda`/`nvml`), and by the CUDA version its name carries against the one the log shows.
//! - [`codes`]: the CUDA runtime's error codes and names (legacy THC `error=N` and `cuda runtime
//!   error (N)` numbers translated to today's), and the driver's Xid numbers, as tables.
//! - [`status`]: the CUDA math libraries' status codes (cuBLAS, cuSOLVER, cuSPARSE, cuFFT), as a
//!   table of what each status points at.
//! - [`kernel_log`]: the driver's device nodes (`/dev/nvidia*` missing) and its NVRM kernel-log
//!   lines other than Xid (assertions, RmInitAdapter, fallen off the bus).
//! - [`messages`]: execution-provider and device lists the libraries print, version pairs
//!   (torch vs torchvision, cuDNN compiled vs loaded), allocator failures worded by ONNX Runtime
//!   or TensorFlow, and the installers' own log lines (the `modpost` line, `cl.exe`, CMake's
//!   CUDA toolset).
//! - [`symbols`]: undefined symbols placed by what they belong to (torch's C++ API, the CUDA
//!   driver API, the runtime's registration hooks).
//! - [`runtimes`]: the runtimes around CUDA: NCCL's result codes, XLA's DNN start-up, ONNX
//!   Runtime's provider library, the container toolkit's CUDA requirement.
//! - [`compile`]: nvcc's and NVRTC's compile errors placed by where they are (the toolkit's
//!   own headers, a CUDA intrinsic, a kernel the library generated); the user's own code stays
//!   unknown.
//! - [`own`]: stackpin's own failure texts and a `failed-run.yaml` given to `diagnose`.
//!
//! A [`Finding`] is *decisive* when its mechanism used evidence the catalogue cannot see (where
//! a library lives, a version pair, the cause line of an installer log): it then wins over a
//! catalogue entry. Otherwise it answers only when no catalogue entry matched, before the broad
//! rules. This module reads text only; the host context is applied by [`super::context_fix`].

pub mod codes;
pub mod compile;
pub mod kernel_log;
pub mod loader;
pub mod messages;
pub mod own;
pub mod runtimes;
pub mod status;
pub mod symbols;

use super::FailureLayer;
use super::matcher::{self, Segment};

/// What a family recognised, before the context decides the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable identifier, `<layer>-<family>-<what>`.
    pub id: &'static str,
    pub layer: FailureLayer,
    /// The other layer the message may belong to when it is ambiguous.
    pub second: Option<FailureLayer>,
    pub cause: String,
    pub fix: String,
    /// Which kind of fix the host context may change.
    pub mechanism: Mechanism,
    /// Wins over a catalogue entry (see the module docs).
    pub decisive: bool,
    /// 1-based line of the evidence.
    pub line_number: usize,
    /// The line that names the cause, trimmed and shortened.
    pub evidence: String,
    /// Byte offset just past the evidence.
    pub before_len: usize,
}

/// The kinds of fix that depend on the host the failure happened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// The driver cannot be reached (NVML, cuInit, no device, module not loaded).
    DriverAccess,
    /// The driver's kernel module did not build or load for the running kernel.
    DriverBuild,
    /// The fix does not depend on the host.
    Plain,
}

/// The finding that best names the cause: decisive first, then the causal order of layers,
/// then the first line; `None` when no family recognised anything.
pub fn best(text: &str) -> Option<Finding> {
    let segments: Vec<Segment<'_>> = matcher::segments(text).collect();
    let mut found = Vec::new();
    found.extend(loader::find(text, &segments));
    found.extend(codes::find(&segments));
    found.extend(messages::find(&segments));
    found.extend(status::find(&segments));
    found.extend(kernel_log::find(&segments));
    found.extend(runtimes::find(&segments));
    found.extend(compile::find(&segments));
    found
        .into_iter()
        .enumerate()
        .min_by_key(|(order, f)| {
            (
                !f.decisive,
                matcher::causal_rank(f.layer),
                f.line_number,
                *order,
            )
        })
        .map(|(_, f)| f)
}

/// A finding anchored on `seg`.
#[allow(clippy::too_many_arguments)] // a plain constructor; every field is named at the call
pub(super) fn at(
    seg: &Segment<'_>,
    id: &'static str,
    layer: FailureLayer,
    second: Option<FailureLayer>,
    cause: impl Into<String>,
    fix: impl Into<String>,
    mechanism: Mechanism,
    decisive: bool,
) -> Finding {
    Finding {
        id,
        layer,
        second,
        cause: cause.into(),
        fix: fix.into(),
        mechanism,
        decisive,
        line_number: seg.line_number,
        evidence: matcher::shorten(seg.text.trim()),
        before_len: seg.end,
    }
}

/// The digits right after `at` in `s` (spaces, `:`, `=`, `(` skipped first).
pub(super) fn number_after(s: &str, at: usize) -> Option<u32> {
    let rest = s
        .get(at..)?
        .trim_start_matches([' ', ':', '=', '(', '#', '\t']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 6 {
        return None;
    }
    // A number glued to letters ("10ms", "3rd") is not a code.
    let next = rest[digits.len()..].chars().next();
    if next.is_some_and(|c| c.is_ascii_alphabetic() || c == '.') {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_after_a_word_skip_separators_and_refuse_glued_units() {
        assert_eq!(number_after("error 35 here", 5), Some(35));
        assert_eq!(number_after("code=100(cudaerrornodevice)", 4), Some(100));
        assert_eq!(number_after("error: 10ms", 5), None);
        assert_eq!(number_after("release 12.1", 7), None);
        assert_eq!(number_after("error", 5), None);
    }

    #[test]
    fn a_decisive_finding_beats_an_earlier_plain_one() {
        let log = "RuntimeError: CUDA error: unspecified launch failure\n\
                   nvcc fatal   : Cannot find compiler 'cl.exe' in PATH";
        let f = best(log).expect("a finding");
        assert!(f.decisive);
        assert_eq!(f.layer, FailureLayer::Toolkit);
    }
}

/// The families' real failure messages, kept as data in `tests/fixtures/diagnose/variants/`
/// (the format is in its README.md): each entry names what a family must find for every
/// variant, with the public thread the variant was copied from.
#[cfg(test)]
mod variants {
    use super::{Finding, Mechanism, best, matcher};
    use crate::diagnose::{Confidence, Diagnosis, FailureLayer};
    use serde::Deserialize;

    /// Every variant file, by the family module whose matcher `check: module` calls.
    const FILES: &[(&str, &str)] = &[
        (
            "codes",
            include_str!("../../../tests/fixtures/diagnose/variants/codes.yaml"),
        ),
        (
            "compile",
            include_str!("../../../tests/fixtures/diagnose/variants/compile.yaml"),
        ),
        (
            "kernel_log",
            include_str!("../../../tests/fixtures/diagnose/variants/kernel_log.yaml"),
        ),
        (
            "loader",
            include_str!("../../../tests/fixtures/diagnose/variants/loader.yaml"),
        ),
        (
            "messages",
            include_str!("../../../tests/fixtures/diagnose/variants/messages.yaml"),
        ),
        (
            "own",
            include_str!("../../../tests/fixtures/diagnose/variants/own.yaml"),
        ),
        (
            "runtimes",
            include_str!("../../../tests/fixtures/diagnose/variants/runtimes.yaml"),
        ),
        (
            "status",
            include_str!("../../../tests/fixtures/diagnose/variants/status.yaml"),
        ),
        (
            "symbols",
            include_str!("../../../tests/fixtures/diagnose/variants/symbols.yaml"),
        ),
    ];

    /// The sources the Rust tests cited before they became data: none may be lost.
    const SOURCES_BEFORE: &str =
        include_str!("../../../tests/fixtures/diagnose/variants/sources-before.txt");

    /// Families still short of two cited variants (their other variants are `unrecorded`), one
    /// a line: the list may only shrink, as sources are found.
    const SHORT_OF_TWO_CITED: &str =
        include_str!("../../../tests/fixtures/diagnose/variants/short-of-two-cited.txt");

    /// What a source that is not a public thread says when none was recorded.
    const UNRECORDED: &str = "unrecorded";

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        family: String,
        #[serde(default)]
        check: Check,
        #[serde(default)]
        finds: Expect,
        #[serde(default)]
        variants: Vec<Case>,
        /// Logs a neighbouring rule places differently: checked with their own `finds`, not
        /// counted as variants of this family.
        #[serde(default)]
        contrasts: Vec<Case>,
        #[serde(default)]
        names_nothing: Vec<Case>,
        /// Threads behind the rule that are not the source of one variant (a fix confirmed
        /// elsewhere): kept so that no source is lost.
        #[serde(default)]
        see: Vec<String>,
    }

    /// Which answer is checked.
    #[derive(Debug, Default, Clone, Copy, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Check {
        /// The whole pipeline, what a user sees.
        #[default]
        Diagnose,
        /// The file's family module alone: its first finding.
        Module,
        /// The file's family module alone: its finding with `finds.id`.
        ModuleWithId,
        /// The families' tier: [`best`].
        Best,
    }

    #[derive(Debug, Default, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Expect {
        id: Option<String>,
        not_id: Option<String>,
        layer: Option<String>,
        /// A layer, `none` for no second layer, `some` for any; omitted: not checked.
        second: Option<String>,
        confidence: Option<String>,
        mechanism: Option<String>,
        decisive: Option<bool>,
        #[serde(default)]
        fix_has: Vec<String>,
        #[serde(default)]
        fix_lacks: Vec<String>,
        /// At least one of these is in the fix.
        #[serde(default)]
        fix_any: Vec<String>,
        /// These are in the fix, each first mentioned after the one before it.
        #[serde(default)]
        fix_order: Vec<String>,
        #[serde(default)]
        cause_has: Vec<String>,
        evidence_has: Option<String>,
        /// The module's findings, every one, in order.
        module_ids: Option<Vec<String>>,
        /// One of the module's findings.
        module_has: Option<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Case {
        source: Option<String>,
        log: String,
        /// Replaces the entry's `finds` for this log.
        finds: Option<Expect>,
    }

    /// The answer under test, whichever check produced it.
    struct Seen {
        id: String,
        layer: FailureLayer,
        second: Option<FailureLayer>,
        cause: String,
        fix: String,
        evidence: String,
        confidence: Option<Confidence>,
        mechanism: Option<Mechanism>,
        decisive: Option<bool>,
    }

    impl From<Finding> for Seen {
        fn from(f: Finding) -> Self {
            Self {
                id: f.id.to_string(),
                layer: f.layer,
                second: f.second,
                cause: f.cause,
                fix: f.fix,
                evidence: f.evidence,
                confidence: None,
                mechanism: Some(f.mechanism),
                decisive: Some(f.decisive),
            }
        }
    }

    impl From<Diagnosis> for Seen {
        fn from(d: Diagnosis) -> Self {
            Self {
                id: d.id,
                layer: d.layer,
                second: d.second_layer,
                cause: d.cause,
                fix: d.fix,
                evidence: d.evidence.unwrap_or_default(),
                confidence: Some(d.confidence),
                mechanism: None,
                decisive: None,
            }
        }
    }

    fn layer_name(layer: Option<FailureLayer>) -> String {
        layer.map_or_else(|| "none".to_string(), |l| format!("{l:?}").to_lowercase())
    }

    fn mechanism_name(m: Mechanism) -> &'static str {
        match m {
            Mechanism::DriverAccess => "driver_access",
            Mechanism::DriverBuild => "driver_build",
            Mechanism::Plain => "plain",
        }
    }

    /// Every finding of one family module, in its own order.
    fn module_findings(module: &str, log: &str) -> Result<Vec<Seen>, String> {
        let segments: Vec<_> = matcher::segments(log).collect();
        let found = match module {
            "codes" => super::codes::find(&segments),
            "compile" => super::compile::find(&segments),
            "kernel_log" => super::kernel_log::find(&segments),
            "loader" => super::loader::find(log, &segments),
            "messages" => super::messages::find(&segments),
            "runtimes" => super::runtimes::find(&segments),
            "status" => super::status::find(&segments),
            "symbols" => segments
                .iter()
                .filter_map(super::symbols::by_symbol_kind)
                .collect(),
            "own" => {
                return Ok(super::own::find(log)
                    .map(|hit| Seen {
                        id: hit.id.to_string(),
                        layer: hit.layer,
                        second: None,
                        cause: hit.cause.to_string(),
                        fix: hit.fix.to_string(),
                        evidence: hit.evidence,
                        confidence: None,
                        mechanism: None,
                        decisive: None,
                    })
                    .into_iter()
                    .collect());
            }
            other => return Err(format!("no family module {other}")),
        };
        Ok(found.into_iter().map(Seen::from).collect())
    }

    fn seen(
        check: Check,
        module: &str,
        log: &str,
        id: Option<&str>,
    ) -> Result<Option<Seen>, String> {
        Ok(match check {
            Check::Diagnose => crate::diagnose::diagnose(log).map(Seen::from),
            Check::Best => best(log).map(Seen::from),
            Check::Module => module_findings(module, log)?.into_iter().next(),
            Check::ModuleWithId => {
                let id = id.ok_or("check: module_with_id needs finds.id")?;
                module_findings(module, log)?
                    .into_iter()
                    .find(|f| f.id == id)
            }
        })
    }

    /// What `seen` gets wrong against `want`, one line each.
    fn mismatches(
        want: &Expect,
        seen: &Seen,
        module: &str,
        log: &str,
    ) -> Result<Vec<String>, String> {
        let mut wrong = Vec::new();
        let differs = |what: &str, want: &str, got: &str| {
            (want != got).then(|| format!("{what}: want {want}, got {got}"))
        };
        if let Some(id) = &want.id {
            wrong.extend(differs("id", id, &seen.id));
        }
        if let Some(layer) = &want.layer {
            wrong.extend(differs("layer", layer, &layer_name(Some(seen.layer))));
        }
        match want.second.as_deref() {
            Some("some") if seen.second.is_none() => {
                wrong.push("second: want some layer, got none".to_string());
            }
            Some("some") | None => {}
            Some(second) => wrong.extend(differs("second", second, &layer_name(seen.second))),
        }
        if let Some(confidence) = &want.confidence {
            let got = seen.confidence.map_or_else(
                || "not shown by this check".to_string(),
                |c| format!("{c:?}").to_lowercase(),
            );
            wrong.extend(differs("confidence", confidence, &got));
        }
        if let Some(mechanism) = &want.mechanism {
            let got = seen
                .mechanism
                .map_or("not shown by this check", mechanism_name);
            wrong.extend(differs("mechanism", mechanism, got));
        }
        if let Some(decisive) = want.decisive {
            let got = seen
                .decisive
                .map_or_else(|| "not shown by this check".to_string(), |d| d.to_string());
            wrong.extend(differs("decisive", &decisive.to_string(), &got));
        }
        if let Some(not_id) = &want.not_id
            && *not_id == seen.id
        {
            wrong.push(format!("id: must not be {not_id}"));
        }
        for part in &want.fix_has {
            if !seen.fix.contains(part.as_str()) {
                wrong.push(format!("fix lacks {part:?}: {}", seen.fix));
            }
        }
        for part in &want.fix_lacks {
            if seen.fix.contains(part.as_str()) {
                wrong.push(format!("fix has {part:?}: {}", seen.fix));
            }
        }
        if !want.fix_any.is_empty() && !want.fix_any.iter().any(|p| seen.fix.contains(p.as_str())) {
            wrong.push(format!("fix has none of {:?}: {}", want.fix_any, seen.fix));
        }
        // Each part's first mention comes after the first mention of the part before it.
        let firsts: Vec<Option<usize>> = want
            .fix_order
            .iter()
            .map(|part| seen.fix.find(part.as_str()))
            .collect();
        let in_order =
            firsts.iter().all(Option::is_some) && firsts.windows(2).all(|pair| pair[0] < pair[1]);
        if !in_order {
            wrong.push(format!(
                "fix does not first mention {:?} in this order: {}",
                want.fix_order, seen.fix
            ));
        }
        for part in &want.cause_has {
            if !seen.cause.contains(part.as_str()) {
                wrong.push(format!("cause lacks {part:?}: {}", seen.cause));
            }
        }
        if let Some(part) = &want.evidence_has
            && !seen.evidence.contains(part.as_str())
        {
            wrong.push(format!("evidence lacks {part:?}: {}", seen.evidence));
        }
        if want.module_ids.is_some() || want.module_has.is_some() {
            let ids: Vec<String> = module_findings(module, log)?
                .into_iter()
                .map(|f| f.id)
                .collect();
            if let Some(all) = &want.module_ids
                && *all != ids
            {
                wrong.push(format!("{module} finds {ids:?}, want {all:?}"));
            }
            if let Some(one) = &want.module_has
                && !ids.contains(one)
            {
                wrong.push(format!("{module} finds {ids:?}, none is {one}"));
            }
        }
        Ok(wrong)
    }

    fn entries(file: &str, text: &str) -> Result<Vec<Entry>, String> {
        serde_saphyr::from_str(text).map_err(|e| format!("{file}.yaml does not parse: {e}"))
    }

    /// Every failure of one entry, each naming the file, the family, the source and the log.
    fn check_entry(module: &str, entry: &Entry) -> Vec<String> {
        let mut failures = Vec::new();
        let mut fail = |case: &Case, what: String| {
            failures.push(format!(
                "{module}.yaml: {} [{}]: {what}\n    log: {:?}",
                entry.family,
                case.source.as_deref().unwrap_or("no source"),
                case.log
            ));
        };
        for case in entry.variants.iter().chain(&entry.contrasts) {
            let want = case.finds.as_ref().unwrap_or(&entry.finds);
            match seen(entry.check, module, &case.log, want.id.as_deref()) {
                Err(e) => fail(case, e),
                Ok(None) => fail(case, format!("{:?} found nothing", entry.check)),
                Ok(Some(got)) => match mismatches(want, &got, module, &case.log) {
                    Err(e) => fail(case, e),
                    Ok(wrong) => wrong.into_iter().for_each(|w| fail(case, w)),
                },
            }
        }
        for case in &entry.names_nothing {
            match seen(entry.check, module, &case.log, None) {
                Err(e) => fail(case, e),
                Ok(None) => {}
                Ok(Some(got)) => fail(
                    case,
                    format!("must name nothing, {:?} found {}", entry.check, got.id),
                ),
            }
        }
        failures
    }

    fn all_entries() -> Vec<(&'static str, Entry)> {
        let mut all = Vec::new();
        for (module, text) in FILES {
            match entries(module, text) {
                Ok(list) => all.extend(list.into_iter().map(|e| (*module, e))),
                Err(e) => panic!("{e}"),
            }
        }
        all
    }

    #[test]
    fn every_variant_finds_what_its_family_says() {
        let failures: Vec<String> = all_entries()
            .iter()
            .flat_map(|(module, entry)| check_entry(module, entry))
            .collect();
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    /// `owner/repo#N`.
    fn is_thread(source: &str) -> bool {
        let word = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        let Some((repo, number)) = source.split_once('#') else {
            return false;
        };
        let Some((owner, name)) = repo.split_once('/') else {
            return false;
        };
        word(owner)
            && word(name)
            && !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit())
    }

    fn is_cited(source: &str) -> bool {
        is_thread(source)
            || source.starts_with("https://")
            || source == super::own::SOURCE
            || source
                .strip_prefix("catalogue:")
                .is_some_and(|id| crate::diagnose::catalogue::entries().any(|e| e.id == id))
    }

    #[test]
    fn every_family_has_two_cited_variants_and_keeps_every_source() {
        let all = all_entries();
        let mut wrong = Vec::new();
        let mut short = Vec::new();
        let mut cited_sources = Vec::new();
        for (module, entry) in &all {
            // A family that only keeps messages unknown has its near-misses as its variants.
            let counted = if entry.variants.is_empty() {
                &entry.names_nothing
            } else {
                &entry.variants
            };
            if counted.len() < 2 {
                wrong.push(format!(
                    "{module}.yaml: {} has {} variants",
                    entry.family,
                    counted.len()
                ));
            }
            let mut cited = 0;
            for case in entry.variants.iter().chain(&entry.contrasts) {
                match case.source.as_deref() {
                    None => wrong.push(format!("{module}.yaml: {}: a variant without a source: {:?}", entry.family, case.log)),
                    Some(UNRECORDED) => {}
                    Some(s) if is_cited(s) => {
                        cited_sources.push(s.to_string());
                        cited += usize::from(counted.iter().any(|v| std::ptr::eq(v, case)));
                    }
                    Some(s) => wrong.push(format!("{module}.yaml: {}: {s:?} is not owner/repo#N, a URL or a catalogue reference", entry.family)),
                }
            }
            for s in &entry.see {
                if is_cited(s) {
                    cited_sources.push(s.clone());
                } else {
                    wrong.push(format!("{module}.yaml: {}: see {s:?} is not owner/repo#N, a URL or a catalogue reference", entry.family));
                }
            }
            for case in &entry.names_nothing {
                match case.source.as_deref() {
                    None | Some(UNRECORDED) => {}
                    Some(s) if is_cited(s) => {
                        cited_sources.push(s.to_string());
                        cited += usize::from(counted.iter().any(|v| std::ptr::eq(v, case)));
                    }
                    Some(s) => wrong.push(format!("{module}.yaml: {}: {s:?} is not owner/repo#N, a URL or a catalogue reference", entry.family)),
                }
            }
            if cited < 2 {
                short.push(entry.family.as_str());
            }
        }
        short.sort_unstable();
        let mut allowed: Vec<&str> = SHORT_OF_TWO_CITED
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        allowed.sort_unstable();
        if short != allowed {
            wrong.push(format!(
                "short-of-two-cited.txt must list exactly the families short of two cited \
                 variants; they are now:\n{}",
                short.join("\n")
            ));
        }
        // Sections name the module; those not yet converted to data are skipped.
        let mut section = "";
        for line in SOURCES_BEFORE.lines().map(str::trim) {
            if let Some(module) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = module;
            } else if !line.is_empty()
                && !line.starts_with('#')
                && FILES.iter().any(|(m, _)| *m == section)
                && !cited_sources.iter().any(|s| s == line)
            {
                wrong.push(format!(
                    "{section}: the old tests cited {line}; no variant does"
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
