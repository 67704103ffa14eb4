//! The example's own report: the `STACKPIN_RESULT {json}` line an example prints.
//!
//! The bundled scripts print it last; a user's own example may print it too. Every key is
//! optional and unknown keys are ignored, so examples and stackpin can grow apart. When the
//! output holds several such lines the last one wins (an example may print interim ones). This
//! module only reads the line; deciding which memory view is the authority is `prove`'s job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::FrameworkCounter;

/// The marker that starts the report line.
pub const RESULT_PREFIX: &str = "STACKPIN_RESULT";

/// Longest excerpt of a bad line quoted in an error, so a runaway line does not flood the terminal.
const EXCERPT_CHARS: usize = 120;

/// What an example says about its own run. Memory figures are MiB as the framework counts them
/// (its allocator), without the CUDA context unless the example adds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExampleReport {
    /// Batch size the example actually used.
    pub batch: Option<u32>,
    /// Measured training steps (warm-up excluded).
    pub steps: Option<u32>,
    /// Peak memory held by the framework's caching allocator (PyTorch `max_memory_reserved`).
    pub peak_reserved_mib: Option<f64>,
    /// Peak memory in live tensors (PyTorch `max_memory_allocated`, TensorFlow `peak`).
    pub peak_allocated_mib: Option<f64>,
    /// The example's estimate of the CUDA context: device used minus its own pool.
    pub context_mib: Option<f64>,
    /// Training (or inference) throughput.
    pub samples_per_s: Option<f64>,
    /// Where the example ran: `cuda`, `cuda:0`, TensorFlow's `/GPU:0`, or `cpu`.
    pub device: Option<String>,
    /// The device's name as the framework saw it (`NVIDIA L4`), or the CPU's.
    pub device_name: Option<String>,
    /// Size of the data set the example held, for the inflation figure (peak / data set).
    pub dataset_mib: Option<f64>,
    /// Inference examples: timed iterations.
    pub iterations: Option<u32>,
    /// Inference examples: median latency per request.
    pub p50_ms: Option<f64>,
    /// Inference examples: 99th-percentile latency per request.
    pub p99_ms: Option<f64>,
    /// Library, CUDA, cuDNN and Python versions as the example saw them (values as printed:
    /// strings, numbers or null).
    #[serde(default)]
    pub versions: BTreeMap<String, serde_json::Value>,
}

impl ExampleReport {
    /// The framework's peak: reserved when reported (it is what the card must hold), else
    /// allocated, with which one it is.
    pub fn framework_peak_mib(&self) -> Option<(f64, FrameworkCounter)> {
        match (self.peak_reserved_mib, self.peak_allocated_mib) {
            (Some(r), _) => Some((r, FrameworkCounter::Reserved)),
            (None, Some(a)) => Some((a, FrameworkCounter::Allocated)),
            (None, None) => None,
        }
    }
}

/// Where an example says it ran, read from its report's `device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RanOn {
    /// `cuda`, `cuda:N`, TensorFlow's `GPU` / `/GPU:0` / `/device:GPU:0`.
    Gpu,
    /// `cpu` in any of those spellings.
    Cpu,
    /// A device stackpin does not know (`mps`, `xla:0`): not a GPU proof.
    Other,
    /// No report line, or one without `device`.
    Unreported,
}

impl RanOn {
    /// Classifies a reported device name.
    pub fn of(device: Option<&str>) -> RanOn {
        let Some(device) = device else {
            return RanOn::Unreported;
        };
        let lower = device.trim().to_ascii_lowercase();
        let last = lower.trim_start_matches('/').trim_start_matches("device:");
        if last.starts_with("cuda") || last.starts_with("gpu") {
            RanOn::Gpu
        } else if last.starts_with("cpu") {
            RanOn::Cpu
        } else {
            RanOn::Other
        }
    }
}

