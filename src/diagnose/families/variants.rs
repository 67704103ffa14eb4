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
        "releases",
        include_str!("../../../tests/fixtures/diagnose/variants/releases.yaml"),
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
        "tensorrt",
        include_str!("../../../tests/fixtures/diagnose/variants/tensorrt.yaml"),
    ),
    (
        "symbols",
        include_str!("../../../tests/fixtures/diagnose/variants/symbols.yaml"),
    ),
    (
        "windows",
        include_str!("../../../tests/fixtures/diagnose/variants/windows.yaml"),
    ),
    (
        "titles",
        include_str!("../../../tests/fixtures/diagnose/variants/titles.yaml"),
    ),
    (
        "video",
        include_str!("../../../tests/fixtures/diagnose/variants/video.yaml"),
    ),
    (
        "wheels",
        include_str!("../../../tests/fixtures/diagnose/variants/wheels.yaml"),
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
        Mechanism::DriverVideo => "driver_video",
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
        "releases" => super::releases::find(&segments),
        "runtimes" => super::runtimes::find(&segments),
        "tensorrt" => super::tensorrt::find(&segments),
        "status" => super::status::find(&segments),
        "windows" => super::windows::find(&segments),
        "titles" => super::titles::find(&segments),
        "video" => super::video::find(&segments),
        "wheels" => super::wheels::find(&segments).into_iter().collect(),
        "symbols" => segments
            .iter()
            .filter_map(|seg| {
                super::symbols::by_symbol_kind(seg)
                    .or_else(|| super::symbols::driver_api_function_not_found(seg))
            })
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

fn seen(check: Check, module: &str, log: &str, id: Option<&str>) -> Result<Option<Seen>, String> {
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
fn mismatches(want: &Expect, seen: &Seen, module: &str, log: &str) -> Result<Vec<String>, String> {
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
    word(owner) && word(name) && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
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
        // Variants and contrasts must say where they come from; a near-miss may be made up.
        let sourced = entry
            .variants
            .iter()
            .chain(&entry.contrasts)
            .map(|c| (c, true));
        let near_misses = entry.names_nothing.iter().map(|c| (c, false));
        for (case, source_required) in sourced.chain(near_misses) {
            match case.source.as_deref() {
                None if source_required => wrong.push(format!(
                    "{module}.yaml: {}: a variant without a source: {:?}",
                    entry.family, case.log
                )),
                None | Some(UNRECORDED) => {}
                Some(s) if is_cited(s) => {
                    cited_sources.push(s.to_string());
                    cited += usize::from(counted.iter().any(|v| std::ptr::eq(v, case)));
                }
                Some(s) => wrong.push(format!(
                    "{module}.yaml: {}: {s:?} is not owner/repo#N, a URL or a catalogue reference",
                    entry.family
                )),
            }
        }
        for s in &entry.see {
            if is_cited(s) {
                cited_sources.push(s.clone());
            } else {
                wrong.push(format!("{module}.yaml: {}: see {s:?} is not owner/repo#N, a URL or a catalogue reference", entry.family));
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
