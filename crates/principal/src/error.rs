//! The crate's error type: [`PcaError`], and the [`Parameter`] an error about a value names.

use std::fmt;

use thiserror::Error;

/// A parameter of the fit, as an error about its value names it.
///
/// Messages name parameters by [`Parameter::name`] ("components", "ddof", …). A front end with
/// its own names for them (a command-line tool's flags) renders the same messages with
/// [`PcaError::message_naming`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Parameter {
    /// The number of components, [`crate::ComponentCount::Fixed`].
    Components,
    /// The fraction of variance to keep, [`crate::ComponentCount::VarianceFraction`].
    VarianceFraction,
    /// Delta degrees of freedom, [`crate::PcaBuilder::ddof`].
    Ddof,
    /// The iterative solvers' tolerance, [`crate::IterativeOptions::tolerance`].
    Tolerance,
    /// The iterative solvers' limit on passes, [`crate::IterativeOptions::max_iterations`].
    MaxIterations,
    /// The noise level given to [`crate::ComponentCount::GavishDonoho`].
    NoiseSigma,
    /// The folds of [`crate::ComponentCount::CrossValidated`].
    Folds,
    /// The permutations of parallel analysis, [`crate::ChooseOptions::permutations`].
    Permutations,
    /// The percentile of parallel analysis, [`crate::ChooseOptions::percentile`].
    Percentile,
    /// The largest number of components considered, [`crate::ChooseOptions::max_components`].
    MaxComponents,
    /// The clusters of a mixture of probabilistic PCAs, [`crate::MixtureOptions::clusters`].
    Clusters,
    /// The seeded restarts of a mixture's EM, [`crate::MixtureOptions::restarts`].
    Restarts,
}

impl Parameter {
    /// The name messages use: "components", "variance fraction", "ddof", "tolerance",
    /// "max iterations".
    pub fn name(self) -> &'static str {
        match self {
            Parameter::Components => "components",
            Parameter::VarianceFraction => "variance fraction",
            Parameter::Ddof => "ddof",
            Parameter::Tolerance => "tolerance",
            Parameter::MaxIterations => "max iterations",
            Parameter::NoiseSigma => "noise sigma",
            Parameter::Folds => "folds",
            Parameter::Permutations => "permutations",
            Parameter::Percentile => "percentile",
            Parameter::MaxComponents => "max components",
            Parameter::Clusters => "clusters",
            Parameter::Restarts => "restarts",
        }
    }
}

