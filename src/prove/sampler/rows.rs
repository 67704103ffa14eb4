//! Parsing the lines the sampler's monitor children print: `nvidia-smi` CSV rows (per process and
//! per card) and `typeperf` CSV rows (the Windows GPU memory counter).
//!
//! Each parser takes one line and says what it holds; deciding what a row means for the run (whose
//! process it is, which source wins) is the sampler's job.

use std::collections::BTreeMap;

/// A memory figure as nvidia-smi prints it with `nounits`: MiB, or not available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmiMemory {
    /// A number of MiB.
    Mib(u64),
    /// `[N/A]`, `[Not Supported]` and the like: the driver cannot say. Per-process memory is
    /// always this under Windows WDDM, because Windows, not the NVIDIA driver, manages the memory.
    Unavailable,
}

/// One row of `--query-compute-apps=pid,used_memory --format=csv,noheader,nounits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComputeAppRow {
    /// The process using the GPU.
    pub pid: u32,
    /// Its memory on the card, context included.
    pub used: SmiMemory,
}

/// A line that is neither a row nor a known non-row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected nvidia-smi line `{line}`: expected {expected}")]
pub struct RowError {
    /// The line as printed.
    pub line: String,
    /// What a row of this query looks like.
    pub expected: &'static str,
}

/// Reads one `pid, used_memory` row. `Ok(None)` for lines that carry no row: blank lines and
/// the "No running processes found" notice some drivers print in place of an empty list.
pub fn parse_compute_app_row(line: &str) -> Result<Option<ComputeAppRow>, RowError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with("No running") {
        return Ok(None);
    }
    let err = || RowError {
        line: line.to_string(),
        expected: "`PID, MiB` such as `4242, 2560` or `4242, [N/A]`",
    };
    let (pid, used) = line.split_once(',').ok_or_else(err)?;
    let pid = pid.trim().parse::<u32>().map_err(|_| err())?;
    let used = parse_smi_memory(used).ok_or_else(err)?;
    Ok(Some(ComputeAppRow { pid, used }))
}

/// Reads one `memory.used` row of `--query-gpu=memory.used --format=csv,noheader,nounits`.
pub fn parse_device_used(line: &str) -> Result<Option<SmiMemory>, RowError> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    parse_smi_memory(line).map(Some).ok_or_else(|| RowError {
        line: line.to_string(),
        expected: "a number of MiB such as `812`, or `[N/A]`",
    })
}

/// `2560`, `2560 MiB` (when `nounits` was ignored) or a bracketed notice such as `[N/A]`.
fn parse_smi_memory(field: &str) -> Option<SmiMemory> {
    let field = field.trim();
    if (field.starts_with('[') && field.ends_with(']')) || field.eq_ignore_ascii_case("N/A") {
        return Some(SmiMemory::Unavailable);
    }
    let number = field.strip_suffix("MiB").unwrap_or(field).trim();
    number.parse::<u64>().ok().map(SmiMemory::Mib)
}

/// Reads one data row of `typeperf "\GPU Process Memory(pid_N*)\Dedicated Usage"`: the quoted
/// timestamp, then one quoted value in bytes per matching counter instance (one per adapter and
/// memory segment). Returns their sum in MiB, rounded up so a fraction is never lost.
///
/// `None` for the header (`"(PDH-CSV 4.0)",…`), blank lines, typeperf's own notices and rows
/// where every instance is blank (the process has gone).
pub fn parse_typeperf_row(line: &str) -> Option<u64> {
    let line = line.trim();
    if !line.starts_with('"') || line.starts_with("\"(PDH-CSV") {
        return None;
    }
    let mut values = line
        .split(',')
        .skip(1) // the timestamp
        .filter_map(|field| field.trim().trim_matches('"').trim().parse::<f64>().ok())
        .peekable();
    values.peek()?;
    let bytes: f64 = values.filter(|v| v.is_finite() && *v >= 0.0).sum();
    Some((bytes / (1024.0 * 1024.0)).ceil() as u64)
}

