//! `prove` on a fake host: a fake `nvidia-smi` whose per-process memory follows a curve the fake
//! example writes for its own pid, and a fake example that prints `STACKPIN_RESULT`.
#![cfg(unix)]

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
        let host = FakeHost::new()
            .gpu("NVIDIA L4", 23034, "8.9")
            .driver(DRIVER, "12.8")
            .toolkit("12.4.1")
            .torch(FakeTorch::default());
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
        cmd.env("STACKPIN_ARCHIVE", self.host.root().join("installers"));
        cmd.output().expect("stackpin runs")
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
