//! Bayesian PCA against `fixtures/generate_latent.py`: an independent numpy implementation of
//! Bishop's EM (1999) in its matrix form over the covariance, from the same start to the same
//! stopping rule (the JSON files in `fixtures/latent/` are committed, so no Python is needed
//! here). The library's per-feature EM must switch off the same columns and reach the same
//! loadings, precisions α, noise variance and mean log-likelihood.

use std::collections::BTreeSet;

use principal::faer::Mat;
use principal::{BayesianPca, BayesianPcaOptions, MissingValues};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{
    fixture_tests, fixtures_dir, json_stems, load_case, matrix_with_holes as matrix, vector,
};

const DIR: &str = "latent";
const SCRIPT: &str = "fixtures/generate_latent.py";

fn load(name: &str) -> Value {
    load_case(DIR, name)
}

fn bayesian_pca(name: &str) {
    checked_fit(name);
}

/// Fits the case and checks the kept count, loadings, α, σ², log-likelihood and mean; returns
/// the case, its data and the fit.
fn checked_fit(name: &str) -> (Value, Mat<f64>, BayesianPca) {
    let case = load(name);
    let x: Mat<f64> = matrix(&case["x"], "x");
    let kmax = case["max_components"].as_u64().unwrap() as usize;
    let mut options = BayesianPcaOptions::new(kmax);
    // NaN in x is a missing value (the complete cases have none).
    options.missing = MissingValues::Em;
    options.tolerance = 1e-10;
    options.max_iterations = 100_000;
    let model = BayesianPca::fit(x.as_ref(), &options).unwrap();
    assert!(model.converged(), "{name}: not converged");
    let kept = case["n_components"].as_u64().unwrap() as usize;
    assert_eq!(
        model.n_components(),
        kept,
        "{name}: alpha {:?}",
        model.alpha()
    );
    let want = matrix(&case["components"], "components");
    let scale = (0..kept)
        .map(|r| {
            (0..want.ncols())
                .map(|j| want[(r, j)].powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .fold(0.0, f64::max);
    for r in 0..kept {
        for j in 0..want.ncols() {
            let diff = (model.components()[(r, j)] - want[(r, j)]).abs();
            assert!(
                diff < 1e-6 * scale,
                "{name}: component {r}, feature {j}: off by {diff}"
            );
        }
    }
    let alpha = case["alpha"].as_array().unwrap();
    for (i, a) in alpha.iter().enumerate() {
        let got = model.alpha()[i];
        match a.as_f64() {
            Some(a) => assert!(
                (got - a).abs() < 1e-5 * a,
                "{name}: alpha[{i}] {got} vs {a}"
            ),
            None => assert!(
                got.is_infinite(),
                "{name}: alpha[{i}] {got} vs switched off"
            ),
        }
    }
    let noise = case["noise_variance"].as_f64().unwrap();
    assert!(
        (model.noise_variance() - noise).abs() < 1e-7 * noise,
        "{name}: σ² {} vs {noise}",
        model.noise_variance()
    );
    let ll = case["log_likelihood"].as_f64().unwrap();
    assert!(
        (model.log_likelihood() - ll).abs() < 1e-8 * ll.abs(),
        "{name}: log-likelihood {} vs {ll}",
        model.log_likelihood()
    );
    for (j, m) in vector(&case["mean"], "mean").iter().enumerate() {
        assert!(
            (model.mean()[j] - m).abs() < 1e-8 * m.abs().max(1.0),
            "{name}: mean[{j}]"
        );
    }
    (case, x, model)
}

/// Bayesian PCA with missing entries against the script's second numpy EM (`bpca_missing`),
/// written over the entries in the covariance form (C_n = W_O W_Oᵀ + σ²I per row) where the
/// library uses WᵀW + σ²I, from the same start to the same stopping rule (1e-10 relative per
/// step). Both take the same steps from the same start, so they differ by rounding plus at
/// most a few steps' movement near the fixed point; the tolerances are those of the complete
/// data test above (loadings 1e-6 of the largest norm, α 1e-5, σ² 1e-7, log-likelihood 1e-8),
/// plus the posterior means of the rows (`transform`, 1e-6 of their largest magnitude) and the
/// imputed entries μ + W z̄_n (1e-6 of the data's spread), which check the per-row E step over
/// the observed features that the loadings alone could hide behind a wrong mean.
fn bayesian_pca_missing(name: &str) {
    let (case, x, model) = checked_fit(name);
    let holes = (0..x.nrows())
        .flat_map(|i| (0..x.ncols()).map(move |j| (i, j)))
        .filter(|&(i, j)| x[(i, j)].is_nan())
        .count();
    assert!(holes > 0, "{name}: no missing entries");
    let z = model.transform(x.as_ref()).unwrap();
    let want = matrix(&case["transform"], "transform");
    assert_eq!(
        (z.nrows(), z.ncols()),
        (want.nrows(), want.ncols()),
        "{name}: transform shape"
    );
    let scale = (0..want.nrows())
        .flat_map(|i| (0..want.ncols()).map(move |c| (i, c)))
        .fold(0.0f64, |m, (i, c)| m.max(want[(i, c)].abs()));
    for i in 0..want.nrows() {
        for c in 0..want.ncols() {
            let diff = (z[(i, c)] - want[(i, c)]).abs();
            assert!(
                diff < 1e-6 * scale,
                "{name}: transform row {i}, component {c}: off by {diff}"
            );
        }
    }
    // μ + W z̄_n, at every entry; where x is missing it is the imputed value.
    let want = matrix(&case["reconstruction"], "reconstruction");
    let spread = model.noise_variance().sqrt()
        + (0..model.n_components())
            .map(|r| model.components().row(r).iter().map(|v| v * v).sum::<f64>())
            .sum::<f64>()
            .sqrt();
    for i in 0..want.nrows() {
        for j in 0..want.ncols() {
            let got = model.mean()[j]
                + (0..model.n_components())
                    .map(|c| z[(i, c)] * model.components()[(c, j)])
                    .sum::<f64>();
            let diff = (got - want[(i, j)]).abs();
            assert!(
                diff < 1e-6 * spread,
                "{name}: reconstruction row {i}, feature {j} (missing: {}): off by {diff}",
                x[(i, j)].is_nan()
            );
        }
    }
}

fixture_tests!(
    bayesian_pca: bpca_iris_max3, bpca_planted_rank3_200x10_max8, bpca_wide_30x20_rank2_max10;
    bayesian_pca_missing: bpca_missing_planted_rank3_200x10_max8;
);

/// Every file in `fixtures/latent/` has a test and was written by its script, which exists and
/// which `fixtures/generate.sh` runs.
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
        root.join("generate_latent.py").is_file(),
        "{SCRIPT} is missing"
    );
    let driver = std::fs::read_to_string(root.join("generate.sh")).unwrap();
    assert!(
        driver.contains("generate_latent.py"),
        "fixtures/generate.sh does not run {SCRIPT}"
    );
}
