//! `fetch`, `audit`, `bundle` and `unbundle` end to end against a loopback server with faults.

use crate::common::OutputStarted;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::common::TestContext;
use crate::server::{Route, TestServer};

const STACK: &str = "test-stack";
const DRIVER: &str = "NVIDIA-Linux-x86_64-595.71.05.run";
const TOOLKIT: &str = "cuda_12.4.1_550.54.15_linux.run";
const LIBRARY: &str = "lib-2.5.1.tar.gz";

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Deterministic, non-repeating-looking bytes.
fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + i / 251) as u8).wrapping_add(seed))
        .collect()
}

struct Ctx {
    ctx: TestContext,
    server: TestServer,
    bodies: [Vec<u8>; 3],
}

impl Ctx {
    /// A server with the three installers and an archive folder in a temp dir.
    fn new() -> Self {
        let server = TestServer::start();
        let bodies = [payload(300_000, 1), payload(700_000, 2), payload(50_000, 3)];
        for (name, body) in [DRIVER, TOOLKIT, LIBRARY].iter().zip(&bodies) {
            server.file(name, body);
        }
        Self {
            ctx: TestContext::new(),
            server,
            bodies,
        }
    }

    /// The temp folder, the working folder of every command.
    fn root(&self) -> &Path {
        self.ctx.root()
    }

    fn archive(&self) -> PathBuf {
        self.ctx.path("archive")
    }

    fn stack(&self) -> PathBuf {
        self.archive().join(STACK)
    }

    /// Writes a manifest; `pins` gives each of driver, toolkit, library an optional sha256.
    fn manifest_with(&self, urls: [&str; 3], pins: [Option<&str>; 3]) -> PathBuf {
        let pin = |p: Option<&str>| {
            p.map(|p| format!("\n    sha256: \"{p}\""))
                .unwrap_or_default()
        };
        let text = format!(
            r#"schema: 1
name: {STACK}
os: linux
driver:
  version: "595.71.05"
  installer:
    url: {}{}
  run: ["sh", "{{installer}}", "--silent", "--dkms"]
toolkit:
  version: "12.4.1"
  installer:
    url: {}{}
  root: "/usr/local/cuda-12.4"
  run: ["sh", "{{installer}}", "--silent", "--toolkit", "--toolkitpath={{root}}", "--no-man-page"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  installers:
    - url: {}{}
  run: ["sh", "{{installer}}"]
example:
  run: ["python3", "{{examples}}/classify.py", "--batch-size", "{{batch}}"]
  batch: 64
"#,
            urls[0],
            pin(pins[0]),
            urls[1],
            pin(pins[1]),
            urls[2],
            pin(pins[2]).replace("\n    sha256", "\n      sha256"),
        );
        let path = self.ctx.path("stack.yaml");
        std::fs::write(&path, text).expect("manifest");
        path
    }

    fn manifest(&self) -> PathBuf {
        let urls = [DRIVER, TOOLKIT, LIBRARY].map(|n| self.server.url(n));
        self.manifest_with([&urls[0], &urls[1], &urls[2]], [None, None, None])
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.ctx.stackpin(args);
        cmd.env("STACKPIN_ARCHIVE", self.archive())
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .env("STACKPIN_STALL_SECS", "2");
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        Run(self.command(args).output_started().expect("run stackpin"))
    }

    fn fetch(&self, extra: &[&str]) -> Run {
        let manifest = self.manifest();
        let mut args = vec!["fetch", manifest.to_str().expect("utf-8")];
        args.extend(extra);
        self.run(&args)
    }

    fn audit(&self) -> Run {
        let manifest = self.ctx.path("stack.yaml");
        self.run(&["audit", manifest.to_str().expect("utf-8")])
    }

    fn file(&self, layer: &str, name: &str) -> PathBuf {
        self.stack().join(layer).join(name)
    }

    fn lock_text(&self) -> String {
        std::fs::read_to_string(self.stack().join("stack.lock")).unwrap_or_default()
    }
}

struct Run(Output);

impl Run {
    fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    #[track_caller]
    fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }
}

fn make_writable(path: &Path) {
    let mut perms = std::fs::metadata(path).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).expect("chmod");
}

