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
    // Measured 3/12 against the frozen catalogue (tests/fixtures/failures/README.md); the catalogue
    // was extended after.
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
    // and measured once with no catalogue change after: see tests/fixtures/failures/README.md for
    // the number.
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
/// catalogue entries (tests/fixtures/failures/README.md), so round 3 is a regression set now: all
/// 18 right.
const ROUND3_FLOOR: usize = 18;

#[test]
fn holdout_round4_keeps_its_measured_accuracy_and_counts_wrong_layers() {
    // Drawn after the broad second tier and the round-3 entries were committed, by the rule in
    // the fixture's header; measured once with no catalogue change after
    // (tests/fixtures/failures/README.md).
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

/// Round 4's first and only measurement (tests/fixtures/failures/README.md): 16/18 (89%), at least
/// 5 in 6; 12 by a catalogue entry, 4 by a broad rule ("likely"), 2 unknown.
const ROUND4_FLOOR: usize = 16;

fn stackpin(args: &[&str], stdin: Option<&str>) -> Output {
    // A bare host: the machine running the tests may itself be a container or WSL, and the
    // fix must not depend on that.
    let bare = tempfile::tempdir().expect("tempdir");
    stackpin_on(bare.path(), args, stdin)
}

/// Runs stackpin with the host context read under `root` (a fake `/`).
fn stackpin_on(root: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stackpin"));
    cmd.args(args)
        .env("STACKPIN_HOST_ROOT", root)
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

/// One field case of issue 18: the acceptable layers and words its fix must contain.
#[derive(Debug, Deserialize)]
struct FieldCase {
    id: String,
    source: String,
    expected: Vec<String>,
    #[allow(dead_code)]
    resolution: String,
    fix_mentions: Vec<String>,
    message: String,
}

#[test]
fn every_field_case_is_placed_on_its_layer_with_a_fix_that_fits_its_resolution() {
    let text = std::fs::read_to_string(fixture("field-cases.yaml")).expect("fixture readable");
    let all: Vec<FieldCase> = serde_saphyr::from_str(&text).expect("fixture parses");
    assert_eq!(
        all.len(),
        20,
        "every case of shared/reference/diagnose-field-cases/"
    );
    for case in &all {
        // Through the binary, as a user runs it on a log from elsewhere.
        let out = stackpin(
            &["diagnose", "-", "--host", "none", "--json"],
            Some(&case.message),
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        let layer = v["layer"].as_str().unwrap_or_default();
        assert!(
            case.expected.iter().any(|e| e == layer),
            "{} ({}): {layer} by {}, expected {:?}",
            case.id,
            case.source,
            v["id"],
            case.expected
        );
        let fix = v["fix"].as_str().unwrap_or_default();
        for words in &case.fix_mentions {
            assert!(
                fix.contains(words.as_str()),
                "{}: fix lacks {words:?}: {fix}",
                case.id
            );
        }
        let want_exit = if layer == "unknown" { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(want_exit), "{}", case.id);
    }
}

#[test]
fn the_evidence_is_the_line_that_names_the_cause_not_the_generic_error() {
    let log = "ERROR: An error occurred while performing the step: \"Building kernel modules\". See /var/log/nvidia-installer.log for details.\n\
               \x20  ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol '__rcu_read_lock'\n";
    let out = stackpin(&["diagnose", "-", "--host", "none"], Some(log));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("evidence: line 2: ERROR: modpost: GPL-incompatible module nvidia.ko"),
        "{stdout}"
    );
    assert!(stdout.contains("newer driver release"), "{stdout}");
}

/// A fake `/` with the given files (empty contents).
#[cfg(unix)]
fn fake_root(files: &[&str], kernel: Option<&str>) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("tempdir");
    for file in files {
        let path = root.path().join(file.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, "").expect("write");
    }
    if let Some(k) = kernel {
        let path = root.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&path).expect("mkdir");
        std::fs::write(path.join("osrelease"), format!("{k}\n")).expect("write");
    }
    root
}

// A Linux host's context (container, WSL, kernel): the Windows build probes none of it.
#[cfg(unix)]
#[test]
fn in_a_container_an_nvml_failure_gets_the_container_fix_and_host_none_turns_it_off() {
    let root = fake_root(&["/.dockerenv"], None);
    let log = "root@098b49afe624:/# nvidia-smi\nFailed to initialize NVML: Unknown Error\n";
    let out = stackpin_on(root.path(), &["diagnose", "-"], Some(log));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("layer:    driver"), "{stdout}");
    assert!(
        stdout.contains("context:  a container (/.dockerenv exists)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Never install a driver inside the container"),
        "{stdout}"
    );
    let out = stackpin_on(
        root.path(),
        &["diagnose", "-", "--host", "none", "--json"],
        Some(log),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert!(v["context"].is_null(), "{v}");
}

// A Linux host's context (container, WSL, kernel): the Windows build probes none of it.
#[cfg(unix)]
#[test]
fn under_wsl_a_driver_failure_never_says_install_the_linux_driver() {
    let root = fake_root(
        &["/dev/dxg", "/usr/lib/wsl/lib/libcuda.so"],
        Some("5.15.153.1-microsoft-standard-WSL2"),
    );
    let log = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n";
    let out = stackpin_on(root.path(), &["diagnose", "-", "--json"], Some(log));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["layer"], "driver");
    let fix = v["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains("Never install a Linux NVIDIA driver inside WSL"),
        "{fix}"
    );
    assert!(!fix.contains("stackpin repair"), "{fix}");
    assert_eq!(v["context"], "WSL (/dev/dxg exists)");
}

// A Linux host's context (container, WSL, kernel): the Windows build probes none of it.
#[cfg(unix)]
#[test]
fn a_kernel_newer_than_the_drivers_module_gets_the_rebuild_or_newer_driver_fix() {
    let root = fake_root(
        &[
            "/lib/modules/6.5.0-41-generic/updates/dkms/nvidia.ko",
            "/lib/modules/6.8.0-50-generic/modules.dep",
        ],
        Some("6.8.0-50-generic"),
    );
    let log = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n";
    let out = stackpin_on(root.path(), &["diagnose", "-", "--json"], Some(log));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let fix = v["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains("The running kernel 6.8.0-50-generic has no NVIDIA module"),
        "{fix}"
    );
    assert!(fix.contains("pin a newer driver release"), "{fix}");
    assert_eq!(
        v["context"],
        "kernel 6.8.0-50-generic, NVIDIA module built only for 6.5.0-41-generic"
    );
}

