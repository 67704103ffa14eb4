//! A newcomer's first hour: getting stackpin onto the machine (completions, man page, the
//! archive default in `--help`), consent before anything is installed, and `pin` refusing a
//! release its data does not know.

use crate::common::{run, stackpin};

#[test]
fn completions_bash_prints_a_completion_script() {
    let out = run(stackpin().args(["completions", "bash"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("complete -F _stackpin"),
        "{}",
        out.stdout
    );
    for word in ["install", "prove", "--archive", "--unknown-release"] {
        assert!(out.stdout.contains(word), "completion lacks {word}");
    }
}

#[test]
fn completions_refuse_an_unknown_shell_with_exit_2() {
    let out = run(stackpin().args(["completions", "tcsh"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("bash"), "{}", out.stderr);
}

#[test]
fn man_page_renders_as_roff_with_every_command() {
    let out = run(stackpin().arg("man"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(".TH stackpin 1"), "{}", out.stdout);
    assert!(out.stdout.contains(".SH SUBCOMMANDS"), "{}", out.stdout);
    for sub in [
        "stackpin\\-install(1)",
        "stackpin\\-up(1)",
        "stackpin\\-pin(1)",
    ] {
        assert!(out.stdout.contains(sub), "man page lacks {sub}");
    }
}

#[test]
fn man_has_a_page_for_each_command_the_main_page_lists() {
    let out = run(stackpin().args(["man", "install"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(".TH stackpin-install 1"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\\-\\-yes"), "{}", out.stdout);
    let unknown = run(stackpin().args(["man", "instal"]));
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("install"), "{}", unknown.stderr);
}

#[test]
fn help_states_the_archive_default_for_root_and_for_users() {
    let out = run(stackpin().arg("--help"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("/var/lib/stackpin as root"), "{help}");
    assert!(help.contains("%ProgramData%\\stackpin"), "{help}");
    assert!(help.contains("./installers otherwise"), "{help}");
}

#[test]
fn pin_refuses_a_torch_release_not_in_the_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    let out = run(stackpin()
        .args(pin_args("torch==2.5.9"))
        .arg("-o")
        .arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("torch 2.5.9"), "{}", out.stderr);
    assert!(
        out.stderr.contains("2.5.1"),
        "names what it knows: {}",
        out.stderr
    );
    assert!(out.stderr.contains("--unknown-release"), "{}", out.stderr);
    assert!(
        out.stderr.contains("--with torchvision=="),
        "{}",
        out.stderr
    );
    assert!(!path.exists(), "a refused pin writes nothing");
}

#[test]
fn pin_unknown_release_needs_the_companion_given_explicitly() {
    let out = run(stackpin()
        .args(pin_args("torch==2.5.9"))
        .arg("--unknown-release"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--with torchvision==VERSION"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("torchvision"), "{}", out.stdout);
}

#[test]
fn pin_unknown_release_with_its_companion_writes_both_and_prints_checks_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.yaml");
    let out = run(stackpin()
        .args(pin_args("torch==2.5.9"))
        .args(["--unknown-release", "--with", "torchvision==0.20.9", "-o"])
        .arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let yaml = std::fs::read_to_string(&path).expect("written");
    assert!(yaml.contains("\"torch==2.5.9\""), "{yaml}");
    assert!(yaml.contains("\"torchvision==0.20.9\""), "{yaml}");
    assert!(
        out.stderr.contains("warning: library.version") && out.stderr.contains("you vouch"),
        "check's warning about the unknown release: {}",
        out.stderr
    );
    let check = run(stackpin().arg("check").arg(&path));
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn pin_known_release_keeps_the_datas_companion() {
    let out = run(stackpin().args(pin_args("torch==2.5.1")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("\"torchvision==0.20.1\""),
        "{}",
        out.stdout
    );
    assert!(!out.stderr.contains("warning:"), "{}", out.stderr);
}

/// Pins for Linux with the Python and GPU given, so the test host's own are never probed.
fn pin_args(library: &str) -> [&str; 9] {
    [
        "pin",
        "--library",
        library,
        "--os",
        "linux",
        "--python",
        "3.11",
        "--gpu-arch",
        "8.9",
    ]
}

#[cfg(unix)]
mod consent {
    use std::path::{Path, PathBuf};
    use std::process::Output;

    use crate::common::{OutputStarted, text};
    use crate::fakes::{DriverMode, FakeHost};
    use crate::install::{driver_script, library_script, order_log, toolkit_script};
    use crate::server::TestServer;

    /// A fake host with a fetched archive: every installer would run if install went ahead, and
    /// each appends its layer to `order.log` (the marker that something ran).
    struct Lab {
        host: FakeHost,
        _server: TestServer,
        manifest: PathBuf,
    }

    impl Lab {
        fn new() -> Self {
            let host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9");
            host.set_driver_state(DriverMode::NoDriver, "", "");
            let server = TestServer::start();
            let files = [
                ("NVIDIA-Linux-x86_64-595.71.05.run", driver_script(&host)),
                ("cuda_12.4.1_550.54.15_linux.run", toolkit_script(&host)),
                ("install-torch.sh", library_script(&host)),
            ];
            for (name, body) in &files {
                server.file(name, body.as_bytes());
            }
            let manifest = host.root().join("stack.yaml");
            let yaml = format!(
                "schema: 1\nname: first-hour-stack\nos: linux\n\
                 driver:\n  version: \"595.71.05\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"]\n\
                 toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
                 library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
                 example:\n  run: [\"{{python}}\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
                d = server.url(files[0].0),
                t = server.url(files[1].0),
                l = server.url(files[2].0),
                root = host.cuda_prefix().join("cuda-12.4").display(),
            );
            std::fs::write(&manifest, yaml).expect("manifest");
            let lab = Self {
                host,
                _server: server,
                manifest,
            };
            let fetched = lab.run(&["fetch"], &lab.archive());
            assert!(fetched.status.success(), "fetch: {}", text(&fetched));
            lab
        }

        fn archive(&self) -> PathBuf {
            self.host.root().join("installers")
        }

        /// The command with no terminal on stdin (`output()` gives it /dev/null).
        fn run(&self, args: &[&str], archive: &Path) -> Output {
            let mut cmd = self.host.stackpin(args);
            cmd.arg(&self.manifest)
                .env("STACKPIN_ARCHIVE", archive)
                .env("STACKPIN_SKIP_ADMIN_CHECK", "1")
                .env("STACKPIN_RETRY_BASE_MS", "0");
            cmd.output_started().expect("stackpin runs")
        }

        fn nothing_ran(&self) -> bool {
            !order_log(&self.host).exists()
        }
    }

    #[test]
    fn install_without_yes_and_without_a_terminal_exits_2_and_runs_nothing() {
        let lab = Lab::new();
        for args in [&["install"][..], &["install", "--json"]] {
            let out = lab.run(args, &lab.archive());
            let all = text(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
            assert!(all.contains("add --yes"), "{all}");
            assert!(all.contains("nothing was run"), "{all}");
            assert!(lab.nothing_ran(), "an installer ran without consent");
        }
        // The same archive and host with --yes: the installers do run (the marker is real).
        let yes = lab.run(&["install", "--yes"], &lab.archive());
        assert_eq!(yes.status.code(), Some(0), "{}", text(&yes));
        assert!(!lab.nothing_ran(), "install --yes ran the driver installer");
    }

    #[test]
    fn up_without_yes_exits_2_before_downloading_anything() {
        let lab = Lab::new();
        let fresh = lab.host.root().join("fresh-archive");
        let out = lab.run(&["up"], &fresh);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        // The hint is the command that was run, with its manifest and archive.
        let hint = format!(
            "`stackpin up {} --archive {}`",
            lab.manifest.display(),
            fresh.display()
        );
        assert!(text(&out).contains(&hint), "{}", text(&out));
        assert!(!fresh.exists(), "up fetched before asking");
        assert!(lab.nothing_ran());
    }

    #[test]
    fn repair_without_yes_exits_2_and_runs_nothing() {
        let lab = Lab::new();
        let out = lab.run(&["repair", "--json"], &lab.archive());
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("add --yes"), "{}", text(&out));
        // --json still gets its one document: the refusal, with the code and the fix.
        let doc: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
        assert_eq!(doc["exit_code"], 2, "{doc}");
        assert_eq!(doc["ok"], false, "{doc}");
        assert!(
            doc["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("add --yes")),
            "{doc}"
        );
        assert!(lab.nothing_ran());
    }

    #[test]
    fn dry_run_needs_no_consent() {
        let lab = Lab::new();
        let out = lab.run(&["install", "--dry-run"], &lab.archive());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(lab.nothing_ran());
    }
}

/// `--gpu` means the same in every command that takes it: a GPU that is not there is exit 2,
/// named with the GPUs that are, before anything is read or run (a marker proves `measure` ran
/// nothing; the manifest need not even exist).
#[cfg(unix)]
#[test]
fn gpu_1_on_a_one_gpu_host_is_exit_2_for_every_command_that_takes_it() {
    use crate::common::OutputStarted;
    use crate::fakes::FakeHost;
    let host = FakeHost::new()
        .gpu("NVIDIA L4", 23034, "8.9")
        .driver("570.133.20", "12.8");
    let marker = host.root().join("measured-command-ran");
    let touch = format!("touch {}", marker.display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["host", "--gpu", "1"],
        vec!["plan", "stack.yaml", "--gpu", "1"],
        vec!["prove", "stack.yaml", "--gpu", "1"],
        vec!["doctor", "stack.yaml", "--gpu", "1"],
        vec!["measure", "--gpu", "1", "--", "sh", "-c", &touch],
        vec!["install", "stack.yaml", "--yes", "--gpu", "1"],
        vec!["repair", "stack.yaml", "--yes", "--gpu", "1"],
    ];
    for args in cases {
        let out = host
            .stackpin(&args)
            .output_started()
            .expect("stackpin runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("GPU 1") || stderr.contains("--gpu 1"),
            "{args:?} names the GPU asked for: {stderr}"
        );
        assert!(
            stderr.contains("GPU 0"),
            "{args:?} names the GPU there is: {stderr}"
        );
        // Before the subcommand: after measure's `--` it would be the command's own argument.
        let mut json_args = vec!["--json"];
        json_args.extend(args.iter().copied());
        let out = host
            .stackpin(&json_args)
            .output_started()
            .expect("stackpin runs");
        let doc: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert_eq!(doc["exit_code"], 2, "{args:?}: {doc}");
    }
    assert!(
        !marker.exists(),
        "measure ran its command for a GPU that is not there"
    );
    let ok = host
        .stackpin(["host", "--gpu", "0"])
        .output_started()
        .expect("stackpin runs");
    assert_eq!(
        ok.status.code(),
        Some(0),
        "the GPU that is there is accepted"
    );
}

/// A mistyped archive folder is an input error for every command that reads the archive, never
/// "ok, no stacks".
#[test]
fn a_missing_archive_folder_is_exit_2_for_status_audit_and_doctor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("instalers");
    let missing = missing.to_str().expect("utf-8");
    for command in ["status", "audit", "doctor"] {
        let out = run(stackpin().args([command, "--all", "--archive", missing]));
        assert_eq!(out.code, 2, "{command}: {}", out.stderr);
        assert!(
            out.stderr.contains("instalers"),
            "{command}: {}",
            out.stderr
        );
    }
}
