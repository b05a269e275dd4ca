//! Choosing the number of components from the command line: `fit --components
//! mle|gavish-donoho|cv` (the model, the summary line that says which criterion chose M and
//! the value), `principal choose` (the table and --json), and bad input: clear errors, nothing
//! written, a good model never overwritten.

use crate::common;

use std::fs;

use common::*;
use serde_json::Value;

/// Iris's four measurements (without the species), written into the test's directory.
fn numeric_iris(env: &Env) -> String {
    let (header, rows) = iris_rows();
    env.write("iris4.csv", to_csv(Some(&header), &rows));
    "iris4.csv".to_string()
}

/// Iris's M by Minka's evidence, as scikit-learn's PCA(n_components='mle')
/// (fixtures/choose/mle_iris.json).
const IRIS_MLE: u64 = 3;

#[test]
fn fit_by_mle_keeps_scikit_learns_number_and_says_why() {
    let env = Env::new();
    let i = numeric_iris(&env);
    let stderr = env.ok(&["fit", &i, "--components", "mle", "-o", "m.safetensors"]);
    assert!(
        stderr.contains("fitted 3 component(s)")
            && stderr.contains(
                "components: 3 component(s) chosen by mle (Minka's Bayesian evidence): log evidence"
            ),
        "{stderr}"
    );
    assert_eq!(env.inspect("m.safetensors")["n_components"], IRIS_MLE);
}

#[test]
fn fit_by_gavish_donoho_and_by_cross_validation_report_their_settings() {
    let env = Env::new();
    let i = numeric_iris(&env);
    let given = env.ok(&[
        "fit",
        &i,
        "--components",
        "gavish-donoho",
        "--noise-sigma",
        "0.1",
        "-o",
        "g.safetensors",
    ]);
    assert!(
        given.contains("chosen by gavish-donoho: singular values above the threshold")
            && given.contains("noise σ 0.1 given"),
        "{given}"
    );
    let estimated = env.ok(&["fit", &i, "--components", "gavish-donoho", "-o", "e"]);
    assert!(
        estimated.contains("estimated from the median singular value"),
        "{estimated}"
    );
    let cv = env.ok(&[
        "fit",
        &i,
        "--components",
        "cv",
        "--folds",
        "3",
        "--seed",
        "4",
        "-o",
        "c",
    ]);
    assert!(
        cv.contains("chosen by cv (3-fold cross-validation, seed 4): mean held-out log-likelihood"),
        "{cv}"
    );
    // The same seed, the same model.
    env.ok(&[
        "fit",
        &i,
        "--components",
        "cv",
        "--folds",
        "3",
        "--seed",
        "4",
        "-o",
        "c2",
    ]);
    assert_eq!(
        fs::read(env.path("c")).unwrap(),
        fs::read(env.path("c2")).unwrap()
    );
    // A given number records no choice.
    let fixed = env.ok(&["fit", &i, "--components", "2", "-o", "f"]);
    assert!(!fixed.contains("components:"), "{fixed}");
}

#[test]
fn choose_prints_every_criterion_and_its_curve() {
    let env = Env::new();
    let i = numeric_iris(&env);
    let out = env.run(&["choose", &i]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "variance 0.8",
        "variance 0.99",
        "kaiser",
        "broken-stick",
        "parallel",
        "mle",
        "gavish-donoho",
        "cv",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(
        text.contains("95th percentile of 100 permutations (seed 0)"),
        "{text}"
    );
    assert!(
        text.contains("1 fit")
            && text.contains("100 permuted spectra")
            && text.contains("5 fold fits"),
        "{text}"
    );
    // One row per M: 4 for Iris.
    let rows = text
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<usize>().is_ok())
        })
        .count();
    assert_eq!(rows, 4, "{text}");
}

