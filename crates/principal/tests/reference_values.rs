//! Reference values (the houses example, Iris's eigenvalues and components as published) and what follows from them: the
//! variance fraction, standardization, constant features; every exact solver.

use crate::common;

use common::{EXACT_SOLVERS, fit_with, iris, max_abs_diff, random_matrix};
use principal::faer::mat;
use principal::{ComponentCount, Scaling, Solver};
#[test]
fn houses_reference_codes() {
    let x = mat![[10.0, 10.0], [2.0, 2.0], [7.0, 7.0], [1.0, 1.0], [5.0, 5.0]];
    let expected = [7.0711, -4.2426, 2.8284, -5.6569, 0.0];
    for solver in EXACT_SOLVERS {
        let model = fit_with(x.as_ref(), ComponentCount::All, Scaling::Centre, 1, solver).unwrap();
        assert_eq!(model.mean(), &[5.0, 5.0]);
        let z = model.transform(x.as_ref()).unwrap();
        let sign = z[(0, 0)].signum();
        for (i, e) in expected.iter().enumerate() {
            assert!(
                (sign * z[(i, 0)] - e).abs() < 1e-4,
                "{solver}: code {i} = {}",
                z[(i, 0)]
            );
            assert!(
                z[(i, 1)].abs() < 1e-12,
                "{solver}: second code {i} = {}",
                z[(i, 1)]
            );
        }
        // Sign rule with a tie: (0.7071, 0.7071) has its first entry positive.
        assert!(
            model.components()[(0, 0)] > 0.0 && model.components()[(1, 0)] > 0.0,
            "{solver}"
        );
        assert!((model.explained_variance_ratio()[0] - 1.0).abs() < 1e-14);
    }
}

#[test]
fn iris_reference_values() {
    let x = iris();
    let eig = [4.22824171, 0.24267075, 0.07820950, 0.02383509];
    let v1 = [-0.361387, 0.084523, -0.856671, -0.358289];
    let v2 = [0.656589, 0.730161, -0.173373, -0.075481];
    for solver in EXACT_SOLVERS {
        let model = fit_with(x.as_ref(), ComponentCount::All, Scaling::Centre, 1, solver).unwrap();
        for (got, want) in model.explained_variance().iter().zip(eig) {
            assert!(
                (got - want).abs() < 1e-8,
                "{solver}: eigenvalue {got} vs {want}"
            );
        }
        for (m, v) in [(0, v1), (1, v2)] {
            let b = model.components().row(m);
            let sign = (b[0] * v[0]).signum();
            for j in 0..4 {
                assert!(
                    (sign * b[j] - v[j]).abs() < 1e-6,
                    "{solver}: component {m}[{j}] = {}",
                    b[j]
                );
            }
        }
        // Sign rule: the entry of largest magnitude is positive.
        assert!(model.components()[(0, 2)] > 0.0);
        assert_ne!(model.solver(), Solver::Auto);
    }
}

#[test]
fn variance_fraction_picks_smallest_count_reaching_it() {
    let x = iris();
    let model = fit_with(
        x.as_ref(),
        ComponentCount::VarianceFraction(0.95),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    // 4.228 / 4.573 = 0.9246 < 0.95 ≤ (4.228 + 0.243) / 4.573 = 0.9777
    assert_eq!(model.n_components(), 2);
    let full = fit_with(
        x.as_ref(),
        ComponentCount::VarianceFraction(1.0),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    assert_eq!(full.n_components(), 4);
}

#[test]
fn standardized_iris_has_trace_d_and_keeps_training_scale() {
    let x = iris();
    for solver in EXACT_SOLVERS {
        let model = fit_with(
            x.as_ref(),
            ComponentCount::All,
            Scaling::Standardize,
            1,
            solver,
        )
        .unwrap();
        let sum: f64 = model.explained_variance().iter().sum();
        assert!((sum - 4.0).abs() < 1e-12, "{solver}: {sum}");
        assert!((model.total_variance() - 4.0).abs() < 1e-12);
        let back = model
            .inverse_transform(model.transform(x.as_ref()).unwrap().as_ref())
            .unwrap();
        assert!(max_abs_diff(back.as_ref(), x.as_ref()) < 1e-12, "{solver}");
    }
}

#[test]
fn constant_feature_keeps_scale_one_and_is_reported() {
    let mut x = random_matrix(20, 4, None, 0.0, 3);
    for i in 0..20 {
        x[(i, 2)] = 0.1;
    }
    for solver in EXACT_SOLVERS {
        let model = fit_with(
            x.as_ref(),
            ComponentCount::Fixed(3),
            Scaling::Standardize,
            1,
            solver,
        )
        .unwrap();
        assert_eq!(model.zero_variance_features(), &[2], "{solver}");
        assert_eq!(model.scale().unwrap()[2], 1.0);
        assert!((model.total_variance() - 3.0).abs() < 1e-12);
    }
}
