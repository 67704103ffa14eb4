//! `stackpin budget`: the guide's two-camera numbers, the card check, and input errors.

use serde_json::Value;

use crate::common::{repo, run, stackpin};

const TWO_CAMERAS: &str = "examples/budget-two-cameras.yaml";

fn write(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("budget.yaml");
    std::fs::write(&path, text).expect("write budget");
    path
}

#[test]
fn two_cameras_save_one_fixed_cost_when_merged() {
    let out = run(stackpin()
        .arg("budget")
        .arg(repo(TWO_CAMERAS))
        .arg("--json"));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let b: Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    let processes = b["processes"].as_array().expect("processes");
    assert_eq!(processes.len(), 2);
    let fixed = processes[0]["fixed_mib"].as_f64().expect("fixed");
    assert_eq!(processes[1]["fixed_mib"].as_f64(), Some(fixed));
    let second = &processes[1]["models"][0];
    let weights = second["weights_mib"].as_f64().expect("weights");
    assert!(
        (weights - 9.5).abs() < 0.05,
        "~9.5 MiB of FP16 weights, got {weights}"
    );
    assert_eq!(second["activations_mib"], 20.0);
    assert_eq!(b["saving_mib"].as_f64(), Some(fixed));
    let total = b["total_mib"].as_f64().expect("total");
    let one = b["one_process_total_mib"].as_f64().expect("one process");
    // The document's numbers are rounded to 3 decimals; their difference is compared as such.
    assert!(
        (total - one - fixed).abs() < 0.002,
        "{total} - {one} != {fixed}"
    );
    let models = 2.0 * weights + 80.0 + 20.0;
    let recommended = b["recommended_gpu_mib"].as_f64().expect("recommended");
    assert!(
        (recommended - 2.0 * (2.0 * 1024.0 + models)).abs() < 0.01,
        "{recommended}"
    );
}

#[test]
fn two_cameras_human_report() {
    let out = run(stackpin().arg("budget").arg(repo(TWO_CAMERAS)));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("all models in one process       628 MiB"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Card to plan for: 4,334.1 MiB"),
        "{}",
        out.stdout
    );
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn a_budget_over_the_card_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        &dir,
        "gpu_mib: 1GB\nprocesses:\n  - name: a\n    models: [{name: m, params: 5M, activations_mib: 80}]\n  \
         - name: b\n    models: [{name: m, params: 5M, activations_mib: 80}]\n",
    );
    let out = run(stackpin().arg("budget").arg(&path));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("does NOT fit"), "{}", out.stdout);
}

#[test]
fn measured_context_overrides_the_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        &dir,
        "context_mib: 512\nruntime_mib: 0\nworkspace_mib: 0\nprocesses:\n  - name: a\n    \
         models: [{name: m, weights_mib: 10, activations_mib: 6}]\n",
    );
    let out = run(stackpin().arg("budget").arg(&path).arg("--json"));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let b: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(b["total_mib"], 528.0);
    assert_eq!(b["processes"][0]["defaults_used"], Value::Array(vec![]));
}

#[test]
fn a_zero_baseline_is_warned_about_and_the_report_says_which_values_are_defaults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        &dir,
        "context_mib: 0\nruntime_mib: 0\nprocesses:\n  - name: cam\n    \
         models: [{name: m, weights_mib: 10, activations_mib: 6}]\n",
    );
    let out = run(stackpin().arg("budget").arg(&path));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("a {name} line: {}", out.stdout))
            .to_string()
    };
    assert!(
        line("context_mib").contains("from the file"),
        "{}",
        out.stdout
    );
    assert!(line("workspace_mib").contains("default"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("warning: cam: context_mib + runtime_mib is 0 MiB"),
        "{}",
        out.stdout
    );
    assert!(
        !line("context_mib").contains("default"),
        "a given zero is not called a default: {}",
        out.stdout
    );
}

#[test]
fn a_misspelled_field_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "processes:\n  - name: a\n    modles: []\n");
    let out = run(stackpin().arg("budget").arg(&path));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("budget.yaml:3:"), "{}", out.stderr);
    assert!(out.stderr.contains("modles"), "{}", out.stderr);
}

#[test]
fn a_model_without_weights_says_what_to_give() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        &dir,
        "processes:\n  - name: cam\n    models: [{name: det, activations_mib: 5}]\n",
    );
    let out = run(stackpin().arg("budget").arg(&path));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("processes[0] (cam).models[0] (det)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("weights_mib"), "{}", out.stderr);
}

#[test]
fn a_missing_file_is_an_input_error_naming_it() {
    let out = run(stackpin().args(["budget", "no-such-budget.yaml"]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("no-such-budget.yaml"), "{}", out.stderr);
}
