//! pip libraries: runs `python -m pip download --only-binary=:all:` for the manifest's OS,
//! Python version and platform tags, so any machine can archive any stack's wheels.
//!
//! The interpreter is the fetch host's (pip only downloads here; it installs nothing). Hashing
//! the wheels and entering them in the lock is `fetch`'s job.

use crate::exec;
use std::path::Path;

use super::ArchiveError;
use crate::compat::Os;
use crate::version::Version;

/// What pip should download wheels for.
#[derive(Debug, Clone)]
pub struct PipTarget {
    pub os: Os,
    /// The target's Python, `X.Y`.
    pub python_version: Version,
    /// `None` for pip's default index.
    pub index_url: Option<String>,
    pub requirements: Vec<String>,
}

impl PipTarget {
    /// pip's `--platform` tags for the target OS (x86_64 only, like the drivers stackpin pins).
    pub fn platforms(&self) -> &'static [&'static str] {
        match self.os {
            // manylinux2014 is manylinux_2_17; later tags up to 2_28 cover current wheels.
            Os::Linux => &[
                "manylinux2014_x86_64",
                "manylinux_2_17_x86_64",
                "manylinux_2_24_x86_64",
                "manylinux_2_28_x86_64",
                "linux_x86_64",
            ],
            Os::Windows => &["win_amd64"],
        }
    }

    /// The full argument list after the interpreter.
    pub fn args(&self, dest: &Path) -> Vec<String> {
        let mut args: Vec<String> = ["-m", "pip", "download", "--only-binary=:all:"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for platform in self.platforms() {
            args.push("--platform".into());
            args.push((*platform).into());
        }
        args.extend([
            "--python-version".into(),
            self.python_version.major_minor(),
            "--implementation".into(),
            "cp".into(),
            "--disable-pip-version-check".into(),
            "--no-input".into(),
            "-d".into(),
            dest.display().to_string(),
        ]);
        if let Some(index) = &self.index_url {
            args.push("--index-url".into());
            args.push(index.clone());
        }
        args.extend(self.requirements.iter().cloned());
        args
    }

    /// What the lock records as these files' source.
    pub fn source(&self) -> String {
        format!(
            "pip:{}",
            self.index_url.as_deref().unwrap_or("default-index")
        )
    }
}

/// Runs pip download into `dest`; on failure the error shows the command's last lines.
pub fn download(python: &str, target: &PipTarget, dest: &Path) -> Result<(), ArchiveError> {
    let args = target.args(dest);
    // pip has no timeout of its own here: a slow index is waited for (a second Ctrl-C ends it).
    let spec = exec::Spec {
        program: python.into(),
        args: args.iter().map(Into::into).collect(),
        env: Vec::new(),
        output: exec::Output::Capture,
        timeout: None,
    };
    let finished = exec::run(spec).map_err(|e| {
        ArchiveError::Pip(format!(
            "cannot run `{python}` to download the pip libraries: {}; install Python 3 with pip, or set STACKPIN_PYTHON to an interpreter that has it",
            std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string)
        ))
    })?;
    if finished.end == exec::End::Exited(0) {
        return Ok(());
    }
    let tail = exec::tail_lines(&finished.tail.text(), 12).join("\n    ");
    Err(ArchiveError::Pip(format!(
        "`{python} {}` failed ({}); check the requirements, python_version and index_url in the manifest. pip said:\n    {tail}",
        args.join(" "),
        finished.end
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(os: Os) -> PipTarget {
        PipTarget {
            os,
            python_version: Version::parse("3.11").expect("version"),
            index_url: Some("https://wheels.example.test/cu124".into()),
            requirements: vec!["torch==2.5.1".into()],
        }
    }

    #[test]
    fn linux_wheels_are_asked_for_manylinux_tags_and_the_target_python() {
        let args = target(Os::Linux).args(Path::new("/a/library"));
        let text = args.join(" ");
        assert!(text.contains("--only-binary=:all:"), "{text}");
        assert!(text.contains("--platform manylinux2014_x86_64"), "{text}");
        assert!(text.contains("--platform manylinux_2_28_x86_64"), "{text}");
        assert!(
            text.contains("--python-version 3.11 --implementation cp"),
            "{text}"
        );
        assert!(text.contains("-d /a/library"), "{text}");
        assert!(
            text.ends_with("--index-url https://wheels.example.test/cu124 torch==2.5.1"),
            "{text}"
        );
    }

    #[test]
    fn windows_wheels_are_asked_for_win_amd64_only() {
        let args = target(Os::Windows).args(Path::new("d"));
        let platforms: Vec<_> = args
            .windows(2)
            .filter(|w| w[0] == "--platform")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(platforms, ["win_amd64"]);
    }

    #[test]
    fn a_missing_interpreter_is_named_in_the_error() {
        let err = download("/nonexistent/python9", &target(Os::Linux), Path::new("d"))
            .expect_err("no python");
        assert!(err.to_string().contains("/nonexistent/python9"), "{err}");
        assert!(err.to_string().contains("STACKPIN_PYTHON"), "{err}");
    }
}
