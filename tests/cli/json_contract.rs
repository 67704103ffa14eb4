//! The `--json` contract and README's exit-code table, walked over every subcommand's failure
//! paths: each run prints exactly one JSON document on stdout with `ok`, `exit_code` and an
//! `error.message`, its human text goes to stderr, and the process exits with the code the
//! table gives for that kind of failure (1 a problem found, 2 bad input, 3 an external step).
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::{Path, PathBuf};

use crate::fakes::{DriverMode, FakeHost};

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
        let host = FakeHost::l4_workstation();
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
            .output_started()
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
        for p in casing_problems(&doc, &[STACK]) {
            wrong.push(format!("{}: {p}", case.name));
        }
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
        .output_started()
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
        .output_started()
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

// --- One casing, one envelope, `reboot_required` (issue 20, item 9) ------------------------

/// Maps keyed by the names of things (the release data's file names), not by field names.
const NAME_MAPS: &[&str] = &["tables"];

/// Keys whose values are catalogue identifiers: names, spelled as the catalogue spells them.
const IDENTIFIERS: &[&str] = &["id"];

/// Keys whose string values are enum words (a state, a verdict, an outcome…), never prose.
const ENUM_KEYS: &[&str] = &[
    "action",
    "authority",
    "check",
    "confidence",
    "end",
    "kind",
    "layer",
    "outcome",
    "outside_source",
    "rule",
    "severity",
    "stage",
    "state",
    "status",
    "verdict",
    "versions_from",
];

fn is_snake(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A word that reads like an identifier spelled in kebab-case (`reboot-pending`).
fn is_kebab_word(word: &str) -> bool {
    word.contains('-')
        && !word.starts_with('-')
        && word.split('-').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase()) && part.len() > 1
        })
}

/// Every key, and every enum value, of `doc` that is not snake_case, with its JSON path. `names`
/// are the user's own words (stack names) that may appear as values in any spelling.
fn casing_problems(doc: &serde_json::Value, names: &[&str]) -> Vec<String> {
    fn walk(v: &serde_json::Value, path: &str, key: &str, names: &[&str], out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    if !is_snake(k) && !NAME_MAPS.contains(&key) {
                        out.push(format!("{path}: key `{k}` is not snake_case"));
                    }
                    walk(child, &format!("{path}.{k}"), k, names, out);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{path}[{i}]"), key, names, out);
                }
            }
            serde_json::Value::String(s)
                if !names.contains(&s.as_str()) && !IDENTIFIERS.contains(&key) =>
            {
                if ENUM_KEYS.contains(&key) && !is_snake(s) {
                    out.push(format!("{path}: enum value `{s}` is not snake_case"));
                } else if is_kebab_word(s) {
                    out.push(format!("{path}: value `{s}` is spelled in kebab-case"));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, "$", "", names, &mut out);
    out
}

#[test]
fn the_casing_check_catches_what_it_is_for() {
    let doc = serde_json::json!({
        "stage": "reboot-pending",
        "CUDA used to build PyTorch": "12.4",
        "files": [{"outcome": "already-archived", "note": "free text, with a-dash"}],
        "install": {"end": "reboot_required", "stack": "my-stack"},
    });
    let problems = casing_problems(&doc, &["my-stack"]);
    assert_eq!(problems.len(), 3, "{problems:#?}");
}

const LAB_STACK: &str = "contract-lab";
const LAB_DRIVER: &str = "595.71.05";

/// A workstation without a driver whose installers are served on loopback: the driver's
/// installer leaves it waiting for a reboot, so every command meets every state of a stack.
struct Lab {
    host: FakeHost,
    _server: crate::server::TestServer,
    manifest: PathBuf,
}

