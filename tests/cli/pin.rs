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

// ---- release data read from the package index (issue 40) ----

#[test]
fn torch_2_14_0_for_python_3_15_is_refused_with_the_index_reason() {
    let out = run(stackpin().args([
        "pin",
        "--library",
        "torch==2.14.0",
        "--python",
        "3.15",
        "--os",
        "linux",
    ]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("Python 3.10 to 3.14, not 3.15")
            && out.stderr.contains("wheels for cp310-cp314 only"),
        "{}",
        out.stderr
    );
}

#[test]
fn tensorflow_2_0_0_pins_the_gpu_distribution_and_passes_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    let out = run(stackpin()
        .args(["pin", "--library", "tensorflow==2.0.0", "--os", "linux"])
        .args(["--python", "3.7", "-o"])
        .arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(text.contains("tensorflow-gpu==2.0.0"), "{text}");
    assert!(!text.contains("\"tensorflow==2.0.0\""), "{text}");
    let check = run(stackpin().arg("check").arg(&path));
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn torch_2_15_0_pins_cuda_13_2_with_its_torchvision_and_passes_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    let out = run(stackpin()
        .args(["pin", "--library", "torch==2.15.0", "--os", "linux", "-o"])
        .arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("written");
    for want in [
        "torch==2.15.0",
        "torchvision==0.29.2",
        "whl/cu132",
        "version: \"13.2.",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let check = run(stackpin().arg("check").arg(&path));
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn pin_writes_installer_uv_and_pip_is_one_flag_away_and_kept_on_overwrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    let pin = |extra: &[&str]| {
        run(stackpin()
            .args(["pin", "--library", "torch==2.5.1", "--os", "linux"])
            .args(["--python", "3.11"])
            .args(extra)
            .arg("-o")
            .arg(&path))
    };
    let out = pin(&[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(text.contains("\n  installer: uv"), "{text}");
    let check = run(stackpin().arg("check").arg(&path));
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);

    let out = pin(&["--force", "--installer", "pip"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(!text.contains("installer: uv"), "{text}");
    // Overwriting a manifest that chose pip keeps pip unless --installer says otherwise.
    let out = pin(&["--force"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(
        !text.contains("installer: uv"),
        "the manifest's pip was kept: {text}"
    );
    let out = pin(&["--force", "--installer", "uv"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::read_to_string(&path)
            .expect("written")
            .contains("installer: uv")
    );
}

// ---- pins that fit the host: its Python, its GPUs, NVIDIA's channels, the pairing table ----

#[cfg(unix)]
mod host_fit {
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;
    use std::process::Output;

    use crate::common::{OutputStarted, repo, text};
    use crate::fakes::{FakeHost, python3};
    use crate::install::{driver_script, library_script, order_log, toolkit_script};
    use crate::server::TestServer;

    /// A `python3` first on the fake host's PATH that reports `version` the way the real one
    /// does (`Python X.Y.Z` on stdout) and hands every other call to the real interpreter.
    fn python_reporting(host: &FakeHost, version: &str) {
        let path = host.bin().join("python3");
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 'Python {version}'; exit 0; fi\nexec '{}' \"$@\"\n",
            python3().display()
        );
        std::fs::write(&path, script).expect("fake python3");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod fake python3");
    }

    fn json(out: &Output) -> serde_json::Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("json: {e}\n{}", text(out)))
    }

    fn pin_json(host: &FakeHost, args: &[&str]) -> serde_json::Value {
        let out = host
            .stackpin(["pin", "--json"].iter().chain(args))
            .output_started()
            .expect("stackpin runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        json(&out)
    }

    #[test]
    fn pin_on_a_host_whose_python3_is_3_10_pins_3_10_and_the_note_says_so() {
        let host = FakeHost::new();
        python_reporting(&host, "3.10.14");
        let doc = pin_json(&host, &["--library", "torch==2.5.1", "--os", "linux"]);
        assert_eq!(doc["manifest"]["library"]["python_version"], "3.10");
        let notes = doc["notes"].to_string();
        assert!(
            notes.contains("python3") && notes.contains("3.10.14"),
            "{notes}"
        );
        let asked = pin_json(
            &host,
            &[
                "--library",
                "torch==2.5.1",
                "--os",
                "linux",
                "--python",
                "3.12",
            ],
        );
        assert_eq!(asked["manifest"]["library"]["python_version"], "3.12");
        assert!(
            asked["notes"].to_string().contains("--python"),
            "{}",
            asked["notes"]
        );
    }

    #[test]
    fn gpu_arch_6_1_and_a_gtx_1080_host_both_get_a_driver_of_r580_or_older() {
        let branch = |doc: &serde_json::Value| -> u64 {
            let v = doc["manifest"]["driver"]["version"]
                .as_str()
                .expect("driver");
            v.split('.')
                .next()
                .and_then(|m| m.parse().ok())
                .expect("major")
        };
        let asked = FakeHost::new().without_nvidia_smi();
        let doc = pin_json(
            &asked,
            &[
                "--library",
                "torch==2.5.1",
                "--os",
                "linux",
                "--gpu-arch",
                "6.1",
            ],
        );
        assert!(branch(&doc) <= 580, "{}", doc["manifest"]["driver"]);
        let gtx = FakeHost::new()
            .gpu("NVIDIA GeForce GTX 1080", 8192, "6.1")
            .driver("535.104.05", "12.2");
        let doc = pin_json(&gtx, &["--library", "torch==2.5.1", "--os", "linux"]);
        assert!(branch(&doc) <= 580, "{}", doc["manifest"]["driver"]);
        assert!(
            doc["notes"].to_string().contains("GTX 1080"),
            "{}",
            doc["notes"]
        );
        // Without the GPU the newest driver (R595) would have been pinned.
        let plain = pin_json(&asked, &["--library", "torch==2.5.1", "--os", "linux"]);
        assert!(branch(&plain) > 580, "{}", plain["manifest"]["driver"]);
    }

    #[test]
    fn gpu_arch_12_0_for_torch_2_5_1_is_refused_naming_the_card_and_why() {
        let host = FakeHost::new().without_nvidia_smi();
        let out = host
            .stackpin([
                "pin",
                "--library",
                "torch==2.5.1",
                "--os",
                "linux",
                "--gpu-arch",
                "12.0",
            ])
            .output_started()
            .expect("stackpin runs");
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert!(
            all.contains("--gpu-arch 12.0") && all.contains("Blackwell"),
            "{all}"
        );
        assert!(
            all.contains("CUDA 12.8"),
            "the fix names the first CUDA line: {all}"
        );
    }

    #[test]
    fn torch_2_0_0_and_2_0_1_pair_torchvision_0_15_1_and_0_15_2() {
        let host = FakeHost::new().without_nvidia_smi();
        for (torch, vision) in [("2.0.0", "0.15.1"), ("2.0.1", "0.15.2")] {
            let library = format!("torch=={torch}");
            let doc = pin_json(
                &host,
                &["--library", &library, "--os", "linux", "--python", "3.10"],
            );
            let reqs = doc["manifest"]["library"]["pip"]["requirements"].to_string();
            assert!(reqs.contains(&format!("torchvision=={vision}")), "{reqs}");
        }
    }

    #[test]
    fn driver_570_133_20_gets_the_data_center_url_and_an_honest_note() {
        let host = FakeHost::new().without_nvidia_smi();
        let doc = pin_json(
            &host,
            &[
                "--library",
                "tensorflow==2.17.0",
                "--os",
                "linux",
                "--driver",
                "570.133.20",
            ],
        );
        assert_eq!(
            doc["manifest"]["driver"]["installer"]["url"],
            "https://us.download.nvidia.com/tesla/570.133.20/NVIDIA-Linux-x86_64-570.133.20.run"
        );
        let notes = doc["notes"].to_string();
        assert!(notes.contains("as given with --driver"), "{notes}");
        assert!(
            !notes.contains("570.133.20 (data-center download) is the newest"),
            "{notes}"
        );
    }

    #[test]
    fn a_bundled_only_windows_driver_is_refused_with_the_fix() {
        let host = FakeHost::new().without_nvidia_smi();
        let out = host
            .stackpin([
                "pin",
                "--library",
                "torch==2.5.1",
                "--os",
                "windows",
                "--driver",
                "551.78",
            ])
            .output_started()
            .expect("stackpin runs");
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{all}");
        assert!(all.contains("only inside a CUDA installer"), "{all}");
        assert!(all.contains("--driver 581.15"), "{all}");
    }

    #[test]
    fn cuda_12_3_2_pins_and_checks() {
        let host = FakeHost::new().without_nvidia_smi();
        let path = host.root().join("tf.yaml");
        let out = host
            .stackpin([
                "pin",
                "--library",
                "tensorflow==2.17.0",
                "--os",
                "linux",
                "--toolkit",
                "12.3.2",
                "-o",
            ])
            .arg(&path)
            .output_started()
            .expect("stackpin runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let yaml = std::fs::read_to_string(&path).expect("written");
        assert!(yaml.contains("cuda_12.3.2_545.23.08_linux.run"), "{yaml}");
        let check = host
            .stackpin(["check"])
            .arg(&path)
            .output_started()
            .expect("runs");
        assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    }

    #[test]
    fn a_595_pin_on_a_gtx_1080_host_is_blocked_by_plan_with_the_reason() {
        let host = FakeHost::new()
            .gpu("NVIDIA GeForce GTX 1080", 8192, "6.1")
            .driver("535.104.05", "12.2");
        python_reporting(&host, "3.12.3");
        let out = host
            .stackpin(["plan"])
            .arg(repo("manifests/torch-2.5.1-cu124-linux.yaml"))
            .env("STACKPIN_ARCHIVE", host.root().join("installers"))
            .output_started()
            .expect("stackpin runs");
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        let driver_line = all
            .lines()
            .find(|l| l.trim_start().starts_with("driver "))
            .unwrap_or_default();
        assert!(driver_line.contains("BLOCKED"), "{all}");
        assert!(
            all.contains("GTX 1080") && all.contains("R580 is the last branch"),
            "{all}"
        );
        // The same manifest is fine for an Ada card.
        let l4 = FakeHost::new()
            .gpu("NVIDIA L4", 23034, "8.9")
            .driver("535.104.05", "12.2");
        python_reporting(&l4, "3.12.3");
        let out = l4
            .stackpin(["plan"])
            .arg(repo("manifests/torch-2.5.1-cu124-linux.yaml"))
            .env("STACKPIN_ARCHIVE", l4.root().join("installers"))
            .output_started()
            .expect("stackpin runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }

    /// A fetched stack pinned for Python 3.12 and driver 595 on a host whose python3 is 3.11
    /// and whose GPU is a GTX 1080 (Pascal, last driven by R580).
    struct Mismatched {
        host: FakeHost,
        _server: TestServer,
        manifest: PathBuf,
    }

    impl Mismatched {
        fn new() -> Self {
            let host = FakeHost::new()
                .gpu("NVIDIA GeForce GTX 1080", 8192, "6.1")
                .driver("535.104.05", "12.2");
            python_reporting(&host, "3.11.9");
            let server = TestServer::start();
            server.file(
                "NVIDIA-Linux-x86_64-595.71.05.run",
                driver_script(&host).as_bytes(),
            );
            server.file(
                "cuda_12.4.1_550.54.15_linux.run",
                toolkit_script(&host).as_bytes(),
            );
            server.file("install-torch.sh", library_script(&host).as_bytes());
            let manifest = host.root().join("stack.yaml");
            let yaml = format!(
                "schema: 1\nname: mismatched-stack\nos: linux\n\
                 driver:\n  version: \"595.71.05\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
                 toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
                 library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  python_version: \"3.12\"\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
                 example:\n  run: [\"{{python}}\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
                d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
                t = server.url("cuda_12.4.1_550.54.15_linux.run"),
                l = server.url("install-torch.sh"),
                root = host.cuda_prefix().join("cuda-12.4").display(),
            );
            std::fs::write(&manifest, yaml).expect("manifest");
            let lab = Self {
                host,
                _server: server,
                manifest,
            };
            let fetched = lab.run(&["fetch"]);
            assert_eq!(fetched.status.code(), Some(0), "fetch: {}", text(&fetched));
            lab
        }

        fn run(&self, args: &[&str]) -> Output {
            self.host
                .stackpin(args)
                .arg(&self.manifest)
                .env("STACKPIN_ARCHIVE", self.host.root().join("installers"))
                .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
                .env("STACKPIN_RETRY_BASE_MS", "0")
                .output_started()
                .expect("stackpin runs")
        }
    }

    #[test]
    fn plan_shows_the_hosts_python_beside_the_pin_and_blocks_when_they_differ() {
        let lab = Mismatched::new();
        let out = lab.run(&["plan"]);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        let library_line = all
            .lines()
            .find(|l| l.trim_start().starts_with("library "))
            .unwrap_or_default();
        assert!(
            library_line.contains("Python 3.12") && library_line.contains("BLOCKED"),
            "{all}"
        );
        assert!(all.contains("Python 3.11.9"), "{all}");
    }

    #[test]
    fn install_refuses_with_every_problem_at_once_and_runs_no_installer() {
        let lab = Mismatched::new();
        // One more problem: a corrupt archived toolkit installer.
        let toolkit = lab
            .host
            .root()
            .join("installers/mismatched-stack/toolkit/cuda_12.4.1_550.54.15_linux.run");
        let mut perms = std::fs::metadata(&toolkit).expect("archived").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&toolkit, perms).expect("writable");
        std::fs::write(&toolkit, "#!/bin/sh\necho tampered\n").expect("corrupt it");
        let out = lab.run(&["install", "--yes"]);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert!(all.contains("refused before any layer ran"), "{all}");
        assert!(all.contains("Python 3.11.9"), "the interpreter: {all}");
        assert!(all.contains("R580 is the last branch"), "the GPU: {all}");
        assert!(all.contains("corrupt"), "the archive: {all}");
        assert!(
            !order_log(&lab.host).exists(),
            "no installer may run: {:?}",
            std::fs::read_to_string(order_log(&lab.host))
        );
    }
}

/// The toolkit step `pin --os windows --json` writes for a library release and CUDA line.
fn windows_toolkit_run(library: &str, toolkit: &str) -> Vec<String> {
    windows_toolkit_run_with(library, toolkit, &[])
}

/// The same with more of `pin`'s flags (`--driver` where the data has no driver new enough).
fn windows_toolkit_run_with(library: &str, toolkit: &str, more: &[&str]) -> Vec<String> {
    let out = run(stackpin()
        .args([
            "pin",
            "--library",
            library,
            "--os",
            "windows",
            "--toolkit",
            toolkit,
            "--json",
        ])
        .args(more));
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
fn windows_cuda_13_2_adds_thrust_and_nvptxcompiler_as_nvidias_guide_lists() {
    let run = windows_toolkit_run_with("torch==2.15.0", "13.2", &["--driver", "595.79"]);
    assert_eq!(&run[..3], ["{installer}", "-s", "-n"], "{run:?}");
    for package in ["thrust_13.2", "nvptxcompiler_13.2", "nvcc_13.2", "crt_13.2"] {
        assert!(run.iter().any(|a| a == package), "{package} in {run:?}");
    }
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

#[test]
fn an_a10g_on_windows_server_gets_nvidias_server_data_center_file_and_version() {
    let out = run(stackpin().args([
        "pin",
        "--library",
        "torch==2.5.1",
        "--os",
        "windows",
        "--gpu-name",
        "NVIDIA A10G",
        "--windows-server",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "https://us.download.nvidia.com/tesla/580.88/580.88-data-center-tesla-desktop-winserver-2022-2025-dch-international.exe"
        ),
        "the data-center channel's version, the server file: {}",
        out.stdout
    );
}

#[test]
fn an_installer_whose_checksum_was_published_is_pinned_to_it_and_check_passes() {
    // data/checksums.yaml holds the 595.71.05 runfile's sha256 (read from nixpkgs) and none
    // for CUDA 12.4.1's.
    const PIN: [&str; 7] = [
        "pin",
        "--library",
        "torch==2.5.1",
        "--os",
        "linux",
        "--driver",
        "595.71.05",
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    let out = run(stackpin().args(PIN).arg("-o").arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&path).expect("written");
    let driver_sha = "36203b8960b7e49c8a42f6ba1f5863cde34a05e93d2b24b798af06dd846f6b82";
    let line = text
        .lines()
        .find(|l| l.contains("sha256:") && l.contains(driver_sha))
        .unwrap_or_else(|| panic!("the driver's published sha256 is pinned:\n{text}"));
    assert!(line.contains("published (nixpkgs"), "{line}");
    assert!(
        text.contains("cuda_12.4.1_550.54.15_linux.run\n    sha256: null"),
        "no checksum is invented where none was published:\n{text}"
    );
    let json = run(stackpin().args(PIN).arg("--json"));
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(
        doc["manifest"]["driver"]["installer"]["sha256"], driver_sha,
        "{doc:#}"
    );
    let checked = run(stackpin().arg("check").arg(&path));
    assert_eq!(checked.code, 0, "{}{}", checked.stdout, checked.stderr);
}

#[test]
fn an_rtx_workstation_card_on_windows_gets_a_workstation_driver_number_and_file() {
    let pin = |gpu: &str| {
        run(stackpin().args([
            "pin",
            "--library",
            "torch==2.14.0",
            "--os",
            "windows",
            "--gpu-name",
            gpu,
        ]))
    };
    let workstation = pin("NVIDIA RTX A4000");
    assert_eq!(workstation.code, 0, "{}", workstation.stderr);
    let yaml = &workstation.stdout;
    assert!(
        yaml.contains(
            "https://us.download.nvidia.com/Windows/Quadro_Certified/596.36/596.36-quadro-rtx-desktop-notebook-win10-win11-64bit-international-dch-whql.exe"
        ),
        "NVIDIA numbers RTX Enterprise releases apart from GeForce ones:\n{yaml}"
    );
    assert!(
        workstation.stderr.contains("RTX workstation download"),
        "{}",
        workstation.stderr
    );
    // A GeForce card never gets the workstation package, which refuses it.
    let geforce = pin("NVIDIA GeForce RTX 4090");
    assert_eq!(geforce.code, 0, "{}", geforce.stderr);
    assert!(
        !geforce.stdout.contains("Quadro_Certified") && !geforce.stdout.contains("596.36"),
        "{}",
        geforce.stdout
    );
}
