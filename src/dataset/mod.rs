//! The release data as one versioned unit: every `data/*.yaml` table together, with the set's
//! `read_on` date (the newest of its tables'), the sources its tables name, a schema number and
//! the sha256 of its packed form. The binary embeds one set (the built-in one); a newer set can
//! be layered over it from the data folder (`STACKPIN_DATA_DIR`, else the platform's data
//! folder), installed atomically by `stackpin data update`.
//!
//! This module owns the set as a unit — packing, validating, choosing which set is in use,
//! installing and resetting. What the tables *mean* is `compat`'s: a set is valid when the
//! [`Reader`] the binary itself uses (compat's) accepts it. The reader is handed in by the
//! caller, so this module never names compat (compat depends on it, not the reverse); what the
//! reader made of a set is kept with the set, so a run reads its tables once. It prints nothing;
//! the environment is read in one place, [`in_use`], to find the data folder.

mod pack;
mod store;

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

pub use pack::{PACK_FORMAT, pack_dir};
pub use store::{Installed, ORIGIN_FILE, Origin, SET_FILE, Update, data_dir, install, reset};

include!(concat!(env!("OUT_DIR"), "/built_in_tables.rs"));

/// The layout of the tables this binary reads. A set packed for another schema is refused:
/// bump it when a table changes shape in a way an older binary cannot read (2: the drivers
/// table's `workstation` channel and URL pattern).
pub const SCHEMA: u32 = 2;

/// Everything that can be wrong with a data set or its folder.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{path}: {action}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} is not a stackpin data set: {reason}")]
    NotASet { what: String, reason: String },
    #[error(
        "{what} is for data schema {found}; this stackpin reads schema {SCHEMA}: use a set packed for it, or a stackpin that reads schema {found}"
    )]
    Schema { what: String, found: u32 },
    #[error("{what}: table {table} is invalid: {reason}")]
    Table {
        what: String,
        table: String,
        reason: String,
    },
    #[error("{what}: the set is invalid: {source}")]
    Loader {
        what: String,
        #[source]
        source: TableError,
    },
    #[error(
        "{what}: checksum mismatch\n  expected sha256 {expected}\n  actual   sha256 {actual}\n  nothing was installed; the set in use is unchanged"
    )]
    Checksum {
        what: String,
        expected: String,
        actual: String,
    },
    #[error(
        "{what} was read on {new}, older than the set in use ({current}); nothing was installed. Pass --allow-older to install it anyway"
    )]
    Older {
        what: String,
        new: String,
        current: String,
    },
    #[error(
        "no data folder: set STACKPIN_DATA_DIR (or XDG_DATA_HOME / HOME on Linux, LOCALAPPDATA on Windows)"
    )]
    NoDataDir,
}

impl DatasetError {
    /// True when the set itself is wrong (a check found a problem, exit 1) rather than a file
    /// that could not be read or written.
    pub fn is_problem(&self) -> bool {
        !matches!(self, Self::Io { .. } | Self::NoDataDir)
    }
}

/// Why a reader cannot load a set's tables.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("table {name} is missing; this stackpin needs it")]
    Missing { name: String },
    #[error("table {name} does not load: {reason}")]
    Malformed { name: String, reason: String },
}

/// What the tables of a set are read into, as its reader made them.
pub type ReadTables = Arc<dyn Any + Send + Sync>;

/// The binary's reader of a set's tables (`compat`'s is the one): a set is valid for this
/// binary when its reader accepts it. One reader per binary: the set in use and the tables it
/// keeps are the first reader's.
pub trait Reader: Sync {
    /// Reads every table the binary needs from `set` (by [`DataSet::table`]).
    fn read(&self, set: &DataSet) -> Result<ReadTables, TableError>;
}

/// One data set: its tables by file name and what identifies it.
#[derive(Debug, Clone)]
pub struct DataSet {
    pub schema: u32,
    /// The newest `read_on` of its tables (`YYYY-MM-DD`).
    pub read_on: String,
    tables: BTreeMap<String, String>,
    sha256: OnceLock<String>,
    details: OnceLock<Details>,
    loaded: OnceLock<ReadTables>,
}

