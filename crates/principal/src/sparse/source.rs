//! Re-readable sparse data: [`SparseSource`] hands out CSR blocks of rows, in the same order on
//! every pass, as [`crate::ChunkSource`] does dense chunks.

use crate::error::Result;
use crate::sparse::csr::CsrChunk;

/// Sparse data that can be read in full more than once, block by block of rows, always in the
/// same order. Implemented for a CSR matrix in memory by [`SparseInMemory`]; `principal-io`
/// implements it for MatrixMarket files and 10x directories.
pub trait SparseSource {
    /// Features per row.
    fn n_features(&self) -> usize;
    /// One full pass: calls `visit` with consecutive blocks of rows. Errors of the source itself
    /// (a file that cannot be read) are returned as [`crate::PcaError::Source`].
    fn pass(&mut self, visit: &mut dyn FnMut(CsrChunk<'_>) -> Result<()>) -> Result<()>;
}

/// A CSR matrix in memory as a [`SparseSource`], handed out `block_rows` rows at a time (views:
/// nothing is copied).
///
/// ```
/// use principal::sparse::{CsrRef, SparseInMemory, SparseSource};
/// let x = CsrRef::new(2, &[0, 1, 1, 2], &[0u32, 1], &[1.0f64, 2.0])?;
/// let mut source = SparseInMemory::new(x.into(), 2);
/// let mut rows = Vec::new();
/// source.pass(&mut |block| {
///     rows.push(block.nrows());
///     Ok(())
/// })?;
/// assert_eq!(rows, [2, 1]);
/// # Ok::<(), principal::PcaError>(())
/// ```
pub struct SparseInMemory<'a> {
    data: CsrChunk<'a>,
    block_rows: usize,
}

impl<'a> SparseInMemory<'a> {
    /// Wraps `data`, handing it out `block_rows` rows at a time.
    pub fn new(data: CsrChunk<'a>, block_rows: usize) -> Self {
        SparseInMemory {
            data,
            block_rows: block_rows.max(1),
        }
    }
}

impl SparseSource for SparseInMemory<'_> {
    fn n_features(&self) -> usize {
        self.data.ncols()
    }

    fn pass(&mut self, visit: &mut dyn FnMut(CsrChunk<'_>) -> Result<()>) -> Result<()> {
        let n = self.data.nrows();
        let mut start = 0;
        while start < n {
            let rows = self.block_rows.min(n - start);
            visit(self.data.subrows(start, rows))?;
            start += rows;
        }
        Ok(())
    }
}
