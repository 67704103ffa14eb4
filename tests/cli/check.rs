//! `stackpin check`: shipped manifests pass; each rule fails on the wrong side of its line.

use std::path::PathBuf;

use crate::common::{repo, run, shipped_manifests, stackpin};

/// Writes a variant of a shipped manifest into a temp folder.
fn variant(dir: &tempfile::TempDir, from: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(repo(from)).expect("shipped manifest");
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit must change the manifest");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, edited).expect("write variant");
    path
}

const LINUX: &str = "manifests/torch-2.5.1-cu124-linux.yaml";
const WINDOWS: &str = "manifests/torch-2.5.1-cu124-windows.yaml";

fn set_driver(text: String, version: &str) -> String {
    let start = text.find("  version: \"").expect("driver version line");
    let end = start + text[start..].find('\n').expect("line end");
    format!("{}  version: \"{version}\"{}", &text[..start], &text[end..])
}

#[test]
fn every_shipped_manifest_passes() {
    let manifests = shipped_manifests();
    assert!(manifests.len() >= 6, "at least six shipped manifests");
    let out = run(stackpin().arg("check").args(&manifests));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout.matches(": ok (0 errors").count(),
        manifests.len()
    );
}

#[test]
fn driver_one_step_below_the_toolkit_minimum_fails_and_names_the_minimum() {
    let dir = tempfile::tempdir().expect("tempdir");
    // CUDA 12.4.1 needs 550.54.15 on Linux.
    let below = variant(&dir, LINUX, |t| set_driver(t, "550.54.14"));
    let out = run(stackpin().arg("check").arg(&below));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("driver.version"), "{}", out.stdout);
    assert!(out.stdout.contains("550.54.15"), "{}", out.stdout);
    assert!(out.stdout.contains("newer driver"), "{}", out.stdout);

    let at = variant(&dir, LINUX, |t| set_driver(t, "550.54.15"));
    assert_eq!(run(stackpin().arg("check").arg(&at)).code, 0);
}

#[test]
fn windows_driver_rule_uses_the_windows_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let below = variant(&dir, WINDOWS, |t| set_driver(t, "551.61"));
    let out = run(stackpin().arg("check").arg(&below));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("551.78"), "{}", out.stdout);
    let at = variant(&dir, WINDOWS, |t| set_driver(t, "551.78"));
    assert_eq!(run(stackpin().arg("check").arg(&at)).code, 0);
}

#[test]
fn windows_13x_uses_the_branch_floor_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = "manifests/torch-2.14.0-cu130-windows.yaml";
    let below = variant(&dir, from, |t| set_driver(t, "576.40"));
    let out = run(stackpin().arg("check").arg(&below));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("R580"), "{}", out.stdout);
    let ok = run(stackpin().arg("check").arg(repo(from)));
    assert_eq!(ok.code, 0);
    assert!(
        ok.stdout.contains("warning: driver.version"),
        "{}",
        ok.stdout
    );
}

#[test]
fn driver_flag_in_a_linux_toolkit_step_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, LINUX, |t| {
        t.replace("\"--toolkit\", ", "\"--toolkit\", \"--driver\", ")
    });
    let out = run(stackpin().arg("check").arg(&path).arg("--json"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(doc["ok"], false);
    let problem = doc["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["field"] == "toolkit.run[4]")
        .expect("a problem on toolkit.run[4]");
    assert_eq!(problem["severity"], "error");
    assert!(
        problem["message"]
            .as_str()
            .is_some_and(|m| m.contains("--driver"))
    );
}

#[test]
fn linux_toolkit_step_without_toolkit_flag_fails_unless_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, LINUX, |t| t.replace("\"--toolkit\", ", ""));
    assert_eq!(run(stackpin().arg("check").arg(&path)).code, 1);
    let allowed = variant(&dir, LINUX, |t| {
        t.replace("\"--toolkit\", ", "")
            .replace("toolkit:\n", "toolkit:\n  allow_bundled_driver: true\n")
    });
    let out = run(stackpin().arg("check").arg(&allowed));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("warning: toolkit.run"),
        "{}",
        out.stdout
    );
}

