//! The data folder: where an updated set lives (`release-data.json`, the packed file exactly as
//! published) with a note of where it came from (`release-data.origin.json`). A set is installed
//! by writing a temporary file beside the final name, syncing it and renaming it, so a failure
//! at any point leaves the previous set in use; the note is written after it and is only
//! believed when its sha256 matches the set.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{DataSet, DatasetError, Env, Reader, pack, sha256_hex};

/// The installed set, byte for byte as packed.
pub const SET_FILE: &str = "release-data.json";
/// Where the installed set came from.
pub const ORIGIN_FILE: &str = "release-data.origin.json";

/// The note kept beside an installed set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Origin {
    pub sha256: String,
    /// The URL or file it was installed from.
    pub from: String,
    pub installed_at: String,
    /// Installed with `--allow-older`: used even when the built-in set is newer.
    pub allow_older: bool,
}

/// An updated set in the data folder.
#[derive(Debug, Clone)]
pub struct Installed {
    pub file: PathBuf,
    pub from: Option<String>,
    pub installed_at: Option<String>,
    pub allow_older: bool,
}

/// The data folder: `STACKPIN_DATA_DIR`, else `%LOCALAPPDATA%\stackpin` on Windows and
/// `$XDG_DATA_HOME/stackpin` (default `~/.local/share/stackpin`) elsewhere.
pub fn data_dir(env: Env) -> Option<PathBuf> {
    let set = |key: &str| env(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set("STACKPIN_DATA_DIR") {
        return Some(dir);
    }
    if cfg!(windows) {
        return set("LOCALAPPDATA").map(|d| d.join("stackpin"));
    }
    // The XDG spec: a relative XDG_DATA_HOME is invalid and must be ignored.
    set("XDG_DATA_HOME")
        .filter(|d| d.is_absolute())
        .map(|d| d.join("stackpin"))
        .or_else(|| set("HOME").map(|h| h.join(".local").join("share").join("stackpin")))
}

/// The updated set in `dir`, validated; `None` when there is none.
pub(super) fn read_installed(
    dir: &Path,
    reader: &dyn Reader,
) -> Option<Result<(DataSet, Installed), DatasetError>> {
    let file = dir.join(SET_FILE);
    let bytes = match std::fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(source) => {
            return Some(Err(DatasetError::Io {
                action: "reading the updated data set",
                path: file,
                source,
            }));
        }
    };
    Some(load(&file, &bytes, reader))
}

fn load(
    file: &Path,
    bytes: &[u8],
    reader: &dyn Reader,
) -> Result<(DataSet, Installed), DatasetError> {
    let set = pack::decode_for_use(&file.display().to_string(), bytes, reader)?;
    let _ = set.sha256.set(sha256_hex(bytes));
    let origin = std::fs::read(file.with_file_name(ORIGIN_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<Origin>(&b).ok())
        .filter(|o| o.sha256 == set.sha256());
    Ok((
        set,
        Installed {
            file: file.to_path_buf(),
            from: origin.as_ref().map(|o| o.from.clone()),
            installed_at: origin.as_ref().map(|o| o.installed_at.clone()),
            allow_older: origin.is_some_and(|o| o.allow_older),
        },
    ))
}

/// Decodes a published file; its sha256 is the file's own, whatever encoder wrote it.
pub(super) fn decode_published(
    what: &str,
    bytes: &[u8],
    reader: &dyn Reader,
) -> Result<DataSet, DatasetError> {
    let set = pack::decode(what, bytes, reader)?;
    let _ = set.sha256.set(sha256_hex(bytes));
    Ok(set)
}

/// What `data update` asks for.
pub struct Update<'a> {
    /// The packed bytes as fetched or read.
    pub bytes: &'a [u8],
    /// The URL or file they came from.
    pub from: &'a str,
    /// `--sha256`.
    pub expected_sha256: Option<&'a str>,
    /// The set in use now.
    pub current: &'a DataSet,
    /// `--allow-older`.
    pub allow_older: bool,
}

/// Verifies, validates (with the binary's `reader`) and installs a set into `dir`. On any error
/// nothing in `dir` changed.
pub fn install(
    dir: &Path,
    update: &Update<'_>,
    reader: &dyn Reader,
) -> Result<(DataSet, Installed), DatasetError> {
    let actual = sha256_hex(update.bytes);
    if let Some(expected) = update.expected_sha256
        && !expected.eq_ignore_ascii_case(&actual)
    {
        return Err(DatasetError::Checksum {
            what: update.from.to_string(),
            expected: expected.to_ascii_lowercase(),
            actual,
        });
    }
    let set = decode_published(update.from, update.bytes, reader)?;
    if set.read_on < update.current.read_on && !update.allow_older {
        return Err(DatasetError::Older {
            what: update.from.to_string(),
            new: set.read_on.clone(),
            current: update.current.read_on.clone(),
        });
    }
    let file = dir.join(SET_FILE);
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| DatasetError::Io {
            action,
            path,
            source,
        }
    };
    crate::fsutil::write_atomic(&file, update.bytes)
        .map_err(io("installing the data set", &file))?;
    let origin = Origin {
        sha256: actual,
        from: update.from.to_string(),
        installed_at: jiff::Timestamp::now().to_string(),
        allow_older: update.allow_older,
    };
    let note = dir.join(ORIGIN_FILE);
    let text = serde_json::to_vec_pretty(&origin).unwrap_or_default();
    crate::fsutil::write_atomic(&note, &text).map_err(io("writing the origin note", &note))?;
    Ok((
        set,
        Installed {
            file,
            from: Some(origin.from),
            installed_at: Some(origin.installed_at),
            allow_older: origin.allow_older,
        },
    ))
}

