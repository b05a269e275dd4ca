//! Bayesian PCA (Bishop 1999, "Bayesian PCA", NIPS 11): probabilistic PCA whose loadings W
//! (D×K, K the most components allowed) have an automatic-relevance-determination prior, one
//! precision α_i per column, so that the columns the data does not need are switched off.
//!
//! ```text
//! z ~ N(0, I_K),  x = W z + μ + ε,  ε ~ N(0, σ² I_D),  p(W | α) = Π_i N(w_i; 0, α_i⁻¹ I_D)
//! ```
//!
//! The fit is the fixed point of Bishop's own scheme (not a variational one): EM for the
//! maximum a posteriori W, μ, σ², with α re-estimated after every step by type-II maximum
//! likelihood:
//!
//! ```text
//! E step (per row n, observing the features O_n; e = x_O − μ_O):
//!     M_n = W_Oᵀ W_O + σ² I,   z̄_n = M_n⁻¹ W_Oᵀ e,   Σ_n = σ² M_n⁻¹
//! M step (per feature j over the rows observing it; z̃ = (z, 1), w̃_j = (w_j, μ_j)):
//!     A_j = Σ_n E[z̃ z̃ᵀ],  b_j = Σ_n x_nj E[z̃],   w̃_j = (A_j + σ² diag(α, 0))⁻¹ b_j
//!     σ² = (1 / #observed) Σ_j (Σ_n x_nj² − 2 b_jᵀ w̃_j + w̃_jᵀ A_j w̃_j)
//! then α_i = D / ‖w_i‖²
//! ```
//!
//! With complete rows the E step is the same for every row. The ARD term σ² α_i in the M step
//! grows as ‖w_i‖ shrinks, so a column the data does not support collapses (its norm falls
//! about cubically once small): a column is switched off, α_i = ∞ and w_i = 0 from then on, when
//! ‖w_i‖² falls below [`SWITCH_OFF`] × the total variance (the sum of the features' variances);
//! the columns left are the model's `n_components`. Missing values (NaN, with
//! [`MissingValues::Em`]) are handled as in `solver::missing`: the E step uses each row's
//! observed features, the M step each feature's observing rows, the mean estimated jointly.
//!
//! The start is the top-K principal subspace of the centred data (holes as zeros), so the fit
//! is deterministic and needs no seed.
//!
//! **Complete rows are solved directly.** There the fixed point lies along the covariance's
//! eigenvectors, with each column's scale the root of a quadratic and σ² that of another
//! (`map_of_complete_rows` derives them): one SVD of the data, EM's own steps in the eigenbasis
//! at O(K) each (they decide which columns are switched off), and a scalar fixed point. EM
//! over the data gets there too, but shrinks the scales by about σ²α_i/N a step, which with
//! little noise is too slow to finish: 1,200 × 400 rows of 12 factors with 15 columns allowed
//! ran its 10,000 steps (40 s) without meeting the tolerance, and the direct solution takes
//! 0.1 s. EM over the data (with the tolerance and step limit of [`BayesianPcaOptions`]) fits
//! rows with missing values.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::{factor as llt_factor, solve as llt_solve};
use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, Conj, Mat, MatMut, MatRef, Par, Side};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Parameter, PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::model::fix_sign;
use crate::models::{LatentModel, ModelKind, Operation, check_finite};
use crate::options::MissingValues;
use crate::real::Real;

/// `ln(2π)`.
pub(crate) const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// A column of W is switched off (α = ∞) when ‖w_i‖² falls below this fraction of the total
/// variance.
pub const SWITCH_OFF: f64 = 1e-9;

/// The default tolerance: EM (rows with missing values) stops when no parameter (a column of
/// W, μ, σ²) moved by more than this, relative to its size, in one EM step.
pub const DEFAULT_TOLERANCE: f64 = 1e-8;

/// The default limit on EM steps (rows with missing values).
pub const DEFAULT_MAX_ITERATIONS: usize = 10_000;

/// What a Bayesian PCA fit is asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BayesianPcaOptions {
    /// K, the most components (columns of W): 1 ≤ K ≤ D − 1.
    pub max_components: usize,
    /// Whether NaN is an error or a missing value.
    pub missing: MissingValues,
    /// The relative change of the parameters in one EM step under which EM stops (rows with
    /// missing values; complete rows are solved directly).
    pub tolerance: f64,
    /// The most EM steps (rows with missing values).
    pub max_iterations: usize,
}

impl BayesianPcaOptions {
    /// At most `max_components` components, NaN an error, the default tolerance and limit.
    pub fn new(max_components: usize) -> Self {
        BayesianPcaOptions {
            max_components,
            missing: MissingValues::Reject,
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
        }
    }
}

/// The parts of a fitted [`BayesianPca`], as a model file stores them.
#[derive(Clone, Debug, PartialEq)]
pub struct BayesianPcaParts {
    /// μ, length D.
    pub mean: Vec<f64>,
    /// The kept columns of W as rows, K×D (K ≥ 1), by decreasing norm.
    pub components: Mat<f64>,
    /// α of every column allowed, the kept ones first (in the order of `components`), then
    /// `f64::INFINITY` for each switched off.
    pub alpha: Vec<f64>,
    /// σ² > 0.
    pub noise_variance: f64,
    /// The mean log-likelihood per row on the training data.
    pub log_likelihood: f64,
    /// Training rows (with at least one observed value).
    pub n_samples: usize,
    /// EM steps taken (for complete rows, in the covariance's eigenbasis before the fixed point
    /// was solved for).
    pub iterations: usize,
    /// Whether EM met the tolerance, or the direct solution's scalar fixed point settled.
    pub converged: bool,
}

/// A fitted Bayesian PCA: loadings, their ARD precisions, noise, mean, and how EM went.
///
/// ```
/// use principal::{faer::Mat, BayesianPca, BayesianPcaOptions};
///
/// // Two strong directions and a little noise in 6 features; 4 columns allowed.
/// let x = Mat::from_fn(200, 6, |i, j| {
///     let (a, b) = ((i as f64 * 0.37).sin(), (i as f64 * 0.91).cos());
///     let noise = ((i * 7 + j * 13) % 17) as f64 / 170.0;
///     a * (j as f64 + 1.0) + b * (3.0 - j as f64) + noise
/// });
/// let model = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(4))?;
/// assert_eq!(model.n_components(), 2);
/// assert!(model.alpha()[2].is_infinite());
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BayesianPca {
    parts: BayesianPcaParts,
    log_likelihood_history: Vec<f64>,
    /// Whether the fit solved for EM's fixed point directly (complete rows).
    solved_directly: bool,
}

/// Each feature's observed mean (the centring), and the data centred by it (holes as zeros)
/// with its mask.
struct Centred {
    mean: Vec<f64>,
    y: Mat<f64>,
    observed: Vec<Vec<bool>>,
    rows_missing: Vec<usize>,
    n_observed: usize,
}

