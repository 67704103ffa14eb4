//! The batch planner: from measured peaks of GPU memory, predict the peak at every configured
//! batch size, compare it with the card and the line (80 % of VRAM by default), and name the
//! largest batch that stays under the line.
//!
//! Two rules, both from /work/shared/reference/vram-measurement.md:
//! - **One point** (the guide's): `peak(b) = peak × b / batch`. It folds the fixed cost into the
//!   per-sample slot, so extrapolating upward over-estimates: it is the pessimistic bound.
//! - **Least squares** over two or more points: `peak(b) = fixed + per_sample × b`. Closer to
//!   the truth, but a line through noisy points can be optimistic, so every prediction also
//!   carries the one-point bound and the plan says when the two disagree about a batch.
//!
//! Pure arithmetic: measuring the peaks is `prove`'s job, printing the table is the CLI's.

use serde::{Deserialize, Serialize};

/// Relative slack for comparisons, so that a peak of exactly the line counts as under it, and one
/// of exactly the card as out of memory, despite rounding in the last bit.
const EPSILON: f64 = 1e-9;

/// Below this batch size fixed workspaces and allocator rounding dominate the peak, so a line
/// fitted through such points bends (YOLOv5 table, reference §5).
const SMALLEST_LINEAR_BATCH: u32 = 8;

/// What the planner could not work with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VramError {
    #[error("no measured point: give a peak and the batch it was measured at")]
    NoMeasurement,
    #[error("measured batch {batch}: the batch size must be at least 1")]
    ZeroBatch { batch: u32 },
    #[error(
        "measured batch {batch}: a peak of {peak_mib} MiB is not a memory size; it must be above 0"
    )]
    BadPeak { batch: u32, peak_mib: f64 },
    #[error("VRAM of {vram_mib} MiB is not a card size; it must be above 0")]
    BadVram { vram_mib: f64 },
    #[error(
        "line {line} is not a share of the card; give a fraction above 0 and at most 1, e.g. 0.8"
    )]
    BadLine { line: f64 },
    #[error("configured batch 0 cannot be predicted; batch sizes start at 1")]
    ZeroConfiguredBatch,
    #[error(
        "the fit needs at least two different batch sizes; all points were measured at batch {batch}"
    )]
    OneBatchSize { batch: u32 },
    #[error(
        "the measured peaks do not grow with the batch (slope {per_sample_mib:.3} MiB per sample); \
         measure again with the same counter after a warm-up step, or use one point"
    )]
    FlatFit { per_sample_mib: f64 },
}

/// One measured peak: the batch size and the peak GPU memory it reached, in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub batch: u32,
    pub peak_mib: f64,
}

/// Everything the planner needs. `line` is a fraction of `vram_mib` (0.8 = 80 %).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRequest<'a> {
    pub measurements: &'a [Measurement],
    pub vram_mib: f64,
    pub line: f64,
    pub batches: &'a [u32],
    /// The dataset's size on disk, for the guide's inflation factor (peak ÷ dataset).
    pub dataset_mib: Option<f64>,
}

/// Which rule produced the predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// `peak × b / batch` from a single point (the guide's rule).
    OnePoint,
    /// `fixed + per_sample × b`, least squares over two or more points.
    LeastSquares,
}

/// How a predicted peak compares with the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// At or below the line.
    Fits,
    /// Above the line but below the whole card: it may run, with no room for anything else.
    OverTheLine,
    /// At or above the whole card: the run will fail (or, on Windows, spill into system RAM).
    OutOfMemory,
}

impl Verdict {
    /// Words for people, as the guide says them.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Fits => "fits",
            Verdict::OverTheLine => "over the line",
            Verdict::OutOfMemory => "out of memory",
        }
    }
}

/// A predicted peak at one batch size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub batch: u32,
    pub peak_mib: f64,
    /// The share of the whole card, in percent.
    pub percent: f64,
    pub verdict: Verdict,
    /// With a fit: what the pessimistic one-point rule predicts for the same batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
}

/// The one-point rule's prediction, kept beside a fitted one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub peak_mib: f64,
    pub percent: f64,
    pub verdict: Verdict,
}

/// The fitted line `fixed_mib + per_sample_mib × batch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub fixed_mib: f64,
    pub per_sample_mib: f64,
    /// The largest distance of a measured point from the line; 0 with two points.
    pub max_residual_mib: f64,
}

