//! Centring and scaling: the training mean, scale and total variance every solver and the
//! model share, and the centred (scaled) copy of a block of rows.

use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef};

use crate::error::Result;
use crate::moments::Moments;
use crate::moments::columns::column_moments;
use crate::options::Scaling;
use crate::real::Real;

/// Mean, optional scale and the total variance (in scaled units) of a training set.
#[derive(Clone, Debug)]
pub(crate) struct Preprocessing {
    pub(crate) mean: Vec<f64>,
    pub(crate) scale: Option<Vec<f64>>,
    /// Features whose variance is zero (to rounding); they keep scale 1.
    pub(crate) zero_variance: Vec<usize>,
    /// trace(S) in scaled units: the denominator of the explained-variance ratios.
    pub(crate) total_variance: f64,
}

impl Preprocessing {
    /// Two passes over `x`: the mean (with a correction pass, so an offset of 1e6 costs nothing),
    /// then the centred sums of squares. Rejects non-finite values, naming row and column.
    pub(crate) fn from_data<T: Real>(
        x: MatRef<'_, T>,
        scaling: Scaling,
        ddof: usize,
    ) -> Result<Self> {
        let (mean, sum_sq) = column_moments(x, 0)?;
        Ok(Self::from_sums(mean, &sum_sq, x.nrows(), scaling, ddof))
    }

    /// The same from streamed moments: the diagonal of the scatter matrix holds the sums of squares.
    pub(crate) fn from_moments(moments: &Moments, scaling: Scaling, ddof: usize) -> Self {
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

    /// From each feature's mean and centred sum of squares over `n` rows: the variances
    /// (divisor `n − ddof`), the features of zero variance, the scale when standardizing (1 for
    /// those features) and the total variance in scaled units.
    pub(crate) fn from_sums(
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
            Scaling::Centre => {
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
pub(crate) fn centre_scale_into<T: Real>(
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
