//! `stackpin vram --peak 2.5GB --batch 64 --vram 5GB`: the guide's batch arithmetic as a table.
//!
//! The numbers come from [`crate::vram`]; this module reads the flags; the table and the number
//! formatting live in [`super::term`], shared with `budget`, `prove` and `up`.

use super::term::{print_report, render_batch_plan};
use super::{CmdResult, GlobalArgs, finish_report, print_json};
use crate::manifest::{DEFAULT_VRAM_LINE, VramSettings};
use crate::size;
use crate::vram::{self, Measurement, PlanRequest};

pub const EXAMPLES: &str = "\
Examples:
  stackpin vram --peak 2.5GB --batch 64 --vram 5GB --dataset 67.5MB --batches 32,64,96,128
  stackpin vram --measure 32:1400MiB --measure 64:2500MiB --vram 8GiB
  stackpin vram --peak 2560 --batch 64 --vram 5120 --json

Sizes take MiB/GiB or MB/GB (GB = 1024 MB, as GPU tools count); a bare number is MiB.
Exit 0 when a configured batch fits under the line, 1 when none does, 2 on bad input.";

#[derive(Debug, clap::Args)]
pub struct VramArgs {
    /// Peak GPU memory measured at --batch (e.g. 2.5GB, 2560MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "batch",
          required_unless_present = "measure")]
    pub peak: Option<f64>,
    /// The batch size the peak was measured at.
    #[arg(long, value_name = "N", requires = "peak")]
    pub batch: Option<u32>,
    /// The card's total memory (e.g. 5GB, 24GiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub vram: f64,
    /// The dataset's size on disk, to show how much the peak inflates it.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub dataset: Option<f64>,
    /// Keep predicted peaks at or below this share of the card.
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_VRAM_LINE)]
    pub line: f64,
    /// The batch sizes to predict (default: the manifest's default list).
    #[arg(long, value_name = "N,N,…", value_delimiter = ',')]
    pub batches: Vec<u32>,
    /// A measured point BATCH:SIZE; give two or more batch sizes to fit fixed + per-sample cost.
    #[arg(long, value_name = "BATCH:SIZE", value_parser = parse_measurement,
          conflicts_with_all = ["peak", "batch"])]
    pub measure: Vec<Measurement>,
}

fn parse_size(text: &str) -> Result<f64, String> {
    size::parse_mib(text).map_err(|e| e.to_string())
}

fn parse_measurement(text: &str) -> Result<Measurement, String> {
    let (batch, peak) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}`: write a measured point as BATCH:SIZE, e.g. 64:2.5GB"))?;
    let batch = batch
        .trim()
        .parse()
        .map_err(|_| format!("`{text}`: `{batch}` is not a batch size"))?;
    Ok(Measurement {
        batch,
        peak_mib: parse_size(peak)?,
    })
}

pub fn run(args: &VramArgs, global: &GlobalArgs) -> CmdResult {
    let measurements = match (args.peak, args.batch) {
        (Some(peak_mib), Some(batch)) => vec![Measurement { batch, peak_mib }],
        _ => args.measure.clone(),
    };
    let batches = if args.batches.is_empty() {
        VramSettings::default().batches
    } else {
        args.batches.clone()
    };
    let plan = vram::plan(&PlanRequest {
        measurements: &measurements,
        vram_mib: args.vram,
        line: args.line,
        batches: &batches,
        dataset_mib: args.dataset,
    })?;
    finish_report(
        global,
        plan.largest_safe_batch.is_some(),
        || print_json(&plan),
        || print_report(&render_batch_plan(&plan)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_points_read_batch_colon_size() {
        assert_eq!(
            parse_measurement("32:1400MiB"),
            Ok(Measurement {
                batch: 32,
                peak_mib: 1400.0
            })
        );
        assert!(parse_measurement("32").is_err());
        assert!(parse_measurement("x:1GB").is_err());
    }
}
