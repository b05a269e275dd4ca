//! The covariance solver: `S = Xcᵀ Xc / (N − ddof)`, then a D×D symmetric eigendecomposition.
//!
//! Cost N·D² + D³; wins when N ≫ D. Its streaming form, `solve_moments`, takes moments
//! accumulated by [`crate::MomentAccumulator`] over chunks, threads or machines.

use faer::linalg::matmul::matmul;
use faer::reborrow::IntoConst;
use faer::{Accum, Mat, MatRef, Par};

use super::{block_width, top_eigen, Problem, Spectrum};
use crate::prepare::Preprocessing;
use crate::{Moments, Result};

/// Eigenpairs of the covariance of the data, centred (and scaled) a block of rows at a time
/// into one buffer (about 16 MiB), the blocks' products summed.
pub fn solve(problem: &Problem<'_>) -> Result<Spectrum> {
    solve_by_blocks(problem, block_width(problem.n_features()))
}

/// [`solve`] with blocks of `height` rows.
fn solve_by_blocks(problem: &Problem<'_>, height: usize) -> Result<Spectrum> {
    let (n, d) = (problem.n_samples(), problem.n_features());
    let height = height.min(n);
    let mut buffer = Mat::zeros(height, d);
    let mut scatter = Mat::zeros(d, d);
    for start in (0..n).step_by(height.max(1)) {
        let mut xs = buffer.as_mut().subrows_mut(0, height.min(n - start));
        problem.centred_into(start, 0, xs.as_mut());
        let xs = xs.into_const();
        matmul(
            scatter.as_mut(),
            if start == 0 {
                Accum::Replace
            } else {
                Accum::Add
            },
            xs.transpose(),
            xs,
            1.0,
            Par::rayon(0),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::tests::assert_blocks_give_the_svd_answer;

    #[test]
    fn blocks_of_rows_give_the_svd_answer() {
        assert_blocks_give_the_svd_answer("covariance (rows)", solve_by_blocks);
    }
}
