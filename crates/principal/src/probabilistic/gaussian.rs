//! A fitted model as a Gaussian latent-variable model (probabilistic PCA, Tipping & Bishop
//! 1999): its covariance and precision, the log-likelihood of data, the posterior of the latent
//! point, and the likelihood of every smaller number of components from one fit.
//!
//! ```text
//! z ~ N(0, I_M),  x = W z + μ + ε,  ε ~ N(0, σ² I_D)              (in the model's units)
//! W = B (Λ − σ²I)^½          B: the D×M components (orthonormal columns), σ² = noise_variance
//! C = W Wᵀ + σ² I = B diag(c) Bᵀ + σ² (I − B Bᵀ),     c_m = σ² + max(λ_m − σ², 0)
//! C⁻¹ = B diag(1/c) Bᵀ + (I − B Bᵀ) / σ²     (Woodbury: WᵀW is diagonal, nothing to invert)
//! log |C| = Σ_m log c_m + (D − M) log σ²
//! log p(x) = −½ (D log 2π + log |C| + Σ_m y_m² / c_m + ‖r‖² / σ²),   y = Bᵀ(x − μ), r = x − μ − B y
//! z | x ~ N(M⁻¹ Wᵀ (x − μ), σ² M⁻¹),   M = WᵀW + σ²I = diag(c)
//! ```
//!
//! With M = D there is no discarded direction: the σ² terms vanish and C = B diag(λ) Bᵀ is the
//! sample covariance. With M < D and σ² = 0 (every direction of variance kept, or data of exact
//! rank below D) C is singular: the density does not exist, and everything that needs C⁻¹ is
//! [`PcaError::DegenerateModel`], never an infinity or a NaN.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef};

use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::model::{PcaModel, truncated_noise};
use crate::real::Real;

/// `ln(2π)`.
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Which units a likelihood, covariance or precision is in.
///
/// A model fitted with [`crate::Scaling::Standardize`] is a Gaussian model of the standardized
/// data `xs = (x − μ) / s`. Its density in the original units is `p(x) = p(xs) / Π_j s_j`
/// (the Jacobian of `x ↦ xs`), so `log p(x) = log p(xs) − Σ_j log s_j`; its covariance is
/// `diag(s) C diag(s)` and its precision `diag(1/s) C⁻¹ diag(1/s)`. For a model that only
/// centres, the two are the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Units {
    /// The units the model was fitted in: standardized when it standardizes (as scikit-learn's
    /// PCA after a `StandardScaler`).
    #[default]
    Standardized,
    /// The data's own units.
    Original,
}

/// Over which directions [`ProbabilisticPca::score_by_component_count`]'s σ²_M averages the
/// discarded variance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum NoiseAverage {
    /// The r − M discarded directions of the data's span, r = min(N, D): the model's
    /// `noise_variance` (scikit-learn's).
    Span,
    /// All D − M directions the model does not keep (Tipping & Bishop's maximum likelihood,
    /// the zero eigenvalues beyond the span included; the same when N ≥ D), and at least
    /// `floor`: the rounding of a zero eigenvalue, so that data of exact rank scores finitely.
    Ambient {
        /// The smallest σ²_M.
        floor: f64,
    },
}

/// The posterior of the latent point of complete rows: its means, one row per sample, and its
/// covariance, the same for every complete row.
#[derive(Clone, Debug, PartialEq)]
pub struct Posterior {
    /// N×M: `E[z | x] = M⁻¹ Wᵀ (x − μ)` for every row.
    pub mean: Mat<f64>,
    /// M×M: `Cov[z | x] = σ² M⁻¹` (diagonal, since W = B (Λ − σ²I)^½ has orthogonal columns).
    pub covariance: Mat<f64>,
}