/// What `data show` says about a set beyond its date: sources and rows per table.
#[derive(Debug, Clone, Serialize)]
pub struct Details {
    /// Every source its tables name, in table order, without repeats.
    pub sources: Vec<String>,
    pub tables: BTreeMap<String, TableInfo>,
}

/// What `data show` says about one table.
#[derive(Debug, Clone, Serialize)]
pub struct TableInfo {
    pub read_on: String,
    /// Entries of its top-level lists (toolkits, releases, drivers…), `sources` left out.
    pub rows: usize,
}

impl DataSet {
    /// Builds and validates a set from its tables: safe table names, every table a YAML mapping
    /// with a `read_on` date, and the binary's own loader accepting the whole set. `what` names
    /// the set in errors (a file, a URL, a folder).
    pub fn from_tables(
        what: &str,
        schema: u32,
        tables: BTreeMap<String, String>,
        reader: &dyn Reader,
    ) -> Result<DataSet, DatasetError> {
        let set = Self::of_this_schema(what, schema, tables)?;
        set.validate(what, reader)?;
        Ok(set)
    }

    /// A set installed earlier (fully validated then), checked again only by this binary's
    /// loader: what a run pays for using an updated set.
    pub(crate) fn for_use(
        what: &str,
        schema: u32,
        tables: BTreeMap<String, String>,
        reader: &dyn Reader,
    ) -> Result<DataSet, DatasetError> {
        let set = Self::of_this_schema(what, schema, tables)?;
        set.load(what, reader)?;
        Ok(set)
    }

    /// A set of the schema this binary reads, its tables scanned for their dates.
    fn of_this_schema(
        what: &str,
        schema: u32,
        tables: BTreeMap<String, String>,
    ) -> Result<DataSet, DatasetError> {
        if schema != SCHEMA {
            return Err(DatasetError::Schema {
                what: what.to_string(),
                found: schema,
            });
        }
        Self::unchecked(what, schema, tables)
    }

    /// A set whose tables are only scanned for their dates (the built-in set, covered by tests).
    fn unchecked(
        what: &str,
        schema: u32,
        tables: BTreeMap<String, String>,
    ) -> Result<DataSet, DatasetError> {
        let mut read_on = String::new();
        for (name, text) in &tables {
            let date = pack::scan_read_on(text).ok_or_else(|| DatasetError::Table {
                what: what.to_string(),
                table: name.clone(),
                reason: "no top-level `read_on: \"YYYY-MM-DD\"` (the date its sources were read)"
                    .into(),
            })?;
            read_on = read_on.max(date);
        }
        if tables.is_empty() {
            return Err(DatasetError::NotASet {
                what: what.to_string(),
                reason: "it holds no table".into(),
            });
        }
        Ok(DataSet {
            schema,
            read_on,
            tables,
            sha256: OnceLock::new(),
            details: OnceLock::new(),
            loaded: OnceLock::new(),
        })
    }

    /// Every check a set must pass before it is packed or installed.
    fn validate(&self, what: &str, reader: &dyn Reader) -> Result<(), DatasetError> {
        for (name, text) in &self.tables {
            let bad = |reason: String| DatasetError::Table {
                what: what.to_string(),
                table: name.clone(),
                reason,
            };
            if let Some(why) = pack::unsafe_table_name(name) {
                return Err(bad(why.to_string()));
            }
            pack::read_header(text).map_err(bad)?;
        }
        self.load(what, reader)
    }

    /// The check a set passed at install must pass again before it is used (the binary may
    /// have changed since): this binary's reader accepts it. What it read is kept for
    /// [`DataSet::read_by`].
    fn load(&self, what: &str, reader: &dyn Reader) -> Result<(), DatasetError> {
        let loaded = reader.read(self).map_err(|source| DatasetError::Loader {
            what: what.to_string(),
            source,
        })?;
        let _ = self.loaded.set(loaded);
        Ok(())
    }

