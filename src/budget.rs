//! The inference memory budget for a line-side controller: what each process costs on the GPU,
//! what the same models would cost in one process, and the card to plan for.
//!
//! A process pays a fixed cost once, whatever its models: the CUDA context, the framework
//! runtime (cuDNN/cuBLAS kernels and handles) and its workspaces. Models add weights
//! (parameters × bytes per parameter) and activations (which grow with the input's area). For
//! small models the fixed cost dwarfs the models, so merging processes saves far more than FP16
//! or smaller inputs; the budget shows all three side by side so the user sees it.
//!
//! Pure arithmetic on a parsed budget file. Reading the file and printing are the CLI's;
//! measuring real fixed costs is `stackpin measure`'s, and its numbers override the defaults here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::size::{Mib, ParamCount};

/// CUDA context per process, MiB. With lazy module loading (CUDA ≥ 11.7, PyTorch ≥ 1.13's
/// default) measured contexts are 287 MB (pytorch/pytorch PR #86509), "~300MB" (ptrblck in
/// pytorch/pytorch#107667) and a flat 256 MiB (invoke-ai/InvokeAI#9413, RTX 3090,
/// torch 2.7.1+cu128); see reference/vram-measurement.md §3. Eager loading or older CUDA costs 0.6–1.7 GB:
/// override `context_mib` with a measured value there.
pub const DEFAULT_CONTEXT_MIB: f64 = 300.0;

/// Framework runtime per process, MiB: cuDNN/cuBLAS kernels and handles loaded on first use.
/// The guide gives 100–300 MB; this is the middle. ptrblck's "around 400MB" for context plus
/// kernels together (pytorch/pytorch#109888) agrees with 300 + 200 within the spread.
pub const DEFAULT_RUNTIME_MIB: f64 = 200.0;

/// Workspaces and the allocator pool per process, MiB. cuBLAS keeps 8.125 MiB per handle and
/// stream (`CUBLAS_WORKSPACE_CONFIG=:4096:2:16:8`) and never frees it (PyTorch notes, "cuBLAS
/// workspaces"); cuDNN's workspace depends on the algorithm; the caching allocator holds its
/// 2 MiB / 20 MiB blocks after the first batch. No source measures the sum, so this is a
/// rounded planning estimate (reference §7, marked analysis): measure it and override.
pub const DEFAULT_WORKSPACE_MIB: f64 = 128.0;

/// The guide's planning rule: reserve 1,024 MiB per process on top of the models…
pub const PLANNING_MIB_PER_PROCESS: f64 = 1024.0;

/// …and double the sum, for the allocator's history, fragmentation and whatever runs beside it.
pub const PLANNING_FACTOR: f64 = 2.0;

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

/// A budget file that cannot be used, naming the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("{}{}: {field}: {message}", file.display(), place(*line, *column))]
    Syntax {
        file: PathBuf,
        line: Option<u64>,
        column: Option<u64>,
        field: String,
        message: String,
    },
    #[error("{}: `processes` is empty; list at least one process with its models", file.display())]
    NoProcesses { file: PathBuf },
    #[error("{}: {field}: `models` is empty; list the models this process loads", file.display())]
    NoModels { file: PathBuf, field: String },
    #[error(
        "{}: {field}: give `params` (e.g. 5M, with `precision`) or a measured `weights_mib`",
        file.display()
    )]
    NoWeights { file: PathBuf, field: String },
    #[error(
        "{}: {field}: `input` is set but `reference_input` is not; give the input size \
         `activations_mib` was measured at, so the activations can be scaled",
        file.display()
    )]
    NoReferenceInput { file: PathBuf, field: String },
}

