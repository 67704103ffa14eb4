//! `stackpin measure -- CMD ARGS…`: any command's GPU memory per process, peak and after warm-up;
//! `--baseline --manifest M` measures the stack's context + runtime alone and prints the budget
//! lines to paste, or refuses (exit 1) when the library put its tensor on the CPU or nothing was
//! measured.
//!
//! Finding nvidia-smi, the GPU and the log path, and printing, happen here; running and
//! summarising are [`crate::prove::measure`]'s.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::valid_manifest::require_valid;
use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::exec::step::StepStatus;
use crate::host::RealSystem;
use crate::host::library_probe::PROBE_SCRIPT;
use crate::host::nvidia_smi;
use crate::library::LibraryDescription;
use crate::manifest::duration_text;
use crate::prove::measure::{self, CommandMemory, MeasureRequest};
use crate::prove::run::stack_env;

pub const EXAMPLES: &str = "\
Examples:
  stackpin measure -- python3 serve.py --camera 1
  stackpin measure --for 60s --json -- ./detector-service
  stackpin measure --baseline --manifest manifests/torch-2.5.1-cu124-linux.yaml

Reports the peak of the command's processes (summed at each moment) and each process's own peak,
and the level held after warm-up: the median of the last half of the samples. --baseline runs a
one-tensor script with the stack's Python (torch, tensorflow, onnxruntime-gpu: a one-node session
on the CUDA provider) and prints the context_mib / runtime_mib lines for `stackpin budget`.
Exit 0 when the command succeeded, 3 when it failed or GPU memory could not be sampled, 2 on bad
input; --baseline exits 1 with the reason when the library ran on the CPU or nothing was measured.";

/// A command that never exits on its own is given a week; `--for` sets a real limit.
const NO_LIMIT: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Debug, clap::Args)]
pub struct MeasureArgs {
    /// The GPU to watch (index as nvidia-smi numbers it); default: the first one
    /// CUDA_VISIBLE_DEVICES names, else 0. The command is given CUDA_VISIBLE_DEVICES=N.
    #[arg(long)]
    pub gpu: Option<u32>,
    /// Stop the command after this long (`90s`, `5m`) and report: for a service that never exits.
    #[arg(long = "for", value_name = "DURATION", value_parser = duration_text::parse)]
    pub run_for: Option<Duration>,
    /// Measure the CUDA context + framework runtime alone with a one-tensor script.
    #[arg(long, requires = "manifest", conflicts_with = "command")]
    pub baseline: bool,
    /// The stack whose library and Python `--baseline` uses.
    #[arg(long, value_name = "MANIFEST")]
    pub manifest: Option<PathBuf>,
    /// The command to measure, after `--`.
    #[arg(last = true, value_name = "CMD ARGS")]
    pub command: Vec<String>,
}

/// The `--json` document: the measurement, and the budget lines for a baseline.
#[derive(Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    memory: &'a CommandMemory,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<BaselineLines>,
    /// Why a `--baseline` run gives no budget lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_refused: Option<String>,
}

/// What `--baseline` feeds into `budget`.
#[derive(Clone, Serialize)]
struct BaselineLines {
    library: String,
    /// Context and runtime as one figure: from outside the split cannot be seen, and `budget`
    /// only adds them, so the whole figure goes into `context_mib` and `runtime_mib` is 0.
    context_mib: u64,
    runtime_mib: u64,
}

pub fn run(args: &MeasureArgs, global: &GlobalArgs) -> CmdResult {
    let _ = crate::exec::interrupt::on_ctrl_c("waiting for the command to finish");
    let system = RealSystem;
    let gpu_index = crate::host::gpu_in_use(&system, args.gpu);
    let smi = nvidia_smi::find(&system, false).map_err(|searched| {
        Failure::from(CliError::Failed(format!(
            "nvidia-smi was not found (looked in {}); install the NVIDIA driver or put nvidia-smi on PATH",
            searched
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )))
    })?;
    let (argv, mut env, log, library): (_, _, _, Option<&LibraryDescription>) = if args.baseline {
        let path = args.manifest.as_ref().ok_or_else(|| {
            Failure::from(CliError::Usage(
                "--baseline needs --manifest MANIFEST".to_string(),
            ))
        })?;
        let m = require_valid(path)?;
        let argv = measure::baseline_argv(&m)?;
        let library = measure::baseline_library(&m)?;
        let log = global
            .archive()
            .stack(&m.name)
            .logs_dir()
            .join(crate::exec::step::log_name("baseline"));
        (argv, stack_env(&m), log, Some(library))
    } else {
        if args.command.is_empty() {
            return Err(Failure::from(CliError::Usage("no command to measure; give it after `--`, e.g. `stackpin measure -- python3 serve.py`, or use --baseline --manifest M".to_string())));
        }
        let log = std::env::temp_dir().join(format!("stackpin-measure-{}.log", std::process::id()));
        (args.command.clone(), Vec::new(), log, None)
    };
    if args.gpu.is_some() {
        env.push(("CUDA_VISIBLE_DEVICES".into(), gpu_index.to_string()));
    }
    let request = MeasureRequest {
        argv,
        env,
        smi,
        gpu_index,
        log,
        timeout: args.run_for.unwrap_or(NO_LIMIT),
    };
    if !global.quiet && !global.json {
        eprintln!(
            "→ measuring on GPU {gpu_index}: {}",
            crate::exec::step::shell_words(&shown(&request.argv))
        );
    }
    // The command is never empty here (refused above), so every error `measure` returns is a
    // step outside stackpin that failed: its own status is 3.
    let mut memory = measure::measure(&request, &mut |_, _| {})?;
    memory.argv = shown(&memory.argv);
    let Some(library) = library else {
        print_report(&memory, None, None, global)?;
        return outcome(&memory, args.run_for.is_some());
    };
    // A baseline that failed is reported like any failed command (exit 3); one that ran is
    // judged: a tensor on the CPU or nothing measured is refused (exit 1), never a zero budget.
    if !ended_well(&memory, false) {
        print_report(&memory, None, None, global)?;
        return outcome(&memory, false);
    }
    let output = std::fs::read_to_string(&memory.log).unwrap_or_default();
    let report = measure::baseline_report(&output);
    match measure::judge_baseline(library, &memory, report.as_ref()) {
        Ok(mib) => {
            let lines = BaselineLines {
                library: library.name.clone(),
                context_mib: mib,
                runtime_mib: 0,
            };
            print_report(&memory, Some(&lines), None, global)?;
            Ok(Exit::Ok)
        }
        Err(refusal) => {
            print_report(&memory, None, Some(refusal.to_string()), global)?;
            Err(CliError::found(refusal).into())
        }
    }
}

