//! The parameters of a fit: [`PcaBuilder`], checked once into [`PcaParams`]. Fitting them to
//! data is in `fit.rs`.

use crate::error::{PcaError, Result};
use crate::options::{
    Centre, ComponentCount, IterativeOptions, MissingValues, Precision, Scaling, Solver, Whitening,
};
use crate::plan::SolverPlan;

/// Builder for [`PcaParams`]; [`PcaBuilder::build`] validates everything once.
///
/// ```
/// use principal::{ComponentCount, PcaBuilder, Scaling, Solver};
/// let params = PcaBuilder::new()
///     .components(ComponentCount::VarianceFraction(0.95))
///     .scaling(Scaling::Standardize)
///     .ddof(1)
///     .solver(Solver::Svd)
///     .build()?;
/// assert_eq!(params.ddof(), 1);
/// assert!(PcaBuilder::new().ddof(2).build().is_err());
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug)]
pub struct PcaBuilder {
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
    iterative: IterativeOptions,
    memory_limit: Option<u64>,
    precision: Precision,
    missing: MissingValues,
    whitening: Whitening,
    centre: Centre,
}

impl Default for PcaBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PcaBuilder {
    /// Every component, centring only, ddof 1, automatic solver.
    pub fn new() -> Self {
        PcaBuilder {
            components: ComponentCount::All,
            scaling: Scaling::Centre,
            ddof: 1,
            solver: Solver::Auto,
            iterative: IterativeOptions::default(),
            memory_limit: None,
            precision: Precision::Full,
            missing: MissingValues::Reject,
            whitening: Whitening::None,
            centre: Centre::Mean,
        }
    }

    /// Whether to subtract the mean ([`Centre::Mean`], the default) or not
    /// ([`Centre::None`]: the truncated SVD of the raw matrix X, as scikit-learn's
    /// `TruncatedSVD`). Without centring the components are X's top right singular vectors
    /// v_m, the mean is zero, and, as `TruncatedSVD` reports them:
    ///
    /// ```text
    /// singular_values_m          = σ_m (of X itself)
    /// explained_variance_m       = the variance of the codes X v_m = (σ_m² − N (μᵀv_m)²) / (N − ddof)
    /// explained_variance_ratio_m = explained_variance_m / trace(S)   (S: X's covariance, centred)
    /// ```
    ///
    /// (`TruncatedSVD` divides by N: ddof 0 gives its numbers exactly; the ratios are the same
    /// for either ddof.) Cannot be combined with standardizing, missing values or
    /// cross-validation, which need the mean.
    pub fn centre(mut self, centre: Centre) -> Self {
        self.centre = centre;
        self
    }

    /// How many components to keep.
    pub fn components(mut self, components: ComponentCount) -> Self {
        self.components = components;
        self
    }

    /// Centre only, or centre and standardize.
    pub fn scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = scaling;
        self
    }

    /// Delta degrees of freedom: 1 (sample covariance, the default) or 0 (divide by N).
    pub fn ddof(mut self, ddof: usize) -> Self {
        self.ddof = ddof;
        self
    }

    /// Which solver computes the eigenpairs.
    pub fn solver(mut self, solver: Solver) -> Self {
        self.solver = solver;
        self
    }

    /// Working-memory budget in bytes that `Auto` respects when choosing a solver.
    pub fn memory_limit(mut self, bytes: Option<u64>) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Seed, tolerance and iteration limits of the iterative solvers.
    pub fn iterative(mut self, options: IterativeOptions) -> Self {
        self.iterative = options;
        self
    }

    /// Full f64 products (the default) or mixed f32/f64 for `f32` input (see [`Precision`]).
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// What to do with missing values (NaN): reject them (the default) or fit probabilistic
    /// PCA by EM on the observed values ([`MissingValues::Em`]; needs the `Auto` or `Em`
    /// solver and a fixed number of components below the number of features).
    pub fn missing(mut self, missing: MissingValues) -> Self {
        self.missing = missing;
        self
    }

    /// Whether the fitted model's codes are whitened (unit variance per component).
    pub fn whitening(mut self, whitening: Whitening) -> Self {
        self.whitening = whitening;
        self
    }

    /// Checks every parameter that can be checked without data; the errors name the parameter
    /// ([`PcaError::parameter`]) and its allowed values.
    pub fn build(self) -> Result<PcaParams> {
        if let Some(t) = self.iterative.tolerance
            && !(t > 0.0 && t < 1.0)
        {
            return Err(PcaError::ToleranceOutOfRange(t));
        }
        if self.iterative.max_iterations == 0 {
            return Err(PcaError::ZeroIterations);
        }
        if self.ddof > 1 {
            return Err(PcaError::InvalidDdof(self.ddof));
        }
        if self.centre == Centre::None {
            if self.scaling == Scaling::Standardize {
                return Err(PcaError::NeedsCentring("standardizing"));
            }
            if self.missing == MissingValues::Em {
                return Err(PcaError::NeedsCentring("fitting missing values"));
            }
            if let ComponentCount::CrossValidated { .. } = self.components {
                return Err(PcaError::NeedsCentring("cross-validation"));
            }
        }
        if self.missing == MissingValues::Em {
            if !matches!(self.solver, Solver::Auto | Solver::Em) {
                return Err(PcaError::SolverUnsuitable {
                    solver: self.solver.name(),
                    reason: "missing values are fitted by em only".into(),
                });
            }
            if !matches!(self.components, ComponentCount::Fixed(_)) {
                return Err(PcaError::SolverUnsuitable {
                    solver: "em",
                    reason: "with missing values, give a number of components (below the \
                             number of features)"
                        .into(),
                });
            }
        }
        match self.components {
            ComponentCount::Fixed(0) => return Err(PcaError::ZeroComponents),
            ComponentCount::VarianceFraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(PcaError::VarianceFractionOutOfRange(f));
            }
            ComponentCount::GavishDonoho {
                noise_sigma: Some(sigma),
            } if !(sigma > 0.0 && sigma.is_finite()) => {
                return Err(PcaError::NoiseSigmaOutOfRange(sigma));
            }
            ComponentCount::CrossValidated { folds, .. } if folds < 2 => {
                return Err(PcaError::TooFewFolds(folds));
            }
            _ => {}
        }
        Ok(PcaParams {
            components: self.components,
            scaling: self.scaling,
            ddof: self.ddof,
            solver: self.solver,
            iterative: self.iterative,
            memory_limit: self.memory_limit,
            precision: self.precision,
            missing: self.missing,
            whitening: self.whitening,
            centre: self.centre,
        })
    }
}

