//! `measure` on a fake host: fake commands write their own rows into the fake nvidia-smi's
//! per-process list, the way a real CUDA process would appear in it.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::Output;

use crate::fakes::FakeHost;

fn host() -> FakeHost {
    let host = FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver("595.71.05", "12.8");
    std::fs::write(host.nvidia().join("memory.csv"), "7300\n").expect("idle memory");
    // Another job on the card that must never be counted.
    std::fs::write(host.nvidia().join("apps.csv"), "4242, 7000\n").expect("other job");
    host
}

/// A command that holds 300 MiB itself and starts a child that holds 600 MiB for a while:
/// 900 MiB at the peak, the child's 600 the largest single process.
fn two_process_command(host: &FakeHost) -> PathBuf {
    let script = host.root().join("service.sh");
    let text = format!(
        "#!/bin/sh\nnv='{nv}'\n\
         sleep 5 & child=$!\n\
         printf '4242, 7000\\n%s, 300\\n' $$ > \"$nv/apps.csv\"; sleep 0.5\n\
         printf '4242, 7000\\n%s, 300\\n%s, 600\\n' $$ $child > \"$nv/apps.csv\"; sleep 1.2\n\
         printf '4242, 7000\\n%s, 300\\n' $$ > \"$nv/apps.csv\"; sleep 0.4\n\
         printf '4242, 7000\\n' > \"$nv/apps.csv\"\n\
         kill $child\necho served 120 requests\n",
        nv = host.nvidia().display()
    );
    std::fs::write(&script, text).expect("script");
    script
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn measure_sees_the_commands_900_mib_peak_and_each_process() {
    let host = host();
    let script = two_process_command(&host);
    let out = host
        .stackpin(["measure", "--json", "--", "sh"])
        .arg(&script)
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["peak_mib"], 900, "{doc}");
    assert_eq!(doc["source"], "per_process", "{doc}");
    let rows = doc["processes"].as_array().expect("per-process rows");
    assert_eq!(
        rows.len(),
        2,
        "the other job (pid 4242) is not counted: {doc}"
    );
    assert_eq!(rows[0]["peak_mib"], 600, "largest first: {doc}");
    assert_eq!(rows[0]["root"], false);
    assert_eq!(rows[1]["peak_mib"], 300);
    assert_eq!(rows[1]["root"], true);
    assert_eq!(rows[1]["reserved_after_warmup_mib"], 300, "{doc}");
}

#[test]
fn measure_prints_a_table_with_the_total_in_human_output() {
    let host = host();
    let script = two_process_command(&host);
    let out = host
        .stackpin(["measure", "--", "sh"])
        .arg(&script)
        .output_started()
        .expect("stackpin runs");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let total = all
        .lines()
        .find(|l| l.trim_start().starts_with("all "))
        .unwrap_or_else(|| panic!("a total row: {all}"));
    assert!(total.contains("900"), "{total}");
    assert!(
        all.contains("(cmd)"),
        "the command's own row is marked: {all}"
    );
}

#[test]
fn a_failing_command_is_measured_and_exits_3_with_its_code() {
    let host = host();
    let script = host.root().join("crash.sh");
    let nv = host.nvidia();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s, 500\\n' $$ > '{}/apps.csv'; sleep 0.6; echo 'CUDA error' >&2; exit 7\n",
            nv.display()
        ),
    )
    .expect("script");
    let out = host
        .stackpin(["measure", "--", "sh"])
        .arg(&script)
        .output_started()
        .expect("stackpin runs");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(all.contains("exited with code 7"), "{all}");
    assert!(all.contains("500"), "the figures up to the failure: {all}");
}

#[test]
fn measure_without_a_command_is_an_input_error() {
    let out = host()
        .stackpin(["measure"])
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("after `--`"), "{}", text(&out));
}

/// A stack from a shipped manifest whose venv python is the real `python3` (with the fake
/// host's packages on `PYTHONPATH`); returns the manifest's path.
fn baseline_stack(host: &FakeHost, shipped: &str) -> PathBuf {
    let venv = host.root().join("venv");
    let python = venv.join("bin/python");
    std::fs::create_dir_all(venv.join("bin")).expect("venv folder");
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{root}/asked.txt'\nexec python3 \"$@\"\n",
            root = host.root().display()
        ),
    )
    .expect("venv python");
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("manifests")
            .join(shipped),
    )
    .expect("shipped manifest");
    // Point the stack's venv at the fake interpreter's folder.
    let manifest: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("venv:") {
                format!("  venv: \"{}\"", venv.display())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = host.root().join("stack.yaml");
    std::fs::write(&path, manifest).expect("manifest");
    path
}

/// Python that lists the calling process in the fake nvidia-smi with `mib` MiB, as a CUDA
/// context appears in the real one when a library first touches the GPU.
fn open_context(host: &FakeHost, mib: u64) -> String {
    format!(
        "def _open_context():\n    import os\n    with open({apps:?}, 'a') as f:\n        f.write('%d, {mib}\\n' % os.getpid())\n",
        apps = host.nvidia().join("apps.csv").display().to_string()
    )
}

