//! `prove` on a fake host: a fake `nvidia-smi` whose per-process memory follows a curve the fake
//! example writes for its own pid, and a fake example that prints `STACKPIN_RESULT`.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::Output;

use crate::common::text;

use crate::fakes::{FakeHost, FakeTorch};

const DRIVER: &str = "595.71.05";

struct Bench {
    host: FakeHost,
    manifest: PathBuf,
}

/// The fake example: its own process rises to `300 + 35 × batch` MiB (2,560 at batch 64) and
/// falls again, while another process on the card holds 7,000 MiB throughout.
pub(crate) fn example_script(host: &FakeHost, wddm: bool, fail: bool) -> String {
    let nv = host.nvidia();
    // The example's own row; another job (pid 4242) holds 7,000 MiB throughout.
    let row = if wddm { "$pid, [N/A]" } else { "$pid, $1" };
    let fail = if fail {
        "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.' >&2; exit 1\n"
    } else {
        ""
    };
    format!(
        "#!/bin/sh\nbatch=$1\npid=$$\nnv='{nv}'\n\
         at() {{ printf '%s\\n' '4242, 7000' \"{row}\" > \"$nv/apps.csv\"; echo $((7300 + $1)) > \"$nv/memory.csv\"; sleep $2; }}\n\
         peak=$((300 + 35 * batch)); [ \"$batch\" = 64 ] && peak=2560\n\
         at $((peak / 3)) 0.4\nat $peak 0.6\nat $((peak / 2)) 0.3\n\
         {fail}\
         echo \"STACKPIN_RESULT {{\\\"batch\\\": $batch, \\\"peak_reserved_mib\\\": 2300, \\\"peak_allocated_mib\\\": 2100, \\\"context_mib\\\": 260, \\\"samples_per_s\\\": 812.5}}\"\n\
         printf '4242, 7000\\n' > \"$nv/apps.csv\"; echo 7300 > \"$nv/memory.csv\"\n",
        nv = nv.display(),
    )
}

impl Bench {
    fn new(wddm: bool, fail: bool) -> Self {
        let host = FakeHost::l4_workstation();
        std::fs::write(host.nvidia().join("memory.csv"), "7300\n").expect("idle memory");
        std::fs::write(host.nvidia().join("apps.csv"), "4242, 7000\n").expect("other job");
        let script = host.root().join("example.sh");
        std::fs::write(&script, example_script(&host, wddm, fail)).expect("example");
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nname: fake-prove\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: http://127.0.0.1:9/NVIDIA-Linux-x86_64-{DRIVER}.run\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: http://127.0.0.1:9/cuda_12.4.1_550.54.15_linux.run\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: http://127.0.0.1:9/install-torch.sh\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"{script}\", \"{{batch}}\"]\n  timeout: 60s\n\
             vram:\n  line: 0.8\n  batches: [16, 32, 64, 96, 128, 256, 512]\n",
            root = host.toolkit_root("12.4.1").display(),
            script = script.display(),
        );
        std::fs::write(&manifest, text).expect("manifest");
        Self { host, manifest }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.host.stackpin(
            args.iter()
                .copied()
                .chain([self.manifest.to_str().expect("utf-8")]),
        );
        cmd.env("STACKPIN_ARCHIVE", self.host.archive());
        cmd.output_started().expect("stackpin runs")
    }

    fn stack(&self) -> PathBuf {
        self.host.root().join("installers/fake-prove")
    }
}

