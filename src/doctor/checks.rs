//! The six checks before training, as plain functions of the gathered [`Facts`], and the drift
//! they find. Nothing here touches the host.

use crate::archive::FileStatus;
use crate::install::state::{ChainState, LayerStatus};
use crate::layers::LibrarySeen;
use crate::manifest::{Layer, Role, Severity, SourceMap};
use crate::record::ProvenStack;
use crate::version::Version;

use super::{Check, CheckId, Drift, Examination, Facts, Status};

/// Turns the facts into the checks, the drift and the verdict.
pub fn judge(facts: &Facts<'_>) -> Examination {
    let mut drift = Vec::new();
    let record = facts.record.as_ref().ok().and_then(Option::as_ref);
    let checks = vec![
        driver(facts, record, &mut drift),
        toolkit(facts, record, &mut drift),
        library(facts),
        install_state(facts),
        example(facts, record, &mut drift),
        vram(facts, record),
        archive(facts),
        deployment(facts),
    ];
    let windows_driver = facts
        .windows_driver
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(|d| d.first().cloned());
    Examination {
        stack: facts.m.name.clone(),
        os: facts.m.os,
        record: record.map(|_| facts.record_path.clone()),
        ok: !checks.iter().any(|c| c.status == Status::Fail),
        checks,
        drift,
        layers: facts.layers.clone(),
        windows_driver,
    }
}

fn check(check: CheckId, status: Status, found: String, fix: Option<String>) -> Check {
    Check {
        check,
        status,
        found,
        fix,
    }
}

fn no_record(facts: &Facts<'_>, id: CheckId) -> Check {
    let (found, fix) = match &facts.record {
        Err(why) => (
            why.clone(),
            "run `stackpin prove MANIFEST` to write it again",
        ),
        Ok(_) => (
            format!("no proven-stack record ({})", facts.record_path.display()),
            "run `stackpin prove MANIFEST` (after `stackpin install`)",
        ),
    };
    check(id, Status::Fail, found, Some(fix.to_string()))
}

fn proof_holds(facts: &Facts<'_>, layer: Layer) -> bool {
    facts.layers.iter().any(|p| p.layer == layer && p.holds)
}

fn proof_seen(facts: &Facts<'_>, layer: Layer) -> String {
    facts
        .layers
        .iter()
        .find(|p| p.layer == layer)
        .map_or_else(String::new, |p| p.seen.clone())
}

/// The driver the record proved on: the example's GPU's driver.
fn recorded_driver(record: &ProvenStack) -> Option<&str> {
    record
        .gpus
        .iter()
        .find(|g| g.index == record.example.gpu_index)
        .or(record.gpus.first())
        .map(|g| g.driver.as_str())
}

