//! Colour for errors, warnings and verdicts. `--color auto` (the default) colours only a
//! terminal and honours `NO_COLOR`; `always` and `never` are what they say. Everything coloured
//! is printed through anstream, which strips the codes where colour is off.

use anstyle::{AnsiColor, Style};

/// The `--color` flag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// Colour on a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Colour always, even into a pipe.
    Always,
    /// No colour.
    Never,
}

/// Sets the choice for every anstream writer of this process.
pub(in crate::cli) fn init_color(when: ColorWhen) {
    let choice = match when {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// `error:` in bold red.
pub(in crate::cli) fn error_label() -> String {
    paint(AnsiColor::Red.on_default().bold(), "error:")
}

/// `warning:` in bold yellow.
pub(in crate::cli) fn warning_label() -> String {
    paint(AnsiColor::Yellow.on_default().bold(), "warning:")
}

/// A verdict word coloured by what it means: red for failures and drift, yellow for warnings,
/// green for passes. Unknown words stay plain.
pub(in crate::cli) fn verdict(word: &str) -> String {
    let color = match word.trim().to_ascii_lowercase().as_str() {
        "fail" | "failed" | "drift" | "blocked" | "missing" | "corrupt" | "error" | "over"
        | "timed out" | "interrupted" | "refused" => AnsiColor::Red,
        "warn" | "warning" | "stale" | "unknown" | "skip" | "skipped" => AnsiColor::Yellow,
        "ok" | "pass" | "passed" | "proven" | "in place" | "holds" | "succeeded" => {
            AnsiColor::Green
        }
        "succeeded, reboot required" | "reboot required" => AnsiColor::Yellow,
        _ => return word.to_string(),
    };
    paint(color.on_default().bold(), word)
}
