//! `stackpin data` and `stackpin outdated` end to end: a copy of `data/` with one driver more is
//! packed, served on loopback, installed with its sha256, and used by `pin`, `data show` and
//! `outdated`; bad sets are refused with the previous set still in use; `data reset` goes back.
//! Every test has its own data folder (`STACKPIN_DATA_DIR`), never the user's.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Outcome, TestContext, repo, run};
#[cfg(unix)]
use crate::fakes::FakeHost;
use crate::server::{Route, TestServer};

/// The driver the newer set adds, in the branch of the newest built-in Linux driver.
const NEW_DRIVER: &str = "595.80.01";
const NEW_DATE: &str = "2026-12-20";

/// A temp folder with a data folder (`data/`) for stackpin and room for sets.
struct Lab {
    ctx: TestContext,
}

impl Lab {
    fn new() -> Self {
        Self {
            ctx: TestContext::new(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.ctx.path(rel)
    }

    fn data_dir(&self) -> PathBuf {
        self.path("stackpin-data")
    }

    /// `stackpin ARGS` with this lab's data folder.
    fn stackpin(&self, args: &[&str]) -> Command {
        let mut cmd = self.ctx.stackpin(args);
        cmd.env("STACKPIN_DATA_DIR", self.data_dir())
            .env("STACKPIN_RETRY_BASE_MS", "0");
        cmd
    }

    fn run(&self, args: &[&str]) -> Outcome {
        run(&mut self.stackpin(args))
    }

    /// A copy of the repository's `data/` as `name/`, with `edit` applied to drivers.yaml.
    fn copy_data(&self, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
        let dir = self.path(name);
        copy_data_to(&dir, edit);
        dir
    }

    /// Packs a folder; returns the file and its sha256 as `data pack --json` prints them.
    fn pack(&self, dir: &Path, file: &str) -> (PathBuf, String) {
        let out_file = self.path(file);
        let out = self.run(&[
            "data",
            "pack",
            &dir.display().to_string(),
            "-o",
            &out_file.display().to_string(),
            "--json",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        let json: Value = serde_json::from_str(&out.stdout).expect("pack JSON");
        let sha = json["sha256"].as_str().expect("sha256").to_string();
        (out_file, sha)
    }

    /// `data show --json` as a value.
    fn show(&self) -> Value {
        let out = self.run(&["data", "show", "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str(&out.stdout).expect("show JSON")
    }
}

/// Copies the repository's `data/` into `dir`, with `edit` applied to drivers.yaml.
pub fn copy_data_to(dir: &Path, edit: impl Fn(&str) -> String) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for entry in std::fs::read_dir(repo("data")).expect("data/") {
        let path = entry.expect("entry").path();
        let file = path.file_name().expect("name").to_owned();
        let text = std::fs::read_to_string(&path).expect("table");
        let text = if file == "drivers.yaml" {
            edit(&text)
        } else {
            text
        };
        std::fs::write(dir.join(file), text).expect("copy table");
    }
}

/// drivers.yaml with `NEW_DRIVER` on top of the Linux list and the table read on `date`.
fn with_new_driver(date: &str) -> impl Fn(&str) -> String {
    with_driver(date, "linux", NEW_DRIVER)
}

/// drivers.yaml with `driver` on top of the `os` list and the table read on `date`.
pub fn with_driver(date: &str, os: &str, driver: &str) -> impl Fn(&str) -> String {
    let date = date.to_string();
    let list = format!("{os}:");
    let driver = driver.to_string();
    move |text: &str| {
        let mut out = String::new();
        for line in text.lines() {
            if line.starts_with("read_on:") {
                out.push_str(&format!("read_on: \"{date}\"\n"));
                continue;
            }
            out.push_str(line);
            out.push('\n');
            if line == list {
                out.push_str(&format!(
                    "  - {{version: \"{driver}\", evidence: \"test: a newer driver\"}}\n"
                ));
            }
        }
        out
    }
}

fn pin_torch(lab: &Lab) -> Outcome {
    lab.run(&["pin", "--library", "torch==2.5.1", "--os", "linux"])
}

const OLD_DRIVER_STACK: &str = "manifests/torch-2.5.1-cu124-linux.yaml";

#[test]
fn an_updated_set_from_loopback_is_used_by_pin_show_and_outdated_until_reset() {
    let lab = Lab::new();
    let built_in = lab.show();
    assert_eq!(built_in["data"]["source"], "built_in");
    let old_date = built_in["data"]["read_on"]
        .as_str()
        .expect("date")
        .to_string();
    let manifest = repo(OLD_DRIVER_STACK).display().to_string();
    let before = lab.run(&["outdated", &manifest]);
    assert_eq!(
        before.code, 0,
        "nothing newer in the built-in set: {before:?}"
    );

    let dir = lab.copy_data("newer", with_new_driver(NEW_DATE));
    let (file, sha) = lab.pack(&dir, "stackpin-data.json");
    let server = TestServer::start();
    server.file(
        "/sets/stackpin-data.json",
        &std::fs::read(&file).expect("packed"),
    );
    let url = server.url("/sets/stackpin-data.json");
    let update = lab.run(&["data", "update", "--from", &url, "--sha256", &sha]);
    assert_eq!(update.code, 0, "{update:?}");
    assert!(update.stdout.contains(NEW_DATE), "{}", update.stdout);
    assert_eq!(server.hits("/sets/stackpin-data.json").len(), 1);

    let pinned = pin_torch(&lab);
    assert_eq!(pinned.code, 0, "{pinned:?}");
    assert!(
        pinned
            .stdout
            .contains(&format!("version: \"{NEW_DRIVER}\"")),
        "pin picks the new driver:\n{}",
        pinned.stdout
    );
    assert!(
        pinned
            .stderr
            .contains(&format!("stackpin's data of {NEW_DATE}")),
        "pin's note names the set's date: {}",
        pinned.stderr
    );

    let shown = lab.show();
    assert_eq!(shown["data"]["read_on"], NEW_DATE);
    assert_eq!(shown["data"]["source"], "updated");
    assert_eq!(shown["data"]["sha256"], sha.as_str());
    assert_eq!(shown["from"], url.as_str());
    let human = lab.run(&["data", "show"]);
    assert!(
        human.stdout.contains(&format!("updated set of {NEW_DATE}")),
        "{}",
        human.stdout
    );

    let outdated = lab.run(&["outdated", &manifest]);
    assert_eq!(outdated.code, 1, "{outdated:?}");
    assert!(
        outdated
            .stdout
            .contains(&format!("595.71.05 → {NEW_DRIVER}")),
        "{}",
        outdated.stdout
    );
    assert!(
        outdated.stdout.contains("same branch R595"),
        "{}",
        outdated.stdout
    );
    let json = lab.run(&["outdated", &manifest, "--json"]);
    assert_eq!(json.code, 1);
    let doc: Value = serde_json::from_str(&json.stdout).expect("outdated JSON");
    assert_eq!(doc["data"]["read_on"], NEW_DATE);
    assert_eq!(doc["stacks"][0]["newer"][0]["newer"], NEW_DRIVER);
    assert_eq!(doc["stacks"][0]["newer"][0]["kind"], "driver_same_branch");

    let reset = lab.run(&["data", "reset"]);
    assert_eq!(reset.code, 0, "{reset:?}");
    let back = lab.show();
    assert_eq!(back["data"]["source"], "built_in");
    assert_eq!(back["data"]["read_on"], old_date.as_str());
    assert_eq!(back["data"]["sha256"], built_in["data"]["sha256"]);
    assert!(pin_torch(&lab).stdout.contains("version: \"595.71.05\""));
    assert_eq!(lab.run(&["outdated", &manifest]).code, 0);
}

#[test]
fn a_wrong_sha256_is_refused_and_the_previous_set_stays_in_use() {
    let lab = Lab::new();
    let first = lab.copy_data("first", with_new_driver(NEW_DATE));
    let (first_file, first_sha) = lab.pack(&first, "first.json");
    let ok = lab.run(&[
        "data",
        "update",
        "--from",
        &first_file.display().to_string(),
    ]);
    assert_eq!(ok.code, 0, "{ok:?}");

    let second = lab.copy_data("second", with_new_driver("2027-01-05"));
    let (second_file, second_sha) = lab.pack(&second, "second.json");
    let server = TestServer::start();
    server.file(
        "/second.json",
        &std::fs::read(&second_file).expect("packed"),
    );
    let wrong = first_sha.clone();
    assert_ne!(wrong, second_sha);
    let refused = lab.run(&[
        "data",
        "update",
        "--from",
        &server.url("/second.json"),
        "--sha256",
        &wrong,
    ]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("checksum mismatch"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&second_sha),
        "both hashes shown: {}",
        refused.stderr
    );
    let shown = lab.show();
    assert_eq!(
        shown["data"]["sha256"],
        first_sha.as_str(),
        "the previous set stays"
    );
    assert_eq!(shown["data"]["read_on"], NEW_DATE);
    let leftovers: Vec<_> = std::fs::read_dir(lab.data_dir())
        .expect("data dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "the set and its origin note only: {leftovers:?}"
    );
}

#[test]
fn an_invalid_set_is_refused_and_the_previous_set_stays_in_use() {
    let lab = Lab::new();
    let good = lab.copy_data("good", with_new_driver(NEW_DATE));
    let (good_file, good_sha) = lab.pack(&good, "good.json");
    assert_eq!(
        lab.run(&["data", "update", "--from", &good_file.display().to_string()])
            .code,
        0
    );

    // A table the loader cannot read: `pack` refuses the folder...
    let broken = lab.copy_data("broken", |text| {
        with_new_driver("2027-02-01")(text).replace("version: \"590.48.01\"", "version: [590]")
    });
    let packed = lab.run(&[
        "data",
        "pack",
        &broken.display().to_string(),
        "-o",
        &lab.path("broken.json").display().to_string(),
    ]);
    assert_eq!(packed.code, 1, "{packed:?}");
    assert!(packed.stderr.contains("drivers.yaml"), "{}", packed.stderr);
    assert!(!lab.path("broken.json").exists());

    // ...and a packed set with a required table removed is refused by `update`.
    let mut set: Value =
        serde_json::from_slice(&std::fs::read(&good_file).expect("packed")).expect("JSON");
    set["tables"]
        .as_object_mut()
        .expect("tables")
        .remove("cuda.yaml");
    let bad = serde_json::to_vec(&set).expect("encode");
    let server = TestServer::start();
    server.file("/bad.json", &bad);
    let refused = lab.run(&["data", "update", "--from", &server.url("/bad.json")]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("cuda.yaml"), "{}", refused.stderr);
    assert!(refused.stderr.contains("missing"), "{}", refused.stderr);
    let shown = lab.show();
    assert_eq!(shown["data"]["sha256"], good_sha.as_str());
    assert!(pin_torch(&lab).stdout.contains(NEW_DRIVER));

    // Not a set at all.
    std::fs::write(lab.path("junk.json"), "read_on: 2027-01-01\n").expect("junk");
    let junk = lab.run(&[
        "data",
        "update",
        "--from",
        &lab.path("junk.json").display().to_string(),
    ]);
    assert_eq!(junk.code, 1, "{junk:?}");
    assert!(
        junk.stderr.contains("stackpin data pack"),
        "{}",
        junk.stderr
    );
    assert_eq!(lab.show()["data"]["sha256"], good_sha.as_str());
}

#[test]
fn an_older_set_is_refused_unless_allowed() {
    let lab = Lab::new();
    let old = lab.copy_data("old", |text| {
        // Every table dates the set: age them all through drivers.yaml's edit and a rewrite.
        text.to_string()
    });
    for entry in std::fs::read_dir(&old).expect("old") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("table");
        let aged: String = text
            .lines()
            .map(|l| {
                if l.starts_with("read_on:") {
                    "read_on: \"2020-01-01\"".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, aged + "\n").expect("age");
    }
    let (file, _) = lab.pack(&old, "old.json");
    let file = file.display().to_string();
    let refused = lab.run(&["data", "update", "--from", &file]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("--allow-older"),
        "{}",
        refused.stderr
    );
    assert_eq!(lab.show()["data"]["source"], "built_in");
    let allowed = lab.run(&["data", "update", "--from", &file, "--allow-older"]);
    assert_eq!(allowed.code, 0, "{allowed:?}");
    assert_eq!(lab.show()["data"]["read_on"], "2020-01-01");
}

#[test]
fn plain_http_to_another_host_needs_a_sha256() {
    let lab = Lab::new();
    // Refused before any connection: the host does not need to exist.
    let out = lab.run(&[
        "data",
        "update",
        "--from",
        "http://lab-mirror.invalid/stackpin-data.json",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("plain http"), "{}", out.stderr);
    assert!(!lab.data_dir().join("release-data.json").exists());
}

#[test]
fn a_download_cut_short_is_retried_and_still_verified() {
    let lab = Lab::new();
    let dir = lab.copy_data("newer", with_new_driver(NEW_DATE));
    let (file, sha) = lab.pack(&dir, "set.json");
    let server = TestServer::start();
    server.route(
        "/set.json",
        Route {
            body: std::fs::read(&file).expect("packed"),
            cut_after: Some(4096),
            cut_times: 1,
            ..Route::default()
        },
    );
    let out = lab.run(&[
        "data",
        "update",
        "--from",
        &server.url("/set.json"),
        "--sha256",
        &sha,
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        server.hits("/set.json").len() >= 2,
        "the cut attempt was retried"
    );
    assert_eq!(lab.show()["data"]["sha256"], sha.as_str());
    let leftovers: Vec<_> = std::fs::read_dir(lab.data_dir())
        .expect("data dir")
        .map(|e| e.expect("entry").file_name())
        .filter(|n| n.to_string_lossy().contains("partial"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no partial left behind: {leftovers:?}"
    );
}

#[test]
fn a_download_that_fails_is_an_external_error_and_installs_nothing() {
    let lab = Lab::new();
    let server = TestServer::start();
    let out = lab.run(&["data", "update", "--from", &server.url("/missing.json")]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(lab.show()["data"]["source"], "built_in");
}

#[test]
fn the_repository_data_folder_packs_to_the_built_in_sha256() {
    let lab = Lab::new();
    let (_, sha) = lab.pack(&repo("data"), "built-in.json");
    assert_eq!(lab.show()["data"]["sha256"], sha.as_str());
}

#[test]
fn json_outputs_and_version_name_the_set_in_use() {
    let lab = Lab::new();
    let date = lab.show()["data"]["read_on"]
        .as_str()
        .expect("date")
        .to_string();
    let check = lab.run(&[
        "check",
        &repo(OLD_DRIVER_STACK).display().to_string(),
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&check.stdout).expect("check JSON");
    assert_eq!(doc["data"]["read_on"], date.as_str());
    assert_eq!(doc["data"]["source"], "built_in");
    let pin = lab.run(&[
        "pin",
        "--library",
        "torch==2.5.1",
        "--os",
        "linux",
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&pin.stdout).expect("pin JSON");
    assert_eq!(doc["data"]["sha256"].as_str().map(str::len), Some(64));
    let version = lab.run(&["--version"]);
    assert!(
        version
            .stdout
            .contains(&format!("release data of {date}, built-in")),
        "{}",
        version.stdout
    );
}

/// The shipped CUDA 11.8 stack pins R580, the last branch for Maxwell, Pascal and Volta.
const R580_STACK: &str = "manifests/torch-2.7.1-cu118-linux.yaml";

#[cfg(unix)]
fn outdated_on(host: &FakeHost, manifest: &str, json: bool) -> Outcome {
    let mut args = vec!["outdated".to_string(), repo(manifest).display().to_string()];
    if json {
        args.push("--json".into());
    }
    run(&mut host.stackpin(&args))
}

#[cfg(unix)]
#[test]
fn a_newer_branch_is_offered_for_a_card_it_still_drives() {
    let host = FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver("580.95.05", "13.0");
    let out = outdated_on(&host, R580_STACK, true);
    assert_eq!(out.code, 1, "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let newer = &doc["stacks"][0]["newer"];
    let branch = newer
        .as_array()
        .expect("list")
        .iter()
        .find(|n| n["kind"] == "driver_newer_branch")
        .expect("a newer branch");
    assert_eq!(branch["newer"], "595.71.05");
    assert!(
        branch["meaning"]
            .as_str()
            .is_some_and(|m| m.contains("NVIDIA L4")),
        "{branch}"
    );
}

#[cfg(unix)]
#[test]
fn no_newer_branch_is_offered_past_the_last_one_for_the_card() {
    let host = FakeHost::new()
        .gpu("NVIDIA GeForce GTX 1080", 8192, "6.1")
        .driver("580.95.05", "13.0");
    let out = outdated_on(&host, R580_STACK, false);
    assert_eq!(out.code, 0, "nothing the card can use is newer: {out:?}");
    assert!(out.stdout.contains("nothing newer"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("R580 is the last branch for NVIDIA GeForce GTX 1080 (Pascal)"),
        "{}",
        out.stdout
    );
}

#[test]
fn outdated_all_reads_every_fetched_stack() {
    let lab = Lab::new();
    let archive = lab.path("installers");
    for (name, manifest) in [
        ("torch-2.5.1-cu124-linux", OLD_DRIVER_STACK),
        ("torch-2.7.1-cu118-linux", R580_STACK),
    ] {
        std::fs::create_dir_all(archive.join(name)).expect("stack dir");
        std::fs::copy(repo(manifest), archive.join(name).join("manifest.yaml")).expect("copy");
    }
    let archive = archive.display().to_string();
    let out = lab.run(&["outdated", "--all", "--archive", &archive, "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        doc["stacks"].as_array().map(Vec::len),
        Some(2),
        "{}",
        out.stdout
    );
    assert_eq!(doc["outdated"], out.code == 1);
}