#[test]
fn fetch_archives_every_layer_with_a_lock_and_audit_is_clean() {
    let ctx = Ctx::new();
    let run = ctx.fetch(&[]);
    run.expect_code(0);
    assert!(
        run.stdout().contains("3 files archived and verified"),
        "{}",
        run.stdout()
    );
    for ((layer, name), body) in [
        ("driver", DRIVER),
        ("toolkit", TOOLKIT),
        ("library", LIBRARY),
    ]
    .iter()
    .zip(&ctx.bodies)
    {
        let path = ctx.file(layer, name);
        assert_eq!(std::fs::read(&path).expect("archived"), *body);
        assert!(
            std::fs::metadata(&path)
                .expect("meta")
                .permissions()
                .readonly(),
            "{name} read-only"
        );
    }
    let lock = ctx.lock_text();
    for (name, body) in [DRIVER, TOOLKIT, LIBRARY].iter().zip(&ctx.bodies) {
        assert!(lock.contains(&format!("file: {name}")), "{lock}");
        assert!(lock.contains(&sha(body)), "{lock}");
        assert!(lock.contains(&format!("size: {}", body.len())), "{lock}");
    }
    assert!(lock.contains("fetched_at:"), "{lock}");
    assert!(ctx.stack().join("manifest.yaml").is_file());
    ctx.audit().expect_code(0);
    // A second fetch finds everything archived and downloads nothing.
    let again = ctx.fetch(&[]);
    again.expect_code(0);
    assert_eq!(ctx.server.hits(DRIVER).len(), 1);
    assert!(again.stdout().contains("archived"), "{}", again.stdout());
}

#[test]
fn a_cut_download_resumes_with_range_and_sends_fewer_bytes() {
    let ctx = Ctx::new();
    ctx.server.route(
        TOOLKIT,
        Route {
            body: ctx.bodies[1].clone(),
            cut_after: Some(300_000),
            cut_times: 1,
            ..Route::default()
        },
    );
    let first = ctx.fetch(&["--attempts", "1"]);
    first.expect_code(3);
    assert!(
        first.stderr().contains("after 1 attempt(s)"),
        "{}",
        first.stderr()
    );
    assert!(
        !ctx.file("toolkit", TOOLKIT).exists(),
        "nothing under the final name"
    );
    let partial = ctx.file("toolkit", &format!("{TOOLKIT}.partial"));
    assert_eq!(
        std::fs::metadata(&partial).expect("partial kept").len(),
        300_000
    );
    ctx.fetch(&[]).expect_code(0);
    let hits = ctx.server.hits(TOOLKIT);
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[1].range.as_deref(), Some("bytes=300000-"));
    assert_eq!(hits[1].status, 206);
    assert!(
        hits[1].sent < hits[0].sent + 400_001 && hits[1].sent == 400_000,
        "{hits:?}"
    );
    assert_eq!(
        std::fs::read(ctx.file("toolkit", TOOLKIT)).expect("file"),
        ctx.bodies[1]
    );
    assert!(!partial.exists());
    ctx.audit().expect_code(0);
}

#[test]
fn a_server_that_ignores_range_makes_the_download_restart_from_zero() {
    let ctx = Ctx::new();
    ctx.server.route(
        TOOLKIT,
        Route {
            body: ctx.bodies[1].clone(),
            cut_after: Some(100_000),
            cut_times: 1,
            ignore_range: true,
            ..Route::default()
        },
    );
    ctx.fetch(&[]).expect_code(0);
    let hits = ctx.server.hits(TOOLKIT);
    assert_eq!(hits[1].range.as_deref(), Some("bytes=100000-"));
    assert_eq!((hits[1].status, hits[1].sent), (200, 700_000));
    assert_eq!(
        std::fs::read(ctx.file("toolkit", TOOLKIT)).expect("file"),
        ctx.bodies[1]
    );
    assert!(ctx.lock_text().contains(&sha(&ctx.bodies[1])));
}