fn centre<T: Real>(x: MatRef<'_, T>, missing: MissingValues) -> Result<Centred> {
    let (n, d) = (x.nrows(), x.ncols());
    let mut count = vec![0usize; d];
    let mut sum = vec![0.0; d];
    let mut first = vec![f64::NAN; d];
    let mut keep = Vec::with_capacity(n);
    for i in 0..n {
        let mut any = false;
        for j in 0..d {
            let v = x[(i, j)].to_f64();
            if v.is_nan() && missing == MissingValues::Em {
                continue;
            }
            if !v.is_finite() {
                return Err(PcaError::NonFinite {
                    row: i,
                    column: j,
                    value: v,
                });
            }
            any = true;
            if count[j] == 0 {
                first[j] = v;
            }
            // About the first value: an offset of 1e6 costs no digits.
            sum[j] += v - first[j];
            count[j] += 1;
        }
        if any {
            keep.push(i);
        }
    }
    if let Some(column) = count.iter().position(|&c| c == 0) {
        return Err(PcaError::EmptyFeature { column });
    }
    let mean: Vec<f64> = (0..d)
        .map(|j| first[j] + sum[j] / count[j] as f64)
        .collect();
    let rows = keep.len();
    let mut y = Mat::zeros(rows, d);
    let mut observed = Vec::new();
    let mut rows_missing = Vec::new();
    let mut n_observed = 0;
    for (r, &i) in keep.iter().enumerate() {
        let mut mask = vec![true; d];
        let mut holes = false;
        for j in 0..d {
            let v = x[(i, j)].to_f64();
            if v.is_nan() {
                mask[j] = false;
                holes = true;
            } else {
                y[(r, j)] = v - mean[j];
                n_observed += 1;
            }
        }
        if holes {
            rows_missing.push(r);
        }
        observed.push(mask);
    }
    Ok(Centred {
        mean,
        y,
        observed,
        rows_missing,
        n_observed,
    })
}

/// The E step of one row against W (D×k), μ and σ²: z̄_n, log N(x_O; …) and the factor of
/// M_n, from which Σ_n = σ² M_n⁻¹ is formed only where it is needed (the M step's rows with
/// holes, and once for all the complete rows, which share it).
pub(crate) struct RowPosterior<'s> {
    /// z̄_n.
    pub mean: &'s [f64],
    /// `log N(x_O; μ_O, W_O W_Oᵀ + σ² I)`.
    pub log_likelihood: f64,
    /// M_n's Cholesky factor L (lower triangle): the model's own for a complete row.
    factor: MatRef<'s, f64>,
}

impl RowPosterior<'_> {
    /// Σ_n = σ² M_n⁻¹.
    pub(crate) fn covariance(&self, noise: f64) -> Mat<f64> {
        let k = self.factor.nrows();
        let mut covariance = Mat::zeros(k, k);
        self.covariance_into(noise, covariance.as_mut());
        covariance
    }

    /// Σ_n = σ² M_n⁻¹, written into `out` (k×k).
    pub(crate) fn covariance_into(&self, noise: f64, mut out: MatMut<'_, f64>) {
        let k = self.factor.nrows();
        for c in 0..k {
            for r in 0..k {
                out[(r, c)] = if r == c { 1.0 } else { 0.0 };
            }
        }
        llt_solve::solve_in_place_with_conj(
            self.factor,
            Conj::No,
            out.as_mut(),
            Par::Seq,
            MemStack::new(&mut []),
        );
        for c in 0..k {
            for r in 0..k {
                out[(r, c)] *= noise;
            }
        }
    }
}

/// The working memory of [`LatentGaussian::row`], reused from row to row: an EM fit asks for
/// millions of rows' posteriors, and allocating each one's factor and mean took a third of its
/// time.
pub(crate) struct RowScratch {
    /// M_n, then its Cholesky factor in the lower triangle (a row with holes).
    factor: Mat<f64>,
    /// z̄_n.
    mean: Vec<f64>,
    /// faer's workspace for the factorisation.
    stack: MemBuffer,
}

/// The Gaussian `x = W z + μ + ε` seen through the observed features of rows.
pub(crate) struct LatentGaussian<'a> {
    /// D×k.
    pub w: MatRef<'a, f64>,
    /// σ².
    pub noise: f64,
    /// WᵀW + σ² I, the start of every row's M_n (a row with holes subtracts its missing
    /// features' w_j w_jᵀ).
    m_full: Mat<f64>,
    /// Its Cholesky factor and log-determinant.
    full: (faer::linalg::solvers::Llt<f64>, f64),
}

impl<'a> LatentGaussian<'a> {
    /// The model of loadings `w` and noise `noise` (> 0).
    pub(crate) fn new(w: MatRef<'a, f64>, noise: f64) -> Result<Self> {
        let k = w.ncols();
        let m_full = w.transpose() * w + Mat::<f64>::identity(k, k) * noise;
        let full = factor(&m_full)?;
        Ok(LatentGaussian {
            w,
            noise,
            m_full,
            full,
        })
    }

    /// Working memory for [`LatentGaussian::row`].
    pub(crate) fn scratch(&self) -> RowScratch {
        let k = self.w.ncols();
        RowScratch {
            factor: Mat::zeros(k, k),
            mean: vec![0.0; k],
            stack: MemBuffer::new(llt_factor::cholesky_in_place_scratch::<f64>(
                k,
                Par::Seq,
                Default::default(),
            )),
        }
    }

    /// The posterior and log-likelihood of a row whose deviation from the mean is `e` (zeros
    /// where missing), observing `mask` (`None`: every feature), with `t = Wᵀ e`; computed in
    /// `scratch`, which the result borrows.
    pub(crate) fn row<'s>(
        &'s self,
        e: &[f64],
        t: &[f64],
        mask: Option<&[bool]>,
        scratch: &'s mut RowScratch,
    ) -> Result<RowPosterior<'s>> {
        let k = self.w.ncols();
        let d = e.len();
        let RowScratch {
            factor,
            mean,
            stack,
        } = scratch;
        let (l, log_det, seen) = match mask {
            None => (self.full.0.L(), self.full.1, d),
            Some(mask) => {
                factor.copy_from(&self.m_full);
                let mut seen = 0;
                for (j, &o) in mask.iter().enumerate() {
                    if o {
                        seen += 1;
                        continue;
                    }
                    for a in 0..k {
                        for b in 0..k {
                            factor[(a, b)] -= self.w[(j, a)] * self.w[(j, b)];
                        }
                    }
                }
                llt_factor::cholesky_in_place(
                    factor.as_mut(),
                    Default::default(),
                    Par::Seq,
                    MemStack::new(stack),
                    Default::default(),
                )
                .map_err(|_| not_positive_definite())?;
                let factor: &'s Mat<f64> = factor;
                let log_det = (0..k).map(|p| 2.0 * factor[(p, p)].ln()).sum();
                (factor.as_ref(), log_det, seen)
            }
        };
        mean.copy_from_slice(t);
        llt_solve::solve_in_place_with_conj(
            l,
            Conj::No,
            faer::ColMut::from_slice_mut(mean).as_mat_mut(),
            Par::Seq,
            MemStack::new(&mut []),
        );
        let mean: &'s [f64] = mean;
        let e2: f64 = e.iter().map(|v| v * v).sum();
        let explained: f64 = t.iter().zip(mean).map(|(a, b)| a * b).sum();
        let quad = (e2 - explained).max(0.0) / self.noise;
        let log_likelihood = -0.5
            * (seen as f64 * LN_2PI + log_det + (seen as f64 - k as f64) * self.noise.ln() + quad);
        Ok(RowPosterior {
            mean,
            log_likelihood,
            factor: l,
        })
    }
}

fn not_positive_definite() -> PcaError {
    PcaError::DegenerateModel("Wᵀ W + σ² I is not positive definite".into())
}

fn factor(m: &Mat<f64>) -> Result<(faer::linalg::solvers::Llt<f64>, f64)> {
    let llt = m.llt(Side::Lower).map_err(|_| not_positive_definite())?;
    let log_det = (0..m.nrows()).map(|p| 2.0 * llt.L()[(p, p)].ln()).sum();
    Ok((llt, log_det))
}

/// Per row, which entries are observed (`None`: all of them).
type ObservedMask = Vec<Option<Vec<bool>>>;

