//! The mean and centred cross-product matrix of one chunk of rows: the hot loop of the
//! covariance solver. Only the lower triangle of the cross-product is formed (half the work).
//!
//! Two paths, both exact to f64 rounding:
//! - integers (pixels, counts) whose range, after shifting each feature by an integer near its
//!   midpoint, has magnitude ≤ m: an f32 product over blocks of ⌊2²⁴/m²⌋ rows is exact (every
//!   partial sum is an integer below 2²⁴); for pixels, m = 128 and blocks of 1,024 rows. The f32 product runs
//!   at about twice the f64 rate; the blocks are summed in f64, still exactly (below 2⁵³), and
//!   the centred matrix follows as `Σyyᵀ − (Σy)(Σy)ᵀ/n` of the shifted values y from exact integer sums (the one place
//!   SPEC allows that form: a single rounding, no cancellation of rounded quantities).
//! - anything else: centre the chunk on its own mean in f64, then one f64 product.

use faer::linalg::matmul::triangular::{matmul, BlockStructure};
use faer::{Accum, Mat, MatRef, Par};

use crate::moments::column_means;
use crate::{ChunkRef, Real};

/// Largest integer magnitude whose products still allow blocks of at least 64 rows in f32.
const MAX_EXACT_MAGNITUDE: f64 = 512.0;

