//! Reading the sizes people type: memory (`2.5GB`, `2560MiB`, `67.5MB`, a bare `2560`) and
//! parameter counts (`5M`, `1.3B`).
//!
//! Memory comes back in MiB. GPU tools and the guide count in binary units, so `GB` and `GiB`
//! are both 1024 MB, and `MB` is a MiB: `nvidia-smi` prints "MiB", Task Manager prints "GB", and
//! both mean 1024-based units. A bare number is MiB, the unit the rest of stackpin uses.
//! Parameter counts are decimal (`5M` = 5,000,000), as model cards write them.
//! Turning sizes back into text for people is left to the CLI.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// A size or count that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("`{text}` is not a size: {why}; write it like 2.5GB, 2560MiB or 2560 (MiB)")]
    Memory { text: String, why: &'static str },
    #[error("`{text}` is not a parameter count: {why}; write it like 5M, 1.3B or 25000000")]
    Params { text: String, why: &'static str },
}

/// One MiB per unit, binary throughout (see the module header).
const MEMORY_UNITS: &[(&str, f64)] = &[
    ("kib", 1.0 / 1024.0),
    ("kb", 1.0 / 1024.0),
    ("k", 1.0 / 1024.0),
    ("mib", 1.0),
    ("mb", 1.0),
    ("m", 1.0),
    ("gib", 1024.0),
    ("gb", 1024.0),
    ("g", 1024.0),
    ("tib", 1024.0 * 1024.0),
    ("tb", 1024.0 * 1024.0),
    ("t", 1024.0 * 1024.0),
];

/// Parameters per unit, decimal as model cards count them.
const PARAM_UNITS: &[(&str, f64)] = &[("k", 1e3), ("m", 1e6), ("b", 1e9), ("g", 1e9), ("t", 1e12)];

/// Parses a memory size into MiB. Accepts `KB/KiB`, `MB/MiB`, `GB/GiB`, `TB/TiB` (any case,
/// optional space) and bare numbers, which are MiB.
pub fn parse_mib(text: &str) -> Result<f64, SizeError> {
    scaled(text, MEMORY_UNITS).map_err(|why| SizeError::Memory {
        text: text.to_string(),
        why,
    })
}

/// Parses a parameter count (`5M`, `1.3B`, `300K`, `25000000`) into a number of parameters.
pub fn parse_params(text: &str) -> Result<f64, SizeError> {
    scaled(text, PARAM_UNITS).map_err(|why| SizeError::Params {
        text: text.to_string(),
        why,
    })
}

/// `2.5 GB` times its unit's factor, refused when the product overflows to infinity.
fn scaled(text: &str, units: &[(&str, f64)]) -> Result<f64, &'static str> {
    let (number, factor) = split_unit(text, units)?;
    let value = number * factor;
    if !value.is_finite() {
        return Err("it is too large");
    }
    Ok(value)
}

/// Splits `2.5 GB` into (2.5, the unit's factor); a missing unit has factor 1.
fn split_unit(text: &str, units: &[(&str, f64)]) -> Result<(f64, f64), &'static str> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("it is empty");
    }
    let digits_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number_text, unit_text) = trimmed.split_at(digits_end);
    if number_text.starts_with('-') || unit_text.starts_with('-') {
        return Err("it is negative");
    }
    if number_text.is_empty() {
        return Err("it does not start with a number");
    }
    if unit_text.starts_with(',') {
        // "2,560" could be a thousands separator or a decimal comma; refuse rather than guess.
        return Err("commas are ambiguous, write the number without separators");
    }
    // Rust's float parser alone would also take "inf", "NaN" and "1e3"; the digit scan above
    // already refused those, so what reaches it is plain decimal.
    let number: f64 = number_text
        .parse()
        .map_err(|_| "the number is not a plain decimal")?;
    let unit = unit_text.trim().to_ascii_lowercase();
    if unit.is_empty() {
        return Ok((number, 1.0));
    }
    units
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, factor)| (number, *factor))
        .ok_or("the unit is not one stackpin knows")
}

/// A memory size in MiB that YAML may give as a number (MiB) or as text (`8GB`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Mib(pub f64);

impl fmt::Display for Mib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} MiB", self.0)
    }
}

impl<'de> Deserialize<'de> for Mib {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        number_or_text(deserializer, ("a size in MiB", "sizes"), parse_mib).map(Mib)
    }
}

/// A parameter count that YAML may give as a number or as text (`5M`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct ParamCount(pub f64);

