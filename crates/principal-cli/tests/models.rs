//! End-to-end tests of `--model KIND`: fitting each kind beyond PCA, what `inspect --json`
//! shows, `transform`/`inverse`/`score`/`sample` where the kind defines them, usage errors
//! (exit 2, nothing written) where it does not and for bad parameters, and PCA model files as
//! they were.

use std::fs;

use crate::common;

use common::*;
use serde_json::Value;

fn fit_iris(env: &Env, kind: &str, k: &str, extra: &[&str], model: &str) -> String {
    let iris = iris();
    let mut args = vec![
        "fit",
        &iris,
        "--exclude",
        "species",
        "--model",
        kind,
        "-k",
        k,
        "-o",
        model,
    ];
    args.extend_from_slice(extra);
    env.ok(&args)
}

fn shape(v: &Value) -> (usize, usize) {
    let rows = matrix(v);
    (rows.len(), rows[0].len())
}

/// A scikit-learn fixture of `fixtures/models/`.
fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/models")
        .join(format!("{name}.json"));
    serde_json::from_str(&fs::read_to_string(path).expect("fixture")).expect("JSON")
}

#[test]
fn factor_analysis_fits_inspects_transforms_scores_and_samples() {
    let env = Env::new();
    // Data with two planted factors, from the scikit-learn fixture.
    let case = fixture("fa_planted_k2");
    let rows = matrix(&case["x"]);
    env.write("x.csv", to_csv(None, &rows));
    let stderr = env.ok(&[
        "fit",
        "x.csv",
        "--model",
        "factor-analysis",
        "-k",
        "2",
        "--rotation",
        "varimax",
        "-o",
        "fa.model",
    ]);
    assert!(stderr.contains("rotation varimax"), "{stderr}");
    let json = env.inspect("fa.model");
    assert_eq!(json["model"], "factor-analysis");
    assert_eq!(shape(&json["components"]), (2, 7));
    assert_eq!(json["converged"], true);
    assert_close(
        &numbers(&json["noise_variance"]),
        &numbers(&case["noise_variance"]),
        1e-6,
        "noise_variance",
    );
    assert_close(
        &numbers(&json["mean"]),
        &numbers(&case["mean"]),
        1e-12,
        "mean",
    );
    let ll = json["log_likelihood"].as_f64().unwrap();
    assert!(
        (ll - case["log_likelihood"].as_f64().unwrap()).abs() < 1e-6,
        "{ll}"
    );

    env.ok(&["score", "fa.model", "x.csv", "-o", "ll.csv"]);
    let (header, scores) = env.read_csv("ll.csv");
    assert_eq!(header.unwrap(), ["log_likelihood"]);
    let scores: Vec<f64> = scores.iter().map(|r| r[0]).collect();
    assert_close(
        &scores,
        &numbers(&case["score_samples"]),
        1e-6,
        "score_samples",
    );

    env.ok(&["transform", "fa.model", "x.csv", "-o", "z.csv"]);
    let (header, z) = env.read_csv("z.csv");
    assert_eq!(header.unwrap(), ["factor1", "factor2"]);
    assert_eq!((z.len(), z[0].len()), (rows.len(), 2));
    env.ok(&["inverse", "fa.model", "z.csv", "-o", "back.csv"]);
    assert_eq!(env.read_csv("back.csv").1[0].len(), 7);
    env.ok(&[
        "sample", "fa.model", "-n", "5", "--seed", "3", "-o", "s.csv",
    ]);
    assert_eq!(env.read_csv("s.csv").1.len(), 5);
}