fn driver(facts: &Facts<'_>, record: Option<&ProvenStack>, drift: &mut Vec<Drift>) -> Check {
    // A host with no working driver and no record says so first: nothing else can work, and
    // "no record" would send the user to `prove`. (With a record the drift below names it.)
    if record.is_none() && facts.driver.version.is_none() && !proof_holds(facts, Layer::Driver) {
        let found = facts
            .driver
            .problem
            .clone()
            .unwrap_or_else(|| proof_seen(facts, Layer::Driver));
        let fix = if facts.driver.reboot_pending {
            "a new driver is installed but the old kernel module is loaded: reboot, then run `stackpin install MANIFEST` again".to_string()
        } else {
            facts.module_problem.clone().unwrap_or_else(|| {
                format!(
                    "install the pinned driver {}: `stackpin install MANIFEST`",
                    facts.m.driver.version
                )
            })
        };
        return check(CheckId::Driver, Status::Fail, found, Some(fix));
    }
    let Some(recorded) = record.and_then(recorded_driver) else {
        return no_record(facts, CheckId::Driver);
    };
    let now = match &facts.driver.version {
        Some(v) => v.to_string(),
        None => facts
            .driver
            .state
            .clone()
            .unwrap_or_else(|| "no driver running".to_string()),
    };
    let same = facts
        .driver
        .version
        .as_ref()
        .is_some_and(|v| v.to_string() == recorded);
    if same && proof_holds(facts, Layer::Driver) {
        return check(
            CheckId::Driver,
            Status::Pass,
            format!("driver {recorded} recorded and running"),
            None,
        );
    }
    if !same {
        drift.push(Drift {
            layer: Layer::Driver,
            recorded: recorded.to_string(),
            now: now.clone(),
        });
    }
    let mut found = if same {
        format!(
            "driver {recorded} recorded and running, but the manifest pins {}",
            facts.m.driver.version
        )
    } else {
        format!("driver {recorded} → {now}")
    };
    // Without an answer from Windows the provider stays unknown; the drift alone still fails.
    match &facts.windows_driver {
        Some(Err(why)) => found.push_str(&format!("; driver provider unknown ({why})")),
        Some(Ok(drivers)) if drivers.is_empty() => {
            found.push_str("; driver provider unknown (Windows lists no NVIDIA adapter)")
        }
        _ => {}
    }
    if let Some(Ok(drivers)) = &facts.windows_driver {
        for d in drivers {
            let origin = d.origin(record.map(|r| r.proven_at.as_str()));
            found.push_str(&format!("; Windows reports {}: {origin}", d.describe()));
        }
    }
    let fix = if facts.driver.reboot_pending {
        "driver/library mismatch: the driver was upgraded (an unattended upgrade?) but the old \
         kernel module is still loaded; reboot, then run `stackpin doctor` again, and \
         `stackpin repair MANIFEST` if the version is not the recorded one"
            .to_string()
    } else if let Some(module) = &facts.module_problem {
        module.clone()
    } else if same {
        "run `stackpin install MANIFEST` then `stackpin prove MANIFEST` for the new pin".to_string()
    } else {
        format!(
            "`stackpin repair MANIFEST` reinstalls driver {recorded} from the archive and proves \
             the stack again; then apply its guard so it is not replaced again"
        )
    };
    check(CheckId::Driver, Status::Fail, found, Some(fix))
}

fn toolkit(facts: &Facts<'_>, record: Option<&ProvenStack>, drift: &mut Vec<Drift>) -> Check {
    let report = crate::check::check(facts.m, facts.manifest_text);
    let about_toolkit =
        |field: &str| field.starts_with("toolkit") || field.starts_with("library.cuda");
    if let Some(p) = report
        .problems
        .iter()
        .find(|p| p.severity == Severity::Error && about_toolkit(&p.field))
    {
        return check(
            CheckId::Toolkit,
            Status::Fail,
            format!("{}: {}", p.field, p.message),
            Some("re-pin the stack with `stackpin pin`, then install and prove it".to_string()),
        );
    }
    let seen = proof_seen(facts, Layer::Toolkit);
    if !proof_holds(facts, Layer::Toolkit) {
        let recorded = record.map_or_else(
            || facts.m.toolkit.version.to_string(),
            |r| r.toolkit.version.clone(),
        );
        let now = if seen.ends_with("does not exist") {
            format!("missing from {}", facts.m.toolkit.root)
        } else {
            seen.clone()
        };
        drift.push(Drift {
            layer: Layer::Toolkit,
            recorded,
            now,
        });
        return check(
            CheckId::Toolkit,
            Status::Fail,
            seen,
            Some(format!(
                "`stackpin repair MANIFEST` reinstalls CUDA {} into {} from the archive",
                facts.m.toolkit.version, facts.m.toolkit.root
            )),
        );
    }
    if let Some(p) = report.problems.iter().find(|p| about_toolkit(&p.field)) {
        return check(
            CheckId::Toolkit,
            Status::Unknown,
            format!("{seen}; the release notes cannot confirm it: {}", p.message),
            Some("check the library's release notes by hand".to_string()),
        );
    }
    check(
        CheckId::Toolkit,
        Status::Pass,
        format!(
            "{seen}, the CUDA line {} {}'s release notes name",
            facts.m.library.name, facts.m.library.version
        ),
        None,
    )
}