#[test]
fn stackpins_own_install_message_and_a_failed_run_file_are_not_unknown() {
    let log = "error: install stopped at the library: the installer exited 0 but the library is not there: torch 2.5.1 built for CUDA 12.4, sees no GPU\n";
    let out = stackpin(&["diagnose", "-", "--json"], Some(log));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(
        (v["layer"].as_str(), v["confidence"].as_str()),
        (Some("driver"), Some("known"))
    );
    // A failed-run.yaml as prove writes it (src/record.rs), given by path.
    let dir = tempfile::tempdir().expect("tempdir");
    let failed = stackpin::record::FailedRun {
        record: stackpin::record::RECORD_SCHEMA,
        stack: "torch-2.5.1-cu124-linux".into(),
        failed_at: "2026-11-30T10:00:00Z".into(),
        argv: vec!["python".into(), "classify.py".into()],
        batch: 64,
        exit_code: Some(1),
        timed_out: false,
        duration_s: 4.0,
        log: dir.path().join("logs/example.log"),
        reason: "the example failed: exit code 1".into(),
        device: Some("cuda:0".into()),
        layer: None,
        explanation: "no known failure matched the example's output".into(),
        peak_outside_mib: Some(1200),
        last_lines: vec![
            "step 3/30".into(),
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.".into(),
        ],
    };
    let path = dir.path().join("failed-run.yaml");
    failed.write(&path).expect("written");
    let out = stackpin(&["diagnose", path.to_str().expect("utf-8"), "--json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["layer"], "memory");
    assert!(
        v["fix"]
            .as_str()
            .is_some_and(|f| f.contains("batch 64: try 32")),
        "{v}"
    );
}

/// One hold-out case with the acceptable layers its thread's resolution allows (round 5 on).
#[derive(Debug, Deserialize)]
struct HoldoutCase {
    id: String,
    source: String,
    expected: Vec<String>,
    message: String,
}

/// (acceptable, wrong ids) over a hold-out file whose `expected` lists the acceptable layers.
fn score_acceptable(name: &str) -> (usize, usize, Vec<String>) {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture readable");
    let all: Vec<HoldoutCase> = serde_saphyr::from_str(&text).expect("fixture parses");
    let mut right = 0;
    let mut wrong = Vec::new();
    for case in &all {
        let got = diagnose::diagnose_or_unknown(&case.message);
        if case.expected.iter().any(|e| e == got.layer.as_str()) {
            right += 1;
        } else {
            println!(
                "{name} {}: expected {:?}, got {} ({}) — {}",
                case.id, case.expected, got.layer, got.id, case.source
            );
            if got.layer != FailureLayer::Unknown {
                wrong.push(case.id.clone());
            }
        }
    }
    (right, all.len(), wrong)
}

/// A hold-out round keeps its case count, names no wrong layer beyond the ones it measured and
/// still names (`known_wrong`), and stays at or above its floor of acceptable answers.
fn assert_holdout_round(name: &str, total: usize, floor: usize, known_wrong: &[&str]) {
    let (right, cases, wrong) = score_acceptable(name);
    assert_eq!(cases, total, "{name}: case count");
    assert!(
        wrong.iter().all(|id| known_wrong.contains(&id.as_str())),
        "wrong layers named for {wrong:?}"
    );
    assert!(
        right >= floor,
        "only {right}/{cases} on an acceptable layer"
    );
}

#[test]
fn holdout_round5_is_a_regression_set_after_its_families_were_added() {
    // Measured once before any rule saw it (fixture header, docs/diagnose-history.md): 10/23
    // acceptable, 11 unknown, 2 wrong. The families were then extended for its misses, so it is a
    // regression set now: every case acceptable and, above all, no wrong layer.
    let (right, total, wrong) = score_acceptable("holdout-round5.yaml");
    assert_eq!(total, 23);
    assert!(wrong.is_empty(), "wrong layers named for {wrong:?}");
    assert_eq!(right, total);
}

#[test]
fn holdout_round6_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 5's extension (3da3cd4) by the rule in the fixture's header and
    // measured once with no rule change after: 14/20 acceptable, 6 unknown, 0 wrong
    // (docs/diagnose-history.md).
    assert_holdout_round("holdout-round6.yaml", 20, ROUND6_FLOOR, &[]);
}

/// Round 6's first and only measurement: 14/20 (70%) on an acceptable layer.
const ROUND6_FLOOR: usize = 14;

#[test]
fn holdout_round7_keeps_its_measured_accuracy_and_no_new_wrong_layer() {
    // Drawn after round 6's extension (bdb09b2) by the rule in the fixture's header and
    // measured once: 20/24 acceptable, 3 unknown, 1 wrong (r7-14, an illegal memory access the
    // thread resolved as an out-of-memory; the catalogue files it under library).
    // docs/diagnose-history.md.
    let (right, total, wrong) = score_acceptable("holdout-round7.yaml");
    assert_eq!(total, 24);
    assert!(
        right >= ROUND7_FLOOR,
        "only {right}/{total} on an acceptable layer"
    );
    let new_wrong: Vec<&String> = wrong.iter().filter(|id| *id != "r7-14").collect();
    assert!(
        new_wrong.is_empty(),
        "new wrong layers named for {new_wrong:?}"
    );
}

/// Round 7's first and only measurement: 20/24 (83%) on an acceptable layer.
const ROUND7_FLOOR: usize = 20;

#[test]
fn holdout_round8_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after the changes made for round 7 (68d7a8a) by the rule in the fixture's header
    // and measured once: 17/23 acceptable, 6 unknown, 0 wrong (docs/diagnose-history.md). The
    // families were then extended for its kinds of miss (29317bc), so it is tuned on now: 22/23,
    // only the bare title r8-03 unknown.
    assert_holdout_round("holdout-round8.yaml", 23, ROUND8_FLOOR, &[]);
}

