//! The relations of PCA as properties over random shapes (tall, wide, square, a single row),
//! ranks, offsets, scalings and ddof: every exact solver satisfies the relations of
//! `common::check_relations` (uncorrelated codes of variance λ, reconstruction error equal to
//! the discarded eigenvalues, residual orthogonal to the components, orthonormal components),
//! an offset of 1e6 changes nothing beyond rounding, mixed precision stays within its stated
//! bound, merged moments equal one pass, and row order does not matter.
//!
//! Failing cases proptest finds are kept in `proptest-regressions/properties.txt` beside this
//! file and replayed first.

use crate::common;

use common::{EXACT_SOLVERS, check_relations, fit_with, max_abs_diff, projector, random_matrix};
use principal::faer::Mat;
use principal::{ComponentCount, MomentAccumulator, PcaBuilder, Precision, Scaling, Solver};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
#[derive(Clone, Debug)]
struct Case {
    n: usize,
    d: usize,
    rank: Option<usize>,
    offset: f64,
    scaling: Scaling,
    ddof: usize,
    m: usize,
    seed: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    let shape = prop_oneof![
        (20usize..60, 1usize..8), // tall
        (2usize..8, 10usize..40), // wide
        (2usize..20, 2usize..20), // anything, square-ish
        (1usize..2, 1usize..10),  // a single row
    ];
    (
        shape,
        any::<u64>(),
        prop::bool::ANY,
        prop::bool::ANY,
        0usize..3,
        0usize..2,
        1usize..40,
    )
        .prop_map(
            |((n, d), seed, standardize, big_offset, rank_kind, ddof, m)| {
                let ddof = if n == 1 { 0 } else { ddof };
                let max = n.min(d);
                let rank = match rank_kind {
                    0 => None,
                    _ => Some(1 + (seed as usize) % max),
                };
                Case {
                    n,
                    d,
                    rank,
                    offset: if big_offset { 1e6 } else { 0.0 },
                    scaling: if standardize {
                        Scaling::Standardize
                    } else {
                        Scaling::Centre
                    },
                    ddof,
                    m: 1 + (m - 1) % max,
                    seed,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/proptest-regressions/properties.txt"
        )))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn relations_hold_for_every_solver(case in cases()) {
        let x = random_matrix(case.n, case.d, case.rank, case.offset, case.seed);
        let mut models = Vec::new();
        for solver in EXACT_SOLVERS {
            let model = fit_with(x.as_ref(), ComponentCount::Fixed(case.m), case.scaling, case.ddof, solver).unwrap();
            prop_assert_eq!(model.n_components(), case.m);
            check_relations(x.as_ref(), &model)?;
            models.push(model);
        }
        // 4. Solvers agree with the SVD: eigenvalues always; the subspace where the gap allows.
        let reference = &models[3];
        let lam = reference.explained_variance();
        let top = reference.total_variance().max(1e-300);
        let tol = 1e-9 * top * ((case.n * case.d) as f64).sqrt();
        for model in &models[..3] {
            for (a, b) in model.explained_variance().iter().zip(lam) {
                prop_assert!((a - b).abs() <= tol, "{}: eigenvalue {a} vs svd {b}", model.solver());
            }
        }
        let svd_all = fit_with(x.as_ref(), ComponentCount::All, case.scaling, case.ddof, Solver::Svd).unwrap();
        let all = svd_all.explained_variance();
        let gap = if case.m < all.len() { all[case.m - 1] - all[case.m] } else { f64::INFINITY };
        if gap > 1e-6 * top && all[case.m - 1] > 1e-8 * top {
            let p = projector(reference);
            for model in &models[..3] {
                let diff = max_abs_diff(projector(model).as_ref(), p.as_ref());
                prop_assert!(diff <= 1e-9 * ((case.n * case.d) as f64).sqrt() * top / gap.min(top), "{}: projectors differ by {diff}", model.solver());
            }
        }
    }

    #[test]
    fn an_offset_of_1e6_changes_nothing_beyond_rounding(case in cases()) {
        let x = random_matrix(case.n, case.d, case.rank, 0.0, case.seed);
        let shifted = Mat::from_fn(case.n, case.d, |i, j| x[(i, j)] + 1e6);
        for solver in EXACT_SOLVERS {
            let a = fit_with(x.as_ref(), ComponentCount::Fixed(case.m), case.scaling, case.ddof, solver).unwrap();
            let b = fit_with(shifted.as_ref(), ComponentCount::Fixed(case.m), case.scaling, case.ddof, solver).unwrap();
            let top = a.total_variance().max(1e-300);
            // Storing x + 1e6 rounds each entry by up to 1e6·ε/2 ≈ 1.2e-10.
            let tol = 1e-8 * ((case.n * case.d) as f64).sqrt() * top.sqrt().max(1e-3);
            prop_assert!((a.total_variance() - b.total_variance()).abs() <= tol);
            for (u, v) in a.explained_variance().iter().zip(b.explained_variance()) {
                prop_assert!((u - v).abs() <= tol, "{solver}: {u} vs {v}");
            }
        }
    }

