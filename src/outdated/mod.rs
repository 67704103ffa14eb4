//! What is newer in the release data in use than a stack's pins, and what moving would mean:
//! a newer driver in the same branch, a newer branch that still drives the host's GPUs, a newer
//! toolkit update in the same CUDA line, a newer patch release of the library.
//!
//! The one-way rule decides what a move costs: a newer driver keeps every older toolkit
//! working unless it drops the card; a newer toolkit update may need a newer driver. This module
//! asks `compat` and takes the host's GPUs as plain values ([`host_gpus`] reads them through the
//! `System` it is given); it prints nothing.

pub mod index;

use serde::Serialize;

use crate::compat::{self, DriverRequirement, LibraryLookup};
use crate::host::{self, DriverState, ProbeOptions, System};
use crate::manifest::{Layer, Manifest};
use crate::os::Os;
use crate::version::Version;

/// What kind of newer release was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A newer driver of the pinned driver's branch (its first number).
    DriverSameBranch,
    /// A driver of a newer branch that still drives the host's GPUs.
    DriverNewerBranch,
    /// A newer update of the pinned CUDA line (`12.4.0` → `12.4.1`).
    ToolkitUpdate,
    /// A newer patch release of the pinned library line (`2.5.0` → `2.5.1`).
    LibraryPatch,
}

/// One newer release and what moving to it would mean.
#[derive(Debug, Clone, Serialize)]
pub struct Newer {
    pub layer: Layer,
    pub kind: Kind,
    pub pinned: String,
    pub newer: String,
    /// What moving would mean, in a sentence.
    pub meaning: String,
}

/// A GPU of the host, as the driver rule needs it.
#[derive(Debug, Clone, Serialize)]
pub struct HostGpu {
    pub name: String,
    /// Compute capability (`8.9`), when the driver reports it.
    pub compute_cap: Option<String>,
}

/// The host's GPUs, or why they are not known (no driver yet, a stack for another OS).
#[derive(Debug, Clone)]
pub enum HostGpus {
    Known(Vec<HostGpu>),
    Unknown(String),
}

/// The host's GPUs for a stack of `os`: only this machine's, and only when its driver answers.
pub fn host_gpus(system: &dyn System, os: Os) -> HostGpus {
    if os != system.os() {
        return HostGpus::Unknown(format!("a {os} stack judged on a {} host", system.os()));
    }
    let report = match host::probe(system, &ProbeOptions::default()) {
        Ok(r) => r,
        Err(e) => return HostGpus::Unknown(e.to_string()),
    };
    match report.driver.state {
        DriverState::Ok => HostGpus::Known(
            report
                .driver
                .gpus
                .iter()
                .map(|g| HostGpu {
                    name: g.name.clone(),
                    compute_cap: g.compute_cap.clone(),
                })
                .collect(),
        ),
        other => HostGpus::Unknown(other.label().to_string()),
    }
}

/// The driver this host runs, for a stack of `os`: `None` for another OS's stack or a driver
/// that does not answer.
pub fn host_driver(system: &dyn System, os: Os) -> Option<Version> {
    if os != system.os() {
        return None;
    }
    let report = host::probe(system, &ProbeOptions::default()).ok()?;
    if report.driver.state != DriverState::Ok {
        return None;
    }
    let first = report.driver.gpus.first()?;
    Version::parse(&first.driver_version).ok()
}

/// What is newer for one stack.
#[derive(Debug, Clone, Serialize)]
pub struct Outdated {
    pub stack: String,
    pub os: Os,
    pub newer: Vec<Newer>,
    /// What could not be judged, and held-back releases (a branch that drops a GPU).
    pub notes: Vec<String>,
}

/// Compares a stack's pins with the release data in use.
pub fn outdated(m: &Manifest, gpus: &HostGpus) -> Outdated {
    let mut newer = Vec::new();
    let mut notes = Vec::new();
    let driver = &m.driver.version;
    let toolkit = &m.toolkit.version;
    let workstation = is_workstation_stack(m);
    let drivers: Vec<Version> = channel_rows(m.os, workstation)
        .iter()
        .map(|r| r.version.clone())
        .collect();
    let keeps =
        format!("keeps CUDA {toolkit} working (a newer driver never drops an older toolkit)");
    if let Some(same) = drivers
        .iter()
        .filter(|v| v.major() == driver.major() && *v > driver)
        .max()
    {
        newer.push(Newer {
            layer: Layer::Driver,
            kind: Kind::DriverSameBranch,
            pinned: driver.to_string(),
            newer: same.to_string(),
            meaning: format!("same branch R{}; {keeps}", driver.major()),
        });
    }
    let branch = newest_branch_for_gpus(m.os, driver, gpus, workstation);
    if let Some((v, why)) = branch.offered {
        newer.push(Newer {
            layer: Layer::Driver,
            kind: Kind::DriverNewerBranch,
            pinned: driver.to_string(),
            newer: v.to_string(),
            meaning: format!("newer branch R{}: {why}; {keeps}", v.major()),
        });
    }
    notes.extend(branch.notes);
    if let Some(n) = newer_toolkit(m) {
        newer.push(n);
    }
    match newer_library(m) {
        Ok(Some(n)) => newer.push(n),
        Ok(None) => {}
        Err(note) => notes.push(note),
    }
    if !compat::toolkit_known(toolkit) {
        notes.push(format!(
            "CUDA {toolkit} is not in the release data of {}: nothing to compare it with",
            compat::data_date()
        ));
    }
    Outdated {
        stack: m.name.clone(),
        os: m.os,
        newer,
        notes,
    }
}

