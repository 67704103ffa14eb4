//! The driver's build prerequisites, installed offline before the driver: the archived `.deb`
//! files (`driver.prerequisites`, archived by `fetch`) that the target lacks, or has only at an
//! older version, each copied into a private staging folder while its bytes are hashed against
//! the lock, then handed to `dpkg --install` in one step (dpkg orders the set itself). A package
//! the target already has at that version or newer is skipped: never a downgrade. Nothing runs
//! when one file does not match the lock. With a host root (`STACKPIN_HOST_ROOT`, a mounted
//! image), dpkg installs under it (`--root`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Around, HostView, InstallError, LayerRun, staging_dir};
use crate::archive::{self, ArchiveError, LockEntry, Lockfile, StackDir};
use crate::exec;
use crate::exec::step::{Step, StepStatus, log_name};
use crate::host::readiness::LinuxFacts;
use crate::manifest::{Layer, Manifest};

/// How long reading one package's control fields may take.
const DPKG_DEB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Where dpkg keeps what is installed (dpkg(1), `--admindir`).
const DPKG_STATUS: &str = "var/lib/dpkg/status";

/// The archived prerequisites the target needs, and those it already has.
#[derive(Debug, Default)]
pub struct Needed {
    pub install: Vec<LockEntry>,
    pub present: Vec<LockEntry>,
}

/// Sorts the archived prerequisites into those to install and those the target has at that
/// version or newer, from the target's dpkg status.
pub fn needed(lock: &Lockfile, root: Option<&Path>) -> Needed {
    let installed = installed_packages(root);
    let mut out = Needed::default();
    for entry in archive::prerequisite_entries(lock) {
        let have = archive::deb_identity(&entry.file).and_then(|id| {
            installed
                .get(&(id.package.clone(), id.architecture.clone()))
                .filter(|v| compare_versions(v, &id.version) != std::cmp::Ordering::Less)
        });
        match have {
            Some(_) => out.present.push(entry.clone()),
            None => out.install.push(entry.clone()),
        }
    }
    out
}

/// `dpkg [--root=ROOT] --install FILE…`.
fn dpkg_argv(root: Option<&Path>, files: &[PathBuf]) -> Vec<String> {
    let mut argv = vec!["dpkg".to_string()];
    if let Some(root) = root {
        argv.push(format!("--root={}", root.display()));
    }
    argv.push("--install".into());
    argv.extend(files.iter().map(|f| f.display().to_string()));
    argv
}

/// The command `plan` shows before the driver's (argv), with the archived files (install runs
/// their verified copies, split at pre-dependencies); `None` when the manifest names no
/// prerequisites or the target has them all.
pub fn planned(m: &Manifest, stack: &Path, root: Option<&Path>) -> Option<Vec<String>> {
    m.driver.prerequisites.as_ref()?;
    let stack = StackDir::at(stack.to_path_buf());
    let lock = stack.read_lock().ok()?;
    let needed = needed(&lock, root);
    if needed.install.is_empty() {
        return None;
    }
    let files: Vec<PathBuf> = needed
        .install
        .iter()
        .map(|e| stack.file_path(Layer::Driver, &e.file))
        .collect();
    Some(dpkg_argv(root, &files))
}

/// Installs the prerequisites the target lacks, as their own logged step before the driver's.
/// `Ok(None)`: done (or nothing to do), the driver may run; `Ok(Some(run))`: dpkg failed, and
/// the layer ends with its log. A file that does not match the lock is refused before dpkg runs.
pub(super) fn install(
    m: &Manifest,
    stack: &StackDir,
    lock: &Lockfile,
    host: &dyn HostView,
    around: &Around<'_>,
) -> Result<Option<LayerRun>, InstallError> {
    let layer = Layer::Driver;
    if m.driver.prerequisites.is_none() {
        return Ok(None);
    }
    let root = host.host_root();
    let needed = needed(lock, root.as_deref());
    if !needed.present.is_empty() {
        around.reporter.note(&format!(
            "driver prerequisites: {} of {} packages already installed at that version or newer; skipped",
            needed.present.len(),
            needed.present.len() + needed.install.len()
        ));
    }
    if needed.install.is_empty() {
        if archive::prerequisite_entries(lock).is_empty() {
            return Err(InstallError::Refused {
                layer,
                source: ArchiveError::Prerequisites(
                    "the manifest names driver.prerequisites but the archive has none; run `stackpin fetch` first".into(),
                ),
            });
        }
        return Ok(None);
    }
    let dir = staging_dir(stack).map_err(|source| InstallError::Refused {
        layer,
        source: ArchiveError::io("creating a staging folder in", stack.root(), source),
    })?;
    let mut staged = Vec::new();
    for entry in &needed.install {
        let copy = archive::stage_verified(stack, m, entry, dir.path())
            .map_err(|source| InstallError::Refused { layer, source })?;
        staged.push(copy);
    }
    let runs = dpkg_runs(&staged).map_err(|why| InstallError::Refused {
        layer,
        source: ArchiveError::Prerequisites(why),
    })?;
    for (i, files) in runs.iter().enumerate() {
        let prefix = match runs.len() {
            1 => "driver-prerequisites".to_string(),
            _ => format!("driver-prerequisites-{}", i + 1),
        };
        if let Some(failed) = run_dpkg(m, stack, root.as_deref(), files, &prefix, around)? {
            return Ok(Some(failed));
        }
    }
    drop(dir);
    Ok(None)
}

