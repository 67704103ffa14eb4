//! The terminal pieces the commands share: the archive's progress bars, the example's spinner,
//! the install runner's reporter, an archived file's line, sizes and memory amounts as people
//! read them, and the batch plan's table. Command modules draw through these and never import one another for drawing.

mod bars;
mod batch_plan;
pub mod closed_output;
mod color;
mod numbers;
mod reporter;
mod spinner;

pub(in crate::cli) use bars::Bars;
pub(in crate::cli) use batch_plan::render_batch_plan;
pub use color::ColorWhen;
pub(in crate::cli) use color::{error_label, init_color, verdict, warning_label};
pub(in crate::cli) use numbers::{amount, gib, grouped, mib};
pub(in crate::cli) use reporter::CliReporter;
pub(in crate::cli) use spinner::Spinner;

use crate::archive::{FetchedFile, FileOutcome};

/// One archived file as `fetch` and `up` list it: what the fetch did with it, then where it
/// lies, its size and its hash.
pub(in crate::cli) fn fetched_line(f: &FetchedFile) -> String {
    let what = match f.outcome {
        FileOutcome::AlreadyArchived => "archived",
        FileOutcome::Downloaded => "downloaded",
        FileOutcome::Mirror => "mirror",
        FileOutcome::Repaired => "repaired",
    };
    format!(
        "{what:<11} {}/{} ({}) sha256 {}",
        f.layer,
        f.file,
        size_text(f.size),
        f.sha256
    )
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

/// The width reports on stdout wrap to: `COLUMNS`, else the terminal's; `None` into a pipe or
/// a file without `COLUMNS`, so piped output keeps one fact per line for grep and log tools.
pub(in crate::cli) fn report_width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return Some(n.max(20));
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0).max(20))
}

