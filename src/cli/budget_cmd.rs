//! `stackpin budget FILE.yaml`: the inference memory budget as a table.
//!
//! Reads the file and prints; the arithmetic and the defaults (with their sources) live in
//! [`crate::budget`].

use std::path::PathBuf;

use anyhow::anyhow;

use super::term::{amount, gib, grouped, mib, print_report};
use super::{CliError, CmdResult, GlobalArgs, finish_report, print_json};
use crate::budget::{self, Budget, ModelBudget, Precision, ProcessBudget};

pub const EXAMPLES: &str = "\
Examples:
  stackpin budget examples/budget-two-cameras.yaml
  stackpin budget line-3.yaml --json

The file lists processes, each with its models (name, params like 5M or weights_mib, precision
fp32/fp16/bf16/int8, activations_mib at reference_input, optional input), optional measured
context_mib / runtime_mib / workspace_mib (top level or per process) and optional gpu_mib.
Defaults per process, replaced by measured values (`stackpin measure`):
  context_mib 300    CUDA context with lazy loading (CUDA >= 11.7): 256-300 MB measured
                     (pytorch PR #86509, pytorch#107667, InvokeAI#9413); eager/older: 0.6-1.7 GB
  runtime_mib 200    cuDNN/cuBLAS kernels and handles: the guide's 100-300 MB, middle
  workspace_mib 128  cuBLAS workspace (8.125 MiB per handle and stream), cuDNN workspaces and the
                     allocator's held blocks: a planning estimate, no published measurement
Card to plan for (the guide): (1,024 MiB per process + the models' weights and activations) x 2.

Exit 0 when the budget fits (or no gpu_mib is given), 1 when it exceeds gpu_mib, 2 on bad input.";

#[derive(Debug, clap::Args)]
pub struct BudgetArgs {
    /// The budget file (YAML).
    #[arg(value_name = "FILE.yaml")]
    pub file: PathBuf,
}

pub fn run(args: &BudgetArgs, global: &GlobalArgs) -> CmdResult {
    let text = crate::fsutil::read_text(&args.file).map_err(|e| {
        CliError::unusable(anyhow!(e).context(format!(
            "cannot read budget file {}; check the path",
            args.file.display()
        )))
    })?;
    let spec = budget::parse(&text, &args.file)?;
    let budget = budget::compute(&spec, &args.file)?;
    let over = budget.gpu.as_ref().is_some_and(|card| !card.fits);
    finish_report(
        global,
        !over,
        || print_json(&budget),
        || print_report(&render(&budget)),
    )
}

/// The human report: the table, then merging, the levers, and the card.
pub fn render(budget: &Budget) -> String {
    let mut out = format!(
        "{:<24} {:<9} {:>10} {:>11} {:>13} {:>11}\n",
        "process / model", "precision", "fixed", "weights", "activations", "total"
    );
    for process in &budget.processes {
        out.push_str(&process_rows(process));
    }
    out.push_str(&format!(
        "{:<24} {:<9} {:>10} {:>11} {:>13} {:>11}\n\n",
        "all processes",
        "",
        "",
        "",
        "",
        mib(budget.total_mib)
    ));
    out.push_str(&levers(budget));
    out.push_str(&card(budget));
    out.push_str(&fixed_cost_sources(budget));
    for warning in &budget.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

/// Where each fixed cost came from: the file (measured or typed), or stackpin's default.
fn fixed_cost_sources(budget: &Budget) -> String {
    let mut out = String::from("\nFixed costs per process:\n");
    for name in ["context_mib", "runtime_mib", "workspace_mib"] {
        // (value, default?) → processes, in order of first appearance.
        let mut groups: Vec<((String, bool), Vec<&str>)> = Vec::new();
        for p in &budget.processes {
            let value = match name {
                "context_mib" => p.context_mib,
                "runtime_mib" => p.runtime_mib,
                _ => p.workspace_mib,
            };
            let key = (mib(value), p.defaults_used.contains(&name));
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, names)) => names.push(&p.name),
                None => groups.push((key, vec![&p.name])),
            }
        }
        let several = groups.len() > 1;
        for ((value, default), names) in &groups {
            let source = if *default {
                "stackpin's default, not measured (sources in `stackpin budget --help`)"
            } else {
                "from the file"
            };
            let whom = if several {
                format!(" ({})", names.join(", "))
            } else {
                String::new()
            };
            out.push_str(&format!("  {name:<14} {value:>10}  {source}{whom}\n"));
        }
    }
    out
}

