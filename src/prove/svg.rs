//! `proven-stack.svg`: the picture of a proof, two panels.
//!
//! Top: GPU memory over the run (the measured view, the whole card's `memory.used` when known),
//! with the idle baseline, the line (80 % of VRAM by default) and the card's size. Bottom: the
//! predicted peak per configured batch against the card, coloured by verdict. plotters' SVG
//! backend writes text as `<text>` elements, so no font files or system font libraries are
//! needed. The numbers come from `prove` and `vram`; this module only draws them.

use std::path::Path;

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::sampler::MemoryTrace;
use crate::fsutil::write_atomic;

const WIDTH: u32 = 900;
const HEIGHT: u32 = 720;
const TOP_PANEL: u32 = 400;
const FONT: &str = "sans-serif";

/// Colours by verdict, and for the lines. Plain RGB so viewers without CSS agree.
const MEASURED: RGBColor = RGBColor(31, 119, 180);
const CARD: RGBColor = RGBColor(150, 150, 150);
const LINE: RGBColor = RGBColor(214, 39, 40);
const FITS: RGBColor = RGBColor(44, 160, 44);
const OVER_LINE: RGBColor = RGBColor(255, 127, 14);
const OOM: RGBColor = RGBColor(214, 39, 40);

/// What the plot shows.
#[derive(Debug, Clone)]
pub struct ProofChart<'a> {
    /// The stack's name, in the title.
    pub stack: &'a str,
    /// The run's memory trace.
    pub trace: &'a MemoryTrace,
    /// The card's total memory.
    pub vram_mib: u64,
    /// The line as a share of VRAM, e.g. 0.8.
    pub line_share: f64,
    /// The measured batch, marked in the bottom panel.
    pub measured_batch: u32,
    /// `(batch, predicted peak MiB)` for each configured batch.
    pub predictions: &'a [(u32, f64)],
}

/// The plot could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum SvgError {
    #[error("could not draw the memory plot: {message}")]
    Draw { message: String },
    #[error("could not write the memory plot {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn draw_err<E: std::fmt::Debug>(e: E) -> SvgError {
    SvgError::Draw {
        message: format!("{e:?}"),
    }
}

/// The label drawn on the line, also what tests look for.
pub fn line_label(share: f64, vram_mib: u64) -> String {
    let pct = share * 100.0;
    format!("{pct:.0} % line: {:.0} MiB", share * vram_mib as f64)
}

/// Renders the two panels as SVG text.
pub fn render(chart: &ProofChart<'_>) -> Result<String, SvgError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (top, bottom) = root.split_vertically(TOP_PANEL);
        draw_run(&top, chart)?;
        draw_predictions(&bottom, chart)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Renders and writes the plot atomically.
pub fn write(path: &Path, chart: &ProofChart<'_>) -> Result<(), SvgError> {
    let svg = render(chart)?;
    write_atomic(path, svg.as_bytes()).map_err(|source| SvgError::Write {
        path: path.to_path_buf(),
        source,
    })
}

type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

type Panel<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A panel of the picture: its title, the margins both panels keep, MiB upwards from 0 to `top_mib`.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    title: String,
    x: std::ops::Range<f64>,
    top_mib: f64,
) -> Result<Panel<'a, 'b>, SvgError> {
    ChartBuilder::on(area)
        .caption(title, (FONT, 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x, 0.0..top_mib)
        .map_err(draw_err)
}

/// The grid both panels share: whole MiB on the y axis, light lines white; the caller adds its
/// x axis.
fn mib_mesh<'m, 'a, 'b>(
    plot: &'m mut Panel<'a, 'b>,
) -> MeshStyle<'a, 'm, RangedCoordf64, RangedCoordf64, SVGBackend<'b>> {
    let mut mesh = plot.configure_mesh();
    mesh.y_desc("MiB")
        .y_label_formatter(&whole_mib)
        .light_line_style(WHITE)
        .label_style((FONT, 12));
    mesh
}

fn whole_mib(v: &f64) -> String {
    format!("{v:.0}")
}

