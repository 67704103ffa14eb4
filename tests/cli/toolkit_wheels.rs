//! The toolkit layer from NVIDIA's own wheels (`toolkit.source: wheels`), for real: the component
//! wheels of one CUDA 13 release (about 100 MB) are served from a loopback index, fetched,
//! audited, installed offline (in a network namespace where the machine can make one) and
//! proven by compiling a kernel with the real nvcc. The mismatched set `pip install
//! "cuda-toolkit[nvcc,cudart]==13.0.2"` produces is refused by `check` before anything runs.
//!
//! The real wheels are looked for in `STACKPIN_TEST_CUDA_WHEELS` (a folder), else in a cache
//! folder outside the repository, filled once with `pip download` (`.ci/run` does that first).
//! Without them the real-wheel test fails under `CI=true` and is skipped (with a message)
//! locally.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{OutputStarted, text};
use crate::fakes::{FakeHost, FakeTorch, python3};
use crate::library_layer::Index;
use crate::server::TestServer;

const DRIVER: &str = "595.71.05";
/// The CUDA 13 release the real-wheel test installs (its components are in data/cuda-wheels.yaml).
const RELEASE: &str = "13.0.2";

/// `(name, version, file, sha256)` of every Linux component of `RELEASE` in the release data.
fn components() -> Vec<(String, String, String, String)> {
    let release = stackpin::version::Version::parse(RELEASE).expect("version");
    let wheels = stackpin::compat::toolkit_wheels(&release).expect("the data lists 13.0.2");
    wheels
        .components
        .iter()
        .map(|c| {
            let w = c
                .wheel(stackpin::os::Os::Linux)
                .expect("a Linux wheel for every component");
            (
                c.name.clone(),
                c.version.to_string(),
                w.file.clone(),
                w.sha256.clone(),
            )
        })
        .collect()
}

/// A host whose driver (for CUDA 13) and torch are in place, so install runs only the toolkit.
struct Bench {
    host: FakeHost,
    _installers: TestServer,
    manifest: PathBuf,
    archive: PathBuf,
    root: PathBuf,
}

