//! Windows code paths run for real (under Wine in CI, see `scripts/test-windows.sh`): toolkit
//! folders under `C:\Program Files\…` with spaces, `CUDA_PATH_VX_Y` discovery, `nvidia-smi.exe`
//! on PATH and in System32, `.exe` and `.cmd` installers run by argv with 3010 read as "reboot
//! required", and the archive's fetch → audit → bundle → unbundle round trip in folders with
//! spaces, with read-only installers and a file held open. The shipped Windows manifests pass
//! `check` here too. What Wine cannot show (a real driver install, real sharing violations) is
//! left to a real Windows machine; docs/windows.md says so.
#![cfg(windows)]

use crate::common::OutputStarted;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use stackpin::exec::step::{Step, StepStatus, run_step, substitute};

use crate::common::{shipped_manifests, stackpin};
use crate::fakes::{WinHost, fake_program};
use crate::server::TestServer;

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn toolkits_under_program_files_and_cuda_path_variables_are_found_despite_spaces() {
    let host = WinHost::new();
    let elsewhere = host.root().join("Other Drive").join("CUDA 11.8");
    let v124 = host.toolkit_root("12.4.1");
    let host = host
        .toolkit("12.4.1")
        .toolkit_by_variable("11.8.0", &elsewhere)
        .cuda_path(&v124);
    assert!(v124.ends_with(r"Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4"));
    let out = host
        .stackpin(["host", "--json"])
        .output_started()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["os"]["family"], "windows", "{doc:#}");
    let toolkits = doc["toolkits"].as_array().expect("toolkits");
    assert_eq!(toolkits.len(), 2, "{doc:#}");
    assert_eq!(toolkits[0]["version"], "11.8.0");
    assert_eq!(toolkits[0]["root"], elsewhere.display().to_string());
    assert_eq!(toolkits[0]["found_by"][0], "CUDA_PATH_V11_8");
    assert_eq!(toolkits[1]["version"], "12.4.1");
    assert_eq!(toolkits[1]["root"], v124.display().to_string());
    assert_eq!(toolkits[1]["default"], true, "CUDA_PATH names the default");
}

#[test]
fn nvidia_smi_exe_on_path_reports_the_driver_and_gpus() {
    let host = WinHost::new()
        .with_nvidia_smi()
        .gpu("NVIDIA GeForce RTX 4090", 24564, "8.9")
        .driver("581.15", "13.0");
    let out = host
        .stackpin(["host", "--json"])
        .output_started()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(doc["driver"]["state"], "ok", "{doc:#}");
    assert_eq!(
        doc["driver"]["nvidia_smi"],
        host.bin().join("nvidia-smi.exe").display().to_string()
    );
    assert_eq!(doc["driver"]["cuda_supported"], "13.0");
    assert_eq!(doc["driver"]["gpus"][0]["name"], "NVIDIA GeForce RTX 4090");
    assert_eq!(doc["driver"]["gpus"][0]["driver_version"], "581.15");
    assert!(!host.nvidia_smi_calls().is_empty());
}

#[test]
fn a_driver_that_does_not_answer_is_a_state_with_its_fix() {
    let host = WinHost::new()
        .with_nvidia_smi()
        .gpu("NVIDIA L4", 23034, "8.9");
    host.set_driver("no-driver", "", "");
    let out = host.stackpin(["host"]).output_started().expect("runs");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("no driver"), "{stdout}");
}

/// Removes the fake from System32 even when the test fails.
struct InSystem32(PathBuf);

