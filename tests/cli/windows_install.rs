//! `plan` and `install` on a fake Windows host (under Wine in CI): the driver is a real `.exe`
//! run by argv that exits 3010 (reboot required), the toolkit a `.cmd` installer that writes its
//! folder under `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v12.4`, both served over
//! loopback and archived by `stackpin fetch` as usual. Every installer appends its layer to
//! `order.log`, so the tests assert the real order.
#![cfg(windows)]

use crate::common::OutputStarted;
use std::fs;
use std::path::PathBuf;
use std::process::Output;

use crate::fakes::{WinHost, fake_program};
use crate::server::TestServer;

const DRIVER_EXE: &str = "581.15-desktop-win10-win11-64bit-international-dch-whql.exe";
const TOOLKIT_CMD: &str = "cuda_12.4.1_551.78_windows.cmd";
const LIBRARY_EXE: &str = "torch-setup.exe";

/// Writes `%1`'s `version.json` the way the real toolkit installer leaves its folder, then
/// exits with `{code}`.
const TOOLKIT_SCRIPT: &str = "@echo off\r\n\
echo toolkit>> \"%FAKE_INSTALLER_LOG%\"\r\n\
mkdir \"%~1\\bin\"\r\n\
> \"%~1\\version.json\" echo {\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"12.4.1\"}}\r\n\
exit /b {code}\r\n";

/// How the lab's installers end and what the library step runs.
struct Setup {
    driver_exit: &'static str,
    toolkit_exit: &'static str,
    /// The library step runs `{python}` (the manifest says `python: python`) instead of its
    /// archived `.exe`.
    library_by_python: bool,
}

struct Lab {
    host: WinHost,
    _server: TestServer,
    manifest: PathBuf,
}

impl Lab {
    fn new() -> Self {
        Self::with_driver_exit("3010")
    }

    /// A lab whose fake driver installer exits with `code`.
    fn with_driver_exit(code: &'static str) -> Self {
        Self::with(Setup {
            driver_exit: code,
            toolkit_exit: "0",
            library_by_python: false,
        })
    }

    fn with(setup: Setup) -> Self {
        let code = setup.driver_exit;
        let host = WinHost::new()
            .with_nvidia_smi()
            .gpu("NVIDIA GeForce RTX 4090", 24564, "8.9");
        host.set_driver("no-driver", "", "");
        let server = TestServer::start();
        let exe = fs::read(fake_program("installer.exe")).expect("fake installer");
        server.file(DRIVER_EXE, &exe);
        let toolkit = TOOLKIT_SCRIPT.replace("{code}", setup.toolkit_exit);
        server.file(TOOLKIT_CMD, toolkit.as_bytes());
        // `{installer}` is named either way: `check` refuses a step that never runs the
        // archived file.
        let library_run = if setup.library_by_python {
            r#"{python}", "0", "library", "{installer}"#
        } else {
            r#"{installer}", "0", "library"#
        };
        server.file(LIBRARY_EXE, &exe);
        let root = host.toolkit_root("12.4.1");
        let yaml_root = root.display().to_string().replace('\\', "\\\\");
        let text = format!(
            "schema: 1\nname: fake-windows-stack\nos: windows\n\
             driver:\n  version: \"581.15\"\n  installer:\n    url: {d}\n  run: [\"{{installer}}\", \"{code}\", \"driver\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{yaml_root}\"\n  run: [\"{{installer}}\", \"{{root}}\", \"-s\", \"-n\", \"nvcc_12.4\", \"cudart_12.4\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python\n  installers:\n    - url: {l}\n  run: [\"{library_run}\"]\n\
             example:\n  run: [\"{{python}}\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
            d = server.url(DRIVER_EXE),
            t = server.url(TOOLKIT_CMD),
            l = server.url(LIBRARY_EXE),
            code = code,
            library_run = library_run,
        );
        let manifest = host.root().join("windows stack.yaml");
        fs::write(&manifest, text).expect("manifest");
        let lab = Self {
            host,
            _server: server,
            manifest,
        };
        let fetched = lab.run(&["fetch"]);
        assert_eq!(
            fetched.status.code(),
            Some(0),
            "fetch: {}",
            text_of(&fetched)
        );
        lab
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.host.installing(args.iter().copied());
        cmd.arg(&self.manifest)
            .env("FAKE_INSTALLER_LOG", self.order_log());
        cmd.output_started().expect("stackpin runs")
    }