/// One `dpkg --install` of `files` as a logged step; `Some` when it did not succeed.
fn run_dpkg(
    m: &Manifest,
    stack: &StackDir,
    root: Option<&Path>,
    files: &[PathBuf],
    prefix: &str,
    around: &Around<'_>,
) -> Result<Option<LayerRun>, InstallError> {
    let layer = Layer::Driver;
    let step = Step {
        argv: dpkg_argv(root, files),
        env: vec![("DEBIAN_FRONTEND".into(), "noninteractive".into())],
        env_remove: Vec::new(),
        log: stack.logs_dir().join(log_name(prefix)),
        timeout: m.timeout(layer),
        cwd: None,
    };
    around.reporter.step_started(layer, &step.argv);
    let outcome = super::run_recorded(&step, layer, around.machine)?;
    around.reporter.step_finished(layer, &outcome);
    if outcome.status == StepStatus::Succeeded {
        return Ok(None);
    }
    Ok(Some(LayerRun {
        log_incomplete: outcome.log_warning(&layer.to_string()),
        status: outcome.status,
        code: outcome.code,
        log: Some(outcome.log),
        tail: outcome.tail,
        refused: None,
    }))
}

/// The package set split into dpkg runs: a package another one pre-depends on must be configured
/// before that one is even unpacked, which one `dpkg --install` of the whole set does not do
/// (dkms pre-depends on lsb-release). So the pre-dependency targets, with everything they need
/// from the set, go in first; the rest after. Control fields are read from the verified copies
/// with `dpkg-deb --field`.
fn dpkg_runs(staged: &[PathBuf]) -> Result<Vec<Vec<PathBuf>>, String> {
    let mut controls = Vec::new();
    for file in staged {
        let spec = exec::Spec::captured(
            "dpkg-deb",
            [
                OsString::from("--field"),
                file.as_os_str().to_owned(),
                "Package".into(),
                "Pre-Depends".into(),
                "Depends".into(),
            ],
            DPKG_DEB_TIMEOUT,
        );
        let finished = exec::run(spec).map_err(|e| format!("cannot run dpkg-deb: {e}"))?;
        if finished.end != exec::End::Exited(0) {
            return Err(format!(
                "{} is not a package dpkg-deb can read: {}",
                file.display(),
                String::from_utf8_lossy(&finished.stderr).trim()
            ));
        }
        controls.push(Control::parse(&String::from_utf8_lossy(&finished.stdout)));
    }
    let first = first_run(&controls);
    let (early, late): (Vec<usize>, Vec<usize>) =
        (0..staged.len()).partition(|i| first.contains(&controls[*i].package));
    Ok([early, late]
        .into_iter()
        .filter(|run| !run.is_empty())
        .map(|run| run.into_iter().map(|i| staged[i].clone()).collect())
        .collect())
}

/// The fields of a package's control file that decide the order.
#[derive(Debug, Default)]
struct Control {
    package: String,
    pre_depends: Vec<String>,
    depends: Vec<String>,
}

impl Control {
    /// `Package: x` / `Pre-Depends: a (>= 1), b | c` / `Depends: …`, as `dpkg-deb --field` prints.
    fn parse(text: &str) -> Self {
        let names = |value: &str| -> Vec<String> {
            value
                .split([',', '|'])
                .filter_map(|d| d.split_whitespace().next())
                .map(|d| d.split(':').next().unwrap_or(d).to_string())
                .collect()
        };
        let mut c = Control::default();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("Package:") {
                c.package = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("Pre-Depends:") {
                c.pre_depends = names(v);
            } else if let Some(v) = line.strip_prefix("Depends:") {
                c.depends = names(v);
            }
        }
        c
    }
}

/// The packages of the first run: every pre-dependency target in the set, and what they need
/// from the set, transitively.
fn first_run(controls: &[Control]) -> Vec<String> {
    let in_set = |name: &String| controls.iter().any(|c| &c.package == name);
    let mut first: Vec<String> = controls
        .iter()
        .flat_map(|c| c.pre_depends.iter())
        .filter(|n| in_set(n))
        .cloned()
        .collect();
    let mut i = 0;
    while i < first.len() {
        if let Some(c) = controls.iter().find(|c| c.package == first[i]) {
            for dep in c.pre_depends.iter().chain(&c.depends) {
                if in_set(dep) && !first.contains(dep) {
                    first.push(dep.clone());
                }
            }
        }
        i += 1;
    }
    first
}

