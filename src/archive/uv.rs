//! uv as the library layer's installer: `fetch` archives uv's own wheel (one static binary
//! inside) for the target platform beside the library's wheels, hashed in the lock like them;
//! `install` takes the binary out of that verified wheel and runs it. Nothing is taken from the
//! host's PATH, so the archive alone decides which uv installs the stack.
//!
//! The lock marks uv's entry with the [`UV_SOURCE_PREFIX`] so it is never handed to the venv as
//! a requirement. Running uv (argv, environment) is `install`'s job.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{ArchiveError, LockEntry, Lockfile, StackDir, verify_entry};
use crate::manifest::Layer;

/// The start of a lock entry's `url` for a wheel that is a tool of the install, not part of
/// the library: `installer:pip:INDEX`.
pub const UV_SOURCE_PREFIX: &str = "installer:";

/// True for the lock entry of uv's own wheel.
pub fn is_installer_entry(entry: &LockEntry) -> bool {
    entry.layer == Layer::Library && entry.url.starts_with(UV_SOURCE_PREFIX)
}

/// The archived uv wheel's lock entry, when the stack has one.
pub fn uv_entry(lock: &Lockfile) -> Option<&LockEntry> {
    lock.files.iter().find(|e| is_installer_entry(e))
}

/// Where `install` puts the uv binary taken from the archived wheel: beside the layers, never
/// inside one (the audit knows only the lock's files there).
pub fn uv_binary_path(stack: &Path) -> PathBuf {
    let name = if cfg!(windows) { "uv.exe" } else { "uv" };
    stack.join(".uv").join(name)
}

/// Verifies uv's wheel against the lock, then writes its `uv` binary to [`uv_binary_path`].
pub fn extract_uv(stack: &StackDir, entry: &LockEntry) -> Result<PathBuf, ArchiveError> {
    let wheel = verify_entry(stack, entry)?;
    let bad = |reason: String| ArchiveError::Bundle {
        path: wheel.clone(),
        reason,
    };
    let file = std::fs::File::open(&wheel).map_err(|e| ArchiveError::io("opening", &wheel, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| bad(format!("not a wheel: {e}")))?;
    let wanted = |name: &str| {
        name.contains(".data/scripts/") && (name.ends_with("/uv") || name.ends_with("/uv.exe"))
    };
    let index = (0..zip.len())
        .find(|&i| {
            zip.by_index(i)
                .is_ok_and(|f| f.name().is_ok_and(|n| wanted(&n)))
        })
        .ok_or_else(|| bad("no uv binary (`*.data/scripts/uv`) inside".into()))?;
    let mut entry_file = zip
        .by_index(index)
        .map_err(|e| bad(format!("reading the uv binary: {e}")))?;
    let mut bytes = Vec::new();
    entry_file
        .read_to_end(&mut bytes)
        .map_err(|e| ArchiveError::io("unpacking uv from", &wheel, e))?;
    let target = uv_binary_path(stack.root());
    let _ = super::layout::remove_file(&target);
    crate::fsutil::write_atomic(&target, &bytes)
        .map_err(|e| ArchiveError::io("writing", &target, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| ArchiveError::io("making executable", &target, e))?;
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn wheel_with(name: &str, body: &[u8]) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut zip = zip::ZipWriter::new(&mut buf);
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .expect("entry");
            zip.write_all(body).expect("body");
            zip.finish().expect("finish");
        }
        buf.into_inner()
    }

    fn archived(bytes: &[u8]) -> (tempfile::TempDir, StackDir, LockEntry) {
        let dir = tempfile::tempdir().expect("tempdir");
        let stack = StackDir::new(dir.path(), "s");
        stack.create().expect("create");
        let file = "uv-0.9.0-py3-none-manylinux_2_17_x86_64.whl";
        std::fs::write(stack.file_path(Layer::Library, file), bytes).expect("wheel");
        let (sha256, size) =
            super::super::hash_file(&stack.file_path(Layer::Library, file), None).expect("hash");
        let entry = LockEntry {
            layer: Layer::Library,
            file: file.into(),
            url: format!("{UV_SOURCE_PREFIX}pip:default-index"),
            sha256,
            size,
            fetched_at: "t".into(),
            verified_against: None,
        };
        (dir, stack, entry)
    }

    #[test]
    fn the_uv_binary_comes_out_of_the_verified_wheel() {
        let (_dir, stack, entry) = archived(&wheel_with(
            "uv-0.9.0.data/scripts/uv",
            b"#!/bin/sh\necho uv\n",
        ));
        let uv = extract_uv(&stack, &entry).expect("extract");
        assert_eq!(uv, uv_binary_path(stack.root()));
        assert_eq!(std::fs::read(&uv).expect("read"), b"#!/bin/sh\necho uv\n");
        assert!(is_installer_entry(&entry));
    }

    #[test]
    fn a_tampered_uv_wheel_is_refused_before_anything_is_unpacked() {
        let (_dir, stack, mut entry) =
            archived(&wheel_with("uv-0.9.0.data/scripts/uv", b"#!/bin/sh\n"));
        entry.sha256 = "0".repeat(64);
        let err = extract_uv(&stack, &entry).expect_err("tampered");
        assert!(matches!(err, ArchiveError::Corrupt { .. }), "{err}");
        assert!(!uv_binary_path(stack.root()).exists());
    }

    #[test]
    fn a_wheel_without_the_binary_is_named() {
        let (_dir, stack, entry) = archived(&wheel_with("uv/__init__.py", b""));
        let err = extract_uv(&stack, &entry).expect_err("no binary");
        assert!(err.to_string().contains("no uv binary"), "{err}");
    }
}
