//! The command line's own errors: flags that cannot be used, a file the user named that cannot
//! be read, a command that refuses after a finding, a step outside stackpin that failed. Each
//! kind knows its exit status ([`ExitStatus`]), so a command returns it with `?` and never picks
//! a code by hand.

use crate::exit::{Exit, ExitStatus};

/// Why a command stopped, in the words of the command line (domain errors carry their own).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Flags or arguments that cannot be used as given.
    #[error("{0}")]
    Usage(String),
    /// Input the user named (a file, a flag's value) that could not be used, in its own words.
    #[error(transparent)]
    Unusable(anyhow::Error),
    /// The command found a problem and does not go on (or ends on it).
    #[error("{0}")]
    Refused(String),
    /// A check found a problem, in the words of the error that says which.
    #[error(transparent)]
    Found(anyhow::Error),
    /// Something outside stackpin failed: a child program, a write, the example.
    #[error("{0}")]
    Failed(String),
    /// A step outside stackpin (a write, a child program) failed, in its own words.
    #[error(transparent)]
    Broke(anyhow::Error),
}

impl CliError {
    /// Input the user named that could not be used, with the error that says why.
    pub fn unusable(error: impl Into<anyhow::Error>) -> Self {
        CliError::Unusable(error.into())
    }

    /// A problem a check found, with the error that says which.
    pub fn found(error: impl Into<anyhow::Error>) -> Self {
        CliError::Found(error.into())
    }

    /// A step outside stackpin that failed, with the error that says why.
    pub fn broke(error: impl Into<anyhow::Error>) -> Self {
        CliError::Broke(error.into())
    }
}

impl ExitStatus for CliError {
    fn exit(&self) -> Exit {
        match self {
            CliError::Usage(_) | CliError::Unusable(_) => Exit::Input,
            CliError::Refused(_) | CliError::Found(_) => Exit::Problem,
            CliError::Failed(_) | CliError::Broke(_) => Exit::External,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_names_its_row() {
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(CliError::Usage("x".into()).exit(), Exit::Input);
        let unreadable = anyhow::Error::new(io()).context("reading x");
        assert_eq!(CliError::Unusable(unreadable).exit(), Exit::Input);
        assert_eq!(CliError::Refused("x".into()).exit(), Exit::Problem);
        assert_eq!(CliError::Failed("x".into()).exit(), Exit::External);
        let write = anyhow::Error::new(io()).context("writing x");
        assert_eq!(CliError::Broke(write).exit(), Exit::External);
    }
}
