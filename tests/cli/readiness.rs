//! A Linux host's readiness for NVIDIA's runfiles, on fake roots (`STACKPIN_HOST_ROOT`): one
//! test per precondition. Each: `plan` names it with its fix, `plan --json` and `install --json`
//! carry it, and `install --yes` runs no installer when it blocks. The fake driver runfile
//! refuses as NVIDIA's does (its own messages, an `nvidia-installer.log`), so an installer that
//! ran when it should not have would fail the test twice over.
#![cfg(unix)]

use std::path::PathBuf;

use crate::common::{OutputStarted, text};
use crate::fakes::{DriverMode, FakeHost, FakeRoot};
use crate::install::{library_script, order_log, toolkit_script};
use crate::server::TestServer;

const DRIVER: &str = "595.71.05";

/// NVIDIA's driver runfile as far as these tests need it: refuses on the fake root the way
/// nvidia-installer does (messages from NVIDIA/nvidia-installer's source, tag 590.48.01), writes
/// its log, and otherwise installs the driver (active after the reboot).
fn refusing_driver_script(host: &FakeHost) -> String {
    format!(
        r#"#!/bin/sh
echo driver >> '{order}'
echo "$@" > '{argv}'
r="$STACKPIN_HOST_ROOT"; log="$r/var/log/nvidia-installer.log"; mkdir -p "$r/var/log"
fail() {{
  printf 'nvidia-installer log file %s\n-> Installing NVIDIA driver version {DRIVER}.\n%s\n' "$log" "$1" > "$log"
  echo "$1" >&2
  echo "ERROR: Installation has failed.  Please see the file '$log' for details.  You may find suggestions on fixing installation problems in the README available on the Linux driver download page at www.nvidia.com." >&2
  exit 1
}}
grep -q '^nouveau ' "$r/proc/modules" && fail "ERROR: The Nouveau kernel driver is currently in use by your system.  This driver is incompatible with the NVIDIA driver, and must be disabled before proceeding.  Please consult the NVIDIA driver README and your Linux distribution's documentation for details on how to correctly disable the Nouveau kernel driver."
ls "$r"/tmp/.X*-lock >/dev/null 2>&1 && fail "ERROR: You appear to be running an X server; please exit X before installing.  For further details, please see the section INSTALLING THE NVIDIA DRIVER in the README available on the Linux driver download page at www.nvidia.com."
[ -d "$r/lib/modules/$(cat "$r/proc/sys/kernel/osrelease")/build" ] || fail "ERROR: Unable to find the kernel source tree for the currently running kernel.  Please make sure you have installed the kernel source files for your kernel and that they are properly configured; on Red Hat Linux systems, for example, be sure you have the 'kernel-source' or 'kernel-devel' RPM installed.  If you know the correct kernel source files are installed, you may specify the kernel source path with the '--kernel-source-path' command line option."
grep -q '^nvidia_drm ' "$r/proc/modules" && fail "ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded in your kernel.  This may be because it is in use (for example, by an X server, a CUDA program, or the NVIDIA Persistence Daemon), but this may also happen if your kernel was configured without support for module unloading."
printf 'mode=mismatch\ndriver={DRIVER}\ncuda=12.8\n' > '{state}'
"#,
        order = order_log(host).display(),
        argv = host.root().join("driver-argv").display(),
        state = host.driver_state_file().display(),
    )
}

/// A fake workstation with one L4 and no driver, on a ready fake root, with its archive fetched.
/// Each runfile records its arguments (`driver-argv`, `toolkit-argv` in the host's folder).
pub(crate) struct Lab {
    pub(crate) host: FakeHost,
    pub(crate) root: FakeRoot,
    _server: TestServer,
    pub(crate) manifest: PathBuf,
}

impl Lab {
    pub(crate) fn new() -> Self {
        Self::with_driver_flags("")
    }

