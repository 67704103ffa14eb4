//! `doctor` and `repair` on a proven fake host: the install tests' fake installers (served over
//! loopback, fetched into the archive, logging their layer to `order.log`) and the prove tests'
//! fake example, so a repair really reinstalls from the archive and really proves again.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::Output;

use crate::fakes::{DriverMode, FakeHost, FakeTorch};
use crate::install::{driver_script, library_script, order_log, toolkit_script};
use crate::prove::example_script;
use crate::server::TestServer;

const DRIVER: &str = "595.71.05";
const SWAPPED: &str = "590.48.01";

/// A host with the whole stack in place, its installers archived, installed and proven.
pub(crate) struct Clinic {
    pub(crate) host: FakeHost,
    _server: TestServer,
    pub(crate) manifest: PathBuf,
}

impl Clinic {
    pub(crate) fn proven() -> Self {
        let host = FakeHost::l4_workstation();
        std::fs::write(host.nvidia().join("memory.csv"), "7300\n").expect("idle memory");
        std::fs::write(host.nvidia().join("apps.csv"), "4242, 7000\n").expect("other job");
        let script = host.root().join("example.sh");
        std::fs::write(&script, example_script(&host, false, false)).expect("example");
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
            "schema: 1\nname: fake-doctor\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"{script}\", \"{{batch}}\"]\n  timeout: 60s\n\
             vram:\n  line: 0.8\n  batches: [16, 32, 64, 96, 128, 256, 512]\n",
            d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            root = host.toolkit_root("12.4.1").display(),
            script = script.display(),
        );
        std::fs::write(&manifest, yaml).expect("manifest");
        let clinic = Self {
            host,
            _server: server,
            manifest,
        };
        for step in [&["fetch"][..], &["install", "--yes"], &["prove"]] {
            let out = clinic.run(step);
            assert!(out.status.success(), "{step:?}: {}", text(&out));
        }
        clinic.clear_order();
        clinic
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.host
            .installing(
                args.iter()
                    .copied()
                    .chain([self.manifest.to_str().expect("utf-8 path")]),
            )
            .output_started()
            .expect("stackpin runs")
    }

    pub(crate) fn archive(&self) -> PathBuf {
        self.host.archive()
    }

    fn record(&self) -> String {
        std::fs::read_to_string(self.archive().join("fake-doctor/proven-stack.yaml"))
            .expect("record")
    }

    fn order(&self) -> Vec<String> {
        std::fs::read_to_string(order_log(&self.host))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn clear_order(&self) {
        let _ = std::fs::remove_file(order_log(&self.host));
    }

    /// A fake `dpkg` that says the NVIDIA utilities package owns nvidia-smi, and a fake
    /// `apt-mark` that logs what it was asked to hold.
    fn packaged_driver(&self) -> PathBuf {
        let held = self.host.root().join("held.log");
        let bin = self.host.bin();
        write_script(
            &bin.join("dpkg"),
            "#!/bin/sh\necho \"nvidia-utils-595:amd64: $2\"\n",
        );
        write_script(
            &bin.join("apt-mark"),
            &format!("#!/bin/sh\necho \"$*\" >> '{}'\n", held.display()),
        );
        held
    }
}

fn write_script(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn proven_at(record: &str) -> String {
    let doc: serde_json::Value = serde_saphyr::from_str(record).expect("record parses");
    doc["proven_at"].as_str().expect("proven_at").to_string()
}

#[test]
fn a_proven_host_passes_every_check_and_json_lists_all_eight() {
    let clinic = Clinic::proven();
    let out = clinic.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let checks: Vec<(&str, &str)> = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        checks,
        [
            ("driver", "pass"),
            ("toolkit", "pass"),
            ("library", "pass"),
            ("install", "pass"),
            ("example", "pass"),
            ("vram", "pass"),
            ("archive", "pass"),
            // No inference stack and no explicit `role: training`: reported, never failing.
            ("deployment", "unknown"),
        ],
        "{doc}"
    );
    assert_eq!(doc["drift"], serde_json::json!([]));
    let vram = &doc["checks"][5]["found"];
    assert!(
        vram.as_str()
            .is_some_and(|f| f.contains("largest safe batch")),
        "{vram}"
    );
}

