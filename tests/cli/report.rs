//! `report`: one lab page from a real archive. The doctor tests' clinic fetches, installs and
//! proves stacks on a fake workstation (a real `prove` writes a real record and its plot); then
//! one stack drifts (a swapped driver that `doctor` sees), one has a tampered archived file, one
//! was never fetched. The page and `--json` must show each state, load nothing from anywhere,
//! and escape what came from outside.
//!
//! With `STACKPIN_REPORT_DEMO=DIR` the pages are also copied there (scripts/screenshot-report.sh
//! renders them in Chromium).
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::OutputStarted;
use crate::doctor::Clinic;
use crate::fakes::DriverMode;

const SWAPPED: &str = "590.48.01";

/// The clinic's manifest under another stack name (and, for `never`, URLs that are not served).
fn variant(clinic: &Clinic, name: &str, unserved: bool) -> PathBuf {
    let text = std::fs::read_to_string(&clinic.manifest).expect("manifest");
    let mut text = text.replace("name: fake-doctor", &format!("name: {name}"));
    if unserved {
        for file in [
            "NVIDIA-Linux-x86_64-595.71.05.run",
            "cuda_12.4.1_550.54.15_linux.run",
            "install-torch.sh",
        ] {
            text = text.replace(&format!("/{file}"), &format!("/gone/{file}"));
        }
    }
    let path = clinic.host.root().join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("variant manifest");
    path
}

fn run(clinic: &Clinic, args: &[&str]) -> Output {
    clinic
        .host
        .installing(args)
        .output_started()
        .expect("stackpin runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn must(out: Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", text(&out));
}

/// An archive with a drifted stack (`fake-doctor`), a proven one, one with a tampered
/// installer and one whose fetch never archived a file.
fn lab() -> Clinic {
    let clinic = Clinic::proven();
    let proven = variant(&clinic, "lab-proven", false);
    let p = proven.to_str().expect("utf-8");
    for step in [&["fetch", p][..], &["install", "--yes", p], &["prove", p]] {
        must(run(&clinic, step), &format!("{step:?}"));
    }
    let tampered = variant(&clinic, "lab-tampered", false);
    must(
        run(&clinic, &["fetch", tampered.to_str().expect("utf-8")]),
        "fetch lab-tampered",
    );
    let installer = clinic
        .archive()
        .join("lab-tampered/driver/NVIDIA-Linux-x86_64-595.71.05.run");
    let mut bytes = std::fs::read(&installer).expect("archived driver");
    bytes.extend_from_slice(b"\necho injected\n");
    // Archived files are read-only once verified; a tamperer makes them writable first.
    let mut perms = std::fs::metadata(&installer).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&installer, perms).expect("writable");
    std::fs::write(&installer, bytes).expect("tamper");
    let never = variant(&clinic, "lab-never", true);
    let out = run(&clinic, &["fetch", never.to_str().expect("utf-8")]);
    assert!(!out.status.success(), "nothing is served: {}", text(&out));

    clinic
        .host
        .set_driver_state(DriverMode::Ok, SWAPPED, "12.8");
    let doctor = clinic.run(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor));
    assert!(
        clinic.archive().join("fake-doctor/doctor.yaml").is_file(),
        "doctor keeps what it saw"
    );
    clinic
}

fn report(clinic: &Clinic, args: &[&str]) -> (Output, serde_json::Value) {
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = run(clinic, &all);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", text(&out)));
    (out, doc)
}

fn keep_for_demo(page: &Path, name: &str) {
    if let Some(dir) = std::env::var_os("STACKPIN_REPORT_DEMO") {
        std::fs::create_dir_all(&dir).expect("demo folder");
        std::fs::copy(page, Path::new(&dir).join(name)).expect("demo copy");
    }
}

/// Every `src=`/`href=` value in the page: only in-page anchors and `data:` images may load.
fn references(page: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attr in ["src=\"", "href=\"", "src='", "href='"] {
        for (at, _) in page.match_indices(attr) {
            let rest = &page[at + attr.len()..];
            let end = rest.find(['"', '\'']).unwrap_or(rest.len());
            found.push(rest[..end].chars().take(40).collect());
        }
    }
    found
}

