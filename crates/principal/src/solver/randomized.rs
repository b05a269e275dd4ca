//! The randomized solver: a Gaussian start of `k + oversampling` columns, then either
//! block Krylov iteration (Musco & Musco 2015; the default) or subspace iteration
//! (Halko, Martinsson & Tropp 2011, §4.5, power iterations with re-orthonormalisation after
//! each), with Rayleigh–Ritz after every pass.
//!
//! Each pass over the data applies `Xsᵀ Xs` once (two products per chunk), so `q` passes do
//! what `q` power iterations of the classic range finder do. Centring is implicit: chunks are
//! centred as they are read. After every pass the Ritz residuals give an a-posteriori error
//! estimate; with a tolerance the iteration stops as soon as the estimate meets it, and the
//! estimate is always reported.

use faer::{Mat, MatRef};

use super::subspace::{gaussian, orthonormalize, rayleigh_ritz};
use super::{IterationReport, IterativeProblem, Spectrum};
use crate::{RandomizedMethod, Result};

/// Passes over the data when neither a count nor a tolerance is given.
pub fn default_passes(
    options: &crate::IterativeOptions,
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> usize {
    match options.randomized_method {
        RandomizedMethod::Subspace => {
            default_power_iterations(n_components, n_samples, n_features) + 1
        }
        RandomizedMethod::BlockKrylov => default_krylov_passes(n_components, n_samples, n_features),
    }
}

/// Power iterations of subspace iteration when neither a count nor a tolerance is given:
/// scikit-learn's rule.
pub fn default_power_iterations(n_components: usize, n_samples: usize, n_features: usize) -> usize {
    if (n_components as f64) < 0.1 * n_samples.min(n_features) as f64 {
        7
    } else {
        4
    }
}

/// Columns of the random start: `k` plus the oversampling, at most min(N, D).
fn block_width(
    options: &crate::IterativeOptions,
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> usize {
    (n_components + options.oversampling)
        .min(n_samples.min(n_features))
        .max(n_components)
}

/// Passes to make unless a tolerance is met first.
fn planned_passes(
    options: &crate::IterativeOptions,
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> usize {
    match (options.tolerance, options.power_iterations) {
        (_, Some(q)) => q + 1,
        (Some(_), None) => options.max_iterations,
        (None, None) => default_passes(options, n_components, n_samples, n_features),
    }
}

/// The passes [`solve`] makes, when known beforehand: `None` with a tolerance (it stops when
/// met). Block Krylov whose first block spans every feature is exact after one pass.
pub fn known_passes(
    options: &crate::IterativeOptions,
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> Option<usize> {
    if options.tolerance.is_some() {
        return None;
    }
    let spans_all = block_width(options, n_components, n_samples, n_features) == n_features;
    Some(
        if options.randomized_method == RandomizedMethod::BlockKrylov && spans_all {
            1
        } else {
            planned_passes(options, n_components, n_samples, n_features)
        },
    )
}

/// The top `n_components` eigenpairs of the covariance, approximately, with an error estimate.
pub fn solve(problem: &mut IterativeProblem<'_>) -> Result<Spectrum> {
    let d = problem.mean.len();
    let k = problem.n_components;
    let opts = problem.options;
    let width = block_width(&opts, k, problem.n_samples, d);
    let planned = planned_passes(&opts, k, problem.n_samples, d);
    let start = orthonormalize(gaussian(d, width, opts.seed).as_ref());
    match opts.randomized_method {
        RandomizedMethod::Subspace => subspace(problem, start, planned),
        RandomizedMethod::BlockKrylov => block_krylov(problem, start, planned),
    }
}

/// Passes of the block Krylov method when neither a count nor a tolerance is given.
pub fn default_krylov_passes(n_components: usize, n_samples: usize, n_features: usize) -> usize {
    // Measured on a 2,000×20,000 rank-30-plus-noise matrix, 50 components: 4 block Krylov
    // passes match the eigenvalue accuracy of 8 subspace passes (scikit-learn's default).
    if (n_components as f64) < 0.1 * n_samples.min(n_features) as f64 {
        4
    } else {
        3
    }
}

/// Whether to stop after this pass, and whether the tolerance (if any) was met.
fn done(
    problem: &IterativeProblem<'_>,
    estimate: f64,
    passes: usize,
    planned: usize,
) -> Option<bool> {
    let tolerance = problem.options.tolerance;
    let met = tolerance.is_some_and(|t| estimate <= t);
    (met || passes >= planned).then(|| tolerance.is_none_or(|t| estimate <= t))
}

/// Subspace iteration: `Q ← orth(S Q)`, Rayleigh–Ritz on span(Q) after every pass.
fn subspace(
    problem: &mut IterativeProblem<'_>,
    start: Mat<f64>,
    planned: usize,
) -> Result<Spectrum> {
    let k = problem.n_components;
    let mut q = start;
    let mut passes = 0;
    loop {
        let step = problem.step(q.as_ref(), k, "randomized")?;
        passes += 1;
        if let Some(converged) = done(problem, step.estimate, passes, planned) {
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

/// Block Krylov (Musco & Musco 2015): Rayleigh–Ritz on span(Q, SQ, S²Q, …) instead of on the
/// last block alone. Each pass still applies S once, to the newest block; S times the whole
/// basis is kept, so the larger Rayleigh–Ritz costs no pass. Clustered eigenvalues (the noise
/// floor of real data) converge far faster per pass than with subspace iteration. The basis is
/// capped at ten blocks: past that it restarts from the current Ritz vectors (thick restart,
/// exact: S times them is known).
fn block_krylov(
    problem: &mut IterativeProblem<'_>,
    start: Mat<f64>,
    planned: usize,
) -> Result<Spectrum> {
    let k = problem.n_components;
    let (d, width) = (start.nrows(), start.ncols());
    let cap = d.min(10 * width).max(width);
    debug_assert!(width <= d);
    let mut basis = start.clone();
    let mut images = Mat::<f64>::zeros(d, 0);
    let mut newest = start;
    let mut passes = 0;
    loop {
        let w = problem.apply(newest.as_ref())?;
        passes += 1;
        images = hcat(images.as_ref(), w.as_ref());
        // Rayleigh–Ritz costs about a pass when D is large: only when its answer is needed.
        if problem.options.tolerance.is_some() || passes >= planned {
            let ritz = rayleigh_ritz(basis.as_ref(), images.as_ref(), "randomized")?;
            let estimate = ritz.estimate(k);
            if let Some(converged) = done(problem, estimate, passes, planned) {
                let report = IterationReport {
                    passes,
                    error_estimate: estimate,
                    converged,
                };
                return Ok(problem.spectrum(ritz, k, report));
            }
        }
        // What extends the space: S times the newest block; after a restart, S times the
        // kept Ritz vectors (their residual directions, as in thick-restart Lanczos).
        let mut next = w;
        if basis.ncols() + width > cap {
            // Thick restart: keep the leading Ritz vectors and their images under S (exact).
            let v = ritz_coefficients(basis.as_ref(), images.as_ref(), width)?;
            basis = basis.as_ref() * v.as_ref();
            images = images.as_ref() * v.as_ref();
            next = images.clone();
        }
        // The next block: S times the newest block, orthogonal to the basis. A Householder QR
        // of [basis | w] keeps it orthogonal to rounding even where w is nearly in the basis
        // (rank-deficient data, a nearly full space).
        let room = d - basis.ncols();
        if room == 0 {
            // The basis spans every direction: Rayleigh–Ritz on it is exact.
            let ritz = rayleigh_ritz(basis.as_ref(), images.as_ref(), "randomized")?;
            let estimate = ritz.estimate(k);
            let report = IterationReport {
                passes,
                error_estimate: estimate,
                converged: true,
            };
            return Ok(problem.spectrum(ritz, k, report));
        }
        let cols = width.min(room);
        let q = orthonormalize(hcat(basis.as_ref(), next.as_ref().subcols(0, cols)).as_ref());
        newest = q.subcols(basis.ncols(), cols).to_owned();
        basis = hcat(basis.as_ref(), newest.as_ref());
    }
}

/// The eigenvector coefficients (in the basis) of the leading `width` Ritz pairs.
fn ritz_coefficients(
    basis: MatRef<'_, f64>,
    images: MatRef<'_, f64>,
    width: usize,
) -> Result<Mat<f64>> {
    let t = basis.transpose() * images;
    let l = t.nrows();
    let sym = Mat::from_fn(l, l, |i, j| 0.5 * (t[(i, j)] + t[(j, i)]));
    Ok(super::top_eigen(sym.as_ref(), width, l, 1.0, "randomized")?.1)
}

/// `[a | b]`.
fn hcat(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let (d, na) = (a.nrows().max(b.nrows()), a.ncols());
    Mat::from_fn(d, na + b.ncols(), |i, j| {
        if j < na {
            a[(i, j)]
        } else {
            b[(i, j - na)]
        }
    })
}
