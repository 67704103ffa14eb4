//! Running the real `stackpin` binary the way a user does, with a clean environment.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A `stackpin` command with the variables that would change its output removed.
pub fn stackpin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stackpin"));
    cmd.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env_remove("STACKPIN_ARCHIVE")
        // Tests run as root in CI: the archive default must stay ./installers, not /var/lib.
        .env("STACKPIN_TEST_ADMIN", "0")
        .env("STACKPIN_DATA_DIR", no_data_dir());
    cmd
}

/// A data folder no test writes into: commands see the built-in release data, never the
/// user's own data folder. Tests of `stackpin data` set their own.
pub fn no_data_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-release-data")
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
    let out = cmd.output().expect("stackpin runs");
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
