//! The library against R (`fixtures/generate_r.R`: pcaMethods and psych; the JSON files in
//! `fixtures/r/` are committed, so no R is needed here).
//!
//! - `ppca_*`: pcaMethods' `ppca` with missing values. It estimates something other than the
//!   library's maximum-likelihood fit by design (generate_r.R says what: the mean fixed at the
//!   observed column means, every row treated as complete once its holes are filled, one
//!   posterior covariance for all rows); the exact agreement is with the independent EM of
//!   `tests/independent_fixtures.rs`. Here: with nothing missing both are the exact PCA
//!   (subspace to 1e-6); with holes, the subspaces are within 2.5° (measured: 0.1°–1.3°), and
//!   the filled-in values agree to within the noise level σ, while mean imputation is five
//!   times further off or more (measured: 0.12σ–0.58σ against 4.2σ–5.2σ).
//! - `fa_parallel_*`: psych's `fa.parallel(fa = "pc")`: the eigenvalues of the correlation
//!   matrix equal the library's standardized ones (1e-10), and on data where psych's
//!   decision is not marginal (its count's eigenvalues at least 10% from its threshold) the
//!   library's parallel analysis keeps as many components. psych compares with normal data of
//!   the same shape, the library with column permutations: only the count is comparable.

use std::collections::BTreeSet;

use principal::faer::Mat;
use principal::{
    ChooseOptions, ComponentCount, Criterion, IterativeOptions, MissingValues, PcaBuilder,
    PcaModel, Scaling, Solver,
};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{
    fixture_tests, fixtures_dir, json_stems, load_json, matrix_with_holes as matrix, vector,
};

const SCRIPT: &str = "fixtures/generate_r.R";

fn load(path: &str) -> Value {
    load_json(path)
}

fn load_case(name: &str) -> Value {
    fixture_files::load_case("r", name)
}

