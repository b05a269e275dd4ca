//! # principal-io — files in and out of `principal`
//!
//! The math crate knows nothing about files; this crate holds the readers and writers:
//! - data: CSV, TSV and text (optionally gzip-compressed), NPY, IDX (MNIST's format), Parquet
//!   and Arrow IPC (Feather v2) — numeric columns, or one list column of embeddings —, AnnData
//!   `.h5ad` (X or a layer, dense, CSR or CSC; `write_scanpy_pca` fills scanpy's fields) — read
//!   whole with [`read_table`], streamed once with [`ChunkReader`], or pass after pass by the
//!   solvers through [`FileSource`] (a `principal::ChunkSource`), from one file or several
//!   shards concatenated by rows; a directory or a glob pattern is a data set of shards
//!   ([`expand_inputs`]);
//! - results: [`write_matrix`] to NPY, CSV, TSV or Parquet, always through [`write_atomically`];
//! - models: [`save_model`] / [`load_model`], a safetensors file that Python's
//!   `safetensors.numpy.load_file` reads as it is;
//! - statistics: [`save_statistics`] / [`load_statistics`] / [`merge_statistics`], the
//!   mergeable moments of part of a data set, in the same kind of file;
//! - parts of a data set for fits over several processes: [`ChunkReader::open_part`].
//!
//! Formats are recognised by content (gzip, NPY, IDX, Parquet and Arrow magic bytes) before
//! extension, so `train-images-idx3-ubyte.gz` needs no special name. Every error names the
//! file and, for bad data, where in it and the offending value.
//!
//! ## Layout
//!
//! Imports flow one way, from the top of this list to the bottom (the test
//! `tests/layering.rs` enforces it):
//! - `statistics_file`: the statistics file, through `model_file`'s safetensors helpers;
//! - `h5ad_into`: a PCA written into an AnnData file as scanpy lays it out, through `write`'s
//!   atomic edit and `format::h5ad`'s index reader;
//! - `model_file`: the safetensors model file, written through `write`; `labels`: the labels
//!   of a data set's rows, from label files or a column of the data ([`read_label_files`],
//!   [`read_label_column`]), over the formats and `reader`;
//! - `reader`: the data set of shards ([`ChunkReader`], [`FileSource`], [`read_table`]),
//!   which dispatches every shard to its format; `write`: atomic writes and [`MatrixWriter`];
//! - `format`: one reader per format (`csv`, `npy` and `idx` over the shared `binary`,
//!   `columnar` for Parquet and Arrow), each built on `read` alone;
//! - `read`: the leaves every format uses: opening and format detection, options, columns,
//!   row buffers, the [`Matrix`] a read gives, input expansion;
//! - `error`: [`IoError`].

mod error;
mod format;
mod h5ad_into;
mod labels;
mod model_file;
mod model_kinds;
mod read;
mod reader;
mod statistics_file;
#[cfg(test)]
mod test_util;
mod write;

pub use faer::Mat;

pub use error::{Column, IoError, Result};
pub use format::idx::read_labels;
pub use format::mtx::{
    Orientation, SparseFile, h5ad_block_entries, is_sparse_input, is_sparse_input_with,
};
pub use h5ad_into::{ScanpyPca, write_scanpy_pca};
pub use labels::{read_label_column, read_label_files};
pub use model_file::{
    MODEL_FORMAT_VERSION, SavedModel, load_model, save_model, save_weighted_model,
};
pub use model_kinds::{
    AnyModel, KINDS_FORMAT_VERSION, SavedAnyModel, load_any_model, model_kind, save_any_model,
};
pub use read::bounded::panic_is_contained;
pub use read::inputs::expand_inputs;
pub use read::matrix::{Matrix, RowMajorMat};
pub use read::options::{
    ColumnSelector, HeaderMode, Missing, ParseColumnSelectorError, ReadOptions,
};
pub use reader::chunk_reader::{ChunkReader, Table, read_table};
pub use reader::file_source::{FileSource, PassTimes};
pub use reader::part::Part;
pub use statistics_file::{
    STATISTICS_FORMAT_VERSION, Statistics, load_statistics, merge_statistics, save_statistics,
};
pub use write::{MAX_PARQUET_COLUMNS, MatrixWriter, write_atomically, write_matrix};