fn baseline(host: &FakeHost, manifest: &PathBuf, json: bool) -> Output {
    let mut cmd = host.stackpin(["measure", "--baseline", "--manifest"]);
    cmd.arg(manifest)
        .env("STACKPIN_ARCHIVE", host.root().join("installers"));
    if json {
        cmd.arg("--json");
    }
    cmd.output_started().expect("stackpin runs")
}

#[test]
fn baseline_runs_the_stacks_python_and_prints_budget_lines() {
    let host = host();
    host.write_package(
        "torch",
        &format!(
            "{ctx}class _Device:\n    def __init__(self, text):\n        self.type = text.split(':')[0]\n        self.text = text\n    def __str__(self):\n        return self.text\n\
             class _Tensor:\n    def __init__(self, device):\n        self.device = _Device(device)\n\
             def zeros(n, device='cpu'):\n    if device.startswith('cuda'):\n        _open_context()\n        device = 'cuda:0'\n    return _Tensor(device)\n\
             class cuda:\n    @staticmethod\n    def synchronize():\n        pass\n",
            ctx = open_context(&host, 412)
        ),
    );
    let manifest = baseline_stack(&host, "torch-2.7.1-cu118-linux.yaml");
    let out = baseline(&host, &manifest, false);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("context_mib: 412\nruntime_mib: 0"), "{all}");
    let asked = std::fs::read_to_string(host.root().join("asked.txt")).expect("python ran");
    assert!(asked.contains("baseline\ntorch\ntorch\n"), "{asked}");
}

#[test]
fn baseline_of_a_library_that_put_its_tensor_on_the_cpu_fails_with_the_reason() {
    let host = host();
    // TensorFlow without a usable GPU: tf.device('/GPU:0') places the tensor on the CPU and
    // raises nothing; the process never appears in nvidia-smi.
    host.write_package(
        "tensorflow",
        "import contextlib\n__version__ = '2.17.0'\n\
         class _Tensor:\n    device = '/job:localhost/replica:0/task:0/device:CPU:0'\n    def numpy(self):\n        return [0.0]\n\
         def zeros(shape):\n    return _Tensor()\n\
         @contextlib.contextmanager\ndef device(name):\n    yield\n",
    );
    let manifest = baseline_stack(&host, "tensorflow-2.17.0-cu123-linux.yaml");
    let out = baseline(&host, &manifest, false);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("ran on the CPU"), "{all}");
    assert!(
        all.contains("device:CPU:0"),
        "the library's own words: {all}"
    );
    assert!(all.contains("list_physical_devices"), "{all}");
    assert!(
        !all.contains("context_mib: 0"),
        "no zero budget handed out: {all}"
    );
    assert!(
        !all.contains("torch"),
        "TensorFlow's words, not torch's: {all}"
    );
}

#[test]
fn baseline_that_measured_nothing_fails_instead_of_printing_zero() {
    let host = host();
    // A library that says its tensor is on the GPU, but nvidia-smi never lists the process.
    host.write_package(
        "torch",
        "class _Device:\n    type = 'cuda'\n    def __str__(self):\n        return 'cuda:0'\n\
         class _Tensor:\n    device = _Device()\n\
         def zeros(n, device='cpu'):\n    return _Tensor()\n\
         class cuda:\n    @staticmethod\n    def synchronize():\n        pass\n",
    );
    let manifest = baseline_stack(&host, "torch-2.7.1-cu118-linux.yaml");
    let out = baseline(&host, &manifest, true);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("measured nothing"), "{all}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert!(doc.get("baseline").is_none(), "no budget lines: {doc}");
    assert!(
        doc["baseline_refused"]
            .as_str()
            .is_some_and(|r| r.contains("measured nothing")),
        "{doc}"
    );
}

#[test]
fn baseline_for_onnxruntime_is_a_one_node_session_on_the_cuda_provider() {
    let host = host();
    for (path, text) in
        crate::inference::fake_onnxruntime_files(&host.nvidia().join("apps.csv"), 296)
    {
        let file = host.python_path().join(path);
        std::fs::create_dir_all(file.parent().expect("folder")).expect("package folder");
        std::fs::write(file, text).expect("fake onnxruntime");
    }
    host.write_package(
        "numpy",
        "float32 = 'float32'\ndef zeros(shape, dtype=None):\n    return [0.0] * shape[0]\n",
    );
    let manifest = baseline_stack(&host, "onnxruntime-gpu-1.20.2-cu129-linux.yaml");
    let out = baseline(&host, &manifest, false);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("context_mib: 296"), "{all}");
    let asked = std::fs::read_to_string(host.root().join("asked.txt")).expect("python ran");
    assert!(
        asked.contains("baseline\nonnxruntime\nonnxruntime\n"),
        "{asked}"
    );
}

/// `CUDA_VISIBLE_DEVICES` may name the GPU by UUID (as schedulers do): measure samples the GPU
/// it names, chosen as every command chooses it, not GPU 0.
#[test]
fn measure_samples_the_gpu_cuda_visible_devices_names_by_uuid() {
    let host = host().gpu("NVIDIA L4", 23034, "8.9");
    let script = two_process_command(&host);
    let out = host
        .stackpin(["measure", "--json", "--", "sh"])
        .arg(&script)
        .env("CUDA_VISIBLE_DEVICES", FakeHost::gpu_uuid(1))
        .output_started()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["gpu_index"], 1, "{doc}");
}