impl Drop for InSystem32 {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

#[test]
fn nvidia_smi_exe_in_system32_is_found_when_it_is_not_on_path() {
    let host = WinHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver("581.15", "13.0");
    let windows = std::env::var("SystemRoot").unwrap_or_else(|_| r"C:\windows".to_string());
    let placed = InSystem32(Path::new(&windows).join("System32").join("nvidia-smi.exe"));
    fs::copy(fake_program("nvidia-smi.exe"), &placed.0)
        .expect("the Wine prefix's System32 is writable");
    // PATH without System32: only the usual-places lookup can find it.
    let out = host
        .stackpin(["host", "--json"])
        .env("PATH", host.bin())
        .output_started()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let found = doc["driver"]["nvidia_smi"].as_str().unwrap_or_default();
    assert!(
        found.eq_ignore_ascii_case(r"C:\Windows\System32\nvidia-smi.exe"),
        "{doc:#}"
    );
    assert_eq!(doc["driver"]["state"], "ok", "{doc:#}");
    assert_eq!(doc["driver"]["gpus"][0]["name"], "NVIDIA L4");
}

/// A folder with spaces holding a copy of the fake installer as `name`.
fn installer_in_program_files(dir: &Path, name: &str) -> PathBuf {
    let folder = dir.join("Program Files").join("Vendor Setup");
    fs::create_dir_all(&folder).expect("installer folder");
    let exe = folder.join(name);
    fs::copy(fake_program("installer.exe"), &exe).expect("copy fake installer");
    exe
}

fn step(argv: Vec<String>, log: PathBuf) -> Step {
    Step {
        argv,
        env: vec![],
        env_remove: vec![],
        log,
        timeout: Duration::from_secs(60),
        cwd: None,
    }
}

#[test]
fn an_exe_installer_runs_by_argv_with_spaces_and_3010_means_reboot_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = installer_in_program_files(dir.path(), "cuda 12.4.1 setup.exe");
    let root = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4";
    let values = BTreeMap::from([
        ("installer", exe.display().to_string()),
        ("root", root.to_string()),
    ]);
    let template = [
        "{installer}",
        "3010",
        "-s",
        "--toolkitpath={root}",
        "two words",
    ];
    let argv = substitute(&template.map(String::from), &values).expect("placeholders");
    let log = dir.path().join("My Logs").join("toolkit.log");
    let outcome = run_step(&step(argv, log.clone())).expect("the installer runs");
    assert_eq!(outcome.code, Some(3010));
    assert_eq!(outcome.status, StepStatus::RebootRequired);
    let logged = fs::read_to_string(&log).expect("log written");
    // Each argument arrived whole: no shell split the path or the two words.
    for line in [
        "arg: 3010",
        "arg: -s",
        &format!("arg: --toolkitpath={root}"),
        "arg: two words",
    ] {
        assert!(logged.lines().any(|l| l == line), "{line:?} in\n{logged}");
    }
}

#[test]
fn an_exe_installer_that_fails_is_failed_with_its_code_and_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = installer_in_program_files(dir.path(), "driver setup.exe");
    let argv = vec![exe.display().to_string(), "1603".to_string()];
    let outcome = run_step(&step(argv, dir.path().join("driver.log"))).expect("runs");
    assert_eq!(outcome.code, Some(1603));
    assert_eq!(outcome.status, StepStatus::Failed);
    assert!(
        outcome.tail.iter().any(|l| l == "arg: 1603"),
        "{:?}",
        outcome.tail
    );
}

#[test]
fn a_cmd_installer_runs_through_cmd_and_its_exit_code_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("Setup Files");
    fs::create_dir_all(&folder).expect("folder");
    let script = folder.join("install.cmd");
    fs::write(
        &script,
        "@echo off\r\necho installing %1\r\nexit /b 3010\r\n",
    )
    .expect("write .cmd");
    let argv = vec![
        "cmd".to_string(),
        "/c".to_string(),
        script.display().to_string(),
        "toolkit".to_string(),
    ];
    let outcome = run_step(&step(argv, dir.path().join("cmd.log"))).expect("cmd runs");
    assert_eq!(outcome.code, Some(3010), "{:?}", outcome.tail);
    assert_eq!(outcome.status, StepStatus::RebootRequired);
    assert!(
        outcome
            .tail
            .iter()
            .any(|l| l.trim() == "installing toolkit"),
        "{:?}",
        outcome.tail
    );
}

