//! The example's run drawn as a spinner with its elapsed time and GPU memory (`prove`, `up`,
//! `repair`); plain lines on stderr without a terminal.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::GlobalArgs;
use crate::prove::run::ProveReporter;

/// The prove reporter the CLI draws with.
pub(in crate::cli) struct Spinner {
    bar: Option<ProgressBar>,
}

impl Spinner {
    pub(in crate::cli) fn new(global: &GlobalArgs) -> Self {
        let visible =
            !global.quiet && !global.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = visible.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Self { bar }
    }
}

impl ProveReporter for Spinner {
    fn run_started(&self, batch: u32, argv: &[String]) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("batch {batch}: starting {}", argv.join(" "))),
            None => eprintln!("→ example at batch {batch}: {}", argv.join(" ")),
        }
    }
    fn tick(&self, batch: u32, elapsed: Duration, current_mib: Option<u64>) {
        if let Some(bar) = &self.bar {
            let mem = current_mib.map_or("—".to_string(), |m| format!("{m} MiB"));
            bar.set_message(format!(
                "batch {batch}: {:>5.1}s  GPU memory {mem}",
                elapsed.as_secs_f64()
            ));
        }
    }
    fn run_finished(&self, batch: u32, peak: Option<f64>) {
        let text = format!(
            "batch {batch}: done, peak {}",
            peak.map_or("unknown".to_string(), |p| format!("{p:.0} MiB"))
        );
        match &self.bar {
            Some(bar) => bar.println(format!("✓ {text}")),
            None => eprintln!("  {text}"),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
