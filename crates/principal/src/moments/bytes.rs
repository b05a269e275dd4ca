//! The byte path: exact block products of integer data whose every feature spans at most 256
//! consecutive values (8-bit pixels, counts, ratings), as bytes, `u8 × i8` summed in `i32` by
//! an exact [`ByteProduct`]. Used for dense pieces of wide rows and for the ordered path's
//! blocks (`moments::ordered`); `moments::chunk` decides where. The blocks take a quarter of
//! the bytes of f32 blocks and are laid out feature by feature, the layout the integer kernels
//! pack fastest.
//!
//! With `y = x − c` (`c` = the feature's least value + 128, so `y ∈ [−128, 127]`) and
//! `u = y + 128 ∈ [0, 255]`, one product of `[u; 1]` (a row of ones below) with `y` gives
//! `G[s][t] = Σ u_s y_t = Σ y_s y_t + 128 Σ y_t` and, in its last row, `Σ y_t`. Every sum of a
//! block of at most [`BLOCK_ROWS`] rows stays below 2³¹ (|u·y| ≤ 255·128), so it is exact.

use faer::{MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::kernel::blocks::prefetch;
use crate::kernel::bytes::ByteProduct;
use crate::kernel::parallel::join;
use crate::kernel::products::RankTwoUpdate;
use crate::kernel::scan::{IntegerRange, is_integer};
use crate::kernel::simd::{Kernel, array_of, dispatch};
use crate::moments::integer::centre_shifted_sums;
use crate::moments::workspace::{ByteBuffers, Workspace};
use crate::real::Real;

/// Rows per block: far below the 65,793 at which an `i32` sum could overflow; fewer blocks to
/// add than 1,024 rows, smaller corners of the ordered path than 4,096.
pub(crate) const BLOCK_ROWS: usize = 2048;

/// Rows per block of bytes as stored: not a multiple of 1,024, so that the block's features,
/// `r` bytes apart, do not all fall into the same few cache sets as the transpose writes them.
const STORED_BLOCK_ROWS: usize = BLOCK_ROWS - 64;

/// Widest range of a feature's values that fits a byte.
const BYTE_SPAN: f64 = 255.0;

/// The byte blocks of one chunk: their shift, and the product that takes them.
pub(crate) struct ByteBlocks<T, P> {
    product: P,
    /// Each feature's shift `c` (128, or its least value + 128), in the features' own order.
    shift: Vec<f64>,
    /// The same in the data's type (exact).
    shift_as_data: Vec<T>,
}

impl<T: Stored, P: ByteProduct> ByteBlocks<T, P> {
    /// Blocks of `d` features with least values `lo` and greatest `hi`, or `None` when a
    /// feature spans more than 256 values, a shift is not exact in `T` (f32 data beyond 2²⁴),
    /// or the product is not available here.
    pub(crate) fn for_range(lo: &[f64], hi: &[f64]) -> Option<Self> {
        if lo.iter().zip(hi).any(|(l, h)| h - l > BYTE_SPAN) {
            return None;
        }
        // 128 for values within 0..=255 (bytes: `u = x`, and exact in `u8`), else the least
        // value + 128.
        let shift: Vec<f64> = lo
            .iter()
            .zip(hi)
            .map(|(&l, &h)| {
                if l >= 0.0 && h <= 255.0 {
                    128.0
                } else {
                    l + 128.0
                }
            })
            .collect();
        let shift_as_data: Vec<T> = shift
            .iter()
            .map(|&c| T::exactly(c))
            .collect::<Option<_>>()?;
        let product = P::available()?;
        Some(ByteBlocks {
            product,
            shift,
            shift_as_data,
        })
    }

    /// Each feature's shift `c`, in the features' own order: `y = x − c` is what the blocks
    /// hold and what [`Self::add_block`]'s sums are of.
    pub(crate) fn shift(&self) -> &[f64] {
        &self.shift
    }

    /// `raw += Σ(y + e)(y + e)ᵀ` (lower triangle, features in the order `columns`) of the
    /// listed rows of `x`, `y = x − c` with `c` = [`Self::shift`]; returns `Σy` in that order.
    /// With `e` = `c` in the order `columns` that is `Σxxᵀ` (the ordered path's raw sums, rows
    /// zero outside the listed features); with `e = c − m`, the sums of `x − m`. The block's
    /// bytes and product go in `buffers`.
    pub(crate) fn add_block(
        &self,
        buffers: &mut ByteBuffers,
        x: MatRef<'_, T>,
        rows: &[u32],
        columns: &[u32],
        e: &[f64],
        raw: MatMut<'_, f64>,
        par: Par,
    ) -> Vec<f64> {
        let (a, r) = (columns.len(), rows.len());
        assert!(r <= BLOCK_ROWS && a <= x.ncols() && raw.nrows() == a);
        let (u_features, y) = block_buffers(buffers, a, r);
        gather_bytes(
            x,
            rows,
            columns,
            &self.shift_as_data,
            u_features.chunks_exact_mut(r).collect(),
            y.chunks_exact_mut(r).collect(),
            par,
        );
        multiply_and_add(&self.product, buffers, a, r, e, raw, par)
    }
}

/// The rest of a block once its bytes are in `buffers` (`u`: `a` features then the row of
/// ones, `y`: `a` features, `r` bytes each): `raw += Σ(y + e)(y + e)ᵀ` (lower triangle) from
/// their product by `product`; returns `Σy`.
fn multiply_and_add<P: ByteProduct>(
    product: &P,
    buffers: &mut ByteBuffers,
    a: usize,
    r: usize,
    e: &[f64],
    raw: MatMut<'_, f64>,
    par: Par,
) -> Vec<f64> {
    let ByteBuffers { u, y, product: g } = buffers;
    let g = &mut g[..(a + 1) * a];
    product.multiply(&u[..(a + 1) * r], &y[..a * r], a, r, g);
    let sums: Vec<f64> = g[a * a..].iter().map(|&s| f64::from(s)).collect();
    add_raw_block(raw, g, &sums, e, r as f64, par);
    sums
}

/// The `u` (its row of ones set) and `y` of a block of `a` features and `r` rows in `buffers`,
/// grown to the largest block and corner met (a corner at most D, as the f32 path's), feature
/// by feature: each feature's values over the block's rows contiguous, the layout the integer
/// kernels pack fastest (they interleave four consecutive rows).
fn block_buffers(buffers: &mut ByteBuffers, a: usize, r: usize) -> (&mut [u8], &mut [i8]) {
    let ByteBuffers { u, y, product } = buffers;
    grow(u, (a + 1) * r);
    grow(y, a * r);
    grow(product, (a + 1) * a);
    let (u_features, ones) = u[..(a + 1) * r].split_at_mut(a * r);
    ones.fill(1);
    (u_features, &mut y[..a * r])
}

/// Makes `buffer` at least `len` long (new elements 0).
fn grow<E: Copy + Default>(buffer: &mut Vec<E>, len: usize) {
    if buffer.len() < len {
        buffer.resize(len, E::default());
    }
}

/// Whether a chunk of `n` rows keeps every sum of [`byte_moments`] exact: |z| ≤ 128, so every
/// term stays under 2⁵³ up to 3·10¹⁰ rows.
pub(crate) fn sums_stay_exact(n: usize) -> bool {
    (n as f64) * 262_144.0 < 9_007_199_254_740_992.0
}

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` (into `ws.scatter`, zeroed) of a row-major
/// chunk of integers whose features' values (least `range.lo`, greatest `range.hi`) each span
/// at most 256, every row in the blocks' products of `bytes` (made for that range). The sums
/// are the integer path's, `Σzzᵀ` and `Σz` of `z = x − m` (`m` the midpoint shift), exact, and
/// so is its one rounding: the same bits.
pub(crate) fn byte_moments<T: Real, P: ByteProduct>(
    chunk: MatRef<'_, T>,
    range: &IntegerRange,
    bytes: &ByteBlocks<T, P>,
    ws: &mut Workspace,
) -> Vec<f64> {
    let n = chunk.nrows();
    let d = chunk.ncols();
    let (midpoint, _) = range.midpoint_shift();
    // Blocks hold `y = x − c`; adding with `c − m` for the shift gives `Σzzᵀ`, `z = y + c − m`.
    let delta: Vec<f64> = bytes
        .shift()
        .iter()
        .zip(&midpoint)
        .map(|(c, m)| c - m)
        .collect();
    let columns: Vec<u32> = (0..d as u32).collect();
    let mut sums = vec![0.0f64; d];
    for start in (0..n).step_by(BLOCK_ROWS) {
        let rows: Vec<u32> = (start as u32..n.min(start + BLOCK_ROWS) as u32).collect();
        let r = rows.len() as f64;
        let block = bytes.add_block(
            &mut ws.bytes,
            chunk,
            &rows,
            &columns,
            &delta,
            ws.scatter.as_mut(),
            ws.par,
        );
        for ((sum, s), dc) in sums.iter_mut().zip(&block).zip(&delta) {
            *sum += s + r * dc;
        }
    }
    centre_shifted_sums(ws.scatter.as_mut(), &sums, &midpoint, n)
}

/// [`byte_moments`] of a row-major chunk of bytes as stored (`u8`, every feature's values in
/// 0..=255), every row in the blocks' products of `product`: the same exact sums and the same
/// one rounding as for those values in `f32` or `f64`, so the same bits. Bytes need no scan
/// for the blocks' shift (`y = x − 128` whatever the range, and `u = y + 128` is `x` itself):
/// a block is one transposing pass over its rows. The range is still scanned, in bytes (a
/// quarter of an `f32` scan's reads), for the midpoint shift that fixes the rounding.
pub(crate) fn stored_byte_moments<P: ByteProduct>(
    chunk: MatRef<'_, u8>,
    product: &P,
    ws: &mut Workspace,
) -> Vec<f64> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    let par = ws.par;
    let (midpoint, _) = byte_range(chunk, par).midpoint_shift();
    // Blocks hold `y = x − 128`; adding with `128 − m` gives `Σzzᵀ`, `z = x − m`, exactly as
    // `byte_moments` does with its own shift.
    let delta: Vec<f64> = midpoint.iter().map(|m| 128.0 - m).collect();
    let mut sums = vec![0.0f64; d];
    let block = STORED_BLOCK_ROWS;
    for start in (0..n).step_by(block) {
        let r = block.min(n - start);
        let (u, y) = block_buffers(&mut ws.bytes, d, r);
        transpose_bytes(chunk.subrows(start, r), u, y, par);
        let block = multiply_and_add(
            product,
            &mut ws.bytes,
            d,
            r,
            &delta,
            ws.scatter.as_mut(),
            par,
        );
        for ((sum, s), dc) in sums.iter_mut().zip(&block).zip(&delta) {
            *sum += s + r as f64 * dc;
        }
    }
    centre_shifted_sums(ws.scatter.as_mut(), &sums, &midpoint, n)
}

/// Each feature's least and greatest value in a row-major chunk of bytes (at least one row).
/// Two halves of the rows on two threads when `par` allows and the chunk is large.
pub(crate) fn byte_range(x: MatRef<'_, u8>, par: Par) -> IntegerRange {
    let n = x.nrows();
    if n >= 1024 {
        let half = n / 2;
        let (mut top, bottom) = join(
            par,
            || byte_range(x.subrows(0, half), par),
            || byte_range(x.subrows(half, n - half), par),
        );
        top.widen(&bottom);
        return top;
    }
    let (lo, hi) = dispatch(ByteRange { x });
    IntegerRange {
        lo: lo.into_iter().map(f64::from).collect(),
        hi: hi.into_iter().map(f64::from).collect(),
    }
}

struct ByteRange<'a> {
    x: MatRef<'a, u8>,
}

impl Kernel for ByteRange<'_> {
    type Output = (Vec<u8>, Vec<u8>);
    #[inline(always)]
    fn run(self) -> (Vec<u8>, Vec<u8>) {
        let d = self.x.ncols();
        let (mut lo, mut hi) = (vec![u8::MAX; d], vec![0u8; d]);
        for i in 0..self.x.nrows() {
            let row = self.x.row(i).try_as_row_major().expect("row-major");
            for ((l, h), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(row.as_slice()) {
                *l = (*l).min(v);
                *h = (*h).max(v);
            }
        }
        (lo, hi)
    }
}

/// Writes `u[t·r + k] = x[k, t]` and `y[t·r + k] = x[k, t] − 128` (as `i8`) for every row `k`
/// (of `r`) and feature `t` of a row-major block of bytes: its transpose, feature by feature.
/// The features in two halves on two threads when `par` allows and the block is large (each
/// thread then writes one contiguous half of `u` and of `y`).
fn transpose_bytes(x: MatRef<'_, u8>, u: &mut [u8], y: &mut [i8], par: Par) {
    let (r, d) = (x.nrows(), x.ncols());
    if r * d >= 1 << 18 && d >= 64 {
        // A multiple of 32: whole tiles on both sides.
        let half = d / 64 * 32;
        let (u_left, u_right) = u.split_at_mut(half * r);
        let (y_left, y_right) = y.split_at_mut(half * r);
        join(
            par,
            || transpose_bytes(x.subcols(0, half), u_left, y_left, par),
            || transpose_bytes(x.subcols(half, d - half), u_right, y_right, par),
        );
        return;
    }
    dispatch(TransposeBytes {
        x,
        u,
        y,
        vectors: true,
    })
}

/// The transpose of a block of bytes: in tiles of 16 rows by 32 features in AVX2 registers
/// where `vectors` asks for them and the CPU has AVX2, else in tiles of 8 × 8 in words (the
/// portable way); the edges the tiles leave byte by byte.
struct TransposeBytes<'a, 'b> {
    x: MatRef<'a, u8>,
    u: &'b mut [u8],
    y: &'b mut [i8],
    vectors: bool,
}

/// Rows taken at a time: each feature's run of them is written whole (half a cache line)
/// before the next feature's, and their bytes stay in the first-level cache.
const BAND: usize = 32;

impl Kernel for TransposeBytes<'_, '_> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let TransposeBytes { x, u, y, vectors } = self;
        let (r, d) = (x.nrows(), x.ncols());
        let (u, y) = (&mut u[..r * d], &mut y[..r * d]);
        let rows: Vec<&[u8]> = (0..r)
            .map(|k| x.row(k).try_as_row_major().expect("row-major").as_slice())
            .collect();
        #[cfg(target_arch = "x86_64")]
        let avx2 = pulp::x86::V3::try_new().filter(|_| vectors);
        #[cfg(not(target_arch = "x86_64"))]
        let _ = vectors;
        for band in (0..r).step_by(BAND) {
            let end = r.min(band + BAND);
            // The rows and features the tiles cover.
            let (mut tiled_rows, mut tiled) = (band, 0);
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = avx2 {
                (tiled_rows, tiled) = (band + (end - band) / 16 * 16, d / 32 * 32);
                avx2_tiles(simd, &rows[band..tiled_rows], band, tiled, r, u, y);
            }
            if tiled == 0 {
                (tiled_rows, tiled) = (band + (end - band) / 8 * 8, d / 8 * 8);
                word_tiles(&rows[band..tiled_rows], band, tiled, r, u, y);
            }
            for (k, values) in rows.iter().enumerate().take(end).skip(band) {
                let first = if k < tiled_rows { tiled } else { 0 };
                for (j, &b) in values.iter().enumerate().skip(first) {
                    u[j * r + k] = b;
                    y[j * r + k] = (b ^ 0x80) as i8;
                }
            }
        }
    }
}

/// The first `features` features (a multiple of 32) of `rows` (a multiple of 16: the block's
/// rows from `first` on, of `r`) into `u` and `y`, by tiles of 16 rows × 32 features in AVX2
/// registers.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx2_tiles(
    simd: pulp::x86::V3,
    rows: &[&[u8]],
    first: usize,
    features: usize,
    r: usize,
    u: &mut [u8],
    y: &mut [i8],
) {
    use crate::kernel::simd::transpose_16x16_bytes_twice;
    let flip = simd.avx._mm256_set1_epi8(-128);
    for j in (0..features).step_by(32) {
        for (tile, rows) in rows.chunks_exact(16).enumerate() {
            let k = first + 16 * tile;
            let v = array_of(flip, |i| {
                let bytes: [u8; 32] = rows[i][j..j + 32].try_into().expect("32 bytes");
                pulp::cast(bytes)
            });
            for (c, t) in transpose_16x16_bytes_twice(simd, v).into_iter().enumerate() {
                let bytes: [u8; 32] = pulp::cast(t);
                let shifted: [i8; 32] = pulp::cast(simd.avx2._mm256_xor_si256(t, flip));
                let (left, right) = ((j + c) * r + k, (j + 16 + c) * r + k);
                u[left..left + 16].copy_from_slice(&bytes[..16]);
                u[right..right + 16].copy_from_slice(&bytes[16..]);
                y[left..left + 16].copy_from_slice(&shifted[..16]);
                y[right..right + 16].copy_from_slice(&shifted[16..]);
            }
        }
    }
}

/// The first `features` features (a multiple of 8) of `rows` (a multiple of 8: the block's rows
/// from `first` on, of `r`) into `u` and `y`, by tiles of 8 × 8 bytes in words.
#[inline(always)]
fn word_tiles(rows: &[&[u8]], first: usize, features: usize, r: usize, u: &mut [u8], y: &mut [i8]) {
    for j in (0..features).step_by(8) {
        for (tile, rows) in rows.chunks_exact(8).enumerate() {
            let k = first + 8 * tile;
            let mut w: [u64; 8] = array_of(0, |i| {
                u64::from_le_bytes(rows[i][j..j + 8].try_into().expect("8 bytes"))
            });
            transpose_8x8_bytes(&mut w);
            for (c, w) in w.iter().enumerate() {
                let at = (j + c) * r + k;
                let shifted = (w ^ 0x8080_8080_8080_8080).to_le_bytes();
                u[at..at + 8].copy_from_slice(&w.to_le_bytes());
                for (dst, &b) in y[at..at + 8].iter_mut().zip(&shifted) {
                    *dst = b as i8;
                }
            }
        }
    }
}

/// The transpose of an 8 × 8 matrix of bytes held as eight words, row `i` in `w[i]` (column `c`
/// its byte `c`, little-endian): after it, `w[c]` holds column `c`. Three rounds of swapping
/// the off-diagonal halves of 2 × 2 blocks of 1, 2, then 4 bytes.
#[inline(always)]
fn transpose_8x8_bytes(w: &mut [u64; 8]) {
    for (shift, mask, pairs) in [
        (
            8,
            0x00FF_00FF_00FF_00FFu64,
            [(0, 1), (2, 3), (4, 5), (6, 7)],
        ),
        (16, 0x0000_FFFF_0000_FFFF, [(0, 2), (1, 3), (4, 6), (5, 7)]),
        (32, 0x0000_0000_FFFF_FFFF, [(0, 4), (1, 5), (2, 6), (3, 7)]),
    ] {
        for (a, b) in pairs {
            let t = ((w[a] >> shift) ^ w[b]) & mask;
            w[b] ^= t;
            w[a] ^= t << shift;
        }
    }
}

/// A value as the exact integer paths read it from a row-major chunk: `f32` or `f64` rows, or
/// bytes as stored (`u8`), which then need neither widening nor a scan for integers. Crate
/// private; its methods are named apart from [`Real`]'s, which every `Real` also has.
pub(crate) trait Stored: Copy + Send + Sync + 'static {
    /// The value as `f64` (exact).
    fn widen(self) -> f64;
    /// `value` in this type, when it is exact in it.
    fn exactly(value: f64) -> Option<Self>;
    /// All ones unless the value is zero (±0; a NaN counts as non-zero).
    fn nonzero(self) -> u32;
    /// Whether the value is an integer (a byte always is).
    fn is_whole(self) -> bool;
    /// `self − shift` as a byte, two's complement, when it is an integer in [−128, 127].
    fn byte_after(self, shift: Self) -> i8;
    /// Each feature's least and greatest value of row-major rows (at least one), or `None`
    /// when one is not an integer.
    fn integer_range(rows: MatRef<'_, Self>, par: Par) -> Option<IntegerRange>;
}

impl<T: Real> Stored for T {
    #[inline(always)]
    fn widen(self) -> f64 {
        self.to_f64()
    }
    fn exactly(value: f64) -> Option<Self> {
        let t = T::from_f64(value);
        (t.to_f64() == value).then_some(t)
    }
    #[inline(always)]
    fn nonzero(self) -> u32 {
        self.nonzero_mask()
    }
    #[inline(always)]
    fn is_whole(self) -> bool {
        is_integer(self.to_f64())
    }
    #[inline(always)]
    fn byte_after(self, shift: Self) -> i8 {
        self.low_byte(shift)
    }
    fn integer_range(rows: MatRef<'_, Self>, par: Par) -> Option<IntegerRange> {
        IntegerRange::scan(rows, par)
    }
}

impl Stored for u8 {
    #[inline(always)]
    fn widen(self) -> f64 {
        f64::from(self)
    }
    fn exactly(value: f64) -> Option<Self> {
        (0.0..=255.0)
            .contains(&value)
            .then_some(value as u8)
            .filter(|&b| f64::from(b) == value)
    }
    #[inline(always)]
    fn nonzero(self) -> u32 {
        u32::from(self != 0).wrapping_neg()
    }
    #[inline(always)]
    fn is_whole(self) -> bool {
        true
    }
    #[inline(always)]
    fn byte_after(self, shift: Self) -> i8 {
        self.wrapping_sub(shift) as i8
    }
    fn integer_range(rows: MatRef<'_, Self>, par: Par) -> Option<IntegerRange> {
        Some(byte_range(rows, par))
    }
}

/// Writes `y = x[rows[k], columns[t]] − shift[columns[t]]` as `i8` into `y[t][k]` and
/// `u = y + 128` as `u8` into `u[t][k]` (`u[t]`, `y[t]`: feature `t`'s part of the block, one
/// byte per listed row). Two halves of the rows on two threads when `par` allows and the block
/// is large.
fn gather_bytes<T: Stored>(
    x: MatRef<'_, T>,
    rows: &[u32],
    columns: &[u32],
    shift: &[T],
    u: Vec<&mut [u8]>,
    y: Vec<&mut [i8]>,
    par: Par,
) {
    if rows.len() >= 512 {
        let half = rows.len() / 2;
        let (u_left, u_right): (Vec<_>, Vec<_>) =
            u.into_iter().map(|f| f.split_at_mut(half)).unzip();
        let (y_left, y_right): (Vec<_>, Vec<_>) =
            y.into_iter().map(|f| f.split_at_mut(half)).unzip();
        join(
            par,
            || gather_bytes(x, &rows[..half], columns, shift, u_left, y_left, par),
            || gather_bytes(x, &rows[half..], columns, shift, u_right, y_right, par),
        );
        return;
    }
    dispatch(GatherBytes {
        x,
        rows,
        columns,
        shift,
        u,
        y,
    })
}

/// Rows staged at a time: their bytes stay in the first-level cache while they are transposed.
const STAGED_ROWS: usize = 32;

struct GatherBytes<'a, 'b, T> {
    x: MatRef<'a, T>,
    rows: &'a [u32],
    columns: &'a [u32],
    shift: &'a [T],
    u: Vec<&'b mut [u8]>,
    y: Vec<&'b mut [i8]>,
}

impl<T: Stored> Kernel for GatherBytes<'_, '_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let GatherBytes {
            x,
            rows,
            columns,
            shift,
            mut u,
            mut y,
        } = self;
        let d = x.ncols();
        // The group's rows as `u = x − c + 128` bytes, row-major, then their transpose (every
        // feature's run of the group's rows, `u` and `y = u − 128`) by `TransposeBytes`' tiles
        // instead of one store per byte.
        let mut staged = vec![0u8; STAGED_ROWS * d];
        let mut by_feature_u = vec![0u8; d * STAGED_ROWS];
        let mut by_feature_y = vec![0i8; d * STAGED_ROWS];
        let row_values = |row: u32| {
            x.row(row as usize)
                .try_as_row_major()
                .expect("row-major")
                .as_slice()
        };
        for (group, start) in rows.chunks(STAGED_ROWS).zip((0..).step_by(STAGED_ROWS)) {
            let len = group.len();
            // Each row read whole (a sequential read the prefetcher follows), as bytes.
            for (k, (&row, out)) in group.iter().zip(staged.chunks_exact_mut(d)).enumerate() {
                // Rows are taken out of file order: the next one's lines are asked for now
                // (8% less CPU for the fit alone of Fashion-MNIST's f32 rows under the AVX2
                // proxy, bench/results.md).
                if let Some(&next) = rows.get(start + k + 1) {
                    prefetch(row_values(next));
                }
                let values = row_values(row);
                // `x − c` is an exact integer in [−128, 127]: the features' ranges were
                // checked, and `c` is exact in the data's type.
                for ((s, &v), &c) in out.iter_mut().zip(values).zip(shift) {
                    *s = (v.byte_after(c) as u8) ^ 0x80;
                }
            }
            TransposeBytes {
                x: MatRef::from_row_major_slice(&staged[..len * d], len, d),
                u: &mut by_feature_u,
                y: &mut by_feature_y,
                vectors: true,
            }
            .run();
            // ...then each listed feature's run copied whole.
            let end = start + len;
            for ((u, y), &j) in u.iter_mut().zip(y.iter_mut()).zip(columns) {
                let from = j as usize * len;
                u[start..end].copy_from_slice(&by_feature_u[from..from + len]);
                y[start..end].copy_from_slice(&by_feature_y[from..from + len]);
            }
        }
    }
}

/// `raw += Σ(y + e)(y + e)ᵀ` (lower triangle) of one block from its product `G` (`(a + 1) × a`,
/// row-major) and the sums `s = Σy` over `r` rows. With `Σyyᵀ = G − 128·1sᵀ` read by rows
/// (`G[s][t]`, `t ≥ s`, is contiguous), column `s` of the triangle gains
/// `G[s][t] + s_t (e_s − 128) + e_t (s_s + r e_s)`, every term an exact integer. By columns,
/// on all threads if `par` says so.
fn add_raw_block(raw: MatMut<'_, f64>, product: &[i32], sums: &[f64], e: &[f64], r: f64, par: Par) {
    let a = raw.ncols();
    let column = |(s, dst): (usize, faer::ColMut<'_, f64>)| {
        let dst = dst
            .try_as_col_major_mut()
            .expect("columns of a Mat are contiguous");
        dispatch(RankTwoUpdate {
            dst: &mut dst.as_slice_mut()[s..],
            a: &sums[s..],
            alpha: e[s] - 128.0,
            b: &e[s..],
            beta: sums[s] + r * e[s],
            plus: Some(&product[s * a + s..(s + 1) * a]),
        })
    };
    if par.degree() > 1 {
        raw.par_col_iter_mut().enumerate().for_each(column);
    } else {
        raw.col_iter_mut().enumerate().for_each(column);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel::bytes::{
        AmxBytes, GemmBytes, MaddBytes, ReferenceBytes, VnniBytes, WideBytes,
        hardware_product_available,
    };
    use crate::moments::integer::{integer_moments, small_integer_range};
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Six tests of one check `fn(what: &str, which: Which)`: `$reference` runs it with the
    /// portable reference product on every machine; `$hardware` with rten-gemm's product, and
    /// is ignored, with the reason in `cargo test`'s summary, where the build script found
    /// that product inexact on this CPU (no AVX-512 VNNI: the byte path is not taken there);
    /// `$avx2` with the AVX2 `vpmaddwd` product, ignored where there is no AVX2; `$vnni` and
    /// `$vnni512` with AVX-VNNI's 256-bit and AVX-512 VNNI's 512-bit `vpdpbusd`, ignored where
    /// the CPU lacks them; `$amx` with the AMX tile product, ignored where the process has no
    /// tiles.
    macro_rules! product_tests {
        ($check:ident: $reference:ident, $hardware:ident, $avx2:ident, $vnni:ident, $vnni512:ident,
            $amx:ident) => {
            /// With the AMX tile product; ignored, with the reason, where the build found no
            /// tiles.
            #[test]
            #[cfg_attr(
                not(amx_byte_product),
                ignore = "no AMX-INT8 tiles in this process (no AMX on this CPU, or Linux \
                          refused the tile state), so the tdpbusd byte product cannot run here"
            )]
            fn $amx() {
                $check(
                    stringify!($amx),
                    $crate::moments::bytes::tests::Which::Amx,
                );
            }

            /// With the AVX2 `vpmaddwd` product; ignored, with the reason, where the build
            /// found no AVX2.
            #[test]
            #[cfg_attr(
                not(avx2_byte_product),
                ignore = "this CPU has no AVX2, so the vpmaddwd byte product cannot run here"
            )]
            fn $avx2() {
                $check(
                    stringify!($avx2),
                    $crate::moments::bytes::tests::Which::Avx2,
                );
            }

            /// With AVX-VNNI's `vpdpbusd` product; ignored, with the reason, where the build
            /// found no AVX-VNNI.
            #[test]
            #[cfg_attr(
                not(avx_vnni_byte_product),
                ignore = "this CPU has no AVX-VNNI, so the 256-bit vpdpbusd byte product \
                          cannot run here"
            )]
            fn $vnni() {
                $check(
                    stringify!($vnni),
                    $crate::moments::bytes::tests::Which::AvxVnni,
                );
            }

            /// With AVX-512 VNNI's `vpdpbusd` on 512-bit vectors; ignored, with the reason,
            /// where the build found no AVX-512 VNNI.
            #[test]
            #[cfg_attr(
                not(wide_vnni_byte_product),
                ignore = "this CPU has no AVX-512 VNNI, so the 512-bit vpdpbusd byte product \
                          cannot run here"
            )]
            fn $vnni512() {
                $check(
                    stringify!($vnni512),
                    $crate::moments::bytes::tests::Which::Avx512Vnni,
                );
            }

            #[test]
            fn $reference() {
                $check(
                    stringify!($reference),
                    $crate::moments::bytes::tests::Which::Reference,
                );
            }

            #[test]
            #[cfg_attr(
                not(exact_byte_gemm),
                ignore = "rten-gemm's u8×i8 product may saturate on this CPU (x86-64 without \
                          AVX-512 VNNI), or the build was cross-compiled, so the byte path \
                          does not use it here"
            )]
            fn $hardware() {
                assert!(
                    $crate::kernel::bytes::hardware_product_available(),
                    "the build found rten-gemm's byte product exact, this machine does not"
                );
                $check(
                    stringify!($hardware),
                    $crate::moments::bytes::tests::Which::Hardware,
                );
            }
        };
    }
    pub(crate) use product_tests;

    /// Which product a test runs with.
    #[derive(Clone, Copy)]
    pub(crate) enum Which {
        Reference,
        Hardware,
        Avx2,
        AvxVnni,
        Avx512Vnni,
        Amx,
    }

    /// A check to run with one byte product, chosen by [`Which::run`].
    pub(crate) trait ProductCheck {
        fn check<P: ByteProduct>(&mut self);
    }

    impl Which {
        /// Runs `check` with the product this names: the one place a `Which` becomes a type.
        pub(crate) fn run(self, check: &mut impl ProductCheck) {
            match self {
                Which::Reference => check.check::<ReferenceBytes>(),
                Which::Hardware => check.check::<GemmBytes>(),
                Which::Avx2 => check.check::<MaddBytes>(),
                Which::AvxVnni => check.check::<VnniBytes>(),
                Which::Avx512Vnni => check.check::<WideBytes>(),
                Which::Amx => check.check::<AmxBytes>(),
            }
        }
    }

    product_tests!(a_block_gives_exact_sums:
        a_block_gives_exact_sums_with_the_reference_product,
        a_block_gives_exact_sums_with_rten_gemms_product,
        a_block_gives_exact_sums_with_the_avx2_madd_product,
        a_block_gives_exact_sums_with_the_avx_vnni_product,
        a_block_gives_exact_sums_with_the_avx512_vnni_product,
        a_block_gives_exact_sums_with_the_amx_product);

    /// One block's `Σxxᵀ` (lower triangle) and `Σy` against sums of the rows one by one: all
    /// exact integers, so equal. Ranges that fill a byte, with offsets; the data in f32 and
    /// f64; one row, a few, and a whole block; all features or some, in a scrambled order.
    fn a_block_gives_exact_sums(_: &str, which: Which) {
        fn check<T: Real, P: ByteProduct>(
            lo: i32,
            n: usize,
            d: usize,
            take: usize,
            rng: &mut ChaCha8Rng,
        ) {
            // Row-major, as readers give it: the transpose of a column-major D × N matrix.
            let stored = Mat::<T>::from_fn(d, n, |_, _| {
                T::from_f64(f64::from(rng.random_range(lo..=lo + 255)))
            });
            let x = stored.transpose();
            let lo_of = vec![f64::from(lo); d];
            let hi_of = vec![f64::from(lo + 255); d];
            let bytes = ByteBlocks::<T, P>::for_range(&lo_of, &hi_of).expect("a byte each");
            let mut buffers = ByteBuffers::default();
            let mut columns: Vec<u32> = (0..d as u32).collect();
            for i in (1..d).rev() {
                columns.swap(i, rng.random_range(0..=i));
            }
            columns.truncate(take);
            // Every other row, backwards: the block's rows need not be in order.
            let rows: Vec<u32> = (0..n as u32).rev().step_by(2).collect();
            let shift: Vec<f64> = columns.iter().map(|&j| bytes.shift()[j as usize]).collect();
            let mut raw = Mat::<f64>::zeros(take, take);
            for par in [Par::Seq, Par::rayon(2)] {
                raw.fill(0.0);
                let sums =
                    bytes.add_block(&mut buffers, x, &rows, &columns, &shift, raw.as_mut(), par);
                for (s, &j) in columns.iter().enumerate() {
                    let j = j as usize;
                    let want: f64 = rows
                        .iter()
                        .map(|&r| x[(r as usize, j)].to_f64() - shift[s])
                        .sum();
                    assert_eq!(sums[s], want, "Σy of feature {j}");
                    for (t, &i) in columns.iter().enumerate().skip(s) {
                        let i = i as usize;
                        let want: f64 = rows
                            .iter()
                            .map(|&r| x[(r as usize, i)].to_f64() * x[(r as usize, j)].to_f64())
                            .sum();
                        assert_eq!(raw[(t, s)], want, "Σxx of features {i} and {j}");
                    }
                }
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (lo, n, d, take) in [
            (0, 2, 5, 5),
            (-128, 13, 40, 17),
            (-255, BLOCK_ROWS * 2, 70, 70),
            (1_000_000, 600, 33, 20),
        ] {
            struct InBothTypes<'a> {
                block: (i32, usize, usize, usize),
                rng: &'a mut ChaCha8Rng,
            }
            impl ProductCheck for InBothTypes<'_> {
                fn check<P: ByteProduct>(&mut self) {
                    let (lo, n, d, take) = self.block;
                    check::<f64, P>(lo, n, d, take, self.rng);
                    check::<f32, P>(lo, n, d, take, self.rng);
                }
            }
            which.run(&mut InBothTypes {
                block: (lo, n, d, take),
                rng: &mut rng,
            });
        }
    }

    product_tests!(dense_chunks_give_the_integer_paths_bits:
        dense_chunks_give_the_integer_paths_bits_with_the_reference_product,
        dense_chunks_give_the_integer_paths_bits_with_rten_gemms_product,
        dense_chunks_give_the_integer_paths_bits_with_the_avx2_madd_product,
        dense_chunks_give_the_integer_paths_bits_with_the_avx_vnni_product,
        dense_chunks_give_the_integer_paths_bits_with_the_avx512_vnni_product,
        dense_chunks_give_the_integer_paths_bits_with_the_amx_product);

    /// Dense rows of bytes (pixels, signed values, values around −10⁶), in one block, in two
    /// and a ragged second, f32 and f64: the integer path's exact sums, so its bits.
    fn dense_chunks_give_the_integer_paths_bits(what: &str, which: Which) {
        fn check<T: Real, P: ByteProduct>(x: &Mat<f64>, what: &str) {
            let stored = Mat::<T>::from_fn(x.ncols(), x.nrows(), |j, i| T::from_f64(x[(i, j)]));
            let chunk = stored.transpose();
            let range = IntegerRange::scan(chunk, Par::Seq).expect("integers");
            let bytes = ByteBlocks::<T, P>::for_range(&range.lo, &range.hi).expect("bytes fit");
            for par in [Par::Seq, Par::rayon(2)] {
                let mut ws = Workspace {
                    par,
                    ..Default::default()
                };
                ws.prepare(x.ncols());
                let mean = byte_moments(chunk, &range, &bytes, &mut ws);
                let mut reference = Workspace {
                    par,
                    ..Default::default()
                };
                reference.prepare(x.ncols());
                let (shift, magnitude) = small_integer_range(chunk, par).expect("small integers");
                assert_eq!(
                    mean,
                    integer_moments(chunk, &shift, magnitude, &mut reference),
                    "{what}"
                );
                for j in 0..x.ncols() {
                    for i in j..x.ncols() {
                        let (a, b) = (ws.scatter[(i, j)], reference.scatter[(i, j)]);
                        assert_eq!(
                            a.to_bits(),
                            b.to_bits(),
                            "{what} ({i}, {j}): {a} against {b}"
                        );
                    }
                }
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for (lo, n, d) in [
            (0, 300, 321),
            (-128, 2 * BLOCK_ROWS, 330),
            (-1_000_000, 2500, 400),
        ] {
            let x = Mat::<f64>::from_fn(n, d, |_, _| f64::from(rng.random_range(lo..=lo + 255)));
            struct InBothTypes<'a> {
                x: &'a Mat<f64>,
                what: &'a str,
            }
            impl ProductCheck for InBothTypes<'_> {
                fn check<P: ByteProduct>(&mut self) {
                    check::<f64, P>(self.x, self.what);
                    check::<f32, P>(self.x, self.what);
                }
            }
            which.run(&mut InBothTypes { x: &x, what });
        }
    }

    product_tests!(stored_bytes_give_the_f32_chunks_bits:
        stored_bytes_give_the_f32_chunks_bits_with_the_reference_product,
        stored_bytes_give_the_f32_chunks_bits_with_rten_gemms_product,
        stored_bytes_give_the_f32_chunks_bits_with_the_avx2_madd_product,
        stored_bytes_give_the_f32_chunks_bits_with_the_avx_vnni_product,
        stored_bytes_give_the_f32_chunks_bits_with_the_avx512_vnni_product,
        stored_bytes_give_the_f32_chunks_bits_with_the_amx_product);

    /// Chunks of bytes as stored (`u8`) give [`byte_moments`]' bits for the same values as
    /// `f32`: whole bytes, a narrow range far from 0 and 255, and images with a blank border
    /// (ranges that start above 0); one block, two with a ragged second, rows and features
    /// that are not whole 8 × 8 tiles, on one thread and two.
    fn stored_bytes_give_the_f32_chunks_bits(what: &str, which: Which) {
        fn check<P: ByteProduct>(x: &Mat<u8>, what: &str) {
            let (n, d) = (x.nrows(), x.ncols());
            let stored: Vec<u8> = (0..n)
                .flat_map(|i| (0..d).map(move |j| x[(i, j)]))
                .collect();
            let widened: Vec<f32> = stored.iter().map(|&b| f32::from(b)).collect();
            let bytes = MatRef::from_row_major_slice(&stored, n, d);
            let floats = MatRef::from_row_major_slice(&widened, n, d);
            let range = IntegerRange::scan(floats, Par::Seq).expect("integers");
            let blocks = ByteBlocks::<f32, P>::for_range(&range.lo, &range.hi).expect("bytes");
            let product = P::available().expect("available");
            for par in [Par::Seq, Par::rayon(2)] {
                let mut ws = Workspace {
                    par,
                    ..Default::default()
                };
                ws.prepare(d);
                let mean = stored_byte_moments(bytes, &product, &mut ws);
                let mut reference = Workspace {
                    par,
                    ..Default::default()
                };
                reference.prepare(d);
                let want = byte_moments(floats, &range, &blocks, &mut reference);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&mean), bits(&want), "{what} {n}×{d}: mean");
                for j in 0..d {
                    for i in j..d {
                        let (a, b) = (ws.scatter[(i, j)], reference.scatter[(i, j)]);
                        assert_eq!(a.to_bits(), b.to_bits(), "{what} {n}×{d} ({i}, {j})");
                    }
                }
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        let mut cases = Vec::new();
        for (n, d) in [(300, 321), (2500, 330), (2 * BLOCK_ROWS, 336)] {
            cases.push(Mat::<u8>::from_fn(n, d, |_, _| rng.random()));
        }
        cases.push(Mat::<u8>::from_fn(777, 333, |_, _| {
            rng.random_range(100..=140)
        }));
        cases.push(Mat::<u8>::from_fn(1500, 400, |i, j| {
            let inside = (3..17).contains(&(j / 20)) && (3..17).contains(&(j % 20));
            if inside {
                rng.random_range(1..=255)
            } else {
                (i % 3) as u8
            }
        }));
        for x in &cases {
            struct Stored<'a> {
                x: &'a Mat<u8>,
                what: &'a str,
            }
            impl ProductCheck for Stored<'_> {
                fn check<P: ByteProduct>(&mut self) {
                    check::<P>(self.x, self.what);
                }
            }
            which.run(&mut Stored { x, what });
        }
    }

    /// Blocks of bytes transposed by AVX2 tiles (where this CPU has AVX2) and by word tiles
    /// alike: every byte in its place, whole tiles and the edges they leave.
    #[test]
    fn blocks_of_bytes_are_transposed_by_every_kind_of_tile() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for (r, d) in [(1, 1), (7, 9), (16, 32), (47, 70), (64, 784), (200, 333)] {
            let stored: Vec<u8> = (0..r * d).map(|_| rng.random()).collect();
            let x = MatRef::from_row_major_slice(&stored, r, d);
            for vectors in [true, false] {
                let (mut u, mut y) = (vec![0u8; r * d], vec![0i8; r * d]);
                dispatch(TransposeBytes {
                    x,
                    u: &mut u,
                    y: &mut y,
                    vectors,
                });
                for k in 0..r {
                    for t in 0..d {
                        let b = x[(k, t)];
                        assert_eq!(u[t * r + k], b, "{r}×{d} {vectors} ({k}, {t})");
                        assert_eq!(i16::from(y[t * r + k]), i16::from(b) - 128);
                    }
                }
            }
        }
    }

    /// The 8 × 8 transpose of bytes in words: every byte to its mirrored place.
    #[test]
    fn eight_words_of_bytes_are_transposed() {
        let mut w: [u64; 8] =
            std::array::from_fn(|i| u64::from_le_bytes(std::array::from_fn(|c| (8 * i + c) as u8)));
        transpose_8x8_bytes(&mut w);
        for (c, w) in w.iter().enumerate() {
            assert_eq!(
                w.to_le_bytes(),
                std::array::from_fn(|i| (8 * i + c) as u8),
                "column {c}"
            );
        }
    }

    /// Ranges wider than a byte and shifts that are not exact in the data's type take the f32
    /// products; the hardware product is offered exactly where it is exact.
    #[test]
    fn wide_ranges_and_inexact_shifts_take_the_f32_products() {
        type Blocks<T> = ByteBlocks<T, ReferenceBytes>;
        let (lo, hi) = (vec![-128.0, 0.0], vec![127.0, 255.0]);
        assert!(Blocks::<f32>::for_range(&lo, &hi).is_some());
        assert!(Blocks::<f32>::for_range(&lo, &[127.0, 256.0]).is_none());
        // 2²⁴ + 1 + 128 is not an f32: beyond 2²⁴, f32 integers are 2 apart.
        let beyond = 16_777_217.0;
        let (far_lo, far_hi) = ([0.0, beyond], [255.0, beyond + 1.0]);
        assert!(Blocks::<f32>::for_range(&far_lo, &far_hi).is_none());
        assert!(Blocks::<f64>::for_range(&far_lo, &far_hi).is_some());
        assert_eq!(
            ByteBlocks::<f32, GemmBytes>::for_range(&lo, &hi).is_some(),
            hardware_product_available()
        );
    }
}
