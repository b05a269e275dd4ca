//! The exact byte product on x86-64 with AVX2 but without AVX-512 VNNI: bytes widened to
//! `i16`, multiplied and added in pairs into `i32` by `vpmaddwd` (`_mm256_madd_epi16`, 16
//! multiply-adds per instruction, twice an f32 FMA's), summed in `i32`.
//!
//! Exact: a pair `u₁y₁ + u₂y₂` with `u ∈ [0, 255]`, `y ∈ [−128, 127]` is at most
//! 2·255·128 = 65,280 in magnitude, far inside `i32` (`vpmaddwd` wraps only for two products
//! of −32,768), and the caller keeps the running sums within `i32` (at most 2,048 rows a block,
//! `moments::bytes`). rten-gemm's AVX2 kernel uses `vpmaddubsw` instead, which adds the pairs
//! in `i16` with saturation: that is why it is not used here.
//!
//! The product `G = U Y` has both operands' rows contiguous along the sum (U's rows are
//! features of the block, Y's features likewise), so it is a matrix of dot products: tiles of
//! 3 rows of U by 3 features of Y keep 9 accumulators, 3 + 1 operands and a product in the 16
//! AVX registers; the sum runs in slices of [`SLICE`] rows so that a band of Y's features stays
//! in the second-level cache while every row of U passes over it. Tiles write disjoint rows of
//! G, so bands of U's rows run on all threads with the same bits.

use rayon::prelude::*;

/// Rows of the block summed per pass over a band (a multiple of 16, the `i16` lanes).
const SLICE: usize = 512;

/// Features of Y per band: 240 features × [`SLICE`] rows × 2 bytes = 240 KiB, half of a
/// second-level cache.
const BAND: usize = 240;

/// Rows of U (rows of G) per task on the thread pool.
const TASK_ROWS: usize = 48;

/// The widened operands: every row padded with zeros to `stride`, a multiple of 16.
struct Widened {
    u: Vec<i16>,
    y: Vec<i16>,
    stride: usize,
}

impl Widened {
    fn new(u: &[u8], y: &[i8], a: usize, r: usize) -> Self {
        let stride = r.div_ceil(16) * 16;
        let mut wide_u = vec![0i16; (a + 1) * stride];
        let mut wide_y = vec![0i16; a * stride];
        for (dst, src) in wide_u.chunks_exact_mut(stride).zip(u.chunks_exact(r)) {
            dst.iter_mut().zip(src).for_each(|(d, &s)| *d = i16::from(s));
        }
        for (dst, src) in wide_y.chunks_exact_mut(stride).zip(y.chunks_exact(r)) {
            dst.iter_mut().zip(src).for_each(|(d, &s)| *d = i16::from(s));
        }
        Widened {
            u: wide_u,
            y: wide_y,
            stride,
        }
    }
}

/// `product = U Y` (layout as [`crate::kernel::bytes::ByteProduct::multiply`]) by AVX2's
/// `vpmaddwd`, or `false` (and `product` untouched) where this CPU lacks AVX2.
#[cfg(target_arch = "x86_64")]
pub(crate) fn multiply(u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) -> bool {
    let Some(simd) = pulp::x86::V3::try_new() else {
        return false;
    };
    let wide = Widened::new(&u[..(a + 1) * r], &y[..a * r], a, r);
    let product = &mut product[..(a + 1) * a];
    if a == 0 {
        return true;
    }
    product.fill(0);
    product
        .par_chunks_mut(TASK_ROWS * a)
        .enumerate()
        .for_each(|(task, rows)| {
            pulp::Simd::vectorize(simd, Rows {
                simd,
                wide: &wide,
                first: task * TASK_ROWS,
                a,
                product: rows,
            })
        });
    true
}

/// Whether [`multiply`] runs on this CPU.
#[cfg(target_arch = "x86_64")]
pub(crate) fn available() -> bool {
    pulp::x86::V3::try_new().is_some()
}

/// Elsewhere the kernel does not exist.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn available() -> bool {
    false
}

/// Elsewhere the kernel does not exist: always `false`.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn multiply(_: &[u8], _: &[i8], _: usize, _: usize, _: &mut [i32]) -> bool {
    false
}

/// Rows `first..` of G (as many as `product` holds), over every slice and band.
#[cfg(target_arch = "x86_64")]
struct Rows<'a> {
    simd: pulp::x86::V3,
    wide: &'a Widened,
    first: usize,
    a: usize,
    product: &'a mut [i32],
}

