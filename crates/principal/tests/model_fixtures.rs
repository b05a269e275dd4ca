//! Factor analysis, kernel PCA and FastICA against scikit-learn (`fixtures/generate_models.py`;
//! the JSON files in `fixtures/models/` are committed, so no Python is needed here).
//!
//! - factor analysis: noise variances, the mean log-likelihood and each row's, and the loadings
//!   (unrotated, varimax, quartimax) up to each factor's sign and the factors' order, and the
//!   posterior means with the same signs; scikit-learn was run to tol = 1e-12, here to the
//!   default tolerance; and on Iris with one and two factors, Heywood cases, the log-likelihood
//!   and the noise variances of scikit-learn's EM run to its tolerance (up to 1.6 million steps);
//! - kernel PCA: eigenvalues, the training codes and new rows' codes up to each component's
//!   sign, and the pre-image map's reconstructions of new rows;
//! - both on matrices large enough (256 features; 300 rows) for the certified Krylov route
//!   (`solver/leading.rs`), as well as on small ones (the dense route);
//! - FastICA: from the same start (given in principal's whitened coordinates) the same sources,
//!   unmixing and mixing as scikit-learn; from principal's own seeded start, the true sources
//!   recovered up to sign, order and scale.

use std::collections::BTreeSet;

use principal::faer::{Mat, MatRef};
use principal::{
    Contrast, FactorAnalysisParams, FastIcaParams, KernelFunction, KernelPcaParams, LatentModel,
    Rotation,
};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{fixture_tests, json_stems, matrix_with_holes, vector};

fn load(name: &str) -> Value {
    fixture_files::load_case("models", name)
}

fn matrix(v: &Value, what: &str) -> Mat<f64> {
    matrix_with_holes(v, what)
}

/// `|a − b| ≤ tol · max(1, max |b|)` entrywise.
fn assert_close(a: MatRef<'_, f64>, b: MatRef<'_, f64>, tol: f64, what: &str) {
    assert_eq!(
        (a.nrows(), a.ncols()),
        (b.nrows(), b.ncols()),
        "{what}: shape"
    );
    let scale = (0..b.nrows())
        .flat_map(|i| (0..b.ncols()).map(move |j| b[(i, j)].abs()))
        .fold(1.0f64, f64::max);
    for i in 0..a.nrows() {
        for j in 0..a.ncols() {
            let diff = (a[(i, j)] - b[(i, j)]).abs();
            assert!(
                diff <= tol * scale,
                "{what}: ({i}, {j}) is {} here, {} in scikit-learn",
                a[(i, j)],
                b[(i, j)]
            );
        }
    }
}

fn column(v: &[f64]) -> Mat<f64> {
    Mat::from_fn(v.len(), 1, |i, _| v[i])
}

/// The row of `ours` matching each row of `theirs` (by |cosine|) and its sign.
fn row_matches(ours: MatRef<'_, f64>, theirs: MatRef<'_, f64>) -> Vec<(usize, f64)> {
    let dot = |a: usize, b: usize| -> (f64, f64) {
        let d: f64 = (0..ours.ncols())
            .map(|j| ours[(a, j)] * theirs[(b, j)])
            .sum();
        let na: f64 = (0..ours.ncols())
            .map(|j| ours[(a, j)].powi(2))
            .sum::<f64>()
            .sqrt();
        let nb: f64 = (0..ours.ncols())
            .map(|j| theirs[(b, j)].powi(2))
            .sum::<f64>()
            .sqrt();
        (d / (na * nb), d.signum())
    };
    (0..theirs.nrows())
        .map(|b| {
            let (a, (_, sign)) = (0..ours.nrows())
                .map(|a| (a, dot(a, b)))
                .max_by(|x, y| x.1.0.abs().total_cmp(&y.1.0.abs()))
                .unwrap();
            (a, sign)
        })
        .collect()
}

fn factor_analysis(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let k = case["n_components"].as_u64().unwrap() as usize;
    let tol = 1e-6;
    for (rotation, key) in [
        (Rotation::None, "none"),
        (Rotation::Varimax, "varimax"),
        (Rotation::Quartimax, "quartimax"),
    ] {
        let params = FactorAnalysisParams {
            rotation,
            ..FactorAnalysisParams::new(k)
        };
        let model = params.fit(x.as_ref()).unwrap();
        assert!(model.converged(), "{name}: EM did not converge");
        let what = |s: &str| format!("{name} {key}: {s}");
        assert_close(
            column(model.noise_variance()).as_ref(),
            column(&vector(&case["noise_variance"], "noise_variance")).as_ref(),
            tol,
            &what("noise_variance"),
        );
        let ll = case["log_likelihood"].as_f64().unwrap();
        assert!(
            (model.log_likelihood() - ll).abs() <= tol * ll.abs(),
            "{}: {} vs {ll}",
            what("log_likelihood"),
            model.log_likelihood()
        );
        let scores = model.score_samples(x.as_ref()).unwrap();
        assert_close(
            column(&scores).as_ref(),
            column(&vector(&case["score_samples"], "score_samples")).as_ref(),
            tol,
            &what("score_samples"),
        );
        let theirs = matrix(&case["components"][key], "components");
        let matches = row_matches(model.components(), theirs.as_ref());
        let distinct: BTreeSet<usize> = matches.iter().map(|m| m.0).collect();
        assert_eq!(
            distinct.len(),
            k,
            "{}: factors matched twice",
            what("components")
        );
        let aligned = Mat::from_fn(k, x.ncols(), |b, j| {
            let (a, sign) = matches[b];
            sign * model.components()[(a, j)]
        });
        assert_close(aligned.as_ref(), theirs.as_ref(), tol, &what("components"));
        if rotation == Rotation::None {
            let codes = model.transform(x.as_ref()).unwrap();
            let aligned = Mat::from_fn(x.nrows(), k, |i, b| {
                let (a, sign) = matches[b];
                sign * codes[(i, a)]
            });
            let theirs = matrix(&case["transform"], "transform");
            assert_close(aligned.as_ref(), theirs.as_ref(), tol, &what("transform"));
        }
    }
}

