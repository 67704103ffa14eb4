//! A wheel toolkit (`toolkit.source: wheels`) installed from the archive: every component wheel
//! the manifest pins is verified against the lock and the manifest's sha256, then unpacked
//! offline into `toolkit.root` the way NVIDIA's runfile lays a toolkit out (`bin/nvcc`,
//! `nvvm/bin/cicc`, `include/`, `lib/`): the wheels carry it all under `nvidia/cuNN/`. The
//! layer's environment is written beside it, in [`ENV_FILE`]. Nothing runs here: proving the
//! toolkit (nvcc, a kernel) is the layers' job.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{ArchiveError, Lockfile, StackDir, verify_entry};
use crate::manifest::{Layer, Manifest};

/// The file in `toolkit.root` that sets the layer's environment: `. <root>/stackpin-env.sh`.
pub const ENV_FILE: &str = "stackpin-env.sh";

/// What unpacking a wheel toolkit left behind.
#[derive(Debug, Clone)]
pub struct UnpackedToolkit {
    pub root: PathBuf,
    /// [`ENV_FILE`] in the root.
    pub env_file: PathBuf,
    /// Files written, over every wheel.
    pub files: usize,
}

/// Verifies every component wheel, then unpacks them into `m.toolkit.root` and writes
/// [`ENV_FILE`]. A wheel that is missing, unlocked, or not the manifest's pin stops it before
/// anything is written.
pub fn install_toolkit_wheels(
    stack: &StackDir,
    lock: &Lockfile,
    m: &Manifest,
) -> Result<UnpackedToolkit, ArchiveError> {
    let mut wheels = Vec::new();
    for c in &m.toolkit.components {
        let path = stack.file_path(Layer::Toolkit, &c.file);
        let entry = lock
            .find(Layer::Toolkit, &c.file)
            .ok_or_else(|| ArchiveError::Missing {
                layer: Layer::Toolkit,
                file: c.file.clone(),
                path: path.clone(),
            })?;
        if !entry.sha256.eq_ignore_ascii_case(&c.sha256) {
            return Err(ArchiveError::Corrupt {
                path,
                expected: c.sha256.clone(),
                actual: entry.sha256.clone(),
            });
        }
        wheels.push(verify_entry(stack, entry)?);
    }
    let root = PathBuf::from(&m.toolkit.root);
    std::fs::create_dir_all(&root).map_err(|e| ArchiveError::io("creating", &root, e))?;
    let prefix = format!("nvidia/cu{}/", m.toolkit.version.major());
    let mut files = 0;
    for wheel in &wheels {
        files += unpack_wheel(wheel, &prefix, &root)?;
    }
    let env_file = root.join(ENV_FILE);
    crate::fsutil::write_atomic(&env_file, env_script(m, &root).as_bytes())
        .map_err(|e| ArchiveError::io("writing", &env_file, e))?;
    Ok(UnpackedToolkit {
        root,
        env_file,
        files,
    })
}

/// The layer's environment as a POSIX shell script: `CUDA_HOME`, `PATH`, `LD_LIBRARY_PATH`.
pub fn env_script(m: &Manifest, root: &Path) -> String {
    let quoted = root.display().to_string().replace('\'', r"'\''");
    format!(
        "# Written by `stackpin install` for {stack}: CUDA {version} from NVIDIA's wheels ({components}).\n\
         # Source it: . {root}/{ENV_FILE}\n\
         export CUDA_HOME='{quoted}'\n\
         export PATH=\"$CUDA_HOME/bin:$PATH\"\n\
         export LD_LIBRARY_PATH=\"$CUDA_HOME/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\n",
        stack = m.name,
        version = m.toolkit.version,
        components = m
            .toolkit
            .components
            .iter()
            .map(|c| c.requirement())
            .collect::<Vec<_>>()
            .join(" "),
        root = root.display(),
    )
}

