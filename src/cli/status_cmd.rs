//! `stackpin status [MANIFEST | --all]`: one summary per stack in the archive — lock present,
//! audit counts, where the install chain stands (`state.yaml`) and what the proven-stack record
//! says — as text or as one JSON document a fleet tool (Ansible) can register and report.
//!
//! What each stack's summary holds and how its stage is judged is `crate::status`'s; this module
//! parses the flags and renders the summaries.

use std::path::PathBuf;

use serde::Serialize;

use super::{CliError, CmdResult, Failure, GlobalArgs, finish_report, print_json};
use crate::install::state::LayerStatus;
use crate::manifest::{self, Layer};
use crate::status::{StackStatus, Stage, stack_status};

pub const EXAMPLES: &str = "\
Examples:
  stackpin status --all
  stackpin status --all --archive /srv/installers --json
  stackpin status manifests/torch-2.5.1-cu124-linux.yaml

Without MANIFEST every stack folder in the archive is summarised (as with --all). Re-hashes every
archived file, like `stackpin audit`. Exit 0 when nothing is wrong (a pending reboot is not wrong),
1 when a file is missing or corrupt, a layer failed, or a state file or record cannot be read.";

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The manifest whose stack to summarise (its pins are audited too).
    #[arg(value_name = "MANIFEST", conflicts_with = "all")]
    pub manifest: Option<PathBuf>,
    /// Summarise every stack in the archive (the default without MANIFEST).
    #[arg(long)]
    pub all: bool,
}

#[derive(Serialize)]
struct StatusJson<'a> {
    archive: PathBuf,
    ok: bool,
    stacks: &'a [StackStatus],
}

pub fn run(args: &StatusArgs, global: &GlobalArgs) -> CmdResult {
    let archive = global.archive();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let stacks: Vec<StackStatus> = match &args.manifest {
        Some(path) => {
            let m = manifest::read(path)?;
            let stack = archive.stack(&m.name);
            vec![stack_status(&stack, Some(&m), threads)]
        }
        // A mistyped --archive is an input error, as in `audit`, never "ok, no stacks".
        None => global
            .open_archive()?
            .stacks()?
            .iter()
            .map(|stack| stack_status(stack, None, threads))
            .collect(),
    };
    let ok = !stacks.iter().any(StackStatus::has_problem);
    let json = || {
        print_json(&StatusJson {
            archive: archive.root().to_path_buf(),
            ok,
            stacks: &stacks,
        })
    };
    let human = || {
        if stacks.is_empty() {
            if !global.quiet {
                println!(
                    "{}: no stack yet; run `stackpin fetch MANIFEST` or `stackpin up MANIFEST`",
                    archive.root().display()
                );
            }
            return;
        }
        for s in &stacks {
            if args.manifest.is_some() {
                print_human(s);
            } else {
                // `--all`: each stack's hints name the manifest fetch keeps in its folder.
                let kept = archive.stack(&s.stack).manifest_path();
                super::hints::for_stack(&kept, || print_human(s));
            }
        }
    };
    let exit = finish_report(global, ok, json, human)?;
    if ok || !global.json {
        Ok(exit)
    } else {
        // The document already says what is wrong; one line on stderr keeps logs readable.
        Err(Failure::from(CliError::Refused(format!(
            "a stack in {} needs attention; see `problems`, `stage` and `audit` above",
            archive.root().display()
        ))))
    }
}

fn stage_word(stage: Stage) -> &'static str {
    match stage {
        Stage::Empty => "empty",
        Stage::Fetched => "fetched",
        Stage::Installing => "installing",
        Stage::RebootPending => "reboot pending",
        Stage::Failed => "FAILED",
        Stage::Interrupted => "INTERRUPTED",
        Stage::Installed => "installed, not proven",
        Stage::Proven => "proven",
    }
}

/// `println!` with every quoted `stackpin …` command completed from what the user ran.
macro_rules! say_line {
    ($($arg:tt)*) => {
        println!("{}", super::hints::complete(&format!($($arg)*)))
    };
}

fn print_human(s: &StackStatus) {
    anstream::println!("{}: {}", s.stack, super::term::verdict(stage_word(s.stage)));
    match &s.audit {
        Some(a) if a.incomplete > 0 => say_line!(
            "  archive: incomplete: run `stackpin fetch MANIFEST` ({} requirement(s) not archived yet)",
            a.incomplete
        ),
        Some(a) => say_line!(
            "  archive: stack.lock; {} ok, {} missing, {} corrupt, {} unexpected, {} partial, {} untrusted{}",
            a.ok,
            a.missing,
            a.corrupt,
            a.unexpected,
            a.partial,
            a.untrusted,
            if a.passed() {
                ""
            } else {
                "; run `stackpin fetch MANIFEST` to repair"
            }
        ),
        None => say_line!("  archive: no stack.lock; run `stackpin fetch MANIFEST`"),
    }
    let layers: Vec<String> = Layer::ORDER
        .iter()
        .map(|&l| {
            let word = match s.install.status(l) {
                None => "not run",
                Some(LayerStatus::Done) => "done",
                Some(LayerStatus::RebootPending) => "reboot pending",
                Some(LayerStatus::Failed) => "failed",
                Some(LayerStatus::Running) if s.busy => "running now",
                Some(LayerStatus::Running) => "INTERRUPTED mid-step",
            };
            format!("{l} {word}")
        })
        .collect();
    say_line!("  install: {}", layers.join(" · "));
    for (layer, st) in &s.install.layers {
        if st.status == LayerStatus::Failed
            && let Some(log) = &st.log
        {
            say_line!("           {layer} log: {}", log.display());
        }
    }
    if let Some(run) = &s.last_resume {
        let record = crate::install::resume::ResumeRecord {
            reboots: Vec::new(),
            last_resume: Some(run.clone()),
        };
        if let Some(line) = record.last_resume_line() {
            say_line!("  resume:  {line}");
        }
    }
    match &s.proven {
        Some(p) => say_line!(
            "  proven:  {} on {}{}, batch {} peak {:.0} MiB, largest safe batch {}",
            super::term::timestamp_text(&p.proven_at),
            p.hostname,
            p.gpu
                .as_deref()
                .map_or(String::new(), |g| format!(" ({g})")),
            p.batch,
            p.peak_mib,
            p.largest_safe_batch
                .map_or("none".to_string(), |b| b.to_string())
        ),
        None => say_line!("  proven:  no record yet; `stackpin prove MANIFEST` writes one"),
    }
    for problem in &s.problems {
        say_line!("  problem: {problem}");
    }
}
