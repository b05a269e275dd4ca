//! The solvers: one file each, one signature, `fn solve(&Problem) -> Result<Spectrum>`.
//!
//! A solver sees data already centred (and scaled, if standardizing) and returns the
//! eigenvalues of the covariance matrix, largest first, with the matching unit eigenvectors.
//! Sorting ties, signs and the choice of the number of components happen in
//! [`crate::PcaModel`], once, for every solver.

use faer::{Mat, MatRef};

pub mod covariance;
pub mod gram;
pub mod svd;

/// What a solver is asked.
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    /// The N×D data, centred and (if standardizing) scaled.
    pub data: MatRef<'a, f64>,
    /// Divide by `N − ddof` for the covariance.
    pub ddof: usize,
    /// How many eigenvectors to return (≤ min(N, D)).
    pub n_components: usize,
}

/// What a solver returns.
#[derive(Clone, Debug)]
pub struct Spectrum {
    /// Eigenvalues of the covariance matrix (variances), non-increasing, clipped at 0. Exact
    /// solvers return all min(N, D) of them.
    pub eigenvalues: Vec<f64>,
    /// D×K matrix whose columns are orthonormal eigenvectors for the first K eigenvalues.
    pub vectors: Mat<f64>,
}

/// The top `k` eigenpairs of the symmetric matrix `a` (only its lower triangle is read),
/// largest first; every eigenvalue is returned (up to `n_values`), divided by `divisor`.
pub(crate) fn top_eigen(
    a: MatRef<'_, f64>,
    k: usize,
    n_values: usize,
    divisor: f64,
    solver: &'static str,
) -> crate::Result<(Vec<f64>, Mat<f64>)> {
    let evd = a
        .self_adjoint_eigen(faer::Side::Lower)
        .map_err(|e| crate::PcaError::NoConvergence { solver, detail: format!("{e:?}") })?;
    let n = a.nrows();
    let s = evd.S().column_vector();
    let values: Vec<f64> = (0..n_values.min(n)).map(|i| (s[n - 1 - i] / divisor).max(0.0)).collect();
    let u = evd.U();
    let vectors = Mat::from_fn(n, k, |i, j| u[(i, n - 1 - j)]);
    Ok((values, vectors))
}
