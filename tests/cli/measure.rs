//! `measure` on a fake host: fake commands write their own rows into the fake nvidia-smi's
//! per-process list, the way a real CUDA process would appear in it.
#![cfg(unix)]

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
        .output()
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
        .output()
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
        .output()
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
        .output()
        .expect("stackpin runs");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("after `--`"), "{}", text(&out));
}

#[test]
fn baseline_runs_the_stacks_python_and_prints_budget_lines() {
    let host = host();
    // The stack's "python": records what it was asked to run, then holds 412 MiB like a
    // context plus runtime would.
    let venv = host.root().join("venv");
    let python = venv.join("bin/python");
    std::fs::create_dir_all(venv.join("bin")).expect("venv folder");
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$2\" > '{root}/asked.txt'\n\
             printf '%s, 412\\n' $$ > '{nv}/apps.csv'; sleep 0.8; printf '' > '{nv}/apps.csv'\n",
            root = host.root().display(),
            nv = host.nvidia().display()
        ),
    )
    .expect("fake python");
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let shipped = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests/torch-2.7.1-cu118-linux.yaml"),
    )
    .expect("shipped manifest");
    // Point the stack's venv at the fake interpreter's folder.
    let manifest: String = shipped
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
    let out = host
        .stackpin(["measure", "--baseline", "--manifest"])
        .arg(&path)
        .env("STACKPIN_ARCHIVE", host.root().join("installers"))
        .output()
        .expect("stackpin runs");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("context_mib: 412\nruntime_mib: 0"), "{all}");
    let asked = std::fs::read_to_string(host.root().join("asked.txt")).expect("python ran");
    assert!(asked.contains("torch.zeros(1, device='cuda')"), "{asked}");
}
