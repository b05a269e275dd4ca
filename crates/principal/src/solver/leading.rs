//! The leading `k` eigenpairs of a symmetric matrix, when only those are wanted, by a route
//! that is checked before it is trusted.
//!
//! The dense route ([`top_eigen`]) tridiagonalises the whole D×D matrix: for case 1's
//! 784 × 784 covariance that is most of the eigensolver's 0.06 s, a third of the fit. When a
//! fit keeps a fixed number of components, only the top `k` eigenpairs and the sum of the rest
//! (the total variance less the kept) are needed, and faer's Krylov–Schur Lanczos
//! (`partial_self_adjoint_eigen`) finds them in about half the time on real spectra.
//!
//! A Lanczos method can miss an eigenvalue without knowing it (bench/results.md: faer reported
//! 50 converged pairs and returned the wrong 50). So its answer is used only when three checks
//! prove it is the top `k`; otherwise the dense route runs, and the answer is the same either way
//! to rounding:
//!
//! 1. **Residuals.** For the orthonormal Ritz vectors V and values Θ, R = AV − VΘ is computed
//!    explicitly. By Kahan's theorem A has `k` distinct eigenvalues, each within ‖R‖₂ ≤ ‖R‖_F
//!    of one Ritz value. ‖R‖_F must be at rounding level (the vectors are then as good as the
//!    dense route's).
//! 2. **A gap.** σ is put halfway between the `k`-th and `(k+1)`-th Ritz values; the `k` Ritz
//!    values less their radius must clear it, so those `k` eigenvalues lie above σ.
//! 3. **None missed.** A less its Ritz part, A' = A − V (Θ − θ_{k+1}) Vᵀ, differs from A by a
//!    positive semidefinite matrix of rank `k`, so A's (k+1)-th eigenvalue is at most A''s
//!    largest (Weyl). faer's Cholesky factorisation of (σ − τ) I − A' must succeed, τ above its
//!    backward error: then A' has no eigenvalue above σ, nor A a (k+1)-th. With (1) and (2),
//!    the `k` eigenvalues near the Ritz values are all of A's above σ.
//!
//! The Krylov attempt is capped at [`MAX_RESTARTS`] restarts so that a spectrum it cannot
//! resolve quickly (a flat one) costs a bounded detour before the dense route.

use faer::dyn_stack::StackReq;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::BlockStructure;
use faer::matrix_free::LinOp;
use faer::matrix_free::eigen::{
    PartialEigenParams, partial_self_adjoint_eigen, partial_self_adjoint_eigen_scratch,
};
use faer::reborrow::ReborrowMut;
use faer::{Accum, Col, Mat, MatMut, MatRef, Par};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::kernel::parallel::faer_par;
use crate::solver::{DenseReason, EigenRoute, top_eigen};

/// Ritz pairs asked beyond the `k` wanted: the `(k+1)`-th places σ, a few more help the
/// `k`-th converge.
const EXTRA: usize = 5;

/// Krylov–Schur restarts before the dense route takes over. Case 1's spectrum converged within
/// two in a scratch run, and every real spectrum tried was certified within three; a flat,
/// noise-like one may need many more, and then the dense route is cheaper than waiting
/// (bench/results.md).
const MAX_RESTARTS: usize = 3;

/// Below this dimension the certified route runs on one thread: its matrix–vector products
/// (N² multiply-adds each, hundreds a call) are too short to share, and waking the other
/// thread for each cost more than it saved. Measured on 2 cores (bench/results.md,
/// 2026-11-28): factor analysis with D = 300 took 0.68 s instead of 1.29 s, with D = 784
/// 1.06–1.09 s instead of 1.23 s; Fashion-MNIST's K = 50 (784) and the 3,000 × 3,000 kernel
/// matrix were no slower.
pub(crate) const SEQUENTIAL_BELOW: usize = 1024;

/// The threads of the certified route for an N×N matrix: one below [`SEQUENTIAL_BELOW`], else
/// faer's fixed split. Either way the same bits on any number of threads.
fn route_par(n: usize) -> Par {
    if n < SEQUENTIAL_BELOW {
        Par::Seq
    } else {
        faer_par()
    }
}

