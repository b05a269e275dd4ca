use std::fmt;
use std::str::FromStr;

use faer::MatRef;

use crate::model::PcaModel;
use crate::moments::{MomentAccumulator, Moments};
use crate::prepare::Preprocessing;
use crate::solver::{self, Problem};
use crate::{PcaError, Real, Result};

/// How many components to keep.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ComponentCount {
    /// Exactly `k` components, `1 ≤ k ≤ min(n_samples, n_features)`.
    Fixed(usize),
    /// The smallest number of components whose explained-variance ratios sum to at least `f`,
    /// `0 < f ≤ 1`.
    VarianceFraction(f64),
    /// Every component: `min(n_samples, n_features)`.
    All,
}

/// Whether features are divided by their standard deviation after centring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scaling {
    /// Centre only: PCA of the covariance matrix.
    #[default]
    Center,
    /// Centre and divide by the standard deviation (same ddof): PCA of the correlation matrix.
    /// A zero-variance feature keeps scale 1.
    Standardize,
}

/// The algorithm that computes the eigenpairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Solver {
    /// Chosen at fit time from the shape; the choice is recorded in the model.
    #[default]
    Auto,
    /// Streaming mean and centred cross-products, then a D×D symmetric eigendecomposition.
    Covariance,
    /// The N×N Gram matrix and the transpose trick (N ≪ D).
    Gram,
    /// Thin SVD of the centred data: the accuracy reference.
    Svd,
}

impl Solver {
    /// Every solver name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["auto", "covariance", "gram", "svd"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Auto => "auto",
            Solver::Covariance => "covariance",
            Solver::Gram => "gram",
            Solver::Svd => "svd",
        }
    }

    /// Resolves `Auto` for data of `n_samples × n_features`; other solvers are returned as they
    /// are. Returns the solver and a sentence saying why.
    pub fn resolve(self, n_samples: usize, n_features: usize) -> (Solver, String) {
        match self {
            Solver::Auto if n_samples >= n_features => (
                Solver::Covariance,
                format!(
                    "n_samples {n_samples} ≥ n_features {n_features}: one pass forming the {n_features}×{n_features} covariance, then its eigendecomposition"
                ),
            ),
            Solver::Auto => (
                Solver::Gram,
                format!(
                    "n_samples {n_samples} < n_features {n_features}: the {n_samples}×{n_samples} Gram matrix is the smaller problem"
                ),
            ),
            chosen => (chosen, format!("{} chosen by the caller", chosen.name())),
        }
    }
}

impl fmt::Display for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Solver {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Solver::Auto),
            "covariance" => Ok(Solver::Covariance),
            "gram" => Ok(Solver::Gram),
            "svd" => Ok(Solver::Svd),
            other => Err(format!(
                "unknown solver {other:?}; expected one of {}",
                Solver::NAMES.join(", ")
            )),
        }
    }
}

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
}

impl Default for PcaBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PcaBuilder {
    /// Every component, centring only, ddof 1, automatic solver.
    pub fn new() -> Self {
        PcaBuilder { components: ComponentCount::All, scaling: Scaling::Center, ddof: 1, solver: Solver::Auto }
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

    /// Checks every parameter that can be checked without data.
    pub fn build(self) -> Result<PcaParams> {
        if self.ddof > 1 {
            return Err(PcaError::InvalidDdof(self.ddof));
        }
        match self.components {
            ComponentCount::Fixed(0) => return Err(PcaError::ZeroComponents),
            ComponentCount::VarianceFraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(PcaError::VarianceFractionOutOfRange(f))
            }
            _ => {}
        }
        Ok(PcaParams { components: self.components, scaling: self.scaling, ddof: self.ddof, solver: self.solver })
    }
}

/// Validated parameters: fit them to data with [`PcaParams::fit`] or to streamed
/// [`Moments`] with [`PcaParams::fit_moments`].
#[derive(Clone, Debug, PartialEq)]
pub struct PcaParams {
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
}

/// Rows per chunk when the covariance solver streams an in-memory matrix: bounds the f64 copy.
const CHUNK_ROWS: usize = 4096;

impl PcaParams {
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

    /// Fits a model to `x` (N×D, one sample per row), `f32` or `f64`.
    pub fn fit<T: Real>(&self, x: MatRef<'_, T>) -> Result<PcaModel> {
        let (n, d) = (x.nrows(), x.ncols());
        self.check_shape(n, d)?;
        let (solver, _) = self.solver.resolve(n, d);
        if solver == Solver::Covariance {
            let mut acc = MomentAccumulator::new(d);
            let mut start = 0;
            while start < n {
                let rows = CHUNK_ROWS.min(n - start);
                acc.push(x.subrows(start, rows))?;
                start += rows;
            }
            return self.fit_resolved_moments(&acc.finish()?, solver);
        }
        let prep = Preprocessing::from_data(x, self.scaling, self.ddof)?;
        let centred = prep.apply(x);
        let max = n.min(d);
        let wanted = self.wanted_vectors(max);
        let problem = Problem { data: centred.as_ref(), ddof: self.ddof, n_components: wanted };
        let spectrum = match solver {
            Solver::Gram => solver::gram::solve(&problem)?,
            Solver::Svd => solver::svd::solve(&problem)?,
            Solver::Auto | Solver::Covariance => unreachable!("resolved above"),
        };
        PcaModel::from_spectrum(self, spectrum, prep, n, solver)
    }

    /// Fits a model with the covariance solver to moments accumulated elsewhere (chunks of a
    /// file, threads, machines). The requested solver must be `Auto` or `Covariance`.
    pub fn fit_moments(&self, moments: &Moments) -> Result<PcaModel> {
        match self.solver {
            Solver::Auto | Solver::Covariance => self.fit_resolved_moments(moments, Solver::Covariance),
            other => Err(PcaError::SolverUnsuitable {
                solver: other.name(),
                reason: "streamed moments can only be fitted by the covariance solver".into(),
            }),
        }
    }

    fn fit_resolved_moments(&self, moments: &Moments, solver: Solver) -> Result<PcaModel> {
        let (n, d) = (moments.n_samples(), moments.n_features());
        self.check_shape(n, d)?;
        let prep = Preprocessing::from_moments(moments, self.scaling, self.ddof);
        let spectrum = solver::covariance::solve_moments(moments, &prep, self.ddof)?;
        PcaModel::from_spectrum(self, spectrum, prep, n, solver)
    }

    /// How many eigenvectors a solver must return so that the count can be chosen afterwards.
    fn wanted_vectors(&self, max: usize) -> usize {
        match self.components {
            ComponentCount::Fixed(k) => k.min(max),
            ComponentCount::VarianceFraction(_) | ComponentCount::All => max,
        }
    }

    fn check_shape(&self, n: usize, d: usize) -> Result<()> {
        if n == 0 || d == 0 {
            return Err(PcaError::EmptyData { n_samples: n, n_features: d });
        }
        if n <= self.ddof {
            return Err(PcaError::TooFewSamples { n_samples: n, ddof: self.ddof });
        }
        if let ComponentCount::Fixed(k) = self.components {
            if k > n.min(d) {
                return Err(PcaError::TooManyComponents { requested: k, max: n.min(d) });
            }
        }
        Ok(())
    }
}