impl fmt::Display for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that can go wrong in the math layer.
///
/// Messages name the offending value and the allowed range, so that a front end can show them
/// as they are; errors about a parameter's value say which ([`PcaError::parameter`]).
///
/// ```
/// use principal::{ComponentCount, Parameter, PcaBuilder};
///
/// let err = PcaBuilder::new().components(ComponentCount::Fixed(0)).build().unwrap_err();
/// assert_eq!(err.parameter(), Some(Parameter::Components));
/// assert_eq!(err.to_string(), "components 0 is not allowed: at least 1 component is needed");
/// // A command-line front end names its flag instead.
/// let message = err.message_naming(|p| format!("--{}", p.name()));
/// assert_eq!(message, "--components 0 is not allowed: at least 1 component is needed");
/// ```
#[derive(Debug, Error)]
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
    /// A feature with no observed value: every row is missing it.
    #[error(
        "feature {column} has no observed value (it is missing in every row), so nothing about it can be estimated; leave it out (columns count from 0)"
    )]
    EmptyFeature { column: usize },
    /// More components requested than the data can have.
    #[error("{}", self.message_naming(Parameter::name))]
    TooManyComponents { requested: usize, max: usize },
    /// Zero components requested.
    #[error("{}", self.message_naming(Parameter::name))]
    ZeroComponents,
    /// The fraction of variance to keep is not in (0, 1].
    #[error("{}", self.message_naming(Parameter::name))]
    VarianceFractionOutOfRange(f64),
    /// A tolerance outside (0, 1).
    #[error("{}", self.message_naming(Parameter::name))]
    ToleranceOutOfRange(f64),
    /// An iteration limit of zero.
    #[error("{}", self.message_naming(Parameter::name))]
    ZeroIterations,
    /// `ddof` other than 0 or 1.
    #[error("{}", self.message_naming(Parameter::name))]
    InvalidDdof(usize),
    /// A noise level that is not a positive number.
    #[error("{}", self.message_naming(Parameter::name))]
    NoiseSigmaOutOfRange(f64),
    /// Fewer than 2 folds of cross-validation.
    #[error("{}", self.message_naming(Parameter::name))]
    TooFewFolds(usize),
    /// Parallel analysis with no permutation.
    #[error("{}", self.message_naming(Parameter::name))]
    ZeroPermutations,
    /// A percentile outside (0, 100).
    #[error("{}", self.message_naming(Parameter::name))]
    PercentileOutOfRange(f64),
    /// A largest number of components of 0.
    #[error("{}", self.message_naming(Parameter::name))]
    ZeroMaxComponents,
    /// The data does not allow a criterion to choose a number of components (too few samples
    /// or features for it).
    #[error("{criterion} cannot choose the number of components: {reason}")]
    CannotChoose {
        criterion: &'static str,
        reason: String,
    },
    /// Every feature is constant, so no fraction of the variance can be reached.
    #[error(
        "every feature is constant (total variance 0): no number of components explains a fraction of the variance"
    )]
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
    /// Moments whose sample counts add up to more than a count can hold (only damaged or
    /// forged statistics claim so many).
    #[error(
        "the sample counts {left} and {right} add up to more than {}, the largest count",
        usize::MAX
    )]
    SampleCountOverflow { left: usize, right: usize },
    /// A solver that cannot handle the request (e.g. an iterative solver asked for everything).
    #[error("solver {solver} cannot be used here: {reason}")]
    SolverUnsuitable {
        solver: &'static str,
        reason: String,
    },
    /// A setting of a model other than PCA that is out of its range (a negative gamma, a
    /// kernel matrix over the memory limit, …); the message names the setting.
    #[error("{0}")]
    InvalidSetting(String),
    /// A numerical routine did not converge.
    #[error("solver {solver} did not converge: {detail}")]
    NoConvergence {
        solver: &'static str,
        detail: String,
    },
    /// The data source failed (e.g. a file could not be read on a later pass). The source's
    /// own error is kept: its message is this error's message, and its causes follow it.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
    /// The probabilistic model asked for has no density (its covariance is singular), or its
    /// posterior is undefined; the message says which and why.
    #[error("the probabilistic model is degenerate: {0}")]
    DegenerateModel(String),
    /// Two models that [`crate::align::align`] cannot align: other features or other
    /// preprocessing; the message says which.
    #[error("the models cannot be aligned: {0}")]
    NotAlignable(String),
    /// Row weights that are not non-negative numbers summing to more than zero, or not one
    /// per row ([`crate::PcaParams::fit_weighted`]).
    #[error("{0}")]
    InvalidWeights(String),
    /// The data given to [`crate::describe::describe`] does not fit the model or itself
    /// (widths, lengths, weights); the message says which input and value.
    #[error("{0}")]
    InvalidDescribeInput(String),
    /// Parts given to [`crate::PcaModel::from_parts`] do not make a consistent model.
    #[error("inconsistent model: {0}")]
    InvalidModel(String),
    /// Parts given to [`crate::Moments::from_parts`] do not make consistent moments.
    #[error("inconsistent moments: {0}")]
    InvalidMoments(String),
    /// An option that needs the data centred, with [`crate::Centre::None`].
    #[error("{0} needs the data centred: it cannot be combined with no centring (--no-centre)")]
    NeedsCentring(&'static str),
    /// A sparse matrix whose arrays do not make a CSR matrix ([`crate::sparse::CsrRef::new`]):
    /// the message names the array, the position and the value.
    #[error("invalid sparse matrix: {0}")]
    InvalidSparse(String),
    /// In a fit over several processes ([`crate::Collective`]), another rank failed: its
    /// message (naming the file, row and column when it is about the data).
    #[error("rank {rank}: {message}")]
    OtherRank { rank: usize, message: String },
    /// This rank stopped its pass because another rank announced a failure; the agreement that
    /// follows replaces it by that rank's error.
    #[error("stopped: another process failed")]
    Stopped,
    /// The ranks of a distributed fit reached different points of it (a bug, or builds that
    /// round differently on different machines); reported instead of waiting forever.
    #[error("the processes went out of step (seen on rank {rank}): {detail}")]
    OutOfStep { rank: usize, detail: String },
    /// A parameter of a latent-variable model (Bayesian PCA, a mixture) outside its range: the
    /// value and what is allowed.
    #[error("{}", self.message_naming(Parameter::name))]
    OutOfRange {
        parameter: Parameter,
        value: String,
        allowed: String,
    },
}

