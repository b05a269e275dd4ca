//! Re-readable data: the piece that lets one solver serve memory, files larger than memory and
//! shards alike. A source hands out chunks of rows, in the same order on every pass.

use faer::MatRef;

use crate::error::{PcaError, Result};
use crate::real::{ChunkRef, Real};

/// Data that can be read in full more than once, chunk by chunk, always in the same order.
///
/// Iterative solvers make several passes; the covariance solver makes one. Implemented for
/// in-memory matrices by [`InMemory`]; `principal-io` implements it for files.
pub trait ChunkSource {
    /// Features per row.
    fn n_features(&self) -> usize;
    /// One full pass: calls `visit` with consecutive chunks of rows. Errors of the source itself
    /// (a file that cannot be read) are returned as [`crate::PcaError::Source`], which keeps
    /// them whole.
    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()>;

    /// One full pass by position, where the source can read its rows that way (see
    /// [`RowsAt`]): calls `visit` once with them and returns its result. `None`, without
    /// calling `visit`, where it cannot: the caller then makes an ordinary [`Self::pass`].
    /// Sources that wrap another forward it (wrapping the rows if they watch them).
    fn pass_by_position(
        &mut self,
        visit: &mut dyn FnMut(&dyn RowsAt) -> Result<()>,
    ) -> Option<Result<()>> {
        let _ = visit;
        None
    }

    /// One full pass of the chunks [`Self::pass`] would hand out (the same rows in each), as
    /// stored, where every value of the source is stored as a byte (`u8`: 8-bit images, IDX
    /// `ubyte`, NPY `|u1`): no widening to `f32`. Returns `visit`'s result; `None`, without
    /// calling `visit`, where the values are not all bytes: the caller then makes an ordinary
    /// [`Self::pass`]. Sources that wrap another forward it (watching the chunks if they watch
    /// them).
    fn pass_bytes(
        &mut self,
        visit: &mut dyn FnMut(MatRef<'_, u8>) -> Result<()>,
    ) -> Option<Result<()>> {
        let _ = visit;
        None
    }
}

/// `f64` rows that can be read by their position, from several threads at once (a plain file
/// of native-endian `f64` rows, read with `pread`): a pass over narrow rows then reads each
/// piece on the thread that multiplies it, into a buffer that stays in that core's cache,
/// instead of through one reading thread and chunks that go to memory and back.
pub trait RowsAt: Sync {
    /// The rows of the pass.
    fn n_rows(&self) -> usize;
    /// Reads rows `first_row..first_row + out.len() / D` (row-major) into `out`, unchecked:
    /// the caller finds a non-finite value (its sums are not finite) and asks
    /// [`Self::non_finite`] for the error, so that the values are not read once more for it.
    fn read_rows_at(&self, first_row: usize, out: &mut [f64]) -> Result<()>;
    /// The error for the first non-finite `value`, at `row` (of these rows) and `column`: the
    /// source's own, naming its file and the file's row. The core's by default.
    fn non_finite(&self, row: usize, column: usize, value: f64) -> PcaError {
        PcaError::NonFinite { row, column, value }
    }
}

/// An in-memory matrix as a [`ChunkSource`], handed out in chunks of `chunk_rows` rows.
///
/// ```
/// use principal::{faer::Mat, ChunkSource, InMemory};
/// let x = Mat::<f64>::zeros(10, 3);
/// let mut source = InMemory::new(x.as_ref(), 4);
/// let mut sizes = Vec::new();
/// source.pass(&mut |chunk| {
///     sizes.push(chunk.nrows());
///     Ok(())
/// })?;
/// assert_eq!(sizes, [4, 4, 2]);
/// # Ok::<(), principal::PcaError>(())
/// ```
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
            visit(ChunkRef::from(self.data.subrows(start, rows)))?;
            start += rows;
        }
        Ok(())
    }
}
