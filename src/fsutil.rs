//! File writes that never leave a half-written file under its final name, and the one way
//! stackpin reads and writes its own YAML files (the proven-stack record, the failed-run note,
//! the model stack record, the install state, `stack.lock`): read into a serde type, write
//! through [`write_atomic`]. Every error names the file; each module wraps [`YamlError`] in its
//! own error enum, with its own words.

pub mod lock;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Writes `bytes` to a temporary file beside `path`, syncs it, then renames it into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    // The temporary file is created 0600; what stackpin writes (lock, manifest copy, records,
    // state) is meant to be served by a lab mirror whose web server is not root: 0644.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether a write failed because the disk, or the user's quota on it, is full (ENOSPC/EDQUOT
/// on Unix, ERROR_DISK_FULL on Windows): the error a user fixes by freeing space or writing
/// elsewhere, not by running the command again.
pub fn is_disk_full(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// Whether `error` or any error under it is a full disk ([`is_disk_full`]).
pub fn disk_full_in_chain(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>().is_some_and(is_disk_full) {
            return true;
        }
        next = e.source();
    }
    false
}

/// Why a YAML file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML of the expected shape; `source` carries the parser's snippet
    /// (`source.without_snippet()` gives the one-line reason).
    #[error("{} does not read: {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    #[error("cannot encode {} as YAML: {reason}", path.display())]
    Encode { path: PathBuf, reason: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The most stackpin reads from a file it expects to be small (a manifest, a lock, a state, a
/// record, a budget): such files are kilobytes; anything larger is the wrong file (a device, an
/// installer, a log), refused before it fills memory.
pub const SMALL_FILE_CAP: u64 = 8 * 1024 * 1024;

/// Reads a small text file ([`SMALL_FILE_CAP`]): UTF-8 (a byte-order mark is dropped), or
/// UTF-16 with a byte-order mark (PowerShell 5's `>` and Notepad write that), decoded. Another
/// encoding is refused with its name and how to save the file as UTF-8.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    read_text_capped(path, SMALL_FILE_CAP)
}

/// [`read_text`] with another cap.
pub fn read_text_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    decode_text(read_bytes_capped(path, cap)?)
}

/// A file's bytes, refused once more than `cap` of them arrive (a device such as `/dev/zero`
/// included: its size is not known before reading).
pub fn read_bytes_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is larger than {} MiB, far more than a file of this kind holds; is this the right file?",
                cap / (1024 * 1024)
            ),
        ));
    }
    Ok(bytes)
}

/// Text from bytes as [`read_text`] reads them.
pub fn decode_text(bytes: Vec<u8>) -> std::io::Result<String> {
    let utf16 = |rest: &[u8], le: bool| {
        let units = rest.chunks_exact(2).map(|p| {
            if le {
                u16::from_le_bytes([p[0], p[1]])
            } else {
                u16::from_be_bytes([p[0], p[1]])
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "it is UTF-16 with an invalid character; save it as UTF-8",
                )
            })
    };
    match bytes.as_slice() {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, true),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, false),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8(rest.to_vec()).map_err(not_utf8),
        [_, 0, _, 0, ..] => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it looks like UTF-16 without a byte-order mark; save it as UTF-8 (PowerShell: `Get-Content FILE | Set-Content -Encoding utf8 NEW`; Linux: `iconv -f UTF-16LE -t UTF-8 FILE > NEW`)",
        )),
        _ => String::from_utf8(bytes).map_err(not_utf8),
    }
}

fn not_utf8(e: std::string::FromUtf8Error) -> std::io::Error {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "it is not UTF-8: byte {at} (line {line}) is 0x{:02x}, so it is a Latin-1 or Windows code-page file; save it as UTF-8 (Linux: `iconv -f LATIN1 -t UTF-8 FILE > NEW`; PowerShell: `Get-Content FILE | Set-Content -Encoding utf8 NEW`)",
            bytes[at]
        ),
    )
}

