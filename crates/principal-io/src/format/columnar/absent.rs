//! Parquet and Arrow IPC in a build with neither cargo feature (`parquet`, `arrow`): the same
//! interface as `mod.rs`, whose openers say which feature a file needs. No source is ever
//! made, so [`ColumnarSource`] is uninhabited and its methods are never called.

#[path = "arrow_absent.rs"]
pub(crate) mod arrow;
#[path = "parquet_absent.rs"]
pub(crate) mod parquet;

use std::convert::Infallible;

use crate::error::Result;
use crate::read::rows::RowBuf;

/// Never made: opening one is an error.
pub(crate) struct ColumnarSource {
    never: Infallible,
}

impl ColumnarSource {
    pub(crate) fn n_features(&self) -> usize {
        match self.never {}
    }

    pub(crate) fn column_names(&self) -> Option<&[String]> {
        match self.never {}
    }

    pub(crate) fn is_f32(&self) -> bool {
        match self.never {}
    }

    pub(crate) fn n_rows(&self) -> Option<usize> {
        match self.never {}
    }

    pub(crate) fn size_checked(&self) -> bool {
        match self.never {}
    }

    pub(crate) fn read_rows(&mut self, _max_rows: usize, _out: &mut RowBuf) -> Result<usize> {
        match self.never {}
    }
}
