//! End-to-end tests of probabilistic PCA on the command line: `score`, `sample`,
//! `transform --posterior`, and missing values (`fit --missing em`, `transform --missing em`,
//! `impute`).

#[cfg(feature = "parquet")]
use crate::io_files;
use std::fs;

use crate::common;

use common::*;
use serde_json::Value;

/// A scikit-learn fixture of `fixtures/probabilistic/`.
fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/probabilistic")
        .join(format!("{name}.json"));
    serde_json::from_str(&fs::read_to_string(path).expect("fixture")).expect("JSON")
}

/// Fits two components to Iris (without its species), with `extra` flags, into `model`.
fn fit_iris(env: &Env, extra: &[&str], model: &str) {
    let iris = iris();
    let mut args = vec!["fit", &iris, "--exclude", "species", "-k", "2", "-o", model];
    args.extend_from_slice(extra);
    env.ok(&args);
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> f64 {
    let rest = &text[text
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} in {text}"))
        + prefix.len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// `score` writes scikit-learn's `score_samples` for every row (to 1e-9) and its mean, `score`,
/// on stderr; `--units original` subtracts Σ log scale_j for a standardized model.
#[test]
fn score_writes_scikit_learns_log_likelihoods() {
    let env = Env::new();
    let case = fixture("ppca_iris_m2");
    fit_iris(&env, &[], "m.pca");
    let stderr = env.ok(&["score", "m.pca", &iris(), "-o", "ll.csv"]);
    let (header, rows) = env.read_csv("ll.csv");
    assert_eq!(header, Some(vec!["log_likelihood".to_string()]));
    let got: Vec<f64> = rows.iter().map(|r| r[0]).collect();
    let want = numbers(&case["score_samples"]);
    assert_close(&got, &want, 1e-9 * 10.0, "score_samples");
    let mean = number_after(&stderr, "mean log-likelihood ");
    assert!(
        (mean - case["score"].as_f64().unwrap()).abs() <= 1e-6,
        "{stderr}"
    );
    assert!(stderr.contains("over 150 rows"), "{stderr}");

    fit_iris(&env, &["--standardize"], "s.pca");
    env.ok(&["score", "s.pca", &iris(), "-o", "std.csv"]);
    let stderr = env.ok(&[
        "score",
        "s.pca",
        &iris(),
        "-o",
        "orig.csv",
        "--units",
        "original",
    ]);
    assert!(stderr.contains("(original units)"), "{stderr}");
    let scale = numbers(&env.inspect("s.pca")["scale"]);
    let jacobian: f64 = scale.iter().map(|s| s.ln()).sum();
    let (_, standardized) = env.read_csv("std.csv");
    let (_, original) = env.read_csv("orig.csv");
    for (a, b) in standardized.iter().zip(&original) {
        assert!((a[0] - jacobian - b[0]).abs() <= 1e-12 * a[0].abs().max(1.0));
    }
    let want = numbers(&fixture("ppca_iris_standardized_m2")["score_samples"]);
    let got: Vec<f64> = standardized.iter().map(|r| r[0]).collect();
    assert_close(&got, &want, 1e-9 * 10.0, "standardized score_samples");
}

/// A model with every component of wide data has σ² = 0 and no density: `score` says so and
/// writes nothing.
#[test]
fn score_of_a_degenerate_model_is_a_clear_error() {
    let env = Env::new();
    env.write("wide.csv", "a,b,c,d\n1,2,0,4\n3,1,1,0\n0,5,2,2\n");
    env.ok(&["fit", "wide.csv", "-o", "w.pca"]);
    let stderr = env.fails(1, &["score", "w.pca", "wide.csv", "-o", "ll.csv"]);
    assert!(stderr.contains("the noise variance is 0"), "{stderr}");
    assert!(!env.path("ll.csv").exists());
}

/// A model with σ² = 0 (every component of wide data kept: 6 rows × 8 features, M = 6) has no
/// density, but its generative model is well defined: x = W z + μ with W = B Λ^½, a Gaussian
/// on the model's affine subspace. `sample` draws from it: every sample lies in the span of
/// the components (no residual, where a model with σ² > 0 adds noise off it), and the variance
/// along component m is λ_m. `score` on the same model says it has no density.
#[test]
fn sample_of_a_model_without_noise_stays_in_its_subspace() {
    let env = Env::new();
    let mut rng = Lcg(11);
    let rows: Vec<Vec<f64>> = (0..6)
        .map(|_| (0..8).map(|j| 10.0 * rng.next() + j as f64).collect())
        .collect();
    let header: Vec<String> = (0..8).map(|j| format!("f{j}")).collect();
    env.write("wide.csv", to_csv(Some(&header), &rows));
    env.ok(&["fit", "wide.csv", "-o", "w.pca"]);
    let model = env.inspect("w.pca");
    assert_eq!(model["noise_variance"].as_f64(), Some(0.0));
    assert_eq!(model["n_components"].as_u64(), Some(6));
    let stderr = env.fails(1, &["score", "w.pca", "wide.csv", "-o", "ll.csv"]);
    assert!(stderr.contains("the noise variance is 0"), "{stderr}");

    let residual_and_variances = |model: &Value, samples: &[Vec<f64>]| {
        let mean = numbers(&model["mean"]);
        let components = matrix(&model["components"]);
        let n = samples.len() as f64;
        let mut residual = 0.0;
        let mut spread = 0.0;
        let mut variances = vec![0.0; components.len()];
        for x in samples {
            let centred: Vec<f64> = x.iter().zip(&mean).map(|(x, m)| x - m).collect();
            let codes: Vec<f64> = components
                .iter()
                .map(|b| b.iter().zip(&centred).map(|(b, c)| b * c).sum())
                .collect();
            for (j, c) in centred.iter().enumerate() {
                let kept: f64 = codes.iter().zip(&components).map(|(y, b)| y * b[j]).sum();
                residual += (c - kept).powi(2);
                spread += c * c;
            }
            for (v, y) in variances.iter_mut().zip(&codes) {
                *v += y * y / n;
            }
        }
        (residual / spread, variances)
    };

    env.ok(&[
        "sample", "w.pca", "--count", "20000", "--seed", "3", "-o", "s.csv",
    ]);
    let (_, samples) = env.read_csv("s.csv");
    assert_eq!(samples.len(), 20000);
    let (residual, variances) = residual_and_variances(&model, &samples);
    assert!(residual < 1e-20, "relative squared residual {residual}");
    let lambda = numbers(&model["explained_variance"]);
    // 20,000 draws: the variance of a code is within 5% of λ_m (about 5 standard errors).
    for m in 0..5 {
        let ratio = variances[m] / lambda[m];
        assert!((ratio - 1.0).abs() < 0.05, "component {m}: {ratio}");
    }
    // The sixth component has λ = 0 to rounding (six centred rows span five directions).
    assert!(variances[5] <= 1e-20 * lambda[0], "{}", variances[5]);

    // Against a model with σ² > 0, whose samples leave the subspace: the check can fail.
    env.ok(&["fit", "wide.csv", "-k", "2", "-o", "two.pca"]);
    let two = env.inspect("two.pca");
    assert!(two["noise_variance"].as_f64().unwrap() > 0.0);
    env.ok(&["sample", "two.pca", "--count", "2000", "-o", "t.csv"]);
    let (_, noisy) = env.read_csv("t.csv");
    let (residual, _) = residual_and_variances(&two, &noisy);
    assert!(residual > 1e-3, "relative squared residual {residual}");
}

/// `sample`: the same seed gives the same bytes and another seed others; 20,000 draws have the
/// model's mean within 5 standard errors; `--latent` maps the origin to the mean; `--count 0`
/// is a usage error that writes nothing.
#[test]
fn sample_draws_reproducibly_from_the_model() {
    let env = Env::new();
    fit_iris(&env, &[], "m.pca");
    env.ok(&[
        "sample", "m.pca", "--count", "20000", "--seed", "5", "-o", "a.npy",
    ]);
    env.ok(&[
        "sample", "m.pca", "--count", "20000", "--seed", "5", "-o", "b.npy",
    ]);
    env.ok(&[
        "sample", "m.pca", "-n", "20000", "--seed", "6", "-o", "c.npy",
    ]);
    let (a, b, c) = (
        fs::read(env.path("a.npy")).unwrap(),
        fs::read(env.path("b.npy")).unwrap(),
        fs::read(env.path("c.npy")).unwrap(),
    );
    assert_eq!(a, b, "same seed, same bytes");
    assert_ne!(a, c, "another seed, other samples");
    env.ok(&[
        "sample", "m.pca", "--count", "20000", "--seed", "5", "-o", "a.csv",
    ]);
    let (header, rows) = env.read_csv("a.csv");
    assert_eq!(header.unwrap()[0], "sepal_length");
    let model = env.inspect("m.pca");
    let mean = numbers(&model["mean"]);
    let components = matrix(&model["components"]);
    let lambda = numbers(&model["explained_variance"]);
    let noise = model["noise_variance"].as_f64().unwrap();
    let n = rows.len() as f64;
    for j in 0..4 {
        let variance = noise
            + (0..2)
                .map(|m| (lambda[m] - noise) * components[m][j].powi(2))
                .sum::<f64>();
        let sample_mean = rows.iter().map(|r| r[j]).sum::<f64>() / n;
        let z = (sample_mean - mean[j]) / (variance / n).sqrt();
        assert!(z.abs() <= 5.0, "feature {j}: {z} standard errors");
    }
    env.write("z.csv", "z1,z2\n0,0\n1,0\n");
    env.ok(&["sample", "m.pca", "--latent", "z.csv", "-o", "x.csv"]);
    let (_, x) = env.read_csv("x.csv");
    assert_close(&x[0], &mean, 1e-12 * 10.0, "the latent origin");
    let along: Vec<f64> = (0..4)
        .map(|j| mean[j] + (lambda[0] - noise).sqrt() * components[0][j])
        .collect();
    assert_close(&x[1], &along, 1e-12 * 10.0, "one unit along z1");

    let stderr = env.fails(2, &["sample", "m.pca", "--count", "0", "-o", "zero.csv"]);
    assert!(
        stderr.contains("--count 0 is not allowed: at least 1 sample is needed"),
        "{stderr}"
    );
    assert!(!env.path("zero.csv").exists());
    env.fails(2, &["sample", "m.pca", "-o", "none.csv"]);
    env.fails(
        2,
        &[
            "sample", "m.pca", "--count", "3", "--latent", "z.csv", "-o", "both.csv",
        ],
    );
    env.write("z3.csv", "1,2,3\n");
    let stderr = env.fails(
        1,
        &["sample", "m.pca", "--latent", "z3.csv", "-o", "bad.csv"],
    );
    assert!(
        stderr.contains("3 columns but the model has 2 components"),
        "{stderr}"
    );
    assert!(!env.path("bad.csv").exists());
}

/// `transform --posterior` writes `M⁻¹ Wᵀ (x − μ)`, the codes times √(λ − σ²)/λ, and
/// `--posterior-cov` the shared covariance diag(σ²/λ); the cov file needs `--posterior`.
#[test]
fn transform_posterior_writes_the_latent_posterior() {
    let env = Env::new();
    fit_iris(&env, &[], "m.pca");
    env.ok(&["transform", "m.pca", &iris(), "-o", "codes.csv"]);
    env.ok(&[
        "transform",
        "m.pca",
        &iris(),
        "--posterior",
        "--posterior-cov",
        "cov.csv",
        "-o",
        "post.csv",
    ]);
    let model = env.inspect("m.pca");
    let lambda = numbers(&model["explained_variance"]);
    let noise = model["noise_variance"].as_f64().unwrap();
    let (_, codes) = env.read_csv("codes.csv");
    let (header, post) = env.read_csv("post.csv");
    assert_eq!(header, Some(vec!["z1".to_string(), "z2".to_string()]));
    for (c, p) in codes.iter().zip(&post) {
        let want: Vec<f64> = (0..2)
            .map(|m| c[m] * (lambda[m] - noise).sqrt() / lambda[m])
            .collect();
        assert_close(p, &want, 1e-12 * 10.0, "posterior mean");
    }
    let want = fixture("ppca_iris_m2");
    let (_, cov) = env.read_csv("cov.csv");
    let cov_want = matrix(&want["posterior_covariance"]);
    for (a, b) in cov.iter().zip(&cov_want) {
        assert_close(a, b, 1e-12, "posterior covariance");
    }
    env.fails(
        2,
        &[
            "transform",
            "m.pca",
            &iris(),
            "--posterior-cov",
            "c.csv",
            "-o",
            "p.csv",
        ],
    );
    assert!(!env.path("p.csv").exists());
}

/// Rows whose missing values are `None`.
type Holed = Vec<Vec<Option<f64>>>;

/// Iris with about 15% of its values blanked (empty cells and NaN), deterministically, written
/// to holes.csv: (names, complete rows, rows with holes).
fn iris_with_holes(env: &Env) -> (Vec<String>, Vec<Vec<f64>>, Holed) {
    let (names, rows) = iris_rows();
    let mut lcg = Lcg(17);
    let holed: Holed = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|&v| (lcg.next() >= 0.15).then_some(v))
                .collect()
        })
        .collect();
    let mut text = names.join(",") + "\n";
    for (i, r) in holed.iter().enumerate() {
        let cells: Vec<String> = r
            .iter()
            .map(|v| match v {
                Some(v) => v.to_string(),
                None if i % 2 == 0 => String::new(),
                None => "NaN".to_string(),
            })
            .collect();
        text += &(cells.join(",") + "\n");
    }
    env.write("holes.csv", text);
    (names, rows, holed)
}

