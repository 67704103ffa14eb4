//! The packed form of a data set: one JSON document holding every table's YAML text verbatim,
//! with the format name, the schema number and the set's date. Tables are sorted by name and
//! the encoding is fixed, so packing the same folder twice gives the same bytes and sha256, and
//! the built-in set's sha256 is the one `data pack data/` prints.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{DataSet, DatasetError, Reader, SCHEMA, read_tables};

/// The `format` field of a packed set.
pub const PACK_FORMAT: &str = "stackpin-release-data";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Packed {
    format: String,
    schema: u32,
    read_on: String,
    tables: BTreeMap<String, String>,
}

/// The packed bytes of a set.
pub(super) fn encode(schema: u32, read_on: &str, tables: &BTreeMap<String, String>) -> Vec<u8> {
    let packed = Packed {
        format: PACK_FORMAT.to_string(),
        schema,
        read_on: read_on.to_string(),
        tables: tables.clone(),
    };
    // Strings and integers always encode; the fallback only keeps `unwrap` out.
    let mut bytes = serde_json::to_vec_pretty(&packed).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Reads a packed set and validates it fully; `what` names it in errors.
pub fn decode(what: &str, bytes: &[u8], reader: &dyn Reader) -> Result<DataSet, DatasetError> {
    decode_with(what, bytes, reader, DataSet::from_tables)
}

/// Reads a packed set that was validated when it was installed: only the reader checks it.
pub(super) fn decode_for_use(
    what: &str,
    bytes: &[u8],
    reader: &dyn Reader,
) -> Result<DataSet, DatasetError> {
    decode_with(what, bytes, reader, DataSet::for_use)
}

type Build = fn(&str, u32, BTreeMap<String, String>, &dyn Reader) -> Result<DataSet, DatasetError>;

fn decode_with(
    what: &str,
    bytes: &[u8],
    reader: &dyn Reader,
    build: Build,
) -> Result<DataSet, DatasetError> {
    let not_a_set = |reason: String| DatasetError::NotASet {
        what: what.to_string(),
        reason,
    };
    // Notepad and PowerShell save UTF-8 with a byte-order mark; JSON readers refuse it.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let packed: Packed = serde_json::from_slice(bytes).map_err(|e| {
        not_a_set(format!(
            "expected the JSON that `stackpin data pack` writes ({e})"
        ))
    })?;
    if packed.format != PACK_FORMAT {
        return Err(not_a_set(format!(
            "its format is `{}`, not `{PACK_FORMAT}`",
            packed.format
        )));
    }
    let set = build(what, packed.schema, packed.tables, reader)?;
    if set.read_on != packed.read_on {
        return Err(not_a_set(format!(
            "it says it was read on {} but its newest table was read on {}",
            packed.read_on, set.read_on
        )));
    }
    Ok(set)
}

/// Validates a folder of tables with the binary's reader and packs it.
pub fn pack_dir(dir: &Path, reader: &dyn Reader) -> Result<DataSet, DatasetError> {
    let tables = read_tables(dir)?;
    DataSet::from_tables(&dir.display().to_string(), SCHEMA, tables, reader)
}

/// Why a table's file name cannot be part of a set, if it cannot: names are plain
/// `[a-z0-9_-]+.yaml`, so a packed set can never write outside the folder it is read from.
pub(super) fn unsafe_table_name(name: &str) -> Option<&'static str> {
    let Some(stem) = name.strip_suffix(".yaml") else {
        return Some("a table's name ends in .yaml");
    };
    let plain = !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    (!plain).then_some("a table's name is lowercase letters, digits, `_` and `-`, then .yaml")
}

/// A table's top-level `read_on`, found without parsing the YAML (the set's date is needed on
/// every run; the full parse that validation does confirms it).
pub(super) fn scan_read_on(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix("read_on:")?.trim();
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        is_date(value).then(|| value.to_string())
    })
}

/// `YYYY-MM-DD`, a real calendar date.
fn is_date(text: &str) -> bool {
    text.len() == 10 && text.parse::<jiff::civil::Date>().is_ok()
}

/// What every table carries whatever its content.
#[derive(Debug, Default)]
pub(super) struct Header {
    pub read_on: String,
    pub sources: Vec<String>,
    pub rows: usize,
}