impl PcaError {
    /// The parameter whose value this error is about, if any.
    pub fn parameter(&self) -> Option<Parameter> {
        self.about_parameter().map(|(parameter, _)| parameter)
    }

    /// The message, with the parameter it is about (if any) named by `name` instead of
    /// [`Parameter::name`]: a front end passes its own names (a command-line tool its flags).
    /// For other errors, the same as `to_string()`.
    pub fn message_naming<N: fmt::Display>(&self, name: impl Fn(Parameter) -> N) -> String {
        match self.about_parameter() {
            Some((parameter, rest)) => format!("{} {rest}", name(parameter)),
            None => self.to_string(),
        }
    }

    /// For an error about a parameter's value: the parameter, and the message after its name.
    fn about_parameter(&self) -> Option<(Parameter, String)> {
        Some(match self {
            PcaError::TooManyComponents { requested, max } => (
                Parameter::Components,
                format!("{requested} is more than min(n_samples, n_features) = {max}"),
            ),
            PcaError::ZeroComponents => (
                Parameter::Components,
                "0 is not allowed: at least 1 component is needed".into(),
            ),
            PcaError::VarianceFractionOutOfRange(fraction) => (
                Parameter::VarianceFraction,
                format!("{fraction} is outside the allowed range (0, 1]"),
            ),
            PcaError::ToleranceOutOfRange(tolerance) => (
                Parameter::Tolerance,
                format!("{tolerance} is outside the allowed range (0, 1)"),
            ),
            PcaError::ZeroIterations => (
                Parameter::MaxIterations,
                "0 is not allowed: at least 1 pass is needed".into(),
            ),
            PcaError::InvalidDdof(ddof) => (
                Parameter::Ddof,
                format!("{ddof} is not allowed: use 0 (divide by N) or 1 (divide by N − 1)"),
            ),
            PcaError::NoiseSigmaOutOfRange(sigma) => (
                Parameter::NoiseSigma,
                format!(
                    "{sigma} is not allowed: the noise's standard deviation must be a positive number"
                ),
            ),
            PcaError::TooFewFolds(folds) => (
                Parameter::Folds,
                format!("{folds} is not allowed: cross-validation needs at least 2 folds"),
            ),
            PcaError::ZeroPermutations => (
                Parameter::Permutations,
                "0 is not allowed: parallel analysis needs at least 1 permutation".into(),
            ),
            PcaError::PercentileOutOfRange(percentile) => (
                Parameter::Percentile,
                format!("{percentile} is outside the allowed range (0, 100)"),
            ),
            PcaError::ZeroMaxComponents => (
                Parameter::MaxComponents,
                "0 is not allowed: at least 1 component is considered".into(),
            ),
            PcaError::OutOfRange {
                parameter,
                value,
                allowed,
            } => (*parameter, format!("{value} is not allowed: {allowed}")),
            _ => return None,
        })
    }
}

