//! Sparse inputs end to end: MatrixMarket files and 10x directories give the same model as the
//! same data in CSV, the models scikit-learn fits to the densified matrix
//! (fixtures/generate_sparse.py → fixtures/sparse/), `fit --no-centre` is TruncatedSVD, and
//! damaged sparse files are clear errors naming the file, the line and the value.

use crate::common;

use std::path::PathBuf;

use common::{Env, assert_close, matrix, numbers};
use serde_json::Value;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sparse")
        .join(name)
        .display()
        .to_string()
}

fn reference() -> Value {
    let text = std::fs::read_to_string(fixture("reference.json")).expect("reference.json");
    serde_json::from_str(&text).expect("reference.json is JSON")
}

fn flat(m: Vec<Vec<f64>>) -> Vec<f64> {
    m.into_iter().flatten().collect()
}

/// Fits `input` with `args` into `model` and returns `inspect --json` of it.
fn fit(env: &Env, input: &str, model: &str, args: &[&str]) -> Value {
    let mut all = vec!["fit", input, "-o", model];
    all.extend_from_slice(args);
    env.ok(&all);
    env.inspect(model)
}

fn assert_models_agree(a: &Value, b: &Value, tol: f64, what: &str) {
    for key in [
        "explained_variance",
        "explained_variance_ratio",
        "singular_values",
        "mean",
    ] {
        assert_close(
            &numbers(&a[key]),
            &numbers(&b[key]),
            tol,
            &format!("{what}: {key}"),
        );
    }
    assert_close(
        &flat(matrix(&a["components"])),
        &flat(matrix(&b["components"])),
        tol,
        &format!("{what}: components"),
    );
}

#[test]
fn the_same_data_as_csv_matrix_market_and_10x_gives_the_same_model() {
    let env = Env::new();
    for solver in ["covariance", "randomized"] {
        let args = ["-k", "3", "--solver", solver, "--tolerance", "1e-13"];
        let dense = fit(&env, &fixture("counts.csv"), "dense.pca", &args);
        let mtx = fit(&env, &fixture("counts.mtx"), "mtx.pca", &args);
        let tenx = fit(&env, &fixture("tenx"), "tenx.pca", &args);
        assert_models_agree(&dense, &mtx, 1e-10, &format!("{solver}: csv vs mtx"));
        assert_models_agree(&dense, &tenx, 1e-10, &format!("{solver}: csv vs 10x"));
        // The genes' names come from features.tsv.gz.
        assert_eq!(tenx["feature_names"], dense["feature_names"]);
        assert_eq!(mtx["n_samples"], 60);
    }
}

#[test]
fn sparse_fits_match_scikit_learn_on_the_densified_matrix() {
    let env = Env::new();
    let want = &reference()["pca"];
    for solver in ["covariance", "randomized", "auto"] {
        for input in [fixture("counts.mtx"), fixture("tenx")] {
            let got = fit(
                &env,
                &input,
                "m.pca",
                &["-k", "3", "--solver", solver, "--tolerance", "1e-13"],
            );
            assert_models_agree(&got, want, 1e-8, &format!("{solver} on {input}"));
        }
    }
}

#[test]
fn no_centre_is_scikit_learns_truncated_svd_for_dense_and_sparse_inputs() {
    let env = Env::new();
    let want = &reference()["truncated_svd"];
    for input in [
        fixture("counts.mtx"),
        fixture("counts.csv"),
        fixture("tenx"),
    ] {
        for solver in ["covariance", "randomized", "svd"] {
            if solver == "svd" && !input.ends_with(".csv") {
                continue;
            }
            let args = [
                "-k",
                "3",
                "--no-centre",
                "--ddof",
                "0",
                "--solver",
                solver,
                "--tolerance",
                "1e-13",
            ];
            let got = fit(&env, &input, "t.pca", &args);
            let what = format!("--no-centre {solver} on {input}");
            assert!(
                numbers(&got["mean"]).iter().all(|&m| m == 0.0),
                "{what}: mean"
            );
            assert_close(
                &numbers(&got["singular_values"]),
                &numbers(&want["singular_values"]),
                1e-8,
                &what,
            );
            assert_close(
                &numbers(&got["explained_variance"]),
                &numbers(&want["explained_variance_ddof0"]),
                1e-8,
                &what,
            );
            assert_close(
                &numbers(&got["explained_variance_ratio"]),
                &numbers(&want["explained_variance_ratio"]),
                1e-8,
                &what,
            );
            assert_close(
                &flat(matrix(&got["components"])),
                &flat(matrix(&want["components"])),
                1e-8,
                &what,
            );
        }
    }
    // Standardizing needs the mean: a usage error.
    env.fails(
        2,
        &[
            "fit",
            &fixture("counts.mtx"),
            "-o",
            "x.pca",
            "--no-centre",
            "--standardize",
        ],
    );
}

