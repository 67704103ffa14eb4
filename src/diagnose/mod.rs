//! Reads a failure (an example log, an installer log, a pasted traceback, a `failed-run.yaml`)
//! and names the layer of the stack that failed, the cause, and the fix.
//!
//! [`diagnose`] is what `prove` and `install` call; the `diagnose` command calls [`diagnose_in`]
//! with the host's context. The tiers, in order ([`diagnose_in`] documents the precedence):
//! stackpin's own texts and failed-run records ([`families::own`], *known*); the mechanism
//! families ([`families`]: loader failures by library and place, error-code and Xid tables,
//! provider lists, version pairs, installer lines), whose *decisive* findings outrank the
//! catalogue; the catalogue of real messages ([`catalogue`], ranked by [`matcher`]: specific
//! before generic, then the causal order hardware → driver → toolkit → library → memory, then
//! the first line; *known*); the other family findings and then the broad vocabulary rules
//! ([`broad`]), both *likely*. When nothing matches it returns `None` and
//! [`Diagnosis::unknown`] says so plainly: it never guesses from nothing. [`context_fix`] then
//! fits a driver-layer fix to the host (container, WSL, kernel without the module).
//!
//! This module knows nothing about manifests or the archive; it reads text and, when given one,
//! a [`HostContext`] the caller probed.

pub mod broad;
pub mod catalogue;
pub mod context_fix;
pub mod excerpt;
pub mod families;
pub mod matcher;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::host::context::HostContext;
use crate::record::FailedRun;
use families::Mechanism;

/// The layer of the stack a failure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureLayer {
    /// The GPU driver, its installer, NVML, or a driver too old for the runtime.
    Driver,
    /// The CUDA toolkit, its installer, nvcc, cuDNN, or the runtime the library cannot load.
    Toolkit,
    /// The training library: wrong build, missing wheel, its own kernels.
    Library,
    /// GPU memory: the batch (or another process) does not fit.
    Memory,
    /// The card itself: off the bus, ECC, lost.
    Hardware,
    /// No known failure matched.
    Unknown,
}

impl FailureLayer {
    /// The lowercase name used in JSON and human output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Driver => "driver",
            Self::Toolkit => "toolkit",
            Self::Library => "library",
            Self::Memory => "memory",
            Self::Hardware => "hardware",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for FailureLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How sure a diagnosis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// A catalogue entry (or stackpin's own message) matched: this exact failure was seen and
    /// resolved in public; `source` names where.
    Known,
    /// A family rule or a broad rule matched: the mechanism or the vocabulary places the
    /// message on a layer, the cause is likely.
    Likely,
    /// Nothing matched.
    Unknown,
}

/// What went wrong, where, and what to do. JSON keys `layer`, `cause`, `fix`, `evidence` are the
/// contract; `confidence`, `second_layer`, `context`, `id`, `line` and `source` are extra.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    /// The layer that failed, or `unknown`.
    pub layer: FailureLayer,
    /// `known` (a catalogue entry), `likely` (a family or broad rule; the cause starts with
    /// "likely:"), or `unknown`.
    pub confidence: Confidence,
    /// The other layer an ambiguous message may belong to (`unspecified launch failure`: the
    /// card, or a kernel of the library).
    pub second_layer: Option<FailureLayer>,
    /// One sentence naming the cause.
    pub cause: String,
    /// What to do next.
    pub fix: String,
    /// The host facts that chose the fix (`a container (/.dockerenv exists)`), when any did.
    pub context: Option<String>,
    /// The log line that matched (`null` when nothing matched).
    pub evidence: Option<String>,
    /// The catalogue entry or rule (`unknown` when nothing matched).
    pub id: String,
    /// 1-based line of the evidence in the input.
    pub line: Option<usize>,
    /// Where this failure was seen in public (issue thread or upstream source).
    pub source: Option<String>,
}

impl Diagnosis {
    /// The plain "nothing matched" answer: no layer, no guess, and what to look at instead.
    pub fn unknown() -> Self {
        Self {
            layer: FailureLayer::Unknown,
            confidence: Confidence::Unknown,
            second_layer: None,
            cause: "no known failure matched".to_string(),
            fix: "Look for the first line that says error, failed or fatal: the first error \
                  usually causes the rest. Send the whole log (not only its last line) with the \
                  output of `nvidia-smi` and `stackpin doctor MANIFEST --json`; the example and installer \
                  logs are under the stack's logs/ folder in the archive."
                .to_string(),
            context: None,
            evidence: None,
            id: "unknown".to_string(),
            line: None,
            source: None,
        }
    }
}

