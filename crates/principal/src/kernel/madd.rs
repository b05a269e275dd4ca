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
//! The product `G = U Y` (`G[s][t] = Σ_k U[s][k] Y[t][k]`) goes as a matrix product of outer
//! products, as BLAS kernels do: U is packed in panels of 8 rows, each pair of consecutive
//! `k` of the 8 rows one 256-bit vector of 16 `i16`; Y's features are widened to pairs of `i16`
//! in one `i32`, broadcast to every lane. A tile of 16 rows of U (2 vectors) by 6 features of Y
//! keeps 12 accumulators of 8 `i32` in registers: per pair of `k`, 2 loads and 6 broadcasts
//! feed 12 `vpmaddwd`, each 16 multiply-adds. The sum runs in slices of [`SLICE`] values of
//! `k`, so that a tile's panels (16 KiB) stay in the first-level cache while Y's features pass.
//! Only `G[s][t]` with `t ≥ s` and U's last row (the ones) are wanted: tiles wholly below the
//! diagonal are skipped, half the work. Tasks of rows of G run on all threads, with the same
//! bits (every sum is exact).

#[cfg(target_arch = "x86_64")]
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
/// Values of `k` summed per pass over the features (a multiple of 16).
const SLICE: usize = 512;

#[cfg(target_arch = "x86_64")]
/// Rows of U per panel: the `i32` lanes of a 256-bit vector.
const PANEL: usize = 8;

#[cfg(target_arch = "x86_64")]
/// Panels per tile (rows of U per tile: 16).
const TILE_PANELS: usize = 2;

#[cfg(target_arch = "x86_64")]
/// Features of Y per tile: with [`TILE_PANELS`], 12 accumulators, 2 panels' vectors, a
/// broadcast and a product fill the 16 AVX registers.
const TILE_FEATURES: usize = 6;

#[cfg(target_arch = "x86_64")]
/// Rows of U (rows of G) per task on the thread pool: three tiles.
const TASK_ROWS: usize = 3 * TILE_PANELS * PANEL;

#[cfg(target_arch = "x86_64")]
/// The packed operands: `u[((p · pairs) + q) · 16 + 2l + e] = U[8p + l][2q + e]` (rows past U's
/// zero), `y[t · pairs + q] = Y[t][2q]` in the low half, `Y[t][2q + 1]` in the high half, both
/// with `k` padded with zeros to `2 · pairs`, a multiple of 16.
struct Packed<'a> {
    u: &'a [i16],
    y: &'a [i32],
    pairs: usize,
}

