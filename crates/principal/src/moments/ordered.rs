//! The ordered path: exact moments of integer data with many zeros (images on a blank
//! background, counts). The rows are ordered so that each block of rows has its zeros in the
//! same columns, and the block's product leaves those columns out. Each block's product is
//! exact: in bytes where every feature's values span at most 256 (see `moments::bytes`), else
//! the integer path's f32 products of shifted integers over blocks short enough to be exact;
//! the blocks are summed in f64. So the result is the same exact integer sums, and the same
//! bits, as without the ordering; only the products of columns that are zero throughout a
//! block (whose contribution is zero) are skipped.
//!
//! A *column order* ranks the columns, and a row's *reach* in it is one more than the highest
//! rank among the row's non-zero values. Sorted by reach, a block of rows is zero beyond the
//! reach of its last row: its product covers a leading `a × a` corner of the ordered columns,
//! `(a/D)²` of the dense work. A single order (columns by how often they are non-zero) leaves
//! much of the work on images of objects of different shapes, each with rare pixels that the
//! others rank last. So up to [`ORDERS`] orders are learnt from a sample, as k-means learns
//! centres (each row joins the order in which its reach is least; each order ranks the
//! columns by how often its rows are non-zero there), and every row is taken in its best
//! order. (The shares of the dense work this leaves on Fashion-MNIST are in bench/results.md.)
//! The orders are learnt from the first chunk an accumulator tries the path on and kept for
//! its next chunks ([`ColumnOrders`]); the sorted rows are cut into blocks for the least work
//! ([`blocks_of`]). Bytes as stored (`u8`) take the path as they are, as f32 and f64 rows do.
//!
//! The raw cross-products `Σ x xᵀ` are accumulated (exact integers) per order, added up in the
//! columns' own order, and converted at the end to the shifted sums of the integer path;
//! columns outside a block's corner add nothing there.

use faer::{Accum, Mat, MatMut, MatRef, Par};

use crate::kernel::blocks::ensure_block;
use crate::kernel::bytes::ByteProduct;
use crate::kernel::parallel::join;
use crate::kernel::products::{RankTwoUpdate, for_lower_columns, lower_product};
use crate::kernel::scan::IntegerRange;
use crate::kernel::simd::{Kernel, dispatch};
use crate::moments::bytes::{BLOCK_ROWS as BYTE_BLOCK_ROWS, ByteBlocks, Stored};
use crate::moments::integer::{centre_shifted_sums, integer_block_rows};
use crate::moments::workspace::{ColumnOrders, Workspace};

/// Rows sampled to learn the column orders: more learn barely better orders, for a third more
/// of the learning's time (bench/results.md).
const SAMPLE_ROWS: usize = 1024;
/// Column orders the rows choose from (the learning starts by splitting the rows in two).
const ORDERS: usize = 2;
/// Rounds of learning the orders (they need not settle; the best round is kept).
const LEARNING_ROUNDS: usize = 8;
/// Largest share of non-zero values (in the sample) for which the path is tried.
const MAX_NONZERO_SHARE: f64 = 0.75;
/// Largest share of the dense products the ordered blocks may need for the path to be taken.
const MAX_WORK_SHARE: f64 = 0.85;
/// A block's fixed cost (adding its product to the sums, the kernel's set-up), in rows of its
/// corner: the blocks are cut to least `Σ a²(r + BLOCK_OVERHEAD_ROWS)` (see [`blocks_of`]).
/// One block of 784 features timed at 512 and 2,048 rows gave 34 to 128 (`vpmaddwd`,
/// bench/results.md).
const BLOCK_OVERHEAD_ROWS: usize = 64;
/// Blocks start at multiples of this many rows of their order's stretch.
const BLOCK_STEP: usize = 64;

/// Rows keyed by the column order they take and their reach in it: what the ordered path
/// learns of a chunk before any product.
pub(crate) struct OrderedRows {
    /// Per order, each column's rank.
    ranks: Vec<Vec<u32>>,
    /// Each row's key, `order · (D + 1) + reach`.
    key: Vec<u32>,
    /// Each feature's least and greatest value.
    pub(crate) range: IntegerRange,
}

impl OrderedRows {
    /// Keys every row of a row-major chunk of integers with many zeros in `orders` (learnt
    /// first from a sample of this chunk if they are not yet); `None` when the chunk is not
    /// such (too small, not integers, too few zeros; `orders` then say so for the next chunks
    /// unless the chunk was only too small or not row-major): the caller then takes the
    /// general path, which also reports any non-finite value.
    pub(crate) fn key<T: Stored>(
        chunk: MatRef<'_, T>,
        orders: &mut ColumnOrders,
        par: Par,
    ) -> Option<Self> {
        let (n, d) = (chunk.nrows(), chunk.ncols());
        if !orders.may_take(n) || d < 2 || chunk.col_stride() != 1 {
            return None;
        }
        if let ColumnOrders::Unlearnt = orders {
            *orders = match Sample::of(chunk) {
                Some(sample) => ColumnOrders::Learnt(sample.learn_orders(par)),
                None => ColumnOrders::Declined,
            };
        }
        let ColumnOrders::Learnt(ranks) = orders else {
            return None;
        };
        // Rows sorted by (order, reach in it): each order's rows are one stretch.
        let Some((range, key)) = ranged_keys(chunk, ranks, par) else {
            *orders = ColumnOrders::Declined;
            return None;
        };
        Some(OrderedRows {
            ranks: ranks.clone(),
            key,
            range,
        })
    }
}

