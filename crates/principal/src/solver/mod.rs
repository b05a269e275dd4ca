//! The solvers, one file each, each with one entry point `solve`:
//!
//! - `covariance::solve(&Moments, …)`: the eigendecomposition of the covariance matrix from
//!   streamed moments ([`crate::MomentAccumulator`]), as every covariance fit runs it;
//! - `gram::solve(&Problem)`, `svd::solve(&Problem)`: the exact solvers that need the data in
//!   memory, a [`Problem`]: the data as stored, with the training mean and scale; each centres
//!   the blocks it needs as it needs them (only `svd` makes a whole centred copy);
//! - `randomized::solve`, `power::solve`, `em::solve(&mut IterativeProblem)`: the iterative
//!   solvers take an [`IterativeProblem`]: a re-readable [`ChunkSource`] with the training mean
//!   and scale, centred chunk by chunk on every pass, so the data never has to fit in memory.
//!
//! A solver works on the centred (and, if standardizing, scaled) data and returns a
//! [`Spectrum`]: the eigenvalues of the covariance matrix, largest first, with the matching
//! unit eigenvectors. Sorting ties, signs and the choice of the number of components happen in
//! [`crate::PcaModel`], once, for every solver.
//!
//! Inside: this file (the problems, the spectrum, the shared eigensolver) at the bottom;
//! `covariance`, `gram`, `svd` and `iterative` (what the iterative solvers share) on it;
//! `randomized`, `power` and `em` on `iterative`.

use faer::{Mat, MatMut, MatRef};

use crate::collective::{Collective, SingleProcess};
use crate::data::ChunkSource;
use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::options::IterativeOptions;
use crate::preprocess::centre_scale_into;
use crate::real::ChunkRef;
use crate::sparse::source::SparseSource;

pub mod covariance;
pub mod em;
pub mod gram;
pub(crate) mod iterative;
pub(crate) mod krylov;
pub(crate) mod leading;
pub mod missing;
pub mod power;
pub mod randomized;
pub mod svd;

/// What a solver is asked: the data in memory as given, and how to centre (and scale) it.
///
/// The data is not centred beforehand: a solver centres the pieces it needs when it needs them
/// ([`Problem::centred_into`]), so that a solver working by blocks (`gram`, `covariance`)
/// never holds a centred copy of the whole data beside the data itself.
///
/// ```
/// use principal::faer::mat;
/// use principal::solver::{gram, svd, Problem};
/// use principal::ChunkRef;
///
/// // Three samples of four features: N < D, where the Gram solver wins.
/// let x = mat![[1.0, 2.0, 0.0, 5.0], [3.0, 1.0, 1.0, 4.0], [2.0, 0.0, 2.0, 3.0]];
/// let mean = [2.0, 1.0, 1.0, 4.0];
/// let problem = Problem {
///     data: ChunkRef::F64(x.as_ref()),
///     mean: &mean,
///     scale: None,
///     ddof: 1,
///     n_components: 2,
/// };
/// let by_gram = gram::solve(&problem)?;
/// let by_svd = svd::solve(&problem)?;
/// assert_eq!(by_gram.eigenvalues.len(), 3);
/// for (a, b) in by_gram.eigenvalues.iter().zip(&by_svd.eigenvalues) {
///     assert!((a - b).abs() < 1e-12);
/// }
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    /// The N×D data as stored (f32 or f64, any layout), not centred.
    pub data: ChunkRef<'a>,
    /// Per-feature mean, subtracted.
    pub mean: &'a [f64],
    /// Per-feature standard deviation when standardizing, divided by.
    pub scale: Option<&'a [f64]>,
    /// Divide by `N − ddof` for the covariance.
    pub ddof: usize,
    /// How many eigenvectors to return (≤ min(N, D)).
    pub n_components: usize,
}

