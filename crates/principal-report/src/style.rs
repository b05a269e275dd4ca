//! Fonts, colours and number formats shared by every figure.

use std::sync::OnceLock;

use plotters::style::{FontStyle, RGBColor, TextStyle};

use crate::error::{ReportError, Result};

/// DejaVu Sans, shipped in the crate (see `fonts/LICENSE-DejaVu.txt`): the figures look the
/// same on every machine and no system font is looked up.
static DEJAVU_SANS: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// The family the font is registered under. SVG files name it too, so a viewer without
/// DejaVu Sans falls back to its own sans-serif face.
pub(crate) const FAMILY: &str = "sans-serif";

/// Registers the bundled font with plotters once per process.
pub(crate) fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok()
    });
    if ok { Ok(()) } else { Err(ReportError::Font) }
}

/// Figure titles.
pub(crate) fn title_font() -> TextStyle<'static> {
    (FAMILY, 30).into()
}

/// Axis descriptions and panel headings.
pub(crate) fn label_font() -> TextStyle<'static> {
    (FAMILY, 22).into()
}

/// Tick labels and legend entries.
pub(crate) fn tick_font() -> TextStyle<'static> {
    (FAMILY, 18).into()
}

/// Small print: tick labels of small panels.
pub(crate) fn small_font() -> TextStyle<'static> {
    (FAMILY, 15).into()
}

/// Light grey of grid lines.
pub(crate) const GRID: RGBColor = RGBColor(225, 225, 225);

/// Colours of up to [`PALETTE.len()`](PALETTE) classes: Tableau's ten, then their lighter
/// companions (matplotlib's `tab20` order), so that the first ten are the most distinct.
pub(crate) const PALETTE: [RGBColor; 20] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xae, 0xc7, 0xe8),
    RGBColor(0xff, 0xbb, 0x78),
    RGBColor(0x98, 0xdf, 0x8a),
    RGBColor(0xff, 0x98, 0x96),
    RGBColor(0xc5, 0xb0, 0xd5),
    RGBColor(0xc4, 0x9c, 0x94),
    RGBColor(0xf7, 0xb6, 0xd2),
    RGBColor(0xc7, 0xc7, 0xc7),
    RGBColor(0xdb, 0xdb, 0x8d),
    RGBColor(0x9e, 0xda, 0xe5),
];

/// Colour of the classes beyond the palette ("other").
pub(crate) const OTHER: RGBColor = RGBColor(0, 0, 0);

/// ColorBrewer's RdBu, from blue (negative) through near-white to red (positive).
const DIVERGING: [RGBColor; 11] = [
    RGBColor(0x05, 0x30, 0x61),
    RGBColor(0x21, 0x66, 0xac),
    RGBColor(0x43, 0x93, 0xc3),
    RGBColor(0x92, 0xc5, 0xde),
    RGBColor(0xd1, 0xe5, 0xf0),
    RGBColor(0xf7, 0xf7, 0xf7),
    RGBColor(0xfd, 0xdb, 0xc7),
    RGBColor(0xf4, 0xa5, 0x82),
    RGBColor(0xd6, 0x60, 0x4d),
    RGBColor(0xb2, 0x18, 0x2b),
    RGBColor(0x67, 0x00, 0x1f),
];

/// ColorBrewer's Blues, from white to dark blue: counts.
const SEQUENTIAL: [RGBColor; 9] = [
    RGBColor(0xf7, 0xfb, 0xff),
    RGBColor(0xde, 0xeb, 0xf7),
    RGBColor(0xc6, 0xdb, 0xef),
    RGBColor(0x9e, 0xca, 0xe1),
    RGBColor(0x6b, 0xae, 0xd6),
    RGBColor(0x42, 0x92, 0xc6),
    RGBColor(0x21, 0x71, 0xb5),
    RGBColor(0x08, 0x51, 0x9c),
    RGBColor(0x08, 0x30, 0x6b),
];

/// Linear interpolation in a table of colours at `t` in [0, 1] (clamped).
fn interpolate(table: &[RGBColor], t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.5 } else { t.clamp(0.0, 1.0) };
    let position = t * (table.len() - 1) as f64;
    let i = (position.floor() as usize).min(table.len() - 2);
    let f = position - i as f64;
    let (a, b) = (table[i], table[i + 1]);
    let mix = |x: u8, y: u8| (f64::from(x) + f * (f64::from(y) - f64::from(x))).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The diverging colour of `value` on a scale symmetric about 0 reaching ±`limit`: 0 is the
/// middle (near-white), −limit dark blue, +limit dark red.
pub(crate) fn diverging(value: f64, limit: f64) -> RGBColor {
    if limit > 0.0 {
        interpolate(&DIVERGING, 0.5 + 0.5 * value / limit)
    } else {
        DIVERGING[DIVERGING.len() / 2]
    }
}

/// The sequential colour of `value` in [0, `high`].
pub(crate) fn sequential(value: f64, high: f64) -> RGBColor {
    if high > 0.0 {
        interpolate(&SEQUENTIAL, value / high)
    } else {
        SEQUENTIAL[0]
    }
}