/// The latest time the install chain changed a layer.
fn last_install(state: &ChainState) -> Option<jiff::Timestamp> {
    state
        .layers
        .values()
        .filter(|l| l.status != LayerStatus::Failed)
        .filter_map(|l| l.at.parse::<jiff::Timestamp>().ok())
        .max()
}

fn example(facts: &Facts<'_>, record: Option<&ProvenStack>, drift: &mut Vec<Drift>) -> Check {
    let Some(r) = record else {
        return no_record(facts, CheckId::Example);
    };
    let prove_again = Some("run `stackpin prove MANIFEST` (or `stackpin repair MANIFEST`)".into());
    // The probe may report the public version (`2.5.1`) where the record kept the local
    // build tag (`2.5.1+cu124`); the release is what must not have moved.
    let recorded = Version::parse(&r.library.version).ok();
    let library_now = match &facts.library {
        // The manifest's `library.verify:` replaces the import probe (no Python to ask, as
        // under Wine): the layer's proof is what must still hold.
        _ if facts.m.library.verify.is_some() => {
            (!proof_holds(facts, Layer::Library)).then(|| proof_seen(facts, Layer::Library))
        }
        LibrarySeen::Present { version, .. }
            if recorded
                .as_ref()
                .is_some_and(|rv| rv.public() == version.public()) =>
        {
            None
        }
        LibrarySeen::Present { version, .. } => Some(version.to_string()),
        LibrarySeen::ImportFailed { .. } => Some("import fails".to_string()),
        LibrarySeen::NoInterpreter => Some("no interpreter".to_string()),
        LibrarySeen::Untrusted { why } => Some(format!("not run: {why}")),
    };
    if let Some(now) = library_now {
        drift.push(Drift {
            layer: Layer::Library,
            recorded: format!("{} {}", r.library.name, r.library.version),
            now: now.clone(),
        });
        return check(
            CheckId::Example,
            Status::Fail,
            format!(
                "the record proved {} {}; the host now has {now}: the proof no longer holds",
                r.library.name, r.library.version
            ),
            Some("`stackpin repair MANIFEST` reinstalls the library and proves again".into()),
        );
    }
    let Ok(proven_at) = r.proven_at.parse::<jiff::Timestamp>() else {
        return check(
            CheckId::Example,
            Status::Fail,
            format!(
                "the record's proven_at `{}` is not a timestamp",
                r.proven_at
            ),
            prove_again,
        );
    };
    let after = facts.state.as_ref().and_then(last_install);
    if let Some(installed) = after.filter(|i| *i > proven_at) {
        return check(
            CheckId::Example,
            Status::Fail,
            format!(
                "the record is from {proven_at}, before the last install at {installed}: the \
                 stack as installed now has not run the example"
            ),
            prove_again,
        );
    }
    check(
        CheckId::Example,
        Status::Pass,
        format!(
            "example passed at batch {} in {:.1}s at {proven_at}{}",
            r.example.batch,
            r.example.duration_s,
            if after.is_some() {
                ", after the last install"
            } else {
                ""
            }
        ),
        None,
    )
}

