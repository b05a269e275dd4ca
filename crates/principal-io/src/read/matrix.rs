//! The data as read: [`Matrix`], f32 or f64, over [`RowMajorMat`], a matrix that owns its
//! elements in one row-major `Vec`, the layout the readers decode into, so that data read whole
//! is held once, with no transpose.

use std::ops::Index;

use faer::MatRef;

/// Data as read: f32 where the source is f32 or small integers (u8/i8/u16/i16: exact in f32),
/// else f64. Text formats always give f64.
///
/// The elements are held row-major, as they were decoded (no transpose after reading); use
/// [`RowMajorMat::as_ref`] for a faer view.
#[derive(Clone, Debug, PartialEq)]
pub enum Matrix {
    /// From f32, u8, i8, u16 or i16 sources.
    F32(RowMajorMat<f32>),
    /// From text, f64 and wider integer sources.
    F64(RowMajorMat<f64>),
}

impl Matrix {
    /// Number of rows (samples).
    pub fn nrows(&self) -> usize {
        match self {
            Matrix::F32(m) => m.nrows(),
            Matrix::F64(m) => m.nrows(),
        }
    }

    /// Number of columns (features).
    pub fn ncols(&self) -> usize {
        match self {
            Matrix::F32(m) => m.ncols(),
            Matrix::F64(m) => m.ncols(),
        }
    }

    /// A copy in f64 (exact: every f32 is an f64).
    pub fn to_f64(&self) -> RowMajorMat<f64> {
        match self {
            Matrix::F32(m) => m.map(|&x| f64::from(x)),
            Matrix::F64(m) => m.clone(),
        }
    }

    /// The data in f64, without a copy when it already is.
    pub fn into_f64(self) -> RowMajorMat<f64> {
        match self {
            Matrix::F64(m) => m,
            f32 => f32.to_f64(),
        }
    }

    /// Whether the elements are f32.
    pub fn is_f32(&self) -> bool {
        matches!(self, Matrix::F32(_))
    }
}

/// An owned `nrows × ncols` matrix stored row by row in one `Vec`: element `(i, j)` is at
/// `i * ncols + j`.
///
/// This is how [`Matrix`] holds data as read. [`RowMajorMat::as_ref`] views it
/// as a faer [`MatRef`] (column stride 1, row stride `ncols`) for the fit, transform and write
/// functions, which accept any layout.
#[derive(Clone, Debug, PartialEq)]
pub struct RowMajorMat<T> {
    values: Vec<T>,
    nrows: usize,
    ncols: usize,
}

impl<T> RowMajorMat<T> {
    /// Takes `values`, row-major, as an `nrows × ncols` matrix (no copy).
    ///
    /// # Panics
    /// If `values.len()` is not `nrows * ncols`.
    pub fn new(values: Vec<T>, nrows: usize, ncols: usize) -> Self {
        assert_eq!(
            Some(values.len()),
            nrows.checked_mul(ncols),
            "{} values for a {nrows}×{ncols} matrix",
            values.len()
        );
        RowMajorMat {
            values,
            nrows,
            ncols,
        }
    }

    /// A row-major copy of any faer matrix view.
    pub fn from_mat_ref(m: MatRef<'_, T>) -> Self
    where
        T: Copy,
    {
        let values = (0..m.nrows())
            .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
            .collect();
        RowMajorMat::new(values, m.nrows(), m.ncols())
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// A faer view of the matrix (column stride 1, row stride `ncols`), without a copy.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef::from_row_major_slice(&self.values, self.nrows, self.ncols)
    }

    /// The elements, row after row.
    pub fn as_slice(&self) -> &[T] {
        &self.values
    }

    /// The elements, row after row, without a copy.
    pub fn into_vec(self) -> Vec<T> {
        self.values
    }

    /// The same shape with `f` applied to every element.
    pub(crate) fn map<U>(&self, f: impl FnMut(&T) -> U) -> RowMajorMat<U> {
        RowMajorMat {
            values: self.values.iter().map(f).collect(),
            nrows: self.nrows,
            ncols: self.ncols,
        }
    }
}

impl<T> Index<(usize, usize)> for RowMajorMat<T> {
    type Output = T;

    /// Element `(row, column)`.
    ///
    /// # Panics
    /// If either index is out of range.
    fn index(&self, (i, j): (usize, usize)) -> &T {
        assert!(
            i < self.nrows && j < self.ncols,
            "index ({i}, {j}) out of range for a {}×{} matrix",
            self.nrows,
            self.ncols
        );
        &self.values[i * self.ncols + j]
    }
}

#[cfg(test)]
mod tests {
    use faer::Mat;

    use super::*;

    #[test]
    fn matrix_converts_to_f64() {
        let m = Matrix::F32(RowMajorMat::from_mat_ref(
            Mat::from_fn(2, 3, |i, j| (i * 3 + j) as f32 + 0.5).as_ref(),
        ));
        assert_eq!((m.nrows(), m.ncols()), (2, 3));
        assert_eq!(m.to_f64()[(1, 2)], 5.5);
        assert_eq!(m.to_f64().as_slice(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]);
        assert!(m.is_f32());
        assert_eq!(m.clone().into_f64(), m.to_f64());
        let f64 = Matrix::F64(m.to_f64());
        assert!(!f64.is_f32());
        let Matrix::F64(inner) = &f64 else {
            unreachable!()
        };
        let at = inner.as_slice().as_ptr();
        assert_eq!(f64.into_f64().as_slice().as_ptr(), at, "moved, not copied");
    }

    #[test]
    fn views_are_row_major_and_match_the_source() {
        let m = Mat::from_fn(3, 4, |i, j| (i * 10 + j) as f64);
        let r = RowMajorMat::from_mat_ref(m.as_ref());
        assert_eq!((r.nrows(), r.ncols()), (3, 4));
        assert_eq!(r.as_slice()[..5], [0.0, 1.0, 2.0, 3.0, 10.0]);
        let v = r.as_ref();
        assert_eq!((v.col_stride(), v.row_stride()), (1, 4));
        assert_eq!(v, m.as_ref());
        assert_eq!(r[(2, 3)], 23.0);
        // A strided (transposed) source gives the same.
        let t = m.transpose().to_owned();
        assert_eq!(RowMajorMat::from_mat_ref(t.transpose()), r);
        assert_eq!(RowMajorMat::new(r.clone().into_vec(), 3, 4), r);
    }

    #[test]
    fn empty_shapes_work() {
        for (n, d) in [(0, 0), (0, 5), (5, 0)] {
            let r = RowMajorMat::<f32>::from_mat_ref(Mat::<f32>::zeros(n, d).as_ref());
            assert_eq!((r.nrows(), r.ncols()), (n, d));
            assert_eq!((r.as_ref().nrows(), r.as_ref().ncols()), (n, d));
            assert!(r.as_slice().is_empty());
        }
        assert_ne!(
            RowMajorMat::<f64>::new(vec![], 0, 3),
            RowMajorMat::<f64>::new(vec![], 3, 0)
        );
    }

    #[test]
    #[should_panic(expected = "5 values for a 2×3 matrix")]
    fn wrong_length_panics() {
        RowMajorMat::new(vec![0.0; 5], 2, 3);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn index_out_of_range_panics() {
        let r = RowMajorMat::new(vec![1, 2, 3, 4], 2, 2);
        let _ = r[(0, 2)];
    }
}
