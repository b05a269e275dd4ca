//! The iterative solvers (randomized, power, em) against the exact answer and their own
//! error estimate; seeds, tolerances, restarts, an offset of 1e6.

use crate::common;

use common::{
    check_relations, fit_with, iterative, max_abs_diff, projector, random_matrix, signal_plus_noise,
};
use principal::faer::Mat;
use principal::{ComponentCount, IterativeOptions, PowerMethod, RandomizedMethod, Scaling, Solver};
#[test]
fn iterative_solvers_agree_with_svd_within_their_error_estimate() {
    let shapes = [
        (200, 30, 4),
        (30, 200, 4),
        (500, 60, 8),
        (60, 60, 5),
        (1000, 5, 3),
    ];
    for (case, &(n, d, k)) in shapes.iter().enumerate() {
        let x = signal_plus_noise(n, d, k + 2, 1e-3, case as u64);
        let exact = fit_with(
            x.as_ref(),
            ComponentCount::Fixed(k),
            Scaling::Centre,
            1,
            Solver::Svd,
        )
        .unwrap();
        let lam = exact.explained_variance();
        let options = [
            (
                Solver::Randomized,
                IterativeOptions {
                    tolerance: Some(1e-8),
                    ..Default::default()
                },
            ),
            (Solver::Randomized, IterativeOptions::default()),
            (
                Solver::Randomized,
                IterativeOptions {
                    randomized_method: RandomizedMethod::Subspace,
                    ..Default::default()
                },
            ),
            (
                Solver::Randomized,
                IterativeOptions {
                    randomized_method: RandomizedMethod::Subspace,
                    tolerance: Some(1e-8),
                    ..Default::default()
                },
            ),
            (Solver::Power, IterativeOptions::default()),
            (
                Solver::Power,
                IterativeOptions {
                    power_method: PowerMethod::Deflation,
                    ..Default::default()
                },
            ),
            (Solver::Em, IterativeOptions::default()),
        ];
        for (solver, opts) in options {
            let model = iterative(solver, k, opts).fit(x.as_ref()).unwrap();
            let report = model.iteration_report().expect("iterative solvers report");
            assert!(report.converged, "{solver} {n}×{d}: {report:?}");
            check_relations(x.as_ref(), &model).unwrap();
            // Each Ritz value lies within its residual of an exact eigenvalue.
            let bound = report.error_estimate * lam[0] + 1e-10 * lam[0];
            for (a, b) in model.explained_variance().iter().zip(lam) {
                assert!(
                    (a - b).abs() <= bound,
                    "{solver} {n}×{d}: λ {a} vs {b}, bound {bound}, {report:?}"
                );
            }
            // Subspaces: the error of the top-k subspace is about residual / gap.
            let gap = lam[k - 1]
                - if k < n.min(d) {
                    signal_gap_next(&x, k)
                } else {
                    0.0
                };
            let diff = max_abs_diff(projector(&model).as_ref(), projector(&exact).as_ref());
            assert!(
                diff <= 10.0 * report.error_estimate * lam[0] / gap + 1e-9,
                "{solver} {n}×{d}: projector diff {diff}"
            );
        }
    }
}

fn signal_gap_next(x: &Mat<f64>, k: usize) -> f64 {
    let all = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(k + 1),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    all.explained_variance()[k]
}

#[test]
fn seeded_iterative_fits_are_bit_for_bit_repeatable_and_seeds_matter() {
    let x = signal_plus_noise(300, 40, 6, 0.5, 9);
    for solver in [Solver::Randomized, Solver::Power, Solver::Em] {
        let opts = IterativeOptions {
            seed: 42,
            power_iterations: Some(1),
            max_iterations: 3,
            ..Default::default()
        };
        let a = iterative(solver, 3, opts).fit(x.as_ref()).unwrap();
        let b = iterative(solver, 3, opts).fit(x.as_ref()).unwrap();
        assert_eq!(a, b, "{solver}");
        let c = iterative(solver, 3, IterativeOptions { seed: 43, ..opts })
            .fit(x.as_ref())
            .unwrap();
        assert_ne!(
            a.explained_variance(),
            c.explained_variance(),
            "{solver}: the seed has no effect"
        );
    }
}

