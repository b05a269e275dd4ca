use thiserror::Error;

/// Everything that can go wrong in the math layer.
///
/// Messages name the offending value and the allowed range, so that a command-line front end
/// can show them as they are.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PcaError {
    /// The data has no rows or no columns.
    #[error("the data is empty ({n_samples} samples × {n_features} features)")]
    EmptyData { n_samples: usize, n_features: usize },
    /// Not enough samples for the chosen `ddof`.
    #[error("{n_samples} sample(s) is too few with ddof {ddof}: need at least {} (use ddof 0 for a single sample)", ddof + 1)]
    TooFewSamples { n_samples: usize, ddof: usize },
    /// A NaN or infinite value in the data.
    #[error(
        "non-finite value {value} at row {row}, column {column} (rows and columns count from 0)"
    )]
    NonFinite {
        row: usize,
        column: usize,
        value: f64,
    },
    /// More components requested than the data can have.
    #[error("--components {requested} is more than min(n_samples, n_features) = {max}")]
    TooManyComponents { requested: usize, max: usize },
    /// Zero components requested.
    #[error("--components 0 is not allowed: at least 1 component is needed")]
    ZeroComponents,
    /// The fraction of variance to keep is not in (0, 1].
    #[error("--variance {0} is outside the allowed range (0, 1]")]
    VarianceFractionOutOfRange(f64),
    /// A tolerance outside (0, 1).
    #[error("--tolerance {0} is outside the allowed range (0, 1)")]
    ToleranceOutOfRange(f64),
    /// An iteration limit of zero.
    #[error("--max-iterations 0 is not allowed: at least 1 pass is needed")]
    ZeroIterations,
    /// `ddof` other than 0 or 1.
    #[error("--ddof {0} is not allowed: use 0 (divide by N) or 1 (divide by N − 1)")]
    InvalidDdof(usize),
    /// Every feature is constant, so no fraction of the variance can be reached.
    #[error("every feature is constant (total variance 0): no number of components explains a fraction of the variance")]
    ZeroTotalVariance,
    /// New data whose number of features differs from the model's.
    #[error("the data has {found} features but the model was fitted on {expected}")]
    FeatureMismatch { expected: usize, found: usize },
    /// Codes whose number of columns differs from the model's number of components.
    #[error("the codes have {found} columns but the model has {expected} components")]
    ComponentMismatch { expected: usize, found: usize },
    /// Moments of different widths were merged.
    #[error("cannot merge moments of {left} features with moments of {right} features")]
    MergeMismatch { left: usize, right: usize },
    /// A solver that cannot handle the request (e.g. an iterative solver asked for everything).
    #[error("solver {solver} cannot be used here: {reason}")]
    SolverUnsuitable {
        solver: &'static str,
        reason: String,
    },
    /// A numerical routine did not converge.
    #[error("solver {solver} did not converge: {detail}")]
    NoConvergence {
        solver: &'static str,
        detail: String,
    },
    /// The data source failed (e.g. a file could not be read on a later pass).
    #[error("{0}")]
    Source(String),
    /// Parts given to [`crate::PcaModel::from_parts`] do not make a consistent model.
    #[error("inconsistent model: {0}")]
    InvalidModel(String),
}

/// The crate's `Result`.
pub type Result<T, E = PcaError> = std::result::Result<T, E>;
