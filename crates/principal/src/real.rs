/// The element types principal accepts as input: `f32` and `f64`.
///
/// Storage may be either; all arithmetic that determines the model is done in `f64`.
pub trait Real:
    Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static + sealed::Sealed
{
    /// Widens (or keeps) the value as `f64`.
    fn to_f64(self) -> f64;
    /// Narrows (or keeps) an `f64`.
    fn from_f64(value: f64) -> Self;
    /// The view as a [`crate::ChunkRef`].
    fn chunk(view: faer::MatRef<'_, Self>) -> crate::ChunkRef<'_>;
    /// All ones unless the value is ±0 (a NaN counts as non-zero), from its bits: a mask
    /// vector units compute without a branch.
    #[doc(hidden)]
    fn nonzero_mask(self) -> u32;
    /// `self − shift` as a byte, two's complement, when it is an integer in [−128, 127]: the
    /// difference plus 1.5·2^(mantissa bits) holds it in its low bits, which vectorises in the
    /// type's own lanes where a float-to-int cast does not.
    #[doc(hidden)]
    fn low_byte(self, shift: Self) -> i8;
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
    fn chunk(view: faer::MatRef<'_, Self>) -> crate::ChunkRef<'_> {
        crate::ChunkRef::F64(view)
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

impl Real for f32 {
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn chunk(view: faer::MatRef<'_, Self>) -> crate::ChunkRef<'_> {
        crate::ChunkRef::F32(view)
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

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}