#[test]
fn choose_json_has_every_choice_within_range_and_the_work_done() {
    let env = Env::new();
    let i = numeric_iris(&env);
    let out = env.run(&[
        "choose",
        &i,
        "--json",
        "--max-components",
        "3",
        "--permutations",
        "20",
        "--folds",
        "4",
        "--seed",
        "9",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["n_samples"], 150);
    assert_eq!(v["max_components"], 3);
    let criteria = v["criteria"].as_array().unwrap();
    assert_eq!(criteria.len(), 10);
    for c in criteria {
        let m = c["n_components"].as_u64().unwrap();
        assert!((1..=3).contains(&m), "{c}");
        assert_eq!(c["statistic"].as_array().unwrap().len(), 3, "{c}");
    }
    let mle = criteria.iter().find(|c| c["criterion"] == "mle").unwrap();
    assert_eq!(mle["n_components"], IRIS_MLE);
    let parallel = criteria
        .iter()
        .find(|c| c["criterion"] == "parallel")
        .unwrap();
    assert_eq!(
        (
            parallel["permutations"].as_u64(),
            parallel["percentile"].as_f64()
        ),
        (Some(20), Some(95.0))
    );
    let work = &v["work"];
    assert_eq!(
        (
            work["fits"].as_u64(),
            work["permuted_spectra"].as_u64(),
            work["fold_fits"].as_u64()
        ),
        (Some(1), Some(20), Some(4))
    );
}

#[test]
fn mle_on_a_single_row_is_a_clear_error_and_writes_nothing() {
    let env = Env::new();
    let i = numeric_iris(&env);
    env.write("one.csv", "a,b,c\n1,2,3\n");
    for ddof in ["0", "1"] {
        let stderr = env.fails(
            1,
            &[
                "fit",
                "one.csv",
                "--components",
                "mle",
                "--ddof",
                ddof,
                "-o",
                "m.safetensors",
            ],
        );
        assert!(
            stderr.contains("mle cannot choose the number of components: it needs at least 2 samples; the data has 1"),
            "{stderr}"
        );
        assert!(!env.path("m.safetensors").exists());
    }
    // A good model already there is left as it was.
    env.ok(&["fit", &i, "-o", "m.safetensors"]);
    let before = fs::read(env.path("m.safetensors")).unwrap();
    env.fails(
        1,
        &[
            "fit",
            "one.csv",
            "--components",
            "mle",
            "-o",
            "m.safetensors",
        ],
    );
    assert_eq!(fs::read(env.path("m.safetensors")).unwrap(), before);
    let leftovers: Vec<_> = fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    // one.csv, iris4.csv and the model: no temporary file left behind.
    assert_eq!(leftovers.len(), 3, "{leftovers:?}");
}

#[test]
fn choose_on_one_feature_is_a_clear_error_and_prints_nothing() {
    let env = Env::new();
    env.write("one_feature.csv", "x\n1\n2\n4\n8\n");
    let out = env.run(&["choose", "one_feature.csv"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = env.fails(1, &["choose", "one_feature.csv", "--json"]);
    assert!(
        stderr.contains(
            "it needs at least 2 features; the data has 1 (one feature is one component)"
        ),
        "{stderr}"
    );
}

#[test]
fn bad_choices_are_usage_errors() {
    let env = Env::new();
    let i = numeric_iris(&env);
    let cases: &[(&[&str], &str)] = &[
        (
            &["fit", &i, "-o", "m", "--components", "aic"],
            "--components aic is not a whole number, mle, gavish-donoho or cv",
        ),
        (
            &[
                "fit",
                &i,
                "-o",
                "m",
                "--components",
                "mle",
                "--noise-sigma",
                "1",
            ],
            "--noise-sigma applies only to --components gavish-donoho",
        ),
        (
            &[
                "fit",
                &i,
                "-o",
                "m",
                "--components",
                "gavish-donoho",
                "--folds",
                "3",
            ],
            "--folds applies only to --components cv",
        ),
        (
            &[
                "fit",
                &i,
                "-o",
                "m",
                "--components",
                "gavish-donoho",
                "--noise-sigma",
                "-1",
            ],
            "--noise-sigma -1 is not allowed",
        ),
        (
            &["fit", &i, "-o", "m", "--components", "cv", "--folds", "1"],
            "--folds 1 is not allowed",
        ),
        (
            &["fit", &i, "-o", "m", "--noise-sigma", "1"],
            "--components",
        ),
        (
            &["choose", &i, "--permutations", "0"],
            "--permutations 0 is not allowed",
        ),
        (
            &["choose", &i, "--percentile", "100"],
            "--percentile 100 is outside the allowed range (0, 100)",
        ),
        (
            &["choose", &i, "--max-components", "0"],
            "--max-components 0 is not allowed",
        ),
        (&["choose", &i, "--solver", "randomized"], "randomized"),
    ];
    for (args, want) in cases {
        let stderr = env.fails(2, args);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    assert!(!env.path("m").exists());
}

/// `fit --components cv` with more folds than rows is a data error; `choose` prints the rest
/// of its table and says why cv has no answer (text and JSON).
#[test]
fn more_folds_than_rows_is_a_data_error() {
    let env = Env::new();
    env.write("three.csv", "a,b\n1,2\n2,1\n3,5\n");
    let stderr = env.fails(1, &["fit", "three.csv", "--components", "cv", "-o", "m"]);
    assert!(
        stderr.contains("cv cannot choose the number of components: 5 folds of 3 sample(s)"),
        "{stderr}"
    );
    assert!(!env.path("m").exists());
    let out = env.run(&["choose", "three.csv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nmle "), "{text}");
    assert!(
        text.contains(
            "\ncv                 –  not computed: 5 folds of 3 sample(s) leave a fold with no \
             held-out sample; use at most 3 folds (--folds)"
        ),
        "{text}"
    );
    let out = env.run(&["choose", "three.csv", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let names: Vec<&str> = json["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["criterion"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 9, "{names:?}");
    assert!(!names.contains(&"cv"), "{names:?}");
    let unavailable = &json["unavailable"][0];
    assert_eq!(unavailable["criterion"], "cv");
    assert_eq!(unavailable["folds"], 5);
    assert!(
        unavailable["reason"]
            .as_str()
            .unwrap()
            .starts_with("5 folds of 3 sample(s)")
    );
    // With folds it can make, cv answers.
    let out = env.run(&["choose", "three.csv", "--folds", "3", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["unavailable"], serde_json::json!([]));
}

/// Parallel analysis keeps every permutation's eigenvalues: a --permutations whose eigenvalues
/// exceed --memory-limit (or whose size overflows) is refused before the first permutation,
/// naming the count, the size and the most the budget allows.
#[test]
fn permutations_beyond_the_memory_limit_are_refused() {
    let env = Env::new();
    let i = iris();
    let base = ["choose", &i, "--exclude", "species", "--memory-limit", "1M"];
    let run = |permutations: &str| {
        let args: Vec<&str> = base
            .iter()
            .copied()
            .chain(["--permutations", permutations])
            .collect();
        env.fails(1, &args)
    };
    // 4 eigenvalues of 16 bytes per permutation: 1 MB holds 15,625 of them.
    let stderr = run("20000");
    assert!(
        stderr.contains(
            "--permutations 20000: parallel analysis keeps the 4 eigenvalues of every permuted \
             copy of"
        ) && stderr.contains(
            "(150 samples × 4 features), which would take 1.28 MB, over the memory limit of \
             1.00 MB (--memory-limit); use at most 15625 permutations"
        ),
        "{stderr}"
    );
    let stderr = run("18446744073709551615");
    assert!(
        stderr.contains("which would take more bytes than this machine can count"),
        "{stderr}"
    );
}
