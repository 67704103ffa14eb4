//! `nvidia-smi`: finding it, running it with a timeout, and reading what it prints — the GPU
//! list, the newest CUDA the driver supports, per-process and per-GPU memory — plus the failure
//! states a workstation really shows (no driver, driver/library mismatch, a hang), each typed
//! with its fix.
//!
//! The parsers are plain functions over text so they test on the real outputs in
//! `tests/fixtures/nvidia-smi/`. Which GPU a command should use is left to `gpu_select`.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::os::Os;
use crate::version::Version;

use super::HostError;
use super::system::System;

/// The GPU fields stackpin asks for, in this order.
pub const QUERY_GPU: &str = "--query-gpu=index,name,uuid,driver_version,memory.total,compute_cap";
/// Drivers older than ~510 reject `compute_cap`; this is the same query without it.
const QUERY_GPU_OLD: &str = "--query-gpu=index,name,uuid,driver_version,memory.total";
/// The CSV form every query uses: no header, numbers without units.
pub const CSV: &str = "--format=csv,noheader,nounits";

/// How long one `nvidia-smi` call may take; it can hang on a wedged driver.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// One GPU as `nvidia-smi --query-gpu` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gpu {
    /// nvidia-smi's index (PCI bus order; CUDA may number differently, see `gpu_select`).
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub driver_version: String,
    /// Total memory in MiB; `None` when nvidia-smi printed `[N/A]`.
    pub memory_total_mib: Option<u64>,
    /// Compute capability such as `8.9`; `None` on drivers too old to report it.
    pub compute_cap: Option<String>,
}

/// The driver as nvidia-smi sees it. Every state but `Ok` carries its fix in [`DriverState::fix`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DriverState {
    /// nvidia-smi answered; the GPU list may still be empty.
    Ok,
    /// `couldn't communicate with the NVIDIA driver`: no driver, or its kernel module is not loaded.
    NoDriver { message: String },
    /// `Driver/library version mismatch`: the user-space library changed under a loaded module.
    Mismatch {
        /// The library's version when nvidia-smi prints it (`NVML library version: 570.124`).
        library_version: Option<String>,
    },
    /// nvidia-smi is neither on PATH nor in the usual places.
    NoSmi { searched: Vec<PathBuf> },
    /// nvidia-smi did not answer in time.
    TimedOut { after_secs: u64 },
    /// nvidia-smi failed in a way stackpin does not recognise; its output is kept.
    Failed { code: Option<i32>, output: String },
}

impl DriverState {
    /// One line telling the user what to do, `None` when nothing needs doing.
    pub fn fix(&self) -> Option<String> {
        match self {
            DriverState::Ok => None,
            DriverState::NoDriver { .. } => Some(
                "no working NVIDIA driver: install the pinned driver (`stackpin install`), or if \
                 one is installed, reboot so its kernel module loads (check `lsmod | grep nvidia` \
                 and that nouveau is not loaded)"
                    .to_string(),
            ),
            DriverState::Mismatch { .. } => Some(
                "the driver was upgraded but the old kernel module is still loaded: reboot, then \
                 run the same command again"
                    .to_string(),
            ),
            DriverState::NoSmi { .. } => Some(
                "nvidia-smi not found: no NVIDIA driver is installed (it ships nvidia-smi); \
                 `stackpin install` installs the pinned one"
                    .to_string(),
            ),
            DriverState::TimedOut { after_secs } => Some(format!(
                "nvidia-smi hung for {after_secs}s: the driver is wedged; reboot, and if it \
                 persists reinstall the driver"
            )),
            DriverState::Failed { code, .. } => Some(format!(
                "nvidia-smi failed (exit {}); run it by hand to see why",
                code.map_or("by signal".to_string(), |c| c.to_string())
            )),
        }
    }

