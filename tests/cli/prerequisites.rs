//! The driver's build prerequisites (`driver.prerequisites`) through fetch, the lock, audit,
//! plan and install, with real `.deb` files built on the spot by `dpkg-deb --build` and served
//! by the real apt-get from a local repository (`copy:`), so no network is needed. The target's
//! `dpkg` is a fake on `PATH` as strict as the real one where these tests look: it reads each
//! file with the real `dpkg-deb` (anything else is refused), checks every `Depends:` against
//! the set and the root's status file, and records what it installed there and in the order log.
//! Skipped where `apt-get` or `dpkg-deb` is missing (not a Debian-family machine).
#![cfg(unix)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::common::{OutputStarted, text};
use crate::fakes::{DriverMode, FakeHost, FakeRoot};
use crate::install::{driver_script, library_script, order_log, toolkit_script};
use crate::server::TestServer;

/// The fake dpkg: `dpkg [--root=DIR] --install FILE…`, as far as stackpin uses it.
const DPKG: &str = r#"#!/bin/sh
# Fake dpkg (tests/cli/prerequisites.rs): reads each .deb with the real dpkg-deb.
root=; files=; order='@ORDER@'
for a in "$@"; do
  case "$a" in
    --root=*) root="${a#--root=}" ;;
    --install|-i) ;;
    -*) echo "dpkg: error: unknown option $a" >&2; exit 2 ;;
    *) files="$files $a" ;;
  esac
done
status="$root/var/lib/dpkg/status"; mkdir -p "$root/var/lib/dpkg"; touch "$status"
set_names=
for f in $files; do
  p=$(dpkg-deb -f "$f" Package 2>/dev/null) || { echo "dpkg: error processing archive $f (--install): not a Debian format archive" >&2; exit 1; }
  set_names="$set_names $p"
done
for f in $files; do
  for dep in $(dpkg-deb -f "$f" Depends | tr ',' ' ' | sed 's/([^)]*)//g'); do
    case " $set_names " in *" $dep "*) continue ;; esac
    grep -q "^Package: $dep\$" "$status" && continue
    echo "dpkg: dependency problems prevent configuration of $(dpkg-deb -f "$f" Package): depends on $dep; however: Package $dep is not installed." >&2
    exit 1
  done
done
for f in $files; do
  p=$(dpkg-deb -f "$f" Package); v=$(dpkg-deb -f "$f" Version); a=$(dpkg-deb -f "$f" Architecture)
  printf 'Package: %s\nStatus: install ok installed\nArchitecture: %s\nVersion: %s\n\n' "$p" "$a" "$v" >> "$status"
  echo "dpkg $p" >> "$order"
done
"#;

/// Whether this machine has the real package tools these tests use.
fn tools_present() -> bool {
    let ok = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let present = ok("apt-get") && ok("dpkg-deb");
    if !present {
        eprintln!("skipped: apt-get and dpkg-deb are needed (a Debian-family machine)");
    }
    present
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Builds `<name>_<version>_amd64.deb` in `repo` with the real `dpkg-deb --build`.
fn build_deb(repo: &Path, name: &str, version: &str, depends: Option<&str>) -> PathBuf {
    let tree = repo.join(format!("tree-{name}"));
    fs::create_dir_all(tree.join("DEBIAN")).expect("control folder");
    fs::create_dir_all(tree.join("usr/share/doc").join(name)).expect("doc folder");
    fs::write(
        tree.join("usr/share/doc").join(name).join("README"),
        format!("{name} {version}\n"),
    )
    .expect("payload");
    let depends = depends.map_or(String::new(), |d| format!("Depends: {d}\n"));
    fs::write(
        tree.join("DEBIAN/control"),
        format!(
            "Package: {name}\nVersion: {version}\nArchitecture: amd64\nMaintainer: stackpin tests <tests@localhost>\n{depends}Description: a build prerequisite for the tests\n"
        ),
    )
    .expect("control");
    let deb = repo.join(format!("{name}_{version}_amd64.deb"));
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&tree)
        .arg(&deb)
        .output()
        .expect("dpkg-deb runs");
    assert!(out.status.success(), "dpkg-deb --build: {}", text(&out));
    fs::remove_dir_all(&tree).expect("tree removed");
    deb
}

