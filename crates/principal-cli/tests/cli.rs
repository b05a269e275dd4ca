//! End-to-end tests of the `principal` binary: a temporary directory per test, the real
//! executable, and checks on exit codes, messages and output files.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

fn iris() -> String {
    data("iris.csv").display().to_string()
}

/// A temporary working directory and the commands run in it.
struct Env {
    dir: TempDir,
}

impl Env {
    fn new() -> Self {
        Env {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, contents).expect("write test file");
        path
    }

    fn run(&self, args: &[&str]) -> Output {
        assert_cmd::Command::new(env!("CARGO_BIN_EXE_principal"))
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .expect("run principal")
    }

    /// Runs a command that must succeed; returns its stderr.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "principal {args:?} failed with {:?}:\n{stderr}",
            out.status.code()
        );
        stderr
    }

    /// Runs a command that must fail with `code`; returns its stderr, checked to be one clean
    /// error message (no panic, no backtrace).
    fn fails(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "principal {args:?}: wrong exit code; stderr:\n{stderr}"
        );
        assert!(
            stderr.starts_with("error: "),
            "no `error: ` prefix:\n{stderr}"
        );
        assert_eq!(
            stderr.matches("error:").count(),
            1,
            "error printed more than once:\n{stderr}"
        );
        for bad in ["panicked", "RUST_BACKTRACE", "internal error", "Backtrace"] {
            assert!(!stderr.contains(bad), "{bad:?} in stderr:\n{stderr}");
        }
        stderr
    }

    fn inspect(&self, model: &str) -> Value {
        let out = self.run(&["inspect", model, "--json"]);
        assert!(
            out.status.success(),
            "inspect failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("inspect --json prints one JSON object")
    }

    /// A CSV written by principal: (header, rows).
    fn read_csv(&self, name: &str) -> (Option<Vec<String>>, Vec<Vec<f64>>) {
        parse_csv(&fs::read_to_string(self.path(name)).expect("read output CSV"))
    }
}

fn parse_csv(text: &str) -> (Option<Vec<String>>, Vec<Vec<f64>>) {
    let mut lines = text.lines().filter(|l| !l.is_empty()).peekable();
    let first: Vec<String> = lines
        .peek()
        .expect("non-empty CSV")
        .split(',')
        .map(str::to_string)
        .collect();
    let header = if first.iter().any(|c| c.parse::<f64>().is_err()) {
        lines.next();
        Some(first)
    } else {
        None
    };
    let rows = lines
        .map(|l| {
            l.split(',')
                .map(|c| c.parse::<f64>().expect("a number"))
                .collect()
        })
        .collect();
    (header, rows)
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect()
}

fn matrix(value: &Value) -> Vec<Vec<f64>> {
    value
        .as_array()
        .expect("array of rows")
        .iter()
        .map(numbers)
        .collect()
}

/// Iris as read from the shipped CSV: (feature names, 150×4 rows).
fn iris_rows() -> (Vec<String>, Vec<Vec<f64>>) {
    let text = fs::read_to_string(data("iris.csv")).expect("iris.csv");
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .take(4)
        .map(str::to_string)
        .collect();
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').take(4).map(|c| c.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

fn to_csv(header: Option<&[String]>, rows: &[Vec<f64>]) -> String {
    let mut s = String::new();
    if let Some(h) = header {
        s += &h.join(",");
        s.push('\n');
    }
    for row in rows {
        s += &row
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",");
        s.push('\n');
    }
    s
}

/// An NPY file (version 1.0, C order) holding `rows` as little-endian f64 or f32.
fn npy(rows: &[Vec<f64>], f32: bool) -> Vec<u8> {
    let (n, d) = (rows.len(), rows[0].len());
    let descr = if f32 { "<f4" } else { "<f8" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n}, {d}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in rows.iter().flatten() {
        if f32 {
            bytes.extend_from_slice(&(*v as f32).to_le_bytes());
        } else {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    bytes
}

/// Deterministic pseudo-random numbers in [0, 1) (a 64-bit LCG; no dependency needed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn assert_close(found: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(found.len(), expected.len(), "{what}: lengths differ");
    for (i, (a, b)) in found.iter().zip(expected).enumerate() {
        assert!(
            (a - b).abs() <= tol,
            "{what}[{i}]: {a} vs {b} (tolerance {tol})"
        );
    }
}

/// Two `inspect --json` outputs agree: equal non-float fields, floats to `tol` relative.
fn assert_same_model(a: &Value, b: &Value, tol: f64) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0),
                "{x} vs {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len());
            x.iter()
                .zip(y)
                .for_each(|(x, y)| assert_same_model(x, y, tol));
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>());
            x.iter().for_each(|(k, v)| assert_same_model(v, &y[k], tol));
        }
        _ => assert_eq!(a, b),
    }
}

