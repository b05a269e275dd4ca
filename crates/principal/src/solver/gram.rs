//! The Gram solver ("transpose trick"): eigenpairs `(g, c)` of the N×N matrix `Xc Xcᵀ` give
//! components `Xcᵀ c / ‖Xcᵀ c‖` and eigenvalues `g / (N − ddof)`. Cost N²·D + N³: wins when
//! N ≪ D (images, genomes). Memory: the data, N² and a block of centred columns.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::reborrow::{IntoConst, ReborrowMut};
use faer::{Accum, Mat, MatMut, MatRef};

use crate::error::Result;
use crate::kernel::parallel::faer_par;
use crate::solver::{DenseReason, EigenRoute, Problem, Spectrum, block_width, top_eigen};

/// Eigenpairs of the covariance from the Gram matrix of the data.
///
/// The data is centred a block of columns at a time into one buffer (about 16 MiB), twice:
/// for `Xc Xcᵀ` and for the lift `Xcᵀ c`; a centred copy of the whole data is never made.
pub fn solve(problem: &Problem<'_>) -> Result<Spectrum> {
    solve_by_blocks(problem, block_width(problem.n_samples()))
}

/// [`solve`] with blocks of `width` columns.
fn solve_by_blocks(problem: &Problem<'_>, width: usize) -> Result<Spectrum> {
    let (n, d) = (problem.n_samples(), problem.n_features());
    let k = problem.n_components;
    let width = width.min(d);
    let mut buffer = Mat::zeros(n, width);
    // Only the lower triangle: all that the eigensolver reads, half the products.
    let mut gram = Mat::zeros(n, n);
    centred_column_blocks(problem, buffer.as_mut(), |start, xs| {
        triangular::matmul(
            gram.as_mut(),
            BlockStructure::TriangularLower,
            if start == 0 {
                Accum::Replace
            } else {
                Accum::Add
            },
            xs,
            BlockStructure::Rectangular,
            xs.transpose(),
            BlockStructure::Rectangular,
            1.0,
            faer_par(),
        );
    });
    let (eigenvalues, coefficients) = top_eigen(
        gram.as_ref(),
        k,
        n.min(d),
        (n - problem.ddof) as f64,
        "gram",
    )?;
    let mut lifted = Mat::zeros(d, k);
    centred_column_blocks(problem, buffer.as_mut(), |start, xs| {
        matmul(
            lifted.as_mut().subrows_mut(start, xs.ncols()),
            Accum::Replace,
            xs.transpose(),
            coefficients.as_ref(),
            1.0,
            faer_par(),
        );
    });
    // Columns with (near-)zero eigenvalues lift to rounding noise; a QR keeps every column
    // orthonormal and orthogonal to the ones before it, and leaves well-separated columns
    // equal to their normalised lift up to sign.
    let q = lifted.qr().compute_thin_Q();
    let mut vectors = q;
    for j in 0..k {
        let dot: f64 = (0..d).map(|i| vectors[(i, j)] * lifted[(i, j)]).sum();
        if dot < 0.0 {
            for i in 0..d {
                vectors[(i, j)] = -vectors[(i, j)];
            }
        }
    }
    Ok(Spectrum {
        eigenvalues,
        vectors,
        report: None,
        eigen_route: Some(EigenRoute::Dense(DenseReason::Gram)),
    })
}

/// Calls `f(first_column, xs)` for consecutive blocks of the data's columns, as wide as
/// `buffer`, each centred (and scaled) into it.
fn centred_column_blocks(
    problem: &Problem<'_>,
    mut buffer: MatMut<'_, f64>,
    mut f: impl FnMut(usize, MatRef<'_, f64>),
) {
    let (d, width) = (problem.n_features(), buffer.ncols());
    for start in (0..d).step_by(width.max(1)) {
        let mut xs = buffer.rb_mut().subcols_mut(0, width.min(d - start));
        problem.centred_into(0, start, xs.rb_mut());
        f(start, xs.into_const());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::tests::assert_blocks_give_the_svd_answer;

    #[test]
    fn blocks_of_columns_give_the_svd_answer() {
        assert_blocks_give_the_svd_answer("gram (columns)", solve_by_blocks);
    }
}
