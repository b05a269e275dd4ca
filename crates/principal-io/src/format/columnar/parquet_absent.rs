//! Parquet in a build without the cargo feature `parquet`: the openers of `parquet.rs`, which
//! say which feature the file needs.

use std::path::Path;

use crate::error::{Gated, Result};
use crate::format::columnar::ColumnarSource;
use crate::read::options::ReadOptions;

/// The error naming the cargo feature `parquet`.
pub(crate) fn open(path: &Path, _options: &ReadOptions) -> Result<ColumnarSource> {
    Err(Gated::Parquet.error(path, "read"))
}

/// The error naming the cargo feature `parquet`.
pub(crate) fn row_group_rows(path: &Path) -> Result<Vec<usize>> {
    Err(Gated::Parquet.error(path, "read"))
}

/// The error naming the cargo feature `parquet`.
pub(crate) fn open_groups(
    path: &Path,
    _options: &ReadOptions,
    _groups: Option<&[usize]>,
) -> Result<ColumnarSource> {
    Err(Gated::Parquet.error(path, "read"))
}
