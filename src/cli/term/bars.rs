//! The archive's progress events drawn for people, shared by `fetch`, `audit`, `bundle`,
//! `unbundle`, `up` and `repair`.
//!
//! On a terminal: one indicatif bar per file, sized to the width, and a total line over every
//! planned file (not only the started ones). Rates count only bytes moved in this run: a
//! resumed partial's bytes count toward the size, never toward the speed. Without a terminal
//! (CI, Ansible): one line per archived file and a heartbeat every 10 s, so a multi-GB fetch
//! is never silent. `--quiet` and `--json` draw nothing.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{duration_text, fit, rate_text, size_text, width};
use crate::archive::Progress;
use crate::cli::GlobalArgs;

/// How often a line is written during long work when stderr is not a terminal.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// One file's numbers.
#[derive(Debug, Default, Clone)]
struct FileState {
    total: Option<u64>,
    /// Bytes of the file that are in place (resumed ones included).
    position: u64,
    /// Bytes that were already on disk when this run started on the file.
    resumed: u64,
    started: Option<Instant>,
    in_flight: bool,
    archived: bool,
}

impl FileState {
    /// Bytes moved by this run.
    fn new_bytes(&self) -> u64 {
        self.position.saturating_sub(self.resumed)
    }
}

/// The numbers behind every line the bars draw; kept apart from drawing so they can be tested.
#[derive(Debug)]
pub(in crate::cli) struct Tally {
    files: HashMap<String, FileState>,
    /// Planned files in order (labels); files outside the plan (pip) are added when started.
    order: Vec<String>,
    began: Instant,
    last_beat: Instant,
}

impl Tally {
    fn new(now: Instant) -> Self {
        Self {
            files: HashMap::new(),
            order: Vec::new(),
            began: now,
            last_beat: now,
        }
    }

    fn entry(&mut self, file: &str) -> &mut FileState {
        if !self.files.contains_key(file) {
            self.order.push(file.to_string());
        }
        self.files.entry(file.to_string()).or_default()
    }

    /// Total bytes over every file, and whether every size is known.
    fn total(&self) -> (u64, bool) {
        let mut sum = 0;
        let mut all = true;
        for f in self.files.values() {
            match f.total {
                Some(n) => sum += n,
                None if f.archived => sum += f.position,
                None => all = false,
            }
        }
        (sum, all)
    }

    fn position(&self) -> u64 {
        self.files.values().map(|f| f.position).sum()
    }

    /// Bytes per second over the bytes this run moved (resumed ones excluded).
    fn rate(&self, now: Instant) -> Option<f64> {
        let new: u64 = self.files.values().map(FileState::new_bytes).sum();
        let secs = now.duration_since(self.began).as_secs_f64();
        (new > 0 && secs > 0.0).then(|| new as f64 / secs)
    }

    fn done_files(&self) -> usize {
        self.files.values().filter(|f| f.archived).count()
    }

    /// `1.2 GiB of 3.4 GiB, 2/5 files, 12.0 MiB/s, eta 3m 10s`: the ETA only once every
    /// file's size is known (an unknown size would make it a guess).
    pub(in crate::cli) fn summary(&self, now: Instant) -> String {
        let (total, all_known) = self.total();
        let position = self.position();
        let rate = self.rate(now);
        let of = if all_known {
            size_text(total)
        } else {
            format!("{}+", size_text(total))
        };
        let eta = match rate {
            Some(r) if all_known && total >= position => {
                duration_text(Duration::from_secs_f64((total - position) as f64 / r))
            }
            _ => "?".to_string(),
        };
        format!(
            "{} of {of}, {}/{} files, {}, eta {eta}",
            size_text(position),
            self.done_files(),
            self.files.len(),
            rate.map_or("—".to_string(), rate_text)
        )
    }