/// Round 8 after the families were extended for its misses (tuned on): 22/23. Its first and
/// only unseen measurement was 17/23 (74%).
const ROUND8_FLOOR: usize = 22;

#[test]
fn holdout_round9_keeps_its_measured_accuracy_and_no_new_wrong_layer() {
    // Drawn after the family extension for round 8 (29317bc) by the rule in the fixture's header
    // and measured once: 11/20 acceptable, 6 unknown, 3 wrong (r9-09, r9-15, r9-16: catalogue
    // entries said with confidence; docs/diagnose-history.md). Tuned on since (2aad631: the cuDNN
    // handle family, RmInitAdapter and the card that cannot be mapped, bitsandbytes' setup): 17/20,
    // only r9-16 (a stale compute cache, now memory with the driver second) still on another layer.
    let (right, total, wrong) = score_acceptable("holdout-round9.yaml");
    assert_eq!(total, 20);
    assert!(
        right >= ROUND9_FLOOR,
        "only {right}/{total} on an acceptable layer"
    );
    let new_wrong: Vec<&String> = wrong
        .iter()
        .filter(|id| !ROUND9_MEASURED_WRONG.contains(&id.as_str()))
        .collect();
    assert!(
        new_wrong.is_empty(),
        "new wrong layers named for {new_wrong:?}"
    );
}

/// Round 9 after the changes made for its misses (tuned on): 17/20. Its first and only unseen
/// measurement was 11/20 (55%).
const ROUND9_FLOOR: usize = 17;

/// The wrong layer left after tuning (three at the measurement: r9-09, r9-15, r9-16).
const ROUND9_MEASURED_WRONG: &[&str] = &["r9-16"];

#[test]
fn holdout_round10_keeps_its_measured_accuracy_and_no_new_wrong_layer() {
    // Drawn after the changes made for round 9 (2aad631) by the rule in the fixture's header
    // (committed before the first search, 451b1f3; cases decided before diagnose ran, 4153a8d)
    // and measured once: 14/20 acceptable, 5 unknown, 1 wrong (r10-17, a user's own kernel
    // answered likely hardware, library second; docs/diagnose-history.md). Tuned on since
    // (TensorRT's loader family, the container runtime's "load library failed", GSP timeouts):
    // 19/20, r10-17 the only miss. Fewer right answers, or any other wrong layer, fails.
    let (right, total, wrong) = score_acceptable("holdout-round10.yaml");
    assert_eq!(total, 20);
    assert!(
        right >= ROUND10_FLOOR,
        "only {right}/{total} on an acceptable layer"
    );
    let new_wrong: Vec<&String> = wrong
        .iter()
        .filter(|id| !ROUND10_MEASURED_WRONG.contains(&id.as_str()))
        .collect();
    assert!(
        new_wrong.is_empty(),
        "new wrong layers named for {new_wrong:?}"
    );
}

/// Round 10 after the changes made for its misses (tuned on): 19/20. Its first and only unseen
/// measurement was 14/20 (70%).
const ROUND10_FLOOR: usize = 19;

/// The wrong layer round 10's measurement found; none may be added.
const ROUND10_MEASURED_WRONG: &[&str] = &["r10-17"];

#[test]
fn holdout_round11_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after the widening by family (NCCL, XLA/JAX, ONNX Runtime's provider, TensorRT
    // engines, driver-API names, apt, the container toolkit's requirement; 462f4f7..4c9052a) by
    // the rule in the fixture's header (committed before the first search, cd1c8d7; cases decided
    // before diagnose ran, c117430) and measured once, untuned: 15/20 acceptable, 5 unknown,
    // 0 wrong, fix right 14/15 (docs/diagnose-history.md). Tuned on since (families for its misses:
    // a failed make in the driver's DKMS folder, torch.distributed's process-group misuse, TensorRT
    // rejecting an exported model, TensorRT's `Cuda Error in <call>: N`, torch's "CUDA unknown
    // error" start-up wording): 20/20. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round11.yaml", 20, ROUND11_FLOOR, &[]);
}

/// Round 11 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 15/20 (75%).
const ROUND11_FLOOR: usize = 20;

#[test]
fn holdout_round12_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 11 was tuned on (1bf987c) by the rule in the fixture's header (committed
    // before the first search, 12ec6f3; cases decided before diagnose ran, 2b7e1da) and measured
    // once, untuned: 19/20 acceptable, 1 unknown (r12-11), 0 wrong, fix right 18/19
    // (docs/diagnose-history.md). Tuned on since, by family (the container runtime asked for a GPU
    // the host lacks; WSL named by the log itself): 20/20. Fewer right answers, or any wrong layer,
    // fails.
    assert_holdout_round("holdout-round12.yaml", 20, ROUND12_FLOOR, &[]);
}

/// Round 12 after the changes made for its miss (tuned on): 20/20. Its first and only unseen
/// measurement was 19/20 (95%).
const ROUND12_FLOOR: usize = 20;

#[test]
fn holdout_round13_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 12 was tuned on (c959860) by the rule in the fixture's header (committed
    // before the first search, f16ca5f; cases decided before diagnose ran, a0b00b6) and measured
    // once, untuned: 16/20 acceptable, 4 unknown, 0 wrong, fix right 13/16
    // (docs/diagnose-history.md). Tuned on since, by family (CMake's toolkit not found whole,
    // xformers built for another torch, the kernel refusing the module; "no CUDA device" asks
    // whether nvidia-smi sees the GPU): 20/20. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round13.yaml", 20, ROUND13_FLOOR, &[]);
}

/// Round 13 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 16/20 (80%).
const ROUND13_FLOOR: usize = 20;

#[test]
fn holdout_round14_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 13 was tuned on (a9eed99) by the rule in the fixture's header (committed
    // before the first search, a081c1e; cases decided before diagnose ran, fe5f91c) and measured
    // once, untuned: 16/20 acceptable, 4 unknown, 0 wrong, fix right 13/16
    // (docs/diagnose-history.md). Tuned on since, by family (TensorFlow's missing CUDA runtime
    // symbols, TensorRT's error about one layer, ONNX Runtime's TensorRT provider, out of memory
    // while counting GPUs): 20/20. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round14.yaml", 20, ROUND14_FLOOR, &[]);
}