#[test]
fn server_errors_are_retried_until_the_file_arrives() {
    let ctx = Ctx::new();
    ctx.server.route(
        DRIVER,
        Route {
            body: ctx.bodies[0].clone(),
            failures: vec![500, 500],
            ..Route::default()
        },
    );
    let run = ctx.fetch(&[]);
    run.expect_code(0);
    assert!(run.stderr().contains("HTTP 500"), "{}", run.stderr());
    assert!(run.stderr().contains("attempt 3 of 5"), "{}", run.stderr());
    assert_eq!(ctx.server.hits(DRIVER).len(), 3);
    assert_eq!(
        std::fs::read(ctx.file("driver", DRIVER)).expect("file"),
        ctx.bodies[0]
    );
}

#[test]
fn too_many_requests_waits_for_retry_after() {
    let ctx = Ctx::new();
    ctx.server.route(
        LIBRARY,
        Route {
            body: ctx.bodies[2].clone(),
            failures: vec![429],
            retry_after: Some(1),
            ..Route::default()
        },
    );
    let start = Instant::now();
    let run = ctx.fetch(&[]);
    run.expect_code(0);
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "Retry-After honoured"
    );
    assert!(run.stderr().contains("429"), "{}", run.stderr());
}

#[test]
fn persistent_server_errors_end_with_the_number_of_attempts() {
    let ctx = Ctx::new();
    ctx.server.route(
        DRIVER,
        Route {
            body: ctx.bodies[0].clone(),
            failures: vec![503; 10],
            ..Route::default()
        },
    );
    let run = ctx.fetch(&["--attempts", "3"]);
    run.expect_code(3);
    assert!(
        run.stderr().contains("failed after 3 attempt(s): HTTP 503"),
        "{}",
        run.stderr()
    );
    assert!(!ctx.file("driver", DRIVER).exists());
    // The other layers still made it, and the lock records them.
    assert!(ctx.lock_text().contains(TOOLKIT));
    assert!(!ctx.lock_text().contains(DRIVER));
}

#[test]
fn not_found_is_a_clear_error_and_leaves_no_file() {
    let ctx = Ctx::new();
    let missing = ctx.server.url("gone/NVIDIA-Linux-x86_64-595.71.05.run");
    let urls = [
        missing.as_str(),
        &ctx.server.url(TOOLKIT),
        &ctx.server.url(LIBRARY),
    ];
    let manifest = ctx.manifest_with(urls, [None, None, None]);
    let run = ctx.run(&["fetch", manifest.to_str().expect("utf-8")]);
    run.expect_code(3);
    assert!(run.stderr().contains("404"), "{}", run.stderr());
    assert!(run.stderr().contains(&missing), "{}", run.stderr());
    // `up` wraps fetch: the same failure exits with the same code.
    let up = ctx.run(&["up", manifest.to_str().expect("utf-8"), "--yes"]);
    up.expect_code(3);
    assert!(up.stderr().contains("404"), "{}", up.stderr());
    assert!(
        run.stderr().contains("after 1 attempt(s)"),
        "404 is not retried: {}",
        run.stderr()
    );
    let driver_dir = ctx.stack().join("driver");
    assert_eq!(
        std::fs::read_dir(driver_dir).expect("dir").count(),
        0,
        "no file, no partial"
    );
}

#[test]
fn a_stalled_server_times_out_and_keeps_the_partial() {
    let ctx = Ctx::new();
    ctx.server.route(
        LIBRARY,
        Route {
            body: ctx.bodies[2].clone(),
            stall_after: Some(10_000),
            stall_times: 5,
            ..Route::default()
        },
    );
    let run = ctx.fetch(&["--attempts", "2", "--stall-timeout", "1"]);
    run.expect_code(3);
    assert!(run.stderr().contains("stall timeout"), "{}", run.stderr());
    assert!(
        run.stderr().contains("after 2 attempt(s)"),
        "{}",
        run.stderr()
    );
    assert!(!ctx.file("library", LIBRARY).exists());
    assert!(ctx.file("library", &format!("{LIBRARY}.partial")).exists());
}

