//! The mean and centred cross-product matrix of one chunk of rows: the hot loop of the
//! covariance solver. Only the lower triangle of the cross-product is formed (half the work).
//!
//! Two paths, both exact to f64 rounding:
//! - integers (pixels, counts) whose range, after shifting each feature by an integer near its
//!   midpoint, has magnitude ≤ m: an f32 product over blocks of ⌊2²⁴/m²⌋ rows is exact (every
//!   partial sum is an integer below 2²⁴); for pixels, m = 128 and blocks of 1,024 rows. The f32 product runs
//!   at about twice the f64 rate; the blocks are summed in f64, still exactly (below 2⁵³), and
//!   the centred matrix follows as `Σyyᵀ − (Σy)(Σy)ᵀ/n` of the shifted values y from exact integer sums (the one place
//!   SPEC allows that form: a single rounding, no cancellation of rounded quantities).
//! - anything else: centre each block of up to 1,024 rows on its own mean in f64, then one f64
//!   product per block; the blocks are merged by Chan's update (see `BlockMerge`).

use faer::linalg::matmul::triangular::{matmul, BlockStructure};
use faer::reborrow::ReborrowMut;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::prepare::check_finite;
use crate::{ChunkRef, Precision, Real, Result, MIXED_BLOCK_ROWS};

/// Largest integer magnitude whose products still allow blocks of at least 64 rows in f32.
const MAX_EXACT_MAGNITUDE: f64 = 512.0;

