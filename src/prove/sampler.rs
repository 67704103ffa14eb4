//! GPU memory sampled from outside while the example runs.
//!
//! One long-running `nvidia-smi … -lms 100` child per view, never a process per sample (each spawn
//! costs 50–200 ms, which would hide the curve). The per-process view
//! (`--query-compute-apps=pid,used_memory`) is attributed to the example's process tree. Where it is
//! `[N/A]` (Windows WDDM) the sampler reads the Windows counter
//! `\GPU Process Memory(pid_<PID>*)\Dedicated Usage` through a `typeperf` child (Windows only), and
//! failing that the card's `memory.used` minus the idle baseline read just before the run. The
//! trace says which view it holds.
//!
//! This module knows nothing about the example, the manifest or the record: `prove` starts a
//! sampler, spawns the example, [`Sampler::attach`]es it, and calls [`Sampler::stop`].

mod monitor;
mod rows;
mod tree;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use monitor::Monitor;

use crate::record::MemorySource;
pub use rows::{
    ComputeAppRow, CounterColumns, RowError, SmiMemory, parse_compute_app_row, parse_device_used,
    parse_typeperf_row,
};
pub use tree::{
    ProcessTree, Procfs, RootOnly, StaticTree, WindowsSnapshot, host_tree, is_in_tree,
    parent_from_stat,
};

/// Sampling interval of the monitor children, in milliseconds.
pub const LOOP_MS: u64 = 100;

/// How long [`Sampler::start`] waits for the first idle reading of the card.
const BASELINE_WAIT: Duration = Duration::from_secs(3);

/// A process's last figure stops counting towards the tree's sum when it is older than this
/// (the process has gone and nvidia-smi no longer lists it).
const STALE_AFTER_MS: u64 = 3 * LOOP_MS;

/// GPU memory over one run, as measured from outside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryTrace {
    /// The view `samples` and `peak_mib` come from.
    pub source: MemorySource,
    /// `(ms since the example started, MiB)` in that view.
    pub samples: Vec<(u64, u64)>,
    /// The highest sample.
    pub peak_mib: Option<u64>,
    /// The card's `memory.used` just before the run (lowest idle reading).
    pub baseline_mib: Option<u64>,
    /// `(ms since the example started, MiB)` of the whole card's `memory.used`, whatever the source.
    pub device_samples: Vec<(u64, u64)>,
    /// How many per-process rows of the example's tree said `[N/A]`.
    pub unavailable_rows: usize,
    /// Why a fallback was used, lines nvidia-smi could not explain, monitors that died.
    pub notes: Vec<String>,
    /// Processes outside the example's tree that nvidia-smi listed on the card during the run:
    /// whatever they allocated is in the card's `memory.used`, so they decide whether the
    /// card-over-baseline view can stand for the example.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<OtherProcess>,
}

/// A process outside the example's tree that nvidia-smi listed while the example ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherProcess {
    pub pid: u32,
    /// Its smallest and largest figure during the run (`None` where nvidia-smi said `[N/A]`).
    pub min_mib: Option<u64>,
    pub max_mib: Option<u64>,
    /// Whether it was already on the card before the example started (part of the baseline).
    pub before_run: bool,
}

impl OtherProcess {
    /// Whether its memory can have moved the card's delta: it appeared during the run, or its
    /// figure changed (or cannot be read).
    pub fn disturbs_the_delta(&self) -> bool {
        !self.before_run || self.min_mib != self.max_mib || self.max_mib.is_none()
    }
}

impl MemoryTrace {
    /// Whether nvidia-smi's per-process list showed a process of the example's tree at all
    /// (with a figure, or `[N/A]` under WDDM): the outside proof that it used the GPU.
    pub fn saw_the_tree(&self) -> bool {
        matches!(
            self.source,
            MemorySource::PerProcess | MemorySource::WindowsCounter
        ) || self.unavailable_rows > 0
    }

    /// The other processes that can have moved the card's delta during the run.
    pub fn disturbing_others(&self) -> impl Iterator<Item = &OtherProcess> {
        self.others.iter().filter(|o| o.disturbs_the_delta())
    }
}

