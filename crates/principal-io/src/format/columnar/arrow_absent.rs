//! Arrow IPC in a build without the cargo feature `arrow`: the openers of `arrow.rs`, which
//! say which feature the file needs.

use std::path::Path;

use crate::error::{Gated, Result};
use crate::format::columnar::ColumnarSource;
use crate::read::open::Opened;
use crate::read::options::ReadOptions;

/// The error naming the cargo feature `arrow`.
pub(crate) fn open_file(path: &Path, _options: &ReadOptions) -> Result<ColumnarSource> {
    Err(Gated::Arrow.error(path, "read"))
}

/// The error naming the cargo feature `arrow`.
pub(crate) fn open_stream(
    path: &Path,
    _opened: Opened,
    _options: &ReadOptions,
) -> Result<ColumnarSource> {
    Err(Gated::Arrow.error(path, "read"))
}
