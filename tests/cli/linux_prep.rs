//! What `install` prepares on a Linux host with the user's consent, on fake roots: nouveau
//! blacklisted and the initramfs rebuilt with the distribution's tool, then a reboot whose resume
//! installs the driver; the runfiles' extraction moved off a small `/tmp` (`--tmpdir`); the
//! display manager stopped on request (`--stop-display`); a module signing key pair for Secure
//! Boot (the runfile's flags and `mokutil --import`); and `doctor` explaining a dead driver by
//! the host's readiness. The fake tools record their arguments and behave as the real ones do
//! (the fake `systemctl` removes the X lock; the fake runfile refuses while X or nouveau runs).
#![cfg(unix)]

use crate::fakes::DriverMode;
use crate::readiness::{Lab, carries};

/// Debian's tool, recording its arguments.
fn with_update_initramfs(lab: &Lab, then: &str) {
    lab.root
        .recording_program("usr/sbin/update-initramfs", then);
}

#[test]
fn nouveau_is_blacklisted_the_initramfs_rebuilt_and_the_driver_installs_after_the_reboot() {
    let lab = Lab::new();
    lab.root.nouveau_loaded();
    with_update_initramfs(
        &lab,
        "echo 'update-initramfs: Generating /boot/initrd.img-6.8.0-50-generic'",
    );

    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "prepared, not blocked: {plan}");
    assert!(plan.contains("driver prepares"), "{plan}");
    assert!(plan.contains("update-initramfs -u"), "{plan}");

    let doc = lab.json(&["install", "--yes"]);
    assert_eq!(doc["ok"], true, "{doc:#}");
    assert_eq!(doc["reboot_required"], true, "{doc:#}");
    assert_eq!(doc["layers"][0]["action"], "prepared", "{doc:#}");
    assert!(
        carries(
            &doc["readiness"],
            "driver",
            "prepares",
            "Nouveau kernel driver"
        ),
        "{doc:#}"
    );
    assert_eq!(
        doc["readiness"][0]["prepare"]["action"], "blacklist_nouveau",
        "{doc:#}"
    );
    let blacklist = std::fs::read_to_string(
        lab.root
            .path()
            .join("etc/modprobe.d/blacklist-nouveau.conf"),
    )
    .expect("the blacklist is written under the host root");
    assert!(
        blacklist.contains("\nblacklist nouveau\n")
            && blacklist.contains("options nouveau modeset=0"),
        "{blacklist}"
    );
    assert_eq!(lab.root.calls("update-initramfs"), ["-u"]);
    assert!(lab.order().is_empty(), "no driver before the reboot");
    let state = std::fs::read_to_string(lab.host.archive().join("ready-stack").join("state.yaml"))
        .expect("state");
    assert!(state.contains("nouveau blacklisted"), "recorded: {state}");

    // The reboot: nouveau is gone; the same command (what --reboot's resume runs) goes on.
    lab.root.nouveau_unloaded();
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(lab.order(), ["driver"], "{out}");
    assert_eq!(lab.root.calls("update-initramfs"), ["-u"], "not run again");
}

#[test]
fn the_initramfs_rebuild_is_recorded_in_the_machine_lock_while_it_runs() {
    let lab = Lab::new();
    lab.root.nouveau_loaded();
    // What a second stackpin would read while the tool runs: the holder and its process tree.
    let seen = lab.host.root().join("lock-seen-by-the-tool");
    with_update_initramfs(
        &lab,
        &format!(
            "cat \"$STACKPIN_LOCK_DIR/machine.lock\" > '{}'",
            seen.display()
        ),
    );
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    let lock = std::fs::read_to_string(&seen).expect("the tool read the machine lock");
    let tree = lock
        .lines()
        .find_map(|l| l.strip_prefix("tree "))
        .unwrap_or_else(|| panic!("the lock names the running step's tree: {lock}"));
    assert!(tree.parse::<u32>().is_ok(), "{lock}");
}

#[test]
fn a_failing_initramfs_tool_stops_before_the_reboot_with_its_message() {
    let lab = Lab::new();
    lab.root.nouveau_loaded();
    with_update_initramfs(
        &lab,
        "echo 'update-initramfs: failed for /boot/initrd.img-6.8.0-50-generic with 1.' >&2; exit 1",
    );
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(
        out.contains("update-initramfs: failed for /boot/initrd.img-6.8.0-50-generic with 1."),
        "the tool's own message: {out}"
    );
    assert!(out.contains("before the driver"), "{out}");
    assert!(
        !out.contains("after a reboot"),
        "no reboot asked for: {out}"
    );
    assert_eq!(lab.root.calls("update-initramfs"), ["-u"]);
    assert!(lab.order().is_empty(), "no driver installer: {out}");
}

