//! The one fake-host kit for CLI tests, in two flavours over one [`TestContext`]: a temp folder
//! with a `bin/` of fake programs first on `PATH`, and a fake driver whose `nvidia-smi` answers
//! from a state folder ([`NvidiaState`]: `gpus.csv`, `memory.csv`, `apps.csv`, `state`,
//! `calls.log`) that an installer script can rewrite.
//!
//! - Linux ([`FakeHost`], Unix only): `nvidia-smi` is an `sh` script; fake CUDA toolkit folders
//!   (`version.json`, `bin/nvcc`) under a prefix passed through `STACKPIN_CUDA_PREFIX`; a fake
//!   `torch` package on `PYTHONPATH` for the real `python3`.
//!   `let host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9").driver("570.133.20", "12.8");`
//!   then `host.stackpin(["host"]).output_started()`.
//! - Windows ([`WinHost`], Windows only): laid out the way Windows lays it out. `bin\nvidia-smi.exe`
//!   (a real Windows program built by `scripts/test-windows.sh` from
//!   `tests/windows-fakes/nvidia-smi.c`, reading the same state folder), toolkits under a fake
//!   `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\vX.Y` (a path with spaces), and
//!   `CUDA_PATH` / `CUDA_PATH_VX_Y` variables. The compiled fakes are found through
//!   `STACKPIN_WINDOWS_FAKES`; without it every test using them fails and says how to run them.
//!
//! The fakes are hostile on purpose: children that outlive their parent, an nvidia-smi that can
//! list no process (`hide_processes`), hang, or report a driver/library mismatch.
#![allow(dead_code)] // a shared kit: each test module uses a different part of it

use std::fs;
use std::path::{Path, PathBuf};

#[cfg(unix)]
pub use linux::{FakeHost, FakeTorch, python3};
#[cfg(unix)]
pub use linux_root::{FakeRoot, ready_linux_root};
#[cfg(windows)]
pub use win::{WinHost, fake_program};

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

/// The UUID the fake nvidia-smi reports for the GPU at `index`.
pub fn gpu_uuid(index: usize) -> String {
    format!("GPU-{index:08x}-fake-4c1e-8f3a-{index:012x}")
}

/// The fake driver's state folder, read by both flavours' nvidia-smi on every call.
pub struct NvidiaState {
    dir: PathBuf,
    gpus: usize,
}