/// A report line that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultLineError {
    /// The text after the marker is not a JSON object of the expected shape.
    #[error(
        "line {line} of the example's output: `{excerpt}` is not a valid {RESULT_PREFIX} report \
         (at `{field}`: {message}); the example must print `{RESULT_PREFIX} ` followed by one JSON object on one line"
    )]
    Malformed {
        /// 1-based line number in the output.
        line: usize,
        /// The start of the offending line.
        excerpt: String,
        /// Path of the offending field (`.` for the whole document).
        field: String,
        /// What serde_json said.
        message: String,
    },
}

/// The last report line in `output`: its 1-based line number and the text after the marker.
pub fn find_result_line(output: &str) -> Option<(usize, &str)> {
    output
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let rest = line.trim_start().strip_prefix(RESULT_PREFIX)?;
            // `STACKPIN_RESULTS …` or `STACKPIN_RESULT_X` are other markers, not ours.
            if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
                return None;
            }
            Some((i + 1, rest.trim()))
        })
        .last()
}

/// Reads the example's report from its captured output; `Ok(None)` when it printed none.
pub fn parse_output(output: &str) -> Result<Option<ExampleReport>, ResultLineError> {
    let Some((line, json)) = find_result_line(output) else {
        return Ok(None);
    };
    parse_report(json).map(Some).map_err(|(field, message)| {
        let full = format!("{RESULT_PREFIX} {json}");
        let mut excerpt: String = full.chars().take(EXCERPT_CHARS).collect();
        if full.chars().count() > EXCERPT_CHARS {
            excerpt.push('…');
        }
        ResultLineError::Malformed {
            line,
            excerpt,
            field,
            message,
        }
    })
}

