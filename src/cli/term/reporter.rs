//! The install runner's events as lines on stderr (`install`, `up`, `repair`).

use crate::install::InstallReporter;
use crate::install::proof::Proof;
use crate::install::runner::{StepOutcome, shell_words};
use crate::manifest::Layer;

/// The install reporter the CLI draws with.
pub(in crate::cli) struct CliReporter {
    pub(in crate::cli) quiet: bool,
}

impl InstallReporter for CliReporter {
    fn layer_in_place(&self, proof: &Proof) {
        if !self.quiet {
            eprintln!("✓ {} already in place: {}", proof.layer, proof.seen);
        }
    }
    fn step_started(&self, layer: Layer, argv: &[String]) {
        if !self.quiet {
            eprintln!("→ {layer}: {}", shell_words(argv));
        }
    }
    fn step_finished(&self, layer: Layer, outcome: &StepOutcome) {
        if !self.quiet {
            eprintln!(
                "  {layer} {} in {:.1}s; log: {}",
                outcome.status.as_str(),
                outcome.duration.as_secs_f64(),
                outcome.log.display()
            );
        }
    }

    fn warning(&self, text: &str) {
        // `text` starts with "warning: " already (it is also the step log's line).
        eprintln!("  {text}");
    }
}