fn assert_loads_nothing(page: &str) {
    let lower = page.to_ascii_lowercase();
    for banned in [
        "<script", "<link", "<iframe", "<object", "<embed", "@import", "url(",
    ] {
        assert!(!lower.contains(banned), "the page holds {banned}");
    }
    for reference in references(page) {
        assert!(
            reference.starts_with('#') || reference.starts_with("data:image/svg+xml;base64,"),
            "a reference that could load something: {reference}"
        );
    }
    assert!(
        page.contains("default-src 'none'"),
        "a CSP forbids every load"
    );
}

fn state_of<'a>(doc: &'a serde_json::Value, stack: &str) -> &'a serde_json::Value {
    doc["reports"]
        .as_array()
        .expect("reports")
        .iter()
        .find(|r| r["stack"] == stack)
        .unwrap_or_else(|| panic!("a report for {stack}: {doc}"))
}

#[test]
fn one_page_shows_a_proven_a_drifted_an_untrusted_and_a_never_fetched_stack() {
    let clinic = lab();
    let page = clinic.host.root().join("lab.html");
    let (out, doc) = report(
        &clinic,
        &[
            "--archive",
            clinic.archive().to_str().expect("utf-8"),
            "-o",
            page.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["source"], "archive");
    let html = std::fs::read_to_string(&page).expect("the page");
    keep_for_demo(&page, "lab.html");
    assert_loads_nothing(&html);

    // The matrix: one host (the proof's), one cell per stack, each state with its date.
    let row = &doc["matrix"][0];
    assert_eq!(row["needs_person"], true, "{row}");
    let cells: Vec<(String, String)> = row["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c["stack"].as_str().expect("stack").into(),
                c["state"].as_str().expect("state").into(),
            )
        })
        .collect();
    let want = [
        ("fake-doctor", "drifted"),
        ("lab-never", "never_tried"),
        ("lab-proven", "proven"),
        ("lab-tampered", "untrusted"),
    ];
    assert_eq!(
        cells,
        want.map(|(s, t)| (s.to_string(), t.to_string())),
        "{row}"
    );
    assert_eq!(doc["needs_person"], serde_json::json!([row["host"]]));
    // The reports come most urgent first.
    let order: Vec<&str> = doc["reports"]
        .as_array()
        .expect("reports")
        .iter()
        .map(|r| r["state"].as_str().expect("state"))
        .collect();
    assert_eq!(order, ["drifted", "untrusted", "never_tried", "proven"]);

    // Drift as doctor saw it, on the page and in the document.
    let drifted = state_of(&doc, "fake-doctor");
    assert_eq!(drifted["doctor"]["drift"][0]["now"], SWAPPED, "{drifted}");
    assert!(
        html.contains(&format!("driver 595.71.05 → {SWAPPED}")),
        "drift on the page"
    );
    // The tampered installer is untrusted (the audit's word: corrupt); its siblings verified.
    let tampered = state_of(&doc, "lab-tampered");
    for f in tampered["files"].as_array().expect("files") {
        let (trust, status) = if f["layer"] == "driver" {
            ("untrusted", "corrupt")
        } else {
            ("verified", "ok")
        };
        assert_eq!(
            (f["trust"].as_str(), f["status"].as_str()),
            (Some(trust), Some(status)),
            "{f}"
        );
    }
    assert!(html.contains("<span class=\"t-untrusted\">untrusted</span> (corrupt)"));
    // The stack whose fetch archived nothing: its pinned files missing, never tried.
    let never = state_of(&doc, "lab-never");
    assert!(
        never["files"]
            .as_array()
            .expect("files")
            .iter()
            .all(|f| f["trust"] == "missing"),
        "{never}"
    );
    assert!(html.contains("<span class=\"t-missing\">missing</span>"));

    // The proof: its facts, the batch plan against the line and the curve, inline.
    let proven = state_of(&doc, "lab-proven");
    let proof = &proven["proof"];
    assert!(
        proof["gpu"].as_str().is_some_and(|g| g.contains("L4")),
        "{proof}"
    );
    assert_eq!(proof["line_share"], 0.8);
    assert!(
        !proof["peak_by_source"]
            .as_array()
            .expect("sources")
            .is_empty()
    );
    assert!(html.contains("Batch plan against the 80 % line"));
    assert!(
        html.contains("data:image/svg+xml;base64,"),
        "the memory curve inline"
    );
    assert!(proven["outdated"]["newer"].is_array(), "{proven}");

    // Every fact the page shows is in the document: each is checked in the page, escaped.
    let shown = |value: &serde_json::Value| {
        let s = match value {
            // The page shows an unknown fact as a dash.
            serde_json::Value::Null => "—".to_string(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert!(
            html.contains(&stackpin::report::html::escape(&s)),
            "{s} is in --json but not on the page"
        );
    };
    for r in doc["reports"].as_array().expect("reports") {
        for key in ["host", "stack"] {
            shown(&r[key]);
        }
        for f in r["files"].as_array().expect("files") {
            for key in ["file", "url", "sha256_prefix"] {
                if !f[key].is_null() {
                    shown(&f[key]);
                }
            }
        }
        for key in ["driver", "toolkit", "library", "library_version", "cuda"] {
            if !r["pins"].is_null() {
                shown(&r["pins"][key]);
            }
        }
        if !r["proof"].is_null() {
            for key in ["hostname", "gpu", "driver", "device", "peak_authority"] {
                shown(&r["proof"][key]);
            }
            for s in r["proof"]["peak_by_source"].as_array().expect("sources") {
                shown(&s["source"]);
            }
            for p in r["proof"]["predictions"].as_array().expect("predictions") {
                assert!(html.contains(&format!("<td class=\"num\">{}", p["batch"])));
            }
        }
        for n in r["outdated"]["newer"].as_array().into_iter().flatten() {
            shown(&n["newer"]);
            shown(&n["meaning"]);
        }
    }

    // A human run writes the same page and says who needs a person.
    let out = run(
        &clinic,
        &[
            "report",
            "--archive",
            clinic.archive().to_str().expect("utf-8"),
            "-o",
            page.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("needs a person"), "{}", text(&out));
}

#[test]
fn a_records_folder_of_many_hosts_is_one_matrix_and_outside_names_are_escaped() {
    let clinic = lab();
    let records = clinic.host.root().join("records");
    // What a fleet collects: each host's stack folders without the installers.
    let hostile = "<img src=x onerror=alert(1)>";
    for (host, stacks) in [
        ("ws-01", &["lab-proven", "fake-doctor"][..]),
        (hostile, &["lab-proven"][..]),
        ("ws-02-new", &[][..]),
    ] {
        std::fs::create_dir_all(records.join(host)).expect("host folder");
        for stack in stacks {
            let from = clinic.archive().join(stack);
            let to = records.join(host).join(stack);
            std::fs::create_dir_all(&to).expect("stack folder");
            for entry in std::fs::read_dir(&from).expect("stack") {
                let path = entry.expect("entry").path();
                if path.is_file() {
                    std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
                }
            }
        }
    }
    let page = clinic.host.root().join("fleet.html");
    let (out, doc) = report(
        &clinic,
        &[
            "--records",
            records.to_str().expect("utf-8"),
            "-o",
            page.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&page).expect("the page");
    keep_for_demo(&page, "fleet.html");
    assert_loads_nothing(&html);
    assert!(!html.contains(hostile), "a host name is text, never markup");
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));

    let hosts: Vec<&str> = doc["matrix"]
        .as_array()
        .expect("matrix")
        .iter()
        .map(|r| r["host"].as_str().expect("host"))
        .collect();
    // ws-01 drifted first; the other two never tried a stack of the lab.
    assert_eq!(hosts, ["ws-01", hostile, "ws-02-new"], "{doc}");
    assert_eq!(doc["matrix"][2]["cells"][0]["state"], "never_tried");
    let files = &doc["reports"][0]["files"];
    assert!(
        files
            .as_array()
            .expect("files")
            .iter()
            .all(|f| f["trust"] == "not_collected"),
        "{files}"
    );
}

#[test]
fn the_page_is_never_written_into_the_folder_it_reads() {
    let clinic = Clinic::proven();
    let record = clinic.archive().join("fake-doctor/proven-stack.yaml");
    let before = std::fs::read(&record).expect("record");
    let out = run(
        &clinic,
        &[
            "report",
            "--archive",
            clinic.archive().to_str().expect("utf-8"),
            "-o",
            record.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("inside the input"), "{}", text(&out));
    assert_eq!(std::fs::read(&record).expect("record"), before, "untouched");
    let out = run(
        &clinic,
        &[
            "report",
            "--archive",
            clinic.archive().to_str().expect("utf-8"),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "no -o and no --json: {}",
        text(&out)
    );
}