/// The partial route is tried only for matrices at least this large (below, the dense route
/// takes a few milliseconds) and when `8 (k + EXTRA)` fits in the dimension (beyond that the
/// Krylov subspace is a large part of the space, and the dense route is as fast).
const MIN_DIMENSION: usize = 256;

/// The top `k` eigenpairs of the symmetric `a` (only its lower triangle is read), largest
/// first, the values divided by `divisor` and clipped at 0: only `k` values, unlike
/// [`top_eigen`]. Certified Krylov–Schur where it applies and passes its checks, else
/// the dense route; and which ran, and why.
pub(crate) fn leading_eigen(
    a: MatRef<'_, f64>,
    k: usize,
    divisor: f64,
    solver: &'static str,
) -> Result<(Vec<f64>, Mat<f64>, EigenRoute)> {
    leading_eigen_from(a, k, divisor, solver, Route::Try(None))
}

/// Which route [`leading_eigen_from`] is asked to take.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Route {
    /// Try the certified one where it applies, from this Lanczos start vector (else the fixed
    /// pseudo-random one).
    Try(Option<Col<f64>>),
    /// The dense one at once: a caller whose earlier, similar matrix was declined.
    Dense,
}

impl Route {
    /// The route for the next, similar matrix of an iteration (the next EM step's), given
    /// the route `taken` for this one and its `vectors`: the certified one again, started from
    /// the sum of these vectors, where it was taken; the dense one at once after a decline (a
    /// flat spectrum at the cut), so that it is not paid at every step; else (the route did
    /// not apply) a try, which again costs nothing.
    pub(crate) fn next(taken: &EigenRoute, vectors: MatRef<'_, f64>) -> Route {
        match taken {
            EigenRoute::Certified => Route::Try(Some(Col::from_fn(vectors.nrows(), |i| {
                vectors.row(i).iter().sum()
            }))),
            EigenRoute::Dense(DenseReason::Declined(_)) => Route::Dense,
            EigenRoute::Dense(_) => Route::Try(None),
        }
    }
}

/// [`leading_eigen`] with the route given, and the route taken.
pub(crate) fn leading_eigen_from(
    a: MatRef<'_, f64>,
    k: usize,
    divisor: f64,
    solver: &'static str,
    route: Route,
) -> Result<(Vec<f64>, Mat<f64>, EigenRoute)> {
    let n = a.nrows();
    let reason = match route {
        Route::Try(_) if n < MIN_DIMENSION => DenseReason::SmallMatrix,
        Route::Try(_) if k == 0 || 8 * (k + EXTRA) > n => DenseReason::ManyComponents,
        Route::Try(start) => {
            let full = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
            let start = start.unwrap_or_else(|| start_vector(n));
            match certified(full, k, start, route_par(n)) {
                Ok((values, vectors)) => {
                    let values = values.iter().map(|v| (v / divisor).max(0.0)).collect();
                    return Ok((values, vectors, EigenRoute::Certified));
                }
                Err(decline) => DenseReason::Declined(decline.to_string()),
            }
        }
        // Asked for by the caller (an earlier, similar matrix declined).
        Route::Dense => DenseReason::Declined("an earlier, similar matrix declined".into()),
    };
    let (values, vectors) = top_eigen(a, k, k, divisor, solver)?;
    Ok((values, vectors, EigenRoute::Dense(reason)))
}

