//! Factor analysis: `x = Wᵀ z + μ + ε` with `z ~ N(0, I)` and `ε ~ N(0, diag ψ)`, a noise
//! variance per feature, fitted by scikit-learn's `FactorAnalysis` EM (`svd_method='lapack'`):
//! each step takes the top K eigenpairs of the covariance scaled by `ψ^-½` (certified
//! Krylov–Schur where it applies, `leading_eigen`; else the whole decomposition), sets
//! `W = (s − 1)^½ Vᵀ ψ^½` and `ψ = diag(S) − diag(WᵀW)`.
//!
//! scikit-learn stops when the log-likelihood gains less than 0.01; that can leave ψ far (16 %
//! on some data) from EM's fixed point. Here EM runs until the estimated distance of ψ to its
//! fixed point, relative to each feature's variance — the last change over `1 − r`, r the
//! ratio of the last two changes (EM converges linearly) — is below the tolerance.
//!
//! Where a feature's ψ has its maximum at 0 (a Heywood case: one factor explains the feature
//! entirely), EM's steps shrink with ψ² and it crawls (Iris with one factor: 10,000 steps left
//! ψ of petal length at 8e-5; scikit-learn takes 882,217 steps to its tolerance). Every 20
//! steps the features whose ψ is small and falls as such a case's does are tried next to 0
//! (a tenth of the tolerance times the variance); the point is kept if its log-likelihood
//! is higher, and EM goes on from it: Iris with one factor converges in 61 steps.
//!
//! Rotations are scikit-learn's `_ortho_rotation` (raw varimax or quartimax, without Kaiser
//! normalisation, from the unrotated loadings), iterated until the criterion stops growing.

use std::fmt;
use std::str::FromStr;

use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{PcaError, Result};
use crate::models::{
    LatentModel, ModelKind, Operation, centred, check_finite, check_rows, column_means, flip_rows,
};
use crate::solver::leading::{Route, leading_eigen_from};

/// scikit-learn's floor on ψ and on `√ψ` (its `SMALL`).
const SMALL: f64 = 1e-12;

/// The EM steps over which the rate of convergence is measured.
const RATE_WINDOW: usize = 20;

/// An orthogonal rotation of the loadings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rotation {
    /// The loadings as EM leaves them.
    #[default]
    None,
    /// Maximises the variance of the squared loadings within each factor.
    Varimax,
    /// Maximises the variance of the squared loadings within each feature.
    Quartimax,
}

impl Rotation {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["none", "varimax", "quartimax"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Rotation::None => "none",
            Rotation::Varimax => "varimax",
            Rotation::Quartimax => "quartimax",
        }
    }
}

impl fmt::Display for Rotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rotation {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(Rotation::None),
            "varimax" => Ok(Rotation::Varimax),
            "quartimax" => Ok(Rotation::Quartimax),
            other => Err(format!(
                "unknown rotation {other:?}; expected one of {}",
                Rotation::NAMES.join(", ")
            )),
        }
    }
}

/// The settings of a factor analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FactorAnalysisParams {
    /// K, the number of factors: 1 ≤ K ≤ D.
    pub n_components: usize,
    /// The rotation applied to the fitted loadings.
    pub rotation: Rotation,
    /// EM stops when ψ's estimated distance to the fixed point, relative to each feature's
    /// variance, is at most this.
    pub tolerance: f64,
    /// The most EM steps.
    pub max_iterations: usize,
}

impl FactorAnalysisParams {
    /// The default tolerance: ψ to about 1e-7 relative of EM's fixed point.
    pub const DEFAULT_TOLERANCE: f64 = 1e-7;
    /// The default bound on EM steps.
    pub const DEFAULT_MAX_ITERATIONS: usize = 10_000;

    /// K factors, no rotation, the default tolerance and bound.
    pub fn new(n_components: usize) -> Self {
        FactorAnalysisParams {
            n_components,
            rotation: Rotation::None,
            tolerance: Self::DEFAULT_TOLERANCE,
            max_iterations: Self::DEFAULT_MAX_ITERATIONS,
        }
    }

