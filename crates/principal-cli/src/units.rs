//! Quantities for people: byte counts, and the solver plan's notes that carry them.

use principal::Unsuitable;

/// A byte count for people: decimal units (kB, MB, GB, TB, PB, EB) with three significant
/// digits, so that a plan's memory column stays readable from kilobytes to the N² of a Gram
/// matrix of ten million rows.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes.is_nan() || bytes < 999.5 {
        return format!("{bytes:.0} B");
    }
    let mut value = bytes;
    let mut unit = 0;
    while value >= 999.5 && unit < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    let unit = UNITS[unit - 1];
    match value {
        v if v >= 99.95 => format!("{v:.0} {unit}"),
        v if v >= 9.995 => format!("{v:.1} {unit}"),
        v => format!("{v:.2} {unit}"),
    }
}

/// Why a solver cannot be used, with its memory in readable units.
pub fn unsuitable_note(why: Unsuitable) -> String {
    match why {
        Unsuitable::OverMemoryLimit {
            needed_bytes,
            limit_bytes,
        } => format!(
            "needs ≈ {}, over the memory limit of {}",
            format_bytes(needed_bytes),
            format_bytes(limit_bytes)
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_have_three_significant_digits_in_decimal_units() {
        assert_eq!(format_bytes(950.0), "950 B");
        assert_eq!(format_bytes(999.7), "1.00 kB");
        assert_eq!(format_bytes(1_000_000.0), "1.00 MB");
        assert_eq!(format_bytes(16_000_000_000.0), "16.0 GB");
        assert_eq!(format_bytes(1.6e15), "1.60 PB");
    }

    #[test]
    fn notes_give_memory_in_readable_units() {
        let over = Unsuitable::OverMemoryLimit {
            needed_bytes: 6.4e9,
            limit_bytes: 1e8,
        };
        assert_eq!(
            unsuitable_note(over),
            "needs ≈ 6.40 GB, over the memory limit of 100 MB"
        );
        assert_eq!(
            unsuitable_note(Unsuitable::NeedsComponentCount),
            "needs a fixed number of components"
        );
    }
}
