//! The fitted model: transform, inverse transform, reconstruction error and accessors.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef};

use crate::choose::choice::ComponentChoice;
use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::kernel::scan::check_finite;
use crate::options::{Basis, Scaling, Solver, Whitening};
use crate::preprocess::{Preprocessing, centre_scale_into};
use crate::real::Real;
use crate::solver::missing::{MissingFit, MissingValueReport};
use crate::solver::{EigenRoute, IterationReport, Spectrum};

/// A fitted principal component analysis.
///
/// Names follow scikit-learn without the trailing underscore: `components()` is
/// `components_`, `explained_variance()` is `explained_variance_`, and so on.
///
/// Two models are equal when their parts ([`PcaModel::to_parts`]) and component choices are:
/// how the fit's eigenproblem was solved ([`PcaModel::eigen_route`]) is a record of the fit,
/// not of the model, so a model read back from its file equals the one fitted.
#[derive(Clone, Debug)]
pub struct PcaModel {
    mean: Vec<f64>,
    scale: Option<Vec<f64>>,
    components: Mat<f64>,
    explained_variance: Vec<f64>,
    explained_variance_ratio: Vec<f64>,
    singular_values: Vec<f64>,
    noise_variance: f64,
    total_variance: f64,
    n_samples: usize,
    ddof: usize,
    solver: Solver,
    zero_variance_features: Vec<usize>,
    iteration_report: Option<IterationReport>,
    eigen_route: Option<EigenRoute>,
    component_choice: Option<ComponentChoice>,
    missing_values: Option<MissingValueReport>,
    whitening: Whitening,
    basis: Basis,
}

impl PartialEq for PcaModel {
    fn eq(&self, other: &Self) -> bool {
        self.component_choice == other.component_choice && self.to_parts() == other.to_parts()
    }
}

/// Every field of a [`PcaModel`], public: for model files and other languages.
/// [`PcaModel::from_parts`] checks that they are consistent.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelParts {
    /// Training mean, length D.
    pub mean: Vec<f64>,
    /// Training standard deviations (length D) when standardized.
    pub scale: Option<Vec<f64>>,
    /// M×D, orthonormal rows.
    pub components: Mat<f64>,
    /// λ₁ ≥ … ≥ λ_M.
    pub explained_variance: Vec<f64>,
    /// λ_m / trace(S).
    pub explained_variance_ratio: Vec<f64>,
    /// sqrt(λ_m (N − ddof)).
    pub singular_values: Vec<f64>,
    /// Mean of the discarded eigenvalues.
    pub noise_variance: f64,
    /// trace(S) in scaled units.
    pub total_variance: f64,
    /// Training samples N.
    pub n_samples: usize,
    /// 0 or 1.
    pub ddof: usize,
    /// The solver that fitted the model (never `Auto`).
    pub solver: Solver,
    /// Features of zero variance in the training data (scale 1 when standardized).
    pub zero_variance_features: Vec<usize>,
    /// Passes and error estimate of an iterative solver; `None` for exact solvers.
    pub iteration_report: Option<IterationReport>,
    /// How a fit with missing values went; `None` when the data had none to handle.
    pub missing_values: Option<MissingValueReport>,
    /// Whether [`PcaModel::transform`] whitens the codes.
    pub whitening: Whitening,
    /// Eigenvectors, or rotated to match a reference ([`Basis`]).
    pub basis: Basis,
}

/// Relative tolerance under which two entries count as tied for the sign rule.
const SIGN_TIE: f64 = 1e-9;

