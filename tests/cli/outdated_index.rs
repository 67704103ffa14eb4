//! `outdated --index` end to end against a loopback index serving the package index's real
//! answers recorded in tests/fixtures/index (PEP 691 JSON): a torch 2.5.1 stack gets the newer
//! torch releases with the CUDA builds that fit its driver and the `cuda-toolkit` updates, with
//! the release data's answer beside them; an index that cannot be read is said so, never taken
//! for "nothing newer".

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Outcome, TestContext, repo, run};
use crate::server::{Route, TestServer};

/// The driver the stack pins (this test host has no driver that answers): it runs CUDA 12.6,
/// 12.8 and 13.0 builds, not 13.2's (595.45.04 and newer).
const DRIVER: &str = "580.95.05";

fn index_server() -> TestServer {
    let server = TestServer::start();
    for project in ["torch", "cuda-toolkit"] {
        let body = std::fs::read(repo(&format!("tests/fixtures/index/{project}.json")))
            .expect("recorded answer");
        server.route(
            &format!("simple/{project}/"),
            Route {
                body,
                content_type: Some("application/vnd.pypi.simple.v1+json".into()),
                ..Route::default()
            },
        );
    }
    server
}

/// The shipped torch 2.5.1 stack with its library index on loopback and the driver above.
fn stack(ctx: &TestContext, index: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo("manifests/torch-2.5.1-cu124-linux.yaml"))
        .expect("shipped manifest")
        .replace("version: \"595.71.05\"", &format!("version: \"{DRIVER}\""))
        .replace("https://download.pytorch.org/whl/cu124", index);
    let path = ctx.path("torch-2.5.1.yaml");
    std::fs::write(&path, text).expect("manifest");
    path
}

fn outdated(ctx: &TestContext, manifest: &Path, index: &str, json: bool) -> Outcome {
    let manifest = manifest.display().to_string();
    let mut args = vec![
        "outdated",
        "--index",
        "--index-url",
        index,
        manifest.as_str(),
    ];
    if json {
        args.push("--json");
    }
    let mut cmd = ctx.stackpin(&args);
    cmd.env("STACKPIN_RETRY_BASE_MS", "0")
        .env("STACKPIN_DATA_DIR", ctx.path("no-data"));
    run(&mut cmd)
}

#[test]
fn outdated_index_lists_the_newer_torch_releases_that_fit_the_stacks_driver() {
    let server = index_server();
    let ctx = TestContext::new();
    let index = server.url("simple");
    let manifest = stack(&ctx, &index);
    let out = outdated(&ctx, &manifest, &index, false);
    assert_eq!(out.code, 1, "{out:?}");
    let text = &out.stdout;
    assert!(
        text.contains(&format!(
            "5 newer torch on the index, 4 with a build for driver {DRIVER}"
        )),
        "{text}"
    );
    assert!(text.contains("the stack's pinned driver"), "{text}");
    for fits in ["2.11.0", "2.13.0", "2.14.0", "2.14.1"] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("2.5.1 → {fits} ")))
            .unwrap_or_else(|| panic!("no line for {fits}: {text}"));
        assert!(line.contains("CUDA 13.0 fits"), "{line}");
    }
    let line = text
        .lines()
        .find(|l| l.contains("2.5.1 → 2.15.0 "))
        .expect("2.15.0 line");
    assert!(line.contains("CUDA 13.2 needs driver 595.45.04"), "{line}");
    assert!(!line.contains("fits"), "{line}");
    // NVIDIA's cuda-toolkit releases: the newest for this driver, and the newest of all,
    // which the release data does not know yet.
    assert!(
        text.contains("12.4.1 → 13.0.2  fits driver 580.95.05"),
        "{text}"
    );
    assert!(
        text.contains("12.4.1 → 13.5.0  not in the release data"),
        "{text}"
    );

    let out = outdated(&ctx, &manifest, &index, true);
    assert_eq!(out.code, 1, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["outdated"], true, "{v}");
    let stack = &v["stacks"][0];
    assert_eq!(stack["driver"], DRIVER, "{v}");
    let newer = stack["newer"].as_array().expect("newer");
    let versions: Vec<&str> = newer.iter().filter_map(|n| n["version"].as_str()).collect();
    assert_eq!(versions, ["2.11.0", "2.13.0", "2.14.0", "2.14.1", "2.15.0"]);
    let fits: Vec<bool> = newer.iter().map(|n| n["fits"] == true).collect();
    assert_eq!(fits, [true, true, true, true, false]);
    assert_eq!(newer[4]["builds"][0]["min_driver"], "595.45.04", "{v}");
    assert_eq!(newer[0]["builds_from"], "data", "{v}");
    let toolkits = stack["toolkits"].as_array().expect("toolkits");
    assert!(
        toolkits
            .iter()
            .any(|t| t["version"] == "13.5.0" && t["fits"] == false)
    );
}

#[test]
fn outdated_index_says_plainly_when_the_index_cannot_be_read() {
    let ctx = TestContext::new();
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let index = format!("http://127.0.0.1:{port}/simple");
    let manifest = stack(&ctx, &index);
    let out = outdated(&ctx, &manifest, &index, false);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("could not read the package index"),
        "{out:?}"
    );
    assert!(out.stderr.contains("not \"up to date\""), "{out:?}");
    assert!(!out.stdout.contains("nothing newer"), "{out:?}");
}