fn draw_run(area: &Area<'_>, chart: &ProofChart<'_>) -> Result<(), SvgError> {
    let trace = chart.trace;
    let secs = |t: u64| t as f64 / 1000.0;
    let last_t = trace
        .samples
        .iter()
        .chain(&trace.device_samples)
        .map(|&(t, _)| secs(t))
        .fold(1.0_f64, f64::max);
    let vram = chart.vram_mib as f64;
    let line_mib = chart.line_share * vram;
    let mut plot = panel(
        area,
        format!("{}: GPU memory during the run", chart.stack),
        0.0..last_t,
        vram * 1.05,
    )?;
    mib_mesh(&mut plot)
        .x_desc("seconds since the example started")
        .draw()
        .map_err(draw_err)?;

    let hline = |y: f64| vec![(0.0, y), (last_t, y)];
    plot.draw_series(LineSeries::new(hline(vram), CARD.stroke_width(1)))
        .map_err(draw_err)?
        .label(format!("card: {} MiB", chart.vram_mib))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], CARD));
    plot.draw_series(DashedLineSeries::new(
        hline(line_mib),
        8,
        4,
        LINE.stroke_width(2),
    ))
    .map_err(draw_err)?
    .label(line_label(chart.line_share, chart.vram_mib))
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], LINE.stroke_width(2)));
    // The label sits on the line itself too, so a cropped legend still names it.
    plot.draw_series(std::iter::once(Text::new(
        line_label(chart.line_share, chart.vram_mib),
        (last_t * 0.01, line_mib + vram * 0.05),
        (FONT, 12).into_font().color(&LINE),
    )))
    .map_err(draw_err)?;

    if let Some(baseline) = trace.baseline_mib {
        let b = baseline as f64;
        plot.draw_series(DashedLineSeries::new(hline(b), 4, 4, CARD.stroke_width(1)))
            .map_err(draw_err)?
            .label(format!("idle baseline: {baseline} MiB"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], CARD));
        if !trace.device_samples.is_empty() {
            let card_used = trace
                .device_samples
                .iter()
                .map(|&(t, m)| (secs(t), m as f64));
            plot.draw_series(LineSeries::new(card_used, CARD.stroke_width(1)))
                .map_err(draw_err)?
                .label("card memory.used")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], CARD));
        }
    }
    let source = serde_json::to_value(trace.source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let peak = trace
        .peak_mib
        .map_or("no figure".to_string(), |p| format!("peak {p} MiB"));
    let measured = trace.samples.iter().map(|&(t, m)| (secs(t), m as f64));
    plot.draw_series(LineSeries::new(measured, MEASURED.stroke_width(2)))
        .map_err(draw_err)?
        .label(format!("example ({source}): {peak}"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MEASURED.stroke_width(2)));

    plot.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()
        .map_err(draw_err)
}

/// As the guide counts: at or under the line fits; a peak that reaches the card's size does not.
fn verdict_colour(peak: f64, line_mib: f64, vram: f64) -> RGBColor {
    if peak <= line_mib {
        FITS
    } else if peak < vram {
        OVER_LINE
    } else {
        OOM
    }
}