const IRIS_EIGENVALUES: [f64; 4] = [4.22824171, 0.24267075, 0.07820950, 0.02383509];
const IRIS_PC1: [f64; 4] = [-0.361387, 0.084523, -0.856671, -0.358289];

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

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
    // SPEC's sign rule: the entry of largest magnitude is positive.
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
fn houses_codes_match_the_reference() {
    let env = Env::new();
    env.write("houses.csv", "price,area\n10,10\n2,2\n7,7\n1,1\n5,5\n");
    env.ok(&["fit", "houses.csv", "--output", "houses.pca"]);
    env.ok(&[
        "transform",
        "houses.pca",
        "houses.csv",
        "--output",
        "codes.csv",
    ]);
    let (header, rows) = env.read_csv("codes.csv");
    assert_eq!(header, Some(vec!["pc1".to_string(), "pc2".to_string()]));
    let pc1: Vec<f64> = rows.iter().map(|r| r[0]).collect();
    // The sign rule makes the first component (+0.7071, +0.7071), so the signs are fixed.
    assert_close(
        &pc1,
        &[7.0711, -4.2426, 2.8284, -5.6569, 0.0],
        1e-4,
        "first-component codes",
    );
    let pc2: Vec<f64> = rows.iter().map(|r| r[1]).collect();
    assert_close(&pc2, &[0.0; 5], 1e-9, "second-component codes");
}

#[test]
fn transform_then_inverse_with_all_components_reproduces_the_input() {
    let env = Env::new();
    let (names, rows) = iris_rows();
    env.write("iris4.csv", to_csv(Some(&names), &rows));
    for extra in [
        &[][..],
        &["--standardize"][..],
        &["--ddof", "0", "--solver", "svd"][..],
    ] {
        let mut fit = vec!["fit", "iris4.csv", "--output", "m.pca"];
        fit.extend_from_slice(extra);
        env.ok(&fit);
        env.ok(&["transform", "m.pca", "iris4.csv", "--output", "codes.csv"]);
        env.ok(&["inverse", "m.pca", "codes.csv", "--output", "back.csv"]);
        let (header, back) = env.read_csv("back.csv");
        assert_eq!(
            header.as_ref(),
            Some(&names),
            "reconstruction columns are the model's features"
        );
        assert_eq!(back.len(), rows.len());
        for (a, b) in back.iter().zip(&rows) {
            assert_close(a, b, 1e-9, &format!("round trip with {extra:?}"));
        }
    }
}

#[test]
fn inverse_reads_headerless_and_npy_codes() {
    let env = Env::new();
    env.write("houses.csv", "price,area\n10,10\n2,2\n7,7\n1,1\n5,5\n");
    env.ok(&["fit", "houses.csv", "--components", "1", "--output", "m"]);
    let codes = [7.0710678118654755, -4.242640687119285];
    env.write("codes.csv", format!("{}\n{}\n", codes[0], codes[1]));
    env.write("codes.npy", npy(&[vec![codes[0]], vec![codes[1]]], false));
    for input in ["codes.csv", "codes.npy"] {
        env.ok(&["inverse", "m", input, "--output", "back.csv"]);
        let (header, back) = env.read_csv("back.csv");
        assert_eq!(header, Some(vec!["price".to_string(), "area".to_string()]));
        assert_close(&back[0], &[10.0, 10.0], 1e-12, input);
        assert_close(&back[1], &[2.0, 2.0], 1e-12, input);
    }
    env.ok(&["inverse", "m", "codes.csv", "--output", "back.npy"]);
    assert!(fs::read(env.path("back.npy"))
        .unwrap()
        .starts_with(b"\x93NUMPY"));
}

#[test]
fn transform_picks_the_model_features_by_name() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "--output", "m"]);
    // No --exclude: the species column is skipped because the model names its features.
    env.ok(&["transform", "m", &iris(), "--output", "a.csv"]);
    // Columns in another order, plus an extra one: still picked by name.
    let (names, rows) = iris_rows();
    let order = [3, 0, 2, 1];
    let header: Vec<String> = order
        .iter()
        .map(|&j| names[j].clone())
        .chain(["extra".to_string()])
        .collect();
    let shuffled: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| order.iter().map(|&j| r[j]).chain([1.0]).collect())
        .collect();
    env.write("shuffled.csv", to_csv(Some(&header), &shuffled));
    env.ok(&["transform", "m", "shuffled.csv", "--output", "b.csv"]);
    let (_, a) = env.read_csv("a.csv");
    let (_, b) = env.read_csv("b.csv");
    assert_eq!(a, b);
    assert_eq!(a.len(), 150);
    // Explicit selectors override the names; a headerless file is taken column by column.
    env.write("plain.csv", to_csv(None, &rows));
    env.ok(&["transform", "m", "plain.csv", "--output", "c.csv"]);
    assert_eq!(env.read_csv("c.csv").1, a);
    env.ok(&[
        "transform",
        "m",
        &iris(),
        "--columns",
        "0,1,2,3",
        "--output",
        "d.npy",
    ]);
    assert!(fs::read(env.path("d.npy"))
        .unwrap()
        .starts_with(b"\x93NUMPY"));
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

