//! Choosing the number of components: on data of known rank r plus isotropic noise, mle,
//! gavish-donoho, cv and parallel analysis recover r over a sweep of shapes (N < D included),
//! each drawn with six seeds;
//! every criterion stays within 1 ≤ M ≤ min(N, D) on random shapes (rank-deficient, offset
//! 1e6); the work beyond one fit is what each criterion says; bad input is a clear error.

use crate::common;

use common::{iris, random_matrix};
use principal::faer::Mat;
use principal::{
    ChoiceOutcome, ChooseOptions, ComponentCount, Criterion, ExtraWork, InMemory, NoiseLevel,
    PcaBuilder, PcaError, Scaling, Solver, VARIANCE_FRACTIONS,
};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// N×D data of rank r plus isotropic Gaussian noise of standard deviation `sigma`, offset by
/// 5 per feature: the signal's singular values run from 8 down to 5 times √max(N, D)·σ, well
/// above Gavish–Donoho's threshold (at most 2.31·√max(N, D)·σ) and the noise's largest singular
/// value (about (√N + √D)·σ).
fn rank_plus_noise(n: usize, d: usize, r: usize, sigma: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut normal = || -> f64 { StandardNormal.sample(&mut rng) };
    let scores = Mat::from_fn(n, r, |_, _| normal());
    let loadings = Mat::from_fn(d, r, |_, _| normal());
    // Orthonormal scores and loadings, so the signal's singular values are exactly as set.
    let u = scores.qr().compute_thin_Q();
    let v = loadings.qr().compute_thin_Q();
    let long = (n.max(d) as f64).sqrt() * sigma;
    let strength =
        |k: usize| long * (8.0 - 3.0 * k as f64 / r.max(2).saturating_sub(1).max(1) as f64);
    let signal = Mat::from_fn(n, r, |i, k| u[(i, k)] * strength(k)) * v.transpose();
    Mat::from_fn(n, d, |i, j| signal[(i, j)] + sigma * normal() + 5.0)
}

fn fit_count(x: &Mat<f64>, count: ComponentCount) -> principal::PcaModel {
    PcaBuilder::new()
        .components(count)
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap()
}

/// The choice table of `x` under the default parameters.
fn choose(x: &Mat<f64>, options: &ChooseOptions) -> principal::ChoiceTable {
    PcaBuilder::new()
        .build()
        .unwrap()
        .choose(x.as_ref(), options)
        .unwrap()
}

/// (N, D, r): tall, square-ish and wide (N < D), one to six components.
const SHAPES: [(usize, usize, usize); 7] = [
    (400, 20, 3),
    (200, 10, 1),
    (300, 60, 6),
    (120, 100, 4),
    (60, 150, 3),
    (40, 400, 2),
    (150, 150, 5),
];

/// The data's seeds are `SEED_SET + case`, one set per sweep of [`SHAPES`]: six independent
/// draws of every shape.
const SEED_SETS: [u64; 6] = [100, 200, 300, 400, 500, 600];

