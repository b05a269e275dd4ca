//! Centring and scaling: the preprocessing every solver shares.

use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef};

use crate::moments::Moments;
use crate::{PcaError, Real, Result, Scaling};

/// Mean, optional scale and the total variance (in scaled units) of a training set.
#[derive(Clone, Debug)]
pub(crate) struct Preprocessing {
    pub mean: Vec<f64>,
    pub scale: Option<Vec<f64>>,
    /// Features whose variance is zero (to rounding); they keep scale 1.
    pub zero_variance: Vec<usize>,
    /// trace(S) in scaled units: the denominator of the explained-variance ratios.
    pub total_variance: f64,
}

impl Preprocessing {
    /// Two passes over `x`: the mean (with a correction pass, so an offset of 1e6 costs nothing),
    /// then the centred sums of squares. Rejects non-finite values, naming row and column.
    pub fn from_data<T: Real>(x: MatRef<'_, T>, scaling: Scaling, ddof: usize) -> Result<Self> {
        let (mean, sum_sq) = column_moments(x, 0)?;
        Ok(Self::from_sums(mean, &sum_sq, x.nrows(), scaling, ddof))
    }

    /// The same from streamed moments: the diagonal of the scatter matrix holds the sums of squares.
    pub fn from_moments(moments: &Moments, scaling: Scaling, ddof: usize) -> Self {
        let scatter = moments.scatter();
        let sum_sq: Vec<f64> = (0..moments.n_features())
            .map(|j| scatter[(j, j)].max(0.0))
            .collect();
        Self::from_sums(
            moments.mean().to_vec(),
            &sum_sq,
            moments.n_samples(),
            scaling,
            ddof,
        )
    }

    pub fn from_sums(
        mean: Vec<f64>,
        sum_sq: &[f64],
        n: usize,
        scaling: Scaling,
        ddof: usize,
    ) -> Self {
        let denom = (n - ddof) as f64;
        let variance: Vec<f64> = sum_sq.iter().map(|ss| ss / denom).collect();
        // A constant feature centres to exact zeros or to rounding noise of its mean.
        let zero_variance: Vec<usize> = (0..mean.len())
            .filter(|&j| variance[j].sqrt() <= 16.0 * f64::EPSILON * mean[j].abs())
            .collect();
        match scaling {
            Scaling::Center => {
                let total_variance = variance.iter().sum();
                Preprocessing {
                    mean,
                    scale: None,
                    zero_variance,
                    total_variance,
                }
            }
            Scaling::Standardize => {
                let mut scale: Vec<f64> = variance.iter().map(|v| v.sqrt()).collect();
                for &j in &zero_variance {
                    scale[j] = 1.0;
                }
                let total_variance = (0..mean.len())
                    .map(|j| variance[j] / (scale[j] * scale[j]))
                    .sum();
                Preprocessing {
                    mean,
                    scale: Some(scale),
                    zero_variance,
                    total_variance,
                }
            }
        }
    }
}

/// `(x − μ) / σ` (σ = 1 when `scale` is `None`) into `out`, of the same shape as `x`, in any
/// layouts.
pub(crate) fn center_scale_into<T: Real>(
    x: MatRef<'_, T>,
    mean: &[f64],
    scale: Option<&[f64]>,
    mut out: MatMut<'_, f64>,
) {
    let (n, d) = (x.nrows(), x.ncols());
    // Row-major on both sides (readers' rows into a row-major block): row by row, in order.
    if x.col_stride() == 1 && out.col_stride() == 1 {
        for i in 0..n {
            let row = x.row(i).try_as_row_major().expect("unit column stride");
            let dst = out.rb_mut().row_mut(i).try_as_row_major_mut();
            let dst = dst.expect("unit column stride").as_slice_mut();
            match scale {
                None => {
                    for ((o, v), m) in dst.iter_mut().zip(row.as_slice()).zip(mean) {
                        *o = v.to_f64() - m;
                    }
                }
                Some(s) => {
                    let values = row.as_slice().iter().zip(mean).zip(s);
                    for (o, ((v, m), s)) in dst.iter_mut().zip(values) {
                        *o = (v.to_f64() - m) / s;
                    }
                }
            }
        }
        return;
    }
    let value = |i: usize, j: usize| {
        let c = x[(i, j)].to_f64() - mean[j];
        scale.map_or(c, |s| c / s[j])
    };
    // Bands of rows keep both sides in cache for row-major input (reading down a column of
    // row-major data would miss it at every value of a wide matrix); any layout is read right.
    const BAND: usize = 32;
    for start in (0..n).step_by(BAND) {
        let rows = BAND.min(n - start);
        for j in 0..d {
            let col = out.rb_mut().col_mut(j).subrows_mut(start, rows);
            let col = col
                .try_as_col_major_mut()
                .expect("columns of a Mat are contiguous");
            for (k, o) in col.as_slice_mut().iter_mut().enumerate() {
                *o = value(start + k, j);
            }
        }
    }
}

/// The first non-finite value of `x` in reading order, as an error naming its place.
pub(crate) fn check_finite<T: Real>(x: MatRef<'_, T>, row_offset: usize) -> Result<()> {
    // Fast scan in memory order; the slow search for the first bad row runs only on failure.
    let all_finite = if x.col_stride() == 1 {
        (0..x.nrows()).all(|i| x.row(i).iter().all(|v| v.to_f64().is_finite()))
    } else {
        (0..x.ncols()).all(|j| x.col(j).iter().all(|v| v.to_f64().is_finite()))
    };
    if all_finite {
        return Ok(());
    }
    for i in 0..x.nrows() {
        for j in 0..x.ncols() {
            let v = x[(i, j)].to_f64();
            if !v.is_finite() {
                return Err(PcaError::NonFinite {
                    row: row_offset + i,
                    column: j,
                    value: v,
                });
            }
        }
    }
    Ok(())
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
        let sums = crate::crossprod::column_sums(x, faer::Par::rayon(0));
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
    crate::simd::dispatch(CentredSums { rows: x, m })
}

struct CentredSums<'a, T> {
    rows: MatRef<'a, T>,
    m: &'a [f64],
}

impl<T: Real> crate::simd::Kernel for CentredSums<'_, T> {
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
