//! The terminal pieces the commands share: the archive's progress bars, the example's spinner,
//! the install runner's reporter, sizes and memory amounts as people read them, and the batch
//! plan's table. Command modules draw through these and never import one another for drawing.

mod bars;
mod batch_plan;
mod numbers;
mod reporter;
mod spinner;

pub(in crate::cli) use bars::Bars;
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