    fn order_log(&self) -> PathBuf {
        self.host.root().join("order.log")
    }

    /// The layers whose installers ran, in order.
    fn order(&self) -> Vec<String> {
        fs::read_to_string(self.order_log())
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| ["driver", "toolkit", "library"].contains(l))
            .map(String::from)
            .collect()
    }
}

fn text_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn plan_on_a_windows_host_lists_every_layer_in_order_and_runs_nothing() {
    let lab = Lab::new();
    let out = lab.run(&["plan"]);
    let all = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let driver = all.find(DRIVER_EXE).expect("driver installer named");
    let toolkit = all.find(TOOLKIT_CMD).expect("toolkit installer named");
    let library = all.find(LIBRARY_EXE).expect("library installer named");
    assert!(driver < toolkit && toolkit < library, "{all}");
    assert!(all.contains("Program Files"), "the toolkit's root: {all}");
    assert!(lab.order().is_empty(), "plan must run nothing");
}

#[test]
fn install_runs_the_driver_exe_then_stops_for_the_reboot_3010_asked_for() {
    let lab = Lab::new();
    let first = lab.run(&["install", "--yes"]);
    let all = text_of(&first);
    assert_eq!(first.status.code(), Some(0), "{all}");
    assert!(all.contains("reboot"), "{all}");
    assert_eq!(lab.order(), ["driver"], "{all}");

    // The machine restarts with the new driver; the chain goes on with the toolkit and library.
    lab.host.set_driver("ok", "581.15", "13.0");
    let second = lab.run(&["install", "--yes"]);
    let all = text_of(&second);
    assert_eq!(lab.order(), ["driver", "toolkit", "library"], "{all}");
    let root = lab.host.toolkit_root("12.4.1");
    assert!(
        root.join("version.json").is_file(),
        "the .cmd installer got the path with spaces whole: {all}"
    );
}

/// `install` writes the driver guard's two policies, in the policy keys, before the driver's
/// setup runs; `--no-guard` writes none. A fake `reg.exe` in `bin\` logs its arguments to the
/// same log the installers write their layer to.
#[test]
fn install_writes_the_driver_guard_in_the_policy_keys_before_the_driver_step() {
    let lab = Lab::new();
    fs::copy(
        fake_program("installer.exe"),
        lab.host.bin().join("reg.exe"),
    )
    .expect("fake reg");
    let out = lab.run(&["install", "--yes"]);
    let all = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let log = fs::read_to_string(lab.order_log()).unwrap_or_default();
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| *l == needle)
            .unwrap_or_else(|| panic!("{needle} in {lines:?}\n{all}"))
    };
    let driver = at("driver");
    for (key, value) in [
        (
            r"HKLM\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate",
            "ExcludeWUDriversInQualityUpdate",
        ),
        (
            r"HKLM\SOFTWARE\Policies\Microsoft\Windows\DriverSearching",
            "SearchOrderConfig",
        ),
    ] {
        assert!(at(key) < driver, "{key} before the driver: {lines:?}");
        assert!(at(value) < driver, "{value} before the driver: {lines:?}");
    }

    let lab = Lab::new();
    fs::copy(
        fake_program("installer.exe"),
        lab.host.bin().join("reg.exe"),
    )
    .expect("fake reg");
    let out = lab.run(&["install", "--yes", "--no-guard"]);
    let log = fs::read_to_string(lab.order_log()).unwrap_or_default();
    assert!(
        !log.contains("SearchOrderConfig"),
        "{log}\n{}",
        text_of(&out)
    );
    assert_eq!(lab.order(), ["driver"], "{}", text_of(&out));
}

