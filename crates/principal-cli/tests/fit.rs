//! End-to-end tests of `principal fit` (and `inspect`) on real data: the reference values, every
//! solver, standardization, shards and formats.

use crate::common;

use common::*;

#[test]
fn iris_fit_and_inspect_json_match_the_reference_values() {
    let env = Env::new();
    let summary = env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--output",
        "iris.pca",
    ]);
    assert!(summary.contains("150 samples × 4 features"), "{summary}");
    assert!(summary.contains("4 component"), "{summary}");
    assert!(
        summary.contains("solver: ") && summary.contains("chosen by auto"),
        "{summary}"
    );
    assert!(summary.contains("iris.pca"), "{summary}");

    let json = env.inspect("iris.pca");
    assert_eq!(json["n_samples"], 150);
    assert_eq!(json["n_features"], 4);
    assert_eq!(json["n_components"], 4);
    assert_eq!(json["ddof"], 1);
    assert_eq!(json["standardize"], false);
    assert!(
        ["covariance", "gram", "svd"].contains(&json["solver"].as_str().unwrap()),
        "{}",
        json["solver"]
    );
    assert!(json["scale"].is_null());
    assert_eq!(
        json["feature_names"],
        serde_json::json!(["sepal_length", "sepal_width", "petal_length", "petal_width"])
    );
    assert_close(
        &numbers(&json["explained_variance"]),
        &IRIS_EIGENVALUES,
        1e-8,
        "explained_variance",
    );
    let total: f64 = IRIS_EIGENVALUES.iter().sum();
    let ratios: Vec<f64> = IRIS_EIGENVALUES.iter().map(|v| v / total).collect();
    assert_close(
        &numbers(&json["explained_variance_ratio"]),
        &ratios,
        1e-8,
        "explained_variance_ratio",
    );
    let singular: Vec<f64> = IRIS_EIGENVALUES
        .iter()
        .map(|v| (v * 149.0).sqrt())
        .collect();
    assert_close(
        &numbers(&json["singular_values"]),
        &singular,
        1e-6,
        "singular_values",
    );
    assert_eq!(json["noise_variance"].as_f64(), Some(0.0));

    let components = matrix(&json["components"]);
    assert_eq!(components.len(), 4);
    let pc1 = &components[0];
    let sign = pc1[0].signum() * IRIS_PC1[0].signum();
    let expected: Vec<f64> = IRIS_PC1.iter().map(|v| v * sign).collect();
    assert_close(pc1, &expected, 1e-6, "first component");
    // The sign rule: the entry of largest magnitude is positive.
    for row in &components {
        let largest = row
            .iter()
            .copied()
            .fold(0.0_f64, |m, v| if v.abs() > m.abs() { v } else { m });
        assert!(largest > 0.0, "sign rule broken: {row:?}");
    }
}

#[test]
fn iris_with_two_components_reports_noise_variance_and_percentages() {
    let env = Env::new();
    let summary = env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--components",
        "2",
        "--output",
        "iris.pca",
    ]);
    assert!(
        summary.contains("97.77%"),
        "total variance explained missing:\n{summary}"
    );
    assert!(summary.contains("pc1 92.46%"), "{summary}");
    let json = env.inspect("iris.pca");
    assert_eq!(json["n_components"], 2);
    let noise = (IRIS_EIGENVALUES[2] + IRIS_EIGENVALUES[3]) / 2.0;
    assert!((json["noise_variance"].as_f64().unwrap() - noise).abs() < 1e-8);

    let out = env.run(&["inspect", "iris.pca"]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "n_samples",
        "150",
        "n_components",
        "solver",
        "pc1",
        "4.22824171",
        "92.46%",
        "97.77%",
        "noise_variance",
    ] {
        assert!(
            table.contains(needle),
            "{needle:?} missing from inspect:\n{table}"
        );
    }
}

#[test]
fn variance_fraction_keeps_the_fewest_components_reaching_it() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--variance",
        "0.95",
        "--output",
        "m",
    ]);
    assert_eq!(env.inspect("m")["n_components"], 2);
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--variance",
        "0.9",
        "--output",
        "m",
    ]);
    assert_eq!(env.inspect("m")["n_components"], 1);
}