/// Why the partial route's answer was not used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum Decline {
    /// The matrix is zero (constant data) or holds a value that is not finite.
    #[error("the matrix is zero or holds a value that is not finite")]
    ZeroOrNotFinite,
    /// Fewer Ritz pairs converged than asked within the restarts.
    #[error("{converged} of {wanted} Ritz pairs converged within {MAX_RESTARTS} restarts")]
    NotConverged { converged: usize, wanted: usize },
    /// The Ritz vectors are not orthonormal to rounding.
    #[error("the Ritz vectors are orthonormal only to {0:.1e}")]
    NotOrthonormal(f64),
    /// The residual ‖AV − VΘ‖_F is above rounding level.
    #[error("the residual is {0:.1e} of the matrix's norm, above rounding")]
    Residual(f64),
    /// The `k`-th and `(k+1)`-th Ritz values are too close, for their radius, to put σ between.
    #[error(
        "the k-th and (k+1)-th eigenvalues are too close to tell apart (margin {margin:.1e}, \
         radius {radius:.1e})"
    )]
    NoGap { margin: f64, radius: f64 },
    /// σI − A less its top-`k` Ritz part is not positive definite (Cholesky stopped at
    /// `pivot`): A has another eigenvalue above σ, missed by Lanczos, or one just below it.
    #[error("the check for missed eigenvalues failed (Cholesky pivot {pivot})")]
    Missed { pivot: usize },
    /// The Cholesky factorisation's backward error reaches the shift τ it was given.
    #[error(
        "the check for missed eigenvalues was inconclusive (backward error {backward_error:.1e} \
         reaches the shift {tau:.1e})"
    )]
    Backward { tau: f64, backward_error: f64 },
}

/// A fixed pseudo-random start vector: the same model from the same data.
fn start_vector(n: usize) -> Col<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    Col::from_fn(n, |_| rng.random_range(-1.0..1.0))
}

/// The partial route and its checks, on the full symmetric matrix `a` (taken, to be scaled in
/// place): the top `k` Ritz values (largest first, not divided) and vectors, or why they cannot
/// be trusted.
pub(crate) fn certified(
    mut a: Mat<f64>,
    k: usize,
    start: Col<f64>,
    par: Par,
) -> std::result::Result<(Vec<f64>, Mat<f64>), Decline> {
    let n = a.nrows();
    // faer's norms (one per basis vector at every Lanczos step of its reorthogonalisation, and
    // the two of A below) keep a sum of squares scaled by 2^-511 against overflow, whose terms
    // are subnormal for ordinary vectors, and Intel cores take a slow microcode path for each:
    // on a Xeon case 1's time after the pass fell from 0.145–0.18 s to 0.06–0.08 s with them
    // flushed on this thread (bench/results.md, 2026-12-07), with the same bits where no value
    // below 2.2e-308 arises.
    let _flushed = principal_amx::SubnormalsFlushed::new();
    // faer's Krylov–Schur is not scale-invariant: on case 1's scatter matrix (‖A‖ ≈ 1e11) its
    // residuals were 1e-9 of ‖A‖ where the same matrix divided by 2³⁶ gave 5e-15. So it runs on
    // A scaled by a power of two to a norm near 1: exact, and undone exactly on the values.
    let size = a.norm_l2();
    if !(size.is_finite() && size > 0.0) {
        return Err(Decline::ZeroOrNotFinite);
    }
    // Clamped so that both 2^±exponent stay finite for any finite norm.
    let exponent = (size.log2().round() as i32).clamp(-1000, 1000);
    a *= faer::Scale(2f64.powi(-exponent));
    // The Lanczos steps run on A + E, E a fixed random diagonal of norm about 1e-15 ‖A‖:
    // faer's reorthogonalisation loops for ever when a new Krylov vector is exactly zero, which
    // A alone gives when its Krylov space is exactly invariant (a zero or low-rank matrix: a
    // rank-1 one did not return). Distinct diagonal entries split every such space; the checks
    // are on A itself, and E moves the residuals by less than their bound. (Until 2026-11-28 E
    // was a dense random matrix: an n×n copy and n²/2 random numbers more.)
    let norm = a.norm_l2(); // Frobenius, of the scaled matrix
    let diagonal = {
        let mut rng = ChaCha8Rng::seed_from_u64(0xe);
        let size = norm * 2f64.powi(-50);
        (0..n).map(|_| size * rng.random_range(-1.0..1.0)).collect()
    };
    let (values, vectors) = certify(a, norm, diagonal, k, start, par)?;
    let values = values.iter().map(|t| t * 2f64.powi(exponent)).collect();
    Ok((values, vectors))
}

