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
//!
//! Where the CPU has a 256-bit `vpdpbusd` — AVX-VNNI's VEX form (`_mm256_dpbusd_avx_epi32`:
//! Intel's client cores since Alder Lake, which have no AVX-512) or AVX-512 VNNI's EVEX form
//! with VL (`_mm256_dpbusd_epi32`: Xeons since Cascade Lake, AMD since Zen 4) — the same tiles
//! take it instead: a lane holds four consecutive `k` of a feature as raw bytes
//! (no widening), and one instruction multiplies `u8` by `i8` and adds the four products to
//! the `i32` accumulator, 32 multiply-adds with no separate `vpaddd`. Exact: four products sum
//! to at most 4·255·128 = 130,560 in magnitude, added without saturation (the `vpdpbusds`
//! form would saturate; it is not used). [`Step`] is what differs between the two.

#[cfg(target_arch = "x86_64")]
use crate::kernel::parallel::{equal_work_starts, room, rows_of_tasks, with_scratch};
#[cfg(target_arch = "x86_64")]
use crate::kernel::simd::{array_of, transpose_8x8};
use principal_amx::Dot256;
#[cfg(target_arch = "x86_64")]
use principal_amx::WithDot256;
#[cfg(target_arch = "x86_64")]
use rayon::prelude::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m256i;

#[cfg(target_arch = "x86_64")]
/// Values of `k` summed per pass over the features (a multiple of both steps' K).
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
/// The packed operands, `steps = ⌈r / K⌉` steps of [`Step::K`] values of `k` each (values past
/// `r` zero). For `vpmaddwd` (K = 2): `y[p · steps + q][l]` = `Y[8p + l][2q]` in the low `i16`,
/// `Y[8p + l][2q + 1]` in the high one (features past Y's zero); `u[g · steps + q][n]` =
/// `U[6g + n][2q]`, `U[6g + n][2q + 1]` the same way, for `n < 6` (rows past U's zero; lanes 6
/// and 7 zero, unused: 8 lanes keep one packing routine for both, and a step of a group within
/// one cache line). For `vpdpbusd` (K = 4) the same with four bytes `k = 4q..4q + 4` a lane.
struct Packed<'a> {
    y: &'a [[i32; 8]],
    u: &'a [[i32; 8]],
    steps: usize,
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
    fn widen_16(simd: pulp::x86::V3, bytes: [Self; 16]) -> __m256i;
}

#[cfg(target_arch = "x86_64")]
impl Byte for u8 {
    fn widen(self) -> i16 {
        i16::from(self)
    }
    #[inline(always)]
    fn widen_16(simd: pulp::x86::V3, bytes: [u8; 16]) -> __m256i {
        simd.avx2._mm256_cvtepu8_epi16(pulp::cast(bytes))
    }
}

#[cfg(target_arch = "x86_64")]
impl Byte for i8 {
    fn widen(self) -> i16 {
        i16::from(self)
    }
    #[inline(always)]
    fn widen_16(simd: pulp::x86::V3, bytes: [i8; 16]) -> __m256i {
        simd.avx2._mm256_cvtepi8_epi16(pulp::cast(bytes))
    }
}

#[cfg(target_arch = "x86_64")]
/// Packs up to 8 rows of `r` bytes (`rows`; missing rows read as zeros) into lanes of
/// [`Step::K`] consecutive values each (values past `r` zero): `out[q][l]` holds row `l`'s
/// values `Kq..Kq + K` as the step lays them out ([`Step::lane`]). Every value of `out`
/// (`⌈r / K⌉` lanes) is written. By 8 lanes of the 8 rows at a time: each row's `8K` bytes one
/// vector ([`Step::load`]), then the 8 × 8 `i32` transposed; the last lanes one by one.
struct Pack<'a, S, B> {
    step: S,
    simd: pulp::x86::V3,
    rows: &'a [B],
    r: usize,
    out: &'a mut [[i32; 8]],
}

