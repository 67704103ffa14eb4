//! pip libraries: runs `python -m pip download --only-binary=:all:` for the manifest's OS,
//! Python version and platform tags, so any machine can archive any stack's wheels.
//!
//! Every pip run is hermetic: `--isolated` (no user configuration, no `PIP_*` variables),
//! `PIP_CONFIG_FILE` pointed at the null device (no site or global `pip.conf` either), and no
//! `PIP_*`, `UV_*` or `PYTHON*` variable of the caller's environment reaches the child. The only
//! indexes pip sees are the manifest's `index_url` and `extra_index_urls`; a dependency-confusion
//! index in `PIP_EXTRA_INDEX_URL` or a folder in `PIP_FIND_LINKS` never reaches the archive.
//!
//! While pip runs, the bytes it writes (into a temporary folder inside the download folder)
//! feed [`Progress`], each finished wheel is noted, and a run that writes nothing and says
//! nothing for the stall timeout is stopped. The interpreter is the fetch host's (pip only
//! downloads here; it installs nothing). Hashing the wheels and entering them in the lock is
//! `fetch`'s job.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::exec;

use super::{ArchiveError, Progress};
use crate::os::Os;
use crate::version::Version;

/// What pip should download wheels for.
#[derive(Debug, Clone)]
pub struct PipTarget {
    pub os: Os,
    /// The target's Python, `X.Y`.
    pub python_version: Version,
    /// `None` for pip's default index.
    pub index_url: Option<String>,
    /// Further indexes, searched at fetch only.
    pub extra_index_urls: Vec<String>,
    pub requirements: Vec<String>,
}

/// The label progress is reported under while pip downloads.
pub const PIP_LABEL: &str = "library (pip download)";

impl PipTarget {
    /// pip's `--platform` tags for the target OS (x86_64 only, like the drivers stackpin pins).
    pub fn platforms(&self) -> &'static [&'static str] {
        match self.os {
            // manylinux2014 is manylinux_2_17; later tags up to 2_28 cover current wheels, and
            // the older 2010 / 2_12 ones NVIDIA still uses for some (nvidia-nvvm).
            Os::Linux => &[
                "manylinux2010_x86_64",
                "manylinux_2_12_x86_64",
                "manylinux2014_x86_64",
                "manylinux_2_17_x86_64",
                "manylinux_2_24_x86_64",
                "manylinux_2_28_x86_64",
                "linux_x86_64",
            ],
            Os::Windows => &["win_amd64"],
        }
    }

    /// The arguments after the interpreter, up to (not including) the requirements.
    fn base_args(&self, dest: &Path) -> Vec<String> {
        let mut args: Vec<String> = [
            // Isolated: no PYTHON* variable, no user site, not the working folder on sys.path.
            "-I",
            "-m",
            "pip",
            "download",
            // No user configuration and no PIP_* variables (pip's own isolation).
            "--isolated",
            "--only-binary=:all:",
        ]
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
            "--progress-bar".into(),
            "off".into(),
            "-d".into(),
            dest.display().to_string(),
        ]);
        if let Some(index) = &self.index_url {
            args.push("--index-url".into());
            args.push(index.clone());
        }
        for extra in &self.extra_index_urls {
            args.push("--extra-index-url".into());
            args.push(extra.clone());
        }
        args
    }

    /// The full argument list after the interpreter: the whole requirement set, resolved.
    pub fn args(&self, dest: &Path) -> Vec<String> {
        let mut args = self.base_args(dest);
        args.extend(self.requirements.iter().cloned());
        args
    }

    /// One exact pin alone, without its dependencies: how a single missing or corrupt wheel
    /// is fetched again (`name==version`, the same platform and Python tags).
    pub fn one_wheel_args(&self, pin: &str, dest: &Path) -> Vec<String> {
        let mut args = self.base_args(dest);
        args.push("--no-deps".into());
        args.push(pin.to_string());
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

/// True for the variables that would reach into a pip or uv run from outside the manifest:
/// `PIP_*` (indexes, find-links, config files), `UV_*` and `PYTHON*` (search paths, home).
pub fn is_foreign_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("PIP_") || upper.starts_with("UV_") || upper.starts_with("PYTHON")
}

/// The names of this process's variables that a hermetic pip or uv run must not see.
pub fn foreign_variables() -> Vec<OsString> {
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| k.to_str().is_some_and(is_foreign_variable))
        .collect()
}

