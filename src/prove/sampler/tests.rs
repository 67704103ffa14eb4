//! The sampler against a fake `nvidia-smi`: a shell script that plays a scripted memory curve
//! from the folder `smi_curves` describes.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

#[path = "../../../tests/cli/smi_curves.rs"]
mod smi_curves;
use smi_curves::{CurveSmi, IDLE, NA_ROWS, assert_na_rows_fell_back};

/// The fake as a shell script beside its curves.
fn fake_smi(compute_curve: &[&str], device_curve: &[u64]) -> CurveSmi {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let script = format!(
        r#"#!/bin/sh
# fake nvidia-smi for stackpin's sampler tests
dir='{d}'
case "$*" in
  *--query-compute-apps=pid,used_memory*--format=csv,noheader,nounits*-lms*)
    while [ ! -s "$dir/pid" ]; do sleep 0.02; done
    pid=$(cat "$dir/pid")
    while IFS= read -r tick; do
      echo "$tick" | sed "s/PID/$pid/g" | tr ';' '\n'
      sleep 0.05
    done < "$dir/compute-curve"
    touch "$dir/compute-done"
    exec sleep 60 ;;
  *--query-gpu=memory.used*--format=csv,noheader,nounits*-lms*)
    while [ ! -s "$dir/pid" ]; do echo {IDLE}; sleep 0.03; done
    while IFS= read -r tick; do echo "$tick"; sleep 0.05; done < "$dir/device-curve"
    touch "$dir/device-done"
    exec sleep 60 ;;
  *) echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 2 ;;
esac
"#
    );
    let smi = dir.path().join("nvidia-smi");
    std::fs::write(&smi, script).expect("write fake");
    make_executable(&smi);
    CurveSmi::new(dir, "nvidia-smi", compute_curve, device_curve)
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path).expect("meta").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// A sampled run with `sleep 30` as the example; a live figure must be seen during it.
fn run(
    fake: &CurveSmi,
    tree: Arc<dyn ProcessTree>,
    rows_pid: impl FnOnce(u32) -> u32,
) -> MemoryTrace {
    let (live, trace) = smi_curves::play(
        fake,
        tree,
        std::process::Command::new("sleep").arg("30"),
        rows_pid,
    );
    assert!(live.is_some(), "a live figure was available during the run");
    trace
}

const RISING: &[&str] = &[
    "999999, 7000;PID, 180",
    "999999, 7000;PID, 512",
    "999999, 7000;PID, 1536",
    "999999, 7000;PID, 2560",
    "999999, 7000;PID, 2560",
    "999999, 7000;PID, 2432",
];

#[test]
fn records_the_peak_of_the_examples_process_and_ignores_other_jobs() {
    let fake = fake_smi(RISING, &[500, 1000, 2900, 2900]);
    let trace = run(&fake, Arc::new(RootOnly), |pid| pid);
    assert_eq!(trace.source, MemorySource::PerProcess);
    assert_eq!(trace.peak_mib, Some(2560), "{trace:?}");
    assert_eq!(trace.baseline_mib, Some(IDLE));
    let values: Vec<u64> = trace.samples.iter().map(|&(_, m)| m).collect();
    assert_eq!(values, [180, 512, 1536, 2560, 2560, 2432]);
    let other = trace.others.iter().find(|o| o.pid == 999999);
    assert_eq!(
        other.map(|o| (o.min_mib, o.max_mib)),
        Some((Some(7000), Some(7000))),
        "the other job is kept apart, for the fallback's cross-check: {trace:?}"
    );
    assert!(
        trace.samples.windows(2).all(|w| w[0].0 <= w[1].0),
        "time runs forward"
    );
    let card: Vec<u64> = trace.device_samples.iter().map(|&(_, m)| m).collect();
    assert!(
        card.ends_with(&[500, 1000, 2900, 2900]),
        "the card's view is kept too: {card:?}"
    );
    assert!(trace.notes.is_empty(), "{:?}", trace.notes);
}

#[test]
fn rows_of_a_grandchild_count_through_the_process_tree() {
    let fake = fake_smi(RISING, &[2900]);
    const WORKER: u32 = 4_000_001;
    let root = Arc::new(std::sync::Mutex::new(0_u32));
    // The tree is only known once the example's pid is: a fake tree that looks it up.
    struct Tree(Arc<std::sync::Mutex<u32>>);
    impl ProcessTree for Tree {
        fn parent(&self, pid: u32) -> Option<u32> {
            let root = *self.0.lock().expect("lock");
            (pid == WORKER).then_some(root)
        }
    }
    let tree_root = Arc::clone(&root);
    let trace = run(&fake, Arc::new(Tree(tree_root)), |pid| {
        *root.lock().expect("lock") = pid;
        WORKER
    });
    assert_eq!(trace.source, MemorySource::PerProcess);
    assert_eq!(trace.peak_mib, Some(2560));
}

