//! `stackpin diagnose`: the reference catalogue, the hold-out sets, and the CLI contract
//! (exit codes, stdin, `--json`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde::Deserialize;
use stackpin::diagnose::{self, FailureLayer};

/// One real message with the layer its thread's resolution points at.
#[derive(Debug, Deserialize)]
struct Case {
    id: String,
    source: String,
    expected: String,
    message: String,
    /// Why `expected` is what it is (hold-out round 2 only).
    #[serde(default)]
    #[allow(dead_code)]
    basis: Option<String>,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/failures")
        .join(name)
}

fn cases(name: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture readable");
    serde_saphyr::from_str(&text).expect("fixture parses")
}

/// Runs every case; returns (right, total) and prints each miss with what it got.
fn score(name: &str) -> (usize, usize) {
    let all = cases(name);
    let mut right = 0;
    for case in &all {
        let got = diagnose::diagnose_or_unknown(&case.message);
        if got.layer.as_str() == case.expected {
            right += 1;
        } else {
            println!(
                "{name} {}: expected {}, got {} ({}) — {}",
                case.id, case.expected, got.layer, got.id, case.source
            );
        }
    }
    println!("{name}: {right}/{} on the right layer", all.len());
    (right, all.len())
}

#[test]
fn every_reference_catalogue_row_is_placed_on_its_layer() {
    let (right, total) = score("reference.yaml");
    assert_eq!(
        total, 33,
        "one case per row of shared/reference/failures.md"
    );
    assert_eq!(right, total);
}

#[test]
fn holdout_round1_is_now_a_regression_set_and_all_placed_right() {
    // Measured 3/12 against the frozen catalogue (README.md); the catalogue was extended after.
    let (right, total) = score("holdout-round1.yaml");
    assert!(total >= 12);
    assert_eq!(right, total);
}

#[test]
fn holdout_round2_never_names_a_wrong_layer_and_keeps_its_measured_accuracy() {
    // Measured on first run, before any pattern saw these messages: 9/13 (69%), every miss
    // answered "unknown". The 5-in-6 target is NOT met yet; this floor keeps what we have and the
    // report says so. Raise it when a later round is measured.
    let all = cases("holdout.yaml");
    assert!(
        all.len() >= 12,
        "the hold-out set needs at least 12 messages"
    );
    let (right, total) = score("holdout.yaml");
    // Since the round-2 extension it is a regression set: 12/13, r2-13 (TF factory noise)
    // stays unknown on purpose.
    assert!(right >= 12, "only {right}/{total} on the right layer");
    for case in &all {
        let got = diagnose::diagnose_or_unknown(&case.message);
        assert!(
            got.layer == FailureLayer::Unknown || got.layer.as_str() == case.expected,
            "{}: guessed {} for an {} failure",
            case.id,
            got.layer,
            case.expected
        );
    }
}

#[test]
fn holdout_round3_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after the round-2 extension (commit f4d6d5c) by the rule in the fixture's header
    // and measured once with no catalogue change after: see README.md here for the number.
    let all = cases("holdout-round3.yaml");
    assert!(all.len() >= 18, "round 3 needs at least 18 messages");
    let (right, total) = score("holdout-round3.yaml");
    println!("round3 measured {right}/{total}");
    assert!(
        right >= ROUND3_FLOOR,
        "only {right}/{total} on the right layer"
    );
    for case in &all {
        let got = diagnose::diagnose_or_unknown(&case.message);
        assert!(
            got.layer == FailureLayer::Unknown || got.layer.as_str() == case.expected,
            "{}: guessed {} for an {} failure",
            case.id,
            got.layer,
            case.expected
        );
    }
}

/// Measured on round 3's first run: 8/18 (44%), 10 unknown, 0 wrong. Its misses then became
/// catalogue entries (README.md), so round 3 is a regression set now: all 18 right.
const ROUND3_FLOOR: usize = 18;

