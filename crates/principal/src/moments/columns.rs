//! Per-feature moments only (count, mean, centred sum of squares): the cheap first pass of
//! the iterative solvers, O(N·D) instead of the accumulator's O(N·D²), and the mean and scale
//! of data in memory.

use faer::MatRef;

use crate::collective::{Collective, Stage, agree, mean_across};
use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::kernel::scan::{check_finite, column_sums};
use crate::kernel::simd::{Kernel, dispatch};
use crate::moments::merge::merge_mean;
use crate::real::{ChunkRef, Real};

/// Per-feature count, mean and centred sum of squares: the cheap first pass of the iterative
/// solvers, O(N·D) instead of the O(N·D²) of [`crate::MomentAccumulator`]. Same pairwise update.
#[derive(Clone, Debug)]
pub(crate) struct ColumnAccumulator {
    pub(crate) n: usize,
    pub(crate) mean: Vec<f64>,
    pub(crate) sum_sq: Vec<f64>,
}

impl ColumnAccumulator {
    /// No rows yet, for rows of `n_features` values.
    pub(crate) fn new(n_features: usize) -> Self {
        ColumnAccumulator {
            n: 0,
            mean: vec![0.0; n_features],
            sum_sq: vec![0.0; n_features],
        }
    }

    /// Adds a chunk as a source hands it out.
    pub(crate) fn push_chunk(&mut self, chunk: ChunkRef<'_>) -> Result<()> {
        match chunk {
            ChunkRef::F32(m) => self.push(m),
            ChunkRef::F64(m) => self.push(m),
        }
    }

    /// Adds a chunk of rows; a non-finite value is named by its row counted over all chunks.
    pub(crate) fn push<T: Real>(&mut self, chunk: MatRef<'_, T>) -> Result<()> {
        if chunk.ncols() != self.mean.len() {
            return Err(PcaError::FeatureMismatch {
                expected: self.mean.len(),
                found: chunk.ncols(),
            });
        }
        if chunk.nrows() == 0 {
            return Ok(());
        }
        // Vectorised passes in memory order (a column at a time would stride through the chunk).
        let (mean_b, ss_b) = column_moments(chunk, self.n)?;
        let n_b = chunk.nrows();
        let (delta, weight) = merge_mean(&mut self.mean, self.n, &mean_b, n_b);
        for ((s, b), dl) in self.sum_sq.iter_mut().zip(&ss_b).zip(&delta) {
            *s += b + weight * dl * dl;
        }
        self.n += n_b;
        Ok(())
    }
}

impl ColumnAccumulator {
    /// Every rank's column moments combined, on every rank (the same bits everywhere), after
    /// the agreement on each rank's outcome: one sum of `s_r + n_r δ_r²` per feature, as the
    /// moment accumulator's reduction does for the whole matrix.
    pub(crate) fn reduce(
        local: Result<ColumnAccumulator>,
        collective: &dyn Collective,
    ) -> Result<ColumnAccumulator> {
        let (acc, outcome) = match local {
            Ok(acc) => {
                let n = acc.n;
                (Some(acc), Ok(n))
            }
            Err(e) => (None, Err(e)),
        };
        let counts = agree(collective, Stage::Columns, outcome)?;
        let mut acc = acc.expect("the agreement fails on a rank whose own work failed");
        if collective.size() == 1 {
            return Ok(acc);
        }
        let (n, mean, delta) = mean_across(collective, &counts, &acc.mean);
        let own = acc.n as f64;
        for (s, dl) in acc.sum_sq.iter_mut().zip(&delta) {
            *s += own * dl * dl;
        }
        collective.sum(&mut acc.sum_sq);
        acc.n = n;
        acc.mean = mean;
        Ok(acc)
    }
}