/// The lines the hostile fake's child has written so far.
fn ticks(path: &Path) -> usize {
    fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn an_exe_whose_child_hangs_holding_the_pipes_is_ended_with_its_child_at_the_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = dir.path().join("Setup Files").join("driver setup.exe");
    fs::create_dir_all(exe.parent().expect("folder")).expect("folder");
    fs::copy(fake_program("hang.exe"), &exe).expect("copy hostile fake");
    let tick_file = dir.path().join("child ticks.txt");
    let argv = vec![
        exe.display().to_string(),
        "parent".to_string(),
        tick_file.display().to_string(),
    ];
    let mut slow = step(argv, dir.path().join("hang.log"));
    slow.timeout = Duration::from_secs(3);
    let started = std::time::Instant::now();
    let outcome = run_step(&slow).expect("runs");
    let took = started.elapsed();
    assert_eq!(outcome.status, StepStatus::TimedOut, "{:?}", outcome.tail);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(ticks(&tick_file) > 0, "the child ran: {:?}", outcome.tail);
    // The child is gone with its parent: it writes no more ticks.
    std::thread::sleep(Duration::from_millis(500));
    let after = ticks(&tick_file);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(ticks(&tick_file), after, "the child outlived the timeout");
}

#[test]
fn a_missing_installer_is_a_spawn_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("Program Files").join("no such setup.exe");
    let argv = vec![missing.display().to_string()];
    let err = run_step(&step(argv, dir.path().join("x.log"))).expect_err("cannot start");
    assert!(err.to_string().contains("no such setup.exe"), "{err}");
}

#[test]
fn the_shipped_windows_manifests_pass_check() {
    let windows: Vec<PathBuf> = shipped_manifests()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with("-windows.yaml"))
        .collect();
    assert!(windows.len() >= 2, "{windows:?}");
    for manifest in windows {
        let out = stackpin()
            .arg("check")
            .arg(&manifest)
            .output_started()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}{}",
            manifest.display(),
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}

const DRIVER: &str = "581.15-desktop-win10-win11-64bit-international-dch-whql.exe";
const TOOLKIT: &str = "cuda_12.4.1_551.78_windows.exe";
const WHEEL: &str = "torch-2.5.1+cu124-cp312-cp312-win_amd64.whl";