/// Names the layer, cause and fix of the failure in `text`, without host context (a log from
/// elsewhere); `None` when nothing matches (see [`Diagnosis::unknown`]).
pub fn diagnose(text: &str) -> Option<Diagnosis> {
    diagnose_in(text, None)
}

/// Names the layer, cause and fix of the failure in `text`; `context`, when given, is the host
/// the failure happened on and decides the fix where the host matters (a container, WSL, a
/// kernel the driver was not built for).
///
/// The order: a `failed-run.yaml` is read through its last lines; stackpin's own texts
/// (known); a decisive family finding (a mechanism with evidence the catalogue cannot see),
/// unless the catalogue names a hardware fault; a catalogue entry (known); any family finding
/// (likely); a broad rule (likely).
pub fn diagnose_in(text: &str, context: Option<&HostContext>) -> Option<Diagnosis> {
    if let Some(run) = families::own::failed_run(text) {
        return from_failed_run(&run, context);
    }
    let (diagnosis, mechanism) = if let Some(hit) = families::own::find(text) {
        let d = Diagnosis {
            layer: hit.layer,
            confidence: Confidence::Known,
            second_layer: None,
            cause: hit.cause.to_string(),
            fix: hit.fix.to_string(),
            context: None,
            evidence: Some(hit.evidence),
            id: hit.id.to_string(),
            line: Some(hit.line_number),
            source: Some(families::own::SOURCE.to_string()),
        };
        (d, Mechanism::DriverAccess)
    } else {
        let findings = families::all(text);
        let family = families::best_of(&findings);
        let entry = matcher::best(text);
        let entry_is_hardware = entry.as_ref().is_some_and(|h| {
            h.entry.layer == FailureLayer::Hardware
                && h.entry.specificity == catalogue::Specificity::Specific
        });
        match (family, entry) {
            (Some(f), _) if f.decisive && !entry_is_hardware => from_finding(f, text),
            (_, Some(hit)) => {
                let second = second_layer_of_entry(hit.entry.id)
                    .or_else(|| second_layer_on_line(&findings, hit.line_number));
                from_entry(hit, second, text)
            }
            (Some(f), None) => from_finding(f, text),
            (None, None) => from_broad(broad::best(text)?, text),
        }
    };
    let context = context_fix::merge(context, context_fix::from_log(text));
    Some(context_fix::apply(diagnosis, mechanism, context.as_ref()))
}

fn from_finding(f: families::Finding, text: &str) -> (Diagnosis, Mechanism) {
    let d = Diagnosis {
        layer: f.layer,
        confidence: Confidence::Likely,
        second_layer: f.second,
        cause: format!("likely: {}", f.cause),
        fix: with_batch_advice(f.layer, &f.fix, text, f.before_len),
        context: None,
        evidence: Some(f.evidence),
        id: f.id.to_string(),
        line: Some(f.line_number),
        source: None,
    };
    (d, f.mechanism)
}

/// The other layer a catalogue entry's message may belong to, where the threads behind it show
/// two causes. Such an entry is never `known` ([`confidence_of_entry`]).
fn second_layer_of_entry(id: &str) -> Option<FailureLayer> {
    match id {
        // Issue 37: a kernel's illegal access at random places, across library upgrades, was a
        // faulty card (opendatalab/MinerU#426's kind); round 7's r7-14 was an out-of-memory in
        // disguise, which the fix names too.
        "lib-illegal-memory-access" => Some(FailureLayer::Hardware),
        "lib-gpu-kernel-fault-xid" => Some(FailureLayer::Hardware),
        // Almost always the data against the model's sizes, but a card that asserts where
        // another runs clean was the card (NVIDIA/pix2pixHD#6: "ok when i change to use another
        // gpu"; facebookresearch/detectron2#2006: another instance; pyg-team/pytorch_geometric#5721).
        "lib-device-side-assert" => Some(FailureLayer::Hardware),
        // Threads cited on each entry: a driver that meets the toolkit's minimum (memory taken
        // before cuDNN starts), a card that fails in every machine, a CUDA torch with no driver,
        // cuSOLVER's INTERNAL_ERROR with the GPU's memory full, a bare segfault inside libcuda
        // or nvidia-smi, an architecture list the build (not the toolkit) chose, a torch wheel's
        // bundled cuDNN shadowed by an older one, a script's CUDA_VISIBLE_DEVICES naming a GPU
        // the machine lacks.
        "drv-cudnn-insufficient-driver" => Some(FailureLayer::Memory),
        "drv-windows-code-43" => Some(FailureLayer::Hardware),
        "lib-torch-cuda-unavailable-at-extension-build" => Some(FailureLayer::Driver),
        "tk-cusolver-failed" => Some(FailureLayer::Memory),
        "lib-segfault" => Some(FailureLayer::Driver),
        "tk-nvcc-unsupported-arch" => Some(FailureLayer::Library),
        "tk-cudnn-version-mismatch" => Some(FailureLayer::Library),
        "drv-no-cuda-device" => Some(FailureLayer::Library),
        // The CUDA runfile bundles a driver: its failed step may be the driver's.
        "tk-inst-runfile-failed" => Some(FailureLayer::Driver),
        _ => None,
    }
}

