//! Our exact byte products on x86-64, on tiles of the triangle: with AVX2 alone, bytes widened
//! to `i16`, multiplied and added in pairs into `i32` by `vpmaddwd` (`_mm256_madd_epi16`, 16
//! multiply-adds per instruction, twice an f32 FMA's), summed in `i32`; with AVX-VNNI or
//! AVX-512 VNNI, `vpdpbusd` on 256-bit or 512-bit vectors (below).
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
//! VNNI, and the broadcasts), not by memory. The sum runs in slices of `k` ([`Layout::SLICE`]),
//! so that Y's slice (at most 784 features · 1 KiB) stays in the second-level cache while the
//! rows pass. Only `G[s][t]` with `t ≥ s` and U's last row (the ones) are wanted: tiles
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
//!
//! Where the CPU has AVX-512 VNNI, the same instruction on 512-bit vectors
//! (`_mm512_dpbusd_epi32`, 64 multiply-adds) runs on wider tiles: panels of 16 features, one
//! 64-byte [`Lanes16`] a step (aligned, so that no load splits a cache line), groups of 12
//! rows, so that a tile of 12 rows by 32 features keeps 24 accumulators of the 32 registers.
//! On Intel's server cores, with two 512-bit ports, a block takes about 0.6 of the 256-bit
//! tiles' time (bench/results.md). [`Tiling`] is what differs between the three kernels (the
//! packing's [`Layout`], the tile's shape and sums, the instructions); the packing, the
//! triangle's walk and the tasks are shared.

#[cfg(target_arch = "x86_64")]
use crate::kernel::parallel::{equal_work_starts, room, rows_of_tasks, with_scratch};
#[cfg(target_arch = "x86_64")]
use crate::kernel::simd::{array_of, transpose_8x8};
use principal_amx::Dot256;
#[cfg(target_arch = "x86_64")]
use principal_amx::{Lanes16, Vnni512, WithDot256, WithVnni512};
#[cfg(target_arch = "x86_64")]
use rayon::prelude::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256i, __m512i};

#[cfg(target_arch = "x86_64")]
/// Panels per tile (features per tile: 16 on 256-bit vectors, 32 on 512-bit ones).
const TILE_PANELS: usize = 2;

#[cfg(target_arch = "x86_64")]
/// Rows of U per group on 256-bit vectors (rows of G per tile): with [`TILE_PANELS`], 12
/// accumulators, 2 panels' vectors, a broadcast and a product fill the 16 AVX registers.
const GROUP: usize = 6;

#[cfg(target_arch = "x86_64")]
/// Rows of U per group on 512-bit vectors: 24 accumulators, 2 panels' vectors and a broadcast
/// of the 32 AVX-512 registers.
const WIDE_GROUP: usize = 12;

#[cfg(target_arch = "x86_64")]
/// Tasks per product on the thread pool, cut to equal work: several per thread, so that a
/// thread that finishes early takes another.
const TASKS: usize = 16;

#[cfg(target_arch = "x86_64")]
/// One step of the packed operands: the `i32` lanes of one vector, in halves of 8 lanes
/// (`[i32; 8]` for 256-bit vectors, [`Lanes16`] for 512-bit ones).
trait StepLanes: Copy + Default + Send + Sync + 'static {
    /// Halves of 8 lanes.
    const HALVES: usize;
    /// Lanes `8h..8h + 8`.
    fn half(&mut self, h: usize) -> &mut [i32; 8];
}

#[cfg(target_arch = "x86_64")]
impl StepLanes for [i32; 8] {
    const HALVES: usize = 1;
    fn half(&mut self, _: usize) -> &mut [i32; 8] {
        self
    }
}

#[cfg(target_arch = "x86_64")]
impl StepLanes for Lanes16 {
    const HALVES: usize = 2;
    #[inline(always)]
    fn half(&mut self, h: usize) -> &mut [i32; 8] {
        let (low, high) = self.0.split_at_mut(8);
        let half = if h == 0 { low } else { high };
        half.try_into().expect("8 lanes")
    }
}

