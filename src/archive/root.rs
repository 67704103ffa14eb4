//! The archive itself: the folder every stack lives under (`--archive`, `STACKPIN_ARCHIVE`, or
//! the per-machine default). Commands open it once and ask it for one stack or every stack, so
//! no command lists the folder or joins a stack's path by hand.

use std::path::{Path, PathBuf};

use super::{ArchiveError, StackDir};

/// The files stackpin writes into a stack's folder; a folder holding any of them is a stack.
const STACK_MARKERS: [&str; 4] = [
    "stack.lock",
    "manifest.yaml",
    "state.yaml",
    "proven-stack.yaml",
];

/// The installer archive: `<archive>/<stack>/…`.
#[derive(Debug, Clone)]
pub struct Archive {
    root: PathBuf,
}

impl Archive {
    /// The archive folder that must already be there (every command that reads the archive): a
    /// missing one is a mistyped `--archive`, the user's input, never "no stacks".
    pub fn open(root: impl Into<PathBuf>) -> Result<Archive, ArchiveError> {
        let root = root.into();
        match std::fs::metadata(&root) {
            Ok(meta) if meta.is_dir() => Ok(Archive { root }),
            Ok(_) => Err(ArchiveError::NoArchive { dir: root }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(ArchiveError::NoArchive { dir: root })
            }
            Err(e) => Err(ArchiveError::io("reading", root, e)),
        }
    }

    /// The archive folder whether it exists yet or not (fetch and unbundle create it).
    pub fn at(root: impl Into<PathBuf>) -> Archive {
        Archive { root: root.into() }
    }

    /// The archive folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The stack called `name`, there or not.
    pub fn stack(&self, name: &str) -> StackDir {
        StackDir::new(&self.root, name)
    }

    /// Every stack under the archive: each folder holding something stackpin writes (a lock, a
    /// manifest, an install state, a proven record), sorted by name.
    pub fn stacks(&self) -> Result<Vec<StackDir>, ArchiveError> {
        let entries = std::fs::read_dir(&self.root).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ArchiveError::NoArchive {
                    dir: self.root.clone(),
                }
            } else {
                ArchiveError::io("reading", self.root.clone(), e)
            }
        })?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| STACK_MARKERS.iter().any(|m| p.join(m).is_file()))
            .collect();
        dirs.sort();
        Ok(dirs.into_iter().map(StackDir::at).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::{Exit, ExitStatus};

    #[test]
    fn a_missing_archive_is_the_users_input_and_an_empty_one_has_no_stacks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Archive::open(dir.path().join("instalers")).expect_err("missing");
        assert_eq!(err.exit(), Exit::Input);
        assert!(err.to_string().contains("instalers"), "{err}");
        let archive = Archive::open(dir.path()).expect("there");
        assert!(archive.stacks().expect("listed").is_empty());
    }

    #[test]
    fn every_folder_stackpin_wrote_into_is_a_stack_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, marker) in [
            ("b", "manifest.yaml"),
            ("a", "stack.lock"),
            ("c", "state.yaml"),
            ("d", "proven-stack.yaml"),
        ] {
            std::fs::create_dir(dir.path().join(name)).expect("dir");
            std::fs::write(dir.path().join(name).join(marker), "x").expect("marker");
        }
        std::fs::create_dir(dir.path().join("downloads")).expect("stray dir");
        std::fs::write(dir.path().join("notes.txt"), "x").expect("stray file");
        let archive = Archive::open(dir.path()).expect("there");
        let names: Vec<String> = archive
            .stacks()
            .expect("listed")
            .iter()
            .map(StackDir::name)
            .collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(archive.stack("a").root(), dir.path().join("a"));
    }
}