/// `x − μ` for every row (zeros where `x` is NaN), the mask of observed entries when there are
/// holes, and `Wᵀ (x − μ)`: one column per row (D×N and k×N).
fn deviations<T: Real>(
    x: MatRef<'_, T>,
    mean: &[f64],
    w: MatRef<'_, f64>,
) -> Result<(Mat<f64>, ObservedMask, Mat<f64>)> {
    let (n, d) = (x.nrows(), x.ncols());
    if d != mean.len() {
        return Err(PcaError::FeatureMismatch {
            expected: mean.len(),
            found: d,
        });
    }
    let mut e = Mat::zeros(d, n);
    let mut masks = Vec::with_capacity(n);
    for i in 0..n {
        let mut mask: Option<Vec<bool>> = None;
        for j in 0..d {
            let v = x[(i, j)].to_f64();
            if v.is_nan() {
                mask.get_or_insert_with(|| vec![true; d])[j] = false;
            } else if !v.is_finite() {
                return Err(PcaError::NonFinite {
                    row: i,
                    column: j,
                    value: v,
                });
            } else {
                e[(j, i)] = v - mean[j];
            }
        }
        if mask.as_ref().is_some_and(|m| m.iter().all(|o| !o)) {
            return Err(PcaError::DegenerateModel(format!(
                "row {i} has no observed value"
            )));
        }
        masks.push(mask);
    }
    let t = projections(w, e.as_ref(), faer_par());
    Ok((e, masks, t))
}

impl BayesianPca {
    /// Fits Bayesian PCA to `x` (N×D, one sample per row; NaN a missing value with
    /// [`MissingValues::Em`]).
    pub fn fit<T: Real>(x: MatRef<'_, T>, options: &BayesianPcaOptions) -> Result<Self> {
        crate::kernel::parallel::fix_faer_split();
        let (n, d) = (x.nrows(), x.ncols());
        if n == 0 || d == 0 {
            return Err(PcaError::EmptyData {
                n_samples: n,
                n_features: d,
            });
        }
        let kmax = options.max_components;
        if kmax == 0 {
            return Err(PcaError::ZeroComponents);
        }
        if kmax >= d {
            return Err(PcaError::OutOfRange {
                parameter: Parameter::Components,
                value: kmax.to_string(),
                allowed: format!(
                    "Bayesian PCA allows at most n_features − 1 = {} components",
                    d - 1
                ),
            });
        }
        if !(options.tolerance > 0.0 && options.tolerance < 1.0) {
            return Err(PcaError::ToleranceOutOfRange(options.tolerance));
        }
        if options.max_iterations == 0 {
            return Err(PcaError::ZeroIterations);
        }
        let data = centre(x, options.missing)?;
        let rows = data.y.nrows();
        if rows < 2 {
            return Err(PcaError::TooFewSamples {
                n_samples: rows,
                ddof: 1,
            });
        }
        let total: f64 = (0..d)
            .map(|j| (0..rows).map(|i| data.y[(i, j)].powi(2)).sum::<f64>())
            .sum::<f64>()
            / rows as f64;
        if total <= 0.0 {
            return Err(PcaError::ZeroTotalVariance);
        }
        let fitted = if data.rows_missing.is_empty() {
            map_of_complete_rows(data.y.as_ref(), kmax, total)?
        } else {
            em_fit(&data, kmax, total, options)?
        };
        let (w, noise) = (&fitted.w, fitted.noise);
        let mean: Vec<f64> = data
            .mean
            .iter()
            .zip(&fitted.offset)
            .map(|(a, b)| a + b)
            .collect();
        // The training likelihood at the returned parameters.
        let log_likelihood = {
            let model = LatentGaussian::new(w.as_ref(), noise)?;
            let mut scratch = model.scratch();
            let (e, t) = row_deviations(&data, w.as_ref(), &fitted.offset);
            let mut sum = 0.0;
            for i in 0..rows {
                let mask = (!data.observed[i].iter().all(|&o| o)).then_some(&data.observed[i][..]);
                sum += model
                    .row(column(&e, i), column(&t, i), mask, &mut scratch)?
                    .log_likelihood;
            }
            sum / rows as f64
        };
        // Kept columns by decreasing norm, each with its largest entry positive.
        let mut order: Vec<usize> = (0..w.ncols()).collect();
        order.sort_by(|&a, &b| column_norm2(w.as_ref(), b).total_cmp(&column_norm2(w.as_ref(), a)));
        let mut components = Mat::from_fn(order.len(), d, |r, j| w[(j, order[r])]);
        for r in 0..components.nrows() {
            fix_sign(components.as_mut().row_mut(r));
        }
        let mut alpha_out: Vec<f64> = order
            .iter()
            .map(|&c| fitted.alpha[fitted.active[c]])
            .collect();
        alpha_out.extend(std::iter::repeat_n(f64::INFINITY, kmax - order.len()));
        Ok(BayesianPca {
            parts: BayesianPcaParts {
                mean,
                components,
                alpha: alpha_out,
                noise_variance: noise,
                log_likelihood,
                n_samples: rows,
                iterations: fitted.iterations,
                converged: fitted.converged,
            },
            log_likelihood_history: fitted.history,
            solved_directly: data.rows_missing.is_empty(),
        })
    }

    /// The model of stored parts, checked.
    pub fn from_parts(parts: BayesianPcaParts) -> Result<Self> {
        let d = parts.mean.len();
        let k = parts.components.nrows();
        let bad = |msg: String| Err(PcaError::InvalidModel(msg));
        if d == 0 || parts.components.ncols() != d {
            return bad(format!(
                "components are {}×{} but the mean has {d} entries",
                k,
                parts.components.ncols()
            ));
        }
        if k == 0 || k >= d || parts.alpha.len() < k || parts.alpha.len() >= d {
            return bad(format!(
                "{k} kept of {} components for {d} features",
                parts.alpha.len()
            ));
        }
        if parts.alpha[..k]
            .iter()
            .any(|a| !(a.is_finite() && *a > 0.0))
            || parts.alpha[k..].iter().any(|a| *a != f64::INFINITY)
        {
            return bad("alpha must be positive for the kept components, infinite after".into());
        }
        if !(parts.noise_variance.is_finite() && parts.noise_variance > 0.0) {
            return bad(format!(
                "noise_variance {} is not a positive number",
                parts.noise_variance
            ));
        }
        let finite = parts.mean.iter().all(|v| v.is_finite())
            && (0..k).all(|r| parts.components.row(r).iter().all(|v| v.is_finite()));
        if !finite {
            return bad("a mean or component entry is not finite".into());
        }
        Ok(BayesianPca {
            parts,
            log_likelihood_history: Vec::new(),
            solved_directly: false,
        })
    }

    /// The parts, for storing.
    pub fn parts(&self) -> &BayesianPcaParts {
        &self.parts
    }

    /// μ.
    pub fn mean(&self) -> &[f64] {
        &self.parts.mean
    }

