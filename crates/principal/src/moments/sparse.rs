//! The sparse path of the moments: CSR blocks added to a [`MomentAccumulator`] (the covariance
//! route) or a [`ColumnAccumulator`] (the iterative solvers' first pass) without densifying.
//!
//! Column moments are exact about each block's mean: `Σ (x − m)² = Σ_entries (v − m)² +
//! (n − count) m²`. The cross-products are `X_bᵀ X_b` over the entries of a piece of rows,
//! less the piece's `n_b μ_b μ_bᵀ` (the mean's rank-one correction), merged piece by piece by
//! Chan's update: the cancellation of that correction is bounded by one piece's rows
//! (relative error about ε·n_b·μ²/variance), where sparse data has its means near zero.

use crate::error::{PcaError, Result};
use crate::moments::MomentAccumulator;
use crate::moments::columns::ColumnAccumulator;
use crate::moments::merge::merge_mean;
use crate::real::Real;
use crate::sparse::csr::{CsrChunk, CsrRef, SparseIndex, with_csr};
use crate::sparse::products::add_gram;

/// Rows per piece whose cross-products are centred on the piece's own mean before merging.
const PIECE_ROWS: usize = 4096;

/// Checks a block's values are finite and its width is `d`; errors count rows from
/// `first_row`.
fn check_block(x: CsrChunk<'_>, d: usize, first_row: usize) -> Result<()> {
    if x.ncols() != d {
        return Err(PcaError::FeatureMismatch {
            expected: d,
            found: x.ncols(),
        });
    }
    if let Some((row, column, value)) = x.first_non_finite() {
        return Err(PcaError::NonFinite {
            row: first_row + row,
            column,
            value,
        });
    }
    Ok(())
}

/// Per-column mean and centred sum of squares of a block of `n ≥ 1` rows, exact about the
/// block's mean.
pub(crate) fn sparse_column_moments(x: CsrChunk<'_>) -> (Vec<f64>, Vec<f64>) {
    with_csr!(x, x => column_moments_typed(x))
}

fn column_moments_typed<T: Real, I: SparseIndex>(x: CsrRef<'_, T, I>) -> (Vec<f64>, Vec<f64>) {
    let (n, d) = (x.nrows(), x.ncols());
    let mut sum = vec![0.0; d];
    let mut count = vec![0usize; d];
    for (&j, &v) in x.indices().iter().zip(x.values()) {
        sum[j.to_usize()] += v.to_f64();
        count[j.to_usize()] += 1;
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / n as f64).collect();
    let mut sum_sq: Vec<f64> = (0..d)
        .map(|j| (n - count[j]) as f64 * mean[j] * mean[j])
        .collect();
    for (&j, &v) in x.indices().iter().zip(x.values()) {
        let j = j.to_usize();
        sum_sq[j] += (v.to_f64() - mean[j]).powi(2);
    }
    (mean, sum_sq)
}

impl ColumnAccumulator {
    /// Adds a CSR block; a non-finite value is named by its row counted over all blocks.
    pub(crate) fn push_sparse(&mut self, x: CsrChunk<'_>) -> Result<()> {
        check_block(x, self.mean.len(), self.n)?;
        if x.nrows() == 0 {
            return Ok(());
        }
        let (mean_b, ss_b) = sparse_column_moments(x);
        let n_b = x.nrows();
        let (delta, weight) = merge_mean(&mut self.mean, self.n, &mean_b, n_b);
        for ((s, b), dl) in self.sum_sq.iter_mut().zip(&ss_b).zip(&delta) {
            *s += b + weight * dl * dl;
        }
        self.n += n_b;
        Ok(())
    }
}

impl MomentAccumulator {
    /// Adds a CSR block of rows without densifying it: per piece of rows, the cross-products
    /// over the entries less the piece's rank-one mean correction, merged by Chan's update.
    /// Memory: one more D×D matrix. Non-finite values are rejected with their row counted from
    /// the first row ever pushed.
    pub fn push_sparse(&mut self, x: CsrChunk<'_>) -> Result<()> {
        let d = self.n_features();
        check_block(x, d, self.n)?;
        let n = x.nrows();
        let mut gram = vec![0.0; d * d];
        let mut start = 0;
        while start < n {
            let rows = PIECE_ROWS.min(n - start);
            let piece = x.subrows(start, rows);
            let (mean_b, _) = sparse_column_moments(piece);
            gram.iter_mut().for_each(|g| *g = 0.0);
            add_gram(piece, &mut gram);
            let nb = rows as f64;
            let scatter =
                faer::Mat::from_fn(d, d, |a, b| gram[b * d + a] - nb * mean_b[a] * mean_b[b]);
            self.combine(rows, &mean_b, &scatter);
            start += rows;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::products::tests::random_csr;

    #[test]
    fn sparse_blocks_give_the_dense_moments() {
        for (n, d, density) in [(9000, 12, 0.3), (30, 50, 0.05), (2, 3, 1.0)] {
            let (csr, dense) = random_csr(n, d, density, 4);
            let mut want = MomentAccumulator::new(d);
            want.push(dense.as_ref()).unwrap();
            let want = want.finish().unwrap();
            let mut got = MomentAccumulator::new(d);
            let mut columns = ColumnAccumulator::new(d);
            for (start, rows) in [(0, n / 3), (n / 3, n - n / 3)] {
                got.push_sparse(csr.as_chunk().subrows(start, rows))
                    .unwrap();
                columns
                    .push_sparse(csr.as_chunk().subrows(start, rows))
                    .unwrap();
            }
            let got = got.finish().unwrap();
            let scale = want.scatter().norm_max();
            assert_eq!(got.n_samples(), n);
            assert!(
                (got.scatter() - want.scatter()).norm_max() <= 1e-12 * scale,
                "{n}×{d}"
            );
            for j in 0..d {
                assert!((got.mean()[j] - want.mean()[j]).abs() <= 1e-14);
                assert!((columns.mean[j] - want.mean()[j]).abs() <= 1e-14);
                assert!((columns.sum_sq[j] - want.scatter()[(j, j)]).abs() <= 1e-12 * scale);
            }
        }
    }

    #[test]
    fn a_non_finite_entry_is_named_by_its_row_over_all_blocks() {
        let mut x = crate::sparse::csr::Csr::<f64, u32>::new(3);
        x.push_row(&[(0, 1.0)]).unwrap();
        x.push_row(&[(2, f64::NAN)]).unwrap();
        let mut acc = MomentAccumulator::new(3);
        acc.push_sparse(x.as_chunk().subrows(0, 1)).unwrap();
        let err = acc.push_sparse(x.as_chunk().subrows(1, 1)).unwrap_err();
        assert!(
            matches!(
                err,
                PcaError::NonFinite {
                    row: 1,
                    column: 2,
                    ..
                }
            ),
            "{err}"
        );
    }
}