/// Writes every file of `wheel` under `prefix` into `root` (prefix stripped, Unix modes kept);
/// the wheel's own metadata (`*.dist-info/`) stays out. Returns the number of files.
fn unpack_wheel(wheel: &Path, prefix: &str, root: &Path) -> Result<usize, ArchiveError> {
    let bad = |reason: String| ArchiveError::Bundle {
        path: wheel.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(wheel).map_err(|e| ArchiveError::io("opening", wheel, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| bad(format!("not a wheel: {e}")))?;
    let mut written = 0;
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| bad(format!("reading entry {i}: {e}")))?;
        if entry.is_dir() {
            continue;
        }
        // enclosed_name refuses `..` and absolute paths: nothing lands outside the root.
        let Some(name) = entry.enclosed_name() else {
            return Err(bad(format!(
                "entry {i} has an unsafe path: {}",
                entry.name().unwrap_or_default()
            )));
        };
        let Ok(relative) = name.strip_prefix(prefix.trim_end_matches('/')) else {
            continue;
        };
        let target = root.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ArchiveError::io("creating", parent, e))?;
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| ArchiveError::io("unpacking", &target, e))?;
        let _ = super::layout::remove_file(&target);
        crate::fsutil::write_atomic(&target, &bytes)
            .map_err(|e| ArchiveError::io("writing", &target, e))?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode & 0o755))
                .map_err(|e| ArchiveError::io("setting the mode of", &target, e))?;
        }
        written += 1;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{LockEntry, hash_file};
    use std::io::Write;

    /// A wheel with `nvidia/cu13/bin/nvcc` (mode 755), a header, and its dist-info.
    fn nvcc_wheel() -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut zip = zip::ZipWriter::new(&mut buf);
            let exe = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
            let plain = zip::write::SimpleFileOptions::default();
            for (name, body, options) in [
                ("nvidia/cu13/bin/nvcc", &b"#!/bin/sh\n"[..], exe),
                ("nvidia/cu13/include/crt/host_config.h", b"/* h */", plain),
                ("nvidia_cuda_nvcc-13.0.88.dist-info/RECORD", b"", plain),
            ] {
                zip.start_file(name, options).expect("entry");
                zip.write_all(body).expect("body");
            }
            zip.finish().expect("finish");
        }
        buf.into_inner()
    }

    const FILE: &str = "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.whl";

    fn manifest(root: &Path, sha256: &str) -> Manifest {
        let text = format!(
            "schema: 1\nname: s\nos: linux\n\
             driver:\n  version: \"595.71.05\"\n  installer:\n    url: https://x.test/d.run\n  run: [\"sh\", \"{{installer}}\"]\n\
             toolkit:\n  version: \"13.0.2\"\n  source: wheels\n  root: '{}'\n  components:\n    - {{name: nvidia-cuda-nvcc, version: \"13.0.88\", file: {FILE}, sha256: {sha256}}}\n\
             library:\n  name: torch\n  version: \"2.14.0\"\n  cuda: \"13.0\"\n  installers: [{{url: https://x.test/l.sh}}]\n  run: [\"sh\", \"{{installer}}\"]\n\
             example:\n  run: [\"true\", \"{{batch}}\"]\n",
            root.display()
        );
        crate::manifest::parse(&text, Path::new("m.yaml")).expect("manifest")
    }

    fn archived() -> (tempfile::TempDir, StackDir, Lockfile, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        let path = stack.file_path(Layer::Toolkit, FILE);
        std::fs::write(&path, nvcc_wheel()).expect("wheel");
        let (sha256, size) = hash_file(&path, None).expect("hash");
        let mut lock = Lockfile::new("s");
        lock.upsert(LockEntry {
            layer: Layer::Toolkit,
            file: FILE.into(),
            url: "pip:default-index".into(),
            sha256: sha256.clone(),
            size,
            fetched_at: "t".into(),
            verified_against: None,
        });
        (dir, stack, lock, sha256)
    }

    #[test]
    fn the_wheels_nvidia_tree_lands_in_the_root_with_modes_and_an_env_file() {
        let (dir, stack, lock, sha256) = archived();
        let root = dir.path().join("home/cuda-13.0");
        let done =
            install_toolkit_wheels(&stack, &lock, &manifest(&root, &sha256)).expect("unpacked");
        assert_eq!(done.files, 2, "dist-info stays out");
        assert!(root.join("include/crt/host_config.h").is_file());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(root.join("bin/nvcc"))
                .expect("nvcc")
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111, "nvcc is executable: {mode:o}");
        }
        let env = std::fs::read_to_string(root.join(ENV_FILE)).expect("env file");
        assert!(
            env.contains(&format!("export CUDA_HOME='{}'", root.display())),
            "{env}"
        );
        assert!(env.contains("nvidia-cuda-nvcc==13.0.88"), "{env}");
    }

    #[test]
    fn a_wheel_that_is_not_the_manifests_pin_is_refused_before_anything_is_written() {
        let (dir, stack, lock, _) = archived();
        let root = dir.path().join("cuda-13.0");
        let err = install_toolkit_wheels(&stack, &lock, &manifest(&root, &"a".repeat(64)))
            .expect_err("refused");
        assert!(matches!(err, ArchiveError::Corrupt { .. }), "{err}");
        assert!(!root.exists());
    }
}
