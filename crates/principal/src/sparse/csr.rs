//! Compressed sparse rows: a block of rows as three arrays, borrowed ([`CsrRef`]) or owned
//! ([`Csr`]), with `f32` or `f64` values and `u32` or `u64` column indices; [`CsrChunk`] is
//! such a block whose types are known only at run time (as [`crate::ChunkRef`] is for dense
//! rows).

use crate::error::{PcaError, Result};
use crate::real::Real;

/// The column-index types a CSR block may use: `u32` (up to 2³² − 1 columns, the usual) and
/// `u64`. Sealed.
pub trait SparseIndex: Copy + Send + Sync + std::fmt::Debug + 'static + sealed::Sealed {
    /// The index as a `usize`.
    fn to_usize(self) -> usize;
    /// A `usize` as this index type, `None` when it does not fit.
    fn from_usize(value: usize) -> Option<Self>;
}

impl SparseIndex for u32 {
    #[inline(always)]
    fn to_usize(self) -> usize {
        self as usize
    }
    fn from_usize(value: usize) -> Option<Self> {
        u32::try_from(value).ok()
    }
}

impl SparseIndex for u64 {
    #[inline(always)]
    fn to_usize(self) -> usize {
        self as usize
    }
    fn from_usize(value: usize) -> Option<Self> {
        u64::try_from(value).ok()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// A block of rows of a sparse matrix in compressed sparse row form, borrowed.
///
/// Row `i`'s entries are `values[k]` in columns `indices[k]` for `k` in
/// `indptr[i] − indptr[0] .. indptr[i + 1] − indptr[0]`: the row pointers may start anywhere
/// (a block cut out of a larger matrix keeps its pointers), the value and index arrays hold this
/// block's entries only. Within a row the columns may come in any order; a column must not
/// repeat within a row (checked by [`CsrRef::new`] only as far as cheap: see there).
///
/// ```
/// use principal::sparse::CsrRef;
/// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
/// let x = CsrRef::new(3, &[0, 2, 2, 3], &[0u32, 2, 1], &[1.0f64, 2.0, 3.0])?;
/// assert_eq!((x.nrows(), x.ncols(), x.nnz()), (3, 3, 3));
/// assert_eq!(x.row(2), (&[1u32][..], &[3.0][..]));
/// assert!(CsrRef::new(3, &[0, 2, 1, 3], &[0u32, 2, 1], &[1.0f64, 2.0, 3.0]).is_err());
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CsrRef<'a, T: Real, I: SparseIndex> {
    ncols: usize,
    indptr: &'a [usize],
    indices: &'a [I],
    values: &'a [T],
}

impl<'a, T: Real, I: SparseIndex> CsrRef<'a, T, I> {
    /// A block of `indptr.len() − 1` rows of `ncols` columns, checked: `indptr` non-empty and
    /// non-decreasing, spanning exactly the entries of `indices` and `values` (of equal
    /// length), every index below `ncols`. The error names the array, the position and the
    /// value. O(rows + entries).
    pub fn new(
        ncols: usize,
        indptr: &'a [usize],
        indices: &'a [I],
        values: &'a [T],
    ) -> Result<Self> {
        let invalid = |detail: String| Err(PcaError::InvalidSparse(detail));
        let Some(&first) = indptr.first() else {
            return invalid("indptr is empty: it needs one more value than there are rows".into());
        };
        if indices.len() != values.len() {
            return invalid(format!(
                "{} indices for {} values",
                indices.len(),
                values.len()
            ));
        }
        for (i, w) in indptr.windows(2).enumerate() {
            if w[1] < w[0] {
                return invalid(format!(
                    "indptr decreases at row {i}: {} then {}",
                    w[0], w[1]
                ));
            }
        }
        let last = indptr[indptr.len() - 1];
        if last - first != values.len() {
            return invalid(format!(
                "indptr spans {} entries ({first}..{last}) but there are {}",
                last - first,
                values.len()
            ));
        }
        if let Some(k) = indices.iter().position(|&c| c.to_usize() >= ncols) {
            let row = indptr.partition_point(|&p| p - first <= k) - 1;
            return invalid(format!(
                "column index {} of row {row} (entry {k}) is out of range for {ncols} columns",
                indices[k].to_usize()
            ));
        }
        Ok(CsrRef {
            ncols,
            indptr,
            indices,
            values,
        })
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The row pointers, as given (they may start above 0).
    pub fn indptr(&self) -> &'a [usize] {
        self.indptr
    }