/// Per-feature mean and centred sum of squares of `x`, in two passes: the mean with a
/// correction pass (so an offset of 1e6 costs nothing), then the sums of squares about it.
/// Non-finite values are rejected, their row counted from `first_row`.
pub(crate) fn column_moments<T: Real>(
    x: MatRef<'_, T>,
    first_row: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (n, d) = (x.nrows(), x.ncols());
    let nf = n as f64;
    if x.col_stride() == 1 && n > 0 {
        // Row-major: both passes in memory order, vectorised.
        let sums = column_sums(x, faer_par());
        if sums.iter().any(|s| !s.is_finite()) {
            check_finite(x, first_row)?;
        }
        let rough: Vec<f64> = sums.iter().map(|s| s / nf).collect();
        let (correction, ss) = centred_sums(x, &rough);
        let mut mean = vec![0.0; d];
        let mut sum_sq = vec![0.0; d];
        for j in 0..d {
            let delta = correction[j] / nf;
            mean[j] = rough[j] + delta;
            sum_sq[j] = (ss[j] - correction[j] * delta).max(0.0);
        }
        return Ok((mean, sum_sq));
    }
    let mut mean = vec![0.0; d];
    let mut sum_sq = vec![0.0; d];
    for j in 0..d {
        let col = x.col(j);
        let mut sum = 0.0;
        for i in 0..n {
            let v = col[i].to_f64();
            if !v.is_finite() {
                // Report the first bad value in reading order (row by row).
                check_finite(x, first_row)?;
            }
            sum += v;
        }
        let rough = sum / nf;
        let (mut correction, mut ss) = (0.0, 0.0);
        for i in 0..n {
            let c = col[i].to_f64() - rough;
            correction += c;
            ss += c * c;
        }
        // Centred about `rough`; shift the sum of squares to the corrected mean.
        let delta = correction / nf;
        mean[j] = rough + delta;
        sum_sq[j] = (ss - correction * delta).max(0.0);
    }
    Ok((mean, sum_sq))
}

/// Per-feature `Σ(x − m)` and `Σ(x − m)²` of row-major `x`, on two threads for large inputs.
fn centred_sums<T: Real>(x: MatRef<'_, T>, m: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = x.nrows();
    if n >= 1024 {
        let half = n / 2;
        let ((mut c, mut s), (c2, s2)) = rayon::join(
            || centred_sums(x.subrows(0, half), m),
            || centred_sums(x.subrows(half, n - half), m),
        );
        c.iter_mut().zip(&c2).for_each(|(a, b)| *a += b);
        s.iter_mut().zip(&s2).for_each(|(a, b)| *a += b);
        return (c, s);
    }
    dispatch(CentredSums { rows: x, m })
}

struct CentredSums<'a, T> {
    rows: MatRef<'a, T>,
    m: &'a [f64],
}

impl<T: Real> Kernel for CentredSums<'_, T> {
    type Output = (Vec<f64>, Vec<f64>);
    #[inline(always)]
    fn run(self) -> (Vec<f64>, Vec<f64>) {
        let d = self.m.len();
        let (mut correction, mut ss) = (vec![0.0; d], vec![0.0; d]);
        for i in 0..self.rows.nrows() {
            let row = self.rows.row(i).try_as_row_major().expect("row-major");
            let sums = correction.iter_mut().zip(ss.iter_mut()).zip(self.m);
            for ((c, s), (v, m)) in sums.zip(row.as_slice()).map(|(a, v)| (a.0, (v, a.1))) {
                let y = v.to_f64() - m;
                *c += y;
                *s += y * y;
            }
        }
        (correction, ss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moments::tests::{moments_of, tall};

    /// The iterative solvers' first pass: means and centred sums of squares over chunks, in
    /// both storage orders, equal the moments' diagonal under an offset of 1e6; a non-finite
    /// value is named by its row counted over all chunks.
    #[test]
    fn column_moments_over_chunks_match_the_scatter_diagonal() {
        let x = tall(5000, 4, 6, 1e6);
        let want = moments_of(x.as_ref(), 5000);
        let rows = x.transpose().to_owned();
        for view in [x.as_ref(), rows.as_ref().transpose()] {
            let mut acc = ColumnAccumulator::new(4);
            for start in (0..5000).step_by(1300) {
                let len = 1300.min(5000 - start);
                acc.push(view.subrows(start, len)).unwrap();
            }
            assert_eq!(acc.n, 5000);
            for j in 0..4 {
                let (m, s) = (want.mean()[j], want.scatter()[(j, j)]);
                assert!((acc.mean[j] - m).abs() <= 1e-15 * m.abs(), "mean {j}");
                assert!(
                    (acc.sum_sq[j] - s).abs() <= 1e-11 * s,
                    "{} vs {s}",
                    acc.sum_sq[j]
                );
            }
        }
        let mut bad = x.clone();
        bad[(1400, 2)] = f64::NAN;
        let bad_rows = bad.transpose().to_owned();
        for view in [bad.as_ref(), bad_rows.as_ref().transpose()] {
            let mut acc = ColumnAccumulator::new(4);
            acc.push(view.subrows(0, 1000)).unwrap();
            let err = acc.push(view.subrows(1000, 4000)).unwrap_err();
            assert!(err.to_string().contains("row 1400"), "{err}");
        }
    }
}