/// The second layer a family names for the message on `line`: a catalogue entry remembers one
/// message on one layer, and a family that knows the message splits between two layers (an
/// invalid device ordinal inside NCCL's WARN line: the program, or the driver's count of GPUs)
/// keeps the entry from saying `known`.
fn second_layer_on_line(findings: &[families::Finding], line: usize) -> Option<FailureLayer> {
    findings
        .iter()
        .filter(|f| f.line_number == line)
        .find_map(|f| f.second)
}

/// A catalogue entry is `known` only where the threads behind its message agree on one layer:
/// a message that public threads resolve in more than one layer (`second`) is `likely`, whatever
/// tier placed it.
fn confidence_of_entry(second: Option<FailureLayer>) -> Confidence {
    if second.is_some() {
        Confidence::Likely
    } else {
        Confidence::Known
    }
}

fn from_entry(
    hit: matcher::Hit,
    second: Option<FailureLayer>,
    text: &str,
) -> (Diagnosis, Mechanism) {
    let entry = hit.entry;
    let confidence = confidence_of_entry(second);
    let cause = if confidence == Confidence::Likely {
        format!("likely: {}", entry.cause)
    } else {
        entry.cause.to_string()
    };
    let d = Diagnosis {
        layer: entry.layer,
        confidence,
        second_layer: second,
        cause,
        fix: with_batch_advice(entry.layer, entry.fix, text, hit.before_len),
        context: None,
        evidence: Some(hit.evidence),
        id: entry.id.to_string(),
        line: Some(hit.line_number),
        source: Some(entry.source.to_string()),
    };
    (d, context_fix::mechanism_of_entry(entry.id))
}

fn from_broad(hit: broad::BroadHit, text: &str) -> (Diagnosis, Mechanism) {
    let rule = hit.rule;
    let d = Diagnosis {
        layer: rule.layer,
        confidence: Confidence::Likely,
        second_layer: None,
        // Printed as "cause:    likely: …": the word says it in human output and in JSON alike.
        cause: format!("likely: {}", rule.cause),
        fix: with_batch_advice(rule.layer, rule.fix, text, hit.before_len),
        context: None,
        evidence: Some(hit.evidence),
        id: rule.id.to_string(),
        line: Some(hit.line_number),
        source: None,
    };
    (d, Mechanism::DriverAccess)
}

/// A `failed-run.yaml`: its last lines and explanation are diagnosed; when they name nothing,
/// the layer the record names is taken, with its explanation.
fn from_failed_run(run: &FailedRun, context: Option<&HostContext>) -> Option<Diagnosis> {
    let inner = diagnose_in(&families::own::failed_run_text(run), context);
    if let Some(mut d) = inner {
        d.fix = format!(
            "{} (stack {}, batch {}; log: {})",
            d.fix,
            run.stack,
            run.batch,
            run.log.display()
        );
        return Some(d);
    }
    let layer = families::own::failed_run_layer(run)?;
    Some(Diagnosis {
        layer,
        confidence: Confidence::Likely,
        second_layer: None,
        cause: format!(
            "likely: the failed run of {} names the {layer} layer: {}",
            run.stack, run.explanation
        ),
        fix: format!(
            "Read the example's log ({}) and run `stackpin diagnose` on it; `stackpin doctor MANIFEST` checks the {layer} layer.",
            run.log.display()
        ),
        context: None,
        evidence: run.last_lines.last().cloned(),
        id: "failed-run-layer".to_string(),
        line: None,
        source: None,
    })
}

/// `fix`, plus the batch to try next when the failure is memory and the log names a batch.
fn with_batch_advice(layer: FailureLayer, fix: &str, text: &str, before_len: usize) -> String {
    let mut fix = fix.to_string();
    if layer == FailureLayer::Memory
        && let Some(batch) = last_batch_size(text.get(..before_len).unwrap_or(text))
    {
        // "Runs at 32, dies at 64": the batch the log names is the one to shrink.
        fix.push_str(&format!(
            " This run used batch {batch}: try {} or the largest batch `stackpin vram --peak PEAK --batch {batch} --vram SIZE` names.",
            (batch / 2).max(1)
        ));
    }
    fix
}

/// [`diagnose`], or the plain unknown answer.
pub fn diagnose_or_unknown(text: &str) -> Diagnosis {
    diagnose(text).unwrap_or_else(Diagnosis::unknown)
}

