//! `status` on a fake host, through a whole `up`: nothing yet, a driver waiting for its reboot, a
//! proven stack, and a corrupted installer. The fakes are the ones `install.rs` and `prove.rs`
//! use: installers served over loopback that change the fake host, and an example that prints
//! `STACKPIN_RESULT` while driving the fake nvidia-smi's per-process memory rows.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::fakes::{DriverMode, FakeHost};
use crate::server::TestServer;

const DRIVER: &str = "595.71.05";
const STACK: &str = "fake-status-stack";

struct Station {
    host: FakeHost,
    _server: TestServer,
    manifest: PathBuf,
}

fn installers(host: &FakeHost) -> [(&'static str, String); 3] {
    let torch = "import types\n__version__ = '2.5.1+cu124'\nversion = types.SimpleNamespace(cuda='12.4')\n\
         backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 90100))\n\
         cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1, \
         get_arch_list=lambda: ['sm_89'], get_device_capability=lambda i=0: (8, 9), \
         get_device_name=lambda i=0: 'NVIDIA L4')\n";
    [
        (
            "NVIDIA-Linux-x86_64-595.71.05.run",
            // The new driver is on disk; the running module stays the old one until the reboot.
            format!(
                "#!/bin/sh\nprintf 'mode=mismatch\\ndriver={DRIVER}\\ncuda=12.8\\n' > '{}'\n",
                host.driver_state_file().display()
            ),
        ),
        (
            "cuda_12.4.1_550.54.15_linux.run",
            format!(
                "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --toolkitpath=*) dir=\"${{a#--toolkitpath=}}\";; esac; done\n\
                 mkdir -p \"$dir/bin\"\nprintf '{{\"cuda\": {{\"version\": \"12.4.1\"}}}}' > \"$dir/version.json\"\n\
                 cp '{}' \"$dir/bin/nvcc\"\n",
                host.nvcc_to_copy("12.4.1").display()
            ),
        ),
        (
            "install-torch.sh",
            format!(
                "#!/bin/sh\nmkdir -p '{py}/torch'\ncat > '{py}/torch/__init__.py' <<'EOF'\n{torch}EOF\n",
                py = host.python_path().display()
            ),
        ),
    ]
}

/// The example's own process peaks at 2,560 MiB at batch 64.
fn example(host: &FakeHost) -> String {
    format!(
        "#!/bin/sh\nnv='{nv}'\n\
         printf '%s\\n' \"$$, 2560\" > \"$nv/apps.csv\"; echo 2560 > \"$nv/memory.csv\"; sleep 0.6\n\
         echo 'STACKPIN_RESULT {{\"batch\": 64, \"peak_reserved_mib\": 2300, \"context_mib\": 260}}'\n\
         : > \"$nv/apps.csv\"; echo 0 > \"$nv/memory.csv\"\n",
        nv = host.nvidia().display()
    )
}

impl Station {
    fn new() -> Self {
        let host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9");
        host.set_driver_state(DriverMode::NoDriver, "", "");
        let server = TestServer::start();
        for (name, body) in installers(&host) {
            server.file(name, body.as_bytes());
        }
        let script = host.root().join("example.sh");
        std::fs::write(&script, example(&host)).expect("example");
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nname: {STACK}\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"{script}\", \"{{batch}}\"]\n  timeout: 60s\n\
             vram:\n  line: 0.8\n  batches: [16, 32, 64, 128]\n",
            d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            root = host.toolkit_root("12.4.1").display(),
            script = script.display(),
        );
        std::fs::write(&manifest, text).expect("manifest");
        Self {
            host,
            _server: server,
            manifest,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.host
            .installing(args)
            .output_started()
            .expect("stackpin runs")
    }

    fn manifest(&self) -> &str {
        self.manifest.to_str().expect("utf-8 path")
    }

    fn up(&self) -> Output {
        let out = self.run(&["up", self.manifest(), "--yes", "--json"]);
        assert_eq!(out.status.code(), Some(0), "up: {}", text(&out));
        out
    }

    /// `status --all --json`, its exit code and the one stack it must list.
    fn status(&self) -> (Option<i32>, Value) {
        let out = self.run(&["status", "--all", "--json"]);
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", text(&out)));
        let stacks = doc["stacks"].as_array().expect("stacks");
        assert_eq!(stacks.len(), 1, "{doc}");
        assert_eq!(stacks[0]["stack"], STACK);
        (out.status.code(), stacks[0].clone())
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn status_of_an_archive_with_no_stack_is_an_empty_list() {
    let station = Station::new();
    // An archive folder that exists and is empty (a missing one is an input error, exit 2).
    std::fs::create_dir_all(station.host.root().join("installers")).expect("archive folder");
    let out = station.run(&["status", "--all", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["stacks"], serde_json::json!([]));
    assert_eq!(doc["ok"], true);
    let human = station.run(&["status"]);
    assert!(text(&human).contains("no stack yet"), "{}", text(&human));
}

#[test]
fn status_follows_up_from_the_pending_reboot_to_the_proven_record() {
    let station = Station::new();
    let first = station.up();
    let doc: Value = serde_json::from_slice(&first.stdout).expect("up json");
    assert_eq!(doc["reboot_required"], true, "{doc}");

    let (code, stack) = station.status();
    assert_eq!(code, Some(0), "a pending reboot is not a problem: {stack}");
    assert_eq!(stack["stage"], "reboot_pending", "{stack}");
    assert_eq!(stack["lock"], true);
    assert_eq!(stack["audit"]["ok"], 3, "{stack}");
    assert_eq!(
        stack["install"]["layers"]["driver"]["status"],
        "reboot_pending"
    );
    assert_eq!(stack["proven"], Value::Null);

    // The reboot: the new driver's module is the running one now.
    station
        .host
        .set_driver_state(DriverMode::Ok, DRIVER, "12.8");
    let second = station.up();
    let doc: Value = serde_json::from_slice(&second.stdout).expect("up json");
    assert_eq!(doc["reboot_required"], false, "{doc}");

    let (code, stack) = station.status();
    assert_eq!(code, Some(0), "{stack}");
    assert_eq!(stack["stage"], "proven", "{stack}");
    for layer in ["driver", "toolkit", "library"] {
        assert_eq!(
            stack["install"]["layers"][layer]["status"], "done",
            "{stack}"
        );
    }
    let proven = &stack["proven"];
    assert_eq!(proven["peak_mib"], 2560.0, "{stack}");
    assert_eq!(proven["batch"], 64);
    assert_eq!(proven["gpu"], "NVIDIA L4");
    // 2,560 MiB ÷ 64 = 40 MiB a sample; 80% of 23,034 MiB holds 460 samples: 128 is the largest.
    assert_eq!(proven["largest_safe_batch"], 128, "{stack}");
    let record = PathBuf::from(proven["record"].as_str().expect("record path"));
    assert!(record.is_file(), "{}", record.display());

    let human = station.run(&["status"]);
    let all = text(&human);
    assert!(all.contains(&format!("{STACK}: proven")), "{all}");
    assert!(all.contains("largest safe batch 128"), "{all}");
}

#[test]
fn a_corrupt_installer_makes_status_exit_1_and_counts_it() {
    let station = Station::new();
    let fetched = station.run(&["fetch", station.manifest()]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let (code, stack) = station.status();
    assert_eq!((code, &stack["stage"]), (Some(0), &Value::from("fetched")));

    let file = station
        .host
        .root()
        .join("installers")
        .join(STACK)
        .join("toolkit/cuda_12.4.1_550.54.15_linux.run");
    let mut perms = std::fs::metadata(&file).expect("archived").permissions();
    #[allow(clippy::permissions_set_readonly_false)] // a test tampering with its own temp file
    perms.set_readonly(false);
    std::fs::set_permissions(&file, perms).expect("writable");
    std::fs::write(&file, "#!/bin/sh\necho tampered\n").expect("tamper");

    let (code, stack) = station.status();
    assert_eq!(code, Some(1), "{stack}");
    assert_eq!(stack["audit"]["corrupt"], 1, "{stack}");
    assert_eq!(stack["audit"]["ok"], 2, "{stack}");
    let human = station.run(&["status", station.manifest()]);
    assert_eq!(human.status.code(), Some(1));
    assert!(text(&human).contains("1 corrupt"), "{}", text(&human));
}
