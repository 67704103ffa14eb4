//! `plan` and `install` on a fake host: fake installers served over loopback and archived with
//! `stackpin fetch` as usual, a fake `nvidia-smi` whose driver state the fake driver installer
//! changes (active only after the test "reboots"), a fake toolkit installer that writes a toolkit
//! folder, and a library installer that writes a fake `torch` for the real `python3`.
//! Every fake installer appends its layer to `order.log`, so the tests assert the real order.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::Output;

use crate::common::text;

use crate::fakes::{DriverMode, FakeHost};
use crate::server::TestServer;

const DRIVER: &str = "595.71.05";

/// A fake host with one GPU and no driver yet, a loopback server with the fake installers, and
/// a fetched archive.
struct Lab {
    host: FakeHost,
    _server: TestServer,
    manifest: PathBuf,
}

pub(crate) fn order_log(host: &FakeHost) -> PathBuf {
    host.root().join("order.log")
}

/// `sh {installer} …` scripts; each logs its layer and honours `fail-<layer>` marker files.
pub(crate) fn driver_script(host: &FakeHost) -> String {
    format!(
        "#!/bin/sh\necho driver >> '{log}'\n[ -e '{root}/fail-driver' ] && {{ echo 'ERROR: An NVIDIA kernel module nvidia-drm appears to already be loaded in your kernel.' >&2; exit 1; }}\n\
         # A runfile extracts itself beside the logs, fills that disk while it talks, then cleans up.\n\
         if [ -e '{root}/flood-driver' ]; then echo 'Verifying archive integrity... OK'; \
         dd if=/dev/zero of='{logs}/extract.tmp' bs=4096 2>/dev/null; \
         i=0; while [ $i -lt 3000 ]; do echo \"Uncompressing NVIDIA Accelerated Graphics Driver: file $i\"; i=$((i+1)); done; \
         rm -f '{logs}/extract.tmp'; fi\n\
         # The new driver is on disk; the running module is the old one until the reboot.\n\
         printf 'mode=mismatch\\ndriver={DRIVER}\\ncuda=12.8\\n' > '{state}'\n",
        log = order_log(host).display(),
        root = host.root().display(),
        state = host.driver_state_file().display(),
        logs = host
            .root()
            .join("installers/fake-torch-stack/logs")
            .display(),
    )
}

pub(crate) fn toolkit_script(host: &FakeHost) -> String {
    format!(
        "#!/bin/sh\necho toolkit >> '{log}'\n[ -e '{root}/fail-toolkit' ] && {{ echo 'Installation failed. See log at /var/log/cuda-installer.log for details.' >&2; exit 1; }}\n\
         for a in \"$@\"; do case \"$a\" in --toolkitpath=*) dir=\"${{a#--toolkitpath=}}\";; esac; done\n\
         [ -e '{root}/slow-toolkit' ] && {{ i=0; while [ ! -e '{root}/go-toolkit' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; }}\nmkdir -p \"$dir/bin\"\nprintf '{{\"cuda\": {{\"name\": \"CUDA SDK\", \"version\": \"12.4.1\"}}}}' > \"$dir/version.json\"\n\
         cp '{nvcc}' \"$dir/bin/nvcc\"\n\
         if [ -e '{root}/exit5-toolkit' ]; then exit 5; fi\n",
        log = order_log(host).display(),
        root = host.root().display(),
        nvcc = host.nvcc_to_copy("12.4.1").display(),
    )
}

pub(crate) fn library_script(host: &FakeHost) -> String {
    // Writes the fake torch the way `FakeHost::torch` does, but only when the installer runs.
    let torch = "import types\n__version__ = '2.5.1+cu124'\nversion = types.SimpleNamespace(cuda='12.4')\n\
         backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 90100))\n\
         cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1, \
         get_arch_list=lambda: ['sm_80', 'sm_86', 'sm_89', 'sm_90'], \
         get_device_capability=lambda i=0: (8, 9), get_device_name=lambda i=0: 'NVIDIA L4')\n";
    format!(
        "#!/bin/sh\necho library >> '{log}'\nmkdir -p '{py}/torch'\ncat > '{py}/torch/__init__.py' <<'EOF'\n{torch}EOF\n",
        log = order_log(host).display(),
        py = host.python_path().display(),
    )
}

