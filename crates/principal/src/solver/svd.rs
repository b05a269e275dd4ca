//! The SVD solver: thin SVD of the centred data, `Xc = U Σ Vᵀ`; components are the columns of
//! V and the eigenvalues `σ² / (N − ddof)`. Never squares the condition number: the accuracy
//! reference for small or ill-conditioned problems.

use faer::Mat;

use crate::error::{PcaError, Result};
use crate::solver::{Problem, Spectrum};

/// Eigenpairs of the covariance from the thin SVD of the data.
pub fn solve(problem: &Problem<'_>) -> Result<Spectrum> {
    // faer's SVD needs the whole centred matrix.
    let x = problem.centred();
    let (n, d) = (x.nrows(), x.ncols());
    let svd = x.thin_svd().map_err(|e| PcaError::NoConvergence {
        solver: "svd",
        detail: format!("{e:?}"),
    })?;
    let s = svd.S().column_vector();
    let divisor = (n - problem.ddof) as f64;
    let eigenvalues: Vec<f64> = (0..n.min(d)).map(|i| s[i] * s[i] / divisor).collect();
    let v = svd.V();
    let vectors = Mat::from_fn(d, problem.n_components, |i, j| v[(i, j)]);
    Ok(Spectrum {
        eigenvalues,
        vectors,
        report: None,
        eigen_route: None,
    })
}
