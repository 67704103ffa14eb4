//! The operating system a stack is for: a leaf every layer names (manifest, release tables,
//! host, install), so it carries no knowledge of its own beyond its two names. It derives no
//! clap trait: the CLI maps `--os` onto it (see `cli::pin_cmd`), keeping domain code free of
//! the argument parser.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The operating system a stack is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Windows,
}

impl Os {
    /// Every OS, in the order help texts list them.
    pub const ALL: [Os; 2] = [Os::Linux, Os::Windows];

    /// The OS this binary runs on (anything not Windows is treated as Linux).
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }

    /// The name manifests, JSON and `--os` spell it with.
    pub fn name(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }
}

impl fmt::Display for Os {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`Os::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown operating system `{0}` (expected linux or windows)")]
pub struct UnknownOs(pub String);

impl FromStr for Os {
    type Err = UnknownOs;

    /// Exactly the names [`Os::name`] gives (the manifest's spelling; no case folding).
    fn from_str(s: &str) -> Result<Os, UnknownOs> {
        Os::ALL
            .into_iter()
            .find(|os| os.name() == s)
            .ok_or_else(|| UnknownOs(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_display_from_str_and_serde() {
        for os in Os::ALL {
            assert_eq!(os.to_string().parse::<Os>(), Ok(os));
            let json = serde_json::to_string(&os).expect("serialises");
            assert_eq!(json, format!("\"{}\"", os.name()));
        }
        assert_eq!("Linux".parse::<Os>(), Err(UnknownOs("Linux".into())));
    }
}