/// The columns of a typeperf CSV that belong to one process on one adapter. Counter instances
/// are named `pid_<PID>_luid_<HIGH>_<LOW>_phys_<N>`; a wildcard `pid_1234*` also matches
/// `pid_12345_…`, so the header is read and only instances whose pid is exactly ours are kept.
/// The adapter is the chosen GPU's LUID when known, else the adapter where the process holds the
/// most memory in each row (the CUDA device; an integrated GPU sees at most a few MiB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterColumns {
    /// (column index in the row, the instance's LUID).
    keep: Vec<(usize, String)>,
    luid: Option<String>,
}

impl CounterColumns {
    /// Reads typeperf's header row (`"(PDH-CSV 4.0)","\\HOST\GPU Process Memory(…)\…",…`);
    /// `None` when the line is not a header.
    pub fn from_header(header: &str, pid: u32, luid: Option<&str>) -> Option<Self> {
        let header = header.trim();
        if !header.starts_with("\"(PDH-CSV") {
            return None;
        }
        let keep = header
            .split("\",\"")
            .enumerate()
            .skip(1)
            .filter_map(|(i, column)| {
                let instance = column.split_once('(')?.1.split_once(')')?.0;
                let (instance_pid, instance_luid) = instance_pid_luid(instance)?;
                (instance_pid == pid).then_some((i, instance_luid))
            })
            .collect();
        Some(Self {
            keep,
            luid: luid.map(|l| l.to_ascii_lowercase()),
        })
    }

    /// Whether no instance is the process's.
    pub fn is_empty(&self) -> bool {
        self.keep.is_empty()
    }

