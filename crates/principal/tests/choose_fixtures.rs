//! Choosing the number of components against references computed by
//! `fixtures/generate_choose.py` (numpy, scipy, scikit-learn; the JSON files in
//! `fixtures/choose/` are committed, so no Python is needed here):
//!
//! - `mle_*`: `--components mle` equals scikit-learn's `PCA(n_components='mle')` with every
//!   exact solver, and its log evidence equals scikit-learn's for every rank (relative 1e-9;
//!   for N ≤ D, where this one works in the N − 1 dimensions the centred data spans, the
//!   fixture's `_assess_dimension` of those eigenvalues with D samples);
//! - `mle_failure_*`: data where scikit-learn fails (the fixture records how: an exception, or
//!   0 components), and the answer given instead;
//! - `gavish_donoho_*`: the threshold τ and the noise level equal the reference computed with
//!   numpy's SVD and scipy's Marchenko–Pastur median (relative 1e-9), and so does the count.
//!
//! The held-out likelihood (`heldout_*`) and the Marchenko–Pastur medians are checked by the
//! unit tests of `choose::held_out` and `choose::marchenko_pastur`, which read the same files.

use std::collections::BTreeSet;

use principal::faer::Mat;
use principal::{
    ChoiceOutcome, ChooseOptions, ComponentCount, Criterion, NoiseLevel, PcaBuilder, Scaling,
    Solver,
};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{fixture_tests, fixtures_dir, json_stems};

const SOLVERS: [Solver; 4] = [Solver::Auto, Solver::Covariance, Solver::Gram, Solver::Svd];