    #[test]
    fn mixed_precision_stays_within_its_stated_bound(case in cases()) {
        // f32 data, and the same values in f64 for the exact reference.
        let x64 = random_matrix(case.n, case.d, case.rank, case.offset, case.seed);
        let x32 = Mat::<f32>::from_fn(case.n, case.d, |i, j| x64[(i, j)] as f32);
        let exact_input = Mat::<f64>::from_fn(case.n, case.d, |i, j| f64::from(x32[(i, j)]));
        let params = |precision| {
            PcaBuilder::new()
                .components(ComponentCount::Fixed(case.m))
                .ddof(case.ddof)
                .solver(Solver::Covariance)
                .precision(precision)
                .build()
                .unwrap()
        };
        let exact = params(Precision::Full).fit(exact_input.as_ref()).unwrap();
        let mixed = params(Precision::Mixed).fit(x32.as_ref()).unwrap();
        let total = exact.total_variance();
        let bound = Precision::Mixed.eigenvalue_bound() * total + 1e-12 * total;
        for (a, b) in mixed.explained_variance().iter().zip(exact.explained_variance()) {
            prop_assert!((a - b).abs() <= bound, "{a} vs {b}: bound {bound}");
        }
        prop_assert!((mixed.total_variance() - total).abs() <= bound);
        for (a, b) in mixed.mean().iter().zip(exact.mean()) {
            prop_assert!((a - b).abs() <= 1e-12 * b.abs().max(total.sqrt()).max(1e-300));
        }
    }

    #[test]
    fn merging_any_split_equals_one_pass(n in 1usize..50, d in 1usize..8, seed: u64, cuts in prop::collection::vec(0usize..50, 0..4), big_offset: bool) {
        let x = random_matrix(n, d, None, if big_offset { 1e6 } else { 0.0 }, seed);
        let mut one = MomentAccumulator::new(d);
        one.push(x.as_ref()).unwrap();
        let one = one.finish().unwrap();
        let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c % (n + 1)).collect();
        bounds.extend([0, n]);
        bounds.sort_unstable();
        let mut merged = MomentAccumulator::new(d);
        for w in bounds.windows(2) {
            let mut part = MomentAccumulator::new(d);
            part.push(x.subrows(w[0], w[1] - w[0])).unwrap();
            merged.merge(part).unwrap();
        }
        let merged = merged.finish().unwrap();
        prop_assert_eq!(merged.n_samples(), n);
        let size = one.scatter().norm_max().max(1.0);
        for j in 0..d {
            prop_assert!((merged.mean()[j] - one.mean()[j]).abs() <= 1e-12 * one.mean()[j].abs().max(1.0));
        }
        // Each centred entry carries the input's rounding, ε·max|x|, into the products.
        let rounding = 4.0 * f64::EPSILON * x.norm_max() * size.sqrt() * n as f64;
        prop_assert!(max_abs_diff(merged.scatter(), one.scatter()) <= 1e-11 * size * n as f64 + rounding);
    }

    #[test]
    fn same_data_in_another_row_order_gives_the_same_model(n in 3usize..30, d in 1usize..6, seed: u64) {
        let x = random_matrix(n, d, None, 0.0, seed);
        let reversed = Mat::from_fn(n, d, |i, j| x[(n - 1 - i, j)]);
        let m = n.min(d);
        for solver in EXACT_SOLVERS {
            let a = fit_with(x.as_ref(), ComponentCount::Fixed(m), Scaling::Centre, 1, solver).unwrap();
            let b = fit_with(reversed.as_ref(), ComponentCount::Fixed(m), Scaling::Centre, 1, solver).unwrap();
            let lam = a.explained_variance();
            for k in 0..m {
                let separated = (k == 0 || lam[k - 1] - lam[k] > 1e-6 * lam[0]) && (k + 1 == m || lam[k] - lam[k + 1] > 1e-6 * lam[0]);
                if separated && lam[k] > 1e-9 * lam[0] {
                    for j in 0..d {
                        prop_assert!((a.components()[(k, j)] - b.components()[(k, j)]).abs() < 1e-7, "{solver}: component {k}");
                    }
                }
            }
        }
    }
}
