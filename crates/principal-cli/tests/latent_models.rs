//! End-to-end tests of `fit --model bayesian-pca` and `fit --model mixture`: the model file
//! records the kind, `inspect --json` its fields, `transform`, `score`, `sample` (and `inverse`
//! for Bayesian PCA) work, what a kind does not define is a usage error, and bad parameters are
//! usage errors that write nothing.

use crate::common;

use common::*;

/// N×D data of rank 3 (random loadings) plus a little noise, as CSV with a header.
fn planted_rank_csv(env: &Env) -> String {
    let (n, d) = (300, 12);
    let mut rng = Lcg(7);
    let normal = |rng: &mut Lcg| {
        // Box–Muller.
        let (u, v) = (rng.next().max(1e-12), rng.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    };
    let w: Vec<Vec<f64>> = (0..d)
        .map(|_| {
            (0..3)
                .map(|c| 3.0 / (c + 1) as f64 * normal(&mut rng))
                .collect()
        })
        .collect();
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|_| {
            let z: Vec<f64> = (0..3).map(|_| normal(&mut rng)).collect();
            (0..d)
                .map(|j| (0..3).map(|c| w[j][c] * z[c]).sum::<f64>() + 0.3 * normal(&mut rng))
                .collect()
        })
        .collect();
    let header: Vec<String> = (1..=d).map(|j| format!("x{j}")).collect();
    env.write("planted.csv", to_csv(Some(&header), &rows));
    "planted.csv".into()
}

#[test]
fn bayesian_pca_keeps_a_planted_rank_and_answers_every_command() {
    let env = Env::new();
    let data = planted_rank_csv(&env);
    let stderr = env.ok(&[
        "fit",
        &data,
        "--model",
        "bayesian-pca",
        "--components",
        "8",
        "-o",
        "m.bpca",
    ]);
    assert!(stderr.contains("ARD kept 3 of 8"), "{stderr}");
    let json = env.inspect("m.bpca");
    assert_eq!(json["model"], "bayesian-pca");
    assert_eq!(json["n_components"], 3);
    let alpha = json["alpha"].as_array().unwrap();
    assert_eq!(alpha.len(), 8);
    assert!(
        alpha[..3]
            .iter()
            .all(|a| a.as_f64().is_some_and(|a| a > 0.0))
    );
    assert!(alpha[3..].iter().all(|a| a.is_null()));
    assert_eq!(matrix(&json["components"]).len(), 3);
    assert!(json["noise_variance"].as_f64().unwrap() > 0.0);
    let mean_ll = json["log_likelihood"].as_f64().unwrap();

    env.ok(&["transform", "m.bpca", &data, "-o", "z.csv"]);
    let (header, z) = env.read_csv("z.csv");
    assert_eq!(header.unwrap(), ["latent1", "latent2", "latent3"]);
    assert_eq!((z.len(), z[0].len()), (300, 3));
    let stderr = env.ok(&["score", "m.bpca", &data, "-o", "ll.csv"]);
    let (_, ll) = env.read_csv("ll.csv");
    let mean = ll.iter().map(|r| r[0]).sum::<f64>() / 300.0;
    assert!(
        (mean - mean_ll).abs() < 1e-6 * mean_ll.abs(),
        "{mean} vs {mean_ll}: {stderr}"
    );
    env.ok(&[
        "sample", "m.bpca", "--count", "50", "--seed", "3", "-o", "s.csv",
    ]);
    let (_, s) = env.read_csv("s.csv");
    assert_eq!((s.len(), s[0].len()), (50, 12));
    env.ok(&["inverse", "m.bpca", "z.csv", "-o", "back.csv"]);
    let (_, back) = env.read_csv("back.csv");
    assert_eq!((back.len(), back[0].len()), (300, 12));
    // What Bayesian PCA does not define, and the mixture's flags, are usage errors.
    let err = env.fails(2, &["impute", "m.bpca", &data, "-o", "f.csv"]);
    assert!(err.contains("bayesian-pca"), "{err}");
    let err = env.fails(
        2,
        &["transform", "m.bpca", &data, "--clusters", "-o", "c.csv"],
    );
    assert!(err.contains("--model mixture"), "{err}");
    assert!(!env.path("c.csv").exists());
}

