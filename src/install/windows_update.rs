//! Windows Update kept out of a Windows install chain: the driver guard's two policies written
//! before the driver step (so Windows Update cannot swap the fresh driver on the first boot),
//! and the Windows Update service paused for the toolkit step the way pytorch's Windows CI does
//! it (`sc config wuauserv start= disabled`, `sc stop wuauserv`), then put back as it was,
//! however the step ends.
//!
//! Every command goes through the host's [`System`], so the fake host of the unit tests shows
//! their order around the step; when to ask for them (Windows, the user's consent) is the
//! caller's decision in [`WindowsUpdateGuards`].
//!
//! Sources: NVIDIA's CUDA Installation Guide for Microsoft Windows warns that the toolkit
//! install may fail when Windows Update starts during it; pytorch/pytorch
//! `.ci/pytorch/windows/internal/cuda_install.bat` stops `wuauserv` before `setup.exe`; the two
//! policies are Microsoft's (see `windows_installers::WINDOWS_POLICY`).

use std::path::Path;
use std::time::Duration;

use super::InstallReporter;
use crate::host::System;
use crate::manifest::Layer;
use crate::windows_installers::{WINDOWS_DRIVER_SEARCH, WINDOWS_POLICY};

/// The Windows Update service.
pub const WU_SERVICE: &str = "wuauserv";

/// `sc` and `reg` answer in seconds; a stuck one must not hold the chain.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// What the chain does about Windows Update, decided by the caller (Windows only; `--no-guard`
/// turns the guard off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowsUpdateGuards {
    /// Write the two driver policies before the driver step.
    pub driver_guard: bool,
    /// Pause the Windows Update service for the toolkit step.
    pub pause_for_toolkit: bool,
}

impl WindowsUpdateGuards {
    /// Both, as `install` asks for them on Windows unless `--no-guard`; on another OS none.
    pub fn for_install(windows: bool, no_guard: bool) -> Self {
        Self {
            driver_guard: windows && !no_guard,
            pause_for_toolkit: windows,
        }
    }
}

/// The file a pause is written down in while it lasts (beside the machine's install lock), so
/// that a stackpin killed during the toolkit step leaves the next one what to put back.
pub const PAUSE_RECORD: &str = "windows-update-paused.yaml";

/// Where a pause is written down for the machine lock at `machine_lock`.
pub fn pause_record_beside(machine_lock: &Path) -> Option<std::path::PathBuf> {
    Some(machine_lock.parent()?.join(PAUSE_RECORD))
}

/// Runs `step` (one layer's installer) with what `guards` asks for around it: the driver
/// policies first for the driver, the Windows Update pause for the toolkit, undone when the step
/// returns or unwinds, and written down in `record` while it lasts. A guard command that fails
/// is a warning, not a stop: the layer matters more, and `doctor` still checks the running
/// driver.
pub fn around<T>(
    layer: Layer,
    guards: WindowsUpdateGuards,
    record: Option<&Path>,
    system: &dyn System,
    reporter: &dyn InstallReporter,
    step: impl FnOnce() -> T,
) -> T {
    match layer {
        Layer::Driver if guards.driver_guard => {
            apply_driver_policies(system, reporter);
            step()
        }
        Layer::Toolkit if guards.pause_for_toolkit => {
            let _paused = UpdatePause::start(system, reporter, record);
            step()
        }
        _ => step(),
    }
}

/// How the service stood before a pause: what a restore sets again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Before {
    /// `sc config … start=` value (`demand`, `auto`, `delayed-auto`, …).
    start_type: String,
    was_running: bool,
}

/// Puts Windows Update back as a pause written down in `record` says, when a stackpin that
/// paused it ended before it could (killed, power lost): run once the machine's install lock is
/// held, before any step. Nothing when there is no record.
pub fn restore_left_pause(system: &dyn System, record: &Path, reporter: &dyn InstallReporter) {
    let before: Before = match crate::fsutil::read_yaml_if_present(record) {
        Ok(Some(before)) => before,
        Ok(None) => return,
        Err(e) => {
            reporter.warning(&format!(
                "{e}; Windows Update may still be paused by an earlier run: check `sc qc {WU_SERVICE}`"
            ));
            return;
        }
    };
    if !START_TYPES.contains(&before.start_type.as_str()) {
        reporter.warning(&format!(
            "{}: `{}` is no service start type; Windows Update is left as it is: check `sc qc {WU_SERVICE}`",
            record.display(),
            before.start_type
        ));
        return;
    }
    reporter.note(&format!(
        "Windows Update was still paused by a stackpin that did not finish ({}): putting it back",
        record.display()
    ));
    if restore(system, reporter, &before) {
        let _ = std::fs::remove_file(record);
    }
}

