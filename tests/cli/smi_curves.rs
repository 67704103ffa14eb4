//! The folder a curve-playing fake `nvidia-smi` reads, and one sampled run against it: shared by
//! the sampler's unit tests (`src/prove/sampler/tests.rs`, where the fake is a shell script) and
//! the Windows sampler tests (`windows_sampler.rs`, `tests/windows-fakes/smi-curve.c`), which
//! include this file by path. The including module brings `Sampler`, `ProcessTree` and
//! `MemoryTrace` into scope (the crate's own paths differ between the two).
//!
//! The fake reads, from its folder: `pid` (the pid to print rows for; it waits until the file
//! exists, so rows start after `attach`), `compute-curve` (one line per tick, rows separated by
//! `;`, `PID` replaced by that pid) and `device-curve` (one `memory.used` per tick; it prints
//! the idle figure until `pid` appears). It touches `compute-done` / `device-done` after the
//! last tick.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{MemorySource, MemoryTrace, ProcessTree, Sampler};

/// What the fake prints for the card's `memory.used` before `pid` appears (`IDLE` in
/// `smi-curve.c` too).
pub const IDLE: u64 = 300;

/// The WDDM case, per-process rows all `[N/A]` (another job's among them), as `(compute curve,
/// device curve)`; [`assert_na_rows_fell_back`] says what the sampler must make of it.
pub const NA_ROWS: (&[&str], &[u64]) = (
    &["999999, [N/A];PID, [N/A]", "PID, [N/A]", "PID, [N/A]"],
    &[800, 1900, 2860, 2860, 2500],
);

/// [`NA_ROWS`] measured as the card's peak over the idle baseline, saying why.
pub fn assert_na_rows_fell_back(trace: &MemoryTrace) {
    assert_eq!(trace.source, MemorySource::DeviceDelta, "{trace:?}");
    assert_eq!(trace.baseline_mib, Some(IDLE));
    assert_eq!(trace.peak_mib, Some(2860 - IDLE), "{trace:?}");
    assert_eq!(
        trace.unavailable_rows, 3,
        "other jobs' [N/A] rows are not ours"
    );
    assert!(trace.notes[0].contains("[N/A]"), "{:?}", trace.notes);
    assert!(
        trace
            .notes
            .iter()
            .any(|n| n.contains("idle baseline of 300 MiB")),
        "{:?}",
        trace.notes
    );
}

/// A folder holding the fake (as `smi_name`) and the curves it plays.
pub struct CurveSmi {
    dir: tempfile::TempDir,
    smi_name: &'static str,
}

impl CurveSmi {
    /// Writes the two curves into `dir`, where the caller has put the fake as `smi_name`.
    pub fn new(
        dir: tempfile::TempDir,
        smi_name: &'static str,
        compute_curve: &[&str],
        device_curve: &[u64],
    ) -> CurveSmi {
        let lines = |items: Vec<String>| items.iter().map(|l| format!("{l}\n")).collect::<String>();
        std::fs::write(
            dir.path().join("compute-curve"),
            lines(compute_curve.iter().map(|s| s.to_string()).collect()),
        )
        .expect("write curve");
        std::fs::write(
            dir.path().join("device-curve"),
            lines(device_curve.iter().map(u64::to_string).collect()),
        )
        .expect("write curve");
        CurveSmi { dir, smi_name }
    }

    pub fn smi(&self) -> PathBuf {
        self.dir.path().join(self.smi_name)
    }

    /// Tells the fake whose rows to print (atomically, so it never reads half a pid).
    pub fn print_rows_for(&self, pid: u32) {
        let tmp = self.dir.path().join("pid.tmp");
        std::fs::write(&tmp, pid.to_string()).expect("write pid");
        std::fs::rename(&tmp, self.dir.path().join("pid")).expect("rename pid");
    }

    pub fn wait_until_played(&self) {
        let started = Instant::now();
        let done = |name: &str| self.dir.path().join(name).exists();
        while !(done("compute-done") && done("device-done")) {
            // Wine starts the fake slowly; 30 s is only how long a broken fake may hang a test.
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "fake never finished"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A stand-in for the example: a process that lives until the test ends it.
struct Example(Child);

impl Example {
    fn start(command: &mut Command) -> Example {
        Example(command.spawn().expect("the example's stand-in runs"))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the sampler, start `example`, attach, let the fake play the curve for
/// `rows_pid(example's pid)`, stop: the live figure seen before the stop, and the trace.
pub fn play(
    fake: &CurveSmi,
    tree: Arc<dyn ProcessTree>,
    example: &mut Command,
    rows_pid: impl FnOnce(u32) -> u32,
) -> (Option<u64>, MemoryTrace) {
    let sampler = Sampler::start(&fake.smi(), 0, tree).expect("sampler starts");
    let example = Example::start(example);
    sampler.attach(example.pid());
    fake.print_rows_for(rows_pid(example.pid()));
    fake.wait_until_played();
    let live = sampler.current_mib();
    let trace = sampler.stop();
    drop(example);
    (live, trace)
}
