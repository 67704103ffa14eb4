//! What `install` prepares on a Linux host before the driver's runfile, with the consent it asked
//! for before anything ran: nouveau blacklisted and the initramfs rebuilt with the distribution's
//! own tool (then a reboot, resumed as the driver's is), the display manager stopped
//! (`--stop-display`), the module signing certificate imported for enrolment (`mokutil`). Which
//! of these apply is `readiness`'s decision ([`Prepare`]); this runs them, each an external step
//! through `exec::step` (guarded, its output in a log under the stack's `logs/`).

use std::path::Path;

use super::readiness::Prepare;
use super::{Around, InstallError};
use crate::archive::StackDir;
use crate::exec::step::{Step, StepOutcome, StepStatus};
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
    /// The one-time password the MOK manager asks for at the next boot (a certificate queued
    /// for enrolment).
    pub enrolment_password: Option<String>,
}

/// Runs one preparation. `Err(InstallError)` for what stackpin itself could not do (write the
/// blacklist, start the tool); `Ok(Err(Refused))` when the tool ran and failed.
pub(super) fn run(
    how: &Prepare,
    stack: &StackDir,
    around: &Around<'_>,
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
                around.reporter.note(&format!(
                    "driver: wrote {} (blacklist nouveau, options nouveau modeset=0)",
                    blacklist.display()
                ));
            }
            let what = "rebuilding the initramfs so that nouveau stays unloaded at the next boot";
            Ok(
                step(initramfs, "nouveau-initramfs", what, stack, around)?.map(|log| Done {
                    what: format!(
                        "nouveau blacklisted in {} and the initramfs rebuilt (`{}`)",
                        blacklist.display(),
                        crate::exec::step::shell_words(initramfs)
                    ),
                    log,
                    reboot: *reboot,
                    enrolment_password: None,
                }),
            )
        }
        Prepare::StopDisplay { argv } => {
            around.reporter.note("driver: stopping the display manager (--stop-display): this ends the desktop session; the reboot after the driver starts it again");
            let what = "stopping the display manager";
            Ok(
                step(argv, "stop-display", what, stack, around)?.map(|log| Done {
                    what: "the display manager stopped (--stop-display)".to_string(),
                    log,
                    reboot: false,
                    enrolment_password: None,
                }),
            )
        }
        Prepare::EnrollKey { argv } => enroll_key(argv, stack, around),
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
                enrolment_password: None,
            }))
        }
    }
}