// ---------------------------------------------------------------------------------------------
// Errors: exit 1, a message naming the problem, no output file
// ---------------------------------------------------------------------------------------------

/// Runs a command that must fail with exit 1, leave no `output`, and say each of `needles`.
fn assert_data_error(env: &Env, args: &[&str], output: &str, needles: &[&str]) {
    let stderr = env.fails(1, args);
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{needle:?} missing from the message for {args:?}:\n{stderr}"
        );
    }
    assert!(!env.path(output).exists(), "{args:?} left an output file");
}

#[test]
fn missing_input_file_is_named() {
    let env = Env::new();
    assert_data_error(
        &env,
        &["fit", "nope.csv", "--output", "m"],
        "m",
        &["nope.csv"],
    );
}

#[test]
fn ragged_row_is_reported_with_its_line() {
    let env = Env::new();
    env.write("ragged.csv", "a,b,c\n1,2,3\n4,5\n6,7,8\n");
    assert_data_error(
        &env,
        &["fit", "ragged.csv", "--output", "m"],
        "m",
        &["ragged.csv", "line 3"],
    );
}

#[test]
fn non_numeric_cell_is_reported_with_line_column_and_value() {
    let env = Env::new();
    env.write("text.csv", "a,b\n1,2\n3,oops\n5,6\n");
    assert_data_error(
        &env,
        &["fit", "text.csv", "--output", "m"],
        "m",
        &["text.csv", "line 3", "oops"],
    );
}

#[test]
fn nan_is_rejected_with_its_place() {
    let env = Env::new();
    env.write("nan.csv", "a,b\n1,2\n3,NaN\n5,6\n");
    let stderr = env.fails(1, &["fit", "nan.csv", "--output", "m"]);
    assert!(
        stderr.contains("nan.csv") && stderr.to_lowercase().contains("nan"),
        "{stderr}"
    );
    assert!(!env.path("m").exists());
}

#[test]
fn infinity_is_rejected_with_its_place() {
    let env = Env::new();
    env.write("inf.csv", "a,b\n1,2\n3,4\n5,inf\n");
    let stderr = env.fails(1, &["fit", "inf.csv", "--output", "m"]);
    assert!(
        stderr.contains("inf.csv") && stderr.matches("inf").count() >= 2,
        "{stderr}"
    );
    assert!(!env.path("m").exists());
}

#[test]
fn nan_in_transform_input_is_rejected() {
    let env = Env::new();
    env.write("good.csv", "a,b\n1,2\n3,1\n5,6\n");
    env.write("bad.csv", "a,b\n1,2\nnan,1\n");
    env.ok(&["fit", "good.csv", "--output", "m"]);
    let stderr = env.fails(1, &["transform", "m", "bad.csv", "--output", "codes.csv"]);
    assert!(stderr.contains("bad.csv"), "{stderr}");
    assert!(!env.path("codes.csv").exists());
}

#[test]
fn empty_file_is_reported() {
    let env = Env::new();
    env.write("empty.csv", "");
    assert_data_error(
        &env,
        &["fit", "empty.csv", "--output", "m"],
        "m",
        &["empty.csv"],
    );
    env.write("header-only.csv", "a,b\n");
    assert_data_error(
        &env,
        &["fit", "header-only.csv", "--output", "m"],
        "m",
        &["header-only.csv"],
    );
}

#[test]
fn unknown_column_name_is_named() {
    let env = Env::new();
    assert_data_error(
        &env,
        &[
            "fit",
            &iris(),
            "--columns",
            "sepal_length,petal_size",
            "--output",
            "m",
        ],
        "m",
        &["petal_size"],
    );
    assert_data_error(
        &env,
        &["fit", &iris(), "--exclude", "specie", "--output", "m"],
        "m",
        &["specie"],
    );
}

#[test]
fn single_row_with_ddof_one_says_why() {
    let env = Env::new();
    env.write("one.csv", "a,b\n1,2\n");
    assert_data_error(
        &env,
        &["fit", "one.csv", "--output", "m"],
        "m",
        &["1 sample", "ddof 1", "one.csv"],
    );
    // With ddof 0 a single sample is allowed.
    env.ok(&["fit", "one.csv", "--ddof", "0", "--output", "m"]);
}

