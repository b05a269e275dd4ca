//! The power method, as in the textbook: `x ← S x / ‖S x‖` until the Rayleigh quotient's
//! residual `‖S x − λ x‖ / λ₁` falls below the tolerance. Several components either by
//! deflation (one at a time, against `S − Σ λ_i b_i b_iᵀ`) or by block (subspace) iteration
//! of all of them at once. Each iteration is one pass over the data; the iteration count and
//! the final residual are reported. A closing Rayleigh–Ritz step over the vectors found makes
//! them exactly orthonormal.

use faer::Mat;

use crate::error::Result;
use crate::options::PowerMethod;
use crate::solver::iterative::{DEFAULT_TOLERANCE, gaussian, orthonormalise};
use crate::solver::{IterationReport, IterativeProblem, Spectrum};

/// The top `n_components` eigenpairs of the covariance by power iteration.
pub fn solve(problem: &mut IterativeProblem<'_>) -> Result<Spectrum> {
    let opts = problem.options;
    let tolerance = opts.tolerance.unwrap_or(DEFAULT_TOLERANCE);
    let (basis, mut passes, mut converged) = match opts.power_method {
        PowerMethod::Block => block(problem, tolerance)?,
        PowerMethod::Deflation => deflation(problem, tolerance)?,
    };
    // Rayleigh–Ritz over what was found: orthonormal vectors, best eigenvalues, true residuals.
    let k = problem.n_components;
    let step = problem.step(orthonormalise(basis.as_ref()).as_ref(), k, "power")?;
    passes += 1;
    converged &= step.estimate <= tolerance * 10.0;
    let report = IterationReport {
        passes,
        error_estimate: step.estimate,
        converged,
    };
    Ok(problem.spectrum(step.ritz, k, report))
}

fn block(problem: &mut IterativeProblem<'_>, tolerance: f64) -> Result<(Mat<f64>, usize, bool)> {
    let d = problem.mean.len();
    let k = problem.n_components;
    let mut q = orthonormalise(gaussian(d, k, problem.options.seed).as_ref());
    let mut passes = 0;
    loop {
        let step = problem.step(q.as_ref(), k, "power")?;
        passes += 1;
        if step.estimate <= tolerance || passes >= problem.options.max_iterations {
            return Ok((step.ritz.vectors, passes, step.estimate <= tolerance));
        }
        q = orthonormalise(step.w.as_ref());
    }
}

fn deflation(
    problem: &mut IterativeProblem<'_>,
    tolerance: f64,
) -> Result<(Mat<f64>, usize, bool)> {
    let d = problem.mean.len();
    let k = problem.n_components;
    let mut found = Mat::<f64>::zeros(d, k);
    let mut values = Vec::with_capacity(k);
    let (mut passes, mut converged) = (0, true);
    for m in 0..k {
        let start = gaussian(d, 1, problem.options.seed.wrapping_add(m as u64));
        let mut x = start.col(0).to_owned();
        x /= x.norm_l2();
        let mut iterations = 0;
        loop {
            let w = problem.apply(x.as_mat())?;
            passes += 1;
            iterations += 1;
            let mut sx = w.col(0).to_owned();
            // Deflate: remove what the components already found contribute.
            for (i, &lambda) in values.iter().enumerate() {
                let b = found.col(i);
                let coefficient = lambda * (b.transpose() * &x);
                sx -= coefficient * b;
            }
            let lambda = x.transpose() * &sx;
            let top = values
                .first()
                .copied()
                .unwrap_or(lambda)
                .max(f64::MIN_POSITIVE);
            let residual = (&sx - lambda * &x).norm_l2() / top;
            let norm = sx.norm_l2();
            if residual <= tolerance || iterations >= problem.options.max_iterations || norm == 0.0
            {
                converged &= residual <= tolerance || norm == 0.0;
                if norm > 0.0 {
                    x = sx / norm;
                }
                found.col_mut(m).copy_from(&x);
                values.push(lambda);
                break;
            }
            x = sx / norm;
        }
    }
    Ok((found, passes, converged))
}
