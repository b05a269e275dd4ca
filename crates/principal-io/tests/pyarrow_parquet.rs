//! Parquet files written by pyarrow, read against the values pyarrow wrote
//! (`fixtures/generate_parquet.py` made `fixtures/parquet/`): every integer width and sign,
//! f16, f32 and f64 with nulls, dictionary-encoded and plain, data pages v1 and v2, Snappy and
//! Zstandard, lists of fixed and variable length with null lists and null elements, three row
//! groups; with the Arrow schema pyarrow stores in the footer and without it.

use std::path::PathBuf;

use crate::common;

use principal_io::{ColumnSelector, Missing, ReadOptions, read_table};
use serde_json::Value;

const FILES: [&str; 2] = ["arrow_schema.parquet", "plain_v2.parquet"];
const NUMERIC: [&str; 11] = [
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64",
];
const OTHER: [&str; 6] = ["flag", "name", "when", "price", "embedding", "var"];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn values() -> Value {
    let text = std::fs::read_to_string(fixtures().join("parquet/values.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Column `name` of values.json: rows of values (a list column's lists), null as `None`.
fn column(values: &Value, name: &str) -> Vec<Option<Vec<Option<f64>>>> {
    values["columns"][name]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Null => None,
            Value::Array(list) => Some(list.iter().map(Value::as_f64).collect()),
            number => Some(vec![number.as_f64()]),
        })
        .collect()
}

fn names(list: &[&str]) -> Vec<ColumnSelector> {
    list.iter()
        .map(|s| ColumnSelector::Name(s.to_string()))
        .collect()
}

/// The matrix read, NaN as `None`.
fn read(path: &PathBuf, options: &ReadOptions) -> Vec<Vec<Option<f64>>> {
    let t = read_table(std::slice::from_ref(path), options).unwrap();
    let m = t.data.to_f64();
    (0..m.nrows())
        .map(|i| {
            (0..m.ncols())
                .map(|j| Some(m[(i, j)]).filter(|v| !v.is_nan()))
                .collect()
        })
        .collect()
}

#[test]
fn the_generating_script_is_committed() {
    assert!(fixtures().join("generate_parquet.py").is_file());
    assert_eq!(values()["rows"], 20);
}

#[test]
fn numeric_columns_read_as_pyarrow_wrote_them_nulls_as_missing_values() {
    let values = values();
    let want: Vec<Vec<Option<f64>>> = (0..20)
        .map(|i| {
            NUMERIC
                .iter()
                .map(|name| column(&values, name)[i].as_ref().map(|v| v[0].unwrap()))
                .collect()
        })
        .collect();
    for file in FILES {
        let path = fixtures().join("parquet").join(file);
        let options = ReadOptions {
            exclude: names(&OTHER),
            missing: Missing::AsNan,
            ..Default::default()
        };
        assert_eq!(read(&path, &options), want, "{file}");
        let t = read_table(std::slice::from_ref(&path), &options).unwrap();
        assert_eq!(
            t.column_names.unwrap(),
            NUMERIC.map(String::from).to_vec(),
            "{file}"
        );
        // Without missing values the first null is an error naming its row and column: the
        // first row holding one, at its first kept column.
        let first = want.iter().position(|r| r.contains(&None)).unwrap();
        let at = want[first].iter().position(Option::is_none).unwrap();
        let e = read_table(
            std::slice::from_ref(&path),
            &ReadOptions {
                exclude: names(&OTHER),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.ends_with(&format!(
                "row {first} (counting from 0), column \"{}\": null (missing values are not \
                 supported)",
                NUMERIC[at]
            )),
            "{file}: {e}"
        );
    }
}

#[test]
fn list_columns_read_as_pyarrow_wrote_them() {
    let values = values();
    for file in FILES {
        let path = fixtures().join("parquet").join(file);
        for (name, width) in [("embedding", 3), ("var", 2)] {
            let want: Vec<Vec<Option<f64>>> = column(&values, name)
                .into_iter()
                .map(|row| row.unwrap_or(vec![None; width]))
                .collect();
            let options = ReadOptions {
                list_column: Some(name.into()),
                missing: Missing::AsNan,
                ..Default::default()
            };
            assert_eq!(read(&path, &options), want, "{file} {name}");
        }
    }
}

/// Non-numeric columns are refused by their Arrow type: the one pyarrow stored when it did,
/// else the one the Parquet schema gives.
#[test]
fn non_numeric_columns_are_named_with_their_type() {
    for (file, embedding) in [
        ("arrow_schema.parquet", "FixedSizeList("),
        ("plain_v2.parquet", "List("),
    ] {
        let path = fixtures().join("parquet").join(file);
        for (name, t) in [
            ("flag", "Boolean"),
            ("name", "Utf8"),
            ("when", "Timestamp("),
            ("price", "Decimal128(9, 2)"),
            ("embedding", embedding),
        ] {
            let options = ReadOptions {
                columns: Some(names(&["i8", name])),
                ..Default::default()
            };
            let e = read_table(std::slice::from_ref(&path), &options)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("column \"{name}\" holds {t}")),
                "{file}: {e}"
            );
        }
    }
}

/// The fuzzers' committed seeds were written by arrow-rs's `ArrowWriter` (before this crate
/// stopped building the `parquet` crate's arrow layer): they read as the files the tests write
/// now from the same batches, nulls included.
#[test]
fn seeds_written_by_arrow_rs_read_as_before() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let dir = tempfile::tempdir().unwrap();
    for (seed, bytes) in [
        ("parquet/seed-snappy.parquet", common::parquet_bytes()),
        ("missing/seed-nulls.parquet", common::parquet_gaps_bytes()),
        ("labels/seed-labels.parquet", common::parquet_labels_bytes()),
    ] {
        let ours = dir.path().join("ours.parquet");
        std::fs::write(&ours, bytes).unwrap();
        let options = ReadOptions {
            missing: Missing::AsNan,
            ..Default::default()
        };
        let read_bits = |path: &PathBuf| {
            let t = read_table(std::slice::from_ref(path), &options).unwrap();
            let m = t.data.to_f64();
            let bits: Vec<u64> = (0..m.nrows())
                .flat_map(|i| (0..m.ncols()).map(move |j| (i, j)))
                .map(|(i, j)| m[(i, j)].to_bits())
                .collect();
            (t.column_names, m.nrows(), bits)
        };
        assert_eq!(read_bits(&corpus.join(seed)), read_bits(&ours), "{seed}");
    }
}