#[cfg(target_arch = "x86_64")]
/// The packed operands, `steps = ⌈r / K⌉` steps of the layout's K values of `k` each (values
/// past `r` zero), a step of a panel or group one `E`. For `vpmaddwd` (K = 2, `E` = `[i32; 8]`):
/// `y[p · steps + q][l]` = `Y[8p + l][2q]` in the low `i16`, `Y[8p + l][2q + 1]` in the high
/// one (features past Y's zero); `u[g · steps + q][n]` = `U[6g + n][2q]`, `U[6g + n][2q + 1]`
/// the same way, for `n < 6` (rows past U's zero; lanes 6 and 7 zero, unused: 8 lanes keep one
/// packing routine for both, and a step of a group within one cache line). For `vpdpbusd`
/// (K = 4) the same with four bytes `k = 4q..4q + 4` a lane; on 512-bit vectors (`E` =
/// [`Lanes16`]) panels of 16 features and groups of 12 rows (lanes 12 to 15 zero).
struct Packed<'a, E> {
    y: &'a [E],
    u: &'a [E],
    steps: usize,
}

#[cfg(target_arch = "x86_64")]
/// Storage for the packed operands, kept from block to block on the calling thread.
#[derive(Default)]
struct Scratch<E> {
    y: Vec<E>,
    u: Vec<E>,
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The last product's packed operands on this thread: the next block packs into them, so
    /// that neither is allocated and zeroed on the calling thread while the other core waits
    /// (every value the product reads is written by the packing tasks, padding included).
    static SCRATCH: std::cell::RefCell<Scratch<[i32; 8]>> = std::cell::RefCell::default();
    /// The same for the 512-bit tiles.
    static WIDE_SCRATCH: std::cell::RefCell<Scratch<Lanes16>> = std::cell::RefCell::default();
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
/// Packs up to `8 · E::HALVES` rows of `r` bytes (`rows`; missing rows read as zeros) into
/// lanes of [`Layout::K`] consecutive values each (values past `r` zero): `out[q]` holds row
/// `l`'s values `Kq..Kq + K` in lane `l`, as the layout lays them out ([`Layout::lane`]).
/// Every value of `out` (`⌈r / K⌉` steps) is written. By 8 steps of 8 rows at a time: each
/// row's `8K` bytes one vector ([`Layout::load`]), then the 8 × 8 `i32` transposed; the last
/// steps lane by lane.
struct Pack<'a, L, B, E> {
    layout: L,
    simd: pulp::x86::V3,
    rows: &'a [B],
    r: usize,
    out: &'a mut [E],
}

