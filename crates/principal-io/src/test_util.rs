//! Helpers shared by the unit tests: files made on the spot, in a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{read_table, Matrix, ReadOptions, Result, Table};

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
