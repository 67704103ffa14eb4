//! The record of `install --reboot`'s unattended resumes, in `resume.yaml` beside `state.yaml`:
//! every reboot the chain asked for (after which layer, on which boot) and how the last resume
//! ended, with its log. `--reboot` consults it before each reboot ([`decide`]): resumes are
//! capped at [`MAX_REBOOTS`], and a layer that asks again for a reboot after one really happened
//! stops the chain instead of looping. `status` and the next `install` read it back.
//!
//! It also judges the folders a resume must reach ([`remote_folder`]): the boot task runs as
//! SYSTEM, which sees no user's mapped drive and reaches no share. The texts and decisions are
//! pure; reading the boot's identity and writing the files is the CLI's.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil;
use crate::manifest::Layer;

/// The record's file name, beside `state.yaml`.
pub const RECORD_FILE: &str = "resume.yaml";

/// The resumed command's output, beside `state.yaml`: the boot task has no console.
pub const LOG_FILE: &str = "resume.log";

/// How many reboots one chain may ask `--reboot` for: driver, toolkit and one more is already
/// unusual; past that a machine that never comes up would reboot for ever.
pub const MAX_REBOOTS: usize = 3;

/// One reboot `--reboot` asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebootRequest {
    /// The layer that needed it.
    pub after: Layer,
    /// When it was asked for.
    pub at: String,
    /// The boot the machine was on when it was asked for (`None`: unknown on this host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// The reboot came before the layer ran, for a preparation (nouveau unloaded): the layer's
    /// own reboot after it is a new one, not the same one failing again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepared: bool,
}

/// One run of `stackpin resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeRun {
    pub started: String,
    /// `None` while it runs, or when it was cut off (a power loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// How the resumed command ended (`exit code 0`), once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Whether it ended with exit code 0.
    #[serde(default)]
    pub ok: bool,
    pub log: PathBuf,
}

/// `resume.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeRecord {
    /// The reboots asked for since the chain last ended without one, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reboots: Vec<RebootRequest>,
    /// The last unattended resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resume: Option<ResumeRun>,
}

/// Where the record of the stack whose state is at `state_path` lives.
pub fn record_path(state_path: &Path) -> PathBuf {
    beside(state_path, RECORD_FILE)
}

/// Where the resume's log goes.
pub fn log_path(state_path: &Path) -> PathBuf {
    beside(state_path, LOG_FILE)
}

fn beside(state_path: &Path, name: &str) -> PathBuf {
    state_path
        .parent()
        .map_or_else(|| PathBuf::from(name), |dir| dir.join(name))
}

impl ResumeRecord {
    /// The record, or an empty one when there is none or it cannot be read (it only informs).
    pub fn load(path: &Path) -> ResumeRecord {
        fsutil::read_yaml_if_present(path)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Writes the record atomically.
    pub fn save(&self, path: &Path) -> Result<(), fsutil::YamlError> {
        fsutil::write_yaml(path, "", self)
    }

    /// The one-line account of the last resume, for `status` and `install`.
    pub fn last_resume_line(&self) -> Option<String> {
        let run = self.last_resume.as_ref()?;
        Some(match (&run.ended, &run.outcome) {
            (Some(ended), Some(outcome)) => format!(
                "the last unattended resume ({}) ended {}: {outcome}; log: {}",
                ended,
                if run.ok { "well" } else { "badly" },
                run.log.display()
            ),
            _ => format!(
                "the last unattended resume (started {}) never finished; log: {}",
                run.started,
                run.log.display()
            ),
        })
    }
}

/// What `--reboot` does when the chain asks for a reboot after `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebootDecision {
    /// Register the resume and reboot.
    Reboot,
    /// [`MAX_REBOOTS`] reboots were already asked for in this chain.
    Capped { reboots: usize },
    /// The same layer asked for the last reboot, which really happened: it did not come up.
    StillFailing { layer: Layer, since: String },
}

/// The decision, from the reboots already asked for and the boot the machine is on now
/// (`None` when unknown: then only the cap applies).
pub fn decide(
    record: &ResumeRecord,
    after: Layer,
    prepared: bool,
    boot_now: Option<&str>,
) -> RebootDecision {
    if record.reboots.len() >= MAX_REBOOTS {
        return RebootDecision::Capped {
            reboots: record.reboots.len(),
        };
    }
    match record.reboots.last() {
        Some(last)
            if last.after == after
                && last.prepared == prepared
                && last.boot.is_some()
                && boot_now.is_some()
                && last.boot.as_deref() != boot_now =>
        {
            RebootDecision::StillFailing {
                layer: after,
                since: last.at.clone(),
            }
        }
        _ => RebootDecision::Reboot,
    }
}

impl RebootDecision {
    /// Why `--reboot` stops instead of rebooting; `None` for [`RebootDecision::Reboot`].
    pub fn refusal(&self) -> Option<String> {
        match self {
            RebootDecision::Reboot => None,
            RebootDecision::Capped { reboots } => Some(format!(
                "--reboot already rebooted this machine {reboots} times for this chain (at most {MAX_REBOOTS}); not rebooting again: look at the layer's log, then run the same command again by hand"
            )),
            RebootDecision::StillFailing { layer, since } => Some(format!(
                "the {layer} still needs a reboot after the reboot asked for at {since} really happened: it did not come up, and another reboot would not change that; not rebooting again: look at the {layer}'s log"
            )),
        }
    }
}