    /// `flags` are added to `driver.run` (a module signing key pair).
    pub(crate) fn with_driver_flags(flags: &str) -> Self {
        let mut host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9");
        host.set_driver_state(DriverMode::NoDriver, "", "");
        let root = FakeRoot::ready(&host.root().join("hostroot"));
        root.holds(host.root());
        host.set_env("STACKPIN_HOST_ROOT", root.path());
        let server = TestServer::start();
        server.file(
            "NVIDIA-Linux-x86_64-595.71.05.run",
            refusing_driver_script(&host).as_bytes(),
        );
        let toolkit = toolkit_script(&host).replacen(
            "#!/bin/sh\n",
            &format!(
                "#!/bin/sh\necho \"$@\" > '{}'\n",
                host.root().join("toolkit-argv").display()
            ),
            1,
        );
        server.file("cuda_12.4.1_550.54.15_linux.run", toolkit.as_bytes());
        server.file("install-torch.sh", library_script(&host).as_bytes());
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nname: ready-stack\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"{flags}]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"{{python}}\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
            d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            root = host.cuda_prefix().join("cuda-12.4").display(),
        );
        std::fs::write(&manifest, text).expect("manifest");
        let lab = Self {
            host,
            root,
            _server: server,
            manifest,
        };
        let fetched = lab.run(&["fetch"]);
        assert!(fetched.0 == Some(0), "fetch: {}", fetched.1);
        lab
    }

    /// Exit code and all output of `stackpin ARGS MANIFEST`.
    pub(crate) fn run(&self, args: &[&str]) -> (Option<i32>, String) {
        let out = self
            .host
            .installing(
                args.iter()
                    .copied()
                    .chain([self.manifest.to_str().expect("utf-8 path")]),
            )
            .output_started()
            .expect("stackpin runs");
        (out.status.code(), text(&out))
    }

    pub(crate) fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self
            .host
            .installing(
                args.iter()
                    .copied()
                    .chain(["--json", self.manifest.to_str().expect("utf-8 path")]),
            )
            .output_started()
            .expect("stackpin runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {}", text(&out)))
    }

    pub(crate) fn order(&self) -> Vec<String> {
        std::fs::read_to_string(order_log(&self.host))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    /// `plan` names the finding (`what`) with its fix and blocks; `plan --json` and
    /// `install --json` carry it; `install --yes` refuses before any installer runs.
    pub(crate) fn assert_blocks(&self, layer: &str, what: &str, fix: &str) {
        let (code, plan) = self.run(&["plan"]);
        assert_eq!(code, Some(1), "plan is blocked: {plan}");
        assert!(plan.contains(&format!("{layer} BLOCKS")), "{plan}");
        assert!(
            plan.contains(what) && plan.contains(fix),
            "{what} / {fix}: {plan}"
        );

        let doc = self.json(&["plan"]);
        assert!(carries(&doc["readiness"], layer, "blocks", what), "{doc:#}");

        let (code, install) = self.run(&["install", "--yes"]);
        assert_eq!(code, Some(1), "{install}");
        assert!(
            install.contains("install refused before any layer ran") && install.contains(what),
            "{install}"
        );
        assert!(self.order().is_empty(), "no installer may run: {install}");

        let doc = self.json(&["install", "--yes"]);
        assert_eq!(doc["ok"], false, "{doc:#}");
        assert!(carries(&doc["readiness"], layer, "blocks", what), "{doc:#}");
        assert!(self.order().is_empty(), "no installer may run");
        assert!(!self.root.installer_log().exists(), "the runfile never ran");
    }
}

/// A JSON findings list holds one for `layer` with `effect` whose `what` says `words`.
pub(crate) fn carries(
    findings: &serde_json::Value,
    layer: &str,
    effect: &str,
    words: &str,
) -> bool {
    findings.as_array().is_some_and(|all| {
        all.iter().any(|f| {
            f["layer"] == layer
                && f["effect"] == effect
                && f["what"].as_str().is_some_and(|w| w.contains(words))
                && f["fix"].as_str().is_some_and(|w| !w.is_empty())
        })
    })
}

#[test]
fn a_ready_workstation_has_no_finding_and_installs_the_driver() {
    let lab = Lab::new();
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(!plan.contains("host readiness"), "{plan}");
    assert_eq!(lab.json(&["plan"])["readiness"], serde_json::json!([]));
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(lab.order(), ["driver"]);
}

#[test]
fn nouveau_loaded_blocks_the_driver_with_the_blacklist_fix() {
    let lab = Lab::new();
    lab.root.nouveau_loaded();
    lab.assert_blocks(
        "driver",
        "The Nouveau kernel driver is currently in use",
        "/etc/modprobe.d/blacklist-nouveau.conf",
    );
}

#[test]
fn a_running_x_server_blocks_the_driver() {
    let lab = Lab::new();
    lab.root.x_running();
    lab.assert_blocks(
        "driver",
        "/tmp/.X0-lock exists",
        "systemctl isolate multi-user.target",
    );
}

#[test]
fn no_headers_for_the_running_kernel_blocks_the_driver() {
    let lab = Lab::new();
    lab.root.no_headers();
    lab.assert_blocks(
        "driver",
        "Unable to find the kernel source tree",
        "linux-headers-6.8.0-50-generic",
    );
}

#[test]
fn a_gcc_other_than_the_kernels_blocks_the_driver() {
    let lab = Lab::new();
    lab.root.gcc("12.3.0");
    lab.assert_blocks(
        "driver",
        "the kernel was built with gcc 13.2.0 but `gcc` here is 12.3.0",
        "gcc-13",
    );
}

#[test]
fn secure_boot_without_a_signing_key_is_refused_with_the_choice_explained() {
    let lab = Lab::new();
    lab.root.secure_boot_on();
    lab.assert_blocks(
        "driver",
        "Secure Boot is on (the SecureBoot EFI variable)",
        "--module-signing-secret-key",
    );
    let (_, plan) = lab.run(&["plan"]);
    assert!(plan.contains("turn Secure Boot off"), "{plan}");
}