/// A stack whose driver is NVIDIA's RTX workstation package (its URL is in `Quadro_Certified/`,
/// as `pin --gpu-name` writes it for such a card).
fn is_workstation_stack(m: &Manifest) -> bool {
    m.driver.installer.url.contains("/Quadro_Certified/")
}

/// The driver rows a stack can move to: the workstation channel's for a workstation stack,
/// every other channel's for the rest (the workstation package refuses GeForce cards).
fn channel_rows(os: Os, workstation: bool) -> Vec<&'static compat::DriverRow> {
    compat::known_drivers(os)
        .into_iter()
        .filter(|r| (r.channel == compat::DriverChannel::Workstation) == workstation)
        .collect()
}

/// What the driver-branch rule offers, and what it held back.
#[derive(Debug, Default)]
pub struct BranchVerdict {
    /// The newest driver of a newer branch the host's GPUs can use, with why.
    pub offered: Option<(Version, String)>,
    pub notes: Vec<String>,
}

/// The newest driver of a branch newer than `pinned` that still drives the host's GPUs.
///
/// The one rule for "does a newer branch drop this card" is the GPU-generation table's last
/// driver branch per compute capability (`data/gpus.yaml`, [`compat::gpu_generation`]): no
/// later branch is offered for a host with that GPU.
pub fn newest_branch_for_gpus(
    os: Os,
    pinned: &Version,
    gpus: &HostGpus,
    workstation: bool,
) -> BranchVerdict {
    let rows = channel_rows(os, workstation);
    let candidates: Vec<&Version> = rows
        .iter()
        .map(|r| &r.version)
        .filter(|v| v.major() > pinned.major())
        .collect();
    let Some(newest) = candidates.first().copied() else {
        return BranchVerdict::default();
    };
    let host = match gpus {
        HostGpus::Known(list) if !list.is_empty() => list,
        HostGpus::Known(_) => {
            return BranchVerdict {
                offered: None,
                notes: vec!["this host has no GPU to check newer driver branches against".into()],
            };
        }
        HostGpus::Unknown(why) => return offer_with_caveat(&rows, newest, why),
    };
    let names: Vec<&str> = host.iter().map(|g| g.name.as_str()).collect();
    let drives = format!("still drives {}", names.join(", "));
    let Some((last, gpu)) = lowest_last_branch(host) else {
        return BranchVerdict {
            offered: Some((newest.clone(), drives)),
            notes: vec![],
        };
    };
    let mut verdict = BranchVerdict {
        offered: candidates
            .iter()
            .find(|v| compat::driver_branch(v, os) <= last)
            .map(|v| ((*v).clone(), drives)),
        notes: vec![],
    };
    if compat::driver_branch(newest, os) > last {
        verdict.notes.push(format!(
            "driver {newest} (R{}) is not offered: R{last} is the last branch for {gpu}",
            newest.major()
        ));
    }
    verdict
}

/// The lowest "last branch" among the host's GPUs, with the GPU it is for; `None` when no GPU's
/// generation has ended in the data.
fn lowest_last_branch(host: &[HostGpu]) -> Option<(u64, String)> {
    host.iter()
        .filter_map(|gpu| {
            let generation = compat::gpu_generation(gpu.compute_cap.as_deref()?)?;
            let last = generation.last_driver_branch?;
            Some((last, format!("{} ({})", gpu.name, generation.name)))
        })
        .min_by_key(|(last, _)| *last)
}

/// Unknown GPUs: the newest branch is offered with the branches that end a generation.
fn offer_with_caveat(rows: &[&compat::DriverRow], newest: &Version, why: &str) -> BranchVerdict {
    let last: Vec<String> = rows
        .iter()
        .filter(|r| !r.last_for.is_empty() && r.version.major() < newest.major())
        .map(|r| {
            format!(
                "R{} is the last for {}",
                r.version.major(),
                r.last_for.join(", ")
            )
        })
        .collect();
    let caveat = if last.is_empty() {
        String::new()
    } else {
        format!(" ({})", last.join("; "))
    };
    BranchVerdict {
        offered: Some((
            newest.clone(),
            format!("the host's GPUs are unknown ({why}): check that it drives them{caveat}"),
        )),
        notes: vec![],
    }
}

