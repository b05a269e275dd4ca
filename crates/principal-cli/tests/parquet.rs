//! End to end with Parquet: fit on numeric columns and on a list column of embeddings, and
//! transform to a Parquet file that reads back.

use crate::io_files;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{ArrayRef, FixedSizeListArray, Float64Array, RecordBatch, StringArray};
use principal_io::{Matrix, ReadOptions, read_table};

/// Runs `principal` with the words of `args` in `dir`.
fn run(dir: &Path, args: &str) -> Output {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_principal"))
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .expect("run principal")
}

fn ok(dir: &Path, args: &str) -> String {
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "principal {args} failed:\n{stderr}");
    stderr
}

/// 60 rows: an id column, three numeric columns (x and y correlated), and 4-D embeddings.
fn write_data(path: &Path) {
    let n = 60;
    let t: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 3.0).collect();
    let x: Vec<f64> = t.iter().map(|v| v + 1.0).collect();
    let y: Vec<f64> = t
        .iter()
        .enumerate()
        .map(|(i, v)| 2.0 * v + 0.1 * (i as f64).cos())
        .collect();
    let z: Vec<f64> = (0..n).map(|i| ((i * 7) % 5) as f64 * 0.2).collect();
    let embedding = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        (0..n).map(|i| {
            let a = (i as f32 * 0.37).sin();
            Some(vec![
                Some(a),
                Some(-a),
                Some(0.5 * a + (i % 3) as f32),
                Some(1.0),
            ])
        }),
        4,
    );
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("r{i}")),
            )) as ArrayRef,
        ),
        ("x", Arc::new(Float64Array::from(x))),
        ("y", Arc::new(Float64Array::from(y))),
        ("z", Arc::new(Float64Array::from(z))),
        ("embedding", Arc::new(embedding)),
    ])
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    io_files::arrow_to_parquet::write_parquet(
        &batch,
        file,
        16,
        parquet::basic::Compression::UNCOMPRESSED,
    );
}

#[test]
fn fit_and_transform_parquet_columns_and_embeddings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_data(&d.join("data.parquet"));

    // Numeric columns: from memory, and streamed by the covariance solver.
    ok(d, "fit data.parquet --columns x,y,z -k 2 -o cols.model");
    // A pattern is the files it matches.
    ok(
        d,
        "fit data.* --columns x,y,z -k 2 --solver covariance -o streamed.model",
    );
    // Without --columns, transform picks the model's features by name, past the id column.
    ok(d, "transform cols.model data.parquet -o codes.parquet");
    ok(
        d,
        "transform streamed.model data.parquet --columns x,y,z -o streamed.csv",
    );
    let codes = read_table(&[d.join("codes.parquet")], &ReadOptions::default()).unwrap();
    assert_eq!((codes.data.nrows(), codes.data.ncols()), (60, 2));
    assert_eq!(
        codes.column_names,
        Some(vec!["pc1".to_string(), "pc2".to_string()])
    );
    let streamed = read_table(&[d.join("streamed.csv")], &ReadOptions::default()).unwrap();
    let (a, b) = (codes.data.to_f64(), streamed.data.to_f64());
    for i in 0..60 {
        for j in 0..2 {
            assert!((a[(i, j)] - b[(i, j)]).abs() < 1e-9, "row {i}, pc{}", j + 1);
        }
    }

    // The id column is not numeric: a clear error with the way out.
    let out = run(d, "fit data.parquet -k 1 -o bad.model");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("column \"id\" holds Utf8, not numbers; leave it out with --exclude id"),
        "{stderr}"
    );

    // Embeddings: one row per list, f32.
    ok(d, "fit data.parquet --column embedding -k 2 -o emb.model");
    ok(
        d,
        "transform emb.model data.parquet --column embedding -o emb.parquet",
    );
    let emb = read_table(&[d.join("emb.parquet")], &ReadOptions::default()).unwrap();
    assert_eq!((emb.data.nrows(), emb.data.ncols()), (60, 2));
    let Matrix::F64(m) = emb.data else {
        panic!("codes are f64")
    };
    assert!((0..60).all(|i| m[(i, 0)].is_finite()));
    // The embeddings span 2 dimensions around their mean: two components reconstruct them.
    ok(d, "inverse emb.model emb.parquet -o back.parquet");
    let back = read_table(&[d.join("back.parquet")], &ReadOptions::default()).unwrap();
    let list = ReadOptions {
        list_column: Some("embedding".into()),
        ..Default::default()
    };
    let original = read_table(&[d.join("data.parquet")], &list).unwrap();
    assert!(original.data.is_f32());
    let (x, y) = (original.data.to_f64(), back.data.to_f64());
    for i in 0..60 {
        for j in 0..4 {
            assert!((x[(i, j)] - y[(i, j)]).abs() < 1e-4, "({i}, {j})");
        }
    }
}

/// Through the binary: `inverse` of a model with 10,001 features to a Parquet file is refused
/// before anything is written (Parquet readers choke on wider files), naming the limit and the
/// file, and an earlier good output of the same name is left as it was; NPY takes the same
/// matrix.
#[test]
fn a_parquet_output_wider_than_the_limit_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = principal_io::MAX_PARQUET_COLUMNS + 1;
    let rows: Vec<Vec<f64>> = (0..4)
        .map(|i| (0..d).map(|j| ((i * 31 + j * 7) % 11) as f64).collect())
        .collect();
    std::fs::write(
        dir.path().join("wide.npy"),
        crate::common::npy(&rows, false),
    )
    .unwrap();
    ok(dir.path(), "fit wide.npy --components 1 --output wide.pca");
    ok(dir.path(), "transform wide.pca wide.npy --output codes.npy");
    let before = b"an earlier output".to_vec();
    std::fs::write(dir.path().join("back.parquet"), &before).unwrap();
    let out = run(
        dir.path(),
        "inverse wide.pca codes.npy --output back.parquet",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("back.parquet") && stderr.contains("10001") && stderr.contains("10000"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("back.parquet")).unwrap(),
        before
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.contains("back") && name != "back.parquet")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    ok(dir.path(), "inverse wide.pca codes.npy --output back.npy");
}
