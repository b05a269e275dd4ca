//! The randomized solver (Halko, Martinsson & Tropp 2011, §4.5 with power iterations):
//! a Gaussian start of `k + oversampling` columns, `q` subspace iterations of the scatter matrix
//! with re-orthonormalisation after each, then Rayleigh–Ritz.
//!
//! Each pass over the data applies `Xsᵀ Xs` once (two products per chunk), so `q` passes do
//! what `q` power iterations of the classic range finder do. Centring is implicit: chunks are
//! centred as they are read. After every pass the Ritz residuals give an a-posteriori error
//! estimate; with a tolerance the iteration stops as soon as the estimate meets it, and the
//! estimate is always reported.

use super::subspace::{gaussian, orthonormalize};
use super::{IterationReport, IterativeProblem, Spectrum};
use crate::Result;

/// Power iterations when neither a count nor a tolerance is given: scikit-learn's rule.
pub fn default_power_iterations(n_components: usize, n_samples: usize, n_features: usize) -> usize {
    if (n_components as f64) < 0.1 * n_samples.min(n_features) as f64 {
        7
    } else {
        4
    }
}

/// The top `n_components` eigenpairs of the covariance, approximately, with an error estimate.
pub fn solve(problem: &mut IterativeProblem<'_>) -> Result<Spectrum> {
    let d = problem.mean.len();
    let k = problem.n_components;
    let opts = problem.options;
    let width = (k + opts.oversampling).min(problem.n_samples.min(d)).max(k);
    let planned = match (opts.tolerance, opts.power_iterations) {
        (_, Some(q)) => q + 1,
        (Some(_), None) => opts.max_iterations,
        (None, None) => default_power_iterations(k, problem.n_samples, d) + 1,
    };
    let mut q = orthonormalize(gaussian(d, width, opts.seed).as_ref());
    let mut passes = 0;
    loop {
        let step = problem.step(q.as_ref(), k, "randomized")?;
        passes += 1;
        let met = opts.tolerance.is_some_and(|t| step.estimate <= t);
        if met || passes >= planned {
            let converged = opts.tolerance.is_none_or(|t| step.estimate <= t);
            let report = IterationReport {
                passes,
                error_estimate: step.estimate,
                converged,
            };
            return Ok(problem.spectrum(step.ritz, k, report));
        }
        q = orthonormalize(step.w.as_ref());
    }
}
