//! Reading a manifest file strictly: syntax, unknown fields, wrong types and missing fields are
//! reported once, with `file:line:column`, the field path, a source snippet and, for a misspelled
//! field, the closest valid name.

use std::fmt;
use std::path::{Path, PathBuf};

use super::Manifest;

/// A manifest that could not be read or parsed (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read manifest {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Syntax(Box<SyntaxError>),
    #[error("{}: schema {found} is not one this stackpin reads; it reads schema {}", path.display(), super::SCHEMA)]
    Schema { path: PathBuf, found: u32 },
    #[error(
        "{}: the manifest is empty; start from `stackpin pin --library NAME==VERSION --os linux` (or windows), which writes a complete one",
        path.display()
    )]
    Empty { path: PathBuf },
}

/// Where a manifest failed to parse, and what to do about it.
#[derive(Debug)]
pub struct SyntaxError {
    pub path: PathBuf,
    pub line: Option<u64>,
    pub column: Option<u64>,
    /// The dotted field path serde was in (`toolkit.installer.url`), when known.
    pub field: Option<String>,
    pub message: String,
    pub hint: Option<String>,
    pub snippet: Option<String>,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "; {hint}")?;
        }
        if let Some(snippet) = &self.snippet {
            write!(f, "\n{snippet}")?;
        }
        Ok(())
    }
}

/// Reads and parses a manifest file.
pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
    let text = crate::fsutil::read_text(path).map_err(|source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// Parses manifest text; `path` only names the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
    let mut field_path = String::new();
    let options = serde_saphyr::options! { strict_booleans: true };
    let result = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            field_path = e.path().to_string();
            e.into_inner()
        })
    });
    let manifest: Manifest = match result {
        Ok(m) => m,
        Err(e) => return Err(syntax_error(text, path, &field_path, &e)),
    };
    if manifest.schema != super::SCHEMA {
        return Err(ManifestError::Schema {
            path: path.to_path_buf(),
            found: manifest.schema,
        });
    }
    Ok(manifest)
}

fn syntax_error(
    text: &str,
    path: &Path,
    field_path: &str,
    error: &serde_saphyr::Error,
) -> ManifestError {
    let location = error.location();
    let (line, column) = match location {
        Some(loc) if loc.line() > 0 => (Some(loc.line()), Some(loc.column())),
        _ => (None, None),
    };
    // `.` is what serde_path_to_error reports at the document root; `?` a key it had not read.
    let field_path = field_path.trim_end_matches(".?").trim_end_matches('?');
    if let Some(mapped) = in_manifest_terms(error, text, path, field_path, line) {
        return mapped;
    }
    let full = strip_location_prefix(&error.without_snippet().to_string());
    let hint = unknown_field_hint(&full);
    // The hint carries the list of valid fields; keep the message itself short.
    let message = match &hint {
        Some(h) => format!("unknown field `{}`", shown_value(&h.unknown)),
        None => shown_value(&full),
    };
    let field = (!field_path.is_empty() && field_path != ".").then(|| field_path.to_string());
    let field = match (&field, hint.as_ref()) {
        // For an unknown key the path ends at the bad key's parent; name the key itself.
        (Some(p), Some(h)) if !p.ends_with(&h.unknown) => Some(format!("{p}.{}", h.unknown)),
        (None, Some(h)) => Some(h.unknown.clone()),
        (f, _) => f.clone(),
    }
    .map(|f| shown_value(&f));
    ManifestError::Syntax(Box::new(SyntaxError {
        path: path.to_path_buf(),
        line,
        column,
        field,
        message,
        hint: hint.map(|h| shown_value(&h.text)),
        snippet: line.map(|l| snippet(text, l, column.unwrap_or(1))),
    }))
}

