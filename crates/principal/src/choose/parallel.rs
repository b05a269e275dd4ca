//! Horn's parallel analysis (Horn 1965), with permutations (Buja & Eyuboglu 1992) and a high
//! percentile (Glorfeld 1995): the leading eigenvalues of the data that exceed the same
//! percentile of the eigenvalues of data whose columns were permuted independently — data with
//! the same column distributions (so the same variances, or unit ones when standardizing) and
//! no correlation between columns.
//!
//! Extra work: one eigenvalue computation (no vectors) per permutation, of the D×D scatter of
//! the permuted, centred (scaled) data when N ≥ D (accumulated as a fit accumulates it), else
//! of its N×N Gram matrix. The data must be in memory to be permuted.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par, Side};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::choose::choice::{leading_count, ComponentChoice, Criterion, Curve, SampleSpectrum};
use crate::error::{PcaError, Result};
use crate::moments::MomentAccumulator;
use crate::options::Precision;
use crate::real::Real;

/// The eigenvalues of the permuted copies of the data, per index.
pub(crate) struct PermutedSpectra {
    /// The `percentile` of the i-th eigenvalue over the permutations, i = 1..=min(N, D).
    pub(crate) percentiles: Vec<f64>,
    /// Eigenvalue computations done (one per permutation).
    pub(crate) spectra: usize,
}

/// The eigenvalues of `permutations` copies of `x` with each column permuted independently
/// (seeded), centred and divided by `scale` (when standardizing), and their `percentile` per
/// index. With N ≥ D each copy's scatter is accumulated by [`MomentAccumulator`] in the data's
/// own type, so that pixels and other small integers take its exact byte and integer paths as
/// a fit does; with N < D the N×N Gram matrix of the centred copy is formed instead.
///
/// # Panics
/// When `mean` (or `scale`) is not one per column, or `n_samples ≤ ddof`.
#[track_caller]
pub(crate) fn permuted_spectra<T: Real>(
    x: MatRef<'_, T>,
    mean: &[f64],
    scale: Option<&[f64]>,
    ddof: usize,
    precision: Precision,
    permutations: usize,
    percentile: f64,
    seed: u64,
) -> Result<PermutedSpectra> {
    let (n, d) = (x.nrows(), x.ncols());
    assert_eq!(mean.len(), d, "one mean per column");
    assert!(n > ddof, "{n} samples with ddof {ddof}");
    let count = n.min(d);
    let divisor = (n - ddof) as f64;
    let scale_of = |j: usize| scale.map_or(1.0, |s| s[j]);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..n).collect();
    let mut permuted = Mat::<T>::from_fn(n, d, |i, j| x[(i, j)]);
    // The centred copy and its Gram matrix, for N < D only.
    let mut centred = Mat::<f64>::zeros(if n < d { n } else { 0 }, d);
    let mut gram = Mat::<f64>::zeros(if n < d { n } else { 0 }, if n < d { n } else { 0 });
    // samples[i] holds the i-th largest eigenvalue of every permutation.
    let mut samples = vec![Vec::with_capacity(permutations); count];
    for _ in 0..permutations {
        for j in 0..d {
            order.shuffle(&mut rng);
            for (i, &row) in order.iter().enumerate() {
                permuted[(i, j)] = x[(row, j)];
            }
        }
        let eigenvalues = |product: &Mat<f64>| {
            product
                .self_adjoint_eigenvalues(Side::Lower)
                .map_err(|e| PcaError::NoConvergence {
                    solver: "parallel analysis",
                    detail: format!("{e:?}"),
                })
        };
        let ascending = if n >= d {
            let mut acc = MomentAccumulator::new(d).with_precision(precision);
            acc.push(permuted.as_ref())?;
            let moments = acc.finish()?;
            let scatter = moments.scatter();
            eigenvalues(&Mat::from_fn(d, d, |i, j| {
                scatter[(i, j)] / (scale_of(i) * scale_of(j))
            }))?
        } else {
            for j in 0..d {
                for i in 0..n {
                    centred[(i, j)] = (permuted[(i, j)].to_f64() - mean[j]) / scale_of(j);
                }
            }
            let c = centred.as_ref();
            matmul(
                gram.as_mut(),
                Accum::Replace,
                c,
                c.transpose(),
                1.0,
                Par::rayon(0),
            );
            eigenvalues(&gram)?
        };
        for (i, value) in ascending.iter().rev().take(count).enumerate() {
            samples[i].push((value / divisor).max(0.0));
        }
    }
    let percentiles = samples
        .iter_mut()
        .map(|values| quantile(values, percentile / 100.0))
        .collect();
    Ok(PermutedSpectra {
        percentiles,
        spectra: permutations,
    })
}