/// The last batch size the text mentions (`--batch-size 64`, `batch_size=64`, `batch 64`,
/// `Batch size: 64`), if any.
fn last_batch_size(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    let mut found = None;
    for (at, _) in lower.match_indices("batch") {
        let rest = lower[at + "batch".len()..].trim_start_matches(['_', '-', ' ', '=', ':', '\t']);
        let rest = rest.strip_prefix("size").unwrap_or(rest);
        let rest = rest.trim_start_matches(['_', '-', ' ', '=', ':', '\t']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse::<u32>()
            && n > 0
        {
            found = Some(n);
        }
    }
    found
}

/// Errors reading the log to diagnose.
#[derive(Debug, thiserror::Error)]
pub enum DiagnoseError {
    /// The log file could not be read.
    #[error("cannot read the log {path}: {source}; check the path, or pipe the log in with `-`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Standard input could not be read.
    #[error("cannot read the log from standard input: {0}")]
    Stdin(#[source] std::io::Error),
    /// The log holds nothing.
    #[error(
        "the log {what} is empty: there is nothing to diagnose; give the file the failing command wrote (its output, `2>&1`), or pipe it in"
    )]
    Empty { what: String },
    /// No file was given and nothing is piped in.
    #[error(
        "no log given: name a log file, or pipe one in (`python train.py 2>&1 | stackpin diagnose -`)"
    )]
    NoInput,
}

/// The most of a UTF-16 log that is read (installer logs; they are small): decoding it needs
/// it whole.
const UTF16_CAP: u64 = 64 * 1024 * 1024;

/// Reads the log from `path`, or from standard input when `path` is `None` or `-`, as a bounded
/// excerpt ([`excerpt`]): a log of any size in one pass and bounded memory.
pub fn read_log(path: Option<&Path>) -> Result<excerpt::Excerpt, DiagnoseError> {
    let (reader, what): (Box<dyn Read>, String) = match path {
        Some(p) if p != Path::new("-") => {
            let file = std::fs::File::open(p).map_err(|source| DiagnoseError::Read {
                path: p.to_path_buf(),
                source,
            })?;
            (Box::new(file), p.display().to_string())
        }
        given => {
            let stdin = std::io::stdin();
            // Waiting on a terminal would look like a hang; only a bare `diagnose` gets this
            // help, an explicit `-` still reads what the user types.
            if given.is_none() && stdin.is_terminal() {
                return Err(DiagnoseError::NoInput);
            }
            (Box::new(stdin), "on standard input".to_string())
        }
    };
    let fail = |source: std::io::Error| match path {
        Some(p) if p != Path::new("-") => DiagnoseError::Read {
            path: p.to_path_buf(),
            source,
        },
        _ => DiagnoseError::Stdin(source),
    };
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, reader);
    let start = std::io::BufRead::fill_buf(&mut reader)
        .map_err(fail)?
        .to_vec();
    let excerpt = if start.starts_with(&[0xFF, 0xFE])
        || start.starts_with(&[0xFE, 0xFF])
        || utf16_without_mark(&start)
    {
        let mut bytes = Vec::new();
        reader
            .take(UTF16_CAP)
            .read_to_end(&mut bytes)
            .map_err(fail)?;
        excerpt::Excerpt::of_text(&decode_log(&bytes))
    } else {
        if start.starts_with(&[0xEF, 0xBB, 0xBF]) {
            std::io::BufRead::consume(&mut reader, 3);
        }
        excerpt::read(reader).map_err(fail)?
    };
    if excerpt.total_bytes == 0 {
        return Err(DiagnoseError::Empty { what });
    }
    Ok(excerpt)
}

/// UTF-16LE without a byte-order mark (a log PowerShell or a Windows tool wrote): most odd
/// bytes zero, the even ones not, over the first bytes.
fn utf16_without_mark(start: &[u8]) -> bool {
    let pairs: Vec<&[u8]> = start.chunks_exact(2).take(2048).collect();
    if pairs.len() < 8 {
        return false;
    }
    let ascii_le = pairs.iter().filter(|p| p[1] == 0 && p[0] != 0).count();
    ascii_le * 10 >= pairs.len() * 9
}

