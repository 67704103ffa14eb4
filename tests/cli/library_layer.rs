//! The library layer with real pip, a real venv and loopback package indexes: wheels are built
//! in the test (no network), served from `127.0.0.1`, and the caller's environment is hostile
//! the way many workstations are (`PIP_EXTRA_INDEX_URL` to an attacker's index, `PIP_FIND_LINKS`
//! to a folder with another build of the same version, `PIP_INDEX_URL`).
//!
//! The uv tests need uv's real wheel: it is looked for in `STACKPIN_TEST_UV_WHEELS` (a folder),
//! else in a cache folder outside the repository, filled once with `pip download uv` (`.ci/run`
//! does that first). Without it they fail under `CI=true` and are skipped (with a message)
//! locally.

use crate::common::OutputStarted;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::text;
use crate::fakes::{FakeHost, python3};
use crate::server::{Route, TestServer};

const DRIVER: &str = "595.71.05";

/// A wheel built by the test: `name-version-py3-none-any.whl` with a module `name` whose
/// `BUILD` says which build it is.
pub struct Wheel {
    pub file: String,
    pub bytes: Vec<u8>,
}

/// Builds a pure-Python wheel with Python's zipfile (metadata, module, RECORD with hashes).
pub fn build_wheel(dir: &Path, name: &str, version: &str, build: &str, requires: &[&str]) -> Wheel {
    let script = r#"
import base64, hashlib, sys, zipfile
out, name, version, build = sys.argv[1:5]
requires = sys.argv[5:]
dist = f"{name}-{version}.dist-info"
files = {
    f"{name}/__init__.py": f"__version__ = {version!r}\nBUILD = {build!r}\n",
    f"{dist}/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
        name, version, "".join(f"Requires-Dist: {r}\n" for r in requires)),
    f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: stackpin-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(out, "w") as z:
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
        z.writestr(zipfile.ZipInfo(path, (2020, 1, 1, 0, 0, 0)), data)
    record.append(f"{dist}/RECORD,,")
    z.writestr(zipfile.ZipInfo(f"{dist}/RECORD", (2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
"#;
    std::fs::create_dir_all(dir).expect("wheel folder");
    let file = format!("{name}-{version}-py3-none-any.whl");
    let path = dir.join(&file);
    let out = Command::new(python3())
        .arg("-c")
        .arg(script)
        .arg(&path)
        .args([name, version, build])
        .args(requires)
        .env_remove("PYTHONPATH")
        .output_started()
        .expect("python3 builds a wheel");
    assert!(out.status.success(), "building {file}: {}", text(&out));
    Wheel {
        bytes: std::fs::read(&path).expect("wheel bytes"),
        file,
    }
}

/// A PEP 503 "simple" index on loopback: `/simple/<project>/` pages linking `/files/<wheel>`.
pub struct Index {
    server: TestServer,
    projects: std::collections::BTreeMap<String, Vec<String>>,
}

impl Index {
    pub fn new() -> Self {
        Self {
            server: TestServer::start(),
            projects: Default::default(),
        }
    }

    pub fn url(&self) -> String {
        self.server.url("simple")
    }

    pub fn add(&mut self, project: &str, file: &str, bytes: &[u8]) {
        self.server.file(&format!("files/{file}"), bytes);
        let files = self.projects.entry(project.to_string()).or_default();
        files.push(file.to_string());
        let links: String = files
            .iter()
            .map(|f| {
                format!(
                    "<a href=\"{}\">{f}</a><br/>\n",
                    self.server.url(&format!("files/{f}"))
                )
            })
            .collect();
        self.server.route(
            &format!("simple/{project}/"),
            Route {
                body: format!("<!DOCTYPE html><html><body>\n{links}</body></html>\n").into_bytes(),
                content_type: Some("text/html".into()),
                ..Route::default()
            },
        );
    }

    pub fn wheel(&mut self, wheel: &Wheel) {
        let project = wheel
            .file
            .split('-')
            .next()
            .unwrap_or_default()
            .replace('_', "-");
        self.add(&project, &wheel.file, &wheel.bytes);
    }

    /// Requests for a wheel's file.
    pub fn downloads(&self, file: &str) -> usize {
        self.server.hits(&format!("files/{file}")).len()
    }

    /// Requests for a project's page.
    pub fn lookups(&self, project: &str) -> usize {
        self.server.hits(&format!("simple/{project}/")).len()
    }
}

/// A fake host whose driver and toolkit are in place, so `install` runs only the library layer,
/// with a manifest whose library is `fakelib` (which needs `helper>=1.0`).
struct Lab {
    host: FakeHost,
    _installers: TestServer,
    manifest: PathBuf,
    archive: PathBuf,
    venv: PathBuf,
    /// Variables of a hostile caller, set on every stackpin run.
    hostile: Vec<(String, String)>,
}

impl Lab {
    fn new(index: &Index, requirements: &[&str], installer: &str) -> Self {
        let py_version = {
            let out = Command::new(python3())
                .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
                .output_started()
                .expect("python3 runs");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let host = FakeHost::new()
            .gpu("NVIDIA L4", 23034, "8.9")
            .driver(DRIVER, "12.8")
            .toolkit("12.4.1");
        let installers = TestServer::start();
        installers.file("NVIDIA-Linux-x86_64-595.71.05.run", b"#!/bin/sh\nexit 0\n");
        installers.file("cuda_12.4.1_550.54.15_linux.run", b"#!/bin/sh\nexit 0\n");
        let venv = host.root().join("venv");
        let manifest = host.root().join("fakelib.yaml");
        let requirements: Vec<String> = requirements.iter().map(|r| format!("\"{r}\"")).collect();
        let yaml = format!(
            "schema: 1\nname: fakelib-stack\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
             library:\n  name: fakelib\n  version: \"1.0\"\n  cuda: \"12.4\"\n  python: \"{python}\"\n  python_version: \"{py_version}\"\n  venv: \"{venv}\"\n{installer}  pip:\n    index_url: {index}\n    requirements: [{reqs}]\n\
             example:\n  run: [\"{{python}}\", \"-c\", \"import fakelib\"]\n",
            d = installers.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            t = installers.url("cuda_12.4.1_550.54.15_linux.run"),
            root = host.toolkit_root("12.4.1").display(),
            python = python3().display(),
            venv = venv.display(),
            installer = if installer.is_empty() {
                String::new()
            } else {
                format!("  installer: {installer}\n")
            },
            index = index.url(),
            reqs = requirements.join(", "),
        );
        std::fs::write(&manifest, yaml).expect("manifest");
        let archive = host.archive();
        Self {
            host,
            _installers: installers,
            manifest,
            archive,
            venv,
            hostile: Vec::new(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.host.stackpin(
            args.iter()
                .copied()
                .chain([self.manifest.to_str().expect("utf-8")]),
        );
        crate::common::installing(&mut cmd, &self.archive);
        for (k, v) in &self.hostile {
            cmd.env(k, v);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output_started().expect("stackpin runs")
    }

    /// Runs without any network: in a new network namespace (only an unreachable loopback).
    fn run_offline(&self, args: &[&str]) -> Output {
        let cmd = self.command(args);
        match offline_wrapper() {
            Some(unshare) => {
                let mut wrapped = Command::new(unshare);
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
                if let Some(dir) = cmd.get_current_dir() {
                    wrapped.current_dir(dir);
                }
                wrapped.output_started().expect("unshare runs")
            }
            None => {
                println!(
                    "note: no network namespace here (`unshare -n` failed); running with the index gone instead"
                );
                self.command(args).output_started().expect("stackpin runs")
            }
        }
    }

    fn stack(&self) -> PathBuf {
        self.archive.join("fakelib-stack")
    }

    fn lock(&self) -> String {
        std::fs::read_to_string(self.stack().join("stack.lock")).expect("stack.lock")
    }

    /// `fakelib.BUILD` and `helper.BUILD` as the venv's Python sees them.
    fn venv_builds(&self) -> String {
        let out = Command::new(self.venv.join("bin/python"))
            .args([
                "-c",
                "import fakelib, helper; print(fakelib.BUILD, helper.__version__, helper.BUILD)",
            ])
            .env_remove("PYTHONPATH")
            .output_started()
            .expect("venv python");
        text(&out).trim().to_string()
    }
}

/// `unshare` when this machine can make a network namespace (root or user namespaces).
fn offline_wrapper() -> Option<&'static str> {
    Command::new("unshare")
        .args(["-n", "true"])
        .output_started()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "unshare")
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// The good index (fakelib 1.0, helper 1.0 build "good"), the attacker's (helper 9.9), and a
/// find-links folder with another build of helper 1.0.
fn hostile_world(dir: &Path) -> (Index, Index, PathBuf, Wheel, Wheel) {
    let fakelib = build_wheel(
        &dir.join("good"),
        "fakelib",
        "1.0",
        "good",
        &["helper>=1.0"],
    );
    let helper = build_wheel(&dir.join("good"), "helper", "1.0", "good", &[]);
    let mut good = Index::new();
    good.wheel(&fakelib);
    good.wheel(&helper);
    let mut evil = Index::new();
    evil.wheel(&build_wheel(
        &dir.join("evil"),
        "helper",
        "9.9",
        "evil",
        &[],
    ));
    evil.wheel(&build_wheel(
        &dir.join("evil"),
        "fakelib",
        "9.9",
        "evil",
        &[],
    ));
    let find_links = dir.join("find-links");
    build_wheel(&find_links, "helper", "1.0", "find-links", &[]);
    (good, evil, find_links, fakelib, helper)
}

fn hostile_env(evil: &Index, find_links: &Path) -> Vec<(String, String)> {
    vec![
        ("PIP_EXTRA_INDEX_URL".into(), evil.url()),
        ("PIP_FIND_LINKS".into(), find_links.display().to_string()),
        ("PIP_INDEX_URL".into(), evil.url()),
        ("PIP_NO_INDEX".into(), "0".into()),
        ("PYTHONPATH".into(), find_links.display().to_string()),
    ]
}

#[test]
fn the_confusion_index_and_find_links_never_reach_the_archive_or_the_venv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, evil, find_links, fakelib, helper) = hostile_world(dir.path());
    let mut lab = Lab::new(&good, &["fakelib==1.0"], "pip");
    lab.hostile = hostile_env(&evil, &find_links);

    let fetched = lab.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    // Progress: each wheel is named as it arrives.
    assert!(
        text(&fetched).contains(&format!("library: downloaded {}", helper.file)),
        "{}",
        text(&fetched)
    );
    let lock = lab.lock();
    assert!(lock.contains(&sha256_hex(&helper.bytes)), "{lock}");
    assert!(lock.contains(&sha256_hex(&fakelib.bytes)), "{lock}");
    assert_eq!(evil.lookups("helper") + evil.lookups("fakelib"), 0);
    assert_eq!(good.downloads(&helper.file), 1);

    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    assert!(
        text(&installed).contains("--isolated"),
        "{}",
        text(&installed)
    );
    assert_eq!(lab.venv_builds(), "good 1.0 good");
    assert_eq!(evil.lookups("helper") + evil.lookups("fakelib"), 0);
    let log = std::fs::read_dir(lab.stack().join("logs"))
        .expect("logs")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("library"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(!log.contains(&find_links.display().to_string()), "{log}");
}

#[test]
fn audit_after_a_clean_install_reports_nothing_unexpected_and_the_archive_is_servable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, fakelib, _helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0"], "");
    let fetched = lab.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let installed = lab.run(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));

    let audit = lab.run(&["audit"]);
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert!(
        !text(&audit).lines().any(|l| l.starts_with("unexpected")),
        "{}",
        text(&audit)
    );
    assert!(text(&audit).contains("0 unexpected"), "{}", text(&audit));
    let status = lab.run(&["status"]);
    assert!(text(&status).contains("0 unexpected"), "{}", text(&status));

    let stack = lab.stack();
    assert_eq!(mode(&stack.join("stack.lock")), 0o644);
    assert_eq!(mode(&stack.join("manifest.yaml")), 0o644);
    assert_eq!(mode(&stack.join("state.yaml")), 0o644);
    assert_eq!(mode(&stack.join("library").join(&fakelib.file)), 0o444);
    assert!(!stack.join(".stackpin-busy").exists(), "busy marker left");
}

#[test]
fn one_corrupt_wheel_is_fetched_again_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, fakelib, helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0"], "");
    let fetched = lab.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let wheel = lab.stack().join("library").join(&helper.file);
    std::fs::set_permissions(&wheel, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(&wheel, b"not the wheel").expect("corrupt");

    let again = lab.run(&["fetch", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !stderr.contains("library:"),
        "--json stays silent: {stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    let outcome = |file: &str| {
        doc["files"]
            .as_array()
            .and_then(|a| a.iter().find(|f| f["file"] == file))
            .map(|f| f["outcome"].clone())
    };
    assert_eq!(outcome(&helper.file), Some("repaired".into()), "{doc}");
    assert_eq!(
        outcome(&fakelib.file),
        Some("already_archived".into()),
        "{doc}"
    );
    assert_eq!(good.downloads(&helper.file), 2, "helper fetched again");
    assert_eq!(good.downloads(&fakelib.file), 1, "fakelib left alone");
    assert_eq!(std::fs::read(&wheel).expect("wheel"), helper.bytes);
    assert_eq!(lab.run(&["audit"]).status.code(), Some(0));
}

#[test]
fn a_requirement_missing_from_the_index_leaves_an_incomplete_archive_that_install_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, _fakelib, _helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0", "absent==2.0"], "");
    let fetched = lab.run(&["fetch"]);
    assert_ne!(fetched.status.code(), Some(0), "{}", text(&fetched));
    assert!(lab.lock().contains("absent==2.0"), "{}", lab.lock());

    let audit = lab.run(&["audit"]);
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    assert!(text(&audit).contains("incomplete: run"), "{}", text(&audit));
    let status = lab.run(&["status"]);
    assert_eq!(status.status.code(), Some(1), "{}", text(&status));
    assert!(
        text(&status).contains("incomplete: run"),
        "{}",
        text(&status)
    );
    let plan = lab.run(&["plan"]);
    assert_eq!(plan.status.code(), Some(1), "{}", text(&plan));
    assert!(text(&plan).contains("incomplete: run"), "{}", text(&plan));

    let installed = lab.run(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(1), "{}", text(&installed));
    assert!(
        text(&installed).contains("incomplete: run"),
        "{}",
        text(&installed)
    );
    assert!(!lab.venv.exists(), "install created the venv");
    assert!(!lab.stack().join("state.yaml").exists(), "a layer ran");
}

#[test]
fn the_pip_path_refuses_a_tampered_wheel_before_creating_the_venv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, fakelib, _helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0"], "pip");
    assert_eq!(lab.run(&["fetch"]).status.code(), Some(0));
    let wheel = lab.stack().join("library").join(&fakelib.file);
    std::fs::set_permissions(&wheel, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mut bytes = fakelib.bytes.clone();
    bytes.extend_from_slice(b"tampered");
    std::fs::write(&wheel, bytes).expect("tamper");
    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(1), "{}", text(&installed));
    assert!(text(&installed).contains("corrupt"), "{}", text(&installed));
    assert!(!lab.venv.exists(), "the venv was created");
}

/// The uv release and Linux wheel the release data pins (data/tools.yaml).
fn uv_pinned() -> (String, String, String) {
    let pin = stackpin::compat::uv_pin().expect("the release data pins uv");
    let wheel = pin
        .wheel(stackpin::os::Os::Linux)
        .expect("a Linux wheel is pinned");
    (
        pin.version.to_string(),
        wheel.file.clone(),
        wheel.sha256.clone(),
    )
}

/// uv's real wheel as the data pins it, from the cache folder (filled by `pip download
/// uv==<pinned>` when missing).
fn uv_wheel() -> Option<(String, Vec<u8>)> {
    let dir = std::env::var_os("STACKPIN_TEST_UV_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("stackpin-uv-wheel"));
    let (version, file, _) = uv_pinned();
    let find = || {
        let path = dir.join(&file);
        path.is_file()
            .then(|| (file.clone(), std::fs::read(&path).ok()))
    };
    if find().is_none() && std::env::var_os("STACKPIN_OFFLINE").is_none_or(|v| v != "1") {
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
            .args(["--platform", "manylinux_2_17_x86_64", "-d"])
            .arg(&dir)
            .arg(format!("uv=={version}"))
            .env_remove("PIP_FIND_LINKS")
            .output_started();
    }
    match find() {
        Some((name, Some(bytes))) => Some((name, bytes)),
        _ if std::env::var_os("CI").is_some_and(|v| v == "true") => panic!(
            "CI=true and no uv wheel in {} (set STACKPIN_TEST_UV_WHEELS, or let .ci/run `pip download uv` there)",
            dir.display()
        ),
        _ => {
            println!(
                "skipped: no uv wheel in {} and none could be downloaded",
                dir.display()
            );
            None
        }
    }
}

#[test]
fn uv_installs_the_library_offline_from_its_archived_wheel() {
    let Some((uv_file, uv_bytes)) = uv_wheel() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, evil, find_links, _fakelib, helper) = hostile_world(dir.path());
    // uv comes from its own index (the data's pin), never the library's.
    let mut tools = Index::new();
    tools.add("uv", &uv_file, &uv_bytes);
    let mut lab = Lab::new(&good, &["fakelib==1.0"], "uv");
    lab.hostile = hostile_env(&evil, &find_links);
    lab.hostile
        .push(("STACKPIN_UV_INDEX_URL".into(), tools.url()));
    lab.hostile.push(("UV_EXTRA_INDEX_URL".into(), evil.url()));
    lab.hostile
        .push(("UV_FIND_LINKS".into(), find_links.display().to_string()));

    let fetched = lab.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let lock = lab.lock();
    assert!(
        lock.contains(&sha256_hex(&uv_bytes)),
        "uv's wheel hashed in the lock: {lock}"
    );

    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    let said = text(&installed);
    assert!(said.contains("pip install"), "{said}");
    assert!(
        said.contains("--require-hashes") && said.contains("--offline"),
        "{said}"
    );
    assert_eq!(lab.venv_builds(), "good 1.0 good");
    assert_eq!(evil.lookups("helper") + evil.lookups("fakelib"), 0);
    // uv installs the library; it is not part of it.
    assert!(!lab.venv.join("bin/uv").exists(), "uv went into the venv");
    let audit = lab.run(&["audit"]);
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert!(
        !text(&audit).lines().any(|l| l.starts_with("unexpected")),
        "{}",
        text(&audit)
    );
    assert!(text(&audit).contains("0 unexpected"), "{}", text(&audit));

    // A tampered wheel is refused before uv runs.
    let wheel = lab.stack().join("library").join(&helper.file);
    std::fs::set_permissions(&wheel, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(&wheel, b"tampered").expect("tamper");
    std::fs::remove_dir_all(&lab.venv).expect("remove venv");
    let again = lab.run_offline(&["install", "--yes", "--force", "library"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("corrupt"), "{}", text(&again));
    assert!(!lab.venv.exists(), "the venv was created");
}

#[test]
fn uv_whose_sha256_is_not_the_data_pin_is_refused_at_fetch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _find_links, _fakelib, _helper) = hostile_world(dir.path());
    let (version, file, pinned) = uv_pinned();
    // A stand-in for the index pip uses, serving another (valid) wheel under the pinned name.
    let impostor = build_wheel(
        &dir.path().join("impostor"),
        "uv",
        &version,
        "impostor",
        &[],
    );
    let mut tools = Index::new();
    tools.add("uv", &file, &impostor.bytes);
    let mut lab = Lab::new(&good, &["fakelib==1.0"], "uv");
    lab.hostile
        .push(("STACKPIN_UV_INDEX_URL".into(), tools.url()));
    let fetched = lab.run(&["fetch"]);
    let said = text(&fetched);
    assert_ne!(fetched.status.code(), Some(0), "{said}");
    assert!(said.contains(&pinned) && said.contains(&file), "{said}");
    assert_eq!(
        good.lookups("uv"),
        0,
        "uv was looked up on the library's index"
    );
    assert!(!lab.stack().join("library").join(&file).exists());
    assert!(
        said.contains(&sha256_hex(&impostor.bytes)),
        "both hashes shown: {said}"
    );
    assert!(
        !lab.lock().contains(&sha256_hex(&impostor.bytes)),
        "{}",
        lab.lock()
    );
}

#[test]
fn extra_index_urls_are_searched_at_fetch_and_validated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fakelib = build_wheel(
        &dir.path().join("a"),
        "fakelib",
        "1.0",
        "good",
        &["helper>=1.0"],
    );
    let helper = build_wheel(&dir.path().join("b"), "helper", "1.0", "good", &[]);
    let mut main = Index::new();
    main.wheel(&fakelib);
    let mut extra = Index::new();
    extra.wheel(&helper);
    let lab = Lab::new(&main, &["fakelib==1.0"], "");
    let yaml = std::fs::read_to_string(&lab.manifest).expect("manifest");
    let with_extra = |url: &str| {
        yaml.replace(
            "    requirements:",
            &format!("    extra_index_urls: [\"{url}\"]\n    requirements:"),
        )
    };

    std::fs::write(&lab.manifest, with_extra("http://wheels.lab.test/simple")).expect("write");
    let checked = lab.run(&["check"]);
    assert_ne!(checked.status.code(), Some(0), "{}", text(&checked));
    assert!(
        text(&checked).contains("library.pip.extra_index_urls[0]"),
        "{}",
        text(&checked)
    );

    std::fs::write(&lab.manifest, with_extra(&extra.url())).expect("write");
    let fetched = lab.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    assert!(
        lab.lock().contains(&sha256_hex(&helper.bytes)),
        "{}",
        lab.lock()
    );
    assert_eq!(extra.downloads(&helper.file), 1);
}

/// Python that runs as root if anything imports it from the working folder, as a PyTorch
/// source checkout has it: `venv.py`, `pip/`, `torch/`, the library itself and a
/// `sitecustomize.py`. Each writes its name into `tripwire` when it runs.
fn plant_python_in(dir: &Path, tripwire: &Path) {
    let hit = |name: &str| format!("open({:?}, 'a').write('{name}\\n')\n", tripwire.display());
    std::fs::write(dir.join("venv.py"), hit("venv.py")).expect("venv.py");
    std::fs::write(dir.join("sitecustomize.py"), hit("sitecustomize")).expect("sitecustomize");
    for (package, extra) in [
        ("pip", "raise SystemExit(0)\n"),
        ("torch", "__version__ = '2.5.1'\n"),
        ("fakelib", "BUILD = 'planted'\n__version__ = '1.0'\n"),
    ] {
        let folder = dir.join(package);
        std::fs::create_dir_all(&folder).expect("package");
        std::fs::write(folder.join("__init__.py"), hit(package) + extra).expect("init");
        std::fs::write(folder.join("__main__.py"), hit(package) + extra).expect("main");
    }
}

/// A `.pth` line that writes `pth` into `tripwire` whenever the venv's Python starts.
fn plant_pth(venv: &Path, tripwire: &Path) -> PathBuf {
    let lib = venv.join("lib");
    let python_dir = std::fs::read_dir(&lib)
        .expect("venv lib")
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("python"))
        .expect("lib/pythonX.Y")
        .path();
    let pth = python_dir.join("site-packages").join("zz-planted.pth");
    std::fs::write(
        &pth,
        format!(
            "import os; open({:?}, 'a').write('pth\\n')\n",
            tripwire.display()
        ),
    )
    .expect("pth");
    pth
}

