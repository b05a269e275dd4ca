//! The library against references computed independently of its design by
//! `fixtures/generate_independent.py` (numpy, scipy, scikit-learn; the JSON files in
//! `fixtures/independent/` are committed, so no Python is needed here):
//!
//! - `em_*`: probabilistic PCA with missing values. The reference is a plain dense EM written
//!   from Ilin & Raiko (2010), converged to 1e-14 from three starts, whose fixed point is
//!   checked to be a stationary point of the observed-data likelihood (scipy's dense normal);
//!   the library's fit (`MissingValues::Em`, ddof 0 so that its variances are the maximum
//!   likelihood ones) must give the same μ, C = W Wᵀ + σ² I, σ², mean log-likelihood per row
//!   and conditional means of the missing entries.
//! - `parallel_*`: the permutation percentile of parallel analysis, computed with numpy from
//!   40,000 permutations; the library's from 2,000 must be within five standard deviations of
//!   its Monte-Carlo spread (measured in the fixture from 40 independent estimates of 2,000), and
//!   its count must equal the reference's where the margin is large.
//! - `mle_wide_*`: Minka's evidence for N ≤ D, this project's choice (the evidence of the
//!   transposed problem: D samples in the N − 1 dimensions the rows span), equals scikit-learn's
//!   `_assess_dimension` evaluated on that problem, and recovers the planted rank.

use std::collections::BTreeSet;

use principal::faer::Mat;
use principal::{
    ChooseOptions, ComponentCount, Criterion, IterativeOptions, MissingValues, PcaBuilder,
    PcaModel, Scaling,
};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{
    fixture_tests, fixtures_dir, json_stems, load_case, matrix_with_holes as matrix, vector,
};

const DIR: &str = "independent";
const SCRIPT: &str = "fixtures/generate_independent.py";

fn load(name: &str) -> Value {
    load_case(DIR, name)
}

/// The library's maximum-likelihood fit with missing values: EM to a tolerance of 1e-12,
/// ddof 0 (the stored variances are then EM's own, divisor N).
fn fit_em(x: &Mat<f64>, k: usize) -> PcaModel {
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .ddof(0)
        .missing(MissingValues::Em)
        .iterative(IterativeOptions {
            tolerance: Some(1e-12),
            max_iterations: 100_000,
            ..Default::default()
        })
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap()
}

/// The largest `|got − want|` over `scale`; past `tol`, a failure is recorded in `failures`
/// (every check of a case runs, so that one broken piece shows all it breaks).
fn within(
    failures: &mut Vec<String>,
    got: &[f64],
    want: &[f64],
    scale: f64,
    tol: f64,
    what: &str,
) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs() / scale)
        .fold(0.0, f64::max);
    if worst > tol || worst.is_nan() {
        failures.push(format!(
            "{what}: off by {worst:e} (relative to {scale:e}), more than {tol:e}"
        ));
    }
    worst
}

