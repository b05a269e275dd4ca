//! AnnData `.h5ad` in a build without the cargo feature `h5ad`: the same interface as
//! `h5ad.rs`, whose [`H5adSource::open`] says which feature the file needs. No source is ever
//! made, so the type is uninhabited and its methods are never called.

use std::convert::Infallible;
use std::ops::Range;
use std::path::Path;

use principal::PcaError;
use principal::sparse::CsrChunk;

use crate::error::{Gated, Result};
use crate::read::options::ReadOptions;
use crate::read::rows::RowBuf;

/// Never made: opening one is an error.
pub(crate) struct H5adSource {
    never: Infallible,
}

impl H5adSource {
    /// The error naming the cargo feature `h5ad`.
    pub(crate) fn open(path: &Path, _options: &ReadOptions) -> Result<H5adSource> {
        Err(Gated::H5ad.error(path, "read"))
    }

    pub(crate) fn n_features(&self) -> usize {
        match self.never {}
    }

    pub(crate) fn column_names(&self) -> Option<&[String]> {
        match self.never {}
    }

    pub(crate) fn is_f32(&self) -> bool {
        match self.never {}
    }

    pub(crate) fn n_rows(&self) -> usize {
        match self.never {}
    }

    pub(crate) fn splittable(&self) -> bool {
        match self.never {}
    }

    pub(crate) fn restrict(&mut self, _rows: Range<usize>) -> Result<()> {
        match self.never {}
    }

    pub(crate) fn read_rows(&mut self, _max_rows: usize, _out: &mut RowBuf) -> Result<usize> {
        match self.never {}
    }

    pub(crate) fn is_sparse(&self) -> bool {
        match self.never {}
    }

    pub(crate) fn encoding(&self) -> &'static str {
        match self.never {}
    }

    pub(crate) fn stored_entries(&self) -> u64 {
        match self.never {}
    }

    pub(crate) fn rows_to_read(&self) -> usize {
        match self.never {}
    }

    pub(crate) fn sparse_pass(
        &mut self,
        _budget: usize,
        _visit: &mut dyn FnMut(CsrChunk<'_>) -> principal::Result<()>,
    ) -> Result<Option<PcaError>> {
        match self.never {}
    }
}
