//! A fake workstation for CLI tests: a temp folder with a `bin/` of fake programs put first on
//! `PATH` (a `nvidia-smi` whose answers come from a state file an installer script can rewrite),
//! fake CUDA toolkit folders (`version.json`, `bin/nvcc`) under a prefix passed through
//! `STACKPIN_CUDA_PREFIX`, and a fake `torch` package on `PYTHONPATH` for the real `python3`.
//!
//! Use: `let host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9").driver("570.133.20", "12.8");`
//! then `host.stackpin(["host"]).output()`. Unix only: the fakes are `sh` scripts.
#![cfg(unix)]
#![allow(dead_code)] // a shared kit: each test module uses a different part of it

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// What the fake driver answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverMode {
    /// Normal answers from the state file.
    Ok,
    /// `couldn't communicate with the NVIDIA driver`, exit 9.
    NoDriver,
    /// `Driver/library version mismatch`, exit 18 (an upgrade before the reboot).
    Mismatch,
    /// Never answers.
    Hang,
}

impl DriverMode {
    fn word(self) -> &'static str {
        match self {
            DriverMode::Ok => "ok",
            DriverMode::NoDriver => "no-driver",
            DriverMode::Mismatch => "mismatch",
            DriverMode::Hang => "hang",
        }
    }
}

/// The fake nvidia-smi; `@ROOT@` is replaced by the fake driver's folder.
const NVIDIA_SMI: &str = r#"#!/bin/sh
# Fake nvidia-smi (tests/cli/fakes.rs). Answers come from @ROOT@/state, which holds
# mode=ok|no-driver|mismatch|hang, driver=VERSION and cuda=X.Y (a fake installer rewrites it).
d='@ROOT@'
mode=ok; driver=; cuda=
. "$d/state"
echo "$*" >> "$d/calls.log"
case "$mode" in
  no-driver) echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."; exit 9 ;;
  mismatch) echo "Failed to initialize NVML: Driver/library version mismatch"; echo "NVML library version: $driver"; exit 18 ;;
  hang) exec sleep 60 ;;
esac
# `-lms N` keeps printing until killed, as the real one does for the prove sampler.
loop=0; for a in "$@"; do [ "$a" = "-lms" ] && loop=1; done
emit() { while :; do cat "$1" 2>/dev/null; [ "$loop" = 1 ] || break; sleep 0.05; done; }
case "$1" in
  --query-gpu=memory.used*) emit "$d/memory.csv"; exit 0 ;;
  --query-gpu=*) sed "s/@DRIVER@/$driver/" "$d/gpus.csv"; exit 0 ;;
  --query-compute-apps=*) [ -e "$d/hide-processes" ] && { emit /dev/null; exit 0; }; emit "$d/apps.csv"; exit 0 ;;
esac
printf '| NVIDIA-SMI %s             Driver Version: %s     CUDA Version: %s     |\n' "$driver" "$driver" "$cuda"
"#;

/// A fake `torch` as `torch.cuda` and friends would answer.
#[derive(Debug, Clone)]
pub struct FakeTorch {
    pub version: String,
    /// `torch.version.cuda`; `None` for a CPU build.
    pub cuda: Option<String>,
    pub cudnn: u32,
    pub available: bool,
    pub device_count: u32,
    pub arch_list: Vec<String>,
    pub capability: (u32, u32),
    pub device_name: String,
}

impl Default for FakeTorch {
    fn default() -> Self {
        Self {
            version: "2.5.1+cu124".to_string(),
            cuda: Some("12.4".to_string()),
            cudnn: 90100,
            available: true,
            device_count: 1,
            arch_list: [
                "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
            ]
            .map(String::from)
            .to_vec(),
            capability: (8, 9),
            device_name: "NVIDIA L4".to_string(),
        }
    }
}

/// A fake workstation in a temp folder.
pub struct FakeHost {
    dir: TempDir,
    gpus: usize,
}

impl FakeHost {
    /// An empty host: `nvidia-smi` present but with no GPUs, no toolkits, no torch.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let host = Self { dir, gpus: 0 };
        for sub in ["bin", "nvidia", "cuda", "python"] {
            fs::create_dir_all(host.root().join(sub)).expect("fake host folders");
        }
        fs::write(host.nvidia().join("gpus.csv"), "").expect("gpus.csv");
        fs::write(host.nvidia().join("memory.csv"), "").expect("memory.csv");
        host.set_driver_state(DriverMode::Ok, "", "");
        let script = NVIDIA_SMI.replace("@ROOT@", &host.nvidia().display().to_string());
        write_executable(&host.bin().join("nvidia-smi"), &script);
        host
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The folder of fake programs, first on `PATH`.
    pub fn bin(&self) -> PathBuf {
        self.root().join("bin")
    }

