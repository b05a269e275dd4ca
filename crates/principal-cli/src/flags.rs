//! The library's errors in the command line's words: a parameter is named by its flag.

use principal::{Parameter, PcaError};

/// The flag that sets `parameter`.
fn flag(parameter: Parameter) -> &'static str {
    match parameter {
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
        _ => "a parameter",
    }
}

/// `error`'s message, naming the flag of the parameter it is about.
pub fn message(error: &PcaError) -> String {
    error.message_naming(flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_errors_name_the_flag() {
        let error = PcaError::TooManyComponents {
            requested: 9,
            max: 4,
        };
        assert_eq!(
            message(&error),
            "--components 9 is more than min(n_samples, n_features) = 4"
        );
        assert_eq!(
            message(&PcaError::VarianceFractionOutOfRange(1.5)),
            "--variance 1.5 is outside the allowed range (0, 1]"
        );
        assert_eq!(
            message(&PcaError::ZeroIterations),
            "--max-iterations 0 is not allowed: at least 1 pass is needed"
        );
    }
}
