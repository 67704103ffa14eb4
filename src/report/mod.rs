//! `report`: the lab at a glance. Reads an archive (one host) or a folder of records collected
//! from many hosts (`records/<host>/<stack>/…`, the layout in docs/report.md) and gathers, per
//! host and stack, the pins, each archived file's trust, the proof, what doctor last saw, what
//! `outdated` knows, and one state word for the hosts × stacks matrix.
//!
//! It only reads and judges: hashing is `archive::audit_stack`'s, the stage `status::stage_of`'s,
//! the record's schema `record`'s, drift `doctor`'s (its `doctor.yaml`), newer releases
//! `outdated`'s. Drawing the page is [`html`]'s; printing and writing files is the CLI's. A file
//! it cannot read is a problem on its stack, never fatal, so one broken stack hides nothing.

pub mod html;
mod lab;
mod stack;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use lab::{Cell, HostRow, LabState, lab_state, matrix};
pub use stack::{FailedSummary, FileRow, Pins, Proof, SourceMib, StackReport, Trust};

use crate::archive::{Archive, ArchiveError};

/// Where the facts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// One archive: the stacks of one host (or of one shared folder).
    Archive,
    /// `records/<host>/<stack>/…`: what a fleet collected from each host.
    Records,
}

/// The whole page's facts.
#[derive(Debug, Serialize)]
pub struct Lab {
    /// When the report was made, RFC 3339 UTC.
    pub generated_at: String,
    pub source: SourceKind,
    /// The archive or records folder read.
    pub input: PathBuf,
    /// Every stack name seen on any host: the matrix's columns.
    pub stacks: Vec<String>,
    /// Hosts × stacks, the hosts that need a person first.
    pub matrix: Vec<HostRow>,
    /// Every stack of every host, in matrix order.
    pub reports: Vec<StackReport>,
}

impl Lab {
    /// How many hosts need a person.
    pub fn hosts_needing_a_person(&self) -> usize {
        self.matrix.iter().filter(|h| h.needs_person).count()
    }
}

/// The report could not be made at all (a stack's own trouble is a problem on that stack).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("cannot read the records folder {}", path.display())]
    Records {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} holds no host folders (records/<host>/<stack>/…)", path.display())]
    NoHosts { path: PathBuf },
}

impl crate::exit::ExitStatus for ReportError {
    fn exit(&self) -> crate::exit::Exit {
        match self {
            ReportError::Archive(e) => e.exit(),
            ReportError::Records { .. } | ReportError::NoHosts { .. } => crate::exit::Exit::Input,
        }
    }
}

/// The lab of one archive: its stacks, hashed against their locks on `threads` cores. The host
/// is named by the newest proof's hostname, else by the archive folder's name.
pub fn from_archive(root: &Path, threads: usize) -> Result<Lab, ReportError> {
    let archive = Archive::open(root)?;
    let mut reports: Vec<StackReport> = archive
        .stacks()?
        .iter()
        .map(|s| stack::gather(s, "", true, threads))
        .collect();
    let host = reports
        .iter()
        .filter_map(|r| r.proof.as_ref())
        .max_by(|a, b| lab::time_order(&a.proven_at, &b.proven_at))
        .map(|p| p.hostname.clone())
        .unwrap_or_else(|| folder_name(root));
    for r in &mut reports {
        r.host.clone_from(&host);
    }
    Ok(assemble(SourceKind::Archive, root, reports))
}

/// The lab of a records folder: each folder below it is a host, each of its folders a stack
/// (what a fleet collected; installers are usually left on the host, so their files are listed
/// from the lock as not collected unless a layer folder came along).
pub fn from_records(root: &Path, threads: usize) -> Result<Lab, ReportError> {
    let entries = std::fs::read_dir(root).map_err(|source| ReportError::Records {
        path: root.to_path_buf(),
        source,
    })?;
    let mut hosts: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    hosts.sort();
    if hosts.is_empty() {
        return Err(ReportError::NoHosts {
            path: root.to_path_buf(),
        });
    }
    let mut reports = Vec::new();
    for (host, dir) in &hosts {
        let archive = Archive::open(dir)?;
        let stacks = archive.stacks()?;
        if stacks.is_empty() {
            // A host that answered with nothing is a row of "never tried", not a missing row.
            reports.push(StackReport::nothing_on(host));
        }
        reports.extend(
            stacks
                .iter()
                .map(|s| stack::gather(s, host, false, threads)),
        );
    }
    Ok(assemble(SourceKind::Records, root, reports))
}

fn folder_name(root: &Path) -> String {
    std::fs::canonicalize(root)
        .ok()
        .as_deref()
        .unwrap_or(root)
        .file_name()
        .map_or_else(
            || "this archive".to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
}

fn assemble(source: SourceKind, input: &Path, reports: Vec<StackReport>) -> Lab {
    let (stacks, matrix, reports) = matrix(reports);
    Lab {
        generated_at: crate::record::now_rfc3339(),
        source,
        input: input.to_path_buf(),
        stacks,
        matrix,
        reports,
    }
}
