//! Exit statuses and the trait for errors that know theirs: each module's error enum implements
//! [`ExitStatus`] beside itself, naming the row of README's exit-code table it belongs to, so `?`
//! carries the code to the command line's edge instead of each call site picking one by hand.
//!
//! This module prints nothing; `cli` turns an [`Exit`] into the process's status and the JSON
//! document's `exit_code`.

/// Exit statuses shared by every command (README, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Exit {
    /// Everything checked out.
    Ok = 0,
    /// The tool ran fine and found a problem: drift, a corrupt file, incompatible pins.
    Problem = 1,
    /// The user's input could not be used: bad flags, unreadable or invalid files.
    Input = 2,
    /// Something outside stackpin failed: a download, an installer, the example.
    External = 3,
}

impl Exit {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// A report's status: 0 when everything checked out, 1 when the check found a problem.
    pub fn verdict(ok: bool) -> Exit {
        if ok { Exit::Ok } else { Exit::Problem }
    }

    /// The status of several failures together: input that could not be used outranks a problem
    /// found, which outranks a step outside stackpin that failed; none at all is 0.
    pub fn worst(exits: impl IntoIterator<Item = Exit>) -> Exit {
        let rank = |e: &Exit| match e {
            Exit::Ok => 0,
            Exit::External => 1,
            Exit::Problem => 2,
            Exit::Input => 3,
        };
        exits.into_iter().max_by_key(rank).unwrap_or(Exit::Ok)
    }

    /// What a failing status means, for a run that chose it beside its report.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "ok",
            Exit::Problem => "a check found a problem; the JSON document says which",
            Exit::Input => "the input could not be used; the JSON document says which",
            Exit::External => "an external step failed; the JSON document says which",
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

/// An error that knows its exit status, and where it can, the layer it points at and the fix.
pub trait ExitStatus: std::error::Error {
    /// The row of the exit-code table this error belongs to.
    fn exit(&self) -> Exit;
    /// The stack layer (`driver`, `toolkit`, `library`, `example`) the failure points at.
    fn layer(&self) -> Option<String> {
        None
    }
    /// What to do next, when the error knows it apart from its message.
    fn fix(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_failures_end_on_the_one_to_act_on_first() {
        assert_eq!(Exit::worst([]), Exit::Ok);
        assert_eq!(Exit::worst([Exit::External, Exit::Problem]), Exit::Problem);
        assert_eq!(Exit::worst([Exit::Problem, Exit::Input]), Exit::Input);
        assert_eq!(Exit::verdict(false), Exit::Problem);
        assert_eq!(Exit::verdict(true), Exit::Ok);
    }

    #[test]
    fn codes_follow_the_readme_table() {
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Problem.code(), 1);
        assert_eq!(Exit::Input.code(), 2);
        assert_eq!(Exit::External.code(), 3);
    }
}