/// Grey level of `value` on [low, high] as ink on paper: low is white, high black.
pub(crate) fn grey(value: f64, low: f64, high: f64) -> RGBColor {
    let t = if high > low {
        ((value - low) / (high - low)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let level = (255.0 * (1.0 - t)).round() as u8;
    RGBColor(level, level, level)
}

/// Whether text on `colour` should be white rather than black (dark background).
pub(crate) fn is_dark(colour: RGBColor) -> bool {
    let luminance =
        0.299 * f64::from(colour.0) + 0.587 * f64::from(colour.1) + 0.114 * f64::from(colour.2);
    luminance < 128.0
}

/// A number with about `digits` significant digits, in scientific notation when very large or
/// very small.
pub(crate) fn significant(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i64;
    if !(-3..6).contains(&magnitude) {
        return format!("{:.*e}", digits.saturating_sub(1), x);
    }
    let decimals = (digits as i64 - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A fraction as a percentage: two decimals, or more significant digits when small.
pub(crate) fn percent(fraction: f64) -> String {
    let p = 100.0 * fraction;
    if p != 0.0 && p.abs() < 0.01 {
        format!("{}%", significant(p, 2))
    } else {
        format!("{p:.2}%")
    }
}

/// An axis tick label: at most four significant digits, no trailing zeros, a true minus sign.
pub(crate) fn tick(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let text = significant(x, 4);
    let text = match text.split_once('e') {
        Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
        None => trim_zeros(&text).to_owned(),
    };
    text.replace('-', "−")
}

/// "2.500" → "2.5", "3.0" → "3", "40" → "40".
fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// `k` in superscript digits, e.g. "⁻³".
fn superscript(k: i32) -> String {
    k.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            _ => '⁹',
        })
        .collect()
}

/// Ticks of a log axis over [low, high]: 1, 2 and 5 times each power of ten, labelled as plain
/// numbers, when the axis spans at most three decades (plotters would mark only one or two);
/// else the powers of ten (every other one beyond eight decades), labelled 10ᵏ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LogAxis {
    low: f64,
    high: f64,
}

impl LogAxis {
    pub(crate) fn new(low: f64, high: f64) -> Self {
        LogAxis { low, high }
    }

    fn decades(&self) -> f64 {
        self.high.log10() - self.low.log10()
    }

    pub(crate) fn key_points(&self) -> Vec<f64> {
        let (first, last) = (
            self.low.log10().floor() as i32,
            self.high.log10().ceil() as i32,
        );
        let multiples: &[f64] = if self.decades() <= 3.0 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let every = if self.decades() > 8.0 { 2 } else { 1 };
        (first..=last)
            .filter(|k| k.rem_euclid(every) == 0)
            .flat_map(|k| multiples.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|&v| v >= self.low && v <= self.high)
            .collect()
    }

    pub(crate) fn label(&self, x: f64) -> String {
        if self.decades() <= 3.0 || x <= 0.0 || x.is_nan() {
            tick(x)
        } else {
            format!("10{}", superscript(x.log10().round() as i32))
        }
    }
}

/// The labels of a linear axis whose values reach `max_abs` in magnitude: a common power of
/// ten is factored out of very large (≥ 10⁵) or small (< 10⁻²) values and named in the axis
/// description, as "(×10⁶)".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AxisScale {
    exponent: i32,
}

impl AxisScale {
    pub(crate) fn for_values(max_abs: f64) -> Self {
        let exponent = if max_abs.is_finite() && max_abs > 0.0 && !(1e-2..1e5).contains(&max_abs) {
            max_abs.log10().floor() as i32
        } else {
            0
        };
        AxisScale { exponent }
    }

    /// The tick label of `x`.
    pub(crate) fn label(&self, x: f64) -> String {
        tick(x / 10f64.powi(self.exponent))
    }

    /// `description` with the factor, when there is one.
    pub(crate) fn describe(&self, description: &str) -> String {
        if self.exponent == 0 {
            description.to_owned()
        } else {
            format!("{description} (×10{})", superscript(self.exponent))
        }
    }
}

/// `text` cut to at most `max` characters, an ellipsis marking the cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diverging_map_is_centred_at_zero_and_symmetric() {
        assert_eq!(diverging(0.0, 3.0), RGBColor(0xf7, 0xf7, 0xf7));
        assert_eq!(diverging(-3.0, 3.0), DIVERGING[0]);
        assert_eq!(diverging(3.0, 3.0), DIVERGING[10]);
        // Beyond the limit clamps; half way matches the table's quarter points.
        assert_eq!(diverging(7.0, 3.0), DIVERGING[10]);
        assert_eq!(diverging(-1.5, 3.0), interpolate(&DIVERGING, 0.25));
    }

    #[test]
    fn grey_is_ink_on_paper() {
        assert_eq!(grey(0.0, 0.0, 255.0), RGBColor(255, 255, 255));
        assert_eq!(grey(255.0, 0.0, 255.0), RGBColor(0, 0, 0));
        assert_eq!(grey(1.0, 1.0, 1.0), RGBColor(255, 255, 255));
    }

    #[test]
    fn ticks_drop_trailing_zeros() {
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(2.0), "2");
        assert_eq!(tick(-1.25), "−1.25");
        assert_eq!(tick(1e-7), "1e−7");
        let narrow = LogAxis::new(0.011, 0.3);
        assert_eq!(narrow.key_points().len(), 4); // 0.02, 0.05, 0.1, 0.2
        assert_eq!(narrow.label(0.1), "0.1");
        let wide = LogAxis::new(0.5, 2e5);
        assert_eq!(wide.key_points().len(), 6); // 1, 10, …, 10⁵
        assert_eq!(wide.label(1e5), "10⁵");
        assert_eq!(wide.label(1.0), "10⁰");
        let scale = AxisScale::for_values(3.4e6);
        assert_eq!(scale.label(2.5e6), "2.5");
        assert_eq!(scale.describe("error"), "error (×10⁶)");
        assert_eq!(AxisScale::for_values(900.0).label(-500.0), "−500");
        assert_eq!(percent(0.924_618_723), "92.46%");
    }
}