#[test]
fn display_driver_in_a_windows_toolkit_step_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, WINDOWS, |t| {
        t.replace(
            "\"-n\", \"cuda_profiler_api_12.4\"",
            "\"-n\", \"Display.Driver\"",
        )
    });
    let out = run(stackpin().arg("check").arg(&path));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("Display.Driver"), "{}", out.stdout);
}

#[test]
fn bare_silent_windows_toolkit_install_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, WINDOWS, |text| {
        let start = text
            .find("  run: [\"{installer}\", \"-s\", \"-n\", \"cuda")
            .expect("toolkit run");
        let end = start + text[start..].find('\n').expect("eol");
        format!(
            "{}  run: [\"{{installer}}\", \"-s\", \"-n\"]{}",
            &text[..start],
            &text[end..]
        )
    });
    let out = run(stackpin().arg("check").arg(&path));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("bare `-s`"), "{}", out.stdout);
}

#[test]
fn a_windows_toolkit_step_without_n_fails_because_the_installer_may_reboot_by_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, WINDOWS, |t| t.replace("\"-s\", \"-n\", ", "\"-s\", "));
    let out = run(stackpin().arg("check").arg(&path));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("toolkit.run") && out.stdout.contains("needs `-n`"),
        "{}",
        out.stdout
    );
}

#[test]
fn misspelled_top_level_field_is_exit_2_with_its_line_and_a_suggestion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, LINUX, |t| t.replace("\nexample:\n", "\nexmaple:\n"));
    let out = run(stackpin().arg("check").arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("read");
    let line = text.lines().position(|l| l == "exmaple:").expect("line") + 1;
    assert!(
        out.stderr.contains(&format!("manifest.yaml:{line}:1")),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("did you mean `example`?"),
        "{}",
        out.stderr
    );
}

#[test]
fn library_on_an_unsupported_cuda_line_fails_and_lists_the_supported_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, LINUX, |t| {
        t.replace("torch==2.5.1", "torch==2.9.1")
            .replace("version: \"2.5.1\"", "version: \"2.9.1\"")
    });
    let out = run(stackpin().arg("check").arg(&path));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("12.6, 12.8"), "{}", out.stdout);
}

#[test]
fn unknown_library_release_is_a_warning_not_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, LINUX, |t| {
        t.replace("version: \"2.5.1\"", "version: \"9.1.0\"")
    });
    let out = run(stackpin().arg("check").arg(&path));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("you vouch for"), "{}", out.stdout);
}