fn windows_manifest(dir: &Path, server: &TestServer) -> PathBuf {
    let text = format!(
        r#"schema: 1
name: win-stack
os: windows
driver:
  version: "581.15"
  installer:
    url: {}
  run: ["{{installer}}", "-s", "-noreboot"]
toolkit:
  version: "12.4.1"
  installer:
    url: {}
  root: "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4"
  run: ["{{installer}}", "-s", "-n", "nvcc_12.4"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  installers:
    - url: {}
  run: ["{{installer}}"]
example:
  run: ["python", "{{examples}}/classify.py", "--batch-size", "{{batch}}"]
  batch: 64
"#,
        server.url(DRIVER),
        server.url(TOOLKIT),
        server.url(WHEEL)
    );
    let path = dir.join("win stack.yaml");
    fs::write(&path, text).expect("manifest");
    path
}

#[test]
fn fetch_audit_bundle_unbundle_round_trip_in_folders_with_spaces() {
    let server = TestServer::start();
    let bodies: Vec<Vec<u8>> = (1..=3u8)
        .map(|seed| {
            (0..200_000usize)
                .map(|i| (i as u8).wrapping_mul(seed))
                .collect()
        })
        .collect();
    for (name, body) in [DRIVER, TOOLKIT, WHEEL].iter().zip(&bodies) {
        server.file(name, body);
    }
    let dir = tempfile::Builder::new()
        .prefix("stackpin round trip ")
        .tempdir()
        .expect("tempdir");
    let archive = dir.path().join("My Installers");
    let manifest = windows_manifest(dir.path(), &server);
    let run = |args: &[&std::ffi::OsStr]| {
        let out = stackpin()
            .args(args)
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .current_dir(dir.path())
            .output_started()
            .expect("runs");
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let arch = archive.as_os_str();
    let (code, out, err) = run(&[
        "fetch".as_ref(),
        manifest.as_os_str(),
        "--archive".as_ref(),
        arch,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let driver = archive.join("win-stack").join("driver").join(DRIVER);
    assert_eq!(fs::read(&driver).expect("archived"), bodies[0]);
    assert!(
        fs::metadata(&driver)
            .expect("meta")
            .permissions()
            .readonly(),
        "archived installers are read-only"
    );

    // Audit while another program holds an installer open (an antivirus scan, an Explorer
    // preview): reading alongside it must work.
    let held = fs::File::open(&driver).expect("open");
    let (code, out, err) = run(&[
        "audit".as_ref(),
        manifest.as_os_str(),
        "--archive".as_ref(),
        arch,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    drop(held);

    let zip = dir.path().join("offline bundle.zip");
    let (code, out, err) = run(&[
        "bundle".as_ref(),
        manifest.as_os_str(),
        "--archive".as_ref(),
        arch,
        "-o".as_ref(),
        zip.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let elsewhere = dir.path().join("Other Machine").join("installers");
    let (code, out, err) = run(&[
        "unbundle".as_ref(),
        zip.as_os_str(),
        "--archive".as_ref(),
        elsewhere.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let copy = elsewhere.join("win-stack").join("toolkit").join(TOOLKIT);
    assert_eq!(fs::read(&copy).expect("unbundled"), bodies[1]);
    let (code, out, err) = run(&[
        "audit".as_ref(),
        "--all".as_ref(),
        "--archive".as_ref(),
        elsewhere.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
}

#[test]
fn a_corrupted_read_only_installer_is_found_by_audit_and_replaced_by_fetch() {
    let server = TestServer::start();
    for name in [DRIVER, TOOLKIT, WHEEL] {
        server.file(name, name.repeat(5000).as_bytes());
    }
    let dir = tempfile::Builder::new()
        .prefix("stackpin repair ")
        .tempdir()
        .expect("tempdir");
    let manifest = windows_manifest(dir.path(), &server);
    let cmd = |args: &[&str]| {
        let out = stackpin()
            .arg(args[0])
            .arg(&manifest)
            .args(&args[1..])
            .env("STACKPIN_ARCHIVE", dir.path().join("Archive Dir"))
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .output_started()
            .expect("runs");
        (out.status.code(), text(&out.stdout) + &text(&out.stderr))
    };
    let (code, out) = cmd(&["fetch"]);
    assert_eq!(code, Some(0), "{out}");
    let toolkit = dir
        .path()
        .join("Archive Dir")
        .join("win-stack")
        .join("toolkit")
        .join(TOOLKIT);
    // Flip a byte of the read-only file the way a disk or a user would.
    let mut perms = fs::metadata(&toolkit).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&toolkit, perms.clone()).expect("writable");
    let mut bytes = fs::read(&toolkit).expect("read");
    bytes[10] ^= 0xff;
    fs::write(&toolkit, &bytes).expect("corrupt");
    perms.set_readonly(true);
    fs::set_permissions(&toolkit, perms).expect("read-only again");

    let (code, out) = cmd(&["audit"]);
    assert_eq!(code, Some(1), "audit finds the corrupt file: {out}");
    assert!(out.contains(TOOLKIT), "{out}");
    let (code, out) = cmd(&["fetch"]);
    assert_eq!(
        code,
        Some(0),
        "fetch replaces the read-only corrupt file: {out}"
    );
    assert_eq!(
        fs::read(&toolkit).expect("read"),
        TOOLKIT.repeat(5000).as_bytes()
    );
    let (code, out) = cmd(&["audit"]);
    assert_eq!(code, Some(0), "{out}");
}