/// Round 14 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 16/20 (80%).
const ROUND14_FLOOR: usize = 20;

#[test]
fn holdout_round15_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 14 was tuned on (161bcba) by the rule in the fixture's header (committed
    // before the first search, 1734b7a; cases decided before diagnose ran, c3dc43e) and measured
    // once, untuned: 18/20 acceptable, 0 unknown, 2 wrong (r15-17, r15-18: nvidia-smi's own
    // segfault read as the library), fix right 17/18 (docs/diagnose-history.md). Tuned on since, by
    // family (nvidia-smi's own crash is the driver; the word dxgkrnl alone is no WSL): 20/20, no
    // wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round15.yaml", 20, ROUND15_FLOOR, &[]);
}

/// Round 15 after the changes made for its wrong answers (tuned on): 20/20. Its first and only
/// unseen measurement was 18/20 (90%) with two wrong layers (r15-17, r15-18).
const ROUND15_FLOOR: usize = 20;

#[test]
fn holdout_round16_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 15 was tuned on (07d9ea4) by the rule in the fixture's header (committed
    // before the first search, 8334f07; cases decided before diagnose ran, f1e7cae) and measured
    // once, untuned: 14/20 acceptable, 6 unknown, 0 wrong, fix right 13/14
    // (docs/diagnose-history.md). Tuned on since, by family (the container runtime's mount errors:
    // driver libraries in the way, or missing), then nvcc's and NVRTC's compile errors by where
    // they are (the toolkit's own headers, a kernel the library generated): 19/20, r16-09 (an
    // undefined name in NCCL's own source) still unknown. Fewer right answers, or any wrong layer,
    // fails.
    assert_holdout_round("holdout-round16.yaml", 20, ROUND16_FLOOR, &[]);
}

/// Round 16 after the changes made for its misses (tuned on): 19/20. Its first and only unseen
/// measurement was 14/20 (70%).
const ROUND16_FLOOR: usize = 19;

#[test]
fn holdout_round17_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 16 was tuned on (d1fee59) by the rule in the fixture's header (committed
    // before the first search, dceb1f8; cases decided before diagnose ran, daa3a04) and measured
    // once, untuned: 10/20 acceptable, 9 unknown, 1 wrong (r17-20: an Xid 31 the driver's tracker
    // calls a driver bug, read as the library), fix right 9/10 (docs/diagnose-history.md). Tuned on
    // since, by family (Docker's unknown nvidia runtime, CMake without a default CUDA architecture,
    // the driver module's own folders failing to compile, TensorFlow's "DNN library is not found",
    // an Xid of a desktop program): 20/20, no wrong layer. Fewer right answers, or any wrong layer,
    // fails.
    assert_holdout_round("holdout-round17.yaml", 20, ROUND17_FLOOR, &[]);
}

/// Round 17 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 10/20 (50%) with one wrong layer (r17-20).
const ROUND17_FLOOR: usize = 20;

#[test]
fn holdout_round18_keeps_its_tuned_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after round 17 was tuned on (a0cec94) by the rule in the fixture's header (committed
    // before the first search, 638c2fc; cases decided before diagnose ran, 25daa4e) and measured
    // once, untuned: 16/22 acceptable, 4 unknown, 2 wrong (r18-03: TensorFlow's missing
    // libcusolver read as the library's own binary; r18-17: cuDNN under WSL whose fix was WSL's
    // libcuda, read as the toolkit), fix right 14/16 (docs/diagnose-history.md). Tuned on since, by
    // family (the search path a loader prints is not where the library lives; the Windows driver's
    // nvcuda.dll not found): 18/22, r18-17 still wrong (its title alone, "Could not load library
    // libcudnn_cnn_infer.so.8", is also cuDNN missing in AILab-CVC/Make-Your-Video#4). Fewer right
    // answers, or another wrong layer, fails.
    assert_holdout_round("holdout-round18.yaml", 22, ROUND18_FLOOR, &["r18-17"]);
}

/// Round 18 after the changes made for its misses (tuned on): 18/22. Its first and only unseen
/// measurement was 16/22 (73%) with two wrong layers (r18-03, r18-17).
const ROUND18_FLOOR: usize = 18;

#[test]
fn holdout_round19_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 18 was tuned on (main fdbd7b0) by the rule in the fixture's header
    // (committed before the first search, 3a467a9; cases decided before diagnose ran, 142eee6)
    // and measured once, untuned: 4/20 acceptable, 14 unknown, 2 wrong (r19-11: JAX's CUDA
    // backend failing with CUDA_ERROR_NOT_INITIALIZED, fixed by reinstalling jax, read as the
    // driver; r19-17: Windows' paging file too small while loading a torch DLL, read as the
    // library's own binary), fix right 3/4 (docs/diagnose-history.md). Tuned on since, by family (a
    // wheel needing a newer glibc, TensorRT's linked-vs-loaded pair, the linker without libcudart,
    // the paging file, JAX's plugin check, the MIG monitor capability, the persistence daemon, the
    // runfile's missing kernel source): 20/20. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round19.yaml", 20, ROUND19_FLOOR, &[]);
}

#[test]
fn holdout_round20_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after round 18 was tuned on (main fdbd7b0), alongside round 19, by the rule in the
    // fixture's header (committed before the first search, 6c03a81; cases decided before
    // diagnose ran, 8b17ab3) and measured once, untuned: 6/20 acceptable, 14 unknown, 0 wrong,
    // fix right 6/6 (docs/diagnose-history.md). Tuned on since, by family (XLA's missing libdevice
    // or ptxas, an unresolvable NVIDIA CDI device, a CUDA IPC handle, a failed ggml CUDA op, CUDA's
    // peer-mapping limit, NVRM's API mismatch): 20/20, no wrong layer. Fewer right answers, or any
    // wrong layer, fails.
    assert_holdout_round("holdout-round20.yaml", 20, ROUND20_FLOOR, &[]);
}

/// Round 19 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 4/20 (20%) with two wrong layers (r19-11, r19-17).
const ROUND19_FLOOR: usize = 20;
/// Round 20 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 6/20 (30%), no wrong layer.
const ROUND20_FLOOR: usize = 20;

