//! The one fake host for unit tests: an in-memory [`System`] whose programs answer from a
//! table keyed by program and argv, whose files and folders are a map, and which spawns
//! nothing; plus ready-made hosts (a Linux workstation with the shipped stack, with or without
//! each layer) that doctor, install planning and prove orchestration test against.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::HostError;
use super::nvidia_smi::QUERY_GPU;
use super::system::{RunOutput, System};
use crate::os::Os;

/// One canned answer: an argv prefix and what the program does (`Err`: it hangs).
pub type FakeAnswer = (Vec<String>, Result<RunOutput, Duration>);

/// An in-memory host for unit tests: programs answer from a table keyed by program and argv.
#[derive(Debug, Default, Clone)]
pub struct FakeSystem {
    pub os: Option<Os>,
    pub programs: std::collections::BTreeMap<PathBuf, Vec<FakeAnswer>>,
    pub on_path: std::collections::BTreeMap<String, PathBuf>,
    pub env: std::collections::BTreeMap<String, String>,
    pub files: std::collections::BTreeMap<PathBuf, String>,
    pub dirs: std::collections::BTreeMap<PathBuf, ()>,
    pub links: std::collections::BTreeMap<PathBuf, PathBuf>,
    /// Every command run, in order (`program args…`), shared by clones: a test that pushes its
    /// own markers here sees where the host's commands fall around them.
    pub ran: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeSystem {
    pub fn new(os: Os) -> Self {
        Self {
            os: Some(os),
            ..Self::default()
        }
    }

    /// `program args…` prints `stdout` and exits with `code`; a prefix of args matches too.
    pub fn answer(&mut self, program: &str, args: &[&str], code: i32, stdout: &str) -> &mut Self {
        let out = RunOutput {
            code: Some(code),
            stdout: stdout.to_string(),
            stderr: String::new(),
        };
        self.programs
            .entry(PathBuf::from(program))
            .or_default()
            .push((args.iter().map(|a| a.to_string()).collect(), Ok(out)));
        self
    }

    /// `program` hangs past any timeout.
    pub fn hang(&mut self, program: &str) -> &mut Self {
        self.programs
            .entry(PathBuf::from(program))
            .or_default()
            .push((vec![], Err(Duration::ZERO)));
        self
    }

    pub fn file(&mut self, path: &str, text: &str) -> &mut Self {
        let path = PathBuf::from(path);
        let mut parent = path.parent();
        while let Some(p) = parent {
            self.dirs.insert(p.to_path_buf(), ());
            parent = p.parent();
        }
        self.files.insert(path, text.to_string());
        self
    }

    pub fn dir(&mut self, path: &str) -> &mut Self {
        self.file(&format!("{path}/.keep"), "")
    }
}

impl System for FakeSystem {
    fn run(
        &self,
        program: &Path,
        args: &[String],
        timeout: Duration,
    ) -> Result<RunOutput, HostError> {
        if let Ok(mut ran) = self.ran.lock() {
            let mut line = program.display().to_string();
            for a in args {
                line.push(' ');
                line.push_str(a);
            }
            ran.push(line);
        }
        let answers = self.programs.get(program).ok_or_else(|| HostError::Spawn {
            program: program.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotFound, "not in the fake system"),
        })?;
        // The longest matching argv prefix wins, so a specific answer beats a catch-all.
        let best = answers
            .iter()
            .filter(|(want, _)| args.starts_with(want))
            .max_by_key(|(want, _)| want.len())
            .ok_or_else(|| HostError::Spawn {
                program: program.to_path_buf(),
                source: io::Error::other(format!("no fake answer for {args:?}")),
            })?;
        best.1.clone().map_err(|_| HostError::TimedOut {
            program: program.to_path_buf(),
            after: timeout,
        })
    }

    fn which(&self, program: &str) -> Option<PathBuf> {
        self.on_path.get(program).cloned()
    }

    fn env(&self, key: &str) -> Option<String> {
        self.env.get(key).cloned()
    }

    fn env_vars(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such fake file"))
    }

