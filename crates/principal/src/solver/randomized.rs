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

use crate::error::Result;
use crate::options::{IterativeOptions, RandomizedMethod};
use crate::solver::iterative::{
    append_cols, gaussian, orthonormalise, product, rayleigh_ritz, remove_along,
};
use crate::solver::krylov::{Shape, block_lanczos};
use crate::solver::{IterationReport, IterativeProblem, Rows, Spectrum, top_eigen};

/// Passes over the data when neither a count nor a tolerance is given.
pub(crate) fn default_passes(
    options: &IterativeOptions,
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
pub(crate) fn default_power_iterations(
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> usize {
    if (n_components as f64) < 0.1 * n_samples.min(n_features) as f64 {
        7
    } else {
        4
    }
}

/// Columns of the random start: `k` plus the oversampling, at most min(N, D).
fn block_width(
    options: &IterativeOptions,
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
    options: &IterativeOptions,
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
pub(crate) fn known_passes(
    options: &IterativeOptions,
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
    let planned = planned_passes(&opts, k, problem.n_samples, d);
    // Sparse rows to a tolerance: block Lanczos of narrow blocks (see `lanczos_shape`).
    let lanczos = match (&problem.rows, opts.randomized_method) {
        (Rows::Sparse(_), RandomizedMethod::BlockKrylov) => {
            lanczos_shape(&opts, k, problem.n_samples, d)
        }
        _ => None,
    };
    let (width, shape) = lanczos.unwrap_or_else(|| {
        let width = block_width(&opts, k, problem.n_samples, d);
        (
            width,
            Shape {
                keep: width,
                cap: 10 * width,
            },
        )
    });
    let start = orthonormalise(gaussian(d, width, opts.seed).as_ref());
    match opts.randomized_method {
        RandomizedMethod::Subspace => subspace(problem, start, planned),
        // Sparse rows: block Lanczos, without the images of the basis (see `krylov`).
        RandomizedMethod::BlockKrylov => match problem.rows {
            Rows::Sparse(_) => block_lanczos(problem, start, planned, shape),
            Rows::Dense(_) => block_krylov(problem, start, planned),
        },
    }
}

/// Columns of each block of [`block_lanczos`] for sparse rows to a tolerance (at most k + the
/// oversampling). Block Lanczos needs no block of k columns: its basis holds k Ritz vectors and
/// more after a few blocks. On the single-cell benchmark (20,000 × 20,000, k = 50, to 1e-5)
/// blocks of 16 took 29 passes where blocks of 60 took 18: 464 products of every stored entry
/// with a column instead of 1,080, half the CPU time; 8 columns took 43 passes and more time
/// (each pass reads every entry twice), 24 or 32 as much or more (bench/results.md).
/// An eigenvalue of multiplicity over 16 has its further copies found only through rounding
/// (as with ARPACK's single vector); an invariant space of fewer than k dimensions gets
/// random directions (`krylov`).
pub(crate) const LANCZOS_WIDTH: usize = 16;

/// Ritz vectors beyond k that [`block_lanczos`] keeps when it restarts (thick restart): k + 30
/// took 29 passes on the benchmark, k + 10 (about the old block) 32–37.
pub(crate) const LANCZOS_EXTRA: usize = 30;

/// Blocks the basis of [`block_lanczos`] takes beyond the kept Ritz vectors before it restarts:
/// 8, a basis of k + 30 + 128 columns (208 at k = 50, against 600 before): 4 took more passes,
/// 12 no fewer.
pub(crate) const LANCZOS_BLOCKS: usize = 8;

/// The block width and basis of block Lanczos for sparse rows: with a tolerance (the fit runs
/// until it is met), [`LANCZOS_WIDTH`] columns with [`LANCZOS_EXTRA`] Ritz vectors over k kept
/// at [`LANCZOS_BLOCKS`] blocks past them, when the pass budget can fill that basis twice;
/// else (a fixed pass count) the start block of k + oversampling columns and a basis of ten
/// such blocks, as dense data's block Krylov. `None` for the latter.
pub(crate) fn lanczos_shape(
    options: &IterativeOptions,
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> Option<(usize, Shape)> {
    options.tolerance?;
    let width = LANCZOS_WIDTH.min(block_width(options, n_components, n_samples, n_features));
    let keep = n_components + LANCZOS_EXTRA;
    let cap = keep + LANCZOS_BLOCKS * width;
    (options.max_iterations.saturating_mul(width) >= 2 * cap)
        .then_some((width, Shape { keep, cap }))
}

/// Passes of the block Krylov method when neither a count nor a tolerance is given.
pub(crate) fn default_krylov_passes(
    n_components: usize,
    n_samples: usize,
    n_features: usize,
) -> usize {
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
        q = orthonormalise(step.w.as_ref());
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
    // The basis and its images grow in place within room for `cap` columns: growing them by
    // copies (a new D × (m + width) matrix per pass, for each) held both twice at once.
    let mut basis = Mat::<f64>::with_capacity(d, cap);
    append_cols(&mut basis, start.as_ref());
    let mut images = Mat::<f64>::with_capacity(d, cap);
    let mut newest = start;
    let mut passes = 0;
    loop {
        let w = problem.apply(newest.as_ref())?;
        passes += 1;
        append_cols(&mut images, w.as_ref());
        // Rayleigh–Ritz costs about a pass when D is large: only when its answer is needed.
        if problem.options.tolerance.is_some() || passes >= planned {
            let ritz = rayleigh_ritz(basis.as_ref(), images.as_ref(), k, "randomized")?;
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
            let kept = product(basis.as_ref(), v.as_ref());
            next = product(images.as_ref(), v.as_ref());
            basis.truncate(d, 0);
            append_cols(&mut basis, kept.as_ref());
            images.truncate(d, 0);
            append_cols(&mut images, next.as_ref());
        }
        // The next block: S times the newest block, orthogonal to the basis.
        let room = d - basis.ncols();
        if room == 0 {
            // The basis spans every direction: Rayleigh–Ritz on it is exact.
            let ritz = rayleigh_ritz(basis.as_ref(), images.as_ref(), k, "randomized")?;
            let estimate = ritz.estimate(k);
            let report = IterationReport {
                passes,
                error_estimate: estimate,
                converged: true,
            };
            return Ok(problem.spectrum(ritz, k, report));
        }
        let cols = width.min(room);
        newest = extend_basis(basis.as_ref(), next.as_ref().subcols(0, cols));
        append_cols(&mut basis, newest.as_ref());
    }
}

/// The eigenvector coefficients (in the basis) of the leading `width` Ritz pairs.
fn ritz_coefficients(
    basis: MatRef<'_, f64>,
    images: MatRef<'_, f64>,
    width: usize,
) -> Result<Mat<f64>> {
    let t = product(basis.transpose(), images);
    let l = t.nrows();
    let sym = Mat::from_fn(l, l, |i, j| 0.5 * (t[(i, j)] + t[(j, i)]));
    Ok(top_eigen(sym.as_ref(), width, l, 1.0, "randomized")?.1)
}

/// Largest `|bᵀq|` between the basis and a new column for which [`extend_basis`] keeps its
/// block Gram–Schmidt (Householder QR is orthogonal to about 1e-15 here; products over 20,000
/// rows round to about 1e-14).
const ORTHOGONALITY: f64 = 1e-12;

/// The columns of `next` (at most D minus the basis's) made orthonormal and orthogonal to the
/// orthonormal `basis`: block Gram–Schmidt twice ("twice is enough"), then a thin QR of what
/// remains. Products with the basis, where a Householder QR of all of `[basis | next]` cost more
/// than a pass over the data (bench/results.md). Checked: where `next`
/// lies nearly inside the basis (rank-deficient data, a nearly full space), the QR of the small
/// remainder can bring back directions of the basis; then the Householder QR of
/// `[basis | next]`, orthogonal to rounding whatever the columns, is taken instead.
fn extend_basis(basis: MatRef<'_, f64>, next: MatRef<'_, f64>) -> Mat<f64> {
    extend_basis_within(basis, next, ORTHOGONALITY)
}

/// [`extend_basis`] with the orthogonality it requires of the Gram–Schmidt result.
fn extend_basis_within(basis: MatRef<'_, f64>, next: MatRef<'_, f64>, required: f64) -> Mat<f64> {
    let mut rest = next.to_owned();
    for _ in 0..2 {
        remove_along(basis, rest.as_mut());
    }
    let q = orthonormalise(rest.as_ref());
    if product(basis.transpose(), q.as_ref()).norm_max() <= required {
        return q;
    }
    let whole = orthonormalise(hcat(basis, next).as_ref());
    whole.subcols(basis.ncols(), next.ncols()).to_owned()
}

/// `[a | b]`.
fn hcat(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let (d, na) = (a.nrows().max(b.nrows()), a.ncols());
    let mut both = Mat::zeros(d, na + b.ncols());
    both.as_mut().subcols_mut(0, na).copy_from(a);
    both.as_mut().subcols_mut(na, b.ncols()).copy_from(b);
    both
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `max |AᵀB|`.
    fn overlap(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
        (a.transpose() * b).norm_max()
    }

    /// New columns orthonormal, orthogonal to the basis, and spanning with it whatever of
    /// `next` lies outside it: for generic columns, columns inside the basis (exactly and up to
    /// 1e-13), repeated columns and a nearly full space; by block Gram–Schmidt alone, as
    /// checked, and by the Householder fallback alone.
    #[test]
    fn extended_bases_stay_orthonormal_whatever_the_new_columns() {
        for (d, nb, width) in [(2000, 120, 60), (300, 40, 30), (12, 9, 3), (5, 1, 4)] {
            let basis = orthonormalise(gaussian(d, nb, 1).as_ref());
            let generic = gaussian(d, width, 2);
            let inside = basis.as_ref() * gaussian(nb, width, 3);
            let nearly = Mat::from_fn(d, width, |i, j| inside[(i, j)] + 1e-13 * generic[(i, j)]);
            let repeated = Mat::from_fn(d, width, |i, j| generic[(i, j.min(1))]);
            for (name, next) in [
                ("generic", &generic),
                ("inside", &inside),
                ("nearly inside", &nearly),
                ("repeated", &repeated),
            ] {
                // Gram–Schmidt alone (required ∞) is enough for generic columns; for repeated
                // ones the QR of the rank-deficient remainder brings back directions of the
                // basis, so the check must fall back (ORTHOGONALITY); the Householder QR
                // (required −1) always works.
                if name == "repeated" && d > 12 {
                    let q = extend_basis_within(basis.as_ref(), next.as_ref(), f64::INFINITY);
                    assert!(overlap(basis.as_ref(), q.as_ref()) > ORTHOGONALITY, "{d}");
                }
                let requirements: &[f64] = if name == "generic" {
                    &[f64::INFINITY, ORTHOGONALITY, -1.0]
                } else {
                    &[ORTHOGONALITY, -1.0]
                };
                for &required in requirements {
                    let q = extend_basis_within(basis.as_ref(), next.as_ref(), required);
                    let case = format!("{name}, {d}×{nb} + {width}, required {required}");
                    assert_eq!((q.nrows(), q.ncols()), (d, width), "{case}");
                    assert!(overlap(basis.as_ref(), q.as_ref()) < 1e-12, "{case}");
                    let off = (q.transpose() * &q - Mat::<f64>::identity(width, width)).norm_max();
                    assert!(off < 1e-12, "{case}: |QᵀQ − I| = {off:e}");
                    if name == "generic" {
                        // Nothing of `next` is lost: it lies in span(basis, q).
                        let both = hcat(basis.as_ref(), q.as_ref());
                        let kept = both.as_ref() * (both.transpose() * next);
                        let lost = (kept - next).norm_max();
                        assert!(lost < 1e-10, "{case}: {lost:e}");
                    }
                }
            }
        }
    }
}