#[test]
fn transform_of_sparse_rows_equals_the_dense_codes() {
    let env = Env::new();
    env.ok(&["fit", &fixture("counts.csv"), "-o", "m.pca", "-k", "3"]);
    env.ok(&[
        "transform",
        "m.pca",
        &fixture("counts.csv"),
        "-o",
        "dense.csv",
    ]);
    env.ok(&[
        "transform",
        "m.pca",
        &fixture("counts.mtx"),
        "-o",
        "sparse.csv",
    ]);
    env.ok(&["transform", "m.pca", &fixture("tenx"), "-o", "tenx.csv"]);
    let (_, dense) = env.read_csv("dense.csv");
    for name in ["sparse.csv", "tenx.csv"] {
        let (header, rows) = env.read_csv(name);
        assert_eq!(header.unwrap(), ["pc1", "pc2", "pc3"]);
        assert_close(&flat(rows), &flat(dense.clone()), 1e-10, name);
    }
}

#[test]
fn explain_says_the_data_is_sparse_and_why_the_solver_was_chosen() {
    let env = Env::new();
    let stderr = env.ok(&[
        "fit",
        &fixture("counts.mtx"),
        "-o",
        "m.pca",
        "-k",
        "2",
        "--explain",
    ]);
    assert!(
        stderr.contains("sparse, 224 non-zeros (31.11% non-zero)"),
        "{stderr}"
    );
    assert!(stderr.contains("needs the data dense"), "{stderr}");
}

/// The header and entries of a small MatrixMarket file.
fn mtx(size: &str, entries: &[&str]) -> String {
    let mut text = format!("%%MatrixMarket matrix coordinate real general\n{size}\n");
    for e in entries {
        text.push_str(e);
        text.push('\n');
    }
    text
}

#[test]
fn damaged_matrix_market_files_are_named_by_file_line_and_value() {
    let env = Env::new();
    let good = ["1 1 1.5", "2 2 2", "3 1 -1", "3 3 4"];
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "short.mtx",
            mtx("3 3 5", &good),
            "line 6: the header declares 5 entries but the file ends after 4",
        ),
        (
            "long.mtx",
            mtx("3 3 3", &good),
            "line 6: more entries than the 3 the header declares",
        ),
        (
            "row.mtx",
            mtx("3 3 4", &["1 1 1.5", "4 2 2", "3 1 -1", "3 3 4"]),
            "line 4: row index 4 is out of range 1..=3",
        ),
        (
            "zero.mtx",
            mtx("3 3 4", &["1 0 1.5", "2 2 2", "3 1 -1", "3 3 4"]),
            "line 3: column index 0 is out of range 1..=3",
        ),
        (
            "number.mtx",
            mtx("3 3 4", &["1 1 1.5", "2 2 abc", "3 1 -1", "3 3 4"]),
            "line 4: \"abc\" is not a number",
        ),
        (
            "nan.mtx",
            mtx("3 3 4", &["1 1 1.5", "2 2 nan", "3 1 -1", "3 3 4"]),
            "line 4: \"nan\" is not a finite number",
        ),
        (
            "size.mtx",
            mtx("3 x 4", &good),
            "line 2: size line \"3 x 4\" is not three counts",
        ),
        (
            "symmetric.mtx",
            mtx("3 3 4", &good).replace("general", "symmetric"),
            "only coordinate real or integer general",
        ),
        (
            "giant.mtx",
            mtx("1000000000000 5 1", &["1 1 1"]),
            "line 2: 1000000000000 × 5: the row counts and per-feature sums alone",
        ),
        (
            "header.mtx",
            "1 2 3\n".to_string(),
            "line 1: \"1 2 3\" is not a MatrixMarket header",
        ),
    ];
    for (name, text, message) in cases {
        let path = env.write(name, text);
        let stderr = env.fails(1, &["fit", &path.display().to_string(), "-o", "m.pca"]);
        assert!(stderr.contains(name), "{name}: {stderr}");
        assert!(
            stderr.contains(message),
            "{name}: wanted {message:?} in {stderr}"
        );
        assert!(
            !env.path("m.pca").exists(),
            "{name}: a model was left behind"
        );
    }
}