    /// The column indices of the block's entries.
    pub fn indices(&self) -> &'a [I] {
        self.indices
    }

    /// The values of the block's entries.
    pub fn values(&self) -> &'a [T] {
        self.values
    }

    /// Row `i`'s column indices and values.
    #[inline]
    pub fn row(&self, i: usize) -> (&'a [I], &'a [T]) {
        let base = self.indptr[0];
        let (a, b) = (self.indptr[i] - base, self.indptr[i + 1] - base);
        (&self.indices[a..b], &self.values[a..b])
    }

    /// Rows `start..start + rows`, sharing the arrays.
    ///
    /// # Panics
    /// When the rows are not inside the block.
    #[track_caller]
    pub fn subrows(&self, start: usize, rows: usize) -> CsrRef<'a, T, I> {
        assert!(
            start + rows <= self.nrows(),
            "rows {start}..{} of a block of {}",
            start + rows,
            self.nrows()
        );
        let base = self.indptr[0];
        let indptr = &self.indptr[start..=start + rows];
        let (a, b) = (indptr[0] - base, indptr[rows] - base);
        CsrRef {
            ncols: self.ncols,
            indptr,
            indices: &self.indices[a..b],
            values: &self.values[a..b],
        }
    }
}

/// An owned CSR block, built row by row ([`Csr::push_row`]); readers hand out its
/// [`Csr::as_chunk`].
///
/// ```
/// use principal::sparse::Csr;
/// let mut x = Csr::<f64, u32>::new(4);
/// x.push_row(&[(3, 1.5), (0, 2.0)])?;
/// x.push_row(&[])?;
/// assert_eq!((x.as_ref().nrows(), x.as_ref().nnz()), (2, 2));
/// assert!(x.push_row(&[(4, 1.0)]).is_err());
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<T: Real, I: SparseIndex> {
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<I>,
    values: Vec<T>,
}

impl<T: Real, I: SparseIndex> Csr<T, I> {
    /// No rows yet, of `ncols` columns.
    pub fn new(ncols: usize) -> Self {
        Csr {
            ncols,
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
        }
    }

    /// No rows yet, of `ncols` columns, with room for `rows` rows and `entries` entries (a
    /// reader that knows the sizes fills it without the copies of a growing array, each of
    /// which would briefly hold the old and the new arrays).
    pub fn with_capacity(ncols: usize, rows: usize, entries: usize) -> Self {
        let mut indptr = Vec::with_capacity(rows + 1);
        indptr.push(0);
        Csr {
            ncols,
            indptr,
            indices: Vec::with_capacity(entries),
            values: Vec::with_capacity(entries),
        }
    }

    /// Appends the rows of `block`, which has as many columns.
    ///
    /// # Panics
    /// When `block` has another number of columns.
    #[track_caller]
    pub fn append(&mut self, block: CsrRef<'_, T, I>) {
        self.append_rows_of(block);
        self.values.extend_from_slice(block.values());
    }

    /// Appends the rows of `block`, whose values are of another type, each value as
    /// `convert` gives it (a reader holding `f64` blocks as `f32`, say).
    ///
    /// # Panics
    /// When `block` has another number of columns.
    #[track_caller]
    pub fn append_converted<U: Real>(&mut self, block: CsrRef<'_, U, I>, convert: impl Fn(U) -> T) {
        self.append_rows_of(block);
        self.values
            .extend(block.values().iter().map(|&v| convert(v)));
    }