/// Parses the JSON after the marker; on failure, the field path and serde's message.
fn parse_report(json: &str) -> Result<ExampleReport, (String, String)> {
    let mut de = serde_json::Deserializer::from_str(json);
    let report: ExampleReport = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        (field, e.into_inner().to_string())
    })?;
    de.end().map_err(|e| (".".to_string(), e.to_string()))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TORCH_OUTPUT: &str = "\
classify.py: ResNet-18 style, batch 64, 30 steps, 224x224 images, 10 classes, on cuda (NVIDIA A2)
step 3/30 loss 2.2000 reserved 2300 MiB
step 30/30 loss 0.4000 reserved 2304 MiB
STACKPIN_RESULT {\"batch\": 64, \"steps\": 30, \"peak_reserved_mib\": 2304.0, \"peak_allocated_mib\": 1890.5, \"context_mib\": 256.0, \"samples_per_s\": 410.2, \"device\": \"cuda\", \"versions\": {\"torch\": \"2.5.1+cu124\", \"cuda\": \"12.4\", \"cudnn\": 90100, \"python\": \"3.11.7\"}}
";

    #[test]
    fn reads_every_documented_key_from_the_torch_example() {
        let report = parse_output(TORCH_OUTPUT).expect("valid").expect("present");
        assert_eq!(report.batch, Some(64));
        assert_eq!(report.steps, Some(30));
        assert_eq!(report.peak_reserved_mib, Some(2304.0));
        assert_eq!(report.peak_allocated_mib, Some(1890.5));
        assert_eq!(report.context_mib, Some(256.0));
        assert_eq!(report.samples_per_s, Some(410.2));
        assert_eq!(report.device.as_deref(), Some("cuda"));
        assert_eq!(report.versions["torch"], "2.5.1+cu124");
        assert_eq!(report.versions["cudnn"], 90100);
    }

    #[test]
    fn no_marker_means_no_report() {
        assert_eq!(parse_output("step 1/2\nstep 2/2\n").expect("valid"), None);
        assert_eq!(parse_output("").expect("valid"), None);
    }

    #[test]
    fn the_last_report_line_wins() {
        let out = "STACKPIN_RESULT {\"batch\": 16}\nmore\nSTACKPIN_RESULT {\"batch\": 64}\ntrailing log\n";
        let report = parse_output(out).expect("valid").expect("present");
        assert_eq!(report.batch, Some(64));
    }

    #[test]
    fn all_keys_are_optional_and_unknown_keys_are_ignored() {
        let report =
            parse_output("STACKPIN_RESULT {\"future_key\": [1, 2], \"peak_allocated_mib\": null}")
                .expect("valid")
                .expect("present");
        assert_eq!(report, ExampleReport::default());
    }

    #[test]
    fn marker_is_found_after_indentation_and_before_windows_line_ends() {
        let out = "log\r\n   STACKPIN_RESULT {\"steps\": 3}\r\n";
        let report = parse_output(out).expect("valid").expect("present");
        assert_eq!(report.steps, Some(3));
        assert_eq!(find_result_line(out).map(|(n, _)| n), Some(2));
    }

    #[test]
    fn similar_markers_are_not_ours() {
        let out = "STACKPIN_RESULTS {\"batch\": 1}\nSTACKPIN_RESULT_V2 {}\n";
        assert_eq!(find_result_line(out), None);
    }

    #[test]
    fn malformed_json_names_the_line_and_quotes_it() {
        let out = "ok\nok\nSTACKPIN_RESULT {\"batch\": 64,\n";
        let err = parse_output(out).expect_err("malformed");
        let ResultLineError::Malformed { line, excerpt, .. } = &err;
        assert_eq!(*line, 3);
        assert!(excerpt.starts_with("STACKPIN_RESULT {\"batch\": 64,"));
        assert!(
            err.to_string().contains("line 3 of the example's output"),
            "{err}"
        );
    }

    #[test]
    fn a_wrongly_typed_key_names_the_field() {
        let err =
            parse_output("STACKPIN_RESULT {\"batch\": \"sixty-four\"}").expect_err("wrong type");
        let ResultLineError::Malformed { field, .. } = &err;
        assert_eq!(field, "batch");
    }

    #[test]
    fn trailing_text_after_the_object_is_malformed() {
        assert!(parse_output("STACKPIN_RESULT {} extra").is_err());
        assert!(parse_output("STACKPIN_RESULT").is_err());
        assert!(parse_output("STACKPIN_RESULT [1]").is_err());
    }

    #[test]
    fn a_long_bad_line_is_quoted_shortened() {
        let out = format!("STACKPIN_RESULT {{\"device\": \"{}", "x".repeat(5000));
        let ResultLineError::Malformed { excerpt, .. } = parse_output(&out).expect_err("malformed");
        assert!(excerpt.chars().count() <= EXCERPT_CHARS + 1);
        assert!(excerpt.ends_with('…'));
    }

    #[test]
    fn devices_are_read_in_torch_and_tensorflow_spellings() {
        for gpu in ["cuda", "cuda:0", "CUDA:1", "GPU", "/GPU:0", "/device:GPU:0"] {
            assert_eq!(RanOn::of(Some(gpu)), RanOn::Gpu, "{gpu}");
        }
        for cpu in ["cpu", "/CPU:0", "/device:CPU:0"] {
            assert_eq!(RanOn::of(Some(cpu)), RanOn::Cpu, "{cpu}");
        }
        assert_eq!(RanOn::of(Some("mps")), RanOn::Other);
        assert_eq!(RanOn::of(None), RanOn::Unreported);
    }

    #[test]
    fn framework_peak_prefers_the_reserved_pool() {
        let both = ExampleReport {
            peak_reserved_mib: Some(2304.0),
            peak_allocated_mib: Some(1890.0),
            ..Default::default()
        };
        assert_eq!(
            both.framework_peak_mib(),
            Some((2304.0, FrameworkCounter::Reserved))
        );
        let tf = ExampleReport {
            peak_allocated_mib: Some(1500.0),
            ..Default::default()
        };
        assert_eq!(
            tf.framework_peak_mib(),
            Some((1500.0, FrameworkCounter::Allocated))
        );
        assert_eq!(ExampleReport::default().framework_peak_mib(), None);
    }
}