fn print_report(
    memory: &CommandMemory,
    baseline: Option<&BaselineLines>,
    refused: Option<String>,
    global: &GlobalArgs,
) -> Result<(), Failure> {
    if global.json {
        print_json(&Report {
            memory,
            baseline: baseline.cloned(),
            baseline_refused: refused,
        })?;
    } else {
        print!("{}", render(memory, baseline));
    }
    Ok(())
}

/// The command as printed: the embedded probe script (a page of Python) by name only.
fn shown(argv: &[String]) -> Vec<String> {
    argv.iter()
        .map(|a| {
            if a == PROBE_SCRIPT {
                "<stackpin's library_probe.py>".to_string()
            } else {
                a.clone()
            }
        })
        .collect()
}

/// Whether the command ended well (or was stopped by `--for` on purpose).
fn ended_well(memory: &CommandMemory, stopped_on_purpose: bool) -> bool {
    match memory.status {
        StepStatus::Succeeded => true,
        StepStatus::TimedOut => stopped_on_purpose,
        StepStatus::RebootRequired | StepStatus::Failed | StepStatus::Interrupted => false,
    }
}

/// Exit 0 when the command ended well (or was stopped by `--for`) and memory was measured.
fn outcome(memory: &CommandMemory, stopped_on_purpose: bool) -> CmdResult {
    if !ended_well(memory, stopped_on_purpose) {
        return Err(Failure::from(CliError::Failed(format!(
            "the command {}; the figures above cover the run up to then; its output is in {}",
            match memory.exit_code {
                Some(code) => format!("exited with code {code}"),
                None => "was killed by a signal".to_string(),
            },
            memory.log.display()
        ))));
    }
    if memory.peak_mib.is_none() {
        return Err(Failure::from(CliError::Failed(format!(
            "no GPU memory was seen for the command on GPU {}: {}. Check that it uses that GPU (--gpu N)",
            memory.gpu_index,
            if memory.notes.is_empty() {
                "nvidia-smi listed none of its processes".to_string()
            } else {
                memory.notes.join("; ")
            }
        ))));
    }
    Ok(Exit::Ok)
}

fn mib(value: Option<u64>) -> String {
    value.map_or("—".to_string(), |v| v.to_string())
}

/// The human report: one row per process, the total, notes, and the budget lines.
fn render(m: &CommandMemory, baseline: Option<&BaselineLines>) -> String {
    let mut out = format!(
        "GPU {} memory of `{}` ({:.1} s, {}; {})\n",
        m.gpu_index,
        crate::exec::step::shell_words(&m.argv),
        m.duration_s,
        m.status.as_str(),
        source_words(m.source)
    );
    out.push_str(&format!(
        "  {:<12} {:>10} {:>20} {:>8}\n",
        "process", "peak MiB", "after warm-up MiB", "samples"
    ));
    for p in &m.processes {
        let label = format!("{}{}", p.pid, if p.root { " (cmd)" } else { "" });
        out.push_str(&format!(
            "  {:<12} {:>10} {:>20} {:>8}\n",
            label,
            p.peak_mib,
            mib(p.reserved_after_warmup_mib),
            p.samples
        ));
    }
    out.push_str(&format!(
        "  {:<12} {:>10} {:>20}\n",
        "all",
        mib(m.peak_mib),
        mib(m.reserved_after_warmup_mib)
    ));
    out.push_str("  (after warm-up = median of the last half of the samples)\n");
    for note in &m.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    if let Some(b) = baseline {
        out.push_str(&format!(
            "\n{} context + runtime, measured with {}: {} MiB. Paste into the budget file\n\
             (top level or per process; the split is not visible from outside, budget adds them):\n\
             context_mib: {}\nruntime_mib: {}\n",
            b.library,
            crate::compat::libraries()
                .describe(&b.library)
                .map_or("one tensor", |d| d.baseline.as_str()),
            b.context_mib,
            b.context_mib,
            b.runtime_mib
        ));
    }
    out.push_str(&format!("log: {}\n", m.log.display()));
    out
}

fn source_words(source: crate::record::MemorySource) -> &'static str {
    use crate::record::MemorySource as S;
    match source {
        S::PerProcess => "per process, nvidia-smi",
        S::WindowsCounter => "Windows GPU process counter",
        S::DeviceDelta => "the card's memory.used minus its idle baseline",
        S::Unmeasured => "not measured",
    }
}
