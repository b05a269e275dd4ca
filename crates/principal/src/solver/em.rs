//! Expectation–maximization for probabilistic PCA (Tipping & Bishop 1999; Roweis 1998), one
//! pass over the data per iteration, so it streams as the other iterative solvers do.
//!
//! With S the covariance, W (D×k) the loadings, σ² the noise variance and M = WᵀW + σ²I, the
//! E and M steps over the whole data set need only S W (one pass), in closed form (Tipping &
//! Bishop, eqs. 29–30):
//!
//! - W' = S W (σ²I + M⁻¹ Wᵀ S W)⁻¹,
//! - σ²' = (tr S − tr(S W M⁻¹ W'ᵀ)) / D.
//!
//! They converge to the maximum-likelihood model: W = U_k (Λ_k − σ²I)^{1/2} R for some rotation
//! R, and σ² the mean of the D − k discarded eigenvalues. W' is S W times a k×k matrix, so the
//! span of W moves as subspace iteration's does, at the same rate (λ_{k+1}/λ_k per pass).
//! Every iteration orthonormalises W (W = Q R) and takes the Rayleigh–Ritz pairs of span(Q)
//! from the same pass (S W = S Q R): the stopping rule is the a-posteriori residual estimate
//! of the other iterative solvers, and the components are those Ritz vectors.

use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef, Side};

use crate::error::Result;
use crate::solver::iterative::{DEFAULT_TOLERANCE, Ritz, gaussian};
use crate::solver::{IterationReport, IterativeProblem, Spectrum};

/// The top `n_components` eigenpairs of the covariance by EM for probabilistic PCA.
pub fn solve(problem: &mut IterativeProblem<'_>) -> Result<Spectrum> {
    let k = problem.n_components;
    let (ritz, report) = iterate(problem, |_, _| {})?;
    Ok(problem.spectrum(ritz, k, report))
}

/// Runs EM to the tolerance; `model` sees the loadings W and the noise variance σ² (in
/// covariance units) that every pass starts from. Returns the Rayleigh–Ritz pairs of the last
/// span(W) and the report.
fn iterate(
    problem: &mut IterativeProblem<'_>,
    mut model: impl FnMut(&Mat<f64>, f64),
) -> Result<(Ritz, IterationReport)> {
    let d = problem.mean.len();
    let k = problem.n_components;
    let opts = problem.options;
    // Without a tolerance, the power method's: EM's span converges as power iteration's.
    let tolerance = opts.tolerance.unwrap_or(DEFAULT_TOLERANCE);
    let divisor = (problem.n_samples - problem.ddof) as f64;
    let trace = problem.total_variance;
    let mut w = gaussian(d, k, opts.seed);
    // A start that explains nothing: all the variance is noise.
    let mut noise = trace / d as f64;
    let mut passes = 0;
    let mut degenerate = false;
    loop {
        model(&w, noise);
        let qr = w.qr();
        let (q, r) = (qr.compute_thin_Q(), qr.thin_R().to_owned());
        let step = problem.step(q.as_ref(), k, "em")?;
        passes += 1;
        if step.estimate <= tolerance || passes >= opts.max_iterations {
            let report = IterationReport {
                passes,
                error_estimate: step.estimate,
                converged: step.estimate <= tolerance,
            };
            return Ok((step.ritz, report));
        }
        // S Q, and S W = S Q R (the pass gave Xsᵀ Xs Q, the scatter, not yet divided).
        let sq = step.w * (1.0 / divisor);
        let sw = &sq * &r;
        let update = if degenerate {
            None
        } else {
            em_update(w.as_ref(), sw.as_ref(), noise, trace)
        };
        match update {
            Some((next, next_noise)) => (w, noise) = (next, next_noise),
            // M or σ²I + M⁻¹WᵀSW singular: the data has fewer than k directions of variance
            // and σ² reached 0, where the model is degenerate. From then on, subspace
            // iteration (W ← S Q, orthonormalised on the next pass), whose span EM shares.
            None => (w, noise, degenerate) = (sq, 0.0, true),
        }
    }
}