impl Lab {
    fn new() -> Self {
        use crate::install::{driver_script, library_script, toolkit_script};
        let host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9");
        host.set_driver_state(DriverMode::NoDriver, "", "");
        let server = crate::server::TestServer::start();
        let driver = format!("NVIDIA-Linux-x86_64-{LAB_DRIVER}.run");
        server.file(&driver, driver_script(&host).as_bytes());
        server.file(
            "cuda_12.4.1_550.54.15_linux.run",
            toolkit_script(&host).as_bytes(),
        );
        server.file("install-torch.sh", library_script(&host).as_bytes());
        let script = host.root().join("example.sh");
        std::fs::write(&script, crate::prove::example_script(&host, false, false))
            .expect("example");
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nname: {LAB_STACK}\nos: linux\n\
             driver:\n  version: \"{LAB_DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"{script}\", \"{{batch}}\"]\n  timeout: 60s\n\
             vram:\n  line: 0.8\n  batches: [16, 32, 64, 128]\n",
            d = server.url(&driver),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            root = host.toolkit_root("12.4.1").display(),
            script = script.display(),
        );
        std::fs::write(&manifest, text).expect("manifest");
        Self {
            host,
            _server: server,
            manifest,
        }
    }

    fn archive(&self) -> PathBuf {
        self.host.root().join("installers")
    }

    fn m(&self) -> String {
        self.manifest.display().to_string()
    }

    /// Runs `stackpin --json ARGS` and returns the exit code and the one document it printed.
    fn json(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let out = self
            .host
            .stackpin(std::iter::once("--json").chain(args.iter().copied()))
            .current_dir(self.host.root())
            .env("STACKPIN_ARCHIVE", self.archive())
            .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .output_started()
            .expect("stackpin runs");
        let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: stdout is not one JSON document ({e}): {}",
                crate::common::text(&out)
            )
        });
        (out.status.code().unwrap_or(-1), doc)
    }
}