#[test]
fn too_many_components_names_the_limit() {
    let env = Env::new();
    assert_data_error(
        &env,
        &[
            "fit",
            &iris(),
            "--exclude",
            "species",
            "--components",
            "9",
            "--output",
            "m",
        ],
        "m",
        &["--components 9 is more than min(n_samples, n_features) = 4"],
    );
}

#[test]
fn transform_with_the_wrong_number_of_features_is_explained() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "--output", "m"]);
    env.write("three.csv", "1,2,3\n4,5,6\n");
    assert_data_error(
        &env,
        &["transform", "m", "three.csv", "--output", "codes.csv"],
        "codes.csv",
        &["three.csv", "3", "4"],
    );
    // With a header that lacks one of the model's features, the missing name is given.
    env.write(
        "named.csv",
        "sepal_length,sepal_width,petal_length\n1,2,3\n",
    );
    assert_data_error(
        &env,
        &["transform", "m", "named.csv", "--output", "codes.csv"],
        "codes.csv",
        &["petal_width"],
    );
}

#[test]
fn inverse_with_the_wrong_number_of_code_columns_is_explained() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--components",
        "2",
        "--output",
        "m",
    ]);
    env.write("codes.csv", "1,2,3\n");
    assert_data_error(
        &env,
        &["inverse", "m", "codes.csv", "--output", "back.csv"],
        "back.csv",
        &["3 columns", "2 components"],
    );
}

fn fitted_iris(env: &Env) -> Vec<u8> {
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--output",
        "good.pca",
    ]);
    fs::read(env.path("good.pca")).unwrap()
}

#[test]
fn damaged_model_files_are_rejected() {
    let env = Env::new();
    let good = fitted_iris(&env);
    let mut rng = Lcg(42);
    let garbage: Vec<u8> = (0..2000).map(|_| (rng.next() * 256.0) as u8).collect();
    let mut huge_header = good.clone();
    huge_header[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("truncated.pca", good[..good.len() / 2].to_vec()),
        ("short.pca", good[..5].to_vec()),
        ("garbage.pca", garbage),
        ("huge-header.pca", huge_header),
        ("empty.pca", Vec::new()),
    ];
    for (name, bytes) in damaged {
        env.write(name, bytes);
        assert_data_error(&env, &["inspect", name], "never", &[name]);
        assert_data_error(
            &env,
            &["transform", name, &iris(), "--output", "codes.csv"],
            "codes.csv",
            &[name],
        );
        assert_data_error(
            &env,
            &["inverse", name, &iris(), "--output", "back.csv"],
            "back.csv",
            &[name],
        );
    }
    // A CSV given as a model.
    assert_data_error(&env, &["inspect", &iris()], "never", &["iris.csv"]);
}