/// The data set a case names (in `fixtures/independent/`), checked against the case's
/// fingerprint: R read the same data.
fn data_of(case: &Value) -> Mat<f64> {
    let source = case["data"].as_str().expect("the data's file");
    let x = matrix(&load(source)["x"], source);
    let missing = x
        .col_iter()
        .flat_map(|c| c.iter().copied())
        .filter(|v| v.is_nan())
        .count();
    let observed_sum: f64 = x
        .col_iter()
        .flat_map(|c| c.iter().copied())
        .filter(|v| !v.is_nan())
        .sum();
    let print = &case["fingerprint"];
    assert_eq!(
        missing as u64,
        print["missing"].as_u64().unwrap(),
        "{source}: holes"
    );
    let want = print["observed_sum"].as_f64().unwrap();
    assert!(
        (observed_sum - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{source}: sum {observed_sum} against R's {want}"
    );
    x
}

fn fit_em(x: &Mat<f64>, k: usize) -> PcaModel {
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
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

/// The sine of the largest principal angle between the span of `model`'s components and the
/// span of the columns of `loadings` (D×k, orthonormal).
fn angle_sine(model: &PcaModel, loadings: &Mat<f64>) -> f64 {
    let b = model.components(); // k×D
    let outside = loadings - b.transpose() * (b * loadings);
    outside
        .singular_values()
        .unwrap()
        .iter()
        .fold(0.0f64, |m, &s| m.max(s))
        .min(1.0)
}

/// With holes: the subspace within this many degrees of pcaMethods'.
const DEGREES: f64 = 2.5;

fn ppca_with_holes_is_near_pcamethods(name: &str) {
    let case = load_case(name);
    let x = data_of(&case);
    let k = case["n_components"].as_u64().unwrap() as usize;
    let model = fit_em(&x, k);
    let loadings = matrix(&case["loadings"], "loadings");
    let degrees = angle_sine(&model, &loadings).asin().to_degrees();
    assert!(
        degrees <= DEGREES,
        "{name}: {degrees:.3}° from pcaMethods' subspace"
    );
    // pcaMethods centres on the observed column means (the fixture's own record of that).
    let center = vector(&case["center"], "center");
    for (j, c) in center.iter().enumerate() {
        let seen: Vec<f64> = x.col(j).iter().copied().filter(|v| !v.is_nan()).collect();
        let mean = seen.iter().sum::<f64>() / seen.len() as f64;
        assert!(
            (mean - c).abs() <= 1e-9 * c.abs().max(1.0),
            "{name}: centre {j}"
        );
    }
    // The filled-in values, row by row: within σ of pcaMethods', and far closer than the
    // column means.
    let filled = vector(&case["filled"], "filled");
    let completed = model.probabilistic().impute(x.as_ref()).unwrap();
    let holes: Vec<(usize, usize)> = (0..x.nrows())
        .flat_map(|i| (0..x.ncols()).map(move |j| (i, j)))
        .filter(|&(i, j)| x[(i, j)].is_nan())
        .collect();
    assert_eq!(holes.len(), filled.len(), "{name}: holes");
    let rms = |f: &dyn Fn(usize, usize) -> f64| {
        (holes
            .iter()
            .zip(&filled)
            .map(|(&(i, j), r)| (f(i, j) - r).powi(2))
            .sum::<f64>()
            / holes.len() as f64)
            .sqrt()
    };
    let ours = rms(&|i, j| completed[(i, j)]);
    let by_mean = rms(&|_, j| center[j]);
    let sigma = model.noise_variance().sqrt();
    assert!(
        ours <= sigma && ours * 5.0 <= by_mean,
        "{name}: filled values {ours:e} from pcaMethods' (σ {sigma:e}; mean imputation {by_mean:e})"
    );
    println!(
        "{name}: {degrees:.3}°; filled values {:.3}σ from pcaMethods', mean imputation {:.2}σ",
        ours / sigma,
        by_mean / sigma
    );
}

/// Nothing missing: pcaMethods' ppca, the library's EM and its exact SVD share one subspace.
fn ppca_without_holes_is_the_pca(name: &str) {
    let case = load_case(name);
    let text = std::fs::read_to_string(fixtures_dir().join("..").join("data/iris.csv")).unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').take(4).map(|v| v.parse().unwrap()).collect())
        .collect();
    let x = Mat::from_fn(rows.len(), 4, |i, j| rows[i][j]);
    let k = case["n_components"].as_u64().unwrap() as usize;
    let loadings = matrix(&case["loadings"], "loadings");
    let exact = PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .solver(Solver::Svd)
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap();
    for (what, model) in [("em", fit_em(&x, k)), ("svd", exact)] {
        let sine = angle_sine(&model, &loadings);
        assert!(
            sine <= 1e-6,
            "{name}, {what}: sin θ {sine:e} from pcaMethods"
        );
    }
}

fn parallel_count_is_psychs(name: &str) {
    let case = load_case(name);
    let x = data_of(&case);
    let pc_values = vector(&case["pc_values"], "pc_values");
    let quantile = vector(&case["simulated_quantile"], "simulated_quantile");
    let ncomp = case["ncomp"].as_u64().unwrap() as usize;
    let options = ChooseOptions {
        permutations: 1000,
        folds: 2,
        ..ChooseOptions::default()
    };
    let table = PcaBuilder::new()
        .scaling(Scaling::Standardize)
        .build()
        .unwrap()
        .choose(x.as_ref(), &options)
        .unwrap();
    // The correlation matrix's eigenvalues, as R's eigen(cor(x)) gives them (psych lists all
    // D; beyond the N − 1 the rows span they are rounding).
    let span = table.eigenvalues.len().min(x.nrows() - 1);
    for m in 0..span {
        assert!(
            (table.eigenvalues[m] - pc_values[m]).abs() <= 1e-10 * pc_values[0],
            "{name}: eigenvalue {}: {} against R's {}",
            m + 1,
            table.eigenvalues[m],
            pc_values[m]
        );
    }
    // psych's decision is not marginal: every eigenvalue up to the first below is at least 10%
    // from its threshold.
    let margin = (0..=ncomp.min(pc_values.len() - 1))
        .map(|m| (pc_values[m] - quantile[m]).abs() / quantile[m])
        .fold(f64::INFINITY, f64::min);
    assert!(margin >= 0.1, "{name}: psych's margin {margin}");
    let parallel = table
        .criteria
        .iter()
        .find(|c| matches!(c.choice.criterion, Criterion::ParallelAnalysis { .. }))
        .unwrap();
    assert_eq!(
        parallel.choice.n_components, ncomp,
        "{name}: psych keeps {ncomp}"
    );
}

fixture_tests!(
    ppca_with_holes_is_near_pcamethods: ppca_tall_300x10_10pct, ppca_tall_200x8_20pct,
        ppca_wide_30x40_10pct, ppca_iris_15pct;
    ppca_without_holes_is_the_pca: ppca_iris_complete;
    parallel_count_is_psychs: fa_parallel_tall_rank3, fa_parallel_iris_standardized,
        fa_parallel_wide_standardized;
);

/// Every file in `fixtures/r/` has a test and was written by `fixtures/generate_r.R`, which
/// exists and which `fixtures/generate.sh` runs.
#[test]
fn every_fixture_has_a_test_and_its_script() {
    let found = json_stems(&fixtures_dir().join("r"));
    let listed: BTreeSet<String> = CASES.iter().map(|s| s.to_string()).collect();
    assert_eq!(found, listed, "fixture files and tests differ");
    for name in &found {
        assert_eq!(
            load_case(name)["generator"],
            SCRIPT,
            "{name}: written by what?"
        );
    }
    let root = fixtures_dir();
    assert!(root.join("generate_r.R").is_file(), "{SCRIPT} is missing");
    let driver = std::fs::read_to_string(root.join("generate.sh")).unwrap();
    assert!(
        driver.contains("generate_r.R"),
        "fixtures/generate.sh does not run {SCRIPT}"
    );
}