    /// Checks the settings that do not depend on data.
    pub fn validate(&self) -> Result<()> {
        if self.n_components == 0 {
            return Err(PcaError::ZeroComponents);
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return Err(PcaError::ToleranceOutOfRange(self.tolerance));
        }
        if self.max_iterations == 0 {
            return Err(PcaError::ZeroIterations);
        }
        Ok(())
    }

    /// Fits the model to the rows of `x` (N×D, N ≥ 2).
    pub fn fit(&self, x: MatRef<'_, f64>) -> Result<FactorAnalysis> {
        crate::kernel::parallel::fix_faer_split();
        self.validate()?;
        let (n, d) = (x.nrows(), x.ncols());
        if n == 0 || d == 0 {
            return Err(PcaError::EmptyData {
                n_samples: n,
                n_features: d,
            });
        }
        if n < 2 {
            return Err(PcaError::TooFewSamples {
                n_samples: n,
                ddof: 1,
            });
        }
        if self.n_components > d {
            return Err(PcaError::TooManyComponents {
                requested: self.n_components,
                max: d,
            });
        }
        check_finite(x)?;
        let k = self.n_components;
        let mean = column_means(x);
        let xc = centred(x, &mean);
        // The covariance with ddof 0, as scikit-learn's X / √N.
        let covariance = (xc.transpose() * &xc) * faer::Scale(1.0 / n as f64);
        let variance: Vec<f64> = (0..d).map(|j| covariance[(j, j)]).collect();
        if let Some(column) = variance.iter().position(|&v| v <= 0.0) {
            return Err(PcaError::InvalidModel(format!(
                "feature {column} is constant: factor analysis needs every feature to vary \
                 (its noise variance would be 0)"
            )));
        }
        let em = Em {
            covariance: covariance.as_ref(),
            variance: &variance,
            k,
            n,
            constant: d as f64 * (2.0 * std::f64::consts::PI).ln() + k as f64,
        };

        let mut psi = vec![1.0f64; d];
        let mut history = Vec::new();
        let mut previous_change: Option<f64> = None;
        let mut changes = Vec::new();
        let mut converged = false;
        let mut distance = f64::INFINITY;
        let mut loadings = Mat::<f64>::zeros(k, d);
        let mut log_likelihood = f64::NEG_INFINITY;
        let mut route = Route::Try(None);
        // ψ and its fall per feature RATE_WINDOW steps ago, for the Heywood check; and a step
        // already computed at the next ψ (a floored trial that was kept).
        let mut earlier: Option<(Vec<f64>, Vec<f64>)> = None;
        let mut pending: Option<EmStep> = None;
        for _ in 0..self.max_iterations {
            let step = match pending.take() {
                Some(step) => step,
                None => em.step(&psi, route)?,
            };
            route = step.route;
            loadings = step.loadings;
            log_likelihood = step.log_likelihood;
            let mut next = step.next;
            history.push(log_likelihood);

            // Relative to each feature's variance: a ψ heading for 0 (a Heywood case) would
            // otherwise never look converged.
            let change = (0..d)
                .map(|j| (psi[j] - next[j]).abs() / variance[j])
                .fold(0.0, f64::max);
            // EM converges linearly: with rate r the distance left is about change·r/(1 − r);
            // change/(1 − r) bounds it from above. The rate is the larger of the last step's
            // and the mean over the last RATE_WINDOW steps: one step's ratio jumps when the
            // feature of the largest change switches, and would understate a slow mode.
            changes.push(change);
            let last = previous_change
                .filter(|&p| p > 0.0)
                .map_or(0.0, |p| change / p);
            let window = changes
                .len()
                .checked_sub(RATE_WINDOW + 1)
                .map(|i| changes[i])
                .filter(|&c| c > 0.0)
                .map_or(0.0, |c| (change / c).powf(1.0 / RATE_WINDOW as f64));
            let rate = last.max(window).min(0.999_999);
            distance = change / (1.0 - rate);
            previous_change = Some(change);
            if change == 0.0 || (changes.len() > RATE_WINDOW && distance <= self.tolerance) {
                converged = true;
                break;
            }

            // A Heywood case: a ψ whose maximum is at 0 falls ever more slowly (Iris with one
            // factor: 10,000 steps left ψ of petal length at 8e-5, 2.7e-5 of its variance).
            // Every RATE_WINDOW steps the features that look like one (`heads_for_zero`) are
            // tried next to 0 (`HEYWOOD_TRIAL`); the point is kept only if the log-likelihood
            // is higher there, and EM goes on from it.
            if history.len() % RATE_WINDOW == 0 {
                let fall: Vec<f64> = (0..d).map(|j| psi[j] - next[j]).collect();
                if let Some((earlier_psi, earlier_fall)) = &earlier {
                    let mut trial = next.clone();
                    let mut floored = false;
                    for j in 0..d {
                        let then = (earlier_psi[j], earlier_fall[j]);
                        let near_zero = (HEYWOOD_TRIAL * self.tolerance * variance[j]).max(SMALL);
                        // A feature already next to 0 is not tried again.
                        if next[j] > 2.0 * near_zero
                            && heads_for_zero(then, (psi[j], fall[j]), next[j], variance[j])
                        {
                            trial[j] = near_zero;
                            floored = true;
                        }
                    }
                    if floored {
                        let tried = em.step(&trial, route.clone())?;
                        if tried.log_likelihood > log_likelihood {
                            next = trial;
                            pending = Some(tried);
                            // The rate is measured afresh from the new point.
                            changes.clear();
                            previous_change = None;
                        }
                    }
                }
                earlier = Some((psi.clone(), fall));
            }
            psi = next;
        }
        let components = match self.rotation {
            Rotation::None => loadings,
            rotation => rotate(loadings.as_ref(), rotation),
        };
        let mut components = components;
        flip_rows(components.as_mut());
        Ok(FactorAnalysis {
            components,
            noise_variance: psi,
            mean,
            n_samples: n,
            rotation: self.rotation,
            log_likelihood: log_likelihood / n as f64,
            log_likelihood_history: history,
            converged,
            distance,
            tolerance: self.tolerance,
        })
    }
}

