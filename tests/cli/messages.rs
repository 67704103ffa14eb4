//! What a user reads on bad input and faults (issue 39): each refusal names the cause in the
//! user's words and the next step, with the exit code README's table gives, and no library's
//! API name. Encodings, YAML, locks, bundle outputs, and downloads against loopback servers.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::common::{Outcome, TestContext, repo, run};
use crate::server::{Route, TestServer};

const STACK: &str = "msg-stack";
const DRIVER: &str = "NVIDIA-Linux-x86_64-595.71.05.run";
const TOOLKIT: &str = "cuda_12.4.1_550.54.15_linux.run";
const LIBRARY: &str = "lib-2.5.1.tar.gz";

/// Words from the parser's and the HTTP client's APIs that must never reach a user.
const LIBRARY_WORDS: [&str; 6] = [
    "DuplicateKeyPolicy",
    "from_str_multiple",
    "OtherError",
    "CaUsedAsEndEntity",
    "InvalidContentType",
    "ZipWriter",
];

#[track_caller]
fn says(out: &Outcome, code: i32, words: &[&str]) {
    let all = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.code, code, "{all}");
    for w in words {
        assert!(all.contains(w), "missing `{w}` in:\n{all}");
    }
    for w in LIBRARY_WORDS {
        assert!(!all.contains(w), "library word `{w}` in:\n{all}");
    }
}

fn shipped() -> String {
    std::fs::read_to_string(repo("manifests/torch-2.5.1-cu124-linux.yaml")).expect("shipped")
}

fn check(ctx: &TestContext, name: &str, bytes: &[u8]) -> Outcome {
    let path = ctx.path(name);
    std::fs::write(&path, bytes).expect("manifest");
    ctx.run(["check", path.to_str().expect("utf-8")])
}

fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

#[test]
fn a_manifest_saved_by_powershell_5_as_utf16_with_crlf_is_read() {
    let ctx = TestContext::new();
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(utf16le(&shipped().replace('\n', "\r\n")));
    says(&check(&ctx, "ps5.yaml", &bytes), 0, &["ok"]);
}

#[test]
fn utf16_without_a_byte_order_mark_is_named_with_the_command_to_convert_it() {
    let ctx = TestContext::new();
    let out = check(&ctx, "nobom.yaml", &utf16le(&shipped()));
    says(
        &out,
        2,
        &[
            "UTF-16",
            "iconv -f UTF-16LE -t UTF-8",
            "Set-Content -Encoding utf8",
        ],
    );
}

#[test]
fn a_latin1_byte_is_named_with_its_offset_and_line() {
    let ctx = TestContext::new();
    let mut bytes = b"schema: 1\nname: caf".to_vec();
    bytes.push(0xE9);
    bytes.extend(b"\n");
    let out = check(&ctx, "latin1.yaml", &bytes);
    says(&out, 2, &["byte 19 (line 2)", "0xe9", "Latin-1", "iconv"]);
}

#[test]
fn a_duplicate_field_is_named_by_its_path_and_both_lines() {
    let ctx = TestContext::new();
    let text = shipped().replacen(
        "    sha256: null   # NVIDIA",
        "    sha256: null\n    sha256: null   # NVIDIA",
        1,
    );
    let first = text
        .lines()
        .position(|l| l.contains("sha256: null"))
        .expect("pin")
        + 1;
    let out = check(&ctx, "dup.yaml", text.as_bytes());
    says(
        &out,
        2,
        &[
            &format!(
                "field `driver.installer.sha256` appears twice (lines {first} and {})",
                first + 1
            ),
            "keep one",
        ],
    );
}

#[test]
fn two_documents_in_one_manifest_are_named_without_the_parsers_api() {
    let ctx = TestContext::new();
    let text = format!("{}\n---\n{}", shipped(), shipped());
    says(
        &check(&ctx, "two.yaml", text.as_bytes()),
        2,
        &["more than one YAML document", "`---`"],
    );
}

#[test]
fn an_empty_manifest_says_so_and_where_to_start() {
    let ctx = TestContext::new();
    says(
        &check(&ctx, "empty.yaml", b""),
        2,
        &["the manifest is empty", "stackpin pin"],
    );
    says(
        &check(&ctx, "blank.yaml", b"\n# nothing yet\n  \n"),
        2,
        &["the manifest is empty"],
    );
}

