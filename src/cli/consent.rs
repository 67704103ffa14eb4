//! Consent before anything is installed: `install`, `repair` and `up` need `--yes` or a "yes"
//! typed at a terminal.
//!
//! The rule is checked up front, before any download or installer runs: without `--yes` and
//! without a terminal to ask on (a pipe, CI, Ansible, `--json`), the command refuses with exit 2
//! and says to add `--yes`. The question itself is asked later by the caller, where it can name
//! what would be installed. What to install and how is left to the commands.

use std::io::{BufRead, IsTerminal, Write};

use super::Failure;

/// Errors of the consent rule; all are usage errors (exit 2) with nothing run.
#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    /// No `--yes` and nobody to ask.
    #[error(
        "`stackpin {command}` installs software and needs consent, but {why}: nothing was run; add --yes to go ahead without a question"
    )]
    NoOneToAsk { command: String, why: &'static str },
    /// Asked at the terminal, and the answer was not yes.
    #[error("not confirmed; nothing was {done}")]
    Declined { done: &'static str },
}

/// Consent that was given up front (`--yes`), or may still be asked for at a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Consent {
    /// `--yes` (or a dry run): ask nothing.
    Given,
    /// stdin is a terminal and `--json` is off: ask before the first installer.
    Ask,
}

// Without consent nothing runs: the user's answer (or its absence) is the input.
impl crate::exit::ExitStatus for ConsentError {
    fn exit(&self) -> super::Exit {
        super::Exit::Input
    }
}

/// Whether this run may install: `--yes`, or a terminal on stdin (and no `--json`) to ask on.
/// Refuses (exit 2) otherwise, before anything has run.
pub fn require_consent(command: &str, yes: bool, json: bool) -> Result<Consent, Failure> {
    decide(command, yes, json, std::io::stdin().is_terminal()).map_err(Failure::from)
}

fn decide(command: &str, yes: bool, json: bool, terminal: bool) -> Result<Consent, ConsentError> {
    if yes {
        return Ok(Consent::Given);
    }
    let why = if json {
        "--json asks no questions"
    } else if !terminal {
        "stdin is not a terminal to ask on"
    } else {
        return Ok(Consent::Ask);
    };
    Err(ConsentError::NoOneToAsk {
        command: command.to_string(),
        why,
    })
}

impl Consent {
    /// Asks `question [y/N]` on stderr when consent was not given up front; `done` completes
    /// "nothing was …" in the refusal (installed, reinstalled).
    pub fn confirm(self, question: &str, done: &'static str) -> Result<(), Failure> {
        if self == Consent::Given {
            return Ok(());
        }
        eprint!("{question} [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if is_yes(&answer) {
            Ok(())
        } else {
            Err(ConsentError::Declined { done }.into())
        }
    }
}

fn is_yes(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_flag_is_consent_even_without_a_terminal_or_with_json() {
        assert_eq!(
            decide("install", true, true, false).ok(),
            Some(Consent::Given)
        );
        assert_eq!(decide("up", true, false, false).ok(), Some(Consent::Given));
    }

    #[test]
    fn a_terminal_without_yes_means_asking() {
        assert_eq!(
            decide("repair", false, false, true).ok(),
            Some(Consent::Ask)
        );
    }

    #[test]
    fn no_terminal_and_no_yes_refuses_and_names_the_flag() {
        let err = decide("install", false, false, false).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("add --yes"), "{text}");
        assert!(text.contains("stdin is not a terminal"), "{text}");
        assert!(text.contains("nothing was run"), "{text}");
    }

    #[test]
    fn json_without_yes_refuses_even_at_a_terminal() {
        let err = decide("up", false, true, true).expect_err("refused");
        assert!(
            err.to_string().contains("--json asks no questions"),
            "{err}"
        );
    }

    #[test]
    fn only_y_or_yes_confirms() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES \r\n"));
        assert!(!is_yes(""));
        assert!(!is_yes("n"));
        assert!(!is_yes("yes please"));
    }
}
