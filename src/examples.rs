//! The bundled example scripts, compiled into the binary, and writing them where a manifest's
//! `{examples}` placeholder points.
//!
//! A lone stackpin binary plus an installer bundle must be enough to prove a new workstation, so
//! the scripts travel inside the executable (`include_str!`) rather than beside it. This module
//! only writes them; running them and reading their `STACKPIN_RESULT` line is `prove`'s job.

use std::io;
use std::path::{Path, PathBuf};

use crate::fsutil::write_atomic;

/// One bundled script: the file name it is written under and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundledScript {
    /// File name inside the examples folder, e.g. `classify.py`.
    pub name: &'static str,
    /// The script's source, as shipped in `scripts/`.
    pub text: &'static str,
    /// What it is for, one line (shown in listings).
    pub about: &'static str,
}

/// Every script the binary carries. `infer.py` imports `classify.py`, so they are always written
/// together.
pub const BUNDLED: &[BundledScript] = &[
    BundledScript {
        name: "classify.py",
        text: include_str!("../scripts/classify.py"),
        about: "PyTorch: train a ResNet-18-style CNN on synthetic images, report peak GPU memory",
    },
    BundledScript {
        name: "classify_tf.py",
        text: include_str!("../scripts/classify_tf.py"),
        about: "TensorFlow: the same training proof, with memory growth on",
    },
    BundledScript {
        name: "infer.py",
        text: include_str!("../scripts/infer.py"),
        about: "PyTorch: forward passes only, report p50/p99 latency and GPU memory",
    },
    BundledScript {
        name: "infer_ort.py",
        text: include_str!("../scripts/infer_ort.py"),
        about: "ONNX Runtime GPU: a small CNN built in memory, report p50/p99 latency",
    },
];

/// The folder name under a stack's folder that `{examples}` expands to.
pub const EXAMPLES_DIR: &str = "examples";

/// The bundled script called `name`, if there is one.
pub fn bundled(name: &str) -> Option<&'static BundledScript> {
    BUNDLED.iter().find(|s| s.name == name)
}

/// Writes every bundled script into `<stack_dir>/examples/` and returns that folder, the value of
/// `{examples}`.
///
/// Each file is written atomically, and only when its content differs, so a script that a run is
/// reading is never replaced by a half-written one and an unchanged folder keeps its timestamps.
pub fn write_examples(stack_dir: &Path) -> io::Result<PathBuf> {
    let dir = stack_dir.join(EXAMPLES_DIR);
    std::fs::create_dir_all(&dir)?;
    for script in BUNDLED {
        let path = dir.join(script.name);
        match std::fs::read(&path) {
            Ok(existing) if existing == script.text.as_bytes() => continue,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        write_atomic(&path, script.text.as_bytes())?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_reports_a_stackpin_result_line() {
        for script in BUNDLED {
            assert!(
                script.text.contains("STACKPIN_RESULT"),
                "{} must print the result line prove reads",
                script.name
            );
        }
    }

    #[test]
    fn training_scripts_default_to_batch_64_and_keep_cudnn_benchmark_off() {
        for name in ["classify.py", "classify_tf.py"] {
            let text = bundled(name).expect("bundled").text;
            assert!(
                text.contains(r#""--batch-size", type=int, default=64"#),
                "{name}"
            );
        }
        let torch = bundled("classify.py").expect("bundled").text;
        assert!(torch.contains("torch.backends.cudnn.benchmark = False"));
        assert!(torch.contains("reset_peak_memory_stats"));
        let tf = bundled("classify_tf.py").expect("bundled").text;
        assert!(tf.contains("set_memory_growth(gpus[0], True)"));
    }

    #[test]
    fn writes_every_script_into_the_examples_folder() {
        let stack = tempfile::tempdir().expect("tempdir");
        let dir = write_examples(stack.path()).expect("written");
        assert_eq!(dir, stack.path().join("examples"));
        for script in BUNDLED {
            let on_disk = std::fs::read_to_string(dir.join(script.name)).expect("file exists");
            assert_eq!(on_disk, script.text);
        }
    }

    #[test]
    fn rewrites_a_script_someone_edited() {
        let stack = tempfile::tempdir().expect("tempdir");
        let dir = write_examples(stack.path()).expect("written");
        std::fs::write(dir.join("classify.py"), "print('tampered')\n").expect("edit");
        write_examples(stack.path()).expect("rewritten");
        let on_disk = std::fs::read_to_string(dir.join("classify.py")).expect("file exists");
        assert_eq!(on_disk, bundled("classify.py").expect("bundled").text);
    }

    #[test]
    fn leaves_no_temporary_files_behind() {
        let stack = tempfile::tempdir().expect("tempdir");
        let dir = write_examples(stack.path()).expect("written");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("readable")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["classify.py", "classify_tf.py", "infer.py", "infer_ort.py"]
        );
    }

    /// Byte-compiles each written script with the host's python3, as CI does; a syntax error in a
    /// bundled script would otherwise only show on a GPU workstation.
    #[test]
    fn bundled_scripts_compile_with_python3() {
        let python = |args: Vec<std::ffi::OsString>| {
            crate::exec::run(crate::exec::Spec::captured(
                "python3",
                args,
                std::time::Duration::from_secs(60),
            ))
        };
        let probe = python(vec!["--version".into()]);
        if !probe.is_ok_and(|f| f.end == crate::exec::End::Exited(0)) {
            eprintln!("skipped: python3 is not on PATH, the scripts were not byte-compiled");
            return;
        }
        let stack = tempfile::tempdir().expect("tempdir");
        let dir = write_examples(stack.path()).expect("written");
        for script in BUNDLED {
            let path = dir.join(script.name);
            let cfile = stack.path().join(format!("{}.pyc", script.name));
            let out = python(vec![
                "-c".into(),
                "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)".into(),
                path.into(),
                cfile.into(),
            ])
            .expect("python3 runs");
            assert!(
                out.end == crate::exec::End::Exited(0),
                "{} does not compile:\n{}",
                script.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