/// Rows per piece: about 4 MiB of f64 rows (each look at them hits the cache), but at least 4·D
/// so that the D² work of a piece (its mean correction and merge) stays small beside its N·D²
/// products; in whole blocks of 1,024 rows, the exact integer kernel's block for pixels (a
/// ragged last block would make one product in four a short, slow one).
pub(crate) fn cached_rows(n_features: usize) -> usize {
    let d = n_features.max(1);
    ((1usize << 19) / d)
        .max(4 * d)
        .div_ceil(1024)
        .saturating_mul(1024)
        .clamp(1024, 16384)
}

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` of a chunk (the strictly upper triangle is
/// not meaningful); an error for a non-finite value, its row counted from `first_row`.
///
/// Row-major chunks (`col_stride() == 1`) are the fast layout: their transpose is a
/// column-major D×n block, which is what the product wants as its left operand.
pub(crate) fn chunk_moments<T: Real>(
    chunk: MatRef<'_, T>,
    ws: &mut Workspace,
    first_row: usize,
    precision: Precision,
) -> Result<Vec<f64>> {
    ws.prepare(chunk.ncols());
    // Integers are finite: only the float path needs the finiteness check (one pass less).
    // Bytes first where every feature fits one: the same exact sums, faster products.
    let range = (chunk.nrows() >= MIN_INTEGER_ROWS)
        .then(|| IntegerRange::scan(chunk, ws.par))
        .flatten();
    if let Some(mean) = range
        .as_ref()
        .and_then(|range| crate::byte_products::byte_moments(chunk, range, ws))
    {
        return Ok(mean);
    }
    Ok(match range.and_then(|range| small_integers(&range)) {
        Some((shift, magnitude)) => integer_moments(chunk, &shift, magnitude, ws),
        None => match (T::chunk(chunk), precision) {
            (ChunkRef::F32(f32_chunk), Precision::Mixed) => {
                mixed_moments(f32_chunk, ws, first_row)?
            }
            _ => float_moments(chunk, ws, first_row)?,
        },
    })
}

/// Buffers reused from chunk to chunk: fresh D×D matrices for every piece of a few hundred rows
/// cost more in page faults than the products themselves.
#[derive(Clone, Debug)]
pub(crate) struct Workspace {
    /// The piece's result: lower triangle of its centred cross-products (upper: scratch).
    pub scatter: Mat<f64>,
    pub(crate) partial: Mat<f32>,
    pub(crate) block32: Mat<f32>,
    block64: Mat<f64>,
    /// Blocks of bytes and their products (see `byte_products`).
    pub(crate) bytes: crate::byte_products::ByteBuffers,
    /// Threads for the passes and products of one piece.
    pub par: Par,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace {
            scatter: Mat::new(),
            partial: Mat::new(),
            block32: Mat::new(),
            block64: Mat::new(),
            bytes: Default::default(),
            par: Par::rayon(0),
        }
    }
}

impl Workspace {
    pub(crate) fn prepare(&mut self, d: usize) {
        if self.scatter.nrows() != d {
            *self = Workspace {
                scatter: Mat::zeros(d, d),
                // One more row and column for the sparse path's row of ones.
                partial: Mat::zeros(d + 1, d + 1),
                par: self.par,
                ..Default::default()
            };
        } else {
            self.scatter.fill(0.0);
        }
    }
}

/// Makes `buffer` a D×`block` (or wider) matrix, reallocating only when it is too small or
/// of another D.
pub(crate) fn ensure_block<E: faer::traits::ComplexField>(
    buffer: &mut Mat<E>,
    d: usize,
    block: usize,
) {
    if buffer.ncols() < block || buffer.nrows() != d {
        *buffer = Mat::zeros(d, block);
    }
}

/// Centres each block of rows on its own mean, then one f64 product per block. The block's
/// rows are read from memory once, by its column sums; the centring copy that follows finds
/// them in cache. Blocks are merged as [`BlockMerge`] says: exact identities, so a constant
/// offset of 1e6 costs no accuracy.
fn float_moments<T: Real>(
    chunk: MatRef<'_, T>,
    ws: &mut Workspace,
    first_row: usize,
) -> Result<Vec<f64>> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    // At most 1,024 rows (and 8 MiB) per product: a D×rows operand that stays in cache makes
    // the product 2–10× faster than one spanning a large chunk, and for narrow rows blocks of
    // 1,024 beat 6,144 by about 1.2× (measured for D = 100 and 784 on 2 cores).
    let block = ((1usize << 20) / d.max(1)).clamp(256, 1024).min(n);
    ensure_block(&mut ws.block64, d, block);
    let (centred, scatter, par) = (&mut ws.block64, &mut ws.scatter, ws.par);
    let mut merged = BlockMerge::new(d);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let part = chunk.subrows(start, rows);
        let centre = block_mean(part, first_row + start, par)?;
        let residual = shifted_copy(part, &centre, centred.as_mut().subcols_mut(0, rows), par);
        lower_product(
            scatter.as_mut(),
            Accum::Add,
            centred.as_ref().subcols(0, rows),
            par,
        );
        merged.add(scatter.as_mut(), rows, &centre, &residual);
        start += rows;
    }
    Ok(merged.mean)
}

/// [`Precision::Mixed`] for `f32` chunks: blocks of rows centred on their own mean in f64 as in
/// `float_moments`, rounded to f32 and multiplied in f32 over [`MIXED_BLOCK_ROWS`] rows at a time
/// (the bound of `Precision::Mixed` depends on that length), each product added in f64.
fn mixed_moments(chunk: MatRef<'_, f32>, ws: &mut Workspace, first_row: usize) -> Result<Vec<f64>> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    // Centred 1,024 rows at a time (as `float_moments` for narrow rows): the merge's D² work per
    // centring block stays small beside the products.
    let block = (MIXED_BLOCK_ROWS * 4).min(n);
    ensure_block(&mut ws.block32, d, block);
    let (buffer, scatter, partial, par) =
        (&mut ws.block32, &mut ws.scatter, &mut ws.partial, ws.par);
    let mut merged = BlockMerge::new(d);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let part = chunk.subrows(start, rows);
        let centre = block_mean(part, first_row + start, par)?;
        // Σy before rounding: exact for the mean; in the scatter's correction it stands in for
        // Σŷ, off by a relative 2⁻²⁴ of a sum that is itself near zero.
        let residual = shifted_copy(part, &centre, buffer.as_mut().subcols_mut(0, rows), par);
        let mut product_start = 0;
        while product_start < rows {
            let len = MIXED_BLOCK_ROWS.min(rows - product_start);
            lower_product(
                partial.as_mut().submatrix_mut(0, 0, d, d),
                Accum::Replace,
                buffer.as_ref().subcols(product_start, len),
                par,
            );
            add_lower(
                scatter.as_mut(),
                partial.as_ref().submatrix(0, 0, d, d),
                par,
            );
            product_start += len;
        }
        merged.add(scatter.as_mut(), rows, &centre, &residual);
        start += rows;
    }
    Ok(merged.mean)
}

/// The plain mean of a block of rows (counted from `first_row` in errors), or the error that
/// names its first non-finite value.
fn block_mean<T: Real>(rows: MatRef<'_, T>, first_row: usize, par: Par) -> Result<Vec<f64>> {
    let sums = column_sums(rows, par);
    if sums.iter().any(|s| !s.is_finite()) {
        // A non-finite value (named by the check), or finite values whose sum overflows.
        check_finite(rows, first_row)?;
    }
    let n = rows.nrows() as f64;
    Ok(sums.iter().map(|s| s / n).collect())
}

/// Merges blocks of rows, each centred on its own rough mean `c` (its plain one-pass mean, within
/// a few ulps of the exact one), into the moments of all of them. A block of `r` rows whose
/// product `Σyyᵀ` of `y = x − c` is already in the scatter, with `s = Σy`, has the mean
/// `μ_b = c + s/r` and the centred scatter `Σyyᵀ − s sᵀ/r`; with the blocks so far (`n`, `μ`),
/// Chan's update adds `δδᵀ n r/(n + r)` for `δ = μ_b − μ`. Both are exact identities, and `s` is
/// tiny, so neither costs accuracy; both are rank-one updates of the lower triangle (D² work
/// beside the block's r·D²/2 products).
struct BlockMerge {
    n: usize,
    mean: Vec<f64>,
}

impl BlockMerge {
    fn new(d: usize) -> Self {
        BlockMerge {
            n: 0,
            mean: vec![0.0; d],
        }
    }

    fn add(&mut self, mut scatter: MatMut<'_, f64>, rows: usize, centre: &[f64], residual: &[f64]) {
        let r = rows as f64;
        let block_mean: Vec<f64> = centre
            .iter()
            .zip(residual)
            .map(|(c, s)| c + s / r)
            .collect();
        let (delta, weight) = crate::moments::merge_mean(&mut self.mean, self.n, &block_mean, rows);
        for j in 0..delta.len() {
            let column = scatter
                .rb_mut()
                .col_mut(j)
                .try_as_col_major_mut()
                .expect("columns of a Mat are contiguous")
                .as_slice_mut();
            crate::simd::dispatch(RankTwoUpdate::<f32> {
                dst: &mut column[j..],
                a: &delta[j..],
                alpha: weight * delta[j],
                b: &residual[j..],
                beta: -residual[j] / r,
                plus: None,
            });
        }
        self.n += rows;
    }
}

/// `dst += src` on the lower triangle, f32 into f64, by columns; on all threads if `par` says so.
fn add_lower(dst: MatMut<'_, f64>, src: MatRef<'_, f32>, par: Par) {
    for_lower_columns(dst, src, par, |_, dst, src| {
        crate::simd::dispatch(AddWidened { dst, src })
    });
}

/// Calls `f(j, dst[j.., j], src[j.., j])` for every column `j` of the lower triangles of `dst`
/// and `src` (same shape), on all threads if `par` says so.
pub(crate) fn for_lower_columns(
    dst: MatMut<'_, f64>,
    src: MatRef<'_, f32>,
    par: Par,
    f: impl Fn(usize, &mut [f64], &[f32]) + Sync,
) {
    let column = |(j, (dst, src)): (usize, (faer::ColMut<'_, f64>, faer::ColRef<'_, f32>))| {
        let dst = dst
            .try_as_col_major_mut()
            .expect("columns of a Mat are contiguous");
        let src = src
            .try_as_col_major()
            .expect("columns of a Mat are contiguous");
        f(j, &mut dst.as_slice_mut()[j..], &src.as_slice()[j..]);
    };
    if par.degree() > 1 {
        dst.par_col_iter_mut()
            .zip(src.par_col_iter())
            .enumerate()
            .for_each(column);
    } else {
        dst.col_iter_mut()
            .zip(src.col_iter())
            .enumerate()
            .for_each(column);
    }
}

/// `dst += src`, f32 widened to f64.
struct AddWidened<'a> {
    dst: &'a mut [f64],
    src: &'a [f32],
}

impl crate::simd::Kernel for AddWidened<'_> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (r, p) in self.dst.iter_mut().zip(self.src) {
            *r += f64::from(*p);
        }
    }
}

/// `dst += alpha·a + beta·b`, plus `plus` widened to f64 if given: one column of two rank-one
/// updates (and of a product computed in f32 or in i32, both widened exactly).
pub(crate) struct RankTwoUpdate<'a, P = f32> {
    pub dst: &'a mut [f64],
    pub a: &'a [f64],
    pub alpha: f64,
    pub b: &'a [f64],
    pub beta: f64,
    pub plus: Option<&'a [P]>,
}

impl<P: Copy + Into<f64>> crate::simd::Kernel for RankTwoUpdate<'_, P> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (alpha, beta) = (self.alpha, self.beta);
        let terms = self.dst.iter_mut().zip(self.a).zip(self.b);
        match self.plus {
            None => terms.for_each(|((m, a), b)| *m += alpha * a + beta * b),
            Some(plus) => terms
                .zip(plus)
                .for_each(|(((m, a), b), p)| *m += (*p).into() + alpha * a + beta * b),
        }
    }
}

/// Both halves of a split pass, on two threads when `par` allows. The split itself depends on
/// the shape only, so the sums (and the model) are the same bits on any number of threads.
pub(crate) fn join<A: Send, B: Send>(
    par: Par,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if par.degree() > 1 {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// Plain per-feature sums in f64, vectorised, large row-major chunks summed by halves.
pub(crate) fn column_sums<T: Real>(rows: MatRef<'_, T>, par: Par) -> Vec<f64> {
    let n = rows.nrows();
    if rows.col_stride() != 1 {
        return (0..rows.ncols())
            .map(|j| rows.col(j).iter().map(|v| v.to_f64()).sum())
            .collect();
    }
    if n >= 1024 {
        let half = n / 2;
        let (mut a, b) = join(
            par,
            || column_sums(rows.subrows(0, half), par),
            || column_sums(rows.subrows(half, n - half), par),
        );
        a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
        return a;
    }
    crate::simd::dispatch(SumRows { rows })
}

/// Per-feature sums of row-major `rows`.
struct SumRows<'a, T> {
    rows: MatRef<'a, T>,
}

impl<T: Real> crate::simd::Kernel for SumRows<'_, T> {
    type Output = Vec<f64>;
    #[inline(always)]
    fn run(self) -> Vec<f64> {
        let mut sums = vec![0.0f64; self.rows.ncols()];
        for i in 0..self.rows.nrows() {
            let row = self.rows.row(i).try_as_row_major().expect("row-major");
            for (s, v) in sums.iter_mut().zip(row.as_slice()) {
                *s += v.to_f64();
            }
        }
        sums
    }
}

/// Widest rows whose products go band by band (see [`lower_product`]).
pub(crate) const BANDED_MAX_FEATURES: usize = 320;

/// `dst (+)= Lower(Y Yᵀ)` for a D×n block Y. Only the lower triangle of `dst` is meaningful:
/// the strictly upper part may receive partial products.
///
/// Products of narrow rows go in bands of one 64-byte register's worth of rows
/// (16 in f32, 8 in f64), from the bottom: band `[r0, r1)` is the plain product
/// `Y[r0..r1] · Y[..r1]ᵀ`, which covers the triangle's rows `r0..r1` and spills only into the
/// upper part of its own diagonal block. Measured on one core (Zen 4, blocks of 1,024 rows,
/// in multiply-adds of the full D² product per second): f32 at D = 100 80 G against 50 G for
/// faer's triangular product, 86–93 G against 68–80 G at D = 200–300; f64 46 G against 33 G
/// at D = 100 and 45–49 G against 37–42 G at D = 200–300; on one core the bands beat even the
/// two-thread triangular product at D = 100 (45 G f32, 36 G f64). The bands always run on one
/// thread (split over two they are 2–4× slower), so the choice, and the bits of the result,
/// depend on the shape only; narrow rows get their parallelism from the accumulator's split.
pub(crate) fn lower_product<E: faer::traits::ComplexField>(
    mut dst: faer::MatMut<'_, E>,
    accum: Accum,
    y: MatRef<'_, E>,
    par: Par,
) {
    let d = y.nrows();
    if d > BANDED_MAX_FEATURES {
        return matmul(
            dst,
            BlockStructure::TriangularLower,
            accum,
            y,
            BlockStructure::Rectangular,
            y.transpose(),
            BlockStructure::Rectangular,
            E::one_impl(),
            par,
        );
    }
    let width = (64 / std::mem::size_of::<E>()).max(1);
    let mut end = d;
    while end > 0 {
        let start = end.saturating_sub(width);
        faer::linalg::matmul::matmul(
            dst.rb_mut().submatrix_mut(start, 0, end - start, end),
            accum,
            y.subrows(start, end - start),
            y.subrows(0, end).transpose(),
            E::one_impl(),
            Par::Seq,
        );
        end = start;
    }
}

/// Per-feature range of a chunk of integers, `None` as soon as a value is not an integer.
#[derive(Clone)]
pub(crate) struct IntegerRange {
    pub(crate) lo: Vec<f64>,
    pub(crate) hi: Vec<f64>,
}

impl IntegerRange {
    /// The shift of each feature (an integer near the middle of its range) and the largest
    /// magnitude after it. Shifting by the middle halves the magnitudes: blocks 4× longer.
    pub(crate) fn midpoint_shift(&self) -> (Vec<f64>, f64) {
        let (lo, hi) = (&self.lo, &self.hi);
        let shift: Vec<f64> = lo
            .iter()
            .zip(hi)
            .map(|(l, h)| ((l + h) / 2.0).floor())
            .collect();
        let magnitude = (0..lo.len())
            .map(|j| (hi[j] - shift[j]).max(shift[j] - lo[j]))
            .fold(0.0f64, f64::max);
        (shift, magnitude)
    }

    /// The range of no values (each feature's from +∞ to −∞), for [`Self::widen`] to grow.
    pub(crate) fn empty(n_features: usize) -> Self {
        IntegerRange {
            lo: vec![f64::INFINITY; n_features],
            hi: vec![f64::NEG_INFINITY; n_features],
        }
    }

    /// Widens each feature's range to take in `other`'s.
    pub(crate) fn widen(&mut self, other: &IntegerRange) {
        for (l, o) in self.lo.iter_mut().zip(&other.lo) {
            *l = l.min(*o);
        }
        for (h, o) in self.hi.iter_mut().zip(&other.hi) {
            *h = h.max(*o);
        }
    }

    /// Scans rows `rows` of a row-major chunk, or all of a column-major one.
    pub(crate) fn scan<T: Real>(chunk: MatRef<'_, T>, par: Par) -> Option<Self> {
        let (n, d) = (chunk.nrows(), chunk.ncols());
        let mut range = IntegerRange::empty(d);
        if chunk.col_stride() == 1 {
            // Two halves on two threads: this pass is outside the parallel product.
            if n >= 512 && par.degree() > 1 {
                let half = n / 2;
                let (a, b) = rayon::join(
                    || Self::scan(chunk.subrows(0, half), par),
                    || Self::scan(chunk.subrows(half, n - half), par),
                );
                let mut a = a?;
                a.widen(&b?);
                return Some(a);
            }
            let ok = crate::simd::dispatch(ScanRows {
                rows: chunk,
                lo: &mut range.lo,
                hi: &mut range.hi,
            });
            if !ok {
                return None;
            }
        } else {
            for j in 0..d {
                let (ok, l, h) = chunk.col(j).iter().fold(
                    (true, f64::INFINITY, f64::NEG_INFINITY),
                    |(ok, l, h), v| {
                        let v = v.to_f64();
                        (ok & is_integer(v), l.min(v), h.max(v))
                    },
                );
                if !ok {
                    return None;
                }
                (range.lo[j], range.hi[j]) = (l, h);
            }
        }
        Some(range)
    }
}

/// The shift (an integer near the middle of each feature's range) and the largest magnitude
/// after it, when every value is an integer and that magnitude is at most
/// [`MAX_EXACT_MAGNITUDE`]; `None` otherwise (or for chunks too small to be worth it).
#[cfg(test)]
pub(crate) fn small_integer_range<T: Real>(
    chunk: MatRef<'_, T>,
    par: Par,
) -> Option<(Vec<f64>, f64)> {
    if chunk.nrows() < MIN_INTEGER_ROWS {
        return None;
    }
    small_integers(&IntegerRange::scan(chunk, par)?)
}

/// Fewest rows for which the integer paths are worth their scan.
const MIN_INTEGER_ROWS: usize = 64;

/// [`small_integer_range`] of a scanned range.
fn small_integers(range: &IntegerRange) -> Option<(Vec<f64>, f64)> {
    let (shift, magnitude) = range.midpoint_shift();
    (magnitude <= MAX_EXACT_MAGNITUDE).then_some((shift, magnitude))
}

/// Writes rows `x − shift` of `rows` as the columns of `dst` (D×n) and returns the sums of
/// `x − shift` per feature (before rounding to `U`). Computed in the shift's type: f64, or f32
/// for f32 integers shifted by an f32 integer, which is exact while every value, difference
/// and partial sum is an integer below 2²⁴ (the integer path's blocks guarantee it: magnitude m
/// after the shift, at most 2²⁴/m² rows, so sums stay below 2²⁴/m) and about twice as fast.
/// Summed by halves of the rows, on two threads if `par` allows.
pub(crate) fn shifted_copy<T, C, U>(
    rows: MatRef<'_, T>,
    shift: &[C],
    dst: MatMut<'_, U>,
    par: Par,
) -> Vec<f64>
where
    T: Real,
    C: Real + std::ops::Sub<Output = C> + std::ops::AddAssign,
    U: Real,
{
    let n = rows.nrows();
    if n >= 512 {
        let half = n / 2;
        let (left, right) = dst.split_at_col_mut(half);
        let (mut a, b) = join(
            par,
            || shifted_copy(rows.subrows(0, half), shift, left, par),
            || shifted_copy(rows.subrows(half, n - half), shift, right, par),
        );
        a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
        return a;
    }
    crate::simd::dispatch(ShiftRows { rows, shift, dst })
}

/// Whether `v` is an integer of magnitude at most 2⁴⁰, branch-free (it vectorises): adding and
/// subtracting 1.5·2⁵² rounds to an integer without a libm call, exactly far inside 2⁴⁰.
#[inline(always)]
pub(crate) fn is_integer(v: f64) -> bool {
    const ROUND: f64 = 6_755_399_441_055_744.0;
    const LARGEST: f64 = 1_099_511_627_776.0;
    (v.abs() <= LARGEST) & ((v + ROUND) - ROUND == v)
}

/// Is every value of row-major `rows` an integer (within 2⁴⁰)? Widens `lo` and `hi` to the
/// per-feature range on the way; stops at the first row that is not all integers.
struct ScanRows<'a, T> {
    rows: MatRef<'a, T>,
    lo: &'a mut [f64],
    hi: &'a mut [f64],
}

impl<T: Real> crate::simd::Kernel for ScanRows<'_, T> {
    type Output = bool;
    #[inline(always)]
    fn run(self) -> bool {
        // Branch-free within a row so that it vectorises.
        let rows = self.rows;
        if let ChunkRef::F32(rows) = T::chunk(rows) {
            return scan_f32_rows(rows, self.lo, self.hi);
        }
        for i in 0..rows.nrows() {
            let row = rows.row(i).try_as_row_major().expect("row-major");
            let mut ok = true;
            let bounds = self.lo.iter_mut().zip(self.hi.iter_mut());
            for ((l, h), v) in bounds.zip(row.as_slice()) {
                let v = v.to_f64();
                ok &= is_integer(v);
                *l = l.min(v);
                *h = h.max(v);
            }
            if !ok {
                return false;
            }
        }
        true
    }
}

/// [`ScanRows`] for f32 values, in f32: twice the lanes of f64, about twice as fast.
#[inline(always)]
fn scan_f32_rows(rows: MatRef<'_, f32>, lo: &mut [f64], hi: &mut [f64]) -> bool {
    // Below 2²³, adding and subtracting 2²³ rounds a magnitude to an integer; from 2²³ on
    // every f32 is one. (1.5·2²³ on the signed value, as for f64, fails from −2²² down.)
    const ALL_INTEGERS: f32 = 8_388_608.0;
    const LARGEST: f32 = 1_099_511_627_776.0; // 2⁴⁰, as for f64
    let d = lo.len();
    let (mut lo32, mut hi32) = (vec![f32::INFINITY; d], vec![f32::NEG_INFINITY; d]);
    let mut ok = true;
    for i in 0..rows.nrows() {
        let row = rows.row(i).try_as_row_major().expect("row-major");
        let mut bad = 0u32;
        for ((l, h), &v) in lo32.iter_mut().zip(hi32.iter_mut()).zip(row.as_slice()) {
            let a = v.abs();
            let integer = ((a + ALL_INTEGERS) - ALL_INTEGERS == a) | (a >= ALL_INTEGERS);
            bad |= u32::from(!(integer & (a <= LARGEST)));
            *l = l.min(v);
            *h = h.max(v);
        }
        if bad != 0 {
            ok = false;
            break;
        }
    }
    for j in 0..d {
        lo[j] = lo[j].min(f64::from(lo32[j]));
        hi[j] = hi[j].max(f64::from(hi32[j]));
    }
    ok
}

/// Writes the rows of `rows` minus `shift` as the columns of `dst`, computing in the shift's
/// type `C` (see [`shifted_copy`]); returns the sums of the differences in `C`, before
/// rounding to the output type (exact for integers), as f64.
struct ShiftRows<'a, T, C, U> {
    rows: MatRef<'a, T>,
    shift: &'a [C],
    dst: MatMut<'a, U>,
}

impl<T, C, U> crate::simd::Kernel for ShiftRows<'_, T, C, U>
where
    T: Real,
    C: Real + std::ops::Sub<Output = C> + std::ops::AddAssign,
    U: Real,
{
    type Output = Vec<f64>;
    #[inline(always)]
    fn run(self) -> Vec<f64> {
        let ShiftRows {
            rows,
            shift,
            mut dst,
        } = self;
        let mut sums = vec![C::from_f64(0.0); shift.len()];
        for i in 0..rows.nrows() {
            let out = dst.as_mut().col_mut(i).try_as_col_major_mut();
            let out = out.expect("columns of a Mat are contiguous").as_slice_mut();
            let targets = out.iter_mut().zip(shift).zip(sums.iter_mut());
            // Widening and narrowing between equal types compile to nothing.
            let put = |((o, &s), sum): ((&mut U, &C), &mut C), v: T| {
                let y = C::from_f64(v.to_f64()) - s;
                *o = U::from_f64(y.to_f64());
                *sum += y;
            };
            match rows.row(i).try_as_row_major() {
                Some(row) => targets.zip(row.as_slice()).for_each(|(t, &v)| put(t, v)),
                None => targets
                    .zip(rows.row(i).iter())
                    .for_each(|(t, &v)| put(t, v)),
            }
        }
        sums.into_iter().map(C::to_f64).collect()
    }
}

/// Rows per block of the exact f32 products of integers of magnitude at most `magnitude`:
/// partial sums of products stay integers below 2²⁴. A power of two, so that blocks tile the
/// pieces of `cached_rows`. `None` above [`MAX_EXACT_MAGNITUDE`].
pub(crate) fn integer_block_rows(magnitude: f64) -> Option<usize> {
    if magnitude > MAX_EXACT_MAGNITUDE {
        return None;
    }
    let longest = (16_777_216.0 / (magnitude * magnitude).max(1.0)) as usize;
    Some(1usize << longest.max(1).ilog2())
}

pub(crate) fn integer_moments<T: Real>(
    chunk: MatRef<'_, T>,
    shift: &[f64],
    magnitude: f64,
    ws: &mut Workspace,
) -> Vec<f64> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    let block = integer_block_rows(magnitude)
        .expect("small_integer_range bounds the magnitude")
        .min(n);
    ensure_block(&mut ws.block32, d, block);
    let (buffer, raw, partial, par) = (&mut ws.block32, &mut ws.scatter, &mut ws.partial, ws.par);
    let mut sums = vec![0.0f64; d];
    // f32 integers take the all-f32 copy when the shift is an f32 too (always below 2²⁴; f32
    // integers above it are 2 or more apart, and their midpoint may not be one).
    let shift32: Vec<f32> = shift.iter().map(|&s| s as f32).collect();
    let exact32 = shift32.iter().zip(shift).all(|(&a, &b)| f64::from(a) == b);
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let part = chunk.subrows(start, rows);
        let dst = buffer.as_mut().subcols_mut(0, rows);
        let block_sums = match T::chunk(part) {
            ChunkRef::F32(part) if exact32 => shifted_copy(part, &shift32, dst, par),
            _ => shifted_copy(part, shift, dst, par),
        };
        for (sum, v) in sums.iter_mut().zip(&block_sums) {
            *sum += v;
        }
        lower_product(
            partial.as_mut().submatrix_mut(0, 0, d, d),
            Accum::Replace,
            buffer.as_ref().subcols(0, rows),
            par,
        );
        add_lower(raw.as_mut(), partial.as_ref().submatrix(0, 0, d, d), par);
        start += rows;
    }
    centre_shifted_sums(raw.as_mut(), &sums, shift, n)
}

/// The integer paths' one rounding: from the exact sums `Σzzᵀ` (lower triangle of `raw`) and
/// `Σz` of `z = x − shift` over `n` rows, `raw −= Σz Σzᵀ / n`; returns the mean
/// `shift + Σz / n`. Every exact path ends here, so all give the same bits.
pub(crate) fn centre_shifted_sums(
    mut raw: MatMut<'_, f64>,
    sums: &[f64],
    shift: &[f64],
    n: usize,
) -> Vec<f64> {
    let nf = n as f64;
    for j in 0..sums.len() {
        for i in j..sums.len() {
            raw[(i, j)] -= sums[i] * sums[j] / nf;
        }
    }
    sums.iter().zip(shift).map(|(s, sh)| sh + s / nf).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The obviously-correct reference: two-pass centring and a plain triple loop, compensated.
    fn reference(x: &Mat<f64>) -> (Vec<f64>, Vec<Vec<f64>>) {
        let (n, d) = (x.nrows(), x.ncols());
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let scatter = (0..d)
            .map(|a| {
                (0..d)
                    .map(|b| {
                        (0..n)
                            .map(|i| (x[(i, a)] - mean[a]) * (x[(i, b)] - mean[b]))
                            .sum()
                    })
                    .collect()
            })
            .collect();
        (mean, scatter)
    }

    /// Small integers: every sum is exact, so the banded (sequential) and triangular (parallel)
    /// products must give the plain triple loop's lower triangle bit for bit, accumulated or not,
    /// whether D is a multiple of the band or not.
    fn check_lower_product<E: Real + faer::traits::ComplexField>() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for (d, n) in [
            (1, 3),
            (7, 5),
            (8, 300),
            (9, 1),
            (16, 40),
            (17, 40),
            (37, 300),
            (100, 64),
        ] {
            let mut int = |range: i32| E::from_f64(f64::from(rng.random_range(-range..=range)));
            let y = Mat::<E>::from_fn(d, n, |_, _| int(20));
            let start = Mat::<E>::from_fn(d, d, |_, _| int(9));
            for (accum, kept) in [(Accum::Replace, 0.0), (Accum::Add, 1.0)] {
                for par in [Par::Seq, Par::rayon(2)] {
                    let mut got = start.clone();
                    lower_product(got.as_mut(), accum, y.as_ref(), par);
                    for b in 0..d {
                        for a in b..d {
                            let dot: f64 = (0..n)
                                .map(|i| y[(a, i)].to_f64() * y[(b, i)].to_f64())
                                .sum();
                            let want = dot + kept * start[(a, b)].to_f64();
                            assert_eq!(
                                got[(a, b)].to_f64(),
                                want,
                                "d {d} n {n} ({a}, {b}) {par:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn banded_and_triangular_products_give_the_exact_lower_triangle() {
        check_lower_product::<f32>();
        check_lower_product::<f64>();
    }

    #[test]
    fn integer_path_is_taken_for_pixels_and_matches_the_reference_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (n, d, hi) in [(1000, 17, 255u32), (300, 5, 511), (64, 3, 1)] {
            let x32 = Mat::<f32>::from_fn(n, d, |_, j| {
                rng.random_range(0..=hi / (1 + j as u32 % 3)) as f32
            });
            let x = Mat::<f64>::from_fn(n, d, |i, j| f64::from(x32[(i, j)]));
            assert!(small_integer_range(x32.as_ref(), Par::Seq).is_some());
            let rows = x32.transpose().to_owned();
            let mut ws = Workspace::default();
            let mean_rm =
                chunk_moments(rows.as_ref().transpose(), &mut ws, 0, Precision::Full).unwrap();
            let scatter_rm = ws.scatter.clone();
            assert_eq!(
                mean_rm,
                chunk_moments(x32.as_ref(), &mut ws, 0, Precision::Full).unwrap()
            );
            assert_eq!(scatter_rm, ws.scatter);
            let mut ws = Workspace::default();
            let mean = chunk_moments(x32.as_ref(), &mut ws, 0, Precision::Full).unwrap();
            let scatter = &ws.scatter;
            let (want_mean, want) = reference(&x);
            for a in 0..d {
                assert!((mean[a] - want_mean[a]).abs() <= 1e-12 * want_mean[a].abs().max(1.0));
                for b in 0..=a {
                    let tol = 1e-12 * want[a][a].max(want[b][b]).max(1.0);
                    assert!(
                        (scatter[(a, b)] - want[a][b]).abs() <= tol,
                        "{n}×{d} ({a},{b}): {} vs {}",
                        scatter[(a, b)],
                        want[a][b]
                    );
                }
            }
        }
    }

    /// f32 integers above 2²⁴ are 64 apart near 1e9: the midpoint 1e9 + 32 of 1e9 and 1e9 + 64
    /// is not an f32, so those chunks take the f64 copy; a representable midpoint the f32 one.
    /// Either way the moments are exact.
    #[test]
    fn large_f32_integers_are_exact_whether_their_shift_is_an_f32_or_not() {
        for (step, top) in [(64.0f32, 1), (64.0, 2)] {
            let x32 = Mat::<f32>::from_fn(300, 2, |i, j| {
                1e9 + step * ((i * (j + 1)) % (top + 1)) as f32
            });
            let x = Mat::<f64>::from_fn(300, 2, |i, j| f64::from(x32[(i, j)]));
            let (shift, _) = small_integer_range(x32.as_ref(), Par::Seq).unwrap();
            assert_eq!(
                f64::from(shift[0] as f32) == shift[0],
                top == 2,
                "{shift:?}"
            );
            let rows = x32.transpose().to_owned();
            let mut ws = Workspace::default();
            let mean =
                chunk_moments(rows.as_ref().transpose(), &mut ws, 0, Precision::Full).unwrap();
            let (want_mean, want) = reference(&x);
            for a in 0..2 {
                assert_eq!(mean[a], want_mean[a], "top {top}");
                for b in 0..=a {
                    assert_eq!(ws.scatter[(a, b)], want[a][b], "top {top} ({a},{b})");
                }
            }
        }
    }

    #[test]
    fn integers_far_from_zero_are_shifted_and_stay_exact() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let x = Mat::<f64>::from_fn(700, 6, |_, j| {
            1e6 * (j as f64 - 2.0) + rng.random_range(0..=255) as f64
        });
        let (shift, magnitude) = small_integer_range(x.as_ref(), Par::Seq).unwrap();
        assert!(
            magnitude <= 128.0 && shift[0] < -1.9e6,
            "{shift:?} {magnitude}"
        );
        let mut ws = Workspace::default();
        let mean = chunk_moments(x.as_ref(), &mut ws, 0, Precision::Full).unwrap();
        let (want_mean, want) = reference(&x);
        for a in 0..6 {
            assert!(
                (mean[a] - want_mean[a]).abs() <= 1e-9,
                "{} vs {}",
                mean[a],
                want_mean[a]
            );
            for b in 0..=a {
                assert!(
                    (ws.scatter[(a, b)] - want[a][b]).abs() <= 1e-9 * want[a][a].max(1.0),
                    "({a},{b})"
                );
            }
        }
    }

    #[test]
    fn float_path_is_exact_to_rounding_far_from_zero_and_across_threads() {
        // 5,000 rows: the sums and the centred copy are split over threads; an offset of 1e6
        // with unit spread, plus one far outlier, is where a one-pass formula would fail.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let (n, d) = (5000, 7);
        let x = Mat::<f64>::from_fn(n, d, |i, j| {
            let outlier = if i == 0 { 1e4 } else { 0.0 };
            1e6 * (1.0 + j as f64) + rng.random::<f64>() + outlier
        });
        let rows = x.transpose().to_owned();
        for view in [x.as_ref(), rows.as_ref().transpose()] {
            let mut ws = Workspace::default();
            let mean = chunk_moments(view, &mut ws, 0, Precision::Full).unwrap();
            let (want_mean, want) = reference(&x);
            for a in 0..d {
                assert!(
                    (mean[a] - want_mean[a]).abs() <= 1e-13 * want_mean[a].abs(),
                    "{} vs {}",
                    mean[a],
                    want_mean[a]
                );
                for b in 0..=a {
                    let tol = 1e-11 * (want[a][a] * want[b][b]).sqrt();
                    assert!(
                        (ws.scatter[(a, b)] - want[a][b]).abs() <= tol,
                        "({a},{b}): {} vs {}",
                        ws.scatter[(a, b)],
                        want[a][b]
                    );
                }
            }
        }
    }

    /// The merge is exact identities, whatever the centres: blocks centred far from their mean
    /// (where the `s sᵀ/r` term and Chan's term are large) give the moments of all the rows.
    #[test]
    fn blocks_merge_exactly_whatever_their_centres() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let d = 5;
        let x = Mat::<f64>::from_fn(700, d, |_, j| {
            (rng.random::<f64>() - 0.5) * (1.0 + j as f64) + 3.0 * j as f64
        });
        let (want_mean, want) = reference(&x);
        let mut scatter = Mat::<f64>::zeros(d, d);
        let mut merged = BlockMerge::new(d);
        let mut start = 0;
        for (k, rows) in [1, 250, 2, 300, 147].into_iter().enumerate() {
            let centre: Vec<f64> = (0..d).map(|j| 10.0 * (k + j) as f64 - 7.0).collect();
            let y = Mat::<f64>::from_fn(rows, d, |i, j| x[(start + i, j)] - centre[j]);
            let residual: Vec<f64> = (0..d).map(|j| y.col(j).iter().sum()).collect();
            for a in 0..d {
                for b in 0..=a {
                    scatter[(a, b)] += (0..rows).map(|i| y[(i, a)] * y[(i, b)]).sum::<f64>();
                }
            }
            merged.add(scatter.as_mut(), rows, &centre, &residual);
            start += rows;
        }
        assert_eq!(start, x.nrows());
        for a in 0..d {
            assert!((merged.mean[a] - want_mean[a]).abs() <= 1e-12, "mean {a}");
            for b in 0..=a {
                let tol = 1e-11 * (want[a][a] * want[b][b]).sqrt();
                assert!(
                    (scatter[(a, b)] - want[a][b]).abs() <= tol,
                    "({a},{b}): {} vs {}",
                    scatter[(a, b)],
                    want[a][b]
                );
            }
        }
    }

    #[test]
    fn float_path_names_the_first_non_finite_value() {
        let mut x = Mat::<f64>::from_fn(3000, 4, |i, j| (i + j) as f64 + 0.5);
        x[(2500, 2)] = f64::NAN;
        let rows = x.transpose().to_owned();
        let err = chunk_moments(
            rows.as_ref().transpose(),
            &mut Workspace::default(),
            100,
            Precision::Full,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("2600") && err.contains("NaN"), "{err}");
    }

    #[test]
    fn mixed_precision_keeps_every_entry_within_its_bound() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (n, d) = (3000, 12);
        let x32 = Mat::<f32>::from_fn(n, d, |_, j| {
            (1e3 * j as f64 + rng.random::<f64>() * (1.0 + j as f64)) as f32
        });
        let x = Mat::<f64>::from_fn(n, d, |i, j| f64::from(x32[(i, j)]));
        let rows = x32.transpose().to_owned();
        let mut ws = Workspace::default();
        let mean = chunk_moments(rows.as_ref().transpose(), &mut ws, 0, Precision::Mixed).unwrap();
        let mixed = ws.scatter.clone();
        let full_mean = chunk_moments(x.as_ref(), &mut ws, 0, Precision::Full).unwrap();
        let u = f64::from(f32::EPSILON) / 2.0;
        let per_entry = (crate::MIXED_BLOCK_ROWS as f64 + 3.0) * u;
        let mut largest = 0.0f64;
        for a in 0..d {
            assert!((mean[a] - full_mean[a]).abs() <= 1e-12 * full_mean[a].abs().max(1.0));
            for b in 0..=a {
                let scale = (ws.scatter[(a, a)] * ws.scatter[(b, b)]).sqrt();
                let err = (mixed[(a, b)] - ws.scatter[(a, b)]).abs();
                assert!(
                    err <= per_entry * scale,
                    "({a},{b}): {err} > {}",
                    per_entry * scale
                );
                largest = largest.max(err / scale);
            }
        }
        // The f32 path really ran: f64 products would agree to ~1e-15.
        assert!(largest > 1e-12, "{largest}");
    }

    #[test]
    fn mixed_precision_leaves_small_integers_exact() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let x32 = Mat::<f32>::from_fn(2000, 9, |_, _| rng.random_range(0..=255) as f32);
        let mut ws = Workspace::default();
        let a = chunk_moments(x32.as_ref(), &mut ws, 0, Precision::Mixed).unwrap();
        let mixed = ws.scatter.clone();
        let b = chunk_moments(x32.as_ref(), &mut ws, 0, Precision::Full).unwrap();
        assert_eq!(a, b);
        assert_eq!(mixed, ws.scatter);
    }

    /// The f32 scan (in f32) against the f64 scan of the same values: which are integers,
    /// around 2²³ (where f32 stops having fractions) and 2⁴⁰ (the largest accepted), and the
    /// ranges.
    #[test]
    fn f32_scan_agrees_with_the_f64_scan() {
        let two23 = 8_388_608.0f32;
        let two40 = 1_099_511_627_776.0f32;
        let specials = [
            0.5,
            -0.5,
            two23 - 0.5,
            -(two23 - 0.5),
            two23 - 1.0,
            two23,
            two23 + 2.0,
            two40,
            -two40,
            two40 * 2.0,
            f32::INFINITY,
            f32::NAN,
            -0.0,
            3.0,
        ];
        for &special in &specials {
            for (rows, d) in [(3usize, 5usize), (700, 37)] {
                let mut x =
                    Mat::<f32>::from_fn(d, rows, |j, i| ((i * 7 + j * 3) % 11) as f32 - 5.0);
                x[(d / 2, rows - 1)] = special;
                let wide = Mat::<f64>::from_fn(d, rows, |j, i| f64::from(x[(j, i)]));
                for par in [Par::Seq, Par::rayon(2)] {
                    let narrow = IntegerRange::scan(x.transpose(), par);
                    let reference = IntegerRange::scan(wide.transpose(), par);
                    assert_eq!(narrow.is_some(), reference.is_some(), "{special}");
                    if let (Some(a), Some(b)) = (narrow, reference) {
                        assert_eq!((a.lo, a.hi), (b.lo, b.hi), "{special}");
                    }
                }
            }
        }
    }

    #[test]
    fn non_integers_and_large_integers_take_the_float_path() {
        let x = Mat::<f64>::from_fn(100, 3, |i, j| (i * j) as f64 + 0.5);
        assert!(small_integer_range(x.as_ref(), Par::Seq).is_none());
        let big = Mat::<f64>::from_fn(100, 3, |i, _| (i * 1000) as f64);
        assert!(small_integer_range(big.as_ref(), Par::Seq).is_none());
        let mut ws = Workspace::default();
        let mean = chunk_moments(x.as_ref(), &mut ws, 0, Precision::Full).unwrap();
        let scatter = &ws.scatter;
        let (want_mean, want) = reference(&x);
        for a in 0..3 {
            assert!((mean[a] - want_mean[a]).abs() < 1e-12 * want_mean[a].abs().max(1.0));
            assert!((scatter[(a, 0)] - want[a][0]).abs() < 1e-9 * want[a][a].max(1.0));
        }
    }
}
