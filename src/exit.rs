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
    fn codes_follow_the_readme_table() {
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Problem.code(), 1);
        assert_eq!(Exit::Input.code(), 2);
        assert_eq!(Exit::External.code(), 3);
    }
}
