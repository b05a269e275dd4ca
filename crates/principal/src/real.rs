//! The element types principal accepts, `f32` and `f64`: as a type parameter ([`Real`]) and as
//! a chunk of rows whose type is known only at run time ([`ChunkRef`]).

use faer::MatRef;

/// The element types principal accepts as input: `f32` and `f64`.
///
/// Storage may be either; all arithmetic that determines the model is done in `f64`. The trait
/// is sealed: no other type can implement it.
pub trait Real:
    Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static + sealed::Storage
{
    /// Widens (or keeps) the value as `f64`.
    fn to_f64(self) -> f64;
    /// Narrows (or keeps) an `f64`.
    fn from_f64(value: f64) -> Self;
}

/// A chunk of rows as stored: `f32` or `f64`.
///
/// ```
/// use principal::{faer::mat, ChunkRef};
/// let x = mat![[1.0f32, 2.0], [3.0, 4.0]];
/// let chunk = ChunkRef::from(x.as_ref());
/// assert!(matches!(chunk, ChunkRef::F32(_)));
/// assert_eq!((chunk.nrows(), chunk.ncols()), (2, 2));
/// ```
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

impl<'a, T: Real> From<MatRef<'a, T>> for ChunkRef<'a> {
    fn from(view: MatRef<'a, T>) -> Self {
        T::chunk(view)
    }
}

mod sealed {
    use crate::real::ChunkRef;
    use faer::MatRef;

    /// What the crate's kernels need of an element beyond [`super::Real`]'s public methods
    /// (called through `T: Real`). Implemented for `f32` and `f64` only and not nameable
    /// outside the crate, which seals `Real` and keeps these helpers private.
    pub trait Storage: Sized {
        /// The view as a [`ChunkRef`].
        fn chunk(view: MatRef<'_, Self>) -> ChunkRef<'_>;
        /// All ones unless the value is ±0 (a NaN counts as non-zero), from its bits: a mask
        /// vector units compute without a branch.
        fn nonzero_mask(self) -> u32;
        /// `self − shift` as a byte, two's complement, when it is an integer in [−128, 127]:
        /// the difference plus 1.5·2^(mantissa bits) holds it in its low bits, which vectorises
        /// in the type's own lanes where a float-to-int cast does not.
        fn low_byte(self, shift: Self) -> i8;
    }

    impl Storage for f64 {
        fn chunk(view: MatRef<'_, Self>) -> ChunkRef<'_> {
            ChunkRef::F64(view)
        }
        #[inline(always)]
        fn nonzero_mask(self) -> u32 {
            u32::from(self.to_bits() << 1 != 0).wrapping_neg()
        }
        #[inline(always)]
        fn low_byte(self, shift: Self) -> i8 {
            ((self - shift) + 6_755_399_441_055_744.0).to_bits() as i8
        }
    }

    impl Storage for f32 {
        fn chunk(view: MatRef<'_, Self>) -> ChunkRef<'_> {
            ChunkRef::F32(view)
        }
        #[inline(always)]
        fn nonzero_mask(self) -> u32 {
            u32::from(self.to_bits() << 1 != 0).wrapping_neg()
        }
        #[inline(always)]
        fn low_byte(self, shift: Self) -> i8 {
            ((self - shift) + 12_582_912.0).to_bits() as i8
        }
    }
}

impl Real for f64 {
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f64(value: f64) -> Self {
        value
    }
}

impl Real for f32 {
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn from_f64(value: f64) -> Self {
        value as f32
    }
}