impl Problem<'_> {
    /// N.
    pub fn n_samples(&self) -> usize {
        self.data.nrows()
    }

    /// D.
    pub fn n_features(&self) -> usize {
        self.data.ncols()
    }

    /// The centred (and scaled) rows `first_row..` and columns `first_col..` of the data, as
    /// many as `out` has, into `out`.
    pub fn centred_into(&self, first_row: usize, first_col: usize, out: MatMut<'_, f64>) {
        let (rows, cols) = (out.nrows(), out.ncols());
        let mean = &self.mean[first_col..first_col + cols];
        let scale = self.scale.map(|s| &s[first_col..first_col + cols]);
        match self.data {
            ChunkRef::F32(x) => centre_scale_into(
                x.submatrix(first_row, first_col, rows, cols),
                mean,
                scale,
                out,
            ),
            ChunkRef::F64(x) => centre_scale_into(
                x.submatrix(first_row, first_col, rows, cols),
                mean,
                scale,
                out,
            ),
        }
    }

    /// The whole data centred (and scaled): a copy, for solvers that need it whole (`svd`).
    pub fn centred(&self) -> Mat<f64> {
        let mut out = Mat::zeros(self.n_samples(), self.n_features());
        self.centred_into(0, 0, out.as_mut());
        out
    }
}

/// Columns (or rows) per block when a solver centres the data a block at a time: about 16 MiB
/// of f64 for blocks of `length` values, at least 256.
pub(crate) fn block_width(length: usize) -> usize {
    ((16usize << 20) / (8 * length.max(1))).max(256)
}

/// What a solver returns.
#[derive(Clone, Debug)]
pub struct Spectrum {
    /// Eigenvalues of the covariance matrix (variances), non-increasing, clipped at 0. Exact
    /// solvers return all min(N, D) of them, unless asked for the leading ones only
    /// ([`covariance::Eigenvalues::Leading`]).
    pub eigenvalues: Vec<f64>,
    /// D×K matrix whose columns are orthonormal eigenvectors for the first K eigenvalues.
    pub vectors: Mat<f64>,
    /// How an iterative solver got there; `None` for exact solvers.
    pub report: Option<IterationReport>,
    /// How the symmetric eigenproblem of an exact solver (covariance, gram) was solved;
    /// `None` for the others.
    pub eigen_route: Option<EigenRoute>,
}

/// How an exact solver's symmetric eigenproblem was solved, for a summary to say.
#[derive(Clone, Debug, PartialEq)]
pub enum EigenRoute {
    /// faer's Krylov–Schur for the leading eigenpairs only, its answer certified: residuals at
    /// rounding level, a gap after the k-th value, and a Cholesky factorisation proving that no
    /// eigenvalue above the gap was missed.
    Certified,
    /// faer's whole symmetric eigendecomposition (tridiagonal QR), for this reason.
    Dense(DenseReason),
}

/// Why an exact solver decomposed its whole matrix ([`EigenRoute::Dense`]).
#[derive(Clone, Debug, PartialEq)]
pub enum DenseReason {
    /// Every eigenvalue is needed: a rule or cross-validation chooses the number of
    /// components from the spectrum.
    EveryValue,
    /// The matrix is too small for the certified route to pay (under 256 rows).
    SmallMatrix,
    /// `8 (k + 5)` exceeds the dimension: the Krylov space would be a large part of it.
    ManyComponents,
    /// The gram solver decomposes its N×N matrix whole.
    Gram,
    /// The certified route ran and declined, for this reason.
    Declined(String),
}

impl std::fmt::Display for EigenRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EigenRoute::Certified => f.write_str(
                "certified Krylov–Schur (the leading eigenpairs only; residuals, gap and \
                 none-missed checks passed)",
            ),
            EigenRoute::Dense(reason) => write!(f, "dense (tridiagonal QR): {reason}"),
        }
    }
}

impl std::fmt::Display for DenseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DenseReason::EveryValue => {
                f.write_str("every eigenvalue is needed to choose the number of components")
            }
            DenseReason::SmallMatrix => {
                f.write_str("the matrix is too small for the certified route to pay")
            }
            DenseReason::ManyComponents => f.write_str(
                "8 (k + 5) exceeds the dimension, too many components for the certified route",
            ),
            DenseReason::Gram => f.write_str("the gram solver decomposes its N×N matrix whole"),
            DenseReason::Declined(why) => write!(f, "the certified route declined: {why}"),
        }
    }
}