impl PcaModel {
    /// The model of `n_samples` rows from a solver's spectrum and the training preprocessing,
    /// with the first `m` components (signs fixed, variances and ratios) and how `m` was chosen
    /// when a rule chose it.
    pub(crate) fn from_spectrum(
        spectrum: Spectrum,
        prep: Preprocessing,
        m: usize,
        choice: Option<ComponentChoice>,
        ddof: usize,
        n_samples: usize,
        solver: Solver,
    ) -> Result<Self> {
        let d = prep.mean.len();
        let max = n_samples.min(d);
        let values = &spectrum.eigenvalues;
        let total = prep.total_variance;
        let ratio_of = |v: f64| if total > 0.0 { v / total } else { 0.0 };
        assert!(
            m <= spectrum.vectors.ncols(),
            "solver returned too few eigenvectors"
        );
        let mut components = Mat::from_fn(m, d, |i, j| spectrum.vectors[(j, i)]);
        for i in 0..m {
            fix_sign(components.as_mut().row_mut(i));
        }
        let explained_variance: Vec<f64> = values[..m].to_vec();
        let explained_variance_ratio = explained_variance.iter().map(|&v| ratio_of(v)).collect();
        let denom = (n_samples - ddof) as f64;
        let singular_values = explained_variance
            .iter()
            .map(|v| (v * denom).sqrt())
            .collect();
        // Mean of the discarded eigenvalues among min(N, D); an iterative solver knows only the
        // leading ones, so the discarded sum is the total variance less the kept sum.
        let discarded = if values.len() >= max {
            values[m..max].iter().sum::<f64>()
        } else {
            (total - explained_variance.iter().sum::<f64>()).max(0.0)
        };
        let noise_variance = if m < max {
            discarded / (max - m) as f64
        } else {
            0.0
        };
        Ok(PcaModel {
            mean: prep.mean,
            // Some exactly when standardizing.
            scale: prep.scale,
            components,
            explained_variance,
            explained_variance_ratio,
            singular_values,
            noise_variance,
            total_variance: total,
            n_samples,
            ddof,
            solver,
            zero_variance_features: prep.zero_variance,
            iteration_report: spectrum.report,
            eigen_route: spectrum.eigen_route,
            component_choice: choice,
            missing_values: None,
            whitening: Whitening::None,
            basis: Basis::Eigenvectors,
        })
    }

    /// The model of a fit with missing values: its k components, the variances of C along
    /// them, its σ² as EM found it (the mean of all D − k discarded directions' variance, by
    /// maximum likelihood), and its total variance trace(C) = Σ λ + (D − k) σ².
    pub(crate) fn from_missing_fit(fit: MissingFit, ddof: usize) -> Result<Self> {
        let d = fit.mean.len();
        let k = fit.spectrum.eigenvalues.len();
        let total =
            fit.spectrum.eigenvalues.iter().sum::<f64>() + (d - k) as f64 * fit.noise_variance;
        let prep = Preprocessing {
            mean: fit.mean,
            scale: fit.scale,
            zero_variance: fit.zero_variance,
            total_variance: total,
        };
        let mut model =
            Self::from_spectrum(fit.spectrum, prep, k, None, ddof, fit.n_samples, Solver::Em)?;
        model.noise_variance = fit.noise_variance;
        model.missing_values = Some(fit.report);
        Ok(model)
    }

