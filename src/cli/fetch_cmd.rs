//! `stackpin fetch MANIFEST`: archives a stack's installers ([`super::fetch_args::fetch_stack`],
//! which `repair --fetch` shares) and prints what each file took.

use serde::Serialize;

use super::fetch_args::{FetchArgs, Fetched, fetch_stack};
use super::term::{fetched_line, say};
use super::{CmdResult, Exit, GlobalArgs, print_json};
use crate::archive::FetchedFile;

pub const EXAMPLES: &str = "\
Examples:
  stackpin fetch manifests/torch-2.5.1-cu124-linux.yaml
  stackpin fetch my-stack.yaml --archive /srv/installers --jobs 4
  stackpin fetch my-stack.yaml --locked --mirror http://lab-mirror:8000

Exit 0 when every file is archived and verified, 1 on a checksum mismatch or a --locked refusal,
2 when the manifest cannot be used, 3 when a download or pip failed (run fetch again: it resumes).";

#[derive(Serialize)]
struct JsonFetch<'a> {
    ok: bool,
    stack: String,
    files: &'a [FetchedFile],
    /// Each failed file's error with its causes.
    errors: Vec<String>,
    /// What to do, where the errors share a cause with one fix (a full disk).
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

pub fn run(args: &FetchArgs, global: &GlobalArgs) -> CmdResult {
    let Fetched { report, exit } = fetch_stack(args, global)?;
    if global.json {
        print_json(&JsonFetch {
            ok: exit == Exit::Ok,
            stack: report.stack.display().to_string(),
            files: &report.files,
            errors: report
                .errors
                .iter()
                .map(|e| super::with_causes(e))
                .collect(),
            fix: report
                .disk_full()
                .then(|| super::error::full_disk_advice(super::error::Elsewhere::Archive)),
        })?;
    } else if !global.quiet {
        for f in &report.files {
            say(&fetched_line(f), "            ");
        }
        let (stack, manifest) = (report.stack.display(), args.manifest.display());
        let summary = match exit {
            Exit::Ok => format!(
                "{stack}: {} files archived and verified; next: {}",
                report.files.len(),
                super::hints::command(&["stackpin", "audit", &manifest.to_string()])
            ),
            _ if report.disk_full() => format!(
                "{stack}: {} files failed ({} on a full disk: see `what to do` above); \
                 then run `stackpin fetch {manifest}` again to resume",
                report.errors.len(),
                report.disk_full_failures()
            ),
            _ => format!(
                "{stack}: {} files failed; run `stackpin fetch {manifest}` again to resume",
                report.errors.len()
            ),
        };
        say(&summary, "  ");
    }
    Ok(exit)
}
