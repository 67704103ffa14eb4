//! The terminal pieces the commands share: the archive's progress bars, the example's spinner,
//! the install runner's reporter, sizes and memory amounts as people read them, and the batch
//! plan's table. Command modules draw through these and never import one another for drawing.

mod bars;
mod batch_plan;
mod color;
mod numbers;
mod reporter;
mod spinner;

pub(in crate::cli) use bars::Bars;
pub use color::ColorWhen;
pub(in crate::cli) use color::{error_label, init_color, verdict, warning_label};
pub(in crate::cli) use batch_plan::render_batch_plan;
pub(in crate::cli) use numbers::{amount, gib, grouped, mib};
pub(in crate::cli) use reporter::CliReporter;
pub(in crate::cli) use spinner::Spinner;

use super::Failure;
use crate::archive::ArchiveError;

/// The archive error with the exit status it knows (`crate::exit`): content problems 1,
/// unreadable input 2, the rest 3.
pub(in crate::cli) fn failure(e: ArchiveError) -> Failure {
    Failure::from(e)
}

/// Sizes the way users read them.
pub(in crate::cli) fn size_text(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= 1024.0 * MIB {
        format!("{:.2} GiB", bytes as f64 / (1024.0 * MIB))
    } else if bytes as f64 >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{bytes} B")
    }
}

/// Prints a finished report on stdout. A reader that went away (`| head`) is not an error
/// worth a panic: the report was for them.
pub(in crate::cli) fn print_report(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// The columns output may use: `COLUMNS`, else the terminal's width, else 100 (a log file or
/// a pipe has no width; 100 reads well in CI logs).
pub(in crate::cli) fn width() -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n.max(20);
    }
    terminal_size::terminal_size_of(std::io::stderr())
        .or_else(|| terminal_size::terminal_size_of(std::io::stdout()))
        .map_or(100, |(w, _)| usize::from(w.0).max(20))
}

/// `text` cut to `width` columns (characters), with `…` where it was cut.
pub(in crate::cli) fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `4s`, `3m 10s`, `1h 02m`: to the second, never finer.
pub(in crate::cli) fn duration_text(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `12.0 MiB/s`.
pub(in crate::cli) fn rate_text(bytes_per_sec: f64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes_per_sec >= MIB {
        format!("{:.1} MiB/s", bytes_per_sec / MIB)
    } else if bytes_per_sec >= 1024.0 {
        format!("{:.1} KiB/s", bytes_per_sec / 1024.0)
    } else {
        format!("{bytes_per_sec:.0} B/s")
    }
}

/// A timestamp as people read it: to the second, UTC (`2026-12-01 07:50:33 UTC`). Text that
/// is not a timestamp is shown as it is.
pub(in crate::cli) fn timestamp_text(text: &str) -> String {
    match text.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_to_the_second() {
        assert_eq!(
            timestamp_text("2026-12-01T07:50:33.123456789Z"),
            "2026-12-01 07:50:33 UTC"
        );
        assert_eq!(timestamp_text("yesterday"), "yesterday");
        assert_eq!(duration_text(std::time::Duration::from_secs(190)), "3m 10s");
        assert_eq!(fit("abcdef", 4), "abc…");
    }
}
