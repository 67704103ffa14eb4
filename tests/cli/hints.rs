//! Hints that run: every `stackpin …` command a failure prints — on stderr, in a report, in the
//! `--json` document — is built from what the user ran (the manifest's path, the archive, the
//! GPU) and parses with stackpin's own command line (issue 20, item 2).
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::{Path, PathBuf};

use clap::Parser;
use stackpin::cli::Cli;

use crate::doctor::Clinic;
use crate::fakes::DriverMode;

/// The subcommands whose hints must carry the archive in use.
const USES_ARCHIVE: &[&str] = &[
    "fetch", "audit", "bundle", "unbundle", "plan", "install", "prove", "up", "doctor", "repair",
    "status", "outdated",
];

/// Every backticked `stackpin …` (or `sudo stackpin …`) command in `text`.
fn hints_in(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("stackpin ") || span.starts_with("sudo stackpin "))
        .map(str::to_string)
        .collect()
}

/// Every string in a JSON document, for the hints inside them.
fn strings(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// What one run printed, human or JSON, as text to search for hints.
fn printed(clinic: &Clinic, args: &[&str]) -> String {
    let out = clinic
        .host
        .installing(args.iter().copied())
        .output_started()
        .expect("stackpin runs");
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    if args.contains(&"--json") {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: one JSON document ({e})"));
        strings(&doc, &mut text);
    } else {
        text.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    text
}

/// Checks one hint: it parses, names the manifest it is about (never the word MANIFEST), and
/// carries the archive and GPU the user gave.
fn check_hint(hint: &str, manifest: &Path, archive: &Path, gpu: Option<&str>, ran: &[&str]) {
    let words = shlex::split(hint).unwrap_or_else(|| panic!("{ran:?}: `{hint}` does not split"));
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let start = words
        .iter()
        .position(|w| *w == "stackpin")
        .expect("stackpin");
    // A value the user fills in (`--peak PEAK`) is given a sample value; the shape must parse.
    let filled: Vec<&str> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let slot =
                *w != "MANIFEST" && !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase());
            if slot && i > 0 && words[i - 1].starts_with("--") {
                "64"
            } else {
                *w
            }
        })
        .collect();
    if let Err(e) = Cli::try_parse_from(&filled[start..]) {
        panic!("{ran:?}: the hint `{hint}` does not parse:\n{e}");
    }
    assert!(
        !words.contains(&"MANIFEST"),
        "{ran:?}: `{hint}` says MANIFEST"
    );
    let sub = words[start + 1];
    let takes_manifest = [
        "fetch", "audit", "bundle", "plan", "install", "prove", "up", "doctor", "repair", "status",
    ]
    .contains(&sub);
    if takes_manifest && !words.contains(&"--all") {
        let named = manifest.to_str().expect("utf-8");
        assert!(words.contains(&named), "{ran:?}: `{hint}` lacks {named}");
    }
    if USES_ARCHIVE.contains(&sub) {
        let dir = archive.to_str().expect("utf-8");
        assert!(
            words.windows(2).any(|w| w == ["--archive", dir]),
            "{ran:?}: `{hint}` lacks --archive {dir}"
        );
    }
    if let Some(gpu) = gpu
        && ["plan", "install", "prove", "up", "doctor", "repair"].contains(&sub)
    {
        assert!(
            words.windows(2).any(|w| w == ["--gpu", gpu]),
            "{ran:?}: `{hint}` lacks --gpu {gpu}"
        );
    }
}

/// Runs each command line and checks every hint it prints; returns how many it checked.
fn check_runs(clinic: &Clinic, runs: &[Vec<&str>], manifest: &Path, gpu: Option<&str>) -> usize {
    let archive = clinic.archive();
    let mut checked = 0;
    for args in runs {
        for hint in hints_in(&printed(clinic, args)) {
            check_hint(&hint, manifest, &archive, gpu, args);
            checked += 1;
        }
    }
    checked
}

