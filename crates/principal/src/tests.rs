//! Reference values, SPEC's relations as properties, and error cases for the whole fit path.

use faer::{mat, Mat, MatRef};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

const EXACT_SOLVERS: [Solver; 4] = [Solver::Auto, Solver::Covariance, Solver::Gram, Solver::Svd];

fn fit_with(
    x: MatRef<'_, f64>,
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
) -> Result<PcaModel> {
    PcaBuilder::new()
        .components(components)
        .scaling(scaling)
        .ddof(ddof)
        .solver(solver)
        .build()?
        .fit(x)
}

fn iris() -> Mat<f64> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/iris.csv"))
        .unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(4).map(|v| v.parse().unwrap()).collect())
        .collect();
    Mat::from_fn(rows.len(), 4, |i, j| rows[i][j])
}

#[test]
fn houses_reference_codes() {
    let x = mat![[10.0, 10.0], [2.0, 2.0], [7.0, 7.0], [1.0, 1.0], [5.0, 5.0]];
    let expected = [7.0711, -4.2426, 2.8284, -5.6569, 0.0];
    for solver in EXACT_SOLVERS {
        let model = fit_with(x.as_ref(), ComponentCount::All, Scaling::Center, 1, solver).unwrap();
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
        let model = fit_with(x.as_ref(), ComponentCount::All, Scaling::Center, 1, solver).unwrap();
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
fn auto_resolves_by_shape_and_is_recorded() {
    let fit = |x: &Mat<f64>, k| {
        fit_with(
            x.as_ref(),
            ComponentCount::Fixed(k),
            Scaling::Center,
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
        Scaling::Center,
        1,
        Solver::Auto,
    )
    .unwrap();
    assert!(model.solver().is_exact());
}

#[test]
fn variance_fraction_picks_smallest_count_reaching_it() {
    let x = iris();
    let model = fit_with(
        x.as_ref(),
        ComponentCount::VarianceFraction(0.95),
        Scaling::Center,
        1,
        Solver::Svd,
    )
    .unwrap();
    // 4.228 / 4.573 = 0.9246 < 0.95 ≤ (4.228 + 0.243) / 4.573 = 0.9777
    assert_eq!(model.n_components(), 2);
    let full = fit_with(
        x.as_ref(),
        ComponentCount::VarianceFraction(1.0),
        Scaling::Center,
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

#[test]
fn single_sample_with_ddof_one_is_a_clear_error() {
    let x = mat![[1.0, 2.0, 3.0]];
    let err = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(1),
        Scaling::Center,
        1,
        Solver::Auto,
    )
    .unwrap_err();
    assert_eq!(
        err,
        PcaError::TooFewSamples {
            n_samples: 1,
            ddof: 1
        }
    );
    assert!(err.to_string().contains("ddof 0"), "{err}");
    // ddof 0 accepts it: zero variance, one component, ratio 0.
    let model = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(1),
        Scaling::Center,
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
        Scaling::Center,
        1,
        Solver::Auto,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "--components 9 is more than min(n_samples, n_features) = 4"
    );
    let err = PcaBuilder::new()
        .components(ComponentCount::VarianceFraction(1.5))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("1.5") && err.to_string().contains("(0, 1]"));
    assert!(PcaBuilder::new()
        .components(ComponentCount::VarianceFraction(f64::NAN))
        .build()
        .is_err());
    assert_eq!(
        PcaBuilder::new()
            .components(ComponentCount::Fixed(0))
            .build()
            .unwrap_err(),
        PcaError::ZeroComponents
    );
    assert_eq!(
        PcaBuilder::new().ddof(2).build().unwrap_err(),
        PcaError::InvalidDdof(2)
    );
    let empty = Mat::<f64>::zeros(0, 3);
    assert!(matches!(
        fit_with(
            empty.as_ref(),
            ComponentCount::All,
            Scaling::Center,
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
            Scaling::Center,
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
        Scaling::Center,
        1,
        Solver::Svd,
    )
    .unwrap();
    let wrong = Mat::<f64>::zeros(3, 5);
    assert_eq!(
        model.transform(wrong.as_ref()).unwrap_err(),
        PcaError::FeatureMismatch {
            expected: 4,
            found: 5
        }
    );
    assert_eq!(
        model.inverse_transform(wrong.as_ref()).unwrap_err(),
        PcaError::ComponentMismatch {
            expected: 2,
            found: 5
        }
    );
}

/// Many blocks of rows (8,192 for 4 features): codes and reconstruction error as the formulas
/// give them from a whole centred (and scaled) copy, for column-major and row-major input (as
/// readers give it, centred into a row-major block); a non-finite value in a late block is named
/// by its row.
#[test]
fn transform_and_reconstruction_error_by_blocks_match_the_formulas() {
    let x = random_matrix(20_000, 4, None, 1e3, 6);
    let by_rows = x.transpose().to_owned();
    for scaling in [Scaling::Center, Scaling::Standardize] {
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
        Scaling::Center,
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
    assert_eq!(PcaModel::from_parts(model.to_parts()).unwrap(), model);
    let mut broken = model.to_parts();
    broken.explained_variance.pop();
    assert!(matches!(
        PcaModel::from_parts(broken),
        Err(PcaError::InvalidModel(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// Properties over random shapes.

/// An n×d matrix with entries of varied scale per column; `rank` limits the rank (plus noise 0);
/// `offset` is added to every entry.
fn random_matrix(n: usize, d: usize, rank: Option<usize>, offset: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let base = match rank {
        None => Mat::from_fn(n, d, |_, j| rng.random_range(-1.0..1.0) * (1.0 + j as f64)),
        Some(r) => {
            let a = Mat::from_fn(n, r, |_, _| rng.random_range(-1.0..1.0));
            let b = Mat::from_fn(r, d, |_, _| rng.random_range(-1.0..1.0));
            &a * &b
        }
    };
    Mat::from_fn(n, d, |i, j| base[(i, j)] + offset)
}

fn max_abs_diff(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
    let mut m = 0.0f64;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            m = m.max((a[(i, j)] - b[(i, j)]).abs());
        }
    }
    m
}

/// Relations 1–3 of SPEC on the training data, with tolerances of rounding size.
fn check_relations(x: MatRef<'_, f64>, model: &PcaModel) -> std::result::Result<(), TestCaseError> {
    let (n, m) = (x.nrows(), model.n_components());
    let ddof = model.ddof();
    let lam = model.explained_variance();
    let scale = model.total_variance().max(1e-300);
    let size = ((n * x.ncols()) as f64).sqrt();
    // Rounding already present in the input: an offset of 1e6 stores each entry to ±1e6·ε.
    let min_scale = model
        .scale()
        .map_or(1.0, |s| s.iter().cloned().fold(f64::INFINITY, f64::min));
    let rounding = 4.0 * f64::EPSILON * x.norm_max() * size / min_scale;
    let tol = 1e-9 * scale * size + rounding * scale.sqrt();
    let z = model.transform(x).unwrap();
    // 1. Codes have variance λ_m and are uncorrelated (means are zero).
    for a in 0..m {
        for b in 0..m {
            let c: f64 = (0..n).map(|i| z[(i, a)] * z[(i, b)]).sum::<f64>() / (n - ddof) as f64;
            let want = if a == b { lam[a] } else { 0.0 };
            prop_assert!(
                (c - want).abs() <= tol,
                "code covariance ({a},{b}) = {c}, want {want}"
            );
        }
    }
    // 2. Mean squared reconstruction error = ((N − ddof)/N) Σ discarded λ.
    let discarded = (model.total_variance() - lam.iter().sum::<f64>()).max(0.0);
    let err = model.reconstruction_error(x).unwrap();
    let want = (n - ddof) as f64 / n as f64 * discarded;
    prop_assert!(
        (err - want).abs() <= tol,
        "reconstruction error {err}, want {want}"
    );
    // 3. The residual is orthogonal to every component.
    let back = model.inverse_transform(z.as_ref()).unwrap();
    let scale_of = |j: usize| model.scale().map_or(1.0, |s| s[j]);
    let residual = Mat::from_fn(n, x.ncols(), |i, j| {
        (x[(i, j)] - back[(i, j)]) / scale_of(j)
    });
    let dots = &residual * model.components().transpose();
    let norm = residual.norm_l2().max(1e-300);
    prop_assert!(
        dots.norm_max() <= 1e-9 * norm.max(scale.sqrt()) + rounding,
        "residual·components = {}",
        dots.norm_max()
    );
    // Orthonormal rows.
    let gram = model.components() * model.components().transpose();
    prop_assert!(
        max_abs_diff(gram.as_ref(), Mat::<f64>::identity(m, m).as_ref()) < 1e-10,
        "components not orthonormal"
    );
    Ok(())
}

/// Projector onto the span of the components.
fn projector(model: &PcaModel) -> Mat<f64> {
    model.components().transpose() * model.components()
}

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
                        Scaling::Center
                    },
                    ddof,
                    m: 1 + (m - 1) % max,
                    seed,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

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
            let a = fit_with(x.as_ref(), ComponentCount::Fixed(m), Scaling::Center, 1, solver).unwrap();
            let b = fit_with(reversed.as_ref(), ComponentCount::Fixed(m), Scaling::Center, 1, solver).unwrap();
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

// ---------------------------------------------------------------------------------------------
// Iterative solvers and sources.

/// Rank-`r` signal with decaying strengths plus small noise: a spectrum with clear gaps.
fn signal_plus_noise(n: usize, d: usize, r: usize, noise: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a = Mat::from_fn(n, r, |_, j| {
        rng.random_range(-1.0..1.0) * 2f64.powi(-(j as i32)) * 10.0
    });
    let b = Mat::from_fn(r, d, |_, _| rng.random_range(-1.0..1.0));
    let s = &a * &b;
    Mat::from_fn(n, d, |i, j| {
        s[(i, j)] + noise * rng.random_range(-1.0..1.0) + 3.0
    })
}

fn iterative(solver: Solver, k: usize, options: IterativeOptions) -> PcaParams {
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .solver(solver)
        .iterative(options)
        .build()
        .unwrap()
}

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
            Scaling::Center,
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
        Scaling::Center,
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

/// Every solver, `Auto` first.
const EVERY_SOLVER: [Solver; 7] = [
    Solver::Auto,
    Solver::Covariance,
    Solver::Gram,
    Solver::Svd,
    Solver::Randomized,
    Solver::Power,
    Solver::Em,
];

/// A source that counts its passes and hands out `chunk` rows at a time, like a file.
struct CountingSource {
    data: Mat<f32>,
    chunk: usize,
    passes: usize,
}

impl ChunkSource for CountingSource {
    fn n_features(&self) -> usize {
        self.data.ncols()
    }
    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
        self.passes += 1;
        InMemory::new(self.data.as_ref(), self.chunk).pass(visit)
    }
}

#[test]
fn fitting_from_a_chunked_source_equals_the_in_memory_fit() {
    let x64 = signal_plus_noise(257, 12, 5, 0.1, 3);
    let x = Mat::from_fn(257, 12, |i, j| x64[(i, j)] as f32);
    for solver in EVERY_SOLVER {
        for scaling in [Scaling::Center, Scaling::Standardize] {
            let params = PcaBuilder::new()
                .components(ComponentCount::Fixed(4))
                .scaling(scaling)
                .solver(solver)
                .iterative(IterativeOptions {
                    seed: 7,
                    ..Default::default()
                })
                .build()
                .unwrap();
            let memory = params.fit(x.as_ref()).unwrap();
            let mut source = CountingSource {
                data: x.clone(),
                chunk: 10,
                passes: 0,
            };
            let streamed = params.fit_source(&mut source).unwrap();
            assert_eq!(streamed.solver(), memory.solver());
            let tol = 1e-10 * memory.total_variance();
            for (a, b) in streamed
                .explained_variance()
                .iter()
                .zip(memory.explained_variance())
            {
                assert!((a - b).abs() <= tol, "{solver} {scaling:?}: {a} vs {b}");
            }
            let diff = max_abs_diff(streamed.components(), memory.components());
            assert!(
                diff < 1e-8,
                "{solver} {scaling:?}: components differ by {diff}"
            );
            if solver == Solver::Covariance {
                assert_eq!(source.passes, 1, "covariance is one pass");
            }
        }
    }
}

/// `planned_passes` is what `fit_source` does: for every solver and setting whose count is
/// known beforehand, tall and wide (auto's covariance first or not), the passes made.
#[test]
fn planned_passes_are_the_passes_made() {
    let mut planned_some = 0;
    for (n, d) in [(257, 12), (40, 1500), (60, 4200)] {
        let x64 = signal_plus_noise(n, d, 5, 0.1, 3);
        let x = Mat::from_fn(n, d, |i, j| x64[(i, j)] as f32);
        for solver in EVERY_SOLVER {
            if solver == Solver::Covariance && d > 1000 {
                continue; // a D² eigendecomposition: slow in a debug build
            }
            let settings = [
                (
                    ComponentCount::Fixed(4),
                    None,
                    None,
                    RandomizedMethod::BlockKrylov,
                ),
                (
                    ComponentCount::Fixed(4),
                    Some(2),
                    None,
                    RandomizedMethod::Subspace,
                ),
                (
                    ComponentCount::Fixed(4),
                    None,
                    None,
                    RandomizedMethod::Subspace,
                ),
                (
                    ComponentCount::Fixed(4),
                    None,
                    Some(1e-6),
                    RandomizedMethod::BlockKrylov,
                ),
                (
                    ComponentCount::All,
                    None,
                    None,
                    RandomizedMethod::BlockKrylov,
                ),
            ];
            for (components, power_iterations, tolerance, randomized_method) in settings {
                let params = PcaBuilder::new()
                    .components(components)
                    .solver(solver)
                    .iterative(IterativeOptions {
                        seed: 7,
                        power_iterations,
                        tolerance,
                        randomized_method,
                        ..Default::default()
                    })
                    .build()
                    .unwrap();
                let mut source = CountingSource {
                    data: x.clone(),
                    chunk: 50,
                    passes: 0,
                };
                let model = params.fit_source(&mut source).unwrap();
                let label = format!("{n}×{d} {solver} → {} {components:?} q {power_iterations:?} tol {tolerance:?} {randomized_method:?}", model.solver());
                match params.planned_passes(n, d) {
                    Some(p) => {
                        planned_some += 1;
                        assert_eq!(source.passes, p, "{label}");
                    }
                    None => assert!(
                        tolerance.is_some() || matches!(model.solver(), Solver::Power | Solver::Em),
                        "{label}: unknown"
                    ),
                }
            }
        }
    }
    assert!(planned_some >= 20, "{planned_some}");
}

#[test]
fn source_errors_pass_through_unchanged() {
    struct Broken;
    impl ChunkSource for Broken {
        fn n_features(&self) -> usize {
            3
        }
        fn pass(&mut self, _: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
            Err(source_error("shard.csv: line 7: unreadable"))
        }
    }
    let err = PcaBuilder::new()
        .build()
        .unwrap()
        .fit_source(&mut Broken)
        .unwrap_err();
    assert_eq!(err.to_string(), "shard.csv: line 7: unreadable");
}

#[test]
fn iterative_solvers_stay_exact_under_an_offset_of_1e6() {
    // The mean is 10⁶ spreads from zero: chunks must be centred explicitly.
    let x = signal_plus_noise(300, 40, 5, 1e-2, 21);
    let shifted = Mat::from_fn(300, 40, |i, j| x[(i, j)] + 1e6);
    let exact = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(4),
        Scaling::Center,
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
    let mean = vec![1e6; 40];
    assert_eq!(
        solver::Centring::choose(&mean, None, 1.0),
        solver::Centring::Explicit
    );
    assert_eq!(
        solver::Centring::choose(&[3.0; 40], None, 1.0),
        solver::Centring::Implicit
    );
}

#[test]
fn block_krylov_restarts_keep_converging() {
    // D = 30 and 14 columns per block: the basis is capped at 30 columns, so a tight tolerance
    // forces thick restarts.
    let x = signal_plus_noise(400, 30, 12, 0.5, 17);
    let exact = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(4),
        Scaling::Center,
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
        Scaling::Center,
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
