//! The archive's progress events drawn with indicatif, shared by `fetch`, `audit`, `bundle`,
//! `unbundle`, `up` and `repair`.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::archive::Progress;
use crate::cli::GlobalArgs;

/// The archive's progress events drawn with indicatif: one bar per file and a total. No bars
/// when stderr is not a terminal, with `--quiet` or with `--json`; notes still go to stderr
/// unless `--quiet` or `--json`.
pub(in crate::cli) struct Bars {
    multi: Option<MultiProgress>,
    total: Option<ProgressBar>,
    bars: Mutex<HashMap<String, ProgressBar>>,
    notes: bool,
}

impl Bars {
    pub(in crate::cli) fn new(global: &GlobalArgs) -> Self {
        let notes = !global.quiet && !global.json;
        let draw = notes && std::io::stderr().is_terminal();
        let multi = draw.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let total = multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(style(
                "total {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            ));
            bar
        });
        Self {
            multi,
            total,
            bars: Mutex::new(HashMap::new()),
            notes,
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
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl Progress for Bars {
    fn started(&self, file: &str, total: Option<u64>) {
        let (Some(multi), Ok(mut bars)) = (&self.multi, self.bars.lock()) else {
            return;
        };
        let bar = multi.insert_before(
            self.total.as_ref().unwrap_or(&ProgressBar::hidden()),
            ProgressBar::new(total.unwrap_or(0)),
        );
        bar.set_style(style(
            "{msg:40!} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        ));
        bar.set_message(file.to_string());
        if let (Some(t), Some(n)) = (&self.total, total) {
            t.inc_length(n);
        }
        if let Some(old) = bars.insert(file.to_string(), bar) {
            old.finish_and_clear();
        }
    }

    fn advanced(&self, file: &str, bytes: u64) {
        if let Ok(bars) = self.bars.lock()
            && let Some(bar) = bars.get(file)
        {
            bar.inc(bytes);
            if let Some(t) = &self.total {
                t.inc(bytes);
            }
        }
    }

    fn finished(&self, file: &str) {
        if let Ok(mut bars) = self.bars.lock()
            && let Some(bar) = bars.remove(file)
        {
            bar.finish_and_clear();
        }
    }

    fn note(&self, text: &str) {
        if !self.notes {
            return;
        }
        match &self.multi {
            Some(m) => {
                let _ = m.println(format!("note: {text}"));
            }
            None => eprintln!("note: {text}"),
        }
    }
}