    /// The tables as `reader` reads them, read once (the reader's caller downcasts them to its
    /// own type).
    pub fn read_by(&self, reader: &dyn Reader) -> &(dyn Any + Send + Sync) {
        self.loaded
            .get_or_init(|| match reader.read(self) {
                Ok(loaded) => loaded,
                // Only the built-in set (covered by tests) gets here unloaded: a build defect.
                Err(e) => panic!(
                    "stackpin's release data of {} is malformed: {e}",
                    self.read_on
                ),
            })
            .as_ref()
    }

    /// The text of one table (`cuda.yaml`), if the set has it.
    pub fn table(&self, name: &str) -> Option<&str> {
        self.tables.get(name).map(String::as_str)
    }

    /// The names of its tables, sorted.
    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// The set packed as one file, byte for byte what `data pack` writes.
    pub fn packed(&self) -> Vec<u8> {
        pack::encode(self.schema, &self.read_on, &self.tables)
    }

    /// The sha256 of the packed set: the same for the built-in set and `data pack data/`.
    pub fn sha256(&self) -> &str {
        self.sha256.get_or_init(|| sha256_hex(&self.packed()))
    }

    /// Sources and rows per table (parsed on first use; only `data show` needs them).
    pub fn details(&self) -> &Details {
        self.details.get_or_init(|| {
            let mut sources: Vec<String> = Vec::new();
            let mut tables = BTreeMap::new();
            for (name, text) in &self.tables {
                let header = pack::read_header(text).unwrap_or_default();
                for s in header.sources {
                    if !sources.contains(&s) {
                        sources.push(s);
                    }
                }
                tables.insert(
                    name.clone(),
                    TableInfo {
                        read_on: header.read_on,
                        rows: header.rows,
                    },
                );
            }
            Details { sources, tables }
        })
    }
}

/// The set compiled into this binary. The tables are covered by tests, so failing here is a
/// build defect, not user input.
pub fn built_in() -> &'static DataSet {
    static SET: OnceLock<DataSet> = OnceLock::new();
    SET.get_or_init(|| {
        let tables = BUILT_IN_TABLES
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()))
            .collect();
        match DataSet::unchecked("the built-in data set", SCHEMA, tables) {
            Ok(set) => set,
            Err(e) => panic!("stackpin's built-in release data is malformed: {e}"),
        }
    })
}

/// Where the set in use comes from.
#[derive(Debug, Clone)]
pub enum Source {
    BuiltIn,
    Updated(Installed),
}

/// The set every command uses, and why.
#[derive(Debug)]
pub struct InUse {
    pub set: &'static DataSet,
    pub source: Source,
    /// Why an updated set in the data folder is not used (older than the built-in one, corrupt,
    /// invalid for this binary), when there is one.
    pub ignored: Option<String>,
    /// The data folder looked at, when one could be named.
    pub dir: Option<PathBuf>,
}

impl InUse {
    /// `built-in` or `updated`, as `--json` outputs name the source.
    pub fn source_word(&self) -> &'static str {
        match self.source {
            Source::BuiltIn => "built-in",
            Source::Updated(_) => "updated",
        }
    }
}

/// The set in use for this run: the updated set from the data folder when there is a valid
/// one that is not older than the built-in set (unless it was installed with
/// `--allow-older`), else the built-in set. An updated set must pass `reader` (the binary's
/// one reader, compat's); the first call chooses for the whole run. Unit tests always get the
/// built-in set, whatever the developer's data folder holds.
pub fn in_use(reader: &dyn Reader) -> &'static InUse {
    static IN_USE: OnceLock<InUse> = OnceLock::new();
    IN_USE.get_or_init(|| {
        if cfg!(test) {
            return choose(None, None);
        }
        let dir = data_dir(&|key| std::env::var_os(key));
        let installed = dir
            .as_deref()
            .and_then(|dir| store::read_installed(dir, reader));
        choose(dir, installed)
    })
}

