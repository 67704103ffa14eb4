//! Inference stacks end to end on a fake host: `prove` checks the example's p99 against the
//! cycle time, `record export` carries the model's sha256 and the proven driver, the ONNX
//! Runtime release data pins and checks, and a fake `onnxruntime-gpu` wheel (module
//! `onnxruntime`) goes through real pip from a loopback index to a proven stack.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::{Path, PathBuf};
use std::process::Output;

use sha2::{Digest, Sha256};

use crate::fakes::FakeHost;

const DRIVER: &str = "595.71.05";

struct Bench {
    host: FakeHost,
    manifest: PathBuf,
}

impl Bench {
    /// An inference stack whose fake example holds 700 MiB and reports the given latencies.
    fn new(p50_ms: f64, p99_ms: f64, cycle_time_ms: f64) -> Self {
        let host = FakeHost::l4_workstation();
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
        cmd.env("STACKPIN_ARCHIVE", self.host.archive());
        cmd.output_started().expect("stackpin runs")
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
    assert_eq!(doc["versions_from"], "proven_stack");
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
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let yaml = std::fs::read_to_string(&out_path).expect("pinned manifest");
    assert!(yaml.contains("role: inference"), "{yaml}");
    assert!(yaml.contains("infer_ort.py"), "{yaml}");
    assert!(yaml.contains("cycle_time_ms:"), "{yaml}");
    assert!(yaml.contains("\"onnxruntime-gpu==1.20.2\""), "{yaml}");
    let check = host
        .stackpin(["check", out_path.to_str().expect("utf-8")])
        .output_started()
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
        .output_started()
        .expect("stackpin runs");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let wrong = host.root().join("wrong.yaml");
    std::fs::write(&wrong, shipped.replace("cuda: \"12.9\"", "cuda: \"11.8\"")).expect("write");
    let out = host
        .stackpin(["check"])
        .arg(&wrong)
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("11.8"), "{}", text(&out));
}

/// A wheel as pip builds and installs them: the package's files, then `*.dist-info/` with
/// METADATA, WHEEL and RECORD. Pure Python (`py3-none-any`), so pip takes it for any platform.
fn wheel(distribution: &str, version: &str, files: &[(&str, String)]) -> (String, Vec<u8>) {
    use std::io::Write;
    let stem = format!("{}-{version}", distribution.replace('-', "_"));
    let name = format!("{stem}-py3-none-any.whl");
    let info = format!("{stem}.dist-info");
    let mut all: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| ((*p).to_string(), t.clone()))
        .collect();
    all.push((
        format!("{info}/METADATA"),
        format!("Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"),
    ));
    all.push((
        format!("{info}/WHEEL"),
        "Wheel-Version: 1.0\nGenerator: stackpin-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            .to_string(),
    ));
    let record: String = all
        .iter()
        .map(|(p, _)| format!("{p},,\n"))
        .chain([format!("{info}/RECORD,,\n")])
        .collect();
    all.push((format!("{info}/RECORD"), record));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, text) in &all {
        zip.start_file(path.as_str(), zip::write::SimpleFileOptions::default())
            .expect("zip entry");
        zip.write_all(text.as_bytes()).expect("zip write");
    }
    let bytes = zip.finish().expect("zip").into_inner();
    (name, bytes)
}

/// A PEP 503 "simple" index on loopback serving the given wheels, as the package index does:
/// `/simple/<name>/` lists links with `#sha256=`, `/files/<wheel>` serves the file.
fn simple_index(wheels: Vec<(String, String, Vec<u8>)>) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = server.server_addr().to_ip().expect("ip").port();
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let url = request.url().to_string();
            let page = wheels
                .iter()
                .find(|(project, _, _)| url.trim_end_matches('/') == format!("/simple/{project}"));
            let file = wheels
                .iter()
                .find(|(_, name, _)| url == format!("/files/{name}"));
            let response = match (page, file) {
                (Some((_, name, bytes)), _) => {
                    let html = format!(
                        "<!DOCTYPE html><html><body><a href=\"/files/{name}#sha256={}\">{name}</a></body></html>",
                        hex::encode(Sha256::digest(bytes))
                    );
                    tiny_http::Response::from_data(html.into_bytes()).with_header(
                        tiny_http::Header::from_bytes("Content-Type", "text/html").expect("header"),
                    )
                }
                (None, Some((_, _, bytes))) => tiny_http::Response::from_data(bytes.clone()),
                (None, None) => {
                    tiny_http::Response::from_data(b"not found".to_vec()).with_status_code(404)
                }
            };
            let _ = request.respond(response);
        }
    });
    format!("http://127.0.0.1:{port}/simple/")
}

