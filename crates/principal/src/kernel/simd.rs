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

/// The 8 × 8 transpose of `i32` lanes held in eight AVX2 registers (`out[j][l] = v[l][j]`):
/// unpack by 32 bits, by 64, then swap the 128-bit halves. Inlined into the caller's AVX2
/// context; used by the AVX2 kernel's interleave (`kernel::madd`) and the AMX kernel's packing
/// (`kernel::amx`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn transpose_8x8(
    simd: pulp::x86::V3,
    v: [std::arch::x86_64::__m256i; 8],
) -> [std::arch::x86_64::__m256i; 8] {
    let avx2 = simd.avx2;
    let t0 = avx2._mm256_unpacklo_epi32(v[0], v[1]);
    let t1 = avx2._mm256_unpackhi_epi32(v[0], v[1]);
    let t2 = avx2._mm256_unpacklo_epi32(v[2], v[3]);
    let t3 = avx2._mm256_unpackhi_epi32(v[2], v[3]);
    let t4 = avx2._mm256_unpacklo_epi32(v[4], v[5]);
    let t5 = avx2._mm256_unpackhi_epi32(v[4], v[5]);
    let t6 = avx2._mm256_unpacklo_epi32(v[6], v[7]);
    let t7 = avx2._mm256_unpackhi_epi32(v[6], v[7]);
    let u0 = avx2._mm256_unpacklo_epi64(t0, t2);
    let u1 = avx2._mm256_unpackhi_epi64(t0, t2);
    let u2 = avx2._mm256_unpacklo_epi64(t1, t3);
    let u3 = avx2._mm256_unpackhi_epi64(t1, t3);
    let u4 = avx2._mm256_unpacklo_epi64(t4, t6);
    let u5 = avx2._mm256_unpackhi_epi64(t4, t6);
    let u6 = avx2._mm256_unpacklo_epi64(t5, t7);
    let u7 = avx2._mm256_unpackhi_epi64(t5, t7);
    [
        avx2._mm256_permute2x128_si256::<0x20>(u0, u4),
        avx2._mm256_permute2x128_si256::<0x20>(u1, u5),
        avx2._mm256_permute2x128_si256::<0x20>(u2, u6),
        avx2._mm256_permute2x128_si256::<0x20>(u3, u7),
        avx2._mm256_permute2x128_si256::<0x31>(u0, u4),
        avx2._mm256_permute2x128_si256::<0x31>(u1, u5),
        avx2._mm256_permute2x128_si256::<0x31>(u2, u6),
        avx2._mm256_permute2x128_si256::<0x31>(u3, u7),
    ]
}
