//! The covariance solver: `S = Xcᵀ Xc / (N − ddof)`, then a D×D symmetric eigendecomposition.
//!
//! Cost N·D² + D³; wins when N ≫ D. Its streaming form, [`solve_moments`], takes moments
//! accumulated by [`crate::MomentAccumulator`] over chunks, threads or machines.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};

use super::{top_eigen, Problem, Spectrum};
use crate::prepare::Preprocessing;
use crate::{Moments, Result};

/// Eigenpairs of the covariance of the (centred, scaled) data.
pub fn solve(problem: &Problem<'_>) -> Result<Spectrum> {
    let x = problem.data;
    let (n, d) = (x.nrows(), x.ncols());
    let mut scatter = Mat::zeros(d, d);
    matmul(
        scatter.as_mut(),
        Accum::Replace,
        x.transpose(),
        x,
        1.0,
        Par::rayon(0),
    );
    from_scatter(scatter.as_ref(), n, problem.ddof, problem.n_components)
}

/// Eigenpairs of `scatter / (N − ddof)`: the top `k` vectors, min(N, D) values.
fn from_scatter(scatter: MatRef<'_, f64>, n: usize, ddof: usize, k: usize) -> Result<Spectrum> {
    let d = scatter.nrows();
    let (eigenvalues, vectors) = top_eigen(scatter, k, n.min(d), (n - ddof) as f64, "covariance")?;
    Ok(Spectrum {
        eigenvalues,
        vectors,
        report: None,
    })
}

/// Eigenpairs from streamed moments, scaled as `prep` says: the top `k` vectors, every value.
pub(crate) fn solve_moments(
    moments: &Moments,
    prep: &Preprocessing,
    ddof: usize,
    k: usize,
) -> Result<Spectrum> {
    let (n, d) = (moments.n_samples(), moments.n_features());
    let scatter = moments.scatter();
    match &prep.scale {
        None => from_scatter(scatter, n, ddof, k),
        Some(s) => {
            let scaled = Mat::from_fn(d, d, |i, j| scatter[(i, j)] / (s[i] * s[j]));
            from_scatter(scaled.as_ref(), n, ddof, k)
        }
    }
}
