//! The mean and centred cross-product matrix of one chunk of rows: the hot loop of the
//! covariance solver. Only the lower triangle of the cross-product is formed (half the work).
//!
//! Two paths, both exact to f64 rounding:
//! - small integers (pixels, counts): after subtracting an integer shift per feature the values
//!   are integers of magnitude ≤ m, so an f32 product over blocks of ⌊2²⁴/m²⌋ rows is exact
//!   (every partial sum is an integer below 2²⁴). The f32 product runs at about twice the f64
//!   rate; the blocks are summed in f64, still exactly, and the centred matrix follows as
//!   `Σyyᵀ − (Σy)(Σy)ᵀ/n` from exact integer sums (the one place SPEC allows that form).
//! - anything else: centre the chunk on its own mean in f64, then one f64 product.

use faer::linalg::matmul::triangular::{matmul, BlockStructure};
use faer::{Accum, Mat, MatRef, Par};

use crate::moments::column_means;
use crate::prepare::center_scale;
use crate::Real;

/// Largest integer magnitude whose products still allow blocks of at least 64 rows in f32.
const MAX_EXACT_MAGNITUDE: f64 = 512.0;

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` of a chunk (the upper triangle is zero).
pub(crate) fn chunk_moments<T: Real>(chunk: MatRef<'_, T>) -> (Vec<f64>, Mat<f64>) {
    match small_integer_shift(chunk) {
        Some((shift, magnitude)) => integer_moments(chunk, &shift, magnitude),
        None => float_moments(chunk),
    }
}

fn float_moments<T: Real>(chunk: MatRef<'_, T>) -> (Vec<f64>, Mat<f64>) {
    let d = chunk.ncols();
    let mean = column_means(chunk);
    let centred = center_scale(chunk, &mean, None);
    let mut scatter = Mat::zeros(d, d);
    lower_product(scatter.as_mut(), Accum::Replace, centred.as_ref());
    (mean, scatter)
}

/// `dst (+)= Lower(Xᵀ X)`.
fn lower_product<E: faer::traits::ComplexField>(dst: faer::MatMut<'_, E>, accum: Accum, x: MatRef<'_, E>) {
    matmul(
        dst,
        BlockStructure::TriangularLower,
        accum,
        x.transpose(),
        BlockStructure::Rectangular,
        x,
        BlockStructure::Rectangular,
        E::one_impl(),
        Par::rayon(0),
    );
}

/// When every value is an integer, an integer shift per feature (its rounded mean) and the
/// largest magnitude after shifting, if small enough for the exact f32 path.
fn small_integer_shift<T: Real>(chunk: MatRef<'_, T>) -> Option<(Vec<f64>, f64)> {
    let n = chunk.nrows();
    if n < 64 {
        return None;
    }
    let mut shift = Vec::with_capacity(chunk.ncols());
    let mut magnitude = 0.0f64;
    for j in 0..chunk.ncols() {
        let col = chunk.col(j);
        let (mut lo, mut hi, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        for i in 0..n {
            let v = col[i].to_f64();
            if v != v.round() || v.abs() > 1e15 {
                return None;
            }
            lo = lo.min(v);
            hi = hi.max(v);
            sum += v;
        }
        let s = (sum / n as f64).round().clamp(lo, hi);
        magnitude = magnitude.max((hi - s).max(s - lo));
        if magnitude > MAX_EXACT_MAGNITUDE {
            return None;
        }
        shift.push(s);
    }
    Some((shift, magnitude))
}

fn integer_moments<T: Real>(chunk: MatRef<'_, T>, shift: &[f64], magnitude: f64) -> (Vec<f64>, Mat<f64>) {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    // Partial sums of products stay integers below 2^24, exact in f32.
    let block = ((16_777_216.0 / (magnitude * magnitude).max(1.0)) as usize).clamp(1, n);
    let shifted = Mat::<f32>::from_fn(n, d, |i, j| (chunk[(i, j)].to_f64() - shift[j]) as f32);
    let mut sums = vec![0.0f64; d];
    for j in 0..d {
        sums[j] = shifted.col(j).iter().map(|&v| f64::from(v)).sum();
    }
    let mut raw = Mat::<f64>::zeros(d, d);
    let mut partial = Mat::<f32>::zeros(d, d);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        lower_product(partial.as_mut(), Accum::Replace, shifted.as_ref().subrows(start, rows));
        for j in 0..d {
            for i in j..d {
                raw[(i, j)] += f64::from(partial[(i, j)]);
            }
        }
        start += rows;
    }
    let nf = n as f64;
    let mean: Vec<f64> = (0..d).map(|j| shift[j] + sums[j] / nf).collect();
    for j in 0..d {
        for i in j..d {
            raw[(i, j)] -= sums[i] * sums[j] / nf;
        }
    }
    (mean, raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The obviously-correct reference: two-pass centring and a plain triple loop, compensated.
    fn reference(x: &Mat<f64>) -> (Vec<f64>, Vec<Vec<f64>>) {
        let (n, d) = (x.nrows(), x.ncols());
        let mean: Vec<f64> = (0..d).map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64).collect();
        let scatter = (0..d)
            .map(|a| (0..d).map(|b| (0..n).map(|i| (x[(i, a)] - mean[a]) * (x[(i, b)] - mean[b])).sum()).collect())
            .collect();
        (mean, scatter)
    }

    #[test]
    fn integer_path_is_taken_for_pixels_and_matches_the_reference_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (n, d, hi) in [(1000, 17, 255u32), (300, 5, 511), (64, 3, 1)] {
            let x32 = Mat::<f32>::from_fn(n, d, |_, j| rng.random_range(0..=hi / (1 + j as u32 % 3)) as f32);
            let x = Mat::<f64>::from_fn(n, d, |i, j| f64::from(x32[(i, j)]));
            assert!(small_integer_shift(x32.as_ref()).is_some());
            let (mean, scatter) = chunk_moments(x32.as_ref());
            let (want_mean, want) = reference(&x);
            for a in 0..d {
                assert!((mean[a] - want_mean[a]).abs() <= 1e-12 * want_mean[a].abs().max(1.0));
                for b in 0..=a {
                    let tol = 1e-12 * want[a][a].max(want[b][b]).max(1.0);
                    assert!((scatter[(a, b)] - want[a][b]).abs() <= tol, "{n}×{d} ({a},{b}): {} vs {}", scatter[(a, b)], want[a][b]);
                }
            }
        }
    }

    #[test]
    fn non_integers_and_large_integers_take_the_float_path() {
        let x = Mat::<f64>::from_fn(100, 3, |i, j| (i * j) as f64 + 0.5);
        assert!(small_integer_shift(x.as_ref()).is_none());
        let big = Mat::<f64>::from_fn(100, 3, |i, _| (i * 1000) as f64);
        assert!(small_integer_shift(big.as_ref()).is_none());
        let (mean, scatter) = chunk_moments(x.as_ref());
        let (want_mean, want) = reference(&x);
        for a in 0..3 {
            assert!((mean[a] - want_mean[a]).abs() < 1e-12 * want_mean[a].abs().max(1.0));
            assert!((scatter[(a, 0)] - want[a][0]).abs() < 1e-9 * want[a][a].max(1.0));
        }
    }
}