    /// A short name for tables: `ok`, `no driver`, …
    pub fn label(&self) -> &'static str {
        match self {
            DriverState::Ok => "ok",
            DriverState::NoDriver { .. } => "no driver",
            DriverState::Mismatch { .. } => "driver/library mismatch",
            DriverState::NoSmi { .. } => "no nvidia-smi",
            DriverState::TimedOut { .. } => "nvidia-smi timed out",
            DriverState::Failed { .. } => "nvidia-smi failed",
        }
    }
}

/// What probing the driver found: its state, the GPUs and the newest CUDA it supports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriverProbe {
    /// The nvidia-smi that answered, when one was found.
    pub nvidia_smi: Option<PathBuf>,
    #[serde(flatten)]
    pub state: DriverState,
    pub gpus: Vec<Gpu>,
    /// The header's `CUDA Version:` — the newest CUDA this driver runs, not an installed toolkit.
    pub cuda_supported: Option<Version>,
}

/// The places nvidia-smi lives when it is not on PATH.
pub fn usual_places(os: Os, wsl: bool) -> Vec<PathBuf> {
    match os {
        Os::Windows => vec![
            PathBuf::from(r"C:\Windows\System32\nvidia-smi.exe"),
            PathBuf::from(r"C:\Program Files\NVIDIA Corporation\NVSMI\nvidia-smi.exe"),
        ],
        // On WSL the Windows driver exposes its tools here, usually not on PATH.
        Os::Linux if wsl => vec![
            PathBuf::from("/usr/lib/wsl/lib/nvidia-smi"),
            PathBuf::from("/usr/bin/nvidia-smi"),
        ],
        Os::Linux => vec![PathBuf::from("/usr/bin/nvidia-smi")],
    }
}

/// Finds nvidia-smi: PATH first, then [`usual_places`]. `Err` lists everywhere it looked.
pub fn find(system: &dyn System, wsl: bool) -> Result<PathBuf, Vec<PathBuf>> {
    if let Some(found) = system.which("nvidia-smi") {
        return Ok(found);
    }
    let places = usual_places(system.os(), wsl);
    match places.iter().find(|p| system.exists(p)) {
        Some(found) => Ok(found.clone()),
        None => {
            let mut searched = vec![PathBuf::from("$PATH")];
            searched.extend(places);
            Err(searched)
        }
    }
}

/// Runs nvidia-smi for the GPU list and the header and classifies what came back. Never fails:
/// every problem is a [`DriverState`].
pub fn probe(system: &dyn System, wsl: bool, timeout: Duration) -> DriverProbe {
    let smi = match find(system, wsl) {
        Ok(smi) => smi,
        Err(searched) => return not_running(None, DriverState::NoSmi { searched }),
    };
    let query = |fields: &str| system.run(&smi, &[fields.to_string(), CSV.to_string()], timeout);
    let mut with_cap = true;
    let mut answer = query(QUERY_GPU);
    if let Ok(out) = &answer
        && !out.success()
        && out.combined().contains("is not a valid field")
    {
        with_cap = false;
        answer = query(QUERY_GPU_OLD);
    }
    let out = match answer {
        Ok(out) => out,
        Err(e) => return not_running(Some(smi), state_of_run_error(&e)),
    };
    if let Some(state) = failure_state(&out.combined()) {
        return not_running(Some(smi), state);
    }
    if !out.success() {
        let state = DriverState::Failed {
            code: out.code,
            output: out.combined().trim().to_string(),
        };
        return not_running(Some(smi), state);
    }
    let gpus = match parse_gpus(&out.stdout, with_cap) {
        Ok(gpus) => gpus,
        Err(e) => {
            let state = DriverState::Failed {
                code: out.code,
                output: e.to_string(),
            };
            return not_running(Some(smi), state);
        }
    };
    // The header is a second call; if only it fails we still know the GPUs. `-q` is asked
    // only when the header lacks the field (it is long and slow on many-GPU hosts).
    let supported = |args: &[String]| {
        system
            .run(&smi, args, timeout)
            .ok()
            .and_then(|out| parse_cuda_version(&out.stdout))
    };
    let cuda_supported = supported(&[]).or_else(|| supported(&["-q".to_string()]));
    DriverProbe {
        nvidia_smi: Some(smi),
        state: DriverState::Ok,
        gpus,
        cuda_supported,
    }
}