/// One process of the sampled tree and its own per-process figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessSeries {
    pub pid: u32,
    /// `(ms since attach, MiB)` as nvidia-smi listed this process.
    pub samples: Vec<(u64, u64)>,
}

/// Could not start sampling at all.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    /// A monitor program would not start.
    #[error(
        "could not start `{program}` to sample {what}: {source}; check that the NVIDIA driver's nvidia-smi is installed and on PATH"
    )]
    Spawn {
        /// The program, as given.
        program: PathBuf,
        /// Which view it was for.
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// What the monitor threads have gathered so far.
#[derive(Default)]
struct State {
    root: Option<u32>,
    attached_at: Option<Instant>,
    baseline: Option<u64>,
    idle_readings: Vec<u64>,
    device: Vec<(u64, u64)>,
    per_process: Vec<(u64, u64)>,
    latest_by_pid: HashMap<u32, (u64, u64)>,
    /// Every figure of each process of the tree, for `measure`'s per-process rows.
    by_pid: BTreeMap<u32, Vec<(u64, u64)>>,
    membership: HashMap<u32, bool>,
    unavailable_rows: usize,
    counter: Vec<(u64, u64)>,
    counter_monitor: Option<Monitor>,
    counter_tried: bool,
    notes: Vec<String>,
    /// Pids nvidia-smi listed before the run started.
    listed_before: std::collections::HashSet<u32>,
    /// Processes outside the tree listed during the run: pid → (min, max) MiB, `None` for `[N/A]`.
    others: BTreeMap<u32, (Option<u64>, Option<u64>)>,
}

impl State {
    fn since_attach(&self) -> Option<u64> {
        self.attached_at.map(|t| t.elapsed().as_millis() as u64)
    }

    fn note_once(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panicking monitor thread must not take the run's figures with it.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running sampler: two nvidia-smi monitors (per process and per card), plus the Windows
/// counter once WDDM shows itself.
pub struct Sampler {
    state: Arc<Mutex<State>>,
    per_process: Monitor,
    device: Monitor,
}

impl Sampler {
    /// Starts both nvidia-smi monitors for GPU `gpu_index` and waits (up to 3 s) for an idle
    /// reading of the card, the baseline. Call before spawning the example, then
    /// [`attach`](Self::attach) its pid.
    pub fn start(
        smi: &Path,
        gpu_index: u32,
        tree: Arc<dyn ProcessTree>,
    ) -> Result<Sampler, SamplerError> {
        let state = Arc::new(Mutex::new(State::default()));
        let watch = |query: &str, what, on_line: LineHandler| {
            let state = Arc::clone(&state);
            Monitor::spawn(smi, &smi_args(query, gpu_index), what, move |line| {
                on_line(&state, line)
            })
        };
        let device = watch(
            "--query-gpu=memory.used",
            "the card's memory.used",
            Box::new(|state, line| on_device_line(state, line)),
        )?;
        let per_process = watch(
            "--query-compute-apps=pid,used_memory",
            "per-process GPU memory",
            Box::new(move |state, line| on_compute_app_line(state, tree.as_ref(), line)),
        )?;
        let waited = Instant::now();
        while waited.elapsed() < BASELINE_WAIT
            && lock(&state).idle_readings.is_empty()
            && device.is_running()
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Sampler {
            state,
            per_process,
            device,
        })
    }

    /// Marks the start of the run: rows of `root_pid` and its descendants count from now, and the
    /// idle readings so far become the baseline.
    pub fn attach(&self, root_pid: u32) {
        let mut state = lock(&self.state);
        state.root = Some(root_pid);
        state.attached_at = Some(Instant::now());
        // The lowest idle reading: a transient desktop spike must not shrink the example's delta.
        state.baseline = state.idle_readings.iter().copied().min();
    }

    /// The latest figure in the best view so far, for a live display.
    pub fn current_mib(&self) -> Option<u64> {
        let state = lock(&self.state);
        if let Some(&(_, mib)) = state.per_process.last() {
            return Some(mib);
        }
        if let Some(&(_, mib)) = state.counter.last() {
            return Some(mib);
        }
        let &(_, used) = state.device.last()?;
        Some(used.saturating_sub(state.baseline?))
    }

    /// Stops every monitor and returns the trace in the best view that produced figures.
    pub fn stop(self) -> MemoryTrace {
        self.stop_with_processes().0
    }

    /// Like [`stop`](Self::stop), and also each process of the tree that nvidia-smi listed with
    /// a figure, with its own samples (empty where per-process figures were `[N/A]`).
    pub fn stop_with_processes(self) -> (MemoryTrace, Vec<ProcessSeries>) {
        let mut notes = Vec::new();
        notes.extend(self.per_process.stop());
        // The per-process reader has ended, so no new counter monitor can appear after this.
        let counter = lock(&self.state).counter_monitor.take();
        if let Some(counter) = counter {
            notes.extend(counter.stop());
        }
        notes.extend(self.device.stop());
        let mut state = std::mem::take(&mut *lock(&self.state));
        state.notes.extend(notes);
        let processes = std::mem::take(&mut state.by_pid)
            .into_iter()
            .map(|(pid, samples)| ProcessSeries { pid, samples })
            .collect();
        (choose_trace(state), processes)
    }
}

/// What one monitor does with each line nvidia-smi prints.
type LineHandler = Box<dyn Fn(&Arc<Mutex<State>>, &str) + Send>;

fn smi_args(query: &str, gpu_index: u32) -> Vec<String> {
    vec![
        query.to_string(),
        "--format=csv,noheader,nounits".to_string(),
        "-i".to_string(),
        gpu_index.to_string(),
        "-lms".to_string(),
        LOOP_MS.to_string(),
    ]
}

fn on_device_line(state: &Mutex<State>, line: &str) {
    let mut state = lock(state);
    match parse_device_used(line) {
        Ok(Some(SmiMemory::Mib(mib))) => match state.since_attach() {
            None => state.idle_readings.push(mib),
            Some(t) => state.device.push((t, mib)),
        },
        Ok(Some(SmiMemory::Unavailable)) => {
            state.note_once("nvidia-smi reports the card's memory.used as not available".into());
        }
        Ok(None) => {}
        Err(e) => state.note_once(e.to_string()),
    }
}

fn on_compute_app_line(state: &Arc<Mutex<State>>, tree: &dyn ProcessTree, line: &str) {
    let row = match parse_compute_app_row(line) {
        Ok(Some(row)) => row,
        Ok(None) => return,
        Err(e) => return lock(state).note_once(e.to_string()),
    };
    // Membership is decided outside the lock: on Windows it may take a process snapshot.
    let (root, known) = {
        let st = lock(state);
        (st.root, st.membership.get(&row.pid).copied())
    };
    let ours = root.map(|root| known.unwrap_or_else(|| is_in_tree(tree, root, row.pid)));
    let mut guard = lock(state);
    let st = &mut *guard;
    let (Some(ours), Some(t)) = (ours, st.since_attach()) else {
        st.listed_before.insert(row.pid);
        return;
    };
    st.membership.insert(row.pid, ours);
    if !ours {
        let figure = match row.used {
            SmiMemory::Mib(mib) => Some(mib),
            SmiMemory::Unavailable => None,
        };
        let seen = st.others.entry(row.pid).or_insert((figure, figure));
        seen.0 = seen.0.min(figure);
        seen.1 = seen.1.max(figure);
        return;
    }
    match row.used {
        SmiMemory::Mib(mib) => {
            st.latest_by_pid.insert(row.pid, (t, mib));
            st.by_pid.entry(row.pid).or_default().push((t, mib));
            // Several processes of the tree may hold memory at once: their sum is the tree's need.
            let sum = st
                .latest_by_pid
                .values()
                .filter(|(seen, _)| seen + STALE_AFTER_MS >= t)
                .map(|(_, mib)| mib)
                .sum();
            st.per_process.push((t, sum));
        }
        SmiMemory::Unavailable => {
            st.unavailable_rows += 1;
            // The counter's instances exist only once the process holds GPU memory, and nvidia-smi
            // listing it proves that it does: start typeperf now, not before the run.
            if cfg!(windows) && !st.counter_tried {
                st.counter_tried = true;
                match start_windows_counter(state, row.pid) {
                    Ok(monitor) => st.counter_monitor = Some(monitor),
                    Err(e) => st.note_once(format!(
                        "the Windows GPU memory counter is not available ({e}); using the card's memory.used instead"
                    )),
                }
            }
        }
    }
}

/// The counter path for one process, every adapter and segment (`pid_<PID>_luid_…_phys_<n>`).
/// The `_` after the pid keeps pid 12345 out of pid 1234's wildcard; [`CounterColumns`] checks
/// each instance in typeperf's header exactly as well. English counter names: on a Windows in
/// another language typeperf cannot resolve them and the sampler falls back to the card's delta
/// (`PdhAddEnglishCounterW` would fix that, through a Windows API call this crate's
/// `forbid(unsafe_code)` keeps out).
pub fn windows_counter_path(pid: u32) -> String {
    format!(r"\GPU Process Memory(pid_{pid}_*)\Dedicated Usage")
}

/// Windows only, and untested off Windows: `typeperf COUNTER -si 1` (one second is typeperf's
/// shortest interval) for the process that nvidia-smi listed with `[N/A]`.
fn start_windows_counter(state: &Arc<Mutex<State>>, pid: u32) -> Result<Monitor, SamplerError> {
    let state = Arc::clone(state);
    Monitor::spawn(
        Path::new("typeperf"),
        &[
            windows_counter_path(pid),
            "-si".to_string(),
            "1".to_string(),
        ],
        "the Windows GPU Process Memory counter",
        {
            let columns: Mutex<Option<CounterColumns>> = Mutex::new(None);
            move |line| {
                let mut cols = columns.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(header) = CounterColumns::from_header(line, pid, None) {
                    *cols = Some(header);
                } else if let Some(mib) = cols.as_ref().and_then(|c| c.sum_mib(line)) {
                    let mut st = lock(&state);
                    if let Some(t) = st.since_attach() {
                        st.counter.push((t, mib));
                    }
                }
            }
        },
    )
}

/// Picks the best view that produced figures and says why when it is a fallback.
fn choose_trace(mut state: State) -> MemoryTrace {
    let (source, samples) = if !state.per_process.is_empty() {
        (
            MemorySource::PerProcess,
            std::mem::take(&mut state.per_process),
        )
    } else if !state.counter.is_empty() {
        (
            MemorySource::WindowsCounter,
            std::mem::take(&mut state.counter),
        )
    } else if let (Some(baseline), false) = (state.baseline, state.device.is_empty()) {
        let delta = state
            .device
            .iter()
            .map(|&(t, used)| (t, used.saturating_sub(baseline)))
            .collect();
        (MemorySource::DeviceDelta, delta)
    } else {
        (MemorySource::Unmeasured, Vec::new())
    };
    if source != MemorySource::PerProcess {
        let why = if state.unavailable_rows > 0 {
            "nvidia-smi reports per-process memory as [N/A] (Windows WDDM driver model)".to_string()
        } else if state.root.is_none() {
            "the sampler was never attached to the example".to_string()
        } else {
            "nvidia-smi never listed a process of the example's tree with memory (WSL2, a container \
             that sees other pids, or the example never used the GPU)"
                .to_string()
        };
        state.notes.insert(0, why);
    }
    if source == MemorySource::DeviceDelta {
        state.notes.push(format!(
            "figures are the card's memory.used minus the idle baseline of {} MiB: anything else that \
             allocated on the card during the run is counted too",
            state.baseline.unwrap_or(0)
        ));
    }
    let others = state
        .others
        .iter()
        .map(|(&pid, &(min_mib, max_mib))| OtherProcess {
            pid,
            min_mib,
            max_mib,
            before_run: state.listed_before.contains(&pid),
        })
        .collect();
    MemoryTrace {
        source,
        peak_mib: samples.iter().map(|&(_, mib)| mib).max(),
        samples,
        baseline_mib: state.baseline,
        device_samples: state.device,
        unavailable_rows: state.unavailable_rows,
        notes: state.notes,
        others,
    }
}

#[cfg(all(test, unix))]
mod tests;

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for SamplerError {
    fn exit(&self) -> Exit {
        Exit::External
    }
}