#[cfg(target_arch = "x86_64")]
impl<L: Layout, B: Byte, E: StepLanes> pulp::WithSimd for Pack<'_, L, B, E> {
    type Output = ();

    #[inline(always)]
    fn with_simd<T: pulp::Simd>(self, _: T) {
        let Pack {
            layout,
            simd,
            rows,
            r,
            out,
        } = self;
        let height = rows.len() / r;
        let width = 8 * L::K;
        let zero = simd.avx._mm256_setzero_si256();
        let (whole, tail) = out.split_at_mut(r / width * 8);
        for (c, out) in whole.chunks_exact_mut(8).enumerate() {
            for h in 0..E::HALVES {
                let v: [_; 8] = array_of(zero, |l| {
                    let l = 8 * h + l;
                    if l < height {
                        layout.load(simd, &rows[l * r + width * c..][..width])
                    } else {
                        zero
                    }
                });
                for (out, vector) in out.iter_mut().zip(transpose_8x8(simd, v)) {
                    *out.half(h) = pulp::cast(vector);
                }
            }
        }
        let from = r / width * width;
        for (q, lanes) in tail.iter_mut().enumerate() {
            let k = from + L::K * q;
            for l in 0..8 * E::HALVES {
                lanes.half(l / 8)[l % 8] = L::lane(|i| match rows.get(l * r + k + i) {
                    Some(&b) if l < height && k + i < r => b,
                    _ => B::zeroed(),
                });
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// How the operands are packed: how many values of `k` a lane holds, and in what form.
trait Layout: Copy + Send + Sync + Default {
    /// Values of `k` per `i32` lane (a divisor of [`Self::SLICE`]).
    const K: usize;

    /// Values of `k` summed per pass over the features: 1 KiB of each feature's packed
    /// values, so that Y's slice (784 KiB for 784 features) stays in the second-level cache
    /// while the rows pass. (Raw bytes: 1,024 values, a few percent less per block than 512 on
    /// the Intel Xeon, within its noise, bench/results.md.)
    const SLICE: usize;

    /// `8K` consecutive bytes of a row as a vector of 8 lanes ([`Pack`]).
    fn load<B: Byte>(self, simd: pulp::x86::V3, bytes: &[B]) -> __m256i;

    /// One lane of K values (`value(i)`, `i < K`) as [`Self::load`] lays it out.
    fn lane<B: Byte>(value: impl Fn(usize) -> B) -> i32;
}

#[cfg(target_arch = "x86_64")]
/// Two values a lane widened to `i16`, for `vpmaddwd`.
#[derive(Clone, Copy, Default)]
struct Widened;

#[cfg(target_arch = "x86_64")]
impl Layout for Widened {
    const K: usize = 2;
    const SLICE: usize = 512;

    /// Widened to `i16`, the first value in the low half.
    #[inline(always)]
    fn load<B: Byte>(self, simd: pulp::x86::V3, bytes: &[B]) -> __m256i {
        B::widen_16(simd, bytes.try_into().expect("16 bytes"))
    }

    fn lane<B: Byte>(value: impl Fn(usize) -> B) -> i32 {
        i32::from(value(0).widen() as u16) | (i32::from(value(1).widen()) << 16)
    }
}

#[cfg(target_arch = "x86_64")]
/// Four values a lane as the bytes they are, for `vpdpbusd`.
#[derive(Clone, Copy, Default)]
struct Raw;

#[cfg(target_arch = "x86_64")]
impl Layout for Raw {
    const K: usize = 4;
    const SLICE: usize = 1024;

    /// The bytes as they are, the first in the low byte.
    #[inline(always)]
    fn load<B: Byte>(self, _: pulp::x86::V3, bytes: &[B]) -> __m256i {
        let bytes: [B; 32] = bytes.try_into().expect("32 bytes");
        pulp::cast(bytes)
    }

    fn lane<B: Byte>(value: impl Fn(usize) -> B) -> i32 {
        i32::from_le_bytes(std::array::from_fn(|i| pulp::bytemuck::cast(value(i))))
    }
}

#[cfg(target_arch = "x86_64")]
/// What the kernels do differently: the layout of the packed operands, the shape of a tile
/// (rows of U per group, `8 · HALVES` features per panel), the tile's sums, and the
/// instructions the tiles are compiled for.
trait Tiling: Copy + Send + Sync + Sized {
    type Layout: Layout;
    type Lanes: StepLanes;
    /// Rows of U per group (rows of G per tile).
    const GROUP: usize;
    /// Features of Y per panel: the `i32` lanes of a vector.
    const PANEL: usize = 8 * <Self::Lanes as StepLanes>::HALVES;

    /// This kernel's scratch on each thread.
    fn scratch() -> &'static std::thread::LocalKey<std::cell::RefCell<Scratch<Self::Lanes>>>;

    /// Adds `Σ_q Y[t + f][Kq..Kq + K] · U[row][Kq..Kq + K]` over the slice to G, for the
    /// group's rows and the P panels' features `f` (those past `a` are not stored).
    fn tile<const P: usize>(
        self,
        simd: pulp::x86::V3,
        panels: [&[Self::Lanes]; P],
        group: &[Self::Lanes],
        out: Out<'_>,
    );

    /// Runs a task's tiles compiled for this kernel's instructions.
    fn run(self, rows: Rows<'_, Self>);
}

#[cfg(target_arch = "x86_64")]
/// What the two 256-bit kernels do differently (both on [`tile_256`]'s tiles of [`GROUP`] rows
/// by 8-feature panels): the packing's layout, the multiply-add and the instructions.
trait Step: Copy + Send + Sync {
    type Layout: Layout;

    /// `acc + Σ u·y` over each lane's K values of `k`: `y` a panel's lanes (features of Y),
    /// `u` one row of U's step broadcast to every lane.
    fn multiply_add(self, simd: pulp::x86::V3, acc: __m256i, y: __m256i, u: __m256i) -> __m256i;

    /// Runs a task's tiles compiled for this kernel's instructions.
    fn run(self, rows: Rows<'_, Self>)
    where
        Self: Tiling;
}

#[cfg(target_arch = "x86_64")]
impl<S: Step> Tiling for S {
    type Layout = S::Layout;
    type Lanes = [i32; 8];
    const GROUP: usize = GROUP;

    fn scratch() -> &'static std::thread::LocalKey<std::cell::RefCell<Scratch<[i32; 8]>>> {
        &SCRATCH
    }

    #[inline(always)]
    fn tile<const P: usize>(
        self,
        simd: pulp::x86::V3,
        panels: [&[[i32; 8]]; P],
        group: &[[i32; 8]],
        out: Out<'_>,
    ) {
        tile_256(self, simd, panels, group, out)
    }

    fn run(self, rows: Rows<'_, Self>) {
        Step::run(self, rows)
    }
}

#[cfg(target_arch = "x86_64")]
/// AVX2's `vpmaddwd` on bytes widened to `i16`, then `vpaddd`.
#[derive(Clone, Copy)]
struct Madd;

#[cfg(target_arch = "x86_64")]
impl Step for Madd {
    type Layout = Widened;

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
    type Layout = Raw;

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
/// AVX-512 VNNI's `vpdpbusd` on 512-bit vectors: panels of 16 features, groups of 12 rows.
#[derive(Clone, Copy)]
struct Wide(Vnni512);

#[cfg(target_arch = "x86_64")]
impl Tiling for Wide {
    type Layout = Raw;
    type Lanes = Lanes16;
    const GROUP: usize = WIDE_GROUP;

    fn scratch() -> &'static std::thread::LocalKey<std::cell::RefCell<Scratch<Lanes16>>> {
        &WIDE_SCRATCH
    }

    #[inline(always)]
    fn tile<const P: usize>(
        self,
        _: pulp::x86::V3,
        panels: [&[Lanes16]; P],
        group: &[Lanes16],
        mut out: Out<'_>,
    ) {
        let vnni = self.0;
        let zero = vnni.zero();
        let mut acc = [[zero; WIDE_GROUP]; P];
        let panels: [&[Lanes16]; P] = array_of(&[][..], |i| &panels[i][..group.len()]);
        for (q, step) in group.iter().enumerate() {
            let lanes: [__m512i; P] = array_of(zero, |i| vnni.load(&panels[i][q]));
            for n in 0..WIDE_GROUP {
                // U's bytes are the unsigned operand, Y's the signed one.
                let u = vnni.broadcast(step.0[n]);
                for i in 0..P {
                    acc[i][n] = vnni.dot(acc[i][n], u, lanes[i]);
                }
            }
        }
        // Out of the registers by constant indices first: indexed by the loop below, which
        // the compiler does not unroll, the accumulators lived on the stack, stored after
        // every product (a block took 1.5 times as long, bench/results.md).
        let mut sums = [[Lanes16::default(); WIDE_GROUP]; P];
        for i in 0..P {
            for n in 0..WIDE_GROUP {
                sums[i][n] = vnni.lanes(acc[i][n]);
            }
        }
        for (i, panel) in sums.iter().enumerate() {
            for (n, sums) in panel.iter().enumerate() {
                out.put(n, i * 16, sums.0, |dst: &mut [i32; 16], first| {
                    *dst = if first {
                        sums.0
                    } else {
                        vnni.lanes(vnni.add(vnni.load(&Lanes16(*dst)), vnni.load(sums)))
                            .0
                    }
                });
            }
        }
    }

    fn run(self, rows: Rows<'_, Self>) {
        self.0.vectorize(rows)
    }
}

#[cfg(target_arch = "x86_64")]
impl<'a, E: StepLanes> Packed<'a, E> {
    /// Packs on all threads (panel by panel, group by group): serial, the packing was a part
    /// of the block no other core could share.
    fn new<T: Tiling<Lanes = E>>(
        simd: pulp::x86::V3,
        scratch: &'a mut Scratch<E>,
        u: &[u8],
        y: &[i8],
        a: usize,
        r: usize,
    ) -> Self {
        let layout = T::Layout::default();
        let steps = r.div_ceil(<T::Layout as Layout>::K);
        // Each operand's groups of rows (Y's panels of features, U's groups of rows) packed in
        // parallel, `steps` steps each.
        fn pack_all<L: Layout, B: Byte + Sync, E: StepLanes>(
            layout: L,
            simd: pulp::x86::V3,
            out: &mut [E],
            rows: &[B],
            group: usize,
            r: usize,
            steps: usize,
        ) {
            out.par_chunks_exact_mut(steps)
                .zip(rows.par_chunks(group * r))
                .for_each(|(out, rows)| {
                    let pack = Pack {
                        layout,
                        simd,
                        rows,
                        r,
                        out,
                    };
                    pulp::Simd::vectorize(simd, pack)
                });
        }
        let packed_y = room(&mut scratch.y, a.div_ceil(T::PANEL) * steps);
        pack_all(layout, simd, packed_y, y, T::PANEL, r, steps);
        let packed_u = room(&mut scratch.u, (a + 1).div_ceil(T::GROUP) * steps);
        pack_all(layout, simd, packed_u, u, T::GROUP, r, steps);
        Packed {
            y: packed_y,
            u: packed_u,
            steps,
        }
    }
}

#[cfg(target_arch = "x86_64")]
/// The first feature of the tiles of row group `g` (of `a` features; `group` rows a group,
/// `panel` features a panel): the panel holding its first row's diagonal, or 0 for the group
/// holding U's last row, which wants every feature.
fn first_feature(g: usize, a: usize, group: usize, panel: usize) -> usize {
    let s = g * group;
    if s + group > a { 0 } else { s / panel * panel }
}

#[cfg(target_arch = "x86_64")]
/// Where the tasks' groups of rows start, and the end (`groups`): consecutive groups whose
/// work (features from [`first_feature`] on) adds up to about an equal share each. The
/// top rows of the triangle are the longest, so equal numbers of rows would not do.
fn task_starts(groups: usize, a: usize, group: usize, panel: usize) -> Vec<usize> {
    equal_work_starts(groups, TASKS, |g| {
        (a - first_feature(g, a, group, panel)) + panel
    })
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

/// The same product by AVX-512 VNNI's 512-bit `vpdpbusd`, or `false` (and `product` untouched)
/// where this CPU lacks it.
#[cfg(target_arch = "x86_64")]
pub(crate) fn multiply_wide(u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) -> bool {
    match (pulp::x86::V3::try_new(), Vnni512::try_new()) {
        (Some(simd), Some(vnni)) => multiply_by(Wide(vnni), simd, u, y, a, r, product),
        _ => false,
    }
}

#[cfg(target_arch = "x86_64")]
fn multiply_by<T: Tiling>(
    tiling: T,
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
    let groups = (a + 1).div_ceil(T::GROUP);
    let starts = task_starts(groups, a, T::GROUP, T::PANEL);
    let run = |scratch: &mut Scratch<T::Lanes>| {
        let packed = Packed::new::<T>(simd, scratch, &u[..(a + 1) * r], &y[..a * r], a, r);
        // Each task's rows of G: groups `starts[i]..starts[i + 1]`.
        let tasks = rows_of_tasks(&mut *product, &starts, T::GROUP, a);
        tasks.into_par_iter().for_each(|(first_group, rows)| {
            // Not zeroed: the first slice's tiles store their sums, the others add theirs.
            tiling.run(Rows {
                tiling,
                simd,
                packed: &packed,
                first_group,
                a,
                product: rows,
            })
        });
    };
    with_scratch(T::scratch(), run);
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

/// Whether [`multiply_wide`] runs on this CPU.
#[cfg(target_arch = "x86_64")]
pub(crate) fn wide_available() -> bool {
    available() && Vnni512::try_new().is_some()
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

/// Elsewhere the kernels do not exist.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn wide_available() -> bool {
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

/// Elsewhere the kernel does not exist: always `false`.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn multiply_wide(_: &[u8], _: &[i8], _: usize, _: usize, _: &mut [i32]) -> bool {
    false
}

/// Rows of G from group `first_group` on (as many as `product` holds), over every slice of `k`.
#[cfg(target_arch = "x86_64")]
struct Rows<'a, T: Tiling> {
    tiling: T,
    simd: pulp::x86::V3,
    packed: &'a Packed<'a, T::Lanes>,
    first_group: usize,
    a: usize,
    product: &'a mut [i32],
}

#[cfg(target_arch = "x86_64")]
impl<T: Tiling> pulp::WithSimd for Rows<'_, T> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
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
impl WithVnni512 for Rows<'_, Wide> {
    type Output = ();

    #[inline(always)]
    fn with_vnni512(self, _: Vnni512) {
        self.tiles()
    }
}

#[cfg(target_arch = "x86_64")]
impl<T: Tiling> Rows<'_, T> {
    #[inline(always)]
    fn tiles(self) {
        let Rows {
            tiling,
            simd,
            packed,
            first_group,
            a,
            product,
        } = self;
        let steps = packed.steps;
        let rows = product.len() / a;
        let per_slice = <T::Layout as Layout>::SLICE / <T::Layout as Layout>::K;
        for q in (0..steps).step_by(per_slice) {
            let len = per_slice.min(steps - q);
            for (i, s) in (0..rows).step_by(T::GROUP).enumerate() {
                let g = first_group + i;
                let group = &packed.u[g * steps + q..][..len];
                let height = (rows - s).min(T::GROUP);
                let panel = |p: usize| &packed.y[p * steps + q..][..len];
                let mut t = first_feature(g, a, T::GROUP, T::PANEL);
                while t < a {
                    let out = Out {
                        product: &mut product[s * a..(s + height) * a],
                        a,
                        t,
                        first: q == 0,
                    };
                    let p = t / T::PANEL;
                    if a - t > T::PANEL {
                        let panels = [panel(p), panel(p + 1)];
                        tiling.tile::<TILE_PANELS>(simd, panels, group, out);
                        t += TILE_PANELS * T::PANEL;
                    } else {
                        tiling.tile::<1>(simd, [panel(p)], group, out);
                        t += T::PANEL;
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

#[cfg(target_arch = "x86_64")]
impl Out<'_> {
    /// Puts `W` sums into row `n` (of the group) at features `t + from..`: `whole` writes a
    /// whole vector's worth (told whether it is the first slice); near the end of the row, past
    /// `a`, `sums` are put one by one, those past `a` dropped. Rows past the
    /// group's height are not stored. Wrapping is the exact sum's: the caller keeps it within
    /// `i32`.
    #[inline(always)]
    fn put<const W: usize>(
        &mut self,
        n: usize,
        from: usize,
        sums: [i32; W],
        whole: impl FnOnce(&mut [i32; W], bool),
    ) {
        let Some(row) = self.product.chunks_exact_mut(self.a).nth(n) else {
            return;
        };
        let from = self.t + from;
        if let Some(dst) = row.get_mut(from..from + W) {
            whole(dst.try_into().expect("a vector's width"), self.first);
        } else {
            for (g, v) in row[from..].iter_mut().zip(sums) {
                *g = if self.first { v } else { g.wrapping_add(v) };
            }
        }
    }
}

/// [`Tiling::tile`] on 256-bit vectors: `GROUP` rows by the P panels' 8·P features.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile_256<S: Step, const P: usize>(
    step: S,
    simd: pulp::x86::V3,
    panels: [&[[i32; 8]]; P],
    group: &[[i32; 8]],
    mut out: Out<'_>,
) {
    let zero = simd.avx._mm256_setzero_si256();
    let mut acc = [[zero; GROUP]; P];
    let panels: [&[[i32; 8]]; P] = array_of(&[][..], |i| &panels[i][..group.len()]);
    for (q, steps) in group.iter().enumerate() {
        let lanes: [__m256i; P] = array_of(zero, |i| pulp::cast(panels[i][q]));
        for (n, &u) in steps[..GROUP].iter().enumerate() {
            let u = simd.avx._mm256_set1_epi32(u);
            for i in 0..P {
                acc[i][n] = step.multiply_add(simd, acc[i][n], lanes[i], u);
            }
        }
    }
    for (i, panel) in acc.iter().enumerate() {
        for (n, &sums) in panel.iter().enumerate() {
            out.put(n, i * 8, pulp::cast(sums), |dst: &mut [i32; 8], first| {
                *dst = if first {
                    pulp::cast(sums)
                } else {
                    pulp::cast(simd.avx2._mm256_add_epi32(pulp::cast(*dst), sums))
                }
            });
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
        for (group, panel) in [(GROUP, 8), (WIDE_GROUP, 16)] {
            for a in [1usize, 5, 6, 7, 12, 13, 50, 200, 784, 2000] {
                let groups = (a + 1).div_ceil(group);
                let starts = task_starts(groups, a, group, panel);
                let shape = format!("a = {a}, {group} × {panel} tiles");
                assert_eq!((starts[0], *starts.last().unwrap()), (0, groups), "{shape}");
                assert!(
                    starts.windows(2).all(|w| w[0] < w[1]),
                    "{shape}: {starts:?}"
                );
                assert!(starts.len() - 1 <= TASKS, "{shape}: {starts:?}");
                let work = |g: usize| (a - first_feature(g, a, group, panel)) + panel;
                let total: usize = (0..groups).map(work).sum();
                let largest = (0..groups).map(work).max().unwrap();
                for w in starts.windows(2) {
                    let task: usize = (w[0]..w[1]).map(work).sum();
                    assert!(
                        task <= total.div_ceil(TASKS) + largest,
                        "{shape}: groups {}..{} take {task} of {total}",
                        w[0],
                        w[1]
                    );
                }
            }
        }
    }
}