/// The crate's `Result`.
pub type Result<T, E = PcaError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error about a parameter: its message starts with the parameter's name (or the
    /// name given), followed by the value.
    #[test]
    fn parameter_errors_name_their_parameter_and_value() {
        let flag = |p: Parameter| match p {
            Parameter::Components => "--components",
            Parameter::VarianceFraction => "--variance",
            Parameter::Ddof => "--ddof",
            Parameter::Tolerance => "--tolerance",
            Parameter::MaxIterations => "--max-iterations",
            Parameter::NoiseSigma => "--noise-sigma",
            Parameter::Folds => "--folds",
            Parameter::Permutations => "--permutations",
            Parameter::Percentile => "--percentile",
            Parameter::MaxComponents => "--max-components",
            Parameter::Clusters => "--clusters",
            Parameter::Restarts => "--restarts",
        };
        for (error, parameter, message) in [
            (
                PcaError::TooManyComponents {
                    requested: 9,
                    max: 4,
                },
                Parameter::Components,
                "components 9 is more than min(n_samples, n_features) = 4",
            ),
            (
                PcaError::ZeroComponents,
                Parameter::Components,
                "components 0 is not allowed: at least 1 component is needed",
            ),
            (
                PcaError::VarianceFractionOutOfRange(1.5),
                Parameter::VarianceFraction,
                "variance fraction 1.5 is outside the allowed range (0, 1]",
            ),
            (
                PcaError::ToleranceOutOfRange(2.0),
                Parameter::Tolerance,
                "tolerance 2 is outside the allowed range (0, 1)",
            ),
            (
                PcaError::ZeroIterations,
                Parameter::MaxIterations,
                "max iterations 0 is not allowed: at least 1 pass is needed",
            ),
            (
                PcaError::InvalidDdof(2),
                Parameter::Ddof,
                "ddof 2 is not allowed: use 0 (divide by N) or 1 (divide by N − 1)",
            ),
            (
                PcaError::NoiseSigmaOutOfRange(-1.0),
                Parameter::NoiseSigma,
                "noise sigma -1 is not allowed: the noise's standard deviation must be a positive number",
            ),
            (
                PcaError::TooFewFolds(1),
                Parameter::Folds,
                "folds 1 is not allowed: cross-validation needs at least 2 folds",
            ),
            (
                PcaError::ZeroPermutations,
                Parameter::Permutations,
                "permutations 0 is not allowed: parallel analysis needs at least 1 permutation",
            ),
            (
                PcaError::PercentileOutOfRange(100.0),
                Parameter::Percentile,
                "percentile 100 is outside the allowed range (0, 100)",
            ),
            (
                PcaError::ZeroMaxComponents,
                Parameter::MaxComponents,
                "max components 0 is not allowed: at least 1 component is considered",
            ),
        ] {
            assert_eq!(error.parameter(), Some(parameter));
            assert_eq!(error.to_string(), message);
            let renamed = message.replacen(parameter.name(), flag(parameter), 1);
            assert_eq!(error.message_naming(flag), renamed);
        }
    }

    #[test]
    fn other_errors_name_no_parameter_and_keep_their_message() {
        let error = PcaError::EmptyData {
            n_samples: 0,
            n_features: 3,
        };
        assert_eq!(error.parameter(), None);
        assert_eq!(error.message_naming(|_| "--flag"), error.to_string());
    }

    /// A source's error is kept whole: its message, and its own cause after it in the chain.
    #[test]
    fn a_source_error_keeps_its_message_and_its_causes() {
        #[derive(Debug, Error)]
        #[error("shard.csv: line 7: unreadable")]
        struct Unreadable(#[source] std::io::Error);
        let error = PcaError::Source(Box::new(Unreadable(std::io::Error::other("disk"))));
        assert_eq!(error.to_string(), "shard.csv: line 7: unreadable");
        let cause = std::error::Error::source(&error).expect("the cause is kept");
        assert_eq!(cause.to_string(), "disk");
        let PcaError::Source(inner) = &error else {
            unreachable!()
        };
        assert!(inner.downcast_ref::<Unreadable>().is_some());
    }
}