/// Rewrites the metadata of a safetensors file with `edit`.
fn edit_metadata(bytes: &[u8], edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    edit(header["__metadata__"].as_object_mut().expect("metadata"));
    let mut text = serde_json::to_string(&header).unwrap();
    while !text.len().is_multiple_of(8) {
        text.push(' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&bytes[8 + len..]);
    out
}

#[test]
fn model_of_a_future_format_version_is_rejected() {
    let env = Env::new();
    let good = fitted_iris(&env);
    let future = (principal_io::MODEL_FORMAT_VERSION + 1).to_string();
    let edited = edit_metadata(&good, |meta| {
        let key = meta
            .keys()
            .find(|k| k.contains("version"))
            .expect("a format version key")
            .clone();
        meta.insert(key, Value::String(future.clone()));
    });
    env.write("future.pca", edited);
    let stderr = env.fails(1, &["inspect", "future.pca"]);
    assert!(
        stderr.contains("future.pca") && stderr.contains(&future),
        "{stderr}"
    );
    assert_data_error(
        &env,
        &["transform", "future.pca", &iris(), "--output", "codes.csv"],
        "codes.csv",
        &[&future],
    );
}

#[test]
fn failing_fit_leaves_an_existing_model_byte_identical() {
    let env = Env::new();
    let good = fitted_iris(&env);
    env.write("bad.csv", "a,b,c,d\n1,2,3,4\n5,6,x,8\n");
    env.fails(1, &["fit", "bad.csv", "--output", "good.pca"]);
    env.fails(
        1,
        &[
            "fit",
            &iris(),
            "--exclude",
            "species",
            "--components",
            "9",
            "--output",
            "good.pca",
        ],
    );
    env.fails(2, &["fit", &iris(), "--ddof", "2", "--output", "good.pca"]);
    assert_eq!(
        fs::read(env.path("good.pca")).unwrap(),
        good,
        "the model was overwritten"
    );
    let leftovers: Vec<_> = fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "temporary files left behind: {leftovers:?}"
    );
}

#[test]
fn failing_transform_and_inverse_leave_existing_outputs_byte_identical() {
    let env = Env::new();
    fitted_iris(&env);
    env.ok(&["transform", "good.pca", &iris(), "--output", "codes.csv"]);
    let codes = fs::read(env.path("codes.csv")).unwrap();
    env.write("three.csv", "1,2,3\n");
    env.fails(
        1,
        &[
            "transform",
            "good.pca",
            "three.csv",
            "--output",
            "codes.csv",
        ],
    );
    assert_eq!(fs::read(env.path("codes.csv")).unwrap(), codes);
    let back = env.write("back.csv", "precious\n");
    env.fails(
        1,
        &["inverse", "good.pca", "three.csv", "--output", "back.csv"],
    );
    assert_eq!(fs::read(back).unwrap(), b"precious\n");
}

// ---------------------------------------------------------------------------------------------
// Usage errors: exit 2
// ---------------------------------------------------------------------------------------------

#[test]
fn usage_errors_exit_two() {
    let env = Env::new();
    let i = iris();
    let cases: &[(&[&str], &str)] = &[
        (
            &["fit", &i, "--output", "m", "--frobnicate"],
            "--frobnicate",
        ),
        (
            &[
                "fit",
                &i,
                "--output",
                "m",
                "--components",
                "2",
                "--variance",
                "0.9",
            ],
            "cannot be used with",
        ),
        (
            &["fit", &i, "--output", "m", "--ddof", "2"],
            "--ddof 2 is not allowed",
        ),
        (&["fit", &i, "--output", "m", "--solver", "magic"], "magic"),
        (
            &["fit", &i, "--output", "m", "--components", "0"],
            "--components 0 is not allowed",
        ),
        (&["fit", &i, "--output", "m", "--components", "two"], "two"),
        (
            &["fit", &i, "--output", "m", "--variance", "1.5"],
            "--variance 1.5 is outside the allowed range (0, 1]",
        ),
        (&["fit", &i, "--output", "m", "--variance", "0"], "(0, 1]"),
        (
            &["fit", &i, "--output", "m", "--variance", "-0.5"],
            "--variance -0.5 is outside the allowed range (0, 1]",
        ),
        (
            &["fit", &i, "--output", "m", "--components", "-1"],
            "--components -1 is not a whole number",
        ),
        (&["fit", &i], "--output"),
        (&["fit", "--output", "m"], "INPUT"),
        (&["inspect"], "MODEL"),
        (&["transform", "m", "--output", "c"], "INPUT"),
        (&["frobnicate"], "frobnicate"),
    ];
    for (args, needle) in cases {
        let out = env.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}:\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{needle:?} missing for {args:?}:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"));
        assert!(!env.path("m").exists());
    }
}

#[test]
fn help_and_version_succeed() {
    let env = Env::new();
    for args in [&["--help"][..], &["fit", "--help"], &["--version"]] {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}");
        assert!(!out.stdout.is_empty());
    }
    // No arguments at all: help on stderr, usage error.
    assert_eq!(env.run(&[]).status.code(), Some(2));
}

// ---------------------------------------------------------------------------------------------
// Regressions
// ---------------------------------------------------------------------------------------------

/// `principal inspect --json model | head -c 10` must not report an error when head exits.
#[test]
fn closed_stdout_pipe_is_not_an_error() {
    let env = Env::new();
    // Wide enough that the JSON (≈ 40×600 component entries) overflows any pipe buffer.
    let mut rng = Lcg(3);
    let rows: Vec<Vec<f64>> = (0..40)
        .map(|_| (0..600).map(|_| rng.next()).collect())
        .collect();
    env.write("wide.csv", to_csv(None, &rows));
    env.ok(&["fit", "wide.csv", "--output", "wide.pca"]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_principal"))
        .current_dir(env.dir.path())
        .args(["inspect", "--json", "wide.pca"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    assert!(stderr.is_empty(), "{stderr}");
}

/// Iris has a text column: transform without --exclude used to need the user to repeat it.
#[test]
fn transform_without_exclude_skips_text_columns_the_model_never_saw() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--components",
        "2",
        "--output",
        "m",
    ]);
    env.ok(&["transform", "m", &iris(), "--output", "codes.csv"]);
    let (header, rows) = env.read_csv("codes.csv");
    assert_eq!(header, Some(vec!["pc1".to_string(), "pc2".to_string()]));
    assert_eq!(rows.len(), 150);
}

/// A model file may have any extension, or none.
#[test]
fn model_path_extension_does_not_matter() {
    let env = Env::new();
    for name in ["model", "model.bin", "model.csv", "model.npy"] {
        env.ok(&["fit", &iris(), "--exclude", "species", "--output", name]);
        assert_eq!(env.inspect(name)["n_features"], 4);
    }
}

