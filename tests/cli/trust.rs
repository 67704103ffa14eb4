//! The trust chain and the one process runner, tried as a hostile user and a hostile installer
//! would: an installer rewritten together with its lock line (a marker file proves nothing ran),
//! a `.run` stand-in whose child holds the pipes past the timeout, two installs at once, a
//! `kill -9` mid-install, a `verify:` command that `plan` must not run, and one 300 MB line.
#![cfg(unix)]

use crate::common::OutputStarted;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use crate::fakes::FakeHost;
use crate::hostile::{
    Watched, alive, child_holding_the_pipes, gone_within, one_enormous_line, pid_in, sha, signal,
    signal_group, tamper_with_lock,
};
use crate::install::{driver_script, library_script, order_log, toolkit_script};
use crate::prove::example_script;
use crate::server::TestServer;

const DRIVER: &str = "595.71.05";
const TOOLKIT_FILE: &str = "cuda_12.4.1_550.54.15_linux.run";
const STACK: &str = "fake-trust";

/// How the vault's stack differs from the plain one.
#[derive(Default)]
struct Setup {
    /// The toolkit installer's body (default: the install tests' fake toolkit installer).
    toolkit: Option<String>,
    /// Extra lines under `toolkit:` (a timeout, a verify command).
    toolkit_extra: String,
    /// The example's body and timeout (default: the prove tests' example, 60 s).
    example: Option<(String, &'static str)>,
}

/// A host with the whole stack in place and every installer pinned by sha256 in the manifest,
/// fetched into the archive.
struct Vault {
    host: FakeHost,
    _server: TestServer,
    manifest: PathBuf,
}

impl Vault {
    fn fetched(setup: Setup) -> Self {
        let host = FakeHost::l4_workstation();
        std::fs::write(host.nvidia().join("memory.csv"), "7300\n").expect("idle memory");
        std::fs::write(host.nvidia().join("apps.csv"), "4242, 7000\n").expect("other job");
        let (example, example_timeout) = setup
            .example
            .unwrap_or_else(|| (example_script(&host, false, false), "60s"));
        let script = host.root().join("example.sh");
        std::fs::write(&script, example).expect("example");
        let driver = driver_script(&host);
        let toolkit = setup.toolkit.unwrap_or_else(|| toolkit_script(&host));
        let library = library_script(&host);
        let server = TestServer::start();
        server.file("NVIDIA-Linux-x86_64-595.71.05.run", driver.as_bytes());
        server.file(TOOLKIT_FILE, toolkit.as_bytes());
        server.file("install-torch.sh", library.as_bytes());
        let manifest = host.root().join("stack.yaml");
        let yaml = format!(
            "schema: 1\nname: {STACK}\nos: linux\n\
             driver:\n  version: \"{DRIVER}\"\n  installer:\n    url: {d}\n    sha256: {ds}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"]\n\
             toolkit:\n{extra}  version: \"12.4.1\"\n  installer:\n    url: {t}\n    sha256: {ts}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n      sha256: {ls}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"sh\", \"{script}\", \"{{batch}}\"]\n  timeout: {example_timeout}\n\
             vram:\n  line: 0.8\n  batches: [16, 32, 64]\n",
            d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            ds = sha(driver.as_bytes()),
            t = server.url(TOOLKIT_FILE),
            ts = sha(toolkit.as_bytes()),
            l = server.url("install-torch.sh"),
            ls = sha(library.as_bytes()),
            extra = setup.toolkit_extra,
            root = host.toolkit_root("12.4.1").display(),
            script = script.display(),
        );
        std::fs::write(&manifest, yaml).expect("manifest");
        let vault = Self {
            host,
            _server: server,
            manifest,
        };
        let out = vault.run(&["fetch"]);
        assert!(out.status.success(), "fetch: {}", text(&out));
        vault
    }

    fn proven(setup: Setup) -> Self {
        let vault = Self::fetched(setup);
        let out = vault.run(&["prove"]);
        assert!(out.status.success(), "prove: {}", text(&out));
        vault
    }

    fn command(&self, args: &[&str]) -> Command {
        self.host.installing(
            args.iter()
                .copied()
                .chain([self.manifest.to_str().expect("utf-8 path")]),
        )
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output_started().expect("stackpin runs")
    }

    fn watch(&self, args: &[&str], tag: &str) -> Watched {
        Watched::start(self.command(args), self.host.root(), tag)
    }

    fn archive(&self) -> PathBuf {
        self.host.archive()
    }

    fn stack(&self) -> PathBuf {
        self.archive().join(STACK)
    }

