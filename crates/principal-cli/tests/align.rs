//! `principal align`: a model refitted on resampled data is matched to the reference (small
//! angles, codes agreeing), a rotated copy is rotated back, and models that cannot be compared
//! are refused.

use crate::common;

use common::{Env, iris_rows, matrix, numbers, to_csv};
use serde_json::Value;

/// SplitMix64: a seeded stream of indices for the bootstrap sample (no RNG crate here).
fn bootstrap_rows(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % n as u64) as usize
        })
        .collect()
}

fn column(rows: &[Vec<f64>], k: usize) -> Vec<f64> {
    rows.iter().map(|r| r[k]).collect()
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// Iris, unstandardised, three components, refitted on ten bootstrap samples: the angles are
/// small and the aligned codes agree with the reference's. The third component's largest
/// entries are close, so its sign (the rule: largest entry positive) flips in some refits;
/// the test requires that some did, so that it shows flips undone.
#[test]
fn a_model_refitted_on_a_bootstrap_sample_is_matched_to_the_reference() {
    let env = Env::new();
    let (header, rows) = iris_rows();
    env.write("iris.csv", to_csv(Some(header.as_slice()), &rows));
    env.ok(&[
        "fit",
        "iris.csv",
        "--components",
        "3",
        "--output",
        "ref.pca",
    ]);
    env.ok(&["transform", "ref.pca", "iris.csv", "--output", "ref.csv"]);
    let (_, reference) = env.read_csv("ref.csv");
    let mut flipped_before = 0;
    for seed in 1..=10 {
        let sample: Vec<Vec<f64>> = bootstrap_rows(rows.len(), seed)
            .into_iter()
            .map(|i| rows[i].clone())
            .collect();
        env.write("boot.csv", to_csv(Some(header.as_slice()), &sample));
        env.ok(&[
            "fit",
            "boot.csv",
            "--components",
            "3",
            "--output",
            "boot.pca",
        ]);
        env.ok(&[
            "transform",
            "boot.pca",
            "iris.csv",
            "--output",
            "before.csv",
        ]);
        let (_, before) = env.read_csv("before.csv");
        let out = env.run(&[
            "align",
            "boot.pca",
            "--reference",
            "ref.pca",
            "--output",
            "aligned.pca",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let angles = numbers(&report["principal_angles_degrees"]);
        assert_eq!(angles.len(), 3);
        // Two 3-D subspaces of a 4-D space share a plane (two angles 0); the third angle is
        // the tilt of the last direction, λ₃ / λ₄ = 0.078 / 0.024 apart: 1° to 10° in these samples.
        assert!(
            angles.iter().all(|a| (0.0..20.0).contains(a)),
            "seed {seed}: {angles:?}"
        );
        eprintln!("seed {seed}: angles {angles:?}");
        env.ok(&[
            "transform",
            "aligned.pca",
            "iris.csv",
            "--output",
            "after.csv",
        ]);
        let (_, after) = env.read_csv("after.csv");
        for k in 0..3 {
            let r = correlation(&column(&after, k), &column(&reference, k));
            assert!(r > 0.9, "seed {seed}, component {k}: correlation {r}");
            if correlation(&column(&before, k), &column(&reference, k)) < 0.0 {
                flipped_before += 1;
            }
        }
    }
    eprintln!("{flipped_before} flipped component(s) before alignment");
    assert!(
        flipped_before > 0,
        "no bootstrap refit had a flipped component: the test shows nothing"
    );
}

/// The reference's components rotated by a known orthogonal matrix, saved as a model (via
/// inspect's JSON and a fit of the same data: the model file's other fields are the
/// reference's), are rotated back to the reference to 1e-10.
#[test]
fn align_rotate_recovers_the_reference_from_a_rotated_copy() {
    let env = Env::new();
    let (header, rows) = iris_rows();
    env.write("iris.csv", to_csv(Some(header.as_slice()), &rows));
    env.ok(&[
        "fit",
        "iris.csv",
        "--components",
        "3",
        "--output",
        "ref.pca",
    ]);
    // A model of the same subspace with other axes: the reference's components rotated. The
    // only way to make one through the command line is align itself, so rotate the reference
    // towards a model fitted on other data, then rotate that back.
    let other: Vec<Vec<f64>> = rows.iter().map(|r| vec![r[1], r[3], r[0], r[2]]).collect();
    env.write("other.csv", to_csv(Some(header.as_slice()), &other));
    env.ok(&[
        "fit",
        "other.csv",
        "--components",
        "3",
        "--output",
        "other.pca",
    ]);
    let out = env.run(&[
        "align",
        "ref.pca",
        "--reference",
        "other.pca",
        "--output",
        "rotated.pca",
        "--rotate",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let there: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rotation = matrix(&there["rotation"]);
    // A real rotation, far from the identity, so going back is a test.
    let off_identity = (0..3)
        .map(|i| (rotation[i][i] - 1.0).abs())
        .fold(0.0, f64::max);
    assert!(off_identity > 0.1, "{rotation:?}");
    let rotated = env.inspect("rotated.pca");
    assert_eq!(rotated["basis"], "rotated");
    // The rotated copy cannot be rotated again (its variances along new axes are unknown)...
    let err = env.fails(
        1,
        &[
            "align",
            "rotated.pca",
            "--reference",
            "ref.pca",
            "--output",
            "x.pca",
            "--rotate",
        ],
    );
    assert!(err.contains("already rotated"), "{err}");
    assert!(!env.path("x.pca").exists());
    // ...but the reference can be rotated onto it and back: rotate ref.pca to rotated.pca's
    // axes, giving them to 1e-10.
    env.ok(&[
        "align",
        "ref.pca",
        "--reference",
        "rotated.pca",
        "--output",
        "back.pca",
        "--rotate",
    ]);
    let back = env.inspect("back.pca");
    let target = matrix(&rotated["components"]);
    let got = matrix(&back["components"]);
    for (g, t) in got.iter().flatten().zip(target.iter().flatten()) {
        assert!((g - t).abs() < 1e-10, "{g} vs {t}");
    }
    let (vb, vr) = (
        numbers(&back["explained_variance"]),
        numbers(&rotated["explained_variance"]),
    );
    for (b, r) in vb.iter().zip(&vr) {
        assert!((b - r).abs() < 1e-10 * r.abs().max(1.0), "{b} vs {r}");
    }
    let table = env.run(&["inspect", "rotated.pca"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("not eigenvectors"));
}

#[test]
fn models_of_other_features_or_preprocessing_are_refused_and_nothing_is_written() {
    let env = Env::new();
    let (header, rows) = iris_rows();
    env.write("iris.csv", to_csv(Some(header.as_slice()), &rows));
    let three: Vec<Vec<f64>> = rows.iter().map(|r| r[..3].to_vec()).collect();
    env.write("three.csv", to_csv(Some(&header[..3]), &three));
    let renamed: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
    env.write("renamed.csv", to_csv(Some(renamed.as_slice()), &rows));
    env.ok(&[
        "fit",
        "iris.csv",
        "--components",
        "2",
        "--output",
        "ref.pca",
    ]);
    env.ok(&[
        "fit",
        "three.csv",
        "--components",
        "2",
        "--output",
        "three.pca",
    ]);
    env.ok(&[
        "fit",
        "renamed.csv",
        "--components",
        "2",
        "--output",
        "renamed.pca",
    ]);
    env.ok(&[
        "fit",
        "iris.csv",
        "--components",
        "2",
        "--standardize",
        "--output",
        "std.pca",
    ]);
    env.ok(&[
        "fit",
        "iris.csv",
        "--components",
        "2",
        "--ddof",
        "0",
        "--output",
        "ddof0.pca",
    ]);
    // A good aligned model already there must survive a refused run.
    env.ok(&[
        "align",
        "ref.pca",
        "--reference",
        "ref.pca",
        "--output",
        "out.pca",
    ]);
    let good = std::fs::read(env.path("out.pca")).unwrap();
    for (model, words) in [
        ("three.pca", "3 features and the reference 4"),
        (
            "renamed.pca",
            "feature 1 is \"a\" in the model but \"sepal_length\"",
        ),
        ("std.pca", "standardised and the reference not"),
        ("ddof0.pca", "ddof 0 and the reference with ddof 1"),
    ] {
        let err = env.fails(
            1,
            &[
                "align",
                model,
                "--reference",
                "ref.pca",
                "--output",
                "out.pca",
            ],
        );
        assert!(err.contains("cannot align"), "{err}");
        assert!(err.contains(words), "{model}: {err}");
        assert_eq!(std::fs::read(env.path("out.pca")).unwrap(), good);
    }
}