/// `fit --missing em` reads empty cells and NaN and reports the fit (also in the model file);
/// without the flag the first hole is the same error as ever; the flag needs a number of
/// components and the em solver.
#[test]
fn fit_with_missing_values_by_em() {
    let env = Env::new();
    let (_, _, holed) = iris_with_holes(&env);
    let holes = holed.iter().flatten().filter(|v| v.is_none()).count();
    let stderr = env.fails(1, &["fit", "holes.csv", "-k", "2", "-o", "m.pca"]);
    assert!(
        stderr.contains("holes.csv") && stderr.contains("line"),
        "{stderr}"
    );
    assert!(!env.path("m.pca").exists());
    let stderr = env.ok(&[
        "fit",
        "holes.csv",
        "-k",
        "2",
        "--missing",
        "em",
        "-o",
        "m.pca",
    ]);
    assert!(
        stderr.contains(&format!("missing values: {holes} of 600")),
        "{stderr}"
    );
    assert!(
        stderr.contains("solver: em on the observed values"),
        "{stderr}"
    );
    let model = env.inspect("m.pca");
    let report = &model["missing_values"];
    assert_eq!(report["method"], "em");
    assert_eq!(report["missing"].as_u64(), Some(holes as u64));
    assert_eq!(report["observed"].as_u64(), Some(600 - holes as u64));
    assert_eq!(report["converged"], true);
    assert_eq!(model["solver"], "em");
    // Close to the complete data's model: Iris's first component within 2 degrees.
    fit_iris(&env, &[], "c.pca");
    let a = matrix(&model["components"]);
    let b = matrix(&env.inspect("c.pca")["components"]);
    let cos: f64 = (0..4).map(|j| a[0][j] * b[0][j]).sum();
    assert!(cos.abs().acos().to_degrees() < 2.0, "cos {cos}");
    let text = env.run(&["inspect", "m.pca"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("missing_values  em:"));

    let stderr = env.fails(2, &["fit", "holes.csv", "--missing", "em", "-o", "x.pca"]);
    assert!(stderr.contains("--components"), "{stderr}");
    env.fails(
        2,
        &[
            "fit",
            "holes.csv",
            "--missing",
            "em",
            "--variance",
            "0.9",
            "-o",
            "x.pca",
        ],
    );
    // A criterion chooses from a complete fit's eigenvalues: with missing values, a usage error.
    for criterion in ["mle", "gavish-donoho", "cv"] {
        let stderr = env.fails(
            2,
            &[
                "fit",
                "holes.csv",
                "--missing",
                "em",
                "--components",
                criterion,
                "-o",
                "x.pca",
            ],
        );
        assert!(
            stderr.contains("with missing values, give a number of components"),
            "{stderr}"
        );
    }
    let stderr = env.fails(
        2,
        &[
            "fit",
            "holes.csv",
            "-k",
            "2",
            "--missing",
            "em",
            "--solver",
            "svd",
            "-o",
            "x.pca",
        ],
    );
    assert!(
        stderr.contains("missing values are fitted by em only"),
        "{stderr}"
    );
    env.fails(
        2,
        &[
            "fit",
            "holes.csv",
            "-k",
            "2",
            "--missing",
            "reject",
            "-o",
            "x.pca",
        ],
    );
    assert!(!env.path("x.pca").exists());
}

/// A feature with no observed value is an error naming it; rows with none are left out and
/// counted; an infinity stays an error.
#[test]
fn empty_features_and_rows_under_missing_em() {
    let env = Env::new();
    env.write("col.csv", "a,b,c\n1,,3\n2,,1\n4,,0\n3,,2\n");
    let stderr = env.fails(
        1,
        &[
            "fit",
            "col.csv",
            "-k",
            "1",
            "--missing",
            "em",
            "-o",
            "m.pca",
        ],
    );
    assert!(
        stderr.contains("feature 1 has no observed value"),
        "{stderr}"
    );
    assert!(!env.path("m.pca").exists());
    env.write(
        "row.csv",
        "a,b,c\n1,2,3\n,,\n2,1,1\n4,0,0\nNaN,nan,\n3,2,2\n",
    );
    let stderr = env.ok(&[
        "fit",
        "row.csv",
        "-k",
        "1",
        "--missing",
        "em",
        "-o",
        "m.pca",
    ]);
    assert!(
        stderr.contains("2 row(s) with no observed value left out"),
        "{stderr}"
    );
    assert_eq!(env.inspect("m.pca")["n_samples"], 4);
    env.write("inf.csv", "a,b,c\n1,2,3\n2,inf,1\n4,0,0\n");
    let stderr = env.fails(
        1,
        &[
            "fit",
            "inf.csv",
            "-k",
            "1",
            "--missing",
            "em",
            "-o",
            "i.pca",
        ],
    );
    assert!(
        stderr.contains("line 3") && stderr.contains("inf"),
        "{stderr}"
    );
}

/// A fit streamed from the files (a small --memory-limit) gives the model of the fit in
/// memory, to rounding (the chunks sum in another order).
#[test]
fn a_streamed_fit_with_missing_values_equals_the_fit_in_memory() {
    let env = Env::new();
    let mut lcg = Lcg(3);
    let mut text = String::from("a,b,c,d,e,f\n");
    for _ in 0..6000 {
        let (u, v) = (lcg.next() - 0.5, lcg.next() - 0.5);
        let cells: Vec<String> = (0..6)
            .map(|j| {
                let x = u * (j as f64 + 1.0) + v * (3.0 - j as f64) + 0.1 * (lcg.next() - 0.5);
                if lcg.next() < 0.1 {
                    String::new()
                } else {
                    format!("{x:.6}")
                }
            })
            .collect();
        text += &(cells.join(",") + "\n");
    }
    env.write("big.csv", text);
    let fit = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "fit",
            "big.csv",
            "-k",
            "2",
            "--missing",
            "em",
            "--explain",
            "-o",
            name,
        ];
        args.extend_from_slice(extra);
        env.ok(&args)
    };
    let memory = fit("mem.pca", &[]);
    assert!(memory.contains("data read into memory"), "{memory}");
    let streamed = fit("stream.pca", &["--memory-limit", "1M"]);
    assert!(
        streamed.contains("data streamed from the files"),
        "{streamed}"
    );
    let (mut a, mut b) = (env.inspect("mem.pca"), env.inspect("stream.pca"));
    for m in [&mut a, &mut b] {
        assert_eq!(m["missing_values"]["converged"], true, "{m}");
        m["missing_values"] = Value::Null;
    }
    assert_same_model(&a, &b, 1e-7);
}