#[test]
fn the_mixture_clusters_iris_and_answers_every_command() {
    let env = Env::new();
    let iris = iris();
    let stderr = env.ok(&[
        "fit",
        &iris,
        "--exclude",
        "species",
        "--model",
        "mixture",
        "--clusters",
        "3",
        "--components",
        "1",
        "--seed",
        "0",
        "--restarts",
        "4",
        "-o",
        "m.mix",
    ]);
    assert!(stderr.contains("3 cluster(s)"), "{stderr}");
    let json = env.inspect("m.mix");
    assert_eq!(json["model"], "mixture");
    let weights = numbers(&json["weights"]);
    assert_eq!(weights.len(), 3);
    assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert!(
        weights.windows(2).all(|w| w[0] >= w[1]),
        "by decreasing weight"
    );
    let clusters = json["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 3);
    for c in clusters {
        assert_eq!(numbers(&c["mean"]).len(), 4);
        assert_eq!(matrix(&c["components"]).len(), 1);
        assert!(c["noise_variance"].as_f64().unwrap() > 0.0);
    }
    let mean_ll = json["log_likelihood"].as_f64().unwrap();

    env.ok(&[
        "transform",
        "m.mix",
        &iris,
        "--exclude",
        "species",
        "--clusters",
        "-o",
        "c.csv",
    ]);
    let (header, labels) = env.read_csv("c.csv");
    assert_eq!(header.unwrap(), ["cluster"]);
    env.ok(&[
        "transform",
        "m.mix",
        &iris,
        "--exclude",
        "species",
        "--responsibilities",
        "-o",
        "r.csv",
    ]);
    let (header, r) = env.read_csv("r.csv");
    assert_eq!(header.unwrap(), ["cluster1", "cluster2", "cluster3"]);
    for (row, label) in r.iter().zip(&labels) {
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let best = (0..3).fold(0, |b, c| if row[c] > row[b] { c } else { b });
        assert_eq!(best as f64, label[0]);
    }
    // Setosa (the first 50 rows) is a cluster of its own.
    assert!(labels[..50].iter().all(|l| l[0] == labels[0][0]));
    assert!(labels[50..].iter().all(|l| l[0] != labels[0][0]));
    env.ok(&[
        "score",
        "m.mix",
        &iris,
        "--exclude",
        "species",
        "-o",
        "ll.csv",
    ]);
    let (_, ll) = env.read_csv("ll.csv");
    let mean = ll.iter().map(|r| r[0]).sum::<f64>() / 150.0;
    assert!(
        (mean - mean_ll).abs() < 1e-6 * mean_ll.abs(),
        "{mean} vs {mean_ll}"
    );
    env.ok(&[
        "sample", "m.mix", "--count", "20", "--seed", "1", "-o", "s.csv",
    ]);
    let (_, s) = env.read_csv("s.csv");
    assert_eq!((s.len(), s[0].len()), (20, 4));
    // A mixture has no inverse: a usage error that writes nothing.
    let err = env.fails(2, &["inverse", "m.mix", "r.csv", "-o", "back.csv"]);
    assert!(err.contains("mixture"), "{err}");
    assert!(!env.path("back.csv").exists());
}

#[test]
fn bad_parameters_are_usage_errors_that_write_nothing() {
    let env = Env::new();
    let iris = iris();
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", &iris, "--exclude", "species", "-o", "bad.model"];
        args.extend_from_slice(extra);
        let err = env.fails(2, &args);
        assert!(!env.path("bad.model").exists(), "{extra:?} wrote a model");
        err
    };
    let err = fit(&["--model", "mixture", "--clusters", "0", "--components", "1"]);
    assert!(err.contains("--clusters 0 is not allowed"), "{err}");
    let err = fit(&["--model", "mixture", "--components", "1"]);
    assert!(err.contains("needs --clusters"), "{err}");
    let err = fit(&[
        "--model",
        "mixture",
        "--clusters",
        "2",
        "--components",
        "1",
        "--restarts",
        "0",
    ]);
    assert!(err.contains("--restarts 0 is not allowed"), "{err}");
    let err = fit(&["--model", "mixture", "--clusters", "2", "--components", "4"]);
    assert!(err.contains("--components 4 is more than the 3"), "{err}");
    let err = fit(&["--model", "bayesian-pca", "--components", "4"]);
    assert!(err.contains("--components 4 is more than the 3"), "{err}");
    let err = fit(&["--model", "bayesian-pca", "--components", "0"]);
    assert!(err.contains("--components"), "{err}");
    let err = fit(&[
        "--model",
        "bayesian-pca",
        "--components",
        "2",
        "--clusters",
        "2",
    ]);
    assert!(
        err.contains("--clusters applies only to --model mixture"),
        "{err}"
    );
    // A good model is not overwritten by a failed fit.
    env.ok(&[
        "fit",
        &iris,
        "--exclude",
        "species",
        "--model",
        "bayesian-pca",
        "-k",
        "2",
        "-o",
        "good.bpca",
    ]);
    let before = std::fs::read(env.path("good.bpca")).unwrap();
    env.fails(
        2,
        &[
            "fit",
            &iris,
            "--exclude",
            "species",
            "--model",
            "mixture",
            "--clusters",
            "0",
            "-k",
            "1",
            "-o",
            "good.bpca",
        ],
    );
    assert_eq!(std::fs::read(env.path("good.bpca")).unwrap(), before);
}