fn vram(facts: &Facts<'_>, record: Option<&ProvenStack>) -> Check {
    let Some(r) = record else {
        return no_record(facts, CheckId::Vram);
    };
    let working = facts.m.example.batch;
    if r.example.batch != working {
        return check(
            CheckId::Vram,
            Status::Fail,
            format!(
                "peak recorded at batch {}, the working batch is {working}",
                r.example.batch
            ),
            Some(format!("run `stackpin prove MANIFEST --batch {working}`")),
        );
    }
    let share = 100.0 * r.peak.mib / r.line.vram_mib.max(1) as f64;
    let found = format!(
        "peak {:.0} MiB at batch {} ({share:.0}% of {} MiB)",
        r.peak.mib, r.example.batch, r.line.vram_mib
    );
    match r.largest_safe_batch {
        Some(b) => check(
            CheckId::Vram,
            Status::Pass,
            format!(
                "{found}; largest safe batch {b} under the {:.0}% line",
                r.line.share * 100.0
            ),
            None,
        ),
        None => check(
            CheckId::Vram,
            Status::Fail,
            format!("{found}; no configured batch stays under the line"),
            Some("lower the batch (vram.batches) or train on a card with more memory".into()),
        ),
    }
}

/// The library asked live with the stack's Python (or its `verify:` command): it imports,
/// reports the pinned version and CUDA build, and sees the GPU.
fn library(facts: &Facts<'_>) -> Check {
    let seen = proof_seen(facts, Layer::Library);
    if proof_holds(facts, Layer::Library) {
        return check(CheckId::Library, Status::Pass, seen, None);
    }
    let lib = &facts.m.library;
    let fix = match &facts.library {
        LibrarySeen::Present {
            gpu_visible: false,
            cuda: Some(_),
            ..
        } if facts.m.library.verify.is_none() => format!(
            "{} is installed but sees no GPU — the driver layer: {}; check nvidia-smi and CUDA_VISIBLE_DEVICES",
            lib.name,
            facts
                .driver
                .problem
                .clone()
                .unwrap_or_else(|| proof_seen(facts, Layer::Driver))
        ),
        _ => format!(
            "reinstall the library from the archive: `stackpin repair MANIFEST` (or `stackpin install MANIFEST --force library`); {} {} for CUDA {} is pinned",
            lib.name, lib.version, lib.cuda
        ),
    };
    check(CheckId::Library, Status::Fail, seen, Some(fix))
}

