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
use faer::{Accum, Mat, MatRef, Side};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::choose::choice::{ComponentChoice, Criterion, Curve, SampleSpectrum, leading_count};
use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
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
/// The permutations run in parallel, one copy of the data per thread: the eigenvalue
/// computation of one D×D matrix keeps only about one core busy. Permutation k draws from
/// stream k of the seed's generator, so the spectra do not depend on the number of threads.
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
    let permuter = Permuter {
        x,
        mean,
        scale,
        precision,
        seed,
    };
    // Contiguous runs of permutations, one per thread, each with its own buffers.
    let threads = rayon::current_num_threads().clamp(1, permutations.max(1));
    let runs: Vec<std::ops::Range<usize>> = (0..threads)
        .map(|t| permutations * t / threads..permutations * (t + 1) / threads)
        .collect();
    let spectra: Vec<Vec<Vec<f64>>> = runs
        .into_par_iter()
        .map(|run| {
            let mut buffers = permuter.buffers();
            run.map(|k| permuter.spectrum(k, &mut buffers))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    // samples[i] holds the i-th largest eigenvalue of every permutation, in order.
    let mut samples = vec![Vec::with_capacity(permutations); count];
    for ascending in spectra.iter().flatten() {
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
        // Counted from the spectra computed, not from the setting.
        spectra: spectra.iter().map(Vec::len).sum(),
    })
}

/// What every permutation reads: the data, its mean and scale, and the seed.
struct Permuter<'a, T> {
    x: MatRef<'a, T>,
    mean: &'a [f64],
    scale: Option<&'a [f64]>,
    precision: Precision,
    seed: u64,
}

/// One thread's working copies: the row order, the permuted data, and for N < D the centred
/// copy and its Gram matrix.
struct Buffers<T> {
    order: Vec<usize>,
    permuted: Mat<T>,
    centred: Mat<f64>,
    gram: Mat<f64>,
}

impl<T: Real> Permuter<'_, T> {
    fn buffers(&self) -> Buffers<T> {
        let (n, d) = (self.x.nrows(), self.x.ncols());
        let gram_side = if n < d { n } else { 0 };
        Buffers {
            order: Vec::with_capacity(n),
            permuted: Mat::from_fn(n, d, |i, j| self.x[(i, j)]),
            centred: Mat::zeros(gram_side, d),
            gram: Mat::zeros(gram_side, gram_side),
        }
    }

    fn scale_of(&self, j: usize) -> f64 {
        self.scale.map_or(1.0, |s| s[j])
    }

    /// The eigenvalues (ascending, unscaled by N − ddof) of permutation `k`.
    fn spectrum(&self, k: usize, b: &mut Buffers<T>) -> Result<Vec<f64>> {
        let (x, (n, d)) = (self.x, (self.x.nrows(), self.x.ncols()));
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(k as u64);
        for j in 0..d {
            b.order.clear();
            b.order.extend(0..n);
            b.order.shuffle(&mut rng);
            for (i, &row) in b.order.iter().enumerate() {
                b.permuted[(i, j)] = x[(row, j)];
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
        if n >= d {
            let mut acc = MomentAccumulator::new(d).with_precision(self.precision);
            acc.push(b.permuted.as_ref())?;
            let moments = acc.finish()?;
            let scatter = moments.scatter();
            eigenvalues(&Mat::from_fn(d, d, |i, j| {
                scatter[(i, j)] / (self.scale_of(i) * self.scale_of(j))
            }))
        } else {
            for j in 0..d {
                for i in 0..n {
                    b.centred[(i, j)] =
                        (b.permuted[(i, j)].to_f64() - self.mean[j]) / self.scale_of(j);
                }
            }
            let c = b.centred.as_ref();
            matmul(
                b.gram.as_mut(),
                Accum::Replace,
                c,
                c.transpose(),
                1.0,
                faer_par(),
            );
            eigenvalues(&b.gram)
        }
    }
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

    /// Permutation k draws from its own stream: one, two or three threads give the same bits,
    /// for tall data and wide.
    #[test]
    fn permuted_spectra_do_not_depend_on_the_number_of_threads() {
        for (n, d) in [(40, 6), (6, 11)] {
            let x = Mat::from_fn(n, d, |i, j| {
                ((i * 13 + j * j * 5) % 17) as f64 - 3.0 * j as f64
            });
            let mean: Vec<f64> = (0..d)
                .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
                .collect();
            let in_pool = |threads: usize, percentile: f64| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| {
                        permuted_spectra(
                            x.as_ref(),
                            &mean,
                            None,
                            1,
                            Precision::Full,
                            7,
                            percentile,
                            5,
                        )
                        .unwrap()
                        .percentiles
                    })
            };
            for percentile in [0.0, 50.0, 95.0, 100.0] {
                let one = in_pool(1, percentile);
                assert_eq!(one, in_pool(2, percentile), "{n}×{d}, {percentile}");
                assert_eq!(one, in_pool(3, percentile), "{n}×{d}, {percentile}");
            }
        }
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