#[test]
fn a_raw_newline_in_a_name_stays_on_the_error_line() {
    let ctx = TestContext::new();
    let text = shipped().replacen("name: torch-2.5.1-cu124-linux", "name: \"torch\\nbad\"", 1);
    let out = check(&ctx, "nl.yaml", text.as_bytes());
    says(
        &out,
        1,
        &["`torch\\nbad` cannot name the stack's archive folder"],
    );
}

#[test]
fn a_huge_scalar_is_cut_not_echoed() {
    let ctx = TestContext::new();
    let huge = "9".repeat(3_000_000);
    let text = shipped().replacen("version: \"595.71.05\"", &format!("version: \"{huge}\""), 1);
    let out = check(&ctx, "huge.yaml", text.as_bytes());
    says(&out, 2, &["driver.version", "characters in all"]);
    assert!(
        out.stderr.len() < 4_000,
        "{} bytes on stderr",
        out.stderr.len()
    );
}

#[test]
fn a_packed_data_set_with_a_utf8_byte_order_mark_is_read() {
    let ctx = TestContext::new();
    let file = ctx.path("set.json");
    let out = ctx.run([
        "data",
        "pack",
        repo("data").to_str().expect("utf-8"),
        "-o",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&file).expect("packed"));
    std::fs::write(&file, bytes).expect("bom");
    let mut cmd = ctx.stackpin(["data", "update", "--from", file.to_str().expect("utf-8")]);
    cmd.env("STACKPIN_DATA_DIR", ctx.path("data-dir"));
    says(&run(&mut cmd), 0, &[]);
}

// ---- an archived stack behind a loopback server ----

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

struct Lab {
    ctx: TestContext,
    server: TestServer,
}

impl Lab {
    fn new() -> Self {
        let server = TestServer::start();
        for (name, seed) in [(DRIVER, 1u8), (TOOLKIT, 2), (LIBRARY, 3)] {
            server.file(name, &vec![seed; 40_000]);
        }
        Self {
            ctx: TestContext::new(),
            server,
        }
    }

    fn manifest_with(&self, driver_url: &str) -> PathBuf {
        let text = format!(
            "schema: 1\nname: {STACK}\nos: linux\n\
             driver:\n  version: \"595.71.05\"\n  installer:\n    url: {driver_url}\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {}\n  root: \"/usr/local/cuda-12.4\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  installers:\n    - url: {}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"python3\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
            self.server.url(TOOLKIT),
            self.server.url(LIBRARY),
        );
        let path = self.ctx.path("stack.yaml");
        std::fs::write(&path, text).expect("manifest");
        path
    }

    fn manifest(&self) -> PathBuf {
        self.manifest_with(&self.server.url(DRIVER))
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.ctx.stackpin(args);
        cmd.env("STACKPIN_ARCHIVE", self.archive())
            .env("STACKPIN_RETRY_BASE_MS", "0")
            .env("STACKPIN_STALL_SECS", "5")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("all_proxy");
        cmd
    }

    fn run(&self, args: &[&str]) -> Outcome {
        run(&mut self.command(args))
    }

    fn archive(&self) -> PathBuf {
        self.ctx.path("archive")
    }

    fn stack(&self) -> PathBuf {
        self.archive().join(STACK)
    }

    fn fetched(self) -> Self {
        let m = self.manifest();
        let out = self.run(&["fetch", m.to_str().expect("utf-8")]);
        assert_eq!(out.code, 0, "{out:?}");
        self
    }

    fn fetch(&self, manifest: &Path) -> Outcome {
        self.run(&["fetch", manifest.to_str().expect("utf-8")])
    }

    fn edit_lock(&self, edit: impl Fn(&str) -> String) {
        let path = self.stack().join("stack.lock");
        let text = std::fs::read_to_string(&path).expect("lock");
        std::fs::write(&path, edit(&text)).expect("edited lock");
    }

    fn audit(&self) -> Outcome {
        let m = self.ctx.path("stack.yaml");
        self.run(&["audit", m.to_str().expect("utf-8")])
    }
}

fn lock_line(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("line") + 1
}