fn not_running(nvidia_smi: Option<PathBuf>, state: DriverState) -> DriverProbe {
    DriverProbe {
        nvidia_smi,
        state,
        gpus: vec![],
        cuda_supported: None,
    }
}

fn state_of_run_error(error: &HostError) -> DriverState {
    match error {
        HostError::TimedOut { after, .. } => DriverState::TimedOut {
            after_secs: after.as_secs(),
        },
        other => DriverState::Failed {
            code: None,
            output: other.to_string(),
        },
    }
}

/// Recognises nvidia-smi's known failure texts (on either pipe, whatever the exit code).
pub fn failure_state(output: &str) -> Option<DriverState> {
    if output.contains("couldn't communicate with the NVIDIA driver") {
        let message = output
            .lines()
            .find(|l| l.contains("couldn't communicate"))
            .unwrap_or_default()
            .trim()
            .to_string();
        return Some(DriverState::NoDriver { message });
    }
    if output.contains("Driver/library version mismatch") {
        let library_version = output
            .lines()
            .find_map(|l| l.trim().strip_prefix("NVML library version:"))
            .map(|v| v.trim().to_string());
        return Some(DriverState::Mismatch { library_version });
    }
    None
}

/// Parses `--query-gpu=index,name,uuid,driver_version,memory.total[,compute_cap]` CSV rows;
/// `with_cap` says whether the query asked for `compute_cap`.
pub fn parse_gpus(text: &str, with_cap: bool) -> Result<Vec<Gpu>, HostError> {
    let expected = "index, name, uuid, driver_version, memory.total[, compute_cap]";
    let tail = if with_cap { 4 } else { 3 };
    let mut gpus = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let n = fields.len();
        if n < tail + 2 {
            return Err(bad_row("--query-gpu", line, expected));
        }
        let index = fields[0]
            .parse()
            .map_err(|_| bad_row("--query-gpu", line, expected))?;
        // Fields are taken from both ends, so a comma inside a name only widens the name.
        gpus.push(Gpu {
            index,
            name: fields[1..n - tail].join(", "),
            uuid: fields[n - tail].to_string(),
            driver_version: fields[n - tail + 1].to_string(),
            memory_total_mib: parse_mib(fields[n - tail + 2]),
            compute_cap: with_cap
                .then(|| fields[n - 1])
                .filter(|c| looks_like_cap(c))
                .map(str::to_string),
        });
    }
    Ok(gpus)
}

fn looks_like_cap(field: &str) -> bool {
    field
        .split_once('.')
        .is_some_and(|(a, b)| is_number(a) && is_number(b))
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn is_unavailable(field: &str) -> bool {
    matches!(
        field.trim(),
        "[N/A]" | "N/A" | "[Not Supported]" | "Not available in WDDM driver model"
    )
}

fn parse_mib(field: &str) -> Option<u64> {
    field.trim().trim_end_matches("MiB").trim().parse().ok()
}

fn bad_row(query: &str, line: &str, expected: &str) -> HostError {
    HostError::Parse {
        what: format!("nvidia-smi {query}"),
        line: line.to_string(),
        expected: expected.to_string(),
    }
}

/// The `CUDA Version: 12.8` of the plain header or of `nvidia-smi -q` (`CUDA Version : 10.2`).
/// `None` when the driver is too old to print it (the 410 header has no such field).
pub fn parse_cuda_version(text: &str) -> Option<Version> {
    text.lines().find_map(|line| {
        let (_, rest) = line.split_once("CUDA Version")?;
        let rest = rest.trim_start().strip_prefix(':')?;
        let word = rest.split_whitespace().next()?;
        Version::parse(word.trim_end_matches('|')).ok()
    })
}

/// The `Driver Version: 570.133.20` of the header or `-q` output.
pub fn parse_driver_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (_, rest) = line.split_once("Driver Version")?;
        let rest = rest.trim_start().strip_prefix(':')?;
        rest.split_whitespace().next().map(str::to_string)
    })
}

