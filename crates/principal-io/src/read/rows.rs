//! The buffer rows are decoded into: row-major, in the element type of the whole stream (f32
//! only when every shard is f32 or a small integer type), handed out as a [`Matrix`] without a
//! copy. A chunk recycled from pass to pass keeps its length: the values past the rows just
//! read are the storage the next rows are read into (see `BinaryRows::read_rows_at`).

use crate::read::matrix::{Matrix, RowMajorMat};

/// Rows being collected, row-major, in the element type of the whole stream.
pub(crate) enum RowBuf {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl RowBuf {
    /// Keeps the first `len` values (and the allocation).
    pub(crate) fn truncate(&mut self, len: usize) {
        match self {
            RowBuf::F32(v) => v.truncate(len),
            RowBuf::F64(v) => v.truncate(len),
        }
    }

    /// Makes the buffer f64 (a no-op when it is).
    pub(crate) fn widen(&mut self) {
        if let RowBuf::F32(v) = self {
            *self = RowBuf::F64(v.iter().map(|&x| f64::from(x)).collect());
        }
    }

    /// Appends `n` zeros and returns them, to be filled in place.
    // Used by the readers behind the format features only.
    #[cfg_attr(
        not(any(feature = "parquet", feature = "arrow", feature = "h5ad")),
        allow(dead_code)
    )]
    pub(crate) fn grow(&mut self, n: usize) -> Dst<'_> {
        match self {
            RowBuf::F32(v) => {
                let start = v.len();
                v.resize(start + n, 0.0);
                Dst::F32(&mut v[start..])
            }
            RowBuf::F64(v) => {
                let start = v.len();
                v.resize(start + n, 0.0);
                Dst::F64(&mut v[start..])
            }
        }
    }

    /// Appends one value, as the text reader does cell by cell.
    #[inline]
    pub(crate) fn push_f64(&mut self, v: f64) {
        match self {
            RowBuf::F64(b) => b.push(v),
            // Never reached (the stream is f64 when any shard is), but widening is always safe.
            RowBuf::F32(_) => {
                self.widen();
                self.push_f64(v);
            }
        }
    }

    /// The buffer's first `nrows` rows as a matrix: moved, not copied.
    pub(crate) fn into_matrix(self, nrows: usize, ncols: usize) -> Matrix {
        /// Spare capacity (from growing while the row count was unknown, or storage that the
        /// rows did not fill) is handed back: a no-op when the buffer was reserved exactly,
        /// and for large buffers a shrink in place rather than a copy.
        fn fit<T>(mut v: Vec<T>, nrows: usize, ncols: usize) -> RowMajorMat<T> {
            v.truncate(nrows * ncols);
            v.shrink_to_fit();
            RowMajorMat::new(v, nrows, ncols)
        }
        match self {
            RowBuf::F32(b) => Matrix::F32(fit(b, nrows, ncols)),
            RowBuf::F64(b) => Matrix::F64(fit(b, nrows, ncols)),
        }
    }
}

/// The new rows of a [`RowBuf`], to be filled in place.
#[cfg_attr(
    not(any(feature = "parquet", feature = "arrow", feature = "h5ad")),
    allow(dead_code)
)]
pub(crate) enum Dst<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}