// ---------------------------------------------------------------------------------------------
// Large data: iterative solvers, streaming, explanations
// ---------------------------------------------------------------------------------------------

fn mnist() -> String {
    data("mnist-5k.csv.gz").display().to_string()
}

fn eigenvalues(model: &Value) -> Vec<f64> {
    numbers(&model["explained_variance"])
}

#[test]
fn explain_lists_every_solver_with_its_cost_and_the_reading_mode() {
    let env = Env::new();
    let stderr = env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "-k",
        "2",
        "-o",
        "m.pca",
        "--explain",
    ]);
    for solver in ["covariance", "gram", "svd", "randomized", "power", "em"] {
        assert!(
            stderr.contains(&format!("  {solver} ")),
            "{solver} missing:\n{stderr}"
        );
    }
    assert!(
        stderr.contains("← chosen") && stderr.contains("multiply-adds"),
        "{stderr}"
    );
    assert!(stderr.contains("data read into memory"), "{stderr}");
    // Sizes in units a person reads: the Gram matrix of Iris is 150² f64 and more.
    let stderr = env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "-o",
        "m.pca",
        "--explain",
        "--memory-limit",
        "2.5G",
    ]);
    assert!(
        stderr.contains("solver choice (memory limit 2.50 GB)"),
        "{stderr}"
    );
    let gram = stderr.lines().find(|l| l.contains("  gram ")).unwrap();
    assert!(gram.contains(" kB"), "{gram}");
}

#[test]
fn randomized_fit_reports_its_error_estimate_and_a_seed_makes_it_repeatable() {
    let env = Env::new();
    let args = |out: &'static str, seed: &'static str| {
        vec![
            "fit",
            "MNIST",
            "--exclude",
            "784",
            "-k",
            "10",
            "--solver",
            "randomized",
            "--seed",
            seed,
            "-o",
            out,
        ]
    };
    let m = mnist();
    let run = |out, seed| {
        let a: Vec<&str> = args(out, seed)
            .into_iter()
            .map(|s| if s == "MNIST" { m.as_str() } else { s })
            .collect();
        env.ok(&a)
    };
    let stderr = run("a.pca", "3");
    assert!(stderr.contains("error estimate"), "{stderr}");
    run("b.pca", "3");
    run("c.pca", "4");
    let (a, b, c) = (
        fs::read(env.path("a.pca")).unwrap(),
        fs::read(env.path("b.pca")).unwrap(),
        fs::read(env.path("c.pca")).unwrap(),
    );
    assert_eq!(
        a, b,
        "the same seed must give the same model file, byte for byte"
    );
    assert_ne!(
        a, c,
        "another seed gives another (slightly different) model"
    );
    let report = &env.inspect("a.pca")["iteration_report"];
    assert!(report["passes"].as_u64().unwrap() >= 2, "{report}");
    assert!(
        report["error_estimate"].as_f64().unwrap() < 1e-2,
        "{report}"
    );
}

#[test]
fn streamed_fits_equal_in_memory_fits() {
    let env = Env::new();
    let m = mnist();
    let base = ["fit", m.as_str(), "--exclude", "784", "-k", "8"];
    let fit = |out: &str, extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a.extend_from_slice(&["-o", out]);
        env.ok(&a)
    };
    // The exact reference, in memory.
    let exact = fit("svd.pca", &["--solver", "svd"]);
    assert!(exact.contains("reading,"), "{exact}");
    // Covariance always streams; randomized streams when the data exceeds half the budget.
    let cov = fit("cov.pca", &["--solver", "covariance"]);
    assert!(cov.contains("streamed in 1 pass"), "{cov}");
    let tol = [
        "--solver",
        "randomized",
        "--tolerance",
        "1e-9",
        "--seed",
        "1",
    ];
    fit("rand-memory.pca", &tol);
    let mut streamed = tol.to_vec();
    streamed.extend_from_slice(&["--memory-limit", "2M"]);
    let out = fit("rand-streamed.pca", &streamed);
    assert!(out.contains("streamed in"), "{out}");
    let reference = eigenvalues(&env.inspect("svd.pca"));
    for (name, tol) in [
        ("cov.pca", 1e-9),
        ("rand-memory.pca", 1e-7),
        ("rand-streamed.pca", 1e-7),
    ] {
        let got = eigenvalues(&env.inspect(name));
        assert_close(&got, &reference, tol * reference[0], name);
    }
    // Same seed, same passes: streaming changes nothing but where the rows come from.
    let (a, b) = (
        env.inspect("rand-memory.pca"),
        env.inspect("rand-streamed.pca"),
    );
    assert_same_model(&a, &b, 1e-9);
}

