//! `up`: the whole pipeline for one stack, fetch → install → prove, called once by the command
//! line. Resumable by construction: fetch skips what is archived intact, install skips the
//! layers whose proof holds (so a run after the driver's reboot goes on from the toolkit), and
//! prove runs only once the chain is complete.
//!
//! This module prints nothing: it reports through [`UpReporter`], which the CLI implements, and
//! each failure keeps the error (and so the exit status) of the step it came from, so `up` ends
//! the way `fetch`, `install` or `prove` alone would have.

use std::sync::atomic::AtomicBool;

use crate::archive::{self, Archive, ArchiveError, FetchConfig, FetchReport, Progress};
use crate::exit::{Exit, ExitStatus};
use crate::host::System;
use crate::install::{
    self, ChainEnd, InstallError, InstallOptions, InstallReport, InstallReporter,
};
use crate::layers::HostView;
use crate::manifest::Manifest;
use crate::prove::run::{
    ExampleRunner, ProveError, ProveHost, ProveOptions, ProveReporter, Proven, prove,
};

/// The step `up` is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpStep {
    Fetch,
    Install,
    Prove,
}

/// Where `up` reports what it is doing: a step beginning, and each step's own progress.
pub trait UpReporter {
    /// `step` begins.
    fn step(&self, step: UpStep);
    /// Every installer is archived and verified: what the fetch did, file by file.
    fn fetched(&self, report: &FetchReport);
    /// Downloads and hashing, and the notes of a fetch (another run holds the lock, a retry).
    fn fetch(&self) -> &dyn Progress;
    /// The install chain's layers and steps.
    fn install(&self) -> &dyn InstallReporter;
    /// The example's runs.
    fn prove(&self) -> &dyn ProveReporter;
}

/// What `up` is asked to do.
pub struct UpRequest<'a> {
    pub manifest: &'a Manifest,
    /// The manifest's text, archived beside the installers.
    pub manifest_text: &'a str,
    pub archive: &'a Archive,
    pub fetch: &'a FetchConfig,
    pub install: &'a InstallOptions,
    pub prove: &'a ProveOptions,
    /// When another stackpin works on this stack: fail at once (exit 1) instead of waiting.
    pub no_wait: bool,
    /// Set by Ctrl-C: the chain stops before its next layer.
    pub interrupted: &'a AtomicBool,
    /// The host as the chain and the proof see it; asked afresh for each step, since install
    /// changes what is there.
    pub host: &'a dyn Fn() -> Box<dyn HostView + 'a>,
    /// The machine the proof probes; the views above see it too.
    pub system: &'a dyn System,
    /// Runs the proof's example.
    pub example: &'a dyn ExampleRunner,
}

/// How `up` ended without an error.
pub enum UpEnd {
    /// The chain stopped before the proof: a reboot to take, a failed or interrupted layer.
    Stopped(InstallReport),
    /// Every layer is in place and the example proved the stack.
    Proven {
        install: InstallReport,
        proven: Box<Proven>,
    },
}

/// Why `up` stopped; each kind keeps the exit status of the step it came from.
#[derive(Debug, thiserror::Error)]
pub enum UpError {
    #[error("fetch did not archive every installer; nothing was installed")]
    FetchIncomplete { errors: Vec<ArchiveError> },
    #[error(
        "install refused before any layer ran ({} problem{}); nothing was installed:\n  - {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n  - ")
    )]
    Refused { problems: Vec<String> },
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error(transparent)]
    Prove(#[from] ProveError),
}

impl ExitStatus for UpError {
    fn exit(&self) -> Exit {
        match self {
            // The status `fetch` alone ends on for the same failed files.
            UpError::FetchIncomplete { errors } => Exit::worst(errors.iter().map(|e| e.exit())),
            UpError::Refused { .. } => Exit::Problem,
            UpError::Archive(e) => e.exit(),
            UpError::Install(e) => e.exit(),
            UpError::Prove(e) => e.exit(),
        }
    }