/// The fake `onnxruntime` package of a GPU wheel: the CUDA provider is compiled in, and a session
/// asked for it gets it only when the driver answers (the fake nvidia-smi lists a GPU); then
/// the process appears in nvidia-smi with `mib` MiB. Otherwise it warns on stderr and falls back
/// to the CPU provider without an error, as ONNX Runtime does.
pub(crate) fn fake_onnxruntime_files(apps_csv: &Path, mib: u64) -> Vec<(&'static str, String)> {
    let init = format!(
        "import os, subprocess, sys\n__version__ = '1.20.2'\n\
         def get_available_providers():\n    return ['CUDAExecutionProvider', 'CPUExecutionProvider']\n\
         def get_device():\n    return 'GPU'\n\
         def _driver_answers():\n    try:\n        out = subprocess.run(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'], capture_output=True, text=True)\n    except OSError:\n        return False\n    return out.returncode == 0 and out.stdout.strip() != ''\n\
         class InferenceSession:\n    def __init__(self, model, providers=None):\n        asked = list(providers or ['CPUExecutionProvider'])\n        if 'CUDAExecutionProvider' in asked and not _driver_answers():\n            print('[W:onnxruntime] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*', file=sys.stderr)\n            asked = [p for p in asked if p != 'CUDAExecutionProvider'] or ['CPUExecutionProvider']\n        elif 'CUDAExecutionProvider' in asked:\n            with open({apps:?}, 'a') as f:\n                f.write('%d, {mib}\\n' % os.getpid())\n        self._providers = asked\n    def get_providers(self):\n        return self._providers\n    def run(self, names, feeds):\n        return [feeds]\n",
        apps = apps_csv.display().to_string()
    );
    vec![
        ("onnxruntime/__init__.py", init),
        ("onnxruntime/capi/__init__.py", String::new()),
        // Built with CUDA 12.2: any CUDA 12 line will do for ONNX Runtime.
        (
            "onnxruntime/capi/build_and_package_info.py",
            "package_name = 'onnxruntime-gpu'\n__version__ = '1.20.2'\ncuda_version = '12.2'\n"
                .to_string(),
        ),
    ]
}