#[test]
fn a_small_tmp_moves_the_runfiles_extraction_to_a_folder_with_room() {
    let lab = Lab::new();
    lab.root.tmp_free_gib(2);
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(plan.contains("toolkit prepares"), "{plan}");
    let extract = lab.host.archive().join("ready-stack").join(".extract");
    let extract = std::path::absolute(&extract).expect("absolute");
    assert!(
        plan.contains(&format!("extracts in {} instead", extract.display())),
        "{plan}"
    );
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    // The driver's reboot; then the toolkit.
    lab.host
        .set_driver_state(DriverMode::Ok, "595.71.05", "12.8");
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(0), "{out}");
    let argv = |name: &str| std::fs::read_to_string(lab.host.root().join(name)).unwrap_or_default();
    let flag = format!("--tmpdir={}", extract.display());
    assert!(
        argv("toolkit-argv").contains(&flag),
        "{}",
        argv("toolkit-argv")
    );
    assert!(
        argv("driver-argv").contains(&flag),
        "{}",
        argv("driver-argv")
    );
    assert!(extract.is_dir(), "made before the runfiles ran");
}

#[test]
fn a_tmpdir_given_to_install_goes_to_both_runfiles() {
    let lab = Lab::new();
    let dir = lab.host.root().join("scratch");
    std::fs::create_dir_all(&dir).expect("dir");
    let dir_arg = dir.to_str().expect("utf-8");
    let (code, out) = lab.run(&["install", "--yes", "--tmpdir", dir_arg]);
    assert_eq!(code, Some(0), "{out}");
    let driver = std::fs::read_to_string(lab.host.root().join("driver-argv")).expect("ran");
    assert!(driver.contains(&format!("--tmpdir={dir_arg}")), "{driver}");
    let (code, out) = lab.run(&["install", "--yes", "--tmpdir", "/no/such/folder"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--tmpdir /no/such/folder: no such folder"),
        "{out}"
    );
}

#[test]
fn stop_display_stops_the_display_manager_before_the_driver_and_says_so() {
    let lab = Lab::new();
    lab.root.x_running();
    // systemd's stop ends X, whose lock goes with it.
    lab.root.recording_program(
        "usr/bin/systemctl",
        "rm -f \"$STACKPIN_HOST_ROOT\"/tmp/.X*-lock",
    );
    let (code, out) = lab.run(&["install", "--yes"]);
    assert_eq!(code, Some(1), "blocked without the flag: {out}");
    assert!(out.contains("--stop-display"), "{out}");
    assert!(lab.root.calls("systemctl").is_empty());

    let (code, out) = lab.run(&["install", "--yes", "--stop-display"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(lab.root.calls("systemctl"), ["stop display-manager"]);
    assert!(out.contains("ends the desktop session"), "{out}");
    assert_eq!(
        lab.order(),
        ["driver"],
        "the runfile ran after X was gone: {out}"
    );
}

#[test]
fn up_takes_the_same_preparation_flags() {
    let lab = Lab::new();
    lab.root.x_running();
    lab.root.recording_program(
        "usr/bin/systemctl",
        "rm -f \"$STACKPIN_HOST_ROOT\"/tmp/.X*-lock",
    );
    let (code, out) = lab.run(&["up", "--yes", "--stop-display"]);
    assert!(!out.contains("unexpected argument"), "{out}");
    assert_eq!(
        lab.root.calls("systemctl"),
        ["stop display-manager"],
        "{code:?}: {out}"
    );
    assert_eq!(
        lab.order().first().map(String::as_str),
        Some("driver"),
        "{out}"
    );
}

/// mokutil as Ubuntu has it: root's password is locked, so `--root-pw` fails as the real one
/// does; `--generate-hash` prompts on stdout before the hash, as mokutil's `get_password` does;
/// an import needs a hash file holding what `--generate-hash` printed; the MOK list's
/// state (`enrolled`, `pending` or none) lives in `<root>/.mok-state` and `--test-key` reads it.
/// Returns where each imported hash is copied.
fn ubuntus_mokutil(lab: &Lab) -> std::path::PathBuf {
    let kept_hash = lab.host.root().join("mok-hash-seen");
    let state = lab.host.root().join(".mok-state");
    lab.root.recording_program(
        "usr/bin/mokutil",
        &format!(
            "case \"$1\" in\n\
             --generate-hash) printf 'input password: \\n'; read -r pw; printf 'input password again: \\n'; read -r again; [ \"$pw\" = \"$again\" ] || {{ echo 'Password doesn'\\''t match' >&2; exit 1; }}; printf '$6$fakesalt$%s\\n' \"$pw\"; exit 0;;\n\
             --test-key) case \"$(cat '{state}' 2>/dev/null)\" in\n\
               enrolled) echo \"$2 is already enrolled\"; exit 1;;\n\
               pending) echo \"$2 is already in the enrollment request\"; exit 1;;\n\
               *) echo \"$2 is not enrolled\"; exit 0;; esac;;\n\
             --revoke-import) rm -f '{state}'; exit 0;;\n\
             esac\n\
             for a in \"$@\"; do [ \"$a\" = --root-pw ] && {{ echo 'Failed to get root password hash' >&2; exit 1; }}; done\n\
             [ \"$(cat '{state}' 2>/dev/null)\" = pending ] && {{ echo \"SKIP: $2 is already in the enrollment request\"; exit 0; }}\n\
             hf=''; prev=''; for a in \"$@\"; do [ \"$prev\" = --hash-file ] && hf=\"$a\"; prev=\"$a\"; done\n\
             grep -q '^[$]6[$]fakesalt[$]' \"$hf\" 2>/dev/null || {{ echo 'Failed to read hash' >&2; exit 1; }}\n\
             cp \"$hf\" '{kept}'; echo pending > '{state}'\n",
            state = state.display(),
            kept = kept_hash.display()
        ),
    );
    kept_hash
}

/// The eight-digit password the last import's hash holds.
fn imported_password(kept_hash: &std::path::Path) -> String {
    std::fs::read_to_string(kept_hash)
        .expect("mokutil read a hash file")
        .trim()
        .strip_prefix("$6$fakesalt$")
        .expect("the hash --generate-hash printed")
        .to_string()
}

/// A Secure Boot host with Ubuntu's mokutil and a key pair for install to sign with.
struct SecureBootLab {
    lab: Lab,
    kept_hash: std::path::PathBuf,
    key: String,
    cert: String,
}

impl SecureBootLab {
    fn new() -> Self {
        let lab = Lab::new();
        lab.root.secure_boot_on();
        let kept_hash = ubuntus_mokutil(&lab);
        let key = lab.host.root().join("mok.key");
        let cert = lab.host.root().join("mok.der");
        std::fs::write(&key, "key").expect("key");
        std::fs::write(&cert, "cert").expect("cert");
        let (key, cert) = (
            key.to_str().expect("utf-8").to_string(),
            cert.to_str().expect("utf-8").to_string(),
        );
        Self {
            lab,
            kept_hash,
            key,
            cert,
        }
    }

    fn install_args(&self) -> [&str; 6] {
        [
            "install",
            "--yes",
            "--module-signing-key",
            &self.key,
            "--module-signing-cert",
            &self.cert,
        ]
    }
}

#[test]
fn a_rerun_before_the_reboot_queues_the_key_again_with_the_password_it_says() {
    let signing = SecureBootLab::new();
    let (lab, kept_hash) = (&signing.lab, &signing.kept_hash);
    let (key, cert) = (signing.key.as_str(), signing.cert.as_str());
    let args = signing.install_args();
    // The runfile refuses after the import: a module of an older driver is still loaded.
    let modules = lab.root.path().join("proc/modules");
    let before = std::fs::read_to_string(&modules).unwrap_or_default();
    std::fs::write(&modules, format!("{before}nvidia_drm 77824 0 - Live 0x0\n")).expect("modules");
    let (code, out) = lab.run(&args);
    assert_eq!(code, Some(3), "{out}");
    let first = imported_password(kept_hash);
    std::fs::write(&modules, before).expect("modules");
    let (code, out) = lab.run(&args);
    assert_eq!(code, Some(0), "{out}");
    let second = imported_password(kept_hash);
    assert_ne!(first, second, "queued again with a new password");
    assert!(
        lab.root
            .calls("mokutil")
            .iter()
            .any(|c| c == "--revoke-import"),
        "the pending request with the first password is revoked: {:?}",
        lab.root.calls("mokutil")
    );
    assert!(
        out.contains(&format!("type the one-time password {second}")) && !out.contains(&first),
        "only the password the MOK manager will ask for is said: {out}"
    );

    // After the reboot the key is enrolled: a later driver install says no password at all.
    std::fs::write(lab.host.root().join(".mok-state"), "enrolled").expect("enrolled");
    let hashes_before = lab
        .root
        .calls("mokutil")
        .iter()
        .filter(|c| c.as_str() == "--generate-hash")
        .count();
    lab.run(&[
        "install",
        "--yes",
        "--force",
        "driver",
        "--module-signing-key",
        key,
        "--module-signing-cert",
        cert,
    ]);
    let calls = lab.root.calls("mokutil");
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.as_str() == "--generate-hash")
            .count(),
        hashes_before,
        "no password for a key already enrolled: {calls:?}"
    );
}

#[test]
fn secure_boot_with_a_key_pair_signs_the_module_and_imports_the_certificate() {
    let signing = SecureBootLab::new();
    let (lab, kept_hash) = (&signing.lab, &signing.kept_hash);
    let (key, cert) = (signing.key.as_str(), signing.cert.as_str());
    let args = signing.install_args();
    let (code, out) = lab.run(&args);
    assert_eq!(code, Some(0), "{out}");
    let calls = lab.root.calls("mokutil");
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], format!("--test-key {cert}"), "{calls:?}");
    assert_eq!(
        calls[1], "--generate-hash",
        "hashed by mokutil first, the password on its stdin, never in its arguments: {calls:?}"
    );
    let password = imported_password(kept_hash);
    let password = password.as_str();
    assert!(
        password.len() == 8 && password.bytes().all(|b| b.is_ascii_digit()),
        "eight digits, typed before any keyboard layout loads: {password}"
    );
    let hash_file = calls[2]
        .strip_prefix(&format!("--import {cert} --hash-file "))
        .unwrap_or_else(|| panic!("imported with the hash, never --root-pw: {calls:?}"));
    let seen = std::fs::read_to_string(kept_hash).expect("mokutil read the hash file");
    assert_eq!(seen.trim(), format!("$6$fakesalt${password}"));
    assert!(
        !std::path::Path::new(hash_file).exists(),
        "the hash file is gone once imported"
    );
    assert!(
        out.contains(&format!("type the one-time password {password}")),
        "the password is said where the reboot is: {out}"
    );
    let driver = std::fs::read_to_string(lab.host.root().join("driver-argv")).expect("ran");
    assert!(
        driver.contains(&format!("--module-signing-secret-key={key}"))
            && driver.contains(&format!("--module-signing-public-key={cert}")),
        "{driver}"
    );
    assert!(
        out.contains("MOK manager"),
        "the enrolment step said plainly: {out}"
    );
}