/// Memory a process uses, as `--query-compute-apps` can report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessMemory {
    Mib(u64),
    /// `[N/A]`: Windows WDDM drivers cannot report per-process memory.
    Unavailable,
}

/// One row of `--query-compute-apps=pid,used_memory --format=csv,noheader,nounits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ComputeApp {
    pub pid: u32,
    pub used_memory: ProcessMemory,
}

/// Parses compute-app rows; each row stands alone (WDDM can mix numbers and `[N/A]`).
pub fn parse_compute_apps(text: &str) -> Result<Vec<ComputeApp>, HostError> {
    let mut apps = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let expected = "pid, used_memory";
        let (pid, used) = line
            .split_once(',')
            .ok_or_else(|| bad_row("--query-compute-apps", line, expected))?;
        let pid = pid
            .trim()
            .parse()
            .map_err(|_| bad_row("--query-compute-apps", line, expected))?;
        let used_memory = if is_unavailable(used) {
            ProcessMemory::Unavailable
        } else {
            ProcessMemory::Mib(
                parse_mib(used).ok_or_else(|| bad_row("--query-compute-apps", line, expected))?,
            )
        };
        apps.push(ComputeApp { pid, used_memory });
    }
    Ok(apps)
}

/// One row of `--query-gpu=memory.used,memory.total --format=csv,noheader,nounits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GpuMemory {
    pub used_mib: u64,
    pub total_mib: u64,
}

/// Parses one row per GPU of used and total memory.
pub fn parse_gpu_memory(text: &str) -> Result<Vec<GpuMemory>, HostError> {
    let expected = "memory.used, memory.total (MiB numbers)";
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (used, total) = line
                .split_once(',')
                .ok_or_else(|| bad_row("--query-gpu=memory.used,memory.total", line, expected))?;
            match (parse_mib(used), parse_mib(total)) {
                (Some(used_mib), Some(total_mib)) => Ok(GpuMemory {
                    used_mib,
                    total_mib,
                }),
                _ => Err(bad_row(
                    "--query-gpu=memory.used,memory.total",
                    line,
                    expected,
                )),
            }
        })
        .collect()
}

