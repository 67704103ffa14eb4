//! What each archived file's sha256 was first checked against, and how many files of a stack
//! are still trusted on first use. `fetch` decides it per file (the manifest's pin, a checksum
//! published for the URL in the release data, or nothing); the lock records it; `audit` counts
//! it. Comparing hashes is left to `fetch` and `audit`.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::Lockfile;

/// What a file's first download was checked against (`verified_against` in `stack.lock`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifiedAgainst {
    /// A checksum published for the URL, read into the release data with its source
    /// (`published (nixpkgs cudatoolkit/releases.nix@113ef7df)`).
    Published(String),
    /// The manifest's own `sha256` pin.
    ManifestPin,
    /// Nothing: the first download's sha256 became the lock's (`trust_on_first_use`).
    TrustOnFirstUse,
}

const PUBLISHED: &str = "published (";
const MANIFEST_PIN: &str = "manifest_pin";
const TRUST_ON_FIRST_USE: &str = "trust_on_first_use";

impl fmt::Display for VerifiedAgainst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Published(source) => write!(f, "{PUBLISHED}{source})"),
            Self::ManifestPin => f.write_str(MANIFEST_PIN),
            Self::TrustOnFirstUse => f.write_str(TRUST_ON_FIRST_USE),
        }
    }
}

impl FromStr for VerifiedAgainst {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(source) = s.strip_prefix(PUBLISHED).and_then(|r| r.strip_suffix(')')) {
            return Ok(Self::Published(source.to_string()));
        }
        match s {
            MANIFEST_PIN => Ok(Self::ManifestPin),
            TRUST_ON_FIRST_USE => Ok(Self::TrustOnFirstUse),
            _ => Err(format!(
                "`{s}` is not `published (SOURCE)`, `{MANIFEST_PIN}` or `{TRUST_ON_FIRST_USE}`"
            )),
        }
    }
}

impl Serialize for VerifiedAgainst {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for VerifiedAgainst {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How a stack's files came to be trusted, counted from its lock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TrustSummary {
    /// Checked against a checksum published for their URL.
    pub published: usize,
    /// Checked against the manifest's own sha256 pin.
    pub manifest_pin: usize,
    /// Downloaded from a URL with no published checksum known and no pin: the lock's sha256 is
    /// the first download's (lock entries written before stackpin recorded this count here).
    pub trust_on_first_use: usize,
    /// Wheels resolved by pip or uv from a package index, which serves each wheel's sha256 and
    /// is checked by the installer itself.
    pub from_package_index: usize,
    /// The files still trusted on first use, `layer/file`.
    pub trusted_on_first_use: Vec<String>,
}

/// Counts a lock's entries by what they were checked against.
pub fn summarize(lock: &Lockfile) -> TrustSummary {
    let mut out = TrustSummary::default();
    for entry in &lock.files {
        match &entry.verified_against {
            Some(VerifiedAgainst::Published(_)) => out.published += 1,
            Some(VerifiedAgainst::ManifestPin) => out.manifest_pin += 1,
            Some(VerifiedAgainst::TrustOnFirstUse) => {
                out.trust_on_first_use += 1;
                out.trusted_on_first_use
                    .push(format!("{}/{}", entry.layer, entry.file));
            }
            // Wheels carry their index as `pip:INDEX` (or uv's `installer:` prefix).
            None if !entry.url.contains("://") => out.from_package_index += 1,
            None => {
                out.trust_on_first_use += 1;
                out.trusted_on_first_use
                    .push(format!("{}/{}", entry.layer, entry.file));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::LockEntry;
    use crate::manifest::Layer;

    #[test]
    fn verified_against_reads_back_what_it_writes() {
        for v in [
            VerifiedAgainst::Published("nixpkgs releases.nix@113ef7df (dc_520)".into()),
            VerifiedAgainst::ManifestPin,
            VerifiedAgainst::TrustOnFirstUse,
        ] {
            assert_eq!(v.to_string().parse::<VerifiedAgainst>(), Ok(v));
        }
        assert!("trusted".parse::<VerifiedAgainst>().is_err());
    }

    #[test]
    fn a_lock_is_counted_by_what_its_files_were_checked_against() {
        let entry = |file: &str, url: &str, v: Option<VerifiedAgainst>| LockEntry {
            layer: Layer::Toolkit,
            file: file.into(),
            url: url.into(),
            sha256: "ab".into(),
            size: 1,
            fetched_at: "t".into(),
            verified_against: v,
        };
        let mut lock = Lockfile::new("s");
        lock.files = vec![
            entry(
                "a.run",
                "https://x/a.run",
                Some(VerifiedAgainst::Published("n".into())),
            ),
            entry(
                "b.run",
                "https://x/b.run",
                Some(VerifiedAgainst::TrustOnFirstUse),
            ),
            entry("c.run", "https://x/c.run", None),
            entry("d.whl", "pip:default-index", None),
            entry(
                "e.run",
                "https://x/e.run",
                Some(VerifiedAgainst::ManifestPin),
            ),
        ];
        let s = summarize(&lock);
        assert_eq!(
            (
                s.published,
                s.manifest_pin,
                s.trust_on_first_use,
                s.from_package_index
            ),
            (1, 1, 2, 1)
        );
        assert_eq!(
            s.trusted_on_first_use,
            vec!["toolkit/b.run", "toolkit/c.run"]
        );
    }
}
