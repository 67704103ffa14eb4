//! Which GPU a command uses: `--gpu N` when given, otherwise the first GPU that
//! `CUDA_VISIBLE_DEVICES` allows. Every probe and measurement names the GPU it chose, so this
//! module returns the choice together with the reason for it. It reads no environment itself;
//! the caller passes the variable's value.

use serde::Serialize;

use super::HostError;
use super::nvidia_smi::Gpu;

/// The GPU chosen and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuChoice {
    /// nvidia-smi's index of the chosen GPU; `None` when no GPU may be used.
    pub index: Option<u32>,
    /// Why this GPU (or none): `--gpu 1`, `CUDA_VISIBLE_DEVICES=2,3`, `first GPU`, …
    pub reason: String,
}

/// Chooses a GPU. `requested` is `--gpu N`; `visible` is `CUDA_VISIBLE_DEVICES` when set.
///
/// CUDA reads the variable as a comma list of indices or UUIDs (`GPU-…`, a unique prefix is
/// enough) and stops at the first entry it cannot match; an empty value hides every GPU.
/// nvidia-smi numbers GPUs in PCI bus order, which is what `CUDA_DEVICE_ORDER=PCI_BUS_ID`
/// gives CUDA; indices here are nvidia-smi's.
pub fn choose(
    gpus: &[Gpu],
    requested: Option<u32>,
    visible: Option<&str>,
) -> Result<GpuChoice, HostError> {
    if let Some(n) = requested {
        return match gpus.iter().find(|g| g.index == n) {
            Some(g) => Ok(GpuChoice {
                index: Some(g.index),
                reason: format!("--gpu {n}"),
            }),
            None => Err(HostError::NoSuchGpu {
                requested: n,
                available: gpus.iter().map(|g| g.index).collect(),
            }),
        };
    }
    if gpus.is_empty() {
        return Ok(GpuChoice {
            index: None,
            reason: "no NVIDIA GPU found".to_string(),
        });
    }
    let Some(visible) = visible else {
        return Ok(GpuChoice {
            index: Some(gpus[0].index),
            reason: "first GPU".to_string(),
        });
    };
    let reason = format!("CUDA_VISIBLE_DEVICES={visible}");
    // CUDA's device 0 is the list's first entry; an entry it cannot match ends the list, so
    // when the first one matches nothing, no GPU is visible at all.
    let first = visible.split(',').map(str::trim).next().unwrap_or_default();
    if let Some(g) = match_entry(gpus, first) {
        return Ok(GpuChoice {
            index: Some(g.index),
            reason,
        });
    }
    Ok(GpuChoice {
        index: None,
        reason: format!("{reason} allows none of the GPUs nvidia-smi lists"),
    })
}

fn match_entry<'a>(gpus: &'a [Gpu], entry: &str) -> Option<&'a Gpu> {
    if entry.is_empty() {
        return None;
    }
    if let Ok(n) = entry.parse::<u32>() {
        return gpus.iter().find(|g| g.index == n);
    }
    if entry.starts_with("GPU-") || entry.starts_with("MIG-") {
        let mut hits = gpus.iter().filter(|g| g.uuid.starts_with(entry));
        let first = hits.next()?;
        // An ambiguous prefix matches nothing, as in CUDA.
        return hits.next().is_none().then_some(first);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, uuid: &str) -> Gpu {
        Gpu {
            index,
            name: format!("GPU {index}"),
            uuid: uuid.to_string(),
            driver_version: "570.133.20".to_string(),
            memory_total_mib: Some(24576),
            compute_cap: Some("8.6".to_string()),
        }
    }

    fn three() -> Vec<Gpu> {
        vec![
            gpu(0, "GPU-aaaa-1"),
            gpu(1, "GPU-bbbb-2"),
            gpu(2, "GPU-bbbc-3"),
        ]
    }

    #[test]
    fn without_the_variable_the_first_gpu_is_used() {
        let choice = choose(&three(), None, None).expect("choice");
        assert_eq!(choice.index, Some(0));
    }

    #[test]
    fn the_first_allowed_index_wins() {
        let choice = choose(&three(), None, Some("2,0")).expect("choice");
        assert_eq!(choice.index, Some(2));
        assert_eq!(choice.reason, "CUDA_VISIBLE_DEVICES=2,0");
    }

    #[test]
    fn uuids_and_unique_prefixes_select_a_gpu() {
        assert_eq!(
            choose(&three(), None, Some("GPU-bbbc")).expect("ok").index,
            Some(2)
        );
        // `GPU-bbb` matches two GPUs: ambiguous, so nothing is visible.
        assert_eq!(
            choose(&three(), None, Some("GPU-bbb")).expect("ok").index,
            None
        );
    }

    #[test]
    fn an_empty_or_invalid_list_hides_every_gpu() {
        assert_eq!(choose(&three(), None, Some("")).expect("ok").index, None);
        assert_eq!(choose(&three(), None, Some("7,1")).expect("ok").index, None);
        assert_eq!(choose(&three(), None, Some("-1")).expect("ok").index, None);
    }

    #[test]
    fn gpu_flag_overrides_the_variable_and_must_exist() {
        assert_eq!(
            choose(&three(), Some(1), Some("2")).expect("ok").index,
            Some(1)
        );
        let err = choose(&three(), Some(5), None).expect_err("no GPU 5");
        assert!(err.to_string().contains("0, 1, 2"), "{err}");
    }

    #[test]
    fn no_gpus_means_no_choice_and_says_so() {
        let choice = choose(&[], None, Some("0")).expect("ok");
        assert_eq!(choice.index, None);
        assert!(choice.reason.contains("no NVIDIA GPU"));
    }
}
