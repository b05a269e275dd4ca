//! The randomized solver (Halko, Martinsson & Tropp 2011, §4.5 with power iterations):
//! a Gaussian start of `k + oversampling` columns, `q` subspace iterations of the scatter matrix
//! with re-orthonormalisation after each, then Rayleigh–Ritz.
//!
//! Each pass over the data applies `Xsᵀ Xs` once (two products per chunk), so `q` passes do
//! what `q` power iterations of the classic range finder do. Centring is implicit: chunks are
//! centred as they are read. After every pass the Ritz residuals give an a-posteriori error
//! estimate; with a tolerance the iteration stops as soon as the estimate meets it, and the
//! estimate is always reported.

use super::subspace::{apply_scatter, gaussian, orthonormalize, rayleigh_ritz};
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
    let divisor = (problem.n_samples - problem.ddof) as f64;
    let mut q = orthonormalize(gaussian(d, width, opts.seed).as_ref());
    let mut passes = 0;
    loop {
        let w = apply_scatter(
            problem.source,
            problem.mean,
            problem.scale,
            problem.centring,
            q.as_ref(),
        )?;
        passes += 1;
        let ritz = rayleigh_ritz(q.as_ref(), w.as_ref(), "randomized")?;
        let top = ritz.values[0].max(f64::MIN_POSITIVE);
        let estimate = ritz.residuals[..k]
            .iter()
            .fold(0.0f64, |a, &r| a.max(r / top));
        let met = opts.tolerance.is_some_and(|t| estimate <= t);
        if met || passes >= planned {
            let converged = opts.tolerance.is_none_or(|t| estimate <= t);
            let vectors = ritz.vectors.subcols(0, k).to_owned();
            return Ok(Spectrum {
                eigenvalues: ritz.values.iter().map(|v| v / divisor).collect(),
                vectors,
                report: Some(IterationReport {
                    passes,
                    error_estimate: estimate,
                    converged,
                }),
            });
        }
        q = orthonormalize(w.as_ref());
    }
}