    /// Rebuilds a model from its parts (e.g. read from a file), checking every shape. How the
    /// number of components was chosen is a fact of the fit, not a part: it is `None` here.
    pub fn from_parts(parts: ModelParts) -> Result<Self> {
        let d = parts.mean.len();
        let m = parts.components.nrows();
        let bad = |msg: String| Err(PcaError::InvalidModel(msg));
        if d == 0 {
            return bad("the mean is empty".into());
        }
        if parts.components.ncols() != d {
            return bad(format!(
                "components are {}×{} but the mean has {d} entries",
                m,
                parts.components.ncols()
            ));
        }
        if m == 0 || m > d {
            return bad(format!("{m} components for {d} features"));
        }
        for (name, len) in [
            ("explained_variance", parts.explained_variance.len()),
            (
                "explained_variance_ratio",
                parts.explained_variance_ratio.len(),
            ),
            ("singular_values", parts.singular_values.len()),
        ] {
            if len != m {
                return bad(format!(
                    "{name} has {len} entries but there are {m} components"
                ));
            }
        }
        if let Some(s) = &parts.scale {
            if s.len() != d {
                return bad(format!(
                    "scale has {} entries but the mean has {d}",
                    s.len()
                ));
            }
            if let Some(j) = s.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
                return bad(format!("scale[{j}] = {} is not a positive number", s[j]));
            }
        }
        if parts.ddof > 1 {
            return bad(format!("ddof {} is not 0 or 1", parts.ddof));
        }
        if parts.n_samples <= parts.ddof {
            return bad(format!(
                "n_samples {} is too few for ddof {}",
                parts.n_samples, parts.ddof
            ));
        }
        if parts.solver == Solver::Auto {
            return bad("the solver must be the one actually used, not auto".into());
        }
        if let Some(&j) = parts.zero_variance_features.iter().find(|&&j| j >= d) {
            return bad(format!("zero-variance feature index {j} is not below {d}"));
        }
        let finite = parts.mean.iter().all(|v| v.is_finite())
            && parts.explained_variance.iter().all(|v| v.is_finite())
            && parts.noise_variance.is_finite()
            && parts.total_variance.is_finite()
            && (0..m).all(|i| (0..d).all(|j| parts.components[(i, j)].is_finite()));
        if !finite {
            return bad("a stored value is NaN or infinite".into());
        }
        // Variances are never negative (a fit clamps its rounding at 0): a negative one can
        // only come from damage, and would make σ or W imaginary.
        if let Some(k) = parts.explained_variance.iter().position(|&v| v < 0.0) {
            return bad(format!(
                "explained_variance[{k}] = {} is negative",
                parts.explained_variance[k]
            ));
        }
        if parts.noise_variance < 0.0 {
            return bad(format!(
                "noise_variance = {} is negative",
                parts.noise_variance
            ));
        }
        Ok(PcaModel {
            mean: parts.mean,
            scale: parts.scale,
            components: parts.components,
            explained_variance: parts.explained_variance,
            explained_variance_ratio: parts.explained_variance_ratio,
            singular_values: parts.singular_values,
            noise_variance: parts.noise_variance,
            total_variance: parts.total_variance,
            n_samples: parts.n_samples,
            ddof: parts.ddof,
            solver: parts.solver,
            zero_variance_features: parts.zero_variance_features,
            iteration_report: parts.iteration_report,
            eigen_route: None,
            component_choice: None,
            missing_values: parts.missing_values,
            whitening: parts.whitening,
            basis: parts.basis,
        })
    }

    /// All fields, for writing the model elsewhere.
    pub fn to_parts(&self) -> ModelParts {
        ModelParts {
            mean: self.mean.clone(),
            scale: self.scale.clone(),
            components: self.components.clone(),
            explained_variance: self.explained_variance.clone(),
            explained_variance_ratio: self.explained_variance_ratio.clone(),
            singular_values: self.singular_values.clone(),
            noise_variance: self.noise_variance,
            total_variance: self.total_variance,
            n_samples: self.n_samples,
            ddof: self.ddof,
            solver: self.solver,
            zero_variance_features: self.zero_variance_features.clone(),
            iteration_report: self.iteration_report,
            missing_values: self.missing_values.clone(),
            whitening: self.whitening,
            basis: self.basis,
        }
    }

    /// The same model with its codes whitened or not ([`Whitening`]); nothing else changes.
    pub fn with_whitening(mut self, whitening: Whitening) -> Self {
        self.whitening = whitening;
        self
    }

    /// Codes `z = Bᵀ (x − μ) / σ`: an N×M matrix for N×D data; whitened, each column divided
    /// by `√λ_m` ([`Whitening::UnitVariance`]).
    pub fn transform<T: Real>(&self, x: MatRef<'_, T>) -> Result<Mat<f64>> {
        let mut z = self.project(x)?;
        self.whiten(z.as_mut());
        Ok(z)
    }

    /// The standard deviation of the codes along each component, `√λ_m`, by which whitened
    /// codes are divided; at least f64's epsilon (scikit-learn's clip), so that a component
    /// of zero variance gives finite codes. `None` when the model does not whiten.
    pub fn whitening_scale(&self) -> Option<Vec<f64>> {
        match self.whitening {
            Whitening::None => None,
            Whitening::UnitVariance => Some(
                self.explained_variance
                    .iter()
                    .map(|&v| v.max(0.0).sqrt().max(f64::EPSILON))
                    .collect(),
            ),
        }
    }

    /// Divides the columns of projections `z` (N×M) by [`Self::whitening_scale`], if any.
    pub(crate) fn whiten(&self, mut z: faer::MatMut<'_, f64>) {
        if let Some(scale) = self.whitening_scale() {
            for (m, s) in scale.iter().enumerate() {
                for i in 0..z.nrows() {
                    z[(i, m)] /= s;
                }
            }
        }
    }

    /// The projections `Bᵀ (x − μ) / σ`, never whitened (the probabilistic model's posterior
    /// starts from them).
    pub(crate) fn project<T: Real>(&self, x: MatRef<'_, T>) -> Result<Mat<f64>> {
        let mut z = Mat::zeros(x.nrows(), self.n_components());
        self.for_prepared_blocks(x, |start, xs| {
            let rows = xs.nrows();
            matmul(
                z.as_mut().subrows_mut(start, rows),
                Accum::Replace,
                xs,
                self.components.transpose(),
                1.0,
                faer_par(),
            );
        })?;
        Ok(z)
    }

    /// Calls `f(first_row, xs)` for blocks of rows of `x`, centred and scaled into one reused
    /// buffer: a copy of the whole of a large `x` in f64 would cost more memory than the data
    /// (8 bytes a value, 32 for bytes read as f32) and, fresh, as much time in page faults as
    /// the products.
    pub(crate) fn for_prepared_blocks<T: Real>(
        &self,
        x: MatRef<'_, T>,
        mut f: impl FnMut(usize, MatRef<'_, f64>),
    ) -> Result<()> {
        let d = self.n_features();
        if x.ncols() != d {
            return Err(PcaError::FeatureMismatch {
                expected: d,
                found: x.ncols(),
            });
        }
        check_finite(x, 0)?;
        // About 8 MiB of f64 rows per block.
        let block = ((1usize << 20) / d.max(1)).clamp(64, 8192).min(x.nrows());
        // In the input's layout, so that the copy reads and writes in order.
        let row_major = x.col_stride() == 1 && x.row_stride() != 1;
        let mut buffer = if row_major {
            Mat::<f64>::zeros(d, block)
        } else {
            Mat::<f64>::zeros(block, d)
        };
        let mut xs = if row_major {
            buffer.as_mut().transpose_mut()
        } else {
            buffer.as_mut()
        };
        for start in (0..x.nrows()).step_by(block.max(1)) {
            let rows = block.min(x.nrows() - start);
            let mut part = xs.as_mut().subrows_mut(0, rows);
            centre_scale_into(
                x.subrows(start, rows),
                &self.mean,
                self.scale.as_deref(),
                part.as_mut(),
            );
            f(start, xs.as_ref().subrows(0, rows));
        }
        Ok(())
    }

    /// `xs Bᵀ` for data already centred and scaled.
    fn codes(&self, xs: MatRef<'_, f64>) -> Mat<f64> {
        let mut z = Mat::zeros(xs.nrows(), self.n_components());
        matmul(
            z.as_mut(),
            Accum::Replace,
            xs,
            self.components.transpose(),
            1.0,
            faer_par(),
        );
        z
    }

    /// Reconstruction `x̃ = (B z) σ + μ` from N×M codes (whitened codes first multiplied by
    /// `√λ_m`, undoing [`Self::transform`]).
    pub fn inverse_transform<T: Real>(&self, codes: MatRef<'_, T>) -> Result<Mat<f64>> {
        if codes.ncols() != self.n_components() {
            return Err(PcaError::ComponentMismatch {
                expected: self.n_components(),
                found: codes.ncols(),
            });
        }
        check_finite(codes, 0)?;
        let unwhiten = self.whitening_scale();
        let z = Mat::from_fn(codes.nrows(), codes.ncols(), |i, j| {
            codes[(i, j)].to_f64() * unwhiten.as_ref().map_or(1.0, |s| s[j])
        });
        let mut x = Mat::zeros(codes.nrows(), self.n_features());
        matmul(
            x.as_mut(),
            Accum::Replace,
            z.as_ref(),
            self.components.as_ref(),
            1.0,
            faer_par(),
        );
        for j in 0..self.n_features() {
            let s = self.scale.as_ref().map_or(1.0, |s| s[j]);
            for i in 0..x.nrows() {
                x[(i, j)] = x[(i, j)] * s + self.mean[j];
            }
        }
        Ok(x)
    }

    /// Mean squared reconstruction error `(1/N) Σ ‖(x − x̃)/σ‖²` in the model's units
    /// (standardized units when the model standardizes). On the training data it equals
    /// `((N − ddof)/N) Σ_{j>M} λ_j`.
    pub fn reconstruction_error<T: Real>(&self, x: MatRef<'_, T>) -> Result<f64> {
        let mut total = 0.0;
        self.for_prepared_blocks(x, |_, xs| {
            let z = self.codes(xs);
            let mut residual = xs.to_owned();
            matmul(
                residual.as_mut(),
                Accum::Add,
                z.as_ref(),
                self.components.as_ref(),
                -1.0,
                faer_par(),
            );
            total += residual.squared_norm_l2();
        })?;
        let n = x.nrows().max(1) as f64;
        Ok(total / n)
    }

    /// The model cut to its first `n_components` components, as a fit keeping that many would
    /// give: the same mean, scale and eigenvalues, and the noise variance re-estimated as the
    /// mean of the eigenvalues now discarded among the min(N, D) (those the model never kept
    /// enter through its own noise variance).
    ///
    /// ```
    /// use principal::{faer::mat, ComponentCount, PcaBuilder};
    /// let x = mat![[2.0, 1.0, 0.5], [1.0, 3.0, 1.5], [4.0, 2.0, 2.5], [0.0, 1.0, 0.0]];
    /// let all = PcaBuilder::new().build()?.fit(x.as_ref())?;
    /// let one = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?.fit(x.as_ref())?;
    /// let cut = all.truncated(1)?;
    /// assert_eq!(cut.n_components(), 1);
    /// assert!((cut.noise_variance() - one.noise_variance()).abs() < 1e-12);
    /// # Ok::<(), principal::PcaError>(())
    /// ```
    pub fn truncated(&self, n_components: usize) -> Result<PcaModel> {
        let k = self.n_components();
        if n_components == 0 {
            return Err(PcaError::ZeroComponents);
        }
        if n_components > k {
            return Err(PcaError::TooManyComponents {
                requested: n_components,
                max: k,
            });
        }
        let rank = self.n_samples.min(self.n_features());
        let m = n_components;
        Ok(PcaModel {
            components: self.components.as_ref().subrows(0, m).to_owned(),
            explained_variance: self.explained_variance[..m].to_vec(),
            explained_variance_ratio: self.explained_variance_ratio[..m].to_vec(),
            singular_values: self.singular_values[..m].to_vec(),
            noise_variance: truncated_noise(&self.explained_variance, self.noise_variance, rank, m),
            ..self.clone()
        })
    }

    /// Principal axes, M×D: orthonormal rows sorted by decreasing explained variance.
    pub fn components(&self) -> MatRef<'_, f64> {
        self.components.as_ref()
    }
    /// The eigenvalues of the covariance (or correlation) matrix that were kept.
    pub fn explained_variance(&self) -> &[f64] {
        &self.explained_variance
    }
    /// Each kept eigenvalue over the total variance trace(S) (discarded directions included).
    pub fn explained_variance_ratio(&self) -> &[f64] {
        &self.explained_variance_ratio
    }
    /// `sqrt(λ_m (N − ddof))`: the singular values of the centred (scaled) data.
    pub fn singular_values(&self) -> &[f64] {
        &self.singular_values
    }
    /// Mean of the discarded eigenvalues among the min(N, D) (the probabilistic-PCA σ²); 0 when
    /// none is discarded.
    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }
    /// trace(S) in the model's units.
    pub fn total_variance(&self) -> f64 {
        self.total_variance
    }
    /// Training mean μ.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }
    /// Training standard deviations σ when standardized.
    pub fn scale(&self) -> Option<&[f64]> {
        self.scale.as_deref()
    }
    /// Centre only, or standardize.
    pub fn scaling(&self) -> Scaling {
        if self.scale.is_some() {
            Scaling::Standardize
        } else {
            Scaling::Centre
        }
    }
    /// Number of training samples N.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }
    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.mean.len()
    }
    /// Number of components M.
    pub fn n_components(&self) -> usize {
        self.components.nrows()
    }
    /// Delta degrees of freedom used for every variance.
    pub fn ddof(&self) -> usize {
        self.ddof
    }
    /// The solver that was actually used (`Auto` resolved).
    pub fn solver(&self) -> Solver {
        self.solver
    }
    /// Passes, error estimate and convergence of an iterative solver; `None` for exact ones.
    pub fn iteration_report(&self) -> Option<IterationReport> {
        self.iteration_report
    }
    /// How the covariance or gram solver's eigenproblem was solved (certified Krylov–Schur, or
    /// the whole decomposition and why), as the fit that made this model went; `None` for the
    /// other solvers and for a model read from its parts (a model file does not store it).
    ///
    /// ```
    /// use principal::{ComponentCount, DenseReason, EigenRoute, PcaBuilder, Solver, faer::Mat};
    ///
    /// let x = Mat::from_fn(50, 4, |i, j| ((i * 7 + j * j * 3) % 11) as f64);
    /// let builder = PcaBuilder::new().solver(Solver::Covariance);
    /// let model = builder.components(ComponentCount::Fixed(2)).build()?.fit(x.as_ref())?;
    /// // Four features: the whole 4×4 eigenproblem costs nothing.
    /// let small = EigenRoute::Dense(DenseReason::SmallMatrix);
    /// assert_eq!(model.eigen_route(), Some(&small));
    /// # Ok::<(), principal::PcaError>(())
    /// ```
    pub fn eigen_route(&self) -> Option<&EigenRoute> {
        self.eigen_route.as_ref()
    }
    /// How a fit with missing values (NaN) went: counts, EM iterations, likelihood; `None`
    /// for a fit of complete data.
    pub fn missing_values(&self) -> Option<MissingValueReport> {
        self.missing_values.clone()
    }
    /// Features with zero variance in the training data (kept at scale 1 when standardizing).
    pub fn zero_variance_features(&self) -> &[usize] {
        &self.zero_variance_features
    }
    /// Whether [`Self::transform`] whitens the codes.
    pub fn whitening(&self) -> Whitening {
        self.whitening
    }
    /// Whether the components are eigenvectors or were rotated to match a reference model
    /// ([`Basis`]).
    pub fn basis(&self) -> Basis {
        self.basis
    }
    /// How the number of components was chosen, when a rule chose it (a fraction of variance,
    /// mle, gavish-donoho, cv): the criterion, the number and the value that decided it.
    /// `None` for a number given by the caller, and for a model rebuilt from its parts.
    pub fn component_choice(&self) -> Option<&ComponentChoice> {
        self.component_choice.as_ref()
    }
}

