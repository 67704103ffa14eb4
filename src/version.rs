//! Vendor version numbers — NVIDIA drivers (`570.26`, `570.124.06`, `566.03`), CUDA toolkits
//! (`12.4`, `12.4.1`) and library releases (`2.5.1`, `2.5.1+cu124`) — parsed once and compared
//! numerically, component by component. Strings are never compared as strings: `"570.26" >
//! "570.124.06"` as text, yet 26 < 124.
//!
//! `semver` rejects two-component and zero-padded versions, so this small type does the job.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A dotted numeric version with an optional local suffix (`+cu124`), kept as written for display.
#[derive(Debug, Clone)]
pub struct Version {
    parts: Vec<u64>,
    local: Option<String>,
    text: String,
}

/// Why a version string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("empty version; write it like \"12.4.1\" or \"550.54.15\"")]
    Empty,
    #[error("`{text}` is not a version: `{part}` is not a number (write it like \"12.4.1\")")]
    NotNumeric { text: String, part: String },
    #[error("`{text}` has {count} components; stackpin reads versions of 1 to 4 numbers")]
    TooManyParts { text: String, count: usize },
    #[error("`{text}`: component `{part}` is too large")]
    Overflow { text: String, part: String },
}

impl Version {
    /// Parses `12.4`, `550.54.15`, `566.03` or `2.5.1+cu124`. Whitespace around is ignored.
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(VersionError::Empty);
        }
        let (numeric, local) = match trimmed.split_once('+') {
            Some((n, l)) => (n, Some(l.to_string())),
            None => (trimmed, None),
        };
        let pieces: Vec<&str> = numeric.split('.').collect();
        if pieces.len() > 4 {
            return Err(VersionError::TooManyParts {
                text: trimmed.to_string(),
                count: pieces.len(),
            });
        }
        let mut parts = Vec::with_capacity(pieces.len());
        for piece in pieces {
            if piece.is_empty() || !piece.bytes().all(|b| b.is_ascii_digit()) {
                return Err(VersionError::NotNumeric {
                    text: trimmed.to_string(),
                    part: piece.to_string(),
                });
            }
            let value = piece.parse::<u64>().map_err(|_| VersionError::Overflow {
                text: trimmed.to_string(),
                part: piece.to_string(),
            })?;
            parts.push(value);
        }
        Ok(Self {
            parts,
            local,
            text: trimmed.to_string(),
        })
    }

    /// The numeric components, e.g. `[570, 124, 6]`.
    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// The first component: the driver branch (`570`) or the CUDA major (`12`).
    pub fn major(&self) -> u64 {
        self.parts[0]
    }

    /// The second component, 0 when absent.
    pub fn minor(&self) -> u64 {
        self.parts.get(1).copied().unwrap_or(0)
    }

    /// `major.minor`, the CUDA "line" a library build names (`12.4` for `12.4.1`).
    pub fn major_minor(&self) -> String {
        format!("{}.{}", self.major(), self.minor())
    }

    /// The local suffix after `+`, e.g. `cu124` in `2.5.1+cu124`.
    pub fn local(&self) -> Option<&str> {
        self.local.as_deref()
    }

    /// The same version without its local suffix.
    pub fn public(&self) -> Version {
        let text = self
            .text
            .split('+')
            .next()
            .unwrap_or(&self.text)
            .to_string();
        Version {
            parts: self.parts.clone(),
            local: None,
            text,
        }
    }

    /// True when `self` starts with all components of `prefix` (`12.4.1` is in line `12.4`).
    pub fn starts_with(&self, prefix: &Version) -> bool {
        prefix.parts.len() <= self.parts.len() && self.parts[..prefix.parts.len()] == prefix.parts
    }

    /// Compares the numeric parts only, so `2.5.1+cu124` matches a pin of `2.5.1`.
    pub fn same_release(&self, other: &Version) -> bool {
        self.parts == other.parts
    }
}

impl Ord for Version {
    /// Numeric per component; a missing component counts as 0, and on a tie the shorter form
    /// sorts first (`12.4 < 12.4.0 < 12.4.1`) so the order stays total and agrees with `Eq`.
    /// The local suffix breaks remaining ties alphabetically.
    fn cmp(&self, other: &Self) -> Ordering {
        let width = self.parts.len().max(other.parts.len());
        for i in 0..width {
            let a = self.parts.get(i).copied().unwrap_or(0);
            let b = other.parts.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        self.parts
            .len()
            .cmp(&other.parts.len())
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Version::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `v("12.4")`: a version a test writes out, parsed (the tests of every module that compares
/// versions use it).
#[cfg(test)]
pub(crate) fn v(s: &str) -> Version {
    Version::parse(s).expect("test version parses")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn driver_versions_of_two_and_three_components_order_numerically() {
        assert!(v("570.26") < v("570.124.06"));
        assert!(v("566.03") < v("566.14"));
        assert!(v("535.104.05") > v("535.86.09"));
        assert!(v("455.32") < v("455.32.00"));
        assert!(v("1000.1") > v("999.99.99"));
    }

    #[test]
    fn toolkit_versions_order_numerically() {
        assert!(v("12.4") < v("12.4.1"));
        assert!(v("12.9") < v("12.10"));
        assert!(v("11.8.0") < v("12.0.0"));
        assert_eq!(v("12.4").major_minor(), "12.4");
        assert_eq!(v("12.4.1").major_minor(), "12.4");
    }

    #[test]
    fn local_suffix_is_kept_but_release_compares_numerically() {
        let built = v("2.5.1+cu124");
        assert_eq!(built.local(), Some("cu124"));
        assert!(built.same_release(&v("2.5.1")));
        assert_eq!(built.public().to_string(), "2.5.1");
        assert_eq!(built.to_string(), "2.5.1+cu124");
    }

    #[test]
    fn leading_zeros_are_numbers_but_display_keeps_the_text() {
        assert_eq!(v("570.124.06").parts(), &[570, 124, 6]);
        assert_eq!(v("570.124.06").to_string(), "570.124.06");
    }

    #[test]
    fn line_membership() {
        assert!(v("12.4.1").starts_with(&v("12.4")));
        assert!(!v("12.40.1").starts_with(&v("12.4")));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(Version::parse(""), Err(VersionError::Empty));
        assert!(matches!(
            Version::parse("12.x"),
            Err(VersionError::NotNumeric { .. })
        ));
        assert!(matches!(
            Version::parse("1..2"),
            Err(VersionError::NotNumeric { .. })
        ));
        assert!(matches!(
            Version::parse("1.2.3.4.5"),
            Err(VersionError::TooManyParts { .. })
        ));
        assert!(matches!(
            Version::parse("99999999999999999999999"),
            Err(VersionError::Overflow { .. })
        ));
    }

    proptest! {
        #[test]
        fn parser_never_panics(text in "\\PC*") {
            let _ = Version::parse(&text);
        }

        #[test]
        fn order_matches_numeric_tuples(a in proptest::collection::vec(0u64..2000, 1..4),
                                        b in proptest::collection::vec(0u64..2000, 1..4)) {
            let text = |p: &Vec<u64>| p.iter().map(u64::to_string).collect::<Vec<_>>().join(".");
            let (va, vb) = (v(&text(&a)), v(&text(&b)));
            let pad = |p: &Vec<u64>| { let mut q = p.clone(); q.resize(4, 0); q };
            if pad(&a) != pad(&b) {
                prop_assert_eq!(va.cmp(&vb), pad(&a).cmp(&pad(&b)));
            }
            prop_assert_eq!(va.cmp(&vb).reverse(), vb.cmp(&va));
        }
    }
}