#[test]
fn python_planted_in_the_working_folder_never_runs_at_fetch_install_or_plan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, fakelib, _helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0"], "pip");
    let tripwire = dir.path().join("tripwire");
    plant_python_in(lab.host.root(), &tripwire);

    let fetched = lab.run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    assert!(
        lab.lock().contains(&sha256_hex(&fakelib.bytes)),
        "no wheel locked: {}",
        lab.lock()
    );
    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    assert!(
        !text(&installed).contains("library already in place"),
        "{}",
        text(&installed)
    );
    assert_eq!(lab.venv_builds(), "good 1.0 good");
    let planned = lab.run(&["plan"]);
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned));
    assert!(
        !tripwire.exists(),
        "planted Python ran ({}): {}",
        text(&planned),
        std::fs::read_to_string(&tripwire).unwrap_or_default()
    );
}

#[test]
fn a_venv_stackpin_did_not_make_is_neither_run_nor_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, _fakelib, _helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0"], "pip");
    assert_eq!(lab.run(&["fetch"]).status.code(), Some(0));
    let made = Command::new(python3())
        .args(["-m", "venv", "--without-pip"])
        .arg(&lab.venv)
        .output_started()
        .expect("python3 -m venv");
    assert!(made.status.success(), "{}", text(&made));
    let tripwire = dir.path().join("tripwire");
    let pth = plant_pth(&lab.venv, &tripwire);

    let planned = lab.run(&["plan"]);
    assert_eq!(planned.status.code(), Some(1), "{}", text(&planned));
    assert!(
        text(&planned).contains("not made by stackpin"),
        "{}",
        text(&planned)
    );
    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(1), "{}", text(&installed));
    assert!(
        text(&installed).contains("not made by stackpin")
            && text(&installed).contains("move")
            && text(&installed).contains("library.venv"),
        "{}",
        text(&installed)
    );
    assert!(pth.exists(), "the user's venv was replaced");
    assert!(
        !tripwire.exists(),
        "the planted .pth ran as root: {}",
        std::fs::read_to_string(&tripwire).unwrap_or_default()
    );
}