#[test]
fn a_swapped_driver_fails_doctor_and_repair_reinstalls_only_the_driver_then_proves_again() {
    let clinic = Clinic::proven();
    let before = proven_at(&clinic.record());
    // An unattended upgrade (or a feature update) replaced the proven driver.
    clinic
        .host
        .set_driver_state(DriverMode::Ok, SWAPPED, "12.8");

    let doctor = clinic.run(&["doctor"]);
    let all = text(&doctor);
    assert_eq!(doctor.status.code(), Some(1), "{all}");
    assert!(all.contains("driver 595.71.05 → 590.48.01"), "{all}");

    let repair = clinic.run(&["repair", "--yes"]);
    let all = text(&repair);
    assert_eq!(repair.status.code(), Some(0), "{all}");
    assert_eq!(
        clinic.order(),
        ["driver"],
        "only the driver installer: {all}"
    );
    assert!(
        all.contains("reboot"),
        "the new module needs a reboot: {all}"
    );

    // The reboot loads the reinstalled driver; the same command finishes the repair.
    clinic.host.set_driver_state(DriverMode::Ok, DRIVER, "12.8");
    let finish = clinic.run(&["repair", "--yes"]);
    let all = text(&finish);
    assert_eq!(finish.status.code(), Some(0), "{all}");
    assert_eq!(clinic.order(), ["driver"], "nothing else ran: {all}");
    let after = proven_at(&clinic.record());
    assert!(after > before, "a new record: {before} → {after}");
    // Human output reads the record's times to the second (no nanoseconds).
    let shown = |t: &str| format!("{} UTC", t.get(..19).unwrap_or(t).replace('T', " "));
    assert!(
        all.contains(&format!(
            "proven {} → proven {}",
            shown(&before),
            shown(&after)
        )),
        "{all}"
    );

    let doctor = clinic.run(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
}

#[test]
fn a_deleted_toolkit_folder_is_reinstalled_alone_and_the_driver_package_is_held() {
    let clinic = Clinic::proven();
    let held = clinic.packaged_driver();
    std::fs::remove_dir_all(clinic.host.toolkit_root("12.4.1")).expect("delete toolkit");

    let doctor = clinic.run(&["doctor"]);
    let all = text(&doctor);
    assert_eq!(doctor.status.code(), Some(1), "{all}");
    assert!(all.contains("toolkit 12.4.1 → missing"), "{all}");

    let repair = clinic.run(&["repair", "--yes", "--apply-guard"]);
    let all = text(&repair);
    assert_eq!(repair.status.code(), Some(0), "{all}");
    assert_eq!(clinic.order(), ["toolkit"], "{all}");
    assert!(all.contains("toolkit  missing"), "before → after: {all}");
    assert!(
        clinic
            .host
            .toolkit_root("12.4.1")
            .join("version.json")
            .is_file(),
        "the folder is back"
    );
    assert_eq!(
        std::fs::read_to_string(&held).expect("apt-mark ran").trim(),
        "hold nvidia-utils-595"
    );

    let doctor = clinic.run(&["doctor"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
}

#[test]
fn a_corrupted_archive_fails_the_archive_check_and_repair_refuses_it() {
    let clinic = Clinic::proven();
    let file = clinic
        .archive()
        .join("fake-doctor/toolkit/cuda_12.4.1_550.54.15_linux.run");
    let mut perms = std::fs::metadata(&file).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&file, perms).expect("writable");
    std::fs::write(&file, "#!/bin/sh\necho bitrot\n").expect("corrupt");

    let out = clinic.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let archive = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == "archive")
        .expect("archive check")
        .clone();
    assert_eq!(archive["status"], "fail", "{archive}");
    let found = archive["found"].as_str().expect("found");
    assert!(
        found.contains("toolkit/cuda_12.4.1_550.54.15_linux.run corrupt"),
        "{found}"
    );

    // With the toolkit gone too, repair must not run the corrupt file.
    std::fs::remove_dir_all(clinic.host.toolkit_root("12.4.1")).expect("delete toolkit");
    let repair = clinic.run(&["repair", "--yes"]);
    let all = text(&repair);
    assert_eq!(repair.status.code(), Some(1), "{all}");
    assert!(all.contains("--fetch"), "{all}");
    assert!(
        clinic.order().is_empty(),
        "never executed: {:?}",
        clinic.order()
    );
}

#[test]
fn doctor_all_walks_every_stack_under_the_archive() {
    let clinic = Clinic::proven();
    let out = clinic
        .host
        .stackpin(["doctor", "--all", "--json"])
        .env("STACKPIN_ARCHIVE", clinic.archive())
        .output_started()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["ok"], true);
    let names: Vec<&str> = doc["stacks"]
        .as_array()
        .expect("stacks")
        .iter()
        .filter_map(|s| s["stack"].as_str())
        .collect();
    assert_eq!(names, ["fake-doctor"]);
}

