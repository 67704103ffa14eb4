//! The batch plan as people read it: what was measured, the card, the rule, a table with a
//! bar per batch showing its share of the card and the line marked, and the answer. `vram`
//! prints it alone, `prove` after a proven run.

use super::numbers::{amount, gib, grouped, mib};
use crate::vram::{BatchPlan, Rule};

/// The whole human report: what was measured, the card, the rule, the table, the answer.
pub(in crate::cli) fn render_batch_plan(plan: &BatchPlan) -> String {
    let mut out = String::new();
    let mut row = |label: &str, text: String| out.push_str(&format!("{label:<10} {text}\n"));
    let points: Vec<String> = plan
        .measurements
        .iter()
        .map(|m| format!("batch {} peaked at {}", m.batch, mib(m.peak_mib)))
        .collect();
    row("Measured", points.join("; "));
    let slot_peak = plan.per_sample_mib * f64::from(plan.slot_batch);
    row(
        "Slot",
        format!(
            "{} ÷ {} = {} per sample{}",
            mib(slot_peak),
            plan.slot_batch,
            mib(plan.per_sample_mib),
            if plan.rule == Rule::LeastSquares {
                " (the largest measured slot: the pessimistic bound)"
            } else {
                ""
            }
        ),
    );
    if let (Some(dataset), Some(inflation)) = (plan.dataset_mib, plan.inflation) {
        row(
            "Dataset",
            format!(
                "{}: the peak is ≈{}× the dataset",
                mib(dataset),
                grouped(inflation, 0)
            ),
        );
    }
    row(
        "Card",
        format!(
            "{} ({}); the {} % line is {} ({})",
            mib(plan.vram_mib),
            gib(plan.vram_mib),
            grouped(plan.line * 100.0, 0),
            mib(plan.line_mib),
            gib(plan.line_mib)
        ),
    );
    match &plan.fit {
        None => row(
            "Rule",
            format!("one point: peak × batch ÷ {}", plan.slot_batch),
        ),
        Some(fit) => row(
            "Rule",
            format!(
                "least-squares fit over {} points: {} fixed + {} × batch (largest residual {}); \
                 the one-point rule is shown as the pessimistic bound",
                plan.measurements.len(),
                mib(fit.fixed_mib),
                mib(fit.per_sample_mib),
                mib(fit.max_residual_mib)
            ),
        ),
    }
    out.push('\n');
    out.push_str(&table(plan));
    out.push('\n');
    out.push_str(&answer(plan));
    for note in &plan.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

fn table(plan: &BatchPlan) -> String {
    let fitted = plan.rule == Rule::LeastSquares;
    let mut out = format!(
        "{:>6}  {:>11}  {:>10}  {:>5}  {:<BAR_WIDTH$}  {}\n",
        "batch",
        if fitted { "fit peak" } else { "peak" },
        "(GiB)",
        "card",
        bar_legend(plan.line),
        if fitted {
            "verdict          one-point bound"
        } else {
            "verdict"
        },
    );
    for p in &plan.predictions {
        let mut line = format!(
            "{:>6}  {:>11}  {:>10}  {:>5}  {}  {:<13}",
            p.batch,
            mib(p.peak_mib),
            gib(p.peak_mib),
            percent(p.percent),
            bar(p.percent, plan.line),
            p.verdict.words()
        );
        if let Some(b) = &p.bound {
            line.push_str(&format!(
                "    {:>11} {:>5}  {}",
                mib(b.peak_mib),
                percent(b.percent),
                b.verdict.words()
            ));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn answer(plan: &BatchPlan) -> String {
    let chosen = |safe: Option<u32>| match safe {
        Some(b) => format!("{b}, the largest configured batch that fits"),
        None => "no configured batch is that small".to_string(),
    };
    let how = match &plan.fit {
        None => format!(
            "{} × {} ÷ {}",
            plan.slot_batch,
            amount(plan.line_mib),
            amount(plan.per_sample_mib * f64::from(plan.slot_batch))
        ),
        Some(fit) => format!(
            "({} − {}) ÷ {}",
            amount(plan.line_mib),
            amount(fit.fixed_mib),
            amount(fit.per_sample_mib)
        ),
    };
    let mut out = format!(
        "Largest batch under the line: {how} = {} → {}\n",
        grouped(plan.largest_raw, 1),
        chosen(plan.largest_safe_batch)
    );
    if let Some(bound) = &plan.bound {
        out.push_str(&format!(
            "By the one-point bound instead:  {} → {}\n",
            grouped(bound.largest_raw, 1),
            chosen(bound.largest_safe_batch)
        ));
    }
    out
}

/// Cells in a bar: each is 5 % of the card.
const BAR_CELLS: usize = 20;
/// The bar's printed width: the cells, the line marker and the overflow mark.
const BAR_WIDTH: usize = BAR_CELLS + 2;

/// `█████████···│····` : the share of the card filled, `│` where the line is, `▸` past 100 %.
fn bar(percent: f64, line: f64) -> String {
    let filled = cells(percent / 100.0);
    let marker = cells(line);
    let mut out = String::new();
    for i in 0..BAR_CELLS {
        if i == marker {
            out.push('│');
        }
        out.push(if i < filled { '█' } else { '·' });
    }
    if marker >= BAR_CELLS {
        out.push('│');
    }
    out.push(if percent > 100.0 { '▸' } else { ' ' });
    out
}

fn bar_legend(line: f64) -> String {
    format!("share (│ = {} % line)", grouped(line * 100.0, 0))
}

fn cells(fraction: f64) -> usize {
    // Clamped, so a negative or absurd share still draws a bar of the right width.
    (fraction * BAR_CELLS as f64)
        .round()
        .clamp(0.0, BAR_CELLS as f64) as usize
}

fn percent(value: f64) -> String {
    format!("{} %", grouped(value, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_marks_the_line_and_fills_the_share() {
        assert_eq!(bar(75.0, 0.8), "███████████████·│···· ");
        assert_eq!(bar(100.0, 0.8), "████████████████│████ ");
        assert_eq!(bar(125.0, 0.8), "████████████████│████▸");
        assert_eq!(bar(0.0, 1.0), "····················│ ");
    }
}
