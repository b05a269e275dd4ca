//! The two curves of the reconstruction-error figure, which must coincide on training data.
//!
//! With orthonormal components the residual of a reconstruction from the first k codes is
//! orthogonal to what was kept, so (Pythagoras), in centred-and-scaled units,
//!
//! ```text
//! ‖xₙ − x̃ₙ⁽ᵏ⁾‖² = ‖xₙ‖² − Σ_{m≤k} zₙₘ²
//! MSE(k) = (1/N) Σₙ ‖xₙ − x̃ₙ⁽ᵏ⁾‖² = (1/N) (Σₙ ‖xₙ‖² − Σ_{m≤k} Σₙ zₙₘ²)
//! ```
//!
//! so the whole curve costs two kinds of sums, gathered in one pass over the data. On the
//! training data Σₙ zₙₘ² = (N − ddof) λₘ and Σₙ ‖xₙ‖² = (N − ddof) trace(S), hence
//! `MSE(k) = ((N − ddof)/N) Σ_{j>k} λⱼ`, the discarded eigenvalues.
//!
//! Rounding: the subtraction loses what the sums carry, about `ε·√N·D` relative to
//! `Σₙ ‖xₙ‖²` once summed with [`CompensatedSum`] across rows; so each point of the curve is
//! within a few `ε·D·trace(S)` of the exact value, however small the error itself.

/// Mean squared reconstruction error with k = 0, 1, …, M components, from the number of rows
/// N, the total squared norm `Σₙ ‖(xₙ − μ)/σ‖²` of the centred-and-scaled rows and, per
/// component m, `Σₙ zₙₘ²` (the sum of squared codes).
///
/// Entry k is `(Σₙ ‖xₙ‖² − Σ_{m≤k} Σₙ zₙₘ²) / N` (see the module documentation for why).
///
/// ```
/// // Two samples (0, 0) and (2, 2), centred at (1, 1): one component along the diagonal
/// // captures all of it.
/// let curve = principal_report::reconstruction_error_curve(2, 4.0, &[4.0, 0.0]);
/// assert_eq!(curve, [2.0, 0.0, 0.0]);
/// ```
pub fn reconstruction_error_curve(
    n_rows: usize,
    squared_norm_total: f64,
    code_squares: &[f64],
) -> Vec<f64> {
    let n = n_rows.max(1) as f64;
    let mut kept = CompensatedSum::default();
    let mut curve = Vec::with_capacity(code_squares.len() + 1);
    curve.push(squared_norm_total / n);
    for &c in code_squares {
        kept.add(c);
        curve.push((squared_norm_total - kept.value()) / n);
    }
    curve
}

/// `((N − ddof)/N) Σ_{j>k} λⱼ` for k = 0, 1, …, M: the discarded eigenvalues, scaled to the
/// mean squared reconstruction error of the training data.
///
/// The sum beyond M (directions the model did not keep) is `total_variance − Σ_{j≤M} λⱼ`, so
/// `total_variance` must be trace(S).
///
/// ```
/// let curve = principal_report::discarded_variance_curve(5, 1, 10.0, &[6.0, 3.0]);
/// assert_eq!(curve, [8.0, 3.2, 0.8]);
/// ```
pub fn discarded_variance_curve(
    n_samples: usize,
    ddof: usize,
    total_variance: f64,
    explained_variance: &[f64],
) -> Vec<f64> {
    let factor = n_samples.saturating_sub(ddof) as f64 / n_samples.max(1) as f64;
    let mut kept = CompensatedSum::default();
    let mut curve = Vec::with_capacity(explained_variance.len() + 1);
    curve.push(factor * total_variance);
    for &lambda in explained_variance {
        kept.add(lambda);
        curve.push(factor * (total_variance - kept.value()));
    }
    curve
}

/// Neumaier's compensated summation: the sum of many terms to about one rounding, whatever
/// their number.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        // The low-order bits lost by the addition, from whichever operand is larger.
        if self.sum.abs() >= x.abs() {
            self.compensation += (self.sum - t) + x;
        } else {
            self.compensation += (x - t) + self.sum;
        }
        self.sum = t;
    }

    pub(crate) fn value(&self) -> f64 {
        self.sum + self.compensation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensated_sums_keep_what_plain_sums_lose() {
        let mut sum = CompensatedSum::default();
        let mut plain = 0.0;
        for x in [1.0, 1e100, 1.0, -1e100] {
            sum.add(x);
            plain += x;
        }
        assert_eq!(sum.value(), 2.0);
        assert_eq!(plain, 0.0);
    }

    #[test]
    fn with_every_component_kept_the_error_curve_ends_at_zero() {
        let curve = reconstruction_error_curve(4, 10.0, &[6.0, 3.0, 1.0]);
        assert_eq!(curve, [2.5, 1.0, 0.25, 0.0]);
    }
}