#[test]
fn a_wrong_pinned_hash_leaves_nothing_under_the_final_name() {
    let ctx = Ctx::new();
    let urls = [DRIVER, TOOLKIT, LIBRARY].map(|n| ctx.server.url(n));
    let wrong = "0".repeat(64);
    let manifest = ctx.manifest_with([&urls[0], &urls[1], &urls[2]], [Some(&wrong), None, None]);
    let run = ctx.run(&["fetch", manifest.to_str().expect("utf-8")]);
    run.expect_code(1);
    let err = run.stderr();
    assert!(
        err.contains(&urls[0]) && err.contains(&wrong) && err.contains(&sha(&ctx.bodies[0])),
        "{err}"
    );
    let driver_dir = ctx.stack().join("driver");
    assert_eq!(std::fs::read_dir(driver_dir).expect("dir").count(), 0);
    assert!(!ctx.lock_text().contains(DRIVER));
}

#[test]
fn a_changed_file_upstream_is_refused_and_the_lock_stays_as_it_was() {
    let ctx = Ctx::new();
    ctx.fetch(&[]).expect_code(0);
    let lock_before = ctx.lock_text();
    let path = ctx.file("toolkit", TOOLKIT);
    make_writable(&path);
    std::fs::remove_file(&path).expect("rm");
    ctx.server.file(TOOLKIT, b"a different installer");
    let run = ctx.fetch(&[]);
    run.expect_code(1);
    assert!(
        run.stderr().contains(&sha(&ctx.bodies[1])),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr().contains(&sha(b"a different installer")),
        "{}",
        run.stderr()
    );
    assert!(!path.exists());
    assert_eq!(ctx.lock_text(), lock_before);
}

#[test]
fn a_pin_that_disagrees_with_the_lock_is_an_error_naming_both() {
    let ctx = Ctx::new();
    ctx.fetch(&[]).expect_code(0);
    let urls = [DRIVER, TOOLKIT, LIBRARY].map(|n| ctx.server.url(n));
    let other = "a".repeat(64);
    let manifest = ctx.manifest_with([&urls[0], &urls[1], &urls[2]], [None, Some(&other), None]);
    let run = ctx.run(&["fetch", manifest.to_str().expect("utf-8")]);
    run.expect_code(1);
    assert!(
        run.stderr().contains(&other) && run.stderr().contains(&sha(&ctx.bodies[1])),
        "{}",
        run.stderr()
    );
}

#[test]
fn locked_refuses_files_without_a_known_hash_before_downloading() {
    let ctx = Ctx::new();
    let run = ctx.fetch(&["--locked"]);
    run.expect_code(1);
    assert!(run.stderr().contains("--locked"), "{}", run.stderr());
    assert!(ctx.server.hits(DRIVER).is_empty());
    // Once the lock knows every file, --locked fetches (here: repairs) happily.
    ctx.fetch(&[]).expect_code(0);
    let path = ctx.file("driver", DRIVER);
    make_writable(&path);
    std::fs::remove_file(&path).expect("rm");
    ctx.fetch(&["--locked"]).expect_code(0);
    assert!(path.exists());
}

#[test]
fn redirects_are_followed_to_the_file() {
    let ctx = Ctx::new();
    ctx.server.file("real/driver.bin", &ctx.bodies[0]);
    ctx.server.route(
        DRIVER,
        Route {
            redirect: Some(ctx.server.url("real/driver.bin")),
            ..Route::default()
        },
    );
    ctx.fetch(&[]).expect_code(0);
    assert_eq!(
        std::fs::read(ctx.file("driver", DRIVER)).expect("file"),
        ctx.bodies[0]
    );
}

#[test]
fn a_refetch_stops_at_the_size_the_lock_recorded() {
    let ctx = Ctx::new();
    ctx.fetch(&[]).expect_code(0);
    let path = ctx.file("driver", DRIVER);
    make_writable(&path);
    std::fs::remove_file(&path).expect("rm");
    // The server now answers with a body 30 times the size the lock knows.
    ctx.server.file(DRIVER, &payload(9_000_000, 7));
    let run = ctx.fetch(&[]);
    run.expect_code(3);
    assert!(
        run.stderr().contains("more than the 300000 bytes"),
        "{}",
        run.stderr()
    );
    assert!(!path.exists());
    let partial = path.with_file_name(format!("{DRIVER}.partial"));
    assert!(!partial.exists(), "what arrived past the size was kept");
}

