//! The float paths, exact to f64 rounding: each block of rows is centred in f64 near its mean
//! (on the mean of its first rows, or on its own mean), then multiplied (in f64, or in f32
//! under [`crate::Precision::Mixed`]); the blocks are merged by Chan's update (see
//! [`BlockMerge`]), so a constant offset of 1e6 costs no accuracy.

use faer::reborrow::ReborrowMut;
use faer::{Accum, MatMut, MatRef, Par};

use crate::error::Result;
use crate::kernel::blocks::{ensure_block, shifted_copy};
use crate::kernel::products::{NARROW_MAX_FEATURES, RankTwoUpdate, add_lower, lower_product};
use crate::kernel::scan::{check_finite, column_sums};
use crate::kernel::simd::dispatch;
use crate::moments::merge::merge_mean;
use crate::moments::workspace::Workspace;
use crate::options::MIXED_BLOCK_ROWS;
use crate::real::Real;

/// Centres each block of rows on the mean of its first rows ([`leading_mean`]), then one f64
/// product per block, into `ws.scatter` (whatever it held before). The block's rows are read
/// from memory once, by the centring copy, whose sums give the block's mean. Blocks are merged
/// as [`BlockMerge`] says: exact identities, so a constant offset of 1e6 costs no accuracy.
pub(crate) fn float_moments<T: Real>(
    chunk: MatRef<'_, T>,
    ws: &mut Workspace,
    first_row: usize,
) -> Result<Vec<f64>> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    // At most 1,024 rows (and 8 MiB) per product: a D×rows operand that stays in cache makes
    // the product 2–10× faster than one spanning a large chunk, and for narrow rows blocks of
    // 1,024 beat 6,144 by about 1.2× (measured for D = 100 and 784 on 2 cores). Narrow rows'
    // blocks are further held to 512 KiB, a core's second-level cache on most x86 CPUs: the
    // bands then find the block there (D = 100: 655 rows, ~1.4× faster products than 1,024
    // rows on an AVX2 EPYC, bench/results.md), and the centring copy finds the rows the
    // column sums just read.
    let bytes = if d <= NARROW_MAX_FEATURES {
        1usize << 19
    } else {
        1 << 23
    };
    let block = (bytes / (8 * d.max(1))).clamp(256, 1024).min(n);
    ensure_block(&mut ws.block64, d, block);
    let (centred, scatter, par) = (&mut ws.block64, &mut ws.scatter, ws.par);
    let mut merged = BlockMerge::new(d);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let part = chunk.subrows(start, rows);
        // One read of the rows: centred on the mean of their first few (known before the
        // copy), the copy's sums give the block's mean and the merge's correction.
        let centre = leading_mean(part);
        let residual = shifted_copy(part, &centre, centred.as_mut().subcols_mut(0, rows), par);
        if residual.iter().any(|s| !s.is_finite()) {
            // A non-finite value (named by the check), or finite values whose sum overflows.
            check_finite(part, first_row + start)?;
        }
        // The first block's product replaces whatever the scatter held.
        let accum = if start == 0 {
            Accum::Replace
        } else {
            Accum::Add
        };
        lower_product(
            scatter.as_mut(),
            accum,
            centred.as_ref().subcols(0, rows),
            par,
        );
        merged.add(scatter.as_mut(), rows, &centre, &residual);
        start += rows;
    }
    Ok(merged.mean)
}

/// [`crate::Precision::Mixed`] for `f32` chunks: blocks of rows centred on their own mean in f64 as in
/// `float_moments`, rounded to f32 and multiplied in f32 over [`MIXED_BLOCK_ROWS`] rows at a time
/// (the bound of `Precision::Mixed` depends on that length), each product added in f64.
pub(crate) fn mixed_moments(
    chunk: MatRef<'_, f32>,
    ws: &mut Workspace,
    first_row: usize,
) -> Result<Vec<f64>> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    // Centred 1,024 rows at a time (as `float_moments` for narrow rows): the merge's D² work per
    // centring block stays small beside the products.
    let block = (MIXED_BLOCK_ROWS * 4).min(n);
    ensure_block(&mut ws.block32, d, block);
    let (buffer, scatter, partial, par) =
        (&mut ws.block32, &mut ws.scatter, &mut ws.partial, ws.par);
    let mut merged = BlockMerge::new(d);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let part = chunk.subrows(start, rows);
        let centre = block_mean(part, first_row + start, par)?;
        // Σy before rounding: exact for the mean; in the scatter's correction it stands in for
        // Σŷ, off by a relative 2⁻²⁴ of a sum that is itself near zero.
        let residual = shifted_copy(part, &centre, buffer.as_mut().subcols_mut(0, rows), par);
        let mut product_start = 0;
        while product_start < rows {
            let len = MIXED_BLOCK_ROWS.min(rows - product_start);
            lower_product(
                partial.as_mut().submatrix_mut(0, 0, d, d),
                Accum::Replace,
                buffer.as_ref().subcols(product_start, len),
                par,
            );
            add_lower(
                scatter.as_mut(),
                partial.as_ref().submatrix(0, 0, d, d),
                par,
            );
            product_start += len;
        }
        merged.add(scatter.as_mut(), rows, &centre, &residual);
        start += rows;
    }
    Ok(merged.mean)
}