impl Lab {
    fn new() -> Self {
        let host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9");
        host.set_driver_state(DriverMode::NoDriver, "", "");
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
        let toolkit_root = host.cuda_prefix().join("cuda-12.4");
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nname: fake-torch-stack\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"{{python}}\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
            d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            root = toolkit_root.display(),
        );
        std::fs::write(&manifest, text).expect("manifest");
        let lab = Self {
            host,
            _server: server,
            manifest,
        };
        let fetched = lab.run(&["fetch"]);
        assert!(
            fetched.status.success(),
            "fetch: {}",
            String::from_utf8_lossy(&fetched.stderr)
        );
        lab
    }

    fn run(&self, args: &[&str]) -> Output {
        self.host
            .installing(
                args.iter()
                    .copied()
                    .chain([self.manifest.to_str().expect("utf-8 path")]),
            )
            .output_started()
            .expect("stackpin runs")
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

    /// The machine restarts: the new driver's module is the one running now.
    fn reboot(&self) {
        self.host.set_driver_state(DriverMode::Ok, DRIVER, "12.8");
    }

    fn archived(&self, layer: &str, file: &str) -> PathBuf {
        self.host
            .root()
            .join("installers/fake-torch-stack")
            .join(layer)
            .join(file)
    }
}

#[test]
fn plan_on_an_empty_host_lists_every_layer_in_order_and_runs_nothing() {
    let lab = Lab::new();
    let out = lab.run(&["plan"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let (d, t, l) = (
        all.find("1. sh").expect("driver command"),
        all.find("2. sh").expect("toolkit command"),
        all.find("3. sh").expect("library command"),
    );
    assert!(d < t && t < l, "{all}");
    assert!(
        all.contains("[NVIDIA-Linux-x86_64-595.71.05.run: verified]"),
        "{all}"
    );
    assert!(all.contains("reboot after the driver"), "{all}");
    assert!(
        all.contains("the newest CUDA this driver can run")
            || all.contains("newest CUDA a driver can run"),
        "{all}"
    );
    assert!(lab.order().is_empty(), "plan must run nothing");
}

#[test]
fn dry_run_runs_nothing() {
    let lab = Lab::new();
    let out = lab.run(&["install", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("dry run: nothing was run"));
    assert!(lab.order().is_empty());
}

#[test]
fn full_chain_in_order_with_a_reboot_after_the_driver() {
    let lab = Lab::new();
    let first = lab.run(&["install", "--yes"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert!(
        text(&first).contains("reboot, then run the same command again"),
        "{}",
        text(&first)
    );
    assert_eq!(lab.order(), ["driver"]);

    // Running again before the reboot does not rerun the driver installer.
    let again = lab.run(&["install", "--yes"]);
    assert!(text(&again).contains("reboot"), "{}", text(&again));
    assert_eq!(lab.order(), ["driver"]);

    lab.reboot();
    let second = lab.run(&["install", "--yes"]);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    assert_eq!(lab.order(), ["driver", "toolkit", "library"]);
    assert!(
        text(&second).contains("all three layers are in place"),
        "{}",
        text(&second)
    );

    lab.clear_order();
    let third = lab.run(&["install", "--yes"]);
    assert_eq!(third.status.code(), Some(0), "{}", text(&third));
    assert!(lab.order().is_empty(), "a complete host runs nothing");
    assert!(text(&third).contains("already in place"));
}

/// An installer that exits with a code nobody listed, but whose layer's check then holds, is
/// accepted with a warning on screen and in its log; the chain goes on.
#[test]
fn an_unexpected_exit_code_with_the_layer_in_place_is_accepted_with_a_warning() {
    let lab = Lab::new();
    std::fs::write(lab.host.root().join("exit5-toolkit"), "").expect("marker");
    lab.run(&["install", "--yes"]);
    lab.reboot();
    let out = lab.run(&["install", "--yes"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("warning: the toolkit installer exited with code 5"),
        "{all}"
    );
    assert!(
        lab.order().contains(&"library".to_string()),
        "the chain went on: {all}"
    );
    let logs = lab.host.root().join("installers/fake-torch-stack/logs");
    let logged = std::fs::read_dir(&logs)
        .expect("logs")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("toolkit-"))
        .any(|e| {
            std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("the step is accepted"))
        });
    assert!(logged, "the step's log says why it was accepted");
}

#[test]
fn a_failing_toolkit_stops_the_chain_and_the_rerun_resumes_at_the_toolkit() {
    let lab = Lab::new();
    std::fs::write(lab.host.root().join("fail-toolkit"), "").expect("marker");
    lab.run(&["install", "--yes"]);
    lab.reboot();
    let failed = lab.run(&["install", "--yes"]);
    let all = text(&failed);
    assert_eq!(failed.status.code(), Some(3), "{all}");
    assert!(all.contains("toolkit"), "{all}");
    assert!(
        all.contains("Installation failed"),
        "the last lines are shown: {all}"
    );
    assert!(
        all.contains("logs/toolkit-"),
        "the log path is shown: {all}"
    );
    assert_eq!(lab.order(), ["driver", "toolkit"]);

    std::fs::remove_file(lab.host.root().join("fail-toolkit")).expect("unmark");
    lab.clear_order();
    let rerun = lab.run(&["install", "--yes"]);
    assert_eq!(rerun.status.code(), Some(0), "{}", text(&rerun));
    assert_eq!(lab.order(), ["toolkit", "library"]);
    let state = std::fs::read_to_string(
        lab.host
            .root()
            .join("installers/fake-torch-stack/state.yaml"),
    )
    .expect("state.yaml");
    assert!(!state.contains("failed"), "{state}");
}

#[test]
fn a_tampered_archived_installer_is_refused_and_never_executed() {
    let lab = Lab::new();
    lab.run(&["install", "--yes"]);
    lab.reboot();
    let toolkit = lab.archived("toolkit", "cuda_12.4.1_550.54.15_linux.run");
    let mut perms = std::fs::metadata(&toolkit).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&toolkit, perms).expect("writable");
    std::fs::write(
        &toolkit,
        format!(
            "#!/bin/sh\necho pwned >> '{}'\n",
            order_log(&lab.host).display()
        ),
    )
    .expect("tamper");
    lab.clear_order();
    let out = lab.run(&["install", "--yes"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("refused"), "{all}");
    assert!(
        lab.order().is_empty(),
        "the tampered file must never run: {:?}",
        lab.order()
    );
}

#[test]
fn force_reinstalls_one_layer_only() {
    let lab = Lab::new();
    lab.run(&["install", "--yes"]);
    lab.reboot();
    lab.run(&["install", "--yes"]);
    lab.clear_order();
    let out = lab.run(&["install", "--yes", "--force", "toolkit"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(lab.order(), ["toolkit"]);
}

#[test]
fn plan_without_a_gpu_exits_0_and_explains_the_driver_layer() {
    let lab = Lab::new();
    lab.host.set_driver_state(DriverMode::NoDriver, "", "");
    let out = lab.run(&["plan"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("no working NVIDIA driver"), "{all}");
    assert!(all.contains("driver version: none running yet"), "{all}");
}

#[test]
fn plan_json_has_every_layer_with_a_verdict() {
    let lab = Lab::new();
    let out = lab.run(&["plan", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let layers = doc["layers"].as_array().expect("layers");
    let names: Vec<&str> = layers.iter().filter_map(|l| l["layer"].as_str()).collect();
    assert_eq!(names, ["driver", "toolkit", "library"]);
    assert!(layers.iter().all(|l| l["verdict"] == "to_install"), "{doc}");
}

/// The real thing for pip libraries: `fetch` downloads a small real wheel through pip, then
/// `install` creates a fresh venv and installs it with no index at all, and the venv imports it.
#[test]
fn pip_library_installs_offline_from_the_archive_into_a_fresh_venv() {
    if std::env::var_os("STACKPIN_OFFLINE").is_some_and(|v| v == "1") {
        println!("skipped: STACKPIN_OFFLINE=1 (this test downloads one small wheel through pip)");
        return;
    }
    let python = crate::fakes::python3();
    let version = std::process::Command::new(&python)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output_started()
        .expect("python3 runs");
    let py_version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    // Driver and toolkit already in place: only the library layer runs.
    let host = FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver(DRIVER, "12.8")
        .toolkit("12.4.1");
    let server = TestServer::start();
    server.file("NVIDIA-Linux-x86_64-595.71.05.run", b"#!/bin/sh\nexit 0\n");
    server.file("cuda_12.4.1_550.54.15_linux.run", b"#!/bin/sh\nexit 0\n");
    let venv = host.root().join("venv");
    let manifest = host.root().join("six.yaml");
    let yaml = format!(
        "schema: 1\nname: six-stack\nos: linux\n\
         driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\"]\n\
         toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--toolkit\"]\n\
         library:\n  name: six\n  version: \"1.16.0\"\n  cuda: \"12.4\"\n  python: \"{python}\"\n  python_version: \"{py_version}\"\n  venv: \"{venv}\"\n  pip:\n    requirements: [\"six==1.16.0\"]\n\
         example:\n  run: [\"{{python}}\", \"-c\", \"import six\"]\n",
        d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
        t = server.url("cuda_12.4.1_550.54.15_linux.run"),
        root = host.toolkit_root("12.4.1").display(),
        python = python.display(),
        venv = venv.display(),
    );
    std::fs::write(&manifest, yaml).expect("manifest");
    let archive = host.root().join("installers");
    let run = |args: &[&str]| {
        let mut cmd = host.stackpin(
            args.iter()
                .copied()
                .chain([manifest.to_str().expect("utf-8")]),
        );
        cmd.env("STACKPIN_ARCHIVE", &archive)
            .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
            .env("STACKPIN_RETRY_BASE_MS", "0");
        cmd
    };
    let fetched = run(&["fetch"]).output_started().expect("fetch");
    assert!(fetched.status.success(), "fetch: {}", text(&fetched));
    // No network for the install: pip gets a dead index and a dead proxy.
    let installed = run(&["install", "--yes"])
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("https_proxy", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .output_started()
        .expect("install");
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    assert!(
        text(&installed).contains("--require-hashes"),
        "{}",
        text(&installed)
    );
    let imported = std::process::Command::new(venv.join("bin/python"))
        .args(["-c", "import six; print(six.__version__)"])
        .env_remove("PYTHONPATH")
        .output_started()
        .expect("venv python");
    assert_eq!(String::from_utf8_lossy(&imported.stdout).trim(), "1.16.0");
    let requirements = std::fs::read_to_string(archive.join("six-stack/requirements.stackpin.txt"))
        .expect("requirements written");
    assert!(
        requirements.contains("six==1.16.0 --hash=sha256:"),
        "{requirements}"
    );
}

#[test]
fn a_layer_verify_command_overrides_the_default_proof() {
    let lab = Lab::new();
    let text = std::fs::read_to_string(&lab.manifest).expect("manifest");
    let with_verify = text.replace(
        "toolkit:\n",
        "toolkit:\n  verify: [\"sh\", \"-c\", \"test -n '{root}'\"]\n",
    );
    std::fs::write(&lab.manifest, with_verify).expect("rewrite");
    // `plan` runs a manifest's verify command only when asked to (`--probe`).
    let out = lab.run(&["plan", "--json", "--probe"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let toolkit = &doc["layers"][1];
    assert_eq!(toolkit["verdict"], "in_place", "{doc}");
    assert!(
        toolkit["proof"]["seen"]
            .as_str()
            .is_some_and(|s| s.contains("passed")),
        "{doc}"
    );
}

#[test]
fn up_fetches_installs_stops_for_the_reboot_then_finishes_with_a_proof() {
    let lab = Lab::new();
    let nv = lab.host.nvidia();
    let example = lab.host.root().join("example.sh");
    std::fs::write(
        &example,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$$, 2560\" > '{nv}/apps.csv'\necho 9000 > '{nv}/memory.csv'\nsleep 0.5\n\
             echo 'STACKPIN_RESULT {{\"batch\": 64, \"samples_per_s\": 100}}'\n: > '{nv}/apps.csv'\n",
            nv = nv.display()
        ),
    )
    .expect("example");
    std::fs::write(nv.join("memory.csv"), "500\n").expect("idle");
    let text0 = std::fs::read_to_string(&lab.manifest).expect("manifest");
    let start = text0.find("example:").expect("example section");
    let rewritten = format!(
        "{}example:\n  run: [\"sh\", \"{}\", \"{{batch}}\"]\n",
        &text0[..start],
        example.display()
    );
    std::fs::write(&lab.manifest, rewritten).expect("rewrite");

    let first = lab.run(&["up", "--yes", "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let doc: serde_json::Value = serde_json::from_slice(&first.stdout).expect("one JSON document");
    assert_eq!(doc["reboot_required"], true, "{doc}");
    assert_eq!(lab.order(), ["driver"]);

    lab.reboot();
    let second = lab.run(&["up", "--yes", "--json"]);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    let doc: serde_json::Value = serde_json::from_slice(&second.stdout).expect("one JSON document");
    assert_eq!(doc["reboot_required"], false, "{doc}");
    assert_eq!(doc["proven"]["peak"]["outside_mib"], 2560, "{doc}");
    assert_eq!(lab.order(), ["driver", "toolkit", "library"]);
    assert!(
        lab.host
            .root()
            .join("installers/fake-torch-stack/proven-stack.yaml")
            .exists()
    );
}

/// Starts `install` with the driver in place and a toolkit installer that waits for a marker,
/// presses Ctrl-C (SIGINT to stackpin only) once it runs, lets it finish, and waits for stackpin.
fn install_then_ctrl_c_during_the_toolkit(lab: &Lab, json: bool) -> Output {
    lab.reboot(); // the driver is already in place
    std::fs::write(lab.host.root().join("slow-toolkit"), "").expect("marker");
    let mut args = vec!["install", "--yes", lab.manifest.to_str().expect("utf-8")];
    if json {
        args.insert(0, "--json");
    }
    let mut cmd = lab.host.stackpin(args);
    cmd.env("STACKPIN_ARCHIVE", lab.host.root().join("installers"))
        .env("STACKPIN_SKIP_ADMIN_CHECK", "1");
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let started = std::time::Instant::now();
    while !lab.order().contains(&"toolkit".to_string()) {
        assert!(
            started.elapsed().as_secs() < 30,
            "the toolkit installer never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(kill.success());
    // The installer goes on only once the Ctrl-C was sent: no race on a loaded machine.
    std::fs::write(lab.host.root().join("go-toolkit"), "").expect("go marker");
    child.wait_with_output().expect("stackpin ends")
}

/// What one Ctrl-C during the toolkit leaves: the toolkit finished, the library never ran, and
/// the state says where the chain was interrupted.
fn interrupted_before_the_library(lab: &Lab) {
    assert_eq!(lab.order(), ["toolkit"], "the library never ran");
    assert!(
        lab.host
            .toolkit_root("12.4.1")
            .join("version.json")
            .exists(),
        "the toolkit installer was allowed to finish"
    );
    let state = std::fs::read_to_string(
        lab.host
            .root()
            .join("installers/fake-torch-stack/state.yaml"),
    )
    .expect("state");
    assert!(state.contains("interrupted_at: library"), "{state}");
}

#[test]
fn ctrl_c_waits_for_the_running_installer_then_stops_before_the_next_layer() {
    let lab = Lab::new();
    let out = install_then_ctrl_c_during_the_toolkit(&lab, false);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(all.contains("interrupted before the library"), "{all}");
    interrupted_before_the_library(&lab);
}

#[test]
fn ctrl_c_during_install_json_is_an_interruption_in_the_one_document() {
    let lab = Lab::new();
    let out = install_then_ctrl_c_during_the_toolkit(&lab, true);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON document on stdout ({e}): {all}"));
    assert_eq!(doc["ok"], false, "{doc:#}");
    assert_eq!(doc["exit_code"], 3, "{doc:#}");
    assert_eq!(doc["end"], "interrupted", "{doc:#}");
    assert_eq!(doc["before"], "library", "{doc:#}");
    let said = doc.to_string();
    assert!(
        said.contains("interrupted (Ctrl-C) before the library"),
        "{doc:#}"
    );
    assert!(
        !said.contains("an external step failed"),
        "an interruption is said as one, not as a failed step: {doc:#}"
    );
    let toolkit = doc["layers"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["layer"] == "toolkit"))
        .unwrap_or_else(|| panic!("the toolkit's result: {doc:#}"));
    assert_eq!(toolkit["action"], "installed", "{doc:#}");
    interrupted_before_the_library(&lab);
}

#[cfg(target_os = "linux")]
#[test]
fn an_installer_log_cut_by_a_full_disk_is_reported_beside_its_verdict() {
    let lab = Lab::new();
    std::fs::write(lab.host.root().join("flood-driver"), "").expect("marker");
    let logs = lab.host.root().join("installers/fake-torch-stack/logs");
    let kept = lab.host.root().join("logs-held");
    let cmd = lab.host.installing([
        "--json",
        "install",
        "--yes",
        lab.manifest.to_str().expect("utf-8"),
    ]);
    let Some(out) = crate::common::on_a_small_disk(&cmd, &logs, 256, &kept) else {
        return;
    };
    let all = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stops for the driver's reboot: {all}"
    );
    for words in [
        "driver's log",
        "is incomplete",
        "the disk that holds it is full",
        "No space left on device",
        "Free space",
    ] {
        assert!(all.contains(words), "missing `{words}`: {all}");
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let driver = &doc["layers"][0];
    assert_eq!(driver["layer"], "driver", "{doc:#}");
    assert!(
        driver["log_incomplete"]
            .as_str()
            .is_some_and(|w| w.contains("No space left on device")),
        "{doc:#}"
    );
    let log_name = std::fs::read_dir(&kept)
        .expect("the logs that were on the small disk")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("driver-") && n.ends_with(".log"))
        .expect("the driver's log");
    let log = std::fs::read_to_string(kept.join(log_name)).expect("driver log");
    assert!(log.contains("Verifying archive integrity"), "{log}");
    assert!(
        !log.contains("file 2999"),
        "the log cannot hold what the full disk lost"
    );
    assert!(
        log.contains("# stackpin: the output after byte"),
        "the log says where it stops: {log}"
    );
    assert!(log.trim_end().ends_with("# exit: 0"), "{log}");
}
