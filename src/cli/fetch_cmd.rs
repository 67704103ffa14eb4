//! `stackpin fetch MANIFEST`: archives a stack's installers, and the indicatif view of the
//! archive's progress events ([`Bars`]) that `audit`, `bundle` and `unbundle` share.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;

use anyhow::anyhow;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::archive::{self, ArchiveError, FetchedFile, FileOutcome, Progress};

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
    errors: Vec<String>,
}

pub fn run(args: &super::fetch_args::FetchArgs, global: &GlobalArgs) -> CmdResult {
    let manifest = super::valid_manifest::require_valid(&args.manifest)?;
    let text = std::fs::read_to_string(&args.manifest).map_err(|e| {
        CliError::unusable(
            anyhow::Error::new(e).context(format!("reading {}", args.manifest.display())),
        )
    })?;
    let config = args.config(manifest.mirror.as_deref())?;
    let bars = Bars::new(global);
    let report =
        archive::fetch(&manifest, &text, &global.archive(), &config, &bars).map_err(failure)?;
    bars.clear();
    for error in &report.errors {
        super::print_error(&anyhow!("{error}"));
    }
    // Each failed file says its own status; the one to act on first ends the run.
    let exit = Exit::worst(report.errors.iter().map(crate::exit::ExitStatus::exit));
    if global.json {
        print_json(&JsonFetch {
            ok: exit == Exit::Ok,
            stack: report.stack.display().to_string(),
            files: &report.files,
            errors: report.errors.iter().map(|e| e.to_string()).collect(),
        })?;
    } else if !global.quiet {
        for f in &report.files {
            let what = match f.outcome {
                FileOutcome::AlreadyArchived => "archived",
                FileOutcome::Downloaded => "downloaded",
                FileOutcome::Mirror => "mirror",
                FileOutcome::Repaired => "repaired",
            };
            println!(
                "{what:<11} {}/{} ({}) sha256 {}",
                f.layer,
                f.file,
                size_text(f.size),
                f.sha256
            );
        }
        match exit {
            Exit::Ok => println!(
                "{}: {} files archived and verified; next: stackpin audit {}",
                report.stack.display(),
                report.files.len(),
                args.manifest.display()
            ),
            _ => println!(
                "{}: {} files failed; run `stackpin fetch {}` again to resume",
                report.stack.display(),
                report.errors.len(),
                args.manifest.display()
            ),
        }
    }
    Ok(exit)
}

/// The archive error with the exit status it knows (`crate::exit`): content problems 1,
/// unreadable input 2, the rest 3.
pub(super) fn failure(e: ArchiveError) -> Failure {
    Failure::from(e)
}

/// Sizes the way users read them.
pub(super) fn size_text(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= 1024.0 * MIB {
        format!("{:.2} GiB", bytes as f64 / (1024.0 * MIB))
    } else if bytes as f64 >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{bytes} B")
    }
}

/// The archive's progress events drawn with indicatif: one bar per file and a total. No bars
/// when stderr is not a terminal, with `--quiet` or with `--json`; notes still go to stderr
/// unless `--quiet` or `--json`.
pub(super) struct Bars {
    multi: Option<MultiProgress>,
    total: Option<ProgressBar>,
    bars: Mutex<HashMap<String, ProgressBar>>,
    notes: bool,
}

impl Bars {
    pub(super) fn new(global: &GlobalArgs) -> Self {
        let notes = !global.quiet && !global.json;
        let draw = notes && std::io::stderr().is_terminal();
        let multi = draw.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let total = multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(style(
                "total {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            ));
            bar
        });
        Self {
            multi,
            total,
            bars: Mutex::new(HashMap::new()),
            notes,
        }
    }

    /// Removes the bars before the summary is printed.
    pub(super) fn clear(&self) {
        if let Some(total) = &self.total {
            total.finish_and_clear();
        }
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl Progress for Bars {
    fn started(&self, file: &str, total: Option<u64>) {
        let (Some(multi), Ok(mut bars)) = (&self.multi, self.bars.lock()) else {
            return;
        };
        let bar = multi.insert_before(
            self.total.as_ref().unwrap_or(&ProgressBar::hidden()),
            ProgressBar::new(total.unwrap_or(0)),
        );
        bar.set_style(style(
            "{msg:40!} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        ));
        bar.set_message(file.to_string());
        if let (Some(t), Some(n)) = (&self.total, total) {
            t.inc_length(n);
        }
        if let Some(old) = bars.insert(file.to_string(), bar) {
            old.finish_and_clear();
        }
    }

    fn advanced(&self, file: &str, bytes: u64) {
        if let Ok(bars) = self.bars.lock()
            && let Some(bar) = bars.get(file)
        {
            bar.inc(bytes);
            if let Some(t) = &self.total {
                t.inc(bytes);
            }
        }
    }

    fn finished(&self, file: &str) {
        if let Ok(mut bars) = self.bars.lock()
            && let Some(bar) = bars.remove(file)
        {
            bar.finish_and_clear();
        }
    }

    fn note(&self, text: &str) {
        if !self.notes {
            return;
        }
        match &self.multi {
            Some(m) => {
                let _ = m.println(format!("note: {text}"));
            }
            None => eprintln!("note: {text}"),
        }
    }
}