#[test]
fn a_driver_setup_exiting_1_stops_for_the_reboot_as_nvidias_installer_means_it() {
    let lab = Lab::with_driver_exit("1");
    let first = lab.run(&["install", "--yes"]);
    let all = text_of(&first);
    assert_eq!(first.status.code(), Some(0), "{all}");
    assert!(all.contains("reboot"), "{all}");
    assert_eq!(lab.order(), ["driver"], "{all}");
    let state = fs::read_to_string(
        lab.host
            .root()
            .join("installers")
            .join("fake-windows-stack")
            .join("state.yaml"),
    )
    .expect("state.yaml");
    assert!(state.contains("reboot_pending"), "{state}");
}

#[test]
fn a_driver_setup_exiting_7_fails_the_chain_with_its_code() {
    let lab = Lab::with_driver_exit("7");
    let out = lab.run(&["install", "--yes"]);
    let all = text_of(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(all.contains("code 7"), "{all}");
    assert_eq!(lab.order(), ["driver"], "{all}");
}

#[test]
fn resume_runs_the_saved_argv_once_and_removes_the_file() {
    let lab = Lab::new();
    let file = lab.host.root().join("installers").join("resume-argv.json");
    let installer = fake_program("installer.exe");
    let argv = vec![
        installer.display().to_string(),
        "0".to_string(),
        "resumed with spaces".to_string(),
    ];
    fs::write(&file, serde_json::to_string(&argv).expect("json")).expect("argv file");
    let out = lab
        .host
        .stackpin(["resume".as_ref(), file.as_os_str()])
        .env("FAKE_INSTALLER_LOG", lab.order_log())
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let log = fs::read_to_string(lab.order_log()).expect("log");
    assert!(
        log.contains("resumed with spaces"),
        "one argument, whole: {log}"
    );
    assert!(!file.exists(), "the argv file is used once");
}

/// The unattended reboot under Wine: fake `schtasks.exe` and `shutdown.exe` in `bin\` (the fake
/// installer, which logs its arguments), a test that plays the boot task by running
/// `stackpin resume` on the saved argv file, and `STACKPIN_TEST_BOOT_ID` saying which boot the
/// machine is on.
impl Lab {
    fn with_task_scheduler(self) -> Self {
        let exe = fake_program("installer.exe");
        for name in ["schtasks.exe", "shutdown.exe"] {
            fs::copy(&exe, self.host.bin().join(name)).expect("fake system program");
        }
        self
    }

    fn stack_dir(&self) -> PathBuf {
        self.host
            .root()
            .join("installers")
            .join("fake-windows-stack")
    }

    /// `install --yes --reboot` on boot `boot`, with `extra_path` after `bin\` on PATH.
    fn install_rebooting(&self, boot: &str, extra_path: Option<&std::path::Path>) -> Output {
        let mut cmd = self.host.installing(["install", "--yes", "--reboot"]);
        cmd.arg(&self.manifest)
            .env("FAKE_INSTALLER_LOG", self.order_log())
            .env("STACKPIN_TEST_BOOT_ID", boot);
        if let Some(dir) = extra_path {
            let path = cmd
                .get_envs()
                .find(|(k, _)| *k == "PATH")
                .and_then(|(_, v)| v.map(std::ffi::OsStr::to_os_string))
                .expect("the host's PATH");
            let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
            dirs.insert(1, dir.to_path_buf());
            cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
        }
        cmd.output_started().expect("stackpin runs")
    }

    /// What the boot task does on boot `boot`: `stackpin resume FILE`, with the host's PATH only.
    fn boot(&self, boot: &str) -> Output {
        let file = self.stack_dir().join("resume-argv.json");
        assert!(file.is_file(), "no resume was registered");
        self.host
            .installing(["resume".as_ref(), file.as_os_str()])
            .env("FAKE_INSTALLER_LOG", self.order_log())
            .env("STACKPIN_TEST_BOOT_ID", boot)
            .output_started()
            .expect("stackpin runs")
    }

    /// How many times a fake system program was called with this first argument.
    fn calls(&self, first_arg: &str) -> usize {
        fs::read_to_string(self.order_log())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.trim() == first_arg)
            .count()
    }

    fn resume_log(&self) -> String {
        fs::read_to_string(self.stack_dir().join("resume.log")).unwrap_or_default()
    }
}