/// The built-in set against what the data folder holds (`None`: nothing installed).
fn choose(
    dir: Option<PathBuf>,
    installed: Option<Result<(DataSet, Installed), DatasetError>>,
) -> InUse {
    let built_in_use = |ignored: Option<String>, dir: Option<PathBuf>| InUse {
        set: built_in(),
        source: Source::BuiltIn,
        ignored,
        dir,
    };
    match installed {
        None => built_in_use(None, dir),
        Some(Err(e)) => built_in_use(Some(e.to_string()), dir),
        Some(Ok((set, origin))) => {
            if set.read_on < built_in().read_on && !origin.allow_older {
                let why = format!(
                    "the updated set in {} was read on {}, older than this binary's built-in set ({}); `stackpin data reset` removes it",
                    origin.file.display(),
                    set.read_on,
                    built_in().read_on
                );
                return built_in_use(Some(why), dir);
            }
            let set: &'static DataSet = Box::leak(Box::new(set));
            InUse {
                set,
                source: Source::Updated(origin),
                ignored: None,
                dir,
            }
        }
    }
}

/// How `--json` outputs name the set they used: `data: {read_on, sha256, source}`.
#[derive(Debug, Clone, Serialize)]
pub struct DataRef {
    pub read_on: String,
    pub sha256: String,
    /// `built-in` or `updated` (`built_in` in JSON, which spells its words in snake_case).
    #[serde(serialize_with = "snake_word")]
    pub source: &'static str,
}

/// A word of human output as a JSON enum value: `built-in` → `built_in`.
fn snake_word<S: serde::Serializer>(word: &&'static str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&word.replace('-', "_"))
}

/// The set in use (see [`in_use`]), as `--json` outputs name it.
pub fn data_ref(reader: &dyn Reader) -> DataRef {
    let in_use = in_use(reader);
    DataRef {
        read_on: in_use.set.read_on.clone(),
        sha256: in_use.set.sha256().to_string(),
        source: in_use.source_word(),
    }
}

/// Reads every `*.yaml` in a folder (not below it) as the tables of a set.
pub fn read_tables(dir: &Path) -> Result<BTreeMap<String, String>, DatasetError> {
    let io = |action, source| DatasetError::Io {
        action,
        path: dir.to_path_buf(),
        source,
    };
    let mut tables = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io("listing the data folder", e))? {
        let path = entry.map_err(|e| io("listing the data folder", e))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".yaml") || !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| DatasetError::Io {
            action: "reading a table",
            path: path.clone(),
            source,
        })?;
        tables.insert(name.to_string(), text);
    }
    if tables.is_empty() {
        return Err(DatasetError::NotASet {
            what: dir.display().to_string(),
            reason: "the folder holds no *.yaml table".into(),
        });
    }
    Ok(tables)
}

