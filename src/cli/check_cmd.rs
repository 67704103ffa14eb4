//! `stackpin check MANIFEST…`

use std::path::PathBuf;

use anyhow::anyhow;
use serde::Serialize;

use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::check::{self, Report};
use crate::exit::ExitStatus;
use crate::manifest::{self, Problem, Severity};

pub const EXAMPLES: &str = "\
Examples:
  stackpin check manifests/torch-2.5.1-cu124-linux.yaml
  stackpin check manifests/*.yaml --json
  stackpin check manifests/torch-2.5.1-cu124-linux.yaml --gpu-arch 6.1   # a GTX 1080

Exit 0 when no errors (warnings allowed), 1 when any error, 2 when a file cannot be read or parsed.";

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Manifests to check.
    #[arg(required = true, value_name = "MANIFEST")]
    pub manifests: Vec<PathBuf>,
    /// Also check the stack against a GPU of this compute capability (repeatable): the driver's
    /// branch must drive it, the toolkit compile for it, the library build carry its architecture.
    #[arg(long = "gpu-arch", value_name = "X.Y")]
    pub gpu_arch: Vec<String>,
    /// Also check the stack against the NVIDIA card with this PCI device ID (`10de:1b80`,
    /// `1b80`, or a hardware ID `PCI\VEN_10DE&DEV_1B80…`, repeatable): what a machine without a
    /// driver shows in Device Manager or `lspci -nn`.
    #[arg(long = "gpu-id", value_name = "ID")]
    pub gpu_id: Vec<String>,
}

/// `--gpu-id` values → the compute capabilities the release data gives their cards.
fn gpu_id_capabilities(ids: &[String]) -> Result<Vec<String>, Failure> {
    ids.iter()
        .map(|id| {
            let device = crate::host::pci::device_ids_in(id)
                .into_iter()
                .next()
                .or_else(|| {
                    let bare = id.trim().to_ascii_lowercase();
                    let bare = bare.strip_prefix("10de:").unwrap_or(&bare).to_string();
                    (bare.len() == 4 && bare.chars().all(|c| c.is_ascii_hexdigit())).then_some(bare)
                })
                .ok_or_else(|| {
                    CliError::Usage(format!(
                        "--gpu-id `{id}`: write an NVIDIA PCI device ID as 10de:XXXX (e.g. 10de:2204)"
                    ))
                })?;
            crate::compat::pci_device(&device)
                .map(|d| d.compute.clone())
                .ok_or_else(|| {
                    Failure::from(CliError::Usage(format!(
                        "--gpu-id `{id}`: stackpin's PCI table (data/nvidia-pci.yaml) does not know \
                         device {device}; give its compute capability with --gpu-arch instead"
                    )))
                })
        })
        .collect()
}

#[derive(Serialize)]
struct FileReport {
    file: String,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    problems: Vec<Problem>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    ok: bool,
    problems: Vec<FileProblem<'a>>,
    manifests: &'a [FileReport],
    /// The release data set the manifests were checked against.
    data: crate::dataset::DataRef,
}

#[derive(Serialize)]
struct FileProblem<'a> {
    file: &'a str,
    #[serde(flatten)]
    problem: &'a Problem,
}

pub fn run(args: &CheckArgs, global: &GlobalArgs) -> CmdResult {
    let gpus = args
        .gpu_arch
        .iter()
        .map(|a| {
            crate::compat::compute_capability(a).ok_or_else(|| {
                Failure::from(CliError::Usage(format!(
                    "--gpu-arch `{a}`: write a compute capability as X.Y, e.g. 8.6"
                )))
            })
        })
        .chain(gpu_id_capabilities(&args.gpu_id)?.into_iter().map(Ok))
        .collect::<Result<Vec<_>, _>>()?;
    // Each manifest's own status; the one to act on first ends the run.
    let mut exits = Vec::new();
    let mut reports = Vec::new();
    for path in &args.manifests {
        let file = path.display().to_string();
        let text = match crate::fsutil::read_text(path) {
            Ok(t) => t,
            Err(e) => {
                let err = manifest::ManifestError::Read {
                    path: path.clone(),
                    source: e,
                };
                exits.push(err.exit());
                let err = anyhow::Error::new(err);
                report_unreadable(global, &mut reports, file, &err);
                continue;
            }
        };
        match manifest::parse(&text, path) {
            Err(e) => {
                exits.push(e.exit());
                report_unreadable(global, &mut reports, file, &anyhow!(e));
            }
            Ok(m) => {
                let report = check::check_for_gpus(&m, Some(&text), &gpus);
                exits.push(Exit::verdict(report.ok));
                if !global.json {
                    print_human(&file, &report, global.quiet);
                }
                reports.push(FileReport {
                    file,
                    ok: report.ok,
                    error: None,
                    problems: report.problems,
                });
            }
        }
    }
    let exit = Exit::worst(exits);
    if global.json {
        let problems = reports
            .iter()
            .flat_map(|r| {
                r.problems.iter().map(|p| FileProblem {
                    file: &r.file,
                    problem: p,
                })
            })
            .collect();
        print_json(&JsonReport {
            ok: exit == Exit::Ok,
            problems,
            manifests: &reports,
            data: crate::dataset::data_ref(&crate::compat::READER),
        })?;
    }
    Ok(exit)
}

fn report_unreadable(
    global: &GlobalArgs,
    reports: &mut Vec<FileReport>,
    file: String,
    err: &anyhow::Error,
) {
    // Human mode prints the error as it happens; JSON mode carries it in the document and still
    // prints it on stderr so a script's log shows why.
    super::print_error(err);
    let _ = global;
    reports.push(FileReport {
        file,
        ok: false,
        error: Some(format!("{err:#}")),
        problems: vec![],
    });
}

fn print_human(file: &str, report: &Report, quiet: bool) {
    for p in &report.problems {
        if quiet && p.severity == Severity::Warning {
            continue;
        }
        let place = match p.line {
            Some(line) => format!("{file}:{line}"),
            None => file.to_string(),
        };
        let word = match p.severity {
            Severity::Error => super::term::error_label(),
            Severity::Warning => super::term::warning_label(),
        };
        anstream::println!("{place}: {word} {}: {}", p.field, p.message);
    }
    if !quiet {
        let (errors, warnings) = (
            report.count(Severity::Error),
            report.count(Severity::Warning),
        );
        let verdict = if report.ok { "ok" } else { "FAILED" };
        anstream::println!(
            "{file}: {} ({errors} errors, {warnings} warnings)",
            super::term::verdict(verdict)
        );
    }
}
