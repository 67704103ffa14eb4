//! The Windows twin of `fakes.rs`: a fake workstation laid out the way Windows lays it out.
//! `bin\nvidia-smi.exe` (a real Windows program built by `scripts/test-windows.sh` from
//! `tests/windows-fakes/nvidia-smi.c`, answering from a state folder), toolkits under a fake
//! `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\vX.Y` (a path with spaces), and
//! `CUDA_PATH` / `CUDA_PATH_VX_Y` variables. The compiled fakes are found through
//! `STACKPIN_WINDOWS_FAKES`; without it every test using them fails and says how to run them.
#![cfg(windows)]
#![allow(dead_code)] // a shared kit: each test uses a different part of it

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A compiled fake program (`installer.exe`, `nvidia-smi.exe`).
pub fn fake_program(name: &str) -> PathBuf {
    let dir = std::env::var_os("STACKPIN_WINDOWS_FAKES").expect(
        "STACKPIN_WINDOWS_FAKES is not set: run the Windows tests through scripts/test-windows.sh, \
         which builds the fake programs",
    );
    let path = PathBuf::from(dir).join(name);
    assert!(path.is_file(), "fake program {} is missing", path.display());
    path
}

/// A fake Windows workstation in a temp folder whose path has spaces in it.
pub struct WinHost {
    dir: TempDir,
    gpus: usize,
    cuda_path: Option<PathBuf>,
    extra_env: Vec<(String, OsString)>,
}

impl WinHost {
    /// No nvidia-smi, no toolkits.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("stackpin win host ")
            .tempdir()
            .expect("temp dir");
        let host = Self {
            dir,
            gpus: 0,
            cuda_path: None,
            extra_env: vec![],
        };
        for sub in ["bin", "nvidia", "Program Files"] {
            fs::create_dir_all(host.root().join(sub)).expect("fake host folders");
        }
        fs::write(host.nvidia().join("gpus.csv"), "").expect("gpus.csv");
        fs::write(host.nvidia().join("memory.csv"), "").expect("memory.csv");
        host.set_driver("ok", "", "");
        host
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn bin(&self) -> PathBuf {
        self.root().join("bin")
    }

    /// The fake `%ProgramFiles%`.
    pub fn program_files(&self) -> PathBuf {
        self.root().join("Program Files")
    }

    fn nvidia(&self) -> PathBuf {
        self.root().join("nvidia")
    }

    /// The state folder the fake nvidia-smi reads (`STACKPIN_FAKE_NVIDIA_DIR`).
    pub fn nvidia_dir(&self) -> PathBuf {
        self.nvidia()
    }

    /// Puts the fake `nvidia-smi.exe` into `bin\` (on PATH).
    pub fn with_nvidia_smi(self) -> Self {
        fs::copy(
            fake_program("nvidia-smi.exe"),
            self.bin().join("nvidia-smi.exe"),
        )
        .expect("copy fake nvidia-smi.exe");
        self
    }

    /// `mode` is `ok`, `no-driver` or `mismatch`.
    pub fn set_driver(&self, mode: &str, driver: &str, cuda: &str) {
        fs::write(
            self.nvidia().join("state"),
            format!("mode={mode}\ndriver={driver}\ncuda={cuda}\n"),
        )
        .expect("driver state");
    }

    pub fn driver(self, version: &str, cuda: &str) -> Self {
        self.set_driver("ok", version, cuda);
        self
    }

    pub fn gpu(mut self, name: &str, memory_mib: u64, compute_cap: &str) -> Self {
        let index = self.gpus;
        let uuid = format!("GPU-{index:08x}-fake-4c1e-8f3a-{index:012x}");
        let mut all = fs::read_to_string(self.nvidia().join("gpus.csv")).unwrap_or_default();
        all.push_str(&format!(
            "{index}, {name}, {uuid}, @DRIVER@, {memory_mib}, {compute_cap}\n"
        ));
        fs::write(self.nvidia().join("gpus.csv"), all).expect("gpus.csv");
        self.gpus += 1;
        self
    }

    /// Every argument line nvidia-smi was called with, oldest first.
    pub fn nvidia_smi_calls(&self) -> Vec<String> {
        fs::read_to_string(self.nvidia().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\vX.Y` for a version `X.Y[.Z]`.
    pub fn toolkit_root(&self, version: &str) -> PathBuf {
        let line: Vec<&str> = version.split('.').take(2).collect();
        self.program_files()
            .join("NVIDIA GPU Computing Toolkit")
            .join("CUDA")
            .join(format!("v{}", line.join(".")))
    }

    /// A toolkit where the Windows installer puts it, with its `version.json`.
    pub fn toolkit(self, version: &str) -> Self {
        let root = self.toolkit_root(version);
        write_version_json(&root, version);
        self
    }

    /// A toolkit outside `%ProgramFiles%`, known only through `CUDA_PATH_VX_Y`.
    pub fn toolkit_by_variable(mut self, version: &str, root: &Path) -> Self {
        write_version_json(root, version);
        let line: Vec<&str> = version.split('.').take(2).collect();
        let key = format!("CUDA_PATH_V{}", line.join("_"));
        self.extra_env.push((key, root.as_os_str().to_owned()));
        self
    }

    /// `CUDA_PATH`: the default toolkit.
    pub fn cuda_path(mut self, root: &Path) -> Self {
        self.cuda_path = Some(root.to_path_buf());
        self
    }

    /// The real stackpin binary with this host's environment and nothing from the test's own
    /// that would change the answers. PATH is `bin\` then the Windows folders only.
    pub fn stackpin<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stackpin"));
        cmd.args(args)
            .env_remove("RUST_BACKTRACE")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("STACKPIN_ARCHIVE")
            .env_remove("CUDA_PATH")
            // The fake whoami may report Administrator: keep the archive default ./installers.
            .env("STACKPIN_TEST_ADMIN", "0")
            .env("STACKPIN_DATA_DIR", crate::common::no_data_dir())
            .current_dir(self.root());
        for (key, _) in std::env::vars_os() {
            if key
                .to_string_lossy()
                .to_ascii_uppercase()
                .starts_with("CUDA_PATH_V")
            {
                cmd.env_remove(key);
            }
        }
        let windows = std::env::var_os("SystemRoot").unwrap_or_else(|| "C:\\windows".into());
        let path = std::env::join_paths([
            self.bin(),
            PathBuf::from(&windows).join("system32"),
            PathBuf::from(&windows),
        ])
        .expect("PATH");
        cmd.env("PATH", path)
            .env("ProgramFiles", self.program_files())
            .env("STACKPIN_FAKE_NVIDIA_DIR", self.nvidia());
        if let Some(root) = &self.cuda_path {
            cmd.env("CUDA_PATH", root);
        }
        for (key, value) in &self.extra_env {
            cmd.env(key, value);
        }
        cmd
    }
}

fn write_version_json(root: &Path, version: &str) {
    fs::create_dir_all(root.join("bin")).expect("toolkit folder");
    let json = format!(r#"{{"cuda": {{"name": "CUDA SDK", "version": "{version}"}}}}"#);
    fs::write(root.join("version.json"), json).expect("version.json");
}