/// The whole inference stack with real pip: `fetch` downloads a fake `onnxruntime-gpu` wheel
/// (whose module is `onnxruntime`) from a loopback index, `install` puts it into a fresh venv
/// offline, the library proof imports `onnxruntime` and finds the CUDA provider, and `prove`
/// runs an example on it.
#[test]
fn a_fake_onnxruntime_gpu_wheel_installs_from_a_loopback_index_and_proves() {
    let python = crate::fakes::python3();
    let version = std::process::Command::new(&python)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output_started()
        .expect("python3 runs");
    let py_version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let host = FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver(DRIVER, "12.8")
        .toolkit("12.4.1");
    std::fs::write(host.nvidia().join("memory.csv"), "300\n").expect("idle memory");
    std::fs::write(host.nvidia().join("apps.csv"), "").expect("no other job");
    let apps = host.nvidia().join("apps.csv");
    let (wheel_name, wheel_bytes) = wheel(
        "onnxruntime-gpu",
        "1.20.2",
        &fake_onnxruntime_files(&apps, 700),
    );
    let index = simple_index(vec![(
        "onnxruntime-gpu".to_string(),
        wheel_name,
        wheel_bytes,
    )]);
    let server = crate::server::TestServer::start();
    server.file(
        &format!("NVIDIA-Linux-x86_64-{DRIVER}.run"),
        b"#!/bin/sh\nexit 0\n",
    );
    server.file("cuda_12.4.1_550.54.15_linux.run", b"#!/bin/sh\nexit 0\n");
    let example = host.root().join("infer_fake.py");
    std::fs::write(
        &example,
        "import json, time, onnxruntime\n\
         s = onnxruntime.InferenceSession(b'', providers=['CUDAExecutionProvider'])\n\
         assert s.get_providers()[0] == 'CUDAExecutionProvider', s.get_providers()\n\
         time.sleep(0.8)\n\
         print('STACKPIN_RESULT ' + json.dumps({'batch': 1, 'iterations': 200, 'p50_ms': 3.1, 'p99_ms': 7.9}))\n",
    )
    .expect("example");
    let venv = host.root().join("venv");
    let manifest = host.root().join("ort.yaml");
    std::fs::write(
        &manifest,
        format!(
            "schema: 1\nrole: inference\nname: ort-stack\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
             library:\n  name: onnxruntime-gpu\n  version: \"1.20.2\"\n  cuda: \"12.4\"\n  python: \"{python}\"\n  python_version: \"{py_version}\"\n  venv: \"{venv}\"\n  pip:\n    index_url: {index}\n    requirements: [\"onnxruntime-gpu==1.20.2\"]\n\
             example:\n  run: [\"{{python}}\", \"{example}\"]\n  batch: 1\n  cycle_time_ms: 33\n  timeout: 60s\n",
            d = server.url(&format!("NVIDIA-Linux-x86_64-{DRIVER}.run")),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            root = host.toolkit_root("12.4.1").display(),
            python = python.display(),
            venv = venv.display(),
            example = example.display(),
        ),
    )
    .expect("manifest");
    let archive = host.root().join("installers");
    let run = |args: &[&str]| {
        let mut cmd = host.stackpin(
            args.iter()
                .copied()
                .chain([manifest.to_str().expect("utf-8")]),
        );
        cmd.env("STACKPIN_ARCHIVE", &archive)
            .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .env("PIP_NO_CACHE_DIR", "1")
            .env_remove("PIP_INDEX_URL")
            .env_remove("PIP_EXTRA_INDEX_URL");
        cmd.output_started().expect("stackpin runs")
    };
    let fetched = run(&["fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "fetch: {}", text(&fetched));
    assert!(
        archive
            .join("ort-stack/library/onnxruntime_gpu-1.20.2-py3-none-any.whl")
            .is_file(),
        "{}",
        text(&fetched)
    );
    let installed = run(&["install", "--yes"]);
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    assert!(
        text(&installed).contains("onnxruntime-gpu 1.20.2 built for CUDA 12.2, sees the GPU"),
        "the library proof imports `onnxruntime` and accepts a CUDA 12.2 build for 12.4: {}",
        text(&installed)
    );
    let proved = run(&["prove"]);
    assert_eq!(proved.status.code(), Some(0), "{}", text(&proved));
    let record: serde_json::Value = serde_saphyr::from_str(
        &std::fs::read_to_string(archive.join("ort-stack/proven-stack.yaml")).expect("record"),
    )
    .expect("record parses");
    assert_eq!(record["library"]["name"], "onnxruntime-gpu", "{record}");
    assert_eq!(record["latency"]["p99_ms"], 7.9, "{record}");

    let host_report = |host: &FakeHost| {
        let out = host
            .stackpin(["host", "--library", "onnxruntime-gpu", "--python"])
            .arg(venv.join("bin/python"))
            .output_started()
            .expect("stackpin runs");
        text(&out)
    };
    let all = host_report(&host);
    assert!(
        all.contains("providers CUDAExecutionProvider CPUExecutionProvider, device GPU"),
        "{all}"
    );
    assert!(all.contains("sees 1 GPU(s)"), "{all}");

    // The same venv when the driver lists no GPU: ONNX Runtime falls back to the CPU provider
    // without an error; the report says so in ONNX Runtime's words, not torch's.
    std::fs::write(host.nvidia().join("gpus.csv"), "").expect("no GPU");
    let all = host_report(&host);
    assert!(
        all.contains("sees no GPU (`'CUDAExecutionProvider' in InferenceSession"),
        "{all}"
    );
    assert!(!all.contains("torch"), "{all}");
}