#[test]
fn kernel_pca_fits_transforms_and_inverts() {
    let env = Env::new();
    fit_iris(
        &env,
        "kernel",
        "3",
        &["--kernel", "rbf", "--gamma", "0.5", "--alpha", "0.1"],
        "k.model",
    );
    let json = env.inspect("k.model");
    assert_eq!(json["model"], "kernel");
    let case = fixture("kpca_rbf_gamma0_5");
    assert_close(
        &numbers(&json["eigenvalues"]),
        &numbers(&case["eigenvalues"]),
        1e-8,
        "eigenvalues",
    );
    env.ok(&[
        "transform",
        "k.model",
        &iris(),
        "--exclude",
        "species",
        "-o",
        "z.csv",
    ]);
    let (header, z) = env.read_csv("z.csv");
    assert_eq!(header.unwrap(), ["kpc1", "kpc2", "kpc3"]);
    let theirs = matrix(&case["codes"]);
    for c in 0..3 {
        let sign = (z[0][c] * theirs[0][c]).signum();
        let ours: Vec<f64> = z.iter().map(|r| sign * r[c]).collect();
        let expected: Vec<f64> = theirs.iter().map(|r| r[c]).collect();
        assert_close(&ours, &expected, 1e-8, "codes");
    }
    env.ok(&["inverse", "k.model", "z.csv", "-o", "back.csv"]);
    assert_eq!(env.read_csv("back.csv").1[0].len(), 4);
    // More components than features: kernel PCA is bounded by N, not D.
    fit_iris(&env, "kernel", "6", &[], "k6.model");
    assert_eq!(numbers(&env.inspect("k6.model")["eigenvalues"]).len(), 6);
}

/// `--pre-image skip`: the same eigenvalues and codes as the map learnt, a smaller file
/// without `dual_coef`, the summary and `inspect` say so, and `inverse` is a usage error that
/// names the flag and writes nothing; a PCA fit given the flag is a usage error too.
#[test]
fn kernel_pca_without_its_pre_image_map_transforms_and_refuses_inverse() {
    let env = Env::new();
    let flags = ["--kernel", "rbf", "--gamma", "0.5", "--alpha", "0.1"];
    fit_iris(&env, "kernel", "3", &flags, "learnt.model");
    let skip = [&flags[..], &["--pre-image", "skip"]].concat();
    let stderr = fit_iris(&env, "kernel", "3", &skip, "skipped.model");
    assert!(
        stderr.contains("pre-image map skipped (no inverse)"),
        "{stderr}"
    );
    let (learnt, skipped) = (env.inspect("learnt.model"), env.inspect("skipped.model"));
    assert_eq!(learnt["pre_image"], "learn");
    assert_eq!(skipped["pre_image"], "skip");
    assert_eq!(learnt["eigenvalues"], skipped["eigenvalues"]);
    let size = |name: &str| fs::metadata(env.path(name)).unwrap().len();
    // 150 × 4 values of the map, 8 bytes each, are not stored.
    assert!(size("skipped.model") + 150 * 4 * 8 <= size("learnt.model"));
    let iris = iris();
    for (model, codes) in [("learnt.model", "a.csv"), ("skipped.model", "b.csv")] {
        env.ok(&[
            "transform",
            model,
            &iris,
            "--exclude",
            "species",
            "-o",
            codes,
        ]);
    }
    assert_eq!(env.read_csv("a.csv"), env.read_csv("b.csv"));
    let stderr = env.fails(2, &["inverse", "skipped.model", "b.csv", "-o", "back.csv"]);
    assert!(
        stderr.contains("does not define inverse") && stderr.contains("--pre-image skip"),
        "{stderr}"
    );
    assert!(!env.path("back.csv").exists());
    env.ok(&["inverse", "learnt.model", "a.csv", "-o", "back.csv"]);
    let stderr = env.fails(
        2,
        &[
            "fit",
            &iris,
            "--exclude",
            "species",
            "-k",
            "2",
            "--pre-image",
            "skip",
            "-o",
            "p.model",
        ],
    );
    assert!(stderr.contains("--pre-image"), "{stderr}");
    assert!(!env.path("p.model").exists());
}