#[test]
fn holdout_round21_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after rounds 19 and 20 were tuned on and merged (main 9135b6d) by the rule in the
    // fixture's header (committed before the first search, 3f0c076; cases decided before
    // diagnose ran, b8d1a75), a representative round of first-hour symptoms, and measured once,
    // untuned: 14/20 acceptable, 4 unknown, 2 wrong (r21-03: torch's preload of a missing cuBLAS
    // pip package read as the toolkit; r21-09: Paddle's CUBLAS_STATUS_NOT_INITIALIZED, fixed by a
    // consistent CUDA stack, read as memory), fix right 7/14 (docs/diagnose-history.md, bc9bd5d).
    // Tuned on since, by family (torch's import preload of its CUDA wheels, Paddle's cuBLAS handle
    // at GPU setup, collect_env's CPU-only build, dpkg failing on an NVIDIA package): 20/20, no
    // wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round21.yaml", 20, ROUND21_FLOOR, &[]);
}

#[test]
fn holdout_round22_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after rounds 19 and 20 were tuned on and merged (main 9135b6d), alongside round 21,
    // by the rule in the fixture's header (committed before the first search, 874dec8; cases
    // decided before diagnose ran, 4e5de6b) and measured once, untuned: 6/20 acceptable, 14
    // unknown, 0 wrong, fix right 3/6 (docs/diagnose-history.md). Tuned on since, by family (the
    // DataLoader's shared memory, bf16 on a card older than Ampere, Code 43 without Device
    // Manager's sentence, "Failed to dlopen libcuda.so", nvcc refusing a second cl.exe): 15/20, no
    // wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round22.yaml", 20, ROUND22_FLOOR, &[]);
}

/// Round 22 after the changes made for its misses (tuned on): 15/20. Its first and only unseen
/// measurement was 6/20 (30%), no wrong layer.
const ROUND22_FLOOR: usize = 15;
/// Round 21 after the changes made for its misses (tuned on): 20/20. Its first and only unseen
/// measurement was 14/20 (70%) with two wrong layers (r21-03, r21-09).
const ROUND21_FLOOR: usize = 20;

#[test]
fn holdout_round23_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after rounds 19, 20 and 22 were tuned on and merged (main 8cfb5c9), alongside round
    // 21, by the rule in the fixture's header (committed before the first search, f2698cf; cases
    // decided before diagnose ran, efc4d7a) and measured once, untuned: 9/18 acceptable, 8
    // unknown, 1 wrong (r23-02: PyTorch's bare CUDNN_STATUS_NOT_INITIALIZED, fixed by a smaller
    // batch, read as a cuDNN/CUDA mismatch), fix right 7/9 (docs/diagnose-history.md). Tuned on
    // since, by family (a bare cuDNN NOT_INITIALIZED as memory, TensorFlow's convolution algorithm
    // as the cuDNN handle, TensorRT's serialization version tag, vLLM's memory budget, inductor
    // without Triton, Triton's ptxas older than the card, Triton's run-time -lcuda): 17/18, no
    // wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round23.yaml", 18, ROUND23_FLOOR, &[]);
}

#[test]
fn holdout_round24_keeps_its_tuned_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 19-22 were tuned on and merged (main 46710d9), alongside round 23, by
    // the rule in the fixture's header (committed before the first search, d38f2cd; cases decided
    // before diagnose ran, d0bc472), a representative round of first-hour symptoms, and measured
    // once, untuned: 12/18 acceptable, 5 unknown, 1 wrong (r24-17: "no CUDA-capable device is
    // detected" on a notebook whose only GPU is an ATI card, read as the driver), fix right 10/12
    // (docs/diagnose-history.md, 825e3f0). Tuned on since, by family (CUDA Python's 'Function
    // "cuInit" not found', conda's CPU-only PyTorch builds): 15/18, r24-17 still wrong. Fewer right
    // answers, or a wrong layer beyond the measured one, fails.
    assert_holdout_round("holdout-round24.yaml", 18, ROUND24_FLOOR, &["r24-17"]);
}

#[test]
fn holdout_round25_keeps_its_tuned_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 19-24 and the catalogue audit were tuned on and merged (main c40bc00),
    // by the rule in the fixture's header (committed before the first search, 7668f3c; cases
    // decided before diagnose ran, 204666c), a representative round of new-workstation symptoms,
    // and measured once, untuned: 9/15 acceptable, 5 unknown, 1 wrong (r25-15: pycuda's "cuInit
    // failed: unknown error" in a VM with no GPU, read as the driver), fix right 6/9
    // (docs/diagnose-history.md). Tuned on since, by family (TensorFlow's own module lacking an API
    // the code calls, make failing inside the NVIDIA installer's kernel tree): 12/15, r25-15 still
    // wrong. Fewer right answers, or a wrong layer beyond the measured one, fails.
    assert_holdout_round("holdout-round25.yaml", 15, ROUND25_FLOOR, &["r25-15"]);
}

/// Round 25 after the changes made for its misses (tuned on): 12/15. Its first and only unseen
/// measurement was 9/15 (60%) with one wrong layer (r25-15).
const ROUND25_FLOOR: usize = 12;
/// Round 23 after the changes made for its misses (tuned on): 17/18. Its first and only unseen
/// measurement was 9/18 (50%) with one wrong layer (r23-02).
const ROUND23_FLOOR: usize = 17;
/// Round 24 after the changes made for its misses (tuned on): 15/18. Its first and only unseen
/// measurement was 12/18 (67%) with one wrong layer (r24-17).
const ROUND24_FLOOR: usize = 15;

#[test]
fn holdout_round26_keeps_its_tuned_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 19-25 were tuned on and merged (main 991092c), by the rule in the
    // fixture's header (committed before the first search, d98510f; cases decided before diagnose
    // ran, 14d3db9), a representative round of first-week training symptoms, and measured once,
    // untuned: 7/18 acceptable, 9 unknown, 2 wrong (r26-08: MatConvNet's unspecified launch
    // failure fixed by a library release, read as the card; r26-12: CNTK's cuDNN execution
    // failure from the user's own convolution, read as a cuDNN/CUDA mismatch), fix right 6/7
    // (docs/diagnose-history.md). Tuned on since, by family (a DataLoader worker killed by SIGKILL,
    // two floating-point precisions in one op, GradScaler's refusals, cuDNN's execution failure as
    // the library build, conda's CPU build in its download table and mamba's plan): 17/18, r26-08
    // still wrong. Fewer right answers, or a wrong layer beyond it, fails.
    assert_holdout_round("holdout-round26.yaml", 18, ROUND26_FLOOR, &["r26-08"]);
}