fn load(name: &str) -> Value {
    let path = fixtures_dir().join("choose").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn matrix(v: &Value) -> Mat<f64> {
    let rows: Vec<Vec<f64>> = v
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    Mat::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
}

fn scaling(case: &Value) -> Scaling {
    if case["standardize"].as_bool().unwrap_or(false) {
        Scaling::Standardize
    } else {
        Scaling::Centre
    }
}

/// The case's data fitted with `count` by `solver`, standardized if the case says so.
fn fit(case: &Value, count: ComponentCount, solver: Solver) -> principal::PcaModel {
    PcaBuilder::new()
        .components(count)
        .scaling(scaling(case))
        .solver(solver)
        .build()
        .unwrap()
        .fit(matrix(&case["x"]).as_ref())
        .unwrap()
}

fn mle_matches_sklearn(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"]);
    let want = case["sklearn_n_components"].as_u64().unwrap() as usize;
    for solver in SOLVERS {
        let model = fit(&case, ComponentCount::Mle, solver);
        assert_eq!(model.n_components(), want, "{name}, {solver}");
        assert_eq!(model.component_choice().unwrap().criterion, Criterion::Mle);
    }
    // The whole curve, from the table.
    let options = ChooseOptions {
        permutations: 1,
        folds: 2,
        ..ChooseOptions::default()
    };
    let table = PcaBuilder::new()
        .scaling(scaling(&case))
        .build()
        .unwrap()
        .choose(x.as_ref(), &options)
        .unwrap();
    let mle = table
        .criteria
        .iter()
        .find(|c| c.choice.criterion == Criterion::Mle)
        .unwrap();
    assert_eq!(mle.choice.n_components, want, "{name}: table");
    // With N ≤ D the evidence is evaluated in the N − 1 dimensions the centred data spans,
    // with D samples (the transposed problem): the reference is scikit-learn's
    // `_assess_dimension` of those eigenvalues. scikit-learn's own curve, in all D dimensions
    // with a floored zero, is another function: not compared.
    let key = if x.nrows() <= x.ncols() {
        "sklearn_log_evidence_in_span"
    } else {
        "sklearn_log_evidence"
    };
    let reference = case[key]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no {key}"));
    // At an exact rank the evidence is unbounded here (None) where scikit-learn's floor makes
    // it finite: that one rank only.
    let exact_rank = match mle.choice.outcome {
        ChoiceOutcome::ExactRank { rank } => Some(rank),
        _ => None,
    };
    let mut compared = 0;
    for (i, r) in reference.iter().enumerate() {
        let k = i + 1;
        let ours = mle.curve.statistic[i];
        match (r.as_f64(), ours) {
            (Some(r), Some(o)) => {
                assert!(
                    (o - r).abs() <= 1e-9 * r.abs().max(1.0),
                    "{name}: log evidence at {k}: {o} vs scikit-learn's {r}"
                );
                compared += 1;
            }
            (Some(_), None) => assert_eq!(exact_rank, Some(k), "{name}: no evidence at {k}"),
            // Below its 1e-15 floor scikit-learn has -inf; only past the rank.
            (None, o) => assert!(o.is_none() && k > want, "{name}: evidence at {k} {o:?}"),
        }
    }
    let defined = reference.iter().filter(|r| r.is_f64()).count();
    assert_eq!(
        compared,
        defined - usize::from(exact_rank.is_some()),
        "{name}: {compared} of {defined} compared"
    );
    // Past the reference's ranks (the last eigenvalue, or past the span) there is no evidence.
    for (i, o) in mle.curve.statistic.iter().enumerate().skip(reference.len()) {
        assert_eq!(*o, None, "{name}: evidence at {}", i + 1);
    }
}

fn mle_is_sane_where_sklearn_fails(name: &str) {
    let case = load(name);
    // The fixture shows how scikit-learn failed on this data.
    let sklearn = &case["sklearn"];
    let failed = sklearn.get("error").is_some() || sklearn["n_components"].as_u64() == Some(0);
    assert!(failed, "{name}: scikit-learn did not fail: {sklearn}");
    let want = case["expected_n_components"].as_u64().unwrap() as usize;
    for solver in SOLVERS {
        let model = fit(&case, ComponentCount::Mle, solver);
        assert_eq!(
            model.n_components(),
            want,
            "{name}, {solver}: {}",
            case["note"]
        );
    }
}

fn gavish_donoho_matches_the_reference(name: &str) {
    let case = load(name);
    let given = case["noise_sigma"].as_f64();
    let tau = case["tau"].as_f64().unwrap();
    let sigma = case["sigma"].as_f64().unwrap();
    let want = case["n_components"].as_u64().unwrap() as usize;
    for solver in SOLVERS {
        let model = fit(
            &case,
            ComponentCount::GavishDonoho { noise_sigma: given },
            solver,
        );
        let choice = model.component_choice().unwrap();
        assert_eq!(model.n_components(), want, "{name}, {solver}");
        assert!(
            (choice.value - tau).abs() <= 1e-9 * tau,
            "{name}: τ {} vs {tau}",
            choice.value
        );
        let noise = match choice.criterion {
            Criterion::GavishDonoho(noise) => noise,
            other => panic!("{other:?}"),
        };
        match (given, noise) {
            (Some(_), NoiseLevel::Known(s)) => assert_eq!(s, sigma),
            (None, NoiseLevel::Estimated(s)) => {
                assert!(
                    (s - sigma).abs() <= 1e-9 * sigma,
                    "{name}: σ {s} vs {sigma}"
                )
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

fixture_tests!(
    mle_matches_sklearn: mle_iris, mle_wine, mle_wine_standardized,
        mle_breast_cancer_standardized, mle_digits_200, mle_tall_rank3, mle_square_rank2,
        mle_rank2_exact;
    mle_is_sane_where_sklearn_fails: mle_failure_wide_rank3, mle_failure_small_scale,
        mle_failure_equal_eigenvalues;
    gavish_donoho_matches_the_reference: gavish_donoho_known_noise,
        gavish_donoho_estimated_noise, gavish_donoho_wide, gavish_donoho_wine_standardized;
);

/// Checked by the unit tests that read them (see the top of this file).
const CHECKED_IN_UNIT_TESTS: &[&str] = &["marchenko_pastur", "heldout_tall", "heldout_wide"];

/// Every file in `fixtures/choose/` has a test, and every one was written by
/// `fixtures/generate_choose.py`, which exists and which `fixtures/generate.sh` runs: a
/// fixture without its script cannot pass.
#[test]
fn every_fixture_has_a_test_and_its_script() {
    let dir = fixtures_dir().join("choose");
    let found = json_stems(&dir);
    let listed: BTreeSet<String> = CASES
        .iter()
        .chain(CHECKED_IN_UNIT_TESTS)
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, listed, "fixture files and tests differ");
    let script = "fixtures/generate_choose.py";
    for name in &found {
        assert_eq!(load(name)["generator"], script, "{name}: written by what?");
    }
    let root = fixtures_dir();
    assert!(
        root.join("generate_choose.py").is_file(),
        "{script} is missing"
    );
    let driver = std::fs::read_to_string(root.join("generate.sh")).unwrap();
    assert!(
        driver.contains("generate_choose.py"),
        "fixtures/generate.sh does not run {script}"
    );
}