/// Validated parameters: fit them to data with [`PcaParams::fit`], to a re-readable source
/// with [`PcaParams::fit_source`] or to streamed [`crate::Moments`] with
/// [`PcaParams::fit_moments`].
#[derive(Clone, Debug, PartialEq)]
pub struct PcaParams {
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
    iterative: IterativeOptions,
    memory_limit: Option<u64>,
    precision: Precision,
    missing: MissingValues,
    whitening: Whitening,
    centre: Centre,
}

impl PcaParams {
    /// Whether the mean is subtracted ([`PcaBuilder::centre`]).
    pub fn centre(&self) -> Centre {
        self.centre
    }
    /// How many components to keep.
    pub fn components(&self) -> ComponentCount {
        self.components
    }
    /// Centre only, or standardize.
    pub fn scaling(&self) -> Scaling {
        self.scaling
    }
    /// Delta degrees of freedom (0 or 1).
    pub fn ddof(&self) -> usize {
        self.ddof
    }
    /// The requested solver (possibly `Auto`).
    pub fn solver(&self) -> Solver {
        self.solver
    }
    /// Settings of the iterative solvers.
    pub fn iterative(&self) -> IterativeOptions {
        self.iterative
    }
    /// Replaces the iterative solvers' settings (the sparse fit's defaults).
    pub(crate) fn set_iterative(&mut self, options: IterativeOptions) {
        self.iterative = options;
    }
    /// The working-memory budget given to the builder.
    pub fn memory_limit(&self) -> Option<u64> {
        self.memory_limit
    }
    /// The arithmetic of the covariance solver's products for `f32` input.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// What a fit does with missing values.
    pub fn missing(&self) -> MissingValues {
        self.missing
    }

    /// Whether the fitted model whitens its codes.
    pub fn whitening(&self) -> Whitening {
        self.whitening
    }

    /// The plan for `n_samples × n_features`: every solver's estimated cost, the solver `fit`
    /// would use (`Auto` resolved) and why.
    pub fn plan(&self, n_samples: usize, n_features: usize) -> SolverPlan {
        self.plan_across(n_samples, n_features, 1)
    }

    /// [`Self::plan`] for a fit over `processes` processes ([`PcaParams::fit_distributed`]):
    /// gram and svd need the whole data in one process, so auto chooses among the others.
    pub fn plan_across(&self, n_samples: usize, n_features: usize, processes: usize) -> SolverPlan {
        let k = match self.components {
            ComponentCount::Fixed(k) => Some(k),
            // Every component, or a count that depends on the spectrum: an exact solver.
            _ => None,
        };
        SolverPlan::across(
            self.solver,
            n_samples,
            n_features,
            k,
            self.memory_limit,
            processes,
        )
    }

    /// The same parameters with `solver` requested instead.
    pub(crate) fn with_solver(&self, solver: Solver) -> PcaParams {
        PcaParams {
            solver,
            ..self.clone()
        }
    }

    /// The same parameters keeping `components` instead.
    pub(crate) fn with_components(&self, components: ComponentCount) -> PcaParams {
        PcaParams {
            components,
            ..self.clone()
        }
    }
}
