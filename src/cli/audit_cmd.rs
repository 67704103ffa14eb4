//! `stackpin audit [MANIFEST | --all]`: re-hashes archived files against their locks and prints
//! each verdict; the hashing itself lives in `archive::audit`.

use std::path::PathBuf;

use serde::Serialize;

use super::term::{Bars, size_text};
use super::{CliError, CmdResult, Failure, GlobalArgs, finish_report, print_json};
use crate::archive::{self, FileAudit, FileStatus, TrustSummary};
use crate::manifest;

pub const EXAMPLES: &str = "\
Examples:
  stackpin audit manifests/torch-2.5.1-cu124-linux.yaml
  stackpin audit --all --archive /srv/installers --json

Exit 0 when every file is ok (strays and partials are reported, not failed), 1 when any file is
missing or corrupt (run `stackpin fetch MANIFEST` to repair), 2 when there is nothing to audit.";

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// The manifest whose stack to audit (its pins are checked too).
    #[arg(
        value_name = "MANIFEST",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub manifest: Option<PathBuf>,
    /// Audit every stack in the archive.
    #[arg(long)]
    pub all: bool,
}

#[derive(Serialize)]
struct JsonFile<'a> {
    stack: String,
    #[serde(flatten)]
    file: &'a FileAudit,
}

#[derive(Serialize)]
struct JsonTrust<'a> {
    stack: String,
    #[serde(flatten)]
    trust: &'a TrustSummary,
}

#[derive(Serialize)]
struct JsonAudit<'a> {
    ok: bool,
    files: Vec<JsonFile<'a>>,
    /// Per stack: how many files were verified against a published checksum and how many are
    /// still trusted on first use.
    trust: Vec<JsonTrust<'a>>,
    trust_on_first_use: usize,
}

pub fn run(args: &AuditArgs, global: &GlobalArgs) -> CmdResult {
    let mut targets = Vec::new();
    if let Some(path) = &args.manifest {
        let m = manifest::read(path)?;
        targets.push((global.archive().stack(&m.name), Some(m)));
    } else {
        let archive = global.open_archive()?;
        // The stacks fetch wrote a lock into: audit re-hashes against it.
        let locked = archive
            .stacks()?
            .into_iter()
            .filter(|s| s.lock_path().is_file());
        targets.extend(locked.map(|s| (s, None)));
        if targets.is_empty() {
            return Err(Failure::from(CliError::Usage(format!(
                "{} holds no stack with a stack.lock; run `stackpin fetch MANIFEST` first",
                archive.root().display()
            ))));
        }
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let bars = Bars::new(global);
    let mut reports = Vec::new();
    for (stack, m) in &targets {
        let report = archive::audit_stack(stack, m.as_ref(), threads, &bars)?;
        reports.push((stack.name(), report));
    }
    bars.clear();
    let ok = reports.iter().all(|(_, r)| r.ok());
    let json = || {
        let files = reports
            .iter()
            .flat_map(|(name, r)| {
                r.files.iter().map(|f| JsonFile {
                    stack: name.clone(),
                    file: f,
                })
            })
            .collect();
        let trust = reports
            .iter()
            .map(|(name, r)| JsonTrust {
                stack: name.clone(),
                trust: &r.trust,
            })
            .collect();
        let trust_on_first_use = reports
            .iter()
            .map(|(_, r)| r.trust.trust_on_first_use)
            .sum();
        print_json(&JsonAudit {
            ok,
            files,
            trust,
            trust_on_first_use,
        })
    };
    finish_report(global, ok, json, || {
        for (name, report) in &reports {
            print_human(name, &report.files, global.quiet);
            print_trust(name, &report.trust);
        }
    })
}

fn print_human(stack: &str, files: &[FileAudit], quiet: bool) {
    let count = |s: FileStatus| files.iter().filter(|f| f.status == s).count();
    for f in files {
        if quiet && f.status == FileStatus::Ok {
            continue;
        }
        let word = format!("{:?}", f.status).to_lowercase();
        let size = f.size.map(size_text).unwrap_or_default();
        println!("{word:<10} {stack}/{} {size}", f.path);
        match f.status {
            FileStatus::Corrupt => println!(
                "           expected sha256 {}\n           actual   sha256 {}",
                f.expected.as_deref().unwrap_or("?"),
                f.actual.as_deref().unwrap_or("?")
            ),
            FileStatus::Untrusted => {
                if let Some(c) = &f.pin_conflict {
                    println!(
                        "           {}",
                        super::hints::complete(&c.clone().into_error().to_string())
                    );
                }
            }
            FileStatus::Partial => {
                println!(
                    "           left by an interrupted download; {}",
                    super::hints::complete("`stackpin fetch` resumes it")
                )
            }
            FileStatus::Incomplete => println!(
                "           asked for by the manifest, not archived: incomplete: {}",
                super::hints::complete("run `stackpin fetch`")
            ),
            FileStatus::Unexpected => println!(
                "           not in stack.lock; remove it, or fetch a manifest that names it"
            ),
            _ => {}
        }
    }
    let failed =
        count(FileStatus::Missing) + count(FileStatus::Corrupt) + count(FileStatus::Untrusted);
    let verdict = super::term::verdict(if failed == 0 { "ok" } else { "FAILED" });
    anstream::println!(
        "{stack}: {verdict} ({} ok, {} missing, {} corrupt, {} unexpected, {} partial, {} untrusted){}",
        count(FileStatus::Ok),
        count(FileStatus::Missing),
        count(FileStatus::Corrupt),
        count(FileStatus::Unexpected),
        count(FileStatus::Partial),
        count(FileStatus::Untrusted),
        if failed > 0 {
            super::hints::complete("; run `stackpin fetch MANIFEST` to fetch them again")
        } else {
            String::new()
        }
    );
}

/// One line on what vouches for the stack's files, naming those still trusted on first use.
fn print_trust(stack: &str, trust: &TrustSummary) {
    let mut line = format!(
        "{stack}: {} verified against a published checksum, {} pinned by the manifest, {} trusted on first use",
        trust.published, trust.manifest_pin, trust.trust_on_first_use
    );
    if trust.from_package_index > 0 {
        line.push_str(&format!(
            ", {} from a package index (its installer checks the index's sha256)",
            trust.from_package_index
        ));
    }
    println!("{line}");
    if !trust.trusted_on_first_use.is_empty() {
        println!(
            "           trusted on first use (no published checksum known): {}",
            trust.trusted_on_first_use.join(", ")
        );
    }
}