/// Why `path` (below `root`) is not a plain file stackpin may archive, bundle, audit or install:
/// a symbolic link (at the file, or at a folder between it and `root`) may point anywhere, such
/// as `/etc/shadow` into a bundle. `Ok` for a plain file; `NotFound` passes through as an error.
pub fn plain_file_below(root: &Path, path: &Path) -> std::io::Result<()> {
    let mut at = path;
    loop {
        let meta = std::fs::symlink_metadata(at)?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(at)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            return Err(std::io::Error::other(format!(
                "{} is a symbolic link (to {target}); stackpin uses only plain files inside the stack's folder: replace the link with the file",
                at.display()
            )));
        }
        if at == path && !meta.is_file() {
            return Err(std::io::Error::other(format!(
                "{} is not a plain file",
                at.display()
            )));
        }
        match at.parent() {
            Some(parent) if parent != root && parent.starts_with(root) => at = parent,
            _ => return Ok(()),
        }
    }
}

/// Reads the YAML file at `path` into a `T`.
pub fn read_yaml<T: DeserializeOwned>(path: &Path) -> Result<T, YamlError> {
    let text = read_text(path).map_err(|source| YamlError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_yaml(&text, path)
}

/// Like [`read_yaml`], with `None` for a file that does not exist (yet).
pub fn read_yaml_if_present<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, YamlError> {
    match read_yaml(path) {
        Ok(value) => Ok(Some(value)),
        Err(YamlError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Parses YAML text read from `path` (which only names it in errors).
pub fn parse_yaml<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, YamlError> {
    serde_saphyr::from_str(text).map_err(|source| YamlError::Parse {
        path: path.to_path_buf(),
        source: Box::new(in_plain_words(source)),
    })
}

/// The parser's two messages that name its own API (`DuplicateKeyPolicy`, `from_str_multiple`),
/// in words a person who edited the file can act on; every other error as it is.
fn in_plain_words(e: serde_saphyr::Error) -> serde_saphyr::Error {
    use serde_saphyr::Error as E;
    let (msg, location) = match e.without_snippet() {
        E::DuplicateMappingKey { key, location } => (
            format!(
                "the key `{}` appears twice in one mapping; keep one",
                key.as_deref().unwrap_or("?")
            ),
            *location,
        ),
        E::MultipleDocuments { location, .. } => (
            "it holds more than one YAML document (a `---` line starts another); keep one".into(),
            *location,
        ),
        _ => return e,
    };
    E::Message { msg, location }
}

/// `value` as YAML text; `path` only names the file in errors.
pub fn to_yaml<T: Serialize>(value: &T, path: &Path) -> Result<String, YamlError> {
    serde_saphyr::to_string(value).map_err(|e| YamlError::Encode {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Writes `value` as YAML to `path` atomically, after `header` (comment lines, or `""`):
/// readers see the old file or the new one, never half of it.
pub fn write_yaml<T: Serialize>(path: &Path, header: &str, value: &T) -> Result<(), YamlError> {
    let text = to_yaml(value, path)?;
    write_atomic(path, format!("{header}{text}").as_bytes()).map_err(|source| YamlError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn yaml_round_trips_after_its_header_and_an_absent_file_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub").join("state.yaml");
        assert!(
            read_yaml_if_present::<BTreeMap<String, u32>>(&path)
                .expect("absent is fine")
                .is_none()
        );
        let value = BTreeMap::from([("a".to_string(), 1u32), ("b".to_string(), 2)]);
        write_yaml(&path, "# a header\n", &value).expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("# a header\na: 1\n"), "{text}");
        assert_eq!(
            read_yaml::<BTreeMap<String, u32>>(&path).expect("reads"),
            value
        );
    }

    #[test]
    fn every_error_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.yaml");
        let missing = read_yaml::<BTreeMap<String, u32>>(&path).expect_err("missing");
        assert!(matches!(missing, YamlError::Read { .. }));
        std::fs::write(&path, "a: [unclosed\n").expect("write");
        let bad = read_yaml::<BTreeMap<String, u32>>(&path).expect_err("malformed");
        assert!(matches!(bad, YamlError::Parse { .. }));
        let blocked = dir.path().join("bad.yaml").join("below-a-file.yaml");
        let unwritable = write_yaml(&blocked, "", &1u32).expect_err("a file is not a folder");
        assert!(matches!(unwritable, YamlError::Write { .. }));
        for e in [missing, bad, unwritable] {
            assert!(e.to_string().contains("bad.yaml"), "{e}");
        }
    }
}
