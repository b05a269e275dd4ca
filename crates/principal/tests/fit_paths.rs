//! The fit paths: which solver `auto` takes, f32 against f64 input, transform and
//! reconstruction error by blocks, models through their parts.

use crate::common;

use common::{fit_with, iris, random_matrix};
use principal::faer::Mat;
use principal::{ComponentCount, PcaBuilder, PcaError, PcaModel, Scaling, Solver};
#[test]
fn auto_resolves_by_shape_and_is_recorded() {
    let fit = |x: &Mat<f64>, k| {
        fit_with(
            x.as_ref(),
            ComponentCount::Fixed(k),
            Scaling::Centre,
            1,
            Solver::Auto,
        )
        .unwrap()
    };
    assert_eq!(
        fit(&random_matrix(30, 4, None, 0.0, 1), 2).solver(),
        Solver::Svd
    );
    assert_eq!(
        fit(&random_matrix(3000, 40, None, 0.0, 1), 2).solver(),
        Solver::Covariance
    );
    assert_eq!(
        fit(&random_matrix(40, 3000, None, 0.0, 2), 2).solver(),
        Solver::Gram
    );
    assert_eq!(
        fit(&random_matrix(1000, 3000, None, 0.0, 2), 3).solver(),
        Solver::Randomized
    );
    // A fraction of variance needs the whole spectrum: never randomized.
    let x = random_matrix(1000, 3000, None, 0.0, 2);
    let model = fit_with(
        x.as_ref(),
        ComponentCount::VarianceFraction(0.5),
        Scaling::Centre,
        1,
        Solver::Auto,
    )
    .unwrap();
    assert!(model.solver().is_exact());
}

#[test]
fn f32_input_matches_f64_input_of_the_same_values() {
    let x = iris();
    let x32 = Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] as f32);
    let x64 = Mat::from_fn(x.nrows(), x.ncols(), |i, j| x32[(i, j)] as f64);
    let params = PcaBuilder::new()
        .components(ComponentCount::Fixed(3))
        .build()
        .unwrap();
    let a = params.fit(x32.as_ref()).unwrap();
    let b = params.fit(x64.as_ref()).unwrap();
    assert_eq!(a, b);
}

/// Many blocks of rows (8,192 for 4 features): codes and reconstruction error as the formulas
/// give them from a whole centred (and scaled) copy, for column-major and row-major input (as
/// readers give it, centred into a row-major block); a non-finite value in a late block is named
/// by its row.
#[test]
fn transform_and_reconstruction_error_by_blocks_match_the_formulas() {
    let x = random_matrix(20_000, 4, None, 1e3, 6);
    let by_rows = x.transpose().to_owned();
    for scaling in [Scaling::Centre, Scaling::Standardize] {
        let model = fit_with(
            x.as_ref(),
            ComponentCount::Fixed(2),
            scaling,
            1,
            Solver::Svd,
        )
        .unwrap();
        let scale = |j: usize| model.scale().map_or(1.0, |s| s[j]);
        let xs = Mat::from_fn(20_000, 4, |i, j| (x[(i, j)] - model.mean()[j]) / scale(j));
        let want = &xs * model.components().transpose();
        let residual = &xs - &want * model.components();
        let error = residual.squared_norm_l2() / 20_000.0;
        for input in [x.as_ref(), by_rows.transpose()] {
            let codes = model.transform(input).unwrap();
            assert_eq!((codes.nrows(), codes.ncols()), (20_000, 2));
            for i in 0..20_000 {
                for m in 0..2 {
                    assert!((codes[(i, m)] - want[(i, m)]).abs() < 1e-9, "{i}, {m}");
                }
            }
            let got = model.reconstruction_error(input).unwrap();
            assert!(
                (got - error).abs() <= 1e-12 * error,
                "{got} against {error}"
            );
        }
    }
    let mut bad = x.clone();
    bad[(19_000, 3)] = f64::NAN;
    let model = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    assert!(matches!(
        model.transform(bad.as_ref()).unwrap_err(),
        PcaError::NonFinite {
            row: 19_000,
            column: 3,
            ..
        }
    ));
}

#[test]
fn model_round_trips_through_parts() {
    let model = fit_with(
        iris().as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Standardize,
        0,
        Solver::Gram,
    )
    .unwrap();
    let back = PcaModel::from_parts(model.to_parts()).unwrap();
    // Every part comes back; how the fit's eigenproblem was solved is a record of the fit,
    // not a part (as the component choice is).
    assert_eq!(back.to_parts(), model.to_parts());
    let gram = principal::EigenRoute::Dense(principal::DenseReason::Gram);
    assert_eq!(model.eigen_route(), Some(&gram));
    assert_eq!(back.eigen_route(), None);
    let mut broken = model.to_parts();
    broken.explained_variance.pop();
    assert!(matches!(
        PcaModel::from_parts(broken),
        Err(PcaError::InvalidModel(_))
    ));
}