/// Rows whose plain mean centres a block of [`float_moments`].
const CENTRE_ROWS: usize = 16;

/// The plain mean of the first [`CENTRE_ROWS`] rows of a block: its centre. Within the block's
/// spread of its mean, so the merge's correction `s sᵀ/r` stays small beside the block's
/// scatter: at most `r/CENTRE_ROWS` times it whatever the rows (the first rows' squared
/// distances from the block's mean are part of its scatter), about `1/CENTRE_ROWS` of it for
/// rows drawn alike, so the products lose at most a few bits to it, usually none.
fn leading_mean<T: Real>(rows: MatRef<'_, T>) -> Vec<f64> {
    let m = rows.nrows().min(CENTRE_ROWS);
    let sums = column_sums(rows.subrows(0, m), Par::Seq);
    sums.iter().map(|s| s / m as f64).collect()
}

/// The plain mean of a block of rows (counted from `first_row` in errors), or the error that
/// names its first non-finite value.
fn block_mean<T: Real>(rows: MatRef<'_, T>, first_row: usize, par: Par) -> Result<Vec<f64>> {
    let sums = column_sums(rows, par);
    if sums.iter().any(|s| !s.is_finite()) {
        // A non-finite value (named by the check), or finite values whose sum overflows.
        check_finite(rows, first_row)?;
    }
    let n = rows.nrows() as f64;
    Ok(sums.iter().map(|s| s / n).collect())
}

/// Merges blocks of rows, each centred on its own rough mean `c` (its plain one-pass mean, within
/// a few ulps of the exact one), into the moments of all of them. A block of `r` rows whose
/// product `Σyyᵀ` of `y = x − c` is already in the scatter, with `s = Σy`, has the mean
/// `μ_b = c + s/r` and the centred scatter `Σyyᵀ − s sᵀ/r`; with the blocks so far (`n`, `μ`),
/// Chan's update adds `δδᵀ n r/(n + r)` for `δ = μ_b − μ`. Both are exact identities, and `s` is
/// tiny, so neither costs accuracy; both are rank-one updates of the lower triangle (D² work
/// beside the block's r·D²/2 products).
struct BlockMerge {
    n: usize,
    mean: Vec<f64>,
}

impl BlockMerge {
    fn new(d: usize) -> Self {
        BlockMerge {
            n: 0,
            mean: vec![0.0; d],
        }
    }

    fn add(&mut self, mut scatter: MatMut<'_, f64>, rows: usize, centre: &[f64], residual: &[f64]) {
        let r = rows as f64;
        let block_mean: Vec<f64> = centre
            .iter()
            .zip(residual)
            .map(|(c, s)| c + s / r)
            .collect();
        let (delta, weight) = merge_mean(&mut self.mean, self.n, &block_mean, rows);
        for j in 0..delta.len() {
            let column = scatter
                .rb_mut()
                .col_mut(j)
                .try_as_col_major_mut()
                .expect("columns of a Mat are contiguous")
                .as_slice_mut();
            dispatch(RankTwoUpdate::<f32> {
                dst: &mut column[j..],
                a: &delta[j..],
                alpha: weight * delta[j],
                b: &residual[j..],
                beta: -residual[j] / r,
                plus: None,
            });
        }
        self.n += rows;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moments::tests::reference_moments as reference;
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The merge is exact identities, whatever the centres: blocks centred far from their mean
    /// (where the `s sᵀ/r` term and Chan's term are large) give the moments of all the rows.
    #[test]
    fn blocks_merge_exactly_whatever_their_centres() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let d = 5;
        let x = Mat::<f64>::from_fn(700, d, |_, j| {
            (rng.random::<f64>() - 0.5) * (1.0 + j as f64) + 3.0 * j as f64
        });
        let (want_mean, want) = reference(&x);
        let mut scatter = Mat::<f64>::zeros(d, d);
        let mut merged = BlockMerge::new(d);
        let mut start = 0;
        for (k, rows) in [1, 250, 2, 300, 147].into_iter().enumerate() {
            let centre: Vec<f64> = (0..d).map(|j| 10.0 * (k + j) as f64 - 7.0).collect();
            let y = Mat::<f64>::from_fn(rows, d, |i, j| x[(start + i, j)] - centre[j]);
            let residual: Vec<f64> = (0..d).map(|j| y.col(j).iter().sum()).collect();
            for a in 0..d {
                for b in 0..=a {
                    scatter[(a, b)] += (0..rows).map(|i| y[(i, a)] * y[(i, b)]).sum::<f64>();
                }
            }
            merged.add(scatter.as_mut(), rows, &centre, &residual);
            start += rows;
        }
        assert_eq!(start, x.nrows());
        for a in 0..d {
            assert!((merged.mean[a] - want_mean[a]).abs() <= 1e-12, "mean {a}");
            for b in 0..=a {
                let tol = 1e-11 * (want[a][a] * want[b][b]).sqrt();
                assert!(
                    (scatter[(a, b)] - want[a][b]).abs() <= tol,
                    "({a},{b}): {} vs {}",
                    scatter[(a, b)],
                    want[a][b]
                );
            }
        }
    }
}