/// Rows per piece: about 4 MiB of f64 rows (each look at them hits the cache), but at least 4·D
/// so that the D² work of a piece (its mean correction and merge) stays small beside its N·D²
/// products; in whole blocks of 256 rows (the exact small-integer kernel's block).
pub(crate) fn cached_rows(n_features: usize) -> usize {
    let d = n_features.max(1);
    ((1usize << 19) / d)
        .max(4 * d)
        .div_ceil(256)
        .saturating_mul(256)
        .clamp(256, 16384)
}

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` of a chunk (the upper triangle is zero).
///
/// Row-major chunks (`col_stride() == 1`) are the fast layout: their transpose is a
/// column-major D×n block, which is what the product wants as its left operand.
pub(crate) fn chunk_moments<T: Real>(chunk: MatRef<'_, T>, ws: &mut Workspace) -> Vec<f64> {
    ws.prepare(chunk.ncols());
    match small_integer_range(chunk) {
        Some((shift, magnitude)) => integer_moments(chunk, &shift, magnitude, ws),
        None => float_moments(chunk, ws),
    }
}

/// Buffers reused from chunk to chunk: fresh D×D matrices for every piece of a few hundred rows
/// cost more in page faults than the products themselves.
#[derive(Clone, Debug)]
pub(crate) struct Workspace {
    /// The piece's result: lower triangle of its centred cross-products.
    pub scatter: Mat<f64>,
    partial: Mat<f32>,
    block32: Mat<f32>,
    block64: Mat<f64>,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace {
            scatter: Mat::new(),
            partial: Mat::new(),
            block32: Mat::new(),
            block64: Mat::new(),
        }
    }
}

impl Workspace {
    fn prepare(&mut self, d: usize) {
        if self.scatter.nrows() != d {
            *self = Workspace {
                scatter: Mat::zeros(d, d),
                partial: Mat::zeros(d, d),
                ..Default::default()
            };
        } else {
            self.scatter.fill(0.0);
        }
    }
}

fn float_moments<T: Real>(chunk: MatRef<'_, T>, ws: &mut Workspace) -> Vec<f64> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    let mean = column_means(chunk);
    // Blocks of about 8 MiB: a D×rows operand that stays in cache makes the product 2–10×
    // faster than one spanning a large chunk (measured for D = 100 and 784).
    let block = ((1usize << 20) / d.max(1)).clamp(256, 8192).min(n);
    if ws.block64.ncols() < block || ws.block64.nrows() != d {
        ws.block64 = Mat::zeros(d, block);
    }
    let (centred, scatter) = (&mut ws.block64, &mut ws.scatter);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        // D×rows, column-major: one column per sample.
        for i in 0..rows {
            let row = chunk.row(start + i).iter().zip(&mean);
            for (c, (v, m)) in centred.col_as_slice_mut(i).iter_mut().zip(row) {
                *c = v.to_f64() - m;
            }
        }
        lower_product(
            scatter.as_mut(),
            Accum::Add,
            centred.as_ref().subcols(0, rows),
        );
        start += rows;
    }
    mean
}

/// `dst (+)= Lower(Y Yᵀ)` for a D×n block Y.
fn lower_product<E: faer::traits::ComplexField>(
    dst: faer::MatMut<'_, E>,
    accum: Accum,
    y: MatRef<'_, E>,
) {
    matmul(
        dst,
        BlockStructure::TriangularLower,
        accum,
        y,
        BlockStructure::Rectangular,
        y.transpose(),
        BlockStructure::Rectangular,
        E::one_impl(),
        Par::rayon(0),
    );
}

/// The largest magnitude when every value is an integer no larger than
/// [`MAX_EXACT_MAGNITUDE`]; `None` otherwise (or for chunks too small to be worth it).
fn small_integer_range<T: Real>(chunk: MatRef<'_, T>) -> Option<(Vec<f64>, f64)> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    if n < 64 {
        return None;
    }
    // One pass, branch-free within a line of values so that it vectorises; it stops after the
    // first line holding a value that is not an integer, so real-valued data pays little.
    // Adding and subtracting 1.5·2⁵² rounds to an integer without a libm call.
    const ROUND: f64 = 6_755_399_441_055_744.0;
    const LARGEST: f64 = 1_099_511_627_776.0; // 2⁴⁰: far inside the exact range of the trick
    let is_integer = |v: f64| (v.abs() <= LARGEST) & ((v + ROUND) - ROUND == v);
    let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
    if chunk.col_stride() == 1 {
        for i in 0..n {
            let mut ok = true;
            for ((l, h), v) in lo.iter_mut().zip(hi.iter_mut()).zip(chunk.row(i).iter()) {
                let v = v.to_f64();
                ok &= is_integer(v);
                *l = l.min(v);
                *h = h.max(v);
            }
            if !ok {
                return None;
            }
        }
    } else {
        for j in 0..d {
            let (ok, l, h) = chunk.col(j).iter().fold(
                (true, f64::INFINITY, f64::NEG_INFINITY),
                |(ok, l, h), v| {
                    let v = v.to_f64();
                    (ok & is_integer(v), l.min(v), h.max(v))
                },
            );
            if !ok {
                return None;
            }
            (lo[j], hi[j]) = (l, h);
        }
    }
    // Shifting each feature by the middle of its range halves the magnitudes: blocks 4× longer.
    let shift: Vec<f64> = lo
        .iter()
        .zip(&hi)
        .map(|(l, h)| ((l + h) / 2.0).floor())
        .collect();
    let magnitude = (0..d)
        .map(|j| (hi[j] - shift[j]).max(shift[j] - lo[j]))
        .fold(0.0f64, f64::max);
    (magnitude <= MAX_EXACT_MAGNITUDE).then_some((shift, magnitude))
}

fn integer_moments<T: Real>(
    chunk: MatRef<'_, T>,
    shift: &[f64],
    magnitude: f64,
    ws: &mut Workspace,
) -> Vec<f64> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    // Partial sums of products stay integers below 2^24, exact in f32.
    let block = ((16_777_216.0 / (magnitude * magnitude).max(1.0)) as usize).clamp(1, n);
    // Unshifted f32 rows already in memory order are used in place; anything else is copied
    // (and shifted) per block.
    let direct = match T::chunk(chunk) {
        ChunkRef::F32(m) if m.col_stride() == 1 && shift.iter().all(|&s| s == 0.0) => {
            Some(m.transpose())
        }
        _ => None,
    };
    if direct.is_none() && (ws.block32.ncols() < block || ws.block32.nrows() != d) {
        ws.block32 = Mat::zeros(d, block);
    }
    let (buffer, raw, partial) = (&mut ws.block32, &mut ws.scatter, &mut ws.partial);
    let mut sums = vec![0.0f64; d];
    let ones = Mat::<f32>::from_fn(block, 1, |_, _| 1.0);
    let mut block_sums = Mat::<f32>::zeros(d, 1);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let y = match direct {
            Some(t) => t.subcols(start, rows),
            None => {
                for i in 0..rows {
                    let row = chunk.row(start + i).iter().zip(shift);
                    for (b, (v, s)) in buffer.col_as_slice_mut(i).iter_mut().zip(row) {
                        *b = (v.to_f64() - s) as f32;
                    }
                }
                buffer.as_ref().subcols(0, rows)
            }
        };
        // Σx of the block as a product with ones: exact in f32 like the cross-products.
        faer::linalg::matmul::matmul(
            block_sums.as_mut(),
            Accum::Replace,
            y,
            ones.as_ref().subrows(0, rows),
            1.0f32,
            Par::Seq,
        );
        for (sum, v) in sums.iter_mut().zip(block_sums.col_as_slice(0)) {
            *sum += f64::from(*v);
        }
        lower_product(partial.as_mut(), Accum::Replace, y);
        for j in 0..d {
            let (src, dst) = (
                &partial.col_as_slice(j)[j..],
                &mut raw.col_as_slice_mut(j)[j..],
            );
            for (r, p) in dst.iter_mut().zip(src) {
                *r += f64::from(*p);
            }
        }
        start += rows;
    }
    let nf = n as f64;
    let mean: Vec<f64> = sums.iter().zip(shift).map(|(s, sh)| sh + s / nf).collect();
    for j in 0..d {
        for i in j..d {
            raw[(i, j)] -= sums[i] * sums[j] / nf;
        }
    }
    mean
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The obviously-correct reference: two-pass centring and a plain triple loop, compensated.
    fn reference(x: &Mat<f64>) -> (Vec<f64>, Vec<Vec<f64>>) {
        let (n, d) = (x.nrows(), x.ncols());
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let scatter = (0..d)
            .map(|a| {
                (0..d)
                    .map(|b| {
                        (0..n)
                            .map(|i| (x[(i, a)] - mean[a]) * (x[(i, b)] - mean[b]))
                            .sum()
                    })
                    .collect()
            })
            .collect();
        (mean, scatter)
    }

    #[test]
    fn integer_path_is_taken_for_pixels_and_matches_the_reference_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (n, d, hi) in [(1000, 17, 255u32), (300, 5, 511), (64, 3, 1)] {
            let x32 = Mat::<f32>::from_fn(n, d, |_, j| {
                rng.random_range(0..=hi / (1 + j as u32 % 3)) as f32
            });
            let x = Mat::<f64>::from_fn(n, d, |i, j| f64::from(x32[(i, j)]));
            assert!(small_integer_range(x32.as_ref()).is_some());
            let rows = x32.transpose().to_owned();
            let mut ws = Workspace::default();
            let mean_rm = chunk_moments(rows.as_ref().transpose(), &mut ws);
            let scatter_rm = ws.scatter.clone();
            assert_eq!(mean_rm, chunk_moments(x32.as_ref(), &mut ws));
            assert_eq!(scatter_rm, ws.scatter);
            let mut ws = Workspace::default();
            let mean = chunk_moments(x32.as_ref(), &mut ws);
            let scatter = &ws.scatter;
            let (want_mean, want) = reference(&x);
            for a in 0..d {
                assert!((mean[a] - want_mean[a]).abs() <= 1e-12 * want_mean[a].abs().max(1.0));
                for b in 0..=a {
                    let tol = 1e-12 * want[a][a].max(want[b][b]).max(1.0);
                    assert!(
                        (scatter[(a, b)] - want[a][b]).abs() <= tol,
                        "{n}×{d} ({a},{b}): {} vs {}",
                        scatter[(a, b)],
                        want[a][b]
                    );
                }
            }
        }
    }

    #[test]
    fn integers_far_from_zero_are_shifted_and_stay_exact() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let x = Mat::<f64>::from_fn(700, 6, |_, j| {
            1e6 * (j as f64 - 2.0) + rng.random_range(0..=255) as f64
        });
        let (shift, magnitude) = small_integer_range(x.as_ref()).unwrap();
        assert!(
            magnitude <= 128.0 && shift[0] < -1.9e6,
            "{shift:?} {magnitude}"
        );
        let mut ws = Workspace::default();
        let mean = chunk_moments(x.as_ref(), &mut ws);
        let (want_mean, want) = reference(&x);
        for a in 0..6 {
            assert!(
                (mean[a] - want_mean[a]).abs() <= 1e-9,
                "{} vs {}",
                mean[a],
                want_mean[a]
            );
            for b in 0..=a {
                assert!(
                    (ws.scatter[(a, b)] - want[a][b]).abs() <= 1e-9 * want[a][a].max(1.0),
                    "({a},{b})"
                );
            }
        }
    }

    #[test]
    fn non_integers_and_large_integers_take_the_float_path() {
        let x = Mat::<f64>::from_fn(100, 3, |i, j| (i * j) as f64 + 0.5);
        assert!(small_integer_range(x.as_ref()).is_none());
        let big = Mat::<f64>::from_fn(100, 3, |i, _| (i * 1000) as f64);
        assert!(small_integer_range(big.as_ref()).is_none());
        let mut ws = Workspace::default();
        let mean = chunk_moments(x.as_ref(), &mut ws);
        let scatter = &ws.scatter;
        let (want_mean, want) = reference(&x);
        for a in 0..3 {
            assert!((mean[a] - want_mean[a]).abs() < 1e-12 * want_mean[a].abs().max(1.0));
            assert!((scatter[(a, 0)] - want[a][0]).abs() < 1e-9 * want[a][a].max(1.0));
        }
    }
}
