//! The memory report as text: the batch table with a bar per batch showing its share of the card
//! and the line marked, and the number formatting every memory command shares (`mib`, `gib`,
//! `grouped`). Used by `vram`, `prove`, `up` and `budget`; numbers come from [`crate::vram`].

use crate::vram::{BatchPlan, Rule};

/// Prints a finished report on stdout. A reader that went away (`| head`) is not an error
/// worth a panic: the report was for them.
pub fn print_report(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// The whole human report: what was measured, the card, the rule, the table, the answer.
pub fn render(plan: &BatchPlan) -> String {
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

/// `2,560 MiB`, `1,375.1 MiB`, `34.375 MiB`.
pub fn mib(value: f64) -> String {
    format!("{} MiB", amount(value))
}

/// `2,560`, `1,375.1`, `34.375`: whole numbers bare, one decimal from 100 up, up to three
/// below, trailing zeros dropped.
pub fn amount(value: f64) -> String {
    let decimals = if value.abs() >= 100.0 { 1 } else { 3 };
    let text = grouped(value, decimals);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `3.75 GiB`: two decimals, the way GPU tools print gigabytes.
pub fn gib(value: f64) -> String {
    format!("{} GiB", grouped(value / 1024.0, 2))
}

/// `1,234.5`: thousands grouped with commas, as the guide writes them.
pub fn grouped(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut out = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(fraction);
    }
    // "-0" after rounding a tiny negative is still zero.
    if value < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
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

    #[test]
    fn numbers_are_grouped_like_the_guide_writes_them() {
        assert_eq!(grouped(2560.0, 0), "2,560");
        assert_eq!(grouped(1_234_567.25, 2), "1,234,567.25");
        assert_eq!(grouped(102.4, 1), "102.4");
        assert_eq!(grouped(-300.0, 0), "-300");
        assert_eq!(grouped(-0.0001, 1), "0.0");
        assert_eq!(mib(34.375), "34.375 MiB");
        assert_eq!(mib(2560.0), "2,560 MiB");
        assert_eq!(mib(9.5367), "9.537 MiB");
        assert_eq!(amount(4096.0), "4,096");
        assert_eq!(amount(300.0), "300");
        assert_eq!(gib(3840.0), "3.75 GiB");
    }
}