    /// The kept columns of W as rows (K×D), by decreasing norm (scikit-learn's `components_`
    /// convention for loadings, as its `FactorAnalysis`).
    pub fn components(&self) -> MatRef<'_, f64> {
        self.parts.components.as_ref()
    }

    /// The number of columns ARD kept.
    pub fn n_components(&self) -> usize {
        self.parts.components.nrows()
    }

    /// The most components allowed (K of the fit).
    pub fn max_components(&self) -> usize {
        self.parts.alpha.len()
    }

    /// The number of features D.
    pub fn n_features(&self) -> usize {
        self.parts.mean.len()
    }

    /// α_i = D / ‖w_i‖² of every column allowed: the kept ones (as `components`), then ∞ for
    /// each switched off.
    pub fn alpha(&self) -> &[f64] {
        &self.parts.alpha
    }

    /// σ².
    pub fn noise_variance(&self) -> f64 {
        self.parts.noise_variance
    }

    /// The mean log-likelihood per training row at the fitted parameters (observed entries).
    pub fn log_likelihood(&self) -> f64 {
        self.parts.log_likelihood
    }

    /// The mean log-likelihood per row at the parameters each EM step started from (empty for
    /// complete rows, solved without EM, and for a model read from parts).
    pub fn log_likelihood_history(&self) -> &[f64] {
        &self.log_likelihood_history
    }

    /// Training rows.
    pub fn n_samples(&self) -> usize {
        self.parts.n_samples
    }

    /// EM steps taken (for complete rows, in the covariance's eigenbasis before the fixed point
    /// was solved for).
    pub fn iterations(&self) -> usize {
        self.parts.iterations
    }

    /// Whether EM met the tolerance, or the direct solution's scalar fixed point settled.
    pub fn converged(&self) -> bool {
        self.parts.converged
    }

    /// Whether this fit solved for EM's fixed point directly (complete rows), rather than
    /// running EM to its tolerance (rows with missing values; false for a model read from parts).
    pub fn solved_directly(&self) -> bool {
        self.solved_directly
    }

    /// W, D×K.
    fn loadings(&self) -> Mat<f64> {
        self.parts.components.transpose().to_owned()
    }

    /// The posterior mean `E[z | x] = M⁻¹ Wᵀ (x − μ)` of every row (N×K), from its observed
    /// entries (NaN is missing).
    pub fn transform<T: Real>(&self, x: MatRef<'_, T>) -> Result<Mat<f64>> {
        let w = self.loadings();
        let model = LatentGaussian::new(w.as_ref(), self.noise_variance())?;
        let (e, masks, t) = deviations(x, self.mean(), w.as_ref())?;
        let k = w.ncols();
        let mut z = Mat::zeros(x.nrows(), k);
        let mut scratch = model.scratch();
        for i in 0..x.nrows() {
            let row = posterior_row(&model, &e, &t, &masks, i, &mut scratch)?;
            for c in 0..k {
                z[(i, c)] = row.mean[c];
            }
        }
        Ok(z)
    }

    /// The log-likelihood of every row under `x ~ N(μ, W Wᵀ + σ² I)`, of its observed entries.
    pub fn score_samples<T: Real>(&self, x: MatRef<'_, T>) -> Result<Vec<f64>> {
        let w = self.loadings();
        let model = LatentGaussian::new(w.as_ref(), self.noise_variance())?;
        let (e, masks, t) = deviations(x, self.mean(), w.as_ref())?;
        let mut scratch = model.scratch();
        (0..x.nrows())
            .map(|i| Ok(posterior_row(&model, &e, &t, &masks, i, &mut scratch)?.log_likelihood))
            .collect()
    }

    /// The mean of [`BayesianPca::score_samples`].
    pub fn score<T: Real>(&self, x: MatRef<'_, T>) -> Result<f64> {
        let s = self.score_samples(x)?;
        Ok(s.iter().sum::<f64>() / s.len().max(1) as f64)
    }

    /// `count` samples `x = W z + μ + ε` (z ~ N(0, I), ε ~ N(0, σ² I)), seeded: row by row the
    /// K latent normals, then the D noise normals (ChaCha8).
    pub fn sample(&self, count: usize, seed: u64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (k, d) = (self.n_components(), self.n_features());
        let sd = self.noise_variance().sqrt();
        let c = &self.parts.components;
        let mut x = Mat::zeros(count, d);
        for i in 0..count {
            let z: Vec<f64> = (0..k).map(|_| StandardNormal.sample(&mut rng)).collect();
            for j in 0..d {
                let eps: f64 = StandardNormal.sample(&mut rng);
                let signal: f64 = (0..k).map(|m| c[(m, j)] * z[m]).sum();
                x[(i, j)] = self.parts.mean[j] + signal + sd * eps;
            }
        }
        x
    }
}

/// What the commands ask of a fitted model: the posterior mean, the mean of x given z, the
/// likelihood and samples.
impl LatentModel for BayesianPca {
    fn kind(&self) -> ModelKind {
        ModelKind::BayesianPca
    }
    fn n_features(&self) -> usize {
        BayesianPca::n_features(self)
    }
    fn n_components(&self) -> usize {
        BayesianPca::n_components(self)
    }
    fn component_prefix(&self) -> &'static str {
        "latent"
    }
    fn supports(&self, operation: Operation) -> bool {
        matches!(
            operation,
            Operation::Transform | Operation::Inverse | Operation::Score | Operation::Sample
        )
    }
    fn transform(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        check_finite(x)?;
        BayesianPca::transform(self, x)
    }
    /// `W z + μ`, the mean of x given z.
    fn inverse_transform(&self, z: MatRef<'_, f64>) -> Result<Mat<f64>> {
        if z.ncols() != self.n_components() {
            return Err(PcaError::ComponentMismatch {
                expected: self.n_components(),
                found: z.ncols(),
            });
        }
        check_finite(z)?;
        let mut x = z * self.components();
        for i in 0..x.nrows() {
            for j in 0..x.ncols() {
                x[(i, j)] += self.parts.mean[j];
            }
        }
        Ok(x)
    }
    fn score_samples(&self, x: MatRef<'_, f64>) -> Result<Vec<f64>> {
        check_finite(x)?;
        BayesianPca::score_samples(self, x)
    }
    fn sample(&self, n: usize, seed: u64) -> Result<Mat<f64>> {
        Ok(BayesianPca::sample(self, n, seed))
    }
}

fn posterior_row<'s>(
    model: &'s LatentGaussian<'_>,
    e: &Mat<f64>,
    t: &Mat<f64>,
    masks: &[Option<Vec<bool>>],
    i: usize,
    scratch: &'s mut RowScratch,
) -> Result<RowPosterior<'s>> {
    // e is zero at the holes, so t = Wᵀ e is already over the observed features.
    model.row(column(e, i), column(t, i), masks[i].as_deref(), scratch)
}

/// What a fit found, before its columns are ordered and signed.
struct Fitted {
    /// The kept columns of W (D×k).
    w: Mat<f64>,
    /// The mean's offset from the observed means (zero for complete rows).
    offset: Vec<f64>,
    noise: f64,
    /// Which of the K columns allowed each column of `w` is.
    active: Vec<usize>,
    /// α of the K columns allowed (∞ for those switched off).
    alpha: Vec<f64>,
    history: Vec<f64>,
    iterations: usize,
    converged: bool,
}

/// Bishop's EM from the principal subspace, for rows with missing values.
fn em_fit(data: &Centred, kmax: usize, total: f64, options: &BayesianPcaOptions) -> Result<Fitted> {
    let (mut w, mut noise) = start(data.y.as_ref(), kmax, total)?;
    let (rows, d) = (data.y.nrows(), data.y.ncols());
    let mut offset = vec![0.0; d];
    // Which of the K columns each column of `w` is.
    let mut active: Vec<usize> = (0..kmax).collect();
    let mut alpha: Vec<f64> = (0..kmax)
        .map(|i| d as f64 / column_norm2(w.as_ref(), i))
        .collect();
    let mut history = Vec::new();
    let mut converged = false;
    let mut iterations = 0;
    while iterations < options.max_iterations {
        iterations += 1;
        let k = w.ncols();
        let alphas: Vec<f64> = active.iter().map(|&a| alpha[a]).collect();
        let (next_w, next_offset, next_noise, log_likelihood) =
            em_step(data, w.as_ref(), &offset, noise, &alphas)?;
        history.push(log_likelihood / rows as f64);
        let mut change = (next_noise - noise).abs() / noise;
        for c in 0..k {
            let (mut diff, mut size) = (0.0, 0.0);
            for j in 0..d {
                diff += (next_w[(j, c)] - w[(j, c)]).powi(2);
                size += next_w[(j, c)].powi(2);
            }
            change = change.max((diff / size.max(f64::MIN_POSITIVE)).sqrt());
        }
        let shift: f64 = next_offset
            .iter()
            .zip(&offset)
            .map(|(a, b)| (a - b).powi(2))
            .sum();
        change = change.max((shift / (total.max(f64::MIN_POSITIVE))).sqrt());
        (w, offset, noise) = (next_w, next_offset, next_noise);
        // Switch off the columns that collapsed; re-estimate α of the others.
        let keep: Vec<usize> = (0..k)
            .filter(|&c| column_norm2(w.as_ref(), c) >= SWITCH_OFF * total)
            .collect();
        if keep.is_empty() {
            return Err(PcaError::DegenerateModel(
                "every column of W was switched off: the data looks like isotropic noise".into(),
            ));
        }
        if keep.len() < k {
            for c in 0..k {
                if !keep.contains(&c) {
                    alpha[active[c]] = f64::INFINITY;
                }
            }
            w = Mat::from_fn(d, keep.len(), |j, c| w[(j, keep[c])]);
            active = keep.iter().map(|&c| active[c]).collect();
            change = f64::INFINITY;
        }
        for (c, &a) in active.iter().enumerate() {
            alpha[a] = d as f64 / column_norm2(w.as_ref(), c);
        }
        if change <= options.tolerance {
            converged = true;
            break;
        }
    }
    Ok(Fitted {
        w,
        offset,
        noise,
        active,
        alpha,
        history,
        iterations,
        converged,
    })
}