#[test]
fn a_stack_never_proven_fails_with_the_command_that_proves_it() {
    let clinic = Clinic::proven();
    std::fs::remove_file(clinic.archive().join("fake-doctor/proven-stack.yaml")).expect("rm");
    let out = clinic.run(&["doctor"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("no proven-stack record"), "{all}");
    assert!(all.contains("stackpin prove"), "{all}");
}

fn check_of<'a>(doc: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["check"] == id))
        .unwrap_or(&serde_json::Value::Null)
}

#[test]
fn doctor_fails_when_the_library_no_longer_imports() {
    let clinic = Clinic::proven();
    clinic.host.write_package(
        "torch",
        "raise ImportError('libcudnn.so.9: cannot open shared object file')\n",
    );
    let out = clinic.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let library = check_of(&doc, "library");
    assert_eq!(library["status"], "fail", "{doc}");
    assert!(
        library["found"]
            .as_str()
            .is_some_and(|f| f.contains("libcudnn.so.9")),
        "{library}"
    );
}

#[test]
fn doctor_fails_when_the_library_sees_no_gpu_and_points_at_the_driver() {
    let clinic = Clinic::proven();
    clinic.host.write_torch(&FakeTorch {
        available: false,
        device_count: 0,
        ..FakeTorch::default()
    });
    let out = clinic.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let library = check_of(&doc, "library");
    assert_eq!(library["status"], "fail", "{doc}");
    assert!(
        library["fix"]
            .as_str()
            .is_some_and(|f| f.contains("sees no GPU — the driver layer")),
        "{library}"
    );
}

#[test]
fn doctor_fails_when_state_yaml_says_a_layer_failed() {
    let clinic = Clinic::proven();
    let state = clinic.archive().join("fake-doctor/state.yaml");
    let text0 = std::fs::read_to_string(&state).expect("state.yaml");
    let doc: serde_json::Value = serde_saphyr::from_str(&text0).expect("state parses");
    let at = doc["layers"]["library"]["at"]
        .as_str()
        .expect("library step")
        .to_string();
    let failed = text0.replacen("status: done", "status: failed", 3);
    std::fs::write(&state, failed).expect("a failed library step");
    let out = clinic.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let install = check_of(&doc, "install");
    assert_eq!(install["status"], "fail", "{doc}");
    let found = install["found"].as_str().unwrap_or_default();
    assert!(found.contains("library: failed at"), "{found}");
    assert!(found.contains(&at), "the step's time: {found}");
}

#[test]
fn a_bare_host_names_the_missing_driver_first() {
    let host = FakeHost::new().without_nvidia_smi();
    let manifest = crate::common::repo("manifests/torch-2.5.1-cu124-linux.yaml");
    let out = host
        .stackpin(["doctor", manifest.to_str().expect("utf-8"), "--json"])
        .env("STACKPIN_ARCHIVE", host.root().join("installers"))
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let first = &doc["checks"][0];
    assert_eq!(first["check"], "driver", "{doc}");
    assert_eq!(first["status"], "fail", "{doc}");
    assert!(
        first["found"]
            .as_str()
            .is_some_and(|f| f.contains("nvidia-smi")),
        "{first}"
    );
    assert!(
        first["fix"]
            .as_str()
            .is_some_and(|f| f.contains("595.71.05")),
        "{first}"
    );
}

#[test]
fn the_archive_count_is_the_locks_not_the_folders() {
    let clinic = Clinic::proven();
    let driver_dir = clinic.archive().join("fake-doctor/driver");
    std::fs::write(driver_dir.join("stray.txt"), "not an installer").expect("stray file");
    let out = clinic.run(&["doctor", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    let archive = check_of(&doc, "archive");
    assert!(
        archive["found"]
            .as_str()
            .is_some_and(|f| f.starts_with("3 installer file(s)")),
        "three lock entries: {archive}"
    );
}