/// A flat apt repository: the debs, their `Packages` index and a `Release` that hashes it.
fn repository(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    fs::create_dir_all(&repo).expect("repo");
    let debs = [
        (build_deb(&repo, "hello-lib", "2.0-1", None), None),
        (
            build_deb(&repo, "hello-tool", "1.0-1", Some("hello-lib (>= 2.0)")),
            Some("hello-lib (>= 2.0)"),
        ),
    ];
    let mut index = String::new();
    for (deb, depends) in &debs {
        let bytes = fs::read(deb).expect("deb");
        let name = deb.file_name().and_then(|n| n.to_str()).expect("name");
        let mut parts = name.trim_end_matches(".deb").split('_');
        let (package, version) = (parts.next().expect("p"), parts.next().expect("v"));
        index.push_str(&format!(
            "Package: {package}\nVersion: {version}\nArchitecture: amd64\nMaintainer: stackpin tests <tests@localhost>\n{}Filename: ./{name}\nSize: {}\nSHA256: {}\nDescription: a build prerequisite for the tests\n\n",
            depends.map_or(String::new(), |d| format!("Depends: {d}\n")),
            bytes.len(),
            sha256(&bytes)
        ));
    }
    fs::write(repo.join("Packages"), &index).expect("Packages");
    fs::write(
        repo.join("Release"),
        format!(
            "Origin: stackpin-tests\nLabel: stackpin-tests\nSuite: tests\nCodename: tests\nArchitectures: amd64\nDate: Mon, 07 Dec 2026 00:00:00 UTC\nSHA256:\n {} {} Packages\n",
            sha256(index.as_bytes()),
            index.len()
        ),
    )
    .expect("Release");
    repo
}

/// A fake workstation with no driver, a ready fake root, a local apt repository and a stack
/// whose driver names `hello-tool` (which needs `hello-lib`) as its prerequisite.
struct Lab {
    host: FakeHost,
    root: FakeRoot,
    _server: TestServer,
    manifest: PathBuf,
}

