//! The choices of a fit, as enums: how many components, scaling, solver, precision, and the
//! iterative solvers' methods and settings. Leaf types: they depend on nothing else here.

use std::fmt;
use std::str::FromStr;

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
    /// Minka's Bayesian model selection (scikit-learn's `n_components='mle'`): the M of largest
    /// evidence under probabilistic PCA. Defined for every shape: with N ≤ D it works in the
    /// N − 1 dimensions the centred data spans; data of exact rank r (noise-free beyond r)
    /// gets r. Needs the whole spectrum (an exact solver).
    Mle,
    /// Gavish & Donoho's optimal hard threshold on the singular values of the centred data: the
    /// number of singular values above `λ*(β)·√n·σ` for noise of standard deviation σ per
    /// entry (in the model's units), or above `ω(β)·median` when σ is not given. Needs the
    /// whole spectrum (an exact solver).
    GavishDonoho {
        /// The noise's standard deviation per entry, if known (`σ > 0`); else estimated from
        /// the median singular value.
        noise_sigma: Option<f64>,
    },
    /// The M of largest mean held-out probabilistic-PCA log-likelihood in k-fold
    /// cross-validation: one exact fit per fold, each giving every candidate M. Needs an exact
    /// solver.
    CrossValidated {
        /// Number of folds, at least 2.
        folds: usize,
        /// Seed of the rows' random assignment to folds.
        seed: u64,
    },
}

impl ComponentCount {
    /// The number of folds [`ComponentCount::CrossValidated`] uses unless told otherwise.
    pub const DEFAULT_FOLDS: usize = 5;

    /// Whether the count depends on the spectrum, so that the solver must return all of it
    /// (an exact solver).
    pub fn needs_spectrum(self) -> bool {
        !matches!(self, ComponentCount::Fixed(_) | ComponentCount::All)
    }

    /// The name used on the command line: `mle`, `gavish-donoho`, `cv`, or the number itself.
    pub fn name(self) -> String {
        match self {
            ComponentCount::Fixed(k) => k.to_string(),
            ComponentCount::VarianceFraction(f) => format!("variance {f}"),
            ComponentCount::All => "all".into(),
            ComponentCount::Mle => "mle".into(),
            ComponentCount::GavishDonoho { .. } => "gavish-donoho".into(),
            ComponentCount::CrossValidated { .. } => "cv".into(),
        }
    }
}

impl FromStr for ComponentCount {
    type Err = String;

    /// A whole number K (`Fixed(K)`), `mle`, `gavish-donoho` (noise estimated) or `cv`
    /// ([`ComponentCount::DEFAULT_FOLDS`] folds, seed 0); the range of K is checked by
    /// [`crate::PcaBuilder::build`].
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "mle" => Ok(ComponentCount::Mle),
            "gavish-donoho" => Ok(ComponentCount::GavishDonoho { noise_sigma: None }),
            "cv" => Ok(ComponentCount::CrossValidated {
                folds: ComponentCount::DEFAULT_FOLDS,
                seed: 0,
            }),
            other => other
                .parse()
                .map(ComponentCount::Fixed)
                .map_err(|_| format!("{other} is not a whole number, mle, gavish-donoho or cv")),
        }
    }
}

/// Whether the mean is subtracted before the decomposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Centre {
    /// Subtract the mean: principal component analysis.
    #[default]
    Mean,
    /// Subtract nothing: the truncated SVD of the raw matrix (scikit-learn's `TruncatedSVD`,
    /// scanpy's `zero_center=False`). The model's mean is zero; see
    /// [`crate::PcaBuilder::centre`] for what its variances mean.
    None,
}

/// Whether features are divided by their standard deviation after centring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scaling {
    /// Centre only: PCA of the covariance matrix.
    #[default]
    Centre,
    /// Centre and divide by the standard deviation (same ddof): PCA of the correlation matrix.
    /// A zero-variance feature keeps scale 1.
    Standardize,
}

/// The arithmetic of the covariance solver's cross-products for `f32` input that is not made of
/// small integers (small integers, pixels among them, always take an exact path, and `f64`
/// input always f64 products).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Every product in f64: results exact to f64 rounding.
    #[default]
    Full,
    /// `f32` input centred in f64 (each block of rows on its own mean), rounded to f32 and
    /// multiplied in f32 over blocks of b = 256 rows, the blocks summed in f64: about twice the
    /// speed. With `u = 2⁻²⁴`, every entry of the scatter matrix is within `(b + 3)·u·√(SᵢᵢSⱼⱼ)`
    /// of the exact one (the blocks' own scatters sum to at most S, so centring per block only
    /// tightens this), so by Weyl's inequality every eigenvalue is within `(b + 3)·u·trace` of
    /// the exact one: at most 1.6e-5 of the total variance (the error seen in practice is near
    /// √b·u, about 1e-6). The mean stays exact to f64 rounding.
    Mixed,
}

