/// The element types principal accepts as input: `f32` and `f64`.
///
/// Storage may be either; all arithmetic that determines the model is done in `f64`.
pub trait Real: Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static + sealed::Sealed {
    /// Widens (or keeps) the value as `f64`.
    fn to_f64(self) -> f64;
    /// Narrows (or keeps) an `f64`.
    fn from_f64(value: f64) -> Self;
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

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}