/// Queues the module signing certificate for enrolment with a one-time password stackpin makes
/// (root often has none to give `--root-pw`: Ubuntu locks it), hashed by mokutil itself into a
/// file only root reads, and says the password: the MOK manager asks for it at the next boot.
fn enroll_key(
    argv: &[String],
    stack: &StackDir,
    around: &Around<'_>,
) -> Result<Result<Done, Refused>, InstallError> {
    let what = "importing the module signing certificate for enrolment";
    let mokutil = argv.first().cloned().unwrap_or_default();
    let cert = argv.get(2).cloned().unwrap_or_default();
    // mokutil skips a certificate it already knows and keeps the old password: a second
    // password said now would be one the MOK manager never asks for.
    match enrolment_of(&mokutil, &cert) {
        Enrolment::Enrolled => {
            around.reporter.note(&format!(
                "driver: {cert} is already enrolled (mokutil --test-key): the module it signs loads without a MOK manager step"
            ));
            return Ok(Ok(Done {
                what: "the module signing certificate was already enrolled".to_string(),
                log: None,
                reboot: false,
                enrolment_password: None,
            }));
        }
        Enrolment::Pending => {
            around.reporter.warning(&format!(
                "driver: {cert} is already queued for enrolment, with a password this run cannot know: the pending request is revoked (mokutil --revoke-import, which cancels every pending MOK import) and queued again with a new one-time password"
            ));
            let revoke = [mokutil.clone(), "--revoke-import".to_string()];
            if let Err(refused) = step(&revoke, "mokutil-revoke", what, stack, around)? {
                return Ok(Err(refused));
            }
        }
        Enrolment::NotEnrolled => {}
    }
    let password = one_time_password().map_err(|source| InstallError::Prepare {
        what: "making a one-time enrolment password from /dev/urandom".into(),
        source,
    })?;
    // On stdin, twice as mokutil asks for it: an argument would be readable in /proc.
    let hashed = crate::exec::run(
        crate::exec::Spec::captured(
            &mokutil,
            ["--generate-hash"],
            std::time::Duration::from_secs(60),
        )
        .with_stdin(format!("{password}\n{password}\n")),
    );
    // mokutil prompts on stdout too (`input password: `, `input password again: `): the hash
    // is the line that starts with `$`.
    let hash = match &hashed {
        Ok(done) if done.end.code() == Some(0) => String::from_utf8_lossy(&done.stdout)
            .lines()
            .map(str::trim)
            .rev()
            .find(|l| l.starts_with('$'))
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    };
    if hash.is_empty() {
        // stderr only: stdout may hold a hash of the password, which is never shown.
        let said = match &hashed {
            Ok(done) => match String::from_utf8_lossy(&done.stderr).lines().last() {
                Some(line) => line.trim().to_string(),
                None => done.end.to_string(),
            },
            Err(e) => e.to_string(),
        };
        return Ok(Err(Refused {
            what: what.to_string(),
            why: format!(
                "{what} failed before the driver: `{mokutil} --generate-hash` gave no password hash ({said}); update mokutil, or enroll the certificate yourself (`mokutil --import CERT`, it asks for a password) and run install again"
            ),
            log: None,
            tail: Vec::new(),
        }));
    }
    let private = tempfile::tempdir().map_err(|source| InstallError::Prepare {
        what: "making a private folder for the password hash".into(),
        source,
    })?;
    let hash_file = private.path().join("mok-password.hash");
    std::fs::write(&hash_file, format!("{hash}\n")).map_err(|source| InstallError::Prepare {
        what: format!("writing {}", hash_file.display()),
        source,
    })?;
    let mut import = argv.to_vec();
    import.extend(["--hash-file".to_string(), hash_file.display().to_string()]);
    Ok(step(&import, "mokutil-import", what, stack, around)?.map(|log| {
        // Said even under --quiet, and before any --reboot: the MOK manager comes first.
        around.reporter.warning(&format!(
            "driver: the signing certificate is queued for enrolment with the one-time password {password} — write it down: at the next boot the blue MOK manager screen asks for it: choose \"Enroll MOK\", \"Continue\", \"Yes\", type {password}, then \"Reboot\"; without it the driver's module does not load"
        ));
        Done {
            what: "the module signing certificate queued for enrolment with mokutil (a one-time password, printed by install); enrol it at the next boot in the MOK manager".to_string(),
            log,
            reboot: false,
            enrolment_password: Some(password),
        }
    }))
}

/// Where a certificate stands with the MOK list, as `mokutil --test-key` says it.
enum Enrolment {
    Enrolled,
    Pending,
    /// Not enrolled, or mokutil gave no answer stackpin reads (the import then says).
    NotEnrolled,
}

/// `mokutil --test-key CERT`, read by its words (its exit status differs between versions).
fn enrolment_of(mokutil: &str, cert: &str) -> Enrolment {
    let Ok(done) = crate::exec::run(crate::exec::Spec::captured(
        mokutil,
        ["--test-key", cert],
        std::time::Duration::from_secs(60),
    )) else {
        return Enrolment::NotEnrolled;
    };
    let said = String::from_utf8_lossy(&done.stdout);
    if said.contains("is already enrolled") || said.contains("is already in db") {
        Enrolment::Enrolled
    } else if said.contains("is already in the enrollment request") {
        Enrolment::Pending
    } else {
        Enrolment::NotEnrolled
    }
}

/// Eight random digits: the MOK manager reads the keyboard before any layout is loaded, and
/// digits are where every layout puts them.
fn one_time_password() -> std::io::Result<String> {
    use std::io::Read;
    let mut urandom = std::fs::File::open("/dev/urandom")?;
    let mut digits = String::with_capacity(8);
    let mut byte = [0u8; 1];
    while digits.len() < 8 {
        urandom.read_exact(&mut byte)?;
        // 250 of the 256 values fall evenly on ten digits; the other six are drawn again.
        if byte[0] < 250 {
            digits.push(char::from(b'0' + byte[0] % 10));
        }
    }
    Ok(digits)
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
    around: &Around<'_>,
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
    around.reporter.step_started(Layer::Driver, &step.argv);
    // Recorded in the machine lock like every installer: a stackpin killed during the
    // initramfs rebuild leaves a lock the next one honours while the tool still runs.
    let outcome: StepOutcome = super::run_recorded(&step, Layer::Driver, around.machine)?;
    around.reporter.step_finished(Layer::Driver, &outcome);
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