#[test]
fn a_truncated_gzip_and_a_10x_directory_whose_genes_do_not_match_are_clear_errors() {
    let env = Env::new();
    let whole = std::fs::read(fixture("tenx/matrix.mtx.gz")).unwrap();
    let cut = env.write("cut.mtx.gz", &whole[..whole.len() / 2]);
    let stderr = env.fails(1, &["fit", &cut.display().to_string(), "-o", "m.pca"]);
    assert!(stderr.contains("cut.mtx.gz"), "{stderr}");
    std::fs::create_dir(env.path("tenx")).unwrap();
    std::fs::copy(
        fixture("tenx/matrix.mtx.gz"),
        env.path("tenx/matrix.mtx.gz"),
    )
    .unwrap();
    std::fs::copy(
        fixture("tenx/barcodes.tsv.gz"),
        env.path("tenx/barcodes.tsv.gz"),
    )
    .unwrap();
    let tenx = env.path("tenx").display().to_string();
    let stderr = env.fails(1, &["fit", &tenx, "-o", "m.pca"]);
    assert!(
        stderr.contains("holds features.tsv.gz; there is none"),
        "{stderr}"
    );
    env.write("tenx/features.tsv", "A\ta\nB\tb\n");
    let stderr = env.fails(1, &["fit", &tenx, "-o", "m.pca"]);
    assert!(stderr.contains("features.tsv: 2 genes, but"), "{stderr}");
    assert!(stderr.contains("has 12 rows"), "{stderr}");
}

/// The sparse readers take every column: `--columns` and `--exclude` with a MatrixMarket or
/// 10x input are refused as usage errors that write nothing, not ignored in silence.
#[test]
fn column_selection_with_a_sparse_input_is_refused_not_ignored() {
    let env = Env::new();
    for input in [fixture("counts.mtx"), fixture("tenx")] {
        for selection in [["--exclude", "0"], ["--columns", "0,1"]] {
            let mut args = vec!["fit", &input, "-k", "2", "-o", "m.pca"];
            args.extend_from_slice(&selection);
            let stderr = env.fails(2, &args);
            assert!(
                stderr.contains("--columns and --exclude are not supported with sparse inputs"),
                "{selection:?}: {stderr}"
            );
            assert!(!env.path("m.pca").exists(), "{selection:?}");
        }
    }
}

#[test]
fn a_matrix_market_file_streamed_from_its_text_gives_the_model_held_in_memory() {
    // 3,000 × 50, about 40% non-zero, written sorted by row: its ≈ 60,000 entries take
    // ≈ 0.7 MB as CSR, over half of --memory-limit 1M, so every pass reads the text again.
    let env = Env::new();
    let (n, d) = (3000, 50);
    let mut rng = common::Lcg(29);
    let mut dense = vec![vec![0.0; d]; n];
    let mut entries = Vec::new();
    for (i, row) in dense.iter_mut().enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            if rng.next() < 0.4 {
                *x = (1.0 + 9.0 * rng.next()).floor() * (1.0 + (j % 5) as f64);
                entries.push(format!("{} {} {}", i + 1, j + 1, *x));
            }
        }
    }
    let mut text = format!(
        "%%MatrixMarket matrix coordinate real general\n{n} {d} {}\n",
        entries.len()
    );
    text.push_str(&entries.join("\n"));
    env.write("big.mtx", text);
    let header: Vec<String> = (0..d).map(|j| format!("f{j}")).collect();
    env.write("big.csv", common::to_csv(Some(&header), &dense));
    for solver in ["covariance", "randomized"] {
        let args = ["--solver", solver, "-k", "4", "--tolerance", "1e-13"];
        let mut streamed = vec!["fit", "big.mtx", "-o", "s.pca", "--memory-limit", "1M"];
        streamed.extend_from_slice(&["--explain"]);
        streamed.extend_from_slice(&args);
        let stderr = env.ok(&streamed);
        assert!(
            stderr.contains("every pass reads the text a block of rows at a time"),
            "{stderr}"
        );
        let held = fit(
            &env,
            &env.path("big.mtx").display().to_string(),
            "m.pca",
            &args,
        );
        let csv = fit(
            &env,
            &env.path("big.csv").display().to_string(),
            "c.pca",
            &args,
        );
        let streamed = env.inspect("s.pca");
        assert_models_agree(
            &streamed,
            &csv,
            1e-10,
            &format!("{solver}: streamed vs csv"),
        );
        assert_models_agree(&held, &csv, 1e-10, &format!("{solver}: in memory vs csv"));
    }
}
