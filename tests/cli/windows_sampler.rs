//! The prove sampler on Windows, for real (under Wine in CI): nvidia-smi under the WDDM driver
//! model lists the example's processes with `[N/A]` memory, so the sampler must try the Windows
//! counter and, when it yields nothing, fall back to the card's `memory.used` over the idle
//! baseline, saying why. The fake nvidia-smi is `tests/windows-fakes/smi-curve.c`.
#![cfg(windows)]

use crate::common::OutputStarted;
use std::fs;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use stackpin::prove::sampler::{MemoryTrace, ProcessTree, RootOnly, Sampler};
use stackpin::record::MemorySource;

use crate::fakes::fake_program;

#[path = "smi_curves.rs"]
mod smi_curves;
use smi_curves::{CurveSmi, NA_ROWS, assert_na_rows_fell_back};

/// A folder holding the curve-playing fake as `nvidia-smi.exe` and its curves.
fn curve_smi(compute_curve: &[&str], device_curve: &[u64]) -> CurveSmi {
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
            .output_started()
            .is_ok()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    CurveSmi::new(dir, "nvidia-smi.exe", compute_curve, device_curve)
}

/// A sampled run whose example is the fake itself, told to `sleep`: a Windows process that
/// lives until the test ends it.
fn run(fake: &CurveSmi) -> (Option<u64>, MemoryTrace) {
    smi_curves::play(
        fake,
        Arc::new(RootOnly),
        Command::new(fake.smi()).arg("sleep"),
        |pid| pid,
    )
}

#[test]
fn wddm_na_rows_fall_back_to_the_cards_delta_over_the_idle_baseline() {
    let fake = curve_smi(NA_ROWS.0, NA_ROWS.1);
    let (live, trace) = run(&fake);
    assert!(live.is_some(), "a live figure during the run: {trace:?}");
    assert_na_rows_fell_back(&trace);
}

#[test]
fn per_process_rows_on_windows_give_the_examples_own_peak() {
    let fake = curve_smi(
        &[
            "999999, 7000;PID, 180",
            "PID, 512",
            "PID, 2560",
            "PID, 2400",
        ],
        &[900, 1200, 3000, 2900],
    );
    let (_, trace) = run(&fake);
    assert_eq!(trace.source, MemorySource::PerProcess, "{trace:?}");
    assert_eq!(trace.peak_mib, Some(2560), "{trace:?}");
    assert_eq!(trace.unavailable_rows, 0);
}
