//! `repair`: reinstall only the drifted layers from the archive, in order, each verified as in
//! install, then prove the stack again so a new record replaces the stale one.
//!
//! The chain and its refusals are `install`'s; the example run is `prove`'s. This module decides
//! what to reinstall and whether to prove, and reports before → after.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::{CheckId, Drift, Examination, Status};
use crate::archive::StackDir;
use crate::host::System;
use crate::install::{
    self, ChainEnd, InstallError, InstallOptions, InstallReport, InstallReporter,
};
use crate::layers::HostView;
use crate::manifest::{Layer, Manifest};
use crate::prove::run::{
    ExampleRunner, ProveError, ProveHost, ProveOptions, ProveReporter, Proven, prove,
};

/// Why the repair stopped.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error("reinstalling from the archive")]
    Install(#[source] InstallError),
    #[error("proving the repaired stack")]
    Prove(#[source] ProveError),
}

/// What repair will do, decided from doctor's examination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepairPlan {
    /// Layers to reinstall from the archive, in install order.
    pub reinstall: Vec<Layer>,
    /// Whether the example runs again (a reinstall, a stale or missing record).
    pub prove: bool,
}

impl RepairPlan {
    /// From doctor's findings: the layers whose proof fails, and a new proof whenever anything
    /// is reinstalled or the record does not describe the host.
    pub fn from_examination(exam: &Examination) -> RepairPlan {
        let reinstall = exam.drifted_layers();
        let failed = |id| exam.check(id).is_some_and(|c| c.status == Status::Fail);
        let prove = !reinstall.is_empty()
            || failed(CheckId::Driver)
            || failed(CheckId::Example)
            || failed(CheckId::Vram);
        RepairPlan { reinstall, prove }
    }

    /// True when the host already matches its record.
    pub fn is_empty(&self) -> bool {
        self.reinstall.is_empty() && !self.prove
    }
}

/// One layer, before and after.
#[derive(Debug, Clone, Serialize)]
pub struct LayerChange {
    pub layer: Layer,
    pub before: String,
    pub after: String,
}

/// How a repair ended.
#[derive(Debug, Serialize)]
pub struct RepairReport {
    pub stack: String,
    pub plan: RepairPlan,
    /// Drift doctor found before the repair.
    pub drift: Vec<Drift>,
    /// Each reinstalled layer, before → after.
    pub changes: Vec<LayerChange>,
    pub install: Option<InstallReport>,
    /// The new record, when the stack was proven again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proven: Option<crate::record::ProvenStack>,
    /// The record's `proven_at`, before → after.
    pub proven_at: (Option<String>, Option<String>),
}

impl RepairReport {
    /// True when the driver is installed but needs a reboot before the stack can be proven.
    pub fn reboot_required(&self) -> bool {
        self.install
            .as_ref()
            .is_some_and(|i| matches!(i.end, ChainEnd::RebootRequired { .. }))
    }
}

/// What the caller provides to run the chain and the example.
pub struct RepairContext<'a> {
    /// The machine the new proof probes (`host` sees the same one).
    pub system: &'a dyn System,
    pub host: &'a dyn HostView,
    /// Runs the new proof's example.
    pub example: &'a dyn ExampleRunner,
    pub install_reporter: &'a dyn InstallReporter,
    pub prove_reporter: &'a dyn ProveReporter,
    pub interrupted: &'a AtomicBool,
    pub skip_admin_check: bool,
    /// The machine-wide install lock ([`InstallOptions::machine_lock`]).
    pub machine_lock: Option<std::path::PathBuf>,
    pub gpu: Option<u32>,
}