/// Lowercase hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The environment a data folder is looked up from (the real one, or a test's map).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// `text` with its top-level `read_on:` set to 2001-01-01: a table from an old set.
#[cfg(test)]
pub(crate) fn aged(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.starts_with("read_on:") {
                "read_on: \"2001-01-01\""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_set_holds_every_data_table_and_is_dated_by_its_newest() {
        let set = built_in();
        for name in [
            "cuda.yaml",
            "drivers.yaml",
            "pytorch.yaml",
            "tensorflow.yaml",
            "onnxruntime.yaml",
        ] {
            assert!(set.table(name).is_some(), "{name} is built in");
        }
        set.validate("the built-in set", &crate::compat::READER)
            .expect("the built-in set is valid");
        let details = set.details();
        let newest = details.tables.values().map(|t| &t.read_on).max();
        assert_eq!(Some(&set.read_on), newest);
        assert!(
            details.tables["cuda.yaml"].rows >= 56,
            "56 toolkit rows at least"
        );
        assert!(
            details
                .sources
                .iter()
                .any(|s| s.contains("cuda-toolkit-release-notes"))
        );
    }

    /// A reader that refuses every set, for what it says: dataset knows no reader of its own.
    struct Refusing;

    impl Reader for Refusing {
        fn read(&self, _: &DataSet) -> Result<ReadTables, TableError> {
            Err(TableError::Malformed {
                name: "cuda.yaml".into(),
                reason: "refused by the test's reader".into(),
            })
        }
    }

    #[test]
    fn a_set_is_valid_when_the_reader_handed_in_accepts_it_and_keeps_what_it_read() {
        let tables = built_in().tables.clone();
        let err =
            DataSet::from_tables("x", SCHEMA, tables.clone(), &Refusing).expect_err("refused");
        assert!(matches!(err, DatasetError::Loader { .. }), "{err}");
        assert!(
            err.to_string().contains("refused by the test's reader"),
            "{err}"
        );
        assert!(err.is_problem());
        let set = DataSet::from_tables("x", SCHEMA, tables, &crate::compat::READER).expect("valid");
        // What the reader read at validation is kept: a later refusing reader is not asked.
        let _ = set.read_by(&Refusing);
    }

    #[test]
    fn the_built_in_sha256_is_the_sha256_of_its_packed_form() {
        let set = built_in();
        assert_eq!(set.sha256(), sha256_hex(&set.packed()));
        assert_eq!(set.sha256().len(), 64);
    }

    #[test]
    fn a_set_for_another_schema_is_refused() {
        let tables = built_in().tables.clone();
        let err = DataSet::from_tables("x", SCHEMA + 1, tables, &crate::compat::READER)
            .expect_err("schema 2");
        assert!(matches!(err, DatasetError::Schema { found, .. } if found == SCHEMA + 1));
    }

    #[test]
    fn a_set_without_a_required_table_is_invalid() {
        let mut tables = built_in().tables.clone();
        tables.remove("drivers.yaml");
        let err = DataSet::from_tables("x", SCHEMA, tables, &crate::compat::READER)
            .expect_err("no drivers");
        assert!(err.to_string().contains("drivers.yaml"), "{err}");
        assert!(err.is_problem());
    }

    #[test]
    fn a_table_without_read_on_is_invalid() {
        let mut tables = built_in().tables.clone();
        tables.insert("extra.yaml".into(), "rows: [1, 2]\n".into());
        let err = DataSet::from_tables("x", SCHEMA, tables, &crate::compat::READER)
            .expect_err("no read_on");
        assert!(err.to_string().contains("extra.yaml"), "{err}");
        assert!(err.to_string().contains("read_on"), "{err}");
    }

    #[test]
    fn an_extra_table_is_carried_and_may_date_the_set() {
        let mut tables = built_in().tables.clone();
        tables.insert(
            "extra.yaml".into(),
            "read_on: \"2099-01-02\"\nsources: [https://example.test/extra]\ngenerations: [{name: ada}]\n"
                .into(),
        );
        let set = DataSet::from_tables("x", SCHEMA, tables, &crate::compat::READER).expect("valid");
        assert_eq!(set.read_on, "2099-01-02");
        assert_eq!(set.details().tables["extra.yaml"].rows, 1);
        assert!(set.table("extra.yaml").is_some());
    }

    #[test]
    fn an_installed_set_older_than_the_built_in_one_is_ignored_unless_allowed() {
        let mut tables = built_in().tables.clone();
        // Every table dates the set: age them all.
        for text in tables.values_mut() {
            *text = aged(text);
        }
        let set = DataSet::from_tables("x", SCHEMA, tables, &crate::compat::READER).expect("valid");
        assert_eq!(set.read_on, "2001-01-01");
        let origin = |allow_older| Installed {
            file: PathBuf::from("/d/release-data.json"),
            from: None,
            installed_at: None,
            allow_older,
        };
        let chosen = choose(None, Some(Ok((set.clone(), origin(false)))));
        assert_eq!(chosen.source_word(), "built-in");
        assert!(
            chosen
                .ignored
                .as_deref()
                .is_some_and(|w| w.contains("older"))
        );
        let chosen = choose(None, Some(Ok((set, origin(true)))));
        assert_eq!(chosen.source_word(), "updated");
        assert_eq!(chosen.set.read_on, "2001-01-01");
    }

    #[test]
    fn a_broken_installed_set_falls_back_to_the_built_in_one_with_the_reason() {
        let broken = DatasetError::NotASet {
            what: "/d/release-data.json".into(),
            reason: "not JSON".into(),
        };
        let chosen = choose(None, Some(Err(broken)));
        assert_eq!(chosen.source_word(), "built-in");
        assert!(
            chosen
                .ignored
                .as_deref()
                .is_some_and(|w| w.contains("not JSON"))
        );
    }
}
