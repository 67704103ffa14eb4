//! The placeholder vocabulary of a manifest's commands: every `{name}` a `run:`, `verify:` or
//! `example.run` argument may use, which command may use which, and where each value comes
//! from. `check` validates against it, install plans with it, the layer proofs and prove
//! substitute from it (through [`crate::exec::step::substitute`], which only knows a map).
//!
//! Adding a placeholder: a [`Placeholder`] variant and its name, the commands that may use it
//! in [`Command::allowed`], and its value (here when the manifest or the stack folder defines
//! it, else where the caller knows it, as prove does for `{batch}` and `{examples}`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Layer, Manifest};
use crate::exec::step::{RunnerError, substitute};
use crate::os::Os;

/// One `{name}` a manifest command may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Placeholder {
    /// The archived, verified installer file this command runs.
    Installer,
    /// The toolkit's root folder (`toolkit.root`).
    Root,
    /// The stack's folder of this layer's archived files.
    Files,
    /// The stack's name.
    Name,
    /// The library's interpreter: the venv's for pip libraries ([`library_python`]).
    Python,
    /// The library's virtual environment (`library.venv`), when it has one.
    Venv,
    /// The folder the bundled examples are written to (prove only).
    Examples,
    /// The batch size the example runs at (prove only).
    Batch,
}

impl Placeholder {
    /// The name between the braces.
    pub fn name(self) -> &'static str {
        match self {
            Placeholder::Installer => "installer",
            Placeholder::Root => "root",
            Placeholder::Files => "files",
            Placeholder::Name => "name",
            Placeholder::Python => "python",
            Placeholder::Venv => "venv",
            Placeholder::Examples => "examples",
            Placeholder::Batch => "batch",
        }
    }

    /// As it is written in a command: `{installer}`.
    pub fn token(self) -> String {
        format!("{{{}}}", self.name())
    }
}

/// The kinds of manifest command; each may use its own set of placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `driver.run` and `toolkit.run`: an installer of an archived file.
    LayerRun,
    /// `library.run` (a library with `installers:`): as a layer, plus the interpreter and venv.
    LibraryRun,
    /// `example.run`: prove's example, with its batch and the bundled examples' folder.
    Example,
    /// A layer's `verify:`: only what the manifest alone defines, so a proof needs no archive.
    Verify,
}

impl Command {
    /// The placeholders this command may use, in the order `check` lists them.
    pub fn allowed(self) -> &'static [Placeholder] {
        use Placeholder::*;
        match self {
            Command::LayerRun => &[Installer, Root, Files, Name],
            Command::LibraryRun => &[Installer, Root, Files, Name, Python, Venv],
            Command::Example => &[Python, Examples, Batch, Root, Files, Name, Venv],
            Command::Verify => &[Root, Python, Venv, Name],
        }
    }

    /// Whether `name` (between the braces) is one this command may use.
    pub fn allows(self, name: &str) -> bool {
        self.allowed().iter().any(|p| p.name() == name)
    }
}

/// The `{…}` names in one argument; an unclosed `{` yields the rest (so `check` reports it).
pub fn placeholders(arg: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = arg;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                found.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => {
                found.push(after);
                break;
            }
        }
    }
    found
}

/// The values one command's placeholders are substituted with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    values: BTreeMap<&'static str, String>,
}

impl Values {
    /// What the manifest alone defines (no archive needed): `{root}`, `{name}`, `{python}` and
    /// `{venv}` — all that a layer's `verify:` command may use.
    pub fn manifest(m: &Manifest) -> Values {
        let mut values = Values::default();
        values.set(Placeholder::Root, m.toolkit.root.clone());
        values.set(Placeholder::Name, m.name.clone());
        values.set(Placeholder::Python, library_python(m).display().to_string());
        if let Some(venv) = &m.library.venv {
            values.set(Placeholder::Venv, venv.clone());
        }
        values
    }

    /// A layer's commands in the stack folder `stack`: the manifest's values and `{files}`.
    /// `{installer}` is set per archived file by the plan.
    pub fn layer(m: &Manifest, stack: &Path, layer: Layer) -> Values {
        let mut values = Values::manifest(m);
        values.set(
            Placeholder::Files,
            stack.join(layer.as_str()).display().to_string(),
        );
        values
    }

    /// Sets (or replaces) one value.
    pub fn set(&mut self, placeholder: Placeholder, value: String) -> &mut Self {
        self.values.insert(placeholder.name(), value);
        self
    }

    /// The value of one placeholder, if it has one here.
    pub fn get(&self, placeholder: Placeholder) -> Option<&str> {
        self.values.get(placeholder.name()).map(String::as_str)
    }

    /// Substitutes these values into each argument; a placeholder without a value is an error.
    pub fn substitute(&self, argv: &[String]) -> Result<Vec<String>, RunnerError> {
        substitute(argv, &self.values)
    }
}

/// The interpreter inside a virtual environment.
pub fn venv_python(venv: &Path, os: Os) -> PathBuf {
    match os {
        Os::Linux => venv.join("bin").join("python"),
        Os::Windows => venv.join("Scripts").join("python.exe"),
    }
}

/// The interpreter a manifest's library runs with (`{python}`): the venv's for pip libraries.
pub fn library_python(m: &Manifest) -> PathBuf {
    match (&m.library.pip, &m.library.venv) {
        (Some(_), Some(venv)) => venv_python(Path::new(venv), m.os),
        _ => PathBuf::from(&m.library.python),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINUX: &str = include_str!("../../manifests/torch-2.5.1-cu124-linux.yaml");

    #[test]
    fn placeholders_are_found() {
        assert_eq!(placeholders("--toolkitpath={root}"), vec!["root"]);
        assert_eq!(placeholders("{a}{b}"), vec!["a", "b"]);
        assert_eq!(placeholders("{open"), vec!["open"]);
        assert!(placeholders("plain").is_empty());
    }

    #[test]
    fn a_verify_command_may_use_only_what_the_manifest_defines() {
        let m = crate::manifest::parse(LINUX, Path::new("m.yaml")).expect("parses");
        let values = Values::manifest(&m);
        for p in Command::Verify.allowed() {
            if *p != Placeholder::Venv || m.library.venv.is_some() {
                assert!(values.get(*p).is_some(), "{} has no value", p.token());
            }
        }
        assert_eq!(values.get(Placeholder::Files), None);
        assert!(!Command::Verify.allows("installer"));
        assert!(Command::Example.allows("batch"));
        assert!(!Command::LayerRun.allows("batch"));
    }

    #[test]
    fn a_layer_gets_its_own_files_folder() {
        let m = crate::manifest::parse(LINUX, Path::new("m.yaml")).expect("parses");
        let values = Values::layer(&m, Path::new("/a/stack"), Layer::Toolkit);
        let argv = vec!["{files}".to_string(), "--root={root}".to_string()];
        assert_eq!(
            values.substitute(&argv).expect("substitutes"),
            [
                Path::new("/a/stack").join("toolkit").display().to_string(),
                format!("--root={}", m.toolkit.root)
            ]
        );
    }
}
