//! Block Krylov for sparse rows: block Lanczos with full reorthogonalisation and thick
//! restart, its Rayleigh–Ritz matrix and residuals kept from the Lanczos relation instead of
//! from the images `S Q` of the whole basis.
//!
//! With `Q` the orthonormal basis of the Krylov space, `S = Xsᵀ Xs` and the newest block
//! `Q_new`, every pass gives `W = S Q_new` and
//!
//! ```text
//! S Q = Q T + Q_next R E_newᵀ + E,     T = Qᵀ S Q,   R = Q_nextᵀ W,   ‖E‖ ≤ e (dropped)
//! ```
//!
//! (each older block's image lies in the space by construction: the next block was made of
//! what it left). So `T` grows by the new block's column `Qᵀ W` alone (m·b·D multiply-adds a
//! pass instead of m²·D for `Qᵀ S Q` and m·k·D to lift every Ritz pair), and the residual of a
//! Ritz pair `(θ, y)` of `T` is `‖R y_new‖` (plus at most `e`), as ARPACK counts it: the images
//! of the basis are never stored (the old solver's second D × m matrix). Directions of the
//! remainder `(I − Q Qᵀ) W` whose singular values are below [`NEGLIGIBLE`] of `‖W‖` are dropped
//! (their norm counts in `e`): when all are, the space is invariant and Rayleigh–Ritz on it is
//! exact — a wide matrix of few rows reaches that after two passes, where the old solver took
//! a Householder QR of `[Q | W]` (D × 2b) every pass until its planned count.
//!
//! Used by the randomized solver's block Krylov method for sparse rows; dense rows keep
//! `randomized`'s own loop (their models unchanged to the bit).

use faer::{Mat, MatRef};

use crate::error::{PcaError, Result};
use crate::solver::iterative::{Ritz, append_cols, orthonormalise, remove_along};
use crate::solver::{IterationReport, IterativeProblem, Spectrum, top_eigen};

/// Singular values of the remainder at most this fraction of `‖W‖_F` are dropped: their
/// directions are rounding (a saturated space) or carry nothing the tolerance can see.
pub(crate) const NEGLIGIBLE: f64 = 1e-12;

/// The top `problem.n_components` eigenpairs from the orthonormal start block `start`, at most
/// `planned` passes, stopping when the tolerance (if any) is met or the space is invariant.
pub(crate) fn block_lanczos(
    problem: &mut IterativeProblem<'_>,
    start: Mat<f64>,
    planned: usize,
) -> Result<Spectrum> {
    let k = problem.n_components;
    let (d, width) = (start.nrows(), start.ncols());
    let cap = d.min(10 * width).max(width);
    let tolerance = problem.options.tolerance;
    // The basis grows in place within room for `cap` columns; T is kept cap × cap.
    let mut basis = Mat::<f64>::with_capacity(d, cap);
    append_cols(&mut basis, start.as_ref());
    let mut t = Mat::<f64>::zeros(cap, cap);
    let mut newest = 0..width;
    // √(Σ e²) of the dropped remainders: a bound on what the relation leaves out.
    let mut dropped = 0.0f64;
    let mut passes = 0;
    loop {
        let m = basis.ncols();
        let w = problem.apply(basis.as_ref().subcols(newest.start, newest.len()))?;
        passes += 1;
        // T's new columns, Qᵀ W, by Gram–Schmidt once; `rest` is what W leaves of the space
        // (W itself is not kept: R = Q_nextᵀ W = Q_nextᵀ rest, as Q_next ⊥ Q). Its rounding
        // along the basis (about ε‖W‖) changes T by as little; the new directions taken from it
        // are made orthogonal to the basis again (`new_directions`), which is the second
        // Gram–Schmidt of "twice is enough", on unit vectors: a second pass on W as well
        // (each pass 2·m·b·D multiply-adds, a third of the basis work) changed nothing the
        // products could see.
        let scale = w.norm_l2();
        let mut rest = w;
        let along = remove_along(basis.as_ref(), rest.as_mut());
        for (c, j) in newest.clone().enumerate() {
            for i in 0..m {
                let v = if newest.contains(&i) {
                    0.5 * (along[(i, c)] + along[(j, i - newest.start)])
                } else {
                    along[(i, c)]
                };
                t[(i, j)] = v;
                t[(j, i)] = v;
            }
        }
        let (next, lost) = new_directions(basis.as_ref(), rest.as_ref(), scale, d - m)?;
        dropped = dropped.hypot(lost);
        // R = Q_nextᵀ W: how the newest block's image leaves the space.
        let r = next.transpose() * &rest;
        drop(rest);
        let invariant = next.ncols() == 0;
        let restart = m + next.ncols() > cap;
        if tolerance.is_some() || passes >= planned || invariant || restart {
            let want = k.max(width).min(m);
            let (values, y) =
                top_eigen(t.as_ref().submatrix(0, 0, m, m), want, m, 1.0, "randomized")?;
            let residuals: Vec<f64> = (0..want)
                .map(|i| {
                    let y_new = y.as_ref().submatrix(newest.start, i, newest.len(), 1);
                    (&r * y_new).norm_l2() + dropped
                })
                .collect();
            let top = values[0].max(f64::MIN_POSITIVE);
            let estimate = residuals[..k].iter().fold(0.0f64, |a, &r| a.max(r / top));
            let met = tolerance.is_some_and(|t| estimate <= t);
            if met || passes >= planned || invariant {
                let vectors = basis.as_ref() * y.as_ref().subcols(0, k);
                let report = IterationReport {
                    passes,
                    error_estimate: estimate,
                    converged: invariant || tolerance.is_none_or(|t| estimate <= t),
                };
                let ritz = Ritz {
                    values,
                    vectors,
                    residuals,
                };
                return Ok(problem.spectrum(ritz, k, report));
            }
            if restart {
                // Thick restart: the leading Ritz vectors K = Q y, with T = diag(θ) on them;
                // S K leaves span(K) only along Q_next (the relation), which comes next.
                let kept = basis.as_ref() * y.as_ref().subcols(0, width);
                basis.truncate(d, 0);
                append_cols(&mut basis, kept.as_ref());
                t = Mat::zeros(cap, cap);
                for (i, &theta) in values[..width].iter().enumerate() {
                    t[(i, i)] = theta;
                }
            }
        }
        let m = basis.ncols();
        newest = m..m + next.ncols();
        append_cols(&mut basis, next.as_ref());
    }
}