#[test]
fn ica_separates_mixed_signals_and_reports_convergence() {
    let env = Env::new();
    let case = fixture("ica_mixed_logcosh");
    env.write("x.csv", to_csv(None, &matrix(&case["x"])));
    let stderr = env.ok(&[
        "fit",
        "x.csv",
        "--model",
        "ica",
        "-k",
        "3",
        "--fun",
        "logcosh",
        "--seed",
        "4",
        "-o",
        "ica.model",
    ]);
    assert!(stderr.contains("(converged)"), "{stderr}");
    let json = env.inspect("ica.model");
    assert_eq!(json["model"], "ica");
    assert_eq!(shape(&json["mixing"]), (3, 3));
    assert_eq!(shape(&json["components"]), (3, 3));
    assert_eq!(json["converged"], true);
    assert!(json["n_iter"].as_u64().unwrap() >= 1);
    env.ok(&["transform", "ica.model", "x.csv", "-o", "s.csv"]);
    let (_, sources) = env.read_csv("s.csv");
    let truth = matrix(&case["true_sources"]);
    let n = truth.len() as f64;
    for a in 0..3 {
        let best = (0..3)
            .map(|b| {
                let mean_t = truth.iter().map(|r| r[a]).sum::<f64>() / n;
                let mean_s = sources.iter().map(|r| r[b]).sum::<f64>() / n;
                let (mut st, mut ss, mut ts) = (0.0, 0.0, 0.0);
                for (t, s) in truth.iter().zip(&sources) {
                    let (dt, ds) = (t[a] - mean_t, s[b] - mean_s);
                    st += dt * ds;
                    ss += ds * ds;
                    ts += dt * dt;
                }
                (st / (ss * ts).sqrt()).abs()
            })
            .fold(0.0, f64::max);
        assert!(best > 0.95, "true source {a}: best |correlation| {best}");
    }
}

/// An operation a kind does not define: exit 2, the kind and the command named, no output.
#[test]
fn undefined_operations_are_usage_errors_that_write_nothing() {
    let env = Env::new();
    fit_iris(&env, "kernel", "2", &[], "k.model");
    fit_iris(&env, "ica", "2", &[], "ica.model");
    fit_iris(&env, "factor-analysis", "1", &[], "fa.model");
    let iris = iris();
    for (args, kind, command) in [
        (
            vec![
                "score",
                "k.model",
                &iris,
                "--exclude",
                "species",
                "-o",
                "out.csv",
            ],
            "kernel",
            "score",
        ),
        (
            vec![
                "score",
                "ica.model",
                &iris,
                "--exclude",
                "species",
                "-o",
                "out.csv",
            ],
            "ica",
            "score",
        ),
        (
            vec!["sample", "ica.model", "-n", "3", "-o", "out.csv"],
            "ica",
            "sample",
        ),
        (
            vec!["sample", "k.model", "-n", "3", "-o", "out.csv"],
            "kernel",
            "sample",
        ),
        (
            vec!["report", "fa.model", "-o", "out"],
            "factor-analysis",
            "report",
        ),
        (
            vec![
                "impute",
                "fa.model",
                &iris,
                "--exclude",
                "species",
                "-o",
                "out.csv",
            ],
            "factor-analysis",
            "impute",
        ),
    ] {
        let stderr = env.fails(2, &args);
        assert!(
            stderr.contains(&format!("--model {kind}")) && stderr.contains(command),
            "{args:?}: {stderr}"
        );
        assert!(
            !env.path("out.csv").exists() && !env.path("out").exists(),
            "{args:?} wrote output"
        );
    }
    let stderr = env.fails(
        2,
        &[
            "transform",
            "fa.model",
            &iris,
            "--exclude",
            "species",
            "--posterior",
            "-o",
            "out.csv",
        ],
    );
    assert!(stderr.contains("--posterior"), "{stderr}");
    assert!(!env.path("out.csv").exists());
}

