//! What an installer's exit code means for the chain, as one pure decision: the codes the layer
//! declares (or the defaults below) and the layer's own check after the installer ended give
//! continue, reboot, fail, or "accepted with a warning" (an unexpected code, but the check
//! holds: the layer is there, so the code is logged and the chain goes on). Running the process
//! is `exec::step`'s job; this module only reads numbers.

use crate::manifest::{ExitCodes, Layer};
use crate::os::Os;

use crate::exec::step::{StepStatus, WINDOWS_REBOOT_INITIATED, WINDOWS_REBOOT_REQUIRED};

/// NVIDIA's display-driver setup exits 1 when it installed and needs a reboot (the Chocolatey
/// nvidia-display-driver package lists 1 among its success codes for this reason).
pub const NVIDIA_DRIVER_REBOOT_REQUIRED: i32 = 1;

/// The codes a layer goes by: the manifest's `exit_codes`, else the defaults for the OS.
pub fn codes_for(os: Os, layer: Layer, declared: Option<&ExitCodes>) -> ExitCodes {
    if let Some(codes) = declared {
        return codes.clone();
    }
    let mut reboot = vec![WINDOWS_REBOOT_REQUIRED, WINDOWS_REBOOT_INITIATED];
    if os == Os::Windows && layer == Layer::Driver {
        reboot.insert(0, NVIDIA_DRIVER_REBOOT_REQUIRED);
    }
    ExitCodes {
        success: vec![0],
        reboot,
    }
}

/// What one exit code says by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeMeaning {
    Success,
    Reboot,
    /// Neither list has it (or the process was killed): the layer's check decides.
    Unexpected,
}

/// Reads one exit code against the layer's codes.
pub fn meaning(code: Option<i32>, codes: &ExitCodes) -> CodeMeaning {
    match code {
        Some(c) if codes.success.contains(&c) => CodeMeaning::Success,
        Some(c) if codes.reboot.contains(&c) => CodeMeaning::Reboot,
        _ => CodeMeaning::Unexpected,
    }
}

/// The chain's decision after a layer's installer ended and its check ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A success code and the check holds: on to the next layer.
    Continue,
    /// A reboot code: stop, reboot, resume.
    Reboot,
    /// The layer is not there (or the installer ran past its timeout).
    Fail,
    /// An unexpected code, yet the check holds: go on, and say so in the log.
    AcceptedWithWarning,
}

/// The decision for a layer: the installer's last exit code (None: killed), whether it timed
/// out, the layer's codes, and whether the layer's check holds afterwards. A success code with a
/// failing check is `Fail` here; the chain may still wait for a reboot for a driver, which needs
/// one to become active (`install::judge`).
pub fn verdict(
    code: Option<i32>,
    timed_out: bool,
    codes: &ExitCodes,
    check_holds: bool,
) -> Verdict {
    if timed_out {
        return Verdict::Fail;
    }
    match (meaning(code, codes), check_holds) {
        (CodeMeaning::Reboot, _) => Verdict::Reboot,
        (CodeMeaning::Success, true) => Verdict::Continue,
        (CodeMeaning::Success, false) => Verdict::Fail,
        (CodeMeaning::Unexpected, true) if code.is_some() => Verdict::AcceptedWithWarning,
        (CodeMeaning::Unexpected, _) => Verdict::Fail,
    }
}

/// A step's status read with the layer's codes instead of the runner's generic table.
pub fn step_status(status: StepStatus, code: Option<i32>, codes: &ExitCodes) -> StepStatus {
    // Ended by stackpin (its timeout, a stop request): no exit code of its own to read.
    if matches!(status, StepStatus::TimedOut | StepStatus::Interrupted) {
        return status;
    }
    match meaning(code, codes) {
        CodeMeaning::Success => StepStatus::Succeeded,
        CodeMeaning::Reboot => StepStatus::RebootRequired,
        CodeMeaning::Unexpected => StepStatus::Failed,
    }
}

/// The warning to log when a layer's check holds after an unexpected exit code; `None` when
/// the run is judged as usual.
pub fn accepted_with_warning(
    layer: Layer,
    status: StepStatus,
    code: Option<i32>,
    codes: &ExitCodes,
    check_holds: bool,
) -> Option<String> {
    let timed_out = matches!(status, StepStatus::TimedOut | StepStatus::Interrupted);
    match verdict(code, timed_out, codes, check_holds) {
        Verdict::AcceptedWithWarning => Some(format!(
            "warning: the {layer} installer exited with code {}, which its exit_codes list neither as success {:?} nor as reboot {:?}; the {layer}'s check holds, so the step is accepted",
            code.unwrap_or_default(),
            codes.success,
            codes.reboot
        )),
        _ => None,
    }
}