/// Every command, on its success path and on a failure path, through a whole stack's life:
/// fetch, install to the reboot, up after it, doctor, repair, bundle. Each document is checked
/// for casing and for the envelope; the ones that can stop for a reboot carry `reboot_required`.
#[test]
fn every_command_speaks_snake_case_in_one_envelope() {
    let lab = Lab::new();
    let m = lab.m();
    let m = m.as_str();
    std::fs::write(
        lab.host.root().join("train.log"),
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
    )
    .expect("log");
    std::fs::write(lab.host.root().join("model.onnx"), "weights").expect("model");
    let budget = crate::common::repo("examples/budget-two-cameras.yaml");
    let budget = budget.to_str().expect("utf-8");
    let data = crate::common::repo("data");
    let data = data.to_str().expect("utf-8");
    let reboot = |args: &[&str]| matches!(args[0], "install" | "up" | "repair");

    // (arguments, the exit code expected, reboot_required expected where the command has it)
    let steps: Vec<(Vec<&str>, i32, Option<bool>)> = vec![
        (vec!["check", m], 0, None),
        (
            vec!["pin", "--library", "torch==2.5.1", "--os", "linux"],
            0,
            None,
        ),
        (vec!["host"], 0, None),
        (
            vec!["vram", "--peak", "2.5GB", "--batch", "64", "--vram", "5GB"],
            0,
            None,
        ),
        (vec!["budget", budget], 0, None),
        (vec!["data", "show"], 0, None),
        (vec!["data", "pack", data, "-o", "set.json"], 0, None),
        (vec!["data", "reset"], 0, None),
        (vec!["diagnose", "train.log"], 0, None),
        (vec!["measure", "--", "true"], EXTERNAL, None),
        (vec!["status", "--all"], INPUT, None),
        (vec!["plan", m], 0, None),
        (vec!["install", m, "--yes"], PROBLEM, Some(false)),
        (vec!["fetch", m], 0, None),
        (vec!["audit", m], 0, None),
        (vec!["audit", "--all"], 0, None),
        (vec!["outdated", m], 0, None),
        (vec!["install", m, "--dry-run"], 0, Some(false)),
        (vec!["install", m, "--yes"], 0, Some(true)),
        (vec!["status", m], 0, None),
        (vec!["status", "--all"], 0, None),
        (vec!["doctor", m], PROBLEM, None),
        (vec!["up", m, "--yes"], 0, Some(true)),
        (vec!["report"], 0, None),
    ];
    let mut wrong = Vec::new();
    let walk = |wrong: &mut Vec<String>, args: &[&str], code: i32, rr: Option<bool>| {
        let (got, doc) = lab.json(args);
        let who = args.join(" ");
        if got != code {
            wrong.push(format!("{who}: exit {got}, expected {code}: {doc}"));
        }
        for p in casing_problems(&doc, &[LAB_STACK]) {
            wrong.push(format!("{who}: {p}"));
        }
        for key in ["schema_version", "ok", "exit_code"] {
            if doc.get(key).is_none() {
                wrong.push(format!("{who}: no `{key}` in the envelope"));
            }
        }
        if reboot(args) != rr.is_some() {
            wrong.push(format!(
                "{who}: the step table and the reboot commands disagree"
            ));
        }
        match rr {
            Some(want) if doc["reboot_required"] != want => wrong.push(format!(
                "{who}: reboot_required is {}, expected {want}",
                doc["reboot_required"]
            )),
            None if doc.get("reboot_required").is_some() => {
                wrong.push(format!("{who}: reboot_required where no reboot can happen"))
            }
            _ => {}
        }
        doc
    };
    for (args, code, rr) in &steps {
        walk(&mut wrong, args, *code, *rr);
    }
    // The reboot: the new driver's module is the running one now.
    lab.host
        .set_driver_state(DriverMode::Ok, LAB_DRIVER, "12.8");
    let after: Vec<(Vec<&str>, i32, Option<bool>)> = vec![
        (vec!["up", m, "--yes"], 0, Some(false)),
        (vec!["prove", m], 0, None),
        (vec!["measure", "--", "sh", "example.sh", "64"], 0, None),
        (vec!["doctor", m], 0, None),
        (vec!["doctor", "--all"], 0, None),
        (vec!["repair", m, "--yes"], 0, Some(false)),
        (vec!["status", m], 0, None),
        (
            vec!["record", "export", m, "--model", "model.onnx"],
            0,
            None,
        ),
        (vec!["bundle", m, "-o", "lab.zip"], 0, None),
        (vec!["unbundle", "lab.zip"], 0, None),
        (vec!["repair", "nope.yaml", "--yes"], INPUT, Some(false)),
        (vec!["up", "nope.yaml", "--yes"], INPUT, Some(false)),
    ];
    for (args, code, rr) in &after {
        walk(&mut wrong, args, *code, *rr);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// `doctor MANIFEST` is `doctor --all` with one stack: the same keys at every level, and
/// likewise for `status`.
#[test]
fn single_and_all_forms_share_one_envelope() {
    let lab = Lab::new();
    let m = lab.m();
    for args in [
        &["fetch", m.as_str()][..],
        &["install", m.as_str(), "--yes"],
    ] {
        let (code, doc) = lab.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    lab.host
        .set_driver_state(DriverMode::Ok, LAB_DRIVER, "12.8");
    let (code, doc) = lab.json(&["up", m.as_str(), "--yes"]);
    assert_eq!(code, 0, "{doc}");
    fn keys(v: &serde_json::Value) -> Vec<String> {
        v.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }
    for command in ["doctor", "status"] {
        let (one_code, one) = lab.json(&[command, m.as_str()]);
        let (all_code, all) = lab.json(&[command, "--all"]);
        assert_eq!(one_code, all_code, "{command}: {one}\n{all}");
        assert_eq!(keys(&one), keys(&all), "{command}: {one}\n{all}");
        let (Some(one_stacks), Some(all_stacks)) =
            (one["stacks"].as_array(), all["stacks"].as_array())
        else {
            panic!("{command}: `stacks` is a list in both forms: {one}\n{all}");
        };
        assert_eq!(one_stacks.len(), 1, "{one}");
        assert_eq!(all_stacks.len(), 1, "{all}");
        assert_eq!(one_stacks[0]["stack"], LAB_STACK, "{one}");
        assert_eq!(keys(&one_stacks[0]), keys(&all_stacks[0]), "{command}");
    }
}

/// Files an earlier stackpin wrote with kebab-case words (`reboot-pending`) and prose
/// environment labels still read; what is printed now is snake_case.
#[test]
fn state_and_record_written_in_the_old_spelling_still_read() {
    let lab = Lab::new();
    let m = lab.m();
    for args in [
        &["fetch", m.as_str()][..],
        &["install", m.as_str(), "--yes"],
    ] {
        let (code, doc) = lab.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    let stack = lab.archive().join(LAB_STACK);
    let state_path = stack.join("state.yaml");
    let state = std::fs::read_to_string(&state_path).expect("state.yaml");
    assert!(
        state.contains("reboot_pending"),
        "written snake_case now: {state}"
    );
    std::fs::write(
        &state_path,
        state.replace("reboot_pending", "reboot-pending"),
    )
    .expect("old state");
    let (code, doc) = lab.json(&["status", m.as_str()]);
    assert_eq!(code, 0, "the old state reads: {doc}");
    assert_eq!(doc["stacks"][0]["stage"], "reboot_pending", "{doc}");
    assert_eq!(
        doc["stacks"][0]["install"]["layers"]["driver"]["status"], "reboot_pending",
        "{doc}"
    );

    lab.host
        .set_driver_state(DriverMode::Ok, LAB_DRIVER, "12.8");
    let (code, doc) = lab.json(&["up", m.as_str(), "--yes"]);
    assert_eq!(code, 0, "up resumes from the old state: {doc}");
    assert!(
        doc["proven"]["environment"]["cuda_used_to_build_pytorch"].is_string(),
        "{doc}"
    );
    let record_path = stack.join("proven-stack.yaml");
    let record = std::fs::read_to_string(&record_path).expect("record");
    assert!(record.contains("cuda_used_to_build_pytorch:"), "{record}");
    let old = record
        .replace("cuda_used_to_build_pytorch:", "CUDA used to build PyTorch:")
        .replace("pytorch_version:", "PyTorch version:");
    std::fs::write(&record_path, old).expect("old record");
    let (code, doc) = lab.json(&["record", "export", m.as_str(), "--model", "stack.yaml"]);
    assert_eq!(code, 0, "the old record reads: {doc}");
    let (code, doc) = lab.json(&["status", m.as_str()]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["stacks"][0]["stage"], "proven", "{doc}");
    let (code, doc) = lab.json(&["doctor", m.as_str()]);
    assert_eq!(code, 0, "doctor reads the old record: {doc}");
}

/// A model stack record `record export` wrote before the casing changed (`proven-stack`) still
/// reads, and is written back in snake_case.
#[test]
fn a_model_stack_record_in_the_old_spelling_still_reads() {
    let lab = Lab::new();
    let m = lab.m();
    for args in [
        &["fetch", m.as_str()][..],
        &["install", m.as_str(), "--yes"],
    ] {
        let (code, doc) = lab.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    lab.host
        .set_driver_state(DriverMode::Ok, LAB_DRIVER, "12.8");
    let (code, doc) = lab.json(&["up", m.as_str(), "--yes"]);
    assert_eq!(code, 0, "{doc}");
    let model = lab.host.root().join("det.onnx");
    std::fs::write(&model, "weights").expect("model");
    let (code, doc) = lab.json(&["record", "export", m.as_str(), "--model", "det.onnx"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["record"]["versions_from"], "proven_stack", "{doc}");
    let path = lab.host.root().join("det.onnx.stack.yaml");
    let text = std::fs::read_to_string(&path).expect("record");
    assert!(text.contains("versions_from: proven_stack"), "{text}");
    std::fs::write(
        &path,
        text.replace("versions_from: proven_stack", "versions_from: proven-stack"),
    )
    .expect("old record");
    let read = stackpin::deployment::ModelStack::read(&path).expect("the old spelling reads");
    assert_eq!(
        read.versions_from,
        stackpin::deployment::VersionSource::ProvenStack
    );
}