/// `text` broken at spaces into lines of at most `width` columns; lines after the first start
/// with `indent`. A word longer than a line (a path, a hash) is split where the line ends.
pub(in crate::cli) fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let width = width.max(indent.chars().count() + 8);
    let lead: String = text.chars().take_while(|c| *c == ' ').collect();
    let mut lines = Vec::new();
    let mut line = lead.clone();
    let mut empty = true;
    for word in text.trim_start_matches(' ').split(' ') {
        let len = word.chars().count();
        let used = line.chars().count();
        let sep = usize::from(!empty);
        if !empty && used + sep + len > width {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        let mut rest: Vec<char> = word.chars().collect();
        while line.chars().count() + rest.len() > width {
            let room = width.saturating_sub(line.chars().count()).max(1);
            let head: String = rest.drain(..room.min(rest.len())).collect();
            line.push_str(&head);
            lines.push(std::mem::replace(&mut line, indent.to_string()));
        }
        line.extend(rest);
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Prints `text` on stdout, wrapped to the report width (see [`report_width`]) with `indent`
/// before continuation lines; colour codes pass through anstream.
pub(in crate::cli) fn say(text: &str, indent: &str) {
    let text = &super::hints::complete(text);
    match report_width() {
        Some(w) => {
            for line in wrap(text, w, indent) {
                anstream::println!("{line}");
            }
        }
        None => anstream::println!("{text}"),
    }
}

/// Like [`say`], with the first `word` of the first line coloured as a verdict.
pub(in crate::cli) fn say_verdict(text: &str, indent: &str, word: &str) {
    let text = &super::hints::complete(text);
    let lines = match report_width() {
        Some(w) => wrap(text, w, indent),
        None => vec![text.to_string()],
    };
    for (i, line) in lines.iter().enumerate() {
        if i == 0
            && let Some(at) = line.find(word)
            && !word.is_empty()
        {
            anstream::println!(
                "{}{}{}",
                &line[..at],
                verdict(word),
                &line[at + word.len()..]
            );
        } else {
            anstream::println!("{line}");
        }
    }
}

/// A borderless table (header, then rows) that fits `width` columns, cells wrapping inside
/// their column (`None`: a pipe, rows stay whole); each row's `verdict_col` cell is coloured
/// as a verdict.
pub(in crate::cli) fn table(
    header: &[&str],
    rows: &[Vec<String>],
    width: Option<usize>,
    verdict_col: Option<usize>,
) -> String {
    use comfy_table::{ContentArrangement, Table, presets::NOTHING};
    let mut t = Table::new();
    t.load_style(NOTHING).set_header(header.iter().copied());
    if let Some(width) = width {
        t.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    }
    for row in rows {
        t.add_row(row.iter().map(String::as_str));
    }
    let words: Vec<&str> = verdict_col
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(String::as_str)
                .collect()
        })
        .unwrap_or_default();
    let mut out = String::new();
    for line in t.lines() {
        let line = line.trim_end().to_string();
        let painted = words
            .iter()
            .find(|w| !w.is_empty() && line.contains(&format!(" {w} ")))
            .map_or(line.clone(), |w| {
                line.replacen(&format!(" {w} "), &format!(" {} ", verdict(w)), 1)
            });
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

/// Help text whose example commands survive clap's reflow at `width` columns: an example line
/// (`  stackpin …`, `  sudo stackpin …`) too long for the width is broken with shell line
/// continuations (` \`), so every piece still pastes as one command. Prose is left to clap.
pub(in crate::cli) fn examples_for_width(text: &str, width: usize) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        let body = line.trim_start();
        let example = line.starts_with("  ")
            && (body.starts_with("stackpin ") || body.starts_with("sudo stackpin "));
        if !example || line.chars().count() <= width {
            out.push(line.to_string());
            continue;
        }
        let lead = &line[..line.len() - body.len()];
        let indent = format!("{lead}    ");
        let mut current = lead.to_string();
        let mut empty = true;
        for word in body.split(' ') {
            // Room for the word and the " \" that continues the line.
            if !empty && current.chars().count() + 1 + word.chars().count() + 2 > width {
                out.push(format!("{current} \\"));
                current = indent.clone();
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current.push_str(word);
            empty = false;
        }
        out.push(current);
    }
    out.join("\n")
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

/// Text from outside stackpin (a log line, a data set's `sources`) as it may reach a terminal:
/// control characters, escape sequences among them, shown as `\x1b`-style escapes, so a log
/// cannot move the cursor, retitle the window or hide a line. Tabs stay.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn escape_sequences_from_outside_are_shown_not_obeyed() {
        assert_eq!(super::shown("plain\ttext"), "plain\ttext");
        assert_eq!(
            super::shown("ok\u{1b}]0;owned\u{7}\u{1b}[2Kgone\r"),
            "ok\\u{1b}]0;owned\\u{7}\\u{1b}[2Kgone\\r"
        );
    }
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

    #[test]
    fn wrapped_lines_fit_and_keep_every_word() {
        let text = "  fetched toolkit/cuda_12.4.1_550.54.15_linux.run (3.0 GiB) sha256 \
                    0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let lines = wrap(text, 30, "    ");
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:#?}");
        let joined: String = lines.concat().split_whitespace().collect();
        let want: String = text.split_whitespace().collect();
        assert_eq!(joined, want);
        assert!(lines[0].starts_with("  fetched"));
        assert!(lines[1].starts_with("    "));
        assert_eq!(wrap("short", 30, "  "), vec!["short".to_string()]);
    }

    #[test]
    fn long_examples_continue_with_a_backslash() {
        let help = "Examples:\n  sudo stackpin up manifests/torch-2.5.1-cu124-linux.yaml --yes --json\nprose";
        let out = examples_for_width(help, 50);
        assert!(out.lines().all(|l| l.chars().count() <= 50), "{out}");
        assert_eq!(
            out,
            "Examples:\n  sudo stackpin up \\\n      manifests/torch-2.5.1-cu124-linux.yaml \\\n      --yes --json\nprose"
        );
    }
}
