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

/// Where a command can write instead of a full disk, for [`full_disk_advice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::cli) enum Elsewhere {
    /// `-o FILE` (bundle).
    Output,
    /// `--archive DIR` (fetch, unbundle, up).
    Archive,
    /// Nothing to point elsewhere: only freeing space helps.
    Nowhere,
}

/// What to do when a write ran out of space: free space on that disk, or write elsewhere.
pub(in crate::cli) fn full_disk_advice(elsewhere: Elsewhere) -> String {
    let elsewhere = match elsewhere {
        Elsewhere::Output => {
            ", or write the bundle to a disk with room (`-o /path/on/another/disk/stack.zip`)"
        }
        Elsewhere::Archive => {
            ", or keep the archive on a disk with room (`--archive /path/on/another/disk`)"
        }
        Elsewhere::Nowhere => "",
    };
    let shows = if cfg!(windows) {
        "`Get-PSDrive -PSProvider FileSystem`"
    } else {
        "`df -h`"
    };
    format!(
        "the disk is full: free space on the disk that holds the file named above ({shows} \
         shows what is left){elsewhere}, then run the same command again"
    )
}

/// [`full_disk_advice`] for a failure whose chain holds a full disk; `None` for any other
/// failure, or when the error already names its fix.
pub(super) fn full_disk_fix(failure: &super::Failure, command: &super::Command) -> Option<String> {
    if failure.fix.is_some() || !crate::fsutil::disk_full_in_chain(failure.error.as_ref()) {
        return None;
    }
    Some(full_disk_advice(match command {
        super::Command::Bundle(_) => Elsewhere::Output,
        super::Command::Fetch(_) | super::Command::Unbundle(_) | super::Command::Up(_) => {
            Elsewhere::Archive
        }
        _ => Elsewhere::Nowhere,
    }))
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