impl<'de> Deserialize<'de> for ParamCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        number_or_text(deserializer, ("a parameter count", "counts"), parse_params).map(ParamCount)
    }
}

/// A YAML number, zero or more, or text that `parse` reads; `what` names one and several
/// (`a size in MiB`, `sizes`) for the error.
fn number_or_text<'de, D: Deserializer<'de>>(
    deserializer: D,
    (one, several): (&str, &str),
    parse: fn(&str) -> Result<f64, SizeError>,
) -> Result<f64, D::Error> {
    match NumberOrText::deserialize(deserializer)? {
        NumberOrText::Number(n) if n.is_finite() && n >= 0.0 => Ok(n),
        NumberOrText::Number(n) => Err(serde::de::Error::custom(format!(
            "{n} is not {one}; {several} are zero or more"
        ))),
        NumberOrText::Text(t) => parse(&t).map_err(serde::de::Error::custom),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(f64),
    Text(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gigabytes_are_1024_megabytes_as_gpu_tools_count() {
        assert_eq!(parse_mib("2.5GB"), Ok(2560.0));
        assert_eq!(parse_mib("2.5GiB"), Ok(2560.0));
        assert_eq!(parse_mib("5 gb"), Ok(5120.0));
        assert_eq!(parse_mib("1TB"), Ok(1024.0 * 1024.0));
    }

    #[test]
    fn megabytes_and_bare_numbers_are_mib() {
        assert_eq!(parse_mib("67.5MB"), Ok(67.5));
        assert_eq!(parse_mib("2560MiB"), Ok(2560.0));
        assert_eq!(parse_mib("2560"), Ok(2560.0));
        assert_eq!(parse_mib(" 1400 MiB "), Ok(1400.0));
    }

    #[test]
    fn kilobytes_are_fractions_of_a_mib() {
        assert_eq!(parse_mib("512KB"), Ok(0.5));
        assert_eq!(parse_mib("1024KiB"), Ok(1.0));
    }

    #[test]
    fn unknown_units_and_junk_are_refused_with_the_text() {
        for bad in [
            "",
            "GB",
            "2.5 parsecs",
            "-3GB",
            "1e3",
            "inf",
            "NaN",
            "2,560MB",
            "1.2.3",
        ] {
            let err = parse_mib(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn parameter_counts_are_decimal() {
        assert_eq!(parse_params("5M"), Ok(5_000_000.0));
        assert_eq!(parse_params("1.5B"), Ok(1_500_000_000.0));
        assert_eq!(parse_params("300k"), Ok(300_000.0));
        assert_eq!(parse_params("25000000"), Ok(25_000_000.0));
        assert!(parse_params("5MB").is_err());
    }

    #[test]
    fn yaml_sizes_take_numbers_or_text() {
        #[derive(Deserialize)]
        struct Card {
            gpu: Mib,
            params: ParamCount,
        }
        let card: Card = serde_saphyr::from_str("gpu: 8GB\nparams: 5M\n").expect("parses");
        assert_eq!(card.gpu, Mib(8192.0));
        assert_eq!(card.params, ParamCount(5e6));
        let card: Card = serde_saphyr::from_str("gpu: 6144\nparams: 1000\n").expect("parses");
        assert_eq!(card.gpu, Mib(6144.0));
        assert!(serde_saphyr::from_str::<Card>("gpu: -1\nparams: 5M\n").is_err());
    }

    proptest! {
        #[test]
        fn memory_parser_never_panics(text in ".{0,24}") {
            let _ = parse_mib(&text);
        }

        #[test]
        fn param_parser_never_panics(text in ".{0,24}") {
            let _ = parse_params(&text);
        }

        #[test]
        fn parsed_sizes_are_finite_and_not_negative(text in "[0-9.]{0,12} ?[kKmMgGtTiIbB]{0,3}") {
            if let Ok(mib) = parse_mib(&text) {
                prop_assert!(mib.is_finite() && mib >= 0.0);
            }
        }

        #[test]
        fn whole_mib_round_trip_through_each_unit(mib in 0u32..10_000_000) {
            let m = f64::from(mib);
            prop_assert_eq!(parse_mib(&format!("{mib}MiB")), Ok(m));
            prop_assert_eq!(parse_mib(&format!("{mib}")), Ok(m));
            prop_assert_eq!(parse_mib(&format!("{}GB", m / 1024.0)), Ok(m));
        }
    }
}