/// One EM step at ψ: the log-likelihood there (total over the rows), the loadings and the
/// next ψ, and the eigensolver's route for the step after.
struct EmStep {
    log_likelihood: f64,
    loadings: Mat<f64>,
    next: Vec<f64>,
    route: Route,
}

/// What every EM step of one fit reads: the ddof-0 covariance and its diagonal, K, N and the
/// log-likelihood's constant (D log 2π + K).
struct Em<'a> {
    covariance: MatRef<'a, f64>,
    variance: &'a [f64],
    k: usize,
    n: usize,
    constant: f64,
}

impl Em<'_> {
    /// scikit-learn's EM step from `psi`.
    fn step(&self, psi: &[f64], route: Route) -> Result<EmStep> {
        let (d, k) = (psi.len(), self.k);
        let root: Vec<f64> = psi.iter().map(|p| p.sqrt() + SMALL).collect();
        let scaled = Mat::from_fn(d, d, |i, j| self.covariance[(i, j)] / (root[i] * root[j]));
        // Lanczos starts from the last step's leading vectors (summed): ψ moves little
        // between steps, and this start saved about a fifth of the Lanczos time on MNIST.
        // For the same reason, once the certified route declines (a flat spectrum at the
        // cut: more factors than the data has) the later steps go straight to the dense
        // route instead of paying the attempt every step.
        let (kept, vectors, taken) =
            leading_eigen_from(scaled.as_ref(), k, 1.0, "factor-analysis", route)?;
        let route = Route::next(&taken, vectors.as_ref());
        // The discarded eigenvalues' sum: the trace less the kept.
        let trace: f64 = (0..d).map(|j| scaled[(j, j)]).sum();
        let unexplained = (trace - kept.iter().sum::<f64>()).max(0.0);
        let loadings = Mat::from_fn(k, d, |m, j| {
            (kept[m] - 1.0).max(0.0).sqrt() * vectors[(j, m)] * root[j]
        });
        let log_det: f64 = kept.iter().map(|s| s.max(f64::MIN_POSITIVE).ln()).sum();
        let log_psi: f64 = psi.iter().map(|p| p.ln()).sum();
        let log_likelihood =
            -(self.n as f64) / 2.0 * (self.constant + log_det + unexplained + log_psi);
        let next = (0..d)
            .map(|j| {
                let w2: f64 = (0..k).map(|m| loadings[(m, j)].powi(2)).sum();
                (self.variance[j] - w2).max(SMALL)
            })
            .collect();
        Ok(EmStep {
            log_likelihood,
            loadings,
            next,
            route,
        })
    }
}