/// The fix of a blocking driver finding (`what`) that the manifest's prerequisites cover — the
/// running kernel's headers through `kernel:`, gcc/make/dkms named in `packages:` — since
/// `install` installs them from the archive right before the driver; `None` when they do not.
pub fn covers(m: &Manifest, facts: &LinuxFacts, what: &str) -> Option<String> {
    let p = m.driver.prerequisites.as_ref()?;
    let names = p.requested_names();
    let headers = p.kernel.is_some() && p.kernel == facts.kernel;
    let tools = facts
        .missing_tools
        .iter()
        .all(|t| names.iter().any(|n| n == t));
    let covered = (headers && what.starts_with("no kernel headers"))
        || (tools && what.contains("kernel module cannot be built"));
    covered.then(|| {
        format!(
            "none needed: driver.prerequisites ({}) are installed from the archive before the driver",
            p.distribution
        )
    })
}

/// `(package, architecture) → version` of every package dpkg has installed under `root`.
fn installed_packages(root: Option<&Path>) -> HashMap<(String, String), String> {
    let path = crate::host::context::under(root, &format!("/{DPKG_STATUS}"));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    parse_status(&text)
}

fn parse_status(text: &str) -> HashMap<(String, String), String> {
    let mut out = HashMap::new();
    for stanza in text.split("\n\n") {
        let field = |key: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        };
        if field("Status").as_deref() != Some("install ok installed") {
            continue;
        }
        if let (Some(package), Some(arch), Some(version)) =
            (field("Package"), field("Architecture"), field("Version"))
        {
            out.insert((package, arch), version);
        }
    }
    out
}

/// Debian's version order (deb-version(7)): epoch, then upstream and revision compared by
/// dpkg's rules — runs of non-digits by character, `~` before everything, letters before other
/// characters; runs of digits by number.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |v: &str| -> (u64, String, String) {
        let (epoch, rest) = match v.split_once(':') {
            Some((e, r)) => (e.parse().unwrap_or(0), r),
            None => (0, v),
        };
        match rest.rsplit_once('-') {
            Some((u, r)) => (epoch, u.to_string(), r.to_string()),
            None => (epoch, rest.to_string(), String::new()),
        }
    };
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| verrevcmp(&ua, &ub))
        .then_with(|| verrevcmp(&ra, &rb))
}

fn order(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => c as i32,
        Some(c) => c as i32 + 256,
    }
}

fn verrevcmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (ca, cb) = (order(a.get(i).copied()), order(b.get(j).copied()));
            if ca != cb {
                return ca.cmp(&cb);
            }
            i += 1;
            j += 1;
        }
        while a.get(i) == Some(&b'0') {
            i += 1;
        }
        while b.get(j) == Some(&b'0') {
            j += 1;
        }
        let mut first = std::cmp::Ordering::Equal;
        while i < a.len() && a[i].is_ascii_digit() && j < b.len() && b[j].is_ascii_digit() {
            if first == std::cmp::Ordering::Equal {
                first = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if i < a.len() && a[i].is_ascii_digit() {
            return std::cmp::Ordering::Greater;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            return std::cmp::Ordering::Less;
        }
        if first != std::cmp::Ordering::Equal {
            return first;
        }
    }
    std::cmp::Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn versions_follow_dpkgs_order() {
        assert_eq!(compare_versions("4.3-4.1", "4.3-4.1"), Equal);
        assert_eq!(compare_versions("1:1.0", "2.0"), Greater);
        assert_eq!(compare_versions("1.0~rc1", "1.0"), Less);
        assert_eq!(
            compare_versions("2.36-9+deb12u14", "2.36-9+deb12u9"),
            Greater
        );
        assert_eq!(compare_versions("12.2.0-14+deb12u1", "12.2.0-14"), Greater);
        assert_eq!(compare_versions("1.0a", "1.0+"), Less);
        assert_eq!(compare_versions("1.10", "1.9"), Greater);
        assert_eq!(compare_versions("1.0-1", "1.0"), Greater);
    }

    #[test]
    fn pre_dependency_targets_and_what_they_need_go_first() {
        let c = |text: &str| Control::parse(text);
        let set = [
            c(
                "Package: dkms\nPre-Depends: lsb-release\nDepends: kmod, gcc | c-compiler, make:any\n",
            ),
            c("Package: lsb-release\nDepends: libc6 (>= 2.34)\n"),
            c("Package: libc6\n"),
            c("Package: make\n"),
        ];
        assert_eq!(set[0].depends, ["kmod", "gcc", "c-compiler", "make"]);
        assert_eq!(first_run(&set), ["lsb-release", "libc6"]);
        assert!(first_run(&set[2..]).is_empty());
    }

    #[test]
    fn only_installed_packages_count() {
        let status = "Package: make\nStatus: install ok installed\nArchitecture: amd64\nVersion: 4.3-4.1\n\n\
                      Package: gcc\nStatus: deinstall ok config-files\nArchitecture: amd64\nVersion: 4:12.2.0-3\n";
        let seen = parse_status(status);
        assert_eq!(
            seen.get(&("make".into(), "amd64".into()))
                .map(String::as_str),
            Some("4.3-4.1")
        );
        assert!(!seen.contains_key(&("gcc".into(), "amd64".into())));
    }
}