/// `impute` keeps every observed value and fills the holes with the conditional means, closer
/// to the truth than the column means; `transform --missing em` codes complete rows as
/// `transform` does; `score --missing em` scores what each row shows.
#[test]
fn impute_transform_and_score_rows_with_holes() {
    let env = Env::new();
    let (names, rows, holed) = iris_with_holes(&env);
    fit_iris(&env, &[], "m.pca");
    let stderr = env.ok(&["impute", "m.pca", "holes.csv", "-o", "filled.csv"]);
    let holes = holed.iter().flatten().filter(|v| v.is_none()).count();
    assert!(
        stderr.contains(&format!("filled {holes} missing value(s)")),
        "{stderr}"
    );
    let (header, filled) = env.read_csv("filled.csv");
    assert_eq!(header.as_ref(), Some(&names));
    let mean = numbers(&env.inspect("m.pca")["mean"]);
    let (mut by_model, mut by_mean) = (0.0, 0.0);
    for ((f, truth), h) in filled.iter().zip(&rows).zip(&holed) {
        for j in 0..4 {
            match h[j] {
                Some(v) => assert_eq!(f[j], v),
                None => {
                    by_model += (f[j] - truth[j]).powi(2);
                    by_mean += (mean[j] - truth[j]).powi(2);
                }
            }
        }
    }
    assert!(
        by_model < 0.25 * by_mean,
        "squared error {by_model} against the means' {by_mean}"
    );

    env.ok(&["transform", "m.pca", &iris(), "-o", "plain.csv"]);
    env.ok(&[
        "transform",
        "m.pca",
        &iris(),
        "--missing",
        "em",
        "-o",
        "em.csv",
    ]);
    let (_, plain) = env.read_csv("plain.csv");
    let (_, em) = env.read_csv("em.csv");
    for (a, b) in plain.iter().zip(&em) {
        assert_close(a, b, 1e-12, "codes of complete rows");
    }
    env.ok(&[
        "transform",
        "m.pca",
        "holes.csv",
        "--missing",
        "em",
        "-o",
        "hc.csv",
    ]);
    env.ok(&["transform", "m.pca", "filled.csv", "-o", "fc.csv"]);
    let (_, holed_codes) = env.read_csv("hc.csv");
    let (_, filled_codes) = env.read_csv("fc.csv");
    for (a, b) in holed_codes.iter().zip(&filled_codes) {
        assert_close(
            a,
            b,
            1e-12,
            "codes of rows with holes = codes of the filled rows",
        );
    }
    env.fails(1, &["transform", "m.pca", "holes.csv", "-o", "no.csv"]);
    assert!(!env.path("no.csv").exists());
    env.fails(
        2,
        &[
            "transform",
            "m.pca",
            "holes.csv",
            "--missing",
            "em",
            "--posterior",
            "--posterior-cov",
            "c.csv",
            "-o",
            "p.csv",
        ],
    );
    env.ok(&[
        "score",
        "m.pca",
        "holes.csv",
        "--missing",
        "em",
        "-o",
        "ll.csv",
    ]);
    let (_, ll) = env.read_csv("ll.csv");
    assert_eq!(ll.len(), 150);
    assert!(ll.iter().all(|r| r[0].is_finite()));
    // A row missing nothing scores as without --missing.
    env.ok(&["score", "m.pca", &iris(), "-o", "full.csv"]);
    let (_, full) = env.read_csv("full.csv");
    for (i, h) in holed.iter().enumerate() {
        if h.iter().all(Option::is_some) {
            assert!((ll[i][0] - full[i][0]).abs() <= 1e-12 * full[i][0].abs().max(1.0));
        }
    }
}

