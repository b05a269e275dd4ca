//! The covariance solver: `S = M / (N − ddof)` from the streamed moments (M the centred
//! scatter matrix `Σ (x − μ)(x − μ)ᵀ`, accumulated by [`crate::MomentAccumulator`] over chunks,
//! threads or machines), then a D×D symmetric eigendecomposition. Cost N·D² + D³ (the products
//! in the accumulator, the eigendecomposition here); wins when N ≫ D, and streams.

use faer::{Mat, MatRef};

use crate::error::Result;
use crate::moments::Moments;
use crate::solver::leading::leading_eigen;
use crate::solver::{DenseReason, EigenRoute, Spectrum, top_eigen};

/// Which eigenvalues [`solve`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eigenvalues {
    /// All min(N, D): what a rule that chooses the number of components reads.
    All,
    /// Only the `n_components` leading ones: all a fixed number of components needs (the
    /// discarded variance is the total less their sum). On a large matrix this lets the solver
    /// take a Krylov–Schur route whose answer is certified (by its residuals, a gap and
    /// a Cholesky factorisation) instead of the whole decomposition, or fall back to it.
    Leading,
}

/// Eigenpairs of the covariance of the data whose `moments` are given: the top `n_components`
/// vectors and all min(N, D) eigenvalues, or only the leading `n_components` (`eigenvalues`).
/// With `scale` (standardizing: each feature's standard deviation), of the correlation-like
/// matrix `M_ij / (σ_i σ_j) / (N − ddof)`.
///
/// This is what every covariance fit runs (in memory or streamed): the moments are accumulated
/// exactly, then decomposed.
///
/// ```
/// use principal::faer::mat;
/// use principal::solver::covariance::{self, Eigenvalues};
/// use principal::MomentAccumulator;
///
/// let x = mat![[2.0, 0.0], [0.0, 1.0], [-2.0, 0.0], [0.0, -1.0]];
/// let mut acc = MomentAccumulator::new(2);
/// acc.push(x.as_ref())?;
/// let spectrum = covariance::solve(&acc.finish()?, None, 1, 2, Eigenvalues::All)?;
/// // Variances 8/3 along the first feature, 2/3 along the second.
/// assert!((spectrum.eigenvalues[0] - 8.0 / 3.0).abs() < 1e-12);
/// assert!((spectrum.eigenvalues[1] - 2.0 / 3.0).abs() < 1e-12);
/// assert!((spectrum.vectors[(0, 0)].abs() - 1.0).abs() < 1e-12);
/// # Ok::<(), principal::PcaError>(())
/// ```
///
/// # Panics
/// When `n_components` exceeds the number of features, `scale` has another length, or the
/// moments have no more than `ddof` samples (the fit checks all three first).
#[track_caller]
pub fn solve(
    moments: &Moments,
    scale: Option<&[f64]>,
    ddof: usize,
    n_components: usize,
    eigenvalues: Eigenvalues,
) -> Result<Spectrum> {
    let (n, d) = (moments.n_samples(), moments.n_features());
    assert!(n > ddof, "{n} samples with ddof {ddof}");
    let scatter = moments.scatter();
    match scale {
        None => from_scatter(scatter, n, ddof, n_components, eigenvalues),
        Some(s) => {
            assert_eq!(s.len(), d, "one scale per feature");
            let scaled = Mat::from_fn(d, d, |i, j| scatter[(i, j)] / (s[i] * s[j]));
            from_scatter(scaled.as_ref(), n, ddof, n_components, eigenvalues)
        }
    }
}

/// Eigenpairs of `scatter / (N − ddof)`: the top `k` vectors, min(N, D) values or `k`.
fn from_scatter(
    scatter: MatRef<'_, f64>,
    n: usize,
    ddof: usize,
    k: usize,
    eigenvalues: Eigenvalues,
) -> Result<Spectrum> {
    let d = scatter.nrows();
    let divisor = (n - ddof) as f64;
    let (eigenvalues, vectors, route) = match eigenvalues {
        Eigenvalues::All => {
            let (values, vectors) = top_eigen(scatter, k, n.min(d), divisor, "covariance")?;
            (values, vectors, EigenRoute::Dense(DenseReason::EveryValue))
        }
        Eigenvalues::Leading => leading_eigen(scatter, k, divisor, "covariance")?,
    };
    Ok(Spectrum {
        eigenvalues,
        vectors,
        report: None,
        eigen_route: Some(route),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moments::MomentAccumulator;
    use crate::real::ChunkRef;
    use crate::solver::tests::{assert_same_spectrum, wide_and_tall_problems};

    /// Moments pushed in chunks of 1, 7 and all rows, in every layout (f64 by columns and by
    /// rows, f32 by rows), give the svd solver's spectrum on wide, tall and rank-deficient
    /// problems, centred and standardized.
    #[test]
    fn moments_in_any_chunks_give_the_svd_answer() {
        for (x, mean, scale) in wide_and_tall_problems() {
            for data in x.chunks() {
                let problem = x.problem(data, &mean, scale.as_deref());
                for size in [1, 7, usize::MAX] {
                    let mut acc = MomentAccumulator::new(problem.n_features());
                    let n = problem.n_samples();
                    for start in (0..n).step_by(size.min(n)) {
                        let rows = size.min(n - start);
                        match data {
                            ChunkRef::F32(m) => acc.push(m.subrows(start, rows)).unwrap(),
                            ChunkRef::F64(m) => acc.push(m.subrows(start, rows)).unwrap(),
                        }
                    }
                    let moments = acc.finish().unwrap();
                    // The data centred on its own mean (f32 data near 1e6 has another one).
                    let own = x.problem(data, moments.mean(), scale.as_deref());
                    let reference = crate::solver::svd::solve(&own).unwrap();
                    let k = problem.n_components;
                    let found = solve(&moments, scale.as_deref(), 1, k, Eigenvalues::All);
                    let what = format!("covariance, chunks of {size}");
                    assert_same_spectrum(&found.unwrap(), &reference, &what);
                }
            }
        }
    }
}