#[test]
fn every_solver_gives_the_iris_eigenvalues() {
    let env = Env::new();
    for solver in ["covariance", "gram", "svd", "auto"] {
        let summary = env.ok(&[
            "fit",
            &iris(),
            "--exclude",
            "species",
            "--solver",
            solver,
            "--output",
            "m",
        ]);
        if solver == "auto" {
            assert!(
                summary.contains("chosen by auto"),
                "auto must say why:\n{summary}"
            );
        }
        let json = env.inspect("m");
        assert_close(
            &numbers(&json["explained_variance"]),
            &IRIS_EIGENVALUES,
            1e-8,
            solver,
        );
    }
}

#[test]
fn standardize_and_ddof_zero_are_recorded() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--standardize",
        "--ddof",
        "0",
        "--output",
        "m",
    ]);
    let json = env.inspect("m");
    assert_eq!(json["standardize"], true);
    assert_eq!(json["ddof"], 0);
    assert_eq!(numbers(&json["scale"]).len(), 4);
    // The correlation matrix has trace D.
    assert!((json["total_variance"].as_f64().unwrap() - 4.0).abs() < 1e-12);
}

#[test]
fn shards_give_the_same_model_as_one_file() {
    let env = Env::new();
    let (names, rows) = iris_rows();
    env.write("all.csv", to_csv(Some(&names), &rows));
    env.write("part1.csv", to_csv(Some(&names), &rows[..60]));
    env.write("part2.csv", to_csv(Some(&names), &rows[60..]));
    env.ok(&["fit", "all.csv", "--output", "one.pca"]);
    env.ok(&["fit", "part1.csv", "part2.csv", "--output", "two.pca"]);
    assert_same_model(&env.inspect("one.pca"), &env.inspect("two.pca"), 1e-12);
    // Transform accepts shards too.
    env.ok(&[
        "transform",
        "one.pca",
        "part1.csv",
        "part2.csv",
        "--output",
        "codes.csv",
    ]);
    assert_eq!(env.read_csv("codes.csv").1.len(), 150);
}

#[test]
fn npy_input_gives_the_same_model_as_csv() {
    let env = Env::new();
    let (names, rows) = iris_rows();
    env.write("iris.csv", to_csv(Some(&names), &rows));
    env.write("iris64.npy", npy(&rows, false));
    env.write("iris32.npy", npy(&rows, true));
    env.ok(&["fit", "iris.csv", "--output", "csv.pca"]);
    env.ok(&["fit", "iris64.npy", "--output", "npy64.pca"]);
    env.ok(&["fit", "iris32.npy", "--output", "npy32.pca"]);
    let csv = env.inspect("csv.pca");
    let npy64 = env.inspect("npy64.pca");
    assert!(npy64["feature_names"].is_null(), "NPY has no column names");
    assert_close(
        &numbers(&npy64["explained_variance"]),
        &numbers(&csv["explained_variance"]),
        1e-12,
        "f64 npy",
    );
    // f32 storage rounds the data (≈ 1e-7 relative), not the arithmetic.
    let npy32 = env.inspect("npy32.pca");
    assert_close(
        &numbers(&npy32["explained_variance"]),
        &IRIS_EIGENVALUES,
        1e-5,
        "f32 npy",
    );
    env.ok(&[
        "transform",
        "npy64.pca",
        "iris64.npy",
        "--output",
        "codes.npy",
    ]);
    env.ok(&["inverse", "npy64.pca", "codes.npy", "--output", "back.csv"]);
    let (header, back) = env.read_csv("back.csv");
    assert!(
        header.is_none(),
        "a model without feature names writes no header"
    );
    for (a, b) in back.iter().zip(&rows) {
        assert_close(a, b, 1e-9, "npy round trip");
    }
}

