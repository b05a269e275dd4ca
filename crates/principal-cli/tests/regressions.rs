//! One test per reported bug, named after it.

use std::process::Stdio;

use crate::common;

use common::*;

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