/// Turns log bytes into text: UTF-16 with a byte-order mark (Windows installer logs, PowerShell
/// redirection) is decoded; anything else is read as UTF-8, replacing invalid bytes.
pub fn decode_log(bytes: &[u8]) -> String {
    let utf16 = |units: &mut dyn Iterator<Item = u16>| {
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect::<String>()
    };
    let marked = bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]);
    if !marked && utf16_without_mark(bytes) {
        return utf16(
            &mut bytes
                .chunks_exact(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]])),
        );
    }
    match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(
            &mut rest
                .chunks_exact(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]])),
        ),
        [0xFE, 0xFF, rest @ ..] => utf16(
            &mut rest
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]])),
        ),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8_lossy(rest).into_owned(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for DiagnoseError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_example_is_placed_on_its_own_entry_and_layer() {
        for entry in catalogue::entries() {
            let d = diagnose(entry.example)
                .unwrap_or_else(|| panic!("{}: its example matched nothing", entry.id));
            assert_eq!(
                d.layer, entry.layer,
                "{}: example went to {}",
                entry.id, d.id
            );
            assert_eq!(d.id, entry.id, "{}: example went to {}", entry.id, d.id);
        }
    }

    #[test]
    fn nothing_matched_says_unknown_and_does_not_guess() {
        let d = diagnose_or_unknown("epoch 3/10 loss 0.412 acc 0.88\nsaved checkpoint\n");
        assert_eq!(d.layer, FailureLayer::Unknown);
        assert_eq!(d.cause, "no known failure matched");
        assert_eq!(d.evidence, None);
    }

    #[test]
    fn oom_fix_names_the_batch_the_log_used_and_points_at_vram() {
        let log = "running example --batch-size 32: ok\nrunning example --batch-size 64\n\
                   torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.";
        let d = diagnose(log).expect("an OOM");
        assert_eq!(d.layer, FailureLayer::Memory);
        assert!(d.fix.contains("batch 64: try 32"), "{}", d.fix);
        assert!(d.fix.contains("stackpin vram"), "{}", d.fix);
    }

    #[test]
    fn batch_sizes_are_read_in_their_usual_spellings() {
        assert_eq!(last_batch_size("--batch-size 64"), Some(64));
        assert_eq!(
            last_batch_size("batch_size=16 then Batch size: 48"),
            Some(48)
        );
        assert_eq!(last_batch_size("batches done"), None);
    }

    #[test]
    fn utf16_windows_logs_are_decoded() {
        let text = "CUDA Installer Failed\r\n";
        let mut bytes = vec![0xFF, 0xFE];
        for unit in text.encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        assert_eq!(decode_log(&bytes), text);
        assert_eq!(
            diagnose(&decode_log(&bytes)).expect("a hit").layer,
            FailureLayer::Toolkit
        );
    }

    #[test]
    fn json_carries_the_contract_keys() {
        let d =
            diagnose("Failed to initialize NVML: Driver/library version mismatch").expect("hit");
        let v = serde_json::to_value(&d).expect("json");
        for key in ["layer", "cause", "fix", "evidence"] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["layer"], "driver");
    }

    #[test]
    fn the_failure_kinds_round_2_missed_are_placed_on_their_layer() {
        // Real lines from the sources named in the catalogue (round-2 follow-up).
        let cases = [
            (
                "Could not load dynamic library 'cusolver64_11.dll'; dlerror: cusolver64_11.dll not found",
                "tk-cuda-libs-not-loaded",
            ),
            (
                "Could not load dynamic library 'cufft64_10.dll'; dlerror: cufft64_10.dll not found",
                "tk-cuda-libs-not-loaded",
            ),
            (
                "ImportError: libnvJitLink.so.12: cannot open shared object file: No such file or directory",
                "tk-cuda-libs-not-loaded",
            ),
            (
                "./build/all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file or directory",
                "tk-cuda-libs-not-loaded",
            ),
            (
                "Could not locate cublas64_10.dll. Please make sure it is in your library path!",
                "tk-cuda-libs-not-loaded",
            ),
            (
                "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
                "tk-cudnn-not-loaded",
            ),
            (
                "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
                "drv-cuinit-failed",
            ),
            (
                "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW",
                "drv-cuinit-failed",
            ),
            (
                "CUDA error at ../../Common/helper_cuda.h:791 code=100(cudaErrorNoDevice) \"cudaGetDeviceCount(&device_count)\"",
                "drv-no-cuda-device",
            ),
            (
                "=========     at 0x000000f0 in void kernel\n========= Invalid __global__ read of size 4",
                "lib-sanitizer-invalid-access",
            ),
            (
                "NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 4, subpartition 1",
                "hw-ecc-uncorrectable",
            ),
            (
                "[155044.078590] NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.",
                "hw-fallen-off-bus",
            ),
            (
                "Feb 15 17:37:45 Gipfeli kernel: [82659.755847] NVRM: Xid (PCI:0000:41:00): 13, Graphics Exception: ESR 0x5067b0=0x9",
                "lib-gpu-kernel-fault-xid",
            ),
            ("# nvidia-smi\nNo devices were found", "drv-smi-no-devices"),
            (
                "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link",
                "drv-wsl-libcuda-not-symlink",
            ),
            (
                "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
                "lib-rocm-build-on-nvidia",
            ),
            (
                "Requirement already satisfied: torch in ./site-packages (1.12.1+rocm5.1.1)",
                "lib-rocm-build-on-nvidia",
            ),
            (
                "PyTorch version: 2.7.1+cpu\nIs debug build: False",
                "lib-cpu-build-version",
            ),
            (
                "modprobe: ERROR: could not insert 'wl': Key was rejected by service",
                "drv-secure-boot-rejects-module",
            ),
            (
                "-> The CC version check failed:",
                "drv-module-compiler-mismatch",
            ),
            (
                "transport/p2p.cc:275 NCCL WARN Cuda failure 101 'invalid device ordinal'",
                "lib-nccl-warn",
            ),
            (
                "CUDA error: 35 (0x23) cudaErrorInsufficientDriver : CUDA driver version is insufficient",
                "drv-too-old-for-runtime",
            ),
        ];
        for (log, id) in cases {
            let got = diagnose(log).map(|d| d.id);
            assert_eq!(got.as_deref(), Some(id), "{log}");
        }
    }

    #[test]
    fn tensorflow_factory_registration_noise_alone_names_no_cause() {
        // These lines follow every TF GPU start, working or not: filing them under a layer
        // would be a guess (round 2 r2-13 stays unknown on purpose).
        let noise = "E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:477] Unable to register cuFFT factory: Attempting to register factory for plugin cuFFT when one has already been registered\n\
                     E0000 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered\n\
                     E0000 cuda_blas.cc:1418] Unable to register cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered\n";
        assert_eq!(diagnose(noise), None);
        let with_cause = format!(
            "{noise}Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file"
        );
        assert_eq!(
            diagnose(&with_cause).map(|d| d.layer),
            Some(FailureLayer::Toolkit)
        );
    }

    #[test]
    fn a_cpu_build_in_an_environment_dump_yields_to_a_specific_cause() {
        let log = "PyTorch version: 2.5.1+cpu\ntorch.OutOfMemoryError: CUDA out of memory.";
        assert_eq!(diagnose(log).map(|d| d.layer), Some(FailureLayer::Memory));
    }

    #[test]
    fn the_failure_kinds_round_3_missed_are_known_entries() {
        // Round 3's misses (tests/fixtures/failures/README.md), each placed by a specific entry
        // now.
        let cases = [
            (
                "F0303 syncedmem.cpp:78] Check failed: error == cudaSuccess (2 vs. 0)  out of memory",
                "mem-cudamalloc-error-2",
            ),
            (
                "RuntimeError: cuda runtime error (8) : invalid device function at THCTensorMathPointwise.cu:246",
                "lib-invalid-device-function",
            ),
            (
                "Skipping link: none of the wheel's tags match: cp36-none-macosx_10_9_x86_64: torch-1.4.0-cp36-none-macosx_10_9_x86_64.whl",
                "lib-wheel-tags-mismatch",
            ),
            (
                "ERROR: torch-sparse has an invalid wheel, could not read 'WHEEL' file",
                "lib-invalid-wheel",
            ),
            (
                "Unknown linear updater grow_gpu_hist",
                "lib-xgboost-gpu-updater",
            ),
            (
                "OSError: CUDA runtime library not found",
                "tk-runtime-library-not-found",
            ),
            ("CUSOLVER Error 7 at cusolver.cc:39", "tk-cusolver-failed"),
            (
                "torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n\
                 [373871.354096] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062)",
                "hw-reset-required",
            ),
        ];
        for (log, id) in cases {
            let d = diagnose(log).unwrap_or_else(|| panic!("no hit: {log}"));
            assert_eq!(d.id, id, "{log}");
            // Known, unless the entry's threads split the message between two layers (issue
            // 37): cuSOLVER's error with the card full is memory.
            let expected = if d.second_layer.is_some() {
                Confidence::Likely
            } else {
                Confidence::Known
            };
            assert_eq!(d.confidence, expected, "{log}");
        }
    }

    #[test]
    fn a_broad_rule_answers_only_when_no_entry_matches_and_says_likely() {
        for rule in broad::RULES {
            let d = diagnose(rule.example).expect("a hit");
            // A family rule (the mechanism tier) may answer first, on the same layer; a
            // catalogue entry may not (the example must need the broad tier).
            let by_family = families::best(rule.example).is_some_and(|f| f.id == d.id);
            assert!(
                d.id == rule.id || by_family,
                "an entry took {:?}",
                rule.example
            );
            assert_eq!(d.layer, rule.layer);
            assert_eq!(d.confidence, Confidence::Likely);
            assert!(d.cause.starts_with("likely: "), "{}", d.cause);
            assert_eq!(d.source, None);
        }
        // An entry on the same log wins over the broad memory rule.
        let d = diagnose("CUDA error! 2\nAssertionError: Torch not compiled with CUDA enabled")
            .expect("a hit");
        assert_eq!(d.id, "lib-cpu-only-build");
        assert_eq!(d.confidence, Confidence::Known);
    }

    #[test]
    fn a_broad_memory_hit_still_names_the_batch_to_try() {
        let d = diagnose("train.py --batch_size 48\nCUDA error! 2").expect("a hit");
        assert_eq!(d.layer, FailureLayer::Memory);
        assert!(d.fix.contains("batch 48: try 24"), "{}", d.fix);
        let v = serde_json::to_value(&d).expect("json");
        assert_eq!(v["confidence"], "likely");
    }

    #[test]
    fn crashes_that_name_no_layer_stay_unknown() {
        // Ambiguous with no resolution in round 2 (tests/fixtures/failures/README.md); no layer's
        // vocabulary in them.
        for log in [
            "RuntimeError: CUDA error: unknown error",
            "Segmentation fault (core dumped)",
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        ] {
            let d = diagnose_or_unknown(log);
            // A catalogue entry may know a case (a segfault inside a named library), `likely`
            // where its threads name two layers (issue 37); never a guess by vocabulary: an
            // answer here has the entry's public source.
            assert!(
                d.layer == FailureLayer::Unknown || d.source.is_some(),
                "{log}: {} by {}",
                d.layer,
                d.id
            );
            assert!(
                d.confidence != Confidence::Likely || d.second_layer.is_some(),
                "{log}"
            );
        }
    }

    #[test]
    fn an_ambiguous_launch_failure_names_a_second_candidate_and_only_likely() {
        // Issue 18: "unspecified launch failure" is the card or a kernel; the field case h03
        // was a faulty card (opendatalab/MinerU#426), so hardware first, library second.
        let log = "RuntimeError: CUDA error: unspecified launch failure\n\
                   CUDA kernel errors might be asynchronously reported at some other API call";
        let d = diagnose(log).expect("a hit");
        assert_eq!(d.layer, FailureLayer::Hardware);
        assert_eq!(d.second_layer, Some(FailureLayer::Library));
        assert_eq!(d.confidence, Confidence::Likely);
        let v = serde_json::to_value(&d).expect("json");
        assert_eq!(v["second_layer"], "library");
    }

    #[test]
    fn a_message_threads_resolve_in_two_layers_is_likely_names_both_and_fixes_with_the_test_first()
    {
        // Issue 37: real variants of each ambiguous family, with their second layer. The fix
        // starts with the test that tells the two layers apart.
        use FailureLayer::{Driver, Hardware, Library, Toolkit};
        const DATA_OR_CARD: &str = "First tell the data from the card";
        const KERNEL_OR_CARD: &str = "First tell a kernel from the card";
        const PROGRAM_OR_MACHINE: &str = "First tell the program from the machine";
        let cases: &[(&str, &str, FailureLayer, FailureLayer, &str)] = &[
            // An index assert: the user's data, or a card that asserts where another is clean.
            (
                "WangYueFt/dcp#30",
                "RuntimeError: CUDA error: device-side assert triggered",
                Library,
                Hardware,
                DATA_OR_CARD,
            ),
            (
                "KaihuaTang/Scene-Graph-Benchmark.pytorch#207",
                "/tmp/pip-req-build-ufslq_a9/aten/src/ATen/native/cuda/IndexKernel.cu:60: lambda ->auto::operator()(int)->auto: block: [36,0,0], thread: [104,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.",
                Library,
                Hardware,
                DATA_OR_CARD,
            ),
            (
                "facebookresearch/detectron2#4158",
                "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:142: operator(): block: [0,0,0], thread: [90,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.\n\
                 RuntimeError: CUDA error: device-side assert triggered",
                Library,
                Hardware,
                DATA_OR_CARD,
            ),
            // A device id that does not exist: the program, or the driver seeing fewer GPUs.
            (
                "wdrink/PyDeepFakeDet#1",
                "RuntimeError: CUDA error: invalid device ordinal",
                Library,
                Driver,
                PROGRAM_OR_MACHINE,
            ),
            (
                "ZhaoJ9014/face.evoLVe#58",
                "temp_x = x.cuda(self.device_id[i]) RuntimeError: CUDA error (10): invalid device ordinal",
                Library,
                Driver,
                PROGRAM_OR_MACHINE,
            ),
            // An illegal memory access: a kernel, or a faulty card at random places.
            (
                "evo-design/evo#136",
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                Library,
                Hardware,
                KERNEL_OR_CARD,
            ),
            (
                "skhu101/GauHuman#21",
                "RuntimeError: merge_sort: failed to synchronize: cudaErrorIllegalAddress: an illegal memory access was encountered",
                Library,
                Hardware,
                KERNEL_OR_CARD,
            ),
            // The same line as pasted, wrapped by the forum's width: read as one.
            (
                "evo-design/evo#136 (wrapped)",
                "RuntimeError: CUDA error: an illegal memory\naccess was encountered",
                Library,
                Hardware,
                KERNEL_OR_CARD,
            ),
            // An application's Xid: a kernel, or the card.
            (
                "3dem/relion#436",
                "Feb 15 17:37:45 Gipfeli kernel: [82659.755847] NVRM: Xid (PCI:0000:41:00): 13, Graphics Exception: ESR 0x5067b0=0x9",
                Library,
                Hardware,
                KERNEL_OR_CARD,
            ),
            // Two CUDA majors' wheels in one environment: a library family of its own.
            (
                "pytorch/pytorch#186591",
                "[pip3] nvidia-nccl-cu12==2.29.3\n[pip3] nvidia-nccl-cu13==2.29.7",
                Library,
                Toolkit,
                "Keep one major",
            ),
        ];
        for (source, log, layer, second, first) in cases {
            let d = diagnose(log).unwrap_or_else(|| panic!("{source}: no diagnosis"));
            assert_eq!(
                (d.layer, d.second_layer, d.confidence),
                (*layer, Some(*second), Confidence::Likely),
                "{source}: {}",
                d.id
            );
            assert!(d.cause.starts_with("likely: "), "{source}: {}", d.cause);
            assert!(d.fix.starts_with(first), "{source}: {}", d.fix);
        }
    }

    #[test]
    fn an_entry_whose_message_splits_between_two_layers_is_never_known() {
        for entry in catalogue::entries() {
            let d = diagnose(entry.example).expect("every example is placed");
            if d.second_layer.is_some() {
                assert_eq!(d.confidence, Confidence::Likely, "{}", entry.id);
            } else {
                assert_eq!(d.confidence, Confidence::Known, "{}", entry.id);
            }
        }
        // A family that knows the message on the entry's line splits it: NCCL's WARN line of
        // an invalid device ordinal (catalogue: lib-nccl-warn) is the program or the driver.
        let d =
            diagnose("transport/p2p.cc:275 NCCL WARN Cuda failure 101 'invalid device ordinal'")
                .expect("a hit");
        assert_eq!(d.id, "lib-nccl-warn");
        assert_eq!(
            (d.second_layer, d.confidence),
            (Some(FailureLayer::Driver), Confidence::Likely)
        );
    }

    #[test]
    fn stackpins_own_texts_are_known_and_lead_to_the_failing_layer() {
        let d = diagnose("error: install stopped: the installer exited 0 but the library is not there: torch 2.5.1 built for CUDA 12.4, sees no GPU")
            .expect("a hit");
        assert_eq!(
            (d.layer, d.confidence),
            (FailureLayer::Driver, Confidence::Known)
        );
        assert!(!d.fix.contains("stackpin install"), "{}", d.fix);
        let d = diagnose("proof failed: the example ran on the CPU: torch 2.5.1 sees no GPU")
            .expect("a hit");
        assert_eq!(d.layer, FailureLayer::Driver);
    }

    #[test]
    fn a_failed_run_record_is_diagnosed_from_its_last_lines_or_its_own_layer() {
        let record = |layer: &str, last: &str| {
            format!(
                "record: 1\nstack: torch-2.5.1-cu124-linux\nfailed_at: 2026-11-30T10:00:00Z\n\
                 argv: [python, classify.py]\nbatch: 64\nexit_code: 1\ntimed_out: false\n\
                 duration_s: 3.5\nlog: /a/logs/example.log\nlayer: {layer}\n\
                 explanation: the example failed\nlast_lines:\n- \"step 1/30\"\n- \"{last}\"\n"
            )
        };
        let d = diagnose(&record(
            "memory",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ))
        .expect("a hit");
        assert_eq!(d.layer, FailureLayer::Memory);
        assert!(d.fix.contains("batch 64"), "{}", d.fix);
        assert!(d.fix.contains("/a/logs/example.log"), "{}", d.fix);
        let d = diagnose(&record("driver", "no result line")).expect("the record's layer");
        assert_eq!(
            (d.layer, d.confidence),
            (FailureLayer::Driver, Confidence::Likely)
        );
        assert_eq!(diagnose(&record("example", "no result line")), None);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let d = diagnose_or_unknown(&text);
            proptest::prop_assert!(!d.cause.is_empty());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = diagnose_or_unknown(&decode_log(&bytes));
        }
    }
}
