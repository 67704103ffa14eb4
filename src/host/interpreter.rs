//! The Python interpreter's own version, as `{python} --version` prints it (`Python 3.11.7`).
//! Python 2 printed it on stderr, so both pipes are read. Deciding whether the version fits a
//! manifest is left to `pin`, `plan` and `install`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::System;
use crate::version::Version;

/// `python --version` answers at once; a hang means a broken interpreter or wrapper.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the interpreter's version is unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpreterError {
    #[error("`{program}` is not on PATH")]
    NotFound { program: String },
    #[error("`{} --version` could not run: {detail}", path.display())]
    Failed { path: PathBuf, detail: String },
    #[error("`{} --version` printed no Python version: `{output}`", path.display())]
    Unreadable { path: PathBuf, output: String },
}

/// The version of `python` (a path, or a program name looked up on PATH).
pub fn version(system: &dyn System, python: &str) -> Result<Version, InterpreterError> {
    let path = if Path::new(python).components().count() > 1 {
        PathBuf::from(python)
    } else {
        system
            .which(python)
            .ok_or_else(|| InterpreterError::NotFound {
                program: python.to_string(),
            })?
    };
    let out = system
        .run(&path, &["--version".to_string()], VERSION_TIMEOUT)
        .map_err(|e| InterpreterError::Failed {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    let text = out.combined();
    parse_version(&text).ok_or_else(|| InterpreterError::Unreadable {
        path,
        output: text.trim().chars().take(200).collect(),
    })
}

/// The version in `Python 3.11.7` (a pre-release tail such as `3.13.0rc1` is dropped).
pub fn parse_version(text: &str) -> Option<Version> {
    let rest = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Python "))?;
    let numeric: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Version::parse(numeric.trim_end_matches('.')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;
    use crate::os::Os;

    #[test]
    fn reads_the_version_from_either_pipe_and_drops_a_prerelease_tail() {
        assert_eq!(
            parse_version("Python 3.11.7\n").map(|v| v.to_string()),
            Some("3.11.7".into())
        );
        assert_eq!(
            parse_version("Python 3.13.0rc1").map(|v| v.to_string()),
            Some("3.13.0".into())
        );
        assert_eq!(parse_version("bash: python3: command not found"), None);
    }

    #[test]
    fn a_missing_interpreter_is_named() {
        let system = FakeSystem::new(Os::Linux);
        assert_eq!(
            version(&system, "python3"),
            Err(InterpreterError::NotFound {
                program: "python3".into()
            })
        );
    }
}