/// The `start=` values `sc config` takes, and that [`parse_start_type`] gives.
const START_TYPES: [&str; 6] = [
    "boot",
    "system",
    "auto",
    "delayed-auto",
    "demand",
    "disabled",
];

/// Sets the start type again and starts the service if it ran; false when a command failed
/// (each said as a warning with the command to run by hand).
fn restore(system: &dyn System, reporter: &dyn InstallReporter, before: &Before) -> bool {
    let restore = [
        "sc",
        "config",
        WU_SERVICE,
        "start=",
        before.start_type.as_str(),
    ];
    let mut ok = true;
    if let Err(why) = run(system, &restore) {
        ok = false;
        reporter.warning(&format!(
            "Windows Update's start type could not be put back ({why}); run as \
             Administrator: {}",
            restore.join(" ")
        ));
    }
    if before.was_running
        && let Err(why) = run(system, &["sc", "start", WU_SERVICE])
    {
        ok = false;
        reporter.warning(&format!(
            "Windows Update did not start again ({why}); run: sc start {WU_SERVICE}"
        ));
    }
    ok
}

/// Writes both policies; says which one failed and how to set it by hand.
fn apply_driver_policies(system: &dyn System, reporter: &dyn InstallReporter) {
    for argv in [&WINDOWS_POLICY[..], &WINDOWS_DRIVER_SEARCH[..]] {
        let line = argv.join(" ");
        match run(system, argv) {
            Ok(()) => reporter.note(&format!("driver guard: {line}")),
            Err(why) => reporter.warning(&format!(
                "the driver guard could not be written ({why}): Windows Update may replace the \
                 new driver; run as Administrator: {line}"
            )),
        }
    }
}

/// The Windows Update service as it stood before the pause, put back on drop.
pub struct UpdatePause<'a> {
    system: &'a dyn System,
    reporter: &'a dyn InstallReporter,
    before: Before,
    /// Where the pause is written down until it is undone.
    record: Option<std::path::PathBuf>,
}

impl<'a> UpdatePause<'a> {
    /// Reads the service's start type and state, writes them down in `record`, disables and
    /// stops it. `None` when there is no such service to pause (or `sc` cannot read it):
    /// nothing to restore either.
    pub fn start(
        system: &'a dyn System,
        reporter: &'a dyn InstallReporter,
        record: Option<&Path>,
    ) -> Option<Self> {
        let start_type = sc_output(system, &["qc", WU_SERVICE])
            .as_deref()
            .and_then(parse_start_type)?;
        let was_running = sc_output(system, &["query", WU_SERVICE])
            .as_deref()
            .is_some_and(is_running);
        // A record still there is a pause no run could undo yet: it, not the paused service,
        // says how Windows Update was, and it stays the state to go back to.
        let left: Option<Before> = record
            .and_then(|path| crate::fsutil::read_yaml_if_present(path).ok().flatten())
            .filter(|b: &Before| START_TYPES.contains(&b.start_type.as_str()));
        let before = left.clone().unwrap_or(Before {
            start_type: start_type.to_string(),
            was_running,
        });
        // Written before the service is touched: a run killed after this leaves what to undo.
        // A record left by an earlier pause is kept as it is.
        let record = match record {
            Some(path) if left.is_some() => Some(path.to_path_buf()),
            Some(path) => match crate::fsutil::write_yaml(
                path,
                "# Windows Update as it was before stackpin paused it for the toolkit step; the next install puts it back.\n",
                &before,
            ) {
                Ok(()) => Some(path.to_path_buf()),
                Err(e) => {
                    reporter.warning(&format!(
                        "{e}: a run killed during the toolkit step would leave Windows Update paused"
                    ));
                    None
                }
            },
            None => None,
        };
        let pause = Self {
            system,
            reporter,
            before,
            record,
        };
        if let Err(why) = run(system, &["sc", "config", WU_SERVICE, "start=", "disabled"]) {
            reporter.warning(&format!(
                "Windows Update could not be paused for the toolkit ({why}); the CUDA installer \
                 may fail if it starts meanwhile"
            ));
            return None;
        }
        if was_running && let Err(why) = run(system, &["sc", "stop", WU_SERVICE]) {
            reporter.warning(&format!("Windows Update did not stop ({why})"));
        }
        reporter.note("Windows Update paused for the toolkit step (wuauserv disabled, stopped)");
        Some(pause)
    }
}

