//! Errors of the whole fit: parameters out of range (named with their value and range), too
//! few samples, non-finite values named by their place, mismatched widths, requests a solver
//! cannot serve.

use crate::common;

use common::{EXACT_SOLVERS, fit_with, iris, random_matrix};
use principal::faer::{Mat, mat};
use principal::{ComponentCount, Parameter, PcaBuilder, PcaError, Scaling, Solver};

#[test]
fn single_sample_with_ddof_one_is_a_clear_error() {
    let x = mat![[1.0, 2.0, 3.0]];
    let err = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(1),
        Scaling::Centre,
        1,
        Solver::Auto,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            PcaError::TooFewSamples {
                n_samples: 1,
                ddof: 1
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("ddof 0"), "{err}");
    // ddof 0 accepts it: zero variance, one component, ratio 0.
    let model = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(1),
        Scaling::Centre,
        0,
        Solver::Svd,
    )
    .unwrap();
    assert_eq!(model.explained_variance(), &[0.0]);
    assert_eq!(model.explained_variance_ratio(), &[0.0]);
}

#[test]
fn parameter_errors_name_value_and_range() {
    let x = iris();
    let err = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(9),
        Scaling::Centre,
        1,
        Solver::Auto,
    )
    .unwrap_err();
    // The library names its own parameters; a front end renames them (a CLI its flags).
    assert_eq!(
        err.to_string(),
        "components 9 is more than min(n_samples, n_features) = 4"
    );
    assert_eq!(err.parameter(), Some(Parameter::Components));
    assert_eq!(
        err.message_naming(|_| "--components"),
        "--components 9 is more than min(n_samples, n_features) = 4"
    );
    let err = PcaBuilder::new()
        .components(ComponentCount::VarianceFraction(1.5))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("1.5") && err.to_string().contains("(0, 1]"));
    assert_eq!(err.parameter(), Some(Parameter::VarianceFraction));
    assert!(
        PcaBuilder::new()
            .components(ComponentCount::VarianceFraction(f64::NAN))
            .build()
            .is_err()
    );
    assert!(matches!(
        PcaBuilder::new()
            .components(ComponentCount::Fixed(0))
            .build(),
        Err(PcaError::ZeroComponents)
    ));
    assert!(matches!(
        PcaBuilder::new().ddof(2).build(),
        Err(PcaError::InvalidDdof(2))
    ));
    let iterative = |options| PcaBuilder::new().iterative(options).build().unwrap_err();
    let tolerance = iterative(principal::IterativeOptions {
        tolerance: Some(2.0),
        ..Default::default()
    });
    assert_eq!(tolerance.parameter(), Some(Parameter::Tolerance));
    let passes = iterative(principal::IterativeOptions {
        max_iterations: 0,
        ..Default::default()
    });
    assert_eq!(passes.parameter(), Some(Parameter::MaxIterations));
    let empty = Mat::<f64>::zeros(0, 3);
    assert!(matches!(
        fit_with(
            empty.as_ref(),
            ComponentCount::All,
            Scaling::Centre,
            1,
            Solver::Auto
        ),
        Err(PcaError::EmptyData { .. })
    ));
}

#[test]
fn non_finite_values_are_rejected_with_their_place() {
    let mut x = random_matrix(6, 3, None, 0.0, 4);
    x[(4, 1)] = f64::NAN;
    x[(5, 0)] = f64::INFINITY;
    for solver in EXACT_SOLVERS {
        let err = fit_with(
            x.as_ref(),
            ComponentCount::Fixed(1),
            Scaling::Centre,
            1,
            solver,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                PcaError::NonFinite {
                    row: 4,
                    column: 1,
                    ..
                }
            ),
            "{solver}: {err}"
        );
    }
}

#[test]
fn transform_and_inverse_check_widths() {
    let model = fit_with(
        iris().as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let wrong = Mat::<f64>::zeros(3, 5);
    assert!(matches!(
        model.transform(wrong.as_ref()),
        Err(PcaError::FeatureMismatch {
            expected: 4,
            found: 5
        })
    ));
    assert!(matches!(
        model.inverse_transform(wrong.as_ref()),
        Err(PcaError::ComponentMismatch {
            expected: 2,
            found: 5
        })
    ));
}

#[test]
fn variance_fraction_with_an_iterative_solver_is_refused() {
    let x = random_matrix(50, 5, None, 0.0, 1);
    let params = PcaBuilder::new()
        .components(ComponentCount::VarianceFraction(0.9))
        .solver(Solver::Randomized)
        .build()
        .unwrap();
    assert!(matches!(
        params.fit(x.as_ref()),
        Err(PcaError::SolverUnsuitable { .. })
    ));
}