/// Each column of `ours` times the sign that makes it agree with `theirs`.
fn signed_columns(ours: MatRef<'_, f64>, theirs: MatRef<'_, f64>) -> (Mat<f64>, Vec<f64>) {
    let signs: Vec<f64> = (0..ours.ncols())
        .map(|c| {
            let d: f64 = (0..ours.nrows())
                .map(|i| ours[(i, c)] * theirs[(i, c)])
                .sum();
            if d < 0.0 { -1.0 } else { 1.0 }
        })
        .collect();
    (
        Mat::from_fn(ours.nrows(), ours.ncols(), |i, c| signs[c] * ours[(i, c)]),
        signs,
    )
}

fn kernel_pca(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let k = case["n_components"].as_u64().unwrap() as usize;
    let number = |key: &str| case[key].as_f64();
    let defaults = KernelPcaParams::new(k);
    let params = KernelPcaParams {
        kernel: case["kernel"]
            .as_str()
            .unwrap()
            .parse::<KernelFunction>()
            .unwrap(),
        gamma: number("gamma"),
        degree: number("degree").unwrap_or(defaults.degree),
        coef0: number("coef0").unwrap_or(defaults.coef0),
        alpha: number("alpha").unwrap(),
        ..defaults
    };
    let model = params.fit(x.as_ref()).unwrap();
    let tol = 1e-8;
    assert_close(
        column(model.eigenvalues()).as_ref(),
        column(&vector(&case["eigenvalues"], "eigenvalues")).as_ref(),
        tol,
        &format!("{name}: eigenvalues"),
    );
    let theirs = matrix(&case["codes"], "codes");
    let (codes, signs) = signed_columns(model.training_codes(), theirs.as_ref());
    assert_close(
        codes.as_ref(),
        theirs.as_ref(),
        tol,
        &format!("{name}: codes"),
    );
    let new = matrix(&case["new"], "new");
    let new_codes = model.transform(new.as_ref()).unwrap();
    let signed = Mat::from_fn(new_codes.nrows(), k, |i, c| signs[c] * new_codes[(i, c)]);
    let theirs = matrix(&case["new_codes"], "new_codes");
    assert_close(
        signed.as_ref(),
        theirs.as_ref(),
        tol,
        &format!("{name}: new codes"),
    );
    // The pre-image map sees the codes with principal's signs; so did it learn them.
    let back = model.inverse_transform(new_codes.as_ref()).unwrap();
    let theirs = matrix(&case["reconstructed_new"], "reconstructed_new");
    assert_close(
        back.as_ref(),
        theirs.as_ref(),
        1e-7,
        &format!("{name}: pre-images"),
    );
}