/// ψ of a feature counts as heading for 0 when it is at most this share of the feature's
/// variance.
const HEYWOOD_SHARE: f64 = 0.05;

/// A Heywood feature's ψ is tried at this share of the tolerance times its variance: within
/// the tolerance of 0. Not at SMALL itself: the scaled covariance's entry for the feature,
/// variance / ψ, leaves the log-likelihood's discarded-eigenvalue sum (trace less the kept)
/// with rounding of about ε · variance / ψ per row (at SMALL on Iris, 7e-4 per row above the
/// model's own scores; here about 1e-8 relative).
const HEYWOOD_TRIAL: f64 = 0.1;

/// Whether a feature's ψ looks like a Heywood case's, from its value and its fall over one EM
/// step RATE_WINDOW steps ago (`then`) and now (`now`), and its `next` value. EM's step is
/// ψ − ψ² ∂ℓ/∂ψ (ℓ the negative log-likelihood's profile in ψ), so fall/ψ² is that
/// derivative: towards a maximum inside it vanishes, by EM's rate to the power RATE_WINDOW
/// over the window (below a half for any rate up to 0.966); towards a maximum at 0 it stays
/// positive while the falls shrink with ψ². So: ψ fell at both ends of the window, is
/// already small, and the derivative kept at least half its value.
fn heads_for_zero(then: (f64, f64), now: (f64, f64), next: f64, variance: f64) -> bool {
    let ((psi_then, fall_then), (psi_now, fall_now)) = (then, now);
    fall_then > 0.0
        && fall_now > 0.0
        && next <= HEYWOOD_SHARE * variance
        && fall_now / (psi_now * psi_now) >= 0.5 * fall_then / (psi_then * psi_then)
}

/// scikit-learn's `_ortho_rotation` of the K×D loadings, to convergence: the rotation R that
/// maximises the criterion, by SVD of `Lᵀ (Λ³ − Λ diag(ΛᵀΛ)/D)` (varimax) or `Lᵀ Λ³`
/// (quartimax), Λ = L R, until the criterion stops growing (at most 100 000 steps).
fn rotate(loadings: MatRef<'_, f64>, rotation: Rotation) -> Mat<f64> {
    let l = loadings.transpose().to_owned(); // D×K
    let (d, k) = (l.nrows(), l.ncols());
    let mut r = Mat::<f64>::identity(k, k);
    let mut criterion = 0.0;
    for _ in 0..100_000 {
        let lr = &l * &r;
        let column_sums: Vec<f64> = (0..k)
            .map(|m| (0..d).map(|j| lr[(j, m)].powi(2)).sum::<f64>() / d as f64)
            .collect();
        let target = Mat::from_fn(d, k, |j, m| {
            let cube = lr[(j, m)].powi(3);
            match rotation {
                Rotation::Varimax => cube - lr[(j, m)] * column_sums[m],
                _ => cube,
            }
        });
        let product = l.transpose() * &target;
        let Ok(svd) = product.svd() else {
            break;
        };
        r = svd.U() * svd.V().transpose();
        let next: f64 = (0..k).map(|i| svd.S()[i]).sum();
        // No growth at all: converged to rounding (scikit-learn's test with tol = 0).
        if criterion != 0.0 && next <= criterion {
            break;
        }
        criterion = next;
    }
    (&l * &r).transpose().to_owned()
}

/// A fitted factor analysis.
#[derive(Clone, Debug, PartialEq)]
pub struct FactorAnalysis {
    components: Mat<f64>,
    noise_variance: Vec<f64>,
    mean: Vec<f64>,
    n_samples: usize,
    rotation: Rotation,
    log_likelihood: f64,
    log_likelihood_history: Vec<f64>,
    converged: bool,
    distance: f64,
    tolerance: f64,
}

