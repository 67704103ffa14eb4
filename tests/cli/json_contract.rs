//! The `--json` contract and README's exit-code table, walked over every subcommand's failure
//! paths: each run prints exactly one JSON document on stdout with `ok`, `exit_code` and an
//! `error.message`, its human text goes to stderr, and the process exits with the code the
//! table gives for that kind of failure (1 a problem found, 2 bad input, 3 an external step).
#![cfg(unix)]

use std::path::{Path, PathBuf};

use crate::fakes::{DriverMode, FakeHost, FakeTorch};

const STACK: &str = "json-contract";
const DRIVER_FILE: &str = "NVIDIA-Linux-x86_64-595.71.05.run";

/// README's exit codes.
const PROBLEM: i32 = 1;
const INPUT: i32 = 2;
const EXTERNAL: i32 = 3;

/// A fake workstation with a manifest whose installers live on a port nothing listens on.
struct Desk {
    host: FakeHost,
    manifest: PathBuf,
}

impl Desk {
    fn new() -> Self {
        let host = FakeHost::new()
            .gpu("NVIDIA L4", 23034, "8.9")
            .driver("595.71.05", "12.8")
            .toolkit("12.4.1")
            .torch(FakeTorch::default());
        let manifest = host.root().join("stack.yaml");
        std::fs::write(&manifest, manifest_text(&host, "595.71.05")).expect("manifest");
        Self { host, manifest }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.host.root().join(rel)
    }

    fn stack(&self) -> PathBuf {
        self.path("installers").join(STACK)
    }

    /// An archive holding the driver file with a lock line that does not match its bytes.
    fn corrupt_archive(&self) {
        let driver = self.stack().join("driver");
        std::fs::create_dir_all(&driver).expect("driver folder");
        std::fs::write(driver.join(DRIVER_FILE), "tampered bytes").expect("driver file");
        std::fs::write(self.stack().join("stack.lock"), lock_text()).expect("lock");
    }
}

fn manifest_text(host: &FakeHost, driver: &str) -> String {
    format!(
        "schema: 1\nname: {STACK}\nos: linux\n\
         driver:\n  version: \"{driver}\"\n  installer:\n    url: http://127.0.0.1:9/NVIDIA-Linux-x86_64-{driver}.run\n  run: [\"sh\", \"{{installer}}\"]\n\
         toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: http://127.0.0.1:9/cuda_12.4.1_550.54.15_linux.run\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
         library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: http://127.0.0.1:9/install-torch.sh\n  run: [\"sh\", \"{{installer}}\"]\n\
         example:\n  run: [\"sh\", \"-c\", \"exit 0\"]\n  timeout: 20s\n",
        root = host.toolkit_root("12.4.1").display(),
    )
}

fn lock_text() -> String {
    format!(
        "schema: 1\nstack: {STACK}\nfiles:\n  - layer: driver\n    file: {DRIVER_FILE}\n    url: http://127.0.0.1:9/{DRIVER_FILE}\n    sha256: {}\n    size: 14\n    fetched_at: 2026-11-30T00:00:00Z\n",
        "a".repeat(64)
    )
}

/// A zip holding the stack with a driver file whose bytes do not match its lock line.
fn corrupt_bundle(path: &Path) {
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).expect("zip"));
    let options = zip::write::SimpleFileOptions::default();
    for (name, body) in [
        (format!("{STACK}/stack.lock"), lock_text()),
        (
            format!("{STACK}/driver/{DRIVER_FILE}"),
            "tampered bytes".to_string(),
        ),
    ] {
        writer.start_file(name, options).expect("entry");
        std::io::Write::write_all(&mut writer, body.as_bytes()).expect("write");
    }
    writer.finish().expect("finish");
}

/// One failure path: how to set it up, the arguments, and the code README's table gives it.
struct Case {
    name: &'static str,
    setup: fn(&Desk),
    args: fn(&Desk) -> Vec<String>,
    code: i32,
}

fn m(d: &Desk) -> String {
    d.manifest.display().to_string()
}

