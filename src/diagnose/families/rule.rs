//! The shape most message families share: patterns (the catalogue's `*` syntax) on one line, or
//! a judge for what a pattern cannot say (a list judged by what it holds and lacks), and the
//! finding that line makes. `messages`, `windows`, `kernel_log`, `compile`, `runtimes` and
//! `loader` keep their rules in this shape; they differ only in how a table is read (every rule,
//! or the first that matches; `runtimes` with a condition on the rest of the log, [`InLog`];
//! `loader` choosing its rows by what the failing line says of the library it names).

use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer;
use crate::diagnose::matcher::{Segment, pattern_matches};

/// One family rule. Patterns are lowercase: lines are matched lowercased.
pub(super) struct Rule {
    pub id: &'static str,
    pub patterns: &'static [&'static str],
    pub layer: FailureLayer,
    pub second: Option<FailureLayer>,
    pub cause: &'static str,
    pub fix: &'static str,
    pub mechanism: Mechanism,
    pub decisive: bool,
    pub judge: Option<fn(&str) -> bool>,
}

/// Whether a lowercased line matches any of `patterns`, or passes `judge`: the test every table
/// of this shape applies to a line (rules here, the rows of `releases`).
pub(super) fn line_matches(
    patterns: &[&str],
    judge: Option<fn(&str) -> bool>,
    lower: &str,
) -> bool {
    patterns.iter().any(|p| pattern_matches(p, lower)) || judge.is_some_and(|judge| judge(lower))
}

impl Rule {
    fn matches(&self, seg: &Segment<'_>) -> bool {
        line_matches(self.patterns, self.judge, &seg.lower)
    }

    /// This rule's finding at `seg`.
    pub(super) fn finding(&self, seg: &Segment<'_>) -> Finding {
        at(
            seg,
            self.id,
            self.layer,
            self.second,
            self.cause,
            self.fix,
            self.mechanism,
            self.decisive,
        )
    }

    /// The first line this rule matches, as its finding.
    fn first_in(&self, segments: &[Segment<'_>]) -> Option<Finding> {
        let seg = segments.iter().find(|seg| self.matches(seg))?;
        Some(self.finding(seg))
    }
}

/// Each rule's finding at the first line it matches, in the rules' order.
pub(super) fn find_each(rules: &[Rule], segments: &[Segment<'_>]) -> Vec<Finding> {
    rules
        .iter()
        .filter_map(|rule| rule.first_in(segments))
        .collect()
}

/// The first rule, in the table's order, that matches any line: for tables whose rules rank
/// (a cause named anywhere in the log outranks the rules after it).
pub(super) fn first_rule(rules: &[Rule], segments: &[Segment<'_>]) -> Option<Finding> {
    rules.iter().find_map(|rule| rule.first_in(segments))
}

/// The first rule that matches this one line: for tables read line by line, where a line says
/// one thing.
pub(super) fn first_on_line(rules: &[Rule], seg: &Segment<'_>) -> Option<Finding> {
    rules
        .iter()
        .find(|rule| rule.matches(seg))
        .map(|rule| rule.finding(seg))
}

/// What the rest of the log must hold for a rule to be read on a line: for each group in `has`,
/// some line holds one of its words; no line holds any word of `lacks`. The runtimes' rules use
/// it where a line means one thing in one log and another elsewhere (XLA's "DNN library
/// initialization failed" only while no line above names the cause).
pub(super) struct InLog {
    pub has: &'static [&'static [&'static str]],
    pub lacks: &'static [&'static str],
}

impl InLog {
    /// No condition on the rest of the log.
    pub const ANY: InLog = InLog {
        has: &[],
        lacks: &[],
    };

    fn allows(&self, segments: &[Segment<'_>]) -> bool {
        let held = |words: &[&str]| {
            segments
                .iter()
                .any(|seg| words.iter().any(|w| seg.lower.contains(w)))
        };
        self.has.iter().all(|group| held(group)) && !held(self.lacks)
    }
}

/// A rule read only where the log allows it.
pub(super) struct Gated {
    pub log: InLog,
    pub rule: Rule,
}

/// Which of `rules` the log allows, in the table's order: computed once per log.
pub(super) fn read_where_allowed(rules: &[Gated], segments: &[Segment<'_>]) -> Vec<bool> {
    rules.iter().map(|g| g.log.allows(segments)).collect()
}

/// The first rule the log allows (`allowed`, from [`read_where_allowed`]) that matches this
/// one line.
pub(super) fn first_allowed_on_line(
    rules: &[Gated],
    allowed: &[bool],
    seg: &Segment<'_>,
) -> Option<Finding> {
    rules
        .iter()
        .zip(allowed)
        .find(|(g, allowed)| **allowed && g.rule.matches(seg))
        .map(|(g, _)| g.rule.finding(seg))
}

/// Each rule the log allows, at the first line it matches.
pub(super) fn first_allowed_in_log(rules: &[Gated], segments: &[Segment<'_>]) -> Vec<Finding> {
    rules
        .iter()
        .filter(|g| g.log.allows(segments))
        .filter_map(|g| g.rule.first_in(segments))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{compile, kernel_log, messages, runtimes, tensorrt, video, windows};

    #[test]
    fn rule_patterns_are_lowercase() {
        let tables = [
            messages::RULES,
            windows::RULES,
            kernel_log::ANY_LINE,
            kernel_log::NVRM_LINE,
            compile::RANKED,
            video::RULES,
            tensorrt::RULES,
        ];
        let gated = runtimes::RULES
            .iter()
            .chain(runtimes::IN_DOCKER_BUILD)
            .map(|g| &g.rule);
        for rule in tables.into_iter().flatten().chain(gated) {
            for p in rule.patterns {
                assert_eq!(*p, p.to_lowercase(), "{}: {p}", rule.id);
            }
        }
    }
}