/// The parser's errors that name its own API (`DuplicateKeyPolicy`, `from_str_multiple`) or say
/// nothing a user can act on (an empty file's "unexpected end of input"), in the manifest's words.
fn in_manifest_terms(
    error: &serde_saphyr::Error,
    text: &str,
    path: &Path,
    field_path: &str,
    line: Option<u64>,
) -> Option<ManifestError> {
    use serde_saphyr::Error as E;
    let syntax = |line: Option<u64>, field: Option<String>, message: String, hint: &str| {
        ManifestError::Syntax(Box::new(SyntaxError {
            path: path.to_path_buf(),
            line,
            column: None,
            field,
            message,
            hint: Some(hint.to_string()),
            snippet: None,
        }))
    };
    match error.without_snippet() {
        E::Eof { .. } if is_blank(text) => Some(ManifestError::Empty {
            path: path.to_path_buf(),
        }),
        E::MultipleDocuments { .. } => Some(syntax(
            line,
            None,
            "holds more than one YAML document (a `---` line starts another)".into(),
            "a manifest describes one stack: keep one document per file and delete the rest from the `---` on",
        )),
        E::DuplicateMappingKey { key, location } => {
            let key = key.clone().unwrap_or_else(|| "?".into());
            let field = match field_path {
                "" | "." => key.clone(),
                parent => format!("{parent}.{key}"),
            };
            let second = location.line();
            let first = earlier_key_line(text, &key, second, location.column());
            let lines = match first {
                Some(first) => format!("lines {first} and {second}"),
                None => format!("the second on line {second}"),
            };
            Some(syntax(
                Some(second),
                None,
                format!("field `{}` appears twice ({lines})", shown_value(&field)),
                "keep one and delete the other",
            ))
        }
        _ => None,
    }
}

/// True when the text holds nothing but blank lines and comments.
fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

/// The line (1-based) of the first `key:` in the mapping whose duplicate sits at `line`,
/// `column`: the same indentation, looking back until the mapping's parent.
fn earlier_key_line(text: &str, key: &str, line: u64, column: u64) -> Option<u64> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = column.saturating_sub(1) as usize;
    let end = (line as usize).saturating_sub(1).min(lines.len());
    for i in (0..end).rev() {
        let l = lines[i];
        let trimmed = l.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let here = l.len() - trimmed.len();
        let bare = trimmed.trim_start_matches("- ");
        let here = here + (trimmed.len() - bare.len());
        if here == indent
            && let Some(rest) = bare
                .strip_prefix(key)
                .or_else(|| bare.strip_prefix(&format!("\"{key}\"")))
            && rest.trim_start().starts_with(':')
        {
            return Some(i as u64 + 1);
        }
        if here < indent {
            return None;
        }
    }
    None
}

/// The most characters of one value an error shows: a manifest may hold a 200 MB scalar, and
/// the terminal should get a line, not the scalar.
const SHOWN_CHARS: usize = 200;

/// A value from the manifest as an error shows it: control characters (a newline inside a
/// quoted name included) escaped so the message stays on its line, and cut past
/// [`SHOWN_CHARS`] with the full length said.
pub fn shown_value(text: &str) -> String {
    let count = text.chars().count();
    let mut out = String::new();
    for c in text.chars().take(SHOWN_CHARS) {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if count > SHOWN_CHARS {
        out.push_str(&format!("… ({count} characters in all)"));
    }
    out
}

/// serde-saphyr prefixes messages with `line N column M: `; we print the location ourselves.
fn strip_location_prefix(message: &str) -> String {
    let first = message.lines().next().unwrap_or(message);
    let first = strip_location_suffix(first);
    let trimmed = first.strip_prefix("error: ").unwrap_or(first);
    if let Some(rest) = trimmed.strip_prefix("line ")
        && let Some((_, after)) = rest.split_once(": ")
        && rest.split(':').next().is_some_and(|p| p.contains("column"))
    {
        return after.to_string();
    }
    trimmed.to_string()
}

/// Drops a trailing ` at line N, column M` (we print `file:line:column` in front instead).
fn strip_location_suffix(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(", column ") => &message[..i],
        _ => message,
    }
}