#[test]
fn secure_boot_with_a_signing_key_warns_about_enrolment_and_installs() {
    let lab = Lab::with_driver_flags(
        ", \"--module-signing-secret-key=/root/mok.key\", \"--module-signing-public-key=/root/mok.der\"",
    );
    lab.root.secure_boot_on();
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(plan.contains("driver warns"), "{plan}");
    assert!(plan.contains("mokutil --import"), "{plan}");
    assert!(carries(
        &lab.json(&["plan"])["readiness"],
        "driver",
        "warns",
        "signed with the key"
    ));
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(lab.order(), ["driver"]);
}

#[test]
fn a_driver_from_the_package_manager_blocks_the_runfile() {
    let lab = Lab::new();
    lab.root.packaged_driver();
    lab.assert_blocks(
        "driver",
        "nvidia-driver-550 550.120-0ubuntu0.24.04.1",
        "apt-get purge",
    );
}

#[test]
fn a_tmp_too_small_for_the_cuda_runfile_blocks_the_toolkit_when_no_disk_has_room() {
    let lab = Lab::new();
    lab.root.tmp_free_gib(2);
    // The archive's disk (where install would extract instead) is short too.
    lab.root.root_free_gib(3);
    lab.assert_blocks("toolkit", "Not enough space on parition", "--tmpdir DIR");
}

#[test]
fn wsl_without_a_windows_driver_blocks_and_never_installs_the_linux_one() {
    let lab = Lab::new();
    lab.root.wsl();
    lab.assert_blocks("driver", "inside WSL (/dev/dxg exists)", "on Windows");
}

#[test]
fn wsl_with_a_good_windows_driver_skips_the_driver_layer() {
    let lab = Lab::new();
    lab.root.wsl();
    // Windows' driver runs CUDA 12.4.1 (minimum 550.54.14) but is not the pinned one.
    lab.host.set_driver_state(DriverMode::Ok, "560.94", "12.6");
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        plan.contains("driver skips") && plan.contains("skipped"),
        "{plan}"
    );
    assert!(!plan.contains("reboot after the driver"), "{plan}");
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("skipped"), "{out}");
    assert_eq!(lab.order(), ["toolkit", "library"], "{out}");
}

#[test]
fn a_container_blocks_the_driver_layer() {
    let lab = Lab::new();
    lab.root.container();
    lab.assert_blocks(
        "driver",
        "inside a container (/.dockerenv exists)",
        "docker run --gpus all",
    );
}

#[test]
fn on_a_machine_like_ci_plan_names_the_container_and_each_missing_build_piece() {
    // A container whose kernel loads no modules: no /lib/modules, no DKMS, a gcc other than the
    // kernel's.
    let lab = Lab::new();
    lab.root.container();
    lab.root.no_headers();
    lab.root.no_dkms();
    lab.root.gcc("12.2.0");
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(1), "{plan}");
    for words in [
        "inside a container",
        "Unable to find the kernel source tree",
        "`dkms` not found",
        "`gcc` here is 12.2.0",
    ] {
        assert!(plan.contains(words), "{words}: {plan}");
    }
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(lab.order().is_empty(), "no driver installer may run: {out}");
}

#[test]
fn a_refusal_the_preflight_only_warns_about_surfaces_the_runfile_logs_first_error() {
    // An older driver's nvidia_drm is loaded: a warning (it may be unloadable), but this fake
    // runfile refuses as NVIDIA's does when something holds the module.
    let lab = Lab::new();
    lab.root.nvidia_drm_loaded();
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        plan.contains("driver warns: nvidia_drm is loaded"),
        "{plan}"
    );
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(3), "{out}");
    assert_eq!(lab.order(), ["driver"]);
    assert!(
        out.contains(&format!(
            "{} says: ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be loaded",
            lab.root.installer_log().display()
        )),
        "{out}"
    );
}

#[test]
fn the_fake_driver_runfile_refuses_nouveau_with_nvidias_message_and_log() {
    let lab = Lab::new();
    lab.root.nouveau_loaded();
    let script = lab.host.root().join("driver.run");
    std::fs::write(&script, refusing_driver_script(&lab.host)).expect("script");
    let out = std::process::Command::new("sh")
        .arg(&script)
        .env("STACKPIN_HOST_ROOT", lab.root.path())
        .output()
        .expect("sh runs");
    assert_eq!(out.status.code(), Some(1));
    let log = std::fs::read_to_string(lab.root.installer_log()).expect("log written");
    assert!(
        log.contains("ERROR: The Nouveau kernel driver is currently in use by your system."),
        "{log}"
    );
    assert!(text(&out).contains("Please see the file"), "{}", text(&out));
}

#[test]
fn up_refuses_on_the_same_findings_before_any_installer_runs() {
    let lab = Lab::new();
    lab.root.x_running();
    lab.root.no_headers();
    let (code, out) = lab.run(&["up", "--yes"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("install refused before any layer ran (2 problems)")
            && out.contains("running an X server")
            && out.contains("kernel source tree"),
        "{out}"
    );
    assert!(lab.order().is_empty(), "no installer may run: {out}");
}