    /// The prefix toolkits live under (`/usr/local` on a real host).
    pub fn cuda_prefix(&self) -> PathBuf {
        self.root().join("cuda")
    }

    /// The folder on `PYTHONPATH`, where fake packages go.
    pub fn python_path(&self) -> PathBuf {
        self.root().join("python")
    }

    pub fn nvidia(&self) -> PathBuf {
        self.root().join("nvidia")
    }

    /// The file the fake nvidia-smi reads on every call; a fake driver installer rewrites it
    /// with [`FakeHost::driver_state_text`].
    pub fn driver_state_file(&self) -> PathBuf {
        self.nvidia().join("state")
    }

    /// Every argument line nvidia-smi was called with, oldest first.
    pub fn nvidia_smi_calls(&self) -> Vec<String> {
        fs::read_to_string(self.nvidia().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The state file's text for a mode, driver and supported CUDA.
    pub fn driver_state_text(mode: DriverMode, driver: &str, cuda: &str) -> String {
        format!("mode={}\ndriver={driver}\ncuda={cuda}\n", mode.word())
    }

    /// Adds a GPU (index in call order) with its memory in MiB and compute capability.
    pub fn gpu(mut self, name: &str, memory_mib: u64, compute_cap: &str) -> Self {
        let index = self.gpus;
        let uuid = format!("GPU-{index:08x}-fake-4c1e-8f3a-{index:012x}");
        append(
            &self.nvidia().join("gpus.csv"),
            &format!("{index}, {name}, {uuid}, @DRIVER@, {memory_mib}, {compute_cap}\n"),
        );
        append(
            &self.nvidia().join("memory.csv"),
            &format!("0, {memory_mib}\n"),
        );
        self.gpus += 1;
        self
    }

    /// The UUID nvidia-smi reports for the GPU at `index`.
    pub fn gpu_uuid(index: usize) -> String {
        format!("GPU-{index:08x}-fake-4c1e-8f3a-{index:012x}")
    }

    /// A working driver of `version` that supports CUDA up to `cuda`.
    pub fn driver(self, version: &str, cuda: &str) -> Self {
        self.set_driver_state(DriverMode::Ok, version, cuda);
        self
    }

    /// Rewrites the driver's state, as an installer or a reboot would.
    pub fn set_driver_state(&self, mode: DriverMode, driver: &str, cuda: &str) {
        fs::write(
            self.driver_state_file(),
            Self::driver_state_text(mode, driver, cuda),
        )
        .expect("driver state");
    }

    /// nvidia-smi lists no processes at all, whatever runs on the card: a container without the
    /// host's PID namespace (Docker, gVisor), where the card's `memory.used` still moves.
    pub fn hide_processes(&self) {
        fs::write(self.nvidia().join("hide-processes"), "").expect("hide-processes flag");
    }

    /// Removes the fake nvidia-smi: a host with no NVIDIA driver at all.
    pub fn without_nvidia_smi(self) -> Self {
        fs::remove_file(self.bin().join("nvidia-smi")).expect("remove fake nvidia-smi");
        self
    }

    /// A toolkit folder `cuda-X.Y` with `version.json` = `version` and a `bin/nvcc`.
    pub fn toolkit(self, version: &str) -> Self {
        let root = self.toolkit_root(version);
        fs::create_dir_all(&root).expect("toolkit folder");
        let json = format!(r#"{{"cuda": {{"name": "CUDA SDK", "version": "{version}"}}}}"#);
        fs::write(root.join("version.json"), json).expect("version.json");
        self.fake_nvcc(&root, version);
        self
    }

    /// A toolkit folder with only `bin/nvcc` (no version file): the update is unknowable.
    pub fn toolkit_nvcc_only(self, version: &str) -> Self {
        let root = self.toolkit_root(version);
        self.fake_nvcc(&root, version);
        self
    }

    /// Points `<prefix>/cuda` at the toolkit of `version`'s line.
    pub fn default_toolkit(self, version: &str) -> Self {
        let root = self.toolkit_root(version);
        std::os::unix::fs::symlink(&root, self.cuda_prefix().join("cuda")).expect("cuda link");
        self
    }

    /// `<prefix>/cuda-X.Y` for a version `X.Y[.Z]`.
    pub fn toolkit_root(&self, version: &str) -> PathBuf {
        let line: Vec<&str> = version.split('.').take(2).collect();
        self.cuda_prefix().join(format!("cuda-{}", line.join(".")))
    }

    fn fake_nvcc(&self, root: &Path, version: &str) {
        let line: Vec<&str> = version.split('.').take(2).collect();
        let line = line.join(".");
        let script = format!(
            "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n\
             echo 'Cuda compilation tools, release {line}, V{line}.131'\n\
             echo 'Build cuda_{line}.r{line}/compiler.34097967_0'\n"
        );
        write_executable(&root.join("bin").join("nvcc"), &script);
    }

    /// Writes (or rewrites) a fake `torch` package on `PYTHONPATH`.
    pub fn write_torch(&self, torch: &FakeTorch) {
        let py_str = |s: &str| serde_json::to_string(s).expect("string literal");
        let py_bool = |b: bool| if b { "True" } else { "False" };
        let cuda = torch.cuda.as_deref().map_or("None".to_string(), py_str);
        let arch: Vec<String> = torch.arch_list.iter().map(|a| py_str(a)).collect();
        let (major, minor) = torch.capability;
        let text = format!(
            "# fake torch written by tests/cli/fakes.rs\nimport types\n\
             __version__ = {version}\n\
             version = types.SimpleNamespace(cuda={cuda})\n\
             backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: {cudnn}))\n\
             cuda = types.SimpleNamespace(\n\
             \x20   is_available=lambda: {available},\n\
             \x20   device_count=lambda: {count},\n\
             \x20   get_arch_list=lambda: [{arch}],\n\
             \x20   get_device_capability=lambda i=0: ({major}, {minor}),\n\
             \x20   get_device_name=lambda i=0: {name},\n)\n",
            version = py_str(&torch.version),
            cudnn = torch.cudnn,
            available = py_bool(torch.available),
            count = torch.device_count,
            arch = arch.join(", "),
            name = py_str(&torch.device_name),
        );
        self.write_package("torch", &text);
    }

    /// A fake `torch` with the default answers (2.5.1+cu124 on an L4).
    pub fn torch(self, torch: FakeTorch) -> Self {
        self.write_torch(&torch);
        self
    }

    /// A `torch` whose import fails with `ImportError: {message}` (a missing CUDA library).
    pub fn broken_torch(self, message: &str) -> Self {
        let literal = serde_json::to_string(message).expect("string literal");
        self.write_package("torch", &format!("raise ImportError({literal})\n"));
        self
    }

    /// Writes any fake package `name` with `init` as its `__init__.py`.
    pub fn write_package(&self, name: &str, init: &str) {
        let dir = self.python_path().join(name);
        fs::create_dir_all(&dir).expect("package folder");
        fs::write(dir.join("__init__.py"), init).expect("__init__.py");
    }

    /// `PATH` for the child: the fake `bin/` first, then the test's own `PATH` (for `sh`,
    /// `python3`).
    pub fn path_env(&self) -> OsString {
        let mut dirs = vec![self.bin()];
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        std::env::join_paths(dirs).expect("PATH")
    }

    /// Every variable the child needs to see this fake host instead of the real one.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("PATH", self.path_env()),
            ("PYTHONPATH", self.python_path().into_os_string()),
            ("STACKPIN_CUDA_PREFIX", self.cuda_prefix().into_os_string()),
            // Keep Python from writing __pycache__ into the fake packages between rewrites.
            ("PYTHONDONTWRITEBYTECODE", OsString::from("1")),
        ]
    }

    /// The real stackpin binary with this host's environment; variables from the test's own
    /// environment that would change the answers are removed.
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
            .env_remove("STACKPIN_NVIDIA_SMI_TIMEOUT")
            // Tests run as root in CI: the archive default must stay ./installers, not /var/lib.
            .env("STACKPIN_TEST_ADMIN", "0")
            .env("STACKPIN_DATA_DIR", crate::common::no_data_dir())
            .current_dir(self.root());
        for (key, value) in self.env() {
            cmd.env(key, value);
        }
        cmd
    }
}

/// The real `python3` on the test's `PATH`, as an absolute path.
pub fn python3() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|p| p.is_file())
        .expect("these tests need python3 on PATH")
}

fn write_executable(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("folder for a fake program");
    }
    fs::write(path, text).expect("fake program");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod fake program");
}

fn append(path: &Path, text: &str) {
    let mut all = fs::read_to_string(path).unwrap_or_default();
    all.push_str(text);
    fs::write(path, all).expect("append");
}