#[test]
fn a_loopback_url_that_redirects_to_remote_plain_http_is_refused_at_the_hop() {
    let ctx = Ctx::new();
    // `.invalid` never resolves: were the hop followed, no traffic could leave this machine.
    ctx.server.route(
        DRIVER,
        Route {
            redirect: Some("http://stackpin-mirror.invalid/driver.bin".into()),
            ..Route::default()
        },
    );
    let run = ctx.fetch(&[]);
    run.expect_code(3);
    assert!(
        run.stderr().contains("refused a redirect")
            && run.stderr().contains("plain http on another host"),
        "{}",
        run.stderr()
    );
    assert!(!ctx.file("driver", DRIVER).exists());
}

#[test]
fn unsafe_file_names_in_urls_are_refused_before_any_download() {
    let ctx = Ctx::new();
    for bad in ["x/..", "evil%2F..%2F..%2Fpwned.run", "x.run.partial"] {
        let url = ctx.server.url(bad);
        let urls = [
            url.as_str(),
            &ctx.server.url(TOOLKIT),
            &ctx.server.url(LIBRARY),
        ];
        let manifest = ctx.manifest_with(urls, [None, None, None]);
        let run = ctx.run(&["fetch", manifest.to_str().expect("utf-8")]);
        run.expect_code(1);
        assert!(run.stderr().contains("unsafe"), "{bad}: {}", run.stderr());
    }
    assert!(!ctx.archive().exists(), "nothing written");
    assert!(!ctx.root().join("pwned.run").exists());
}

#[test]
fn two_fetches_at_once_wait_for_each_other_and_download_once() {
    let ctx = Ctx::new();
    ctx.server.route(
        TOOLKIT,
        Route {
            body: ctx.bodies[1].clone(),
            throttle: Some(Duration::from_millis(100)),
            ..Route::default()
        },
    );
    let manifest = ctx.manifest();
    let m = manifest.to_str().expect("utf-8");
    let first = ctx.command(&["fetch", m]).spawn().expect("first");
    // The second starts once the first is writing a `.partial` (and so holds the lock): a fixed sleep
    // raced a slow start under Wine on a loaded machine.
    let started = std::time::Instant::now();
    let downloading = || partial_under(&ctx.archive());
    while !downloading() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = ctx.command(&["fetch", m]).output_started().expect("second");
    let first = first.wait_with_output().expect("first");
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("waiting"),
        "the second says it waits"
    );
    assert_eq!(ctx.server.hits(TOOLKIT).len(), 1, "downloaded once");
    ctx.audit().expect_code(0);
}