    /// The line for a file that is now archived: its size, and what this run moved at what rate.
    pub(in crate::cli) fn archived_line(&self, file: &str, bytes: u64, now: Instant) -> String {
        let done = self.done_files();
        let count = self.files.len();
        let Some(f) = self.files.get(file) else {
            return format!("archived {file} ({}) [{done}/{count}]", size_text(bytes));
        };
        let Some(started) = f.started else {
            return format!(
                "archived {file} ({}, already here) [{done}/{count}]",
                size_text(bytes)
            );
        };
        let secs = now.duration_since(started).as_secs_f64();
        let new = f.new_bytes();
        let rate = if secs > 0.0 {
            rate_text(new as f64 / secs)
        } else {
            "—".to_string()
        };
        let resumed = if f.resumed > 0 {
            format!(
                ", resumed at {}: {} new",
                size_text(f.resumed),
                size_text(new)
            )
        } else {
            String::new()
        };
        format!(
            "fetched {file} ({}{resumed} in {}, {rate}) [{done}/{count}]",
            size_text(bytes),
            duration_text(Duration::from_secs_f64(secs))
        )
    }

    /// The heartbeat line when one is due (every [`HEARTBEAT`]), for logs without a terminal.
    fn heartbeat(&mut self, now: Instant) -> Option<String> {
        if now.duration_since(self.last_beat) < HEARTBEAT {
            return None;
        }
        self.last_beat = now;
        Some(format!("still fetching: {}", self.summary(now)))
    }

    /// Downloads cut short: each with the bytes on disk.
    fn in_flight(&self) -> Vec<(String, u64, Option<u64>)> {
        self.order
            .iter()
            .filter_map(|l| self.files.get(l).map(|f| (l, f)))
            .filter(|(_, f)| f.in_flight && !f.archived)
            .map(|(l, f)| (l.clone(), f.position, f.total))
            .collect()
    }
}

/// The archive's progress events, drawn (see the module header).
pub(in crate::cli) struct Bars {
    multi: Option<MultiProgress>,
    total: Option<ProgressBar>,
    bars: Mutex<HashMap<String, ProgressBar>>,
    tally: Arc<Mutex<Tally>>,
    /// Lines without a terminal (per archived file, heartbeats).
    lines: bool,
    notes: bool,
    width: usize,
}