impl NvidiaState {
    /// An empty folder: no GPUs, no memory rows, a working driver with no version.
    pub fn new(dir: PathBuf) -> Self {
        fs::create_dir_all(&dir).expect("fake nvidia folder");
        fs::write(dir.join("gpus.csv"), "").expect("gpus.csv");
        fs::write(dir.join("memory.csv"), "").expect("memory.csv");
        let state = Self { dir, gpus: 0 };
        state.set_driver("ok", "", "");
        state
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file with `mode=`, `driver=` and `cuda=`.
    pub fn state_file(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// The state file's text: `mode` is `ok`, `no-driver`, `mismatch` or `hang`.
    pub fn state_text(mode: &str, driver: &str, cuda: &str) -> String {
        format!("mode={mode}\ndriver={driver}\ncuda={cuda}\n")
    }

    /// Rewrites the driver's state, as an installer or a reboot would.
    pub fn set_driver(&self, mode: &str, driver: &str, cuda: &str) {
        fs::write(self.state_file(), Self::state_text(mode, driver, cuda)).expect("driver state");
    }

    /// Adds a GPU row (index in call order); `@DRIVER@` becomes the state's driver.
    pub fn add_gpu(&mut self, name: &str, memory_mib: u64, compute_cap: &str) {
        let index = self.gpus;
        let uuid = gpu_uuid(index);
        append(
            &self.dir.join("gpus.csv"),
            &format!("{index}, {name}, {uuid}, @DRIVER@, {memory_mib}, {compute_cap}\n"),
        );
        self.gpus += 1;
    }

    /// Every argument line nvidia-smi was called with, oldest first.
    pub fn calls(&self) -> Vec<String> {
        fs::read_to_string(self.dir.join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn append(path: &Path, text: &str) {
    let mut all = fs::read_to_string(path).unwrap_or_default();
    all.push_str(text);
    fs::write(path, all).expect("append");
}

/// A fake Linux root for `STACKPIN_HOST_ROOT`: the files and programs stackpin reads a host's
/// readiness for NVIDIA's runfiles from (`/proc/modules`, `/tmp/.X0-lock`,
/// `/lib/modules/$(uname -r)/build`, `/proc/version`, the SecureBoot EFI variable, dpkg's status
/// file, `usr/bin/gcc`, `usr/bin/df`, …). [`FakeRoot::ready`] is a workstation ready for both
/// runfiles; each method breaks one precondition.
#[cfg(unix)]
mod linux_root {
    use std::fs;
    use std::path::{Path, PathBuf};

    use super::linux::write_executable;

    /// The kernel the fake root runs.
    pub const KERNEL: &str = "6.8.0-50-generic";

    /// `df -Pk` with `/tmp` a mount of its own; free KiB from `.df-tmp-kib` / `.df-root-kib`.
    /// Every other folder is on `/` (a test's own folders, mirrored into the root by
    /// [`FakeRoot::holds`], live in the real `/tmp` but stand for folders on `/`).
    const DF: &str = r#"#!/bin/sh
    # Fake df -Pk (tests/cli/fakes.rs): /tmp is a mount of its own; free KiB from files in the root.
    r='@ROOT@'; p="$2"
    case "$p" in "$r/tmp") m=/tmp; f="$r/.df-tmp-kib" ;; *) m=/; f="$r/.df-root-kib" ;; esac
    kib=$(cat "$f" 2>/dev/null || echo 104857600)
    echo "Filesystem     1024-blocks      Used Available Capacity Mounted on"
    echo "/dev/fake        209715200         0 $kib       1% $m"
    "#;

    /// A fake root folder.
    pub struct FakeRoot {
        root: PathBuf,
    }

    impl FakeRoot {
        /// A workstation ready for both runfiles at `root`: kernel headers, gcc 13.2.0 as the
        /// kernel's, make and dkms, nouveau blacklisted and not loaded, no X, 100 GiB free.
        pub fn ready(root: &Path) -> Self {
            let r = Self {
                root: root.to_path_buf(),
            };
            r.write(
                "proc/sys/kernel/osrelease",
                &format!(
                    "{KERNEL}
"
                ),
            );
            r.write(
                "proc/version",
                &format!("Linux version {KERNEL} (buildd@lcy02-amd64-092) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #50-Ubuntu SMP PREEMPT_DYNAMIC
"),
            );
            r.write(
                "proc/modules",
                "video 77824 0 - Live 0x0000000000000000
",
            );
            r.write(
                "etc/modprobe.d/blacklist-nouveau.conf",
                "blacklist nouveau
options nouveau modeset=0
",
            );
            r.write(&format!("lib/modules/{KERNEL}/build/Makefile"), "");
            fs::create_dir_all(root.join("tmp")).expect("tmp");
            r.gcc("13.2.0");
            r.program(
                "usr/bin/make",
                "#!/bin/sh
exit 0
",
            );
            r.program(
                "usr/sbin/dkms",
                "#!/bin/sh
exit 0
",
            );
            r.program(
                "usr/bin/df",
                &DF.replace("@ROOT@", &root.display().to_string()),
            );
            r
        }

        pub fn path(&self) -> &Path {
            &self.root
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.root.join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("folder");
            fs::write(path, text).expect("fake root file");
        }

        fn program(&self, rel: &str, text: &str) {
            write_executable(&self.root.join(rel), text);
        }

        /// `gcc --version` reports `version`.
        pub fn gcc(&self, version: &str) {
            self.program(
                "usr/bin/gcc",
                &format!(
                    "#!/bin/sh
echo 'gcc (Ubuntu {version}-6ubuntu2~24.04) {version}'
"
                ),
            );
        }

        /// nouveau is loaded and not blacklisted.
        pub fn nouveau_loaded(&self) {
            self.write(
                "proc/modules",
                "nouveau 3096576 1 - Live 0x0000000000000000
video 77824 1 nouveau, Live 0x0
",
            );
            let _ = fs::remove_file(self.root.join("etc/modprobe.d/blacklist-nouveau.conf"));
        }

        /// An older NVIDIA driver runs: `nvidia_drm` is loaded.
        pub fn nvidia_drm_loaded(&self) {
            self.write(
                "proc/modules",
                "nvidia_drm 139264 2 - Live 0x0
nvidia 9760768 3 nvidia_drm, Live 0x0
",
            );
        }

        /// An X server holds display :0.
        pub fn x_running(&self) {
            self.write(
                "tmp/.X0-lock",
                "       1234
",
            );
        }

        /// The running kernel's headers are not installed.
        pub fn no_headers(&self) {
            fs::remove_dir_all(self.root.join("lib/modules")).expect("remove headers");
        }

        /// DKMS is not installed.
        pub fn no_dkms(&self) {
            fs::remove_file(self.root.join("usr/sbin/dkms")).expect("remove dkms");
        }

        /// The SecureBoot EFI variable says on.
        pub fn secure_boot_on(&self) {
            let path = self
                .root
                .join("sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c");
            fs::create_dir_all(path.parent().expect("parent")).expect("efivars");
            fs::write(path, [6u8, 0, 0, 0, 1]).expect("SecureBoot variable");
        }

        /// dpkg lists `nvidia-driver-550` as installed.
        pub fn packaged_driver(&self) {
            self.write(
                "var/lib/dpkg/status",
                "Package: nvidia-driver-550
Status: install ok installed
Version: 550.120-0ubuntu0.24.04.1

",
            );
        }

        /// `/tmp` has `gib` GiB free.
        pub fn tmp_free_gib(&self, gib: u64) {
            self.write(
                ".df-tmp-kib",
                &format!(
                    "{}
",
                    gib * 1024 * 1024
                ),
            );
        }

        /// The disk of `/` (everything outside `/tmp`) has `gib` GiB free.
        pub fn root_free_gib(&self, gib: u64) {
            self.write(".df-root-kib", &format!("{}\n", gib * 1024 * 1024));
        }

        /// nouveau is no longer loaded (the reboot after the blacklist).
        pub fn nouveau_unloaded(&self) {
            self.write("proc/modules", "video 77824 0 - Live 0x0\n");
        }

        /// A program at `rel` in the root that records its arguments (one line per run, in
        /// [`FakeRoot::calls`]), runs `then` (shell) and exits with its status.
        pub fn recording_program(&self, rel: &str, then: &str) {
            let name = Path::new(rel)
                .file_name()
                .and_then(|n| n.to_str())
                .expect("name");
            let calls = self.root.join(format!(".calls-{name}"));
            self.program(
                rel,
                &format!("#!/bin/sh\necho \"$@\" >> '{}'\n{then}\n", calls.display()),
            );
        }

        /// The argument lines the recording program `name` was run with.
        pub fn calls(&self, name: &str) -> Vec<String> {
            fs::read_to_string(self.root.join(format!(".calls-{name}")))
                .unwrap_or_default()
                .lines()
                .map(String::from)
                .collect()
        }

        /// The root holds `dir` (a test's archive or toolkit folder), so free space there is
        /// read on `/`, not on the `/tmp` the test's folders really live in.
        pub fn holds(&self, dir: &Path) {
            let rel = dir.strip_prefix("/").unwrap_or(dir);
            fs::create_dir_all(self.root.join(rel)).expect("folder in the fake root");
        }

        /// `/.dockerenv` exists: a container.
        pub fn container(&self) {
            self.write(".dockerenv", "");
        }

        /// `/dev/dxg` exists and the kernel is WSL 2's.
        pub fn wsl(&self) {
            self.write("dev/dxg", "");
            self.write(
                "proc/sys/kernel/osrelease",
                "5.15.153.1-microsoft-standard-WSL2
",
            );
        }

        /// The nvidia-installer log a fake driver runfile writes.
        pub fn installer_log(&self) -> PathBuf {
            self.root.join("var/log/nvidia-installer.log")
        }
    }

    /// The root every CLI test's `stackpin` reads by default (`common::stackpin`): a ready
    /// workstation, so no test depends on the machine it runs on (CI's container has no
    /// `/lib/modules`). Tests of readiness give each command a root of their own.
    pub fn ready_linux_root() -> PathBuf {
        static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        ROOT.get_or_init(|| {
            let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("ready-linux-root-{}", std::process::id()));
            FakeRoot::ready(&root);
            root
        })
        .clone()
    }
}

/// The Linux flavour: `sh` scripts.
#[cfg(unix)]
mod linux {
    use std::ffi::{OsStr, OsString};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::{DriverMode, NvidiaState, append, gpu_uuid};
    use crate::common::TestContext;

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
        ctx: TestContext,
        nvidia: NvidiaState,
    }

    impl FakeHost {
        /// An empty host: `nvidia-smi` present but with no GPUs, no toolkits, no torch.
        pub fn new() -> Self {
            let ctx = TestContext::new();
            for sub in ["bin", "cuda", "python"] {
                fs::create_dir_all(ctx.path(sub)).expect("fake host folders");
            }
            let nvidia = NvidiaState::new(ctx.path("nvidia"));
            let host = Self { ctx, nvidia };
            let script = NVIDIA_SMI.replace("@ROOT@", &host.nvidia().display().to_string());
            write_executable(&host.bin().join("nvidia-smi"), &script);
            host
        }

        pub fn root(&self) -> &Path {
            self.ctx.root()
        }

        /// The test context under the host: its temp folder, archive and environment.
        pub fn context(&self) -> &TestContext {
            &self.ctx
        }

        /// The archive under the host's folder (`./installers` from its working folder).
        pub fn archive(&self) -> PathBuf {
            self.ctx.archive()
        }

        /// `stackpin ARGS` as the fetch/install/prove harnesses run it: this host, its archive
        /// named outright, no admin check, no wait between retries.
        pub fn installing<I, S>(&self, args: I) -> Command
        where
            I: IntoIterator<Item = S>,
            S: AsRef<std::ffi::OsStr>,
        {
            let mut cmd = self.stackpin(args);
            crate::common::installing(&mut cmd, &self.archive());
            cmd
        }

        /// Sets a variable for every command this host builds from now on.
        pub fn set_env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
            self.ctx.set_env(key, value);
            self
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
            self.nvidia.dir().to_path_buf()
        }

        /// The file the fake nvidia-smi reads on every call; a fake driver installer rewrites it
        /// with [`FakeHost::driver_state_text`].
        pub fn driver_state_file(&self) -> PathBuf {
            self.nvidia.state_file()
        }

        /// Every argument line nvidia-smi was called with, oldest first.
        pub fn nvidia_smi_calls(&self) -> Vec<String> {
            self.nvidia.calls()
        }

        /// The state file's text for a mode, driver and supported CUDA.
        pub fn driver_state_text(mode: DriverMode, driver: &str, cuda: &str) -> String {
            NvidiaState::state_text(mode.word(), driver, cuda)
        }

        /// Adds a GPU (index in call order) with its memory in MiB and compute capability.
        pub fn gpu(mut self, name: &str, memory_mib: u64, compute_cap: &str) -> Self {
            self.nvidia.add_gpu(name, memory_mib, compute_cap);
            append(
                &self.nvidia().join("memory.csv"),
                &format!("0, {memory_mib}\n"),
            );
            self
        }

        /// The UUID nvidia-smi reports for the GPU at `index`.
        pub fn gpu_uuid(index: usize) -> String {
            gpu_uuid(index)
        }

        /// A working driver of `version` that supports CUDA up to `cuda`.
        pub fn driver(self, version: &str, cuda: &str) -> Self {
            self.set_driver_state(DriverMode::Ok, version, cuda);
            self
        }

        /// Rewrites the driver's state, as an installer or a reboot would.
        pub fn set_driver_state(&self, mode: DriverMode, driver: &str, cuda: &str) {
            self.nvidia.set_driver(mode.word(), driver, cuda);
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
            write_executable(&root.join("bin").join("nvcc"), &nvcc_script(version));
        }

        /// A fake nvcc of `version`'s line written once under the host's root, for fake
        /// installers to copy into the toolkit folder they make (`cp '<path>' "$dir/bin/nvcc"`).
        pub fn nvcc_to_copy(&self, version: &str) -> PathBuf {
            let path = self.root().join(format!("fake-nvcc-{version}"));
            write_executable(&path, &nvcc_script(version));
            path
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

        /// The workstation the fetch/install/prove harnesses stand on: one NVIDIA L4, driver
        /// 595.71.05 (CUDA 12.8), toolkit 12.4.1 and the default torch, all in place.
        pub fn l4_workstation() -> Self {
            Self::new()
                .gpu("NVIDIA L4", 23034, "8.9")
                .driver("595.71.05", "12.8")
                .toolkit("12.4.1")
                .torch(FakeTorch::default())
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
            let mut cmd = self.ctx.stackpin(args);
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

    /// A fake nvcc of `version`'s line: `--version` prints the line as nvcc does; a compile
    /// (`-arch=sm_XY -c k.cu -o k.o`) writes the object, and refuses an architecture it does not
    /// know in nvcc's own words.
    pub fn nvcc_script(version: &str) -> String {
        let line: Vec<&str> = version.split('.').take(2).collect();
        let line = line.join(".");
        format!(
            "#!/bin/sh\n# Fake nvcc (tests/cli/fakes.rs).\narch=; out=; prev=\n\
             for a in \"$@\"; do\n  case \"$a\" in\n    --version)\n\
                   echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n\
                   echo 'Cuda compilation tools, release {line}, V{line}.131'\n\
                   echo 'Build cuda_{line}.r{line}/compiler.34097967_0'\n      exit 0;;\n\
                 -arch=*) arch=\"${{a#-arch=}}\";;\n  esac\n\
               [ \"$prev\" = -o ] && out=\"$a\"\n  prev=\"$a\"\ndone\n\
             case \"$arch\" in\n  ''|sm_50|sm_52|sm_60|sm_61|sm_70|sm_75|sm_80|sm_86|sm_87|sm_89|sm_90|sm_100|sm_120) ;;\n\
               *) echo \"nvcc fatal   : Unsupported gpu architecture '$arch'\" >&2; exit 1;;\nesac\n\
             [ -n \"$out\" ] && echo fake-object > \"$out\"\nexit 0\n"
        )
    }

    pub(super) fn write_executable(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("folder for a fake program");
        }
        fs::write(path, text).expect("fake program");
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod fake program");
    }
}

/// The Windows flavour: compiled fake programs, `%ProgramFiles%`, `CUDA_PATH` variables.
#[cfg(windows)]
mod win {
    use std::ffi::OsString;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::NvidiaState;
    use crate::common::TestContext;

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
        ctx: TestContext,
        nvidia: NvidiaState,
        cuda_path: Option<PathBuf>,
        extra_env: Vec<(String, OsString)>,
    }

    impl WinHost {
        /// No nvidia-smi, no toolkits.
        pub fn new() -> Self {
            let ctx = TestContext::with_prefix("stackpin win host ");
            for sub in ["bin", "Program Files"] {
                fs::create_dir_all(ctx.path(sub)).expect("fake host folders");
            }
            let nvidia = NvidiaState::new(ctx.path("nvidia"));
            Self {
                ctx,
                nvidia,
                cuda_path: None,
                extra_env: vec![],
            }
        }

        pub fn root(&self) -> &Path {
            self.ctx.root()
        }

        /// The test context under the host: its temp folder, archive and environment.
        pub fn context(&self) -> &TestContext {
            &self.ctx
        }

        /// The archive under the host's folder (`./installers` from its working folder).
        pub fn archive(&self) -> PathBuf {
            self.ctx.archive()
        }

        /// `stackpin ARGS` as the fetch/install/prove harnesses run it: this host, its archive
        /// named outright, no admin check, no wait between retries.
        pub fn installing<I, S>(&self, args: I) -> Command
        where
            I: IntoIterator<Item = S>,
            S: AsRef<std::ffi::OsStr>,
        {
            let mut cmd = self.stackpin(args);
            crate::common::installing(&mut cmd, &self.archive());
            cmd
        }

        pub fn bin(&self) -> PathBuf {
            self.root().join("bin")
        }

        /// The fake `%ProgramFiles%`.
        pub fn program_files(&self) -> PathBuf {
            self.root().join("Program Files")
        }

        fn nvidia(&self) -> PathBuf {
            self.nvidia.dir().to_path_buf()
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
            self.nvidia.set_driver(mode, driver, cuda);
        }

        pub fn driver(self, version: &str, cuda: &str) -> Self {
            self.set_driver("ok", version, cuda);
            self
        }

        pub fn gpu(mut self, name: &str, memory_mib: u64, compute_cap: &str) -> Self {
            self.nvidia.add_gpu(name, memory_mib, compute_cap);
            self
        }

        /// Every argument line nvidia-smi was called with, oldest first.
        pub fn nvidia_smi_calls(&self) -> Vec<String> {
            self.nvidia.calls()
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
            // The fake whoami may report Administrator: the context keeps STACKPIN_TEST_ADMIN=0,
            // so the archive default stays ./installers.
            let mut cmd = self.ctx.stackpin(args);
            cmd.env_remove("CUDA_PATH");
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
}