fn nothing(_: &Desk) {}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "check: missing manifest",
            setup: nothing,
            args: |_| vec!["check".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "check: misspelled field",
            setup: |d| {
                std::fs::write(d.path("bad.yaml"), "schema: 1\nname: x\nexmaple: 1\n").expect("bad")
            },
            args: |_| vec!["check".into(), "bad.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "check: driver older than the toolkit's minimum",
            setup: |d| {
                std::fs::write(&d.manifest, manifest_text(&d.host, "450.80.02"))
                    .expect("old driver")
            },
            args: |d| vec!["check".into(), m(d)],
            code: PROBLEM,
        },
        Case {
            name: "pin: unknown library",
            setup: nothing,
            args: |_| {
                vec![
                    "pin".into(),
                    "--library".into(),
                    "nosuch==1".into(),
                    "--os".into(),
                    "linux".into(),
                ]
            },
            code: INPUT,
        },
        Case {
            name: "host: no such GPU",
            setup: nothing,
            args: |_| vec!["host".into(), "--gpu".into(), "7".into()],
            code: INPUT,
        },
        Case {
            name: "budget: missing file",
            setup: nothing,
            args: |_| vec!["budget".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "measure: no nvidia-smi",
            setup: |d| {
                std::fs::remove_file(d.host.bin().join("nvidia-smi")).expect("remove nvidia-smi")
            },
            args: |_| vec!["measure".into(), "--".into(), "true".into()],
            code: EXTERNAL,
        },
        Case {
            name: "record export: missing model",
            setup: nothing,
            args: |d| {
                vec![
                    "record".into(),
                    "export".into(),
                    m(d),
                    "--model".into(),
                    "nope.bin".into(),
                ]
            },
            code: INPUT,
        },
        Case {
            name: "diagnose: missing log",
            setup: nothing,
            args: |_| vec!["diagnose".into(), "nope.log".into()],
            code: INPUT,
        },
        Case {
            name: "diagnose: nothing matched",
            setup: |d| std::fs::write(d.path("h.log"), "hello\n").expect("log"),
            args: |_| vec!["diagnose".into(), "h.log".into()],
            code: PROBLEM,
        },
        Case {
            name: "fetch: missing manifest",
            setup: nothing,
            args: |_| vec!["fetch".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "audit: no lock",
            setup: nothing,
            args: |d| vec!["audit".into(), m(d)],
            code: INPUT,
        },
        Case {
            name: "audit: corrupt file",
            setup: Desk::corrupt_archive,
            args: |d| vec!["audit".into(), m(d)],
            code: PROBLEM,
        },
        Case {
            name: "bundle: no lock",
            setup: nothing,
            args: |d| vec!["bundle".into(), m(d), "-o".into(), "x.zip".into()],
            code: INPUT,
        },
        Case {
            name: "bundle: corrupt file",
            setup: Desk::corrupt_archive,
            args: |d| vec!["bundle".into(), m(d), "-o".into(), "x.zip".into()],
            code: PROBLEM,
        },
        Case {
            name: "unbundle: missing file",
            setup: nothing,
            args: |_| vec!["unbundle".into(), "nope.zip".into()],
            code: INPUT,
        },
        Case {
            name: "unbundle: not a zip",
            setup: |d| std::fs::write(d.path("bad.zip"), "not a zip").expect("bad zip"),
            args: |_| vec!["unbundle".into(), "bad.zip".into()],
            code: INPUT,
        },
        Case {
            name: "unbundle: corrupt bundle",
            setup: |d| corrupt_bundle(&d.path("corrupt.zip")),
            args: |_| vec!["unbundle".into(), "corrupt.zip".into()],
            code: PROBLEM,
        },
        Case {
            name: "plan: missing manifest",
            setup: nothing,
            args: |_| vec!["plan".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "install: unreadable lock",
            setup: |d| {
                std::fs::create_dir_all(d.stack()).expect("stack");
                std::fs::write(d.stack().join("stack.lock"), "files: [unclosed\n").expect("lock");
            },
            args: |d| vec!["install".into(), m(d), "--yes".into()],
            code: INPUT,
        },
        Case {
            name: "install: unreadable state",
            setup: |d| {
                d.corrupt_archive();
                std::fs::write(
                    d.stack().join("stack.lock"),
                    format!("schema: 1\nstack: {STACK}\nfiles: []\n"),
                )
                .expect("lock");
                std::fs::write(d.stack().join("state.yaml"), "layers: [unclosed\n").expect("state");
            },
            args: |d| vec!["install".into(), m(d), "--yes".into()],
            code: INPUT,
        },
        Case {
            name: "prove: toolkit missing",
            setup: |d| {
                std::fs::remove_dir_all(d.host.toolkit_root("12.4.1")).expect("remove toolkit")
            },
            args: |d| vec!["prove".into(), m(d)],
            code: PROBLEM,
        },
        Case {
            name: "up: missing manifest",
            setup: nothing,
            args: |_| vec!["up".into(), "nope.yaml".into(), "--yes".into()],
            code: INPUT,
        },
        Case {
            name: "doctor: no driver",
            setup: |d| d.host.set_driver_state(DriverMode::NoDriver, "", ""),
            args: |d| vec!["doctor".into(), m(d)],
            code: PROBLEM,
        },
        Case {
            name: "doctor: missing manifest",
            setup: nothing,
            args: |_| vec!["doctor".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "repair: missing manifest",
            setup: nothing,
            args: |_| vec!["repair".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "status: missing manifest",
            setup: nothing,
            args: |_| vec!["status".into(), "nope.yaml".into()],
            code: INPUT,
        },
        Case {
            name: "status: corrupt file",
            setup: Desk::corrupt_archive,
            args: |d| vec!["status".into(), m(d)],
            code: PROBLEM,
        },
    ]
}

#[test]
fn every_failure_path_prints_one_json_document_and_exits_as_the_table_says() {
    let mut wrong = Vec::new();
    for case in cases() {
        let desk = Desk::new();
        (case.setup)(&desk);
        let mut args = (case.args)(&desk);
        // Before the subcommand: after `measure --` it would belong to the measured command.
        args.insert(0, "--json".into());
        let out = desk
            .host
            .stackpin(&args)
            .env("STACKPIN_ARCHIVE", desk.path("installers"))
            .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
            .output()
            .expect("stackpin runs");
        let code = out.status.code().unwrap_or(-1);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Exactly one document: the whole of stdout parses as one JSON value.
        let doc: serde_json::Value = match serde_json::from_str(&stdout) {
            Ok(doc) => doc,
            Err(e) => {
                wrong.push(format!(
                    "{}: stdout is not one JSON document ({e}):\n{stdout}\nstderr: {stderr}",
                    case.name
                ));
                continue;
            }
        };
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        let problems = [
            (
                code != case.code,
                format!("exit {code}, the table says {}", case.code),
            ),
            (
                doc["exit_code"] != code,
                format!(
                    "exit_code {} but the process exited {code}",
                    doc["exit_code"]
                ),
            ),
            (doc["ok"] != false, format!("ok is {}", doc["ok"])),
            (message.is_empty(), "no error.message".to_string()),
            (
                stderr.trim().is_empty(),
                "nothing on stderr for a human".to_string(),
            ),
        ];
        for (bad, why) in problems {
            if bad {
                wrong.push(format!(
                    "{}: {why}\n  stdout: {stdout}\n  stderr: {stderr}",
                    case.name
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_bad_flag_value_is_refused_before_anything_runs() {
    let desk = Desk::new();
    let marker = desk.path("ran");
    let text = std::fs::read_to_string(&desk.manifest).expect("manifest");
    let text = text.replace(
        "[\"sh\", \"-c\", \"exit 0\"]",
        &format!("[\"sh\", \"-c\", \"touch {}\"]", marker.display()),
    );
    std::fs::write(&desk.manifest, text).expect("manifest");
    let out = desk
        .host
        .stackpin([
            "prove",
            desk.manifest.to_str().expect("utf-8"),
            "--batch",
            "0",
        ])
        .env("STACKPIN_ARCHIVE", desk.path("installers"))
        .output()
        .expect("stackpin runs");
    assert_eq!(
        out.status.code(),
        Some(INPUT),
        "{}",
        crate::common::text(&out)
    );
    assert!(!marker.exists(), "the example never ran");
}

#[test]
fn a_successful_run_says_ok_and_exit_code_zero_beside_its_report() {
    let desk = Desk::new();
    let out = desk
        .host
        .stackpin(["check", desk.manifest.to_str().expect("utf-8"), "--json"])
        .output()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(0), "{}", crate::common::text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["exit_code"], 0, "{doc}");
    assert!(doc.get("error").is_none(), "{doc}");
    assert!(
        doc["manifests"].is_array(),
        "the command's own report is kept: {doc}"
    );
}