fn place(line: Option<u64>, column: Option<u64>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// The budget file, as written (see `examples/budget-two-cameras.yaml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetFile {
    /// The card to check the budget against (optional).
    #[serde(default)]
    pub gpu_mib: Option<Mib>,
    /// Measured fixed costs for every process; a process's own values win over these, and
    /// stackpin's defaults fill whatever neither gives.
    #[serde(default)]
    pub context_mib: Option<Mib>,
    #[serde(default)]
    pub runtime_mib: Option<Mib>,
    #[serde(default)]
    pub workspace_mib: Option<Mib>,
    pub processes: Vec<ProcessSpec>,
}

/// One process on the card and the models it loads.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    pub name: String,
    #[serde(default)]
    pub context_mib: Option<Mib>,
    #[serde(default)]
    pub runtime_mib: Option<Mib>,
    #[serde(default)]
    pub workspace_mib: Option<Mib>,
    pub models: Vec<ModelSpec>,
}

/// One model: its weights (from a parameter count or measured) and its activations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub name: String,
    #[serde(default)]
    pub params: Option<ParamCount>,
    /// Measured weight memory; wins over `params`.
    #[serde(default)]
    pub weights_mib: Option<Mib>,
    /// Defaults to fp32, the frameworks' default.
    #[serde(default)]
    pub precision: Precision,
    /// Activation memory at `reference_input`.
    pub activations_mib: Mib,
    #[serde(default)]
    pub input: Option<InputSize>,
    #[serde(default)]
    pub reference_input: Option<InputSize>,
}

/// The numeric precision weights and activations are held in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    Fp32,
    Fp16,
    Bf16,
    Int8,
}

impl Precision {
    /// Bytes per parameter.
    pub fn bytes(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Fp16 | Precision::Bf16 => 2.0,
            Precision::Int8 => 1.0,
        }
    }
}

/// An image input: `640` (square) or `"640x480"`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InputSize {
    pub width: f64,
    pub height: f64,
}

impl InputSize {
    fn area(self) -> f64 {
        self.width * self.height
    }
}

impl<'de> Deserialize<'de> for InputSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Side {
            Square(f64),
            Text(String),
        }
        let bad = |what: &str| {
            serde::de::Error::custom(format!(
                "`{what}` is not an input size; write 640 for a square or \"640x480\""
            ))
        };
        let (width, height) = match Side::deserialize(deserializer)? {
            Side::Square(side) => (side, side),
            Side::Text(text) => {
                let (w, h) = text.split_once(['x', 'X']).unwrap_or((&text, &text));
                match (w.trim().parse::<f64>(), h.trim().parse::<f64>()) {
                    (Ok(w), Ok(h)) => (w, h),
                    _ => return Err(bad(&text)),
                }
            }
        };
        if width.is_finite() && height.is_finite() && width > 0.0 && height > 0.0 {
            Ok(InputSize { width, height })
        } else {
            Err(bad(&format!("{width}x{height}")))
        }
    }
}

/// The budget: per process, in one process, and the card to plan for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub processes: Vec<ProcessBudget>,
    /// Every process as listed.
    pub total_mib: f64,
    /// The same models in one process: one fixed cost (the largest) instead of one each.
    pub one_process_total_mib: f64,
    /// `total_mib − one_process_total_mib`: the fixed costs merged away.
    pub saving_mib: f64,
    /// (1,024 MiB × processes + the models' weights and activations) × 2, as the guide plans.
    pub recommended_gpu_mib: f64,
    /// The same rule with one process.
    pub one_process_recommended_gpu_mib: f64,
    pub levers: Levers,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<CardCheck>,
    /// Fixed costs that make the budget doubtful: a zero, or none given at all.
    pub warnings: Vec<String>,
}

/// One process's cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessBudget {
    pub name: String,
    /// context + runtime + workspace.
    pub fixed_mib: f64,
    pub context_mib: f64,
    pub runtime_mib: f64,
    pub workspace_mib: f64,
    /// Which of the three fixed costs are stackpin's defaults rather than given values.
    pub defaults_used: Vec<&'static str>,
    /// Which were given in the file (measured, or typed by hand).
    pub given: Vec<&'static str>,
    pub total_mib: f64,
    pub models: Vec<ModelBudget>,
}

