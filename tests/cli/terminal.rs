//! Any terminal (issue 20, items 7 and 8): plan, doctor and fetch at 60 columns wrap nothing
//! and keep what a user needs; without a terminal fetch writes one line per archived file; a
//! resumed download's rate counts only the new bytes; colour follows `--color` and `NO_COLOR`.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use crate::fakes::FakeHost;
use crate::install::{driver_script, library_script, toolkit_script};
use crate::server::{Route, TestServer};

const DRIVER_FILE: &str = "NVIDIA-Linux-x86_64-595.71.05.run";
const TOOLKIT_FILE: &str = "cuda_12.4.1_550.54.15_linux.run";
const LIBRARY_FILE: &str = "install-torch.sh";

/// A fake host with the stack in place and its installers on a loopback server.
struct Scene {
    host: FakeHost,
    server: TestServer,
    manifest: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let host = FakeHost::l4_workstation();
        let server = TestServer::start();
        server.file(DRIVER_FILE, driver_script(&host).as_bytes());
        server.file(TOOLKIT_FILE, toolkit_script(&host).as_bytes());
        server.file(LIBRARY_FILE, library_script(&host).as_bytes());
        let manifest = host.root().join("stack.yaml");
        let yaml = format!(
            "schema: 1\nname: narrow-terminal-stack\nos: linux\n\
             driver:\n  version: \"595.71.05\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"-c\", \"true\"]\n  timeout: 60s\n",
            d = server.url(DRIVER_FILE),
            t = server.url(TOOLKIT_FILE),
            l = server.url(LIBRARY_FILE),
            root = host.toolkit_root("12.4.1").display(),
        );
        std::fs::write(&manifest, yaml).expect("manifest");
        Self {
            host,
            server,
            manifest,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.host.stackpin(args);
        cmd.env("STACKPIN_ARCHIVE", self.archive())
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("COLUMNS");
        cmd
    }

    fn run_at(&self, args: &[&str], columns: &str) -> Output {
        let mut cmd = self.command(args);
        cmd.env("COLUMNS", columns);
        cmd.output_started().expect("stackpin runs")
    }

    fn manifest(&self) -> &str {
        self.manifest.to_str().expect("utf-8 path")
    }

    fn archive(&self) -> PathBuf {
        self.host.root().join("installers")
    }
}

/// The output with wrapped lines joined again: what a reader of the narrow terminal reads.
fn words(out: &Output) -> String {
    text(out).split_whitespace().collect::<Vec<_>>().join(" ")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every line of the output within `width` columns.
fn assert_fits(what: &str, out: &Output, width: usize) {
    let all = text(out);
    for line in all.lines() {
        assert!(
            line.chars().count() <= width,
            "{what}: a line of {} columns at COLUMNS={width}:\n{line}\n---\n{all}",
            line.chars().count()
        );
    }
}

#[test]
fn plan_doctor_and_fetch_at_60_columns_wrap_no_line_and_keep_their_content() {
    let scene = Scene::new();
    let fetch = scene.run_at(&["fetch", scene.manifest()], "60");
    assert_eq!(fetch.status.code(), Some(0), "{}", text(&fetch));
    assert_fits("fetch", &fetch, 60);
    let all = words(&fetch);
    assert!(all.contains("3 files archived and verified"), "{all}");
    for name in [DRIVER_FILE, TOOLKIT_FILE, LIBRARY_FILE] {
        assert!(all.contains(name), "fetch names {name}: {all}");
    }

    let plan = scene.run_at(&["plan", scene.manifest()], "60");
    assert_fits("plan", &plan, 60);
    let all = text(&plan);
    assert!(
        words(&plan).contains("plan for narrow-terminal-stack"),
        "{all}"
    );
    for layer in ["driver", "toolkit", "library"] {
        assert!(
            all.lines().any(
                |l| l.trim_start().starts_with(layer) && l.contains("595.71.05")
                    || l.trim_start().starts_with(layer) && l.contains("12.4")
                    || l.trim_start().starts_with(layer) && l.contains("2.5.1")
            ),
            "a table row for {layer}: {all}"
        );
    }
    assert!(
        words(&plan).contains("install would run, in this order"),
        "{all}"
    );

    let doctor = scene.run_at(&["doctor", scene.manifest()], "60");
    assert_fits("doctor", &doctor, 60);
    let all = words(&doctor);
    assert!(all.contains("doctor: narrow-terminal-stack"), "{all}");
    assert!(
        all.contains("pass") || all.contains("FAIL"),
        "verdicts are shown: {all}"
    );
    assert!(
        all.contains("ready to train") || all.contains("check(s) failed"),
        "{all}"
    );

    // The same commands at a wide terminal put more on a line: the width is really followed.
    let wide = scene.run_at(&["plan", scene.manifest()], "200");
    let longest = text(&wide).lines().map(|l| l.chars().count()).max();
    assert!(longest > Some(60), "{}", text(&wide));
}

#[test]
fn without_a_terminal_fetch_writes_one_line_per_archived_file() {
    let scene = Scene::new();
    let fetch = scene
        .command(&["fetch", scene.manifest()])
        .output_started()
        .expect("runs");
    assert_eq!(fetch.status.code(), Some(0), "{}", text(&fetch));
    let err = String::from_utf8_lossy(&fetch.stderr).into_owned();
    for name in [DRIVER_FILE, TOOLKIT_FILE, LIBRARY_FILE] {
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("fetched ") && l.contains(name))
            .collect();
        assert_eq!(lines.len(), 1, "one line for {name}:\n{err}");
        assert!(lines[0].ends_with("/3]"), "counted over all 3 files: {err}");
    }
    // A second fetch has nothing to download: still one line per file, saying so.
    let again = scene
        .command(&["fetch", scene.manifest()])
        .output_started()
        .expect("runs");
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("archived ") && l.contains("already here"))
            .count(),
        3,
        "{err}"
    );
}