/// What an iterative solver did and how good its answer is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterationReport {
    /// Passes over the data (each applies `Xsᵀ Xs` once), the first pass for the mean excluded.
    pub passes: usize,
    /// A-posteriori error estimate: `max_m ‖S b_m − λ_m b_m‖ / λ₁` over the kept components.
    /// Each explained variance is within `error_estimate · λ₁` of an exact eigenvalue of S.
    pub error_estimate: f64,
    /// Whether the requested tolerance was met (always true without a tolerance).
    pub converged: bool,
}

/// What an iterative solver is asked: a re-readable source and the training preprocessing.
///
/// ```
/// use principal::faer::mat;
/// use principal::solver::{randomized, IterativeProblem};
/// use principal::{InMemory, IterativeOptions};
///
/// // Points along the diagonal: one direction of variance.
/// let x = mat![[1.0, 1.1], [2.0, 1.9], [3.0, 3.2], [4.0, 3.8]];
/// let mean = [2.5, 2.5];
/// let xc: Vec<f64> = (0..4).map(|i| x[(i, 0)] - mean[0]).collect();
/// let yc: Vec<f64> = (0..4).map(|i| x[(i, 1)] - mean[1]).collect();
/// let total = (xc.iter().map(|v| v * v).sum::<f64>() + yc.iter().map(|v| v * v).sum::<f64>()) / 3.0;
/// let mut source = InMemory::new(x.as_ref(), 2);
/// let options = IterativeOptions { tolerance: Some(1e-12), ..Default::default() };
/// let mut problem = IterativeProblem::new(&mut source, &mean, None, 4, 1, 1, total, options);
/// let spectrum = randomized::solve(&mut problem)?;
/// assert!(spectrum.eigenvalues[0] > 0.99 * total);
/// assert!(spectrum.report.expect("iterative solvers report").converged);
/// # Ok::<(), principal::PcaError>(())
/// ```
pub struct IterativeProblem<'a> {
    /// The data, uncentred, chunk by chunk (dense) or block by block (sparse).
    pub(crate) rows: Rows<'a>,
    /// Training mean.
    pub(crate) mean: &'a [f64],
    /// Training standard deviations when standardizing.
    pub(crate) scale: Option<&'a [f64]>,
    /// How chunks are centred (see [`Centring::choose`]).
    pub(crate) centring: Centring,
    /// N.
    pub(crate) n_samples: usize,
    /// Divide by `N − ddof` for the covariance.
    pub(crate) ddof: usize,
    /// How many eigenpairs to return.
    pub(crate) n_components: usize,
    /// trace(S), the total variance in scaled units (EM's noise variance needs it).
    pub(crate) total_variance: f64,
    /// Seed, tolerance and iteration limits.
    pub(crate) options: IterativeOptions,
    /// The processes whose parts of the data make up the whole ([`SingleProcess`] unless the
    /// fit is distributed): every pass's block is summed over them.
    pub(crate) collective: &'a dyn Collective,
}

impl<'a> IterativeProblem<'a> {
    /// The top `n_components` eigenpairs of the covariance (divisor `n_samples − ddof`) of the
    /// `n_samples` rows of `source`, centred on `mean` and divided by `scale` when
    /// standardizing; `total_variance` is trace(S) in those units (the em solver's noise
    /// variance needs it).
    pub fn new(
        source: &'a mut dyn ChunkSource,
        mean: &'a [f64],
        scale: Option<&'a [f64]>,
        n_samples: usize,
        ddof: usize,
        n_components: usize,
        total_variance: f64,
        options: IterativeOptions,
    ) -> Self {
        Self::over(
            Rows::Dense(source),
            mean,
            scale,
            n_samples,
            ddof,
            n_components,
            total_variance,
            options,
        )
    }