/// The Iris rows with holes as a Parquet file whose missing values are nulls.
#[cfg(feature = "parquet")]
fn write_parquet_with_nulls(env: &Env, names: &[String], holed: &Holed) {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, RecordBatch};
    let columns: Vec<(String, ArrayRef)> = names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let values: Vec<Option<f64>> = holed.iter().map(|r| r[j]).collect();
            (
                name.clone(),
                Arc::new(Float64Array::from(values)) as ArrayRef,
            )
        })
        .collect();
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(env.path("holes.parquet")).unwrap();
    io_files::arrow_to_parquet::write_parquet(
        &batch,
        file,
        40,
        parquet::basic::Compression::UNCOMPRESSED,
    );
}

/// Parquet nulls are missing values under `--missing em` (and for `impute`): the fit and the
/// filled values are those of the same holes in CSV; without the flag a null is an error
/// naming the file, row and column, and nothing is written.
#[cfg(feature = "parquet")]
#[test]
fn parquet_nulls_are_missing_values() {
    let env = Env::new();
    let (names, _, holed) = iris_with_holes(&env);
    write_parquet_with_nulls(&env, &names, &holed);
    let stderr = env.fails(1, &["fit", "holes.parquet", "-k", "2", "-o", "plain.pca"]);
    assert!(
        stderr.contains("holes.parquet") && stderr.contains("null"),
        "{stderr}"
    );
    assert!(!env.path("plain.pca").exists());
    for (input, model) in [("holes.csv", "c.pca"), ("holes.parquet", "p.pca")] {
        env.ok(&["fit", input, "-k", "2", "--missing", "em", "-o", model]);
    }
    let (mut a, mut b) = (env.inspect("c.pca"), env.inspect("p.pca"));
    assert_eq!(a["missing_values"], b["missing_values"]);
    for m in [&mut a, &mut b] {
        m["missing_values"] = Value::Null;
    }
    assert_same_model(&a, &b, 1e-12);
    env.ok(&["impute", "c.pca", "holes.csv", "-o", "from_csv.csv"]);
    env.ok(&["impute", "c.pca", "holes.parquet", "-o", "from_parquet.csv"]);
    let (_, x) = env.read_csv("from_csv.csv");
    let (_, y) = env.read_csv("from_parquet.csv");
    assert_eq!(x.len(), 150);
    for (p, q) in x.iter().zip(&y) {
        assert_close(p, q, 1e-12, "filled values");
    }
}

