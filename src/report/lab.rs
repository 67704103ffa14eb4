//! The lab's judgement, as plain functions: one state word per host and stack from the dates of
//! what was recorded, and the hosts × stacks matrix ordered so the machines that need a person
//! come first.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde::Serialize;

use super::StackReport;
use crate::doctor::seen::LastSeen;
use crate::status::Stage;

/// One host's standing on one stack. The order is the urgency: a failed stack first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabState {
    /// A layer's installer or the example failed (or a step was cut off) after the last proof.
    Failed,
    /// Doctor saw the host differ from the proof after it was made (a swapped driver…).
    Drifted,
    /// An archived file is not what was locked or pinned, or is missing from a fetched stack.
    Untrusted,
    /// Fetched or partly installed, not proven yet (a reboot may be pending).
    InProgress,
    /// Nothing fetched, installed or proven on this host.
    NeverTried,
    /// Proven, and nothing seen since says otherwise.
    Proven,
}

impl LabState {
    /// Whether a person has to look at it.
    pub fn needs_person(self) -> bool {
        matches!(
            self,
            LabState::Failed | LabState::Drifted | LabState::Untrusted
        )
    }

    /// The word people see.
    pub fn word(self) -> &'static str {
        match self {
            LabState::Failed => "failed",
            LabState::Drifted => "drifted",
            LabState::Untrusted => "untrusted",
            LabState::InProgress => "in progress",
            LabState::NeverTried => "never tried",
            LabState::Proven => "proven",
        }
    }
}

/// What was recorded about one stack, as the state decision needs it.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub stage: Stage,
    /// Whether every archived file is verified; `None` when not hashed (or nothing fetched).
    pub audit_ok: Option<bool>,
    pub proven_at: Option<&'a str>,
    pub doctor: Option<&'a LastSeen>,
    pub failed_at: Option<&'a str>,
    /// The newest time in `state.yaml`.
    pub state_at: Option<&'a str>,
}

/// Orders two record times: RFC 3339 parsed, text order when either does not parse.
pub fn time_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<jiff::Timestamp>(), b.parse::<jiff::Timestamp>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// Whether `later` is at or after `than` (a missing `than` is always earlier).
fn since(later: &str, than: Option<&str>) -> bool {
    than.is_none_or(|t| time_order(later, t) != Ordering::Less)
}

/// The state of one stack and the date of the record that decided it. A failure or a doctor
/// verdict older than the newest proof is history: a repair proved the stack again since.
pub fn lab_state(seen: &Seen<'_>) -> (LabState, Option<String>) {
    let own = |t: Option<&str>| t.map(String::from);
    if matches!(seen.stage, Stage::Failed | Stage::Interrupted) {
        return (LabState::Failed, own(seen.state_at.or(seen.failed_at)));
    }
    if let Some(failed) = seen.failed_at
        && since(failed, seen.proven_at)
    {
        return (LabState::Failed, own(Some(failed)));
    }
    if let (Some(doctor), Some(proven)) = (seen.doctor, seen.proven_at)
        && !doctor.ok
        && since(&doctor.seen_at, Some(proven))
    {
        return (LabState::Drifted, own(Some(&doctor.seen_at)));
    }
    if seen.audit_ok == Some(false) {
        return (LabState::Untrusted, own(seen.proven_at.or(seen.state_at)));
    }
    match seen.stage {
        Stage::Proven => (LabState::Proven, own(seen.proven_at)),
        Stage::Empty => (LabState::NeverTried, None),
        _ => (LabState::InProgress, own(seen.state_at)),
    }
}

/// One cell of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub stack: String,
    pub state: LabState,
    pub date: Option<String>,
}

/// One host's row: a cell per stack of the lab, in column order.
#[derive(Debug, Clone, Serialize)]
pub struct HostRow {
    pub host: String,
    /// The most urgent state in the row.
    pub worst: LabState,
    pub needs_person: bool,
    pub cells: Vec<Cell>,
}