/// Removes the updated set from `dir`; true when there was one.
pub fn reset(dir: &Path) -> Result<bool, DatasetError> {
    let file = dir.join(SET_FILE);
    let existed = match std::fs::remove_file(&file) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(source) => {
            return Err(DatasetError::Io {
                action: "removing the updated data set",
                path: file,
                source,
            });
        }
    };
    let _ = std::fs::remove_file(dir.join(ORIGIN_FILE));
    Ok(existed)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::ffi::OsString;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |key| map.get(key).cloned()
    }

    #[test]
    fn stackpin_data_dir_wins_over_the_platform_folder() {
        let env = env_of(&[
            ("STACKPIN_DATA_DIR", "/srv/data"),
            ("XDG_DATA_HOME", "/x"),
            ("LOCALAPPDATA", "C:\\Users\\u\\AppData\\Local"),
            ("HOME", "/home/u"),
        ]);
        assert_eq!(data_dir(&env), Some(PathBuf::from("/srv/data")));
    }

    #[cfg(not(windows))]
    #[test]
    fn linux_uses_xdg_data_home_then_home_and_ignores_a_relative_xdg() {
        let env = env_of(&[("XDG_DATA_HOME", "/x/share"), ("HOME", "/home/u")]);
        assert_eq!(data_dir(&env), Some(PathBuf::from("/x/share/stackpin")));
        let env = env_of(&[("XDG_DATA_HOME", "rel"), ("HOME", "/home/u")]);
        assert_eq!(
            data_dir(&env),
            Some(PathBuf::from("/home/u/.local/share/stackpin"))
        );
        assert_eq!(data_dir(&env_of(&[])), None);
    }

    #[cfg(windows)]
    #[test]
    fn windows_uses_localappdata() {
        let env = env_of(&[("LOCALAPPDATA", "C:\\Users\\u\\AppData\\Local")]);
        assert_eq!(
            data_dir(&env),
            Some(PathBuf::from("C:\\Users\\u\\AppData\\Local\\stackpin"))
        );
    }

    fn update<'a>(bytes: &'a [u8], sha: Option<&'a str>) -> Update<'a> {
        Update {
            bytes,
            from: "test.json",
            expected_sha256: sha,
            current: super::super::built_in(),
            allow_older: false,
        }
    }

    #[test]
    fn a_wrong_sha256_installs_nothing() {
        let dir = tempfile::tempdir().expect("tmp");
        let bytes = super::super::built_in().packed();
        let wrong = "0".repeat(64);
        let err = install(
            dir.path(),
            &update(&bytes, Some(&wrong)),
            &crate::compat::READER,
        )
        .expect_err("mismatch");
        assert!(matches!(err, DatasetError::Checksum { .. }));
        assert!(!dir.path().join(SET_FILE).exists());
    }

    #[test]
    fn an_installed_set_reads_back_with_its_origin_and_reset_removes_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let bytes = super::super::built_in().packed();
        let sha = sha256_hex(&bytes);
        install(
            dir.path(),
            &update(&bytes, Some(&sha)),
            &crate::compat::READER,
        )
        .expect("installs");
        let (set, installed) = read_installed(dir.path(), &crate::compat::READER)
            .expect("present")
            .expect("valid");
        assert_eq!(set.sha256(), sha);
        assert_eq!(installed.from.as_deref(), Some("test.json"));
        assert!(reset(dir.path()).expect("reset"));
        assert!(read_installed(dir.path(), &crate::compat::READER).is_none());
        assert!(!reset(dir.path()).expect("reset again"));
    }

    #[test]
    fn an_older_set_is_refused_unless_allowed() {
        let dir = tempfile::tempdir().expect("tmp");
        let built_in = super::super::built_in();
        let tables = built_in
            .tables
            .iter()
            .map(|(k, v)| (k.clone(), super::super::aged(v)))
            .collect();
        let bytes = pack::encode(super::super::SCHEMA, "2001-01-01", &tables);
        let err =
            install(dir.path(), &update(&bytes, None), &crate::compat::READER).expect_err("older");
        assert!(matches!(err, DatasetError::Older { .. }), "{err}");
        assert!(!dir.path().join(SET_FILE).exists());
        let mut allowed = update(&bytes, None);
        allowed.allow_older = true;
        let (set, installed) =
            install(dir.path(), &allowed, &crate::compat::READER).expect("allowed");
        assert_eq!(set.read_on, "2001-01-01");
        assert!(installed.allow_older);
    }
}
