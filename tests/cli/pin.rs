//! `stackpin pin`: complete manifests from the release data.

use crate::common::{run, stackpin};

#[test]
fn torch_2_5_1_gives_cuda_12_4_and_passes_check_on_both_oses() {
    for (os, min) in [("linux", "550.54.15"), ("windows", "551.78")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.yaml");
        let out = run(stackpin()
            .args(["pin", "--library", "torch==2.5.1", "--os", os, "-o"])
            .arg(&path));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("check NVIDIA") || out.stderr.contains("nvidia.com"),
            "{}",
            out.stderr
        );
        let text = std::fs::read_to_string(&path).expect("written");
        assert!(text.contains("version: \"12.4."), "{text}");
        let m: serde_json::Value = {
            let out =
                run(stackpin().args(["pin", "--library", "torch==2.5.1", "--os", os, "--json"]));
            serde_json::from_str(&out.stdout).expect("json")
        };
        let driver = m["manifest"]["driver"]["version"]
            .as_str()
            .expect("driver")
            .to_string();
        let ge = stackpin_version_ge(&driver, min);
        assert!(ge, "driver {driver} below {min}");
        let check = run(stackpin().arg("check").arg(&path));
        assert_eq!(check.code, 0, "{}", check.stdout);
    }
}

fn stackpin_version_ge(a: &str, b: &str) -> bool {
    let parse = |s: &str| {
        s.split('.')
            .map(|p| p.parse::<u64>().expect("number"))
            .collect::<Vec<_>>()
    };
    parse(a) >= parse(b)
}

#[test]
fn unknown_release_is_exit_2_listing_known_ones() {
    let out = run(stackpin().args(["pin", "--library", "torch==0.4.1", "--os", "linux"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("2.5") && out.stderr.contains("2.14"),
        "{}",
        out.stderr
    );
    let out = run(stackpin().args(["pin", "--library", "jax==0.4.30", "--os", "linux"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("torch, tensorflow"), "{}", out.stderr);
}

#[test]
fn pin_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, "keep me").expect("write");
    let out = run(stackpin()
        .args(["pin", "--library", "torch==2.5.1", "--os", "linux", "-o"])
        .arg(&path));
    assert_eq!(out.code, 2);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "keep me");
}

#[test]
fn tensorflow_on_windows_after_2_10_says_to_use_wsl_data() {
    let out = run(stackpin().args(["pin", "--library", "tensorflow==2.17.0", "--os", "windows"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("2.10.0"), "{}", out.stderr);
}