/// Parses a table far enough to check its header: a YAML mapping with a `read_on` date (the
/// same the line scan finds) and, when present, `sources` as a list of strings.
pub(super) fn read_header(text: &str) -> Result<Header, String> {
    let value: serde_json::Value =
        serde_saphyr::from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
    let map = value
        .as_object()
        .ok_or("the table is not a YAML mapping of fields")?;
    let read_on = map
        .get("read_on")
        .and_then(|v| v.as_str())
        .filter(|d| is_date(d))
        .ok_or("no top-level `read_on: \"YYYY-MM-DD\"` (the date its sources were read)")?;
    if scan_read_on(text).as_deref() != Some(read_on) {
        return Err(format!(
            "write `read_on: \"{read_on}\"` on a line of its own at the top level"
        ));
    }
    let sources = match map.get("sources") {
        None => vec![],
        Some(list) => list
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .map(|s| s.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or("`sources` is a list of URLs or citations")?,
    };
    let rows = map
        .iter()
        .filter(|(key, _)| key.as_str() != "sources")
        .filter_map(|(_, v)| v.as_array())
        .map(Vec::len)
        .sum();
    Ok(Header {
        read_on: read_on.to_string(),
        sources,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_is_byte_for_byte_reproducible_and_decodes_to_the_same_set() {
        let set = super::super::built_in();
        let bytes = set.packed();
        assert_eq!(bytes, set.packed());
        let back = decode("packed", &bytes, &crate::compat::READER).expect("decodes");
        assert_eq!(back.read_on, set.read_on);
        assert_eq!(back.sha256(), set.sha256());
    }

    #[test]
    fn the_repository_data_folder_packs_to_the_built_in_set() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
        let set = pack_dir(&dir, &crate::compat::READER).expect("data/ is a valid set");
        assert_eq!(set.sha256(), super::super::built_in().sha256());
    }

    #[test]
    fn a_file_that_is_not_a_packed_set_is_refused_with_what_was_expected() {
        let err = decode("f.json", b"read_on: 2026-01-01\n", &crate::compat::READER)
            .expect_err("YAML, not a pack");
        assert!(err.to_string().contains("stackpin data pack"), "{err}");
        let other = br#"{"format": "zip", "schema": 1, "read_on": "2026-01-01", "tables": {}}"#;
        let err = decode("f.json", other, &crate::compat::READER).expect_err("other format");
        assert!(err.to_string().contains("`zip`"), "{err}");
    }

    #[test]
    fn a_pack_whose_date_disagrees_with_its_tables_is_refused() {
        let set = super::super::built_in();
        let bytes = encode(SCHEMA, "2099-12-31", &set.tables);
        let err = decode("f.json", &bytes, &crate::compat::READER).expect_err("date mismatch");
        assert!(err.to_string().contains("2099-12-31"), "{err}");
    }

    #[test]
    fn table_names_cannot_leave_the_folder() {
        assert_eq!(unsafe_table_name("cuda.yaml"), None);
        assert_eq!(unsafe_table_name("gpu_generations-2.yaml"), None);
        assert!(unsafe_table_name("../cuda.yaml").is_some());
        assert!(unsafe_table_name("a/b.yaml").is_some());
        assert!(unsafe_table_name("C:\\x.yaml").is_some());
        assert!(unsafe_table_name(".yaml").is_some());
        assert!(unsafe_table_name("cuda.yml").is_some());
    }

    #[test]
    fn read_on_must_be_a_real_date_at_the_top_level() {
        assert_eq!(
            scan_read_on("# c\nread_on: \"2026-11-29\"\nx: 1\n").as_deref(),
            Some("2026-11-29")
        );
        assert_eq!(scan_read_on("read_on: 2026-02-30\n"), None);
        assert_eq!(scan_read_on("  read_on: \"2026-11-29\"\n"), None);
        assert!(read_header("x:\n  read_on: \"2026-11-29\"\n").is_err());
        assert!(read_header("- 1\n- 2\n").is_err());
        let h = read_header("read_on: \"2026-11-29\"\nsources: [a, b]\nrows: [1, 2, 3]\n")
            .expect("valid");
        assert_eq!((h.rows, h.sources.len()), (3, 2));
    }
}