/// The one-point rule's largest batch, kept beside a fitted plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundPlan {
    pub largest_raw: f64,
    pub largest_safe_batch: Option<u32>,
}

/// The batch planner's answer; `prove` stores it in the proven-stack record and reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchPlan {
    pub rule: Rule,
    pub measurements: Vec<Measurement>,
    pub vram_mib: f64,
    pub line: f64,
    /// `line × vram_mib`: the most a batch may use.
    pub line_mib: f64,
    /// The one-point rule's slot, `peak ÷ batch`, from the point with the largest slot.
    pub per_sample_mib: f64,
    /// The batch the one-point slot comes from.
    pub slot_batch: u32,
    /// The batch that would reach the line exactly, by the rule used; may be fractional.
    pub largest_raw: f64,
    /// The largest configured batch at or below `largest_raw` whose prediction fits; `None` when
    /// no configured batch does.
    pub largest_safe_batch: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_mib: Option<f64>,
    /// Peak ÷ dataset size (the guide's "≈38×"), from the point the slot comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflation: Option<f64>,
    pub predictions: Vec<Prediction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<Fit>,
    /// With a fit: where the pessimistic one-point rule would put the largest batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<BoundPlan>,
    /// Things a careful reader must know: disagreements between the rules, shaky fits.
    pub notes: Vec<String>,
}

/// Predicts every configured batch from one or more measured points.
///
/// One point (or several at the same batch, where the highest peak counts) uses the guide's
/// rule unchanged. Two or more batch sizes fit a line and keep the one-point rule as the bound.
pub fn plan(request: &PlanRequest<'_>) -> Result<BatchPlan, VramError> {
    validate(request)?;
    let line_mib = request.line * request.vram_mib;
    let slot_point = pessimistic_point(request.measurements)?;
    let fit = if distinct_batches(request.measurements) > 1 {
        Some(least_squares(request.measurements)?)
    } else {
        None
    };
    let card = Card {
        vram_mib: request.vram_mib,
        line_mib,
    };
    // One point: batch × line / peak keeps the guide's order of operations, so 64 × 4096 / 2560
    // is 102.4 to the last bit.
    let one_point_raw = f64::from(slot_point.batch) * line_mib / slot_point.peak_mib;
    let largest_raw = match &fit {
        Some(f) => (line_mib - f.fixed_mib) / f.per_sample_mib,
        None => one_point_raw,
    };
    let predictions = card.predict_batches(request.batches, slot_point, fit.as_ref());
    // "Safe" is the verdict, not the raw quotient alone: with the line at the whole card, a
    // batch that lands exactly on it reaches the line but is out of memory.
    let largest_safe_batch = largest_fitting(&predictions, |p| p.verdict == Verdict::Fits);
    let bound = fit.as_ref().map(|_| BoundPlan {
        largest_raw: one_point_raw,
        largest_safe_batch: largest_fitting(&predictions, |p| {
            p.bound.as_ref().is_some_and(|b| b.verdict == Verdict::Fits)
        }),
    });
    let notes = plan_notes(request, fit.as_ref(), &predictions, largest_safe_batch);
    Ok(BatchPlan {
        rule: if fit.is_some() {
            Rule::LeastSquares
        } else {
            Rule::OnePoint
        },
        measurements: request.measurements.to_vec(),
        vram_mib: request.vram_mib,
        line: request.line,
        line_mib,
        per_sample_mib: slot_point.peak_mib / f64::from(slot_point.batch),
        slot_batch: slot_point.batch,
        largest_raw,
        largest_safe_batch,
        dataset_mib: request.dataset_mib,
        inflation: request
            .dataset_mib
            .filter(|d| *d > 0.0)
            .map(|d| slot_point.peak_mib / d),
        predictions,
        fit,
        bound,
        notes,
    })
}

/// The largest predicted batch that `fits` accepts.
fn largest_fitting(predictions: &[Prediction], fits: impl Fn(&Prediction) -> bool) -> Option<u32> {
    predictions
        .iter()
        .filter(|p| fits(p))
        .map(|p| p.batch)
        .max()
}