#[test]
fn a_lock_sha_of_63_digits_is_invalid_input_at_its_line() {
    let lab = Lab::new().fetched();
    let driver_sha = sha(&[1u8; 40_000]);
    let text = std::fs::read_to_string(lab.stack().join("stack.lock")).expect("lock");
    let line = lock_line(&text, &driver_sha);
    lab.edit_lock(|t| t.replace(&driver_sha, &driver_sha[1..]));
    says(
        &lab.audit(),
        2,
        &[
            "stack.lock",
            &format!("line {line}"),
            "63 characters",
            "64 hexadecimal",
            "fetch again",
        ],
    );
}

#[test]
fn a_lock_entry_listed_twice_or_outside_the_stack_is_invalid_input() {
    let lab = Lab::new().fetched();
    let text = std::fs::read_to_string(lab.stack().join("stack.lock")).expect("lock");
    let start = text.find("- layer: driver").expect("driver entry");
    let end = text[start..]
        .find("- layer: toolkit")
        .expect("toolkit entry")
        + start;
    let entry = text[start..end].to_string();
    lab.edit_lock(|t| t.replacen(&entry, &format!("{entry}{entry}"), 1));
    says(
        &lab.audit(),
        2,
        &["stack.lock", "is listed twice (lines", "delete one"],
    );
    lab.edit_lock(|t| {
        t.replacen(
            &format!("{entry}{entry}"),
            &entry.replace(DRIVER, "../../etc/x.run"),
            1,
        )
    });
    says(
        &lab.audit(),
        2,
        &["stack.lock", "line", "outside the stack's folder"],
    );
}

#[test]
fn bundle_onto_the_manifest_or_an_archived_file_is_refused_before_writing() {
    let lab = Lab::new().fetched();
    let manifest = lab.ctx.path("stack.yaml");
    let before = std::fs::read(&manifest).expect("manifest");
    let m = manifest.to_str().expect("utf-8");
    says(
        &lab.run(&["bundle", m, "-o", m]),
        2,
        &["not written", "the manifest", "-o"],
    );
    assert_eq!(std::fs::read(&manifest).expect("manifest"), before);
    let archived = lab.stack().join("driver").join(DRIVER);
    let bytes = std::fs::read(&archived).expect("installer");
    let out = lab.run(&["bundle", m, "-o", archived.to_str().expect("utf-8")]);
    says(&out, 2, &["not written", "inside the stack folder", "-o"]);
    assert_eq!(std::fs::read(&archived).expect("installer"), bytes);
}

#[test]
fn a_bundle_whose_folder_was_renamed_unpacks_where_install_looks() {
    let lab = Lab::new().fetched();
    let m = lab.ctx.path("stack.yaml");
    let zip = lab.ctx.path("stack.zip");
    let out = lab.run(&[
        "bundle",
        m.to_str().expect("utf-8"),
        "-o",
        zip.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    // The zip rebuilt with every entry under another folder name.
    let renamed = lab.ctx.path("renamed.zip");
    let mut reader = zip::ZipArchive::new(std::fs::File::open(&zip).expect("zip")).expect("zip");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&renamed).expect("renamed"));
    for i in 0..reader.len() {
        let mut entry = reader.by_index(i).expect("entry");
        let name = entry.name().expect("name").replacen(STACK, "my-copy", 1);
        writer
            .start_file(name, zip::write::SimpleFileOptions::default())
            .expect("start");
        std::io::copy(&mut entry, &mut writer).expect("copy");
    }
    writer.finish().expect("finish");
    let mut cmd = lab.command(&["unbundle", renamed.to_str().expect("utf-8")]);
    let other = lab.ctx.path("other-archive");
    cmd.env("STACKPIN_ARCHIVE", &other);
    says(&run(&mut cmd), 0, &[STACK]);
    assert!(other.join(STACK).join("stack.lock").is_file());
    assert!(!other.join("my-copy").exists());
}