/// The variables every hermetic pip run gets: no configuration file at all (os.devnull makes
/// pip skip global, site and user `pip.conf`, which `--isolated` alone does not).
pub fn hermetic_settings() -> Vec<(String, String)> {
    let null = if cfg!(windows) { "nul" } else { "/dev/null" };
    vec![
        ("PIP_CONFIG_FILE".into(), null.into()),
        // pip's lines must arrive as they are said: they count as signs of life for the stall
        // watch, and a failure shows the last of them.
        ("PYTHONUNBUFFERED".into(), "1".into()),
    ]
}

/// The least stall timeout a pip run gets: the interpreter's start and pip's resolution say
/// nothing for seconds on a loaded machine, unlike a socket that has stopped.
pub const PIP_MIN_STALL: Duration = Duration::from_secs(15);

/// How a pip run is watched.
pub struct Watch<'a> {
    pub progress: &'a dyn Progress,
    /// Stop pip when it writes no byte and prints no line for this long (fetch gives at least
    /// [`PIP_MIN_STALL`]).
    pub stall: Duration,
}

/// Runs pip download into `dest` (the whole set); on failure the error shows pip's last lines.
pub fn download(
    python: &str,
    target: &PipTarget,
    dest: &Path,
    watch: &Watch,
) -> Result<(), ArchiveError> {
    run_pip(python, &target.args(dest), dest, watch)
}

/// Runs pip download for one exact pin, `--no-deps`, into `dest`.
pub fn download_one(
    python: &str,
    target: &PipTarget,
    pin: &str,
    dest: &Path,
    watch: &Watch,
) -> Result<(), ArchiveError> {
    run_pip(python, &target.one_wheel_args(pin, dest), dest, watch)
}

const TAIL_LINES: usize = 12;

fn run_pip(python: &str, args: &[String], dest: &Path, watch: &Watch) -> Result<(), ArchiveError> {
    // pip streams each download into a temporary folder before copying it to `-d`: that
    // folder, inside `dest`, is where the bytes can be watched as they arrive.
    let tmp = dest.join(".pip-tmp");
    std::fs::create_dir_all(&tmp).map_err(|e| ArchiveError::io("creating", &tmp, e))?;
    let mut env: Vec<(OsString, OsString)> = hermetic_settings()
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    for name in ["TMPDIR", "TEMP", "TMP"] {
        env.push((name.into(), tmp.clone().into_os_string()));
    }
    let started = Instant::now();
    // The last moment pip printed a line (ms since start): a sign of life for the stall watch.
    let said = Arc::new(AtomicU64::new(0));
    let said_in_lines = Arc::clone(&said);
    // pip has no timeout of its own here: the stall watch below and a second Ctrl-C end it.
    let spec = exec::Spec {
        program: python.into(),
        args: args.iter().map(Into::into).collect(),
        env,
        env_remove: foreign_variables(),
        output: exec::Output::Lines(Box::new(move |_line| {
            said_in_lines.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        })),
        timeout: None,
        // Not the caller's folder: a `pip.py` or `pip/` there would be imported, as root.
        cwd: Some(exec::neutral_dir()),
        guarded: true,
        stdin: None,
    };
    let mut running = exec::start(spec).map_err(|e| {
        ArchiveError::Pip(format!(
            "cannot run `{python}` to download the pip libraries: {}; install Python 3 with pip, or set STACKPIN_PYTHON to an interpreter that has it",
            std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string)
        ))
    })?;
    watch.progress.started(PIP_LABEL, None);
    let mut bytes = 0u64;
    let mut seen = BTreeSet::new();
    let mut last_change = Duration::ZERO;
    while !running.has_exited() && !exec::interrupt::stop_requested() {
        std::thread::sleep(Duration::from_millis(200));
        let now = folder_bytes(&tmp);
        if now > bytes {
            watch.progress.advanced(PIP_LABEL, now - bytes);
            bytes = now;
            last_change = started.elapsed();
        }
        for name in file_names(dest) {
            if seen.insert(name.clone()) {
                watch.progress.note(&format!("library: downloaded {name}"));
                last_change = started.elapsed();
            }
        }
        let last_said = Duration::from_millis(said.load(Ordering::Relaxed));
        if started.elapsed().saturating_sub(last_change.max(last_said)) > watch.stall {
            let _ = running.stop();
            watch.progress.finished(PIP_LABEL);
            return Err(ArchiveError::Pip(format!(
                "pip wrote and said nothing for {}s (stall timeout) and was stopped with its process tree after {bytes} bytes; check the network and the index, or raise --stall-timeout",
                watch.stall.as_secs()
            )));
        }
    }
    // Exited, or a second Ctrl-C: `wait` ends the tree in the latter case and drains the pipes.
    let finished = running
        .wait()
        .map_err(|e| ArchiveError::Pip(e.to_string()))?;
    watch.progress.finished(PIP_LABEL);
    let _ = std::fs::remove_dir_all(&tmp);
    if finished.end == exec::End::Exited(0) {
        return Ok(());
    }
    let tail = exec::tail_lines(&finished.tail.text(), TAIL_LINES).join("\n    ");
    Err(ArchiveError::Pip(format!(
        "`{python} {}` failed ({}); check the requirements, python_version and index URLs in the manifest. pip said:\n    {tail}",
        args.join(" "),
        finished.end
    )))
}

