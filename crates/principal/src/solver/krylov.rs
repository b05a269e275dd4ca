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
use crate::solver::iterative::{Ritz, append_cols, gaussian, orthonormalise, remove_along};
use crate::solver::{IterationReport, IterativeProblem, Spectrum, top_eigen};

/// Singular values of the remainder at most this fraction of `‖W‖_F` are dropped: their
/// directions are rounding (a saturated space) or carry nothing the tolerance can see.
pub(crate) const NEGLIGIBLE: f64 = 1e-12;

/// The basis of [`block_lanczos`]: at most `cap` columns (at most D), and `keep` Ritz vectors
/// (at least the block's width) kept when it restarts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub keep: usize,
    pub cap: usize,
}

/// The top `problem.n_components` eigenpairs from the orthonormal start block `start` (of any
/// width: blocks narrower than k are the block Lanczos of `randomized::lanczos_shape`), at most
/// `planned` passes (or more, until the basis holds k columns), stopping when the tolerance (if
/// any) is met or the space is invariant; the basis restarts from `shape.keep` Ritz vectors when
/// a block would take it past `shape.cap` columns.
pub(crate) fn block_lanczos(
    problem: &mut IterativeProblem<'_>,
    start: Mat<f64>,
    planned: usize,
    shape: Shape,
) -> Result<Spectrum> {
    let k = problem.n_components;
    let (d, width) = (start.nrows(), start.ncols());
    let Shape { keep, cap } = shape;
    let cap = cap.max(k + width).min(d).max(width);
    let keep = keep.max(width).min(cap);
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
        let (mut next, lost) = new_directions(basis.as_ref(), rest.as_ref(), scale, d - m)?;
        dropped = dropped.hypot(lost);
        // R = Q_nextᵀ W: how the newest block's image leaves the space.
        let r = next.transpose() * &rest;
        drop(rest);
        if next.ncols() == 0 && m < k.min(d) {
            // An invariant space of fewer than k dimensions (a block narrower than an
            // eigenvalue's multiplicity, or a start without part of the spectrum): new random
            // directions orthogonal to it, as ARPACK restarts (S maps the space into itself,
            // so T's new columns come from their own pass, and R of the old block is zero).
            let fresh = gaussian(d, width.min(d - m), problem.options.seed ^ passes as u64);
            next = new_directions(basis.as_ref(), fresh.as_ref(), fresh.norm_l2(), d - m)?.0;
        }
        let invariant = next.ncols() == 0;
        let restart = m + next.ncols() > cap;
        if m >= k.min(d) && (tolerance.is_some() || passes >= planned || invariant || restart) {
            let want = k.max(keep).min(m);
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
                // Thick restart: the leading `keep` Ritz vectors K = Q y (k and more: the pairs
                // just past k converge with them), with T = diag(θ) on them; S K leaves span(K)
                // only along Q_next (the relation), which comes next.
                let kept = basis.as_ref() * y.as_ref().subcols(0, want);
                basis.truncate(d, 0);
                append_cols(&mut basis, kept.as_ref());
                t = Mat::zeros(cap, cap);
                for (i, &theta) in values[..want].iter().enumerate() {
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
    use crate::solver::randomized::{LANCZOS_EXTRA, LANCZOS_WIDTH, lanczos_shape};
    use crate::sparse::products::tests::{grouped_csr, random_csr};

    /// The configuration sparse fits to a tolerance run (blocks of 16 columns, k + 30 Ritz
    /// vectors kept at restarts, a basis of k + 30 + 128 columns, so several restarts here)
    /// finds the top k eigenpairs of a sparse matrix whose spectrum decays slowly (random
    /// entries: a Marchenko–Pastur edge of nearly equal eigenvalues, under three clear
    /// components) to the tolerance, against the exact eigendecomposition of the dense
    /// covariance: every returned pair's residual `‖C v − λ v‖` within the tolerance of λ₁,
    /// every eigenvalue within the error estimate of the exact one, and the clear components'
    /// subspace to 1e-6.
    #[test]
    fn narrow_blocks_with_thick_restarts_find_the_top_eigenpairs_to_the_tolerance() {
        let (n, d, k, clear, tolerance) = (1500, 1000, 40, 3, 1e-6);
        // Three groups of rows, each with its own raised columns among the first 60.
        let (csr, dense) = grouped_csr((n, d, 0.05, 41), 3, 60, 3.0);
        let options = IterativeOptions {
            tolerance: Some(tolerance),
            ..Default::default()
        };
        let (width, shape) = lanczos_shape(&options, k, n, d).expect("narrow blocks");
        assert_eq!((width, shape.keep), (LANCZOS_WIDTH, k + LANCZOS_EXTRA));
        let got = PcaBuilder::new()
            .components(ComponentCount::Fixed(k))
            .solver(Solver::Randomized)
            .iterative(options)
            .build()
            .unwrap()
            .fit_sparse(csr.as_chunk())
            .unwrap();
        let report = got.iteration_report().unwrap();
        assert!(
            report.converged && report.error_estimate <= tolerance,
            "{report:?}"
        );
        // More passes than one basis holds: the thick restarts were taken.
        assert!(report.passes * width > shape.cap, "{report:?}");
        // The exact answer: the dense covariance and its eigendecomposition.
        let mean = Mat::<f64>::from_fn(1, d, |_, j| {
            (0..n).map(|i| dense[(i, j)]).sum::<f64>() / n as f64
        });
        let centred = Mat::<f64>::from_fn(n, d, |i, j| dense[(i, j)] - mean[(0, j)]);
        let c = centred.transpose() * &centred / faer::Scale((n - 1) as f64);
        let exact = c.self_adjoint_eigen(faer::Side::Lower).unwrap();
        let s = exact.S().column_vector();
        let want: Vec<f64> = (0..=k).map(|i| s[d - 1 - i]).collect();
        assert!(
            want[k - 1] / want[k] < 1.02,
            "slowly decaying: {:?}",
            &want[k - 1..]
        );
        let (values, components) = (got.explained_variance(), got.components());
        for i in 0..k {
            assert!(
                (values[i] - want[i]).abs() <= report.error_estimate * want[0],
                "λ{i}: {} against {}",
                values[i],
                want[i]
            );
            let v = components.row(i).transpose().to_owned();
            let residual = (&c * &v - &v * faer::Scale(values[i])).norm_l2();
            assert!(residual <= tolerance * want[0], "pair {i}: {residual:e}");
        }
        let u = exact.U();
        let top = Mat::<f64>::from_fn(d, clear, |r, j| u[(r, d - 1 - j)]);
        let mine = components.subrows(0, clear).transpose().to_owned();
        let sin = (&mine - &top * (top.transpose() * &mine)).norm_l2();
        assert!(sin < 1e-6, "clear components: {sin:e}");
    }

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