/// Reinstalls the drifted layers (nothing else) and proves again when the chain completes.
pub fn repair(
    m: &Manifest,
    stack: &StackDir,
    exam: &Examination,
    ctx: &RepairContext<'_>,
) -> Result<RepairReport, RepairError> {
    let plan = RepairPlan::from_examination(exam);
    let recorded_at = exam
        .record
        .as_ref()
        .and_then(|p| crate::record::ProvenStack::read(p).ok())
        .map(|r| r.proven_at);
    let mut report = RepairReport {
        stack: m.name.clone(),
        plan: plan.clone(),
        drift: exam.drift.clone(),
        changes: Vec::new(),
        install: None,
        proven: None,
        proven_at: (recorded_at.clone(), recorded_at),
    };
    if plan.is_empty() {
        return Ok(report);
    }
    // The chain also settles a reboot-pending driver left by an earlier repair; layers whose
    // proof holds are skipped, so only the drifted ones run.
    let options = InstallOptions {
        dry_run: false,
        force: plan.reinstall.clone(),
        skip_admin_check: ctx.skip_admin_check,
        machine_lock: ctx.machine_lock.clone(),
        no_wait: false,
        choices: Default::default(),
        // The guard is `--apply-guard`'s; the toolkit still runs with Windows Update paused.
        windows_update: install::windows_update::WindowsUpdateGuards::for_install(
            m.os == crate::os::Os::Windows && cfg!(windows),
            true,
        ),
    };
    let chain = install::install(
        m,
        stack,
        ctx.host,
        &options,
        ctx.interrupted,
        ctx.install_reporter,
    )
    .map_err(RepairError::Install)?;
    for layer in &plan.reinstall {
        let before = exam
            .drift
            .iter()
            .find(|d| d.layer == *layer)
            .map(|d| d.now.clone())
            .or_else(|| {
                exam.layers
                    .iter()
                    .find(|p| p.layer == *layer)
                    .map(|p| p.seen.clone())
            })
            .unwrap_or_default();
        if let Some(result) = chain.layers.iter().find(|r| r.layer == *layer) {
            report.changes.push(LayerChange {
                layer: *layer,
                before,
                after: result.proof.seen.clone(),
            });
        }
    }
    let complete = chain.end == ChainEnd::Complete;
    report.install = Some(chain);
    if complete && plan.prove {
        let options = ProveOptions {
            gpu: ctx.gpu,
            ..ProveOptions::default()
        };
        let host = ProveHost {
            system: ctx.system,
            view: ctx.host,
            example: ctx.example,
            advice: &|layer| install::missing_layer_advice(stack, layer),
        };
        let Proven { record, .. } =
            prove(m, stack, &host, &options, ctx.prove_reporter).map_err(RepairError::Prove)?;
        report.proven_at.1 = Some(record.proven_at.clone());
        report.proven = Some(record);
    }
    Ok(report)
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for RepairError {
    fn exit(&self) -> Exit {
        match self {
            RepairError::Install(e) => e.exit(),
            RepairError::Prove(e) => e.exit(),
        }
    }

    fn layer(&self) -> Option<String> {
        match self {
            RepairError::Install(e) => e.layer(),
            RepairError::Prove(e) => e.layer(),
        }
    }

    fn fix(&self) -> Option<String> {
        match self {
            RepairError::Install(e) if e.exit() == Exit::Problem => Some(
                "the archive cannot rebuild this layer: run `stackpin repair MANIFEST --fetch`"
                    .to_string(),
            ),
            RepairError::Install(e) => e.fix(),
            RepairError::Prove(e) => e.fix(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Check;
    use crate::layers::Proof;
    use crate::os::Os;

    fn exam(holds: [bool; 3], example: Status) -> Examination {
        Examination {
            stack: "s".into(),
            os: Os::Linux,
            record: None,
            checks: vec![Check {
                check: CheckId::Example,
                status: example,
                found: String::new(),
                fix: None,
            }],
            drift: vec![],
            layers: Layer::ORDER
                .iter()
                .zip(holds)
                .map(|(layer, holds)| Proof {
                    layer: *layer,
                    holds,
                    seen: String::new(),
                    reboot_pending: false,
                })
                .collect(),
            windows_driver: None,
            ok: true,
        }
    }

    #[test]
    fn only_the_layers_whose_proof_fails_are_reinstalled_and_the_stack_proven_again() {
        let plan = RepairPlan::from_examination(&exam([true, false, true], Status::Pass));
        assert_eq!(plan.reinstall, [Layer::Toolkit]);
        assert!(plan.prove);
    }

    #[test]
    fn a_stale_record_alone_means_proving_again_without_reinstalling() {
        let plan = RepairPlan::from_examination(&exam([true, true, true], Status::Fail));
        assert!(plan.reinstall.is_empty());
        assert!(plan.prove);
    }

    #[test]
    fn a_healthy_host_needs_nothing() {
        assert!(RepairPlan::from_examination(&exam([true; 3], Status::Pass)).is_empty());
    }
}