/// The fit's own notes, and a warning when a measured peak could not have been a real fit.
fn plan_notes(
    request: &PlanRequest<'_>,
    fit: Option<&Fit>,
    predictions: &[Prediction],
    largest_safe_batch: Option<u32>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(f) = fit {
        notes.extend(fit_notes(
            f,
            request.measurements,
            predictions,
            largest_safe_batch,
        ));
    }
    if request
        .measurements
        .iter()
        .any(|m| m.peak_mib >= request.vram_mib)
    {
        notes.push(
            "a measured peak is at or above the card's VRAM: on Windows the driver may have \
             spilled into system RAM (CUDA sysmem fallback), so the measurement is not a real fit"
                .to_string(),
        );
    }
    notes
}

/// Fits `fixed + per_sample × batch` to the points by ordinary least squares.
pub fn least_squares(points: &[Measurement]) -> Result<Fit, VramError> {
    let first = points.first().ok_or(VramError::NoMeasurement)?;
    let n = points.len() as f64;
    let mean_b = points.iter().map(|p| f64::from(p.batch)).sum::<f64>() / n;
    let mean_m = points.iter().map(|p| p.peak_mib).sum::<f64>() / n;
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), p| {
        let db = f64::from(p.batch) - mean_b;
        (sxy + db * (p.peak_mib - mean_m), sxx + db * db)
    });
    if sxx == 0.0 {
        return Err(VramError::OneBatchSize { batch: first.batch });
    }
    let per_sample_mib = sxy / sxx;
    if per_sample_mib <= 0.0 {
        return Err(VramError::FlatFit { per_sample_mib });
    }
    let fixed_mib = mean_m - per_sample_mib * mean_b;
    let max_residual_mib = points
        .iter()
        .map(|p| (p.peak_mib - (fixed_mib + per_sample_mib * f64::from(p.batch))).abs())
        .fold(0.0, f64::max);
    Ok(Fit {
        fixed_mib,
        per_sample_mib,
        max_residual_mib,
    })
}

struct Card {
    vram_mib: f64,
    line_mib: f64,
}

impl Card {
    fn predict(&self, batch: u32, peak_mib: f64) -> Prediction {
        let verdict = if peak_mib >= self.vram_mib * (1.0 - EPSILON) {
            Verdict::OutOfMemory
        } else if peak_mib > self.line_mib * (1.0 + EPSILON) {
            Verdict::OverTheLine
        } else {
            Verdict::Fits
        };
        Prediction {
            batch,
            peak_mib,
            percent: peak_mib * 100.0 / self.vram_mib,
            verdict,
            bound: None,
        }
    }

    /// Every configured batch, sorted and once each: by the fit with the one-point rule as its
    /// bound, or by the one-point rule alone.
    fn predict_batches(
        &self,
        batches: &[u32],
        slot_point: Measurement,
        fit: Option<&Fit>,
    ) -> Vec<Prediction> {
        let mut batches = batches.to_vec();
        batches.sort_unstable();
        batches.dedup();
        let one_point = |b: u32| f64::from(b) * slot_point.peak_mib / f64::from(slot_point.batch);
        batches
            .iter()
            .map(|&b| match fit {
                None => self.predict(b, one_point(b)),
                Some(f) => {
                    let mut p = self.predict(b, f.fixed_mib + f.per_sample_mib * f64::from(b));
                    let bound = self.predict(b, one_point(b));
                    p.bound = Some(Bound {
                        peak_mib: bound.peak_mib,
                        percent: bound.percent,
                        verdict: bound.verdict,
                    });
                    p
                }
            })
            .collect()
    }
}

fn validate(request: &PlanRequest<'_>) -> Result<(), VramError> {
    if request.measurements.is_empty() {
        return Err(VramError::NoMeasurement);
    }
    for m in request.measurements {
        if m.batch == 0 {
            return Err(VramError::ZeroBatch { batch: m.batch });
        }
        if !(m.peak_mib.is_finite() && m.peak_mib > 0.0) {
            return Err(VramError::BadPeak {
                batch: m.batch,
                peak_mib: m.peak_mib,
            });
        }
    }
    if !(request.vram_mib.is_finite() && request.vram_mib > 0.0) {
        return Err(VramError::BadVram {
            vram_mib: request.vram_mib,
        });
    }
    if !(request.line > 0.0 && request.line <= 1.0) {
        return Err(VramError::BadLine { line: request.line });
    }
    if request.batches.contains(&0) {
        return Err(VramError::ZeroConfiguredBatch);
    }
    Ok(())
}

