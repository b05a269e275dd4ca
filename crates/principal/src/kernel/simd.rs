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

/// `[f(0), f(1), …, f(N − 1)]`, as `std::array::from_fn`, but always inlined. In a SIMD kernel
/// the closure's intrinsics must compile inside the kernel's target features: where LLVM left
/// `from_fn` a call (profiles showed `core::array::try_from_fn` at 6–9% of a Fashion-MNIST
/// fit, and the `_mm256_unpack*` intrinsics called as functions), every intrinsic in it became
/// a call too. `fill` is any value of the type: each slot is overwritten, and the compiler
/// drops the fill.
#[inline(always)]
pub(crate) fn array_of<T: Copy, const N: usize>(fill: T, mut f: impl FnMut(usize) -> T) -> [T; N] {
    let mut out = [fill; N];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = f(i);
    }
    out
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

/// Two 16 × 16 transposes of bytes side by side in sixteen AVX2 registers: row `i` of both
/// blocks in `v[i]` (the left block's 16 bytes in the low half, the right's in the high); on
/// return `out[c]` holds column `c` of the left block (low half) and of the right (high). Four
/// rounds of unpacking within the halves, by 8, 16, 32 and 64 bits, each pairing the
/// registers that hold the next rows. Used by the byte path's transpose of stored bytes
/// (`moments::bytes`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn transpose_16x16_bytes_twice(
    simd: pulp::x86::V3,
    v: [std::arch::x86_64::__m256i; 16],
) -> [std::arch::x86_64::__m256i; 16] {
    let avx2 = simd.avx2;
    let zero = simd.avx._mm256_setzero_si256();
    // a[8h + p]: rows 2p and 2p + 1 of columns 8h..8h + 8, in 16-bit pairs.
    let a: [_; 16] = array_of(zero, |m| {
        let (h, p) = (m / 8, m % 8);
        if h == 0 {
            avx2._mm256_unpacklo_epi8(v[2 * p], v[2 * p + 1])
        } else {
            avx2._mm256_unpackhi_epi8(v[2 * p], v[2 * p + 1])
        }
    });
    // b[4g + q]: rows 4q..4q + 4 of columns 4g..4g + 4, in 32-bit units.
    let b: [_; 16] = array_of(zero, |m| {
        let (g, q) = (m / 4, m % 4);
        let (x0, x1) = (a[8 * (g / 2) + 2 * q], a[8 * (g / 2) + 2 * q + 1]);
        if g % 2 == 0 {
            avx2._mm256_unpacklo_epi16(x0, x1)
        } else {
            avx2._mm256_unpackhi_epi16(x0, x1)
        }
    });
    // c[4g + 2h + s]: rows 8s..8s + 8 of columns 4g + 2h and 4g + 2h + 1, in 64-bit units.
    let c: [_; 16] = array_of(zero, |m| {
        let (g, h, s) = (m / 4, (m / 2) % 2, m % 2);
        let (x0, x1) = (b[4 * g + 2 * s], b[4 * g + 2 * s + 1]);
        if h == 0 {
            avx2._mm256_unpacklo_epi32(x0, x1)
        } else {
            avx2._mm256_unpackhi_epi32(x0, x1)
        }
    });
    // Column 4g + 2h + t: its rows 0..8 and 8..16.
    array_of(zero, |col| {
        let (g, h, t) = (col / 4, (col / 2) % 2, col % 2);
        let (x0, x1) = (c[4 * g + 2 * h], c[4 * g + 2 * h + 1]);
        if t == 0 {
            avx2._mm256_unpacklo_epi64(x0, x1)
        } else {
            avx2._mm256_unpackhi_epi64(x0, x1)
        }
    })
}