#[cfg(target_arch = "x86_64")]
impl pulp::WithSimd for Rows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Rows {
            simd,
            wide,
            first,
            a,
            product,
        } = self;
        let stride = wide.stride;
        let rows = product.len() / a;
        let operands = Operands {
            u: &wide.u[first * stride..],
            y: &wide.y,
            stride,
        };
        for k in (0..stride).step_by(SLICE) {
            let len = SLICE.min(stride - k);
            for band in (0..a).step_by(BAND) {
                let band_end = a.min(band + BAND);
                let mut s = 0;
                while s < rows {
                    let m = (rows - s).min(3);
                    let mut t = band;
                    while t < band_end {
                        let n = (band_end - t).min(3);
                        let mut sums = [[0i32; 3]; 3];
                        match (m, n) {
                            (3, 3) => tile::<3, 3>(simd, &operands, [s, t, k, len], &mut sums),
                            (3, 2) => tile::<3, 2>(simd, &operands, [s, t, k, len], &mut sums),
                            (3, 1) => tile::<3, 1>(simd, &operands, [s, t, k, len], &mut sums),
                            (2, 3) => tile::<2, 3>(simd, &operands, [s, t, k, len], &mut sums),
                            (2, 2) => tile::<2, 2>(simd, &operands, [s, t, k, len], &mut sums),
                            (2, 1) => tile::<2, 1>(simd, &operands, [s, t, k, len], &mut sums),
                            (1, 3) => tile::<1, 3>(simd, &operands, [s, t, k, len], &mut sums),
                            (1, 2) => tile::<1, 2>(simd, &operands, [s, t, k, len], &mut sums),
                            _ => tile::<1, 1>(simd, &operands, [s, t, k, len], &mut sums),
                        }
                        for (i, row) in sums.iter().enumerate().take(m) {
                            let out = &mut product[(s + i) * a + t..][..n];
                            // Wrapping is the exact sum's: the caller keeps it within i32.
                            out.iter_mut()
                                .zip(row)
                                .for_each(|(o, v)| *o = o.wrapping_add(*v));
                        }
                        t += n;
                    }
                    s += m;
                }
            }
        }
    }
}

/// `sums[i][j] = Σ_k U[s + i][k] · Y[t + j][k]` over the slice `k..k + len` (`len` a multiple of
/// 16): M × N dot products, 16 lanes of `i16` at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile<const M: usize, const N: usize>(
    simd: pulp::x86::V3,
    operands: &Operands<'_>,
    [s, t, k, len]: [usize; 4],
    sums: &mut [[i32; 3]; 3],
) {
    use std::arch::x86_64::__m256i;
    let zero = simd.avx._mm256_setzero_si256();
    let mut acc = [[zero; N]; M];
    let us: [&[[i16; 16]]; M] = std::array::from_fn(|i| operands.u_slice(s + i, k, len));
    let ys: [&[[i16; 16]]; N] = std::array::from_fn(|j| operands.y_slice(t + j, k, len));
    for step in 0..len / 16 {
        let uv: [__m256i; M] = std::array::from_fn(|i| pulp::cast(us[i][step]));
        for j in 0..N {
            let yv: __m256i = pulp::cast(ys[j][step]);
            for i in 0..M {
                let pairs = simd.avx2._mm256_madd_epi16(uv[i], yv);
                acc[i][j] = simd.avx2._mm256_add_epi32(acc[i][j], pairs);
            }
        }
    }
    for i in 0..M {
        for j in 0..N {
            sums[i][j] = horizontal_sum(simd, acc[i][j]);
        }
    }
}

/// The widened rows a task reads: U from its first row on, all of Y.
struct Operands<'a> {
    u: &'a [i16],
    y: &'a [i16],
    stride: usize,
}

impl<'a> Operands<'a> {
    /// Row `s` of U (counted from the task's first), elements `k..k + len`, by 16.
    #[inline(always)]
    fn u_slice(&self, s: usize, k: usize, len: usize) -> &'a [[i16; 16]] {
        pulp::as_arrays::<16, i16>(&self.u[s * self.stride + k..][..len]).0
    }

    /// Feature `t` of Y, elements `k..k + len`, by 16.
    #[inline(always)]
    fn y_slice(&self, t: usize, k: usize, len: usize) -> &'a [[i16; 16]] {
        pulp::as_arrays::<16, i16>(&self.y[t * self.stride + k..][..len]).0
    }
}

/// The sum of the eight `i32` lanes (wrapping, as the exact sum within `i32` is).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn horizontal_sum(simd: pulp::x86::V3, v: std::arch::x86_64::__m256i) -> i32 {
    let low = simd.avx._mm256_castsi256_si128(v);
    let high = simd.avx2._mm256_extracti128_si256::<1>(v);
    let four = simd.sse2._mm_add_epi32(low, high);
    let two = simd.sse2._mm_add_epi32(four, simd.sse2._mm_shuffle_epi32::<0b01_00_11_10>(four));
    let one = simd.sse2._mm_add_epi32(two, simd.sse2._mm_shuffle_epi32::<0b10_11_00_01>(two));
    simd.sse2._mm_cvtsi128_si32(one)
}