/// Rows per f32 block under [`Precision::Mixed`]: the `b` of its error bound.
pub(crate) const MIXED_BLOCK_ROWS: usize = 256;

impl Precision {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["full", "mixed"];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Full => "full",
            Precision::Mixed => "mixed",
        }
    }

    /// The bound on `max |λ̂ₖ − λₖ| / Σλ` that this precision guarantees (0 for `Full`, which
    /// is exact to f64 rounding).
    pub fn eigenvalue_bound(self) -> f64 {
        match self {
            Precision::Full => 0.0,
            Precision::Mixed => (MIXED_BLOCK_ROWS as f64 + 3.0) * f64::from(f32::EPSILON) / 2.0,
        }
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "full" => Ok(Precision::Full),
            "mixed" => Ok(Precision::Mixed),
            other => Err(format!(
                "unknown precision {other:?}; expected one of {}",
                Precision::NAMES.join(", ")
            )),
        }
    }
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
    /// Randomized subspace iteration with oversampling; a few passes over the data.
    Randomized,
    /// The textbook's power iteration (deflation or block), iterated to a tolerance.
    Power,
    /// Expectation–maximization for probabilistic PCA, iterated to a tolerance.
    Em,
}

impl Solver {
    /// Every solver name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &[
        "auto",
        "covariance",
        "gram",
        "svd",
        "randomized",
        "power",
        "em",
    ];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Auto => "auto",
            Solver::Covariance => "covariance",
            Solver::Gram => "gram",
            Solver::Svd => "svd",
            Solver::Randomized => "randomized",
            Solver::Power => "power",
            Solver::Em => "em",
        }
    }

    /// Whether the solver returns exact eigenpairs (to rounding) rather than approximations.
    pub fn is_exact(self) -> bool {
        matches!(self, Solver::Covariance | Solver::Gram | Solver::Svd)
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
            "randomized" => Ok(Solver::Randomized),
            "power" => Ok(Solver::Power),
            "em" => Ok(Solver::Em),
            other => Err(format!(
                "unknown solver {other:?}; expected one of {}",
                Solver::NAMES.join(", ")
            )),
        }
    }
}

/// What a fit does with missing values (NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MissingValues {
    /// A NaN is an error naming its row and column, as any non-finite value.
    #[default]
    Reject,
    /// NaN marks a missing value: probabilistic PCA is fitted by EM on the observed values
    /// only (infinities are still errors).
    Em,
}

impl MissingValues {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["reject", "em"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            MissingValues::Reject => "reject",
            MissingValues::Em => "em",
        }
    }
}

impl FromStr for MissingValues {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "reject" => Ok(MissingValues::Reject),
            "em" => Ok(MissingValues::Em),
            other => Err(format!(
                "unknown treatment of missing values {other:?}; expected one of {}",
                MissingValues::NAMES.join(", ")
            )),
        }
    }
}

/// How [`crate::PcaModel::transform`] scales the codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Whitening {
    /// Codes are the projections `Bᵀ (x − μ)/σ`: along component m their variance is λ_m.
    #[default]
    None,
    /// Codes are divided by `√λ_m` (scikit-learn's `whiten=True`), so that on the training
    /// data each has unit variance; the inverse transform multiplies them back. A component
    /// of zero variance is divided by f64's machine epsilon instead (as scikit-learn clips).
    UnitVariance,
}

impl Whitening {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["none", "unit-variance"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Whitening::None => "none",
            Whitening::UnitVariance => "unit-variance",
        }
    }
}

impl FromStr for Whitening {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(Whitening::None),
            "unit-variance" => Ok(Whitening::UnitVariance),
            other => Err(format!(
                "unknown whitening {other:?}; expected one of {}",
                Whitening::NAMES.join(", ")
            )),
        }
    }
}

/// How the power solver finds several components.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PowerMethod {
    /// All at once: subspace iteration on a block of k vectors.
    #[default]
    Block,
    /// One at a time, each against the covariance with the previous ones removed.
    Deflation,
}

impl PowerMethod {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["block", "deflation"];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PowerMethod::Block => "block",
            PowerMethod::Deflation => "deflation",
        }
    }
}