impl Drop for UpdatePause<'_> {
    fn drop(&mut self) {
        // A failed restore keeps the record: the next install tries again.
        if restore(self.system, self.reporter, &self.before)
            && let Some(path) = &self.record
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `sc qc` output → the `start=` value that sets the same start type again.
pub fn parse_start_type(sc_qc: &str) -> Option<&'static str> {
    let line = sc_qc.lines().find(|l| l.contains("START_TYPE"))?;
    let value = line.split(':').nth(1)?.trim();
    let code = value.split_whitespace().next()?;
    Some(match code {
        "0" => "boot",
        "1" => "system",
        "2" if value.contains("DELAYED") => "delayed-auto",
        "2" => "auto",
        "3" => "demand",
        "4" => "disabled",
        _ => return None,
    })
}

/// `sc query` output says `STATE : 4 RUNNING` (or starting, 2) for a service that runs.
pub fn is_running(sc_query: &str) -> bool {
    sc_query
        .lines()
        .filter(|l| l.contains("STATE"))
        .filter_map(|l| l.split(':').nth(1))
        .filter_map(|v| v.split_whitespace().next())
        .any(|code| code == "4" || code == "2")
}

fn sc_output(system: &dyn System, args: &[&str]) -> Option<String> {
    let sc = system.which("sc")?;
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = system.run(&sc, &args, COMMAND_TIMEOUT).ok()?;
    out.success().then_some(out.stdout)
}

