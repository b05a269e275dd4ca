//! Data with holes and the yardsticks for fits of it, shared by `tests/missing_values.rs` and
//! principal-io's `examples/missing_values.rs` (which includes this file by path).

use principal::PcaModel;
use principal::faer::Mat;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The sine of the largest principal angle between the spans of two models' components: the
/// largest singular value of the part of b's rows outside span(a).
pub fn largest_angle_sine(a: &PcaModel, b: &PcaModel) -> Result<f64, String> {
    let (ba, bb) = (a.components(), b.components());
    // bb − (bb baᵀ) ba.
    let outside = bb - (bb * ba.transpose()) * ba;
    let s = outside
        .singular_values()
        .map_err(|e| format!("SVD of the angle's matrix: {e:?}"))?;
    Ok(s.iter().cloned().fold(0.0, f64::max).min(1.0))
}

/// A copy of `x` with each value missing (NaN) with probability `fraction`, independently.
pub fn knock_out(x: &Mat<f64>, fraction: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Mat::from_fn(x.nrows(), x.ncols(), |i, j| {
        if rng.random::<f64>() < fraction {
            f64::NAN
        } else {
            x[(i, j)]
        }
    })
}

/// Each NaN replaced by the mean of its column's observed values (0 for a column with none).
pub fn mean_imputed(x: &Mat<f64>) -> Mat<f64> {
    let means: Vec<f64> = (0..x.ncols())
        .map(|j| {
            let seen: Vec<f64> = x.col(j).iter().copied().filter(|v| !v.is_nan()).collect();
            seen.iter().sum::<f64>() / seen.len().max(1) as f64
        })
        .collect();
    Mat::from_fn(x.nrows(), x.ncols(), |i, j| {
        if x[(i, j)].is_nan() {
            means[j]
        } else {
            x[(i, j)]
        }
    })
}

/// Rank-`r` Gaussian structure (strengths 5, 4, 3, …) in `d` features plus isotropic noise of
/// standard deviation `noise`, offset 10.
pub fn low_rank_plus_noise(n: usize, d: usize, r: usize, noise: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut normal =
        move || -> f64 { rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng) };
    let w = Mat::from_fn(d, r, |_, m| {
        normal() * (5.0 - m as f64).max(1.0) / (d as f64).sqrt()
    });
    let z = Mat::from_fn(n, r, |_, _| normal());
    let signal = &z * w.transpose();
    Mat::from_fn(n, d, |i, j| 10.0 + signal[(i, j)] + noise * normal())
}