#[test]
fn kill_9_mid_download_then_a_second_fetch_completes_and_audits_clean() {
    let ctx = Ctx::new();
    ctx.server.route(
        TOOLKIT,
        Route {
            body: ctx.bodies[1].clone(),
            stall_after: Some(600_000),
            stall_times: 1,
            ..Route::default()
        },
    );
    let manifest = ctx.manifest();
    let mut child = ctx
        .command(&[
            "fetch",
            manifest.to_str().expect("utf-8"),
            "--stall-timeout",
            "60",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let partial = ctx.file("toolkit", &format!("{TOOLKIT}.partial"));
    let deadline = Instant::now() + Duration::from_secs(20);
    // The stall holds the process mid-download; wait until its bytes reach the disk.
    while std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "partial never grew");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    let kept = std::fs::metadata(&partial)
        .expect("partial survives kill -9")
        .len();
    assert!(!ctx.file("toolkit", TOOLKIT).exists());
    ctx.fetch(&[]).expect_code(0);
    let hits = ctx.server.hits(TOOLKIT);
    let resumed = format!("bytes={kept}-");
    assert_eq!(hits.last().and_then(|h| h.range.clone()), Some(resumed));
    assert_eq!(
        std::fs::read(ctx.file("toolkit", TOOLKIT)).expect("file"),
        ctx.bodies[1]
    );
    ctx.audit().expect_code(0);
}

#[test]
fn audit_finds_a_flipped_byte_a_missing_file_and_a_stray_and_fetch_repairs_them() {
    let ctx = Ctx::new();
    ctx.fetch(&[]).expect_code(0);
    let driver = ctx.file("driver", DRIVER);
    make_writable(&driver);
    let mut bytes = std::fs::read(&driver).expect("read");
    bytes[1234] ^= 0x01;
    std::fs::write(&driver, &bytes).expect("flip");
    let toolkit = ctx.file("toolkit", TOOLKIT);
    make_writable(&toolkit);
    std::fs::remove_file(&toolkit).expect("rm");
    std::fs::write(ctx.file("library", "stray.bin"), b"?").expect("stray");

    let run = ctx.audit();
    run.expect_code(1);
    let out = run.stdout();
    assert!(
        out.contains(&format!("corrupt    {STACK}/driver/{DRIVER}")),
        "{out}"
    );
    assert!(
        out.contains(&sha(&ctx.bodies[0])) && out.contains(&sha(&bytes)),
        "{out}"
    );
    assert!(
        out.contains(&format!("missing    {STACK}/toolkit/{TOOLKIT}")),
        "{out}"
    );
    assert!(
        out.contains(&format!("unexpected {STACK}/library/stray.bin")),
        "{out}"
    );

    let manifest = ctx.root().join("stack.yaml");
    let json = ctx.run(&["audit", manifest.to_str().expect("utf-8"), "--json"]);
    json.expect_code(1);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout()).expect("json");
    assert_eq!(doc["ok"], false);
    let files = doc["files"].as_array().expect("files");
    let corrupt = files
        .iter()
        .find(|f| f["status"] == "corrupt")
        .expect("corrupt entry");
    assert_eq!(corrupt["layer"], "driver");
    assert_eq!(corrupt["expected"], sha(&ctx.bodies[0]));
    assert_eq!(corrupt["actual"], sha(&bytes));
    assert_eq!(corrupt["size"], 300_000);

    let repair = ctx.fetch(&[]);
    repair.expect_code(0);
    assert!(repair.stdout().contains("repaired"), "{}", repair.stdout());
    let after = ctx.audit();
    after.expect_code(0);
    assert!(
        after
            .stdout()
            .contains("3 ok, 0 missing, 0 corrupt, 1 unexpected"),
        "{}",
        after.stdout()
    );
}

#[test]
fn bundle_then_unbundle_elsewhere_audits_clean() {
    let ctx = Ctx::new();
    ctx.fetch(&[]).expect_code(0);
    let zip = ctx.root().join("stack.zip");
    let manifest = ctx.root().join("stack.yaml");
    ctx.run(&[
        "bundle",
        manifest.to_str().expect("utf-8"),
        "-o",
        zip.to_str().expect("utf-8"),
    ])
    .expect_code(0);
    assert!(zip.is_file() && !ctx.root().join("stack.zip.partial").exists());
    let elsewhere = ctx.root().join("offline");
    let run = ctx.run(&[
        "unbundle",
        zip.to_str().expect("utf-8"),
        "--archive",
        elsewhere.to_str().expect("utf-8"),
    ]);
    run.expect_code(0);
    assert!(run.stdout().contains("audited"), "{}", run.stdout());
    let unpacked = elsewhere.join(STACK);
    assert_eq!(
        std::fs::read(unpacked.join("driver").join(DRIVER)).expect("driver"),
        ctx.bodies[0]
    );
    assert_eq!(
        std::fs::read_to_string(unpacked.join("stack.lock")).expect("lock"),
        ctx.lock_text()
    );
    ctx.run(&[
        "audit",
        "--all",
        "--archive",
        elsewhere.to_str().expect("utf-8"),
    ])
    .expect_code(0);
    // The same bundle again over the same intact stack changes nothing and succeeds.
    let again = ctx.run(&[
        "unbundle",
        zip.to_str().expect("utf-8"),
        "--archive",
        elsewhere.to_str().expect("utf-8"),
    ]);
    again.expect_code(0);
    // Over a stack whose installer was changed since, it refuses (never overwrites silently).
    let driver = unpacked.join("driver").join(DRIVER);
    let mut perms = std::fs::metadata(&driver).expect("driver").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&driver, perms).expect("writable");
    std::fs::write(&driver, b"changed").expect("change it");
    let changed = ctx.run(&[
        "unbundle",
        zip.to_str().expect("utf-8"),
        "--archive",
        elsewhere.to_str().expect("utf-8"),
    ]);
    changed.expect_code(1);
    assert!(
        changed.stderr().contains("already holds"),
        "{}",
        changed.stderr()
    );
    // Installers are stored, not deflated.
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zip).expect("zip")).expect("zip");
    let entry = archive
        .by_name(&format!("{STACK}/toolkit/{TOOLKIT}"))
        .expect("entry");
    assert_eq!(entry.compression(), zip::CompressionMethod::Stored);
}