fn process_rows(process: &ProcessBudget) -> String {
    let mut out = format!(
        "{:<24} {:<9} {:>10} {:>11} {:>13} {:>11}  fixed = context {} + runtime {} + workspace {}\n",
        process.name,
        "",
        mib(process.fixed_mib),
        "",
        "",
        mib(process.total_mib),
        amount(process.context_mib),
        amount(process.runtime_mib),
        amount(process.workspace_mib)
    );
    for model in &process.models {
        out.push_str(&model_row(model));
    }
    out
}

fn model_row(model: &ModelBudget) -> String {
    let scaled = if (model.activation_scale - 1.0).abs() > 1e-9 {
        format!("  (× {} for the input area)", trim(model.activation_scale))
    } else {
        String::new()
    };
    format!(
        "  {:<22} {:<9} {:>10} {:>11} {:>13}{scaled}\n",
        model.name,
        precision_name(model.precision),
        "",
        mib(model.weights_mib),
        mib(model.activations_mib)
    )
}

fn levers(budget: &Budget) -> String {
    let share = |saving: f64| format!("{} %", grouped(saving * 100.0 / budget.total_mib, 0));
    let count = budget.processes.len();
    let mut out = String::from("What would save memory:\n");
    if count > 1 {
        out.push_str(&format!(
            "  all models in one process   {:>11}  ({} of the total; {} instead of {})\n",
            mib(budget.saving_mib),
            share(budget.saving_mib),
            mib(budget.one_process_total_mib),
            mib(budget.total_mib)
        ));
    } else {
        out.push_str("  one process already: no fixed cost to merge away\n");
    }
    if budget.levers.fp16_saving_mib > 0.0 {
        out.push_str(&format!(
            "  FP16 instead of FP32        {:>11}  ({})\n",
            mib(budget.levers.fp16_saving_mib),
            share(budget.levers.fp16_saving_mib)
        ));
    } else {
        out.push_str(&format!(
            "  FP16 instead of FP32        {:>11}  (already: no model is FP32)\n",
            "—"
        ));
    }
    out.push_str(&format!(
        "  half the input side         {:>11}  ({})\n\n",
        mib(budget.levers.half_input_side_saving_mib),
        share(budget.levers.half_input_side_saving_mib)
    ));
    out
}

fn card(budget: &Budget) -> String {
    let count = budget.processes.len();
    let models: f64 = budget
        .processes
        .iter()
        .flat_map(|p| &p.models)
        .map(|m| m.weights_mib + m.activations_mib)
        .sum();
    let mut out = format!(
        "Card to plan for: {} ({}) = ({} × {} {} + {} of models) × {}",
        mib(budget.recommended_gpu_mib),
        gib(budget.recommended_gpu_mib),
        grouped(budget::PLANNING_MIB_PER_PROCESS, 0),
        count,
        if count == 1 { "process" } else { "processes" },
        mib(models),
        grouped(budget::PLANNING_FACTOR, 0)
    );
    if count > 1 {
        out.push_str(&format!(
            "; in one process {}",
            mib(budget.one_process_recommended_gpu_mib)
        ));
    }
    out.push('\n');
    if let Some(card) = &budget.gpu {
        let verdict = match (card.fits, card.meets_recommendation) {
            (false, _) => "does NOT fit: the processes need more than the card has",
            (true, false) => {
                "fits, but below the card to plan for: little room for the \
                              allocator's growth or anything else on the card"
            }
            (true, true) => "fits, with the recommended headroom",
        };
        out.push_str(&format!(
            "Card {}: the budget uses {} ({}); {verdict}\n",
            mib(card.gpu_mib),
            mib(budget.total_mib),
            format_args!("{} %", grouped(card.percent, 0)),
        ));
    }
    out
}

fn precision_name(precision: Precision) -> &'static str {
    match precision {
        Precision::Fp32 => "fp32",
        Precision::Fp16 => "fp16",
        Precision::Bf16 => "bf16",
        Precision::Int8 => "int8",
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_states_the_defaults_the_arithmetic_uses() {
        for (name, value) in [
            ("context_mib", budget::DEFAULT_CONTEXT_MIB),
            ("runtime_mib", budget::DEFAULT_RUNTIME_MIB),
            ("workspace_mib", budget::DEFAULT_WORKSPACE_MIB),
        ] {
            assert!(
                EXAMPLES.contains(&format!("{name} {value}")),
                "help must say {name} {value}"
            );
        }
    }
}