    /// [`Self::new`] over dense or sparse rows. Sparse rows are always centred implicitly
    /// (an explicit copy would densify them).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn over(
        rows: Rows<'a>,
        mean: &'a [f64],
        scale: Option<&'a [f64]>,
        n_samples: usize,
        ddof: usize,
        n_components: usize,
        total_variance: f64,
        options: IterativeOptions,
    ) -> Self {
        let centring = match rows {
            Rows::Dense(_) => Centring::choose(mean, scale, total_variance),
            Rows::Sparse(_) => Centring::Implicit,
        };
        IterativeProblem {
            rows,
            mean,
            scale,
            centring,
            n_samples,
            ddof,
            n_components,
            total_variance,
            options,
            collective: &SingleProcess,
        }
    }

    /// The same problem over every rank's part of the data: `source` is this rank's part, the
    /// mean, scale, count and total variance are the whole data's.
    pub(crate) fn across(self, collective: &'a dyn Collective) -> Self {
        IterativeProblem { collective, ..self }
    }
}

/// The rows an iterative solver passes over: dense chunks or sparse (CSR) blocks.
pub(crate) enum Rows<'a> {
    /// Dense chunks of rows.
    Dense(&'a mut dyn ChunkSource),
    /// CSR blocks of rows, never densified.
    Sparse(&'a mut dyn SparseSource),
}

impl Rows<'_> {
    /// The same rows, borrowed for a shorter time.
    pub(crate) fn reborrow(&mut self) -> Rows<'_> {
        match self {
            Rows::Dense(source) => Rows::Dense(&mut **source),
            Rows::Sparse(source) => Rows::Sparse(&mut **source),
        }
    }
}

/// How an iterative solver's chunks are centred on every pass. Centring is done chunk by chunk:
/// never `X − 1μᵀ` for the whole X, and never `XᵀX − N μμᵀ`, which would lose everything under
/// an offset of 1e6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Centring {
    /// Copy each block, subtract the mean, then multiply: exact under any offset.
    Explicit,
    /// Multiply the raw f64 chunk and subtract the mean's contribution afterwards
    /// (`Xc P = X P − 1 μᵀP`, `Xcᵀ Y = Xᵀ Y − μ 1ᵀY`): no copy, one large product per chunk.
    /// Its error is about ε·‖μ‖/spread relative, so it is used only when the mean is within
    /// 10³ spreads of zero.
    Implicit,
}

impl Centring {
    /// Implicit when `‖μ/σ‖ ≤ 10³ · sqrt(total variance)`, else explicit.
    pub(crate) fn choose(mean: &[f64], scale: Option<&[f64]>, total_variance: f64) -> Centring {
        let offset: f64 = mean
            .iter()
            .enumerate()
            .map(|(j, m)| (m / scale.map_or(1.0, |s| s[j])).powi(2))
            .sum::<f64>()
            .sqrt();
        if offset <= 1e3 * total_variance.sqrt() {
            Centring::Implicit
        } else {
            Centring::Explicit
        }
    }
}

/// The top `k` eigenpairs of the symmetric matrix `a` (only its lower triangle is read),
/// largest first; every eigenvalue is returned (up to `n_values`), divided by `divisor`.
///
/// faer's own pieces of its symmetric eigendecomposition (tridiagonalisation, the tridiagonal
/// eigensolver, the Householder back-transformation), composed so that only the `k` wanted
/// vectors are back-transformed: back-transforming all of them is a large share of the whole
/// decomposition when few are wanted (bench/results.md).
pub(crate) fn top_eigen(
    a: MatRef<'_, f64>,
    k: usize,
    n_values: usize,
    divisor: f64,
    solver: &'static str,
) -> Result<(Vec<f64>, Mat<f64>)> {
    top_eigen_on(a, k, n_values, divisor, solver, faer_par())
}