/// One model's cost inside its process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelBudget {
    pub name: String,
    pub precision: Precision,
    pub weights_mib: f64,
    pub activations_mib: f64,
    /// Input area ÷ reference area; activations were multiplied by it.
    pub activation_scale: f64,
}

/// What the tempting levers would save, to set beside `saving_mib`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Levers {
    /// FP32 models to FP16: half their weights and activations (0 when none is FP32).
    pub fp16_saving_mib: f64,
    /// Half the input side (a quarter of the area): three quarters of all activations.
    pub half_input_side_saving_mib: f64,
}

/// The budget against a given card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardCheck {
    pub gpu_mib: f64,
    pub percent: f64,
    /// `total_mib` fits on the card.
    pub fits: bool,
    /// The card is at least `recommended_gpu_mib`.
    pub meets_recommendation: bool,
}

/// Parses budget YAML; `file` only names the file in errors.
pub fn parse(text: &str, file: &Path) -> Result<BudgetFile, BudgetError> {
    let mut field = String::new();
    let options = serde_saphyr::options! { strict_booleans: true };
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            field = e.path().to_string();
            e.into_inner()
        })
    })
    .map_err(|e: serde_saphyr::Error| {
        let location = e.location().filter(|l| l.line() > 0);
        let message = bare_message(&e.without_snippet().to_string());
        BudgetError::Syntax {
            file: file.to_path_buf(),
            line: location.map(|l| l.line()),
            column: location.map(|l| l.column()),
            field: if field.is_empty() { ".".into() } else { field },
            message,
        }
    })
}

/// serde-saphyr puts the location into the message, before or after it; the error prints the
/// location once, as `file:line:column`, so the message drops it.
fn bare_message(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let first = match first.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((location, rest)) if location.contains("column") => rest,
        _ => first,
    };
    match first.rsplit_once(" at line ") {
        Some((rest, location)) if location.contains(", column ") => rest.to_string(),
        _ => first.to_string(),
    }
}

/// Computes the budget; `file` only names the file in errors.
pub fn compute(spec: &BudgetFile, file: &Path) -> Result<Budget, BudgetError> {
    if spec.processes.is_empty() {
        return Err(BudgetError::NoProcesses {
            file: file.to_path_buf(),
        });
    }
    let mut processes = Vec::new();
    for (i, process) in spec.processes.iter().enumerate() {
        let field = format!("processes[{i}] ({})", process.name);
        processes.push(process_budget(process, spec, file, &field)?);
    }
    let models: Vec<&ModelBudget> = processes.iter().flat_map(|p| &p.models).collect();
    let models_mib: f64 = models
        .iter()
        .map(|m| m.weights_mib + m.activations_mib)
        .sum();
    let total_mib: f64 = processes.iter().map(|p| p.total_mib).sum();
    let largest_fixed = processes.iter().map(|p| p.fixed_mib).fold(0.0, f64::max);
    let one_process_total_mib = largest_fixed + models_mib;
    let plan = |count: f64| (PLANNING_MIB_PER_PROCESS * count + models_mib) * PLANNING_FACTOR;
    let recommended_gpu_mib = plan(processes.len() as f64);
    let levers = Levers {
        fp16_saving_mib: models
            .iter()
            .filter(|m| m.precision == Precision::Fp32)
            .map(|m| (m.weights_mib + m.activations_mib) / 2.0)
            .sum(),
        half_input_side_saving_mib: models.iter().map(|m| m.activations_mib * 0.75).sum(),
    };
    let gpu = spec.gpu_mib.map(|Mib(gpu_mib)| CardCheck {
        gpu_mib,
        percent: total_mib * 100.0 / gpu_mib,
        fits: total_mib <= gpu_mib,
        meets_recommendation: gpu_mib >= recommended_gpu_mib,
    });
    let warnings = fixed_cost_warnings(&processes);
    Ok(Budget {
        warnings,
        total_mib,
        one_process_total_mib,
        saving_mib: total_mib - one_process_total_mib,
        recommended_gpu_mib,
        one_process_recommended_gpu_mib: plan(1.0),
        levers,
        gpu,
        processes,
    })
}