#[test]
fn a_venv_stackpin_made_is_made_fresh_and_a_relinked_python_is_never_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, _evil, _links, _fakelib, _helper) = hostile_world(dir.path());
    let lab = Lab::new(&good, &["fakelib==1.0"], "pip");
    assert_eq!(lab.run(&["fetch"]).status.code(), Some(0));
    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    assert!(lab.venv.join(".stackpin-venv").is_file());

    // A reinstall replaces the venv whole: a .pth left in it is gone.
    let tripwire = dir.path().join("tripwire");
    let pth = plant_pth(&lab.venv, &tripwire);
    let again = lab.run_offline(&["install", "--yes", "--force", "library"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(!pth.exists(), "the reinstalled venv kept the planted .pth");
    assert_eq!(lab.venv_builds(), "good 1.0 good");

    // bin/python relinked to a script: plan, install and prove never start it.
    let _ = std::fs::remove_file(&tripwire);
    let script = dir.path().join("not-python.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho ran >> '{}'\n", tripwire.display()),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let python = lab.venv.join("bin/python");
    std::fs::remove_file(&python).expect("unlink python");
    std::os::unix::fs::symlink(&script, &python).expect("relink");
    let planned = lab.run(&["plan"]);
    assert!(
        text(&planned).contains("not-python.sh"),
        "{}",
        text(&planned)
    );
    let installed = lab.run_offline(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(1), "{}", text(&installed));
    let proved = lab.run(&["prove"]);
    assert_ne!(proved.status.code(), Some(0), "{}", text(&proved));
    assert!(
        !tripwire.exists(),
        "the relinked python ran: {}",
        std::fs::read_to_string(&tripwire).unwrap_or_default()
    );
}