/// Bad input around missing values: NaN without `--missing em` is an error for `score` too; an
/// infinity is an error for `impute` even though NaN is read; a file of another width is an
/// error naming both; a model with σ² = 0 cannot impute. Nothing is written.
#[test]
fn bad_input_with_missing_values_writes_nothing() {
    let env = Env::new();
    iris_with_holes(&env);
    fit_iris(&env, &[], "m.pca");
    let stderr = env.fails(1, &["score", "m.pca", "holes.csv", "-o", "ll.csv"]);
    assert!(
        stderr.contains("holes.csv") && stderr.contains("line"),
        "{stderr}"
    );
    assert!(!env.path("ll.csv").exists());
    env.write(
        "inf.csv",
        "sepal_length,sepal_width,petal_length,petal_width\n5.1,,1.4,0.2\n4.9,3,inf,0.2\n",
    );
    let stderr = env.fails(1, &["impute", "m.pca", "inf.csv", "-o", "f.csv"]);
    assert!(
        stderr.contains("inf.csv") && stderr.contains("line 3") && stderr.contains("inf"),
        "{stderr}"
    );
    assert!(!env.path("f.csv").exists());
    env.write("narrow.csv", "1,,3\n2,1,\n");
    let stderr = env.fails(1, &["impute", "m.pca", "narrow.csv", "-o", "f.csv"]);
    assert!(
        stderr.contains("narrow.csv has 3 feature column(s)") && stderr.contains("fitted on 4"),
        "{stderr}"
    );
    assert!(!env.path("f.csv").exists());
    env.write("wide.csv", "a,b,c,d\n1,2,0,4\n3,1,1,0\n0,5,2,2\n");
    env.ok(&["fit", "wide.csv", "-o", "w.pca"]);
    env.write("wide_holes.csv", "a,b,c,d\n1,,0,4\n");
    let stderr = env.fails(1, &["impute", "w.pca", "wide_holes.csv", "-o", "f.csv"]);
    assert!(stderr.contains("the noise variance is 0"), "{stderr}");
    assert!(!env.path("f.csv").exists());
}
