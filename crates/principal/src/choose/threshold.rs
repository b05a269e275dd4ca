//! Gavish & Donoho's optimal hard threshold on singular values (Gavish & Donoho 2014, "The
//! optimal hard threshold for singular values is 4/√3").
//!
//! For data = low rank + noise of standard deviation σ per entry, the singular values of the
//! data above
//!
//! ```text
//! τ = λ*(β) · √n · σ                      (σ known)
//! τ = ω(β) · median singular value        (σ unknown: σ̂ = median / √(n μ_β))
//! ```
//!
//! are kept, with β = m/n ≤ 1 the aspect ratio of the m×n matrix, λ*(β) and ω(β) = λ*(β)/√μ_β
//! from [`crate::choose::marchenko_pastur`]. The matrix here is the centred data: centring
//! an N×D matrix of independent noise leaves the singular values of an (N − 1)×D one (the
//! centring projection has rank N − 1), so m×n is min(N − 1, D) × max(N − 1, D) and the
//! median is taken over those min(N − 1, D) singular values. With `--standardize`, σ is in
//! standardized units. Only singular values of non-zero eigenvalues count ([`SampleSpectrum::rank`]):
//! noise-free data keeps its rank.

use crate::choose::choice::{
    ComponentChoice, Criterion, Curve, NoiseLevel, SampleSpectrum, leading_count,
};
use crate::choose::marchenko_pastur;
use crate::error::Result;

/// The singular values above the threshold, within `1..=max`; the curve is the singular values
/// compared with τ (`value` is τ).
pub(crate) fn gavish_donoho(
    spectrum: &SampleSpectrum<'_>,
    noise_sigma: Option<f64>,
    max: usize,
) -> Result<(ComponentChoice, Curve)> {
    spectrum.check_choosable("gavish-donoho")?;
    let rows = spectrum.n_samples - 1;
    let cols = spectrum.n_features;
    let long = rows.max(cols) as f64;
    let beta = spectrum.span() as f64 / long;
    let singular = spectrum.singular_values();
    let noise = match noise_sigma {
        Some(sigma) => NoiseLevel::Known(sigma),
        None => NoiseLevel::Estimated(
            median(&singular) / (long * marchenko_pastur::median(beta)).sqrt(),
        ),
    };
    let tau = marchenko_pastur::optimal_coefficient(beta) * long.sqrt() * noise.sigma();
    let count = singular
        .iter()
        .take(spectrum.rank())
        .take_while(|&&s| s > tau)
        .count();
    let choice = leading_count(Criterion::GavishDonoho(noise), count, max, |_| tau);
    let curve = Curve::compared(singular.iter().copied(), std::iter::repeat(tau)).resized(max);
    Ok((choice, curve))
}

/// The median (the mean of the middle two of an even count), as numpy's.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::choice::ChoiceOutcome;

    #[test]
    fn the_median_is_numpys() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    /// A square 101×100 problem (centred: 100×100, β = 1): τ = (4/√3)·√100·σ.
    #[test]
    fn a_known_noise_level_sets_the_threshold() {
        let n = 101;
        // Singular values 100, 30, just above τ, just below τ, 5, 4, then 94 of 0.32.
        let tau = 4.0 / 3f64.sqrt() * 10.0;
        let singular = [100.0, 30.0, tau * 1.001, tau * 0.999, 5.0, 4.0];
        let mut values: Vec<f64> = singular.iter().map(|s| s * s / (n - 1) as f64).collect();
        values.resize(100, 1e-3);
        let spectrum = SampleSpectrum {
            eigenvalues: &values,
            n_samples: n,
            n_features: 100,
            ddof: 1,
            total_variance: values.iter().sum(),
        };
        let (choice, curve) = gavish_donoho(&spectrum, Some(1.0), 100).unwrap();
        assert_eq!(choice.n_components, 3);
        assert!((choice.value - tau).abs() < 1e-12 * tau);
        assert_eq!(curve.threshold[0], Some(choice.value));
        assert_eq!(
            choice.criterion,
            Criterion::GavishDonoho(NoiseLevel::Known(1.0))
        );
        // A noise level so large that nothing passes: one component, said so.
        let (none, _) = gavish_donoho(&spectrum, Some(1e3), 100).unwrap();
        assert_eq!(
            (none.n_components, none.outcome),
            (1, ChoiceOutcome::RaisedToOne)
        );
    }
}