#[test]
fn mnist_with_fifty_components() {
    let env = Env::new();
    let mnist = data("mnist-5k.csv.gz").display().to_string();
    let summary = env.ok(&[
        "fit",
        &mnist,
        "--exclude",
        "784",
        "--components",
        "50",
        "--output",
        "mnist.pca",
    ]);
    assert!(summary.contains("5000 samples × 784 features"), "{summary}");
    let json = env.inspect("mnist.pca");
    assert_eq!(json["n_samples"], 5000);
    assert_eq!(json["n_features"], 784);
    assert_eq!(json["n_components"], 50);
    assert!(json["feature_names"].is_null());
    let ev = numbers(&json["explained_variance"]);
    assert!(ev.windows(2).all(|w| w[0] >= w[1]), "eigenvalues sorted");
    let captured: f64 = numbers(&json["explained_variance_ratio"]).iter().sum();
    assert!(
        captured > 0.7 && captured < 1.0,
        "50 components of MNIST capture {captured}"
    );
    assert!(json["noise_variance"].as_f64().unwrap() > 0.0);
    env.ok(&[
        "transform",
        "mnist.pca",
        &mnist,
        "--exclude",
        "784",
        "--output",
        "codes.npy",
    ]);
}

#[test]
fn zero_variance_feature_is_named_in_a_warning_when_standardizing() {
    let env = Env::new();
    env.write("c.csv", "a,constant,b\n1,5,2\n2,5,1\n3,5,5\n4,5,3\n");
    let summary = env.ok(&["fit", "c.csv", "--standardize", "--output", "m"]);
    assert!(
        summary.contains("warning:") && summary.contains("\"constant\""),
        "{summary}"
    );
    assert_eq!(
        env.inspect("m")["zero_variance_features"],
        serde_json::json!([1])
    );
}

#[test]
fn wide_data_uses_the_gram_solver_and_says_why() {
    let env = Env::new();
    let mut rng = Lcg(7);
    let rows: Vec<Vec<f64>> = (0..30)
        .map(|_| (0..400).map(|_| rng.next()).collect())
        .collect();
    env.write("wide.csv", to_csv(None, &rows));
    let summary = env.ok(&["fit", "wide.csv", "--output", "m"]);
    assert!(
        summary.contains("solver: gram") && summary.contains("Gram"),
        "{summary}"
    );
    assert_eq!(env.inspect("m")["n_components"], 30);
}

/// The summary names the eigensolver's route and, for the dense one, why: certified
/// Krylov–Schur for a few components of 300 features; the whole decomposition when a rule
/// needs every eigenvalue, when 8 (k + 5) exceeds the features, and for the gram solver; no
/// line for a solver without a symmetric eigenproblem.
#[test]
fn the_summary_names_the_eigensolver_route_and_why() {
    let env = Env::new();
    let mut rng = Lcg(11);
    let rows: Vec<Vec<f64>> = (0..600)
        .map(|_| {
            (0..300)
                .map(|j| (rng.next() - 0.5) * (1.0 + 300.0 / (1.0 + j as f64)))
                .collect()
        })
        .collect();
    env.write("decaying.csv", to_csv(None, &rows));
    let route = |args: &[&str]| {
        let mut all = vec!["fit", "decaying.csv", "--output", "m"];
        all.extend_from_slice(args);
        let summary = env.ok(&all);
        summary
            .lines()
            .find_map(|l| l.strip_prefix("eigensolver: "))
            .map(str::to_owned)
    };
    let covariance = ["--solver", "covariance"];
    let certified = route(&[&covariance[..], &["-k", "10"]].concat());
    assert_eq!(
        certified.as_deref(),
        Some(
            "certified Krylov–Schur (the leading eigenpairs only; residuals, gap and none-missed \
             checks passed)"
        )
    );
    let every = route(&[&covariance[..], &["--components", "mle"]].concat()).unwrap();
    assert!(every.ends_with("every eigenvalue is needed to choose the number of components"));
    let many = route(&[&covariance[..], &["-k", "40"]].concat()).unwrap();
    assert!(
        many.starts_with("dense (tridiagonal QR): 8 (k + 5) exceeds"),
        "{many}"
    );
    let gram = route(&["--solver", "gram", "-k", "10"]).unwrap();
    assert!(
        gram.ends_with("the gram solver decomposes its N×N matrix whole"),
        "{gram}"
    );
    assert_eq!(route(&["--solver", "randomized", "-k", "10"]), None);
}