#[test]
fn mle_gavish_donoho_cv_and_parallel_analysis_recover_a_known_rank() {
    let mut failures = Vec::new();
    for (case, &(n, d, r)) in SEED_SETS.iter().flat_map(|&set| {
        SHAPES
            .iter()
            .enumerate()
            .map(move |(k, s)| (set + k as u64, s))
    }) {
        let sigma = 0.5;
        let x = rank_plus_noise(n, d, r, sigma, case);
        let options = ChooseOptions {
            permutations: 40,
            ..ChooseOptions::default()
        };
        let table = choose(&x, &options);
        let chosen = |name: &str| {
            table
                .criteria
                .iter()
                .find(|c| c.choice.criterion.name() == name)
                .unwrap()
                .choice
                .n_components
        };
        let known = fit_count(
            &x,
            ComponentCount::GavishDonoho {
                noise_sigma: Some(sigma),
            },
        );
        let found = [
            ("mle", chosen("mle")),
            ("gavish-donoho", chosen("gavish-donoho")),
            ("gavish-donoho, σ known", known.n_components()),
            ("cv", chosen("cv")),
            ("parallel", chosen("parallel")),
        ];
        for (name, m) in found {
            if m != r {
                failures.push(format!("{n}×{d}, rank {r}, seed {case}: {name} chose {m}"));
            }
        }
        // The same answers from a fit with that count as from the table.
        for (count, name) in [
            (ComponentCount::Mle, "mle"),
            (
                ComponentCount::GavishDonoho { noise_sigma: None },
                "gavish-donoho",
            ),
            (ComponentCount::CrossValidated { folds: 5, seed: 0 }, "cv"),
        ] {
            let model = fit_count(&x, count);
            assert_eq!(
                model.n_components(),
                chosen(name),
                "{n}×{d}, seed {case}: fit by {name}"
            );
            let choice = model.component_choice().expect("a rule chose");
            assert_eq!(choice.criterion.name(), name);
            assert_eq!(choice.n_components, model.n_components());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every criterion's answer is between 1 and min(N, D) (and K) on random shapes: full rank,
/// rank-deficient, offset by 1e6, standardized; and mle's answer does not depend on the units.
fn bounds_hold(
    n: usize,
    d: usize,
    rank: Option<usize>,
    offset: f64,
    standardize: bool,
    max: Option<usize>,
    seed: u64,
) -> Result<(), TestCaseError> {
    let x = random_matrix(n, d, rank, offset, seed);
    let scaling = if standardize {
        Scaling::Standardize
    } else {
        Scaling::Centre
    };
    let params = PcaBuilder::new().scaling(scaling).build().unwrap();
    let options = ChooseOptions {
        max_components: max,
        permutations: 5,
        folds: 2,
        seed,
        ..ChooseOptions::default()
    };
    let table = params
        .choose(x.as_ref(), &options)
        .map_err(|e| TestCaseError::fail(format!("{n}×{d}: {e}")))?;
    let k = max.unwrap_or(n.min(d)).min(n.min(d));
    prop_assert_eq!(table.max_components, k);
    // Two folds of two or three rows leave too few training rows: cv alone is left out, and
    // says why.
    let cv_left_out = table.unavailable.len();
    prop_assert!(
        cv_left_out == 0 || n < 6,
        "{}×{}: {:?}",
        n,
        d,
        table.unavailable
    );
    for u in &table.unavailable {
        prop_assert_eq!(u.criterion.name(), "cv");
        prop_assert!(u.reason.contains("training sample"), "{}", u.reason);
    }
    prop_assert_eq!(
        table.criteria.len(),
        VARIANCE_FRACTIONS.len() + 6 - cv_left_out
    );
    for c in &table.criteria {
        let m = c.choice.n_components;
        prop_assert!(
            (1..=k).contains(&m),
            "{}: {} of {}×{} (K {})",
            c.choice.criterion.name(),
            m,
            n,
            d,
            k
        );
        prop_assert_eq!(c.curve.statistic.len(), k);
        prop_assert_eq!(c.curve.threshold.len(), k);
    }
    let mle = |scale: f64| {
        let scaled = Mat::from_fn(n, d, |i, j| (x[(i, j)] - offset) * scale);
        PcaBuilder::new()
            .components(ComponentCount::Mle)
            .scaling(scaling)
            .build()
            .unwrap()
            .fit(scaled.as_ref())
            .map(|m| m.n_components())
            .map_err(|e| TestCaseError::fail(format!("{n}×{d}, mle at scale {scale}: {e}")))
    };
    prop_assert_eq!(mle(1.0)?, mle(1e-9)?, "mle at scale 1e-9");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_criterion_keeps_between_one_and_the_most_there_can_be(
        n in 4usize..40,
        d in 2usize..30,
        deficient in any::<bool>(),
        offset in prop_oneof![Just(0.0), Just(1e6)],
        standardize in any::<bool>(),
        max in prop_oneof![Just(None), (1usize..8).prop_map(Some)],
        seed in 0u64..1000,
    ) {
        let rank = deficient.then_some((n.min(d) / 2).max(1));
        bounds_hold(n, d, rank, offset, standardize, max, seed)?;
    }
}

#[test]
fn the_one_by_d_and_two_row_shapes_are_handled() {
    // Two rows span one dimension: every likelihood rule keeps one component.
    let x = Mat::from_fn(2, 5, |i, j| (i * 3 + j * j) as f64);
    for count in [
        ComponentCount::Mle,
        ComponentCount::GavishDonoho { noise_sigma: None },
    ] {
        let model = fit_count(&x, count);
        assert_eq!(model.n_components(), 1);
    }
    let mle = fit_count(&x, ComponentCount::Mle);
    assert_eq!(
        mle.component_choice().unwrap().outcome,
        ChoiceOutcome::SingleDimension
    );
}

/// The table costs one fit, the permutations and the folds, as each criterion states: the
/// work counted where it is done (a spectrum computed, a fold fitted) equals the sum of what
/// the criteria state.
#[test]
fn the_work_beyond_one_fit_is_what_each_criterion_states() {
    let x = rank_plus_noise(80, 12, 2, 0.3, 7);
    let options = ChooseOptions {
        permutations: 13,
        folds: 4,
        ..ChooseOptions::default()
    };
    let table = choose(&x, &options);
    assert_eq!(table.work.fits, 1);
    assert_eq!(table.work.permuted_spectra, 13);
    assert_eq!(table.work.fold_fits, 4);
    let names: Vec<String> = table
        .criteria
        .iter()
        .map(|c| c.choice.criterion.name())
        .collect();
    assert_eq!(
        names,
        [
            "variance 0.8",
            "variance 0.9",
            "variance 0.95",
            "variance 0.99",
            "kaiser",
            "broken-stick",
            "parallel",
            "mle",
            "gavish-donoho",
            "cv"
        ]
    );
    let (mut spectra, mut fold_fits) = (0, 0);
    for c in &table.criteria {
        match c.choice.criterion.extra_work() {
            ExtraWork::PermutedSpectra(count) => spectra += count,
            ExtraWork::FoldFits(count) => fold_fits += count,
            ExtraWork::None => {}
        }
    }
    assert_eq!((spectra, fold_fits), (13, 4), "stated");
    assert_eq!(
        (table.work.permuted_spectra, table.work.fold_fits),
        (spectra, fold_fits),
        "counted"
    );
    // Data of exact rank: mle answers with the rank; cross-validation finds it too (the
    // held-out rows lie in the training rows' span), fitting every fold.
    let exact = random_matrix(50, 8, Some(3), 0.0, 3);
    let table = PcaBuilder::new()
        .build()
        .unwrap()
        .choose(exact.as_ref(), &options)
        .unwrap();
    assert_eq!(table.work.fold_fits, 4);
    let mle = table.criteria[7].choice;
    assert_eq!(
        (mle.n_components, mle.outcome),
        (3, ChoiceOutcome::ExactRank { rank: 3 })
    );
    let cv = table.criteria[9].choice;
    assert_eq!((cv.n_components, cv.outcome), (3, ChoiceOutcome::Chosen));
}

#[test]
fn the_same_seed_gives_the_same_table_and_streaming_gives_the_same_choice() {
    let x = rank_plus_noise(90, 15, 3, 0.4, 11);
    let params = PcaBuilder::new().build().unwrap();
    let options = ChooseOptions {
        permutations: 10,
        seed: 5,
        ..ChooseOptions::default()
    };
    let mut a = params.choose(x.as_ref(), &options).unwrap();
    let mut b = params.choose(x.as_ref(), &options).unwrap();
    a.work = Default::default();
    b.work = Default::default();
    assert_eq!(a, b);
    // cv over a source read in chunks of 7 rows (the streamed path) equals cv in memory.
    let count = ComponentCount::CrossValidated { folds: 3, seed: 2 };
    let params = PcaBuilder::new()
        .components(count)
        .solver(Solver::Covariance)
        .build()
        .unwrap();
    let in_memory = params.fit(x.as_ref()).unwrap();
    let streamed = params
        .fit_source(&mut InMemory::new(x.as_ref(), 7))
        .unwrap();
    let (c1, c2) = (
        in_memory.component_choice().unwrap(),
        streamed.component_choice().unwrap(),
    );
    assert_eq!(c1.n_components, c2.n_components);
    assert!(
        (c1.value - c2.value).abs() <= 1e-10 * c1.value.abs(),
        "{} vs {}",
        c1.value,
        c2.value
    );
}

#[test]
fn a_given_count_records_no_choice_and_a_fraction_records_its_own() {
    let x = iris();
    let fixed = fit_count(&x, ComponentCount::Fixed(2));
    assert!(fixed.component_choice().is_none());
    let fraction = fit_count(&x, ComponentCount::VarianceFraction(0.95));
    let choice = fraction.component_choice().unwrap();
    assert_eq!(choice.criterion, Criterion::VarianceFraction(0.95));
    assert_eq!(choice.n_components, 2);
    assert!(
        (choice.value - 0.9776852063187949).abs() < 1e-12,
        "{}",
        choice.value
    );
    let gd = fit_count(
        &x,
        ComponentCount::GavishDonoho {
            noise_sigma: Some(0.1),
        },
    );
    let Criterion::GavishDonoho(NoiseLevel::Known(sigma)) =
        gd.component_choice().unwrap().criterion
    else {
        panic!("{:?}", gd.component_choice())
    };
    assert_eq!(sigma, 0.1);
}

#[test]
fn mle_on_a_single_row_is_a_clear_error() {
    let x = Mat::from_fn(1, 4, |_, j| j as f64);
    for ddof in [0, 1] {
        let err = PcaBuilder::new()
            .components(ComponentCount::Mle)
            .ddof(ddof)
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "mle cannot choose the number of components: it needs at least 2 samples; the data has 1"
        );
    }
}

#[test]
fn choosing_with_one_feature_is_a_clear_error() {
    let x = Mat::from_fn(10, 1, |i, _| i as f64);
    let err = PcaBuilder::new()
        .build()
        .unwrap()
        .choose(x.as_ref(), &ChooseOptions::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "choose cannot choose the number of components: it needs at least 2 features; the data \
         has 1 (one feature is one component)"
    );
}

#[test]
fn bad_settings_are_errors_naming_the_setting() {
    let sigma = PcaBuilder::new()
        .components(ComponentCount::GavishDonoho {
            noise_sigma: Some(0.0),
        })
        .build()
        .unwrap_err();
    assert_eq!(
        sigma.to_string(),
        "noise sigma 0 is not allowed: the noise's standard deviation must be a positive number"
    );
    let folds = PcaBuilder::new()
        .components(ComponentCount::CrossValidated { folds: 1, seed: 0 })
        .build()
        .unwrap_err();
    assert!(matches!(folds, PcaError::TooFewFolds(1)), "{folds}");
    for (options, want) in [
        (
            ChooseOptions {
                permutations: 0,
                ..Default::default()
            },
            "permutations 0",
        ),
        (
            ChooseOptions {
                percentile: 100.0,
                ..Default::default()
            },
            "percentile 100",
        ),
        (
            ChooseOptions {
                max_components: Some(0),
                ..Default::default()
            },
            "max components 0",
        ),
    ] {
        let err = options.check().unwrap_err();
        assert!(err.to_string().starts_with(want), "{err}");
    }
    // More folds than rows: cv alone is an error; in the table, the other criteria answer
    // and cv says why it has no answer.
    let x = random_matrix(4, 3, None, 0.0, 1);
    let err = PcaBuilder::new()
        .components(ComponentCount::CrossValidated { folds: 5, seed: 0 })
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap_err();
    assert!(err.to_string().starts_with("cv cannot choose"), "{err}");
    let table = choose(&x, &ChooseOptions::default());
    assert_eq!(table.criteria.len(), VARIANCE_FRACTIONS.len() + 5);
    assert!(
        table
            .criteria
            .iter()
            .all(|c| c.choice.criterion.name() != "cv")
    );
    assert_eq!(
        table.unavailable,
        [principal::UnavailableCriterion {
            criterion: Criterion::CrossValidation { folds: 5, seed: 0 },
            reason: "5 folds of 4 sample(s) leave a fold with no held-out sample; use at most 4 \
                     folds"
                .into(),
        }]
    );
    assert_eq!(table.work.fold_fits, 0);
    // An iterative solver cannot see the whole spectrum.
    for count in [
        ComponentCount::Mle,
        ComponentCount::GavishDonoho { noise_sigma: None },
        ComponentCount::CrossValidated { folds: 2, seed: 0 },
    ] {
        let err = PcaBuilder::new()
            .components(count)
            .solver(Solver::Randomized)
            .build()
            .unwrap()
            .fit(iris().as_ref())
            .unwrap_err();
        assert!(
            matches!(&err, PcaError::SolverUnsuitable { .. })
                && err.to_string().contains("whole spectrum"),
            "{err}"
        );
    }
}

/// Constant features carry neither signal nor noise: cross-validation and Gavish–Donoho leave
/// them out and still find the rank of the rest; mle keeps them, as scikit-learn does, and
/// answers with the exact rank they make.
#[test]
fn constant_features_are_left_out_by_cv_and_gavish_donoho() {
    let x = rank_plus_noise(200, 12, 2, 0.5, 3);
    let with_constants = Mat::from_fn(200, 15, |i, j| if j < 12 { x[(i, j)] } else { 7.0 });
    for count in [
        ComponentCount::CrossValidated { folds: 5, seed: 0 },
        ComponentCount::GavishDonoho { noise_sigma: None },
        ComponentCount::GavishDonoho {
            noise_sigma: Some(0.5),
        },
    ] {
        let plain = fit_count(&x, count);
        let model = fit_count(&with_constants, count);
        assert_eq!(model.n_components(), 2, "{count:?}");
        let (a, b) = (
            plain.component_choice().unwrap(),
            model.component_choice().unwrap(),
        );
        assert!(
            (a.value - b.value).abs() <= 1e-9 * a.value.abs(),
            "{count:?}: {a} vs {b}"
        );
    }
    let mle = fit_count(&with_constants, ComponentCount::Mle);
    assert_eq!(
        mle.component_choice().unwrap().outcome,
        ChoiceOutcome::ExactRank { rank: 12 }
    );
}
