//! The solvers: one file each, one signature, `fn solve(&Problem) -> Result<Spectrum>`.
//!
//! Exact solvers (`covariance`, `gram`, `svd`) take a [`Problem`]: the centred data in memory.
//! Iterative solvers (`randomized`, `power`) take an [`IterativeProblem`]: a re-readable
//! [`ChunkSource`] with the training mean and scale, centred chunk by chunk on every pass, so
//! the data never has to fit in memory; their signature is
//! `fn solve(&mut IterativeProblem) -> Result<Spectrum>`.
//!
//! A solver sees data already centred (and scaled, if standardizing) and returns the
//! eigenvalues of the covariance matrix, largest first, with the matching unit eigenvectors.
//! Sorting ties, signs and the choice of the number of components happen in
//! [`crate::PcaModel`], once, for every solver.

use faer::{Mat, MatRef};

pub mod covariance;
pub mod gram;
pub mod power;
pub mod randomized;
mod subspace;

pub use subspace::Centring;
pub mod svd;

use crate::{ChunkSource, IterativeOptions};

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
    /// How an iterative solver got there; `None` for exact solvers.
    pub report: Option<IterationReport>,
}

/// What an iterative solver did and how good its answer is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterationReport {
    /// Passes over the data (each applies `Xsᵀ Xs` once), the first pass for the mean excluded.
    pub passes: usize,
    /// A-posteriori error estimate: `max_m ‖S b_m − λ_m b_m‖ / λ₁` over the kept components.
    /// Each explained variance is within `error_estimate · λ₁` of an exact eigenvalue of S.
    pub error_estimate: f64,
    /// Whether the requested tolerance was met (always true without a tolerance).
    pub converged: bool,
}

/// What an iterative solver is asked: a re-readable source and the training preprocessing.
pub struct IterativeProblem<'a> {
    /// The data, uncentred, chunk by chunk.
    pub source: &'a mut dyn ChunkSource,
    /// Training mean.
    pub mean: &'a [f64],
    /// Training standard deviations when standardizing.
    pub scale: Option<&'a [f64]>,
    /// How chunks are centred (see [`Centring::choose`]).
    pub centring: Centring,
    /// N.
    pub n_samples: usize,
    /// Divide by `N − ddof` for the covariance.
    pub ddof: usize,
    /// How many eigenpairs to return.
    pub n_components: usize,
    /// Seed, tolerance and iteration limits.
    pub options: IterativeOptions,
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
    let evd =
        a.self_adjoint_eigen(faer::Side::Lower)
            .map_err(|e| crate::PcaError::NoConvergence {
                solver,
                detail: format!("{e:?}"),
            })?;
    let n = a.nrows();
    let s = evd.S().column_vector();
    let values: Vec<f64> = (0..n_values.min(n))
        .map(|i| (s[n - 1 - i] / divisor).max(0.0))
        .collect();
    let u = evd.U();
    let vectors = Mat::from_fn(n, k, |i, j| u[(i, n - 1 - j)]);
    Ok((values, vectors))
}
