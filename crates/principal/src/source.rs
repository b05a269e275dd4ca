//! Re-readable data: the piece that lets one solver serve memory, files larger than memory and
//! shards alike. A source hands out chunks of rows, in the same order on every pass.

use faer::MatRef;

use crate::{PcaError, Real, Result};

/// A chunk of rows as stored: `f32` or `f64`.
#[derive(Clone, Copy, Debug)]
pub enum ChunkRef<'a> {
    /// Rows stored as `f32` (also small integers, exact in `f32`).
    F32(MatRef<'a, f32>),
    /// Rows stored as `f64`.
    F64(MatRef<'a, f64>),
}

impl ChunkRef<'_> {
    /// Rows in the chunk.
    pub fn nrows(&self) -> usize {
        match self {
            ChunkRef::F32(m) => m.nrows(),
            ChunkRef::F64(m) => m.nrows(),
        }
    }
    /// Columns in the chunk.
    pub fn ncols(&self) -> usize {
        match self {
            ChunkRef::F32(m) => m.ncols(),
            ChunkRef::F64(m) => m.ncols(),
        }
    }
}

/// Data that can be read in full more than once, chunk by chunk, always in the same order.
///
/// Iterative solvers make several passes; the covariance solver makes one. Implemented for
/// in-memory matrices by [`InMemory`]; `principal-io` implements it for files.
pub trait ChunkSource {
    /// Features per row.
    fn n_features(&self) -> usize;
    /// One full pass: calls `visit` with consecutive chunks of rows. Errors of the source itself
    /// (a file that cannot be read) are returned as [`PcaError::Source`].
    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()>;
}

/// An in-memory matrix as a [`ChunkSource`], handed out in chunks of `chunk_rows` rows.
pub struct InMemory<'a, T: Real> {
    data: MatRef<'a, T>,
    chunk_rows: usize,
}

impl<'a, T: Real> InMemory<'a, T> {
    /// Wraps `data`, handing it out `chunk_rows` rows at a time.
    pub fn new(data: MatRef<'a, T>, chunk_rows: usize) -> Self {
        InMemory {
            data,
            chunk_rows: chunk_rows.max(1),
        }
    }
}

impl<T: Real> ChunkSource for InMemory<'_, T> {
    fn n_features(&self) -> usize {
        self.data.ncols()
    }

    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
        let n = self.data.nrows();
        let mut start = 0;
        while start < n {
            let rows = self.chunk_rows.min(n - start);
            visit(T::chunk(self.data.subrows(start, rows)))?;
            start += rows;
        }
        Ok(())
    }
}

/// Wraps a source error into the library's error.
pub fn source_error(message: impl std::fmt::Display) -> PcaError {
    PcaError::Source(message.to_string())
}