    fn marker(&self) -> PathBuf {
        self.host.root().join("tampered-installer-ran")
    }

    /// Rewrites the archived toolkit installer and its lock line; the new one leaves a marker.
    fn tamper_toolkit(&self) -> (String, String) {
        let body = format!("#!/bin/sh\ntouch '{}'\n", self.marker().display());
        tamper_with_lock(&self.stack(), "toolkit", TOOLKIT_FILE, &body)
    }

    fn order(&self) -> Vec<String> {
        std::fs::read_to_string(order_log(&self.host))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

fn text(out: &Output) -> String {
    crate::common::text(out)
}

/// The refusal names the pinning field, both hashes and the fix.
fn assert_refused_with_both_hashes(all: &str, pinned: &str, locked: &str) {
    assert!(all.contains("toolkit.installer.sha256"), "{all}");
    assert!(all.contains(pinned) && all.contains(locked), "{all}");
    assert!(all.contains("stackpin fetch"), "{all}");
}

#[test]
fn install_refuses_an_installer_rewritten_together_with_its_lock_line() {
    let vault = Vault::fetched(Setup::default());
    let (pinned, locked) = vault.tamper_toolkit();
    let out = vault.run(&["install", "--yes", "--force", "toolkit"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_refused_with_both_hashes(&all, &pinned, &locked);
    assert!(!vault.marker().exists(), "the tampered installer ran");
}

#[test]
fn repair_refuses_an_installer_rewritten_together_with_its_lock_line() {
    let vault = Vault::proven(Setup::default());
    std::fs::remove_dir_all(vault.host.toolkit_root("12.4.1")).expect("toolkit drifts away");
    let (pinned, locked) = vault.tamper_toolkit();
    let out = vault.run(&["repair", "--yes"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains(&pinned) && all.contains(&locked), "{all}");
    assert!(!vault.marker().exists(), "the tampered installer ran");
}

#[test]
fn up_refuses_an_installer_rewritten_together_with_its_lock_line() {
    let vault = Vault::fetched(Setup::default());
    std::fs::remove_dir_all(vault.host.toolkit_root("12.4.1")).expect("toolkit missing");
    let (pinned, locked) = vault.tamper_toolkit();
    let out = vault.run(&["up", "--yes"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains(&pinned) && all.contains(&locked), "{all}");
    assert!(!vault.marker().exists(), "the tampered installer ran");
}

#[test]
fn unbundle_refuses_a_bundle_whose_file_and_lock_line_were_both_rewritten() {
    let vault = Vault::fetched(Setup::default());
    let (pinned, locked) = vault.tamper_toolkit();
    let zip = vault.host.root().join("stack.zip");
    let bundled = vault.run(&["bundle", "-o", zip.to_str().expect("utf-8")]);
    assert!(bundled.status.success(), "{}", text(&bundled));

    let elsewhere = vault.host.root().join("elsewhere");
    let out = vault
        .host
        .stackpin(["unbundle", zip.to_str().expect("utf-8")])
        .env("STACKPIN_ARCHIVE", &elsewhere)
        .output_started()
        .expect("stackpin runs");
    let all = text(&out);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert_refused_with_both_hashes(&all, &pinned, &locked);
    assert!(
        !elsewhere.join(STACK).join("stack.lock").exists(),
        "nothing is kept"
    );

    // And nothing installs from it.
    let install = vault
        .command(&["install", "--yes", "--force", "toolkit"])
        .env("STACKPIN_ARCHIVE", &elsewhere)
        .output_started()
        .expect("stackpin runs");
    assert_ne!(install.status.code(), Some(0), "{}", text(&install));
    assert!(!vault.marker().exists(), "the tampered installer ran");
}

#[test]
fn audit_and_status_name_the_pin_that_a_lock_line_disagrees_with() {
    let vault = Vault::fetched(Setup::default());
    let (pinned, locked) = vault.tamper_toolkit();
    let audit = vault.run(&["audit"]);
    let all = text(&audit);
    assert_eq!(audit.status.code(), Some(1), "{all}");
    assert!(all.contains("untrusted"), "{all}");
    assert_refused_with_both_hashes(&all, &pinned, &locked);

    let status = vault.run(&["status"]);
    let all = text(&status);
    assert_eq!(status.status.code(), Some(1), "{all}");
    assert_refused_with_both_hashes(&all, &pinned, &locked);
}

#[test]
fn installers_run_from_a_private_staged_copy_never_from_the_archive() {
    let seen = std::env::temp_dir().join(format!("stackpin-staged-{}", std::process::id()));
    let _ = std::fs::remove_file(&seen);
    let host_probe = format!(
        "#!/bin/sh\necho \"$0\" > '{s}'\nstat -c %a \"$(dirname \"$0\")\" >> '{s}'\n",
        s = seen.display()
    );
    let vault = Vault::fetched(Setup {
        toolkit: Some(host_probe),
        ..Setup::default()
    });
    let out = vault.run(&["install", "--yes", "--force", "toolkit"]);
    let report = std::fs::read_to_string(&seen).expect("the installer ran");
    let _ = std::fs::remove_file(&seen);
    let mut lines = report.lines();
    let ran = PathBuf::from(lines.next().expect("its path"));
    assert_ne!(
        ran,
        vault.stack().join("toolkit").join(TOOLKIT_FILE),
        "{}",
        text(&out)
    );
    assert!(ran.ends_with(TOOLKIT_FILE), "{}", ran.display());
    assert_eq!(
        lines.next(),
        Some("700"),
        "the staging folder is owner-only"
    );
    assert!(!ran.exists(), "the staged copy is removed after the step");
}

#[test]
fn a_run_file_whose_child_holds_the_pipes_is_ended_with_its_child_at_the_timeout() {
    let pidfile = std::env::temp_dir().join(format!("stackpin-run-child-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let vault = Vault::fetched(Setup {
        toolkit: Some(child_holding_the_pipes(&pidfile)),
        toolkit_extra: "  timeout: 5s\n".into(),
        ..Setup::default()
    });
    let run = vault.watch(&["install", "--yes", "--force", "toolkit"], "timeout");
    let child = pid_in(&pidfile);
    let _ = std::fs::remove_file(&pidfile);
    let done = run.finish(Duration::from_secs(60), &[child]);
    assert_eq!(done.code, Some(3), "{}", done.text());
    assert!(done.took < Duration::from_secs(20), "took {:?}", done.took);
    assert!(done.text().contains("timeout"), "{}", done.text());
    assert!(gone_within(child, Duration::from_secs(2)), "orphan {child}");
}

#[test]
fn an_example_whose_child_holds_the_pipes_is_ended_with_its_child_at_the_timeout() {
    let pidfile = std::env::temp_dir().join(format!("stackpin-ex-child-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let vault = Vault::fetched(Setup {
        example: Some((child_holding_the_pipes(&pidfile), "3s")),
        ..Setup::default()
    });
    let run = vault.watch(&["prove"], "example");
    let child = pid_in(&pidfile);
    let _ = std::fs::remove_file(&pidfile);
    let done = run.finish(Duration::from_secs(60), &[child]);
    assert_eq!(done.code, Some(3), "{}", done.text());
    assert!(done.took < Duration::from_secs(20), "took {:?}", done.took);
    assert!(gone_within(child, Duration::from_secs(2)), "orphan {child}");
}

#[test]
fn a_kill_9_of_prove_ends_the_example_with_it() {
    let pidfile = std::env::temp_dir().join(format!("stackpin-ex-kill9-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let vault = Vault::fetched(Setup {
        example: Some((child_holding_the_pipes(&pidfile), "120s")),
        ..Setup::default()
    });
    let run = vault.watch(&["prove"], "prove-kill-9");
    let child = pid_in(&pidfile);
    let _ = std::fs::remove_file(&pidfile);
    signal(run.pid(), "KILL");
    let finished = run.finish(Duration::from_secs(20), &[]);
    let gone = gone_within(child, Duration::from_secs(5));
    if !gone {
        signal_group(child, "KILL");
    }
    assert!(
        gone,
        "the example {child} outlived a killed prove: {}",
        finished.text()
    );
}

#[test]
fn measure_for_ends_the_command_and_its_child() {
    let vault = Vault::fetched(Setup::default());
    let pidfile = vault.host.root().join("measured-child.pid");
    let script = vault.host.root().join("service.sh");
    std::fs::write(&script, child_holding_the_pipes(&pidfile)).expect("script");
    let cmd = {
        let mut c = vault.host.stackpin(["measure", "--for", "2s", "--", "sh"]);
        c.arg(&script);
        c
    };
    let run = Watched::start(cmd, vault.host.root(), "measure");
    let child = pid_in(&pidfile);
    let done = run.finish(Duration::from_secs(60), &[child]);
    assert_eq!(done.code, Some(0), "{}", done.text());
    assert!(done.took < Duration::from_secs(15), "took {:?}", done.took);
    assert!(gone_within(child, Duration::from_secs(2)), "orphan {child}");
}

#[test]
fn a_second_ctrl_c_ends_the_measured_command_and_its_child() {
    let vault = Vault::fetched(Setup::default());
    let pidfile = vault.host.root().join("interrupted-child.pid");
    let script = vault.host.root().join("service.sh");
    std::fs::write(&script, child_holding_the_pipes(&pidfile)).expect("script");
    let cmd = {
        let mut c = vault.host.stackpin(["measure", "--", "sh"]);
        c.arg(&script);
        c
    };
    let mut run = Watched::start(cmd, vault.host.root(), "ctrl-c");
    let child = pid_in(&pidfile);
    signal(run.pid(), "INT");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        run.child.try_wait().expect("try_wait").is_none(),
        "the first Ctrl-C waits for the command"
    );
    assert!(alive(child), "the first Ctrl-C leaves the command running");
    signal(run.pid(), "INT");
    let done = run.finish(Duration::from_secs(30), &[child]);
    assert!(done.took < Duration::from_secs(15), "took {:?}", done.took);
    assert!(done.stderr.contains("Ctrl-C again"), "{}", done.text());
    assert!(gone_within(child, Duration::from_secs(2)), "orphan {child}");
}

/// A toolkit installer that logs `start` and `end` around a pause (and installs the toolkit).
/// The toolkit installer, pausing `pause_s` seconds before it installs, or until a file
/// `<log>.go` appears (a test that has seen what it waited for lets later runs go at once).
fn logged_slow_toolkit(host: &FakeHost, log: &std::path::Path, pause_s: u32) -> String {
    let body = toolkit_script(host);
    let rest = body.strip_prefix("#!/bin/sh\n").expect("a shell script");
    format!(
        "#!/bin/sh\necho start >> '{log}'\necho $$ > '{log}.pid'\n\
         i=0; while [ $i -lt {tenths} ] && [ ! -e '{log}.go' ]; do sleep 0.1; i=$((i+1)); done\n\
         {rest}echo end >> '{log}'\n",
        log = log.display(),
        tenths = pause_s * 10,
    )
}

#[test]
fn two_installs_of_one_stack_never_overlap() {
    let log = std::env::temp_dir().join(format!("stackpin-overlap-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let vault = slow_vault(&log, 2);
    let first = vault.watch(&["install", "--yes", "--force", "toolkit"], "first");
    let second = vault.watch(&["install", "--yes", "--force", "toolkit"], "second");
    let first = first.finish(Duration::from_secs(60), &[]);
    let second = second.finish(Duration::from_secs(60), &[]);
    let order = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(log.with_extension("pid"));
    assert_eq!(first.code, Some(0), "{}", first.text());
    assert_eq!(second.code, Some(0), "{}", second.text());
    assert_eq!(
        order.lines().collect::<Vec<_>>(),
        ["start", "end", "start", "end"],
        "the toolkit installer ran twice at once"
    );
    assert!(
        format!("{}{}", first.stderr, second.stderr).contains("waiting for it to finish"),
        "{}\n{}",
        first.text(),
        second.text()
    );
}

/// A vault whose toolkit installer pauses `pause_s` seconds, logging to `log`.
fn slow_vault(log: &std::path::Path, pause_s: u32) -> Vault {
    let v = Vault::fetched(Setup::default());
    let body = logged_slow_toolkit(&v.host, log, pause_s);
    let _ = tamper_with_lock(&v.stack(), "toolkit", TOOLKIT_FILE, &body);
    let yaml = std::fs::read_to_string(&v.manifest).expect("manifest");
    let old = sha(toolkit_script(&v.host).as_bytes());
    std::fs::write(&v.manifest, yaml.replace(&old, &sha(body.as_bytes()))).expect("pin updated");
    v
}

fn wait_for_start(log: &std::path::Path) {
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(log).is_ok_and(|t| t.contains("start")) {
        assert!(start.elapsed() < Duration::from_secs(30), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn no_wait_exits_1_while_another_install_holds_the_stack() {
    let log = std::env::temp_dir().join(format!("stackpin-nowait-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let vault = slow_vault(&log, 3);
    let first = vault.watch(&["install", "--yes", "--force", "toolkit"], "holder");
    wait_for_start(&log);
    let second = vault.run(&["install", "--yes", "--force", "toolkit", "--no-wait"]);
    let first = first.finish(Duration::from_secs(60), &[]);
    let order = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(log.with_extension("pid"));
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    assert!(text(&second).contains("--no-wait"), "{}", text(&second));
    assert_eq!(first.code, Some(0), "{}", first.text());
    assert_eq!(order.lines().collect::<Vec<_>>(), ["start", "end"]);
}

#[test]
fn a_killed_install_is_seen_as_interrupted_never_as_done() {
    let log = std::env::temp_dir().join(format!("stackpin-killed-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let vault = slow_vault(&log, 30);
    let run = vault.watch(&["install", "--yes", "--force", "toolkit"], "killed");
    wait_for_start(&log);
    let installer = pid_in(&PathBuf::from(format!("{}.pid", log.display())));
    // While the install holds the stack, its step is running, not interrupted.
    let during = vault.run(&["status"]);
    assert!(
        text(&during).contains("toolkit running now"),
        "{}",
        text(&during)
    );
    assert!(!text(&during).contains("interrupted"), "{}", text(&during));
    signal(run.pid(), "KILL");
    let _ = run.finish(Duration::from_secs(10), &[]);
    // The installer runs in a process group of its own, which stackpin's kill -9 did not reach.
    signal_group(installer, "KILL");
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(log.with_extension("pid"));

    let state = std::fs::read_to_string(vault.stack().join("state.yaml")).expect("state");
    assert!(state.contains("running"), "{state}");
    let status = vault.run(&["status"]);
    let all = text(&status);
    assert_eq!(status.status.code(), Some(1), "{all}");
    assert!(all.contains("toolkit step was interrupted"), "{all}");
    let doctor = vault.run(&["doctor"]);
    assert!(
        text(&doctor).contains("toolkit step was interrupted"),
        "{}",
        text(&doctor)
    );
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor));
    let again = vault.run(&["install", "--yes", "--dry-run"]);
    assert!(
        text(&again).contains("toolkit step was interrupted"),
        "{}",
        text(&again)
    );
}

#[test]
fn plan_shows_verify_commands_and_runs_them_only_with_probe() {
    let marker = std::env::temp_dir().join(format!("stackpin-verify-ran-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let vault = Vault::fetched(Setup {
        toolkit_extra: format!(
            "  verify: [\"sh\", \"-c\", \"touch '{}'\"]\n",
            marker.display()
        ),
        ..Setup::default()
    });
    let plan = vault.run(&["plan"]);
    let all = text(&plan);
    assert!(!marker.exists(), "plan ran a verify command: {all}");
    assert!(
        all.contains(&format!("touch '{}'", marker.display())),
        "{all}"
    );
    assert!(all.contains("--probe"), "{all}");
    assert!(vault.order().is_empty(), "plan runs no installer");

    let probed = vault.run(&["plan", "--probe"]);
    assert!(marker.exists(), "--probe runs it: {}", text(&probed));
    let _ = std::fs::remove_file(&marker);

    let help = vault
        .host
        .stackpin(["plan", "--help"])
        .output_started()
        .expect("help");
    assert!(text(&help).contains("--probe"), "{}", text(&help));
    assert!(text(&help).contains("read-only"), "{}", text(&help));
}

#[test]
fn a_300_mb_line_keeps_rss_bounded_and_prints_a_bounded_tail() {
    let vault = Vault::fetched(Setup {
        toolkit: Some(one_enormous_line(300_000_000)),
        ..Setup::default()
    });
    let run = vault.watch(&["install", "--yes", "--force", "toolkit"], "enormous");
    let done = run.finish(Duration::from_secs(300), &[]);
    assert_eq!(
        done.code,
        Some(3),
        "{}",
        &done.stderr[..done.stderr.len().min(2000)]
    );
    eprintln!(
        "300 MB line: peak RSS {} KiB, stderr {} bytes, {:?}",
        done.peak_rss_kib,
        done.stderr.len(),
        done.took
    );
    assert!(
        done.peak_rss_kib < 128 * 1024,
        "peak RSS {} KiB",
        done.peak_rss_kib
    );
    assert!(
        done.stderr.len() < 64 * 1024,
        "stderr is {} bytes",
        done.stderr.len()
    );
    assert!(
        done.stderr.contains("ERROR: the end of it"),
        "{}",
        done.stderr
    );
    let logs: Vec<_> = std::fs::read_dir(vault.stack().join("logs"))
        .expect("logs")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("toolkit-"))
        .collect();
    assert_eq!(logs.len(), 1);
    let size = logs[0].metadata().expect("log").len();
    assert!(
        size >= 300_000_000,
        "the whole line is streamed to the log: {size}"
    );
    let _ = std::fs::remove_file(logs[0].path());
}

/// The guard's pid: the installer's parent (stackpin starts each step under a guard).
fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = stat.rsplit_once(") ").expect("stat fields").1;
    rest.split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("ppid")
}

#[test]
fn the_installer_dies_with_stackpin_on_kill_9_sigterm_and_sighup() {
    for (signal_name, tag) in [("KILL", "kill"), ("TERM", "term"), ("HUP", "hup")] {
        let log =
            std::env::temp_dir().join(format!("stackpin-orphan-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let vault = slow_vault(&log, 60);
        let run = vault.watch(&["install", "--yes", "--force", "toolkit"], tag);
        wait_for_start(&log);
        let installer = pid_in(&PathBuf::from(format!("{}.pid", log.display())));
        signal(run.pid(), signal_name);
        let finished = run.finish(Duration::from_secs(20), &[]);
        let gone = gone_within(installer, Duration::from_secs(5));
        if !gone {
            signal_group(installer, "KILL");
        }
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(log.with_extension("pid"));
        assert!(
            gone,
            "SIG{signal_name}: the installer {installer} outlived stackpin: {}",
            finished.text()
        );
        let state = std::fs::read_to_string(vault.stack().join("state.yaml")).expect("state");
        if signal_name == "KILL" {
            assert!(state.contains("running"), "{state}");
        } else {
            // Handled like a second Ctrl-C: the tree ended, the chain says where it stopped.
            assert!(
                finished.text().contains(&format!("SIG{signal_name}")),
                "{}",
                finished.text()
            );
            assert!(!state.contains("running"), "{state}");
            assert!(state.contains("interrupted_at: toolkit"), "{state}");
        }
        let status = vault.run(&["status"]);
        assert!(
            text(&status).contains("interrupted"),
            "SIG{signal_name}: {}",
            text(&status)
        );
    }
}

#[test]
fn a_lock_left_by_a_killed_stackpin_is_not_stale_while_its_installer_runs() {
    let log = std::env::temp_dir().join(format!("stackpin-outlived-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let vault = slow_vault(&log, 60);
    let run = vault.watch(&["install", "--yes", "--force", "toolkit"], "outlived");
    wait_for_start(&log);
    let installer = pid_in(&PathBuf::from(format!("{}.pid", log.display())));
    // stackpin and its guard killed at once: nothing is left to end the installer's tree.
    let guard = parent_of(installer);
    signal(guard, "KILL");
    signal(run.pid(), "KILL");
    let _ = run.finish(Duration::from_secs(10), &[]);
    assert!(alive(installer), "the installer should outlive both here");

    let second = vault.run(&["install", "--yes", "--force", "toolkit", "--no-wait"]);
    let starts = std::fs::read_to_string(&log).unwrap_or_default();
    // The guard led the step's process group: the installer is still in it.
    signal_group(guard, "KILL");
    assert!(gone_within(installer, Duration::from_secs(5)));
    let go = PathBuf::from(format!("{}.go", log.display()));
    std::fs::write(&go, "").expect("go marker");
    let third = vault.run(&["install", "--yes", "--force", "toolkit", "--no-wait"]);
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(log.with_extension("pid"));
    let _ = std::fs::remove_file(&go);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    assert!(
        text(&second).contains(&format!("process group {guard}")),
        "{}",
        text(&second)
    );
    assert_eq!(
        starts.matches("start").count(),
        1,
        "a second installer started beside the first: {starts}"
    );
    assert_eq!(third.status.code(), Some(0), "{}", text(&third));
}

#[test]
fn two_stacks_never_run_their_installers_at_the_same_time() {
    let machine = tempfile::tempdir().expect("machine lock folder");
    let log = std::env::temp_dir().join(format!("stackpin-two-stacks-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let (a, b) = (slow_vault(&log, 2), slow_vault(&log, 2));
    let start = |vault: &Vault, tag: &str| {
        let mut cmd = vault.command(&["install", "--yes", "--force", "toolkit"]);
        cmd.env("STACKPIN_LOCK_DIR", machine.path());
        Watched::start(cmd, vault.host.root(), tag)
    };
    let first = start(&a, "a");
    wait_for_start(&log);
    let second = start(&b, "b");
    let first = first.finish(Duration::from_secs(60), &[]);
    let second = second.finish(Duration::from_secs(60), &[]);
    let order = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(log.with_extension("pid"));
    assert_eq!(first.code, Some(0), "{}", first.text());
    assert_eq!(second.code, Some(0), "{}", second.text());
    assert_eq!(
        order.lines().collect::<Vec<_>>(),
        ["start", "end", "start", "end"],
        "{}",
        second.text()
    );
    assert!(
        second
            .text()
            .contains("machine.lock is held by stackpin pid"),
        "the second install says what it waits for: {}",
        second.text()
    );
}

#[test]
fn an_install_never_replaces_the_library_under_a_running_proof() {
    let vault = Vault::fetched(Setup::default());
    let script = vault.host.root().join("example.sh");
    let body = std::fs::read_to_string(&script).expect("example");
    let started = vault.host.root().join("example-started");
    let rest = body.strip_prefix("#!/bin/sh\n").expect("a shell script");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\nsleep 2\n{rest}", started.display()),
    )
    .expect("slow example");
    let proof = vault.watch(&["prove"], "proof");
    let since = std::time::Instant::now();
    while !started.exists() {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "the example never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let install = vault.run(&["install", "--yes", "--force", "library", "--no-wait"]);
    let proof = proof.finish(Duration::from_secs(120), &[]);
    assert_eq!(install.status.code(), Some(1), "{}", text(&install));
    assert!(
        text(&install).contains("this stack's proof lock"),
        "{}",
        text(&install)
    );
    assert!(
        !text(&install).contains("→ library"),
        "the library step ran under the proof: {}",
        text(&install)
    );
    assert_eq!(proof.code, Some(0), "{}", proof.text());
}

/// The words of the first backticked command in `text`, as a shell would split them.
fn hinted_command(text: &str) -> Vec<String> {
    let start = text
        .find("`stackpin ")
        .expect("a backticked stackpin command")
        + 1;
    let len = text[start..].find('`').expect("closing backtick");
    shlex::split(&text[start..start + len]).expect("the hint splits as shell words")
}

#[test]
fn hints_quote_paths_that_hold_shell_syntax() {
    let vault = Vault::fetched(Setup::default());
    let odd = vault.host.root().join("lab $(touch pwned) 'q'");
    std::fs::create_dir_all(&odd).expect("odd folder");
    let manifest = odd.join("stack.yaml");
    std::fs::copy(&vault.manifest, &manifest).expect("manifest copy");
    let manifest_arg = manifest.to_str().expect("utf-8");

    let fetched = vault
        .host
        .installing(["fetch", manifest_arg])
        .output_started()
        .expect("fetch");
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let words = hinted_command(&text(&fetched));
    assert_eq!(words[..2], ["stackpin", "audit"], "{}", text(&fetched));
    assert!(words.contains(&manifest_arg.to_string()), "{words:?}");

    let zip = odd.join("lab $(touch pwned).zip");
    let bundled = vault
        .host
        .installing(["bundle", manifest_arg, "-o", zip.to_str().expect("utf-8")])
        .output_started()
        .expect("bundle");
    assert_eq!(bundled.status.code(), Some(0), "{}", text(&bundled));
    let words = hinted_command(&text(&bundled));
    assert_eq!(words[..2], ["stackpin", "unbundle"]);
    assert!(words.contains(&zip.display().to_string()), "{words:?}");

    let pinned = odd.join("pinned $(touch pwned).yaml");
    let pin = vault
        .host
        .stackpin([
            "pin",
            "--library",
            "torch==2.5.1",
            "--os",
            "linux",
            "--python",
            "3.11",
            "-o",
            pinned.to_str().expect("utf-8"),
        ])
        .output_started()
        .expect("pin");
    assert_eq!(pin.status.code(), Some(0), "{}", text(&pin));
    let words = hinted_command(&text(&pin));
    assert_eq!(
        words,
        ["stackpin", "check", pinned.to_str().expect("utf-8")]
    );
    assert!(!vault.host.root().join("pwned").exists());
}

#[test]
fn a_closed_pipe_ends_quietly_and_a_full_disk_is_an_error() {
    let vault = Vault::fetched(Setup::default());
    let mut plan = vault.command(&["plan"]);
    let mut child = plan
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("plan starts");
    // `| head -c0`: the reader is gone before the first line.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("plan ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = vault
        .command(&["status"])
        .stdout(full)
        .output_started()
        .expect("status");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("cannot write to stdout"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn inputs_are_read_with_a_cap_and_symlinks_are_refused() {
    let vault = Vault::fetched(Setup::default());
    let started = std::time::Instant::now();
    let zero = vault
        .host
        .stackpin(["check", "/dev/zero"])
        .output_started()
        .expect("check");
    assert_eq!(zero.status.code(), Some(2), "{}", text(&zero));
    assert!(text(&zero).contains("larger than"), "{}", text(&zero));
    assert!(started.elapsed() < Duration::from_secs(30));

    // A record swapped for a link to a secret is never bundled.
    let secret = vault.host.root().join("secret");
    std::fs::write(&secret, "root:$6$hash").expect("secret");
    let record = vault.stack().join("proven-stack.yaml");
    let _ = std::fs::remove_file(&record);
    std::os::unix::fs::symlink(&secret, &record).expect("link");
    let zip = vault.host.root().join("lab.zip");
    let bundled = vault.run(&["bundle", "-o", zip.to_str().expect("utf-8")]);
    assert_ne!(bundled.status.code(), Some(0), "{}", text(&bundled));
    assert!(
        text(&bundled).contains("symbolic link"),
        "{}",
        text(&bundled)
    );
    assert!(!zip.exists());
    std::fs::remove_file(&record).expect("unlink");

    // An installer replaced by a link (to a file with the very same bytes) fails the audit.
    let installer = vault.stack().join("toolkit").join(TOOLKIT_FILE);
    let copy = vault.host.root().join("same-bytes.run");
    std::fs::copy(&installer, &copy).expect("copy");
    let mut perms = std::fs::metadata(&installer).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&installer, perms).expect("writable");
    std::fs::remove_file(&installer).expect("rm");
    std::os::unix::fs::symlink(&copy, &installer).expect("link");
    let audit = vault.run(&["audit"]);
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    assert!(text(&audit).contains("corrupt"), "{}", text(&audit));
}

#[test]
fn diagnose_reads_a_huge_log_in_bounded_memory() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("train.log");
    {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&log).expect("log"));
        let line = "epoch 3 step 12345 loss 0.4321 |████████████████░░░░| 38 it/s\n";
        for _ in 0..(200 * 1024 * 1024 / line.len()) {
            out.write_all(line.as_bytes()).expect("write");
        }
        out.write_all(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
            .expect("write");
    }
    let mut cmd = crate::common::stackpin();
    cmd.args(["diagnose", "--host", "none", "--json"]).arg(&log);
    let run = Watched::start(cmd, dir.path(), "diagnose");
    let done = run.finish(Duration::from_secs(300), &[]);
    assert_eq!(done.code, Some(0), "{}", done.text());
    let json: serde_json::Value = serde_json::from_str(&done.stdout).expect("json");
    assert_eq!(json["layer"], "memory", "{json}");
    // Measured loosely here (a debug build, a shared machine); scripts/bench-diagnose.sh
    // measures a release build on 1 GB.
    assert!(
        done.peak_rss_kib < 256 * 1024,
        "peak RSS {} KiB",
        done.peak_rss_kib
    );
}

#[test]
fn unbundle_refuses_an_installer_that_inflates_past_its_locked_size() {
    let vault = Vault::fetched(Setup::default());
    let zip = vault.host.root().join("lab.zip");
    let bundled = vault.run(&["bundle", "-o", zip.to_str().expect("utf-8")]);
    assert_eq!(bundled.status.code(), Some(0), "{}", text(&bundled));
    // The same bundle with the toolkit installer swapped for 64 MiB of zeros (a few KB deflated).
    let bomb = vault.host.root().join("bomb.zip");
    let script = format!(
        "import zipfile\nsrc = zipfile.ZipFile({src:?})\nout = zipfile.ZipFile({dst:?}, 'w', zipfile.ZIP_DEFLATED)\n\
         for info in src.infolist():\n    data = src.read(info)\n    if info.filename.endswith({file:?}):\n        data = bytes(64 * 1024 * 1024)\n    out.writestr(info.filename, data)\nout.close()\n",
        src = zip.display().to_string(),
        dst = bomb.display().to_string(),
        file = TOOLKIT_FILE,
    );
    let made = Command::new("python3")
        .args(["-c", &script])
        .output_started()
        .expect("python3");
    assert!(made.status.success(), "{}", text(&made));
    let elsewhere = vault.host.root().join("elsewhere");
    let unbundled = vault
        .host
        .stackpin(["unbundle", bomb.to_str().expect("utf-8")])
        .env("STACKPIN_ARCHIVE", &elsewhere)
        .output_started()
        .expect("unbundle");
    assert_ne!(unbundled.status.code(), Some(0), "{}", text(&unbundled));
    assert!(
        text(&unbundled).contains("stack.lock allows"),
        "{}",
        text(&unbundled)
    );
    let big = walk_sizes(&elsewhere).into_iter().max().unwrap_or(0);
    assert!(big < 1024 * 1024, "a file of {big} bytes was left unpacked");
}

fn walk_sizes(dir: &std::path::Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    entries
        .filter_map(Result::ok)
        .flat_map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => walk_sizes(&e.path()),
            _ => vec![e.metadata().map_or(0, |m| m.len())],
        })
        .collect()
}