/// A fitted [`PcaModel`] seen as probabilistic PCA: the view is free to make
/// ([`PcaModel::probabilistic`]); each method does its own work.
///
/// ```
/// use principal::{faer::mat, ComponentCount, PcaBuilder, Units};
///
/// let x = mat![[2.0, 1.0, 0.5], [1.0, 3.0, 1.5], [4.0, 2.0, 2.5], [0.0, 1.0, 0.0], [3.0, 0.0, 1.0]];
/// let model = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?.fit(x.as_ref())?;
/// let ppca = model.probabilistic();
/// // σ² is the mean of the two discarded eigenvalues.
/// assert!(ppca.noise_variance() > 0.0);
/// let log_likelihood = ppca.score_samples(x.as_ref(), Units::Standardized)?;
/// let mean = log_likelihood.iter().sum::<f64>() / 5.0;
/// assert!((ppca.score(x.as_ref(), Units::Standardized)? - mean).abs() < 1e-12);
/// // C C⁻¹ = I.
/// let product = ppca.covariance(Units::Original) * ppca.precision(Units::Original)?;
/// for i in 0..3 {
///     for j in 0..3 {
///         let identity = if i == j { 1.0 } else { 0.0 };
///         assert!((product[(i, j)] - identity).abs() < 1e-12);
///     }
/// }
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ProbabilisticPca<'a> {
    model: &'a PcaModel,
}

impl<'a> ProbabilisticPca<'a> {
    /// The view of `model`.
    pub fn new(model: &'a PcaModel) -> Self {
        ProbabilisticPca { model }
    }

