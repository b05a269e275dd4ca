//! The covariance solver: `S = Xcᵀ Xc / (N − ddof)`, then a D×D symmetric eigendecomposition.
//!
//! Cost N·D² + D³; wins when N ≫ D. Its streaming form, [`solve_moments`], takes moments
//! accumulated by [`crate::MomentAccumulator`] over chunks, threads or machines.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};

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
    let (eigenvalues, vectors) = top_eigen(
        scatter.as_ref(),
        problem.n_components,
        n.min(d),
        (n - problem.ddof) as f64,
        "covariance",
    )?;
    Ok(Spectrum {
        eigenvalues,
        vectors,
        report: None,
    })
}

/// Eigenpairs from streamed moments, scaled as `prep` says.
pub(crate) fn solve_moments(
    moments: &Moments,
    prep: &Preprocessing,
    ddof: usize,
) -> Result<Spectrum> {
    let (n, d) = (moments.n_samples(), moments.n_features());
    let scatter = moments.scatter();
    let scaled = match &prep.scale {
        None => scatter.to_owned(),
        Some(s) => Mat::from_fn(d, d, |i, j| scatter[(i, j)] / (s[i] * s[j])),
    };
    let (eigenvalues, vectors) = top_eigen(
        scaled.as_ref(),
        d.min(n),
        n.min(d),
        (n - ddof) as f64,
        "covariance",
    )?;
    Ok(Spectrum {
        eigenvalues,
        vectors,
        report: None,
    })
}