impl Bars {
    pub(in crate::cli) fn new(global: &GlobalArgs) -> Self {
        let notes = !global.quiet && !global.json;
        let draw = notes && std::io::stderr().is_terminal();
        let width = width();
        let multi = draw.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let total = multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(style("{msg}"));
            bar
        });
        Self {
            multi,
            total,
            bars: Mutex::new(HashMap::new()),
            tally: Arc::new(Mutex::new(Tally::new(Instant::now()))),
            lines: notes && !draw,
            notes,
            width,
        }
    }

    /// Removes the bars before the summary is printed.
    pub(in crate::cli) fn clear(&self) {
        if let Some(total) = &self.total {
            total.finish_and_clear();
        }
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }

    /// The lines a Ctrl-C leaves: which partial downloads stay in `stack` for the next fetch.
    pub(in crate::cli) fn kept_lines(&self, stack: &std::path::Path) -> Vec<String> {
        let Ok(tally) = self.tally.lock() else {
            return Vec::new();
        };
        tally
            .in_flight()
            .into_iter()
            .filter(|(_, bytes, _)| *bytes > 0)
            .map(|(file, bytes, total)| {
                let of = total.map_or(String::new(), |t| format!(" of {}", size_text(t)));
                format!(
                    "interrupted: kept {} ({}{of}); the next `stackpin fetch` resumes it",
                    stack.join(format!("{file}.partial")).display(),
                    size_text(bytes)
                )
            })
            .collect()
    }

    /// True while pip runs: its child stops on the second Ctrl-C by itself (`archive::pip`).
    fn pip_running(&self) -> bool {
        self.tally.lock().is_ok_and(|t| {
            t.in_flight()
                .iter()
                .any(|(l, _, _)| l == crate::archive::PIP_LABEL)
        })
    }

    /// Runs `work` (a fetch into `stack`) and, on Ctrl-C while downloads run, says which
    /// partials are kept for the next fetch and ends the process (exit 3, as a failed
    /// download does). During `pip download` Ctrl-C keeps its own two-press meaning.
    pub(in crate::cli) fn on_interrupt<T>(
        &self,
        stack: &std::path::Path,
        work: impl FnOnce() -> T,
    ) -> T {
        use std::sync::atomic::{AtomicBool, Ordering};
        let pressed = crate::exec::interrupt::on_ctrl_c(
            // `up` and `repair` go on to install in this process, under this same handler.
            "stopping after the running step (a cut download keeps its partial for the next fetch)",
        );
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::SeqCst) {
                    if pressed.load(Ordering::SeqCst) && !self.pip_running() {
                        let lines = self.kept_lines(stack);
                        self.clear();
                        for line in &lines {
                            anstream::eprintln!("{line}");
                        }
                        release_busy_marker(stack);
                        let kept = if lines.is_empty() {
                            String::new()
                        } else {
                            format!("; {} partial download(s) kept for it", lines.len())
                        };
                        crate::cli::exit_interrupted(format!(
                            "the fetch was interrupted (Ctrl-C or SIGTERM) and stopped; run the same `stackpin fetch` again to finish it{kept}"
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
            let out = work();
            done.store(true, Ordering::SeqCst);
            out
        })
    }

    fn say(&self, line: &str) {
        match &self.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            // A log line: whole, unless COLUMNS or a terminal gives a width to keep to.
            None => match super::report_width() {
                Some(w) => {
                    for part in super::wrap(line, w, "    ") {
                        anstream::eprintln!("{part}");
                    }
                }
                None => anstream::eprintln!("{line}"),
            },
        }
    }

    fn redraw_total(&self, tally: &Tally, now: Instant) {
        if let Some(t) = &self.total {
            t.set_message(fit(&format!("total {}", tally.summary(now)), self.width));
        }
    }

    /// The per-file bar's template for this width: name, bar, then our own numbers.
    fn file_style(&self) -> ProgressStyle {
        // " [", "] " and our numbers: up to 35 columns ("1023.9 MiB/1023.99 GiB 1023.9 MiB/s").
        let room = self.width.saturating_sub(40);
        let name = (room * 6 / 10).clamp(8, 40);
        let bar = room.saturating_sub(name).clamp(3, 30);
        style(&format!("{{msg:{name}!}} [{{bar:{bar}}}] {{prefix}}"))
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl Progress for Bars {
    fn planned(&self, files: &[(String, Option<u64>)]) {
        if let Ok(mut tally) = self.tally.lock() {
            for (file, size) in files {
                tally.entry(file).total = *size;
            }
            self.redraw_total(&tally, Instant::now());
        }
    }

    fn started(&self, file: &str, total: Option<u64>) {
        let now = Instant::now();
        if let Ok(mut tally) = self.tally.lock() {
            let f = tally.entry(file);
            // A restarted attempt (mirror, then the original) starts the file's count afresh.
            *f = FileState {
                total: total.or(f.total),
                started: Some(now),
                in_flight: true,
                ..FileState::default()
            };
            self.redraw_total(&tally, now);
        }
        let (Some(multi), Ok(mut bars)) = (&self.multi, self.bars.lock()) else {
            return;
        };
        let bar = multi.insert_before(
            self.total.as_ref().unwrap_or(&ProgressBar::hidden()),
            ProgressBar::new(total.unwrap_or(0)),
        );
        bar.set_style(self.file_style());
        bar.set_message(file.to_string());
        if let Some(old) = bars.insert(file.to_string(), bar) {
            old.finish_and_clear();
        }
    }

    fn resumed(&self, file: &str, bytes: u64) {
        if let Ok(mut tally) = self.tally.lock() {
            let f = tally.entry(file);
            f.position += bytes;
            f.resumed += bytes;
        }
        if let Ok(bars) = self.bars.lock()
            && let Some(bar) = bars.get(file)
        {
            bar.set_position(bytes);
        }
    }

    fn advanced(&self, file: &str, bytes: u64) {
        let now = Instant::now();
        let Ok(mut tally) = self.tally.lock() else {
            return;
        };
        let f = tally.entry(file);
        f.position += bytes;
        let (position, total, new, started) = (f.position, f.total, f.new_bytes(), f.started);
        if let Ok(bars) = self.bars.lock()
            && let Some(bar) = bars.get(file)
        {
            bar.set_position(position);
            let secs = started.map_or(0.0, |s| now.duration_since(s).as_secs_f64());
            let rate = if secs > 0.0 {
                rate_text(new as f64 / secs)
            } else {
                String::new()
            };
            let of = total.map_or(String::new(), |t| format!("/{}", size_text(t)));
            bar.set_prefix(format!("{}{of} {rate}", size_text(position)));
        }
        self.redraw_total(&tally, now);
        if self.lines
            && let Some(line) = tally.heartbeat(now)
        {
            drop(tally);
            self.say(&line);
        }
    }

    fn finished(&self, file: &str) {
        if let Ok(mut tally) = self.tally.lock() {
            tally.entry(file).in_flight = false;
        }
        if let Ok(mut bars) = self.bars.lock()
            && let Some(bar) = bars.remove(file)
        {
            bar.finish_and_clear();
        }
    }

    fn archived(&self, file: &str, bytes: u64) {
        let now = Instant::now();
        let Ok(mut tally) = self.tally.lock() else {
            return;
        };
        let f = tally.entry(file);
        f.archived = true;
        f.in_flight = false;
        f.total = Some(bytes);
        f.position = bytes;
        self.redraw_total(&tally, now);
        if self.lines {
            let line = tally.archived_line(file, bytes, now);
            drop(tally);
            self.say(&line);
        }
    }

    fn note(&self, text: &str) {
        if self.notes {
            self.say(&format!("note: {text}"));
        }
    }
}

/// Removes the stack's busy marker when this process wrote it (it holds the stack), since
/// exiting from the watcher skips the lock's own cleanup; a marker another fetch holds (this
/// one was still waiting for it) stays.
fn release_busy_marker(stack: &std::path::Path) {
    let marker = stack.join(".stackpin-busy");
    let ours = format!("pid {}", std::process::id());
    if std::fs::read_to_string(&marker).is_ok_and(|text| text.trim() == ours) {
        let _ = std::fs::remove_file(&marker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_total_counts_files_not_yet_started_and_waits_for_their_sizes() {
        let t0 = Instant::now();
        let mut tally = Tally::new(t0);
        tally.entry("driver/a.run").total = Some(10 * MIB);
        tally.entry("toolkit/b.run").total = None;
        tally.entry("driver/a.run").started = Some(t0);
        tally.entry("driver/a.run").position = 5 * MIB;
        let text = tally.summary(t0 + Duration::from_secs(1));
        assert!(text.contains("0/2 files"), "{text}");
        assert!(text.contains("of 10.0 MiB+"), "{text}");
        assert!(text.ends_with("eta ?"), "{text}");
        tally.entry("toolkit/b.run").total = Some(10 * MIB);
        let text = tally.summary(t0 + Duration::from_secs(1));
        // 15 MiB left at 5 MiB/s.
        assert!(text.contains("5.0 MiB/s, eta 3s"), "{text}");
    }

    #[test]
    fn a_heartbeat_every_ten_seconds_and_no_more() {
        let t0 = Instant::now();
        let mut tally = Tally::new(t0);
        tally.entry("toolkit/b.run").total = Some(10 * MIB);
        assert_eq!(tally.heartbeat(t0 + Duration::from_secs(9)), None);
        let beat = tally.heartbeat(t0 + Duration::from_secs(10));
        assert!(
            beat.as_deref()
                .is_some_and(|b| b.starts_with("still fetching: 0 B of 10.0 MiB, 0/1 files")),
            "{beat:?}"
        );
        assert_eq!(tally.heartbeat(t0 + Duration::from_secs(15)), None);
        assert!(tally.heartbeat(t0 + Duration::from_secs(20)).is_some());
    }

    #[test]
    fn resumed_bytes_are_no_speed() {
        let t0 = Instant::now();
        let mut tally = Tally::new(t0);
        let f = tally.entry("toolkit/b.run");
        f.total = Some(300 * MIB);
        f.started = Some(t0);
        f.resumed = 277 * MIB;
        f.position = 277 * MIB + 2 * MIB;
        let later = t0 + Duration::from_secs(2);
        let summary = tally.summary(later);
        assert!(summary.contains("1.0 MiB/s"), "{summary}");
        tally.entry("toolkit/b.run").archived = true;
        let line = tally.archived_line("toolkit/b.run", 300 * MIB, later);
        assert!(line.contains("resumed at 277.0 MiB: 2.0 MiB new"), "{line}");
        assert!(line.contains("1.0 MiB/s"), "{line}");
        assert!(
            !line.contains("277.0 MiB/s") && !line.contains("139"),
            "{line}"
        );
    }
}