impl Bench {
    /// `components` as manifest rows; `index` serves them (`None`: pip's default, never reached).
    fn new(components: &[(String, String, String, String)], index: Option<&str>) -> Self {
        let host = FakeHost::new()
            .gpu("NVIDIA H100 80GB HBM3", 81559, "9.0")
            .driver(DRIVER, "13.2")
            .torch(FakeTorch {
                version: "2.14.0+cu130".into(),
                cuda: Some("13.0".into()),
                capability: (9, 0),
                device_name: "NVIDIA H100 80GB HBM3".into(),
                arch_list: ["sm_80", "sm_90", "sm_100", "sm_120"]
                    .map(String::from)
                    .to_vec(),
                ..FakeTorch::default()
            });
        let installers = TestServer::start();
        installers.file("NVIDIA-Linux-x86_64-595.71.05.run", b"#!/bin/sh\nexit 0\n");
        installers.file("install-torch.sh", b"#!/bin/sh\nexit 0\n");
        // A folder of the user's own: no root needed.
        let root = host.root().join("home").join("cuda-13.0");
        let rows: String = components
            .iter()
            .map(|(name, version, file, sha)| {
                format!(
                    "    - name: {name}\n      version: \"{version}\"\n      file: {file}\n      sha256: {sha}\n"
                )
            })
            .collect();
        let manifest = host.root().join("wheels.yaml");
        let yaml = format!(
            "schema: 1\nname: torch-cu130-wheels\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"{RELEASE}\"\n  source: wheels\n  root: \"{root}\"\n{index}  components:\n{rows}\
             library:\n  name: torch\n  version: \"2.14.0\"\n  cuda: \"13.0\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"{{python}}\", \"-c\", \"print({{batch}})\"]\n",
            d = installers.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            l = installers.url("install-torch.sh"),
            root = root.display(),
            index = index.map_or(String::new(), |i| format!("  index_url: {i}\n")),
        );
        std::fs::write(&manifest, yaml).expect("manifest");
        let archive = host.archive();
        Self {
            host,
            _installers: installers,
            manifest,
            archive,
            root,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.host.stackpin(
            args.iter()
                .copied()
                .chain([self.manifest.to_str().expect("utf-8")]),
        );
        crate::common::installing(&mut cmd, &self.archive);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output_started().expect("stackpin runs")
    }

    /// In a new network namespace where the machine allows one; else as is (the index is
    /// dropped before the install either way).
    fn run_offline(&self, args: &[&str]) -> Output {
        let cmd = self.command(args);
        let unshare = Command::new("unshare")
            .args(["-n", "true"])
            .output_started()
            .is_ok_and(|o| o.status.success());
        if !unshare {
            println!(
                "note: no network namespace here (`unshare -n` failed); the index is gone instead"
            );
            return self.command(args).output_started().expect("stackpin runs");
        }
        let mut wrapped = Command::new("unshare");
        wrapped
            .arg("-n")
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        wrapped.output_started().expect("unshare runs")
    }
}

/// The real wheels of `RELEASE` from the cache folder (filled by `pip download` when missing).
fn real_wheels() -> Option<Vec<(String, Vec<u8>)>> {
    let dir = std::env::var_os("STACKPIN_TEST_CUDA_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("stackpin-cuda-wheels"));
    let wanted = components();
    let missing = |dir: &Path| {
        wanted
            .iter()
            .any(|(_, _, file, _)| !dir.join(file).is_file())
    };
    if missing(&dir) && std::env::var_os("STACKPIN_OFFLINE").is_none_or(|v| v != "1") {
        // Test setup, not the test: the registry through pip's own client, once per cache.
        let _ = Command::new(python3())
            .args([
                "-m",
                "pip",
                "download",
                "--isolated",
                "--no-deps",
                "--only-binary=:all:",
            ])
            .args([
                "--platform",
                "manylinux_2_17_x86_64",
                "--platform",
                "manylinux_2_12_x86_64",
            ])
            .arg("-d")
            .arg(&dir)
            .args(
                wanted
                    .iter()
                    .map(|(name, version, _, _)| format!("{name}=={version}")),
            )
            .env_remove("PIP_FIND_LINKS")
            .output_started();
    }
    if missing(&dir) {
        if std::env::var_os("CI").is_some_and(|v| v == "true") {
            panic!(
                "CI=true and the CUDA {RELEASE} wheels are not all in {} (set STACKPIN_TEST_CUDA_WHEELS, or let .ci/run `pip download` them there)",
                dir.display()
            );
        }
        println!(
            "skipped: the CUDA {RELEASE} wheels are not all in {} and could not be downloaded",
            dir.display()
        );
        return None;
    }
    Some(
        wanted
            .iter()
            .map(|(_, _, file, _)| {
                (
                    file.clone(),
                    std::fs::read(dir.join(file)).expect("wheel bytes"),
                )
            })
            .collect(),
    )
}

#[test]
fn real_cuda_13_wheels_install_offline_into_a_users_folder_and_compile_a_kernel() {
    let Some(wheels) = real_wheels() else {
        return;
    };
    let mut index = Index::new();
    for (name, _, file, _) in components() {
        let bytes = &wheels.iter().find(|(f, _)| *f == file).expect("wheel").1;
        index.add(&name, &file, bytes);
    }
    let bench = Bench::new(&components(), Some(&index.url()));

    let checked = bench.run(&["check"]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));

    let fetched = bench.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let lock = std::fs::read_to_string(bench.archive.join("torch-cu130-wheels/stack.lock"))
        .expect("stack.lock");
    for (_, _, file, sha) in components() {
        assert!(
            lock.contains(&file) && lock.contains(&sha),
            "{file} locked: {lock}"
        );
    }

    let audit = bench.run(&["audit"]);
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert!(text(&audit).contains("0 unexpected"), "{}", text(&audit));

    drop(index);
    let installed = bench.run_offline(&["install", "--yes"]);
    let said = text(&installed);
    assert_eq!(installed.status.code(), Some(0), "{said}");
    assert!(bench.root.join("bin/nvcc").is_file(), "{said}");
    assert!(bench.root.join("nvvm/bin/cicc").is_file(), "{said}");
    assert!(said.contains("a kernel compiled for sm_90"), "{said}");
    let env = std::fs::read_to_string(bench.root.join("stackpin-env.sh")).expect("env file");
    assert!(
        env.contains("CUDA_HOME=") && env.contains("LD_LIBRARY_PATH"),
        "{env}"
    );

    // The same proof through doctor's eyes, and for an architecture nvcc 13 no longer knows.
    let nvcc = Command::new(bench.root.join("bin/nvcc"))
        .arg("--version")
        .output_started()
        .expect("real nvcc runs");
    assert!(
        text(&nvcc).contains("release 13.0, V13.0.88"),
        "{}",
        text(&nvcc)
    );
    let refused = bench.run(&[
        "install",
        "--yes",
        "--force",
        "toolkit",
        "--gpu-arch",
        "5.2",
    ]);
    let said = text(&refused);
    assert_ne!(refused.status.code(), Some(0), "{said}");
    assert!(
        said.contains("Unsupported gpu architecture 'sm_52'"),
        "{said}"
    );
}

/// The mix `pip install "cuda-toolkit[nvcc,cudart]==13.0.2"` gives: NVIDIA's nvcc 13.0.88 with
/// the newest crt and nvvm (13.5.37), read from the index on 2026-12-07.
fn mismatched() -> Vec<(String, String, String, String)> {
    components()
        .into_iter()
        .map(|(name, version, file, sha)| match name.as_str() {
            "nvidia-nvvm" => (
                name,
                "13.5.37".to_string(),
                "nvidia_nvvm-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl"
                    .into(),
                "c41bfa362e407405163f103c2229f0765f8cc2ed7d148b754dc77f228bf7e070".into(),
            ),
            "nvidia-cuda-crt" => (
                name,
                "13.5.37".to_string(),
                "nvidia_cuda_crt-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
                    .into(),
                "e898b7f73d3035fa89915a3f7bf3b54a73e90249746111aed295822c4729bb29".into(),
            ),
            _ => (name, version, file, sha),
        })
        .collect()
}

#[test]
fn the_mix_pip_gives_for_cuda_toolkit_13_0_2_is_refused_by_check_before_anything_is_installed() {
    let bench = Bench::new(&mismatched(), None);
    let checked = bench.run(&["check"]);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(1), "{said}");
    assert!(
        said.contains("nvidia-cuda-nvcc 13.0.88") && said.contains("nvidia-nvvm 13.5.37"),
        "{said}"
    );
    assert!(said.contains("nvidia-cuda-crt 13.5.37"), "{said}");
    let installed = bench.run(&["install", "--yes"]);
    assert_ne!(installed.status.code(), Some(0), "{}", text(&installed));
    assert!(!bench.root.exists(), "nothing installed");
}

