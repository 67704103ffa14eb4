//! What `install` prepares on a Linux host before the driver's runfile, with the consent it asked
//! for before anything ran: nouveau blacklisted and the initramfs rebuilt with the distribution's
//! own tool (then a reboot, resumed as the driver's is), the display manager stopped
//! (`--stop-display`), the module signing certificate imported for enrolment (`mokutil`). Which
//! of these apply is `readiness`'s decision ([`Prepare`]); this runs them, each an external step
//! through `exec::step` (guarded, its output in a log under the stack's `logs/`).

use std::path::Path;

use super::readiness::Prepare;
use super::{InstallError, InstallReporter};
use crate::archive::StackDir;
use crate::exec::step::{Step, StepOutcome, StepStatus, run_step};
use crate::manifest::Layer;

/// What stackpin writes to keep nouveau off the GPU (NVIDIA's installation guide, "Disabling
/// Nouveau").
pub const BLACKLIST_TEXT: &str = "# Written by stackpin install: the NVIDIA driver's runfile refuses while nouveau is loaded.\nblacklist nouveau\noptions nouveau modeset=0\n";

/// How long the initramfs tool, `systemctl stop` and `mokutil` may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// A preparation step that did not succeed: the chain stops before the driver.
#[derive(Debug)]
pub struct Refused {
    /// `blacklisting nouveau`, `stopping the display manager`, …
    pub what: String,
    /// Why, with the step's last lines and its log.
    pub why: String,
    pub log: Option<std::path::PathBuf>,
    pub tail: Vec<String>,
}

/// What was done, for the report and `state.yaml`.
#[derive(Debug, Clone)]
pub struct Done {
    pub what: String,
    pub log: Option<std::path::PathBuf>,
    /// The chain must stop at a reboot now (nouveau is still loaded).
    pub reboot: bool,
}

/// Runs one preparation. `Err(InstallError)` for what stackpin itself could not do (write the
/// blacklist, start the tool); `Ok(Err(Refused))` when the tool ran and failed.
pub fn run(
    how: &Prepare,
    stack: &StackDir,
    reporter: &dyn InstallReporter,
) -> Result<Result<Done, Refused>, InstallError> {
    match how {
        Prepare::BlacklistNouveau {
            blacklist,
            write,
            initramfs,
            reboot,
        } => {
            if *write {
                write_blacklist(blacklist)?;
                reporter.note(&format!(
                    "driver: wrote {} (blacklist nouveau, options nouveau modeset=0)",
                    blacklist.display()
                ));
            }
            let what = "rebuilding the initramfs so that nouveau stays unloaded at the next boot";
            Ok(
                step(initramfs, "nouveau-initramfs", what, stack, reporter)?.map(|log| Done {
                    what: format!(
                        "nouveau blacklisted in {} and the initramfs rebuilt (`{}`)",
                        blacklist.display(),
                        crate::exec::step::shell_words(initramfs)
                    ),
                    log,
                    reboot: *reboot,
                }),
            )
        }
        Prepare::StopDisplay { argv } => {
            reporter.note("driver: stopping the display manager (--stop-display): this ends the desktop session; the reboot after the driver starts it again");
            let what = "stopping the display manager";
            Ok(
                step(argv, "stop-display", what, stack, reporter)?.map(|log| Done {
                    what: "the display manager stopped (--stop-display)".to_string(),
                    log,
                    reboot: false,
                }),
            )
        }
        Prepare::EnrollKey { argv } => {
            let what = "importing the module signing certificate for enrolment";
            Ok(step(argv, "mokutil-import", what, stack, reporter)?.map(|log| {
                reporter.note("driver: the signing certificate is queued for enrolment: at the next boot the blue MOK manager screen asks for it — choose \"Enroll MOK\", \"Continue\", \"Yes\", type root's password (mokutil --root-pw), then \"Reboot\"; without it the driver's module does not load");
                Done {
                    what: "the module signing certificate imported with mokutil; enrol it at the next boot in the MOK manager".to_string(),
                    log,
                    reboot: false,
                }
            }))
        }
        // Nothing runs for it: the runfiles get `--tmpdir` (readiness::extra_args).
        Prepare::ExtractIn { dir } => {
            create_private_dir(dir).map_err(|source| InstallError::Prepare {
                what: format!("creating the extraction folder {}", dir.display()),
                source,
            })?;
            Ok(Ok(Done {
                what: format!("the runfiles extract in {}", dir.display()),
                log: None,
                reboot: false,
            }))
        }
    }
}

/// The blacklist file, written whole (never half) under its final name.
fn write_blacklist(path: &Path) -> Result<(), InstallError> {
    crate::fsutil::write_atomic(path, BLACKLIST_TEXT.as_bytes()).map_err(|source| {
        InstallError::Prepare {
            what: format!("writing {}", path.display()),
            source,
        }
    })
}

/// A folder only root reads: the runfiles unpack installers into it.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Runs `argv` as a step logged as `name`; its failure is a [`Refused`] naming `what`.
fn step(
    argv: &[String],
    name: &str,
    what: &str,
    stack: &StackDir,
    reporter: &dyn InstallReporter,
) -> Result<Result<Option<std::path::PathBuf>, Refused>, InstallError> {
    let step = Step {
        argv: argv.to_vec(),
        env: Vec::new(),
        env_remove: Vec::new(),
        log: stack
            .logs_dir()
            .join(crate::exec::step::log_name(&format!("driver-{name}"))),
        timeout: TIMEOUT,
        cwd: None,
    };
    reporter.step_started(Layer::Driver, &step.argv);
    let outcome: StepOutcome = run_step(&step).map_err(|source| InstallError::Runner {
        layer: Layer::Driver,
        program: argv.first().cloned().unwrap_or_default(),
        source,
    })?;
    reporter.step_finished(Layer::Driver, &outcome);
    if outcome.status == StepStatus::Succeeded {
        return Ok(Ok(Some(outcome.log)));
    }
    let ended = match outcome.code {
        Some(code) => format!("exited with code {code}"),
        None => format!("ended: {}", outcome.status.as_str()),
    };
    let last = outcome.tail.last().cloned().unwrap_or_default();
    Ok(Err(Refused {
        what: what.to_string(),
        why: format!(
            "{what} failed before the driver: `{}` {ended}{}; log: {}",
            crate::exec::step::shell_words(argv),
            if last.is_empty() {
                String::new()
            } else {
                format!(" ({last})")
            },
            outcome.log.display()
        ),
        log: Some(outcome.log),
        tail: outcome.tail,
    }))
}
