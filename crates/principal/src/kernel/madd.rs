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
//! products, as BLAS kernels do, with G's rows along the vectors' lanes so that a tile's sums
//! are added to G's row-major storage by whole vectors. Y is packed in panels of 8 features,
//! each pair of consecutive `k` of the 8 features one 256-bit vector of 16 `i16`; U's rows are
//! packed in groups of 6, each row's pair of `k` one `i32` (two `i16`), the 6 rows' pairs of
//! one `k` side by side, broadcast to every lane. A tile of 6 rows by 16 features (2 panels)
//! keeps 12 accumulators of 8 `i32` in registers: per pair of `k`, 2 loads and 6 broadcasts
//! (from 24 contiguous bytes) feed 12 `vpmaddwd`, each 16 multiply-adds. On Zen 3 the loop is
//! bound by the vector pipes (a `vpaddd` into the accumulator per `vpmaddwd`, as there is no
//! VNNI, and the broadcasts), not by memory. The sum runs in slices of [`SLICE`] values of
//! `k`, so that Y's slice (at most 784 features · 1 KiB) stays in the second-level cache while
//! the rows pass. Only `G[s][t]` with `t ≥ s` and U's last row (the ones) are wanted: tiles
//! wholly below the diagonal are skipped, half the work. Tasks of rows of G, cut to equal
//! work, run on all threads, with the same bits (every sum is exact).

#[cfg(target_arch = "x86_64")]
use crate::kernel::parallel::{equal_work_starts, room, rows_of_tasks, with_scratch};
#[cfg(target_arch = "x86_64")]
use crate::kernel::simd::{array_of, transpose_8x8};
#[cfg(target_arch = "x86_64")]
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
/// Values of `k` summed per pass over the features (even).
const SLICE: usize = 512;

#[cfg(target_arch = "x86_64")]
/// Features of Y per panel: the `i32` lanes of a 256-bit vector.
const PANEL: usize = 8;

#[cfg(target_arch = "x86_64")]
/// Panels per tile (features per tile: 16).
const TILE_PANELS: usize = 2;

#[cfg(target_arch = "x86_64")]
/// Rows of U per group (rows of G per tile): with [`TILE_PANELS`], 12 accumulators, 2 panels'
/// vectors, a broadcast and a product fill the 16 AVX registers.
const GROUP: usize = 6;

#[cfg(target_arch = "x86_64")]
/// Tasks per product on the thread pool, cut to equal work: several per thread, so that a
/// thread that finishes early takes another.
const TASKS: usize = 16;

#[cfg(target_arch = "x86_64")]
/// The packed operands, `pairs = ⌈r / 2⌉` pairs of `k` (an odd `r`'s last pair has a zero high
/// half): `y[p · pairs + q][l]` = `Y[8p + l][2q]` in the low `i16`, `Y[8p + l][2q + 1]` in the
/// high one (features past Y's zero); `u[g · pairs + q][n]` = `U[6g + n][2q]`, `U[6g + n][2q +
/// 1]` the same way, for `n < 6` (rows past U's zero; lanes 6 and 7 zero, unused: 8 lanes keep
/// one packing routine for both, and a pair of `k` of a group within one cache line).
struct Packed<'a> {
    y: &'a [[i32; 8]],
    u: &'a [[i32; 8]],
    pairs: usize,
}

#[cfg(target_arch = "x86_64")]
/// Storage for the packed operands, kept from block to block on the calling thread.
#[derive(Default)]
struct Scratch {
    y: Vec<[i32; 8]>,
    u: Vec<[i32; 8]>,
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The last product's packed operands on this thread: the next block packs into them, so
    /// that neither is allocated and zeroed on the calling thread while the other core waits
    /// (every value the product reads is written by the packing tasks, padding included).
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

#[cfg(target_arch = "x86_64")]
/// A byte of the block, widened to `i16` exactly (`u8` by zeros, `i8` by its sign).
trait Byte: Copy + pulp::bytemuck::Pod {
    fn widen(self) -> i16;
    /// The same for 16 consecutive bytes, into the 16 lanes of a vector.
    fn widen_16(simd: pulp::x86::V3, bytes: [Self; 16]) -> std::arch::x86_64::__m256i;
}

#[cfg(target_arch = "x86_64")]
impl Byte for u8 {
    fn widen(self) -> i16 {
        i16::from(self)
    }
    #[inline(always)]
    fn widen_16(simd: pulp::x86::V3, bytes: [u8; 16]) -> std::arch::x86_64::__m256i {
        simd.avx2._mm256_cvtepu8_epi16(pulp::cast(bytes))
    }
}

#[cfg(target_arch = "x86_64")]
impl Byte for i8 {
    fn widen(self) -> i16 {
        i16::from(self)
    }
    #[inline(always)]
    fn widen_16(simd: pulp::x86::V3, bytes: [i8; 16]) -> std::arch::x86_64::__m256i {
        simd.avx2._mm256_cvtepi8_epi16(pulp::cast(bytes))
    }
}

#[cfg(target_arch = "x86_64")]
/// Interleaves up to 8 rows of `r` bytes (`rows`; missing rows read as zeros) into pairs,
/// widened to `i16`: `out[q][l] = row_l[2q] | row_l[2q + 1] << 16` (an odd `r`'s last pair has
/// a zero high half). Every value of `out` (`⌈r / 2⌉` pairs) is written. By 8 pairs of the 8
/// rows at a time: each row's 16 bytes widened into one vector, then the 8 × 8 `i32` transposed.
struct Interleave<'a, B> {
    simd: pulp::x86::V3,
    rows: &'a [B],
    r: usize,
    out: &'a mut [[i32; 8]],
}