/// A zero context + runtime is what a baseline that measured nothing (or ran on the CPU) hands
/// out; no process runs CUDA for free. No given context at all means the budget rests on
/// stackpin's published-figure estimates. Both are said, neither refused: the file is the user's.
fn fixed_cost_warnings(processes: &[ProcessBudget]) -> Vec<String> {
    let mut out = Vec::new();
    for p in processes {
        if p.context_mib + p.runtime_mib <= 0.0 {
            out.push(format!(
                "{}: context_mib + runtime_mib is 0 MiB, but every process that touches CUDA pays a context (256-300 MiB measured with lazy loading); \
                 a 0 comes from a baseline that ran on the CPU or measured nothing. Measure again with `stackpin measure --baseline --manifest M` on the GPU, \
                 or remove the zeros to use the defaults",
                p.name
            ));
        } else if p.fixed_mib <= 0.0 {
            out.push(format!("{}: the fixed cost is 0 MiB", p.name));
        }
    }
    let guessed: Vec<&str> = processes
        .iter()
        .filter(|p| p.defaults_used.contains(&"context_mib"))
        .map(|p| p.name.as_str())
        .collect();
    if !guessed.is_empty() {
        out.push(format!(
            "no measured context_mib for {}: the fixed cost there is stackpin's default estimate; \
             measure it with `stackpin measure --baseline --manifest M` and put the figure in the file",
            guessed.join(", ")
        ));
    }
    out
}

fn process_budget(
    process: &ProcessSpec,
    shared: &BudgetFile,
    file: &Path,
    field: &str,
) -> Result<ProcessBudget, BudgetError> {
    if process.models.is_empty() {
        return Err(BudgetError::NoModels {
            file: file.to_path_buf(),
            field: field.to_string(),
        });
    }
    let mut defaults_used = Vec::new();
    let mut given = Vec::new();
    let mut pick =
        |own: Option<Mib>, all: Option<Mib>, default: f64, name: &'static str| match own.or(all) {
            Some(Mib(value)) => {
                given.push(name);
                value
            }
            None => {
                defaults_used.push(name);
                default
            }
        };
    let context_mib = pick(
        process.context_mib,
        shared.context_mib,
        DEFAULT_CONTEXT_MIB,
        "context_mib",
    );
    let runtime_mib = pick(
        process.runtime_mib,
        shared.runtime_mib,
        DEFAULT_RUNTIME_MIB,
        "runtime_mib",
    );
    let workspace_mib = pick(
        process.workspace_mib,
        shared.workspace_mib,
        DEFAULT_WORKSPACE_MIB,
        "workspace_mib",
    );
    let models = process
        .models
        .iter()
        .enumerate()
        .map(|(j, m)| model_budget(m, file, &format!("{field}.models[{j}] ({})", m.name)))
        .collect::<Result<Vec<_>, _>>()?;
    let fixed_mib = context_mib + runtime_mib + workspace_mib;
    let total_mib = fixed_mib
        + models
            .iter()
            .map(|m| m.weights_mib + m.activations_mib)
            .sum::<f64>();
    Ok(ProcessBudget {
        name: process.name.clone(),
        fixed_mib,
        context_mib,
        runtime_mib,
        workspace_mib,
        defaults_used,
        given,
        total_mib,
        models,
    })
}

