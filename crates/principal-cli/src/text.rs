//! Writing to the terminal and formatting numbers for the human-readable summaries.

use std::io::{self, Write};
use std::time::Duration;

use anyhow::Context;
use principal::PcaModel;

/// Writes `text` to stdout. A closed pipe comes back as an `io::Error` of kind `BrokenPipe`,
/// which `main` treats as success.
pub fn stdout(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to standard output")
}

/// Writes `text` to stderr, ignoring failure: there is nowhere left to report it.
pub fn stderr(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// A number with about `digits` significant digits, in scientific notation when very large or
/// small.
pub fn sig(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i64;
    if !(-4..9).contains(&magnitude) {
        return format!("{:.*e}", digits.saturating_sub(1), x);
    }
    let decimals = (digits as i64 - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A fraction as a percentage with two decimals.
pub fn percent(fraction: f64) -> String {
    format!("{:.2}%", 100.0 * fraction)
}

/// A duration in the most readable unit.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// The name of feature `j`: from the header when known, otherwise its 0-based position.
pub fn feature_name(names: Option<&[String]>, j: usize) -> String {
    match names.and_then(|n| n.get(j)) {
        Some(name) => format!("{name:?}"),
        None => format!("#{j}"),
    }
}

/// At most `max` items joined by ", ", then how many more.
pub fn abbreviate(items: &[String], max: usize) -> String {
    let mut shown = items
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        shown += &format!(", … ({} more)", items.len() - max);
    }
    shown
}

/// Cumulative explained-variance ratios.
pub fn cumulative(model: &PcaModel) -> Vec<f64> {
    model
        .explained_variance_ratio()
        .iter()
        .scan(0.0, |sum, r| {
            *sum += r;
            Some(*sum)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(4.22824171, 6), "4.22824");
        assert_eq!(sig(0.0238351, 4), "0.02384");
        assert_eq!(sig(123456.7, 6), "123457");
        assert_eq!(sig(1.5e-7, 3), "1.50e-7");
        assert_eq!(sig(0.0, 6), "0");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(Duration::from_micros(12)), "12 µs");
        assert_eq!(duration(Duration::from_millis(12)), "12.0 ms");
        assert_eq!(duration(Duration::from_secs(3)), "3.00 s");
    }
}