/// The columns (every stack name, sorted), the rows (the most urgent host first, then by
/// name) and the reports in that order; a host without a stack gets "never tried" cells.
pub fn matrix(mut reports: Vec<StackReport>) -> (Vec<String>, Vec<HostRow>, Vec<StackReport>) {
    let stacks: Vec<String> = reports
        .iter()
        .filter(|r| !r.stack.is_empty())
        .map(|r| r.stack.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let hosts: BTreeSet<String> = reports.iter().map(|r| r.host.clone()).collect();
    let mut rows: Vec<HostRow> = hosts
        .into_iter()
        .map(|host| {
            let cells: Vec<Cell> = stacks
                .iter()
                .map(|stack| {
                    let found = reports.iter().find(|r| r.host == host && &r.stack == stack);
                    Cell {
                        stack: stack.clone(),
                        state: found.map_or(LabState::NeverTried, |r| r.state),
                        date: found.and_then(|r| r.date.clone()),
                    }
                })
                .collect();
            let worst = cells
                .iter()
                .map(|c| c.state)
                .min()
                .unwrap_or(LabState::NeverTried);
            HostRow {
                host,
                worst,
                needs_person: worst.needs_person(),
                cells,
            }
        })
        .collect();
    rows.sort_by(|a, b| a.worst.cmp(&b.worst).then_with(|| a.host.cmp(&b.host)));
    let rank = |host: &str| rows.iter().position(|r| r.host == host);
    reports.retain(|r| !r.stack.is_empty());
    reports.sort_by(|a, b| {
        rank(&a.host)
            .cmp(&rank(&b.host))
            .then_with(|| a.state.cmp(&b.state))
            .then_with(|| a.stack.cmp(&b.stack))
    });
    (stacks, rows, reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROVEN: &str = "2026-03-01T10:00:00Z";
    const BEFORE: &str = "2026-02-01T10:00:00.5Z";
    const AFTER: &str = "2026-03-02T10:00:00Z";

    fn doctor(ok: bool, at: &str) -> LastSeen {
        LastSeen {
            seen_at: at.to_string(),
            ok,
            drift: Vec::new(),
            failed: Vec::new(),
        }
    }

    fn seen<'a>(stage: Stage, proven_at: Option<&'a str>) -> Seen<'a> {
        Seen {
            stage,
            audit_ok: Some(true),
            proven_at,
            doctor: None,
            failed_at: None,
            state_at: None,
        }
    }

    #[test]
    fn the_state_comes_from_what_was_recorded_last() {
        let drifted_after = doctor(false, AFTER);
        let drifted_before = doctor(false, BEFORE);
        let clean_after = doctor(true, AFTER);
        let proven = seen(Stage::Proven, Some(PROVEN));
        // (what was recorded, state, date): doctor's failing look after the proof is drift, one
        // before it is history; a failed run after the proof fails it, one before does not; a
        // bad file outranks a proof; nothing at all was never tried.
        let table: Vec<(Seen, LabState, Option<&str>)> = vec![
            (proven, LabState::Proven, Some(PROVEN)),
            (
                Seen {
                    doctor: Some(&drifted_after),
                    ..proven
                },
                LabState::Drifted,
                Some(AFTER),
            ),
            (
                Seen {
                    doctor: Some(&drifted_before),
                    ..proven
                },
                LabState::Proven,
                Some(PROVEN),
            ),
            (
                Seen {
                    doctor: Some(&clean_after),
                    ..proven
                },
                LabState::Proven,
                Some(PROVEN),
            ),
            (
                Seen {
                    failed_at: Some(AFTER),
                    ..proven
                },
                LabState::Failed,
                Some(AFTER),
            ),
            (
                Seen {
                    failed_at: Some(BEFORE),
                    ..proven
                },
                LabState::Proven,
                Some(PROVEN),
            ),
            (
                Seen {
                    audit_ok: Some(false),
                    ..proven
                },
                LabState::Untrusted,
                Some(PROVEN),
            ),
            (
                Seen {
                    state_at: Some(BEFORE),
                    ..seen(Stage::Failed, None)
                },
                LabState::Failed,
                Some(BEFORE),
            ),
            (
                Seen {
                    state_at: Some(BEFORE),
                    ..seen(Stage::RebootPending, None)
                },
                LabState::InProgress,
                Some(BEFORE),
            ),
            (seen(Stage::Empty, None), LabState::NeverTried, None),
        ];
        for (i, (s, want, date)) in table.iter().enumerate() {
            let (state, when) = lab_state(s);
            assert_eq!(state, *want, "row {i}");
            assert_eq!(when.as_deref(), *date, "row {i}");
        }
    }

    #[test]
    fn record_times_compare_as_times_not_text() {
        assert_eq!(
            time_order("2026-03-01T10:00:00.5Z", "2026-03-01T10:00:00.45Z"),
            Ordering::Greater
        );
    }

    #[test]
    fn the_hosts_that_need_a_person_come_first_and_gaps_are_never_tried() {
        let report = |host: &str, stack: &str, state| StackReport {
            state,
            stack: stack.to_string(),
            ..StackReport::nothing_on(host)
        };
        let (stacks, rows, reports) = matrix(vec![
            report("alpha", "a", LabState::Proven),
            report("beta", "a", LabState::Proven),
            report("beta", "b", LabState::Drifted),
            report("gamma", "", LabState::NeverTried),
        ]);
        assert_eq!(stacks, ["a", "b"]);
        let order: Vec<(&str, LabState)> =
            rows.iter().map(|r| (r.host.as_str(), r.worst)).collect();
        assert_eq!(
            order,
            [
                ("beta", LabState::Drifted),
                ("alpha", LabState::NeverTried),
                ("gamma", LabState::NeverTried),
            ]
        );
        assert!(rows[0].needs_person && !rows[1].needs_person);
        assert_eq!(
            rows[1].cells[1].state,
            LabState::NeverTried,
            "alpha never tried b"
        );
        let first: Vec<(&str, &str)> = reports
            .iter()
            .map(|r| (r.host.as_str(), r.stack.as_str()))
            .collect();
        assert_eq!(first, [("beta", "b"), ("beta", "a"), ("alpha", "a")]);
    }
}