#[cfg(target_arch = "x86_64")]
impl<S: Step, B: Byte> pulp::WithSimd for Pack<'_, S, B> {
    type Output = ();

    #[inline(always)]
    fn with_simd<T: pulp::Simd>(self, _: T) {
        let Pack {
            step,
            simd,
            rows,
            r,
            out,
        } = self;
        let height = rows.len() / r;
        let width = 8 * S::K;
        let zero = simd.avx._mm256_setzero_si256();
        let (whole, tail) = out.split_at_mut(r / width * 8);
        for (c, out) in whole.chunks_exact_mut(8).enumerate() {
            let v: [_; 8] = array_of(zero, |l| {
                if l < height {
                    step.load(simd, &rows[l * r + width * c..][..width])
                } else {
                    zero
                }
            });
            for (out, vector) in out.iter_mut().zip(transpose_8x8(simd, v)) {
                *out = pulp::cast(vector);
            }
        }
        let from = r / width * width;
        for (q, lanes) in tail.iter_mut().enumerate() {
            for (l, lane) in lanes.iter_mut().enumerate() {
                let k = from + S::K * q;
                *lane = S::lane(|i| match rows.get(l * r + k + i) {
                    Some(&b) if l < height && k + i < r => b,
                    _ => B::zeroed(),
                });
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// What the two kernels do differently: how many values of `k` a lane holds, how rows are
/// packed into lanes, the multiply-add, and the instructions the tiles are compiled for.
trait Step: Copy + Send + Sync + Sized {
    /// Values of `k` per `i32` lane (a divisor of [`SLICE`]).
    const K: usize;

    /// `8K` consecutive bytes of a row as a vector of 8 lanes ([`Pack`]).
    fn load<B: Byte>(self, simd: pulp::x86::V3, bytes: &[B]) -> __m256i;

    /// One lane of K values (`value(i)`, `i < K`) as [`Self::load`] lays it out.
    fn lane<B: Byte>(value: impl Fn(usize) -> B) -> i32;

    /// `acc + Σ u·y` over each lane's K values of `k`: `y` a panel's lanes (features of Y),
    /// `u` one row of U's step broadcast to every lane.
    fn multiply_add(self, simd: pulp::x86::V3, acc: __m256i, y: __m256i, u: __m256i) -> __m256i;

    /// Runs a task's tiles compiled for this step's instructions.
    fn run(self, rows: Rows<'_, Self>);
}

#[cfg(target_arch = "x86_64")]
/// AVX2's `vpmaddwd` on bytes widened to `i16`, then `vpaddd`.
#[derive(Clone, Copy)]
struct Madd;

#[cfg(target_arch = "x86_64")]
impl Step for Madd {
    const K: usize = 2;

    /// Widened to `i16`, the first value in the low half.
    #[inline(always)]
    fn load<B: Byte>(self, simd: pulp::x86::V3, bytes: &[B]) -> __m256i {
        B::widen_16(simd, bytes.try_into().expect("16 bytes"))
    }

    fn lane<B: Byte>(value: impl Fn(usize) -> B) -> i32 {
        i32::from(value(0).widen() as u16) | (i32::from(value(1).widen()) << 16)
    }

    #[inline(always)]
    fn multiply_add(self, simd: pulp::x86::V3, acc: __m256i, y: __m256i, u: __m256i) -> __m256i {
        simd.avx2
            ._mm256_add_epi32(acc, simd.avx2._mm256_madd_epi16(y, u))
    }

    fn run(self, rows: Rows<'_, Self>) {
        pulp::Simd::vectorize(rows.simd, rows)
    }
}

#[cfg(target_arch = "x86_64")]
/// The 256-bit `vpdpbusd` on the bytes as they are, in either encoding (`D`: AVX-VNNI's VEX or
/// AVX-512 VNNI's EVEX): the token proves the CPU runs it (`principal_amx`, the crate with
/// the unsafe code).
#[derive(Clone, Copy)]
struct Vnni<D>(D);

#[cfg(target_arch = "x86_64")]
impl<D: Dot256> Step for Vnni<D> {
    const K: usize = 4;

    /// The bytes as they are, the first in the low byte.
    #[inline(always)]
    fn load<B: Byte>(self, _: pulp::x86::V3, bytes: &[B]) -> __m256i {
        let bytes: [B; 32] = bytes.try_into().expect("32 bytes");
        pulp::cast(bytes)
    }

    fn lane<B: Byte>(value: impl Fn(usize) -> B) -> i32 {
        i32::from_le_bytes(std::array::from_fn(|i| pulp::bytemuck::cast(value(i))))
    }

    #[inline(always)]
    fn multiply_add(self, _: pulp::x86::V3, acc: __m256i, y: __m256i, u: __m256i) -> __m256i {
        // U's bytes are the unsigned operand, Y's the signed one.
        self.0.dot(acc, u, y)
    }

    fn run(self, rows: Rows<'_, Self>) {
        self.0.vectorize(rows)
    }
}

#[cfg(target_arch = "x86_64")]
impl<'a> Packed<'a> {
    /// Packs on all threads (panel by panel, group by group): serial, the packing was a part
    /// of the block no other core could share.
    fn new<S: Step>(
        step: S,
        simd: pulp::x86::V3,
        scratch: &'a mut Scratch,
        u: &[u8],
        y: &[i8],
        a: usize,
        r: usize,
    ) -> Self {
        let steps = r.div_ceil(S::K);
        // Each operand's groups of rows (Y's panels of features, U's groups of rows) packed in
        // parallel, `steps` lanes each.
        fn pack_all<S: Step, B: Byte + Sync>(
            step: S,
            simd: pulp::x86::V3,
            out: &mut [[i32; 8]],
            rows: &[B],
            group: usize,
            r: usize,
            steps: usize,
        ) {
            out.par_chunks_exact_mut(steps)
                .zip(rows.par_chunks(group * r))
                .for_each(|(out, rows)| {
                    let pack = Pack {
                        step,
                        simd,
                        rows,
                        r,
                        out,
                    };
                    pulp::Simd::vectorize(simd, pack)
                });
        }
        let packed_y = room(&mut scratch.y, a.div_ceil(PANEL) * steps);
        pack_all(step, simd, packed_y, y, PANEL, r, steps);
        let packed_u = room(&mut scratch.u, (a + 1).div_ceil(GROUP) * steps);
        pack_all(step, simd, packed_u, u, GROUP, r, steps);
        Packed {
            y: packed_y,
            u: packed_u,
            steps,
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
    match pulp::x86::V3::try_new() {
        Some(simd) => multiply_by(Madd, simd, u, y, a, r, product),
        None => false,
    }
}

/// The same product by the 256-bit `vpdpbusd` of `D` (AVX-VNNI's or AVX-512 VNNI's), or
/// `false` (and `product` untouched) where this CPU lacks it.
#[cfg(target_arch = "x86_64")]
pub(crate) fn multiply_vnni<D: Dot256>(
    u: &[u8],
    y: &[i8],
    a: usize,
    r: usize,
    product: &mut [i32],
) -> bool {
    match (pulp::x86::V3::try_new(), D::try_new()) {
        (Some(simd), Some(dot)) => multiply_by(Vnni(dot), simd, u, y, a, r, product),
        _ => false,
    }
}

#[cfg(target_arch = "x86_64")]
fn multiply_by<S: Step>(
    step: S,
    simd: pulp::x86::V3,
    u: &[u8],
    y: &[i8],
    a: usize,
    r: usize,
    product: &mut [i32],
) -> bool {
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
        let packed = Packed::new(step, simd, scratch, &u[..(a + 1) * r], &y[..a * r], a, r);
        // Each task's rows of G: groups `starts[i]..starts[i + 1]`.
        let tasks = rows_of_tasks(&mut *product, &starts, GROUP, a);
        tasks.into_par_iter().for_each(|(first_group, rows)| {
            // Not zeroed: the first slice's tiles store their sums, the others add theirs.
            step.run(Rows {
                step,
                simd,
                packed: &packed,
                first_group,
                a,
                product: rows,
            })
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

/// Whether [`multiply_vnni`] with `D` runs on this CPU.
#[cfg(target_arch = "x86_64")]
pub(crate) fn vnni_available<D: Dot256>() -> bool {
    available() && D::try_new().is_some()
}

/// Elsewhere the kernels do not exist.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn available() -> bool {
    false
}

/// Elsewhere the kernels do not exist (`D` keeps the x86-64 signature).
#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::extra_unused_type_parameters)]
pub(crate) fn vnni_available<D: Dot256>() -> bool {
    false
}

/// Elsewhere the kernel does not exist: always `false`.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn multiply(_: &[u8], _: &[i8], _: usize, _: usize, _: &mut [i32]) -> bool {
    false
}

/// Elsewhere the kernel does not exist: always `false` (`D` keeps the x86-64 signature).
#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::extra_unused_type_parameters)]
pub(crate) fn multiply_vnni<D: Dot256>(
    _: &[u8],
    _: &[i8],
    _: usize,
    _: usize,
    _: &mut [i32],
) -> bool {
    false
}

/// Rows of G from group `first_group` on (as many as `product` holds), over every slice of `k`.
#[cfg(target_arch = "x86_64")]
struct Rows<'a, S> {
    step: S,
    simd: pulp::x86::V3,
    packed: &'a Packed<'a>,
    first_group: usize,
    a: usize,
    product: &'a mut [i32],
}

#[cfg(target_arch = "x86_64")]
impl<S: Step> pulp::WithSimd for Rows<'_, S> {
    type Output = ();

    #[inline(always)]
    fn with_simd<T: pulp::Simd>(self, _: T) {
        self.tiles()
    }
}

#[cfg(target_arch = "x86_64")]
impl<D: Dot256> WithDot256<D> for Rows<'_, Vnni<D>> {
    type Output = ();

    #[inline(always)]
    fn with_dot(self, _: D) {
        self.tiles()
    }
}

#[cfg(target_arch = "x86_64")]
impl<S: Step> Rows<'_, S> {
    #[inline(always)]
    fn tiles(self) {
        let Rows {
            step,
            simd,
            packed,
            first_group,
            a,
            product,
        } = self;
        let steps = packed.steps;
        let rows = product.len() / a;
        let per_slice = SLICE / S::K;
        for q in (0..steps).step_by(per_slice) {
            let len = per_slice.min(steps - q);
            for (i, s) in (0..rows).step_by(GROUP).enumerate() {
                let g = first_group + i;
                let group = &packed.u[g * steps + q..][..len];
                let height = (rows - s).min(GROUP);
                let panel = |p: usize| &packed.y[p * steps + q..][..len];
                let mut t = first_feature(g, a);
                while t < a {
                    let out = Out {
                        product: &mut product[s * a..(s + height) * a],
                        a,
                        t,
                        first: q == 0,
                    };
                    let p = t / PANEL;
                    if a - t > PANEL {
                        let panels = [panel(p), panel(p + 1)];
                        tile::<S, TILE_PANELS>(step, simd, panels, group, out);
                        t += TILE_PANELS * PANEL;
                    } else {
                        tile::<S, 1>(step, simd, [panel(p)], group, out);
                        t += PANEL;
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// Where a tile's sums go: the group's rows of G (`height · a`), features `t..`; stored over
/// what is there for the first slice of `k` (`first`), added to it for the others.
struct Out<'a> {
    product: &'a mut [i32],
    a: usize,
    t: usize,
    first: bool,
}

/// Adds `Σ_q Y[t + f][Kq..Kq + K] · U[row][Kq..Kq + K]` over the slice to G, for the group's 6
/// rows and the P panels' 8·P features `f` (those past `a` are not stored).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile<S: Step, const P: usize>(
    step: S,
    simd: pulp::x86::V3,
    panels: [&[[i32; PANEL]]; P],
    group: &[[i32; 8]],
    out: Out<'_>,
) {
    let zero = simd.avx._mm256_setzero_si256();
    let mut acc = [[zero; GROUP]; P];
    let panels: [&[[i32; PANEL]]; P] = array_of(&[][..], |i| &panels[i][..group.len()]);
    for (q, steps) in group.iter().enumerate() {
        let lanes: [__m256i; P] = array_of(zero, |i| pulp::cast(panels[i][q]));
        for (n, &u) in steps[..GROUP].iter().enumerate() {
            let u = simd.avx._mm256_set1_epi32(u);
            for i in 0..P {
                acc[i][n] = step.multiply_add(simd, acc[i][n], lanes[i], u);
            }
        }
    }
    let Out {
        product,
        a,
        t,
        first,
    } = out;
    for (n, row) in product.chunks_exact_mut(a).enumerate() {
        for (i, panel) in acc.iter().enumerate() {
            let from = t + i * PANEL;
            // Wrapping is the exact sum's: the caller keeps it within i32.
            if let Some(dst) = row.get_mut(from..from + PANEL) {
                let dst: &mut [i32; PANEL] = dst.try_into().expect("a panel's width");
                *dst = if first {
                    pulp::cast(panel[n])
                } else {
                    pulp::cast(simd.avx2._mm256_add_epi32(pulp::cast(*dst), panel[n]))
                };
            } else {
                let sums: [i32; PANEL] = pulp::cast(panel[n]);
                for (g, v) in row[from..].iter_mut().zip(sums) {
                    *g = if first { v } else { g.wrapping_add(v) };
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
