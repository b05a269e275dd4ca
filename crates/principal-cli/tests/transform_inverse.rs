//! End-to-end tests of `principal transform` and `principal inverse`: codes, reconstructions and
//! choosing the model's columns.

use std::fs;

use crate::common;

use common::*;

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
    assert!(
        fs::read(env.path("back.npy"))
            .unwrap()
            .starts_with(b"\x93NUMPY")
    );
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
    assert!(
        fs::read(env.path("d.npy"))
            .unwrap()
            .starts_with(b"\x93NUMPY")
    );
}

#[test]
fn whitened_codes_have_unit_variance_and_inverse_undoes_them() {
    let env = Env::new();
    let (names, rows) = iris_rows();
    env.write("iris4.csv", to_csv(Some(&names), &rows));
    let base = ["fit", "iris4.csv", "--components", "2", "--output"];
    env.ok(&[&base[..], &["white.pca", "--whiten"]].concat());
    env.ok(&[&base[..], &["plain.pca"]].concat());
    for model in ["white", "plain"] {
        let (pca, codes, back) = (
            format!("{model}.pca"),
            format!("{model}-codes.csv"),
            format!("{model}-back.csv"),
        );
        env.ok(&["transform", &pca, "iris4.csv", "--output", &codes]);
        env.ok(&["inverse", &pca, &codes, "--output", &back]);
    }
    let (_, white) = env.read_csv("white-codes.csv");
    let (_, plain) = env.read_csv("plain-codes.csv");
    let n = white.len() as f64;
    for m in 0..2 {
        let column: Vec<f64> = white.iter().map(|r| r[m]).collect();
        let mean = column.iter().sum::<f64>() / n;
        let variance = column.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert_close(&[variance], &[1.0], 1e-10, "variance of whitened codes");
    }
    // Whitened = plain / √λ, with Iris's reference eigenvalues.
    let lambda = [4.22824171_f64, 0.24267075];
    for (w, p) in white.iter().zip(&plain) {
        let unwhitened = [w[0] * lambda[0].sqrt(), w[1] * lambda[1].sqrt()];
        assert_close(&unwhitened, p, 1e-6, "whitened codes times √λ");
    }
    let (_, white_back) = env.read_csv("white-back.csv");
    let (_, plain_back) = env.read_csv("plain-back.csv");
    for (a, b) in white_back.iter().zip(&plain_back) {
        assert_close(a, b, 1e-9, "inverse of whitened codes");
    }
}