/// σ² of a model cut to `m` of its `lambda.len()` components: the mean of the eigenvalues it
/// discards among the `rank` = min(N, D), the `rank − K` the model never kept entering through
/// its own σ². 0 when nothing is discarded.
pub(crate) fn truncated_noise(lambda: &[f64], noise: f64, rank: usize, m: usize) -> f64 {
    if m >= rank {
        return 0.0;
    }
    let beyond = rank.saturating_sub(lambda.len()) as f64 * noise;
    (lambda[m..].iter().sum::<f64>() + beyond) / (rank - m) as f64
}

/// The sign rule (see the crate's conventions): the entry of largest magnitude is positive; among entries tied to within
/// a relative 1e-9, the first one decides (so solvers that differ by rounding agree).
pub(crate) fn fix_sign(mut row: faer::RowMut<'_, f64>) {
    let n = row.ncols();
    let largest = (0..n).map(|j| row[j].abs()).fold(0.0, f64::max);
    if let Some(j) = (0..n).find(|&j| row[j].abs() >= largest * (1.0 - SIGN_TIE))
        && row[j] < 0.0
    {
        for k in 0..n {
            row[k] = -row[k];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ComponentCount;
    use crate::params::PcaBuilder;

    fn data() -> Mat<f64> {
        Mat::from_fn(40, 5, |i, j| {
            let (x, y) = (i as f64, j as f64);
            (x * 0.31 + y * 1.7).sin() * (5.0 - y) + 0.1 * x * y + (x * y * 0.07).cos()
        })
    }

    fn fit(whitening: Whitening) -> PcaModel {
        PcaBuilder::new()
            .components(ComponentCount::Fixed(3))
            .whitening(whitening)
            .build()
            .unwrap()
            .fit(data().as_ref())
            .unwrap()
    }

    #[test]
    fn whitened_codes_have_unit_variance_and_the_inverse_undoes_them() {
        let x = data();
        let white = fit(Whitening::UnitVariance);
        let plain = fit(Whitening::None);
        assert_eq!(white.whitening(), Whitening::UnitVariance);
        assert_eq!(white.components(), plain.components());
        let z = white.transform(x.as_ref()).unwrap();
        let p = plain.transform(x.as_ref()).unwrap();
        let n = x.nrows() as f64;
        for m in 0..3 {
            let sd = plain.explained_variance()[m].sqrt();
            let mean = (0..x.nrows()).map(|i| z[(i, m)]).sum::<f64>() / n;
            let var = (0..x.nrows())
                .map(|i| (z[(i, m)] - mean).powi(2))
                .sum::<f64>()
                / (n - 1.0);
            assert!((var - 1.0).abs() < 1e-12, "component {m}: variance {var}");
            for i in 0..x.nrows() {
                assert!((z[(i, m)] * sd - p[(i, m)]).abs() < 1e-12);
            }
        }
        let back_white = white.inverse_transform(z.as_ref()).unwrap();
        let back_plain = plain.inverse_transform(p.as_ref()).unwrap();
        assert!((&back_white - &back_plain).norm_max() < 1e-12);
        // Cutting the model keeps it whitening, over its own eigenvalues.
        let cut = white.truncated(2).unwrap();
        assert_eq!(cut.whitening(), Whitening::UnitVariance);
        let zc = cut.transform(x.as_ref()).unwrap();
        assert!((zc[(3, 1)] - z[(3, 1)]).abs() < 1e-12);
    }

    #[test]
    fn whitening_leaves_the_probabilistic_model_alone() {
        let x = data();
        let white = fit(Whitening::UnitVariance);
        let plain = fit(Whitening::None);
        let pw = white.probabilistic().posterior(x.as_ref()).unwrap();
        let pp = plain.probabilistic().posterior(x.as_ref()).unwrap();
        assert!((&pw.mean - &pp.mean).norm_max() < 1e-12);
        assert_eq!(
            white.score_samples(x.as_ref()).unwrap(),
            plain.score_samples(x.as_ref()).unwrap()
        );
    }

    #[test]
    fn a_component_of_zero_variance_gives_finite_whitened_codes() {
        // Two identical columns and a constant one: rank 1 after centring.
        let x = Mat::from_fn(6, 3, |i, j| if j == 2 { 4.0 } else { i as f64 });
        let model = PcaBuilder::new()
            .components(ComponentCount::Fixed(2))
            .solver(crate::Solver::Svd)
            .whitening(Whitening::UnitVariance)
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        let z = model.transform(x.as_ref()).unwrap();
        assert!((0..6).all(|i| z[(i, 0)].is_finite() && z[(i, 1)].is_finite()));
        let back = model.inverse_transform(z.as_ref()).unwrap();
        assert!((&back - &x).norm_max() < 1e-9);
    }
}