/// `state.yaml`: a layer whose last step failed or did not finish is a failure, with its step
/// and time; no state at all is unknown (installed by hand).
fn install_state(facts: &Facts<'_>) -> Check {
    if let Some(why) = &facts.state_error {
        return check(
            CheckId::Install,
            Status::Fail,
            why.clone(),
            Some("move state.yaml away and run `stackpin install MANIFEST` again".into()),
        );
    }
    let Some(state) = facts.state.as_ref().filter(|s| !s.layers.is_empty()) else {
        return check(
            CheckId::Install,
            Status::Unknown,
            "no state.yaml: stackpin has not installed this stack here".into(),
            None,
        );
    };
    let mut bad = Vec::new();
    for (layer, entry) in &state.layers {
        if entry.status == LayerStatus::Done {
            continue;
        }
        let status = serde_json::to_value(entry.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{:?}", entry.status));
        let mut text = format!("{layer}: {status} at {}", entry.at);
        if let Some(detail) = &entry.detail {
            text.push_str(&format!(" ({detail})"));
        }
        if let Some(log) = &entry.log {
            text.push_str(&format!(", log {}", log.display()));
        }
        bad.push(text);
    }
    if let Some(layer) = state.interrupted_at {
        bad.push(format!("the chain was interrupted at the {layer} step"));
    }
    if let Some(record) = &facts.windows_update_left {
        bad.push(format!(
            "Windows Update is still paused by a stackpin that did not finish its toolkit step ({})",
            record.display()
        ));
    }
    if bad.is_empty() {
        let last = state
            .layers
            .values()
            .map(|e| e.at.as_str())
            .max()
            .unwrap_or_default();
        return check(
            CheckId::Install,
            Status::Pass,
            format!("every installed layer is done (last step {last})"),
            None,
        );
    }
    let mut fix = "read the step's log with `stackpin diagnose LOG`, fix the cause, then run `stackpin install MANIFEST` again".to_string();
    if facts.windows_update_left.is_some() {
        fix.push_str(&format!(
            "; install puts Windows Update back before anything else (by hand, as Administrator: `sc config {} start= demand`, then `sc start {}`)",
            crate::install::windows_update::WU_SERVICE,
            crate::install::windows_update::WU_SERVICE
        ));
    }
    check(CheckId::Install, Status::Fail, bad.join("; "), Some(fix))
}

fn archive(facts: &Facts<'_>) -> Check {
    let report = match &facts.audit {
        Ok(report) => report,
        Err(why) => {
            return check(
                CheckId::Archive,
                Status::Fail,
                why.clone(),
                Some("run `stackpin fetch MANIFEST` to archive the installers".into()),
            );
        }
    };
    let bad: Vec<String> = report
        .files
        .iter()
        .filter(|f| f.status.is_failure())
        .map(|f| match (&f.expected, &f.actual) {
            (Some(e), Some(a)) => {
                format!("{} {:?} (expected sha256 {e}, found {a})", f.path, f.status)
            }
            _ => format!("{} {:?}", f.path, f.status),
        })
        .map(|s| s.to_lowercase())
        .collect();
    if bad.is_empty() {
        // The lock's entries only: a left-over .partial or a stray file is not an installer.
        let n = report
            .files
            .iter()
            .filter(|f| !matches!(f.status, FileStatus::Unexpected | FileStatus::Partial))
            .count();
        return check(
            CheckId::Archive,
            Status::Pass,
            format!("{n} installer file(s) archived and verified against stack.lock"),
            None,
        );
    }
    check(
        CheckId::Archive,
        Status::Fail,
        bad.join("; "),
        Some(
            "move the bad file(s) away and run `stackpin fetch MANIFEST` (or `stackpin repair \
             MANIFEST --fetch`); a repair from this archive would refuse them"
                .into(),
        ),
    )
}

fn deployment(facts: &Facts<'_>) -> Check {
    if facts.m.role == Role::Inference {
        return check(
            CheckId::Deployment,
            Status::Pass,
            "this stack is the deployment runtime, pinned on its own".into(),
            None,
        );
    }
    if let Some(name) = &facts.deployment_stack {
        return check(
            CheckId::Deployment,
            Status::Pass,
            format!("the deployment runtime is pinned and proven apart as `{name}`"),
            None,
        );
    }
    let explicit = facts
        .manifest_text
        .is_some_and(|t| SourceMap::new(t).line_of("role").is_some());
    if explicit {
        return check(
            CheckId::Deployment,
            Status::Pass,
            "the manifest says `role: training`: this machine trains only".into(),
            None,
        );
    }
    check(
        CheckId::Deployment,
        Status::Unknown,
        "no inference-role stack in the archive, and the manifest does not say `role: training`"
            .into(),
        Some(
            "keep the line-side controller off this machine: pin its runtime in its own manifest \
             (`role: inference`), or write `role: training` here if this machine only trains"
                .into(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::archive::AuditReport;
    use crate::doctor::windows_driver;
    use crate::install::state::LayerState;
    use crate::layers::{DriverSeen, Proof};
    use crate::manifest::Manifest;

    const WINDOWS: &str = include_str!("../../manifests/torch-2.5.1-cu124-windows.yaml");

    fn manifest() -> Manifest {
        crate::manifest::parse(WINDOWS, std::path::Path::new("w.yaml")).expect("shipped manifest")
    }

    /// The record a Windows workstation keeps after proving driver 566.36.
    fn record(driver: &str) -> ProvenStack {
        crate::record::TestRecord {
            stack: "torch-2.5.1-cu124-windows",
            os: "windows",
            gpu: "NVIDIA GeForce RTX 4070",
            vram_mib: 12282,
            driver,
            driver_cuda: "12.7",
            toolkit_root: "C:/cuda",
        }
        .proven()
    }

    fn facts<'a>(m: &'a Manifest, recorded: &str, running: Option<&str>) -> Facts<'a> {
        let holds = running == Some(m.driver.version.to_string().as_str());
        Facts {
            m,
            manifest_text: Some(WINDOWS),
            record: Ok(Some(record(recorded))),
            record_path: PathBuf::from("proven-stack.yaml"),
            state: None,
            state_error: None,
            driver: DriverSeen {
                version: running.map(|v| v.parse().expect("version")),
                ..DriverSeen::default()
            },
            layers: Layer::ORDER
                .iter()
                .map(|l| Proof {
                    layer: *l,
                    holds: *l != Layer::Driver || holds,
                    seen: String::new(),
                    reboot_pending: false,
                })
                .collect(),
            library: LibrarySeen::Present {
                version: "2.5.1".parse().expect("version"),
                cuda: None,
                gpu_visible: true,
                arch_list: vec![],
            },
            audit: Ok(AuditReport {
                stack: PathBuf::new(),
                files: vec![],
                trust: Default::default(),
            }),
            deployment_stack: None,
            windows_driver: None,
            module_problem: None,
            windows_update_left: None,
        }
    }

    #[test]
    fn a_windows_update_pause_left_by_a_killed_install_fails_the_install_check() {
        let m = manifest();
        let pinned = m.driver.version.to_string();
        let mut f = facts(&m, &pinned, Some(&pinned));
        let mut state = ChainState::default();
        for layer in Layer::ORDER {
            state.mark(layer, LayerStatus::Done, None, None);
        }
        f.state = Some(state);
        assert_eq!(status(&judge(&f), CheckId::Install), Status::Pass);
        f.windows_update_left = Some(PathBuf::from(
            r"C:\ProgramData\stackpin\windows-update-paused.yaml",
        ));
        let exam = judge(&f);
        let install = exam.check(CheckId::Install).expect("install check");
        assert_eq!(install.status, Status::Fail);
        assert!(
            install.found.contains("Windows Update is still paused"),
            "{}",
            install.found
        );
        assert!(
            install
                .fix
                .as_deref()
                .is_some_and(|f| f.contains("sc config wuauserv start= demand")),
            "{:?}",
            install.fix
        );
    }

    fn status(exam: &Examination, id: CheckId) -> Status {
        exam.check(id).map(|c| c.status).expect("check present")
    }

    #[test]
    fn a_windows_update_driver_is_named_with_both_versions_and_its_install_date() {
        let m = manifest();
        let pinned = m.driver.version.to_string();
        let mut f = facts(&m, &pinned, Some("551.86"));
        let mut drivers = windows_driver::parse(
            r#"{"DeviceName": "NVIDIA GeForce RTX 4070", "DriverVersion": "31.0.15.5186",
                "DriverProviderName": "NVIDIA", "InfName": "oem42.inf", "DriverDate": "2024-03-15"}"#,
        )
        .expect("driver parses");
        let history = windows_driver::parse_updates(
            r#"{"Title": "NVIDIA - Display - 31.0.15.5186", "Date": "2030-01-02"}"#,
        )
        .expect("history parses");
        windows_driver::attribute_updates(&mut drivers, &history);
        f.windows_driver = Some(Ok(drivers));
        let exam = judge(&f);
        assert!(!exam.ok);
        assert_eq!(
            exam.drift[0].to_string(),
            format!("driver {pinned} → 551.86")
        );
        let driver = exam.check(CheckId::Driver).expect("driver check");
        assert!(
            driver.found.contains("provider NVIDIA, oem42.inf"),
            "{}",
            driver.found
        );
        assert!(
            driver.found.contains("installed by Windows Update")
                && driver
                    .found
                    .contains("on 2030-01-02, after the stack was proven"),
            "{}",
            driver.found
        );
        assert_eq!(exam.drifted_layers(), [Layer::Driver]);
    }

    #[test]
    fn without_an_answer_from_powershell_the_provider_is_unknown_and_the_drift_still_fails() {
        let m = manifest();
        let pinned = m.driver.version.to_string();
        let mut f = facts(&m, &pinned, Some("590.48"));
        f.windows_driver = Some(Err("PowerShell was not found on PATH".into()));
        let exam = judge(&f);
        assert!(!exam.ok);
        assert_eq!(exam.windows_driver, None);
        let driver = exam.check(CheckId::Driver).expect("driver check");
        assert_eq!(
            driver.found,
            format!(
                "driver {pinned} → 590.48; driver provider unknown (PowerShell was not found on PATH)"
            )
        );
    }

    #[test]
    fn a_library_verify_override_stands_in_for_the_import_probe() {
        let text = WINDOWS.replace(
            "library:\n",
            "library:\n  verify: [\"cmd\", \"/c\", \"exit\", \"0\"]\n",
        );
        let m = crate::manifest::parse(&text, std::path::Path::new("w.yaml")).expect("parses");
        assert!(m.library.verify.is_some(), "the override was added");
        let mut f = facts(&m, "581.15", Some("581.15"));
        f.library = LibrarySeen::NoInterpreter;
        assert_eq!(status(&judge(&f), CheckId::Example), Status::Pass);
        f.layers[2].holds = false;
        f.layers[2].seen = "`cmd /c exit 0` failed".into();
        let exam = judge(&f);
        assert_eq!(status(&exam, CheckId::Example), Status::Fail);
        assert_eq!(exam.drift[0].now, "`cmd /c exit 0` failed");
    }

    #[test]
    fn a_mismatch_after_an_upgrade_says_reboot() {
        let m = manifest();
        let mut f = facts(&m, "581.15", None);
        f.driver.state = Some("driver/library mismatch".into());
        f.driver.reboot_pending = true;
        let exam = judge(&f);
        let driver = exam.check(CheckId::Driver).expect("driver check");
        assert_eq!(driver.found, "driver 581.15 → driver/library mismatch");
        assert!(driver.fix.as_deref().is_some_and(|f| f.contains("reboot")));
    }

    #[test]
    fn a_missing_kernel_module_is_the_fix_when_no_driver_answers() {
        let m = manifest();
        let mut f = facts(&m, "581.15", None);
        f.module_problem = Some("the running kernel 6.8.0-51-generic has no NVIDIA module".into());
        let exam = judge(&f);
        let fix = exam.check(CheckId::Driver).and_then(|c| c.fix.clone());
        assert!(fix.is_some_and(|f| f.contains("no NVIDIA module")));
    }

    #[test]
    fn an_install_after_the_record_makes_the_example_check_fail() {
        let m = manifest();
        let mut f = facts(&m, "581.15", Some("581.15"));
        assert_eq!(status(&judge(&f), CheckId::Example), Status::Pass);
        let mut state = ChainState::default();
        state.layers.insert(
            Layer::Driver,
            LayerState {
                status: LayerStatus::Done,
                at: "2026-12-02T08:00:00Z".into(),
                log: None,
                detail: None,
            },
        );
        f.state = Some(state);
        let exam = judge(&f);
        assert_eq!(status(&exam, CheckId::Example), Status::Fail);
        assert!(!exam.ok);
    }

    #[test]
    fn deployment_is_unknown_without_failing_and_passes_with_an_inference_stack() {
        let m = manifest();
        let mut f = facts(&m, "581.15", Some("581.15"));
        assert_eq!(
            status(&judge(&f), CheckId::Deployment),
            Status::Pass,
            "the shipped manifest says `role: training`"
        );
        let silent = WINDOWS.replace("role: training", "");
        f.manifest_text = Some(&silent);
        let exam = judge(&f);
        assert_eq!(status(&exam, CheckId::Deployment), Status::Unknown);
        assert!(exam.ok, "unknown never fails");
        f.deployment_stack = Some("onnxruntime-line-side".into());
        assert_eq!(status(&judge(&f), CheckId::Deployment), Status::Pass);
    }
}