    fn layer(&self) -> Option<String> {
        match self {
            UpError::Install(e) => e.layer(),
            UpError::Prove(e) => e.layer(),
            _ => None,
        }
    }

    fn fix(&self) -> Option<String> {
        match self {
            UpError::Install(e) => e.fix(),
            UpError::Prove(e) => e.fix(),
            _ => None,
        }
    }
}

/// Fetches, installs and proves the stack, stopping at the first step that does not finish.
pub fn up(request: &UpRequest<'_>, reporter: &dyn UpReporter) -> Result<UpEnd, UpError> {
    let m = request.manifest;
    let stack = request.archive.stack(&m.name);
    if request.no_wait && stack.root().is_dir() {
        // fetch waits for the stack's lock; probe it first so --no-wait holds from the start.
        drop(stack.lock_or_fail(false, reporter.fetch())?);
    }

    reporter.step(UpStep::Fetch);
    let fetched = archive::fetch(
        m,
        request.manifest_text,
        request.archive,
        request.fetch,
        reporter.fetch(),
    )?;
    if !fetched.errors.is_empty() {
        return Err(UpError::FetchIncomplete {
            errors: fetched.errors,
        });
    }
    reporter.fetched(&fetched);

    reporter.step(UpStep::Install);
    let host = (request.host)();
    let files = install::archived_files(&stack, &stack.read_lock()?);
    let choices = request.install.choices.with_spare(stack.root());
    let problems =
        install::preflight::preflight(m, host.as_ref(), &files, &request.install.force, &choices);
    if !problems.is_empty() {
        return Err(UpError::Refused { problems });
    }
    // Two installs, repairs or `up`s of one stack never run side by side.
    let busy = stack.lock_or_fail(!request.no_wait, reporter.fetch())?;
    // Holding the lock, a layer still marked running was cut off mid-step by an earlier run.
    if let Ok(state) = install::state::ChainState::load(&stack.state_path()) {
        for line in install::interrupted_steps(&state) {
            reporter.fetch().note(&format!("note: {line}"));
        }
    }
    let report = install::install(
        m,
        &stack,
        host.as_ref(),
        request.install,
        request.interrupted,
        reporter.install(),
    )?;
    drop(busy);
    if !matches!(report.end, ChainEnd::Complete) {
        return Ok(UpEnd::Stopped(report));
    }

    reporter.step(UpStep::Prove);
    let view = (request.host)();
    let host = ProveHost {
        system: request.system,
        view: view.as_ref(),
        example: request.example,
        advice: &|layer| install::missing_layer_advice(&stack, layer),
    };
    let proven = prove(m, &stack, &host, request.prove, reporter.prove())?;
    Ok(UpEnd::Proven {
        install: report,
        proven: Box::new(proven),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_inside_up_keeps_the_status_of_the_step_it_came_from() {
        let download = || {
            ArchiveError::io(
                "downloading",
                "installers/s/driver/x.run",
                std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            )
        };
        let checksum = ArchiveError::Checksum {
            url: "http://127.0.0.1/x.run".into(),
            expected: "a".repeat(64),
            actual: "b".repeat(64),
        };
        // As `fetch` alone ends: a failed download 3, a wrong file outranking it 1.
        let failed = UpError::FetchIncomplete {
            errors: vec![download()],
        };
        assert_eq!(failed.exit(), Exit::External);
        assert_eq!(failed.exit(), Exit::worst([download().exit()]));
        let wrong = UpError::FetchIncomplete {
            errors: vec![download(), checksum],
        };
        assert_eq!(wrong.exit(), Exit::Problem);
        let refused = UpError::Refused {
            problems: vec!["the driver installer is not archived".into()],
        };
        assert_eq!(refused.exit(), Exit::Problem);
        assert!(refused.to_string().contains("1 problem)"), "{refused}");
        assert_eq!(UpError::from(InstallError::NotAdmin).exit(), Exit::Input);
    }
}