/// Why a folder cannot serve an unattended resume on Windows: a UNC path (`\\server\share`), or
/// a drive letter whose canonical form is a share (a mapped network drive: `canonical` is what
/// `std::fs::canonicalize` answered for it, `\\?\UNC\server\share\…`). `None` when it is local.
pub fn remote_folder(path: &str, canonical: Option<&str>) -> Option<&'static str> {
    let unc = |p: &str| {
        let p = p.replace('/', "\\");
        let lower = p.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix(r"\\?\") {
            rest.starts_with(r"unc\")
        } else {
            // `\\.\` is a device path, not a share.
            p.starts_with(r"\\") && !lower.starts_with(r"\\.\")
        }
    };
    if unc(path) {
        Some("a network share (UNC path)")
    } else if canonical.is_some_and(unc) {
        Some("on a mapped network drive")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(after: Layer, boot: Option<&str>) -> RebootRequest {
        RebootRequest {
            after,
            at: "2026-01-01T00:00:00Z".into(),
            boot: boot.map(String::from),
            prepared: false,
        }
    }

    #[test]
    fn the_first_reboot_and_a_new_layers_reboot_go_ahead() {
        let empty = ResumeRecord::default();
        assert_eq!(
            decide(&empty, Layer::Driver, false, Some("b1")),
            RebootDecision::Reboot
        );
        let after_driver = ResumeRecord {
            reboots: vec![request(Layer::Driver, Some("b1"))],
            last_resume: None,
        };
        assert_eq!(
            decide(&after_driver, Layer::Toolkit, false, Some("b2")),
            RebootDecision::Reboot,
            "a chain that needs two reboots gets both"
        );
    }

    #[test]
    fn a_layer_still_asking_after_a_real_reboot_stops() {
        let record = ResumeRecord {
            reboots: vec![request(Layer::Driver, Some("b1"))],
            last_resume: None,
        };
        let decision = decide(&record, Layer::Driver, false, Some("b2"));
        assert!(
            matches!(
                decision,
                RebootDecision::StillFailing {
                    layer: Layer::Driver,
                    ..
                }
            ),
            "{decision:?}"
        );
        assert!(
            decision
                .refusal()
                .is_some_and(|r| r.contains("did not come up")),
            "{decision:?}"
        );
        // The reboot never happened (same boot), or the boot is unknown: ask for it again.
        assert_eq!(
            decide(&record, Layer::Driver, false, Some("b1")),
            RebootDecision::Reboot
        );
        assert_eq!(
            decide(&record, Layer::Driver, false, None),
            RebootDecision::Reboot
        );
    }

    #[test]
    fn the_drivers_own_reboot_after_a_preparation_reboot_goes_ahead() {
        let record = ResumeRecord {
            reboots: vec![RebootRequest {
                prepared: true,
                ..request(Layer::Driver, Some("b1"))
            }],
            last_resume: None,
        };
        assert_eq!(
            decide(&record, Layer::Driver, false, Some("b2")),
            RebootDecision::Reboot,
            "nouveau's reboot, then the driver's"
        );
        assert!(matches!(
            decide(&record, Layer::Driver, true, Some("b2")),
            RebootDecision::StillFailing { .. }
        ));
    }

    #[test]
    fn resumes_are_capped() {
        let record = ResumeRecord {
            reboots: vec![
                request(Layer::Driver, None),
                request(Layer::Toolkit, None),
                request(Layer::Library, None),
            ],
            last_resume: None,
        };
        let decision = decide(&record, Layer::Driver, false, None);
        assert_eq!(decision, RebootDecision::Capped { reboots: 3 });
        assert!(
            decision.refusal().is_some_and(|r| r.contains("at most 3")),
            "{decision:?}"
        );
    }

    #[test]
    fn shares_and_mapped_drives_are_remote_local_folders_are_not() {
        assert!(remote_folder(r"\\fileserver\lab\installers", None).is_some());
        assert!(remote_folder(r"\\?\UNC\fileserver\lab", None).is_some());
        assert_eq!(
            remote_folder(r"Z:\installers", Some(r"\\?\UNC\fileserver\lab\installers")),
            Some("on a mapped network drive")
        );
        assert_eq!(
            remote_folder(r"C:\installers", Some(r"\\?\C:\installers")),
            None
        );
        assert_eq!(remote_folder(r"\\.\PhysicalDrive0", None), None);
        assert_eq!(remote_folder("installers", None), None);
    }

    #[test]
    fn the_record_round_trips_and_names_the_last_resume() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state.yaml");
        let path = record_path(&state);
        assert_eq!(ResumeRecord::load(&path), ResumeRecord::default());
        let record = ResumeRecord {
            reboots: vec![request(Layer::Driver, Some("b1"))],
            last_resume: Some(ResumeRun {
                started: "s".into(),
                ended: Some("e".into()),
                outcome: Some("exit code 3".into()),
                ok: false,
                log: log_path(&state),
            }),
        };
        record.save(&path).expect("save");
        let back = ResumeRecord::load(&path);
        assert_eq!(back, record);
        let line = back.last_resume_line().expect("a line");
        assert!(line.contains("ended badly: exit code 3"), "{line}");
        assert!(line.contains(LOG_FILE), "{line}");
    }
}