/// [`top_eigen`] on the threads `par` gives.
fn top_eigen_on(
    a: MatRef<'_, f64>,
    k: usize,
    n_values: usize,
    divisor: f64,
    solver: &'static str,
    par: faer::Par,
) -> Result<(Vec<f64>, Mat<f64>)> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::evd;

    let n = a.nrows();
    assert!(
        k <= n && a.ncols() == n,
        "top_eigen: {k} of a {n}×{} matrix",
        a.ncols()
    );
    if n == 0 {
        return Ok((Vec::new(), Mat::zeros(0, 0)));
    }
    // As in the certified route (`leading::certified`): faer's norms, one per Householder
    // reflection here, are slow on Intel cores unless subnormals are flushed on this thread;
    // 784×784, 50 pairs: 0.101 → 0.091 s (bench/results.md, 2026-12-07).
    let _flushed = principal_amx::SubnormalsFlushed::new();
    let mut buffer = MemBuffer::new(evd::self_adjoint_evd_scratch::<f64>(
        n,
        evd::ComputeEigenvectors::Yes,
        par,
        Default::default(),
    ));
    let stack = MemStack::new(&mut buffer);
    let mut trid = Mat::<f64>::zeros(n, n);
    trid.copy_from_triangular_lower(a);
    let block = faer::linalg::qr::no_pivoting::factor::recommended_block_size::<f64>(n, n);
    let mut householder = Mat::<f64>::zeros(block, n - 1);
    evd::tridiag::tridiag_in_place(
        trid.as_mut(),
        householder.as_mut(),
        par,
        stack,
        Default::default(),
    );
    let diag = faer::Col::<f64>::from_fn(n, |i| trid[(i, i)]);
    let offdiag = faer::Col::<f64>::from_fn(n, |i| if i + 1 < n { trid[(i + 1, i)] } else { 0.0 });
    let mut s = faer::Col::<f64>::zeros(n);
    let mut u = Mat::<f64>::zeros(n, n);
    evd::tridiagonal_self_adjoint_evd(
        diag.as_diagonal(),
        offdiag.as_diagonal(),
        s.as_mut().as_diagonal_mut(),
        Some(u.as_mut()),
        par,
        stack,
        Default::default(),
    )
    .map_err(|e| PcaError::NoConvergence {
        solver,
        detail: format!("{e:?}"),
    })?;
    // Ascending order from faer; the largest first here.
    let values: Vec<f64> = (0..n_values.min(n))
        .map(|i| (s[n - 1 - i] / divisor).max(0.0))
        .collect();
    let mut vectors = Mat::from_fn(n, k, |i, j| u[(i, n - 1 - j)]);
    faer::linalg::householder::apply_block_householder_sequence_on_the_left_in_place_with_conj(
        trid.submatrix(1, 0, n - 1, n - 1),
        householder.as_ref(),
        faer::Conj::No,
        vectors.as_mut().subrows_mut(1, n - 1),
        par,
        stack,
    );
    Ok((values, vectors))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{Centring, Problem, Spectrum, top_eigen, top_eigen_on};
    use crate::options::Scaling;
    use crate::preprocess::Preprocessing;
    use crate::real::ChunkRef;
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Data for the exact solvers in three layouts: f64 column-major, f64 row-major (as
    /// readers give it) and f32 row-major; and how many components to compare.
    pub(crate) struct TestData {
        by_columns: Mat<f64>,
        by_rows: Mat<f64>,
        by_rows32: Mat<f32>,
        k: usize,
    }

    impl TestData {
        pub(crate) fn chunks(&self) -> [ChunkRef<'_>; 3] {
            [
                ChunkRef::F64(self.by_columns.as_ref()),
                ChunkRef::F64(self.by_rows.transpose()),
                ChunkRef::F32(self.by_rows32.transpose()),
            ]
        }

        pub(crate) fn problem<'a>(
            &self,
            data: ChunkRef<'a>,
            mean: &'a [f64],
            scale: Option<&'a [f64]>,
        ) -> Problem<'a> {
            Problem {
                data,
                mean,
                scale,
                ddof: 1,
                n_components: self.k,
            }
        }
    }

    /// Wide (with an offset of 1e6), tall, and rank-deficient data, centred and standardized:
    /// the data, its mean and its scale.
    pub(crate) fn wide_and_tall_problems() -> Vec<(TestData, Vec<f64>, Option<Vec<f64>>)> {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut cases = Vec::new();
        for (n, d, rank, k, offset) in [
            (12, 40, None, 5, 1e6),
            (40, 9, None, 4, 0.0),
            (20, 30, Some(3), 3, 5.0),
        ] {
            let x = match rank {
                None => Mat::from_fn(n, d, |_, j| {
                    offset + rng.random_range(-1.0..1.0) * (1.0 + j as f64)
                }),
                Some(r) => {
                    let a = Mat::<f64>::from_fn(n, r, |_, _| rng.random_range(-1.0..1.0));
                    let b = Mat::<f64>::from_fn(r, d, |_, _| rng.random_range(-1.0..1.0));
                    let product = &a * &b;
                    Mat::from_fn(n, d, |i, j| product[(i, j)] + offset)
                }
            };
            for scaling in [Scaling::Centre, Scaling::Standardize] {
                let prep = Preprocessing::from_data(x.as_ref(), scaling, 1).unwrap();
                let data = TestData {
                    by_columns: x.clone(),
                    by_rows: x.transpose().to_owned(),
                    by_rows32: Mat::from_fn(d, n, |j, i| x[(i, j)] as f32),
                    k,
                };
                cases.push((data, prep.mean, prep.scale));
            }
        }
        cases
    }

    /// `solve` with blocks of 1, 7 and all columns or rows gives the svd solver's spectrum on
    /// every problem of [`wide_and_tall_problems`] in every layout.
    pub(crate) fn assert_blocks_give_the_svd_answer(
        what: &str,
        solve: impl Fn(&Problem<'_>, usize) -> crate::error::Result<Spectrum>,
    ) {
        for (x, mean, scale) in wide_and_tall_problems() {
            for data in x.chunks() {
                let problem = x.problem(data, &mean, scale.as_deref());
                let reference = super::svd::solve(&problem).unwrap();
                for size in [1, 7, usize::MAX] {
                    let found = solve(&problem, size).unwrap();
                    assert_same_spectrum(&found, &reference, &format!("{what}, blocks of {size}"));
                }
            }
        }
    }

    /// Eigenvalues within 1e-10 of the largest, and the compared vectors equal up to sign.
    pub(crate) fn assert_same_spectrum(found: &Spectrum, reference: &Spectrum, what: &str) {
        let (a, b) = (&found.eigenvalues, &reference.eigenvalues);
        assert_eq!(a.len(), b.len(), "{what}: number of eigenvalues");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-10 * b[0],
                "{what}: eigenvalue {i}: {x} against {y}"
            );
        }
        let (v, w) = (&found.vectors, &reference.vectors);
        assert_eq!(
            (v.nrows(), v.ncols()),
            (w.nrows(), w.ncols()),
            "{what}: vectors"
        );
        for j in 0..w.ncols() {
            let dot: f64 = (0..w.nrows()).map(|i| v[(i, j)] * w[(i, j)]).sum();
            assert!(
                dot.abs() >= 1.0 - 1e-9,
                "{what}: vector {j}: |cos| = {}",
                dot.abs()
            );
        }
    }

    /// Chunks far from zero (10⁶ spreads) are centred explicitly; near zero, implicitly.
    #[test]
    fn centring_is_explicit_only_far_from_zero() {
        assert_eq!(Centring::choose(&[1e6; 40], None, 1.0), Centring::Explicit);
        assert_eq!(Centring::choose(&[3.0; 40], None, 1.0), Centring::Implicit);
        assert_eq!(
            Centring::choose(&[1e6; 40], Some(&[1e4; 40]), 1.0),
            Centring::Implicit
        );
    }

    /// Wall and CPU time of [`top_eigen`] (50 of 784, case 1's) and of the certified partial
    /// route against faer's whole decomposition, on all threads and on one, on random data (a
    /// flat spectrum, the partial route's worst case): `cargo test --release --workspace --lib
    /// -- --ignored --nocapture time_top_eigen` (bench/results.md).
    #[test]
    #[ignore = "a timing loop, for bench/results.md"]
    fn time_top_eigen() {
        let cpu = || -> f64 {
            // utime + stime of every thread, in ticks of 10 ms.
            let stat = std::fs::read_to_string("/proc/self/stat").expect("Linux's /proc");
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .collect();
            (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) * 0.01
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for n in [100, 784, 2000] {
            let x = Mat::<f64>::from_fn(n + 50, n, |_, _| rng.random_range(-1.0..1.0));
            let a = x.transpose() * &x;
            let time = |what: &str, f: &mut dyn FnMut()| {
                f();
                let (wall, start) = (std::time::Instant::now(), cpu());
                let reps = 3;
                for _ in 0..reps {
                    f();
                }
                let cpu_s = (cpu() - start) / reps as f64;
                let wall_s = wall.elapsed().as_secs_f64() / reps as f64;
                println!("{n}×{n} {what}: {wall_s:.4} s wall, {cpu_s:.4} s CPU (all threads)");
            };
            time("top_eigen(50)", &mut || {
                top_eigen(a.as_ref(), 50.min(n), n, 1.0, "t").unwrap();
            });
            time("top_eigen(50) on one thread", &mut || {
                top_eigen_on(a.as_ref(), 50.min(n), n, 1.0, "t", faer::Par::Seq).unwrap();
            });
            time(
                "leading_eigen(50) (certified Krylov–Schur, or the dense route)",
                &mut || {
                    super::leading::leading_eigen(a.as_ref(), 50.min(n), 1.0, "t").unwrap();
                },
            );
            time("faer self_adjoint_eigen", &mut || {
                a.self_adjoint_eigen(faer::Side::Lower).unwrap();
            });
            time("faer self_adjoint_eigenvalues", &mut || {
                a.self_adjoint_eigenvalues(faer::Side::Lower).unwrap();
            });
        }
    }

    /// Only the wanted vectors are back-transformed: they, and every eigenvalue, must be
    /// faer's whole decomposition's (to rounding), for a few sizes and counts, 1×1 included.
    #[test]
    fn top_eigenpairs_match_the_whole_decomposition() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (n, k) in [(1, 1), (2, 1), (5, 5), (40, 3), (130, 17), (300, 300)] {
            let x = Mat::<f64>::from_fn(n + 3, n, |_, _| rng.random_range(-1.0..1.0));
            let a = x.transpose() * &x;
            let (values, vectors) = top_eigen(a.as_ref(), k, n, 2.0, "test").unwrap();
            let whole = a.self_adjoint_eigen(faer::Side::Lower).unwrap();
            let (s, u) = (whole.S().column_vector(), whole.U());
            let scale = s[n - 1];
            assert_eq!(values.len(), n);
            for i in 0..n {
                let want = s[n - 1 - i] / 2.0;
                assert!((values[i] - want).abs() <= 1e-12 * scale, "{n}: value {i}");
            }
            assert_eq!((vectors.nrows(), vectors.ncols()), (n, k));
            for j in 0..k {
                let want = u.col(n - 1 - j);
                let dot: f64 = (0..n).map(|i| vectors[(i, j)] * want[i]).sum();
                let sign = dot.signum();
                for i in 0..n {
                    let diff = (vectors[(i, j)] - sign * want[i]).abs();
                    assert!(diff <= 1e-9, "{n}: vector {j} entry {i} off by {diff:e}");
                }
                // A v = λ v, with λ before the division.
                let av = &a * vectors.col(j);
                let lambda = 2.0 * values[j];
                for i in 0..n {
                    assert!((av[i] - lambda * vectors[(i, j)]).abs() <= 1e-10 * scale);
                }
            }
        }
    }
}
