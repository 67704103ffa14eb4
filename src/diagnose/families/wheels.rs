//! NVIDIA's CUDA wheels of two CUDA majors side by side in one environment: `nvidia-*-cu12`
//! beside `nvidia-*-cu13` (or `-cu11` beside `-cu12`) in a `pip list`, a `pip freeze`,
//! collect_env's `[pip3]` rows, an install log or an import error that names both. Each major's
//! wheels put their libraries in the same `site-packages/nvidia/<lib>/lib` folders, so the
//! loader finds one major's copy where the library was built for the other's: the training
//! library's environment, whatever the driver and the toolkit are (pytorch/pytorch#186591:
//! "Uninstall the `nvidia-nccl-cu12` package"; rwth-i6/returnn#1802: nvidia-nccl-cu11 beside
//! -cu12 and `undefined symbol: ncclMemFree`; VichyTong/CodeJudge#2: the cu11 packages removed
//! from the requirements).
//!
//! This module reads text only. The finding is decisive when the log also shows a library that
//! will not load (the mixed wheels are then that failure's cause, and [`super::loader`] leaves
//! the CUDA libraries' lines to it); a package list alone says `likely`.

use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Library, Toolkit};
use crate::diagnose::matcher::Segment;

/// Words of a loader failure the mixed wheels explain.
const LOAD_FAILED: &[&str] = &[
    "undefined symbol",
    "cannot open shared object file",
    "could not load library",
    "with link time reference",
];

/// The CUDA majors of the `nvidia-*-cuNN` wheels `lower` names (`nvidia-nccl-cu12==2.29.3`,
/// `nvidia_cublas_cu12-12.5.3.2-py3-none-manylinux2014_x86_64.whl`), in the order named.
fn wheel_majors(lower: &str) -> Vec<u32> {
    lower
        .match_indices("nvidia")
        .filter_map(|(at, _)| {
            let name = &lower[at..];
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_')))
                .unwrap_or(name.len());
            let name = &name[..end];
            // The first `-cuNN` / `_cuNN` with exactly two digits: `cuda` and `cu130` are not it.
            name.match_indices("cu").find_map(|(at, _)| {
                let joined = name[..at].ends_with(['-', '_']);
                let digits = name.get(at + 2..at + 4)?;
                let after = name[at + 4..].chars().next();
                (joined
                    && digits.chars().all(|c| c.is_ascii_digit())
                    && !after.is_some_and(|c| c.is_ascii_alphanumeric()))
                .then(|| digits.parse().ok())
                .flatten()
            })
        })
        .collect()
}

/// The line that names a second CUDA major of NVIDIA's wheels, with both majors (the first
/// named, then this line's other one); `None` when the log names one major or none.
pub(super) fn two_majors<'s, 'a>(
    segments: &'s [Segment<'a>],
) -> Option<(&'s Segment<'a>, u32, u32)> {
    let mut first: Option<u32> = None;
    for seg in segments {
        if !seg.lower.contains("nvidia") {
            continue;
        }
        for major in wheel_majors(&seg.lower) {
            match first {
                None => first = Some(major),
                Some(earlier) if earlier != major => return Some((seg, earlier, major)),
                Some(_) => {}
            }
        }
    }
    None
}

pub(super) fn find(segments: &[Segment<'_>]) -> Option<Finding> {
    let (seg, a, b) = two_majors(segments)?;
    let (old, new) = (a.min(b), a.max(b));
    let load_failed = segments
        .iter()
        .any(|s| LOAD_FAILED.iter().any(|w| s.lower.contains(w)));
    Some(at(
        seg,
        "lib-cuda-wheels-two-majors",
        Library,
        Some(Toolkit),
        format!(
            "NVIDIA's CUDA wheels of two CUDA majors are installed in one environment (nvidia-*-cu{old} beside nvidia-*-cu{new}): both put their libraries in site-packages/nvidia/, so the training library loads the other major's copy of a CUDA library (NCCL, cuBLAS, cuDNN) than the one it was built with."
        ),
        format!(
            "Keep one major: `pip list | grep -i nvidia` shows both sets; check the library's own (`python -c \"import torch; print(torch.version.cuda)\"`), uninstall the other set (`pip uninstall nvidia-nccl-cu{old} …`, every nvidia-*-cuNN of the major the library does not use), then reinstall the library's pinned +cuXYZ wheels (`pip install --force-reinstall torch==VERSION` from its CUDA index) in that environment, or build a fresh venv. Find which package pulled the other major (`pip show` on each nvidia-* wheel's Required-by) and pin its build for the same CUDA."
        ),
        Mechanism::Plain,
        load_failed,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::matcher;

    #[test]
    fn wheel_names_give_their_cuda_major_and_nothing_else_does() {
        assert_eq!(wheel_majors("[pip3] nvidia-nccl-cu12==2.29.3"), vec![12]);
        assert_eq!(
            wheel_majors(
                "downloading nvidia_cublas_cu12-12.5.3.2-py3-none-manylinux2014_x86_64.whl"
            ),
            vec![12]
        );
        assert!(wheel_majors("nvidia-smi 550.54.15 cuda 12.4").is_empty());
        assert!(wheel_majors("nvidia-cublas 13.1.0.3").is_empty());
        assert!(wheel_majors("torch 2.9.0+cu130 nvidia-docker").is_empty());
    }

    #[test]
    fn one_major_however_often_named_is_no_finding() {
        let log = "[pip3] nvidia-cublas-cu12==12.1.3.1\n[pip3] nvidia-nccl-cu12==2.20.5";
        let segments: Vec<_> = matcher::segments(log).collect();
        assert!(find(&segments).is_none());
    }
}
