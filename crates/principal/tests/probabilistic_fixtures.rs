//! Probabilistic PCA against scikit-learn (`fixtures/generate_probabilistic.py`; the JSON files
//! in `fixtures/probabilistic/` are committed, so no Python is needed here).
//!
//! Every case is fitted with each exact solver and compared with scikit-learn's
//! `score_samples`, `score`, `get_covariance` and `get_precision` (and the held-out score of a
//! fit with each number of components), with numpy's posterior (M inverted directly) and, for
//! standardized cases, with scipy's `multivariate_normal.logpdf` in the original units. The
//! tolerance is 1e-9 relative to the magnitude compared: `|a − b| ≤ 1e-9 · max(1, max |b|)`
//! over a log-likelihood vector or a matrix.

use std::collections::BTreeSet;
use std::path::PathBuf;

use principal::faer::Mat;
use principal::{ComponentCount, PcaBuilder, PcaModel, Scaling, Solver, Units};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{fixture_tests, json_stems, vector};

const TOL: f64 = 1e-9;
const SOLVERS: [Solver; 4] = [Solver::Covariance, Solver::Gram, Solver::Svd, Solver::Auto];

fn fixtures_dir() -> PathBuf {
    fixture_files::fixtures_dir().join("probabilistic")
}

fn load(name: &str) -> Value {
    fixture_files::load_case("probabilistic", name)
}

fn matrix(v: &Value, what: &str) -> Mat<f64> {
    let rows: Vec<Vec<f64>> = v
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array of rows"))
        .iter()
        .map(|r| vector(r, what))
        .collect();
    let ncols = rows.first().map_or(0, Vec::len);
    Mat::from_fn(rows.len(), ncols, |i, j| rows[i][j])
}

/// `|a − b| ≤ TOL · max(1, max |b|)` entry by entry.
fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= TOL * scale,
            "{what}[{i}]: {a} against {b} (off by {:e}, scale {scale})",
            (a - b).abs()
        );
    }
}

fn flat(m: &Mat<f64>) -> Vec<f64> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
        .collect()
}

fn fit(case: &Value, solver: Solver) -> PcaModel {
    let params = &case["params"];
    let m = params["n_components"].as_u64().unwrap() as usize;
    let scaling = if params["standardize"].as_bool().unwrap() {
        Scaling::Standardize
    } else {
        Scaling::Centre
    };
    let x = matrix(&case["x"], "x");
    PcaBuilder::new()
        .components(ComponentCount::Fixed(m))
        .scaling(scaling)
        .ddof(params["ddof"].as_u64().unwrap() as usize)
        .solver(solver)
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap()
}

fn run_case(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let x_new = matrix(&case["x_new"], "x_new");
    for solver in SOLVERS {
        let model = fit(&case, solver);
        let at = |what: &str| format!("{name} ({solver}): {what}");
        let ppca = model.probabilistic();
        assert_close(
            &[model.noise_variance()],
            &[case["noise_variance"].as_f64().unwrap()],
            &at("noise_variance"),
        );
        assert_close(
            &model.score_samples(x.as_ref()).unwrap(),
            &vector(&case["score_samples"], "score_samples"),
            &at("score_samples"),
        );
        assert_close(
            &model.score_samples(x_new.as_ref()).unwrap(),
            &vector(&case["score_samples_new"], "score_samples_new"),
            &at("score_samples (new rows)"),
        );
        for (data, key) in [(&x, "score"), (&x_new, "score_new")] {
            assert_close(
                &[model.score(data.as_ref()).unwrap()],
                &[case[key].as_f64().unwrap()],
                &at(key),
            );
        }
        let covariance = model.get_covariance();
        let precision = model.get_precision().unwrap();
        assert_close(
            &flat(&covariance),
            &flat(&matrix(&case["covariance"], "covariance")),
            &at("get_covariance"),
        );
        assert_close(
            &flat(&precision),
            &flat(&matrix(&case["precision"], "precision")),
            &at("get_precision"),
        );
        // C C⁻¹ = I, to rounding amplified by C's condition number (at most ~10⁴ here).
        let product = &covariance * &precision;
        let d = product.nrows();
        let identity = flat(&Mat::<f64>::identity(d, d));
        let cond_tol = 1e-11 * condition(&model);
        for (i, (a, b)) in flat(&product).iter().zip(&identity).enumerate() {
            assert!(
                (a - b).abs() <= cond_tol,
                "{}",
                at(&format!("C P [{i}] = {a}"))
            );
        }
        let posterior = ppca.posterior(x_new.as_ref()).unwrap();
        let mean_want = matrix(&case["posterior_mean_new"], "posterior_mean_new");
        assert_close(
            &flat(&posterior.mean),
            &flat(&mean_want),
            &at("posterior mean"),
        );
        assert_close(
            &flat(&posterior.covariance),
            &flat(&matrix(
                &case["posterior_covariance"],
                "posterior_covariance",
            )),
            &at("posterior covariance"),
        );
        // The held-out curve from one fit against one scikit-learn fit per count.
        let curve = ppca
            .score_by_component_count(x_new.as_ref(), Units::Standardized)
            .unwrap();
        let want = vector(&case["score_new_by_components"], "score_new_by_components");
        let got: Vec<f64> = curve[1..].iter().map(|v| v.expect("a density")).collect();
        assert_close(&got, &want, &at("held-out score by number of components"));
        if model.scale().is_some() {
            assert_close(
                &ppca.score_samples(x_new.as_ref(), Units::Original).unwrap(),
                &vector(
                    &case["score_samples_new_original"],
                    "score_samples_new_original",
                ),
                &at("score_samples in the original units"),
            );
        }
    }
}

/// `max c / min c`: the condition number of the model covariance.
fn condition(model: &PcaModel) -> f64 {
    let c = model.probabilistic().component_variances();
    let noise = model.noise_variance();
    let largest = c.iter().fold(noise, |m, &v| m.max(v));
    let smallest = c.iter().fold(
        if model.n_components() < model.n_features() {
            noise
        } else {
            f64::INFINITY
        },
        |m, &v| m.min(v),
    );
    largest / smallest
}

fixture_tests!(
    run_case:
    ppca_iris_m2,
    ppca_iris_m4,
    ppca_iris_standardized_m2,
    ppca_wide_8x20_m3,
    ppca_offset_1e6_40x5_m2,
    ppca_digits_150x32_m8,
    ppca_wine_standardized_m4;
);

/// Every fixture file has a test above and is made by the script (its name is in
/// `generate_probabilistic.py`), and every test has its file: nothing is skipped silently and
/// no fixture is without the script that made it.
#[test]
fn every_fixture_file_has_a_test_and_a_script() {
    let dir = fixtures_dir();
    let found = json_stems(&dir);
    let listed: BTreeSet<String> = CASES.iter().map(|s| s.to_string()).collect();
    assert_eq!(found, listed, "fixture files and tests differ");
    let script = std::fs::read_to_string(dir.join("../generate_probabilistic.py")).unwrap();
    for name in &found {
        assert!(
            script.contains(&format!("\"{name}\"")),
            "{name}.json: generate_probabilistic.py does not make it"
        );
    }
}
