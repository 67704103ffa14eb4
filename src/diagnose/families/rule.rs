//! The shape most message families share: patterns (the catalogue's `*` syntax) on one line, or
//! a judge for what a pattern cannot say (a list judged by what it holds and lacks), and the
//! finding that line makes. `messages`, `windows`, `kernel_log` and `compile` keep their rules in
//! this shape; they differ only in how a table is read (every rule, or the first that matches).

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

#[cfg(test)]
mod tests {
    use super::super::{compile, kernel_log, messages, tensorrt, video, windows};

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
        for rule in tables.into_iter().flatten() {
            for p in rule.patterns {
                assert_eq!(*p, p.to_lowercase(), "{}: {p}", rule.id);
            }
        }
    }
}