#[test]
fn a_chain_that_needs_two_reboots_is_resumed_twice_with_the_users_python() {
    let lab = Lab::with(Setup {
        driver_exit: "3010",
        toolkit_exit: "3010",
        library_by_python: true,
    })
    .with_task_scheduler();
    // python.org's per-user install: on the user's PATH only, never on SYSTEM's.
    let user_python = lab.host.root().join("user python");
    fs::create_dir_all(&user_python).expect("folder");
    fs::copy(
        fake_program("installer.exe"),
        user_python.join("python.exe"),
    )
    .expect("fake python");

    let first = lab.install_rebooting("boot-1", Some(&user_python));
    let all = text_of(&first);
    assert_eq!(first.status.code(), Some(0), "{all}");
    assert_eq!(lab.order(), ["driver"], "{all}");
    assert_eq!((lab.calls("/Create"), lab.calls("/r")), (1, 1), "{all}");
    let argv = fs::read_to_string(lab.stack_dir().join("resume-argv.json")).expect("argv");
    assert!(argv.contains("--library-python"), "{argv}");
    assert!(argv.contains("user python"), "{argv}");

    // Boot 2: the driver is up; the toolkit asks for a second reboot.
    lab.host.set_driver("ok", "581.15", "13.0");
    let second = lab.boot("boot-2");
    let log = lab.resume_log();
    assert_eq!(second.status.code(), Some(0), "{}{log}", text_of(&second));
    assert_eq!(lab.order(), ["driver", "toolkit"], "{log}");
    assert_eq!(
        lab.calls("/Delete"),
        1,
        "the resume deletes its task: {log}"
    );
    assert_eq!(
        (lab.calls("/Create"), lab.calls("/r")),
        (2, 2),
        "the second reboot is registered after the first task was deleted: {log}"
    );

    // Boot 3: the library installs with the interpreter stored at the first reboot.
    let third = lab.boot("boot-3");
    let log = lab.resume_log();
    assert_eq!(lab.order(), ["driver", "toolkit", "library"], "{log}");
    assert_eq!(lab.calls("/Delete"), 2, "{log}");
    assert_eq!(lab.calls("/r"), 2, "no third reboot: {log}");
    assert!(
        log.contains("stackpin resume:"),
        "the resume's own log: {log}"
    );
    let record = fs::read_to_string(lab.stack_dir().join("resume.yaml")).expect("resume.yaml");
    assert!(record.contains("outcome"), "{record}");
    let status = lab.run(&["status"]);
    let said = text_of(&status);
    assert!(said.contains("last unattended resume"), "{said}");
    assert!(said.contains("resume.log"), "{said}");
    let _ = third;
}

#[test]
fn a_driver_still_failing_after_a_real_reboot_stops_without_another_reboot() {
    let lab = Lab::new().with_task_scheduler();
    let first = lab.install_rebooting("boot-1", None);
    assert_eq!(first.status.code(), Some(0), "{}", text_of(&first));
    assert_eq!(lab.calls("/r"), 1);

    // Boot 2 came, and the driver did not: no second reboot, an error in the resume's log.
    let second = lab.boot("boot-2");
    let log = lab.resume_log();
    assert_ne!(second.status.code(), Some(0), "{log}");
    assert_eq!(lab.calls("/r"), 1, "{log}");
    assert!(log.contains("did not come up"), "{log}");
    let status = lab.run(&["status"]);
    let said = text_of(&status);
    assert!(said.contains("ended badly"), "{said}");
}

#[test]
fn a_share_as_archive_is_refused_for_reboot_before_any_layer() {
    let lab = Lab::new().with_task_scheduler();
    let out = lab
        .host
        .installing([
            "install",
            "--yes",
            "--reboot",
            "--archive",
            r"\\fileserver\lab\installers",
        ])
        .arg(&lab.manifest)
        .env("FAKE_INSTALLER_LOG", lab.order_log())
        .output_started()
        .expect("stackpin runs");
    let all = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("network share"), "{all}");
    assert!(lab.order().is_empty(), "{all}");
    assert_eq!(lab.calls("/r"), 0, "{all}");
}