/// A symmetric matrix plus a diagonal, as the operator Lanczos multiplies by.
#[derive(Debug)]
struct PlusDiagonal<'a> {
    matrix: MatRef<'a, f64>,
    diagonal: &'a [f64],
}

impl LinOp<f64> for PlusDiagonal<'_> {
    fn apply_scratch(&self, _rhs_ncols: usize, _par: Par) -> StackReq {
        StackReq::EMPTY
    }

    fn nrows(&self) -> usize {
        self.matrix.nrows()
    }

    fn ncols(&self) -> usize {
        self.matrix.ncols()
    }

    fn apply(&self, mut out: MatMut<'_, f64>, rhs: MatRef<'_, f64>, par: Par, _: &mut MemStack) {
        matmul(out.rb_mut(), Accum::Replace, self.matrix, rhs, 1.0, par);
        for j in 0..rhs.ncols() {
            for (i, e) in self.diagonal.iter().enumerate() {
                out[(i, j)] += e * rhs[(i, j)];
            }
        }
    }

    fn conj_apply(
        &self,
        out: MatMut<'_, f64>,
        rhs: MatRef<'_, f64>,
        par: Par,
        stack: &mut MemStack,
    ) {
        self.apply(out, rhs, par, stack);
    }
}

/// [`certified`]'s Krylov–Schur on A + diag(`diagonal`) and its checks on `a` (already
/// scaled; `norm` its Frobenius norm), whose storage then holds the Cholesky factorisation.
fn certify(
    a: Mat<f64>,
    norm: f64,
    diagonal: Vec<f64>,
    k: usize,
    start: Col<f64>,
    par: Par,
) -> std::result::Result<(Vec<f64>, Mat<f64>), Decline> {
    let (n, wanted, eps) = (a.nrows(), k + EXTRA, f64::EPSILON);
    let params = PartialEigenParams {
        min_dim: wanted + 8,
        max_dim: 2 * wanted + 10,
        max_restarts: MAX_RESTARTS,
        ..Default::default()
    };
    let mut ritz_vectors = Mat::<f64>::zeros(n, wanted);
    let mut ritz_values = vec![0.0; wanted];
    let krylov = PlusDiagonal {
        matrix: a.as_ref(),
        diagonal: &diagonal,
    };
    let mut buffer = MemBuffer::new(partial_self_adjoint_eigen_scratch::<f64>(
        &krylov, wanted, par, params,
    ));
    let info = partial_self_adjoint_eigen(
        ritz_vectors.as_mut(),
        &mut ritz_values,
        &krylov,
        start.as_ref(),
        // faer's tolerance is absolute, on each pair's estimated residual.
        64.0 * eps * norm,
        par,
        MemStack::new(&mut buffer),
        params,
    );
    if info.n_converged_eigen < wanted {
        return Err(Decline::NotConverged {
            converged: info.n_converged_eigen,
            wanted,
        });
    }
    // faer orders by magnitude; the largest algebraic first here.
    let mut order: Vec<usize> = (0..wanted).collect();
    order.sort_by(|&i, &j| ritz_values[j].total_cmp(&ritz_values[i]));
    let theta: Vec<f64> = order.iter().map(|&i| ritz_values[i]).collect();
    let vectors = Mat::from_fn(n, k, |i, j| ritz_vectors[(i, order[j])]);

    // (1) Orthonormality and residuals, computed, not estimated.
    let mut gram = vectors.transpose() * &vectors;
    for i in 0..k {
        gram[(i, i)] -= 1.0;
    }
    let drift = gram.norm_l2();
    // Written so that a NaN fails each check.
    if drift.is_nan() || drift > 1e-10 {
        return Err(Decline::NotOrthonormal(drift));
    }
    let mut residual = &a * &vectors;
    for j in 0..k {
        for i in 0..n {
            residual[(i, j)] -= theta[j] * vectors[(i, j)];
        }
    }
    let residual = residual.norm_l2();
    if residual.is_nan() || residual > 64.0 * eps * norm * (k as f64).sqrt() {
        return Err(Decline::Residual(residual / norm));
    }
    // Kahan's radius, widened for vectors orthonormal only to `drift`.
    let radius = (residual + 4.0 * drift * norm) / (1.0 - drift);

    // (2) σ in the gap: the k eigenvalues near the Ritz values lie above it.
    let sigma = 0.5 * (theta[k - 1] + theta[k]);
    let margin = theta[k - 1] - radius - sigma;
    if !(margin > 0.0 && theta[k - 1] - theta[k] > 2.0 * radius) {
        return Err(Decline::NoGap { margin, radius });
    }

    // (3) None above σ was missed. A = A' + V (Θ − θ_{k+1}) Vᵀ, a positive semidefinite update
    // of rank k, so λ_{k+1}(A) ≤ λ₁(A') (Weyl's interlacing), whatever V is; A' has about
    // θ_{k+1} along V. When C = (σ − τ) I − A' has a Cholesky factorisation, λ₁(A') < σ − τ
    // + (its backward error), so with τ above that error A has no (k+1)-th eigenvalue above
    // σ. C takes A's storage: A is not needed after it.
    let weighted = Mat::from_fn(n, k, |i, j| vectors[(i, j)] * (theta[j] - theta[k]));
    let trace_before = (0..n).map(|i| sigma - a[(i, i)]).sum::<f64>()
        + (0..k).map(|j| theta[j] - theta[k]).sum::<f64>();
    // The rounding of C's entries: the rank-k product's (k ε |W| |V|ᵀ) and the subtraction's.
    let formed = 2.0
        * (k + 2) as f64
        * eps
        * (weighted.norm_l2() * (k as f64).sqrt() + norm + (n as f64).sqrt() * sigma.abs());
    // Cholesky's backward error is at most γ_{n+1} ‖L‖_F² (Higham, Accuracy and Stability,
    // Theorem 10.3), taken as 8n ε trace(LLᵀ). τ covers twice what trace(C) predicts for it,
    // and the rounding twice; both are checked against the factor's own after.
    let tau = 16.0 * n as f64 * eps * trace_before.abs() + 2.0 * formed;
    let mut c = a;
    for j in 0..n {
        for i in j..n {
            c[(i, j)] = -c[(i, j)];
        }
        c[(j, j)] += sigma - tau;
    }
    faer::linalg::matmul::triangular::matmul(
        c.as_mut(),
        BlockStructure::TriangularLower,
        faer::Accum::Add,
        weighted.as_ref(),
        BlockStructure::Rectangular,
        vectors.transpose(),
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    let mut buffer = MemBuffer::new(cholesky_in_place_scratch::<f64>(n, par, Default::default()));
    // No regularisation (faer's default): a pivot that is not positive stops it.
    if let Err(error) = cholesky_in_place(
        c.as_mut(),
        Default::default(),
        par,
        MemStack::new(&mut buffer),
        Default::default(),
    ) {
        let faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index } = error;
        return Err(Decline::Missed { pivot: index });
    }
    let factor_size: f64 = (0..n)
        .map(|j| (j..n).map(|i| c[(i, j)] * c[(i, j)]).sum::<f64>())
        .sum();
    let backward_error = 8.0 * n as f64 * eps * factor_size + formed;
    if tau.is_nan() || backward_error.is_nan() || tau <= backward_error {
        return Err(Decline::Backward {
            tau,
            backward_error,
        });
    }
    Ok((theta[..k].to_vec(), vectors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

    /// A covariance-like matrix XᵀX of `n` features whose spectrum decays as real data's does.
    fn decaying(n: usize, seed: u64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = Mat::<f64>::from_fn(2 * n, n, |_, j| {
            rng.random_range(-1.0..1.0) * (1.0 + 300.0 / (1.0 + j as f64))
        });
        x.transpose() * &x
    }

    /// Values and vectors (up to sign) agree with the dense route's to rounding.
    fn assert_like_dense(a: MatRef<'_, f64>, k: usize, values: &[f64], vectors: MatRef<'_, f64>) {
        let (want, dense) = top_eigen(a, k, k, 1.0, "test").unwrap();
        let scale = want[0];
        for j in 0..k {
            assert!(
                (values[j] - want[j]).abs() <= 1e-13 * scale,
                "value {j}: {} against {}",
                values[j],
                want[j]
            );
            let dot: f64 = (0..a.nrows())
                .map(|i| vectors[(i, j)] * dense[(i, j)])
                .sum();
            assert!(
                (dot.abs() - 1.0).abs() < 1e-10,
                "vector {j}: |cos| {}",
                dot.abs()
            );
        }
    }

    /// On decaying spectra the partial route is taken and certified, and gives the dense
    /// route's answer; `leading_eigen` divides and clips as `top_eigen` does.
    #[test]
    fn the_certified_route_gives_the_dense_answer() {
        for (n, k, seed) in [(256, 10, 1), (300, 20, 2), (784, 50, 3), (500, 1, 4)] {
            let a = decaying(n, seed);
            let (values, vectors) = certified(a.clone(), k, start_vector(n), route_par(n))
                .unwrap_or_else(|why| panic!("{n}, {k}: declined, {why:?}"));
            assert_like_dense(a.as_ref(), k, &values, vectors.as_ref());
            let (divided, _, _) = leading_eigen(a.as_ref(), k, 4.0, "test").unwrap();
            for j in 0..k {
                assert_eq!(divided[j], values[j] / 4.0);
            }
        }
    }

    /// The failure the checks exist for. On a diagonal matrix a start vector with no component
    /// along the top eigenvector keeps every Krylov vector orthogonal to it (exactly: the
    /// products never mix coordinates), so Lanczos converges to eigenvalues 2..k+1 and calls
    /// them the top k. Less their Ritz part the matrix still has λ₁ above σ, so the Cholesky
    /// factorisation stops, and `leading_eigen` (with its own start) gives the true top k.
    #[test]
    fn a_missed_eigenvalue_is_caught_by_the_cholesky_factorisation() {
        let (n, k) = (300, 8);
        let a = Mat::<f64>::from_fn(n, n, |i, j| {
            if i == j {
                1000.0 * 0.9f64.powi(i as i32)
            } else {
                0.0
            }
        });
        let mut start = start_vector(n);
        start[0] = 0.0;
        let norm = a.norm_l2();
        let declined = certify(a.clone(), norm, vec![0.0; n], k, start, Par::Seq).unwrap_err();
        assert!(matches!(declined, Decline::Missed { .. }), "{declined:?}");
        let (values, _, _) = leading_eigen(a.as_ref(), k, 1.0, "test").unwrap();
        for (j, value) in values.iter().enumerate() {
            let want = 1000.0 * 0.9f64.powi(j as i32);
            assert!((value - want).abs() < 1e-12 * 1000.0, "{j}: {value}");
        }
    }

    /// Equal k-th and (k+1)-th eigenvalues leave no gap for σ: declined, and the dense route
    /// answers.
    #[test]
    fn a_tie_at_the_cut_is_declined() {
        let (n, k) = (300, 6);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        // A random orthogonal basis, and eigenvalues with λ₆ = λ₇.
        let q = Mat::<f64>::from_fn(n, n, |_, _| rng.random_range(-1.0..1.0))
            .qr()
            .compute_Q();
        let values: Vec<f64> = (0..n)
            .map(|i| {
                if i == 6 {
                    5.0 * 0.8f64.powi(5)
                } else {
                    5.0 * 0.8f64.powi(i as i32)
                }
            })
            .collect();
        let scaled = Mat::from_fn(n, n, |i, l| q[(i, l)] * values[l]);
        let a = &scaled * q.transpose();
        let declined = certified(a.clone(), k, start_vector(n), Par::Seq).unwrap_err();
        assert!(matches!(declined, Decline::NoGap { .. }), "{declined:?}");
        let (found, _, route) = leading_eigen(a.as_ref(), k, 1.0, "test").unwrap();
        for j in 0..k {
            assert!((found[j] - values[j]).abs() < 1e-12, "{j}: {}", found[j]);
        }
        // The route taken says why, in the decline's words.
        let EigenRoute::Dense(DenseReason::Declined(why)) = &route else {
            panic!("{route:?}");
        };
        assert!(
            why.starts_with("the k-th and (k+1)-th eigenvalues are too close"),
            "{why}"
        );
        assert!(route.to_string().ends_with(why.as_str()), "{route}");
    }

    /// The route runs on A scaled to a norm near 1 by a power of two, so A times 2²⁰, 2⁴⁰ or
    /// 2⁻⁴⁰ (a scatter matrix of large values, or of tiny ones) is certified too, with the same
    /// vectors and the values scaled exactly. Unscaled, faer's Krylov–Schur left residuals of
    /// 2e-6 of ‖A‖ on this matrix times 2²⁰ (and the route declined).
    #[test]
    fn any_scale_gives_the_same_bits_scaled() {
        let (n, k) = (600, 60);
        let a = decaying(n, 6);
        let (values, vectors) = certified(a.clone(), k, start_vector(n), Par::Seq).unwrap();
        for exponent in [20, 40, -40] {
            let factor = 2f64.powi(exponent);
            let scaled = Mat::from_fn(n, n, |i, j| a[(i, j)] * factor);
            let (found, found_vectors) = certified(scaled, k, start_vector(n), Par::Seq)
                .unwrap_or_else(|why| panic!("2^{exponent}: declined, {why:?}"));
            let want: Vec<f64> = values.iter().map(|v| v * factor).collect();
            assert_eq!(found, want, "2^{exponent}");
            assert_eq!(found_vectors, vectors, "2^{exponent}");
        }
    }

    /// A zero matrix (every feature constant) and one holding a NaN are declined before any
    /// scaling or Krylov step (without the check, this test ran for 19 minutes without ending,
    /// inside faer's Krylov–Schur); `leading_eigen` answers the zero one.
    #[test]
    fn zero_and_not_finite_matrices_are_declined() {
        let (n, k) = (300, 5);
        let zero = Mat::<f64>::zeros(n, n);
        assert_eq!(
            certified(zero.clone(), k, start_vector(n), Par::Seq),
            Err(Decline::ZeroOrNotFinite)
        );
        let (values, _, _) = leading_eigen(zero.as_ref(), k, 1.0, "test").unwrap();
        assert_eq!(values, vec![0.0; k]);
        let mut nan = decaying(n, 7);
        nan[(3, 2)] = f64::NAN;
        assert_eq!(
            certified(nan, k, start_vector(n), Par::Seq),
            Err(Decline::ZeroOrNotFinite)
        );
    }

    /// Low-rank matrices (integer data of rank 1, 2, 5 and 20 in 300 features) end and are
    /// certified, on one thread and on all, with the dense route's values. Run on A itself, a
    /// rank-1 matrix made faer's Lanczos loop for ever (the test does not end without E).
    #[test]
    fn low_rank_matrices_end_and_are_certified() {
        let n = 300;
        for (rank, k) in [(1, 1), (2, 1), (5, 3), (20, 20)] {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let x =
                Mat::<f64>::from_fn(rank, n, |_, _| rng.random_range(-1.0..1.0f64).round() * 2.0);
            let a = x.transpose() * &x;
            for par in [Par::Seq, Par::rayon(0)] {
                let (values, vectors) = certified(a.clone(), k, start_vector(n), par)
                    .unwrap_or_else(|why| panic!("rank {rank}: declined, {why:?}"));
                assert_like_dense(a.as_ref(), k, &values, vectors.as_ref());
            }
        }
    }

    /// Both routes give the same bits on any number of threads (1,100: above
    /// [`SEQUENTIAL_BELOW`], so Krylov–Schur runs in parallel): faer splits its work into a
    /// fixed number of pieces ([`FAER_PIECES`](crate::kernel::parallel::FAER_PIECES)), not one
    /// per thread (its matrix–vector products, on which Krylov–Schur and the reduction to
    /// tridiagonal form are built, round differently when split differently).
    #[test]
    fn both_routes_give_the_same_bits_on_any_number_of_threads() {
        let (n, k) = (1100, 10);
        let a = decaying(n, 5);
        for route in [Route::Try(None), Route::Dense] {
            let on = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| leading_eigen_from(a.as_ref(), k, 1.0, "test", route.clone()))
                    .unwrap()
            };
            let one = on(1);
            assert_eq!(one.2 == EigenRoute::Certified, route != Route::Dense);
            for threads in [2, 3] {
                assert!(one == on(threads), "{route:?} on {threads} threads");
            }
        }
    }

    /// The route taken is reported (factor analysis stops trying the certified one after a
    /// decline): certified on a decaying spectrum, dense on a tie at the cut, and dense without
    /// an attempt when asked for, with the dense route's very bits.
    #[test]
    fn the_route_taken_is_reported() {
        let (n, k) = (300, 6);
        let a = decaying(n, 8);
        let (_, _, taken) =
            leading_eigen_from(a.as_ref(), k, 1.0, "test", Route::Try(None)).unwrap();
        assert_eq!(taken, EigenRoute::Certified);
        let (values, vectors, taken) =
            leading_eigen_from(a.as_ref(), k, 1.0, "test", Route::Dense).unwrap();
        let earlier = DenseReason::Declined("an earlier, similar matrix declined".into());
        assert_eq!(taken, EigenRoute::Dense(earlier));
        let (want, dense) = top_eigen(a.as_ref(), k, k, 1.0, "test").unwrap();
        assert_eq!((values, vectors), (want, dense));
        let mut tie = Mat::<f64>::zeros(n, n);
        for i in 0..n {
            tie[(i, i)] = if i < k + 4 {
                10.0
            } else {
                1.0 / (1.0 + i as f64)
            };
        }
        let (_, _, taken) =
            leading_eigen_from(tie.as_ref(), k, 1.0, "test", Route::Try(None)).unwrap();
        assert!(
            matches!(taken, EigenRoute::Dense(DenseReason::Declined(_))),
            "{taken:?}"
        );
    }

    /// Both routes flush subnormals only while faer works (`SubnormalsFlushed`): the thread
    /// computes with subnormals again after each, whether the certified route answered,
    /// declined (a tie at the cut, then the dense route) or returned at once (a zero matrix).
    #[test]
    fn both_routes_leave_the_threads_subnormals_as_they_were() {
        let (n, k) = (300, 6);
        let mut tie = Mat::<f64>::zeros(n, n);
        for i in 0..n {
            tie[(i, i)] = if i < k + 4 { 10.0 } else { 1.0 };
        }
        let zero = Mat::<f64>::zeros(n, n);
        let subnormal = || std::hint::black_box(f64::MIN_POSITIVE) / std::hint::black_box(4.0);
        for (a, certified) in [(decaying(n, 8), true), (tie, false), (zero, false)] {
            let (_, _, taken) =
                leading_eigen_from(a.as_ref(), k, 1.0, "test", Route::Try(None)).unwrap();
            assert_eq!(taken == EigenRoute::Certified, certified);
            assert!(!principal_amx::subnormals_flushed());
            assert!(subnormal() > 0.0);
        }
    }

    /// Too small, or too many components for the dimension (8 (k + 5) > n): the dense route,
    /// same answer, and the reason reported; at 8 (k + 5) = n, the certified one.
    #[test]
    fn small_or_wide_requests_take_the_dense_route() {
        let (small, many) = (DenseReason::SmallMatrix, DenseReason::ManyComponents);
        for (n, k, why) in [
            (100, 5, &small),
            (256, 30, &many),
            (300, 300, &many),
            (296, 33, &many),
        ] {
            let a = decaying(n, 5);
            let (values, vectors, route) = leading_eigen(a.as_ref(), k, 1.0, "test").unwrap();
            let (want, dense) = top_eigen(a.as_ref(), k, k, 1.0, "test").unwrap();
            assert_eq!(values, want, "{n}, {k}");
            assert_eq!(vectors, dense, "{n}, {k}");
            assert_eq!(route, EigenRoute::Dense(why.clone()), "{n}, {k}");
        }
        let a = decaying(296, 5);
        let (_, _, route) = leading_eigen(a.as_ref(), 32, 1.0, "test").unwrap();
        assert_eq!(route, EigenRoute::Certified);
    }
}
