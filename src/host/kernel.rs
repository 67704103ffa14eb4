//! The toolkit's working proof: its own `nvcc` compiles a small kernel for the target GPU's
//! architecture (`nvcc -arch=sm_90 -c kernel.cu -o kernel.o`), in a scratch folder of its own.
//! A toolkit whose pieces do not fit together (an nvcc with another release's nvvm or crt)
//! reports its version and still fails here, in NVIDIA's own words, which are kept.
//!
//! Writes only the scratch folder; runs nvcc through the [`System`] it is handed. Which
//! architecture to ask for is the caller's choice (`--gpu-arch`, or the GPU that is present).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::System;

/// How long a kernel of a few lines may take to compile (the real nvcc: about a second).
pub const COMPILE_TIMEOUT: Duration = Duration::from_secs(120);

/// The kernel compiled: one line of device code, nothing the host compiler can trip on.
pub const KERNEL_SOURCE: &str = "// stackpin's toolkit proof: one kernel, compiled for the target GPU.\n\
__global__ void stackpin_scale(float *x, float a, int n) {\n    \
int i = blockIdx.x * blockDim.x + threadIdx.x;\n    \
if (i < n) x[i] *= a;\n}\n";

/// What compiling the kernel showed.
#[derive(Debug, Clone, Serialize)]
pub struct KernelCompile {
    /// `sm_90`, or `None` when nvcc chose its default architecture (no GPU and no --gpu-arch).
    pub arch: Option<String>,
    pub ok: bool,
    /// On failure, nvcc's own message (its first `fatal`/`error` line, else its last line).
    pub message: Option<String>,
    #[serde(with = "millis")]
    pub took: Duration,
}

mod millis {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
}

/// `8.6` (a compute capability) or `sm_86` / `86` → `sm_86`; `None` for anything else.
pub fn sm_arch(compute: &str) -> Option<String> {
    let text = compute.trim();
    let digits = text
        .strip_prefix("sm_")
        .map(str::to_string)
        .unwrap_or_else(|| text.replace('.', ""));
    let ok = !digits.is_empty()
        && digits.len() <= 4
        && digits.bytes().all(|b| b.is_ascii_alphanumeric())
        && digits.bytes().next().is_some_and(|b| b.is_ascii_digit());
    ok.then(|| format!("sm_{digits}"))
}

/// Compiles [`KERNEL_SOURCE`] with `root`'s own nvcc for `arch` (`sm_90`; nvcc's default when
/// `None`).
pub fn compile_kernel(system: &dyn System, root: &Path, arch: Option<&str>) -> KernelCompile {
    let started = Instant::now();
    let failed = |message: String| KernelCompile {
        arch: arch.map(str::to_string),
        ok: false,
        message: Some(message),
        took: started.elapsed(),
    };
    let nvcc = super::toolkits::nvcc_path(system, root);
    if !system.exists(&nvcc) {
        return failed(format!("no {}", nvcc.display()));
    }
    let scratch = match tempfile::Builder::new()
        .prefix("stackpin-kernel-")
        .tempdir()
    {
        Ok(dir) => dir,
        Err(e) => return failed(format!("cannot make a scratch folder for the kernel: {e}")),
    };
    let source = scratch.path().join("kernel.cu");
    let object = scratch.path().join("kernel.o");
    if let Err(e) = std::fs::write(&source, KERNEL_SOURCE) {
        return failed(format!("cannot write {}: {e}", source.display()));
    }
    let mut args: Vec<String> = arch.iter().map(|a| format!("-arch={a}")).collect();
    args.extend([
        "-c".to_string(),
        source.display().to_string(),
        "-o".to_string(),
        object.display().to_string(),
    ]);
    match system.run(&nvcc, &args, COMPILE_TIMEOUT) {
        Ok(out) if out.success() => KernelCompile {
            arch: arch.map(str::to_string),
            ok: true,
            message: None,
            took: started.elapsed(),
        },
        Ok(out) => failed(
            compiler_message(&out.combined())
                .unwrap_or_else(|| format!("nvcc exited with {:?} and said nothing", out.code)),
        ),
        Err(e) => failed(format!("nvcc could not run: {e}")),
    }
}

/// nvcc's own words for a failure: the first `fatal` or `error` line, else the last line.
pub fn compiler_message(output: &str) -> Option<String> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.contains("fatal") || l.contains("error"))
        .or_else(|| lines.last())
        .map(|l| l.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake::FakeSystem;
    use crate::os::Os;

    #[test]
    fn compute_capabilities_become_sm_architectures() {
        assert_eq!(sm_arch("8.6").as_deref(), Some("sm_86"));
        assert_eq!(sm_arch("12.0").as_deref(), Some("sm_120"));
        assert_eq!(sm_arch("sm_90").as_deref(), Some("sm_90"));
        assert_eq!(sm_arch("90a").as_deref(), Some("sm_90a"));
        assert_eq!(sm_arch("").as_deref(), None);
        assert_eq!(sm_arch("sm_-1; rm").as_deref(), None);
    }

    #[test]
    fn the_compilers_fatal_line_is_the_message() {
        let out = "nvcc warning : something\nptxas fatal   : Unsupported .version 9.5; current version is '9.0'\n";
        assert_eq!(
            compiler_message(out).as_deref(),
            Some("ptxas fatal   : Unsupported .version 9.5; current version is '9.0'")
        );
        assert_eq!(compiler_message("a\nlast\n").as_deref(), Some("last"));
        assert_eq!(compiler_message("\n"), None);
    }

    #[test]
    fn a_kernel_compiles_with_the_roots_own_nvcc_for_the_arch() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/opt/cuda-13.0/bin/nvcc", "").answer(
            "/opt/cuda-13.0/bin/nvcc",
            &["-arch=sm_90"],
            0,
            "",
        );
        let done = compile_kernel(&sys, Path::new("/opt/cuda-13.0"), Some("sm_90"));
        assert!(done.ok, "{done:?}");
        assert_eq!(done.arch.as_deref(), Some("sm_90"));
    }

    #[test]
    fn an_arch_nvcc_refuses_fails_with_nvccs_words() {
        let mut sys = FakeSystem::new(Os::Linux);
        sys.file("/opt/cuda-13.0/bin/nvcc", "").answer(
            "/opt/cuda-13.0/bin/nvcc",
            &["-arch=sm_12"],
            1,
            "nvcc fatal   : Unsupported gpu architecture 'sm_12'\n",
        );
        let done = compile_kernel(&sys, Path::new("/opt/cuda-13.0"), Some("sm_12"));
        assert!(!done.ok);
        assert_eq!(
            done.message.as_deref(),
            Some("nvcc fatal   : Unsupported gpu architecture 'sm_12'")
        );
    }

    #[test]
    fn a_root_without_nvcc_is_named() {
        let sys = FakeSystem::new(Os::Linux);
        let done = compile_kernel(&sys, Path::new("/opt/cuda-13.0"), None);
        assert!(!done.ok);
        // The path as this OS writes it (`bin\\nvcc` under Wine).
        let nvcc = Path::new("/opt/cuda-13.0").join("bin").join("nvcc");
        assert!(
            done.message
                .unwrap_or_default()
                .contains(&nvcc.display().to_string())
        );
    }
}