/// Round 26 after the changes made for its misses (tuned on): 17/18. Its first and only unseen
/// measurement was 7/18 (39%) with two wrong layers (r26-08, r26-12).
const ROUND26_FLOOR: usize = 17;

#[test]
fn holdout_round27_keeps_its_tuned_accuracy_and_names_no_wrong_layer() {
    // Drawn after rounds 19-26 and the breadth pass were tuned on and merged (main dafe578), by
    // the rule in the fixture's header (committed before the first search, f56eca0; cases decided
    // before diagnose ran, 4185a9f), a representative round of a new workstation's first hour,
    // and measured once, untuned: 13/17 acceptable, 4 unknown, 0 wrong, fix right 10/13
    // (docs/diagnose-history.md, b7d00cc). Tuned on since, by family (apt's "but it is not
    // installable" for an NVIDIA package, torch's own _C extension module missing a symbol, the
    // CUDA images' "NVIDIA Driver was not detected" banner): 17/17. Fewer right answers, or any
    // wrong layer, fails.
    assert_holdout_round("holdout-round27.yaml", 17, ROUND27_FLOOR, &[]);
}

/// Round 27 after the changes made for its misses (tuned on): 17/17. Its first and only unseen
/// measurement was 13/17 (76%) with no wrong layer.
const ROUND27_FLOOR: usize = 17;

#[test]
fn holdout_round28_keeps_its_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 19-27 and four breadth passes were tuned on and merged (main ccafa0d),
    // by the rule in the fixture's header (committed before the first search, aa43945; cases
    // decided before diagnose ran, 523cc9a), a representative round of a vision lab's first
    // training runs, and measured once, untuned: 13/20 acceptable, 6 unknown, 1 wrong (r28-06:
    // onnxruntime's missing libcublas.so.9.1 read as the library's own binary through the
    // warning's site-packages path), fix right 11/13 (docs/diagnose-history.md). Tuned on since, by
    // family (torchvision's custom ops not loading, Caffe2's cuDNN compiled/runtime mismatch,
    // CUDA_HOME written like PATH, glibc's symbol version not defined for a CUDA library): 19/20,
    // r28-06 still wrong. Fewer right answers, or a wrong layer beyond it, fails.
    assert_holdout_round("holdout-round28.yaml", 20, ROUND28_FLOOR, &["r28-06"]);
}

/// Round 28 after the changes made for its misses (tuned on): 19/20. Its first and only unseen
/// measurement was 13/20 (65%) with one wrong layer (r28-06).
const ROUND28_FLOOR: usize = 19;

#[test]
fn holdout_round29_keeps_its_measured_accuracy_and_names_no_wrong_layer() {
    // Drawn after rounds 19-28 and four breadth passes were tuned on and merged (main 3abf4b5),
    // alongside breadth passes brE and brF, by the rule in the fixture's header (committed
    // before the first search, 5433e2b; cases decided before diagnose ran, a621ada), a
    // representative round of the stack after an upgrade or a rebuild, and measured once,
    // untuned: 9/20 acceptable, 11 unknown, 0 wrong, fix right 7/9 (docs/diagnose-history.md).
    // Tuned on since, by family (a removed nvidia/cuda base tag, TH's "you tried to reallocate ...
    // Buy new RAM!"): 14/20. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round29.yaml", 20, ROUND29_FLOOR, &[]);
}

/// Round 29 after the changes made for its misses (tuned on): 14/20. Its first and only unseen
/// measurement was 9/20 (45%) with no wrong layer.
const ROUND29_FLOOR: usize = 14;

#[test]
fn holdout_round30_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 19-29 and breadth passes brA-brD and brF were tuned on and merged (main
    // 4308fc2), alongside breadth pass brE, by the rule in the fixture's header (committed before
    // the first search, 391ccd0; cases decided before diagnose ran, f4d17a7), a representative
    // round of serving small vision models, and measured once, untuned: 8/14 acceptable, 5
    // unknown, 1 wrong (r30-02: OpenAI Triton's invalid kernel image, gone on a newer driver,
    // read as the library's code), fix right 7/8 (docs/diagnose-history.md). Tuned on since, by
    // family (Triton's invalid kernel image as the driver, ONNX Runtime's TensorRT provider not
    // created, CMake without cuDNN, TensorRT 5-7's engine size assertion): 13/14, no wrong layer.
    // Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round30.yaml", 14, ROUND30_FLOOR, &[]);
}

/// Round 30 after the changes made for its misses (tuned on): 13/14. Its first and only unseen
/// measurement was 8/14 (57%) with one wrong layer (r30-02).
const ROUND30_FLOOR: usize = 13;

#[test]
fn holdout_round31_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 26-30 and breadth passes brA-brF were tuned on and merged (main
    // e5f688e), alongside breadth pass brG, by the rule in the fixture's header (committed before
    // the first search, 42d2eb3; cases decided before diagnose ran, 3480111), a representative
    // round of a vision lab's training workstation on native Windows, and measured once,
    // untuned: 7/14 acceptable, 6 unknown, 1 wrong (r31-14: Windows' Chinese "DLL load failed:
    // the paging file is too small" read as the library's DLL load), fix right 7/7. Tuned on
    // since, by family (the paging file without its WinError code, the caching allocator's
    // sentence without its head, TensorFlow 1.x's native module missing on Windows): 11/14, no
    // wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round31.yaml", 14, ROUND31_FLOOR, &[]);
}

/// Round 31 after the changes made for its misses (tuned on): 11/14. Its first and only unseen
/// measurement was 7/14 (50%) with one wrong layer (r31-14).
const ROUND31_FLOOR: usize = 11;