#[test]
fn gram_over_the_memory_limit_is_refused_before_reading() {
    let env = Env::new();
    let err = env.fails(
        1,
        &[
            "fit",
            &mnist(),
            "--exclude",
            "784",
            "--solver",
            "gram",
            "--memory-limit",
            "2M",
            "-o",
            "m.pca",
        ],
    );
    assert!(
        err.contains("--memory-limit") && err.contains("gram"),
        "{err}"
    );
    assert!(!env.path("m.pca").exists());
}

#[test]
fn power_iteration_converges_on_iris_and_says_how() {
    let env = Env::new();
    for method in ["block", "deflation"] {
        let stderr = env.ok(&[
            "fit",
            &iris(),
            "--exclude",
            "species",
            "-k",
            "2",
            "--solver",
            "power",
            "--power-method",
            method,
            "-o",
            "p.pca",
        ]);
        assert!(
            stderr.contains("passes") && !stderr.contains("NOT reached"),
            "{stderr}"
        );
        let got = eigenvalues(&env.inspect("p.pca"));
        assert_close(&got, &[4.22824171, 0.24267075], 1e-7, method);
    }
}

#[test]
fn em_converges_on_iris_and_says_how() {
    let env = Env::new();
    let args = ["fit", &iris(), "--exclude", "species", "-k", "2"];
    let stderr = env.ok(&[&args[..], &["--solver", "em", "-o", "em.pca"]].concat());
    assert!(
        stderr.contains("solver: em") && stderr.contains("passes, error estimate"),
        "{stderr}"
    );
    assert!(!stderr.contains("NOT reached"), "{stderr}");
    let model = env.inspect("em.pca");
    assert_eq!(model["solver"], "em");
    assert_close(&eigenvalues(&model), &[4.22824171, 0.24267075], 1e-7, "em");
}

#[test]
fn iterative_settings_are_checked_as_usage_errors() {
    let env = Env::new();
    for bad in [
        ["--tolerance", "0"],
        ["--tolerance", "2"],
        ["--max-iterations", "0"],
        ["--memory-limit", "12 parsecs"],
        ["--power-method", "magic"],
    ] {
        let mut args = vec!["fit", "x.csv", "-o", "m.pca"];
        args.extend_from_slice(&bad);
        env.fails(2, &args);
    }
}

