//! The narrow seam between stackpin and the machine it runs on: run a program with a timeout,
//! find a program, read an environment variable, read files and folders.
//!
//! [`RealSystem`] talks to the OS; unit tests use the in-memory `host::fake::FakeSystem`. Everything that
//! probes the host takes `&dyn System`, so no probe ever reads the real environment behind a
//! test's back (rustup's `Process` is the model). What the answers mean is left to the probes.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec;
use crate::os::Os;

use super::HostError;

/// What a finished child process left behind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunOutput {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl RunOutput {
    /// True when the process exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// stdout and stderr together, for matching error texts that tools print on either pipe.
    pub fn combined(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// Everything the host probes need from the machine.
pub trait System {
    /// Runs `program` with `args` (never through a shell), killing it after `timeout`.
    fn run(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> Result<RunOutput, HostError>;
    /// Finds `program` on `PATH` (with the `PATHEXT` extensions, `.exe` `.cmd` `.bat`, on
    /// Windows).
    fn which(&self, program: &str) -> Option<PathBuf>;
    /// One environment variable, `None` when unset or not UTF-8.
    fn env(&self, key: &str) -> Option<String>;
    /// Every environment variable (for `CUDA_PATH_V*` style families).
    fn env_vars(&self) -> Vec<(String, String)>;
    fn read_to_string(&self, path: &Path) -> io::Result<String>;
    fn exists(&self, path: &Path) -> bool;
    fn is_dir(&self, path: &Path) -> bool;
    /// The entries of a folder, as full paths.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// Where a symbolic link points (as stored in the link).
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// The path with every symbolic link resolved (a venv's `python` to its interpreter).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// The operating system family.
    fn os(&self) -> Os;
}

/// The machine stackpin actually runs on.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealSystem;

impl System for RealSystem {
    fn run(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> Result<RunOutput, HostError> {
        run_with_timeout(program, args, timeout)
    }

    fn which(&self, program: &str) -> Option<PathBuf> {
        find_program(program, std::env::var_os("PATH")?)
    }

    fn env(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }

    fn env_vars(&self) -> Vec<(String, String)> {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<Vec<_>>>()?;
        entries.sort();
        Ok(entries)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn os(&self) -> Os {
        Os::current()
    }
}

/// Finds `program` in the folders of `path` (a `PATH`-style list) through the `which` crate,
/// which honours `PATHEXT` on Windows: a bare `conda` finds `conda.bat`, `pip` finds `pip.cmd`.
/// Only executable files count on Unix.
fn find_program(program: &str, path: std::ffi::OsString) -> Option<PathBuf> {
    // The working folder only matters for a name with a separator in it, which stackpin's own
    // look-ups never pass; `.` keeps a missing current folder from failing the search.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    which::which_in(program, Some(&path), &cwd)
        .or_else(|e| {
            // A Windows with no usable `PATHEXT` still finds `name.exe`, as before the crate.
            if cfg!(windows) && !program.to_ascii_lowercase().ends_with(".exe") {
                which::which_in(format!("{program}.exe"), Some(&path), &cwd)
            } else {
                Err(e)
            }
        })
        .ok()
}

/// Runs a probe through [`crate::exec`]: a tree of its own, ended whole at the timeout, output
/// captured up to a bound, and no wait on pipes that a grandchild (a shell script's `sleep`)
/// still holds.
fn run_with_timeout(
    program: &Path,
    args: &[String],
    timeout: Duration,
) -> Result<RunOutput, HostError> {
    let spec = exec::Spec::captured(program, args, timeout);
    let finished = exec::run(spec).map_err(|e| HostError::Spawn {
        program: program.to_path_buf(),
        source: match e {
            exec::ExecError::Spawn { source, .. } | exec::ExecError::Wait { source, .. } => source,
            exec::ExecError::EmptyCommand => io::Error::other("the command is empty"),
        },
    })?;
    match finished.end {
        exec::End::TimedOut | exec::End::Interrupted => Err(HostError::TimedOut {
            program: program.to_path_buf(),
            after: timeout,
        }),
        end => Ok(RunOutput {
            code: end.code(),
            // nvidia-smi on Windows may print the code page's bytes; lossy keeps the rest readable.
            stdout: String::from_utf8_lossy(&finished.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&finished.stderr).into_owned(),
        }),
    }
}

// The fake lives in `host::fake`, shared by every module's tests; named here too so the
// probes' tests keep importing it from beside the trait.
#[cfg(test)]
pub use super::fake::{FakeAnswer, FakeSystem};

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::time::Instant;

    #[cfg(unix)]
    #[test]
    fn real_run_captures_both_pipes_and_the_exit_code() {
        let args = ["-c", "echo out; echo err >&2; exit 3"].map(String::from);
        let out = RealSystem
            .run(Path::new("sh"), &args, Duration::from_secs(10))
            .expect("sh runs");
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout.trim(), "out");
        assert_eq!(out.stderr.trim(), "err");
    }

    #[cfg(unix)]
    #[test]
    fn real_run_kills_a_hanging_program_at_the_timeout() {
        let started = Instant::now();
        let args = ["-c", "sleep 20"].map(String::from);
        let err = RealSystem
            .run(Path::new("sh"), &args, Duration::from_millis(200))
            .expect_err("must time out");
        assert!(matches!(err, HostError::TimedOut { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn real_run_of_a_missing_program_is_a_spawn_error_naming_it() {
        let err = RealSystem
            .run(
                Path::new("/no/such/stackpin-prog"),
                &[],
                Duration::from_secs(1),
            )
            .expect_err("missing");
        assert!(err.to_string().contains("/no/such/stackpin-prog"), "{err}");
    }

    /// A `PATH` of two folders in a temp dir: the program sits in the second.
    fn two_folder_path(dir: &Path) -> (PathBuf, std::ffi::OsString) {
        let (first, second) = (dir.join("first"), dir.join("second"));
        std::fs::create_dir_all(&first).expect("first");
        std::fs::create_dir_all(&second).expect("second");
        let path = std::env::join_paths([&first, &second]).expect("join");
        (second, path)
    }

    #[cfg(unix)]
    #[test]
    fn lookup_finds_an_executable_on_a_built_path_and_skips_one_without_the_x_bit() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let (second, path) = two_folder_path(dir.path());
        let tool = second.join("stackpin-tool");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let plain = second.join("stackpin-plain");
        std::fs::write(&plain, "not a program").expect("write");
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).expect("chmod");

        assert_eq!(find_program("stackpin-tool", path.clone()), Some(tool));
        assert_eq!(find_program("stackpin-plain", path.clone()), None);
        assert_eq!(find_program("stackpin-absent", path), None);
    }

    #[cfg(windows)]
    #[test]
    fn lookup_finds_a_cmd_script_by_its_bare_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (second, path) = two_folder_path(dir.path());
        let script = second.join("stackpin-tool.cmd");
        std::fs::write(&script, "@echo off\r\n").expect("write");

        let found = find_program("stackpin-tool", path.clone()).expect("found by bare name");
        assert_eq!(
            found
                .file_name()
                .map(|n| n.to_string_lossy().to_lowercase()),
            Some("stackpin-tool.cmd".to_string()),
            "{found:?}"
        );
        assert_eq!(find_program("stackpin-absent", path), None);
    }

    #[test]
    fn fake_read_dir_lists_direct_children_only() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.dir("/usr/local/cuda-12.4/bin")
            .dir("/usr/local/cuda-11.8");
        let entries = sys.read_dir(Path::new("/usr/local")).expect("dir");
        assert_eq!(
            entries,
            vec![
                PathBuf::from("/usr/local/cuda-11.8"),
                PathBuf::from("/usr/local/cuda-12.4")
            ]
        );
    }
}