/// The largest |correlation| of each column of `truth` with any column of `found`.
fn best_correlations(truth: MatRef<'_, f64>, found: MatRef<'_, f64>) -> Vec<f64> {
    let n = truth.nrows() as f64;
    let standard = |m: MatRef<'_, f64>, c: usize| -> Vec<f64> {
        let mean = (0..m.nrows()).map(|i| m[(i, c)]).sum::<f64>() / n;
        let sd = ((0..m.nrows())
            .map(|i| (m[(i, c)] - mean).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        (0..m.nrows()).map(|i| (m[(i, c)] - mean) / sd).collect()
    };
    (0..truth.ncols())
        .map(|a| {
            let ta = standard(truth, a);
            (0..found.ncols())
                .map(|b| {
                    let fb = standard(found, b);
                    (ta.iter().zip(&fb).map(|(p, q)| p * q).sum::<f64>() / n).abs()
                })
                .fold(0.0, f64::max)
        })
        .collect()
}

fn ica(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let k = case["n_components"].as_u64().unwrap() as usize;
    let fun: Contrast = case["fun"].as_str().unwrap().parse().unwrap();
    let same_start = FastIcaParams {
        fun,
        max_iterations: 1000,
        initial_unmixing: Some(matrix(&case["w_init_principal"], "w_init_principal")),
        ..FastIcaParams::new(k)
    };
    let model = same_start.fit(x.as_ref()).unwrap();
    assert_eq!(
        model.n_iter() as u64,
        case["n_iter"].as_u64().unwrap(),
        "{name}: steps"
    );
    let tol = 1e-8;
    let sources = model.transform(x.as_ref()).unwrap();
    assert_close(
        sources.as_ref(),
        matrix(&case["sources"], "sources").as_ref(),
        tol,
        &format!("{name}: sources"),
    );
    assert_close(
        model.components(),
        matrix(&case["components"], "components").as_ref(),
        tol,
        &format!("{name}: components"),
    );
    assert_close(
        model.mixing(),
        matrix(&case["mixing"], "mixing").as_ref(),
        tol,
        &format!("{name}: mixing"),
    );

    let seeded = FastIcaParams {
        fun,
        max_iterations: 1000,
        ..FastIcaParams::new(k)
    };
    let model = seeded.fit(x.as_ref()).unwrap();
    assert!(model.converged(), "{name}: seeded start did not converge");
    let found = model.transform(x.as_ref()).unwrap();
    let truth = matrix(&case["true_sources"], "true_sources");
    for (s, c) in best_correlations(truth.as_ref(), found.as_ref())
        .iter()
        .enumerate()
    {
        assert!(
            *c > 0.95,
            "{name}: true source {s} recovered with |correlation| {c}"
        );
    }
}

/// A Heywood case (Iris with one and two factors): scikit-learn's EM crawls towards a noise
/// variance of 0 for 882,217 and 1,632,357 steps; principal must converge, in few steps, to a
/// log-likelihood at least scikit-learn's (the constrained maximum is at least any EM
/// iterate's) and within 1e-6 of it, with the same noise variances but for those scikit-learn
/// leaves heading for 0, which must be within the tolerance of 0 here.
fn factor_analysis_heywood(name: &str) {
    let case = load(name);
    let x = matrix(&case["x"], "x");
    let k = case["n_components"].as_u64().unwrap() as usize;
    let params = FactorAnalysisParams::new(k);
    let model = params.fit(x.as_ref()).unwrap();
    assert!(
        model.converged() && model.n_iter() <= 200,
        "{name}: converged {} after {} steps",
        model.converged(),
        model.n_iter()
    );
    // Never lower, but for rounding: with a ψ near 0 the log-likelihood's sum carries about
    // ε · variance / ψ, 1e-8 relative here, and EM swings between two points at that level.
    let history = model.log_likelihood_history();
    assert!(
        history
            .windows(2)
            .all(|pair| pair[1] >= pair[0] - 1e-7 * pair[0].abs()),
        "{name}: history"
    );
    let theirs = case["log_likelihood"].as_f64().unwrap();
    let ours = model.log_likelihood();
    let scores = model.score_samples(x.as_ref()).unwrap();
    let mean_score = scores.iter().sum::<f64>() / scores.len() as f64;
    for (what, value) in [("log_likelihood", ours), ("mean score", mean_score)] {
        assert!(
            value >= theirs - 1e-9 * theirs.abs() && value - theirs <= 1e-6 * theirs.abs(),
            "{name}: {what} {value} against scikit-learn's {theirs}"
        );
    }
    let psi = vector(&case["noise_variance"], "noise_variance");
    let variance = vector(&case["variance"], "variance");
    let mut at_zero = 0;
    for j in 0..psi.len() {
        let ours = model.noise_variance()[j];
        if psi[j] < 1e-5 * variance[j] {
            at_zero += 1;
            assert!(
                ours <= params.tolerance * variance[j],
                "{name}: ψ{j} is {ours}, scikit-learn's heads for 0 ({})",
                psi[j]
            );
        } else {
            assert!(
                (ours - psi[j]).abs() <= 1e-5 * variance[j],
                "{name}: ψ{j} is {ours}, scikit-learn's {}",
                psi[j]
            );
        }
    }
    assert!(
        at_zero > 0,
        "{name}: no noise variance heads for 0 in the fixture"
    );
}

fixture_tests! {
    factor_analysis: fa_planted_k1, fa_planted_k2, fa_planted3_k3, fa_wide_k3;
    factor_analysis_heywood: fa_iris_heywood_k1, fa_iris_heywood_k2;
    kernel_pca: kpca_rbf, kpca_rbf_gamma0_5, kpca_poly, kpca_sigmoid, kpca_cosine, kpca_linear,
        kpca_rbf_300, kpca_sigmoid_300, kpca_linear_300;
    ica: ica_mixed_logcosh, ica_mixed_exp, ica_mixed_cube;
}

/// Every fixture file has its test.
#[test]
fn every_fixture_is_tested() {
    let files = json_stems(&fixture_files::fixtures_dir().join("models"));
    let cases: BTreeSet<String> = CASES.iter().map(|s| s.to_string()).collect();
    assert_eq!(files, cases);
}