    /// The row pointers and column indices of `block`'s rows appended (its values are the
    /// caller's to append).
    #[track_caller]
    fn append_rows_of<U: Real>(&mut self, block: CsrRef<'_, U, I>) {
        assert_eq!(block.ncols(), self.ncols, "a block of another width");
        let offset = self.values.len();
        let start = block.indptr()[0];
        self.indices.extend_from_slice(block.indices());
        self.indptr
            .extend(block.indptr()[1..].iter().map(|&p| p - start + offset));
    }

    /// From whole arrays, checked as [`CsrRef::new`] checks them.
    pub fn from_parts(
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<I>,
        values: Vec<T>,
    ) -> Result<Self> {
        CsrRef::new(ncols, &indptr, &indices, &values)?;
        Ok(Csr {
            ncols,
            indptr,
            indices,
            values,
        })
    }

    /// Appends a row of `(column, value)` entries; a column out of range is an error and the
    /// block is left as it was.
    pub fn push_row(&mut self, entries: &[(usize, T)]) -> Result<()> {
        for &(c, _) in entries {
            let index = I::from_usize(c).filter(|_| c < self.ncols);
            if index.is_none() {
                return Err(PcaError::InvalidSparse(format!(
                    "column index {c} of row {} is out of range for {} columns",
                    self.indptr.len() - 1,
                    self.ncols
                )));
            }
        }
        for &(c, v) in entries {
            self.indices.push(I::from_usize(c).expect("checked above"));
            self.values.push(v);
        }
        self.indptr.push(self.values.len());
        Ok(())
    }

    /// Appends one entry to the row being built; [`Csr::end_row`] closes it. For readers that
    /// see a row's entries one at a time. The caller checks `column < ncols`.
    ///
    /// # Panics
    /// When `column` is out of range.
    #[track_caller]
    pub fn push_entry(&mut self, column: usize, value: T) {
        assert!(column < self.ncols, "column {column} of {}", self.ncols);
        self.indices
            .push(I::from_usize(column).expect("below ncols"));
        self.values.push(value);
    }

    /// Closes the row [`Csr::push_entry`] was filling (possibly empty).
    pub fn end_row(&mut self) {
        self.indptr.push(self.values.len());
    }

    /// Removes every row, keeping the buffers.
    pub fn clear(&mut self) {
        self.indptr.truncate(1);
        self.indices.clear();
        self.values.clear();
    }

    /// Rows so far.
    pub fn nrows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Entries so far.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The block, borrowed.
    pub fn as_ref(&self) -> CsrRef<'_, T, I> {
        CsrRef {
            ncols: self.ncols,
            indptr: &self.indptr,
            indices: &self.indices,
            values: &self.values,
        }
    }
}

impl<T: Real, I: SparseIndex> Csr<T, I>
where
    for<'a> CsrChunk<'a>: From<CsrRef<'a, T, I>>,
{
    /// The block as a [`CsrChunk`].
    pub fn as_chunk(&self) -> CsrChunk<'_> {
        CsrChunk::from(self.as_ref())
    }
}