/// The point with the largest per-sample slot: with a positive fixed cost that is the smallest
/// batch, and its slot over-predicts every larger one, which is what a bound should do.
fn pessimistic_point(points: &[Measurement]) -> Result<Measurement, VramError> {
    points
        .iter()
        .copied()
        .max_by(|a, b| {
            let slot_a = a.peak_mib / f64::from(a.batch);
            let slot_b = b.peak_mib / f64::from(b.batch);
            slot_a.total_cmp(&slot_b)
        })
        .ok_or(VramError::NoMeasurement)
}

fn distinct_batches(points: &[Measurement]) -> usize {
    let mut batches: Vec<u32> = points.iter().map(|p| p.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    batches.len()
}

/// Says what a user must know before trusting the fitted predictions.
fn fit_notes(
    fit: &Fit,
    points: &[Measurement],
    predictions: &[Prediction],
    largest_safe_batch: Option<u32>,
) -> Vec<String> {
    let mut notes = Vec::new();
    for p in predictions {
        let Some(bound) = &p.bound else { continue };
        if Some(p.batch) == largest_safe_batch && bound.verdict == Verdict::OverTheLine {
            notes.push(format!(
                "batch {}: the fit puts it at {:.0} %, under the line, but the one-point rule \
                 at {:.0} %, over it; the truth is usually between the two",
                p.batch, p.percent, bound.percent
            ));
        } else if p.verdict != Verdict::OutOfMemory && bound.verdict == Verdict::OutOfMemory {
            notes.push(format!(
                "batch {}: the fit predicts {:.0} % of the card, but the one-point rule predicts \
                 {:.0} % (out of memory); confirm it with one run before relying on it",
                p.batch, p.percent, bound.percent
            ));
        }
    }
    if fit.fixed_mib < 0.0 {
        notes.push(format!(
            "the fitted fixed cost is negative ({:.1} MiB): the points do not lie on a line \
             through a real fixed cost; measure more batch sizes",
            fit.fixed_mib
        ));
    }
    if points.iter().any(|p| p.batch < SMALLEST_LINEAR_BATCH) {
        notes.push(format!(
            "points below batch {SMALLEST_LINEAR_BATCH} are dominated by fixed workspaces and \
             allocator rounding; the fit is more reliable from batch {SMALLEST_LINEAR_BATCH} up"
        ));
    }
    notes
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for VramError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guide_plan() -> BatchPlan {
        plan(&PlanRequest {
            dataset_mib: Some(67.5),
            ..guide_request()
        })
        .expect("plans")
    }

    fn prediction(plan: &BatchPlan, batch: u32) -> &Prediction {
        plan.predictions
            .iter()
            .find(|p| p.batch == batch)
            .expect("batch predicted")
    }

    #[test]
    fn guide_worked_example_comes_out_exactly() {
        let plan = guide_plan();
        assert_eq!(plan.rule, Rule::OnePoint);
        assert_eq!(plan.per_sample_mib, 40.0);
        assert_eq!(plan.line_mib, 4096.0);
        assert_eq!(plan.largest_raw, 102.4);
        assert_eq!(plan.largest_safe_batch, Some(96));
        assert_eq!(plan.inflation.map(f64::round), Some(38.0));
        let b96 = prediction(&plan, 96);
        assert_eq!(
            (b96.peak_mib, b96.percent, b96.verdict),
            (3840.0, 75.0, Verdict::Fits)
        );
        let b128 = prediction(&plan, 128);
        assert_eq!(
            (b128.peak_mib, b128.percent, b128.verdict),
            (5120.0, 100.0, Verdict::OutOfMemory)
        );
        assert!(plan.fit.is_none());
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
    }

    #[test]
    fn a_peak_between_the_line_and_the_card_is_over_the_line() {
        let plan = plan(&PlanRequest {
            batches: &[112],
            ..guide_request()
        })
        .expect("plans");
        assert_eq!(prediction(&plan, 112).verdict, Verdict::OverTheLine);
        assert_eq!(plan.largest_safe_batch, None);
    }

    /// Measurements from `(batch, peak MiB)` pairs.
    fn measured(points: &[(u32, f64)]) -> Vec<Measurement> {
        points
            .iter()
            .map(|&(batch, peak_mib)| Measurement { batch, peak_mib })
            .collect()
    }

    fn guide_request() -> PlanRequest<'static> {
        PlanRequest {
            measurements: &[Measurement {
                batch: 64,
                peak_mib: 2560.0,
            }],
            vram_mib: 5120.0,
            line: 0.8,
            batches: &[32, 64, 96, 128],
            dataset_mib: None,
        }
    }

    #[test]
    fn two_point_fit_finds_fixed_cost_and_slope() {
        let fit = least_squares(&measured(&[(32, 1400.0), (64, 2500.0)])).expect("fits");
        assert_eq!(fit.fixed_mib, 300.0);
        assert_eq!(fit.per_sample_mib, 34.375);
        assert_eq!(fit.max_residual_mib, 0.0);
    }

    #[test]
    fn fit_recovers_a_noisy_line_within_its_residuals() {
        // YOLOv5s on an A100 (reference §4.1), GB → MiB; the reference's own fit over b=4..16
        // gives slope 0.189 GB and intercept 0.265 GB.
        let points = measured(&[
            (4, 1.007 * 1024.0),
            (8, 1.797 * 1024.0),
            (16, 3.280 * 1024.0),
        ]);
        let fit = least_squares(&points).expect("fits");
        assert!(
            (fit.per_sample_mib / 1024.0 - 0.189).abs() < 0.001,
            "{fit:?}"
        );
        assert!((fit.fixed_mib / 1024.0 - 0.265).abs() < 0.01, "{fit:?}");
        assert!(fit.max_residual_mib < 0.021 * 1024.0, "{fit:?}");
    }

    #[test]
    fn fitted_plan_keeps_the_one_point_rule_as_the_bound() {
        let measurements = measured(&[(32, 1400.0), (64, 2500.0)]);
        let plan = plan(&PlanRequest {
            measurements: &measurements,
            vram_mib: 5120.0,
            line: 0.8,
            batches: &[64, 96, 112, 128],
            dataset_mib: None,
        })
        .expect("plans");
        assert_eq!(plan.rule, Rule::LeastSquares);
        // The slot comes from batch 32: 1400 / 32 = 43.75 MiB beats 2500 / 64 = 39.06.
        assert_eq!((plan.slot_batch, plan.per_sample_mib), (32, 43.75));
        // (4096 − 300) / 34.375 = 110.43 → 96 is the largest configured batch under it.
        assert!(
            (plan.largest_raw - 110.429).abs() < 0.001,
            "{}",
            plan.largest_raw
        );
        assert_eq!(plan.largest_safe_batch, Some(96));
        // The bound: 4096 / 43.75 = 93.6 → 64.
        let bound = plan.bound.as_ref().expect("bound plan kept");
        assert!(
            (bound.largest_raw - 93.623).abs() < 0.001,
            "{}",
            bound.largest_raw
        );
        assert_eq!(bound.largest_safe_batch, Some(64));
        let b128 = prediction(&plan, 128);
        assert_eq!(b128.peak_mib, 300.0 + 34.375 * 128.0);
        let bound = b128.bound.as_ref().expect("bound kept");
        assert_eq!(bound.peak_mib, 5600.0);
        assert_eq!(bound.verdict, Verdict::OutOfMemory);
        // The fit puts 128 under the card but the bound puts it over: the plan must say so,
        // and it must say that the recommended 96 is over the line by the bound.
        assert_eq!(prediction(&plan, 128).verdict, Verdict::OverTheLine);
        for batch in ["batch 128:", "batch 96:"] {
            assert!(
                plan.notes.iter().any(|n| n.starts_with(batch)),
                "{batch} {:?}",
                plan.notes
            );
        }
    }

    #[test]
    fn repeated_points_at_one_batch_use_the_guide_rule_with_the_highest_peak() {
        let measurements = measured(&[(64, 2500.0), (64, 2560.0)]);
        let plan = plan(&PlanRequest {
            measurements: &measurements,
            ..guide_request()
        })
        .expect("plans");
        assert_eq!(plan.rule, Rule::OnePoint);
        assert_eq!(plan.per_sample_mib, 40.0);
    }

    #[test]
    fn peaks_that_shrink_with_the_batch_are_refused() {
        let err =
            least_squares(&measured(&[(32, 2000.0), (64, 1900.0)])).expect_err("negative slope");
        assert!(matches!(err, VramError::FlatFit { .. }), "{err}");
    }

    #[test]
    fn inputs_that_are_not_sizes_are_refused() {
        let bad_line = plan(&PlanRequest {
            line: 1.5,
            ..guide_request()
        });
        assert_eq!(bad_line, Err(VramError::BadLine { line: 1.5 }));
        let zero = plan(&PlanRequest {
            measurements: &[Measurement {
                batch: 0,
                peak_mib: 10.0,
            }],
            ..guide_request()
        });
        assert_eq!(zero, Err(VramError::ZeroBatch { batch: 0 }));
        let no_card = plan(&PlanRequest {
            vram_mib: 0.0,
            ..guide_request()
        });
        assert_eq!(no_card, Err(VramError::BadVram { vram_mib: 0.0 }));
        assert_eq!(
            plan(&PlanRequest {
                measurements: &[],
                ..guide_request()
            }),
            Err(VramError::NoMeasurement)
        );
    }

    #[test]
    fn configured_batches_are_sorted_and_deduplicated() {
        let plan = plan(&PlanRequest {
            batches: &[128, 32, 64, 32],
            ..guide_request()
        })
        .expect("plans");
        let batches: Vec<u32> = plan.predictions.iter().map(|p| p.batch).collect();
        assert_eq!(batches, vec![32, 64, 128]);
    }

    #[test]
    fn a_batch_that_fills_the_whole_card_is_never_safe_even_with_the_line_at_100_percent() {
        let plan = plan(&PlanRequest {
            line: 1.0,
            batches: &[32, 64],
            measurements: &[Measurement {
                batch: 64,
                peak_mib: 5120.0,
            }],
            ..guide_request()
        })
        .expect("plans");
        assert_eq!(plan.largest_raw, 64.0);
        assert_eq!(plan.largest_safe_batch, Some(32));
    }

    #[test]
    fn a_recommended_batch_the_bound_puts_out_of_memory_is_called_out() {
        // A large fixed cost: the fit allows batch 256, the one-point slot from batch 32
        // (31.25 MiB) puts it at 8,000 MiB on a 5,120 MiB card.
        let measurements = measured(&[(32, 1000.0), (64, 1400.0)]);
        let plan = plan(&PlanRequest {
            measurements: &measurements,
            batches: &[64, 128, 256],
            ..guide_request()
        })
        .expect("plans");
        assert_eq!(plan.largest_safe_batch, Some(256));
        assert_eq!(prediction(&plan, 256).verdict, Verdict::Fits);
        assert!(
            plan.notes
                .iter()
                .any(|n| n.starts_with("batch 256:") && n.contains("out of memory")),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn a_plan_round_trips_through_yaml_as_the_record_stores_it() {
        let measurements = measured(&[(32, 1400.0), (64, 2500.0)]);
        for plan in [
            guide_plan(),
            plan(&PlanRequest {
                measurements: &measurements,
                ..guide_request()
            })
            .expect("plans"),
        ] {
            let yaml = serde_saphyr::to_string(&plan).expect("serializes");
            let back: BatchPlan = serde_saphyr::from_str(&yaml).expect("reads back");
            assert_eq!(back, plan, "{yaml}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_largest_safe_batch_always_fits_and_verdicts_worsen_with_the_batch(
            batch in 1u32..512,
            peak in 1.0f64..100_000.0,
            vram in 1.0f64..200_000.0,
            line in 0.05f64..=1.0,
            batches in proptest::collection::vec(1u32..1024, 0..8),
        ) {
            let plan = plan(&PlanRequest {
                measurements: &[Measurement { batch, peak_mib: peak }],
                vram_mib: vram,
                line,
                batches: &batches,
                dataset_mib: None,
            }).expect("valid input plans");
            if let Some(safe) = plan.largest_safe_batch {
                let p = plan.predictions.iter().find(|p| p.batch == safe).expect("predicted");
                proptest::prop_assert_eq!(p.verdict, Verdict::Fits);
            }
            let rank = |v: Verdict| match v {
                Verdict::Fits => 0,
                Verdict::OverTheLine => 1,
                Verdict::OutOfMemory => 2,
            };
            for pair in plan.predictions.windows(2) {
                proptest::prop_assert!(rank(pair[0].verdict) <= rank(pair[1].verdict));
            }
        }
    }
}
