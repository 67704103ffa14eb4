//! Running the real `stackpin` binary the way a user does, with a clean environment, and the
//! one [`TestContext`] every harness builds on: a temp folder that is also the working folder,
//! the archive in it, the variables the command sees, and the `stackpin` command itself. The
//! fake hosts (`fakes.rs`) are a `TestContext` with fake programs laid into it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// A `stackpin` command with the variables that would change its output removed.
pub fn stackpin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stackpin"));
    cmd.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env_remove("STACKPIN_ARCHIVE")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("STACKPIN_NVIDIA_SMI_TIMEOUT")
        // Tests run as root in CI: the archive default must stay ./installers, not /var/lib.
        .env("STACKPIN_TEST_ADMIN", "0")
        .env("STACKPIN_DATA_DIR", no_data_dir());
    // A ready Linux workstation's root, not the machine the tests run on (see `fakes`).
    #[cfg(unix)]
    cmd.env("STACKPIN_HOST_ROOT", crate::fakes::ready_linux_root());
    cmd
}

/// One test's world: a temp folder (the command's working folder), the archive under it, and
/// the variables set or removed for every command it builds.
pub struct TestContext {
    dir: TempDir,
    /// `Some`: set to this value; `None`: removed. Later entries win.
    env: Vec<(OsString, Option<OsString>)>,
}

#[allow(dead_code)] // a shared harness: each test module uses a different part of it
impl TestContext {
    /// A fresh temp folder and nothing set beyond [`stackpin`]'s clean environment.
    pub fn new() -> Self {
        Self::in_dir(tempfile::tempdir().expect("temp dir"))
    }

    /// A temp folder whose name starts with `prefix` (`"stackpin win host "`: a path with
    /// spaces, as Windows has them).
    pub fn with_prefix(prefix: &str) -> Self {
        Self::in_dir(
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("temp dir"),
        )
    }

    fn in_dir(dir: TempDir) -> Self {
        Self { dir, env: vec![] }
    }

    /// The temp folder, also the working folder of every command.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the temp folder.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// The archive a command uses without `--archive` or `STACKPIN_ARCHIVE`: `./installers`.
    pub fn archive(&self) -> PathBuf {
        self.path("installers")
    }

    /// Sets `key` for every command built from now on.
    pub fn set_env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes `key` from the environment of every command built from now on.
    pub fn remove_env(&mut self, key: impl AsRef<OsStr>) -> &mut Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// [`TestContext::set_env`] for building a context in one expression.
    pub fn with_env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.set_env(key, value);
        self
    }

    /// `stackpin ARGS` in the temp folder with this context's environment.
    pub fn stackpin<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = stackpin();
        // The machine-wide install lock of this test's "machine": its own, so tests that run
        // side by side never wait for each other (a test of two stacks shares one on purpose).
        cmd.args(args)
            .current_dir(self.root())
            .env("STACKPIN_LOCK_DIR", self.root().join(".machine"));
        for (key, value) in &self.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    /// Runs `stackpin ARGS` to completion.
    pub fn run<I, S>(&self, args: I) -> Outcome
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run(&mut self.stackpin(args))
    }

    /// Runs `stackpin ARGS` to completion, for tests that read the raw `Output`.
    pub fn output<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.stackpin(args).output_started().expect("stackpin runs")
    }
}

/// A data folder no test writes into: commands see the built-in release data, never the
/// user's own data folder. Tests of `stackpin data` set their own.
pub fn no_data_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-release-data")
}

/// What every harness that fetches, installs and proves sets on its commands: the archive named
/// outright, the admin check skipped (the fake installers need no root), and no wait between
/// download retries.
pub fn installing<'c>(cmd: &'c mut Command, archive: &Path) -> &'c mut Command {
    if !cmd.get_envs().any(|(k, _)| k == "STACKPIN_LOCK_DIR") {
        let machine = archive.parent().unwrap_or(archive).join(".machine");
        cmd.env("STACKPIN_LOCK_DIR", machine);
    }
    cmd.env("STACKPIN_ARCHIVE", archive)
        .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
        .env("STACKPIN_RETRY_BASE_MS", "0")
}

/// `Command::output` for every test: under Wine, CreateProcess now and then fails with its own
/// "internal error" (ERROR_INTERNAL_ERROR, 1359) before the program starts, once in many runs
/// of the Windows suite; nothing ran, so it is tried again. Any other failure is the test's.
pub trait OutputStarted {
    fn output_started(&mut self) -> std::io::Result<Output>;
}

impl OutputStarted for Command {
    fn output_started(&mut self) -> std::io::Result<Output> {
        const WINE_INTERNAL_ERROR: i32 = 1359;
        let mut tries = 1;
        loop {
            match self.output() {
                Err(e)
                    if cfg!(windows)
                        && e.raw_os_error() == Some(WINE_INTERNAL_ERROR)
                        && tries < 3 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                result => return result,
            }
        }
    }
}

/// What a finished command left behind.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a command to completion and captures its output.
pub fn run(cmd: &mut Command) -> Outcome {
    let out = cmd.output_started().expect("stackpin runs");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A path inside the repository.
pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Every shipped manifest.
pub fn shipped_manifests() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(repo("manifests"))
        .expect("manifests/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    out.sort();
    out
}

/// stdout and stderr of a finished command, together, for assertions and failure messages.
pub fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `cmd` with `dir` on a disk of `kib` KiB (a tmpfs in a mount namespace of its own, so
/// nothing outside the command sees it), then copies what the disk holds into `kept`, since the
/// disk goes with the namespace. `None` where this machine can make no mount namespace (neither
/// root nor user namespaces); under CI that is a failure, not a skip.
#[cfg(target_os = "linux")]
pub fn on_a_small_disk(cmd: &Command, dir: &Path, kib: u64, kept: &Path) -> Option<Output> {
    std::fs::create_dir_all(dir).expect("the small disk's mount point");
    std::fs::create_dir_all(kept).expect("the folder for what the disk held");
    // Root makes a mount namespace; anyone else needs a user namespace mapped to root in it.
    let root = Command::new("id")
        .arg("-u")
        .output_started()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let mut wrapped = Command::new("unshare");
    if !root {
        wrapped.arg("-r");
    }
    wrapped
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(
            "mount -t tmpfs -o size=\"$1\"k tmpfs \"$2\" || exit 97; dir=$2; kept=$3; shift 3; \
         \"$@\"; rc=$?; cp -a \"$dir\"/. \"$kept\"/ 2>/dev/null; exit $rc",
        );
    wrapped
        .arg("small-disk")
        .arg(kib.to_string())
        .arg(dir)
        .arg(kept)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(cwd) = cmd.get_current_dir() {
        wrapped.current_dir(cwd);
    }
    let out = wrapped.output_started().expect("unshare runs");
    if out.status.code() == Some(97)
        || (out.status.code() == Some(1)
            && out.stdout.is_empty()
            && String::from_utf8_lossy(&out.stderr).starts_with("unshare:"))
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "no mount namespace for a small disk here: {}",
            text(&out)
        );
        eprintln!("note: no mount namespace here; the small-disk part is skipped");
        return None;
    }
    Some(out)
}