#[test]
fn holdout_round4_keeps_its_measured_accuracy_and_counts_wrong_layers() {
    // Drawn after the broad second tier and the round-3 entries were committed, by the rule in
    // the fixture's header; measured once with no catalogue change after (README.md).
    let all = cases("holdout-round4.yaml");
    assert!(all.len() >= 18, "round 4 needs at least 18 messages");
    let (right, total) = score("holdout-round4.yaml");
    let wrong: Vec<&str> = all
        .iter()
        .filter(|case| {
            let got = diagnose::diagnose_or_unknown(&case.message).layer;
            got != FailureLayer::Unknown && got.as_str() != case.expected
        })
        .map(|case| case.id.as_str())
        .collect();
    println!("round4 measured {right}/{total}, wrong layers: {wrong:?}");
    assert!(
        right >= ROUND4_FLOOR,
        "only {right}/{total} on the right layer"
    );
    // Measured on the first run: no wrong layer, even with the broad rules. Keep it so.
    assert!(wrong.is_empty(), "wrong layers named for {wrong:?}");
}

/// Round 4's first and only measurement (README.md): 16/18 (89%), at least 5 in 6; 12 by a
/// catalogue entry, 4 by a broad rule ("likely"), 2 unknown.
const ROUND4_FLOOR: usize = 16;

fn stackpin(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stackpin"));
    cmd.args(args)
        .env_remove("RUST_BACKTRACE")
        .env("STACKPIN_TEST_ADMIN", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd.spawn().expect("stackpin runs");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin piped");
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("stackpin finishes")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_log_file_gets_layer_cause_fix_and_evidence_with_exit_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("example.log");
    std::fs::write(
        &log,
        "step 0\nRuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU\n",
    )
    .expect("write log");
    let out = stackpin(&["diagnose", log.to_str().expect("utf-8 path")], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("layer:    driver"), "{stdout}");
    assert!(stdout.contains("cause:"), "{stdout}");
    assert!(stdout.contains("stackpin repair"), "{stdout}");
    assert!(
        stdout.contains("evidence: line 2: RuntimeError: Found no NVIDIA driver"),
        "{stdout}"
    );
}

#[test]
fn stdin_with_json_gives_the_contract_keys() {
    let log = "running --batch-size 64\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
    let out = stackpin(&["diagnose", "-", "--json"], Some(log));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["layer"], "memory");
    assert!(v["cause"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(
        v["fix"]
            .as_str()
            .is_some_and(|f| f.contains("batch 64: try 32")),
        "{v}"
    );
    assert_eq!(
        v["evidence"],
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    );
}

#[test]
fn a_clean_log_is_unknown_with_exit_1_and_no_guess() {
    let log = "epoch 1/3 loss 0.91\nepoch 2/3 loss 0.55\nepoch 3/3 loss 0.41\nsaved model.pt\n";
    let out = stackpin(&["diagnose", "-", "--json"], Some(log));
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["layer"], "unknown");
    assert_eq!(v["cause"], "no known failure matched");
    assert!(v["evidence"].is_null());
}

#[test]
fn a_message_only_a_broad_rule_knows_is_named_likely_in_text_and_json() {
    let log = "solver: size 256\nCUDA error! 2\n";
    let out = stackpin(&["diagnose", "-"], Some(log));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("layer:    memory"), "{stdout}");
    assert!(stdout.contains("cause:    likely: "), "{stdout}");
    assert!(
        stdout.contains("evidence: line 2: CUDA error! 2"),
        "{stdout}"
    );
    let out = stackpin(&["diagnose", "-", "--json"], Some(log));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["confidence"], "likely");
    assert_eq!(v["layer"], "memory");
}

#[test]
fn random_text_is_unknown() {
    let noise = "lorem ipsum dolor sit amet\n0xdeadbeef 42 ## ~~ \u{1F600}\nThe quick brown fox.\n";
    assert_eq!(diagnose::diagnose(noise), None);
    let out = stackpin(&["diagnose", "-"], Some(noise));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("layer:    unknown"));
}

#[test]
fn a_missing_log_is_an_input_error_naming_the_file() {
    let out = stackpin(&["diagnose", "no/such/train.log"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no/such/train.log"), "{stderr}");
    assert!(stderr.starts_with("error: cannot read the log"), "{stderr}");
}

#[test]
fn help_documents_the_exit_codes() {
    let out = stackpin(&["diagnose", "--help"], None);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Exit 0 when a layer was named, 1 when no known failure matched"),
        "{stdout}"
    );
}