    fn exists(&self, path: &Path) -> bool {
        self.files.contains_key(path)
            || self.dirs.contains_key(path)
            || self.links.contains_key(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains_key(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        if !self.is_dir(path) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no such fake folder",
            ));
        }
        let children = self
            .files
            .keys()
            .chain(self.dirs.keys())
            .chain(self.links.keys());
        let mut entries: Vec<PathBuf> = children
            .filter(|p| p.parent() == Some(path))
            .filter(|p| p.file_name().is_some_and(|n| n != ".keep"))
            .cloned()
            .collect();
        entries.sort();
        entries.dedup();
        Ok(entries)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.links
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a fake link"))
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let mut at = path.to_path_buf();
        // Links point at links at most a few times on a fake host; a loop is an error.
        for _ in 0..8 {
            match self.links.get(&at) {
                Some(target) => at = target.clone(),
                None if self.exists(&at) => return Ok(at),
                None => return Err(io::Error::new(io::ErrorKind::NotFound, "no such fake path")),
            }
        }
        Err(io::Error::other("too many fake links"))
    }

    fn os(&self) -> Os {
        self.os.unwrap_or(Os::Linux)
    }
}

/// nvidia-smi on the ready-made Linux host.
pub const SMI: &str = "/usr/bin/nvidia-smi";
/// The shipped Linux stack's venv interpreter.
pub const VENV_PYTHON: &str = "/opt/stackpin/torch-2.5.1-cu124-linux/bin/python";
/// nvidia-smi's header for a 570-series driver (its "CUDA Version" line).
pub const SMI_HEADER: &str = include_str!("../../tests/fixtures/nvidia-smi/header-570.txt");

/// One GPU row of `nvidia-smi --query-gpu` for an L4 running `driver`.
pub fn gpu_row(driver: &str) -> String {
    format!("0, NVIDIA L4, GPU-5a1f0c2e-9d1b-4c1e-8f3a-0b6e2d7c9a11, {driver}, 23034, 8.9\n")
}

/// The library probe's answer for a torch `version` built for CUDA 12.4 that sees the GPU.
pub fn torch_line(version: &str) -> String {
    format!(
        r#"{{"library": "torch", "python": "3.12.3", "version": "{version}", "cuda": "12.4", "cudnn": "90100", "cuda_available": true, "device_count": 1, "arch_list": ["sm_80", "sm_89", "sm_90"], "device_capability": "8.9", "device_name": "NVIDIA L4", "ok": true}}"#
    )
}

impl FakeSystem {
    /// A Linux host with no NVIDIA driver, toolkit or venv, but ready for the driver's runfile:
    /// nouveau blacklisted, the running kernel's headers, gcc/make/dkms on PATH.
    pub fn bare_linux() -> Self {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/proc/sys/kernel/osrelease", "6.8.0-50-generic\n")
            .file(
                "/etc/modprobe.d/blacklist-nouveau.conf",
                "blacklist nouveau\noptions nouveau modeset=0\n",
            )
            .dir("/lib/modules/6.8.0-50-generic/build");
        for tool in super::readiness::BUILD_TOOLS {
            sys.on_path
                .insert(tool.to_string(), PathBuf::from(format!("/usr/bin/{tool}")));
        }
        sys
    }

    /// Adds a running NVIDIA `driver` on an L4 (nvidia-smi on PATH).
    pub fn with_driver(&mut self, driver: &str) -> &mut Self {
        self.on_path
            .insert("nvidia-smi".to_string(), PathBuf::from(SMI));
        self.answer(SMI, &[QUERY_GPU], 0, &gpu_row(driver))
            .answer(SMI, &[], 0, SMI_HEADER)
    }

    /// Adds the CUDA 12.4.1 toolkit folder the shipped Linux stack pins, with an nvcc that
    /// reports 12.4 and compiles the toolkit proof's kernel for any architecture.
    pub fn with_toolkit(&mut self) -> &mut Self {
        const NVCC: &str = "/usr/local/cuda-12.4/bin/nvcc";
        self.file(
            "/usr/local/cuda-12.4/version.json",
            r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}"#,
        )
        .file(NVCC, "")
        .answer(
            NVCC,
            &["--version"],
            0,
            "Cuda compilation tools, release 12.4, V12.4.131\n",
        )
        .answer(NVCC, &[], 0, "")
    }

    /// Adds the shipped Linux stack's venv, whose torch reports `torch` (its version).
    pub fn with_library(&mut self, torch: &str) -> &mut Self {
        self.file(VENV_PYTHON, "")
            .answer(VENV_PYTHON, &["-c"], 0, &torch_line(torch))
    }

    /// A Linux host where the shipped Linux stack holds: driver, toolkit folder and venv.
    pub fn linux_host(driver: &str, torch: &str) -> Self {
        let mut sys = FakeSystem::bare_linux();
        sys.with_driver(driver).with_toolkit().with_library(torch);
        sys
    }
}