/// Appends the warning to the step's log, where the installer's own output already is. A log
/// that cannot be written loses only the note; the layer's check has already decided.
pub fn note_in_log(log: Option<&std::path::Path>, warning: &str) {
    use std::io::Write;
    if let Some(path) = log
        && let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(path)
    {
        let _ = writeln!(file, "stackpin: {warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver_codes() -> ExitCodes {
        codes_for(Os::Windows, Layer::Driver, None)
    }

    #[test]
    fn every_code_and_check_outcome_maps_to_one_decision() {
        use Verdict::*;
        let windows_driver = driver_codes();
        let linux_driver = codes_for(Os::Linux, Layer::Driver, None);
        let declared = ExitCodes {
            success: vec![0, 2],
            reboot: vec![5],
        };
        // (code, timed out, codes, check holds) → verdict
        let table: [(Option<i32>, bool, &ExitCodes, bool, Verdict); 16] = [
            (Some(0), false, &windows_driver, true, Continue),
            (Some(0), false, &windows_driver, false, Fail),
            (Some(1), false, &windows_driver, false, Reboot),
            (Some(1), false, &windows_driver, true, Reboot),
            (Some(3010), false, &windows_driver, false, Reboot),
            (Some(1641), false, &windows_driver, false, Reboot),
            (Some(1), false, &linux_driver, false, Fail),
            (Some(1), false, &linux_driver, true, AcceptedWithWarning),
            (Some(7), false, &windows_driver, true, AcceptedWithWarning),
            (Some(7), false, &windows_driver, false, Fail),
            (None, false, &windows_driver, true, Fail),
            (None, true, &windows_driver, true, Fail),
            (Some(0), true, &windows_driver, true, Fail),
            (Some(2), false, &declared, true, Continue),
            (Some(5), false, &declared, false, Reboot),
            (Some(3010), false, &declared, true, AcceptedWithWarning),
        ];
        for (code, timed_out, codes, holds, expected) in table {
            assert_eq!(
                verdict(code, timed_out, codes, holds),
                expected,
                "code {code:?}, timed out {timed_out}, codes {codes:?}, check holds {holds}"
            );
        }
    }

    #[test]
    fn only_the_windows_driver_reads_1_as_reboot_by_default() {
        assert_eq!(meaning(Some(1), &driver_codes()), CodeMeaning::Reboot);
        for (os, layer) in [
            (Os::Windows, Layer::Toolkit),
            (Os::Windows, Layer::Library),
            (Os::Linux, Layer::Driver),
        ] {
            assert_eq!(
                meaning(Some(1), &codes_for(os, layer, None)),
                CodeMeaning::Unexpected,
                "{os} {layer}"
            );
        }
    }

    #[test]
    fn declared_codes_replace_the_defaults() {
        let declared = ExitCodes {
            success: vec![0],
            reboot: vec![],
        };
        let codes = codes_for(Os::Windows, Layer::Driver, Some(&declared));
        assert_eq!(meaning(Some(1), &codes), CodeMeaning::Unexpected);
        assert_eq!(meaning(Some(3010), &codes), CodeMeaning::Unexpected);
    }

    #[test]
    fn a_step_status_is_reread_with_the_layers_codes() {
        let codes = driver_codes();
        assert_eq!(
            step_status(StepStatus::Failed, Some(1), &codes),
            StepStatus::RebootRequired
        );
        assert_eq!(
            step_status(StepStatus::TimedOut, None, &codes),
            StepStatus::TimedOut
        );
        assert_eq!(
            step_status(StepStatus::Succeeded, Some(0), &codes),
            StepStatus::Succeeded
        );
    }

    #[test]
    fn the_warning_names_the_code_and_the_lists() {
        let codes = codes_for(Os::Windows, Layer::Toolkit, None);
        let warning =
            accepted_with_warning(Layer::Toolkit, StepStatus::Failed, Some(7), &codes, true)
                .expect("accepted");
        assert!(warning.contains("code 7"), "{warning}");
        assert!(warning.contains("[3010, 1641]"), "{warning}");
        assert_eq!(
            accepted_with_warning(Layer::Toolkit, StepStatus::Failed, Some(7), &codes, false),
            None
        );
    }
}