/// One E and M step from S W: the next W and σ², or `None` when a k×k system is singular.
fn em_update(
    w: MatRef<'_, f64>,
    sw: MatRef<'_, f64>,
    noise: f64,
    trace: f64,
) -> Option<(Mat<f64>, f64)> {
    let (d, k) = (w.nrows(), w.ncols());
    let identity = Mat::<f64>::identity(k, k);
    let m = w.transpose() * w + &identity * noise;
    let m_llt = m.llt(Side::Lower).ok()?;
    // M⁻¹ WᵀSW, then the M step's k×k matrix σ²I + M⁻¹WᵀSW.
    let wt_sw = w.transpose() * sw;
    let inner = &identity * noise + m_llt.solve(&wt_sw);
    // W' = S W inner⁻¹: W'ᵀ = inner⁻ᵀ (S W)ᵀ.
    let next = inner
        .transpose()
        .partial_piv_lu()
        .solve(sw.transpose())
        .transpose()
        .to_owned();
    // tr(S W M⁻¹ W'ᵀ) = tr(M⁻¹ W'ᵀ S W).
    let explained = m_llt.solve(next.transpose() * sw);
    let kept: f64 = (0..k).map(|i| explained[(i, i)]).sum();
    let next_noise = ((trace - kept) / d as f64).max(0.0);
    let finite = next.col_iter().all(|c| c.iter().all(|v| v.is_finite()));
    (finite && next_noise.is_finite()).then_some((next, next_noise))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::InMemory;
    use crate::options::IterativeOptions;
    use crate::solver::Centring;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Data with three strong directions and isotropic noise (offset 1e3), its mean, its
    /// covariance S (divisor N − 1) and S's eigenvalues, largest first.
    fn three_directions() -> (Mat<f64>, Vec<f64>, Mat<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let x = Mat::<f64>::from_fn(400, 12, |_, j| {
            let strength = [9.0, 5.0, 3.0].get(j).copied().unwrap_or(0.0);
            1e3 + strength * rng.random_range(-1.0..1.0) + rng.random_range(-0.5..0.5)
        });
        with_moments(x)
    }

    /// `x`, its mean, its covariance S (divisor N − 1) and S's eigenvalues, largest first.
    fn with_moments(x: Mat<f64>) -> (Mat<f64>, Vec<f64>, Mat<f64>, Vec<f64>) {
        let (n, d) = (x.nrows(), x.ncols());
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let xc = Mat::from_fn(n, d, |i, j| x[(i, j)] - mean[j]);
        let s = xc.transpose() * &xc * (1.0 / (n - 1) as f64);
        let exact = s.self_adjoint_eigen(Side::Lower).unwrap();
        let lambda: Vec<f64> = (0..d).rev().map(|i| exact.S()[i]).collect();
        (x, mean, s, lambda)
    }

    /// EM on `source` for `k` components of data with this mean and eigenvalues (ddof 1).
    fn em_problem<'a>(
        source: &'a mut InMemory<'_, f64>,
        mean: &'a [f64],
        lambda: &[f64],
        n: usize,
        k: usize,
        options: IterativeOptions,
    ) -> IterativeProblem<'a> {
        IterativeProblem {
            rows: crate::solver::Rows::Dense(source),
            mean,
            scale: None,
            centring: Centring::Explicit,
            n_samples: n,
            ddof: 1,
            n_components: k,
            total_variance: lambda.iter().sum(),
            options,
            collective: &crate::collective::SingleProcess,
        }
    }

    /// The maximum-likelihood model is a fixed point of the E and M steps: W = U_k (Λ_k −
    /// σ²I)^{1/2} and σ² the mean of the discarded eigenvalues come back unchanged.
    #[test]
    fn the_maximum_likelihood_model_is_a_fixed_point() {
        let (_, _, s, lambda) = three_directions();
        let (d, k) = (s.nrows(), 3);
        let trace: f64 = lambda.iter().sum();
        let sigma2 = lambda[k..].iter().sum::<f64>() / (d - k) as f64;
        let exact = s.self_adjoint_eigen(Side::Lower).unwrap();
        let w = Mat::from_fn(d, k, |i, j| {
            exact.U()[(i, d - 1 - j)] * (lambda[j] - sigma2).sqrt()
        });
        let sw = &s * &w;
        let (next, noise) = em_update(w.as_ref(), sw.as_ref(), sigma2, trace).unwrap();
        assert!(
            (noise - sigma2).abs() <= 1e-13 * lambda[0],
            "{noise} against {sigma2}"
        );
        for j in 0..k {
            for i in 0..d {
                assert!((next[(i, j)] - w[(i, j)]).abs() <= 1e-12, "({i}, {j})");
            }
        }
    }

    /// Every EM step raises the probabilistic-PCA likelihood (EM's defining property), σ²
    /// approaches the maximum-likelihood value from above, and the solver's Ritz values are
    /// S's eigenvalues once it stops.
    #[test]
    fn em_raises_the_likelihood_at_every_pass() {
        let (x, mean, s, lambda) = three_directions();
        let (n, d, k) = (x.nrows(), x.ncols(), 3);
        let sigma2 = lambda[k..].iter().sum::<f64>() / (d - k) as f64;
        // −2/N log-likelihood without the constant: ln|C| + tr(C⁻¹S), C = WWᵀ + σ²I.
        let deviance = |w: &Mat<f64>, noise: f64| {
            let c = w * w.transpose() + Mat::<f64>::identity(d, d) * noise;
            let llt = c.llt(Side::Lower).unwrap();
            let l = llt.L();
            let log_det: f64 = (0..d).map(|i| 2.0 * l[(i, i)].ln()).sum();
            let c_inv_s = llt.solve(&s);
            log_det + (0..d).map(|i| c_inv_s[(i, i)]).sum::<f64>()
        };
        let mut source = InMemory::new(x.as_ref(), 64);
        let options = IterativeOptions {
            tolerance: Some(1e-300),
            max_iterations: 60,
            ..Default::default()
        };
        let mut problem = em_problem(&mut source, &mean, &lambda, n, k, options);
        let mut path = Vec::new();
        let (ritz, report) = iterate(&mut problem, |w, noise| {
            path.push((deviance(w, noise), noise))
        })
        .unwrap();
        assert_eq!((report.passes, path.len()), (60, 60));
        for (i, pair) in path.windows(2).enumerate() {
            let ((before, noise_before), (after, noise_after)) = (pair[0], pair[1]);
            assert!(
                after <= before + 1e-12 * before.abs(),
                "pass {i}: {before} → {after}"
            );
            assert!(
                noise_after <= noise_before && noise_after >= sigma2,
                "pass {i}"
            );
        }
        // Most of the way there (EM's σ² creeps: about 3% a pass here once the span is found).
        let (first, last) = (path[0].1 - sigma2, path[59].1 - sigma2);
        assert!(last < 1e-3 * first, "σ² {} against {sigma2}", path[59].1);
        assert!(report.error_estimate <= 1e-13, "{report:?}");
        for m in 0..k {
            let got = ritz.values[m] / (n - 1) as f64;
            assert!((got - lambda[m]).abs() <= 1e-10 * lambda[0], "{m}");
        }
    }

    /// More components than directions of variance: σ² goes to 0 and W loses rank, so the
    /// E and M steps' systems become singular when EM runs long enough (here 300 passes
    /// against an unreachable tolerance); the iteration goes on as subspace iteration and
    /// keeps the exact spectrum (two non-zero eigenvalues, then zeros).
    #[test]
    fn more_components_than_the_rank_still_converge() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (n, d, k) = (50, 6, 4);
        let a = Mat::<f64>::from_fn(n, 2, |_, _| rng.random_range(-1.0..1.0));
        let b = Mat::<f64>::from_fn(2, d, |_, _| rng.random_range(-1.0..1.0));
        let (x, mean, _, lambda) = with_moments(&a * &b);
        for (tolerance, max_iterations) in [(None, 1000), (Some(1e-300), 300)] {
            let mut source = InMemory::new(x.as_ref(), 16);
            let options = IterativeOptions {
                tolerance,
                max_iterations,
                ..Default::default()
            };
            let mut problem = em_problem(&mut source, &mean, &lambda, n, k, options);
            let mut last_noise = f64::NAN;
            let (ritz, report) = iterate(&mut problem, |_, noise| last_noise = noise).unwrap();
            assert!(report.error_estimate <= 1e-9, "{report:?}");
            for m in 0..k {
                let got = ritz.values[m] / (n - 1) as f64;
                let want = lambda[m];
                assert!(
                    (got - want).abs() <= 1e-9 * lambda[0],
                    "{m}: {got} against {want}"
                );
            }
            if tolerance.is_some() {
                assert_eq!(last_noise, 0.0, "σ² reached 0");
            }
        }
    }
}