#[cfg(target_arch = "x86_64")]
impl<B: Byte> pulp::WithSimd for Interleave<'_, B> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Interleave { simd, rows, r, out } = self;
        let height = rows.len() / r;
        let zero = simd.avx._mm256_setzero_si256();
        let (whole, tail) = out.split_at_mut(r / 16 * 8);
        for (c, out) in whole.chunks_exact_mut(8).enumerate() {
            let v: [_; 8] = array_of(zero, |l| {
                if l < height {
                    let bytes = &rows[l * r + 16 * c..][..16];
                    B::widen_16(simd, bytes.try_into().expect("16 bytes"))
                } else {
                    zero
                }
            });
            for (out, vector) in out.iter_mut().zip(transpose_8x8(simd, v)) {
                *out = pulp::cast(vector);
            }
        }
        // The last pairs (r not a multiple of 16), one by one.
        let from = r / 16 * 16;
        for (q, pairs) in tail.iter_mut().enumerate() {
            for (l, pair) in pairs.iter_mut().enumerate() {
                let byte = |k: usize| match rows.get(l * r + k) {
                    Some(&b) if l < height && k < r => b.widen(),
                    _ => 0,
                };
                let k = from + 2 * q;
                *pair = i32::from(byte(k) as u16) | (i32::from(byte(k + 1)) << 16);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl<'a> Packed<'a> {
    /// Packs on all threads (panel by panel, group by group): serial, the packing was a part
    /// of the block no other core could share.
    fn new(
        simd: pulp::x86::V3,
        scratch: &'a mut Scratch,
        u: &[u8],
        y: &[i8],
        a: usize,
        r: usize,
    ) -> Self {
        let pairs = r.div_ceil(2);
        let packed_y = room(&mut scratch.y, a.div_ceil(PANEL) * pairs);
        packed_y
            .par_chunks_exact_mut(pairs)
            .zip(y.par_chunks(PANEL * r))
            .for_each(|(out, rows)| pulp::Simd::vectorize(simd, Interleave { simd, rows, r, out }));
        let packed_u = room(&mut scratch.u, (a + 1).div_ceil(GROUP) * pairs);
        packed_u
            .par_chunks_exact_mut(pairs)
            .zip(u.par_chunks(GROUP * r))
            .for_each(|(out, rows)| pulp::Simd::vectorize(simd, Interleave { simd, rows, r, out }));
        Packed {
            y: packed_y,
            u: packed_u,
            pairs,
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// The first feature of the tiles of row group `g` (of `a` features): the panel holding its
/// first row's diagonal, or 0 for the group holding U's last row, which wants every feature.
fn first_feature(g: usize, a: usize) -> usize {
    let s = g * GROUP;
    if s + GROUP > a { 0 } else { s / PANEL * PANEL }
}

#[cfg(target_arch = "x86_64")]
/// Where the tasks' groups of rows start, and the end (`groups`): consecutive groups whose
/// work (features from [`first_feature`] on) adds up to about an equal share each. The
/// top rows of the triangle are the longest, so equal numbers of rows would not do.
fn task_starts(groups: usize, a: usize) -> Vec<usize> {
    equal_work_starts(groups, TASKS, |g| (a - first_feature(g, a)) + PANEL)
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
    if r == 0 {
        product.fill(0);
        return true;
    }
    if a == 0 {
        return true;
    }
    let groups = (a + 1).div_ceil(GROUP);
    let starts = task_starts(groups, a);
    let run = |scratch: &mut Scratch| {
        let packed = Packed::new(simd, scratch, &u[..(a + 1) * r], &y[..a * r], a, r);
        // Each task's rows of G: groups `starts[i]..starts[i + 1]`.
        let tasks = rows_of_tasks(&mut *product, &starts, GROUP, a);
        tasks.into_par_iter().for_each(|(first_group, rows)| {
            // Zeroed by the task that sums into them, on its own core.
            rows.fill(0);
            pulp::Simd::vectorize(
                simd,
                Rows {
                    simd,
                    packed: &packed,
                    first_group,
                    a,
                    product: rows,
                },
            )
        });
    };
    with_scratch(&SCRATCH, run);
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

/// Rows of G from group `first_group` on (as many as `product` holds), over every slice of `k`.
#[cfg(target_arch = "x86_64")]
struct Rows<'a> {
    simd: pulp::x86::V3,
    packed: &'a Packed<'a>,
    first_group: usize,
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
            first_group,
            a,
            product,
        } = self;
        let pairs = packed.pairs;
        let rows = product.len() / a;
        for q in (0..pairs).step_by(SLICE / 2) {
            let len = (SLICE / 2).min(pairs - q);
            for (i, s) in (0..rows).step_by(GROUP).enumerate() {
                let g = first_group + i;
                let group = &packed.u[g * pairs + q..][..len];
                let height = (rows - s).min(GROUP);
                let panel = |p: usize| &packed.y[p * pairs + q..][..len];
                let mut t = first_feature(g, a);
                while t < a {
                    let out = Out {
                        product: &mut product[s * a..(s + height) * a],
                        a,
                        t,
                    };
                    let p = t / PANEL;
                    if a - t > PANEL {
                        let panels = [panel(p), panel(p + 1)];
                        tile::<TILE_PANELS>(simd, panels, group, out);
                        t += TILE_PANELS * PANEL;
                    } else {
                        tile::<1>(simd, [panel(p)], group, out);
                        t += PANEL;
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// Where a tile's sums go: the group's rows of G (`height · a`), features `t..`.
struct Out<'a> {
    product: &'a mut [i32],
    a: usize,
    t: usize,
}

/// Adds `Σ_q Y[t + f][2q..2q + 2] · U[row][2q..2q + 2]` over the slice to G, for the group's 6
/// rows and the P panels' 8·P features `f` (those past `a` are not stored).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile<const P: usize>(
    simd: pulp::x86::V3,
    panels: [&[[i32; PANEL]]; P],
    group: &[[i32; 8]],
    out: Out<'_>,
) {
    use std::arch::x86_64::__m256i;
    let zero = simd.avx._mm256_setzero_si256();
    let mut acc = [[zero; GROUP]; P];
    let panels: [&[[i32; PANEL]]; P] = array_of(&[][..], |i| &panels[i][..group.len()]);
    for (q, pairs) in group.iter().enumerate() {
        let lanes: [__m256i; P] = array_of(zero, |i| pulp::cast(panels[i][q]));
        for (n, &pair) in pairs[..GROUP].iter().enumerate() {
            let pair = simd.avx._mm256_set1_epi32(pair);
            for i in 0..P {
                let products = simd.avx2._mm256_madd_epi16(lanes[i], pair);
                acc[i][n] = simd.avx2._mm256_add_epi32(acc[i][n], products);
            }
        }
    }
    let Out { product, a, t } = out;
    for (n, row) in product.chunks_exact_mut(a).enumerate() {
        for (i, panel) in acc.iter().enumerate() {
            let from = t + i * PANEL;
            // Wrapping is the exact sum's: the caller keeps it within i32.
            if let Some(dst) = row.get_mut(from..from + PANEL) {
                let dst: &mut [i32; PANEL] = dst.try_into().expect("a panel's width");
                *dst = pulp::cast(simd.avx2._mm256_add_epi32(pulp::cast(*dst), panel[n]));
            } else {
                let sums: [i32; PANEL] = pulp::cast(panel[n]);
                for (g, v) in row[from..].iter_mut().zip(sums) {
                    *g = g.wrapping_add(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "x86_64")]
    use super::*;

    /// The tasks take every group of rows once, in order, and share the triangle's work
    /// evenly: none more than one group's work beyond an equal share (the first rows of the
    /// triangle are the longest, so tasks of equal numbers of rows would not be).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_tasks_take_every_group_once_and_equal_shares_of_the_work() {
        for a in [1usize, 5, 6, 7, 50, 200, 784, 2000] {
            let groups = (a + 1).div_ceil(GROUP);
            let starts = task_starts(groups, a);
            assert_eq!((starts[0], *starts.last().unwrap()), (0, groups), "a = {a}");
            assert!(
                starts.windows(2).all(|w| w[0] < w[1]),
                "a = {a}: {starts:?}"
            );
            assert!(starts.len() - 1 <= TASKS, "a = {a}: {starts:?}");
            let work = |g: usize| (a - first_feature(g, a)) + PANEL;
            let total: usize = (0..groups).map(work).sum();
            let largest = (0..groups).map(work).max().unwrap();
            for w in starts.windows(2) {
                let task: usize = (w[0]..w[1]).map(work).sum();
                assert!(
                    task <= total.div_ceil(TASKS) + largest,
                    "a = {a}: groups {}..{} take {task} of {total}",
                    w[0],
                    w[1]
                );
            }
        }
    }
}