#[test]
fn randomized_tolerance_raises_passes_until_the_estimate_meets_it() {
    let x = signal_plus_noise(400, 80, 10, 0.3, 5);
    let loose = iterative(
        Solver::Randomized,
        5,
        IterativeOptions {
            tolerance: Some(1e-2),
            ..Default::default()
        },
    );
    let tight = iterative(
        Solver::Randomized,
        5,
        IterativeOptions {
            tolerance: Some(1e-10),
            ..Default::default()
        },
    );
    let (a, b) = (
        loose.fit(x.as_ref()).unwrap(),
        tight.fit(x.as_ref()).unwrap(),
    );
    let (ra, rb) = (a.iteration_report().unwrap(), b.iteration_report().unwrap());
    assert!(
        ra.error_estimate <= 1e-2 && rb.error_estimate <= 1e-10,
        "{ra:?} {rb:?}"
    );
    assert!(rb.passes > ra.passes, "{ra:?} {rb:?}");
}

#[test]
fn power_iteration_that_cannot_converge_says_so() {
    // Two equal leading eigenvalues: deflation's single vector converges, but give it 2 passes.
    let x = random_matrix(200, 20, None, 0.0, 11);
    let opts = IterativeOptions {
        max_iterations: 2,
        tolerance: Some(1e-12),
        ..Default::default()
    };
    let model = iterative(Solver::Power, 3, opts).fit(x.as_ref()).unwrap();
    assert!(!model.iteration_report().unwrap().converged);
}

#[test]
fn iterative_solvers_stay_exact_under_an_offset_of_1e6() {
    // The mean is 10⁶ spreads from zero: chunks must be centred explicitly.
    let x = signal_plus_noise(300, 40, 5, 1e-2, 21);
    let shifted = Mat::from_fn(300, 40, |i, j| x[(i, j)] + 1e6);
    let exact = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(4),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    for solver in [Solver::Randomized, Solver::Power, Solver::Em] {
        let opts = IterativeOptions {
            tolerance: Some(1e-10),
            ..Default::default()
        };
        let model = iterative(solver, 4, opts).fit(shifted.as_ref()).unwrap();
        let lam = exact.explained_variance();
        for (a, b) in model.explained_variance().iter().zip(lam) {
            // Storing x + 1e6 rounds each entry by up to 1.2e-10: far below these variances.
            assert!((a - b).abs() <= 1e-8 * lam[0], "{solver}: {a} vs {b}");
        }
    }
}

#[test]
fn block_krylov_restarts_keep_converging() {
    // D = 30 and 14 columns per block: the basis is capped at 30 columns, so a tight tolerance
    // forces thick restarts.
    let x = signal_plus_noise(400, 30, 12, 0.5, 17);
    let exact = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(4),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let opts = IterativeOptions {
        tolerance: Some(1e-12),
        ..Default::default()
    };
    let model = iterative(Solver::Randomized, 4, opts)
        .fit(x.as_ref())
        .unwrap();
    let report = model.iteration_report().unwrap();
    assert!(report.converged && report.passes > 2, "{report:?}");
    let lam = exact.explained_variance();
    for (a, b) in model.explained_variance().iter().zip(lam) {
        assert!((a - b).abs() <= 1e-10 * lam[0], "{a} vs {b}");
    }
}

#[test]
fn block_krylov_is_more_accurate_than_subspace_iteration_for_the_same_passes() {
    // A slowly decaying spectrum: the regime where Krylov methods pay off.
    let x = signal_plus_noise(300, 200, 40, 0.5, 23);
    let k = 10;
    let exact = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(k),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let error = |method| {
        let opts = IterativeOptions {
            power_iterations: Some(2),
            randomized_method: method,
            ..Default::default()
        };
        let model = iterative(Solver::Randomized, k, opts)
            .fit(x.as_ref())
            .unwrap();
        let lam = exact.explained_variance();
        model
            .explained_variance()
            .iter()
            .zip(lam)
            .map(|(a, b)| (a - b).abs() / b)
            .fold(0.0, f64::max)
    };
    let (krylov, subspace) = (
        error(RandomizedMethod::BlockKrylov),
        error(RandomizedMethod::Subspace),
    );
    assert!(
        krylov < subspace,
        "krylov {krylov:e} vs subspace {subspace:e}"
    );
}