/// Panics listing every failure, if any.
fn assert_none(failures: Vec<String>) {
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The tolerance on μ, C, σ² and the imputed values, relative to the largest entry of C (its
/// square root for μ and the imputed values): the library stops at an estimated relative
/// distance of 1e-12 from its fixed point and the reference at a step of 1e-14. The measured
/// differences are 5e-12 or less (printed by the test); 1e-9 leaves room for other platforms'
/// rounding.
const EM_TOL: f64 = 1e-9;

fn em_matches_the_independent_em(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let k = case["n_components"].as_u64().unwrap() as usize;
    let model = fit_em(&x, k);
    let report = model.missing_values().expect("a fit with missing values");
    let mut failures = Vec::new();
    if !report.converged {
        failures.push(format!("{name}: not converged: {report:?}"));
    }
    let c_want = matrix(&case["covariance"], "covariance");
    let d = c_want.nrows();
    let flat = |m: &Mat<f64>| -> Vec<f64> {
        (0..m.nrows())
            .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
            .collect()
    };
    let c_scale = flat(&c_want).iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let c_off = within(
        &mut failures,
        &flat(&model.get_covariance()),
        &flat(&c_want),
        c_scale,
        EM_TOL,
        &format!("{name}: C = W Wᵀ + σ² I"),
    );
    let mean_off = within(
        &mut failures,
        model.mean(),
        &vector(&case["mean"], "mean"),
        c_scale.sqrt(),
        EM_TOL,
        &format!("{name}: μ"),
    );
    let noise = case["noise_variance"].as_f64().unwrap();
    let noise_off = within(
        &mut failures,
        &[model.noise_variance()],
        &[noise],
        noise,
        EM_TOL,
        &format!("{name}: σ²"),
    );
    // The mean log-likelihood per row: the reference's from scipy's dense normal.
    let ll = case["log_likelihood_per_row"].as_f64().unwrap();
    let ll_off = within(
        &mut failures,
        &[report.log_likelihood],
        &[ll],
        ll.abs(),
        1e-10,
        &format!("{name}: mean log-likelihood per row"),
    );
    // The same from the fitted model's own scoring of the observed entries.
    let scored = model
        .probabilistic()
        .score_samples_observed(x.as_ref(), principal::Units::Original)
        .unwrap();
    let mean_scored = scored.iter().sum::<f64>() / scored.len() as f64;
    within(
        &mut failures,
        &[mean_scored],
        &[ll],
        ll.abs(),
        1e-10,
        &format!("{name}: score_samples_observed"),
    );
    // The conditional means of the missing entries, row by row.
    let completed = model.probabilistic().impute(x.as_ref()).unwrap();
    let imputed: Vec<f64> = (0..x.nrows())
        .flat_map(|i| (0..d).map(move |j| (i, j)))
        .filter(|&(i, j)| x[(i, j)].is_nan())
        .map(|(i, j)| completed[(i, j)])
        .collect();
    let imputed_off = within(
        &mut failures,
        &imputed,
        &vector(&case["imputed"], "imputed"),
        c_scale.sqrt(),
        EM_TOL,
        &format!("{name}: imputed values"),
    );
    println!(
        "{name}: {} passes; off by C {c_off:.1e}, μ {mean_off:.1e}, σ² {noise_off:.1e}, \
         log-likelihood {ll_off:.1e}, imputed {imputed_off:.1e}",
        report.iterations
    );
    assert_none(failures);
}

/// How many standard deviations of the Monte-Carlo spread the library's percentile may be
/// from the reference: each index is a difference of two independent estimates, the
/// library's from `permutations` copies (standard deviation `spread`, measured) and the
/// reference's from `reference_permutations` (`spread · √(permutations / reference)`); five
/// standard deviations of that difference over at most 12 indices are exceeded by chance with
/// a probability below 1e-5 (normal tails).
const SPREADS: f64 = 5.0;

fn parallel_analysis_matches_the_independent_percentile(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let permutations = case["permutations"].as_u64().unwrap() as usize;
    let reference_permutations = case["reference_permutations"].as_u64().unwrap() as f64;
    let percentile = case["percentile"].as_f64().unwrap();
    let want = vector(&case["reference_percentiles"], "reference_percentiles");
    let spread = vector(&case["spread"], "spread");
    let scaling = if case["standardize"].as_bool().unwrap() {
        Scaling::Standardize
    } else {
        Scaling::Centre
    };
    let options = ChooseOptions {
        permutations,
        percentile,
        folds: 2,
        ..ChooseOptions::default()
    };
    let table = PcaBuilder::new()
        .scaling(scaling)
        .build()
        .unwrap()
        .choose(x.as_ref(), &options)
        .unwrap();
    let parallel = table
        .criteria
        .iter()
        .find(|c| matches!(c.choice.criterion, Criterion::ParallelAnalysis { .. }))
        .unwrap();
    // The data's eigenvalues: numpy's SVD.
    let values = vector(&case["eigenvalues"], "eigenvalues");
    // Past the N − 1 dimensions centred rows span the eigenvalues are rounding.
    let compared = parallel.curve.threshold.len().min(x.nrows() - 1);
    assert!(compared >= 2, "{name}: {compared} indices");
    let mut worst = 0.0f64;
    let mut failures = Vec::new();
    for m in 0..compared {
        let got = parallel.curve.threshold[m].expect("a percentile");
        let sd = spread[m] * (1.0 + permutations as f64 / reference_permutations).sqrt();
        let z = (got - want[m]).abs() / sd;
        worst = worst.max(z);
        if z > SPREADS || z.is_nan() {
            failures.push(format!(
                "{name}: percentile at {}: {got} against {} (spread {sd:e}: {z:.1} standard \
                 deviations)",
                m + 1,
                want[m]
            ));
        }
        let value = parallel.curve.statistic[m].unwrap();
        within(
            &mut failures,
            &[value],
            &[values[m]],
            values[0],
            1e-10,
            &format!("{name}: eigenvalue {} against numpy's", m + 1),
        );
    }
    // Where the decision is not marginal, the count is the reference's.
    let margin = case["margin"].as_f64().unwrap();
    assert!(
        margin >= 0.1,
        "{name}: a margin of {margin} decides nothing"
    );
    let count = case["n_components"].as_u64().unwrap() as usize;
    if parallel.choice.n_components != count {
        failures.push(format!(
            "{name}: parallel analysis keeps {}, the reference {count}",
            parallel.choice.n_components
        ));
    }
    println!("{name}: largest difference {worst:.2} standard deviations over {compared} indices");
    assert_none(failures);
}

fn mle_for_wide_data_is_minkas_evidence_of_the_transposed_problem(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let (n, d) = (x.nrows(), x.ncols());
    assert!(n <= d, "{name}: {n}×{d} is not wide");
    let options = ChooseOptions {
        permutations: 1,
        folds: 2,
        ..ChooseOptions::default()
    };
    let table = PcaBuilder::new()
        .build()
        .unwrap()
        .choose(x.as_ref(), &options)
        .unwrap();
    let mle = table
        .criteria
        .iter()
        .find(|c| c.choice.criterion == Criterion::Mle)
        .unwrap();
    let want = vector(&case["log_evidence_n_features"], "log_evidence_n_features");
    let mut failures = Vec::new();
    for (i, w) in want.iter().enumerate() {
        let got = mle.curve.statistic[i].expect("a finite evidence");
        within(
            &mut failures,
            &[got],
            &[*w],
            w.abs(),
            1e-9,
            &format!("{name}: log evidence at {} against scikit-learn's", i + 1),
        );
    }
    let chosen = case["chosen_n_features"].as_u64().unwrap() as usize;
    let planted = case["planted_rank"].as_u64().unwrap() as usize;
    assert_eq!(chosen, planted, "{name}: the reference misses the rank");
    let model = PcaBuilder::new()
        .components(ComponentCount::Mle)
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap();
    for (what, chosen) in [
        ("--components mle", model.n_components()),
        ("the table's mle", mle.choice.n_components),
    ] {
        if chosen != planted {
            failures.push(format!(
                "{name}: {what} keeps {chosen}, the rank is {planted}"
            ));
        }
    }
    assert_none(failures);
}

fixture_tests!(
    em_matches_the_independent_em: em_tall_300x10_10pct, em_tall_200x8_20pct,
        em_wide_30x40_10pct, em_iris_15pct;
    parallel_analysis_matches_the_independent_percentile: parallel_tall_rank3,
        parallel_iris_standardized, parallel_wide_standardized;
    mle_for_wide_data_is_minkas_evidence_of_the_transposed_problem: mle_wide_40x400_rank2,
        mle_wide_20x60_rank4, mle_square_30x30_rank3;
);

/// Every file in `fixtures/independent/` has a test and was written by its script, which
/// exists and which `fixtures/generate.sh` runs.
#[test]
fn every_fixture_has_a_test_and_its_script() {
    let found = json_stems(&fixtures_dir().join(DIR));
    let listed: BTreeSet<String> = CASES.iter().map(|s| s.to_string()).collect();
    assert_eq!(found, listed, "fixture files and tests differ");
    for name in &found {
        assert_eq!(load(name)["generator"], SCRIPT, "{name}: written by what?");
    }
    let root = fixtures_dir();
    assert!(
        root.join("generate_independent.py").is_file(),
        "{SCRIPT} is missing"
    );
    let driver = std::fs::read_to_string(root.join("generate.sh")).unwrap();
    assert!(
        driver.contains("generate_independent.py"),
        "fixtures/generate.sh does not run {SCRIPT}"
    );
}
