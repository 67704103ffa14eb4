//! Published checksums end to end: a release data set whose `checksums.yaml` publishes the
//! sha256 of a CUDA runfile on a loopback server standing in for NVIDIA's. A first download
//! that disagrees is refused at `fetch` (nothing under the final name, the message names the
//! publisher); one that agrees is locked as `published (SOURCE)`, the unpublished driver as
//! `trust_on_first_use`, and `audit` counts both, in text and JSON.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::{Outcome, TestContext, repo, run};
use crate::server::TestServer;

const STACK: &str = "published-sums";
const DRIVER: &str = "NVIDIA-Linux-x86_64-595.71.05.run";
const TOOLKIT: &str = "cuda_12.4.1_550.54.15_linux.run";
const SOURCE: &str = "test: NVIDIA md5sum.txt stand-in";

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

struct Lab {
    ctx: TestContext,
    server: TestServer,
}

impl Lab {
    /// A server with the driver and the toolkit runfile, and a data set installed that
    /// publishes `published` as the toolkit runfile's sha256.
    fn new(toolkit_body: &[u8], published: &str) -> Self {
        let lab = Lab {
            ctx: TestContext::new(),
            server: TestServer::start(),
        };
        lab.server.file(DRIVER, b"#!/bin/sh\nexit 0\n");
        lab.server.file(TOOLKIT, toolkit_body);
        let data = lab.ctx.path("data-with-sums");
        copy_data_with_checksum(&data, &lab.server.url(TOOLKIT), published);
        let packed = lab.ctx.path("set.json");
        let out = lab.run(&[
            "data",
            "pack",
            &data.display().to_string(),
            "-o",
            &packed.display().to_string(),
            "--json",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        let sum = serde_json::from_str::<Value>(&out.stdout).expect("pack JSON")["sha256"]
            .as_str()
            .expect("sha256")
            .to_string();
        let packed = packed.display().to_string();
        let out = lab.run(&["data", "update", "--from", &packed, "--sha256", &sum]);
        assert_eq!(out.code, 0, "{out:?}");
        lab
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.ctx.stackpin(args);
        cmd.env("STACKPIN_DATA_DIR", self.ctx.path("stackpin-data"))
            .env("STACKPIN_ARCHIVE", self.ctx.path("archive"))
            .env("STACKPIN_RETRY_BASE_MS", "0");
        cmd
    }

    fn run(&self, args: &[&str]) -> Outcome {
        run(&mut self.command(args))
    }

    /// A manifest pinning neither installer, so the data's published checksum is all there is.
    fn manifest(&self) -> PathBuf {
        let text = format!(
            r#"schema: 1
name: {STACK}
os: linux
driver:
  version: "595.71.05"
  installer:
    url: {}
  run: ["sh", "{{installer}}", "--silent", "--dkms"]
toolkit:
  version: "12.4.1"
  installer:
    url: {}
  root: "/usr/local/cuda-12.4"
  run: ["sh", "{{installer}}", "--silent", "--toolkit", "--toolkitpath={{root}}", "--no-man-page"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  installers:
    - url: {}
  run: ["sh", "{{installer}}"]
example:
  run: ["python3", "{{examples}}/classify.py", "--batch-size", "{{batch}}"]
  batch: 64
"#,
            self.server.url(DRIVER),
            self.server.url(TOOLKIT),
            self.server.url(DRIVER),
        );
        let path = self.ctx.path("stack.yaml");
        std::fs::write(&path, text).expect("manifest");
        path
    }

    fn stack(&self) -> PathBuf {
        self.ctx.path("archive").join(STACK)
    }
}

/// `data/` copied to `dir` with one more published checksum, for `url`, and a later date so the
/// set is newer than the built-in one.
fn copy_data_with_checksum(dir: &Path, url: &str, sha256: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for entry in std::fs::read_dir(repo("data")).expect("data/") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_owned();
        let mut text = std::fs::read_to_string(&path).expect("table");
        if name == "checksums.yaml" {
            text = text.replace("read_on: \"2026-12-07\"", "read_on: \"2099-01-01\"");
            text.push_str(&format!(
                "  - {{url: \"{url}\", sha256: {sha256}, source: \"{SOURCE}\"}}\n"
            ));
        }
        std::fs::write(dir.join(name), text).expect("copy table");
    }
}

#[test]
fn fetch_refuses_a_runfile_whose_first_download_disagrees_with_its_published_checksum() {
    let real = b"#!/bin/sh\necho the real toolkit\n".to_vec();
    let lab = Lab::new(b"#!/bin/sh\necho a tampered toolkit\n", &sha(&real));
    let manifest = lab.manifest();
    let out = lab.run(&["fetch", manifest.to_str().expect("utf-8")]);
    assert_ne!(out.code, 0, "{out:?}");
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("disagrees with the checksum published"),
        "{all}"
    );
    assert!(all.contains(SOURCE), "{all}");
    assert!(all.contains(&sha(&real)), "{all}");
    let toolkit = lab.stack().join("toolkit");
    let left: Vec<_> = std::fs::read_dir(&toolkit)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "nothing archived under the toolkit: {left:?}"
    );
    let lock = std::fs::read_to_string(lab.stack().join("stack.lock")).unwrap_or_default();
    assert!(!lock.contains(TOOLKIT), "{lock}");
}

#[test]
fn fetch_locks_a_file_matching_its_published_checksum_as_published_and_audit_counts_the_rest() {
    let real = b"#!/bin/sh\necho the real toolkit\n".to_vec();
    let lab = Lab::new(&real, &sha(&real));
    let manifest = lab.manifest();
    let manifest = manifest.to_str().expect("utf-8");
    let out = lab.run(&["fetch", manifest]);
    assert_eq!(out.code, 0, "{out:?}");
    let lock = std::fs::read_to_string(lab.stack().join("stack.lock")).expect("lock");
    let toolkit_entry = lock
        .split("- layer:")
        .find(|e| e.contains(TOOLKIT))
        .expect("toolkit entry");
    assert!(
        toolkit_entry.contains("verified_against:")
            && toolkit_entry.contains(&format!("published ({SOURCE})")),
        "{lock}"
    );
    let driver_entry = lock
        .split("- layer:")
        .find(|e| e.contains(&format!("file: {DRIVER}")) && e.contains("driver"))
        .expect("driver entry");
    assert!(
        driver_entry.contains("verified_against: trust_on_first_use"),
        "{lock}"
    );

    let audit = lab.run(&["audit", manifest]);
    assert_eq!(audit.code, 0, "{audit:?}");
    assert!(
        audit
            .stdout
            .contains("1 verified against a published checksum"),
        "{}",
        audit.stdout
    );
    assert!(
        audit.stdout.contains("2 trusted on first use"),
        "{}",
        audit.stdout
    );
    assert!(
        audit.stdout.contains(&format!("driver/{DRIVER}")),
        "{}",
        audit.stdout
    );

    let json = lab.run(&["audit", manifest, "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let v: Value = serde_json::from_str(&json.stdout).expect("audit JSON");
    assert_eq!(v["trust_on_first_use"], 2, "{v}");
    assert_eq!(v["trust"][0]["published"], 1, "{v}");
    assert_eq!(v["trust"][0]["stack"], STACK, "{v}");
}