/// Peak memory as `fit` reports it, in MB.
fn reported_peak_mb(stderr: &str) -> u64 {
    let at = stderr
        .find("peak memory ")
        .expect("fit reports its peak memory")
        + "peak memory ".len();
    stderr[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_file_far_larger_than_the_memory_limit_is_fitted_within_it() {
    // 120,000 × 100 f64 = 96 MB of data; the budget is 16 MB.
    let env = Env::new();
    let (n, d) = (120_000usize, 100usize);
    let mut rows = Vec::with_capacity(n);
    let mut rng = Lcg(11);
    for i in 0..n {
        let t = i as f64 / n as f64;
        rows.push(
            (0..d)
                .map(|j| (t * (1 + j % 7) as f64).sin() + 0.1 * rng.next())
                .collect::<Vec<f64>>(),
        );
    }
    env.write("big.npy", npy(&rows, false));
    drop(rows);
    let size_mb = fs::metadata(env.path("big.npy")).unwrap().len() / 1_000_000;
    assert!(size_mb >= 90);
    for solver in ["covariance", "randomized", "power", "em"] {
        let out = format!("{solver}.pca");
        let stderr = env.ok(&[
            "fit",
            "big.npy",
            "-k",
            "4",
            "--solver",
            solver,
            "--tolerance",
            "1e-8",
            "--memory-limit",
            "16M",
            "-o",
            &out,
        ]);
        assert!(stderr.contains("streamed in"), "{solver}: {stderr}");
        let peak = reported_peak_mb(&stderr);
        assert!(
            peak < 60,
            "{solver}: peak memory {peak} MB for a {size_mb} MB file under a 16 MB budget"
        );
    }
    // The streamed answers are the exact one (eigenvalues from the covariance solver).
    let exact = eigenvalues(&env.inspect("covariance.pca"));
    for name in ["randomized.pca", "power.pca", "em.pca"] {
        assert_close(
            &eigenvalues(&env.inspect(name)),
            &exact,
            1e-7 * exact[0],
            name,
        );
    }
}

/// Every value of `found` equals `expected`'s to within `tol` times the largest |value|.
fn assert_matrix_close(
    found: &principal_io::Matrix,
    expected: &principal::faer::Mat<f64>,
    tol: f64,
    what: &str,
) {
    let found = found.to_f64();
    assert_eq!(
        (found.nrows(), found.ncols()),
        (expected.nrows(), expected.ncols()),
        "{what}: shape"
    );
    let scale = (0..expected.nrows())
        .flat_map(|i| (0..expected.ncols()).map(move |j| (i, j)))
        .fold(0.0f64, |m, (i, j)| m.max(expected[(i, j)].abs()));
    for i in 0..expected.nrows() {
        for j in 0..expected.ncols() {
            let diff = (found[(i, j)] - expected[(i, j)]).abs();
            assert!(diff <= tol * scale, "{what}: ({i}, {j}) off by {diff:e}");
        }
    }
}

#[test]
fn transform_and_inverse_stream_files_larger_than_the_memory_limit() {
    // 60,000 × 100 f64 = 48 MB in, and 48 MB out of inverse; the budget is 8 MB (chunks of
    // 512 rows).
    let env = Env::new();
    let (n, d) = (60_000usize, 100usize);
    let mut rng = Lcg(5);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let t = i as f64 / n as f64;
            (0..d)
                .map(|j| (t * (1 + j % 5) as f64).cos() * 3.0 + 0.1 * rng.next() + 1e3)
                .collect()
        })
        .collect();
    env.write("big.npy", npy(&rows, false));
    drop(rows);
    let streamed = |args: &[&str]| env.ok(&[args, &["--memory-limit", "8M"]].concat());
    streamed(&["fit", "big.npy", "-k", "5", "-o", "m.pca"]);
    let stderr = streamed(&["transform", "m.pca", "big.npy", "-o", "codes.npy"]);
    let wrote = "wrote 60000 samples × 5 components to";
    assert!(stderr.contains(wrote), "{stderr}");
    let transform_peak = reported_peak_mb(&stderr);
    let stderr = streamed(&["inverse", "m.pca", "codes.npy", "-o", "back.npy"]);
    let wrote = "wrote 60000 samples × 100 features to";
    assert!(stderr.contains(wrote), "{stderr}");
    let inverse_peak = reported_peak_mb(&stderr);
    // Neither the 48 MB input of transform nor the 48 MB output of inverse is held.
    assert!(
        transform_peak < 40,
        "transform peaked at {transform_peak} MB"
    );
    assert!(inverse_peak < 40, "inverse peaked at {inverse_peak} MB");

    // The same numbers as the library's transform and inverse of the whole matrix at once.
    let model = principal_io::load_model(&env.path("m.pca")).unwrap().model;
    let read = |name: &str| {
        principal_io::read_table(&[env.path(name)], &principal_io::ReadOptions::default())
            .unwrap()
            .data
    };
    let data = read("big.npy").to_f64();
    let codes = model.transform(data.as_ref()).unwrap();
    assert_matrix_close(&read("codes.npy"), &codes, 1e-13, "codes");
    let back = model.inverse_transform(codes.as_ref()).unwrap();
    assert_matrix_close(&read("back.npy"), &back, 1e-13, "reconstruction");
    // In CSV and Parquet too (written a chunk at a time).
    for name in ["codes.csv", "codes.parquet"] {
        streamed(&["transform", "m.pca", "big.npy", "-o", name]);
        assert_matrix_close(&read(name), &codes, 1e-13, name);
    }
}

#[test]
fn a_bad_value_in_a_late_chunk_leaves_the_old_output_and_no_temporary() {
    // 3,000 rows of 3 columns in chunks of 2,560 rows (1 MB budget); a NaN in row 2,900.
    let env = Env::new();
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let mut rng = Lcg(9);
    let rows: Vec<Vec<f64>> = (0..3000)
        .map(|_| (0..3).map(|_| rng.next()).collect())
        .collect();
    env.write("good.csv", to_csv(Some(&names), &rows));
    let mut text = to_csv(Some(&names), &rows);
    let line = text.lines().nth(2901).unwrap().to_owned();
    text = text.replacen(
        &line,
        &format!("{},nan", line.rsplit_once(',').unwrap().0),
        1,
    );
    env.write("bad.csv", text);
    env.ok(&["fit", "good.csv", "-k", "2", "-o", "m.pca"]);
    for output in ["codes.npy", "codes.csv", "codes.parquet"] {
        env.write(output, "precious\n");
        let stderr = env.fails(
            1,
            &[
                "transform",
                "m.pca",
                "bad.csv",
                "-o",
                output,
                "--memory-limit",
                "1M",
            ],
        );
        assert!(stderr.contains("bad.csv, line 2902"), "{stderr}");
        assert!(stderr.contains("\"nan\""), "{stderr}");
        assert_eq!(
            fs::read(env.path(output)).unwrap(),
            b"precious\n",
            "{output}"
        );
    }
    let leftovers: Vec<_> = fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