/// Iris's seed 2 sends the first of three restarts to a cluster on 2 rows (k + 1 for one
/// component) whose noise variance collapses to the floor, with the highest likelihood: that
/// restart must not win, and with it the only restart, the fit is an error that writes nothing.
#[test]
fn a_mixture_restart_with_a_degenerate_cluster_does_not_win() {
    let env = Env::new();
    let iris = iris();
    let fit = |restarts: &str, output: &str| {
        vec![
            "fit".to_string(),
            iris.clone(),
            "--exclude".into(),
            "species".into(),
            "--model".into(),
            "mixture".into(),
            "--clusters".into(),
            "3".into(),
            "--components".into(),
            "1".into(),
            "--seed".into(),
            "2".into(),
            "--restarts".into(),
            restarts.into(),
            "-o".into(),
            output.into(),
        ]
    };
    let args = fit("3", "m.mix");
    env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let json = env.inspect("m.mix");
    let weights = numbers(&json["weights"]);
    for (c, cluster) in json["clusters"].as_array().unwrap().iter().enumerate() {
        let rows = weights[c] * 150.0;
        let noise = cluster["noise_variance"].as_f64().unwrap();
        assert!(rows > 2.0 + 1e-3, "cluster {c} on {rows} rows");
        assert!(noise > 1e-6, "cluster {c}'s noise variance {noise}");
    }
    let args = fit("1", "one.mix");
    let stderr = env.fails(1, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(stderr.contains("degenerate cluster"), "{stderr}");
    assert!(!env.path("one.mix").exists());
}

/// `fit --model bayesian-pca --missing em` fits on the observed entries (a tenth of the cells
/// empty) and still finds the planted rank; other kinds refuse `--missing em` as a usage error
/// that writes nothing.
#[test]
fn bayesian_pca_fits_missing_values_and_other_kinds_refuse_them() {
    let env = Env::new();
    let data = planted_rank_csv(&env);
    let text = std::fs::read_to_string(env.path(&data)).unwrap();
    let mut lines = text.lines();
    let mut holed = format!("{}\n", lines.next().unwrap());
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line
            .split(',')
            .enumerate()
            .map(|(j, v)| if (i * 7 + j * 3) % 10 == 0 { "" } else { v })
            .collect();
        holed.push_str(&cells.join(","));
        holed.push('\n');
    }
    env.write("holed.csv", holed);
    let fit = |input: &str, output: &str, missing: bool| {
        let mut args = vec![
            "fit",
            input,
            "--model",
            "bayesian-pca",
            "--components",
            "8",
            "-o",
            output,
        ];
        if missing {
            args.extend(["--missing", "em"]);
        }
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    // Without --missing em an empty cell is an error naming it.
    let args = fit("holed.csv", "refused.bpca", false);
    env.fails(1, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!env.path("refused.bpca").exists());
    let args = fit("holed.csv", "holed.bpca", true);
    env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let args = fit(&data, "full.bpca", false);
    env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let (holed, full) = (env.inspect("holed.bpca"), env.inspect("full.bpca"));
    assert_eq!(holed["n_components"], 3);
    let (a, b) = (
        holed["noise_variance"].as_f64().unwrap(),
        full["noise_variance"].as_f64().unwrap(),
    );
    assert!(
        (a - b).abs() < 0.15 * b,
        "σ² {a} with missing values, {b} without"
    );
    for kind in ["factor-analysis", "kernel", "ica", "mixture"] {
        let mut args = vec![
            "fit",
            "holed.csv",
            "--model",
            kind,
            "--components",
            "2",
            "--missing",
            "em",
            "-o",
            "out.model",
        ];
        if kind == "mixture" {
            args.extend(["--clusters", "2"]);
        }
        let stderr = env.fails(2, &args);
        assert!(
            stderr.contains("--missing em") && stderr.contains(&format!("--model {kind}")),
            "{kind}: {stderr}"
        );
        assert!(!env.path("out.model").exists(), "{kind} wrote a model");
    }
}

/// `report`, `impute`, `align` (either model) and `describe` read PCA models only: given a
/// model of any other kind they are usage errors naming the kind, writing nothing.
#[test]
fn pca_only_commands_refuse_every_other_kind() {
    let env = Env::new();
    let iris = iris();
    env.ok(&[
        "fit",
        &iris,
        "--exclude",
        "species",
        "--components",
        "2",
        "-o",
        "pca.model",
    ]);
    for kind in [
        "factor-analysis",
        "bayesian-pca",
        "kernel",
        "ica",
        "mixture",
    ] {
        let model = format!("{kind}.model");
        let mut args = vec![
            "fit",
            &iris,
            "--exclude",
            "species",
            "--model",
            kind,
            "--components",
            "2",
            "-o",
            &model,
        ];
        if kind == "mixture" {
            args.extend(["--clusters", "2"]);
            args[7] = "1";
        }
        env.ok(&args);
        let commands: Vec<(&str, Vec<&str>)> = vec![
            ("report", vec!["report", &model, "-o", "out"]),
            (
                "report",
                vec![
                    "report",
                    &model,
                    "--data",
                    &iris,
                    "--exclude",
                    "species",
                    "-o",
                    "out",
                ],
            ),
            (
                "impute",
                vec![
                    "impute",
                    &model,
                    &iris,
                    "--exclude",
                    "species",
                    "-o",
                    "out.csv",
                ],
            ),
            (
                "align",
                vec![
                    "align",
                    &model,
                    "--reference",
                    "pca.model",
                    "-o",
                    "out.model",
                ],
            ),
            (
                "align",
                vec![
                    "align",
                    "pca.model",
                    "--reference",
                    &model,
                    "-o",
                    "out.model",
                ],
            ),
            (
                "describe",
                vec!["describe", &model, "--data", &iris, "--output", "out"],
            ),
        ];
        for (command, args) in commands {
            let stderr = env.fails(2, &args);
            assert!(
                stderr.contains(&format!("--model {kind}"))
                    && stderr.contains(&format!("does not define {command}")),
                "{args:?}: {stderr}"
            );
            for out in ["out", "out.csv", "out.model"] {
                assert!(!env.path(out).exists(), "{args:?} wrote {out}");
            }
        }
    }
}