#[test]
fn cuda_12_wheels_are_refused_they_carry_no_nvcc() {
    let bench = Bench::new(&components(), None);
    let yaml = std::fs::read_to_string(&bench.manifest)
        .expect("manifest")
        .replace("version: \"13.0.2\"", "version: \"12.9.1\"")
        .replace("cuda: \"13.0\"", "cuda: \"12.9\"")
        .replace("cuda-13.0", "cuda-12.9");
    std::fs::write(&bench.manifest, yaml).expect("manifest");
    let checked = bench.run(&["check"]);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(1), "{said}");
    assert!(said.contains("no nvcc driver"), "{said}");
}

#[test]
fn pin_with_toolkit_source_wheels_writes_one_release_and_check_accepts_it() {
    let host = FakeHost::new();
    let out = host
        .stackpin([
            "pin",
            "--library",
            "torch==2.14.0",
            "--os",
            "linux",
            "--toolkit-source",
            "wheels",
            "--gpu-arch",
            "9.0",
            "--python",
            "3.12",
        ])
        .output_started()
        .expect("pin runs");
    let yaml = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(yaml.contains("source: wheels"), "{yaml}");
    let manifest = stackpin::manifest::parse(&yaml, Path::new("pinned.yaml")).expect("a manifest");
    let release =
        stackpin::compat::toolkit_wheels(&manifest.toolkit.version).expect("a release with wheels");
    assert_eq!(
        manifest.toolkit.components.len(),
        release.components.len(),
        "{yaml}"
    );
    for c in &release.components {
        assert!(
            manifest
                .toolkit
                .components
                .iter()
                .any(|m| m.name == c.name && m.version == c.version),
            "{} {} pinned: {yaml}",
            c.name,
            c.version
        );
    }
    let path = host.root().join("pinned.yaml");
    std::fs::write(&path, &yaml).expect("write");
    let checked = host
        .stackpin(["check", path.to_str().expect("utf-8")])
        .output_started()
        .expect("check runs");
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
}
