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

/// The toolkit step `pin --os windows --json` writes for a library release and CUDA line.
fn windows_toolkit_run(library: &str, toolkit: &str) -> Vec<String> {
    let out = run(stackpin().args([
        "pin",
        "--library",
        library,
        "--os",
        "windows",
        "--toolkit",
        toolkit,
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let m: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    m["manifest"]["toolkit"]["run"]
        .as_array()
        .expect("toolkit run")
        .iter()
        .map(|a| a.as_str().expect("string").to_string())
        .collect()
}

#[test]
fn windows_cuda_13_0_installs_nvcc_crt_and_nvvm_with_n_and_no_thrust() {
    let run = windows_toolkit_run("torch==2.14.0", "13.0");
    assert_eq!(&run[..3], ["{installer}", "-s", "-n"], "{run:?}");
    for package in [
        "nvcc_13.0",
        "crt_13.0",
        "nvvm_13.0",
        "cudart_13.0",
        "cublas_dev_13.0",
    ] {
        assert!(run.iter().any(|a| a == package), "{package} in {run:?}");
    }
    assert!(!run.iter().any(|a| a.starts_with("thrust")), "{run:?}");
    assert!(!run.iter().any(|a| a.starts_with("Display")), "{run:?}");
}

#[test]
fn windows_cuda_12_4_installs_pytorchs_list_with_nvjitlink_and_n() {
    let run = windows_toolkit_run("torch==2.5.1", "12.4");
    assert_eq!(&run[..3], ["{installer}", "-s", "-n"], "{run:?}");
    for package in [
        "nvcc_12.4",
        "cudart_12.4",
        "thrust_12.4",
        "nvjitlink_12.4",
        "nvtx_12.4",
    ] {
        assert!(run.iter().any(|a| a == package), "{package} in {run:?}");
    }
    assert!(!run.iter().any(|a| a.starts_with("crt_")), "{run:?}");
}

#[test]
fn windows_driver_step_accepts_the_eula_reads_1_as_reboot_and_fits_the_card_family() {
    let out = run(stackpin().args([
        "pin",
        "--library",
        "torch==2.5.1",
        "--os",
        "windows",
        "--gpu-name",
        "NVIDIA H100 80GB HBM3",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(r#"run: ["{installer}", "-s", "-noreboot", "-noeula"]"#),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("exit_codes: {success: [0], reboot: [1, 3010]}"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("https://us.download.nvidia.com/tesla/")
            && out.stdout.contains("-data-center-tesla-desktop-"),
        "{}",
        out.stdout
    );
}