/// Everything a [`FactorAnalysis`] is made of, for storing it and reading it back.
#[derive(Clone, Debug, PartialEq)]
pub struct FactorAnalysisParts {
    /// K×D loadings W (rotated when a rotation was asked for).
    pub components: Mat<f64>,
    /// ψ, D values.
    pub noise_variance: Vec<f64>,
    /// μ, D values.
    pub mean: Vec<f64>,
    /// N of the training data.
    pub n_samples: usize,
    /// The rotation applied.
    pub rotation: Rotation,
    /// The mean log-likelihood per training row.
    pub log_likelihood: f64,
    /// The total log-likelihood after each EM step.
    pub log_likelihood_history: Vec<f64>,
    /// Whether EM reached the tolerance.
    pub converged: bool,
    /// The estimated relative distance of ψ to EM's fixed point when EM stopped.
    pub distance: f64,
    /// The tolerance EM ran to.
    pub tolerance: f64,
}

impl FactorAnalysis {
    /// The model made of `parts`, checked for consistency.
    pub fn from_parts(parts: FactorAnalysisParts) -> Result<Self> {
        let d = parts.mean.len();
        if parts.components.ncols() != d || parts.noise_variance.len() != d {
            return Err(PcaError::InvalidModel(format!(
                "{} features in the mean, {} in the loadings, {} noise variances",
                d,
                parts.components.ncols(),
                parts.noise_variance.len()
            )));
        }
        if let Some(j) = parts
            .noise_variance
            .iter()
            .position(|p| !(*p > 0.0 && p.is_finite()))
        {
            return Err(PcaError::InvalidModel(format!(
                "noise variance {} of feature {j} is not positive",
                parts.noise_variance[j]
            )));
        }
        check_finite(parts.components.as_ref())?;
        Ok(FactorAnalysis {
            components: parts.components,
            noise_variance: parts.noise_variance,
            mean: parts.mean,
            n_samples: parts.n_samples,
            rotation: parts.rotation,
            log_likelihood: parts.log_likelihood,
            log_likelihood_history: parts.log_likelihood_history,
            converged: parts.converged,
            distance: parts.distance,
            tolerance: parts.tolerance,
        })
    }

    /// The parts, for storing.
    pub fn to_parts(&self) -> FactorAnalysisParts {
        FactorAnalysisParts {
            components: self.components.clone(),
            noise_variance: self.noise_variance.clone(),
            mean: self.mean.clone(),
            n_samples: self.n_samples,
            rotation: self.rotation,
            log_likelihood: self.log_likelihood,
            log_likelihood_history: self.log_likelihood_history.clone(),
            converged: self.converged,
            distance: self.distance,
            tolerance: self.tolerance,
        }
    }

    /// K×D loadings W.
    pub fn components(&self) -> MatRef<'_, f64> {
        self.components.as_ref()
    }
    /// ψ, the noise variance of each feature.
    pub fn noise_variance(&self) -> &[f64] {
        &self.noise_variance
    }
    /// μ.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }
    /// N of the training data.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }
    /// The rotation applied to the loadings.
    pub fn rotation(&self) -> Rotation {
        self.rotation
    }
    /// The mean log-likelihood per row of the training data.
    pub fn log_likelihood(&self) -> f64 {
        self.log_likelihood
    }
    /// The total log-likelihood of the training data after each EM step (never decreasing).
    pub fn log_likelihood_history(&self) -> &[f64] {
        &self.log_likelihood_history
    }
    /// EM steps taken.
    pub fn n_iter(&self) -> usize {
        self.log_likelihood_history.len()
    }
    /// Whether EM reached the tolerance.
    pub fn converged(&self) -> bool {
        self.converged
    }
    /// The estimated relative distance of ψ to EM's fixed point when EM stopped.
    pub fn distance(&self) -> f64 {
        self.distance
    }
    /// The tolerance EM ran to.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// The model covariance `WᵀW + diag ψ`, D×D.
    pub fn covariance(&self) -> Mat<f64> {
        let mut c = self.components.transpose() * &self.components;
        for (j, p) in self.noise_variance.iter().enumerate() {
            c[(j, j)] += p;
        }
        c
    }

    /// The model precision `(WᵀW + diag ψ)⁻¹`, D×D, by the matrix inversion lemma:
    /// `ψ⁻¹ − ψ⁻¹Wᵀ (I + W ψ⁻¹ Wᵀ)⁻¹ W ψ⁻¹` (a K×K system instead of a D×D one).
    pub fn precision(&self) -> Result<Mat<f64>> {
        let (m, w_psi) = self.latent_precision();
        let llt = m.llt(faer::Side::Lower).map_err(|e| {
            PcaError::DegenerateModel(format!("I + W ψ⁻¹ Wᵀ is not positive definite: {e:?}"))
        })?;
        let solved = llt.solve(w_psi.clone());
        let mut p = -(w_psi.transpose() * &solved);
        for (j, psi) in self.noise_variance.iter().enumerate() {
            p[(j, j)] += 1.0 / psi;
        }
        Ok(p)
    }

    /// `I + W ψ⁻¹ Wᵀ`, K×K, and `W ψ⁻¹`.
    fn latent_precision(&self) -> (Mat<f64>, Mat<f64>) {
        let w_psi = Mat::from_fn(self.components.nrows(), self.components.ncols(), |m, j| {
            self.components[(m, j)] / self.noise_variance[j]
        });
        let mut m = &w_psi * self.components.transpose();
        for i in 0..m.nrows() {
            m[(i, i)] += 1.0;
        }
        (m, w_psi)
    }
}