#[test]
fn prove_records_the_peak_nvidia_smi_showed_for_the_example_process() {
    let bench = Bench::new(false, false);
    let out = bench.run(&["prove"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let record = std::fs::read_to_string(bench.stack().join("proven-stack.yaml")).expect("record");
    let doc: serde_json::Value = serde_saphyr::from_str(&record).expect("record parses");
    assert_eq!(doc["peak"]["outside_mib"], 2560, "{record}");
    assert_eq!(doc["peak"]["outside_source"], "per_process", "{record}");
    assert_eq!(doc["peak"]["authority"], "outside");
    assert_eq!(doc["example"]["batch"], 64);
    assert_eq!(doc["gpus"][0]["driver"], DRIVER);
    assert_eq!(doc["toolkit"]["version"], "12.4.1");
    assert_eq!(doc["library"]["version"], "2.5.1+cu124");
    assert_eq!(doc["per_sample_mib"], 40.0, "2,560 MiB ÷ 64");
    let svg = std::fs::read_to_string(bench.stack().join("proven-stack.svg")).expect("svg");
    assert!(svg.starts_with("<svg") || svg.contains("<svg"), "an SVG");
    assert!(
        all.contains("Largest batch under the line"),
        "the batch table ends the output: {all}"
    );
}

#[test]
fn wddm_na_rows_fall_back_to_the_card_delta_over_the_idle_baseline() {
    let bench = Bench::new(true, false);
    let out = bench.run(&["prove", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json record");
    assert_eq!(doc["peak"]["outside_source"], "device_delta", "{doc}");
    assert_eq!(doc["peak"]["baseline_mib"], 7300, "{doc}");
    assert_eq!(doc["peak"]["outside_mib"], 2560, "{doc}");
}

#[test]
fn a_failing_example_leaves_no_record_and_says_why() {
    let bench = Bench::new(false, true);
    let out = bench.run(&["prove"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(!bench.stack().join("proven-stack.yaml").exists());
    let failed =
        std::fs::read_to_string(bench.stack().join("failed-run.yaml")).expect("failed-run.yaml");
    assert!(failed.contains("memory"), "explained by layer: {failed}");
    assert!(
        all.contains("out of memory") || all.contains("OutOfMemory"),
        "{all}"
    );
}

#[test]
fn fit_measures_each_batch_and_records_the_line() {
    let bench = Bench::new(false, false);
    let out = bench.run(&["prove", "--fit", "16,32", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json record");
    let fit = &doc["fit"];
    assert_eq!(fit["points"].as_array().map(Vec::len), Some(3), "{doc}");
    let per_sample = fit["per_sample_mib"].as_f64().expect("slope");
    assert!(per_sample > 30.0 && per_sample < 45.0, "{fit}");
}

#[test]
fn prove_refuses_a_stack_whose_toolkit_is_missing() {
    let bench = Bench::new(false, false);
    std::fs::remove_dir_all(bench.host.toolkit_root("12.4.1")).expect("remove toolkit");
    let out = bench.run(&["prove"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("toolkit layer is not in place"),
        "{}",
        text(&out)
    );
}

/// How a fake example of the GPU-proof tests behaves.
struct Run {
    /// The `device` of its STACKPIN_RESULT line.
    device: &'static str,
    /// Its own per-process row and framework peak (a GPU run); a CPU run has neither.
    on_gpu: bool,
    /// Another job starts on the card while it runs and holds this much.
    other_job_mib: Option<u64>,
    /// nvidia-smi lists no processes (a container).
    container: bool,
}

/// A host with the stack in place whose library is proven by `verify:` (as in a container
/// where torch cannot be asked before the run), and an example that behaves as `run` says.
fn gpu_proof_bench(run: &Run) -> Bench {
    let bench = Bench::new(false, false);
    let nv = bench.host.nvidia();
    std::fs::write(nv.join("apps.csv"), "").expect("an idle card");
    std::fs::write(nv.join("memory.csv"), "300\n").expect("idle memory");
    if run.container {
        bench.host.hide_processes();
    }
    let other_row = run
        .other_job_mib
        .map_or(String::new(), |mib| format!("4242, {mib}\n"));
    let other_mib = run.other_job_mib.unwrap_or(0);
    let (own_row, own_mib, peaks) = if run.on_gpu {
        (
            "$$, 2560\n",
            2560,
            r#", \"peak_reserved_mib\": 2300, \"peak_allocated_mib\": 2100, \"context_mib\": 260"#,
        )
    } else {
        ("", 0, "")
    };
    let script = format!(
        "#!/bin/sh\nnv='{nv}'\n\
         printf '{other_row}{own_row}' > \"$nv/apps.csv\"; echo $((300 + {other_mib} + {own_mib})) > \"$nv/memory.csv\"\n\
         sleep 0.8\n\
         echo \"STACKPIN_RESULT {{\\\"batch\\\": $1, \\\"device\\\": \\\"{device}\\\", \\\"samples_per_s\\\": 40.5{peaks}, \
         \\\"versions\\\": {{\\\"torch\\\": \\\"2.5.1+cu124\\\", \\\"cuda\\\": \\\"12.4\\\", \\\"cudnn\\\": 90100, \\\"python\\\": \\\"3.12.3\\\"}}}}\"\n\
         : > \"$nv/apps.csv\"; echo 300 > \"$nv/memory.csv\"\n",
        nv = nv.display(),
        device = run.device,
    );
    std::fs::write(bench.host.root().join("example.sh"), script).expect("example");
    let manifest = std::fs::read_to_string(&bench.manifest).expect("manifest");
    let manifest = manifest.replace(
        "  run: [\"sh\", \"{installer}\"]\nexample:",
        "  run: [\"sh\", \"{installer}\"]\n  verify: [\"true\"]\nexample:",
    );
    assert!(manifest.contains("verify: [\"true\"]"), "{manifest}");
    std::fs::write(&bench.manifest, manifest).expect("manifest with verify");
    bench
}

fn yaml(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("yaml file");
    serde_saphyr::from_str(&text).expect("yaml parses")
}

#[test]
fn a_cpu_run_beside_another_job_on_the_card_is_not_proven() {
    let bench = gpu_proof_bench(&Run {
        device: "cpu",
        on_gpu: false,
        other_job_mib: Some(1500),
        container: false,
    });
    // An earlier proof stays as it was.
    std::fs::create_dir_all(bench.stack()).expect("stack folder");
    std::fs::write(bench.stack().join("proven-stack.yaml"), "earlier: record\n").expect("earlier");
    let out = bench.run(&["prove"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("the example ran on the CPU: torch 2.5.1+cu124 sees no GPU"),
        "{all}"
    );
    let failed = yaml(&bench.stack().join("failed-run.yaml"));
    assert!(
        failed["reason"]
            .as_str()
            .is_some_and(|r| r.contains("ran on the CPU")),
        "{failed}"
    );
    assert_eq!(failed["device"], "cpu", "{failed}");
    assert_eq!(failed["layer"], "driver", "{failed}");
    assert_eq!(
        std::fs::read_to_string(bench.stack().join("proven-stack.yaml")).expect("record"),
        "earlier: record\n",
        "the earlier record is untouched"
    );
}

#[test]
fn a_cpu_run_on_an_idle_card_is_not_proven_and_leaves_a_failed_run() {
    let bench = gpu_proof_bench(&Run {
        device: "cpu",
        on_gpu: false,
        other_job_mib: None,
        container: false,
    });
    let out = bench.run(&["prove", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!bench.stack().join("proven-stack.yaml").exists());
    let failed = yaml(&bench.stack().join("failed-run.yaml"));
    assert_eq!(failed["device"], "cpu", "{failed}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false, "{doc}");
    assert_eq!(doc["exit_code"], 1, "{doc}");
    assert_eq!(doc["error"]["layer"], "driver", "{doc}");
    assert!(
        doc["error"]["fix"]
            .as_str()
            .is_some_and(|f| f.contains("stackpin doctor")),
        "{doc}"
    );
    assert!(
        !text(&out).contains("is not a memory size"),
        "judged before any batch planning: {}",
        text(&out)
    );
}

#[test]
fn a_container_run_on_the_gpu_is_proven_by_the_card_delta_with_the_fallback_named() {
    let bench = gpu_proof_bench(&Run {
        device: "cuda:0",
        on_gpu: true,
        other_job_mib: None,
        container: true,
    });
    let out = bench.run(&["prove", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let record = yaml(&bench.stack().join("proven-stack.yaml"));
    assert_eq!(record["example"]["device"], "cuda:0", "{record}");
    assert!(
        record["example"]["judged_by"]
            .as_str()
            .is_some_and(|j| j.contains("framework peak")),
        "{record}"
    );
    assert_eq!(record["peak"]["outside_source"], "device_delta", "{record}");
    assert_eq!(record["peak"]["outside_mib"], 2560, "{record}");
    assert_eq!(record["peak"]["framework_mib"], 2300.0, "{record}");
    assert_eq!(record["peak"]["authority"], "framework_plus_context");
    assert!(
        record["peak"]["authority_reason"]
            .as_str()
            .is_some_and(|r| r.contains("memory.used over its idle baseline")),
        "{record}"
    );
    let notes = record["peak"]["notes"].to_string();
    assert!(notes.contains("never listed a process"), "{notes}");
    // Facts from the example's report, not fixed strings.
    assert_eq!(record["library"]["cudnn"], "90100", "{record}");
    assert_eq!(record["environment"]["python_version"], "3.12.3");
    assert!(
        record["environment"]["is_cuda_available"]
            .as_str()
            .is_some_and(|a| a.contains("cuda:0")),
        "{record}"
    );
    // The JSON document is the same record.
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], true, "{doc}");
}

#[test]
fn a_cpu_run_in_a_container_beside_a_growing_job_is_not_proven() {
    let bench = gpu_proof_bench(&Run {
        device: "cpu",
        on_gpu: false,
        other_job_mib: Some(1500),
        container: true,
    });
    let out = bench.run(&["prove"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!bench.stack().join("proven-stack.yaml").exists());
}

#[test]
fn a_gpu_run_beside_a_job_that_appears_names_it_and_trusts_the_framework() {
    let bench = gpu_proof_bench(&Run {
        device: "cuda",
        on_gpu: true,
        other_job_mib: Some(1500),
        container: false,
    });
    // The example's own row never shows (WSL2): only the other job is listed.
    let script = std::fs::read_to_string(bench.host.root().join("example.sh")).expect("script");
    std::fs::write(
        bench.host.root().join("example.sh"),
        script.replace("$$, 2560\\n", ""),
    )
    .expect("rewrite");
    let out = bench.run(&["prove", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let record = yaml(&bench.stack().join("proven-stack.yaml"));
    assert_eq!(record["peak"]["outside_source"], "device_delta", "{record}");
    assert_eq!(record["peak"]["authority"], "framework_plus_context");
    assert_eq!(record["peak"]["mib"], 2560.0, "2300 + 260: {record}");
    let notes = record["peak"]["notes"].to_string();
    assert!(notes.contains("pid 4242"), "{notes}");
}

#[test]
fn a_library_installed_blind_is_sent_to_the_driver_layer_by_install_and_prove() {
    use crate::server::TestServer;
    let host = FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver(DRIVER, "12.8")
        .toolkit("12.4.1");
    // The library's installer writes a torch built for CUDA 12.4 that sees no GPU.
    let mut blind = String::new();
    {
        let probe = FakeHost::new();
        probe.write_torch(&FakeTorch {
            available: false,
            device_count: 0,
            ..FakeTorch::default()
        });
        blind.push_str(
            &std::fs::read_to_string(probe.python_path().join("torch/__init__.py"))
                .expect("fake torch"),
        );
    }
    let installer = format!(
        "#!/bin/sh\nmkdir -p '{py}/torch'\ncat > '{py}/torch/__init__.py' <<'EOF'\n{blind}EOF\n",
        py = host.python_path().display()
    );
    let server = TestServer::start();
    server.file(&format!("NVIDIA-Linux-x86_64-{DRIVER}.run"), b"#!/bin/sh\n");
    server.file("cuda_12.4.1_550.54.15_linux.run", b"#!/bin/sh\n");
    server.file("install-torch.sh", installer.as_bytes());
    let manifest = host.root().join("stack.yaml");
    std::fs::write(
        &manifest,
        format!(
            "schema: 1\nname: blind-torch\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"-c\", \"exit 0\"]\n",
            d = server.url(&format!("NVIDIA-Linux-x86_64-{DRIVER}.run")),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            root = host.toolkit_root("12.4.1").display(),
        ),
    )
    .expect("manifest");
    let run = |args: &[&str]| {
        host.stackpin(
            args.iter()
                .copied()
                .chain([manifest.to_str().expect("utf-8")]),
        )
        .env("STACKPIN_ARCHIVE", host.root().join("installers"))
        .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
        .env("STACKPIN_RETRY_BASE_MS", "0")
        .output_started()
        .expect("stackpin runs")
    };
    let fetched = run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let installed = run(&["install", "--yes"]);
    let all = text(&installed);
    assert_ne!(installed.status.code(), Some(0), "{all}");
    assert!(
        all.contains("torch 2.5.1 is installed but sees no GPU — the driver layer: nvidia-smi"),
        "{all}"
    );
    assert!(!all.contains("the library is not there"), "{all}");
    let proved = run(&["prove"]);
    let all = text(&proved);
    assert_eq!(proved.status.code(), Some(1), "{all}");
    assert!(all.contains("stackpin doctor"), "{all}");
    assert!(!all.contains("Run `stackpin install` first"), "{all}");
}

#[cfg(target_os = "linux")]
#[test]
fn an_example_whose_log_a_full_disk_cut_is_not_proven_and_says_why() {
    let bench = Bench::new(false, false);
    let logs = bench.stack().join("logs");
    let script = bench.host.root().join("example.sh");
    let body = std::fs::read_to_string(&script).expect("example");
    // A DataLoader's cache fills the disk that holds the logs while the example talks, then the
    // example frees it and prints its result as usual.
    let flooding = body.replacen(
        "#!/bin/sh\n",
        &format!(
            "#!/bin/sh\ndd if=/dev/zero of='{fill}' bs=4096 2>/dev/null\n\
             i=0; while [ $i -lt 3000 ]; do echo \"epoch 0 step $i loss 2.3\"; i=$((i+1)); done\n\
             rm -f '{fill}'\n",
            fill = logs.join("cache.bin").display()
        ),
        1,
    );
    std::fs::write(&script, flooding).expect("flooding example");
    let cmd = bench.host.stackpin([
        "prove",
        "--batch",
        "64",
        bench.manifest.to_str().expect("utf-8"),
    ]);
    let mut cmd = cmd;
    cmd.env("STACKPIN_ARCHIVE", bench.host.archive());
    let kept = bench.host.root().join("logs-held");
    let Some(out) = crate::common::on_a_small_disk(&cmd, &logs, 256, &kept) else {
        return;
    };
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    for words in [
        "result cannot be read",
        "the disk that holds it is full",
        "Free space",
    ] {
        assert!(all.contains(words), "missing `{words}`: {all}");
    }
    assert!(
        !bench.stack().join("proven-stack.yaml").exists(),
        "nothing is proven from a log that lost its result"
    );
}