struct UnknownFieldHint {
    unknown: String,
    text: String,
}

/// From ``unknown field `verison`, expected one of name, version, …`` build
/// "valid fields: …; did you mean `version`?".
fn unknown_field_hint(message: &str) -> Option<UnknownFieldHint> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected = rest
        .split_once("expected one of ")
        .map(|(_, e)| e)
        .or_else(|| rest.split_once("expected ").map(|(_, e)| e))?;
    let expected = strip_location_suffix(expected);
    let names: Vec<String> = expected
        .split(',')
        .map(|n| n.trim().trim_matches('`').to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let best = names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(unknown, n), n))
        .filter(|(d, n)| *d <= (n.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.clone());
    let mut text = format!("valid fields here: {}", names.join(", "));
    if let Some(best) = best {
        text.push_str(&format!("; did you mean `{best}`?"));
    }
    Some(UnknownFieldHint {
        unknown: unknown.to_string(),
        text,
    })
}

/// Three lines of context with a caret under the column, like a compiler.
fn snippet(text: &str, line: u64, column: u64) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let index = (line as usize).saturating_sub(1);
    let start = index.saturating_sub(2);
    let end = (index + 1).min(lines.len());
    let width = end.to_string().len();
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate().take(end).skip(start) {
        out.push_str(&format!("{:>width$} | {}\n", i + 1, shown_value(l)));
    }
    // Past the cut the caret would point at nothing shown.
    let caret = (column as usize).saturating_sub(1).min(SHOWN_CHARS);
    out.push_str(&format!("{:>width$} | {}^", "", " ".repeat(caret)));
    out
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for ManifestError {
    fn exit(&self) -> Exit {
        Exit::Input
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SHIPPED: &str = include_str!("../../manifests/torch-2.5.1-cu124-linux.yaml");

    proptest! {
        #[test]
        fn arbitrary_text_is_an_error_never_a_panic(text in "\\PC{0,400}") {
            let _ = parse(&text, Path::new("fuzz.yaml"));
        }

        #[test]
        fn a_manifest_with_lines_dropped_or_cut_never_panics(drop in 0usize..60, cut in 0usize..3000) {
            let mut lines: Vec<&str> = SHIPPED.lines().collect();
            if drop < lines.len() {
                lines.remove(drop);
            }
            let text = lines.join("\n");
            let end = text.char_indices().map(|(i, _)| i).find(|i| *i >= cut).unwrap_or(text.len());
            let result = parse(&text[..end], Path::new("fuzz.yaml"));
            if let Err(ManifestError::Syntax(e)) = result {
                prop_assert!(e.line.is_some() || e.message.contains("EOF") || !e.message.is_empty());
            }
        }
    }

    #[test]
    fn the_shipped_manifest_parses() {
        let m = parse(SHIPPED, Path::new("shipped.yaml")).expect("parses");
        assert_eq!(m.example.batch, 64);
    }

    #[test]
    fn location_prefix_is_stripped() {
        assert_eq!(
            strip_location_prefix("line 7 column 17: invalid u64"),
            "invalid u64"
        );
        assert_eq!(strip_location_prefix("plain"), "plain");
        assert_eq!(
            strip_location_prefix("line of sight: x"),
            "line of sight: x"
        );
    }

    #[test]
    fn misspelled_field_gets_a_suggestion() {
        let hint = unknown_field_hint(
            "unknown field `verison`, expected one of name, version, components",
        )
        .expect("hint");
        assert_eq!(hint.unknown, "verison");
        assert!(
            hint.text.contains("did you mean `version`?"),
            "{}",
            hint.text
        );
    }

    #[test]
    fn far_off_field_gets_the_list_but_no_guess() {
        let hint = unknown_field_hint("unknown field `zzzzzz`, expected one of name, version")
            .expect("hint");
        assert!(!hint.text.contains("did you mean"));
        assert!(hint.text.contains("name, version"));
    }
}
