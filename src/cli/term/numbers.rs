//! Memory amounts the way the guide writes them: `2,560 MiB`, `3.75 GiB`, `1,234.5`.

/// `2,560 MiB`, `1,375.1 MiB`, `34.375 MiB`.
pub(in crate::cli) fn mib(value: f64) -> String {
    format!("{} MiB", amount(value))
}

/// `2,560`, `1,375.1`, `34.375`: whole numbers bare, one decimal from 100 up, up to three
/// below, trailing zeros dropped.
pub(in crate::cli) fn amount(value: f64) -> String {
    let decimals = if value.abs() >= 100.0 { 1 } else { 3 };
    let text = grouped(value, decimals);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `3.75 GiB`: two decimals, the way GPU tools print gigabytes.
pub(in crate::cli) fn gib(value: f64) -> String {
    format!("{} GiB", grouped(value / 1024.0, 2))
}

/// `1,234.5`: thousands grouped with commas, as the guide writes them.
pub(in crate::cli) fn grouped(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut out = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(fraction);
    }
    // "-0" after rounding a tiny negative is still zero.
    if value < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_like_the_guide_writes_them() {
        assert_eq!(grouped(2560.0, 0), "2,560");
        assert_eq!(grouped(1_234_567.25, 2), "1,234,567.25");
        assert_eq!(grouped(102.4, 1), "102.4");
        assert_eq!(grouped(-300.0, 0), "-300");
        assert_eq!(grouped(-0.0001, 1), "0.0");
        assert_eq!(mib(34.375), "34.375 MiB");
        assert_eq!(mib(2560.0), "2,560 MiB");
        assert_eq!(mib(9.5367), "9.537 MiB");
        assert_eq!(amount(4096.0), "4,096");
        assert_eq!(amount(300.0), "300");
        assert_eq!(gib(3840.0), "3.75 GiB");
    }
}