impl FromStr for PowerMethod {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "block" => Ok(PowerMethod::Block),
            "deflation" => Ok(PowerMethod::Deflation),
            other => Err(format!(
                "unknown power method {other:?}; expected one of {}",
                PowerMethod::NAMES.join(", ")
            )),
        }
    }
}

/// How the randomized solver iterates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RandomizedMethod {
    /// Rayleigh–Ritz on the whole Krylov space of the passes so far (more accurate per pass).
    #[default]
    BlockKrylov,
    /// Rayleigh–Ritz on the last block only (classic power iterations, as scikit-learn).
    Subspace,
}

impl RandomizedMethod {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["krylov", "subspace"];

    /// The name used on the command line: `krylov` for block Krylov.
    pub fn name(self) -> &'static str {
        match self {
            RandomizedMethod::BlockKrylov => "krylov",
            RandomizedMethod::Subspace => "subspace",
        }
    }
}

impl FromStr for RandomizedMethod {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "krylov" => Ok(RandomizedMethod::BlockKrylov),
            "subspace" => Ok(RandomizedMethod::Subspace),
            other => Err(format!(
                "unknown randomized method {other:?}; expected one of {}",
                RandomizedMethod::NAMES.join(", ")
            )),
        }
    }
}

/// Settings of the iterative solvers (`randomized`, `power`, `em`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterativeOptions {
    /// Seed of the random start; the same seed gives the same model, bit for bit.
    pub seed: u64,
    /// Stop when the a-posteriori error estimate `max ‖S b − λ b‖ / λ₁` is at most this.
    /// `randomized` without it runs a fixed number of power iterations; `power` and `em` use
    /// 1e-9.
    pub tolerance: Option<f64>,
    /// Power iterations of `randomized` (passes beyond the first); `None` for the default
    /// (block Krylov: 3 when k < 0.1 min(N, D), else 2; subspace: scikit-learn's 7, else 4)
    /// or, with a tolerance, as many as needed.
    pub power_iterations: Option<usize>,
    /// Extra columns of the random start of `randomized`.
    pub oversampling: usize,
    /// Upper bound on passes for tolerance-driven iteration.
    pub max_iterations: usize,
    /// Block or deflation for `power`.
    pub power_method: PowerMethod,
    /// Block Krylov or subspace iteration for `randomized`.
    pub randomized_method: RandomizedMethod,
}

impl Default for IterativeOptions {
    fn default() -> Self {
        IterativeOptions {
            seed: 0,
            tolerance: None,
            power_iterations: None,
            oversampling: 10,
            max_iterations: 1000,
            power_method: PowerMethod::Block,
            randomized_method: RandomizedMethod::BlockKrylov,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every listed name parses to the option whose `name()` it is, and nothing else parses.
    fn names_round_trip<T: FromStr<Err = String> + Copy>(
        names: &[&str],
        name: impl Fn(T) -> &'static str,
    ) {
        for &n in names {
            let parsed: T = n.parse().unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(name(parsed), n);
        }
        let err = "nonsense"
            .parse::<T>()
            .err()
            .expect("an unknown name is refused");
        for &n in names {
            assert!(err.contains(n), "the error lists {n}: {err}");
        }
    }

    #[test]
    fn every_option_name_parses_back_to_itself() {
        names_round_trip(Solver::NAMES, Solver::name);
        names_round_trip(Precision::NAMES, Precision::name);
        names_round_trip(PowerMethod::NAMES, PowerMethod::name);
        names_round_trip(RandomizedMethod::NAMES, RandomizedMethod::name);
    }
}

/// What a model's components are: the eigenvectors a fit found, or those rotated within their
/// subspace to match another model's ([`crate::align::align`] with
/// [`crate::align::Alignment::Rotate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Basis {
    /// Eigenvectors of the covariance: the codes are uncorrelated and `explained_variance` are
    /// eigenvalues, in decreasing order.
    #[default]
    Eigenvectors,
    /// An orthonormal basis of the same subspace, rotated: the codes are correlated, and
    /// `explained_variance[m]` is the training variance of the codes along component m (the
    /// diagonal of `R Λ Rᵀ`), in no particular order; their sum is unchanged.
    Rotated,
}

impl Basis {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["eigenvectors", "rotated"];

    /// The name used in model files.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Eigenvectors => "eigenvectors",
            Basis::Rotated => "rotated",
        }
    }
}

impl FromStr for Basis {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "eigenvectors" => Ok(Basis::Eigenvectors),
            "rotated" => Ok(Basis::Rotated),
            other => Err(format!(
                "unknown basis {other:?}; expected one of {}",
                Basis::NAMES.join(", ")
            )),
        }
    }
}