/// Runs `argv` through the host; the reason when it could not or did not exit 0.
fn run(system: &dyn System, argv: &[&str]) -> Result<(), String> {
    let (program, args) = argv.split_first().ok_or("empty command")?;
    let path = system
        .which(program)
        .ok_or_else(|| format!("`{program}` is not on PATH"))?;
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = system
        .run(&path, &args, COMMAND_TIMEOUT)
        .map_err(|e| e.to_string())?;
    if out.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` exited {:?}: {}",
            argv.join(" "),
            out.code,
            out.combined().trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake::FakeSystem;
    use crate::install::QuietReporter;
    use crate::os::Os;

    const SC: &str = r"C:\Windows\System32\sc.exe";
    const REG: &str = r"C:\Windows\System32\reg.exe";

    /// A Windows host whose Windows Update service is running with a manual (demand) start,
    /// and whose `reg` and `sc` answer as Windows does; `ran` keeps every command in order.
    fn windows_host() -> FakeSystem {
        let mut sys = FakeSystem::new(Os::Windows);
        sys.on_path.insert("sc".into(), SC.into());
        sys.on_path.insert("reg".into(), REG.into());
        sys.answer(
            SC,
            &["qc", WU_SERVICE],
            0,
            "[SC] QueryServiceConfig SUCCESS\r\n\r\nSERVICE_NAME: wuauserv\r\n        TYPE               : 20  WIN32_SHARE_PROCESS\r\n        START_TYPE         : 3   DEMAND_START\r\n",
        )
        .answer(
            SC,
            &["query", WU_SERVICE],
            0,
            "\r\nSERVICE_NAME: wuauserv\r\n        TYPE               : 30  WIN32\r\n        STATE              : 4  RUNNING\r\n",
        )
        .answer(SC, &["config"], 0, "[SC] ChangeServiceConfig SUCCESS")
        .answer(SC, &["stop"], 0, "")
        .answer(SC, &["start"], 0, "")
        .answer(REG, &["add"], 0, "The operation completed successfully.");
        sys
    }

    /// A Windows host whose Windows Update service is disabled and stopped (by the user, or by
    /// a pause nobody undid).
    fn disabled_and_stopped_host() -> FakeSystem {
        let mut sys = windows_host();
        sys.programs.remove(std::path::Path::new(SC));
        sys.answer(
            SC,
            &["qc", WU_SERVICE],
            0,
            "        START_TYPE         : 4   DISABLED\r\n",
        )
        .answer(
            SC,
            &["query", WU_SERVICE],
            0,
            "        STATE              : 1  STOPPED\r\n",
        )
        .answer(SC, &["config"], 0, "")
        .answer(SC, &["start"], 0, "");
        sys
    }

    fn step_marker(sys: &FakeSystem, what: &str) {
        sys.ran.lock().expect("log").push(what.to_string());
    }

    #[test]
    fn the_guard_policies_are_written_in_the_policy_keys_before_the_driver_step() {
        let sys = windows_host();
        let guards = WindowsUpdateGuards::for_install(true, false);
        around(Layer::Driver, guards, None, &sys, &QuietReporter, || {
            step_marker(&sys, "DRIVER STEP")
        });
        let ran = sys.ran.lock().expect("log").clone();
        let step = ran.iter().position(|l| l == "DRIVER STEP").expect("ran");
        for (key, value) in [
            (
                r"HKLM\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate",
                "ExcludeWUDriversInQualityUpdate",
            ),
            (
                r"HKLM\SOFTWARE\Policies\Microsoft\Windows\DriverSearching",
                "SearchOrderConfig",
            ),
        ] {
            let at = ran
                .iter()
                .position(|l| l.contains(key) && l.contains(value))
                .unwrap_or_else(|| panic!("{key} {value} written: {ran:?}"));
            assert!(at < step, "{value} before the driver step: {ran:?}");
        }
        assert!(
            !ran.iter().any(|l| l.contains("wuauserv")),
            "the service is left alone for the driver: {ran:?}"
        );
    }

    #[test]
    fn no_guard_writes_no_policy() {
        let sys = windows_host();
        let guards = WindowsUpdateGuards::for_install(true, true);
        around(Layer::Driver, guards, None, &sys, &QuietReporter, || {
            step_marker(&sys, "DRIVER STEP")
        });
        assert_eq!(*sys.ran.lock().expect("log"), ["DRIVER STEP"]);
    }

    #[test]
    fn windows_update_is_paused_for_the_toolkit_and_restored_after_it_fails() {
        let sys = windows_host();
        let guards = WindowsUpdateGuards::for_install(true, false);
        let result: Result<(), &str> =
            around(Layer::Toolkit, guards, None, &sys, &QuietReporter, || {
                step_marker(&sys, "TOOLKIT STEP");
                Err("setup.exe exited 1")
            });
        assert!(result.is_err(), "the step's failure is passed on");
        let ran = sys.ran.lock().expect("log").clone();
        let at = |needle: &str| {
            ran.iter()
                .position(|l| l.ends_with(needle))
                .unwrap_or_else(|| panic!("{needle} in {ran:?}"))
        };
        let step = at("TOOLKIT STEP");
        assert!(at("config wuauserv start= disabled") < step, "{ran:?}");
        assert!(at("stop wuauserv") < step, "{ran:?}");
        assert!(
            at("config wuauserv start= demand") > step,
            "the start type it had: {ran:?}"
        );
        assert!(at("start wuauserv") > step, "running again: {ran:?}");
    }

    #[test]
    fn a_stopped_disabled_service_is_left_stopped_and_disabled() {
        let sys = disabled_and_stopped_host();
        around(
            Layer::Toolkit,
            WindowsUpdateGuards::for_install(true, false),
            None,
            &sys,
            &QuietReporter,
            || step_marker(&sys, "TOOLKIT STEP"),
        );
        let ran = sys.ran.lock().expect("log").clone();
        assert!(
            !ran.iter().any(|l| l.ends_with("start wuauserv")),
            "{ran:?}"
        );
        assert!(ran.last().is_some_and(|l| l.ends_with("start= disabled")));
    }

    #[test]
    fn no_service_means_nothing_to_pause() {
        let mut sys = windows_host();
        sys.programs.remove(std::path::Path::new(SC));
        sys.answer(SC, &["qc"], 1060, "[SC] OpenService FAILED 1060");
        around(
            Layer::Toolkit,
            WindowsUpdateGuards::for_install(true, false),
            None,
            &sys,
            &QuietReporter,
            || step_marker(&sys, "TOOLKIT STEP"),
        );
        let ran = sys.ran.lock().expect("log").clone();
        assert_eq!(
            ran.last().map(String::as_str),
            Some("TOOLKIT STEP"),
            "{ran:?}"
        );
    }

    #[test]
    fn sc_output_is_read_for_start_type_and_state() {
        assert_eq!(
            parse_start_type("        START_TYPE         : 2   AUTO_START  (DELAYED)"),
            Some("delayed-auto")
        );
        assert_eq!(
            parse_start_type("        START_TYPE         : 2   AUTO_START"),
            Some("auto")
        );
        assert_eq!(parse_start_type("[SC] OpenService FAILED 1060"), None);
        assert!(is_running("        STATE              : 4  RUNNING"));
        assert!(!is_running("        STATE              : 1  STOPPED"));
    }

    #[test]
    fn other_layers_and_other_systems_run_bare() {
        let sys = windows_host();
        around(
            Layer::Library,
            WindowsUpdateGuards::for_install(true, false),
            None,
            &sys,
            &QuietReporter,
            || step_marker(&sys, "LIBRARY"),
        );
        around(
            Layer::Driver,
            WindowsUpdateGuards::for_install(false, false),
            None,
            &sys,
            &QuietReporter,
            || step_marker(&sys, "LINUX DRIVER"),
        );
        assert_eq!(*sys.ran.lock().expect("log"), ["LIBRARY", "LINUX DRIVER"]);
    }

    #[test]
    fn a_pause_left_by_a_killed_stackpin_is_put_back_by_the_next_install() {
        let dir = tempfile::tempdir().expect("tempdir");
        let record = dir.path().join(PAUSE_RECORD);
        let sys = windows_host();
        let pause = UpdatePause::start(&sys, &QuietReporter, Some(&record)).expect("paused");
        assert!(
            record.exists(),
            "written down before the service is touched"
        );
        // Killed mid-toolkit: nothing runs the pause's drop.
        std::mem::forget(pause);
        let before = sys.ran.lock().expect("log").len();
        restore_left_pause(&sys, &record, &QuietReporter);
        let ran = sys.ran.lock().expect("log")[before..].to_vec();
        assert!(
            ran.iter()
                .any(|l| l.ends_with("config wuauserv start= demand")),
            "{ran:?}"
        );
        assert!(ran.iter().any(|l| l.ends_with("start wuauserv")), "{ran:?}");
        assert!(!record.exists(), "put back once, then forgotten");
        // A run that finished its toolkit step leaves nothing to put back.
        let before = sys.ran.lock().expect("log").len();
        drop(UpdatePause::start(&sys, &QuietReporter, Some(&record)));
        assert!(!record.exists());
        restore_left_pause(&sys, &record, &QuietReporter);
        let ran = sys.ran.lock().expect("log")[before..].to_vec();
        assert_eq!(
            ran.iter().filter(|l| l.ends_with("start= demand")).count(),
            1,
            "restored by the pause itself, not again: {ran:?}"
        );
    }

    #[test]
    fn a_record_naming_no_start_type_is_never_handed_to_sc() {
        let dir = tempfile::tempdir().expect("tempdir");
        let record = dir.path().join(PAUSE_RECORD);
        std::fs::write(
            &record,
            "start_type: \"auto & calc.exe\"\nwas_running: true\n",
        )
        .expect("record");
        let sys = windows_host();
        restore_left_pause(&sys, &record, &QuietReporter);
        assert!(sys.ran.lock().expect("log").is_empty());
    }

    #[test]
    fn a_pause_over_one_not_yet_undone_goes_back_to_the_first_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let record = dir.path().join(PAUSE_RECORD);
        // An earlier run paused a running, automatic service and could not put it back.
        std::fs::write(&record, "start_type: auto\nwas_running: true\n").expect("record");
        // Now the service reads as the pause left it: disabled, stopped.
        let sys = disabled_and_stopped_host();
        drop(UpdatePause::start(&sys, &QuietReporter, Some(&record)));
        let ran = sys.ran.lock().expect("log").clone();
        assert!(
            ran.iter()
                .any(|l| l.ends_with("config wuauserv start= auto")),
            "{ran:?}"
        );
        assert!(ran.iter().any(|l| l.ends_with("start wuauserv")), "{ran:?}");
        assert!(!record.exists(), "undone at last");
    }
}