#[test]
fn a_captive_portal_page_is_refused_and_nothing_is_archived() {
    let lab = Lab::new();
    lab.server.route(
        DRIVER,
        Route {
            body: b"<html><head><title>Hotel WiFi \x1b[2J login</title></head></html>".to_vec(),
            content_type: Some("text/html; charset=utf-8".into()),
            ..Route::default()
        },
    );
    let out = lab.fetch(&lab.manifest());
    says(
        &out,
        3,
        &[
            "web page",
            "text/html",
            "<html><head><title>Hotel WiFi \\u{1b}[2J",
            "browser",
            "after 1 attempt",
        ],
    );
    assert!(
        !out.stderr.contains('\u{1b}'),
        "raw escape reached the terminal"
    );
    assert!(!lab.stack().join("driver").join(DRIVER).exists());
}

#[test]
fn a_body_compressed_on_the_way_is_named() {
    let lab = Lab::new();
    lab.server.route(
        DRIVER,
        Route {
            body: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0],
            content_encoding: Some("gzip".into()),
            ..Route::default()
        },
    );
    says(
        &lab.fetch(&lab.manifest()),
        3,
        &["gzip", "Content-Encoding", "proxy"],
    );
    assert!(!lab.stack().join("driver").join(DRIVER).exists());
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[test]
fn a_dead_proxy_is_named_not_the_server() {
    let lab = Lab::new();
    let proxy = format!("http://127.0.0.1:{}", free_port());
    let mut cmd = lab.command(&["fetch", lab.manifest().to_str().expect("utf-8")]);
    cmd.env("HTTP_PROXY", &proxy);
    says(
        &run(&mut cmd),
        3,
        &[&format!("proxy {proxy}"), "HTTP_PROXY", "NO_PROXY"],
    );
}

#[test]
fn https_to_a_plain_http_port_says_the_server_did_not_speak_tls() {
    let lab = Lab::new();
    let url = lab.server.url(DRIVER).replace("http://", "https://");
    says(
        &lab.fetch(&lab.manifest_with(&url)),
        3,
        &["did not speak TLS", "http://", "after 1 attempt"],
    );
}

/// `openssl s_server -WWW` serving `dir` with a certificate made here: self-signed, or signed
/// by a test CA (`dir/ca.pem`); `None` where openssl is missing.
struct TlsServer {
    child: std::process::Child,
    port: u16,
}

fn openssl(dir: &Path, args: &[&str]) -> Option<()> {
    let ok = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?
        .success();
    ok.then_some(())
}