#[cfg(target_arch = "x86_64")]
/// Storage for the packed operands, kept from block to block on the calling thread.
#[derive(Default)]
struct Scratch {
    u: Vec<i16>,
    y: Vec<i32>,
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The last product's packed operands on this thread: the next block packs into them, so
    /// that neither is allocated and zeroed on the calling thread while the other core waits
    /// (every value the product reads is written by the packing tasks, padding included).
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

#[cfg(target_arch = "x86_64")]
/// `buffer`'s first `len` values, grown (never shrunk) to hold them.
fn room<E: Copy + Default>(buffer: &mut Vec<E>, len: usize) -> &mut [E] {
    if buffer.len() < len {
        buffer.resize(len, E::default());
    }
    &mut buffer[..len]
}

#[cfg(target_arch = "x86_64")]
impl<'a> Packed<'a> {
    /// Packs on all threads (panel by panel, feature by feature): serial, the packing and its
    /// zeroing were a part of the block no other core could share. Every value a stored sum
    /// reads is written here: Y's padding past `r` is zeroed, so U's (which may hold a former
    /// block's values) adds nothing, and U's lanes past its `a + 1` rows feed only sums that
    /// are never stored.
    fn new(scratch: &'a mut Scratch, u: &[u8], y: &[i8], a: usize, r: usize) -> Self {
        let pairs = r.div_ceil(16) * 8;
        let panels = (a + 1).div_ceil(TASK_ROWS) * TASK_ROWS / PANEL;
        let panel_len = pairs * 2 * PANEL;
        let packed_u = room(&mut scratch.u, panels * panel_len);
        packed_u
            .par_chunks_exact_mut(panel_len)
            .enumerate()
            .for_each(|(p, panel)| {
                let rows = u.chunks(PANEL * r).nth(p).unwrap_or_default();
                for (l, row) in rows.chunks_exact(r).enumerate() {
                    for (q, pair) in row.chunks(2).enumerate() {
                        panel[q * 2 * PANEL + 2 * l] = i16::from(pair[0]);
                        panel[q * 2 * PANEL + 2 * l + 1] = pair.get(1).map_or(0, |&v| i16::from(v));
                    }
                }
            });
        let packed_y = room(&mut scratch.y, a * pairs);
        packed_y
            .par_chunks_exact_mut(pairs)
            .zip(y.par_chunks_exact(r))
            .for_each(|(dst, row)| {
                let (used, padding) = dst.split_at_mut(r.div_ceil(2));
                for (d, pair) in used.iter_mut().zip(row.chunks(2)) {
                    let low = i32::from(i16::from(pair[0]) as u16);
                    let high = pair.get(1).map_or(0, |&v| i32::from(v));
                    *d = low | (high << 16);
                }
                padding.fill(0);
            });
        Packed {
            u: packed_u,
            y: packed_y,
            pairs,
        }
    }
}

/// `product = U Y` (layout as [`crate::kernel::bytes::ByteProduct::multiply`]: its entries
/// `t ≥ s` and its last row) by AVX2's `vpmaddwd`, or `false` (and `product` untouched) where
/// this CPU lacks AVX2.
#[cfg(target_arch = "x86_64")]
pub(crate) fn multiply(u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) -> bool {
    let Some(simd) = pulp::x86::V3::try_new() else {
        return false;
    };
    let product = &mut product[..(a + 1) * a];
    if a == 0 {
        return true;
    }
    let mut run = |scratch: &mut Scratch| {
        let packed = Packed::new(scratch, &u[..(a + 1) * r], &y[..a * r], a, r);
        product
            .par_chunks_mut(TASK_ROWS * a)
            .enumerate()
            .for_each(|(task, rows)| {
                // Zeroed by the task that sums into them, on its own core.
                rows.fill(0);
                pulp::Simd::vectorize(
                    simd,
                    Rows {
                        simd,
                        packed: &packed,
                        first: task * TASK_ROWS,
                        a,
                        product: rows,
                    },
                )
            });
    };
    // A product started while this thread waits inside another (a rayon worker that took
    // another block's task) packs into storage of its own.
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => run(&mut scratch),
        Err(_) => run(&mut Scratch::default()),
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

/// Rows `first..` of G (as many as `product` holds), over every slice of `k`.
#[cfg(target_arch = "x86_64")]
struct Rows<'a> {
    simd: pulp::x86::V3,
    packed: &'a Packed<'a>,
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
            packed,
            first,
            a,
            product,
        } = self;
        let pairs = packed.pairs;
        let rows = product.len() / a;
        let panel_len = pairs * 2 * PANEL;
        for q in (0..pairs).step_by(SLICE / 2) {
            let len = (SLICE / 2).min(pairs - q);
            for s in (0..rows).step_by(TILE_PANELS * PANEL) {
                let panels: [&[[i16; 16]]; TILE_PANELS] = std::array::from_fn(|i| {
                    let p = (first + s) / PANEL + i;
                    let panel = &packed.u[p * panel_len + q * 2 * PANEL..][..len * 2 * PANEL];
                    pulp::as_arrays::<16, i16>(panel).0
                });
                let height = (rows - s).min(TILE_PANELS * PANEL);
                // U's last row (the ones) wants every feature; other rows only t ≥ s.
                let from = if first + s + height > a {
                    0
                } else {
                    (first + s) / TILE_FEATURES * TILE_FEATURES
                };
                let mut t = from;
                while t < a {
                    let width = (a - t).min(TILE_FEATURES);
                    let feature = |j: usize| &packed.y[(t + j) * pairs + q..][..len];
                    let out = Out {
                        product: &mut *product,
                        a,
                        s,
                        height,
                        t,
                    };
                    match width {
                        6 => tile::<6>(simd, panels, std::array::from_fn(feature), out),
                        5 => tile::<5>(simd, panels, std::array::from_fn(feature), out),
                        4 => tile::<4>(simd, panels, std::array::from_fn(feature), out),
                        3 => tile::<3>(simd, panels, std::array::from_fn(feature), out),
                        2 => tile::<2>(simd, panels, std::array::from_fn(feature), out),
                        _ => tile::<1>(simd, panels, std::array::from_fn(feature), out),
                    }
                    t += width;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// Where a tile's sums go: rows `s..s + height` (of the task's part of G), features `t..`.
struct Out<'a> {
    product: &'a mut [i32],
    a: usize,
    s: usize,
    height: usize,
    t: usize,
}

/// Adds `Σ_q U[row][2q..2q + 2] · Y[t + j][2q..2q + 2]` over the slice to G, for the tile's 16
/// rows (2 panels) and N features.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile<const N: usize>(
    simd: pulp::x86::V3,
    panels: [&[[i16; 16]]; TILE_PANELS],
    features: [&[i32]; N],
    out: Out<'_>,
) {
    use std::arch::x86_64::__m256i;
    let zero = simd.avx._mm256_setzero_si256();
    let mut acc = [[zero; N]; TILE_PANELS];
    let len = panels[0].len();
    for q in 0..len {
        let lanes: [__m256i; TILE_PANELS] = std::array::from_fn(|i| pulp::cast(panels[i][q]));
        for j in 0..N {
            let pair = simd.avx._mm256_set1_epi32(features[j][q]);
            for i in 0..TILE_PANELS {
                let products = simd.avx2._mm256_madd_epi16(lanes[i], pair);
                acc[i][j] = simd.avx2._mm256_add_epi32(acc[i][j], products);
            }
        }
    }
    let Out {
        product,
        a,
        s,
        height,
        t,
    } = out;
    for (i, panel) in acc.iter().enumerate() {
        for (j, &sums) in panel.iter().enumerate() {
            let sums: [i32; PANEL] = pulp::cast(sums);
            for (l, &v) in sums
                .iter()
                .enumerate()
                .take(height.saturating_sub(i * PANEL))
            {
                let g = &mut product[(s + i * PANEL + l) * a + t + j];
                // Wrapping is the exact sum's: the caller keeps it within i32.
                *g = g.wrapping_add(v);
            }
        }
    }
}
