//! The shape most message families share: patterns (the catalogue's `*` syntax) on one line, or
//! a judge for what a pattern cannot say (a list judged by what it holds and lacks), and the
//! finding that line makes. `messages` and `windows` keep their rules in this shape.

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

impl Rule {
    fn matches(&self, seg: &Segment<'_>) -> bool {
        self.patterns.iter().any(|p| pattern_matches(p, &seg.lower))
            || self.judge.is_some_and(|judge| judge(&seg.lower))
    }
}

/// Each rule's finding at the first line it matches, in the rules' order.
pub(super) fn find_each(rules: &[Rule], segments: &[Segment<'_>]) -> Vec<Finding> {
    rules
        .iter()
        .filter_map(|rule| {
            let seg = segments.iter().find(|seg| rule.matches(seg))?;
            Some(at(
                seg,
                rule.id,
                rule.layer,
                rule.second,
                rule.cause,
                rule.fix,
                rule.mechanism,
                rule.decisive,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{messages, windows};

    #[test]
    fn rule_patterns_are_lowercase() {
        for rule in messages::RULES.iter().chain(windows::RULES) {
            for p in rule.patterns {
                assert_eq!(*p, p.to_lowercase(), "{}: {p}", rule.id);
            }
        }
    }
}