impl TlsServer {
    fn start(dir: &Path, signed_by_ca: bool) -> Option<Self> {
        let key = ["-newkey", "rsa:2048", "-nodes", "-days", "2"];
        if signed_by_ca {
            openssl(
                dir,
                &[
                    &["req", "-x509"][..],
                    &key,
                    &[
                        "-subj",
                        "/CN=stackpin test CA",
                        "-keyout",
                        "ca.key",
                        "-out",
                        "ca.pem",
                    ],
                ]
                .concat(),
            )?;
            openssl(
                dir,
                &[
                    "req",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-subj",
                    "/CN=127.0.0.1",
                    "-keyout",
                    "key.pem",
                    "-out",
                    "leaf.csr",
                ],
            )?;
            std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").ok()?;
            openssl(
                dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    "leaf.csr",
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-days",
                    "2",
                    "-extfile",
                    "ext.cnf",
                    "-out",
                    "cert.pem",
                ],
            )?;
        } else {
            openssl(
                dir,
                &[
                    &["req", "-x509"][..],
                    &key,
                    &[
                        "-subj",
                        "/CN=127.0.0.1",
                        "-addext",
                        "subjectAltName=IP:127.0.0.1",
                        "-keyout",
                        "key.pem",
                        "-out",
                        "cert.pem",
                    ],
                ]
                .concat(),
            )?;
        }
        let port = free_port();
        let child = Command::new("openssl")
            .args([
                "s_server", "-quiet", "-WWW", "-cert", "cert.pem", "-key", "key.pem",
            ])
            .args(["-accept", &port.to_string()])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let server = Self { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(server)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// Windows trusts its own certificate store, not SSL_CERT_FILE: the advice differs there.
#[cfg(unix)]
#[test]
fn a_self_signed_certificate_is_named_with_ssl_cert_file_and_not_retried() {
    let lab = Lab::new();
    let Some(tls) = TlsServer::start(lab.ctx.root(), false) else {
        eprintln!("openssl is not available: skipped");
        return;
    };
    let url = format!("https://127.0.0.1:{}/{DRIVER}", tls.port);
    let out = lab.fetch(&lab.manifest_with(&url));
    says(
        &out,
        3,
        &[
            "TLS certificate is not trusted",
            "self-signed",
            "SSL_CERT_FILE",
            "after 1 attempt",
        ],
    );
    assert!(!out.stderr.contains("cannot connect"), "{}", out.stderr);
}

#[cfg(unix)]
#[test]
fn ssl_cert_file_naming_the_labs_ca_makes_its_mirror_trusted() {
    let lab = Lab::new();
    let site = lab.ctx.path("site");
    std::fs::create_dir_all(&site).expect("site");
    std::fs::write(site.join(DRIVER), vec![7u8; 30_000]).expect("driver");
    let Some(tls) = TlsServer::start(&site, true) else {
        eprintln!("openssl is not available: skipped");
        return;
    };
    let url = format!("https://127.0.0.1:{}/{DRIVER}", tls.port);
    let manifest = lab.manifest_with(&url);
    says(
        &lab.fetch(&manifest),
        3,
        &[
            "signed by an authority this machine does not trust",
            "SSL_CERT_FILE",
        ],
    );
    let mut cmd = lab.command(&["fetch", manifest.to_str().expect("utf-8")]);
    cmd.env("SSL_CERT_FILE", site.join("ca.pem"));
    says(&run(&mut cmd), 0, &[]);
    assert!(lab.stack().join("driver").join(DRIVER).is_file());
}

#[cfg(unix)]
#[test]
fn sigterm_during_fetch_json_prints_the_document_and_frees_the_stack() {
    let lab = Lab::new();
    lab.server.route(
        DRIVER,
        Route {
            body: vec![5u8; 4 << 20],
            throttle: Some(std::time::Duration::from_millis(100)),
            ..Route::default()
        },
    );
    let manifest = lab.manifest();
    let child = lab
        .command(&["fetch", "--json", manifest.to_str().expect("utf-8")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("fetch starts");
    let partial = lab.stack().join("driver").join(format!("{DRIVER}.partial"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) == 0 {
        assert!(std::time::Instant::now() < deadline, "no partial appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let out = child.wait_with_output().expect("fetch ends");
    let outcome = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    says(
        &outcome,
        3,
        &[
            "interrupted",
            "again to finish it",
            "partial download(s) kept",
        ],
    );
    let doc: serde_json::Value = serde_json::from_str(&outcome.stdout).expect("one JSON document");
    assert_eq!(doc["exit_code"], 3);
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("interrupted")),
        "{doc}"
    );
    assert!(
        !lab.stack().join(".stackpin-busy").exists(),
        "the busy marker stayed"
    );
    assert!(partial.exists(), "the partial is kept for the next fetch");
}

// ---- a full disk ----

/// `cmd` run with `dir` on a disk of `kib` KiB; what the disk held afterwards lands in `kept`.
#[cfg(target_os = "linux")]
fn on_a_small_disk(cmd: &Command, dir: &Path, kib: u64, kept: &Path) -> Option<Outcome> {
    let out = crate::common::on_a_small_disk(cmd, dir, kib, kept)?;
    Some(Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[cfg(target_os = "linux")]
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(target_os = "linux")]
#[test]
fn a_bundle_onto_a_full_disk_is_exit_3_saying_free_space_or_another_output() {
    let lab = Lab::new().fetched();
    let m = lab.ctx.path("stack.yaml");
    let disk = lab.ctx.path("small-disk");
    let output = disk.join("stack.zip");
    let kept = lab.ctx.path("small-disk-held");
    let cmd = lab.command(&[
        "bundle",
        m.to_str().expect("utf-8"),
        "-o",
        output.to_str().expect("utf-8"),
    ]);
    // 120 KB of installers onto 64 KiB.
    let Some(out) = on_a_small_disk(&cmd, &disk, 64, &kept) else {
        return;
    };
    says(
        &out,
        3,
        &[
            "No space left on device",
            "disk is full",
            "free space",
            "-o",
        ],
    );
    assert!(
        listing(&kept).is_empty(),
        "nothing is left on the full disk, neither the bundle nor a part of it: {:?}",
        listing(&kept)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_fetch_into_a_full_archive_is_exit_3_saying_free_space_or_another_archive() {
    let lab = Lab::new();
    let m = lab.manifest();
    let kept = lab.ctx.path("archive-held");
    let cmd = lab.command(&["fetch", m.to_str().expect("utf-8")]);
    // Three installers of 40 KB each into 64 KiB: one fits, the next does not.
    let Some(out) = on_a_small_disk(&cmd, &lab.archive(), 64, &kept) else {
        return;
    };
    says(
        &out,
        3,
        &[
            "No space left on device",
            "disk is full",
            "free space",
            "--archive",
        ],
    );
    let stack = kept.join(STACK);
    for layer in ["driver", "toolkit", "library"] {
        // A `.partial` stays on purpose: the next fetch, with room, continues it.
        for name in listing(&stack.join(layer))
            .into_iter()
            .filter(|n| !n.ends_with(".partial"))
        {
            let bytes = std::fs::read(stack.join(layer).join(&name)).expect("archived file");
            assert_eq!(
                bytes.len(),
                40_000,
                "{layer}/{name} is on the disk under its final name only when whole"
            );
        }
    }
}

// ---- diagnose's input ----

#[test]
fn a_log_in_utf16_without_a_byte_order_mark_is_diagnosed_not_unknown() {
    let ctx = TestContext::new();
    let log = ctx.path("train.log");
    let text = "Traceback (most recent call last):\r\n\
                RuntimeError: CUDA error: no kernel image is available for execution on the device\r\n";
    std::fs::write(&log, utf16le(text)).expect("log");
    let out = ctx.run(["diagnose", log.to_str().expect("utf-8")]);
    says(&out, 0, &["layer:    library", "no kernel image"]);
}

#[test]
fn an_empty_log_or_empty_stdin_says_the_log_is_empty_and_what_to_give() {
    let ctx = TestContext::new();
    let log = ctx.path("empty.log");
    std::fs::write(&log, b"").expect("log");
    says(
        &ctx.run(["diagnose", log.to_str().expect("utf-8")]),
        2,
        &["empty.log is empty", "2>&1"],
    );
    let mut cmd = ctx.stackpin(["diagnose"]);
    cmd.stdin(std::process::Stdio::null());
    let out = run(&mut cmd);
    says(&out, 2, &["standard input is empty", "pipe it in"]);
    assert!(!out.stdout.contains("no known failure"), "{out:?}");
}

#[test]
fn escape_sequences_in_a_log_or_a_data_set_never_reach_the_terminal() {
    let ctx = TestContext::new();
    let log = ctx.path("hostile.log");
    std::fs::write(
        &log,
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory \
         \x1b[2J\x1b]0;pwned\x07\n",
    )
    .expect("log");
    let out = ctx.run(["diagnose", log.to_str().expect("utf-8")]);
    says(&out, 0, &["libcudart.so.12", "\\u{1b}[2J"]);
    assert!(
        !out.stdout.contains('\u{1b}') && !out.stdout.contains('\u{7}'),
        "{out:?}"
    );

    let set = ctx.path("set.json");
    let packed = ctx.run([
        "data",
        "pack",
        repo("data").to_str().expect("utf-8"),
        "-o",
        set.to_str().expect("utf-8"),
    ]);
    assert_eq!(packed.code, 0, "{packed:?}");
    let text = std::fs::read_to_string(&set).expect("packed");
    // A table whose text carries a terminal's escapes, where the YAML reader will quote it.
    let hostile = text.replacen(
        "# Published",
        "# Pub\\u001b[2J\\u001b]0;pwned\\u0007lished",
        1,
    );
    assert_ne!(
        hostile, text,
        "the packed set holds the checksums table's first comment"
    );
    std::fs::write(&set, hostile).expect("hostile set");
    let mut cmd = ctx.stackpin(["data", "update", "--from", set.to_str().expect("utf-8")]);
    cmd.env("STACKPIN_DATA_DIR", ctx.path("data-dir"));
    let out = run(&mut cmd);
    // docs/release-data.md: an invalid set is refused with exit 1 and the set in use stays.
    says(&out, 1, &["set.json", "checksums.yaml", "invalid"]);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all:?}");
}