/// The arguments `prove` passes to sample one GPU's memory.
pub fn memory_query_args(gpu: u32) -> Vec<String> {
    vec![
        "--query-gpu=memory.used,memory.total".to_string(),
        CSV.to_string(),
        format!("--id={gpu}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::system::FakeSystem;

    const HEADER_570: &str = include_str!("../../tests/fixtures/nvidia-smi/header-570.txt");
    const HEADER_440: &str = include_str!("../../tests/fixtures/nvidia-smi/header-440.txt");
    const HEADER_410: &str = include_str!("../../tests/fixtures/nvidia-smi/header-410-no-cuda.txt");
    const Q_440: &str = include_str!("../../tests/fixtures/nvidia-smi/q-440-excerpt.txt");
    const NO_DRIVER: &str = include_str!("../../tests/fixtures/nvidia-smi/no-driver.txt");
    const MISMATCH: &str = include_str!("../../tests/fixtures/nvidia-smi/mismatch.txt");
    const APPS_WDDM: &str = include_str!("../../tests/fixtures/nvidia-smi/compute-apps-wddm.txt");
    const APPS_LINUX: &str = include_str!("../../tests/fixtures/nvidia-smi/compute-apps-linux.txt");
    const GPUS_TWO: &str = include_str!("../../tests/fixtures/nvidia-smi/query-gpu-two.txt");
    const GPUS_MIG: &str = include_str!("../../tests/fixtures/nvidia-smi/query-gpu-units-mig.txt");
    const MEMORY: &str = include_str!("../../tests/fixtures/nvidia-smi/gpu-memory-idle.txt");

    fn v(text: &str) -> Version {
        Version::parse(text).expect("version")
    }

    #[test]
    fn cuda_version_comes_from_every_header_layout() {
        assert_eq!(parse_cuda_version(HEADER_570), Some(v("12.8")));
        assert_eq!(parse_cuda_version(HEADER_440), Some(v("10.2")));
        assert_eq!(parse_cuda_version(Q_440), Some(v("10.2")));
    }

    #[test]
    fn a_410_header_has_no_cuda_version_and_that_is_not_an_error() {
        assert_eq!(parse_cuda_version(HEADER_410), None);
        assert_eq!(parse_driver_version(HEADER_410).as_deref(), Some("410.48"));
    }

    #[test]
    fn driver_version_comes_from_header_and_q() {
        assert_eq!(
            parse_driver_version(HEADER_570).as_deref(),
            Some("570.133.20")
        );
        assert_eq!(parse_driver_version(Q_440).as_deref(), Some("440.82"));
    }

    #[test]
    fn every_gpu_is_parsed_not_only_the_first() {
        let gpus = parse_gpus(GPUS_TWO, true).expect("parses");
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA L4");
        assert_eq!(gpus[0].memory_total_mib, Some(23034));
        assert_eq!(gpus[0].compute_cap.as_deref(), Some("8.9"));
        assert_eq!(gpus[1].index, 1);
        assert_eq!(gpus[1].uuid, "GPU-0e6f3c55-2b7a-4d8e-a1c4-3f2b9d8e7c60");
        assert_eq!(gpus[1].driver_version, "570.133.20");
    }

    #[test]
    fn memory_with_units_still_parses_and_a_non_capability_is_dropped() {
        let gpus = parse_gpus(GPUS_MIG, true).expect("parses");
        assert_eq!(gpus[0].name, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
        assert_eq!(gpus[0].memory_total_mib, Some(97887));
        assert_eq!(gpus[0].compute_cap, None);
    }

    #[test]
    fn a_garbage_gpu_row_is_a_parse_error_naming_the_line() {
        let err = parse_gpus("NVIDIA-SMI couldn't", true).expect_err("garbage");
        assert!(err.to_string().contains("NVIDIA-SMI couldn't"), "{err}");
    }

    #[test]
    fn the_real_error_texts_map_to_typed_states() {
        assert!(matches!(
            failure_state(NO_DRIVER),
            Some(DriverState::NoDriver { .. })
        ));
        assert_eq!(
            failure_state(MISMATCH),
            Some(DriverState::Mismatch {
                library_version: Some("570.124".to_string())
            })
        );
        assert_eq!(failure_state(HEADER_570), None);
    }

    #[test]
    fn wddm_rows_are_unavailable_and_linux_rows_are_numbers() {
        let wddm = parse_compute_apps(APPS_WDDM).expect("parses");
        assert_eq!(
            wddm,
            vec![ComputeApp {
                pid: 14900,
                used_memory: ProcessMemory::Unavailable
            }]
        );
        let linux = parse_compute_apps(APPS_LINUX).expect("parses");
        assert_eq!(linux[1].used_memory, ProcessMemory::Mib(5530));
        assert_eq!(parse_compute_apps("").expect("idle"), vec![]);
    }

    #[test]
    fn gpu_memory_rows_parse_and_na_is_an_error() {
        assert_eq!(
            parse_gpu_memory(MEMORY).expect("parses"),
            vec![GpuMemory {
                used_mib: 0,
                total_mib: 24576
            }]
        );
        assert!(parse_gpu_memory("[N/A], 24576").is_err());
    }

    fn smi_host() -> FakeSystem {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.on_path.insert(
            "nvidia-smi".to_string(),
            PathBuf::from("/usr/bin/nvidia-smi"),
        );
        sys
    }

    #[test]
    fn probe_reports_gpus_and_the_supported_cuda() {
        let mut sys = smi_host();
        sys.answer("/usr/bin/nvidia-smi", &[QUERY_GPU], 0, GPUS_TWO)
            .answer("/usr/bin/nvidia-smi", &[], 0, HEADER_570);
        let probe = probe(&sys, false, DEFAULT_TIMEOUT);
        assert_eq!(probe.state, DriverState::Ok);
        assert_eq!(probe.gpus.len(), 2);
        assert_eq!(probe.cuda_supported, Some(v("12.8")));
    }

    #[test]
    fn probe_without_nvidia_smi_is_a_state_listing_where_it_looked() {
        let sys = FakeSystem::new(Os::Linux);
        let probe = probe(&sys, true, DEFAULT_TIMEOUT);
        match &probe.state {
            DriverState::NoSmi { searched } => {
                assert!(searched.contains(&PathBuf::from("/usr/lib/wsl/lib/nvidia-smi")))
            }
            other => panic!("expected NoSmi, got {other:?}"),
        }
        assert!(probe.state.fix().is_some());
    }

    #[test]
    fn probe_finds_nvidia_smi_in_the_wsl_folder_when_not_on_path() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/usr/lib/wsl/lib/nvidia-smi", "")
            .answer("/usr/lib/wsl/lib/nvidia-smi", &[QUERY_GPU], 0, GPUS_TWO)
            .answer("/usr/lib/wsl/lib/nvidia-smi", &[], 0, HEADER_570);
        let probe = probe(&sys, true, DEFAULT_TIMEOUT);
        assert_eq!(probe.state, DriverState::Ok);
        assert_eq!(
            probe.nvidia_smi,
            Some(PathBuf::from("/usr/lib/wsl/lib/nvidia-smi"))
        );
    }

    #[test]
    fn probe_classifies_no_driver_mismatch_and_hang() {
        let mut sys = smi_host();
        sys.answer("/usr/bin/nvidia-smi", &[], 9, NO_DRIVER);
        assert!(matches!(
            probe(&sys, false, DEFAULT_TIMEOUT).state,
            DriverState::NoDriver { .. }
        ));

        let mut sys = smi_host();
        sys.answer("/usr/bin/nvidia-smi", &[], 18, MISMATCH);
        let state = probe(&sys, false, DEFAULT_TIMEOUT).state;
        assert!(matches!(state, DriverState::Mismatch { .. }));
        assert!(state.fix().expect("fix").contains("reboot"));

        let mut sys = smi_host();
        sys.hang("/usr/bin/nvidia-smi");
        let state = probe(&sys, false, Duration::from_secs(7)).state;
        assert_eq!(state, DriverState::TimedOut { after_secs: 7 });
    }

    #[test]
    fn old_drivers_are_asked_without_compute_cap_and_for_cuda_through_q() {
        let mut sys = smi_host();
        sys.answer(
            "/usr/bin/nvidia-smi",
            &[QUERY_GPU],
            2,
            "Field \"compute_cap\" is not a valid field to query.",
        )
        .answer(
            "/usr/bin/nvidia-smi",
            &[QUERY_GPU_OLD],
            0,
            "0, Tesla V100-SXM2-16GB, GPU-1, 440.82, 16160",
        )
        .answer("/usr/bin/nvidia-smi", &[], 0, HEADER_410)
        .answer("/usr/bin/nvidia-smi", &["-q"], 0, Q_440);
        let probe = probe(&sys, false, DEFAULT_TIMEOUT);
        assert_eq!(
            probe.cuda_supported,
            Some(v("10.2")),
            "from -q when the header lacks it"
        );
        assert_eq!(probe.gpus[0].name, "Tesla V100-SXM2-16GB");
        assert_eq!(probe.gpus[0].compute_cap, None);
    }
}