#[test]
fn a_resumed_download_reports_only_the_new_bytes_as_speed() {
    let scene = Scene::new();
    // A big toolkit, served slowly: 64 KiB, then a pause of 150 ms, and so on.
    let body: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    let new_bytes = 4 * 64 * 1024;
    let kept = body.len() - new_bytes;
    scene.server.route(
        TOOLKIT_FILE,
        Route {
            body: body.clone(),
            throttle: Some(Duration::from_millis(150)),
            ..Route::default()
        },
    );
    let dir = scene.archive().join("narrow-terminal-stack/toolkit");
    std::fs::create_dir_all(&dir).expect("stack folder");
    std::fs::write(dir.join(format!("{TOOLKIT_FILE}.partial")), &body[..kept]).expect("partial");

    let fetch = scene
        .command(&["fetch", scene.manifest()])
        .output_started()
        .expect("runs");
    assert_eq!(fetch.status.code(), Some(0), "{}", text(&fetch));
    let err = String::from_utf8_lossy(&fetch.stderr).into_owned();
    let line = err
        .lines()
        .find(|l| l.starts_with("fetched ") && l.contains(TOOLKIT_FILE))
        .unwrap_or_else(|| panic!("a line for the toolkit: {err}"));
    assert!(
        line.contains("resumed at 3.6 MiB: 256 KiB new") || line.contains("resumed at"),
        "{line}"
    );
    // 256 KiB in at least 3 pauses of 150 ms is under 1 MiB/s; counting the resumed 3.6 MiB
    // as speed would read several MiB/s.
    assert!(
        line.contains("KiB/s"),
        "the rate counts only new bytes: {line}"
    );
    assert!(
        !line.contains("MiB/s"),
        "the rate counts only new bytes: {line}"
    );
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let scene = Scene::new();
    let bad = scene.host.root().join("bad.yaml");
    // A manifest that parses but fails check: the library built for a CUDA line it is not on.
    let shipped = std::fs::read_to_string(crate::common::repo(
        "manifests/torch-2.5.1-cu124-linux.yaml",
    ))
    .expect("shipped manifest");
    std::fs::write(&bad, shipped.replace("cuda: \"12.4\"", "cuda: \"99.1\"")).expect("manifest");
    let bad = bad.to_str().expect("utf-8");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = scene.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output_started().expect("runs")
    };
    let coloured = run(&["check", bad, "--color", "always"], &[]);
    let out = String::from_utf8_lossy(&coloured.stdout).into_owned();
    assert!(out.contains("FAILED"), "{}", text(&coloured));
    assert!(
        out.contains("\u{1b}[") && out.contains("FAILED\u{1b}[0m"),
        "--color always paints FAILED: {out:?}"
    );
    // `auto` into a pipe: plain; forced by CLICOLOR_FORCE it colours, unless NO_COLOR is set.
    for (args, env, painted) in [
        (vec!["check", bad], vec![], false),
        (
            vec!["check", bad, "--color", "never"],
            vec![("CLICOLOR_FORCE", "1")],
            false,
        ),
        (vec!["check", bad], vec![("CLICOLOR_FORCE", "1")], true),
        (
            vec!["check", bad],
            vec![("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
            false,
        ),
    ] {
        let out = run(&args, &env);
        let all = text(&out);
        assert!(all.contains("FAILED"), "{all}");
        assert_eq!(all.contains('\u{1b}'), painted, "{args:?} {env:?}: {all:?}");
    }
}

#[test]
fn ctrl_c_during_a_download_names_the_kept_partial_and_the_next_fetch_resumes_it() {
    let scene = Scene::new();
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    scene.server.route(
        TOOLKIT_FILE,
        Route {
            body: body.clone(),
            throttle: Some(Duration::from_millis(100)),
            ..Route::default()
        },
    );
    let partial = scene.archive().join(format!(
        "narrow-terminal-stack/toolkit/{TOOLKIT_FILE}.partial"
    ));
    let mut child = scene
        .command(&["fetch", scene.manifest()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("fetch starts");
    // Wait until some of the toolkit is on disk, then press Ctrl-C.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 200_000 {
        assert!(std::time::Instant::now() < deadline, "no partial appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        assert!(std::time::Instant::now() < deadline, "fetch did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{err}");
    let kept = format!("interrupted: kept {}", partial.display());
    assert!(err.contains(&kept), "names the kept partial: {err}");
    assert!(
        err.contains("the next `stackpin fetch` resumes it"),
        "{err}"
    );
    let kept_len = std::fs::metadata(&partial).expect("partial kept").len();
    assert!(kept_len > 0 && kept_len < body.len() as u64);

    // And it does: the next fetch resumes from the kept bytes.
    scene.server.route(
        TOOLKIT_FILE,
        Route {
            body,
            ..Route::default()
        },
    );
    let again = scene
        .command(&["fetch", scene.manifest()])
        .output_started()
        .expect("runs");
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert_eq!(again.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("fetched ") && l.contains(TOOLKIT_FILE))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("resumed at"), "{line}");
}