fn column_norm2(w: MatRef<'_, f64>, c: usize) -> f64 {
    w.col(c).iter().map(|v| v * v).sum()
}

/// The top `k` right singular vectors of the centred data (holes as zeros), as many as its
/// rank allows (D×min(k, N, D)), and the top `k` eigenvalues λ of its covariance (divided by
/// N; zero beyond the rank).
fn spectrum(y: MatRef<'_, f64>, k: usize) -> Result<(Mat<f64>, Vec<f64>)> {
    let (n, d) = (y.nrows(), y.ncols());
    let svd = y.thin_svd().map_err(|e| PcaError::NoConvergence {
        solver: "bayesian-pca",
        detail: format!("the SVD of the centred data failed: {e:?}"),
    })?;
    let lambda: Vec<f64> = (0..k)
        .map(|i| {
            if i < n.min(d) {
                svd.S()[i].powi(2) / n as f64
            } else {
                0.0
            }
        })
        .collect();
    let v = svd.V();
    let vectors = Mat::from_fn(d, k.min(v.ncols()), |j, c| v[(j, c)]);
    Ok((vectors, lambda))
}

/// The start: W = V_K diag(√max(λ − σ², σ²/100)) from the SVD of the centred data (holes as
/// zeros), σ² the mean of the D − K discarded λ (at least 1e-3 of the mean variance).
fn start(y: MatRef<'_, f64>, k: usize, total: f64) -> Result<(Mat<f64>, f64)> {
    let d = y.ncols();
    let (v, lambda) = spectrum(y, k)?;
    let noise = start_noise(&lambda, total, d as f64);
    let mut w = Mat::from_fn(d, k, |j, c| {
        (if c < v.ncols() { v[(j, c)] } else { 0.0 }) * start_scale(lambda[c], noise).sqrt()
    });
    // A column beyond the data's rank (N ≤ K) has no singular vector: the zero column above
    // would never move, so it starts along a coordinate axis.
    for c in v.ncols()..k {
        w[(c % d, c)] = (noise / 100.0).sqrt();
    }
    Ok((w, noise))
}

/// EM's starting σ²: the mean of the D − K eigenvalues after the top K (`lambda`, zeros beyond
/// the rank), at least 1e-3 of the mean variance.
fn start_noise(lambda: &[f64], total: f64, d: f64) -> f64 {
    ((total - lambda.iter().sum::<f64>()) / (d - lambda.len() as f64)).max(1e-3 * total / d)
}

/// EM's starting ‖w‖² of a column along an eigenvalue λ.
fn start_scale(lambda: f64, noise: f64) -> f64 {
    (lambda - noise).max(noise / 100.0)
}

/// The most rounds of the scalar fixed point in [`map_of_complete_rows`]; it settles in a few
/// dozen (σ² moves by a factor of about (D/N) Σ σ²/s_i a round).
const MAP_ROUNDS: usize = 10_000;

/// The fixed point of Bishop's scheme for complete rows, solved directly.
///
/// With complete rows the likelihood depends on W only through `W Wᵀ` and the covariance S,
/// and with α_i = D / ‖w_i‖² the prior is −(D/2) Σ log ‖w_i‖² plus a constant: over the
/// rotations W R, which keep `W Wᵀ`, it is largest when the columns are orthogonal (Hadamard:
/// Π ‖w_i‖² ≥ det WᵀW). So at a fixed point (columns of distinct norms) they are orthogonal
/// and lie along eigenvectors u_i of S: W = [√s_i u_i]. Setting the log posterior's derivatives to
/// zero, with α_i = D / s_i:
///
/// ```text
/// along u_i:  N (λ_i − s_i − σ²) s_i = D (s_i + σ²)²,   a quadratic in s_i, whose larger root
///             is the local maximum (none: the column is switched off)
/// for σ²:     (D/N) Σ 1/s_i · σ⁴ − (D − K') σ² + R = 0,  R the sum of the λ not kept
/// ```
///
/// solved in turn until σ² stops moving, for the columns that EM's own steps (run first in the
/// eigenbasis, O(K) each: `eigenbasis_em`) leave switched on. EM reaches the same point (the
/// fixtures' numpy EM, run until no step moves anything by 1e-13), but it approaches the
/// shrunk scales at a rate
/// of about σ² α_i / N a step: on 1,200 rows of 12 factors in 400 features (λ 529 down to 238,
/// σ² 0.0099), 10,000 steps went 39% of the way in ‖w_1‖² from λ_1 towards its fixed point,
/// about N λ_1/(N + D).
fn map_of_complete_rows(y: MatRef<'_, f64>, kmax: usize, total: f64) -> Result<Fitted> {
    let (n, d) = (y.nrows(), y.ncols());
    let (v, lambda) = spectrum(y, kmax)?;
    let (nf, df) = (n as f64, d as f64);
    // Which columns stay is EM's choice: a column that starts below the smaller root collapses
    // even where the larger one exists (on 200 rows of 2 strong directions and a structured
    // remainder in 6 features, 4 allowed, EM switches 2 off though all 4 have roots at the
    // final σ²). So EM's own steps run first, in the eigenbasis, until they barely move.
    let (mut kept, mut noise, steps) = eigenbasis_em(&lambda, v.ncols(), total, nf, df);
    let rest = |kept: &[usize]| (total - kept.iter().map(|&i| lambda[i]).sum::<f64>()).max(0.0);
    let mut scale = vec![0.0; kmax];
    let mut converged = false;
    for _ in 0..MAP_ROUNDS {
        let before = kept.len();
        kept.retain(|&i| match column_scale(lambda[i], noise, nf, df) {
            Some(s) if s >= SWITCH_OFF * total => {
                scale[i] = s;
                true
            }
            _ => false,
        });
        if kept.is_empty() {
            return Err(PcaError::DegenerateModel(
                "every column of W was switched off: the data looks like isotropic noise".into(),
            ));
        }
        let free = (d - kept.len()) as f64;
        let a = df / nf * kept.iter().map(|&i| 1.0 / scale[i]).sum::<f64>();
        let r = rest(&kept);
        let discriminant = free * free - 4.0 * a * r;
        if discriminant < 0.0 {
            // No σ² keeps every column at a maximum: the weakest goes, as EM would drive it off.
            let weakest = *kept
                .iter()
                .min_by(|&&p, &&q| scale[p].total_cmp(&scale[q]))
                .unwrap_or(&kept[0]);
            kept.retain(|&i| i != weakest);
            continue;
        }
        // The smaller root (the one that tends to R / (D − K') as a → 0), without cancellation.
        let next = 2.0 * r / (free + discriminant.sqrt());
        // Below this, σ² is the rounding of the trace less the kept eigenvalues: the data has
        // no more than K' dimensions, and a density on them alone is not a model of it.
        if next.is_nan() || next <= DEGENERATE_NOISE * total / df {
            return Err(PcaError::DegenerateModel(format!(
                "the {} kept column(s) explain all the variance but rounding (σ² = {next:e}, \
                 below {DEGENERATE_NOISE:e} of the mean variance): the data has no more \
                 dimensions than that",
                kept.len()
            )));
        }
        let settled = kept.len() == before && (next - noise).abs() <= 1e-15 * next;
        noise = next;
        if settled {
            converged = true;
            break;
        }
    }
    // The scales at the final σ² (the last round may have moved it by an ulp).
    for &i in &kept {
        scale[i] = column_scale(lambda[i], noise, nf, df).unwrap_or(scale[i]);
    }
    let w = Mat::from_fn(d, kept.len(), |j, c| {
        v[(j, kept[c])] * scale[kept[c]].sqrt()
    });
    let mut alpha = vec![f64::INFINITY; kmax];
    for &i in &kept {
        alpha[i] = df / scale[i];
    }
    Ok(Fitted {
        w,
        offset: vec![0.0; d],
        noise,
        active: kept,
        alpha,
        history: Vec::new(),
        iterations: steps,
        converged,
    })
}