#[test]
fn every_problem_is_reported_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = variant(&dir, LINUX, |t| {
        set_driver(t, "500.1")
            .replace("batch: 64", "batch: 0")
            .replace("line: 0.8", "line: 1.5")
            .replace(
                "root: \"/usr/local/cuda-12.4\"",
                "root: \"/usr/local/cuda\"",
            )
            .replace("    sha256: null   # NVIDIA", "    sha256: abc   # NVIDIA")
    });
    let out = run(stackpin().arg("check").arg(&path).arg("--json"));
    assert_eq!(out.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let fields: Vec<&str> = doc["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["severity"] == "error")
        .filter_map(|p| p["field"].as_str())
        .collect();
    for expected in [
        "driver.version",
        "example.batch",
        "vram.line",
        "toolkit.root",
        "driver.installer.sha256",
    ] {
        assert!(
            fields.contains(&expected),
            "{expected} missing from {fields:?}"
        );
    }
}

#[test]
fn unreadable_file_is_exit_2_naming_the_file() {
    let out = run(stackpin().args(["check", "no/such/manifest.yaml"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no/such/manifest.yaml"),
        "{}",
        out.stderr
    );
}

mod parse_errors {
    //! Parser messages as users see them: snapshot-tested so a change is a reviewed diff.

    use crate::common::{run, stackpin};

    fn check_text(text: &str) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, text).expect("write");
        let out = run(stackpin().arg("check").arg(&path));
        assert_eq!(out.code, 2, "{}", out.stderr);
        out.stderr
            .replace(&dir.path().display().to_string(), "[TMP]")
            // Windows joins with `\`; one snapshot serves both systems.
            .replace("[TMP]\\", "[TMP]/")
    }

    const HEAD: &str = "schema: 1\nname: t\nos: linux\n";

    #[test]
    fn unknown_top_level_field() {
        insta::assert_snapshot!(check_text(&format!("{HEAD}verison: 2\n")));
    }

    #[test]
    fn wrong_type_names_the_field_path() {
        let text = format!(
            "{HEAD}driver:\n  version: \"550.54.15\"\n  installer:\n    url: https://a.test/d.run\n  run: \"sh {{installer}}\"\n"
        );
        insta::assert_snapshot!(check_text(&text));
    }

    #[test]
    fn bad_os_lists_the_choices() {
        insta::assert_snapshot!(check_text("schema: 1\nname: t\nos: linuks\n"));
    }

    #[test]
    fn bad_version_names_the_field() {
        let text = format!("{HEAD}driver:\n  version: \"550.x\"\n");
        insta::assert_snapshot!(check_text(&text));
    }

    #[test]
    fn missing_required_field() {
        let text = format!("{HEAD}driver:\n  version: \"550.54.15\"\n  run: [\"sh\"]\n");
        insta::assert_snapshot!(check_text(&text));
    }
}

#[test]
fn gpu_arch_applies_the_generation_rules() {
    // R595 no longer drives Pascal; the same stack is fine for Ada.
    let out = run(stackpin()
        .arg("check")
        .arg(repo(LINUX))
        .args(["--gpu-arch", "6.1"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("driver.version") && out.stdout.contains("R580 is the last branch"),
        "{}",
        out.stdout
    );
    let out = run(stackpin()
        .arg("check")
        .arg(repo(LINUX))
        .args(["--gpu-arch", "8.9"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // CUDA 12.4 predates Blackwell.
    let out = run(stackpin()
        .arg("check")
        .arg(repo(LINUX))
        .args(["--gpu-arch", "12.0"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("CUDA 12.8 or newer"), "{}", out.stdout);
    let out = run(stackpin()
        .arg("check")
        .arg(repo(LINUX))
        .args(["--gpu-arch", "sm_86"]));
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
}

#[test]
fn gpu_arch_reports_driver_toolkit_and_build_for_a_card_the_stack_left_behind() {
    // torch 2.14 + CUDA 13.2 + R595 on a GTX 1080: every layer is wrong for Pascal.
    let out = run(stackpin()
        .arg("check")
        .arg(repo("manifests/torch-2.14.0-cu132-linux.yaml"))
        .args(["--gpu-arch", "6.1"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    for (field, says) in [
        ("driver.version", "R580 is the last branch"),
        ("toolkit.version", "CUDA 12.9 is the last line"),
        ("library.cuda", "none that runs on Pascal"),
    ] {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.contains(field) && l.contains(says)),
            "{field}: {}",
            out.stdout
        );
    }
}

#[test]
fn gpu_id_refuses_cuda_13_for_a_pascal_card_known_only_by_its_pci_id() {
    // A GTX 1080 (10de:1b80) on a machine with no driver yet, as Device Manager shows it.
    let manifest = repo("manifests/torch-2.14.0-cu130-windows.yaml");
    let out = run(stackpin()
        .arg("check")
        .arg(&manifest)
        .args(["--gpu-id", r"PCI\VEN_10DE&DEV_1B80&SUBSYS_119E10DE&REV_A1"]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("toolkit.version") && l.contains("CUDA 12.9 is the last line")),
        "{}",
        out.stdout
    );
    // An A10G (10de:2237) and a Turing RTX 2080 Ti (10de:1e07) are fine with it.
    for id in ["10de:2237", "1e07"] {
        let out = run(stackpin()
            .arg("check")
            .arg(&manifest)
            .args(["--gpu-id", id]));
        assert_eq!(out.code, 0, "{id}: {}{}", out.stdout, out.stderr);
    }
    let out = run(stackpin()
        .arg("check")
        .arg(&manifest)
        .args(["--gpu-id", "10de:ffff"]));
    assert_eq!(
        out.code, 2,
        "an unknown card is a usage error: {}",
        out.stderr
    );
    assert!(out.stderr.contains("--gpu-arch"), "{}", out.stderr);
}
