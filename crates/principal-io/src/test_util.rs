//! Helpers shared by the unit tests: files made on the spot, in a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};

#[cfg(feature = "parquet")]
use parquet::basic::Compression;

use crate::{ColumnSelector, Matrix, ReadOptions, Result, Table, read_table};

#[cfg(feature = "parquet")]
#[path = "../tests/common/arrow_to_parquet.rs"]
mod arrow_to_parquet;

pub(crate) fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

pub(crate) fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// An NPY file: `data` is the raw element bytes, in the order `fortran` says.
pub(crate) fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let fortran = if fortran { "True" } else { "False" };
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// An NPY file of `rows` × `cols` f64 counting up from `start` in row-major order, stored in
/// C or Fortran order.
pub(crate) fn f64_npy(rows: usize, cols: usize, fortran: bool, start: f64) -> Vec<u8> {
    let value = |i: usize, j: usize| start + (i * cols + j) as f64;
    let data: Vec<u8> = if fortran {
        (0..cols)
            .flat_map(|j| (0..rows).map(move |i| value(i, j)))
            .flat_map(f64::to_le_bytes)
            .collect()
    } else {
        (0..rows)
            .flat_map(|i| (0..cols).map(move |j| value(i, j)))
            .flat_map(f64::to_le_bytes)
            .collect()
    };
    npy("<f8", fortran, &[rows, cols], &data)
}

/// An IDX file of type `code` with the given dimensions and raw (big-endian) element bytes.
pub(crate) fn idx(code: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, code, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

pub(crate) fn read(paths: &[PathBuf], options: &ReadOptions) -> Result<Table> {
    read_table(paths, options)
}

pub(crate) fn read_one(path: &Path) -> Result<Table> {
    read_table(&[path.to_owned()], &ReadOptions::default())
}

/// The matrix as rows of f64, for comparisons.
pub(crate) fn rows(m: &Matrix) -> Vec<Vec<f64>> {
    let m = m.to_f64();
    (0..m.nrows())
        .map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect())
        .collect()
}

/// The error message of a failed read.
pub(crate) fn err_of<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.unwrap_err().to_string()
}

pub(crate) fn names(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| s.to_string()).collect())
}

#[cfg(feature = "parquet")]
/// A Parquet file of `batch`, in row groups of at most `row_group_rows` rows.
pub(crate) fn parquet_file(
    dir: &Path,
    name: &str,
    batch: &arrow_array::RecordBatch,
    row_group_rows: usize,
) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    arrow_to_parquet::write_parquet(batch, file, row_group_rows, Compression::SNAPPY);
    path
}

// Its tests write both formats.
#[cfg(all(feature = "parquet", feature = "arrow"))]
/// An Arrow IPC file (`stream: false`) or stream of `batches`.
pub(crate) fn arrow_file(
    dir: &Path,
    name: &str,
    batches: &[arrow_array::RecordBatch],
    stream: bool,
) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let schema = batches[0].schema();
    if stream {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(file, &schema).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    } else {
        let mut w = arrow_ipc::writer::FileWriter::try_new(file, &schema).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    }
    path
}

#[cfg(feature = "parquet")]
/// A record batch of the named columns.
pub(crate) fn batch(columns: Vec<(&str, arrow_array::ArrayRef)>) -> arrow_array::RecordBatch {
    arrow_array::RecordBatch::try_from_iter(columns).unwrap()
}

/// Read options choosing `columns` (all when `None`) less `exclude`, by name or index.
pub(crate) fn selection(columns: Option<&[&str]>, exclude: &[&str]) -> ReadOptions {
    let parse = |s: &&str| s.parse::<ColumnSelector>().unwrap();
    ReadOptions {
        columns: columns.map(|c| c.iter().map(parse).collect()),
        exclude: exclude.iter().map(parse).collect(),
        ..Default::default()
    }
}