/// EM's steps in the eigenbasis stop when no scale nor σ² moves by more than this in a step;
/// [`map_of_complete_rows`] then solves for the fixed point of the columns left.
const EIGENBASIS_TOLERANCE: f64 = 1e-9;

/// The most EM steps in the eigenbasis (each costs O(K)).
const EIGENBASIS_STEPS: usize = 10_000_000;

/// Bishop's EM for complete rows from its start along the top eigenvectors, where it stays:
/// with W = U diag(w), S U = U Λ and M = diag(s + σ²) (s = w²), a step is
///
/// ```text
/// w_i' = λ_i w_i / (σ² + λ_i s_i / (s_i + σ²) + σ² α_i (s_i + σ²) / N)
/// σ²'  = (tr S − Σ 2 λ_i w_i w_i' / (s_i + σ²)
///          + Σ w_i'² (σ² / (s_i + σ²) + λ_i s_i / (s_i + σ²)²)) / D
/// ```
///
/// then α_i = D / s_i', and a column is switched off below [`SWITCH_OFF`] × tr S, as in
/// `em_fit`. `lambda` holds the top K eigenvalues, the first `with_vectors` of them with an
/// eigenvector (a column beyond the data's rank, which EM starts on a coordinate axis, is off
/// from the start here). Returns the columns left, σ² and the steps taken.
fn eigenbasis_em(
    lambda: &[f64],
    with_vectors: usize,
    total: f64,
    n: f64,
    d: f64,
) -> (Vec<usize>, f64, usize) {
    let mut noise = start_noise(lambda, total, d);
    let mut w: Vec<f64> = lambda
        .iter()
        .map(|&l| start_scale(l, noise).sqrt())
        .collect();
    let mut kept: Vec<usize> = (0..with_vectors).collect();
    let mut steps = 0;
    while steps < EIGENBASIS_STEPS && !kept.is_empty() {
        steps += 1;
        let (mut cross, mut quad, mut change) = (0.0, 0.0, 0.0f64);
        let mut next = w.clone();
        for &i in &kept {
            let (l, s) = (lambda[i], w[i] * w[i]);
            let m = s + noise;
            let alpha = d / s;
            next[i] = l * w[i] / (noise + l * s / m + noise * alpha * m / n);
            cross += 2.0 * l * w[i] * next[i] / m;
            quad += next[i] * next[i] * (noise / m + l * s / (m * m));
            change = change.max((next[i] - w[i]).abs() / next[i].abs());
        }
        let next_noise = (total - cross + quad) / d;
        change = change.max((next_noise - noise).abs() / noise);
        (w, noise) = (next, next_noise);
        let before = kept.len();
        kept.retain(|&i| w[i] * w[i] >= SWITCH_OFF * total);
        if kept.len() == before && change <= EIGENBASIS_TOLERANCE {
            break;
        }
    }
    (kept, noise, steps)
}

/// σ² below this fraction of the mean variance (trace / D) is rounding: the fit is refused.
const DEGENERATE_NOISE: f64 = 1e-13;

/// The MAP ‖w‖² of a column along an eigenvalue λ at noise σ² (N rows, D features): the larger
/// root of (N + D) s² − (N (λ − σ²) − 2 D σ²) s + D σ⁴ = 0, if it has a positive one.
fn column_scale(lambda: f64, noise: f64, n: f64, d: f64) -> Option<f64> {
    let b = n * (lambda - noise) - 2.0 * d * noise;
    let discriminant = b * b - 4.0 * (n + d) * d * noise * noise;
    (b > 0.0 && discriminant >= 0.0).then(|| (b + discriminant.sqrt()) / (2.0 * (n + d)))
}

/// `e = y − offset` at the observed entries (zeros at the holes) and `t = Wᵀ e`, one column
/// per row (D×N and k×N), so that a row's values are contiguous for the E step.
fn row_deviations(data: &Centred, w: MatRef<'_, f64>, offset: &[f64]) -> (Mat<f64>, Mat<f64>) {
    let (rows, d) = (data.y.nrows(), data.y.ncols());
    let e = Mat::from_fn(d, rows, |j, i| {
        if data.observed[i][j] {
            data.y[(i, j)] - offset[j]
        } else {
            data.y[(i, j)]
        }
    });
    // Small (one EM step of many): no thread pool.
    let t = projections(w, e.as_ref(), Par::Seq);
    (e, t)
}

/// `Wᵀ e` for rows stored as the columns of `e` (k×N).
fn projections(w: MatRef<'_, f64>, e: MatRef<'_, f64>, par: Par) -> Mat<f64> {
    let mut t = Mat::zeros(w.ncols(), e.ncols());
    matmul(t.as_mut(), Accum::Replace, w.transpose(), e, 1.0, par);
    t
}

/// Column `i`, as a slice.
fn column(m: &Mat<f64>, i: usize) -> &[f64] {
    m.col_as_slice(i)
}

