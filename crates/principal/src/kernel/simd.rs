//! Runtime dispatch to the CPU's vector width for our own element-wise loops.
//!
//! The crate is compiled for baseline x86-64 (SSE2, two f64 lanes) so that one binary runs
//! everywhere; faer dispatches its kernels at run time, and so do we for the few loops of ours
//! that touch every value (scans, shifted copies). A [`Kernel`]'s `run` is marked
//! `#[inline(always)]` so that it is compiled inside pulp's AVX2 (or AVX-512) entry point.

/// A loop to compile for the machine's vector width; `run` must be `#[inline(always)]`.
pub(crate) trait Kernel {
    type Output;
    fn run(self) -> Self::Output;
}

/// Runs `kernel` with the widest instruction set pulp detects.
pub(crate) fn dispatch<K: Kernel>(kernel: K) -> K::Output {
    struct Wrap<K>(K);
    impl<K: Kernel> pulp::WithSimd for Wrap<K> {
        type Output = K::Output;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) -> K::Output {
            self.0.run()
        }
    }
    pulp::Arch::new().dispatch(Wrap(kernel))
}
