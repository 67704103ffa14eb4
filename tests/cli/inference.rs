//! Inference stacks end to end on a fake host: `prove` checks the example's p99 against the
//! cycle time, `record export` carries the model's sha256 and the proven driver, and the
//! ONNX Runtime release data pins and checks.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use sha2::{Digest, Sha256};

use crate::fakes::{FakeHost, FakeTorch};

const DRIVER: &str = "595.71.05";

struct Bench {
    host: FakeHost,
    manifest: PathBuf,
}

impl Bench {
    /// An inference stack whose fake example holds 700 MiB and reports the given latencies.
    fn new(p50_ms: f64, p99_ms: f64, cycle_time_ms: f64) -> Self {
        let host = FakeHost::new()
            .gpu("NVIDIA L4", 23034, "8.9")
            .driver(DRIVER, "12.8")
            .toolkit("12.4.1")
            .torch(FakeTorch::default());
        std::fs::write(host.nvidia().join("memory.csv"), "300\n").expect("idle memory");
        std::fs::write(host.nvidia().join("apps.csv"), "").expect("no other job");
        let script = host.root().join("infer.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nnv='{nv}'\nprintf '%s, 700\\n' $$ > \"$nv/apps.csv\"; sleep 0.6\n\
                 printf '' > \"$nv/apps.csv\"\n\
                 echo 'STACKPIN_RESULT {{\"batch\": 1, \"iterations\": 200, \"p50_ms\": {p50_ms}, \"p99_ms\": {p99_ms}}}'\n",
                nv = host.nvidia().display()
            ),
        )
        .expect("example");
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nrole: inference\nname: fake-infer\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: http://127.0.0.1:9/NVIDIA-Linux-x86_64-{DRIVER}.run\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: http://127.0.0.1:9/cuda_12.4.1_550.54.15_linux.run\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: http://127.0.0.1:9/install-torch.sh\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"{script}\"]\n  batch: 1\n  cycle_time_ms: {cycle_time_ms}\n  timeout: 60s\n",
            root = host.toolkit_root("12.4.1").display(),
            script = script.display(),
        );
        std::fs::write(&manifest, text).expect("manifest");
        Self { host, manifest }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.host.stackpin(args);
        cmd.env("STACKPIN_ARCHIVE", self.host.root().join("installers"));
        cmd.output().expect("stackpin runs")
    }

    fn manifest(&self) -> &str {
        self.manifest.to_str().expect("utf-8 path")
    }

    fn record(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(
            self.host
                .root()
                .join("installers/fake-infer/proven-stack.yaml"),
        )
        .expect("record");
        serde_saphyr::from_str(&text).expect("record parses")
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn sha256_of(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).expect("model")))
}

#[test]
fn prove_records_a_p99_under_the_cycle_time_and_exits_0() {
    let bench = Bench::new(4.2, 9.5, 33.0);
    let out = bench.run(&["prove", bench.manifest()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let latency = &bench.record()["latency"];
    assert_eq!(latency["p99_ms"], 9.5, "{latency}");
    assert_eq!(latency["p50_ms"], 4.2);
    assert_eq!(latency["cycle_time_ms"], 33.0);
    assert_eq!(latency["meets"], true);
    assert!(text(&out).contains("meets it"), "{}", text(&out));
}

#[test]
fn prove_exits_1_with_the_numbers_when_p99_is_over_the_cycle_time() {
    let bench = Bench::new(12.0, 41.5, 33.0);
    let out = bench.run(&["prove", bench.manifest()]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("41.50 ms") && all.contains("33 ms"),
        "p99 and cycle time named: {all}"
    );
    assert_eq!(bench.record()["latency"]["meets"], false, "recorded anyway");
}

#[test]
fn export_round_trips_the_model_hash_and_the_proven_driver() {
    let bench = Bench::new(4.0, 8.0, 33.0);
    let proved = bench.run(&["prove", bench.manifest()]);
    assert_eq!(proved.status.code(), Some(0), "{}", text(&proved));
    let model = bench.host.root().join("det.onnx");
    std::fs::write(&model, b"fake model weights \x00\x01\x02").expect("model");
    let out = bench.run(&[
        "record",
        "export",
        bench.manifest(),
        "--model",
        model.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let written = bench.host.root().join("det.onnx.stack.yaml");
    let doc: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&written).expect("FILE.stack.yaml"))
            .expect("parses");
    assert_eq!(doc["model"]["sha256"], sha256_of(&model), "{doc}");
    assert_eq!(doc["driver"], DRIVER);
    assert_eq!(doc["versions_from"], "proven-stack");
    assert_eq!(
        doc["library"]["version"], "2.5.1+cu124",
        "what the host had"
    );
    assert_eq!(doc["gpu"]["name"], "NVIDIA L4");
}

#[test]
fn export_without_a_proven_record_uses_the_pins_and_says_so() {
    let bench = Bench::new(4.0, 8.0, 33.0);
    let model = bench.host.root().join("det.pt");
    std::fs::write(&model, b"weights").expect("model");
    let out_path = bench.host.root().join("deploy/det.yaml");
    let out = bench.run(&[
        "record",
        "export",
        bench.manifest(),
        "--model",
        model.to_str().expect("utf-8"),
        "-o",
        out_path.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["record"]["versions_from"], "manifest", "{json}");
    assert_eq!(json["record"]["library"]["version"], "2.5.1");
    let doc: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&out_path).expect("-o path"))
            .expect("yaml");
    assert_eq!(doc["model"]["sha256"], sha256_of(&model));
}

#[test]
fn export_of_a_missing_model_is_an_input_error_naming_it() {
    let bench = Bench::new(4.0, 8.0, 33.0);
    let out = bench.run(&[
        "record",
        "export",
        bench.manifest(),
        "--model",
        "no-such-model.onnx",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no-such-model.onnx"), "{}", text(&out));
}

#[test]
fn pin_onnxruntime_gpu_writes_an_inference_manifest_that_checks_clean() {
    let host = FakeHost::new();
    let out_path = host.root().join("ort.yaml");
    let out = host
        .stackpin([
            "pin",
            "--library",
            "onnxruntime-gpu==1.20.2",
            "--os",
            "linux",
            "-o",
            out_path.to_str().expect("utf-8"),
        ])
        .output()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let yaml = std::fs::read_to_string(&out_path).expect("pinned manifest");
    assert!(yaml.contains("role: inference"), "{yaml}");
    assert!(yaml.contains("infer_ort.py"), "{yaml}");
    assert!(yaml.contains("cycle_time_ms:"), "{yaml}");
    assert!(yaml.contains("\"onnxruntime-gpu==1.20.2\""), "{yaml}");
    let check = host
        .stackpin(["check", out_path.to_str().expect("utf-8")])
        .output()
        .expect("stackpin runs");
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
}

#[test]
fn check_refuses_an_onnxruntime_build_on_the_wrong_cuda_major() {
    let host = FakeHost::new();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("manifests/onnxruntime-gpu-1.20.2-cu129-linux.yaml"),
    )
    .expect("shipped inference manifest");
    let ok = host
        .stackpin(["check"])
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("manifests/onnxruntime-gpu-1.20.2-cu129-linux.yaml"),
        )
        .output()
        .expect("stackpin runs");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let wrong = host.root().join("wrong.yaml");
    std::fs::write(&wrong, shipped.replace("cuda: \"12.9\"", "cuda: \"11.8\"")).expect("write");
    let out = host
        .stackpin(["check"])
        .arg(&wrong)
        .output()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("11.8"), "{}", text(&out));
}
