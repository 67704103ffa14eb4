//! `prove` and `doctor` on a fake Windows host (under Wine in CI): the acceptance the Linux
//! stacks pass in `prove.rs` and `doctor.rs`, for a Windows manifest.
//!
//! Wine has no Python, so the library layer is proven by the manifest's own
//! `library.verify: ["cmd", "/c", "exit", "0"]`, and the example is a real Windows program
//! (`tests/windows-fakes/example.c`) that prints `STACKPIN_RESULT` while it moves its own row in
//! the fake nvidia-smi's answers (`nvidia-smi.c`, which loops under `-lms` like the real one).
//! Wine's `powershell.exe` is a stub that prints nothing, so doctor cannot learn the driver's
//! provider and must say so rather than fail for it.
#![cfg(windows)]

use crate::common::OutputStarted;
use std::fs;
use std::path::PathBuf;
use std::process::Output;

use crate::common::text;
use crate::fakes::{WinHost, fake_program};
use crate::server::TestServer;

const DRIVER: &str = "581.15";
const SWAPPED: &str = "590.48";
const DRIVER_EXE: &str = "581.15-desktop-win10-win11-64bit-international-dch-whql.exe";
const TOOLKIT_EXE: &str = "cuda_12.4.1_551.78_windows.exe";
const LIBRARY_EXE: &str = "torch-setup.exe";
const STACK: &str = "fake-windows-prove";

/// How the fake example behaves: its flags after `{batch}`.
#[derive(Clone, Copy)]
enum Example {
    /// Per-process figures, as nvidia-smi gives them for a TCC card.
    PerProcess,
    /// `[N/A]` per-process rows, as under the WDDM driver model.
    Wddm,
    /// Runs out of memory and exits 1.
    OutOfMemory,
    /// A launcher that starts the real example as its child, as a venv's `python.exe` does:
    /// the child holds the memory.
    Launcher,
}

impl Example {
    fn flags(self) -> &'static str {
        match self {
            Example::PerProcess => "",
            Example::Wddm => ", \"wddm\"",
            Example::OutOfMemory => ", \"fail\"",
            Example::Launcher => ", \"launch\"",
        }
    }
}

/// A Windows workstation with the stack in place (driver answering, toolkit in
/// `%ProgramFiles%`, library proven by `verify:`), its installers archived by `fetch`.
struct Bench {
    host: WinHost,
    _server: TestServer,
    manifest: PathBuf,
}

/// A path inside a double-quoted YAML string.
fn yaml_path(path: &std::path::Path) -> String {
    path.display().to_string().replace('\\', "\\\\")
}

impl Bench {
    fn new(example: Example) -> Self {
        let host = WinHost::new()
            .with_nvidia_smi()
            .gpu("NVIDIA GeForce RTX 4090", 24564, "8.9")
            .driver(DRIVER, "13.0")
            .toolkit("12.4.1");
        fs::write(host.nvidia_dir().join("memory.csv"), "7300\n").expect("idle memory");
        fs::write(host.nvidia_dir().join("apps.csv"), "4242, 7000\n").expect("other job");
        let example_exe = host.root().join("example.exe");
        fs::copy(fake_program("example.exe"), &example_exe).expect("copy fake example");
        let server = TestServer::start();
        let exe = fs::read(fake_program("installer.exe")).expect("fake installer");
        for name in [DRIVER_EXE, TOOLKIT_EXE, LIBRARY_EXE] {
            server.file(name, &exe);
        }
        let yaml = format!(
            "schema: 1\nname: {STACK}\nos: windows\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"{{installer}}\", \"0\", \"driver\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"{{installer}}\", \"0\", \"toolkit\", \"-s\", \"-n\", \"nvcc_12.4\", \"cudart_12.4\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python\n  installers:\n    - url: {l}\n  run: [\"{{installer}}\", \"0\", \"library\"]\n  verify: [\"cmd\", \"/c\", \"exit\", \"0\"]\n\
             example:\n  run: [\"{example}\", \"{{batch}}\"{flags}]\n  timeout: 60s\n\
             vram:\n  line: 0.8\n  batches: [16, 32, 64, 96, 128, 256]\n",
            d = server.url(DRIVER_EXE),
            t = server.url(TOOLKIT_EXE),
            l = server.url(LIBRARY_EXE),
            root = yaml_path(&host.toolkit_root("12.4.1")),
            example = yaml_path(&example_exe),
            flags = example.flags(),
        );
        let manifest = host.root().join("windows stack.yaml");
        fs::write(&manifest, yaml).expect("manifest");
        let bench = Self {
            host,
            _server: server,
            manifest,
        };
        let fetched = bench.run(&["fetch"]);
        assert_eq!(fetched.status.code(), Some(0), "fetch: {}", text(&fetched));
        bench
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output_started().expect("stackpin runs")
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.host.stackpin(args.iter().copied());
        cmd.arg(&self.manifest)
            .env("STACKPIN_ARCHIVE", self.host.archive())
            .env("STACKPIN_RETRY_BASE_MS", "0");
        cmd
    }

    fn stack(&self) -> PathBuf {
        self.host.root().join("installers").join(STACK)
    }

    fn record(&self) -> serde_json::Value {
        let text = fs::read_to_string(self.stack().join("proven-stack.yaml")).expect("record");
        serde_saphyr::from_str(&text).expect("record parses")
    }
}

fn driver_check(doc: &serde_json::Value) -> serde_json::Value {
    doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == "driver")
        .expect("driver check")
        .clone()
}