/// Total size of the files under `dir`, recursively (pip's temporary downloads).
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// The plain files pip left in a download folder (the finished downloads, not pip's temporary
/// folder), sorted; none when the folder cannot be read.
pub(super) fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(os: Os) -> PipTarget {
        PipTarget {
            os,
            python_version: Version::parse("3.11").expect("version"),
            index_url: Some("https://wheels.example.test/cu124".into()),
            extra_index_urls: vec!["https://old.example.test/cu117".into()],
            requirements: vec!["torch==2.5.1".into()],
        }
    }

    #[test]
    fn linux_wheels_are_asked_for_manylinux_tags_and_the_target_python() {
        let args = target(Os::Linux).args(Path::new("/a/library"));
        let text = args.join(" ");
        assert!(
            text.contains("download --isolated --only-binary=:all:"),
            "{text}"
        );
        assert!(text.contains("--platform manylinux2014_x86_64"), "{text}");
        assert!(text.contains("--platform manylinux_2_28_x86_64"), "{text}");
        assert!(
            text.contains("--python-version 3.11 --implementation cp"),
            "{text}"
        );
        assert!(text.contains("-d /a/library"), "{text}");
        assert!(
            text.ends_with("--index-url https://wheels.example.test/cu124 --extra-index-url https://old.example.test/cu117 torch==2.5.1"),
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
    fn one_wheel_is_fetched_by_its_exact_pin_without_dependencies() {
        let args = target(Os::Linux).one_wheel_args("filelock==3.16.1", Path::new("d"));
        let text = args.join(" ");
        assert!(text.ends_with("--no-deps filelock==3.16.1"), "{text}");
        assert!(!text.contains("torch==2.5.1"), "{text}");
        assert!(text.contains("--platform manylinux2014_x86_64"), "{text}");
        assert!(text.contains("--python-version 3.11"), "{text}");
    }

    #[test]
    fn pip_uv_and_python_variables_are_foreign_to_a_hermetic_run() {
        for name in [
            "PIP_FIND_LINKS",
            "pip_extra_index_url",
            "UV_INDEX_URL",
            "PYTHONPATH",
            "PYTHONHOME",
        ] {
            assert!(is_foreign_variable(name), "{name}");
        }
        for name in ["PATH", "HOME", "TMPDIR", "PIPX_HOME", "SSL_CERT_FILE"] {
            assert!(!is_foreign_variable(name), "{name}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_pip_that_writes_and_says_nothing_is_stopped_at_the_stall_timeout() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let python = dir.path().join("python");
        std::fs::write(&python, "#!/bin/sh\necho Collecting torch\nexec sleep 60\n").expect("fake");
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let dest = dir.path().join("d");
        std::fs::create_dir_all(&dest).expect("dest");
        let watch = Watch {
            progress: &super::super::Silent,
            stall: Duration::from_millis(600),
        };
        let started = Instant::now();
        let err = download(
            python.to_str().expect("utf-8"),
            &target(Os::Linux),
            &dest,
            &watch,
        )
        .expect_err("stalled");
        assert!(err.to_string().contains("stall timeout"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(30), "not stopped");
    }

    #[test]
    fn a_missing_interpreter_is_named_in_the_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let watch = Watch {
            progress: &super::super::Silent,
            stall: Duration::from_secs(5),
        };
        let err = download(
            "/nonexistent/python9",
            &target(Os::Linux),
            dir.path(),
            &watch,
        )
        .expect_err("no python");
        assert!(err.to_string().contains("/nonexistent/python9"), "{err}");
        assert!(err.to_string().contains("STACKPIN_PYTHON"), "{err}");
    }
}
