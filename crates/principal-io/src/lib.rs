//! # principal-io — files in and out of `principal`
//!
//! The math crate knows nothing about files; this crate holds the readers and writers:
//! - data: CSV, TSV and text (optionally gzip-compressed), NPY, IDX (MNIST's format), Parquet
//!   and Arrow IPC (Feather v2) — numeric columns, or one list column of embeddings — read
//!   whole with [`read_table`], streamed once with [`ChunkReader`], or pass after pass by the
//!   solvers through [`FileSource`] (a `principal::ChunkSource`), from one file or several
//!   shards concatenated by rows; a directory or a glob pattern is a data set of shards
//!   ([`expand_inputs`]);
//! - results: [`write_matrix`] to NPY, CSV, TSV or Parquet, always through [`write_atomically`];
//! - models: [`save_model`] / [`load_model`], a safetensors file that Python's
//!   `safetensors.numpy.load_file` reads as it is.
//!
//! Formats are recognised by content (gzip, NPY, IDX, Parquet and Arrow magic bytes) before
//! extension, so
//! `train-images-idx3-ubyte.gz` needs no special name. Every error names the file and, for bad
//! data, where in it and the offending value.

mod binary;
mod columnar;
mod csv;
mod error;
mod idx;
mod inputs;
mod model_file;
mod npy;
mod row_major;
mod source;
#[cfg(test)]
mod test_util;
mod write;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

pub use faer::Mat;

pub use error::{Column, IoError, Result};
pub use idx::read_labels;
pub use inputs::expand_inputs;
pub use model_file::{load_model, save_model, SavedModel, MODEL_FORMAT_VERSION};
pub use row_major::RowMajorMat;
pub use source::{ChunkReader, FileSource};
pub use write::{write_atomically, write_matrix, MatrixWriter};

/// Data as read: f32 where the source is f32 or small integers (u8/i8/u16/i16: exact in f32),
/// else f64. Text formats always give f64.
///
/// The elements are held row-major, as they were decoded (no transpose after reading); use
/// [`RowMajorMat::as_ref`] for a faer view.
#[derive(Clone, Debug, PartialEq)]
pub enum Matrix {
    /// From f32, u8, i8, u16 or i16 sources.
    F32(RowMajorMat<f32>),
    /// From text, f64 and wider integer sources.
    F64(RowMajorMat<f64>),
}

impl Matrix {
    /// Number of rows (samples).
    pub fn nrows(&self) -> usize {
        match self {
            Matrix::F32(m) => m.nrows(),
            Matrix::F64(m) => m.nrows(),
        }
    }

    /// Number of columns (features).
    pub fn ncols(&self) -> usize {
        match self {
            Matrix::F32(m) => m.ncols(),
            Matrix::F64(m) => m.ncols(),
        }
    }

    /// A copy in f64 (exact: every f32 is an f64).
    pub fn to_f64(&self) -> RowMajorMat<f64> {
        match self {
            Matrix::F32(m) => m.map(|&x| f64::from(x)),
            Matrix::F64(m) => m.clone(),
        }
    }

    /// The data in f64, without a copy when it already is.
    pub fn into_f64(self) -> RowMajorMat<f64> {
        match self {
            Matrix::F64(m) => m,
            f32 => f32.to_f64(),
        }
    }

    /// Whether the elements are f32.
    pub fn is_f32(&self) -> bool {
        matches!(self, Matrix::F32(_))
    }
}

/// A data set as read by [`read_table`].
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// N×D, one sample per row.
    pub data: Matrix,
    /// Names of the kept columns, when the (first) source has a header.
    pub column_names: Option<Vec<String>>,
}

/// A column chosen by header name or by 0-based index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnSelector {
    /// A header name (needs a header).
    Name(String),
    /// A 0-based index.
    Index(usize),
}

impl fmt::Display for ColumnSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnSelector::Name(name) => f.write_str(name),
            ColumnSelector::Index(i) => write!(f, "{i}"),
        }
    }
}

