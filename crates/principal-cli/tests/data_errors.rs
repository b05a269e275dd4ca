//! Bad data and damaged models: exit 1, a message naming the file, row, column or value, no output
//! left behind and no good output overwritten.

use std::fs;

use serde_json::Value;

use crate::common;

use common::*;

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