impl LatentModel for FactorAnalysis {
    fn kind(&self) -> ModelKind {
        ModelKind::FactorAnalysis
    }
    fn n_features(&self) -> usize {
        self.mean.len()
    }
    fn n_components(&self) -> usize {
        self.components.nrows()
    }
    fn component_prefix(&self) -> &'static str {
        "factor"
    }
    fn supports(&self, operation: Operation) -> bool {
        matches!(
            operation,
            Operation::Transform | Operation::Inverse | Operation::Score | Operation::Sample
        )
    }

    /// The posterior means of the factors, `(I + W ψ⁻¹ Wᵀ)⁻¹ W ψ⁻¹ (x − μ)`.
    fn transform(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        check_rows(x, self.n_features())?;
        let (m, w_psi) = self.latent_precision();
        let xc = centred(x, &self.mean);
        let rhs = (&w_psi * xc.transpose()).to_owned();
        let llt = m.llt(faer::Side::Lower).map_err(|e| {
            PcaError::DegenerateModel(format!("I + W ψ⁻¹ Wᵀ is not positive definite: {e:?}"))
        })?;
        Ok(llt.solve(rhs).transpose().to_owned())
    }

    /// `E[x | z] = μ + Wᵀ z`.
    fn inverse_transform(&self, z: MatRef<'_, f64>) -> Result<Mat<f64>> {
        if z.ncols() != self.n_components() {
            return Err(PcaError::ComponentMismatch {
                expected: self.n_components(),
                found: z.ncols(),
            });
        }
        check_finite(z)?;
        let mut x = z * &self.components;
        for i in 0..x.nrows() {
            for j in 0..x.ncols() {
                x[(i, j)] += self.mean[j];
            }
        }
        Ok(x)
    }

    /// `log N(x; μ, WᵀW + diag ψ)` of each row.
    fn score_samples(&self, x: MatRef<'_, f64>) -> Result<Vec<f64>> {
        check_rows(x, self.n_features())?;
        let d = self.n_features();
        let llt = self.covariance().llt(faer::Side::Lower).map_err(|e| {
            PcaError::DegenerateModel(format!("the covariance is not positive definite: {e:?}"))
        })?;
        let l = llt.L();
        let log_det: f64 = (0..d).map(|j| 2.0 * l[(j, j)].ln()).sum();
        let xc = centred(x, &self.mean);
        let solved = llt.solve(xc.transpose().to_owned());
        let constant = d as f64 * (2.0 * std::f64::consts::PI).ln() + log_det;
        Ok((0..x.nrows())
            .map(|i| {
                let quadratic: f64 = (0..d).map(|j| xc[(i, j)] * solved[(j, i)]).sum();
                -0.5 * (quadratic + constant)
            })
            .collect())
    }

    /// `x = μ + Wᵀ z + ψ^½ ε`, z and ε standard normal, from a ChaCha8 stream seeded by `seed`.
    fn sample(&self, n: usize, seed: u64) -> Result<Mat<f64>> {
        let (k, d) = (self.n_components(), self.n_features());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut normal = || -> f64 { StandardNormal.sample(&mut rng) };
        let z = Mat::from_fn(n, k, |_, _| normal());
        let noise = Mat::from_fn(n, d, |_, _| normal());
        let mut x = &z * &self.components;
        for i in 0..n {
            for j in 0..d {
                x[(i, j)] += self.mean[j] + self.noise_variance[j].sqrt() * noise[(i, j)];
            }
        }
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two factors planted in six features with unequal noise.
    pub(crate) fn planted(n: usize, seed: u64) -> Mat<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut normal = || -> f64 { StandardNormal.sample(&mut rng) };
        let w = [
            [1.0, 0.8, 0.6, 0.0, 0.1, 0.0],
            [0.0, 0.2, 0.5, 1.0, 0.7, 0.9],
        ];
        let noise = [0.4, 0.5, 0.45, 0.6, 0.35, 0.5];
        let z = Mat::from_fn(n, 2, |_, _| normal());
        let e = Mat::from_fn(n, 6, |_, _| normal());
        Mat::from_fn(n, 6, |i, j| {
            3.0 + z[(i, 0)] * w[0][j] + z[(i, 1)] * w[1][j] + noise[j] * e[(i, j)]
        })
    }

    #[test]
    fn log_likelihood_never_decreases_and_matches_the_scores() {
        let x = planted(300, 1);
        let model = FactorAnalysisParams::new(2).fit(x.as_ref()).unwrap();
        assert!(
            model.converged(),
            "{} steps, distance {:e}, ψ {:?}",
            model.n_iter(),
            model.distance(),
            model.noise_variance()
        );
        for pair in model.log_likelihood_history().windows(2) {
            assert!(pair[1] >= pair[0] - 1e-9 * pair[0].abs(), "{pair:?}");
        }
        let scores = model.score_samples(x.as_ref()).unwrap();
        let mean = scores.iter().sum::<f64>() / scores.len() as f64;
        assert!(
            (mean - model.log_likelihood()).abs() < 1e-9,
            "{mean} vs {}",
            model.log_likelihood()
        );
    }

    #[test]
    fn rotation_keeps_the_covariance_and_the_likelihood() {
        let x = planted(200, 2);
        let plain = FactorAnalysisParams::new(2).fit(x.as_ref()).unwrap();
        for rotation in [Rotation::Varimax, Rotation::Quartimax] {
            let params = FactorAnalysisParams {
                rotation,
                ..FactorAnalysisParams::new(2)
            };
            let rotated = params.fit(x.as_ref()).unwrap();
            let (a, b) = (plain.covariance(), rotated.covariance());
            for i in 0..6 {
                for j in 0..6 {
                    assert!((a[(i, j)] - b[(i, j)]).abs() < 1e-10);
                }
            }
            let (sa, sb) = (
                plain.score_samples(x.as_ref()).unwrap(),
                rotated.score_samples(x.as_ref()).unwrap(),
            );
            assert!(sa.iter().zip(&sb).all(|(p, q)| (p - q).abs() < 1e-9));
        }
    }

    #[test]
    fn precision_is_the_inverse_of_the_covariance() {
        let x = planted(300, 3);
        let model = FactorAnalysisParams::new(2).fit(x.as_ref()).unwrap();
        let product = model.covariance() * model.precision().unwrap();
        for i in 0..product.nrows() {
            for j in 0..product.ncols() {
                let expected = if i == j { 1.0 } else { 0.0 };
                assert!((product[(i, j)] - expected).abs() < 1e-10, "{i} {j}");
            }
        }
    }

    #[test]
    fn more_factors_than_features_is_refused() {
        let x = planted(20, 3);
        assert!(matches!(
            FactorAnalysisParams::new(7).fit(x.as_ref()),
            Err(PcaError::TooManyComponents {
                requested: 7,
                max: 6
            })
        ));
        assert!(matches!(
            FactorAnalysisParams::new(0).fit(x.as_ref()),
            Err(PcaError::ZeroComponents)
        ));
    }
}