fn model_budget(model: &ModelSpec, file: &Path, field: &str) -> Result<ModelBudget, BudgetError> {
    let weights_mib = match (model.weights_mib, model.params) {
        (Some(Mib(measured)), _) => measured,
        (None, Some(ParamCount(params))) => params * model.precision.bytes() / BYTES_PER_MIB,
        (None, None) => {
            return Err(BudgetError::NoWeights {
                file: file.to_path_buf(),
                field: field.to_string(),
            });
        }
    };
    let activation_scale = match (model.input, model.reference_input) {
        (Some(input), Some(reference)) => input.area() / reference.area(),
        (None, _) => 1.0,
        (Some(_), None) => {
            return Err(BudgetError::NoReferenceInput {
                file: file.to_path_buf(),
                field: field.to_string(),
            });
        }
    };
    Ok(ModelBudget {
        name: model.name.clone(),
        precision: model.precision,
        weights_mib,
        activations_mib: model.activations_mib.0 * activation_scale,
        activation_scale,
    })
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for BudgetError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_CAMERAS: &str = include_str!("../examples/budget-two-cameras.yaml");

    fn budget(text: &str) -> Budget {
        let path = Path::new("budget.yaml");
        let spec = parse(text, path).expect("parses");
        compute(&spec, path).expect("computes")
    }

    fn one_model(model: &str) -> Budget {
        budget(&format!(
            "processes:\n  - name: p\n    models:\n      - {{name: m, {model}}}\n"
        ))
    }

    #[test]
    fn five_million_parameters_weigh_about_20_mb_in_fp32_and_10_in_fp16() {
        let fp32 = one_model("params: 5M, precision: fp32, activations_mib: 0");
        let fp16 = one_model("params: 5M, precision: fp16, activations_mib: 0");
        let weights = |b: &Budget| b.processes[0].models[0].weights_mib;
        assert!((weights(&fp32) - 19.07).abs() < 0.01, "{}", weights(&fp32));
        assert!((weights(&fp16) - 9.54).abs() < 0.01, "{}", weights(&fp16));
        assert!((fp32.levers.fp16_saving_mib - 9.54).abs() < 0.01);
        assert_eq!(fp16.levers.fp16_saving_mib, 0.0);
    }

    #[test]
    fn quarter_of_the_input_side_divides_activations_by_16() {
        let b = one_model("params: 5M, activations_mib: 80, reference_input: 640, input: 160");
        assert_eq!(b.processes[0].models[0].activations_mib, 5.0);
        let b =
            one_model("params: 5M, activations_mib: 80, reference_input: 640x480, input: 320x240");
        assert_eq!(b.processes[0].models[0].activations_mib, 20.0);
    }

    #[test]
    fn two_cameras_pay_two_fixed_costs_and_merging_saves_exactly_one() {
        let b = budget(TWO_CAMERAS);
        let fixed = DEFAULT_CONTEXT_MIB + DEFAULT_RUNTIME_MIB + DEFAULT_WORKSPACE_MIB;
        assert_eq!(b.processes.len(), 2);
        assert!(b.processes.iter().all(|p| p.fixed_mib == fixed));
        let second = &b.processes[1].models[0];
        assert!(
            (second.weights_mib - 9.5).abs() < 0.05,
            "{}",
            second.weights_mib
        );
        assert_eq!(second.activations_mib, 20.0);
        let models = 2.0 * 10_000_000.0 / BYTES_PER_MIB + 80.0 + 20.0;
        assert!((b.total_mib - (2.0 * fixed + models)).abs() < 1e-9);
        assert!((b.saving_mib - fixed).abs() < 1e-9, "{}", b.saving_mib);
        assert!((b.recommended_gpu_mib - 2.0 * (2.0 * 1024.0 + models)).abs() < 1e-9);
        // The levers the guide warns about save far less than the merge.
        assert!(b.levers.half_input_side_saving_mib < b.saving_mib / 4.0);
    }

    #[test]
    fn measured_fixed_costs_override_defaults_process_first() {
        let b = budget(
            "context_mib: 400\nprocesses:\n  - name: a\n    runtime_mib: 150\n    models:\n      \
             - {name: m, weights_mib: 10, activations_mib: 5}\n  - name: b\n    context_mib: 1GB\n    \
             models:\n      - {name: m, weights_mib: 10, activations_mib: 5}\n",
        );
        let (a, second) = (&b.processes[0], &b.processes[1]);
        assert_eq!((a.context_mib, a.runtime_mib), (400.0, 150.0));
        assert_eq!(a.defaults_used, vec!["workspace_mib"]);
        assert_eq!(second.context_mib, 1024.0);
        // Merged, the one process pays the larger fixed cost.
        assert_eq!(b.one_process_total_mib, second.fixed_mib + 30.0);
    }

    #[test]
    fn a_zero_context_and_runtime_is_warned_about_not_taken_silently() {
        let b = budget(
            "context_mib: 0\nruntime_mib: 0\nprocesses:\n  - name: cam\n    models:\n      \
             - {name: m, weights_mib: 10, activations_mib: 5}\n",
        );
        let p = &b.processes[0];
        assert_eq!(p.given, vec!["context_mib", "runtime_mib"]);
        assert_eq!(p.defaults_used, vec!["workspace_mib"]);
        assert_eq!(b.warnings.len(), 1, "{:?}", b.warnings);
        assert!(b.warnings[0].starts_with("cam: context_mib + runtime_mib is 0 MiB"));
        assert!(b.warnings[0].contains("measure --baseline"));
    }

    #[test]
    fn a_missing_context_is_named_as_a_default_estimate_and_a_measured_one_is_not() {
        let b = budget(TWO_CAMERAS);
        assert_eq!(b.warnings.len(), 1, "{:?}", b.warnings);
        assert!(
            b.warnings[0].contains("no measured context_mib for camera-1, camera-2"),
            "{:?}",
            b.warnings
        );
        let measured = budget(
            "context_mib: 412\nruntime_mib: 0\nprocesses:\n  - name: cam\n    models:\n      \
             - {name: m, weights_mib: 10, activations_mib: 5}\n",
        );
        assert!(measured.warnings.is_empty(), "{:?}", measured.warnings);
    }

    #[test]
    fn a_card_smaller_than_the_total_does_not_fit() {
        let b = budget(
            "gpu_mib: 512\nprocesses:\n  - name: a\n    models:\n      \
             - {name: m, weights_mib: 10, activations_mib: 5}\n",
        );
        let card = b.gpu.expect("card checked");
        assert!(!card.fits && !card.meets_recommendation);
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let path = Path::new("cams.yaml");
        let spec = parse(
            "processes:\n  - name: a\n    models:\n      - {name: det, activations_mib: 5}\n",
            path,
        )
        .expect("parses");
        let err = compute(&spec, path).expect_err("no weights").to_string();
        assert!(
            err.starts_with("cams.yaml: processes[0] (a).models[0] (det)"),
            "{err}"
        );
        let err = parse("processes:\n  - name: a\n    modles: []\n", path)
            .expect_err("typo")
            .to_string();
        assert!(err.starts_with("cams.yaml:3:"), "{err}");
        assert!(err.contains("modles"), "{err}");
    }

    #[test]
    fn parse_errors_print_the_location_once() {
        assert_eq!(
            bare_message("unknown variant `fp8` at line 6, column 20"),
            "unknown variant `fp8`"
        );
        assert_eq!(
            bare_message("line 3 column 5: invalid type"),
            "invalid type"
        );
        assert_eq!(bare_message("plain"), "plain");
        let err = parse(
            "processes:\n  - name: a\n    models: [{name: m, precision: fp8}]\n",
            Path::new("p.yaml"),
        )
        .expect_err("bad precision")
        .to_string();
        assert_eq!(err.matches("line").count(), 0, "{err}");
    }

    #[test]
    fn an_input_without_its_reference_is_refused() {
        let path = Path::new("b.yaml");
        let spec = parse(
            "processes:\n  - name: a\n    models:\n      \
             - {name: d, params: 5M, activations_mib: 80, input: 320}\n",
            path,
        )
        .expect("parses");
        let err = compute(&spec, path).expect_err("no reference");
        assert!(matches!(err, BudgetError::NoReferenceInput { .. }), "{err}");
    }
}