/// Adds hostile entries to a bundle under construction.
type EvilEntries = Box<dyn FnOnce(&mut zip::ZipWriter<std::fs::File>)>;

fn evil_zip(path: &Path, build: impl FnOnce(&mut zip::ZipWriter<std::fs::File>)) {
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).expect("zip"));
    writer
        .start_file(
            format!("{STACK}/stack.lock"),
            zip::write::SimpleFileOptions::default(),
        )
        .expect("entry");
    std::io::Write::write_all(&mut writer, b"schema: 1\nstack: test-stack\nfiles: []\n")
        .expect("write");
    build(&mut writer);
    writer.finish().expect("finish");
}

#[test]
fn zip_slip_absolute_paths_and_symlinks_are_refused() {
    let ctx = Ctx::new();
    let target = ctx.root().join("target");
    let cases: [(&str, EvilEntries); 3] = [
        (
            "escapes",
            Box::new(|w| {
                w.start_file(
                    "test-stack/../../evil.txt",
                    zip::write::SimpleFileOptions::default(),
                )
                .expect("entry");
                std::io::Write::write_all(w, b"pwned").expect("write");
            }),
        ),
        (
            "absolute",
            Box::new(|w| {
                w.start_file(
                    "/tmp/stackpin-evil.txt",
                    zip::write::SimpleFileOptions::default(),
                )
                .expect("entry");
            }),
        ),
        (
            "symbolic link",
            Box::new(|w| {
                w.add_symlink(
                    "test-stack/driver/x.run",
                    "/etc/passwd",
                    zip::write::SimpleFileOptions::default(),
                )
                .expect("symlink");
            }),
        ),
    ];
    for (why, build) in cases {
        let zip = ctx
            .root()
            .join(format!("evil-{}.zip", why.replace(' ', "-")));
        evil_zip(&zip, build);
        let run = ctx.run(&[
            "unbundle",
            zip.to_str().expect("utf-8"),
            "--archive",
            target.to_str().expect("utf-8"),
        ]);
        run.expect_code(1);
        assert!(
            run.stderr().contains("refused") && run.stderr().contains(why),
            "{why}: {}",
            run.stderr()
        );
        assert!(!target.join(STACK).exists(), "{why}: nothing unpacked");
    }
    assert!(!ctx.root().join("evil.txt").exists());
}

#[test]
fn the_mirror_is_tried_first_and_a_bad_mirror_copy_falls_back_to_the_original() {
    let ctx = Ctx::new();
    let mirror = TestServer::start();
    mirror.file(&format!("{STACK}/driver/{DRIVER}"), &ctx.bodies[0]);
    mirror.file(&format!("{STACK}/toolkit/{TOOLKIT}"), b"tampered");
    let urls = [DRIVER, TOOLKIT, LIBRARY].map(|n| ctx.server.url(n));
    let pins = ctx.bodies.each_ref().map(|b| sha(b));
    let manifest = ctx.manifest_with(
        [&urls[0], &urls[1], &urls[2]],
        [Some(&pins[0]), Some(&pins[1]), Some(&pins[2])],
    );
    let run = ctx.run(&[
        "fetch",
        manifest.to_str().expect("utf-8"),
        "--mirror",
        &mirror.url(""),
    ]);
    run.expect_code(0);
    assert!(
        ctx.server.hits(DRIVER).is_empty(),
        "driver came from the mirror"
    );
    assert_eq!(ctx.server.hits(TOOLKIT).len(), 1, "tampered copy fell back");
    assert_eq!(
        ctx.server.hits(LIBRARY).len(),
        1,
        "missing on the mirror fell back"
    );
    assert!(run.stderr().contains("mirror"), "{}", run.stderr());
    assert!(
        run.stdout()
            .contains(&format!("mirror      driver/{DRIVER}")),
        "{}",
        run.stdout()
    );
    ctx.audit().expect_code(0);
}