#[test]
fn holdout_round32_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 26-31 and breadth passes brA-brG were tuned on and merged (main
    // fe2c8c7), no round or pass alongside, by the rule in the fixture's header (committed before
    // the first search, 35c88cf; cases decided before diagnose ran, 1f23fea), a representative
    // round of a vision lab's shared Linux GPU server, and measured once, untuned: 2/8
    // acceptable, 5 unknown, 1 wrong (r32-01: an application's bare "Failed to initialize NVML",
    // cured by the application's own release, read as the driver by the broad driver rule), fix
    // right 2/2. Tuned on since, by family (torch missing from the interpreter that runs the
    // code): 5/8, r32-01 still the one wrong layer. Fewer right answers, or any other wrong
    // layer, fails.
    assert_holdout_round("holdout-round32.yaml", 8, ROUND32_FLOOR, &["r32-01"]);
}

/// Round 32 after the changes made for its misses (tuned on): 5/8. Its first and only unseen
/// measurement was 2/8 (25%) with one wrong layer (r32-01).
const ROUND32_FLOOR: usize = 5;

#[test]
fn holdout_round33_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after round 32 and breadth passes brA-brG were tuned on and merged (main 973662a),
    // no round or pass alongside, by the rule in the fixture's header (committed before the first
    // search, f863195; cases decided before diagnose ran, 327a102), a representative round of a
    // student's laptop or home gaming PC with a GeForce card (hybrid graphics, Secure Boot, the
    // vendor's driver on Windows, a small card), and measured once, untuned: 5/13 acceptable, 8
    // unknown, 0 wrong, fix right 5/5. Tuned on since, by family (a CUDA call's "returned N",
    // the kernel refusing an untrusted module signature, the Windows SDK's corecrt.h, distutils'
    // vcvarsall.bat, Windows' "is missing from your computer" dialog): 10/13, no wrong layer.
    // Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round33.yaml", 13, ROUND33_FLOOR, &[]);
}

/// Round 33 after the changes made for its misses (tuned on): 10/13. Its first and only unseen
/// measurement was 5/13 (38%) with no wrong layer.
const ROUND33_FLOOR: usize = 10;

#[test]
fn holdout_round34_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after round 33 and breadth passes brH and brI were tuned on and merged (main
    // ab3b2da), alongside breadth passes brJ and brK, by the rule in the fixture's header
    // (committed before the first search, 7806a4f; cases decided before diagnose ran, 64df5c8),
    // a representative round of a vision lab's multi-GPU workstation (NCCL and peer-to-peer
    // across the cards, the IOMMU, a card off the bus, power and heat, mixed cards, GPU 0's extra
    // memory), 3 cases, and measured once, untuned: 2/3 acceptable, 1 unknown, 0 wrong, fix
    // right 2/2. Its one miss (Level Zero's ZE_RESULT_ERROR_INVALID_ARGUMENT, the runtime's fault
    // here and the caller's in other threads) is left unknown, so tuned it is still 2/3. Fewer
    // right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round34.yaml", 3, ROUND34_FLOOR, &[]);
}

/// Round 34 tuned (no rule added: its one miss splits between layers across threads): 2/3, the
/// same as its first and only unseen measurement, 2/3 (67%) with no wrong layer.
const ROUND34_FLOOR: usize = 2;

#[test]
fn holdout_round35_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after round 33 and breadth passes brH and brI were tuned on and merged (main
    // ab3b2da), alongside breadth passes brJ and brK, after round 34, by the rule in the
    // fixture's header (committed before the first search, 804c734; cases decided before
    // diagnose ran, f11d123), a representative round of the tracebacks a vision lab pastes from
    // the training scripts of detection, segmentation, GAN and diffusion, pose, tracking, re-id
    // and video repositories, drawn with the repository plus a generic error word, 16 cases,
    // and measured once, untuned: 5/16 acceptable, 11 unknown, 0 wrong, fix right 5/5. Tuned on
    // since, by family (mmcv or diffusers missing from the interpreter, a name missing from an
    // installed package's module, pip compiling mmcv for want of a prebuilt wheel, Keras's
    // progress bar with the shell's "Killed" glued on): 13/16, no wrong layer. Fewer right
    // answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round35.yaml", 16, ROUND35_FLOOR, &[]);
}

/// Round 35 after the changes made for its misses (tuned on): 13/16. Its first and only unseen
/// measurement was 5/16 (31%) with no wrong layer.
const ROUND35_FLOOR: usize = 13;

#[test]
fn holdout_round36_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 33-35 and breadth passes brA-brK were tuned on and merged (main
    // 96509b3), alongside breadth passes brL and brM, by the rule in the fixture's header
    // (committed before the first search, f9b7141; cases decided before diagnose ran, 97edc01 and
    // 67742fe), a representative round of the tracebacks a vision lab pastes from the training,
    // inference and demo scripts of YOLO, face, OCR, super-resolution, NeRF, point-cloud, CLIP and
    // Grounding DINO repositories, drawn with the repository plus a generic error word, 18
    // cases, and measured once, untuned: 2/18 acceptable, 16 unknown, 0 wrong, fix right 2/2.
    // Tuned on since, by family (InsightFace's sessions on the CPU provider alone, onnx's
    // extension under an old Visual C++ runtime, setuptools' installed-version check, an
    // extension's tensor.type() dispatch under a newer torch, Deformable DETR's attention op not
    // built, basicsr missing or its losses layout, a torchvision module moved by its release):
    // 11/18, no wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round36.yaml", 18, ROUND36_FLOOR, &[]);
}

/// Round 36 after the changes made for its misses (tuned on): 11/18. Its first and only unseen
/// measurement was 2/18 (11%) with no wrong layer.
const ROUND36_FLOOR: usize = 11;

#[test]
fn holdout_round37_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 33-36 and breadth passes brA-brM were tuned on and merged (main
    // 2bcdfcd), alongside breadth passes brN and brO, by the rule in the fixture's header
    // (committed before the first search, e74bec8; cases decided before diagnose ran, c2734dd),
    // a representative round of the tracebacks a vision lab pastes from the generative and
    // foundation-model tools it runs (webui forks, ComfyUI nodes, kohya_ss, Fooocus, LLaVA,
    // Depth-Anything, DINOv2, MMagic), drawn with the repository plus a generic error word, 15
    // cases, and measured once, untuned: 3/15 acceptable, 12 unknown, 0 wrong, fix right 3/3.
    // Tuned on since, by family (bitsandbytes not importable in a trainer's venv, numpy and
    // insightface missing from the interpreter, setuptools' distutils shim, transformers' import
    // naming flash-attn's extension, pip's resolver conflicts, ComfyUI's "Allocation on device",
    // xformers' operator not built): 12/15, no wrong layer. Fewer right answers, or any wrong
    // layer, fails.
    assert_holdout_round("holdout-round37.yaml", 15, ROUND37_FLOOR, &[]);
}