    /// The model seen.
    pub fn model(&self) -> &'a PcaModel {
        self.model
    }

    /// σ², the variance of the isotropic noise (the model's `noise_variance`).
    pub fn noise_variance(&self) -> f64 {
        self.model.noise_variance()
    }

    /// `c_m = σ² + max(λ_m − σ², 0)`: C's variance along each component (as scikit-learn, an
    /// explained variance below σ² counts as σ²).
    pub fn component_variances(&self) -> Vec<f64> {
        // λ_m < σ² happens without damage: by rounding when the last kept eigenvalue equals
        // the discarded ones, and by more for an iterative solver, whose λ_m are estimates from
        // below while σ² is the total less them. A loaded model's σ² is checked against the
        // exact solvers' λ_M when it is read (principal-io's model file).
        let noise = self.noise_variance();
        self.model
            .explained_variance()
            .iter()
            .map(|&l| noise + (l - noise).max(0.0))
            .collect()
    }

    /// The loadings `W = B (Λ − σ²I)^½`, D×M, in the model's units (the rotation of the
    /// maximum-likelihood W that makes its columns orthogonal).
    pub fn loadings(&self) -> Mat<f64> {
        let b = self.model.components();
        let noise = self.noise_variance();
        let root: Vec<f64> = self
            .model
            .explained_variance()
            .iter()
            // As in `component_variances`: λ_m below σ² gives that direction no loading.
            .map(|&l| (l - noise).max(0.0).sqrt())
            .collect();
        Mat::from_fn(b.ncols(), b.nrows(), |j, m| b[(m, j)] * root[m])
    }

    /// The model covariance `C = W Wᵀ + σ² I`, D×D (scikit-learn's `get_covariance`).
    pub fn covariance(&self, units: Units) -> Mat<f64> {
        let noise = self.noise_variance();
        let shift: Vec<f64> = self
            .component_variances()
            .iter()
            .map(|c| c - noise)
            .collect();
        let mut c = self.outer(&shift);
        let d = c.nrows();
        for j in 0..d {
            c[(j, j)] += noise;
        }
        self.rescale(c, units, 1.0)
    }

    /// The precision `C⁻¹`, D×D (scikit-learn's `get_precision`), by the Woodbury identity:
    /// no D×D matrix is inverted. [`PcaError::DegenerateModel`] when C is singular.
    pub fn precision(&self, units: Units) -> Result<Mat<f64>> {
        self.check_density()?;
        let noise = self.noise_variance();
        let d = self.model.n_features();
        let full = self.model.n_components() == d;
        // With M = D, I − BBᵀ = 0: only the components' terms remain.
        let outside = if full { 0.0 } else { 1.0 / noise };
        let shift: Vec<f64> = self
            .component_variances()
            .iter()
            .map(|c| 1.0 / c - outside)
            .collect();
        let mut p = self.outer(&shift);
        for j in 0..d {
            p[(j, j)] += outside;
        }
        Ok(self.rescale(p, units, -1.0))
    }

    /// `log |C|`.
    pub fn log_det_covariance(&self, units: Units) -> Result<f64> {
        self.check_density()?;
        Ok(
            self.log_det(&self.component_variances(), self.noise_variance())
                + 2.0 * self.log_jacobian(units),
        )
    }

    /// The log-likelihood of every row of `x` (N×D), length N (scikit-learn's `score_samples`).
    pub fn score_samples<T: Real>(&self, x: MatRef<'_, T>, units: Units) -> Result<Vec<f64>> {
        self.check_density()?;
        let variances = self.component_variances();
        let noise = self.noise_variance();
        let full = self.model.n_components() == self.model.n_features();
        let constant = -0.5
            * (self.model.n_features() as f64 * LN_2PI + self.log_det(&variances, noise))
            - self.log_jacobian(units);
        let mut out = vec![0.0; x.nrows()];
        self.for_codes_and_residuals(x, |start, codes, residuals| {
            for (i, r2) in residuals.iter().enumerate() {
                let inside: f64 = (0..variances.len())
                    .map(|m| codes[(i, m)] * codes[(i, m)] / variances[m])
                    .sum();
                let outside = if full { 0.0 } else { r2 / noise };
                out[start + i] = constant - 0.5 * (inside + outside);
            }
        })?;
        Ok(out)
    }

    /// The mean log-likelihood of the rows of `x` (scikit-learn's `score`).
    pub fn score<T: Real>(&self, x: MatRef<'_, T>, units: Units) -> Result<f64> {
        let all = self.score_samples(x, units)?;
        Ok(all.iter().sum::<f64>() / all.len().max(1) as f64)
    }

    /// The posterior of the latent point of each row of `x`: means `M⁻¹ Wᵀ (x − μ)` (N×M) and
    /// the covariance `σ² M⁻¹` they share. With σ² = 0 the posterior is a point (covariance
    /// 0, means `Λ^{-½} Bᵀ (x − μ)`); a kept component of zero variance with σ² = 0 makes M
    /// singular, [`PcaError::DegenerateModel`].
    pub fn posterior<T: Real>(&self, x: MatRef<'_, T>) -> Result<Posterior> {
        let covariance = self.posterior_covariance()?;
        let variances = self.component_variances();
        let noise = self.noise_variance();
        // M⁻¹ Wᵀ (x − μ) = diag(√(c − σ²)/c) Bᵀ (x − μ).
        let factor: Vec<f64> = variances
            .iter()
            // c ≥ σ² by construction; the clamp only absorbs the rounding of (σ² + x) − σ².
            .map(|&c| (c - noise).max(0.0).sqrt() / c)
            .collect();
        let mut mean = self.model.project(x)?;
        for (m, f) in factor.iter().enumerate() {
            for i in 0..mean.nrows() {
                mean[(i, m)] *= f;
            }
        }
        Ok(Posterior { mean, covariance })
    }

    /// The posterior covariance `σ² M⁻¹` (M×M, diagonal) that every complete row shares.
    pub fn posterior_covariance(&self) -> Result<Mat<f64>> {
        let variances = self.component_variances();
        if let Some(m) = variances.iter().position(|&c| c <= 0.0) {
            return Err(PcaError::DegenerateModel(format!(
                "component {} has variance 0 and so has the noise: M = WᵀW + σ²I is singular \
                 and the posterior of the latent point is not defined",
                m + 1
            )));
        }
        let noise = self.noise_variance();
        let k = variances.len();
        Ok(Mat::from_fn(k, k, |i, j| {
            if i == j { noise / variances[i] } else { 0.0 }
        }))
    }

    /// The mean log-likelihood of the rows of `x` under the model cut to each number of
    /// components M = 0, 1, …, K (K the model's): entry M is what
    /// [`PcaModel::truncated`]`(M)` would score (M = 0: the isotropic Gaussian N(μ, σ²₀ I)), from
    /// one product with the K components. The noise variance of each is re-estimated as the
    /// mean of the eigenvalues it discards, `σ²_M = (Σ_{M<m≤K} λ_m + (r − K) σ²_K) / (r − M)`
    /// with r = min(N, D) of the training data. `None` where that model is degenerate (σ²_M = 0
    /// with M < D). This is the curve a held-out (cross-validated) choice of M needs: fit once
    /// on the training folds with K components, score the held-out rows for every M.
    pub fn score_by_component_count<T: Real>(
        &self,
        x: MatRef<'_, T>,
        units: Units,
    ) -> Result<Vec<Option<f64>>> {
        self.score_by_component_count_with(x, units, NoiseAverage::Span)
    }

    /// [`Self::score_by_component_count`] with σ²_M averaged as `noise` says (cross-validation
    /// of wide data needs [`NoiseAverage::Ambient`]).
    pub(crate) fn score_by_component_count_with<T: Real>(
        &self,
        x: MatRef<'_, T>,
        units: Units,
        noise_average: NoiseAverage,
    ) -> Result<Vec<Option<f64>>> {
        let model = self.model;
        let (d, k) = (model.n_features(), model.n_components());
        let n = x.nrows().max(1) as f64;
        // Mean squared code per component, and mean squared residual outside all K.
        let mut code_sq = vec![0.0; k];
        let mut residual_sq = 0.0;
        self.for_codes_and_residuals(x, |_, codes, residuals| {
            for m in 0..k {
                code_sq[m] += (0..codes.nrows())
                    .map(|i| codes[(i, m)].powi(2))
                    .sum::<f64>();
            }
            residual_sq += residuals.iter().sum::<f64>();
        })?;
        for v in &mut code_sq {
            *v /= n;
        }
        residual_sq /= n;
        let jacobian = self.log_jacobian(units);
        let lambda = model.explained_variance();
        let rank = model.n_samples().min(d);
        let mut curve = Vec::with_capacity(k + 1);
        for m in 0..=k {
            let span_noise = truncated_noise(lambda, model.noise_variance(), rank, m);
            let noise = match noise_average {
                NoiseAverage::Span => span_noise,
                // The same discarded variance over all D − M directions (0 when m ≥ rank).
                NoiseAverage::Ambient { floor } if m < rank => {
                    (span_noise * (rank - m) as f64 / (d - m) as f64).max(floor)
                }
                NoiseAverage::Ambient { floor } => span_noise.max(floor),
            };
            let variances: Vec<f64> = lambda[..m]
                .iter()
                .map(|&l| noise + (l - noise).max(0.0))
                .collect();
            let full = m == d;
            let floor = self.rounding_floor();
            let degenerate = (!full && noise <= floor) || variances.iter().any(|&c| c <= floor);
            if degenerate {
                curve.push(None);
                continue;
            }
            let inside: f64 = (0..m).map(|i| code_sq[i] / variances[i]).sum();
            let outside = if full {
                0.0
            } else {
                (residual_sq + code_sq[m..].iter().sum::<f64>()) / noise
            };
            let log_det = self.log_det(&variances, noise);
            curve.push(Some(
                -0.5 * (d as f64 * LN_2PI + log_det + inside + outside) - jacobian,
            ));
        }
        Ok(curve)
    }

    /// `Σ_j log s_j` for [`Units::Original`] of a standardized model, else 0: what the
    /// change of units subtracts from a log-likelihood.
    pub fn log_jacobian(&self, units: Units) -> f64 {
        match (units, self.model.scale()) {
            (Units::Original, Some(s)) => s.iter().map(|v| v.ln()).sum(),
            _ => 0.0,
        }
    }

    /// `Σ log c_m + (D − M) log σ²`, the σ² term only when some direction is discarded.
    fn log_det(&self, variances: &[f64], noise: f64) -> f64 {
        let outside = self.model.n_features() - variances.len();
        let mut total: f64 = variances.iter().map(|c| c.ln()).sum();
        if outside > 0 {
            total += outside as f64 * noise.ln();
        }
        total
    }

    /// `B diag(v) Bᵀ`, D×D.
    fn outer(&self, v: &[f64]) -> Mat<f64> {
        let b = self.model.components();
        let scaled = Mat::from_fn(b.nrows(), b.ncols(), |m, j| b[(m, j)] * v[m]);
        let d = b.ncols();
        let mut out = Mat::zeros(d, d);
        matmul(
            out.as_mut(),
            Accum::Replace,
            b.transpose(),
            scaled.as_ref(),
            1.0,
            faer_par(),
        );
        // Exactly symmetric, whatever the product's rounding.
        for i in 0..d {
            for j in 0..i {
                let mean = 0.5 * (out[(i, j)] + out[(j, i)]);
                out[(i, j)] = mean;
                out[(j, i)] = mean;
            }
        }
        out
    }

    /// A D×D matrix in the model's units into `units`: `diag(s)^p A diag(s)^p`.
    fn rescale(&self, mut a: Mat<f64>, units: Units, power: f64) -> Mat<f64> {
        if let (Units::Original, Some(s)) = (units, self.model.scale()) {
            let d = a.nrows();
            for j in 0..d {
                for i in 0..d {
                    a[(i, j)] *= (s[i] * s[j]).powf(power);
                }
            }
        }
        a
    }

    /// The largest variance that is 0 to rounding: `D·ε·λ₁`. An eigenvalue of a covariance
    /// computed in f64 carries an absolute error of about ε‖C‖ times a small multiple of D, so
    /// the σ² of rank-deficient data comes out as 1e-30 or so rather than 0; a density with
    /// that σ² would score the training rows at +70 per row, a number with no meaning.
    fn rounding_floor(&self) -> f64 {
        let largest = self.model.explained_variance().first().copied();
        largest.unwrap_or(0.0).max(0.0) * self.model.n_features() as f64 * f64::EPSILON
    }

    /// The model has a density: σ² > 0 when a direction is discarded, every c_m > 0, both
    /// above the rounding floor ([`Self::rounding_floor`]).
    fn check_density(&self) -> Result<()> {
        let (d, k) = (self.model.n_features(), self.model.n_components());
        let noise = self.noise_variance();
        let floor = self.rounding_floor();
        if k < d && noise <= floor {
            let value = if noise == 0.0 {
                "0".to_owned()
            } else {
                format!("{noise:e}, 0 to rounding (at most D·ε·λ₁ = {floor:e}),")
            };
            return Err(PcaError::DegenerateModel(format!(
                "the noise variance is {value} with {k} of {d} directions kept (every direction \
                 of variance in the training data is kept, or its rank is below {d}): the model \
                 covariance WWᵀ + σ²I is singular and has no density; fit fewer components than \
                 the data's rank"
            )));
        }
        if let Some(m) = self.component_variances().iter().position(|&c| c <= floor) {
            return Err(PcaError::DegenerateModel(format!(
                "component {} has variance 0 and so has the noise: the model covariance is \
                 singular and has no density",
                m + 1
            )));
        }
        Ok(())
    }

    /// Calls `f(first_row, codes, squared_residuals)` for blocks of rows of `x`: the codes
    /// `Bᵀ(x − μ)/s` and `‖(x − μ)/s − B codes‖²` per row (0 when M = D).
    fn for_codes_and_residuals<T: Real>(
        &self,
        x: MatRef<'_, T>,
        mut f: impl FnMut(usize, MatRef<'_, f64>, &[f64]),
    ) -> Result<()> {
        let model = self.model;
        let b = model.components();
        let full = model.n_components() == model.n_features();
        model.for_prepared_blocks(x, |start, xs| {
            let mut codes = Mat::zeros(xs.nrows(), b.nrows());
            matmul(
                codes.as_mut(),
                Accum::Replace,
                xs,
                b.transpose(),
                1.0,
                faer_par(),
            );
            let residuals: Vec<f64> = if full {
                vec![0.0; xs.nrows()]
            } else {
                // Directly, not ‖x‖² − ‖codes‖², which cancels when the components explain
                // most of the variance.
                let mut r = xs.to_owned();
                matmul(r.as_mut(), Accum::Add, codes.as_ref(), b, -1.0, faer_par());
                (0..r.nrows()).map(|i| r.row(i).squared_norm_l2()).collect()
            };
            f(start, codes.as_ref(), &residuals);
        })
    }
}