fn draw_predictions(area: &Area<'_>, chart: &ProofChart<'_>) -> Result<(), SvgError> {
    let vram = chart.vram_mib as f64;
    let line_mib = chart.line_share * vram;
    let highest = chart
        .predictions
        .iter()
        .map(|&(_, p)| p)
        .fold(vram, f64::max);
    let n = chart.predictions.len().max(1);
    let batches: Vec<u32> = chart.predictions.iter().map(|&(b, _)| b).collect();
    let mut plot = panel(
        area,
        format!(
            "predicted peak per batch (measured at {})",
            chart.measured_batch
        ),
        -0.5..(n as f64 - 0.5),
        highest * 1.08,
    )?;
    mib_mesh(&mut plot)
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() > 0.01 || i < 0.0 {
                return String::new();
            }
            batches
                .get(i as usize)
                .map(|b| format!("batch {b}"))
                .unwrap_or_default()
        })
        .draw()
        .map_err(draw_err)?;

    plot.draw_series(chart.predictions.iter().enumerate().map(|(i, &(_, peak))| {
        let x = i as f64;
        Rectangle::new(
            [(x - 0.3, 0.0), (x + 0.3, peak)],
            verdict_colour(peak, line_mib, vram).filled(),
        )
    }))
    .map_err(draw_err)?;
    plot.draw_series(chart.predictions.iter().enumerate().map(|(i, &(_, peak))| {
        let pct = if vram > 0.0 { peak / vram * 100.0 } else { 0.0 };
        Text::new(
            format!("{peak:.0} MiB, {pct:.0} %"),
            (i as f64 - 0.3, peak + highest * 0.06),
            (FONT, 11).into_font(),
        )
    }))
    .map_err(draw_err)?;
    let hline = |y: f64| vec![(-0.5, y), (n as f64 - 0.5, y)];
    plot.draw_series(LineSeries::new(hline(vram), CARD.stroke_width(1)))
        .map_err(draw_err)?;
    plot.draw_series(DashedLineSeries::new(
        hline(line_mib),
        8,
        4,
        LINE.stroke_width(2),
    ))
    .map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MemorySource;

    fn trace() -> MemoryTrace {
        MemoryTrace {
            source: MemorySource::PerProcess,
            samples: vec![(0, 300), (500, 1200), (1000, 2560), (1500, 2560)],
            peak_mib: Some(2560),
            baseline_mib: Some(310),
            device_samples: vec![(0, 610), (500, 1510), (1000, 2870), (1500, 2870)],
            unavailable_rows: 0,
            notes: vec![],
            others: vec![],
        }
    }

    fn guide_chart(trace: &MemoryTrace) -> ProofChart<'_> {
        const PREDICTIONS: &[(u32, f64)] = &[
            (16, 640.0),
            (32, 1280.0),
            (64, 2560.0),
            (96, 3840.0),
            (128, 5120.0),
        ];
        ProofChart {
            stack: "torch-2.5.1-cu124-linux",
            trace,
            vram_mib: 5120,
            line_share: 0.8,
            measured_batch: 64,
            predictions: PREDICTIONS,
        }
    }

    /// Every start tag closed, attributes quoted, entities valid: what an XML parser demands.
    fn assert_well_formed(svg: &str) {
        let mut reader = quick_xml::Reader::from_str(svg);
        let mut depth = 0_i64;
        let mut elements = 0;
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Start(_)) => {
                    depth += 1;
                    elements += 1;
                }
                Ok(quick_xml::events::Event::Empty(_)) => elements += 1,
                Ok(quick_xml::events::Event::End(_)) => depth -= 1,
                Ok(quick_xml::events::Event::GeneralRef(r)) => {
                    let name: &str = r.as_ref();
                    let known = ["lt", "gt", "amp", "quot", "apos"].contains(&name);
                    assert!(known || name.starts_with('#'), "unknown entity &{name};");
                }
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(_) => {}
                Err(e) => panic!("not XML at {}: {e}", reader.error_position()),
            }
        }
        assert_eq!(depth, 0, "unbalanced tags");
        assert!(elements > 10, "suspiciously empty SVG");
    }

    #[test]
    fn the_plot_is_well_formed_xml_with_the_line_labelled() {
        let trace = trace();
        let svg = render(&guide_chart(&trace)).expect("renders");
        assert_well_formed(&svg);
        assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
        assert!(svg.contains("80 % line: 4096 MiB"));
        assert!(svg.contains("idle baseline: 310 MiB"));
        assert!(svg.contains("per_process"));
        assert!(svg.contains("peak 2560 MiB"));
        assert!(svg.contains("batch 128"));
    }

    #[test]
    fn bars_take_the_colour_of_their_verdict() {
        let trace = trace();
        let svg = render(&guide_chart(&trace)).expect("renders");
        // The guide: 96 → 3840 MiB (75 %) fits; 128 → 5120 MiB (100 %) does not fit.
        assert!(svg.contains("3840 MiB, 75 %"));
        assert!(svg.contains("5120 MiB, 100 %"));
        let bars = |fill: &str| {
            svg.matches(&format!(r#"fill="{fill}" stroke="none"/>"#))
                .count()
        };
        assert_eq!(bars("#2CA02C"), 4, "16, 32, 64 and 96 fit");
        assert_eq!(bars("#D62728"), 1, "128 does not");
        assert_eq!(bars("#FF7F0E"), 0, "nothing between the line and the card");
        assert_eq!(verdict_colour(5120.0, 4096.0, 5120.0), OOM);
        assert_eq!(verdict_colour(4500.0, 4096.0, 5120.0), OVER_LINE);
        assert_eq!(verdict_colour(4096.0, 4096.0, 5120.0), FITS);
    }

    #[test]
    fn an_unmeasured_run_still_draws() {
        let empty = MemoryTrace {
            source: MemorySource::Unmeasured,
            samples: vec![],
            peak_mib: None,
            baseline_mib: None,
            device_samples: vec![],
            unavailable_rows: 0,
            notes: vec![],
            others: vec![],
        };
        let chart = ProofChart {
            predictions: &[],
            ..guide_chart(&empty)
        };
        let svg = render(&chart).expect("renders");
        assert_well_formed(&svg);
        assert!(svg.contains("no figure"));
    }

    #[test]
    #[ignore = "writes target/proven-stack-sample.svg for a look by eye"]
    fn sample_plot_for_review() {
        let trace = trace();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/proven-stack-sample.svg");
        write(&path, &guide_chart(&trace)).expect("written");
    }

    #[test]
    fn writes_the_file_atomically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("proven-stack.svg");
        let trace = trace();
        write(&path, &guide_chart(&trace)).expect("written");
        let text = std::fs::read_to_string(&path).expect("exists");
        assert_well_formed(&text);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
    }
}