/// One EM step from (W, offset, σ²) with the columns' α: the next W, offset, σ², and the
/// log-likelihood of the data at the parameters it started from.
fn em_step(
    data: &Centred,
    w: MatRef<'_, f64>,
    offset: &[f64],
    noise: f64,
    alpha: &[f64],
) -> Result<(Mat<f64>, Vec<f64>, f64, f64)> {
    let (rows, d) = (data.y.nrows(), data.y.ncols());
    let k = w.ncols();
    let model = LatentGaussian::new(w, noise)?;
    let mut scratch = model.scratch();
    let (e, t) = row_deviations(data, w, offset);
    // z̃ = (z̄, 1) per row; the complete rows share Σ.
    let mut z = Mat::zeros(rows, k + 1);
    let mut log_likelihood = 0.0;
    let mut shared_cov = None;
    let mut complete_rows = 0usize;
    // The rows with holes, in order, and their Σ_n side by side (k × k·rows).
    let mut own_rows: Vec<usize> = Vec::with_capacity(data.rows_missing.len());
    let mut own_cov = Mat::zeros(k, k * data.rows_missing.len());
    for i in 0..rows {
        let holes = !data.observed[i].iter().all(|&o| o);
        let mask = holes.then_some(&data.observed[i][..]);
        let post = model.row(column(&e, i), column(&t, i), mask, &mut scratch)?;
        log_likelihood += post.log_likelihood;
        for c in 0..k {
            z[(i, c)] = post.mean[c];
        }
        z[(i, k)] = 1.0;
        if holes {
            let slot = own_rows.len();
            post.covariance_into(noise, own_cov.as_mut().submatrix_mut(0, slot * k, k, k));
            own_rows.push(i);
        } else {
            complete_rows += 1;
            if shared_cov.is_none() {
                shared_cov = Some(post.covariance(noise));
            }
        }
    }
    // A = Z̃ᵀ Z̃ + Σ_n Σ_n (padded with a zero row and column).
    let mut a_total = Mat::zeros(k + 1, k + 1);
    matmul(
        a_total.as_mut(),
        Accum::Replace,
        z.transpose(),
        z.as_ref(),
        1.0,
        faer_par(),
    );
    if let Some(cov) = &shared_cov {
        for p in 0..k {
            for q in 0..k {
                a_total[(p, q)] += complete_rows as f64 * cov[(p, q)];
            }
        }
    }
    for slot in 0..own_rows.len() {
        let cov = own_cov.as_ref().submatrix(0, slot * k, k, k);
        for p in 0..k {
            for q in 0..k {
                a_total[(p, q)] += cov[(p, q)];
            }
        }
    }
    // b_j = Σ_n y_nj z̃_n (holes are zeros in y).
    let mut b = Mat::zeros(d, k + 1);
    matmul(
        b.as_mut(),
        Accum::Replace,
        data.y.transpose(),
        z.as_ref(),
        1.0,
        faer_par(),
    );
    // Per feature, the rows missing it.
    let mut missing_in: Vec<Vec<usize>> = vec![Vec::new(); d];
    for (slot, &i) in data.rows_missing.iter().enumerate() {
        for j in 0..d {
            if !data.observed[i][j] {
                missing_in[j].push(slot);
            }
        }
    }
    let mut next_w = Mat::zeros(d, k);
    let mut next_offset = vec![0.0; d];
    let mut residual = 0.0;
    let mut a = Mat::zeros(k + 1, k + 1);
    let mut prior = Mat::zeros(k + 1, k + 1);
    for j in 0..d {
        a.copy_from(&a_total);
        for &slot in &missing_in[j] {
            let (i, cov) = (
                own_rows[slot],
                own_cov.as_ref().submatrix(0, slot * k, k, k),
            );
            for p in 0..=k {
                for q in 0..=k {
                    let sigma = if p < k && q < k { cov[(p, q)] } else { 0.0 };
                    a[(p, q)] -= z[(i, p)] * z[(i, q)] + sigma;
                }
            }
        }
        prior.copy_from(&a);
        for (c, &al) in alpha.iter().enumerate() {
            prior[(c, c)] += noise * al;
        }
        let bj = Mat::from_fn(k + 1, 1, |p, _| b[(j, p)]);
        let solved = prior
            .llt(Side::Lower)
            .map_err(|_| PcaError::NoConvergence {
                solver: "bayesian-pca",
                detail: format!("the M step's system for feature {j} is singular"),
            })?
            .solve(&bj);
        let y2: f64 = (0..rows).map(|i| data.y[(i, j)].powi(2)).sum();
        let cross: f64 = (0..=k).map(|p| bj[(p, 0)] * solved[(p, 0)]).sum();
        let a_solved = &a * &solved;
        let quad: f64 = (0..=k).map(|p| solved[(p, 0)] * a_solved[(p, 0)]).sum();
        residual += y2 - 2.0 * cross + quad;
        for c in 0..k {
            next_w[(j, c)] = solved[(c, 0)];
        }
        next_offset[j] = solved[(k, 0)];
    }
    let next_noise = (residual / data.n_observed as f64).max(f64::MIN_POSITIVE);
    Ok((next_w, next_offset, next_noise, log_likelihood))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        StandardNormal.sample(rng)
    }
    use rand::Rng;

    /// N×D data of rank `rank` (random loadings of decreasing strength) plus isotropic noise
    /// of standard deviation `noise`, shifted by `offset`.
    pub(crate) fn planted(
        n: usize,
        d: usize,
        rank: usize,
        noise: f64,
        offset: f64,
        seed: u64,
    ) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let w = Mat::from_fn(d, rank, |_, c| {
            let strength = 3.0 / (c + 1) as f64;
            strength * normal(&mut rng)
        });
        let z = Mat::from_fn(n, rank, |_, _| normal(&mut rng));
        let signal = &z * w.transpose();
        Mat::from_fn(n, d, |i, j| {
            offset + signal[(i, j)] + noise * normal(&mut rng)
        })
    }

    /// The largest relative move of a column of W or of σ² in one EM step from a fit's
    /// parameters (complete rows: the offset stays zero).
    fn em_move(data: &Centred, fitted: &Fitted) -> f64 {
        let alphas: Vec<f64> = fitted.active.iter().map(|&a| fitted.alpha[a]).collect();
        let (w, _, noise, _) = em_step(
            data,
            fitted.w.as_ref(),
            &fitted.offset,
            fitted.noise,
            &alphas,
        )
        .unwrap();
        let mut change = (noise - fitted.noise).abs() / fitted.noise;
        for c in 0..w.ncols() {
            let diff = (w.col(c) - fitted.w.col(c)).norm_l2();
            change = change.max(diff / w.col(c).norm_l2());
        }
        change
    }

    #[test]
    fn complete_rows_are_solved_at_ems_fixed_point_where_em_crawls() {
        // Little noise and D/N = 1/3: the MAP scales are about N/(N + D) of the eigenvalues,
        // and EM from the principal subspace moves towards them by about 1e-5 a step.
        let x = planted(300, 100, 6, 0.05, 0.0, 11);
        let data = centre(x.as_ref(), MissingValues::Reject).unwrap();
        let total: f64 = data.y.squared_norm_l2() / 300.0;
        let direct = map_of_complete_rows(data.y.as_ref(), 9, total).unwrap();
        assert!(direct.converged);
        assert_eq!(direct.active.len(), 6, "alpha {:?}", direct.alpha);
        let at_the_map = em_move(&data, &direct);
        assert!(
            at_the_map < 1e-10,
            "one EM step moves the direct fit by {at_the_map:e}"
        );
        // A thousandth off the direct scales, the same check sees EM move (slowly: EM crawls
        // here, which is why the fit does not iterate it).
        let off = Fitted {
            w: Mat::from_fn(100, 6, |j, c| direct.w[(j, c)] * 1.001),
            offset: vec![0.0; 100],
            noise: direct.noise,
            active: direct.active.clone(),
            alpha: direct.alpha.iter().map(|a| a / 1.001f64.powi(2)).collect(),
            history: Vec::new(),
            iterations: 0,
            converged: false,
        };
        let elsewhere = em_move(&data, &off);
        assert!(
            elsewhere > 100.0 * at_the_map,
            "{elsewhere:e} against {at_the_map:e}"
        );
        // The public fit takes the direct route: no EM step, the same model.
        let model = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(9)).unwrap();
        assert!(model.converged() && model.solved_directly());
        assert_eq!(model.n_components(), 6);
        // σ² comes from the trace less the kept eigenvalues (1,609 less 1,609 − 0.23 here), so
        // the trace's summation order shows in its twelfth digit.
        assert!((model.noise_variance() - direct.noise).abs() <= 1e-10 * direct.noise);
    }

    #[test]
    fn data_without_noise_is_a_degenerate_model_not_a_fit() {
        // Rank 3 in 10 features, and 2 rows in 6 (rank 1 once centred): σ² would be the
        // rounding of the trace less the kept eigenvalues (EM over the data returned a
        // log-likelihood of −5e93 per row on the first, +81 on the second).
        for (x, k) in [
            (planted(100, 10, 3, 0.0, 0.0, 4), 8),
            (planted(2, 6, 2, 0.1, 0.0, 5), 3),
        ] {
            let err = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(k)).unwrap_err();
            assert!(
                matches!(&err, PcaError::DegenerateModel(m) if m.contains("rounding")),
                "{err}"
            );
        }
        // A little noise is a model.
        let x = planted(100, 10, 3, 1e-4, 0.0, 4);
        let model = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(8)).unwrap();
        assert_eq!(model.n_components(), 3);
    }

    #[test]
    fn complete_rows_keep_the_columns_that_em_keeps() {
        // Two strong directions and a structured remainder (the type's doc example): at the
        // final σ² all 4 columns allowed have a fixed point, but EM from its start switches
        // 2 off; the direct route must follow EM.
        let x = Mat::from_fn(200, 6, |i, j| {
            let (a, b) = ((i as f64 * 0.37).sin(), (i as f64 * 0.91).cos());
            let noise = ((i * 7 + j * 13) % 17) as f64 / 170.0;
            a * (j as f64 + 1.0) + b * (3.0 - j as f64) + noise
        });
        let data = centre(x.as_ref(), MissingValues::Reject).unwrap();
        let total: f64 = data.y.squared_norm_l2() / 200.0;
        let direct = map_of_complete_rows(data.y.as_ref(), 4, total).unwrap();
        let mut options = BayesianPcaOptions::new(4);
        // EM crawls here too (1e-5 of the way a step): the kept columns are the point, the
        // fixed point's digits are checked elsewhere.
        options.tolerance = 1e-9;
        options.max_iterations = 1_000_000;
        let em = em_fit(&data, 4, total, &options).unwrap();
        assert!(em.converged && direct.converged);
        assert_eq!(direct.active, em.active);
        assert_eq!(direct.active.len(), 2);
        assert!((direct.noise - em.noise).abs() < 1e-6 * em.noise);
        for c in 0..2 {
            let (a, b) = (direct.w.col(c), em.w.col(c));
            // The same column up to its sign.
            let off = (a - b).norm_l2().min((a + b).norm_l2());
            assert!(off < 1e-3 * b.norm_l2(), "column {c}: {off:e}");
        }
    }

    #[test]
    fn a_planted_rank_of_three_keeps_three_of_eight_components() {
        let x = planted(300, 12, 3, 0.3, 0.0, 5);
        let model = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(8)).unwrap();
        assert!(model.converged(), "{} iterations", model.iterations());
        assert_eq!(model.n_components(), 3, "alpha {:?}", model.alpha());
        assert_eq!(model.alpha().len(), 8);
        assert!(model.alpha()[..3].iter().all(|a| a.is_finite()));
        assert!(model.alpha()[3..].iter().all(|a| a.is_infinite()));
        // σ² near the planted 0.09 (the ARD fit is close to the maximum likelihood one).
        assert!(
            (model.noise_variance() - 0.09).abs() < 0.01,
            "{}",
            model.noise_variance()
        );
    }

    #[test]
    fn a_planted_rank_is_found_with_ten_percent_missing() {
        let mut x = planted(300, 12, 3, 0.3, 0.0, 6);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for i in 0..300 {
            for j in 0..12 {
                if rng.random::<f64>() < 0.1 {
                    x[(i, j)] = f64::NAN;
                }
            }
        }
        let mut options = BayesianPcaOptions::new(8);
        assert!(matches!(
            BayesianPca::fit(x.as_ref(), &options),
            Err(PcaError::NonFinite { .. })
        ));
        options.missing = MissingValues::Em;
        let model = BayesianPca::fit(x.as_ref(), &options).unwrap();
        assert_eq!(model.n_components(), 3, "alpha {:?}", model.alpha());
        let codes = model.transform(x.as_ref()).unwrap();
        assert!(codes.col_iter().all(|c| c.iter().all(|v| v.is_finite())));
    }

    /// The likelihood and posterior against the dense Gaussian: C = W Wᵀ + σ² I inverted by
    /// Cholesky, log p = −½ (D log 2π + log |C| + eᵀ C⁻¹ e), E[z | x] = Wᵀ C⁻¹ e.
    #[test]
    fn score_and_transform_match_the_dense_gaussian() {
        let x = planted(80, 7, 2, 0.5, 1e6, 8);
        let model = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(4)).unwrap();
        let w = model.components().transpose().to_owned();
        let d = 7;
        let c = &w * w.transpose() + Mat::<f64>::identity(d, d) * model.noise_variance();
        let llt = c.llt(Side::Lower).unwrap();
        let log_det: f64 = (0..d).map(|p| 2.0 * llt.L()[(p, p)].ln()).sum();
        let scores = model.score_samples(x.as_ref()).unwrap();
        let codes = model.transform(x.as_ref()).unwrap();
        for i in 0..80 {
            let e = Mat::from_fn(d, 1, |j, _| x[(i, j)] - model.mean()[j]);
            let solved = llt.solve(&e);
            let quad: f64 = (0..d).map(|j| e[(j, 0)] * solved[(j, 0)]).sum();
            let expected = -0.5 * (d as f64 * LN_2PI + log_det + quad);
            assert!((scores[i] - expected).abs() < 1e-8 * expected.abs().max(1.0));
            let z = w.transpose() * &solved;
            for m in 0..model.n_components() {
                assert!((codes[(i, m)] - z[(m, 0)]).abs() < 1e-8);
            }
        }
        let mean = scores.iter().sum::<f64>() / 80.0;
        assert!((model.log_likelihood() - mean).abs() < 1e-8 * mean.abs());
    }

    #[test]
    fn an_offset_of_a_million_changes_nothing_but_the_mean() {
        let x = planted(120, 8, 2, 0.4, 0.0, 9);
        let shifted = Mat::from_fn(120, 8, |i, j| x[(i, j)] + 1e6);
        let options = BayesianPcaOptions::new(5);
        let a = BayesianPca::fit(x.as_ref(), &options).unwrap();
        let b = BayesianPca::fit(shifted.as_ref(), &options).unwrap();
        assert_eq!(a.n_components(), b.n_components());
        for r in 0..a.n_components() {
            for j in 0..8 {
                assert!((a.components()[(r, j)] - b.components()[(r, j)]).abs() < 1e-6);
            }
        }
        assert!((a.noise_variance() - b.noise_variance()).abs() < 1e-8);
        assert!((a.mean()[0] + 1e6 - b.mean()[0]).abs() < 1e-6);
    }

    #[test]
    fn samples_have_the_model_covariance() {
        let x = planted(200, 5, 2, 0.5, 3.0, 10);
        let model = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(3)).unwrap();
        let s = model.sample(20_000, 4);
        assert_eq!(s, model.sample(20_000, 4));
        let w = model.components().transpose().to_owned();
        let c = &w * w.transpose() + Mat::<f64>::identity(5, 5) * model.noise_variance();
        let mean: Vec<f64> = (0..5)
            .map(|j| s.col(j).iter().sum::<f64>() / 20_000.0)
            .collect();
        for a in 0..5 {
            assert!((mean[a] - model.mean()[a]).abs() < 0.1);
            for b in 0..5 {
                let cov: f64 = (0..20_000)
                    .map(|i| (s[(i, a)] - mean[a]) * (s[(i, b)] - mean[b]))
                    .sum::<f64>()
                    / 20_000.0;
                assert!((cov - c[(a, b)]).abs() < 0.05 * c[(a, a)].max(c[(b, b)]));
            }
        }
    }

    #[test]
    fn bad_parameters_are_errors_naming_them() {
        let x = planted(30, 4, 1, 0.1, 0.0, 1);
        let err = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(0)).unwrap_err();
        assert!(matches!(err, PcaError::ZeroComponents));
        let err = BayesianPca::fit(x.as_ref(), &BayesianPcaOptions::new(4)).unwrap_err();
        assert_eq!(err.parameter(), Some(Parameter::Components));
        assert!(
            err.to_string().contains("at most n_features − 1 = 3"),
            "{err}"
        );
    }
}