/// Bad parameters are usage errors that write nothing and keep an existing model.
#[test]
fn bad_parameters_are_usage_errors_that_keep_the_old_model() {
    let env = Env::new();
    fit_iris(&env, "pca", "2", &[], "m.model");
    let before = fs::read(env.path("m.model")).unwrap();
    let iris = iris();
    let base = [
        "fit",
        iris.as_str(),
        "--exclude",
        "species",
        "-o",
        "m.model",
    ];
    for (extra, expected) in [
        (
            vec!["--model", "kernel", "-k", "2", "--gamma", "-1"],
            "--gamma -1",
        ),
        (
            vec!["--model", "kernel", "-k", "2", "--gamma", "0"],
            "--gamma 0",
        ),
        (
            vec!["--model", "kernel", "-k", "2", "--alpha", "-0.5"],
            "--alpha -0.5",
        ),
        (
            vec!["--model", "kernel", "-k", "151"],
            "more than the 150 rows",
        ),
        (vec!["--model", "ica", "-k", "0"], "--components 0"),
        (
            vec!["--model", "factor-analysis", "-k", "5"],
            "--components 5 is more than the 4 features",
        ),
        (vec!["--model", "ica", "-k", "5"], "--components 5"),
        (vec!["--model", "ica"], "needs --components"),
        (
            vec!["--model", "ica", "-k", "2", "--rotation", "varimax"],
            "--rotation applies only to --model factor-analysis",
        ),
        (
            vec!["--model", "factor-analysis", "-k", "2", "--whiten"],
            "--whiten",
        ),
        (vec!["--model", "mixture", "-k", "2"], "needs --clusters"),
        (vec!["--model", "kmeans", "-k", "2"], "kmeans"),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(&extra);
        let stderr = env.fails(2, &args);
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert_eq!(
            fs::read(env.path("m.model")).unwrap(),
            before,
            "{extra:?} changed the model"
        );
    }
}

/// The N×N kernel matrix is checked against --memory-limit before it is built.
#[test]
fn a_kernel_matrix_over_the_memory_limit_is_refused() {
    let env = Env::new();
    let rows: Vec<Vec<f64>> = (0..600)
        .map(|i| vec![(i % 7) as f64, (i % 11) as f64 * 0.5])
        .collect();
    env.write("x.csv", to_csv(None, &rows));
    // 600² × 8 bytes × 6 matrices = 17.3 MB.
    let stderr = env.fails(
        2,
        &[
            "fit",
            "x.csv",
            "--model",
            "kernel",
            "-k",
            "2",
            "--memory-limit",
            "17M",
            "-o",
            "k.model",
        ],
    );
    assert!(
        stderr.contains("--memory-limit") && stderr.contains("18 MB"),
        "{stderr}"
    );
    assert!(!env.path("k.model").exists());
    env.ok(&[
        "fit",
        "x.csv",
        "--model",
        "kernel",
        "-k",
        "2",
        "--memory-limit",
        "18M",
        "-o",
        "k.model",
    ]);
}

/// PCA model files are as they were: no `model` key, format version 1; a file written before
/// the kinds existed reads, and so does every command on it.
#[test]
fn pca_model_files_are_unchanged_and_old_files_read() {
    let env = Env::new();
    fit_iris(&env, "pca", "2", &[], "new.model");
    let bytes = fs::read(env.path("new.model")).unwrap();
    let header = String::from_utf8_lossy(
        &bytes[8..8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize],
    )
    .into_owned();
    assert!(
        header.contains("\"format_version\":\"1\"") && !header.contains("\"model\""),
        "{header}"
    );
    let old = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/models/old/iris_pca_k2_v1.safetensors");
    let old = old.display().to_string();
    let json = env.inspect(&old);
    assert_eq!(json["n_components"], 2);
    assert_same_model(&json, &env.inspect("new.model"), 1e-12);
    env.ok(&[
        "transform",
        &old,
        &iris(),
        "--exclude",
        "species",
        "-o",
        "z.csv",
    ]);
    env.ok(&[
        "score",
        &old,
        &iris(),
        "--exclude",
        "species",
        "-o",
        "ll.csv",
    ]);
}
