//! `stackpin host` against a fake workstation: fake nvidia-smi first on PATH, fake toolkit
//! folders, real python3 with a fake torch.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::fakes::{DriverMode, FakeHost, FakeTorch, python3};

fn run(host: &FakeHost, args: &[&str]) -> Output {
    host.stackpin(args).output_started().expect("stackpin runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn two_gpu_host() -> FakeHost {
    FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .gpu("NVIDIA GeForce RTX 3090", 24576, "8.6")
        .driver("570.133.20", "12.8")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

#[test]
fn host_lists_every_gpu_and_the_newest_cuda_the_driver_supports() {
    let host = two_gpu_host();
    let out = run(&host, &["host"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("NVIDIA L4"), "{text}");
    assert!(text.contains("NVIDIA GeForce RTX 3090"), "{text}");
    assert!(text.contains("24576 MiB (24.0 GiB)"), "{text}");
    assert!(text.contains("driver supports up to CUDA 12.8"), "{text}");
    assert!(text.contains("2 found, using GPU 0 (first GPU)"), "{text}");
    assert!(
        host.nvidia_smi_calls()
            .iter()
            .any(|c| c
                .contains("--query-gpu=index,name,uuid,driver_version,memory.total,compute_cap")),
        "{:?}",
        host.nvidia_smi_calls()
    );
}

#[test]
fn host_json_carries_the_same_facts() {
    let host = two_gpu_host();
    let out = run(&host, &["host", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["driver"]["state"], "ok");
    assert_eq!(doc["driver"]["cuda_supported"], "12.8");
    assert_eq!(doc["driver"]["gpus"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["driver"]["gpus"][1]["compute_cap"], "8.6");
    assert_eq!(doc["driver"]["gpus"][1]["driver_version"], "570.133.20");
    assert_eq!(doc["selected_gpu"]["index"], 0);
    assert_eq!(doc["library"], serde_json::Value::Null);
}

#[test]
fn cuda_visible_devices_and_the_gpu_flag_choose_the_gpu() {
    let host = two_gpu_host();
    let out = host
        .stackpin(["host", "--json"])
        .env("CUDA_VISIBLE_DEVICES", FakeHost::gpu_uuid(1))
        .output_started()
        .expect("runs");
    assert_eq!(json(&out)["selected_gpu"]["index"], 1, "{}", stderr(&out));

    let out = host
        .stackpin(["host", "--json", "--gpu", "0"])
        .env("CUDA_VISIBLE_DEVICES", "1")
        .output_started()
        .expect("runs");
    assert_eq!(json(&out)["selected_gpu"]["reason"], "--gpu 0");
}

#[test]
fn a_gpu_that_does_not_exist_is_an_input_error_listing_the_real_ones() {
    let out = run(&two_gpu_host(), &["host", "--gpu", "7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--gpu 7: no such GPU; nvidia-smi lists GPU 0, 1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn no_driver_is_a_state_with_its_fix_and_exit_0() {
    let host = two_gpu_host();
    host.set_driver_state(DriverMode::NoDriver, "", "");
    let out = run(&host, &["host"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("driver    no driver"), "{text}");
    assert!(
        text.contains("couldn't communicate with the NVIDIA driver"),
        "{text}"
    );
    assert!(text.contains("fix: no working NVIDIA driver"), "{text}");
    assert!(
        text.contains("none: no NVIDIA GPU is usable on this machine"),
        "{text}"
    );
}

#[test]
fn a_mismatch_says_reboot_and_after_the_reboot_the_new_driver_shows() {
    let host = two_gpu_host();
    host.set_driver_state(DriverMode::Mismatch, "575.51.03", "12.9");
    let out = run(&host, &["host", "--json"]);
    let doc = json(&out);
    assert_eq!(doc["driver"]["state"], "mismatch");
    assert_eq!(doc["driver"]["library_version"], "575.51.03");

    // What a reboot does to the fake driver: the new module loads.
    host.set_driver_state(DriverMode::Ok, "575.51.03", "12.9");
    let out = run(&host, &["host"]);
    let text = stdout(&out);
    assert!(text.contains("driver    575.51.03"), "{text}");
    assert!(text.contains("up to CUDA 12.9"), "{text}");
}

#[test]
fn a_hung_nvidia_smi_is_stopped_at_the_timeout() {
    let host = two_gpu_host();
    host.set_driver_state(DriverMode::Hang, "", "");
    let started = Instant::now();
    let out = host
        .stackpin(["host"])
        .env("STACKPIN_NVIDIA_SMI_TIMEOUT", "0.5")
        .output_started()
        .expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("nvidia-smi timed out"), "{text}");
    assert!(text.contains("fix: nvidia-smi hung"), "{text}");
}

#[test]
fn a_host_without_nvidia_smi_says_so_plainly() {
    // The usual places are searched after PATH; on a machine with a real driver there the fake
    // cannot hide it, so this check only means something where it is absent.
    if Path::new("/usr/bin/nvidia-smi").exists()
        || Path::new("/usr/lib/wsl/lib/nvidia-smi").exists()
    {
        eprintln!("skipped: this machine has a real nvidia-smi in a usual place");
        return;
    }
    let host = FakeHost::new().without_nvidia_smi();
    let mut cmd = host.stackpin(["host"]);
    // Only the fake bin on PATH, so no real nvidia-smi elsewhere on the test's PATH is found.
    cmd.env("PATH", host.bin());
    let out = cmd.output_started().expect("runs");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("driver    no nvidia-smi"), "{text}");
    assert!(text.contains("fix: nvidia-smi not found"), "{text}");
}

#[test]
fn toolkits_are_listed_side_by_side_with_where_their_version_came_from() {
    let host = FakeHost::new()
        .toolkit("12.4.1")
        .toolkit_nvcc_only("11.8")
        .default_toolkit("12.4.1");
    let out = run(&host, &["host"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let new = host.toolkit_root("12.4").display().to_string();
    let old = host.toolkit_root("11.8").display().to_string();
    let line_of = |root: &str| {
        text.lines()
            .find(|l| l.contains(root) && !l.contains("link"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line_of(&new).contains("* "), "12.4 is the default: {text}");
    assert!(
        line_of(&new).contains("12.4.1  from version.json, build 12.4.131"),
        "{text}"
    );
    assert!(
        line_of(&old).contains("11.8 (exact update unknown)  from nvcc --version, build 11.8.131"),
        "{text}"
    );

    let doc = json(&run(&host, &["host", "--json"]));
    let toolkits = doc["toolkits"].as_array().expect("toolkits");
    assert_eq!(toolkits.len(), 2, "{doc}");
    assert_eq!(toolkits[0]["version"], "11.8");
    assert_eq!(
        toolkits[0]["nvcc"],
        "Cuda compilation tools, release 11.8, V11.8.131"
    );
    assert_eq!(toolkits[1]["default"], true);
}

#[test]
fn the_library_probe_reads_a_fake_torch_through_real_python() {
    let host = two_gpu_host().torch(FakeTorch::default());
    let python = python3();
    let args = [
        "host",
        "--python",
        python.to_str().expect("utf-8 path"),
        "--library",
        "torch",
    ];
    let out = run(&host, &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("torch 2.5.1 (2.5.1+cu124), built for CUDA 12.4, cuDNN 90100"),
        "{text}"
    );
    assert!(
        text.contains("sees 1 GPU(s), device 0: NVIDIA L4, compute 8.9"),
        "{text}"
    );

    let mut args = args.to_vec();
    args.push("--json");
    let doc = json(&run(&host, &args));
    let library = &doc["library"];
    assert_eq!(library["state"], "found");
    assert_eq!(library["version"], "2.5.1");
    assert_eq!(library["arch_list"][6], "sm_90");
    assert_eq!(library["device_capability"], "8.9");
}

#[test]
fn a_cpu_only_torch_is_reported_as_such() {
    let cpu = FakeTorch {
        version: "2.5.1+cpu".into(),
        cuda: None,
        available: false,
        device_count: 0,
        arch_list: vec![],
        ..FakeTorch::default()
    };
    let host = FakeHost::new().torch(cpu);
    let python = python3();
    let out = run(
        &host,
        &["host", "--python", python.to_str().expect("utf-8 path")],
    );
    let text = stdout(&out);
    assert!(
        text.contains("torch 2.5.1 (2.5.1+cpu), a CPU-only build"),
        "{text}"
    );
    assert!(text.contains("sees no GPU"), "{text}");
}

#[test]
fn a_torch_that_fails_to_import_is_reported_with_python_s_error() {
    let host = FakeHost::new().broken_torch("libcudnn.so.9: cannot open shared object file");
    let python = python3();
    let out = run(
        &host,
        &[
            "host",
            "--json",
            "--python",
            python.to_str().expect("utf-8 path"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let library = &json(&out)["library"];
    assert_eq!(library["state"], "import_failed");
    assert_eq!(
        library["error"],
        "ImportError: libcudnn.so.9: cannot open shared object file"
    );
}

#[test]
fn an_interpreter_that_cannot_run_is_an_input_error_naming_it() {
    let out = run(&FakeHost::new(), &["host", "--python", "/no/such/python3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("could not run `/no/such/python3`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn tensorflow_is_probed_through_its_build_info() {
    let host = FakeHost::new();
    host.write_package(
        "tensorflow",
        "import types\n__version__ = '2.18.0'\n\
         sysconfig = types.SimpleNamespace(get_build_info=lambda: {'cuda_version': '12.5.1', \
         'cudnn_version': '9', 'cuda_compute_capabilities': ['sm_60', 'sm_90', 'compute_90']})\n\
         config = types.SimpleNamespace(\n\
         \x20   list_physical_devices=lambda kind: ['/physical_device:GPU:0'],\n\
         \x20   experimental=types.SimpleNamespace(get_device_details=lambda d: \
         {'compute_capability': (8, 9), 'device_name': 'NVIDIA L4'}))\n",
    );
    let python = python3();
    let python = python.to_str().expect("utf-8 path");
    let out = run(
        &host,
        &[
            "host",
            "--json",
            "--python",
            python,
            "--library",
            "tensorflow",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let library = &json(&out)["library"];
    assert_eq!(library["state"], "found", "{library}");
    assert_eq!(library["library"], "tensorflow");
    assert_eq!(library["cuda"], "12.5.1");
    assert_eq!(library["cudnn"], "9");
    assert_eq!(library["device_count"], 1);
    assert_eq!(library["arch_list"][1], "sm_90");
    assert_eq!(library["device_capability"], "8.9");
}

#[test]
fn a_tensorflow_without_a_gpu_is_reported_in_tensorflows_words_not_torchs() {
    let host = FakeHost::new();
    host.write_package(
        "tensorflow",
        "import types\n__version__ = '2.17.0'\n\
         sysconfig = types.SimpleNamespace(get_build_info=lambda: {'cuda_version': '12.3', \
         'cudnn_version': '8', 'cuda_compute_capabilities': ['sm_60', 'sm_90']})\n\
         config = types.SimpleNamespace(list_physical_devices=lambda kind: [])\n",
    );
    let python = python3();
    let out = run(
        &host,
        &[
            "host",
            "--python",
            python.to_str().expect("utf-8 path"),
            "--library",
            "tensorflow",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.contains("sees no GPU (`tf.config.list_physical_devices('GPU')` found none)"),
        "{text}"
    );
    assert!(!text.contains("torch.cuda"), "{text}");
}

#[test]
fn host_and_pin_list_every_library_the_data_describes() {
    let host = FakeHost::new();
    for command in ["host", "pin"] {
        let out = run(&host, &[command, "--help"]);
        let text = stdout(&out);
        for library in ["torch", "tensorflow", "onnxruntime-gpu"] {
            assert!(
                text.contains(library),
                "`{command} --help` names {library}: {text}"
            );
        }
    }
    // Every name of a described library is accepted, including the import-name alias.
    let python = python3();
    let out = run(
        &host,
        &[
            "host",
            "--python",
            python.to_str().expect("utf-8 path"),
            "--library",
            "onnxruntime",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("onnxruntime-gpu cannot be imported"),
        "{}",
        stdout(&out)
    );
}