#[test]
fn secure_boot_without_a_key_names_both_ways_out_and_how_to_make_a_key() {
    let lab = Lab::new();
    lab.root.secure_boot_on();
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(1), "{plan}");
    for words in [
        "turn Secure Boot off",
        "openssl req -new -x509",
        "--module-signing-key",
        "--module-signing-cert",
    ] {
        assert!(plan.contains(words), "{words}: {plan}");
    }
}

#[test]
fn doctor_explains_a_dead_driver_by_nouveau_or_secure_boot() {
    let lab = Lab::new();
    lab.root.nouveau_loaded();
    let (_, out) = lab.run(&["doctor"]);
    assert!(
        out.contains("nouveau is loaded") && out.contains("holds the GPU"),
        "{out}"
    );
    lab.root.nouveau_unloaded();
    lab.root.secure_boot_on();
    let (_, out) = lab.run(&["doctor"]);
    assert!(
        out.contains("the module was built but the kernel refuses to load it"),
        "{out}"
    );
}

#[test]
fn a_container_whose_host_driver_runs_the_toolkit_skips_the_driver_layer() {
    let lab = Lab::new();
    lab.root.container();
    // No headers and no DKMS in the container: none of it matters for a driver never built here.
    lab.root.no_headers();
    lab.root.no_dkms();
    lab.host
        .set_driver_state(DriverMode::Ok, "560.35.03", "12.6");
    let (code, plan) = lab.run(&["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(plan.contains("driver skips"), "{plan}");
    assert!(!plan.contains("kernel source tree"), "{plan}");
    let doc = lab.json(&["install", "--yes"]);
    assert_eq!(doc["ok"], true, "{doc:#}");
    assert_eq!(doc["layers"][0]["action"], "skipped", "{doc:#}");
    assert_eq!(lab.order(), ["toolkit", "library"]);
}