/// Round 37 after the changes made for its misses (tuned on): 12/15. Its first and only unseen
/// measurement was 3/15 (20%) with no wrong layer.
const ROUND37_FLOOR: usize = 12;

#[test]
fn holdout_round38_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 33-37 and breadth passes brA-brO were tuned on and merged (main
    // a68ca98), alongside breadth passes brP and brQ, by the rule in the fixture's header
    // (committed before the first search, 05a2fb6; cases decided before diagnose ran, 7b8b7fc),
    // a representative round of the tracebacks a vision lab pastes from the mainstream training
    // tutorials and templates it starts from (Keras / TensorFlow tutorials, TensorFlow.NET's
    // examples, the Object Detection API, fastai, KerasCV, PyTorch's examples), drawn with the
    // repository or task plus a generic error word, 20 cases, and measured once, untuned: 14/20
    // acceptable, 6 unknown, 0 wrong, fix right 13/14. Tuned on since, by family (fastai's
    // majors lacking each other's modules, keras_core missing from the interpreter): 17/20, no
    // wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round38.yaml", 20, ROUND38_FLOOR, &[]);
}

/// Round 38 after the changes made for its misses (tuned on): 17/20. Its first and only unseen
/// measurement was 14/20 (70%) with no wrong layer.
const ROUND38_FLOOR: usize = 17;

#[test]
fn holdout_round39_keeps_its_measured_accuracy_and_names_no_other_wrong_layer() {
    // Drawn after rounds 33-38 and breadth passes brA-brQ were tuned on and merged (main
    // 6a2cd3b), no round or pass alongside, by the rule in the fixture's header (committed
    // before the first search, 3366638; cases decided before diagnose ran, b9a0386), a
    // representative round of the tracebacks a vision lab pastes from the tools around training
    // that touch the GPU stack (TensorBoard's and torch.profiler's CUPTI, triton under
    // torch.compile, Optuna trials, ClearML's GPU monitor), drawn with the tool or task plus a
    // generic error word, 12 cases (every reserve run), and measured once, untuned: 2/12
    // acceptable, 10 unknown, 0 wrong, fix right 1/2. Tuned on since, by family (CUPTI refused
    // by the driver's admin-only performance counters, triton without its compiled part): 6/12,
    // no wrong layer. Fewer right answers, or any wrong layer, fails.
    assert_holdout_round("holdout-round39.yaml", 12, ROUND39_FLOOR, &[]);
}

/// Round 39 after the changes made for its misses (tuned on): 6/12. Its first and only unseen
/// measurement was 2/12 (17%) with no wrong layer.
const ROUND39_FLOOR: usize = 6;

#[test]
fn an_ambiguous_message_names_its_second_layer_and_says_likely() {
    let out = stackpin(
        &["diagnose", "-", "--host", "none"],
        Some("RuntimeError: CUDA error: unspecified launch failure\n"),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("layer:    hardware (or library)"),
        "{stdout}"
    );
    assert!(stdout.contains("cause:    likely: "), "{stdout}");
}

/// The `stackpin …` command lines quoted between backticks in `text`.
fn quoted_stackpin_commands(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.starts_with("stackpin "))
        .map(str::to_string)
        .collect()
}

/// Parses a quoted hint as the CLI would, with its placeholders filled the way a user would.
fn parse_hint(command: &str) -> Result<(), String> {
    let args: Vec<String> = command
        .split_whitespace()
        .map(|word| {
            let word = if word.starts_with('{') && word.ends_with('}') {
                "64"
            } else {
                word
            };
            match word {
                "MANIFEST" => "stack.yaml".to_string(),
                "OS" => "linux".to_string(),
                "PEAK" => "2.5GB".to_string(),
                "SIZE" => "8GiB".to_string(),
                "N" => "64".to_string(),
                "X.Y" => "12.4".to_string(),
                _ => word
                    .replace("NAME==VERSION", "torch==2.5.1")
                    .replace("VERSION", "550.54.15"),
            }
        })
        .collect();
    <stackpin::cli::Cli as clap::Parser>::try_parse_from(&args)
        .map(|_| ())
        .map_err(|e| format!("`{command}` does not parse: {e}"))
}

#[test]
fn every_stackpin_command_a_diagnose_fix_quotes_parses_as_a_command_line() {
    // Read the fixes where they are written (a Rust string's `\` line continuation joined), so
    // a hint no test case reaches is checked too.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/diagnose");
    let mut files = vec![root.clone()];
    let mut commands = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("src/diagnose readable") {
                files.push(entry.expect("entry").path());
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path).expect("source readable");
            let mut joined = String::new();
            let mut rest = source.as_str();
            while let Some(at) = rest.find("\\\n") {
                joined.push_str(&rest[..at]);
                rest = rest[at + 2..].trim_start();
            }
            joined.push_str(rest);
            commands.extend(quoted_stackpin_commands(&joined));
        }
    }
    assert!(commands.len() > 20, "found only {commands:?}");
    assert!(
        commands.iter().any(|c| c.starts_with("stackpin vram ")),
        "{commands:?}"
    );
    let broken: Vec<String> = commands
        .iter()
        .filter_map(|c| parse_hint(c).err())
        .collect();
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn an_out_of_memory_fix_names_a_vram_command_that_parses() {
    let log =
        "batch_size=64\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
    let out = stackpin(&["diagnose", "-", "--host", "none", "--json"], Some(log));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let fix = json["fix"].as_str().expect("fix");
    let commands = quoted_stackpin_commands(fix);
    assert!(
        commands.iter().any(|c| c.starts_with("stackpin vram ")),
        "{fix}"
    );
    for command in &commands {
        parse_hint(command).unwrap_or_else(|e| panic!("{e}"));
    }
}
