//! The prove sampler on Windows, for real (under Wine in CI): nvidia-smi under the WDDM driver
//! model lists the example's processes with `[N/A]` memory, so the sampler must try the Windows
//! counter and, when it yields nothing, fall back to the card's `memory.used` over the idle
//! baseline, saying why. The fake nvidia-smi is `tests/windows-fakes/smi-curve.c`.
#![cfg(windows)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stackpin::prove::sampler::{RootOnly, Sampler};
use stackpin::record::MemorySource;

use crate::fakes::fake_program;

const IDLE: u64 = 300;

/// A folder holding the curve-playing fake as `nvidia-smi.exe` and its curves.
struct CurveSmi {
    dir: tempfile::TempDir,
}

impl CurveSmi {
    fn new(compute_curve: &[&str], device_curve: &[u64]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("stackpin sampler ")
            .tempdir()
            .expect("tempdir");
        fs::copy(
            fake_program("smi-curve.exe"),
            dir.path().join("nvidia-smi.exe"),
        )
        .expect("copy fake");
        // Wine now and then refuses to start an .exe copied a moment ago ("Internal error",
        // 1359) when two copies start at once, as the sampler's monitors do. One throwaway run
        // (the fake exits at once on unknown arguments) settles it first.
        for _ in 0..5 {
            if Command::new(dir.path().join("nvidia-smi.exe"))
                .arg("--settle")
                .output()
                .is_ok()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let lines = |items: Vec<String>| items.iter().map(|l| format!("{l}\n")).collect::<String>();
        fs::write(
            dir.path().join("compute-curve"),
            lines(compute_curve.iter().map(|s| s.to_string()).collect()),
        )
        .expect("curve");
        fs::write(
            dir.path().join("device-curve"),
            lines(device_curve.iter().map(u64::to_string).collect()),
        )
        .expect("curve");
        Self { dir }
    }

    fn smi(&self) -> PathBuf {
        self.dir.path().join("nvidia-smi.exe")
    }

    fn print_rows_for(&self, pid: u32) {
        let tmp = self.dir.path().join("pid.tmp");
        fs::write(&tmp, pid.to_string()).expect("pid");
        fs::rename(&tmp, self.dir.path().join("pid")).expect("rename pid");
    }

    fn wait_until_played(&self) {
        let started = Instant::now();
        let done = |name: &str| self.dir.path().join(name).exists();
        while !(done("compute-done") && done("device-done")) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "fake never finished"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The example's stand-in: a Windows process that lives until the test ends it.
struct Example(Child);

impl Example {
    fn start(fake: &Path) -> Self {
        Self(
            Command::new(fake)
                .arg("sleep")
                .spawn()
                .expect("example runs"),
        )
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn wddm_na_rows_fall_back_to_the_cards_delta_over_the_idle_baseline() {
    let fake = CurveSmi::new(
        &["999999, [N/A];PID, [N/A]", "PID, [N/A]", "PID, [N/A]"],
        &[800, 1900, 2860, 2860, 2500],
    );
    let sampler = Sampler::start(&fake.smi(), 0, Arc::new(RootOnly)).expect("sampler starts");
    let example = Example::start(&fake.smi());
    sampler.attach(example.0.id());
    fake.print_rows_for(example.0.id());
    fake.wait_until_played();
    let live = sampler.current_mib();
    let trace = sampler.stop();
    drop(example);
    assert!(live.is_some(), "a live figure during the run: {trace:?}");
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

#[test]
fn per_process_rows_on_windows_give_the_examples_own_peak() {
    let fake = CurveSmi::new(
        &[
            "999999, 7000;PID, 180",
            "PID, 512",
            "PID, 2560",
            "PID, 2400",
        ],
        &[900, 1200, 3000, 2900],
    );
    let sampler = Sampler::start(&fake.smi(), 0, Arc::new(RootOnly)).expect("sampler starts");
    let example = Example::start(&fake.smi());
    sampler.attach(example.0.id());
    fake.print_rows_for(example.0.id());
    fake.wait_until_played();
    let trace = sampler.stop();
    drop(example);
    assert_eq!(trace.source, MemorySource::PerProcess, "{trace:?}");
    assert_eq!(trace.peak_mib, Some(2560), "{trace:?}");
    assert_eq!(trace.unavailable_rows, 0);
}