/// The `q`-quantile of `values` by linear interpolation between order statistics (numpy's
/// default, R's type 7).
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let position = q * (values.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    values[below] + (position - below as f64) * (values[above] - values[below])
}

/// The leading eigenvalues of the data above the permuted ones' percentile, within `1..=max`;
/// the curve is λ_m compared with the percentile at m.
pub(crate) fn parallel_analysis(
    spectrum: &SampleSpectrum<'_>,
    permuted: &PermutedSpectra,
    criterion: Criterion,
    max: usize,
) -> (ComponentChoice, Curve) {
    let values = &spectrum.eigenvalues[..spectrum.rank()];
    let count = values
        .iter()
        .zip(&permuted.percentiles)
        .take_while(|(v, p)| v > p)
        .count();
    let choice = leading_count(criterion, count, max, |m| permuted.percentiles[m - 1]);
    let curve = Curve::compared(
        spectrum.eigenvalues.iter().copied(),
        permuted.percentiles.iter().copied(),
    )
    .resized(max);
    (choice, curve)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_as_numpy() {
        let mut v = [4.0, 1.0, 3.0, 2.0, 5.0];
        assert_eq!(quantile(&mut v, 0.5), 3.0);
        assert_eq!(quantile(&mut v, 0.95), 4.8);
        assert_eq!(quantile(&mut v, 0.0), 1.0);
        assert_eq!(quantile(&mut v, 1.0), 5.0);
        assert_eq!(quantile(&mut [7.0], 0.95), 7.0);
    }

    /// Permuting a column keeps its values: the total variance of every permuted copy is the
    /// data's, so the permuted eigenvalues sum to it; and the same seed gives the same numbers.
    #[test]
    fn permutations_keep_each_columns_variance_and_are_seeded() {
        let x = Mat::from_fn(30, 4, |i, j| ((i * 7 + j * 3) % 11) as f64 * (j + 1) as f64);
        let mean: Vec<f64> = (0..4)
            .map(|j| (0..30).map(|i| x[(i, j)]).sum::<f64>() / 30.0)
            .collect();
        let total: f64 = (0..4)
            .map(|j| (0..30).map(|i| (x[(i, j)] - mean[j]).powi(2)).sum::<f64>() / 29.0)
            .sum();
        let one =
            permuted_spectra(x.as_ref(), &mean, None, 1, Precision::Full, 1, 50.0, 3).unwrap();
        let sum: f64 = one.percentiles.iter().sum();
        assert!((sum - total).abs() < 1e-12 * total, "{sum} vs {total}");
        let a = permuted_spectra(x.as_ref(), &mean, None, 1, Precision::Full, 20, 95.0, 7).unwrap();
        let b = permuted_spectra(x.as_ref(), &mean, None, 1, Precision::Full, 20, 95.0, 7).unwrap();
        assert_eq!(a.percentiles, b.percentiles);
        assert_eq!(a.spectra, 20);
        let c = permuted_spectra(x.as_ref(), &mean, None, 1, Precision::Full, 20, 95.0, 8).unwrap();
        assert_ne!(a.percentiles, c.percentiles);
    }

    /// Wide data (N < D) takes the N×N product: the same eigenvalues.
    #[test]
    fn wide_data_has_as_many_permuted_eigenvalues_as_samples() {
        let x = Mat::from_fn(5, 9, |i, j| ((i * 5 + j * j) % 7) as f64);
        let mean: Vec<f64> = (0..9)
            .map(|j| (0..5).map(|i| x[(i, j)]).sum::<f64>() / 5.0)
            .collect();
        let spectra =
            permuted_spectra(x.as_ref(), &mean, None, 1, Precision::Full, 3, 95.0, 0).unwrap();
        assert_eq!(spectra.percentiles.len(), 5);
        // Centred on its mean, five rows span four dimensions.
        assert!(spectra.percentiles[4] < 1e-12 * spectra.percentiles[0]);
    }
}