/// A stretch of rows sorted by reach (`reach(row)`) cut into blocks of at most `most` rows,
/// starting at multiples of [`BLOCK_STEP`] rows, with the least work: `Σ a²(r + overhead)`
/// over the blocks, `a` a block's corner (the reach of its last row), `r` its rows. Fixed
/// blocks leave the ragged end of every stretch at the farthest reach: in the CLI's chunks of
/// Fashion-MNIST (5,120 rows doubling up to 20,480), fixed blocks of 2,048 rows needed 0.689
/// of the dense work, these 0.614 (bench/results.md).
fn blocks_of(stretch: &[u32], most: usize, reach: impl Fn(u32) -> usize) -> Vec<&[u32]> {
    let m = stretch.len();
    let step = BLOCK_STEP.min(most).max(1);
    let mut cuts: Vec<usize> = (0..m).step_by(step).collect();
    cuts.push(m);
    // best[e]: the least work of the rows before cuts[e], and where its last block starts.
    let mut best = vec![(0.0f64, 0usize); cuts.len()];
    for e in 1..cuts.len() {
        let a = reach(stretch[cuts[e] - 1]) as f64;
        best[e] = (f64::INFINITY, 0);
        for s in (0..e).rev() {
            let r = cuts[e] - cuts[s];
            if r > most {
                break;
            }
            let work = best[s].0 + a * a * (r + BLOCK_OVERHEAD_ROWS) as f64;
            if work < best[e].0 {
                best[e] = (work, s);
            }
        }
    }
    let mut blocks = Vec::new();
    let mut e = cuts.len() - 1;
    while e > 0 {
        let s = best[e].1;
        blocks.push(&stretch[cuts[s]..cuts[e]]);
        e = s;
    }
    blocks.reverse();
    blocks
}

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` (into `ws.scatter`, which [`Workspace::prepare`]
/// has readied) of the chunk whose rows are `ordered`, each block's product by `bytes` (made
/// for `ordered.range`) or, without it, in f32 as the integer path's; or `None` when the
/// ordered blocks would not save enough of the dense work (zeros too scattered to leave whole
/// columns out) or their sums could leave the exact integers.
pub(crate) fn ordered_moments<T: Stored, P: ByteProduct>(
    chunk: MatRef<'_, T>,
    ordered: &OrderedRows,
    bytes: Option<&ByteBlocks<T, P>>,
    ws: &mut Workspace,
) -> Option<Vec<f64>> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    let OrderedRows { ranks, key, range } = ordered;
    // The integer path's shift (for the final rounding, the same as that path's).
    let (shift, magnitude) = range.midpoint_shift();
    let (block, block_shift) = match bytes {
        Some(bytes) => (BYTE_BLOCK_ROWS, bytes.shift().to_vec()),
        None => (integer_block_rows(magnitude)?, shift.clone()),
    };
    // Raw sums Σxxᵀ and their conversion stay exact integers below 2⁵³ (a byte block's shift
    // is up to 128 beyond the data).
    let largest = range
        .lo
        .iter()
        .chain(&range.hi)
        .fold(0.0f64, |m, v| m.max(v.abs()))
        + if bytes.is_some() { 128.0 } else { 0.0 };
    if 4.0 * n as f64 * largest * largest >= 9_007_199_254_740_992.0 {
        return None;
    }
    let sorted = sorted_by_key(key, ranks.len() * (d + 1));
    let order_of = |row: u32| key[row as usize] as usize / (d + 1);
    let stretches: Vec<&[u32]> = sorted
        .chunk_by(|&a, &b| order_of(a) == order_of(b))
        .collect();
    // A block's corner: the reach of its last (farthest-reaching) row.
    let reach = |row: u32| key[row as usize] as usize % (d + 1);
    let corner = |rows: &[u32]| reach(*rows.last().expect("blocks are not empty"));
    let blocks: Vec<Vec<&[u32]>> = stretches
        .iter()
        .map(|stretch| blocks_of(stretch, block, reach))
        .collect();
    let work: f64 = blocks
        .iter()
        .flatten()
        .map(|rows| (corner(rows) * corner(rows) * rows.len()) as f64)
        .sum();
    if work > MAX_WORK_SHARE * (d * d) as f64 * n as f64 {
        return None;
    }

    // One more row than columns: a row of ones, whose products with the others are the
    // block's sums (exact: at most m·block < 2²⁴), so they need no pass of their own.
    if bytes.is_none() {
        ensure_block(&mut ws.block32, d + 1, block);
    }
    let par = ws.par;
    // Σxxᵀ (lower triangle, in the scatter's place) and Σx in the columns' own order, over all
    // the orders' rows.
    let (raw, product) = (&mut ws.scatter, &mut ws.partial);
    let mut raw_sums = vec![0.0f64; d];
    // The same for one order's rows, in its ranks (zeroed below as far as they reach).
    let ranked = &mut ws.ranked;
    if ranked.nrows() != d {
        *ranked = Mat::zeros(d, d);
    }
    let mut ranked_sums = vec![0.0f64; d];
    for (stretch, blocks) in stretches.iter().zip(blocks) {
        // Columns in rank order: `by_rank[t]` is the column of rank t.
        let mut by_rank = vec![0u32; d];
        for (j, &r) in ranks[order_of(stretch[0])].iter().enumerate() {
            by_rank[r as usize] = j as u32;
        }
        let ranked_shift: Vec<f64> = by_rank.iter().map(|&j| block_shift[j as usize]).collect();
        let reached = corner(stretch);
        ranked
            .as_mut()
            .submatrix_mut(0, 0, reached, reached)
            .fill(0.0);
        ranked_sums.fill(0.0);
        for rows in blocks {
            let a = corner(rows);
            if a == 0 {
                continue; // all-zero rows add nothing to the raw sums
            }
            let r = rows.len() as f64;
            let ranked = ranked.as_mut().submatrix_mut(0, 0, a, a);
            let sums = match bytes {
                Some(bytes) => bytes.add_block(
                    &mut ws.bytes,
                    chunk,
                    rows,
                    &by_rank[..a],
                    &ranked_shift[..a],
                    ranked,
                    par,
                ),
                None => {
                    let dst = ws.block32.as_mut().submatrix_mut(0, 0, a + 1, rows.len());
                    gather_shifted(chunk, rows, &by_rank[..a], &ranked_shift[..a], dst, par);
                    let mut product = product.as_mut().submatrix_mut(0, 0, a + 1, a + 1);
                    lower_product(
                        product.as_mut(),
                        Accum::Replace,
                        ws.block32.as_ref().submatrix(0, 0, a + 1, rows.len()),
                        par,
                    );
                    let sums: Vec<f64> = (0..a).map(|t| f64::from(product[(a, t)])).collect();
                    add_raw_block(
                        ranked,
                        product.as_ref().submatrix(0, 0, a, a),
                        &sums,
                        &ranked_shift[..a],
                        r,
                        par,
                    );
                    sums
                }
            };
            for t in 0..a {
                ranked_sums[t] += sums[t] + r * ranked_shift[t];
            }
        }
        // Into the columns' own order (exact integer additions): each column of the ranks'
        // triangle into one column of `raw`, above its diagonal as often as below (one column
        // stays in cache where the triangle's place would be anywhere); folded below.
        for u in 0..reached {
            let j = by_rank[u] as usize;
            raw_sums[j] += ranked_sums[u];
            let column = raw.col_mut(j).try_as_col_major_mut().expect("contiguous");
            let column = column.as_slice_mut();
            for t in u..reached {
                column[by_rank[t] as usize] += ranked[(t, u)];
            }
        }
    }
    // The part above the diagonal onto the lower triangle.
    for j in 0..d {
        for i in j + 1..d {
            let above = raw[(j, i)];
            raw[(i, j)] += above;
        }
    }

    // Back to the integer path's sums of y = x − shift: Σyyᵀ = Σxxᵀ − s cᵀ − c sᵀ + n c cᵀ and
    // Σy = s − n c, exact; then its one rounding.
    let nf = n as f64;
    let c = &shift;
    let sums: Vec<f64> = (0..d).map(|j| raw_sums[j] - nf * c[j]).collect();
    for j in 0..d {
        for i in j..d {
            raw[(i, j)] = raw[(i, j)] - raw_sums[i] * c[j] - c[i] * raw_sums[j] + nf * c[i] * c[j];
        }
    }
    Some(centre_shifted_sums(raw.as_mut(), &sums, c, n))
}

/// Which values are non-zero in a sample of rows (every `n / SAMPLE_ROWS`-th): per row, 1 or 0
/// per column.
struct Sample {
    nonzero: Vec<u8>,
    d: usize,
}

impl Sample {
    /// `None` when most values are non-zero.
    fn of<T: Stored>(chunk: MatRef<'_, T>) -> Option<Self> {
        let (n, d) = (chunk.nrows(), chunk.ncols());
        let step = (n / SAMPLE_ROWS).max(1);
        let mut nonzero = Vec::with_capacity(d * n.div_ceil(step));
        let mut integers = true;
        for i in (0..n).step_by(step) {
            let row = chunk.row(i).try_as_row_major().expect("row-major");
            nonzero.extend(row.as_slice().iter().map(|v| (v.nonzero() & 1) as u8));
            integers &= row.as_slice().iter().fold(true, |ok, v| ok & v.is_whole());
        }
        // Data that is not integers is turned away before the orders are learnt for it.
        if !integers {
            return None;
        }
        let count: usize = nonzero.iter().map(|&b| usize::from(b)).sum();
        let share = count as f64 / nonzero.len() as f64;
        (share <= MAX_NONZERO_SHARE).then_some(Sample { nonzero, d })
    }

    fn rows(&self) -> std::slice::ChunksExact<'_, u8> {
        self.nonzero.chunks_exact(self.d)
    }

    /// Up to [`ORDERS`] column orders (`rank[j]` is column j's place), learnt as k-means
    /// learns centres. One order ranks the columns by how often they are non-zero; the rows
    /// then start split at their median reach in it. In each round every order ranks the
    /// columns by how often its rows are non-zero there (then by how often all rows are, then
    /// by index), and every row moves to the order in which its reach is least (the first on
    /// ties). The orders kept are those of the round with the least sampled work (the sum of
    /// squared reaches), or the single order when that is less. The rounds need not settle,
    /// hence the best of them.
    fn learn_orders(&self, par: Par) -> Vec<Vec<u32>> {
        let rows = self.nonzero.len() / self.d;
        let mut member = vec![0usize; rows];
        let single = self.rankings(&member, 1);
        let mut reach = vec![0u32; rows];
        let single_cost = self.assign(&single, &mut member, &mut reach, par);
        let mut best = (single, single_cost);
        let mut sorted = reach.clone();
        sorted.sort_unstable();
        let median = sorted[rows / 2];
        for (m, &r) in member.iter_mut().zip(&reach) {
            *m = usize::from(r > median);
        }
        for _ in 0..LEARNING_ROUNDS {
            let ranks = self.rankings(&member, ORDERS);
            let before = member.clone();
            let cost = self.assign(&ranks, &mut member, &mut reach, par);
            if cost < best.1 {
                best = (ranks, cost);
            }
            if member == before {
                break;
            }
        }
        best.0
    }

    /// For each of `orders` orders, the columns ranked by how often the rows of that order are
    /// non-zero in them, then by how often all rows are, then by index.
    fn rankings(&self, member: &[usize], orders: usize) -> Vec<Vec<u32>> {
        let mut count = vec![vec![0u32; self.d]; orders];
        for (row, &m) in self.rows().zip(member) {
            for (k, &one) in count[m].iter_mut().zip(row) {
                *k += u32::from(one);
            }
        }
        let total: Vec<u32> = (0..self.d)
            .map(|j| count.iter().map(|c| c[j]).sum())
            .collect();
        count
            .iter()
            .map(|count| {
                let mut columns: Vec<u32> = (0..self.d as u32).collect();
                columns.sort_by_key(|&j| {
                    let j = j as usize;
                    std::cmp::Reverse((u64::from(count[j]) << 32) | u64::from(total[j]))
                });
                let mut rank = vec![0u32; self.d];
                for (r, &j) in columns.iter().enumerate() {
                    rank[j as usize] = r as u32;
                }
                rank
            })
            .collect()
    }

    /// Moves every row to the order in which its reach is least (and notes that reach);
    /// returns the sum of the squared reaches. Two halves of the rows on two threads if `par`
    /// allows.
    fn assign(&self, ranks: &[Vec<u32>], member: &mut [usize], reach: &mut [u32], par: Par) -> f64 {
        let after = plus_one(ranks);
        let half = member.len() / 2;
        let (masks_left, masks_right) = self.nonzero.split_at(half * self.d);
        let (member_left, member_right) = member.split_at_mut(half);
        let (reach_left, reach_right) = reach.split_at_mut(half);
        let assign = |masks: &[u8], member: &mut [usize], reach: &mut [u32]| {
            dispatch(AssignRows {
                rows: masks.chunks_exact(self.d),
                after: &after,
                member,
                reach,
            })
        };
        let (left, right) = join(
            par,
            || assign(masks_left, member_left, reach_left),
            || assign(masks_right, member_right, reach_right),
        );
        left + right
    }
}

/// [`Sample::assign`] for some of the rows.
struct AssignRows<'a> {
    rows: std::slice::ChunksExact<'a, u8>,
    after: &'a [Vec<u32>],
    member: &'a mut [usize],
    reach: &'a mut [u32],
}

impl Kernel for AssignRows<'_> {
    type Output = f64;
    #[inline(always)]
    fn run(self) -> f64 {
        let mut cost = 0.0;
        let rows = self
            .rows
            .zip(self.member.iter_mut())
            .zip(self.reach.iter_mut());
        for ((row, m), reach) in rows {
            let (least, order) = LeastReach {
                row: MaskedRow::<f32>::Nonzero(row),
                after: self.after,
            }
            .run();
            (*m, *reach) = (order, least);
            cost += f64::from(least) * f64::from(least);
        }
        cost
    }
}

/// Each row's key, `order · (D + 1) + reach` for the order in which its reach is least (see
/// [`LeastReach`]; `ranks[c][j]` is column j's rank in order c), and the per-feature range of
/// the values, or `None` as soon as a value is not an integer (see [`IntegerRange::scan`]).
/// One pass: groups of rows small enough to stay in cache are scanned, then keyed. Two halves
/// of the rows on two threads if `par` allows.
fn ranged_keys<T: Stored>(
    chunk: MatRef<'_, T>,
    ranks: &[Vec<u32>],
    par: Par,
) -> Option<(IntegerRange, Vec<u32>)> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    let after = plus_one(ranks);
    let group = ((1usize << 19) / (d * std::mem::size_of::<T>())).max(1);
    let part = |rows: MatRef<'_, T>, out: &mut [u32]| -> Option<IntegerRange> {
        let mut range = IntegerRange::empty(d);
        for (start, out) in (0..rows.nrows()).step_by(group).zip(out.chunks_mut(group)) {
            let rows = rows.subrows(start, out.len());
            range.widen(&T::integer_range(rows, Par::Seq)?);
            dispatch(RowKeys {
                rows,
                after: &after,
                out,
            });
        }
        Some(range)
    };
    let mut keys = vec![0u32; n];
    let half = n / 2;
    let (left, right) = keys.split_at_mut(half);
    let (top, bottom) = join(
        par,
        || part(chunk.subrows(0, half), left),
        || part(chunk.subrows(half, n - half), right),
    );
    let mut range = top?;
    range.widen(&bottom?);
    Some((range, keys))
}

struct RowKeys<'a, T> {
    rows: MatRef<'a, T>,
    /// Per order, each column's rank plus one.
    after: &'a [Vec<u32>],
    out: &'a mut [u32],
}

impl<T: Stored> Kernel for RowKeys<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let d = self.rows.ncols() as u32;
        for (i, out) in self.out.iter_mut().enumerate() {
            let row = self.rows.row(i).try_as_row_major().expect("row-major");
            let (reach, order) = LeastReach {
                row: MaskedRow::Values(row.as_slice()),
                after: self.after,
            }
            .run();
            *out = order as u32 * (d + 1) + reach;
        }
    }
}

/// Each order's ranks plus one: the reach a non-zero value in that column gives its row.
fn plus_one(ranks: &[Vec<u32>]) -> Vec<Vec<u32>> {
    ranks
        .iter()
        .map(|rank| rank.iter().map(|r| r + 1).collect())
        .collect()
}

/// A row as its values, or as which of them are non-zero (1 or 0).
enum MaskedRow<'a, T> {
    Values(&'a [T]),
    Nonzero(&'a [u8]),
}

/// The least reach of a row over the orders (`after`: each column's rank plus one), and the
/// first order that has it.
struct LeastReach<'a, T> {
    row: MaskedRow<'a, T>,
    after: &'a [Vec<u32>],
}

impl<T: Stored> Kernel for LeastReach<'_, T> {
    type Output = (u32, usize);
    #[inline(always)]
    fn run(self) -> (u32, usize) {
        let mut best = (u32::MAX, 0);
        for (c, after) in self.after.iter().enumerate() {
            let reach = match self.row {
                MaskedRow::Values(values) => lane_max(values, after, |v: &T| v.nonzero()),
                MaskedRow::Nonzero(ones) => {
                    lane_max(ones, after, |&b: &u8| u32::from(b).wrapping_neg())
                }
            };
            if reach < best.0 {
                best = (reach, c);
            }
        }
        best
    }
}

/// `max_j after[j] & mask(values[j])`, in sixteen running maxima that the compiler keeps in
/// vector registers (one maximum over a floating-point select does not vectorise, and was
/// several times slower: bench/results.md).
#[inline(always)]
fn lane_max<V>(values: &[V], after: &[u32], mask: impl Fn(&V) -> u32) -> u32 {
    const LANES: usize = 16;
    let (chunks, ranks) = (values.chunks_exact(LANES), after.chunks_exact(LANES));
    let tail = chunks.remainder().iter().zip(ranks.remainder());
    let mut lanes = [0u32; LANES];
    for (v, r) in chunks.zip(ranks) {
        for l in 0..LANES {
            lanes[l] = lanes[l].max(r[l] & mask(&v[l]));
        }
    }
    tail.map(|(v, &r)| r & mask(v))
        .chain(lanes)
        .fold(0, u32::max)
}

/// Row indices sorted by key (a stable counting sort: ties keep file order).
fn sorted_by_key(key: &[u32], n_keys: usize) -> Vec<u32> {
    let mut start = vec![0usize; n_keys + 1];
    for &k in key {
        start[k as usize + 1] += 1;
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut order = vec![0u32; key.len()];
    for (i, &k) in key.iter().enumerate() {
        order[start[k as usize]] = i as u32;
        start[k as usize] += 1;
    }
    order
}

/// Writes `x[row, columns[t]] − shift[t]` for the listed rows as the columns of `dst`
/// (`columns.len() + 1` × `rows.len()`), each column ending in a 1 (the row of ones whose
/// products are the block's sums). Two halves of the rows on two threads when `par` allows and
/// the block is large.
fn gather_shifted<T: Stored>(
    x: MatRef<'_, T>,
    rows: &[u32],
    columns: &[u32],
    shift: &[f64],
    dst: MatMut<'_, f32>,
    par: Par,
) {
    if rows.len() >= 512 {
        let half = rows.len() / 2;
        let (left, right) = dst.split_at_col_mut(half);
        join(
            par,
            || gather_shifted(x, &rows[..half], columns, shift, left, par),
            || gather_shifted(x, &rows[half..], columns, shift, right, par),
        );
        return;
    }
    dispatch(GatherShifted {
        x,
        rows,
        columns,
        shift,
        dst,
    })
}

struct GatherShifted<'a, T> {
    x: MatRef<'a, T>,
    rows: &'a [u32],
    columns: &'a [u32],
    shift: &'a [f64],
    dst: MatMut<'a, f32>,
}

impl<T: Stored> Kernel for GatherShifted<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let GatherShifted {
            x,
            rows,
            columns,
            shift,
            mut dst,
        } = self;
        let mut staged = vec![0.0f32; x.ncols()];
        for (k, &row) in rows.iter().enumerate() {
            // The row in file order first (a sequential read the prefetcher follows), then
            // picked in rank order from the cache.
            let values = x.row(row as usize).try_as_row_major().expect("row-major");
            for (s, v) in staged.iter_mut().zip(values.as_slice()) {
                *s = v.widen() as f32;
            }
            let out = dst.as_mut().col_mut(k).try_as_col_major_mut();
            let (out, ones) = out
                .expect("columns of a Mat are contiguous")
                .as_slice_mut()
                .split_at_mut(columns.len());
            for ((o, &j), &c) in out.iter_mut().zip(columns).zip(shift) {
                *o = staged[j as usize] - c as f32;
            }
            ones[0] = 1.0;
        }
    }
}

/// `raw += Σxxᵀ` of one block (lower triangle) from its shifted product `P = Σyyᵀ`, the sums `s
/// = Σy` and the shift `c` over `r` rows: `Σxxᵀ = P + s cᵀ + c sᵀ + r c cᵀ`, every term an
/// exact integer. By columns, on all threads if `par` says so.
fn add_raw_block(
    raw: MatMut<'_, f64>,
    product: MatRef<'_, f32>,
    sums: &[f64],
    shift: &[f64],
    r: f64,
    par: Par,
) {
    for_lower_columns(raw, product, par, |j, dst, product| {
        dispatch(RankTwoUpdate {
            dst,
            a: &sums[j..],
            alpha: shift[j],
            b: &shift[j..],
            beta: sums[j] + r * shift[j],
            plus: Some(product),
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::bytes::{ByteProduct, ReferenceBytes};
    use crate::moments::MomentAccumulator;
    use crate::moments::bytes::tests::{ProductCheck, Which, product_tests};
    use crate::moments::chunk::ordered;
    use crate::moments::integer::{integer_moments, small_integer_range};
    use crate::moments::workspace::ORDERED_MIN_ROWS;
    use crate::real::Real;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Rows that are non-zero only in a random leading stretch of one of two random column
    /// orders (as images of two kinds of object on a blank background are), plus a column that
    /// is never zero, one that always is, and some rows of zeros. Values in `lo..=hi` (zero
    /// included).
    fn sparse_integers(n: usize, d: usize, lo: i32, hi: i32, seed: u64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut kinds = [(0..d).collect::<Vec<usize>>(), (0..d).collect()];
        for columns in &mut kinds {
            for i in (2..d - 1).rev() {
                columns.swap(i, rng.random_range(1..=i));
            }
        }
        let mut x = Mat::<f64>::zeros(n, d);
        for i in 0..n {
            if i % 97 == 5 {
                continue;
            }
            let columns = &kinds[usize::from(rng.random_bool(0.4))];
            let reach = rng.random_range(1..d - 1);
            for &j in &columns[..reach] {
                if rng.random_bool(0.7) {
                    x[(i, j)] = f64::from(rng.random_range(lo..=hi));
                }
            }
            x[(i, columns[0])] = f64::from(rng.random_range(1..=hi));
            x[(i, columns[d - 1])] = 0.0;
        }
        x
    }

    fn row_major<T: Real>(x: &Mat<f64>) -> Mat<T> {
        Mat::<T>::from_fn(x.ncols(), x.nrows(), |j, i| T::from_f64(x[(i, j)]))
    }

    /// The same exact integer sums as the integer path over the whole chunk, so the same bits.
    fn same_bits_as_the_integer_path<T: Real, P: ByteProduct>(x: &Mat<f64>) {
        let (n, d) = (x.nrows(), x.ncols());
        let stored = row_major::<T>(x);
        let chunk = stored.transpose();
        for par in [Par::Seq, Par::rayon(2)] {
            let mut ws = Workspace {
                par,
                ..Default::default()
            };
            ws.prepare(d);
            let mean = ordered::<T, P>(chunk, &mut ws).expect("the ordered path applies");
            assert_the_integer_paths_bits(chunk, &mean, &ws, &format!("n = {n}, d = {d}"));
        }
    }

    /// `mean` and `ws.scatter`'s lower triangle are the integer path's over `chunk`, bit for
    /// bit.
    fn assert_the_integer_paths_bits<T: Real>(
        chunk: MatRef<'_, T>,
        mean: &[f64],
        ws: &Workspace,
        what: &str,
    ) {
        let d = chunk.ncols();
        let mut dense = Workspace {
            par: ws.par,
            ..Default::default()
        };
        dense.prepare(d);
        let (shift, magnitude) = small_integer_range(chunk, ws.par).expect("small integers");
        let reference = integer_moments(chunk, &shift, magnitude, &mut dense);
        assert_eq!(mean, reference, "means, {what}");
        for j in 0..d {
            for i in j..d {
                let (a, b) = (ws.scatter[(i, j)], dense.scatter[(i, j)]);
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{what}, ({i}, {j}): {a} against {b}"
                );
            }
        }
    }

    /// The vectorised reach against its definition: rows shorter and longer than the lanes,
    /// with a tail, zeros of both signs (neither reaches), rows of zeros; f32 and f64.
    #[test]
    fn reach_is_one_past_the_highest_rank_of_a_non_zero_value() {
        fn check<T: Real>() {
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            for d in [1, 15, 16, 17, 40, 100] {
                let mut rank: Vec<u32> = (0..d as u32).collect();
                for i in (1..d).rev() {
                    rank.swap(i, rng.random_range(0..=i));
                }
                let x = Mat::<T>::from_fn(d, 50, |_, i| {
                    T::from_f64(match (i % 7, rng.random_range(0..4)) {
                        (0, _) => 0.0,
                        (_, 0) => -0.0,
                        (_, 1) => f64::from(rng.random_range(-3..=3)),
                        _ => 0.0,
                    })
                });
                let rows = x.transpose();
                // The definition, row by row.
                let reach_in = |rank: &[u32]| -> Vec<u32> {
                    (0..50)
                        .map(|i| {
                            (0..d)
                                .filter(|&j| rows[(i, j)].to_f64() != 0.0)
                                .map(|j| rank[j] + 1)
                                .max()
                                .unwrap_or(0)
                        })
                        .collect()
                };
                let want = reach_in(&rank);
                // Against a second order (the reverse ranking), each row's key names the
                // order with the lesser reach, the first on ties.
                let reverse: Vec<u32> = rank.iter().map(|&r| d as u32 - 1 - r).collect();
                let other = reach_in(&reverse);
                let both: Vec<u32> = want
                    .iter()
                    .zip(&other)
                    .map(|(&a, &b)| if b < a { d as u32 + 1 + b } else { a })
                    .collect();
                for par in [Par::Seq, Par::rayon(2)] {
                    let keys =
                        |ranks: &[Vec<u32>]| ranged_keys(rows, ranks, par).expect("integers").1;
                    assert_eq!(keys(&[rank.clone()]), want, "d = {d}");
                    assert_eq!(keys(&[rank.clone(), reverse.clone()]), both);
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }

    /// The one pass of ranges and keys over many groups of rows: the range is the integer
    /// scan's, every row's key its own (as keyed alone), and a value that is not an integer,
    /// even in the last group, gives `None`.
    #[test]
    fn ranged_keys_match_the_scan_and_keying_rows_one_by_one() {
        let mut x = row_major::<f32>(&sparse_integers(5_000, 100, -7, 255, 3));
        // Extremes in one group each (the first, one in the middle, the last).
        (x[(3, 10)], x[(5, 2_600)], x[(7, 4_999)]) = (-1_000.0, 4_000.0, 9_000.0);
        let chunk = x.transpose();
        let d = chunk.ncols();
        let ranks: Vec<Vec<u32>> = vec![(0..d as u32).collect(), (0..d as u32).rev().collect()];
        let after = plus_one(&ranks);
        let alone: Vec<u32> = (0..chunk.nrows())
            .map(|i| {
                let mut key = [0u32];
                dispatch(RowKeys {
                    rows: chunk.subrows(i, 1),
                    after: &after,
                    out: &mut key,
                });
                key[0]
            })
            .collect();
        let scan = IntegerRange::scan(chunk, Par::Seq).expect("integers");
        for par in [Par::Seq, Par::rayon(2)] {
            let (range, keys) = ranged_keys(chunk, &ranks, par).expect("integers");
            assert_eq!((&range.lo, &range.hi), (&scan.lo, &scan.hi));
            assert_eq!(keys, alone);
        }
        let mut y = x.clone();
        y[(d - 1, 4_990)] = 0.5;
        assert!(ranged_keys(y.transpose(), &ranks, Par::rayon(2)).is_none());
    }

    /// Rows of two kinds: two orders are learnt, and the rows' blocks then need less work
    /// than in the single order (the sampled work may not mislead). The same on every thread
    /// count.
    #[test]
    fn two_kinds_of_rows_get_two_orders_and_less_work() {
        let x = row_major::<f32>(&sparse_integers(12_000, 150, 0, 255, 8));
        let chunk = x.transpose();
        let d = chunk.ncols();
        let sample = Sample::of(chunk).expect("sparse enough");
        let ranks = sample.learn_orders(Par::Seq);
        assert_eq!(ranks.len(), 2);
        assert_eq!(sample.learn_orders(Par::rayon(2)), ranks);
        let single = sample.rankings(&vec![0; sample.nonzero.len() / d], 1);
        let work = |ranks: &[Vec<u32>]| -> f64 {
            let (_, key) = ranged_keys(chunk, ranks, Par::Seq).expect("integers");
            let sorted = sorted_by_key(&key, ranks.len() * (d + 1));
            let order_of = |row: u32| key[row as usize] as usize / (d + 1);
            sorted
                .chunk_by(|&a, &b| order_of(a) == order_of(b))
                .flat_map(|rows| rows.chunks(1024))
                .map(|rows| {
                    let a = key[*rows.last().unwrap() as usize] as usize % (d + 1);
                    (a * a * rows.len()) as f64
                })
                .sum()
        };
        let (two, one) = (work(&ranks), work(&single));
        assert!(two < 0.85 * one, "two orders {two:e}, one {one:e}");
    }

    product_tests!(ordered_blocks_give_the_integer_paths_exact_sums:
        ordered_blocks_give_the_integer_paths_exact_sums_with_the_reference_product,
        ordered_blocks_give_the_integer_paths_exact_sums_with_rten_gemms_product,
        ordered_blocks_give_the_integer_paths_exact_sums_with_the_avx2_madd_product,
        ordered_blocks_give_the_integer_paths_exact_sums_with_the_avx_vnni_product,
        ordered_blocks_give_the_integer_paths_exact_sums_with_the_avx512_vnni_product,
        ordered_blocks_give_the_integer_paths_exact_sums_with_the_amx_product);

    /// Where every feature's values fit a byte, the blocks' products are taken in bytes
    /// (blocks of 2,048 rows) by an exact product; else in f32 (blocks of 1,024 rows for 256
    /// values, of 512 for 257 or 261). Ragged last blocks.
    fn ordered_blocks_give_the_integer_paths_exact_sums(what: &str, which: Which) {
        for (lo, hi, n, d, in_bytes) in [
            (0, 255, 9000, 70, true),
            (-128, 127, 8200, 41, true),
            (-60, 200, 8300, 33, false),
            (-128, 128, 8250, 20, false),
        ] {
            let mut x = sparse_integers(n, d, lo, hi, 2);
            // One feature spans the whole range.
            (x[(0, 3)], x[(1, 3)]) = (f64::from(lo), f64::from(hi));
            let range = IntegerRange::scan(x.as_ref(), Par::Seq).expect("integers");
            let widest = (0..d)
                .map(|j| range.hi[j] - range.lo[j])
                .fold(0.0, f64::max);
            assert_eq!(widest, f64::from(hi - lo));
            struct Ordered<'a> {
                x: &'a Mat<f64>,
                range: &'a IntegerRange,
                in_bytes: bool,
                what: String,
            }
            impl ProductCheck for Ordered<'_> {
                fn check<P: ByteProduct>(&mut self) {
                    let (lo, hi) = (&self.range.lo, &self.range.hi);
                    let blocks = ByteBlocks::<f64, P>::for_range(lo, hi);
                    assert_eq!(blocks.is_some(), self.in_bytes, "{}", self.what);
                    same_bits_as_the_integer_path::<f32, P>(self.x);
                    same_bits_as_the_integer_path::<f64, P>(self.x);
                }
            }
            which.run(&mut Ordered {
                x: &x,
                range: &range,
                in_bytes,
                what: format!("{what}: {lo}..={hi}"),
            });
        }
    }

    #[test]
    fn the_accumulator_takes_the_path_and_matches_an_f64_reference() {
        let x = sparse_integers(10_000, 400, 0, 255, 3);
        let stored = row_major::<f32>(&x);
        let mut ws = Workspace::default();
        ws.prepare(400);
        assert!(ordered::<f32, ReferenceBytes>(stored.transpose(), &mut ws).is_some());
        let mut acc = MomentAccumulator::new(400);
        acc.push(stored.transpose()).unwrap();
        let m = acc.finish().unwrap();
        let n = x.nrows() as f64;
        let mean: Vec<f64> = (0..400).map(|j| x.col(j).iter().sum::<f64>() / n).collect();
        let largest = (0..400).map(|j| m.scatter()[(j, j)]).fold(0.0f64, f64::max);
        for j in (0..400).step_by(7) {
            assert!((m.mean()[j] - mean[j]).abs() <= 1e-12 * 255.0);
            for i in (j..400).step_by(5) {
                let exact: f64 = (0..x.nrows())
                    .map(|r| (x[(r, i)] - mean[i]) * (x[(r, j)] - mean[j]))
                    .sum();
                let got = m.scatter()[(i.max(j), i.min(j))];
                assert!(
                    (got - exact).abs() <= 1e-12 * largest,
                    "({i}, {j}): {got} against {exact}"
                );
            }
        }
    }

    #[test]
    fn other_chunks_are_left_to_the_general_path() {
        // Each chunk into a workspace of its own: a declined chunk declines the next ones.
        let first_look = |x: MatRef<'_, f64>| {
            let mut ws = Workspace::default();
            ws.prepare(40);
            ordered::<f64, ReferenceBytes>(x, &mut ws)
        };
        let sparse = row_major::<f64>(&sparse_integers(9000, 40, 0, 255, 4));
        assert!(first_look(sparse.transpose()).is_some());
        // Too few rows; stored by columns.
        assert!(first_look(sparse.transpose().subrows(0, ORDERED_MIN_ROWS - 1)).is_none());
        let by_columns = sparse.transpose().to_owned();
        assert!(first_look(by_columns.as_ref()).is_none());
        // A non-integer, and a NaN (which the general path then names), in a sampled row
        // (every 4th; turned away before the orders are learnt) and in another (by the scan).
        for bad in [0.5, f64::NAN] {
            for (row, sampled) in [(8000, true), (8001, false)] {
                let mut x = sparse.clone();
                x[(17, row)] = bad;
                assert_eq!(Sample::of(x.transpose()).is_none(), sampled);
                assert!(first_look(x.transpose()).is_none());
            }
        }
        // Few zeros; zeros scattered at random (no whole columns to leave out).
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let dense = Mat::<f64>::from_fn(40, 9000, |_, _| f64::from(rng.random_range(1..=255)));
        assert!(first_look(dense.transpose()).is_none());
        let scattered = Mat::<f64>::from_fn(40, 9000, |_, _| {
            if rng.random_bool(0.6) {
                0.0
            } else {
                f64::from(rng.random_range(1..=255))
            }
        });
        assert!(first_look(scattered.transpose()).is_none());
    }

    /// A stream of chunks: the orders are learnt from the first and kept for the next (the
    /// same ranks, not learnt again), each chunk's moments still the integer path's bits;
    /// a chunk too short for the path neither learns nor declines; once the path is declined
    /// (here, by a chunk with few zeros) a sparse chunk no longer takes it.
    #[test]
    fn orders_are_learnt_once_then_kept_until_declined() {
        let d = 60;
        let mut ws = Workspace::default();
        ws.prepare(d);
        let short = row_major::<f32>(&sparse_integers(ORDERED_MIN_ROWS - 1, d, 0, 255, 1));
        assert!(ordered::<f32, ReferenceBytes>(short.transpose(), &mut ws).is_none());
        assert!(matches!(ws.orders, ColumnOrders::Unlearnt));
        let mut learnt = None;
        for seed in [11, 12, 13] {
            let x = sparse_integers(5000, d, 0, 255, seed);
            let stored = row_major::<f32>(&x);
            let chunk = stored.transpose();
            let mean = ordered::<f32, ReferenceBytes>(chunk, &mut ws).expect("the ordered path");
            let ColumnOrders::Learnt(ranks) = &ws.orders else {
                panic!("orders learnt")
            };
            // Learnt from this chunk alone, the orders would differ from the first chunk's.
            let own = Sample::of(chunk).expect("sparse").learn_orders(Par::Seq);
            match &learnt {
                None => {
                    assert_eq!(ranks, &own);
                    learnt = Some(ranks.clone());
                }
                Some(first) => {
                    assert_eq!(ranks, first, "seed {seed}");
                    assert_ne!(&own, first, "seed {seed}: no test of keeping the orders");
                }
            }
            assert_the_integer_paths_bits(chunk, &mean, &ws, &format!("seed {seed}"));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let full = Mat::<f32>::from_fn(d, 5000, |_, _| rng.random_range(1..=255) as f32);
        assert!(ordered::<f32, ReferenceBytes>(full.transpose(), &mut ws).is_none());
        assert!(matches!(ws.orders, ColumnOrders::Declined));
        let sparse = row_major::<f32>(&sparse_integers(5000, d, 0, 255, 14));
        assert!(ordered::<f32, ReferenceBytes>(sparse.transpose(), &mut ws).is_none());
    }

    /// Orders learnt from other rows that leave too much work in a chunk (the chunks of a file
    /// sorted by class) are learnt again from that chunk, which then takes the path; a chunk
    /// that declines its own orders declines the path.
    #[test]
    fn orders_that_do_not_fit_a_chunk_are_learnt_again_from_it() {
        let d = 60;
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        // Rows non-zero in some of columns `first..first + 12` only.
        let mut rows_in = |first: usize| {
            Mat::<u8>::from_fn(d, 5000, |j, _| {
                if (first..first + 12).contains(&j) && rng.random_bool(0.6) {
                    rng.random_range(1..=255)
                } else {
                    0
                }
            })
        };
        let (left, right) = (rows_in(0), rows_in(d - 12));
        let mut ws = Workspace::default();
        ws.prepare(d);
        assert!(ordered::<u8, ReferenceBytes>(left.transpose(), &mut ws).is_some());
        let ColumnOrders::Learnt(first) = ws.orders.clone() else {
            panic!("orders learnt")
        };
        let chunk = right.transpose();
        let mean = ordered::<u8, ReferenceBytes>(chunk, &mut ws).expect("the ordered path");
        let own = Sample::of(chunk).expect("sparse").learn_orders(Par::Seq);
        assert_ne!(own, first);
        assert!(matches!(&ws.orders, ColumnOrders::Learnt(ranks) if *ranks == own));
        let mut reference = MomentAccumulator::new(d);
        let widened = Mat::<f64>::from_fn(5000, d, |i, j| f64::from(chunk[(i, j)]));
        reference
            .push_pieces(widened.as_ref(), 0, Par::Seq)
            .unwrap();
        let reference = reference.finish().unwrap();
        for (a, b) in mean.iter().zip(reference.mean()) {
            assert!((a - b).abs() <= 1e-12 * 255.0, "{a} against {b}");
        }
    }

    /// Bytes as stored take the path as their values in f32 do (the same keys and range, the
    /// same bits), also without a byte product (blocks of f32 products).
    #[test]
    fn stored_bytes_take_the_path_with_the_bits_of_f32() {
        let (n, d) = (6000, 50);
        let x = sparse_integers(n, d, 0, 255, 21);
        let floats = row_major::<f32>(&x);
        let bytes = Mat::<u8>::from_fn(d, n, |j, i| x[(i, j)] as u8);
        let (floats, bytes) = (floats.transpose(), bytes.transpose());
        let ranks = Sample::of(floats).expect("sparse").learn_orders(Par::Seq);
        for par in [Par::Seq, Par::rayon(2)] {
            let (range, key) = ranged_keys(floats, &ranks, par).expect("integers");
            let (byte_range, byte_key) = ranged_keys(bytes, &ranks, par).expect("bytes");
            assert_eq!((&byte_range.lo, &byte_range.hi), (&range.lo, &range.hi));
            assert_eq!(byte_key, key);
        }
        let moments = |ws: &mut Workspace, with_bytes: bool, stored: bool| {
            let mut orders = ColumnOrders::Unlearnt;
            ws.prepare(d);
            let mean = if stored {
                let rows = OrderedRows::key(bytes, &mut orders, ws.par).expect("keyed");
                let blocks =
                    ByteBlocks::<u8, ReferenceBytes>::for_range(&rows.range.lo, &rows.range.hi);
                ordered_moments(bytes, &rows, blocks.as_ref().filter(|_| with_bytes), ws)
            } else {
                let rows = OrderedRows::key(floats, &mut orders, ws.par).expect("keyed");
                let blocks =
                    ByteBlocks::<f32, ReferenceBytes>::for_range(&rows.range.lo, &rows.range.hi);
                ordered_moments(floats, &rows, blocks.as_ref().filter(|_| with_bytes), ws)
            };
            let mean = mean.expect("the ordered path");
            let lower: Vec<u64> = (0..d)
                .flat_map(|j| (j..d).map(move |i| (i, j)))
                .map(|(i, j)| ws.scatter[(i, j)].to_bits())
                .collect();
            (mean, lower)
        };
        let mut ws = Workspace::default();
        let want = moments(&mut ws, true, false);
        for (with_bytes, stored) in [(true, true), (false, true), (false, false)] {
            assert!(
                want == moments(&mut ws, with_bytes, stored),
                "bytes {with_bytes}, stored {stored}"
            );
        }
    }

    /// The blocks cover the stretch in order, none longer than allowed, each starting at a
    /// multiple of the step; their work is the least over every such cut (all of them tried
    /// on short stretches), so never more than fixed blocks'.
    #[test]
    fn blocks_are_cut_for_the_least_work() {
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        let work = |blocks: &[&[u32]]| -> f64 {
            blocks
                .iter()
                .map(|b| {
                    let a = f64::from(*b.last().unwrap());
                    a * a * (b.len() + BLOCK_OVERHEAD_ROWS) as f64
                })
                .sum()
        };
        for (m, most) in [
            (1, 2048),
            (64, 2048),
            (65, 128),
            (300, 128),
            (700, 256),
            (5000, 2048),
            (3000, 40),
        ] {
            // Reaches sorted ascending, with a steep tail; a row's reach is its value.
            let mut reach: Vec<u32> = (0..m).map(|_| rng.random_range(0..200)).collect();
            for r in reach.iter_mut().rev().take(m / 10) {
                *r += 500;
            }
            reach.sort_unstable();
            let blocks = blocks_of(&reach, most, |r| r as usize);
            assert_eq!(blocks.concat(), reach, "{m} rows");
            let step = BLOCK_STEP.min(most);
            let mut start = 0;
            for b in &blocks {
                assert!(
                    !b.is_empty() && b.len() <= most && start % step == 0,
                    "{m} rows"
                );
                start += b.len();
            }
            let fixed: Vec<&[u32]> = reach.chunks(most).collect();
            let steps: Vec<&[u32]> = reach.chunks(step).collect();
            assert!(work(&blocks) <= work(&fixed).min(work(&steps)), "{m} rows");
            // Every cut at the step, where there are few.
            let pieces = m.div_ceil(step);
            if pieces <= 12 {
                let least = (0..1u32 << (pieces - 1))
                    .filter_map(|cuts| {
                        let mut blocks = Vec::new();
                        let mut start = 0;
                        for k in 1..=pieces {
                            if k == pieces || cuts >> (k - 1) & 1 == 1 {
                                let end = (k * step).min(m);
                                blocks.push(&reach[start..end]);
                                start = end;
                            }
                        }
                        blocks
                            .iter()
                            .all(|b| b.len() <= most)
                            .then(|| work(&blocks))
                    })
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(work(&blocks), least, "{m} rows");
            }
        }
    }

    #[test]
    fn a_nan_among_sparse_pixels_is_named_by_its_row() {
        let mut x = row_major::<f32>(&sparse_integers(10_000, 400, 0, 255, 6));
        x[(123, 9876)] = f32::NAN;
        let mut acc = MomentAccumulator::new(400);
        let message = acc.push(x.transpose()).unwrap_err().to_string();
        assert!(message.contains("9876"), "{message}");
    }

    /// Not a check: the share of the dense products the ordered blocks leave on the images
    /// of an IDX `ubyte` file (inflated: `zcat train-images-idx3-ubyte.gz > images`) named by
    /// `ORDERED_SHARES_FILE`, in one chunk and in the CLI's growing chunks (5,120 rows
    /// doubling up to 20,480), the orders learnt from the first 5,120 rows
    /// (bench/results.md).
    #[test]
    #[ignore = "prints the ordered path's shares of the work on a file named by ORDERED_SHARES_FILE"]
    fn print_the_shares_of_the_dense_work() {
        let path = std::env::var("ORDERED_SHARES_FILE").expect("ORDERED_SHARES_FILE");
        let file = std::fs::read(path).expect("an inflated IDX ubyte file");
        let dims: Vec<usize> = (0..usize::from(file[3]))
            .map(|k| u32::from_be_bytes(file[4 + 4 * k..8 + 4 * k].try_into().unwrap()) as usize)
            .collect();
        let (n, d) = (dims[0], dims[1..].iter().product::<usize>());
        let x = MatRef::from_row_major_slice(&file[4 + 4 * dims.len()..], n, d);
        let ranks = Sample::of(x.subrows(0, 5120.min(n)))
            .expect("sparse bytes")
            .learn_orders(Par::Seq);
        let growing: Vec<usize> =
            std::iter::successors(Some(5120usize), |r| Some((2 * r).min(20480)))
                .scan(0, |start, r| {
                    let rows = r.min(n - *start);
                    *start += rows;
                    (rows > 0).then_some(rows)
                })
                .collect();
        for chunks in [vec![n], growing] {
            let (mut fixed, mut cut, mut start) = (0.0, 0.0, 0);
            for &m in &chunks {
                let (_, key) = ranged_keys(x.subrows(start, m), &ranks, Par::Seq).expect("bytes");
                start += m;
                let sorted = sorted_by_key(&key, ranks.len() * (d + 1));
                let reach = |row: u32| key[row as usize] as usize % (d + 1);
                let order_of = |row: u32| key[row as usize] as usize / (d + 1);
                let work = |b: &[u32]| (reach(*b.last().unwrap()).pow(2) * b.len()) as f64;
                for stretch in sorted.chunk_by(|&a, &b| order_of(a) == order_of(b)) {
                    fixed += stretch.chunks(BYTE_BLOCK_ROWS).map(work).sum::<f64>();
                    cut += blocks_of(stretch, BYTE_BLOCK_ROWS, reach)
                        .into_iter()
                        .map(work)
                        .sum::<f64>();
                }
            }
            let dense = (d * d * n) as f64;
            println!(
                "chunks {chunks:?}: fixed blocks of {BYTE_BLOCK_ROWS} rows {:.3}, cut for the least work {:.3}",
                fixed / dense,
                cut / dense
            );
        }
    }
}