    /// The process's dedicated memory on the adapter, in MiB (rounded up); `None` for rows that
    /// are not data or where every kept instance is blank (the process has gone).
    pub fn sum_mib(&self, line: &str) -> Option<u64> {
        let line = line.trim();
        if !line.starts_with('"') || line.starts_with("\"(PDH-CSV") {
            return None;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let mut by_luid: BTreeMap<&str, f64> = BTreeMap::new();
        for (i, luid) in &self.keep {
            if self.luid.as_deref().is_some_and(|want| want != luid) {
                continue;
            }
            let value = fields
                .get(*i)
                .and_then(|f| f.trim().trim_matches('"').trim().parse::<f64>().ok());
            if let Some(v) = value.filter(|v| v.is_finite() && *v >= 0.0) {
                *by_luid.entry(luid.as_str()).or_default() += v;
            }
        }
        if by_luid.is_empty() {
            return None;
        }
        let bytes = by_luid.values().copied().fold(0.0, f64::max);
        Some((bytes / (1024.0 * 1024.0)).ceil() as u64)
    }
}

/// `pid_4242_luid_0x00000000_0x0000D1A5_phys_0` → (4242, `0x00000000_0x0000d1a5`).
fn instance_pid_luid(instance: &str) -> Option<(u32, String)> {
    let rest = instance.strip_prefix("pid_")?;
    let (pid, rest) = rest.split_once('_')?;
    let rest = rest.strip_prefix("luid_")?;
    let luid = rest.split("_phys").next()?;
    Some((pid.parse().ok()?, luid.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_linux_per_process_row() {
        assert_eq!(
            parse_compute_app_row("4242, 2560"),
            Ok(Some(ComputeAppRow {
                pid: 4242,
                used: SmiMemory::Mib(2560)
            }))
        );
    }

    #[test]
    fn wddm_not_available_is_typed_not_an_error() {
        let row = parse_compute_app_row("4242, [N/A]")
            .expect("valid")
            .expect("row");
        assert_eq!(row.used, SmiMemory::Unavailable);
        let row = parse_compute_app_row("17, [Not Supported]")
            .expect("valid")
            .expect("row");
        assert_eq!(row.used, SmiMemory::Unavailable);
    }

    #[test]
    fn tolerates_units_and_windows_line_ends() {
        let row = parse_compute_app_row(" 4242 , 2560 MiB\r")
            .expect("valid")
            .expect("row");
        assert_eq!(row.used, SmiMemory::Mib(2560));
    }

    #[test]
    fn notices_and_blank_lines_carry_no_row() {
        assert_eq!(parse_compute_app_row(""), Ok(None));
        assert_eq!(
            parse_compute_app_row("No running processes found"),
            Ok(None)
        );
    }

    #[test]
    fn garbage_is_an_error_that_quotes_the_line() {
        let err =
            parse_compute_app_row("Failed to initialize NVML: Driver/library version mismatch")
                .expect_err("not a row");
        assert!(err.to_string().contains("Driver/library version mismatch"));
        assert!(parse_compute_app_row("pid, used_memory [MiB]").is_err());
        assert!(parse_compute_app_row("-1, 20").is_err());
    }

    #[test]
    fn reads_device_memory_used() {
        assert_eq!(parse_device_used("812"), Ok(Some(SmiMemory::Mib(812))));
        assert_eq!(parse_device_used("[N/A]"), Ok(Some(SmiMemory::Unavailable)));
        assert_eq!(parse_device_used("  "), Ok(None));
        assert!(parse_device_used("812, 4096").is_err());
    }

    /// typeperf's header and one row with pid 1234 and pid 12345 side by side (what a wildcard
    /// `pid_1234*` returns), each on the NVIDIA card (luid …D1A5) and the integrated GPU (…C001).
    const SIDE_BY_SIDE_HEADER: &str = r#""(PDH-CSV 4.0)","\\WS\GPU Process Memory(pid_1234_luid_0x00000000_0x0000D1A5_phys_0)\Dedicated Usage","\\WS\GPU Process Memory(pid_12345_luid_0x00000000_0x0000D1A5_phys_0)\Dedicated Usage","\\WS\GPU Process Memory(pid_1234_luid_0x00000000_0x0000C001_phys_0)\Dedicated Usage","\\WS\GPU Process Memory(pid_12345_luid_0x00000000_0x0000C001_phys_0)\Dedicated Usage""#;
    const SIDE_BY_SIDE_ROW: &str =
        r#""12/01/2026 05:00:01.000","2684354560","7340032000","4194304","1048576""#;

    #[test]
    fn counter_instances_of_pid_1234_and_12345_are_told_apart() {
        let ours = CounterColumns::from_header(SIDE_BY_SIDE_HEADER, 1234, None).expect("header");
        // 2,560 MiB on the NVIDIA card; the 4 MiB on the integrated GPU is another adapter.
        assert_eq!(ours.sum_mib(SIDE_BY_SIDE_ROW), Some(2560));
        let other = CounterColumns::from_header(SIDE_BY_SIDE_HEADER, 12345, None).expect("header");
        assert_eq!(other.sum_mib(SIDE_BY_SIDE_ROW), Some(7000));
        let none = CounterColumns::from_header(SIDE_BY_SIDE_HEADER, 123, None).expect("header");
        assert!(none.is_empty());
        assert_eq!(none.sum_mib(SIDE_BY_SIDE_ROW), None);
    }

    #[test]
    fn a_known_luid_picks_that_adapter_alone() {
        let igpu =
            CounterColumns::from_header(SIDE_BY_SIDE_HEADER, 1234, Some("0x00000000_0x0000C001"))
                .expect("header");
        assert_eq!(igpu.sum_mib(SIDE_BY_SIDE_ROW), Some(4));
        assert_eq!(
            CounterColumns::from_header(r#""12/01/2026","1""#, 1234, None),
            None,
            "a data row is not a header"
        );
    }

    #[test]
    fn sums_typeperf_instances_in_mib() {
        let header = r#""(PDH-CSV 4.0)","\\HOST\GPU Process Memory(pid_4242_luid_0x0_0x1_phys_0)\Dedicated Usage""#;
        assert_eq!(parse_typeperf_row(header), None);
        let row = r#""12/03/2026 10:00:01.123","2147483648.000000","536870912.000000""#;
        assert_eq!(parse_typeperf_row(row), Some(2560));
        let partial = r#""12/03/2026 10:00:02.123","1048577.000000"," ""#;
        assert_eq!(parse_typeperf_row(partial), Some(2));
    }

    #[test]
    fn typeperf_notices_and_vanished_instances_are_not_samples() {
        assert_eq!(parse_typeperf_row(""), None);
        assert_eq!(parse_typeperf_row("Exiting, please wait..."), None);
        assert_eq!(
            parse_typeperf_row("The command completed successfully."),
            None
        );
        assert_eq!(parse_typeperf_row(r#""12/03/2026 10:00:03.123"," ""#), None);
    }
}