impl Lab {
    fn new() -> Self {
        let mut host = FakeHost::new().gpu("NVIDIA L4", 23034, "8.9");
        host.set_driver_state(DriverMode::NoDriver, "", "");
        let root = FakeRoot::ready(&host.root().join("hostroot"));
        host.set_env("STACKPIN_HOST_ROOT", root.path());
        let dpkg = DPKG.replace("@ORDER@", &order_log(&host).display().to_string());
        let dpkg_path = host.bin().join("dpkg");
        fs::write(&dpkg_path, dpkg).expect("fake dpkg");
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&dpkg_path, fs::Permissions::from_mode(0o755)).expect("mode");
        }
        let repo = repository(host.root());
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
        let manifest = host.root().join("stack.yaml");
        let text = format!(
            "schema: 1\nname: prereq-stack\nos: linux\n\
             driver:\n  version: \"595.71.05\"\n  installer:\n    url: {d}\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--dkms\"]\n\
             \x20 prerequisites:\n    distribution: debian-12\n    packages: [hello-tool]\n    sources: [\"deb [trusted=yes] copy:{repo} ./\"]\n\
             toolkit:\n  version: \"12.4.1\"\n  installer:\n    url: {t}\n  root: \"{root}\"\n  run: [\"sh\", \"{{installer}}\", \"--silent\", \"--toolkit\", \"--toolkitpath={{root}}\"]\n\
             library:\n  name: torch\n  version: \"2.5.1\"\n  cuda: \"12.4\"\n  python: python3\n  installers:\n    - url: {l}\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"{{python}}\", \"{{examples}}/classify.py\", \"--batch-size\", \"{{batch}}\"]\n",
            d = server.url("NVIDIA-Linux-x86_64-595.71.05.run"),
            t = server.url("cuda_12.4.1_550.54.15_linux.run"),
            l = server.url("install-torch.sh"),
            repo = repo.display(),
            root = host.cuda_prefix().join("cuda-12.4").display(),
        );
        fs::write(&manifest, text).expect("manifest");
        let lab = Self {
            host,
            root,
            _server: server,
            manifest,
        };
        let (code, out) = lab.run(&["fetch"]);
        assert_eq!(code, Some(0), "fetch: {out}");
        lab
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String) {
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

    fn driver_dir(&self) -> PathBuf {
        self.host.archive().join("prereq-stack/driver")
    }

    fn lock(&self) -> serde_json::Value {
        let text = fs::read_to_string(self.host.archive().join("prereq-stack/stack.lock"))
            .expect("stack.lock");
        serde_saphyr::from_str(&text).expect("lock YAML")
    }

    fn order(&self) -> Vec<String> {
        fs::read_to_string(order_log(&self.host))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn status_file(&self) -> PathBuf {
        self.root.path().join("var/lib/dpkg/status")
    }
}

#[test]
fn prerequisites_are_hashed_in_the_lock_and_installed_before_the_driver() {
    if !tools_present() {
        return;
    }
    let lab = Lab::new();
    let lock = lab.lock();
    let files = lock["files"].as_array().expect("files");
    for (file, source) in [
        ("hello-lib_2.0-1_amd64.deb", "apt:debian-12/hello-lib=2.0-1"),
        (
            "hello-tool_1.0-1_amd64.deb",
            "apt:debian-12/hello-tool=1.0-1",
        ),
    ] {
        let entry = files
            .iter()
            .find(|e| e["file"].as_str() == Some(file))
            .unwrap_or_else(|| panic!("{file} in the lock: {lock:?}"));
        let bytes = fs::read(lab.driver_dir().join(file)).expect("archived deb");
        assert_eq!(entry["layer"].as_str(), Some("driver"));
        assert_eq!(entry["url"].as_str(), Some(source));
        assert_eq!(entry["sha256"].as_str(), Some(sha256(&bytes).as_str()));
        assert_eq!(entry["size"].as_u64(), Some(bytes.len() as u64));
    }

    let (code, audit) = lab.run(&["audit"]);
    assert_eq!(code, Some(0), "{audit}");

    // A bundle carries them: unbundled elsewhere (and audited there), the same bytes.
    let zip = lab.host.root().join("stack.zip");
    let (code, out) = lab.run(&["bundle", "-o", zip.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}");
    let elsewhere = lab.host.root().join("offline");
    let out = lab
        .host
        .installing([
            "unbundle",
            zip.to_str().expect("utf-8"),
            "--archive",
            elsewhere.to_str().expect("utf-8"),
        ])
        .output_started()
        .expect("stackpin runs");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        fs::read(elsewhere.join("prereq-stack/driver/hello-tool_1.0-1_amd64.deb")).expect("deb"),
        fs::read(lab.driver_dir().join("hello-tool_1.0-1_amd64.deb")).expect("deb")
    );

    let (code, plan) = lab.run(&["plan"]);
    assert!(code == Some(0), "{plan}");
    assert!(
        plan.contains("dpkg --root=") && plan.contains("hello-tool_1.0-1_amd64.deb"),
        "plan shows the prerequisites' step: {plan}"
    );

    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    let order = lab.order();
    assert_eq!(
        order[..3],
        ["dpkg hello-lib", "dpkg hello-tool", "driver"],
        "the prerequisites go in before the driver: {order:?}\n{out}"
    );
    let status = fs::read_to_string(lab.status_file()).expect("status");
    assert!(
        status.contains("Package: hello-tool\nStatus: install ok installed"),
        "{status}"
    );

    // A second fetch keeps the intact set without asking apt again.
    let (code, out) = lab.run(&["fetch"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("apt-get download"), "{out}");
}

#[test]
fn prerequisites_already_installed_at_their_version_are_skipped() {
    if !tools_present() {
        return;
    }
    let lab = Lab::new();
    fs::create_dir_all(lab.status_file().parent().expect("dpkg dir")).expect("dpkg dir");
    fs::write(
        lab.status_file(),
        "Package: hello-lib\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.0-1\n\n",
    )
    .expect("status");
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        lab.order()[..2],
        ["dpkg hello-tool", "driver"],
        "only the missing package is installed: {out}"
    );
    assert!(out.contains("1 of 2 packages already installed"), "{out}");

    // Everything in place: no dpkg at all, the driver still runs.
    fs::write(
        lab.status_file(),
        "Package: hello-lib\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.1-1\n\n\
         Package: hello-tool\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.0-1\n\n",
    )
    .expect("status");
    fs::remove_file(order_log(&lab.host)).expect("order log");
    lab.host.set_driver_state(DriverMode::NoDriver, "", "");
    let (_, out) = lab.run(&["install", "--yes", "--force", "driver"]);
    assert_eq!(
        lab.order().first().map(String::as_str),
        Some("driver"),
        "{out}"
    );
    assert!(!lab.order().iter().any(|l| l.starts_with("dpkg")), "{out}");
}

#[test]
fn a_tampered_prerequisite_is_refused_by_audit_and_by_install_before_anything_runs() {
    if !tools_present() {
        return;
    }
    let lab = Lab::new();
    let deb = lab.driver_dir().join("hello-lib_2.0-1_amd64.deb");
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&deb, fs::Permissions::from_mode(0o644)).expect("writable");
    }
    let mut bytes = fs::read(&deb).expect("deb");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&deb, bytes).expect("tampered");

    let (code, audit) = lab.run(&["audit"]);
    assert_eq!(code, Some(1), "{audit}");
    assert!(
        audit.contains("hello-lib_2.0-1_amd64.deb") && audit.to_lowercase().contains("corrupt"),
        "{audit}"
    );

    let (code, out) = lab.run(&["install", "--yes"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("hello-lib_2.0-1_amd64.deb"), "{out}");
    assert!(
        lab.order().is_empty(),
        "neither dpkg nor the driver may run: {:?}\n{out}",
        lab.order()
    );
    assert!(!lab.status_file().exists(), "nothing was installed");
}
