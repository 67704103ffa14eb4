//! Whether the folder at a library's venv path is a venv stackpin made, before any of its
//! programs runs.
//!
//! stackpin runs as root, and a venv's interpreter runs whatever the venv holds at start-up (a
//! `.pth` line, a `sitecustomize.py`) or is itself a link to any program. So stackpin runs a
//! venv's interpreter only when the venv carries stackpin's marker, written right after
//! `install` created it, and its `python` still resolves to the interpreter the marker names;
//! it replaces (clears) only such a venv, and refuses any other folder at that path.
//!
//! Reads through [`System`]; writes only the marker.

use std::path::{Path, PathBuf};

use super::System;

/// The marker file inside a venv stackpin made.
pub const MARKER: &str = ".stackpin-venv";

/// What stands at a venv path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VenvState {
    /// Nothing, or an empty folder: a venv may be created there.
    Absent,
    /// A venv stackpin made, its interpreter unchanged since.
    Ours,
    /// Something else: not run, not replaced. The words say what and why.
    Foreign { why: String },
}

impl VenvState {
    /// True when the venv's interpreter may be run.
    pub fn trusted(&self) -> bool {
        matches!(self, VenvState::Ours)
    }
}

/// The venv folder that holds `python` (`VENV/bin/python`, `VENV\Scripts\python.exe`), when
/// `python` is a venv's interpreter.
pub fn venv_of(system: &dyn System, python: &Path) -> Option<PathBuf> {
    let venv = python.parent()?.parent()?;
    system
        .exists(&venv.join("pyvenv.cfg"))
        .then(|| venv.to_path_buf())
}

/// Reads what stands at `venv`, whose interpreter is `python`.
pub fn state(system: &dyn System, venv: &Path, python: &Path) -> VenvState {
    if !system.exists(venv) {
        return VenvState::Absent;
    }
    if !system.is_dir(venv) {
        return VenvState::Foreign {
            why: format!("{} is not a folder", venv.display()),
        };
    }
    match system.read_dir(venv) {
        Ok(entries) if entries.is_empty() => return VenvState::Absent,
        Ok(_) => {}
        Err(e) => {
            return VenvState::Foreign {
                why: format!("{} cannot be read: {e}", venv.display()),
            };
        }
    }
    let marker = venv.join(MARKER);
    if system.read_link(&marker).is_ok() {
        return VenvState::Foreign {
            why: format!("{} is a symbolic link", marker.display()),
        };
    }
    let Ok(text) = system.read_to_string(&marker) else {
        return VenvState::Foreign {
            why: format!(
                "{} was not made by stackpin (it has no {MARKER})",
                venv.display()
            ),
        };
    };
    let recorded = text
        .lines()
        .find_map(|l| l.strip_prefix("interpreter: "))
        .map(str::trim);
    let now = system.canonicalize(python).ok();
    match (recorded, now) {
        (Some(recorded), Some(now)) if Path::new(recorded) == now => VenvState::Ours,
        (_, None) => VenvState::Foreign {
            why: format!("{} does not resolve to a program", python.display()),
        },
        (recorded, Some(now)) => VenvState::Foreign {
            why: format!(
                "{} now resolves to {}, not to the interpreter stackpin made the venv with ({})",
                python.display(),
                now.display(),
                recorded.unwrap_or("none recorded")
            ),
        },
    }
}

/// Writes the marker into a venv `install` has just created: `python`'s resolved path, which
/// [`state`] compares with what `python` resolves to later.
pub fn mark(venv: &Path, python: &Path, stack: &str) -> std::io::Result<()> {
    let interpreter = std::fs::canonicalize(python)?;
    let text = format!(
        "# made by `stackpin install` for the stack {stack}; stackpin runs and replaces only venvs with this file\ninterpreter: {}\n",
        interpreter.display()
    );
    crate::fsutil::write_atomic(&venv.join(MARKER), text.as_bytes())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::host::RealSystem;

    fn venv_with_python(dir: &Path) -> PathBuf {
        let venv = dir.join("venv");
        std::fs::create_dir_all(venv.join("bin")).expect("bin");
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").expect("cfg");
        std::fs::write(dir.join("python3"), "#!/bin/sh\n").expect("interpreter");
        std::os::unix::fs::symlink(dir.join("python3"), venv.join("bin/python")).expect("link");
        venv
    }

    #[test]
    fn a_venv_without_the_marker_is_foreign_and_an_empty_folder_is_absent() {
        let dir = tempfile::tempdir().expect("tmp");
        let venv = venv_with_python(dir.path());
        let python = venv.join("bin/python");
        let seen = state(&RealSystem, &venv, &python);
        assert!(
            matches!(&seen, VenvState::Foreign { why } if why.contains("not made by stackpin")),
            "{seen:?}"
        );
        assert_eq!(venv_of(&RealSystem, &python), Some(venv.clone()));
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).expect("empty");
        assert_eq!(
            state(&RealSystem, &empty, &empty.join("bin/python")),
            VenvState::Absent
        );
        assert_eq!(
            state(&RealSystem, &dir.path().join("none"), &python),
            VenvState::Absent
        );
    }

    #[test]
    fn a_marked_venv_is_ours_until_its_python_is_relinked() {
        let dir = tempfile::tempdir().expect("tmp");
        let venv = venv_with_python(dir.path());
        let python = venv.join("bin/python");
        mark(&venv, &python, "s").expect("mark");
        assert_eq!(state(&RealSystem, &venv, &python), VenvState::Ours);
        std::fs::write(dir.path().join("evil.sh"), "#!/bin/sh\n").expect("script");
        std::fs::remove_file(&python).expect("unlink");
        std::os::unix::fs::symlink(dir.path().join("evil.sh"), &python).expect("relink");
        let seen = state(&RealSystem, &venv, &python);
        assert!(
            matches!(&seen, VenvState::Foreign { why } if why.contains("evil.sh")),
            "{seen:?}"
        );
    }
}