/// The orthonormal directions of `rest` (the remainder of a block `W` orthogonal to the
/// orthonormal `basis`) whose singular values are over [`NEGLIGIBLE`] of `scale` (`‖W‖_F`),
/// at most `room` of them,
/// made orthogonal to the basis once more (a direction of small singular value carries the
/// rounding of `w` divided by it); and the norm of what was dropped.
fn new_directions(
    basis: MatRef<'_, f64>,
    rest: MatRef<'_, f64>,
    scale: f64,
    room: usize,
) -> Result<(Mat<f64>, f64)> {
    let d = rest.nrows();
    // Singular vectors of the tall remainder as Q₁ times those of its small R (the SVD of
    // the D × b matrix itself took 17 s at D = 200,000, against a QR's fraction of a second).
    let qr = rest.qr();
    let svd = qr.thin_R().svd().map_err(|e| PcaError::NoConvergence {
        solver: "randomized",
        detail: format!("the SVD of a Krylov block's remainder: {e:?}"),
    })?;
    let sigma = svd.S().column_vector();
    let floor = NEGLIGIBLE * scale;
    let kept = (0..sigma.nrows())
        .take_while(|&i| sigma[i] > floor)
        .count()
        .min(room);
    let lost = (kept..sigma.nrows())
        .map(|i| sigma[i] * sigma[i])
        .sum::<f64>()
        .sqrt();
    if kept == 0 {
        return Ok((Mat::zeros(d, 0), lost));
    }
    let mut next = qr.compute_thin_Q() * svd.U().subcols(0, kept);
    remove_along(basis, next.as_mut());
    Ok((orthonormalise(next.as_ref()), lost))
}

#[cfg(test)]
mod tests {
    use faer::Mat;

    use crate::options::{ComponentCount, IterativeOptions, Scaling, Solver};
    use crate::params::PcaBuilder;
    use crate::sparse::products::tests::random_csr;

    /// A wide sparse matrix of few rows (rank at most N − 1 once centred, below the block of
    /// N columns): the Krylov space is invariant after two passes, and the fit stops there with
    /// the exact answer, though 20 more passes were asked for (the old loop made all of them,
    /// each with a Householder QR of D × 2N).
    #[test]
    fn a_saturated_krylov_space_stops_early_with_the_exact_answer() {
        let (n, d, k) = (12, 4000, 5);
        let (csr, dense) = random_csr(n, d, 0.02, 31);
        for scaling in [Scaling::Centre, Scaling::Standardize] {
            let builder = PcaBuilder::new()
                .components(ComponentCount::Fixed(k))
                .scaling(scaling);
            let exact = builder.clone().solver(Solver::Svd).build().unwrap();
            let want = exact.fit(dense.as_ref()).unwrap();
            let params = builder
                .clone()
                .solver(Solver::Randomized)
                .iterative(IterativeOptions {
                    power_iterations: Some(20),
                    ..Default::default()
                })
                .build()
                .unwrap();
            let got = params.fit_sparse(csr.as_chunk()).unwrap();
            let report = got.iteration_report().unwrap();
            assert!(report.passes <= 2, "{scaling:?}: {} passes", report.passes);
            assert!(report.converged, "{scaling:?}");
            assert!(
                report.error_estimate < 1e-12,
                "{scaling:?}: {:e}",
                report.error_estimate
            );
            let top = want.explained_variance()[0];
            for (a, b) in want
                .explained_variance()
                .iter()
                .zip(got.explained_variance())
            {
                assert!((a - b).abs() < 1e-12 * top, "{scaling:?}: {a} against {b}");
            }
            let gap = (want.components() - got.components()).norm_max();
            assert!(gap < 1e-10, "{scaling:?}: components {gap:e}");
            let _: &Mat<f64> = &dense;
        }
    }
}
