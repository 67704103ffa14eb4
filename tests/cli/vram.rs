//! `stackpin vram`: the guide's worked example exactly, the two-point fit, and refusals.

use serde_json::Value;

use crate::common::{run, stackpin};

const GUIDE: [&str; 10] = [
    "vram",
    "--peak",
    "2.5GB",
    "--batch",
    "64",
    "--vram",
    "5GB",
    "--dataset",
    "67.5MB",
    "--batches=32,64,96,128",
];

fn json(args: &[&str]) -> Value {
    let out = run(stackpin().args(args).arg("--json"));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).expect("one JSON document")
}

fn prediction(plan: &Value, batch: u64) -> &Value {
    plan["predictions"]
        .as_array()
        .expect("predictions")
        .iter()
        .find(|p| p["batch"] == batch)
        .expect("batch predicted")
}

#[test]
fn guide_worked_example_reads_as_the_guide_says_it() {
    let out = run(stackpin().args(GUIDE));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for expected in [
        "2,560 MiB ÷ 64 = 40 MiB per sample",
        "≈38× the dataset",
        "the 80 % line is 4,096 MiB (4.00 GiB)",
        "= 102.4 → 96",
    ] {
        assert!(
            out.stdout.contains(expected),
            "missing {expected:?}:\n{}",
            out.stdout
        );
    }
    let row = |batch: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(batch))
            .unwrap_or_else(|| panic!("no row for batch {batch}:\n{}", out.stdout))
            .to_string()
    };
    let b96 = row("96");
    assert!(
        b96.contains("3.75 GiB") && b96.contains("75 %") && b96.ends_with("fits"),
        "{b96}"
    );
    let b128 = row("128");
    assert!(
        b128.contains("5.00 GiB") && b128.contains("100 %") && b128.ends_with("out of memory"),
        "{b128}"
    );
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn guide_worked_example_as_json() {
    let plan = json(&GUIDE);
    assert_eq!(plan["rule"], "one_point");
    assert_eq!(plan["per_sample_mib"], 40.0);
    assert_eq!(plan["line_mib"], 4096.0);
    assert_eq!(plan["largest_raw"], 102.4);
    assert_eq!(plan["largest_safe_batch"], 96);
    let inflation = plan["inflation"]
        .as_f64()
        .expect("inflation with a dataset");
    assert_eq!(inflation.round(), 38.0);
    let b96 = prediction(&plan, 96);
    assert_eq!(
        (&b96["peak_mib"], &b96["percent"], &b96["verdict"]),
        (
            &Value::from(3840.0),
            &Value::from(75.0),
            &Value::from("fits")
        )
    );
    let b128 = prediction(&plan, 128);
    assert_eq!(b128["percent"], 100.0);
    assert_eq!(b128["verdict"], "out_of_memory");
    assert!(plan.get("fit").is_none());
}

#[test]
fn two_measurements_fit_fixed_cost_and_slope() {
    let plan = json(&[
        "vram",
        "--measure",
        "32:1400MiB",
        "--measure",
        "64:2500MiB",
        "--vram",
        "5GB",
    ]);
    assert_eq!(plan["rule"], "least_squares");
    assert_eq!(plan["fit"]["fixed_mib"], 300.0);
    assert_eq!(plan["fit"]["per_sample_mib"], 34.375);
    // The pessimistic bound travels with every prediction and with the answer.
    assert_eq!(plan["per_sample_mib"], 43.75);
    assert_eq!(prediction(&plan, 128)["bound"]["verdict"], "out_of_memory");
    assert_eq!(plan["bound"]["largest_safe_batch"], 64);
    assert_eq!(plan["largest_safe_batch"], 96);
}

#[test]
fn fitted_table_says_which_rule_and_warns_where_the_bound_disagrees() {
    let out = run(stackpin().args([
        "vram",
        "--measure",
        "32:1400MiB",
        "--measure",
        "64:2500MiB",
        "--vram",
        "5GB",
    ]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("least-squares fit over 2 points: 300 MiB fixed + 34.375 MiB × batch")
    );
    assert!(
        out.stdout
            .contains("By the one-point bound instead:  93.6 → 64")
    );
    assert!(out.stdout.contains("note: batch 128:"), "{}", out.stdout);
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn one_measurement_is_the_guide_rule_unchanged() {
    let measured = json(&["vram", "--measure", "64:2.5GB", "--vram", "5GB"]);
    let peak = json(&["vram", "--peak", "2.5GB", "--batch", "64", "--vram", "5GB"]);
    assert_eq!(measured, peak);
}

#[test]
fn no_configured_batch_under_the_line_exits_1() {
    let out = run(stackpin().args([
        "vram",
        "--peak",
        "4GB",
        "--batch",
        "16",
        "--vram",
        "4GB",
        "--batches",
        "16,32",
    ]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("no configured batch is that small"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_size_that_is_not_a_size_is_an_input_error_naming_it() {
    let out = run(stackpin().args([
        "vram",
        "--peak",
        "2.5 parsecs",
        "--batch",
        "64",
        "--vram",
        "5GB",
    ]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("`2.5 parsecs`") && out.stderr.contains("2.5GB"),
        "{}",
        out.stderr
    );
}

#[test]
fn peak_and_measure_together_are_refused() {
    let out = run(stackpin().args([
        "vram",
        "--peak",
        "2GB",
        "--batch",
        "64",
        "--measure",
        "32:1GB",
        "--vram",
        "5GB",
    ]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let out = run(stackpin().args(["vram", "--vram", "5GB"]));
    assert_eq!(
        out.code, 2,
        "a peak or measurements are required: {}",
        out.stderr
    );
}

#[test]
fn a_line_above_the_whole_card_is_refused() {
    let out = run(stackpin().args([
        "vram", "--peak", "2GB", "--batch", "64", "--vram", "5GB", "--line", "1.2",
    ]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("line 1.2"), "{}", out.stderr);
}