/// A CSR block whose value and index types are known only at run time: what a
/// [`crate::sparse::SparseSource`] hands out.
#[derive(Clone, Copy, Debug)]
pub enum CsrChunk<'a> {
    /// `f32` values, `u32` indices.
    F32U32(CsrRef<'a, f32, u32>),
    /// `f64` values, `u32` indices.
    F64U32(CsrRef<'a, f64, u32>),
    /// `f32` values, `u64` indices.
    F32U64(CsrRef<'a, f32, u64>),
    /// `f64` values, `u64` indices.
    F64U64(CsrRef<'a, f64, u64>),
}

/// Runs `$body` with `$x` bound to the typed [`CsrRef`] inside a [`CsrChunk`].
macro_rules! with_csr {
    ($chunk:expr, $x:ident => $body:expr) => {
        match $chunk {
            $crate::sparse::csr::CsrChunk::F32U32($x) => $body,
            $crate::sparse::csr::CsrChunk::F64U32($x) => $body,
            $crate::sparse::csr::CsrChunk::F32U64($x) => $body,
            $crate::sparse::csr::CsrChunk::F64U64($x) => $body,
        }
    };
}
pub(crate) use with_csr;

impl<'a> CsrChunk<'a> {
    /// Rows.
    pub fn nrows(&self) -> usize {
        with_csr!(self, x => x.nrows())
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        with_csr!(self, x => x.ncols())
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        with_csr!(self, x => x.nnz())
    }

    /// Rows `start..start + rows`.
    ///
    /// # Panics
    /// When the rows are not inside the block.
    #[track_caller]
    pub fn subrows(&self, start: usize, rows: usize) -> CsrChunk<'a> {
        match self {
            CsrChunk::F32U32(x) => CsrChunk::F32U32(x.subrows(start, rows)),
            CsrChunk::F64U32(x) => CsrChunk::F64U32(x.subrows(start, rows)),
            CsrChunk::F32U64(x) => CsrChunk::F32U64(x.subrows(start, rows)),
            CsrChunk::F64U64(x) => CsrChunk::F64U64(x.subrows(start, rows)),
        }
    }

    /// The first non-finite value, as (row, column, value), rows counted in this block.
    pub fn first_non_finite(&self) -> Option<(usize, usize, f64)> {
        with_csr!(self, x => {
            let k = x.values().iter().position(|v| !v.to_f64().is_finite())?;
            let base = x.indptr()[0];
            let row = x.indptr().partition_point(|&p| p - base <= k) - 1;
            Some((row, x.indices()[k].to_usize(), x.values()[k].to_f64()))
        })
    }
}

impl<'a> From<CsrRef<'a, f32, u32>> for CsrChunk<'a> {
    fn from(x: CsrRef<'a, f32, u32>) -> Self {
        CsrChunk::F32U32(x)
    }
}
impl<'a> From<CsrRef<'a, f64, u32>> for CsrChunk<'a> {
    fn from(x: CsrRef<'a, f64, u32>) -> Self {
        CsrChunk::F64U32(x)
    }
}
impl<'a> From<CsrRef<'a, f32, u64>> for CsrChunk<'a> {
    fn from(x: CsrRef<'a, f32, u64>) -> Self {
        CsrChunk::F32U64(x)
    }
}
impl<'a> From<CsrRef<'a, f64, u64>> for CsrChunk<'a> {
    fn from(x: CsrRef<'a, f64, u64>) -> Self {
        CsrChunk::F64U64(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_arrays_are_named_by_array_position_and_value() {
        let message = |r: Result<CsrRef<'_, f64, u32>>| r.unwrap_err().to_string();
        let v = [1.0, 2.0, 3.0];
        assert!(
            message(CsrRef::new(3, &[0, 2, 1, 3], &[0, 1, 2], &v))
                .contains("decreases at row 1: 2 then 1")
        );
        assert!(message(CsrRef::new(3, &[0, 2, 2, 4], &[0, 1, 2], &v)).contains("spans 4 entries"));
        assert!(
            message(CsrRef::new(3, &[0, 2, 2, 3], &[0, 1, 7], &v))
                .contains("column index 7 of row 2 (entry 2)")
        );
        assert!(message(CsrRef::new(3, &[], &[], &[])).contains("indptr is empty"));
    }

    #[test]
    fn subrows_share_the_arrays_and_keep_their_rows() {
        let x = CsrRef::new(
            4,
            &[0, 1, 3, 3, 4],
            &[2u32, 0, 3, 1],
            &[1.0f32, 2.0, 3.0, 4.0],
        )
        .unwrap();
        let mid = x.subrows(1, 2);
        assert_eq!((mid.nrows(), mid.nnz()), (2, 2));
        assert_eq!(mid.row(0), (&[0u32, 3][..], &[2.0f32, 3.0][..]));
        assert_eq!(mid.row(1).0.len(), 0);
        let inner = mid.subrows(1, 1);
        assert_eq!(inner.nnz(), 0);
        assert_eq!(x.subrows(3, 1).row(0), (&[1u32][..], &[4.0f32][..]));
    }
}