#[test]
fn prove_on_windows_records_the_examples_own_peak_and_draws_the_plot() {
    let bench = Bench::new(Example::PerProcess);
    let out = bench.run(&["prove"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let doc = bench.record();
    assert_eq!(doc["peak"]["outside_mib"], 2560, "{doc}");
    assert_eq!(doc["peak"]["outside_source"], "per_process", "{doc}");
    assert_eq!(doc["peak"]["authority"], "outside", "{doc}");
    assert_eq!(doc["per_sample_mib"], 40.0, "2,560 MiB ÷ 64");
    assert_eq!(doc["host"]["os"], "windows", "{doc}");
    assert_eq!(doc["gpus"][0]["driver"], DRIVER, "{doc}");
    assert_eq!(doc["toolkit"]["version"], "12.4.1", "{doc}");
    // No Python to ask: the library's facts are the manifest's pins, proven by `verify:`.
    assert_eq!(doc["library"]["version"], "2.5.1", "{doc}");
    let svg = fs::read_to_string(bench.stack().join("proven-stack.svg")).expect("svg");
    assert!(
        svg.contains("<svg"),
        "an SVG: {}",
        &svg[..svg.len().min(200)]
    );
    assert!(all.contains("Largest batch under the line"), "{all}");
}

#[test]
fn an_example_launcher_whose_child_holds_the_memory_is_measured_per_process() {
    let bench = Bench::new(Example::Launcher);
    let out = bench.run(&["prove", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json record");
    assert_eq!(
        doc["peak"]["outside_source"], "per_process",
        "the child is found in the launcher's tree: {doc}"
    );
    assert_eq!(doc["peak"]["outside_mib"], 2560, "{doc}");
}

#[test]
fn wddm_na_rows_on_windows_fall_back_to_the_cards_delta_over_the_idle_baseline() {
    let bench = Bench::new(Example::Wddm);
    let out = bench.run(&["prove", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json record");
    assert_eq!(doc["peak"]["outside_source"], "device_delta", "{doc}");
    assert_eq!(doc["peak"]["baseline_mib"], 7300, "{doc}");
    assert_eq!(doc["peak"]["outside_mib"], 2560, "{doc}");
    let notes = doc["peak"]["notes"].to_string();
    assert!(notes.contains("[N/A]"), "says why it fell back: {notes}");
    assert_eq!(
        bench.record()["peak"],
        doc["peak"],
        "the record on disk says the same"
    );
    assert!(bench.stack().join("proven-stack.svg").is_file());
}

#[test]
fn a_failing_example_on_windows_leaves_no_record_and_says_why() {
    let bench = Bench::new(Example::OutOfMemory);
    let out = bench.run(&["prove"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(!bench.stack().join("proven-stack.yaml").exists(), "{all}");
    assert!(!bench.stack().join("proven-stack.svg").exists(), "{all}");
    let failed = fs::read_to_string(bench.stack().join("failed-run.yaml")).expect("failed-run");
    assert!(failed.contains("memory"), "explained by layer: {failed}");
    assert!(all.contains("out of memory"), "{all}");
}

#[test]
fn a_swapped_driver_on_windows_fails_doctor_with_both_versions_and_an_unknown_provider() {
    let bench = Bench::new(Example::Wddm);
    let proved = bench.run(&["prove"]);
    assert_eq!(proved.status.code(), Some(0), "{}", text(&proved));
    let healthy = bench.run(&["doctor"]);
    assert_eq!(healthy.status.code(), Some(0), "{}", text(&healthy));

    // A feature update replaced the proven driver.
    bench.host.set_driver("ok", SWAPPED, "13.0");
    let out = bench.run(&["doctor"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(&format!("driver {DRIVER} → {SWAPPED}")),
        "{all}"
    );
    assert!(
        all.contains("driver provider unknown (PowerShell was not found on PATH)"),
        "{all}"
    );

    // PowerShell where Windows keeps it: under Wine a stub that answers nothing.
    let system32 = system_root().join("system32");
    let wine = system32.join("wineboot.exe").is_file();
    let powershell = system32.join("WindowsPowerShell\\v1.0");
    assert!(
        powershell.join("powershell.exe").is_file(),
        "{}",
        powershell.display()
    );
    let mut cmd = bench.command(&["doctor", "--json"]);
    let path = cmd
        .get_envs()
        .find(|(k, _)| *k == "PATH")
        .and_then(|(_, v)| v)
        .map(std::ffi::OsStr::to_os_string)
        .expect("the fake host sets PATH");
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.push(powershell);
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    let out = cmd.output_started().expect("stackpin runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // One shape for MANIFEST and --all: the stack is the list's one entry.
    let doc = doc["stacks"][0].clone();
    assert_eq!(
        doc["drift"],
        serde_json::json!([{"layer": "driver", "recorded": DRIVER, "now": SWAPPED}]),
        "{doc}"
    );
    let found = driver_check(&doc)["found"].to_string();
    if wine {
        assert!(found.contains("driver provider unknown"), "{found}");
        assert!(found.contains("printed nothing"), "{found}");
    } else {
        // Real Windows answers for its own adapters, whatever they are.
        assert!(found.contains("provider"), "{found}");
    }
}

fn system_root() -> PathBuf {
    std::env::var_os("SystemRoot").map_or_else(|| PathBuf::from("C:\\windows"), PathBuf::from)
}
