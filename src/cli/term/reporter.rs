//! The install runner's events as lines on stderr (`install`, `up`, `repair`), with the
//! running installer's elapsed time: a spinner on a terminal, a heartbeat line every 10 s
//! without one (a driver installs for minutes; a CI log must not look hung).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::{duration_text, verdict, warning_label};
use crate::exec::step::{StepOutcome, shell_words};
use crate::install::InstallReporter;
use crate::layers::Proof;
use crate::manifest::Layer;

/// How often a running installer is reported when stderr is not a terminal.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// What shows a running step's elapsed time.
enum Running {
    Spinner(ProgressBar),
    Heartbeat(Arc<AtomicBool>, JoinHandle<()>),
}

/// The install reporter the CLI draws with.
pub(in crate::cli) struct CliReporter {
    quiet: bool,
    running: Mutex<Option<Running>>,
}

impl CliReporter {
    pub(in crate::cli) fn new(quiet: bool) -> Self {
        Self {
            quiet,
            running: Mutex::new(None),
        }
    }

    fn start_clock(&self, layer: Layer) {
        let running = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(format!("{layer}: running"));
            bar.enable_steady_tick(Duration::from_millis(120));
            Running::Spinner(bar)
        } else {
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let started = Instant::now();
            let handle = std::thread::spawn(move || {
                let mut next = HEARTBEAT;
                while !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    let elapsed = started.elapsed();
                    if elapsed >= next && !flag.load(Ordering::SeqCst) {
                        anstream::eprintln!(
                            "  {layer}: still running after {}",
                            duration_text(elapsed)
                        );
                        next += HEARTBEAT;
                    }
                }
            });
            Running::Heartbeat(stop, handle)
        };
        if let Ok(mut slot) = self.running.lock()
            && let Some(old) = slot.replace(running)
        {
            stop(old);
        }
    }

    fn stop_clock(&self) {
        if let Ok(mut slot) = self.running.lock()
            && let Some(old) = slot.take()
        {
            stop(old);
        }
    }
}

fn stop(running: Running) {
    match running {
        Running::Spinner(bar) => bar.finish_and_clear(),
        Running::Heartbeat(flag, handle) => {
            flag.store(true, Ordering::SeqCst);
            let _ = handle.join();
        }
    }
}

impl Drop for CliReporter {
    fn drop(&mut self) {
        self.stop_clock();
    }
}

impl InstallReporter for CliReporter {
    fn layer_in_place(&self, proof: &Proof) {
        if !self.quiet {
            anstream::eprintln!("✓ {} already in place: {}", proof.layer, proof.seen);
        }
    }
    fn step_started(&self, layer: Layer, argv: &[String]) {
        if !self.quiet {
            anstream::eprintln!("→ {layer}: {}", shell_words(argv));
            self.start_clock(layer);
        }
    }
    fn step_finished(&self, layer: Layer, outcome: &StepOutcome) {
        self.stop_clock();
        if !self.quiet {
            anstream::eprintln!(
                "  {layer} {} in {}; log: {}",
                verdict(outcome.status.as_str()),
                duration_text(outcome.duration),
                outcome.log.display()
            );
        }
        if let Some(warning) = outcome.log_warning(&layer.to_string()) {
            self.warning(&warning);
        }
    }

    fn warning(&self, text: &str) {
        // `text` starts with "warning: " already (it is also the step log's line).
        let text = text.strip_prefix("warning: ").unwrap_or(text);
        anstream::eprintln!("  {} {text}", warning_label());
    }

    fn note(&self, text: &str) {
        if !self.quiet {
            anstream::eprintln!("note: {text}");
        }
    }
}