/// Why a string is not a [`ColumnSelector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseColumnSelectorError(String);

impl fmt::Display for ParseColumnSelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseColumnSelectorError {}

impl FromStr for ColumnSelector {
    type Err = ParseColumnSelectorError;

    /// All digits: a 0-based index; anything else: a name. Surrounding whitespace is ignored
    /// (header names are trimmed too), so `"a, b"` split on commas works.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ParseColumnSelectorError(
                "an empty column name or index".into(),
            ));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s
                .parse()
                .map(ColumnSelector::Index)
                .map_err(|_| ParseColumnSelectorError(format!("column index {s} is too large")));
        }
        Ok(ColumnSelector::Name(s.to_owned()))
    }
}

/// Whether the first record of a text file is a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HeaderMode {
    /// A header if any of its fields does not parse as a number.
    #[default]
    Auto,
    /// Always a header.
    Present,
    /// Never a header: the first record is data.
    Absent,
}

/// How to read a data set. Binary formats (NPY, IDX) have no header: `header` does not apply
/// to them and columns are selected by index only.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Header detection for text files.
    pub header: HeaderMode,
    /// Columns to keep, in this order; `None` keeps all.
    pub columns: Option<Vec<ColumnSelector>>,
    /// Columns to leave out (applied after `columns`); each must exist.
    pub exclude: Vec<ColumnSelector>,
    /// Parquet and Arrow only: the name of one list (or fixed-size list) column of numbers,
    /// such as embeddings, whose lists are the rows; every list must have the same length.
    /// Not combined with `columns` or `exclude`.
    pub list_column: Option<String>,
}

/// Reads one data set from one or more files (shards, concatenated by rows in the given order;
/// directories and glob patterns are expanded by [`expand_inputs`]).
///
/// Every shard must keep the same number of columns (and the same names when both have
/// headers). The format of each file is recognised by content, then extension: `.csv`, `.tsv`,
/// `.txt` (each optionally `.gz`), `.npy`, IDX (raw or gzip), Parquet (`.parquet`, `.pq`) and
/// Arrow IPC files or streams (`.arrow`, `.feather`, `.ipc`, `.arrows`). The result is f32 when
/// every shard is f32 or a small integer type (also f16), else f64.
pub fn read_table(paths: &[PathBuf], options: &ReadOptions) -> Result<Table> {
    let mut reader = ChunkReader::open(paths, options)?;
    let data = reader.read_all()?;
    let column_names = reader.column_names().map(<[String]>::to_vec);
    Ok(Table { data, column_names })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_selector_parses_digits_as_index() {
        assert_eq!(
            "3".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Index(3)
        );
        assert_eq!(
            " 03 ".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Index(3)
        );
        assert_eq!(
            "species".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Name("species".into())
        );
        assert_eq!(
            "x1".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Name("x1".into())
        );
        assert_eq!(
            "-1".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Name("-1".into())
        );
        assert!("".parse::<ColumnSelector>().is_err());
        assert!("99999999999999999999999999"
            .parse::<ColumnSelector>()
            .is_err());
    }

    #[test]
    fn matrix_converts_to_f64() {
        let m = Matrix::F32(RowMajorMat::from_mat_ref(
            Mat::from_fn(2, 3, |i, j| (i * 3 + j) as f32 + 0.5).as_ref(),
        ));
        assert_eq!((m.nrows(), m.ncols()), (2, 3));
        assert_eq!(m.to_f64()[(1, 2)], 5.5);
        assert_eq!(m.to_f64().as_slice(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]);
        assert!(m.is_f32());
        assert_eq!(m.clone().into_f64(), m.to_f64());
        let f64 = Matrix::F64(m.to_f64());
        assert!(!f64.is_f32());
        let Matrix::F64(inner) = &f64 else {
            unreachable!()
        };
        let at = inner.as_slice().as_ptr();
        assert_eq!(f64.into_f64().as_slice().as_ptr(), at, "moved, not copied");
    }
}