#[test]
fn every_hint_on_the_failure_paths_parses_and_names_what_the_user_ran() {
    let clinic = Clinic::proven();
    let m = clinic.manifest.to_str().expect("utf-8").to_string();
    let archive = clinic.archive();
    let mut checked = 0;

    // Drift: Windows Update (here: anyone) swapped the driver under the proven stack.
    clinic
        .host
        .set_driver_state(DriverMode::Ok, "590.48.01", "12.8");
    let drift = [
        vec!["doctor", m.as_str()],
        vec!["doctor", m.as_str(), "--json"],
        vec!["doctor", m.as_str(), "--gpu", "0"],
        vec!["status", m.as_str()],
        vec!["status", m.as_str(), "--json"],
        vec!["plan", m.as_str()],
    ];
    checked += check_runs(&clinic, &drift[..2], &clinic.manifest, None);
    checked += check_runs(&clinic, &drift[2..3], &clinic.manifest, Some("0"));
    checked += check_runs(&clinic, &drift[3..], &clinic.manifest, None);
    // `--all`: each stack's fixes name the manifest fetch keeps in its folder.
    let kept = archive.join("fake-doctor/manifest.yaml");
    checked += check_runs(
        &clinic,
        &[vec!["doctor", "--all"], vec!["doctor", "--all", "--json"]],
        &kept,
        None,
    );
    clinic
        .host
        .set_driver_state(DriverMode::Ok, "595.71.05", "12.8");

    // A corrupt installer in the archive.
    let toolkit = archive.join("fake-doctor/toolkit/cuda_12.4.1_550.54.15_linux.run");
    std::fs::write(&toolkit, "#!/bin/sh\necho tampered\n").expect("tamper");
    checked += check_runs(
        &clinic,
        &[
            vec!["audit", m.as_str()],
            vec!["audit", m.as_str(), "--json"],
            vec!["install", m.as_str(), "--yes", "--force", "toolkit"],
            vec![
                "install",
                m.as_str(),
                "--yes",
                "--force",
                "toolkit",
                "--json",
            ],
            vec!["plan", m.as_str(), "--json"],
        ],
        &clinic.manifest,
        None,
    );

    // A stack never fetched: the same pins under another name.
    let fresh = clinic.host.root().join("fresh stack.yaml");
    let yaml = std::fs::read_to_string(&clinic.manifest).expect("manifest");
    std::fs::write(&fresh, yaml.replace("name: fake-doctor", "name: fresh")).expect("fresh");
    let f = fresh.to_str().expect("utf-8");
    checked += check_runs(
        &clinic,
        &[
            vec!["install", f, "--yes"],
            vec!["install", f, "--yes", "--json"],
            vec!["plan", f],
            vec!["prove", f],
            vec!["prove", f, "--json"],
            vec!["doctor", f],
            vec!["status", f],
            vec!["audit", f],
        ],
        &fresh,
        None,
    );
    // Enough hints were seen that the test could have failed on each kind.
    assert!(checked >= 15, "only {checked} hints were checked");
}

#[test]
fn diagnose_fixes_are_commands_that_parse() {
    let clinic = Clinic::proven();
    let log = clinic.host.root().join("train.log");
    std::fs::write(
        &log,
        "running --batch-size 64\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
    )
    .expect("log");
    let text = printed(&clinic, &["diagnose", log.to_str().expect("utf-8")]);
    let hints = hints_in(&text);
    assert!(
        hints.iter().any(|h| h.starts_with("stackpin vram")),
        "{text}"
    );
    for hint in hints {
        // No manifest, archive or GPU was given: only the parse is checked.
        let words = shlex::split(&hint).expect("splits");
        let manifest = Path::new("unused.yaml");
        if !words.iter().any(|w| USES_ARCHIVE.contains(&w.as_str())) {
            check_hint(&hint, manifest, &clinic.archive(), None, &["diagnose"]);
        }
    }
}

/// Every manifest a `--help` example names is one the repository ships.
#[test]
fn help_examples_name_manifests_that_exist() {
    let root: PathBuf = env!("CARGO_MANIFEST_DIR").into();
    let mut named = 0;
    for sub in [
        "check", "pin", "fetch", "audit", "bundle", "plan", "install", "prove", "up", "doctor",
        "repair", "status", "diagnose", "outdated", "record",
    ] {
        let out = crate::common::run(crate::common::stackpin().args([sub, "--help"]));
        for word in out.stdout.split_whitespace() {
            if let Some(at) = word.find("manifests/") {
                let path = word[at..].trim_end_matches(['`', ',', ')', '.', '\\']);
                if path.ends_with(".yaml") && !path.contains('*') {
                    named += 1;
                    assert!(root.join(path).is_file(), "`{sub} --help` names {path}");
                }
            }
        }
    }
    assert!(named >= 5, "only {named} manifests named in help");
}