// Needs a real `python3` with pip, which the Windows run under Wine does not have.
#[cfg(unix)]
#[test]
fn pip_wheels_are_downloaded_for_the_target_and_locked() {
    let ctx = Ctx::new();
    let mut index = crate::library_layer::Index::new();
    let six =
        crate::library_layer::build_wheel(&ctx.root().join("wheels"), "six", "1.16.0", "good", &[]);
    index.wheel(&six);
    let urls = [DRIVER, TOOLKIT].map(|n| ctx.server.url(n));
    let text = format!(
        r#"schema: 1
name: {STACK}
os: windows
driver:
  version: "595.71"
  installer:
    url: {}
  run: ["{{installer}}", "-s"]
toolkit:
  version: "12.4.1"
  installer:
    url: {}
  root: 'C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.4'
  run: ["{{installer}}", "-s", "-n", "nvcc_12.4"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  python_version: "3.11"
  venv: 'C:\stackpin\{STACK}'
  pip:
    index_url: {}
    requirements: ["six==1.16.0"]
example:
  run: ["{{python}}", "{{examples}}/classify.py", "--batch-size", "{{batch}}"]
"#,
        urls[0].replace(".run", ".exe"),
        urls[1].replace(".run", ".exe"),
        index.url(),
    );
    ctx.server
        .file(&DRIVER.replace(".run", ".exe"), &ctx.bodies[0]);
    ctx.server
        .file(&TOOLKIT.replace(".run", ".exe"), &ctx.bodies[1]);
    let manifest = ctx.root().join("stack.yaml");
    std::fs::write(&manifest, text).expect("manifest");
    let run = ctx.run(&["fetch", manifest.to_str().expect("utf-8")]);
    if run.code() == 2 {
        panic!("manifest rejected: {}", run.stderr());
    }
    run.expect_code(0);
    let wheel = ctx.file("library", &six.file);
    assert!(wheel.is_file(), "{}", run.stdout());
    let bytes = std::fs::read(&wheel).expect("wheel");
    let lock = ctx.lock_text();
    assert!(
        lock.contains("layer: library") && lock.contains(&sha(&bytes)),
        "{lock}"
    );
    assert!(lock.contains(&format!("pip:{}", index.url())), "{lock}");
    ctx.audit().expect_code(0);
}

/// Whether a download is under way somewhere below `dir` (a `.partial` file exists).
fn partial_under(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        path.extension().is_some_and(|x| x == "partial") || (path.is_dir() && partial_under(&path))
    })
}

/// pip must know which Python's wheels to download: a pip library without
/// `library.python_version` is the user's input (exit 2) in `fetch` and in `up`, which wraps it,
/// before anything is downloaded or created.
#[test]
fn a_pip_library_without_python_version_is_refused_before_fetching_in_fetch_and_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shipped = std::fs::read_to_string(crate::common::repo(
        "manifests/onnxruntime-gpu-1.20.2-cu129-linux.yaml",
    ))
    .expect("shipped manifest");
    let text: String = shipped
        .lines()
        .filter(|l| !l.trim_start().starts_with("python_version:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!text.contains("python_version:"));
    let manifest = dir.path().join("no-python.yaml");
    std::fs::write(&manifest, text).expect("manifest");
    let archive = dir.path().join("installers");
    std::fs::create_dir(&archive).expect("archive");
    for args in [vec!["fetch"], vec!["up", "--yes"]] {
        let out = crate::common::run(
            crate::common::stackpin()
                .args(&args)
                .arg(&manifest)
                .arg("--archive")
                .arg(&archive),
        );
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("library.python_version is needed"),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(
            std::fs::read_dir(&archive).expect("archive").count(),
            0,
            "{args:?}: nothing fetched"
        );
    }
}
