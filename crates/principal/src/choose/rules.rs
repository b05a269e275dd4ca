//! The rules of thumb read straight off the spectrum: a fraction of the variance, Kaiser's rule
//! and the broken stick. Each returns its choice and, per M = 1..=max, the curve it read.

use crate::choose::choice::{ComponentChoice, Criterion, Curve, SampleSpectrum, leading_count};
use crate::error::{PcaError, Result};

/// Slack on the cumulative ratio, so that a fraction of 1 stops at the rank despite rounding.
const FRACTION_SLACK: f64 = 1e-12;

/// The fewest components whose explained-variance ratios sum to at least `fraction`:
///
/// ```text
/// M = min { m : Σ_{i ≤ m} λ_i / trace(S) ≥ fraction }
/// ```
///
/// The curve is the cumulative ratio, compared with `fraction`. An error when the total
/// variance is 0 (every feature constant): no number of components explains a fraction of it.
pub(crate) fn variance_fraction(
    spectrum: &SampleSpectrum<'_>,
    fraction: f64,
    max: usize,
) -> Result<(ComponentChoice, Curve)> {
    if spectrum.total_variance <= 0.0 {
        return Err(PcaError::ZeroTotalVariance);
    }
    let cumulative = cumulative_ratios(spectrum);
    // Past the end of the spectrum the fraction is reached by every component.
    let count = cumulative
        .iter()
        .position(|&c| c >= fraction - FRACTION_SLACK)
        .map_or(cumulative.len(), |i| i + 1);
    let choice = leading_count(Criterion::VarianceFraction(fraction), count, max, |m| {
        cumulative[m - 1]
    });
    let curve = Curve::compared(
        cumulative.iter().take(max).copied(),
        std::iter::repeat(fraction),
    );
    Ok((choice, curve))
}

/// The cumulative explained-variance ratios `Σ_{i ≤ m} λ_i / trace(S)`, m = 1..=min(N, D).
pub(crate) fn cumulative_ratios(spectrum: &SampleSpectrum<'_>) -> Vec<f64> {
    spectrum
        .eigenvalues
        .iter()
        .scan(0.0, |sum, &v| {
            *sum += spectrum.ratio(v);
            Some(*sum)
        })
        .collect()
}

/// Kaiser's rule: the leading eigenvalues above the mean eigenvalue `trace(S) / D` (above 1 for
/// a correlation matrix, Kaiser's original). The curve is λ_m, compared with the mean.
pub(crate) fn kaiser(spectrum: &SampleSpectrum<'_>, max: usize) -> (ComponentChoice, Curve) {
    let mean = spectrum.total_variance / spectrum.n_features as f64;
    let values = spectrum.eigenvalues;
    let count = values.iter().take_while(|&&v| v > mean).count();
    let choice = leading_count(Criterion::Kaiser, count, max, |_| mean);
    let curve = Curve::compared(values.iter().take(max).copied(), std::iter::repeat(mean));
    (choice, curve)
}

/// The broken stick (Frontier 1976; Jackson 1993): a stick of length 1 broken at random into D
/// pieces has expected k-th largest piece
///
/// ```text
/// b_k = (1/D) Σ_{i=k}^{D} 1/i
/// ```
///
/// and the leading components whose ratios `λ_k / trace(S)` exceed `b_k` are kept. The curve is
/// the ratio, compared with `b_k`.
pub(crate) fn broken_stick(spectrum: &SampleSpectrum<'_>, max: usize) -> (ComponentChoice, Curve) {
    let expected = broken_stick_expectations(spectrum.n_features);
    let ratios: Vec<f64> = spectrum
        .eigenvalues
        .iter()
        .map(|&v| spectrum.ratio(v))
        .collect();
    let count = ratios
        .iter()
        .zip(&expected)
        .take_while(|(r, b)| r > b)
        .count();
    let choice = leading_count(Criterion::BrokenStick, count, max, |m| expected[m - 1]);
    let curve = Curve::compared(ratios.iter().take(max).copied(), expected.iter().copied());
    (choice, curve)
}

/// `b_k = (1/D) Σ_{i=k}^{D} 1/i` for k = 1..=D, summed from the small end.
fn broken_stick_expectations(d: usize) -> Vec<f64> {
    let mut expected = vec![0.0; d];
    let mut tail = 0.0;
    for k in (1..=d).rev() {
        tail += 1.0 / k as f64;
        expected[k - 1] = tail / d as f64;
    }
    expected
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::choice::ChoiceOutcome;

    fn spectrum(values: &[f64], d: usize) -> SampleSpectrum<'_> {
        crate::choose::choice::spectrum(values, 100, d)
    }

    #[test]
    fn the_broken_stick_expectations_sum_to_one_and_match_the_formula() {
        let b = broken_stick_expectations(4);
        assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        let want = [25.0 / 48.0, 13.0 / 48.0, 7.0 / 48.0, 3.0 / 48.0];
        for (got, want) in b.iter().zip(want) {
            assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        }
    }

    #[test]
    fn each_rule_keeps_its_leading_components() {
        // Ratios 0.6, 0.25, 0.1, 0.05 against b = 0.52, 0.27, 0.15, 0.06.
        let values = [6.0, 2.5, 1.0, 0.5];
        let s = spectrum(&values, 4);
        assert_eq!(broken_stick(&s, 4).0.n_components, 1);
        // Mean 2.5: only 6 is above it (2.5 is not).
        assert_eq!(kaiser(&s, 4).0.n_components, 1);
        let (choice, curve) = variance_fraction(&s, 0.9, 4).unwrap();
        assert_eq!(choice.n_components, 3);
        assert!((choice.value - 0.95).abs() < 1e-15);
        assert_eq!(curve.statistic.len(), 4);
        assert_eq!(variance_fraction(&s, 1.0, 4).unwrap().0.n_components, 4);
        let capped = variance_fraction(&s, 0.99, 2).unwrap().0;
        assert_eq!(
            (capped.n_components, capped.outcome),
            (2, ChoiceOutcome::Capped)
        );
    }

    #[test]
    fn equal_eigenvalues_keep_one_component_by_kaiser() {
        let values = [1.0, 1.0, 1.0];
        let choice = kaiser(&spectrum(&values, 3), 3).0;
        assert_eq!(
            (choice.n_components, choice.outcome),
            (1, ChoiceOutcome::RaisedToOne)
        );
    }

    #[test]
    fn a_fraction_of_nothing_is_an_error() {
        let values = [0.0, 0.0];
        assert!(matches!(
            variance_fraction(&spectrum(&values, 2), 0.5, 2),
            Err(PcaError::ZeroTotalVariance)
        ));
    }
}