#[cfg(target_os = "linux")]
#[test]
fn procfs_attributes_a_real_grandchild() {
    let fake = fake_smi(RISING, &[2900]);
    let sampler = Sampler::start(&fake.smi(), 0, Arc::new(Procfs::new())).expect("starts");
    let scratch = tempfile::tempdir().expect("tempdir");
    let pid_file = scratch.path().join("worker-pid");
    let mut example = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sleep 30 & echo $! > '{}'; wait",
            pid_file.display()
        ))
        .spawn()
        .expect("sh runs");
    sampler.attach(example.id());
    let started = Instant::now();
    let worker = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no worker pid");
        std::thread::sleep(Duration::from_millis(10));
    };
    fake.print_rows_for(worker);
    fake.wait_until_played();
    let trace = sampler.stop();
    let _ = std::process::Command::new("kill")
        .arg(worker.to_string())
        .status();
    let _ = example.kill();
    let _ = example.wait();
    assert_eq!(trace.source, MemorySource::PerProcess);
    assert_eq!(trace.peak_mib, Some(2560));
}

#[test]
fn several_processes_of_the_tree_add_up() {
    const SECOND: u32 = 4_000_002;
    let curve = &[
        "PID, 1000;4000002, 500",
        "PID, 1000;4000002, 1560",
        "PID, 1000;4000002, 1560",
    ];
    let fake = fake_smi(curve, &[2900]);
    struct Tree(Arc<std::sync::Mutex<u32>>);
    impl ProcessTree for Tree {
        fn parent(&self, pid: u32) -> Option<u32> {
            (pid == SECOND).then(|| *self.0.lock().expect("lock"))
        }
    }
    let root = Arc::new(std::sync::Mutex::new(0_u32));
    let tree = Arc::new(Tree(Arc::clone(&root)));
    let trace = run(&fake, tree, |pid| {
        *root.lock().expect("lock") = pid;
        pid
    });
    assert_eq!(trace.peak_mib, Some(2560), "{trace:?}");
}

#[test]
fn wddm_not_available_falls_back_to_the_cards_delta_over_the_idle_baseline() {
    let fake = fake_smi(NA_ROWS.0, NA_ROWS.1);
    let trace = run(&fake, Arc::new(RootOnly), |pid| pid);
    assert_na_rows_fell_back(&trace);
    let values: Vec<u64> = trace.samples.iter().map(|&(_, m)| m).collect();
    // Idle readings between attach and the first tick of the curve show as 0.
    let curve_start = values.iter().position(|&m| m > 0).expect("curve");
    assert!(values[..curve_start].iter().all(|&m| m == 0));
    assert_eq!(values[curve_start..], [500, 1600, 2560, 2560, 2200]);
}

#[test]
fn an_example_nvidia_smi_never_lists_falls_back_too() {
    let fake = fake_smi(&["999999, 7000"], &[1300]);
    let trace = run(&fake, Arc::new(RootOnly), |pid| pid);
    assert_eq!(trace.source, MemorySource::DeviceDelta);
    assert_eq!(trace.peak_mib, Some(1000));
    assert!(trace.notes[0].contains("never listed"), "{:?}", trace.notes);
}

#[test]
fn a_missing_nvidia_smi_is_an_error_naming_it() {
    let err = Sampler::start(Path::new("/nonexistent/nvidia-smi"), 0, Arc::new(RootOnly))
        .err()
        .expect("cannot start");
    assert!(err.to_string().contains("/nonexistent/nvidia-smi"), "{err}");
}

#[test]
fn a_sampler_never_attached_measured_nothing() {
    let fake = fake_smi(RISING, &[2900]);
    let sampler = Sampler::start(&fake.smi(), 0, Arc::new(RootOnly)).expect("starts");
    let trace = sampler.stop();
    assert_eq!(trace.source, MemorySource::Unmeasured);
    assert_eq!(trace.peak_mib, None);
    assert!(
        trace.notes[0].contains("never attached"),
        "{:?}",
        trace.notes
    );
}

#[test]
fn the_windows_counter_path_names_the_process() {
    assert_eq!(
        windows_counter_path(4242),
        r"\GPU Process Memory(pid_4242_*)\Dedicated Usage"
    );
}