fn newer_toolkit(m: &Manifest) -> Option<Newer> {
    let toolkit = &m.toolkit.version;
    let newest = compat::toolkit_releases(&toolkit.major_minor())
        .first()
        .map(|r| r.version.clone())
        .filter(|v| v > toolkit)?;
    let driver = &m.driver.version;
    let need = match compat::min_driver_for(&newest, m.os) {
        DriverRequirement::Release { min, .. } => Some(min),
        DriverRequirement::Branch { floor, .. } => Some(floor),
        DriverRequirement::Unknown => None,
    };
    let driver_part = match need {
        Some(min) if *driver >= min => {
            format!("needs driver {min} or newer: the pinned {driver} meets it")
        }
        Some(min) => {
            format!("needs driver {min} or newer: move the driver first (pinned {driver} is older)")
        }
        None => "its minimum driver is not in the data".to_string(),
    };
    Some(Newer {
        layer: Layer::Toolkit,
        kind: Kind::ToolkitUpdate,
        pinned: toolkit.to_string(),
        newer: newest.to_string(),
        meaning: format!(
            "same CUDA line {}: {} built for {} keeps working; {driver_part}",
            toolkit.major_minor(),
            m.library.name,
            m.library.cuda.major_minor()
        ),
    })
}

fn newer_library(m: &Manifest) -> Result<Option<Newer>, String> {
    let lib = &m.library;
    let release = match compat::library_release(&lib.name, &lib.version, m.os) {
        LibraryLookup::Known(r) => r,
        LibraryLookup::UnknownRelease { .. } | LibraryLookup::UnknownLibrary => {
            return Err(format!(
                "{} {} is not in the release data of {}: nothing to compare it with",
                lib.name,
                lib.version,
                compat::data_date()
            ));
        }
    };
    let Some(newest) = release
        .versions
        .iter()
        .filter(|v| v.major_minor() == lib.version.major_minor() && *v > &lib.version)
        .max()
    else {
        return Ok(None);
    };
    let cuda = &lib.cuda;
    let support = match release.cuda_support(cuda) {
        compat::CudaSupport::Stable => format!("CUDA {} stays a stable line", cuda.major_minor()),
        compat::CudaSupport::Experimental => {
            format!("CUDA {} stays an experimental line", cuda.major_minor())
        }
        compat::CudaSupport::Unsupported => {
            format!("CUDA {} is not listed for it", cuda.major_minor())
        }
    };
    Ok(Some(Newer {
        layer: Layer::Library,
        kind: Kind::LibraryPatch,
        pinned: lib.version.to_string(),
        newer: newest.to_string(),
        meaning: format!(
            "a patch release of {} {}: {support}; re-pin with `stackpin pin --library {}=={newest}` and fetch again",
            lib.name,
            lib.version.major_minor(),
            lib.name
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::version::v;

    #[test]
    fn host_gpus_are_known_only_for_this_os_and_a_driver_that_answers() {
        use crate::host::nvidia_smi::QUERY_GPU;
        use crate::host::system::FakeSystem;
        let mut sys = FakeSystem::new(Os::Linux);
        match host_gpus(&sys, Os::Windows) {
            HostGpus::Unknown(why) => assert_eq!(why, "a windows stack judged on a linux host"),
            known => panic!("{known:?}"),
        }
        assert!(matches!(host_gpus(&sys, Os::Linux), HostGpus::Unknown(_)));
        sys.on_path
            .insert("nvidia-smi".into(), "/bin/nvidia-smi".into());
        sys.answer(
            "/bin/nvidia-smi",
            &[QUERY_GPU],
            0,
            "0, NVIDIA L4, GPU-a, 570.1, 23034, 8.9\n",
        )
        .answer("/bin/nvidia-smi", &[], 0, "");
        match host_gpus(&sys, Os::Linux) {
            HostGpus::Known(gpus) => {
                assert_eq!(gpus.len(), 1);
                assert_eq!(gpus[0].name, "NVIDIA L4");
                assert_eq!(gpus[0].compute_cap.as_deref(), Some("8.9"));
            }
            unknown => panic!("{unknown:?}"),
        }
    }

    #[test]
    fn a_workstation_package_is_offered_to_workstation_stacks_only() {
        let gpus = HostGpus::Unknown("not asked".into());
        let geforce = newest_branch_for_gpus(Os::Windows, &v("576.40"), &gpus, false);
        let offered = geforce.offered.map(|(v, _)| v.to_string());
        assert!(
            offered
                .as_deref()
                .is_some_and(|v| v != "596.36" && v != "582.78"),
            "a GeForce stack is never sent to a Quadro_Certified file: {offered:?}"
        );
        let workstation = newest_branch_for_gpus(Os::Windows, &v("573.06"), &gpus, true);
        assert_eq!(
            workstation.offered.map(|(v, _)| v.to_string()).as_deref(),
            Some("596.36")
        );
    }

    fn manifest(path: &str) -> Manifest {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        crate::manifest::read(&file).expect("shipped manifest")
    }

    fn gpu(name: &str, cc: &str) -> HostGpu {
        HostGpu {
            name: name.into(),
            compute_cap: Some(cc.into()),
        }
    }

    #[test]
    fn a_newer_branch_is_offered_to_a_card_it_still_drives() {
        let gpus = HostGpus::Known(vec![gpu("NVIDIA L4", "8.9")]);
        let verdict = newest_branch_for_gpus(Os::Linux, &v("550.54.15"), &gpus, false);
        let (offered, why) = verdict.offered.expect("a newer branch");
        assert_eq!(offered.major(), 595);
        assert!(why.contains("NVIDIA L4"), "{why}");
    }

    #[test]
    fn a_branch_past_the_last_one_for_a_card_is_held_back() {
        // R580 is the last branch for Pascal: a 550 stack on a GTX 1080 gets 580, not 595.
        let gpus = HostGpus::Known(vec![gpu("NVIDIA L4", "8.9"), gpu("GTX 1080", "6.1")]);
        let verdict = newest_branch_for_gpus(Os::Linux, &v("550.54.15"), &gpus, false);
        let (offered, _) = verdict.offered.expect("R580");
        assert_eq!(offered, v("580.95.05"));
        assert!(
            verdict.notes.iter().any(|n| n.contains("GTX 1080")),
            "{:?}",
            verdict.notes
        );
        // Already on the last branch: nothing newer is offered.
        let verdict = newest_branch_for_gpus(Os::Linux, &v("580.95.05"), &gpus, false);
        assert!(verdict.offered.is_none());
        assert!(!verdict.notes.is_empty());
    }

    #[test]
    fn unknown_gpus_get_the_newest_branch_with_the_caveat() {
        let gpus = HostGpus::Known(vec![]);
        assert!(
            newest_branch_for_gpus(Os::Linux, &v("550.54.15"), &gpus, false)
                .offered
                .is_none()
        );
        let gpus = HostGpus::Unknown("no nvidia-smi".into());
        let verdict = newest_branch_for_gpus(Os::Linux, &v("550.54.15"), &gpus, false);
        let (offered, why) = verdict.offered.expect("offered with a caveat");
        assert_eq!(offered.major(), 595);
        assert!(why.contains("R580 is the last for maxwell"), "{why}");
    }

    #[test]
    fn the_newest_shipped_stack_has_nothing_newer() {
        let m = manifest("manifests/torch-2.5.1-cu124-linux.yaml");
        let out = outdated(&m, &HostGpus::Known(vec![gpu("NVIDIA L4", "8.9")]));
        assert!(out.newer.is_empty(), "{:?}", out.newer);
    }

    #[test]
    fn an_old_stack_gets_every_kind_of_newer_release_with_its_meaning() {
        let mut m = manifest("manifests/torch-2.5.1-cu124-linux.yaml");
        m.driver.version = v("580.82.07");
        m.toolkit.version = v("12.4.0");
        m.library.version = v("2.5.0");
        let out = outdated(&m, &HostGpus::Known(vec![gpu("NVIDIA L4", "8.9")]));
        let kinds: Vec<Kind> = out.newer.iter().map(|n| n.kind).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::DriverSameBranch,
                Kind::DriverNewerBranch,
                Kind::ToolkitUpdate,
                Kind::LibraryPatch
            ]
        );
        assert_eq!(out.newer[0].newer, "580.95.05");
        assert!(out.newer[0].meaning.contains("keeps CUDA 12.4.0 working"));
        assert_eq!(out.newer[2].newer, "12.4.1");
        assert!(
            out.newer[2].meaning.contains("550.54.15"),
            "{}",
            out.newer[2].meaning
        );
        assert_eq!(out.newer[3].newer, "2.5.1");
    }

    #[test]
    fn a_toolkit_update_that_needs_a_newer_driver_says_so() {
        let mut m = manifest("manifests/torch-2.5.1-cu124-linux.yaml");
        m.driver.version = v("550.40.07");
        m.toolkit.version = v("12.4.0");
        let n = newer_toolkit(&m).expect("12.4.1 is newer");
        assert!(n.meaning.contains("move the driver first"), "{}", n.meaning);
    }
}
