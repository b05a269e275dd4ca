//! Products of CSR blocks with dense blocks, never densifying the sparse rows:
//! - [`ScatterProduct`]: `W = Xᵀ (X P − 1 sᵀ)` and the column sums of `X P − 1 sᵀ`, one pass
//!   over each row's entries for both products (the iterative solvers' step, with the mean
//!   subtracted implicitly by the caller: `Xcᵀ Xc P = Xᵀ Y − μ (1ᵀ Y)`, `Y = X P − 1 μᵀP`);
//! - [`project_into`]: `X P − 1 sᵀ` (transform);
//! - [`add_gram`]: `G += Xᵀ X` over the entries (the covariance route).
//!
//! faer 0.24's sparse × dense products (`faer::sparse::linalg::matmul`, behind its `sparse`
//! feature, off in this workspace) run on one thread and walk the sparse arrays once per
//! column of the dense block; these walk them once per product, rows split between threads,
//! with the dense block stored by rows so that a row's entries read contiguous L-vectors.

use rayon::prelude::*;

use crate::kernel::simd::{Kernel, dispatch};
use crate::real::Real;
use crate::sparse::csr::{CsrChunk, CsrRef, SparseIndex, with_csr};

/// Rows of `Y = X P − 1 sᵀ` a thread computes at once: their rows of `Y` (at L = 60, 120 KB)
/// stay in a core's cache while the rows of P of one group of features after another are read.
const Y_ROWS: usize = 256;

/// Bytes of a piece's `Y` ([`ScatterProduct`] cuts a block into pieces of at most so many
/// rows too): `Y` is held for a piece at a time, and a block of many empty rows would
/// otherwise make it as large as the block's rows times L.
const PIECE_Y_BYTES: usize = 256 << 10;

/// Entries of a block [`ScatterProduct`] takes at once (3 MB of f64 values and u32 indices):
/// they stay in the last-level cache while every group of features reads its entries.
const PIECE_ENTRIES: usize = 1 << 18;

/// Bytes of `W` a group of features should take: its rows of `W` stay in a core's cache while
/// every row of a block adds to them.
const GROUP_BYTES: usize = 256 << 10;

/// The scatter product of one pass, accumulated block by block: `Xᵀ (X P − 1 sᵀ)` and the
/// column sums of `X P − 1 sᵀ`, for a D×L block `P` given by rows (`p_rows[j·L + c]`) and a
/// shift `s` (L values).
///
/// Each block is two products: `Y = X P − 1 sᵀ`, rows split between threads (a row's entries
/// read contiguous L-vectors of P), then `W += Xᵀ Y` with the features split into groups of
/// about equal entries, each group's rows of `W` summed by one thread over the block's rows in
/// order. Every value of `W` is so summed in row order whatever the split: the same bits on
/// any number of threads, and one D×L sum instead of one per thread.
pub(crate) struct ScatterProduct<'a> {
    p_rows: &'a [f64],
    shift: &'a [f64],
    l: usize,
    /// `Xᵀ (X P − 1 sᵀ)` by rows (D·L values).
    w: Vec<f64>,
    /// The block's `Y` by rows, reused from block to block.
    y: Vec<f64>,
    /// The first feature of every group, then D; from the first non-empty block's entries.
    groups: Vec<usize>,
    /// The piece's [`group_bounds`], reused from piece to piece.
    bounds: Vec<usize>,
    column_sums: Vec<f64>,
}

impl<'a> ScatterProduct<'a> {
    /// An empty product for `P` by rows (D·L values) and the shift (L values).
    pub(crate) fn new(p_rows: &'a [f64], shift: &'a [f64]) -> Self {
        let l = shift.len();
        assert!(
            l > 0 && p_rows.len().is_multiple_of(l),
            "P by rows: D·L values"
        );
        ScatterProduct {
            p_rows,
            shift,
            l,
            w: vec![0.0; p_rows.len()],
            y: Vec::new(),
            groups: Vec::new(),
            bounds: Vec::new(),
            column_sums: vec![0.0; l],
        }
    }

    /// Adds a block of rows.
    pub(crate) fn push(&mut self, x: CsrChunk<'_>) {
        with_csr!(x, x => self.push_typed(x))
    }

    /// A large block is taken in pieces of at most [`PIECE_ENTRIES`] entries and
    /// [`PIECE_Y_BYTES`] of `Y` (rows in order: the same sums), whose arrays stay in cache
    /// while every group of features reads its entries of each row: a block of 4 M entries
    /// (48 MB) read from memory by each of 37 groups took a third more time than the streamed
    /// blocks of 2¹⁹.
    fn push_typed<T: Real, I: SparseIndex>(&mut self, x: CsrRef<'_, T, I>) {
        let most_rows = (PIECE_Y_BYTES / (8 * self.l)).max(1);
        let mut start = 0;
        while start < x.nrows() {
            let base = x.indptr()[start];
            let mut end = start + 1;
            end += x.indptr()[end..]
                .partition_point(|&p| p - base <= PIECE_ENTRIES)
                .saturating_sub(1)
                .min(x.nrows() - end);
            end = end.min(start + most_rows);
            self.push_piece(x.subrows(start, end - start));
            start = end;
        }
    }

    fn push_piece<T: Real, I: SparseIndex>(&mut self, x: CsrRef<'_, T, I>) {
        let (n, l) = (x.nrows(), self.l);
        let d = self.p_rows.len() / l;
        assert_eq!(
            x.ncols(),
            d,
            "block of {} columns for P of {d} rows",
            x.ncols()
        );
        if n == 0 {
            return;
        }
        if self.groups.is_empty() {
            self.groups = feature_groups(x, l);
        }
        self.y.resize(n * l, 0.0);
        let (p_rows, shift) = (self.p_rows, self.shift);
        // Rows whose columns increase (scipy's canonical form, the readers' blocks) give a
        // group's entries from where each row's entries of each group start, found once per
        // block by a walk of the row (the products' threads then slice their entries; a binary
        // search per row and group had taken half of the scatter product's time).
        let sorted = group_bounds(x, &self.groups, &mut self.bounds);
        let bounds: &[usize] = &self.bounds;
        let stride = self.groups.len();
        let y = &mut self.y[..n * l];
        y.par_chunks_mut(Y_ROWS * l)
            .enumerate()
            .for_each(|(chunk, rows)| {
                let first = chunk * Y_ROWS;
                let x = x.subrows(first, rows.len() / l);
                if sorted {
                    dispatch(ProjectRowsByGroups {
                        x,
                        p_rows,
                        shift,
                        bounds: &bounds[first * stride..(first + x.nrows()) * stride],
                        stride,
                        out: rows,
                    })
                } else {
                    dispatch(ProjectRows {
                        x,
                        p_rows,
                        shift,
                        out: rows,
                    })
                }
            });
        // Column sums in row order.
        for yi in y.chunks_exact(l) {
            self.column_sums
                .iter_mut()
                .zip(yi)
                .for_each(|(a, b)| *a += b);
        }
        let y: &[f64] = y;
        let mut parts: Vec<(usize, usize, &mut [f64])> = Vec::with_capacity(stride - 1);
        let mut rest: &mut [f64] = &mut self.w;
        for g in self.groups.windows(2) {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut((g[1] - g[0]) * l);
            parts.push((g[0], g[1], part));
            rest = tail;
        }
        parts
            .into_par_iter()
            .enumerate()
            .for_each(|(group, (first, last, w))| {
                dispatch(ScatterGroup {
                    x,
                    y,
                    features: first..last,
                    bounds: sorted.then_some((bounds, stride, group)),
                    w,
                })
            });
    }

    /// `Xᵀ (X P − 1 sᵀ)` by rows (D·L values, feature j's at `j·L`), and the column sums of
    /// `X P − 1 sᵀ` (L values).
    pub(crate) fn finish(self) -> (Vec<f64>, Vec<f64>) {
        (self.w, self.column_sums)
    }
}

/// Groups of consecutive features for `W += Xᵀ Y`: about equal numbers of `x`'s entries each,
/// at least two per thread (for balance), and enough that a group's rows of `W` take about
/// [`GROUP_BYTES`]. Where the split falls changes no sum (see [`ScatterProduct`]).
fn feature_groups<T: Real, I: SparseIndex>(x: CsrRef<'_, T, I>, l: usize) -> Vec<usize> {
    let d = x.ncols();
    let by_size = (d * l * 8).div_ceil(GROUP_BYTES);
    let count = by_size
        .max(2 * rayon::current_num_threads())
        .clamp(1, d.max(1));
    let mut per_feature = vec![0usize; d];
    for &j in x.indices() {
        per_feature[j.to_usize()] += 1;
    }
    // Every feature counts one entry more, so that features without entries are spread too.
    let total = x.nnz() + d;
    let mut groups = vec![0];
    let mut seen = 0;
    for (j, &c) in per_feature.iter().enumerate() {
        seen += c + 1;
        if seen * count >= groups.len() * total && j + 1 < d {
            groups.push(j + 1);
        }
    }
    groups.push(d);
    groups.dedup();
    groups
}

/// Whether every row's columns increase, and for such rows: `bounds[i·(G + 1) + g]` is where
/// row `i`'s entries of group `g` start within the row (`groups` holds the G groups' first
/// features, then D), and `bounds[i·(G + 1) + G]` is the row's length; one walk of every row
/// (its order checked while it is in cache: a separate walk of the piece for the order had
/// been a fork and a join and a read of every index more), rows split between threads; into
/// `bounds` (resized; not all of it is written when some row's columns do not increase).
fn group_bounds<T: Real, I: SparseIndex>(
    x: CsrRef<'_, T, I>,
    groups: &[usize],
    bounds: &mut Vec<usize>,
) -> bool {
    let stride = groups.len();
    bounds.resize(x.nrows() * stride, 0);
    bounds[..x.nrows() * stride]
        .par_chunks_mut(Y_ROWS * stride)
        .enumerate()
        .all(|(chunk, rows)| {
            for (r, out) in rows.chunks_exact_mut(stride).enumerate() {
                let indices = x.row(chunk * Y_ROWS + r).0;
                if !indices
                    .windows(2)
                    .all(|p| p[0].to_usize() < p[1].to_usize())
                {
                    return false;
                }
                let mut at = 0;
                // groups[0] is 0: every row's first group starts at its first entry.
                out[0] = 0;
                for (g, &first) in groups.iter().enumerate().skip(1) {
                    while at < indices.len() && indices[at].to_usize() < first {
                        at += 1;
                    }
                    out[g] = at;
                }
            }
            true
        })
}

/// `out[i·L + c] = (X P − 1 sᵀ)[i, c]` for the block's rows: codes by rows, `P` by rows as in
/// [`ScatterProduct`].
pub(crate) fn project_into(x: CsrChunk<'_>, p_rows: &[f64], shift: &[f64], out: &mut [f64]) {
    with_csr!(x, x => project_typed(x, p_rows, shift, out))
}

fn project_typed<T: Real, I: SparseIndex>(
    x: CsrRef<'_, T, I>,
    p_rows: &[f64],
    shift: &[f64],
    out: &mut [f64],
) {
    let l = shift.len();
    assert_eq!(out.len(), x.nrows() * l, "out holds L values per row");
    out.par_chunks_mut(Y_ROWS * l)
        .enumerate()
        .for_each(|(chunk, rows)| {
            dispatch(ProjectRows {
                x: x.subrows(chunk * Y_ROWS, rows.len() / l),
                p_rows,
                shift,
                out: rows,
            })
        });
}

// Every multiply-add below is fused (`mul_add`: one rounding, a single instruction within
// `dispatch`'s AVX2+FMA code, the same bits on a machine without FMA), half the instructions of
// a product then a sum on these loops, which are most of a sparse fit's time.

/// `out += Σ_k values[k] · m[indices[k]]` for a matrix `m` by rows of `out.len()` values, the
/// terms added in order, fused, to each value.
///
/// The columns are taken a tile at a time ([`tile_width`]: up to 32, eight AVX2 vectors),
/// whose sums stay in registers over all the entries and are stored once, instead of being
/// loaded and stored once per entry as a loop over the whole row (generic in its length) must.
/// Each value is still the same sum in the same order: the same bits as one entry at a time.
#[inline(always)]
fn add_rows<J: SparseIndex, V: Real>(out: &mut [f64], indices: &[J], values: &[V], m: &[f64]) {
    let l = out.len();
    let mut c = 0;
    while c < l {
        let width = tile_width(l - c);
        add_rows_tile(&mut out[c..c + width], indices, values, m, l, c);
        c += width;
    }
}

/// The width of the next tile of [`add_rows`] when `rest` columns are left: 32 while at least
/// 64 are, then two tiles of about half (multiples of 4: 60 is 32 + 28, 40 is 20 + 20), so
/// that no tile is a single vector whose sum waits on the latency of every multiply-add; the
/// last 1–3 columns of a width not a multiple of 4 on their own.
#[inline(always)]
fn tile_width(rest: usize) -> usize {
    if rest >= 64 {
        32
    } else if rest > 32 {
        (rest / 2).div_ceil(4) * 4
    } else if rest >= 4 {
        rest / 4 * 4
    } else {
        rest
    }
}

/// [`add_rows`] on the `W` columns `c..c + W` of rows of `l` values.
#[inline(always)]
fn add_tile<const W: usize, J: SparseIndex, V: Real>(
    out: &mut [f64],
    indices: &[J],
    values: &[V],
    m: &[f64],
    l: usize,
    c: usize,
) {
    let out: &mut [f64; W] = out.try_into().expect("a tile of the output");
    let mut sum = *out;
    for (&j, &v) in indices.iter().zip(values) {
        let (start, v) = (j.to_usize() * l + c, v.to_f64());
        let row: &[f64; W] = m[start..start + W].try_into().expect("a tile of a row");
        for t in 0..W {
            sum[t] = v.mul_add(row[t], sum[t]);
        }
    }
    *out = sum;
}

/// `out[i·L + c] = (X P − 1 sᵀ)[i, c]` for the rows of `x`, compiled for the machine's vector
/// width ([`dispatch`]).
struct ProjectRows<'a, T: Real, I: SparseIndex> {
    x: CsrRef<'a, T, I>,
    p_rows: &'a [f64],
    shift: &'a [f64],
    out: &'a mut [f64],
}

impl<T: Real, I: SparseIndex> Kernel for ProjectRows<'_, T, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let l = self.shift.len();
        for (i, y) in self.out.chunks_exact_mut(l).enumerate() {
            y.iter_mut().zip(self.shift).for_each(|(a, s)| *a = -s);
            let (indices, values) = self.x.row(i);
            add_rows(y, indices, values, self.p_rows);
        }
    }
}

/// [`ProjectRows`] for rows whose columns increase, one group of features after another: the
/// group's rows of P (about [`GROUP_BYTES`]) stay in a core's cache while every row's entries
/// in the group are summed, instead of each entry reading its row of P from memory (P of
/// 20,000 features × 60 is 9.6 MB). The groups are taken in order and a row's entries are
/// increasing, so every value is still summed over the row's entries in order: the same bits
/// as [`ProjectRows`], wherever the groups fall.
struct ProjectRowsByGroups<'a, T: Real, I: SparseIndex> {
    x: CsrRef<'a, T, I>,
    p_rows: &'a [f64],
    shift: &'a [f64],
    /// [`group_bounds`]'s array for these rows, and its stride (G + 1).
    bounds: &'a [usize],
    stride: usize,
    out: &'a mut [f64],
}

impl<T: Real, I: SparseIndex> Kernel for ProjectRowsByGroups<'_, T, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (l, stride) = (self.shift.len(), self.stride);
        for y in self.out.chunks_exact_mut(l) {
            y.iter_mut().zip(self.shift).for_each(|(a, s)| *a = -s);
        }
        let segment = |i: usize, g: usize| {
            let (indices, values) = self.x.row(i);
            let (a, b) = (self.bounds[i * stride + g], self.bounds[i * stride + g + 1]);
            (&indices[a..b], &values[a..b])
        };
        let n = self.out.len() / l;
        for g in 0..stride - 1 {
            let mut pairs = self.out.chunks_exact_mut(2 * l);
            for (p, pair) in pairs.by_ref().enumerate() {
                let (y0, y1) = pair.split_at_mut(l);
                add_rows_pair(
                    y0,
                    y1,
                    segment(2 * p, g),
                    segment(2 * p + 1, g),
                    self.p_rows,
                );
            }
            let last = pairs.into_remainder();
            if !last.is_empty() {
                let (indices, values) = segment(n - 1, g);
                add_rows(last, indices, values, self.p_rows);
            }
        }
    }
}

/// [`add_rows`] for two rows at once: their sums are independent, so interleaving their
/// entries (while both have some) gives the core two chains of multiply-adds to overlap
/// instead of one waiting on the latency of each; every value is still summed over its own
/// row's entries in order, the same bits. Tiles over 16 columns are taken one row at a time
/// (two rows' accumulators would not fit in the registers).
#[inline(always)]
fn add_rows_pair<J: SparseIndex, V: Real>(
    out0: &mut [f64],
    out1: &mut [f64],
    (i0, v0): (&[J], &[V]),
    (i1, v1): (&[J], &[V]),
    m: &[f64],
) {
    let l = out0.len();
    let mut c = 0;
    while c < l {
        let width = tile_width(l - c);
        let (t0, t1) = (&mut out0[c..c + width], &mut out1[c..c + width]);
        macro_rules! tile {
            ($($w:literal)*) => {
                match width {
                    $($w => add_tile_pair::<$w, J, V>(t0, t1, (i0, v0), (i1, v1), m, l, c),)*
                    _ => {
                        add_rows_tile(t0, i0, v0, m, l, c);
                        add_rows_tile(t1, i1, v1, m, l, c);
                    }
                }
            };
        }
        tile!(16 12 8 4 3 2 1);
        c += width;
    }
}

/// One tile of [`add_rows`] of any of its widths.
#[inline(always)]
fn add_rows_tile<J: SparseIndex, V: Real>(
    out: &mut [f64],
    indices: &[J],
    values: &[V],
    m: &[f64],
    l: usize,
    c: usize,
) {
    macro_rules! tile {
        ($($w:literal)*) => {
            match out.len() {
                $($w => add_tile::<$w, J, V>(out, indices, values, m, l, c),)*
                _ => unreachable!("tile_width gives one of the widths above"),
            }
        };
    }
    tile!(32 28 24 20 16 12 8 4 3 2 1);
}

/// [`add_tile`] on two rows, their entries interleaved while both have some.
#[inline(always)]
fn add_tile_pair<const W: usize, J: SparseIndex, V: Real>(
    out0: &mut [f64],
    out1: &mut [f64],
    (i0, v0): (&[J], &[V]),
    (i1, v1): (&[J], &[V]),
    m: &[f64],
    l: usize,
    c: usize,
) {
    let out0: &mut [f64; W] = out0.try_into().expect("a tile of the output");
    let out1: &mut [f64; W] = out1.try_into().expect("a tile of the output");
    let (mut s0, mut s1) = (*out0, *out1);
    let both = i0.len().min(i1.len());
    let first = i0[..both].iter().zip(&v0[..both]);
    let second = i1[..both].iter().zip(&v1[..both]);
    for ((&j0, &x0), (&j1, &x1)) in first.zip(second) {
        let (a, x0) = (j0.to_usize() * l + c, x0.to_f64());
        let (b, x1) = (j1.to_usize() * l + c, x1.to_f64());
        let r0: &[f64; W] = m[a..a + W].try_into().expect("a tile of a row");
        let r1: &[f64; W] = m[b..b + W].try_into().expect("a tile of a row");
        for t in 0..W {
            s0[t] = x0.mul_add(r0[t], s0[t]);
            s1[t] = x1.mul_add(r1[t], s1[t]);
        }
    }
    *out0 = s0;
    *out1 = s1;
    add_tile::<W, J, V>(out0, &i0[both..], &v0[both..], m, l, c);
    add_tile::<W, J, V>(out1, &i1[both..], &v1[both..], m, l, c);
}

/// `W[features] += Xᵀ Y` for one group of features, over the block's rows in order, compiled
/// for the machine's vector width ([`dispatch`]).
///
/// Each entry adds its row of `Y` to its feature's row of `W` in memory. Sorting the group's
/// entries by feature first (a counting sort per piece), so that a feature's tile of `W`
/// stays in registers over its entries as [`add_rows`] does, was measured slower on
/// 20,000 genes (1.3–1.5 against 1.6–2.1 G multiply-adds/s on one thread): the sort costs
/// more than the loads and stores it saves, the rows of `Y` and `W` being in cache.
struct ScatterGroup<'a, T: Real, I: SparseIndex> {
    x: CsrRef<'a, T, I>,
    /// The block's `Y` by rows.
    y: &'a [f64],
    features: std::ops::Range<usize>,
    /// When every row's columns increase: [`group_bounds`]'s array, its stride (G + 1) and
    /// this group's number, which give a row's entries in the group without a search.
    bounds: Option<(&'a [usize], usize, usize)>,
    /// The group's rows of `W`.
    w: &'a mut [f64],
}

impl<T: Real, I: SparseIndex> Kernel for ScatterGroup<'_, T, I> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (first, last) = (self.features.start, self.features.end);
        let l = self.y.len() / self.x.nrows().max(1);
        let w = self.w;
        for i in 0..self.x.nrows() {
            let (mut indices, mut values) = self.x.row(i);
            if let Some((bounds, stride, group)) = self.bounds {
                let (a, b) = (bounds[i * stride + group], bounds[i * stride + group + 1]);
                (indices, values) = (&indices[a..b], &values[a..b]);
            }
            let yi = &self.y[i * l..(i + 1) * l];
            let mut c = 0;
            while c < l {
                let width = tile_width(l - c);
                macro_rules! tile {
                    ($($w:literal)*) => {
                        match width {
                            $($w => scatter_tile::<$w, I, T>(
                                &mut *w, indices, values, yi, first..last, c,
                            ),)*
                            _ => unreachable!("tile_width gives one of the widths above"),
                        }
                    };
                }
                tile!(32 28 24 20 16 12 8 4 3 2 1);
                c += width;
            }
        }
    }
}

/// `W[j, c..c + W] += v · Y[i, c..c + W]` for a row's entries `(j, v)` of the group `features`
/// (the others skipped), the row's tile of `Y` held in registers over its entries instead of
/// read again for each; every value of `W` still gets its terms in row order, the same bits.
#[inline(always)]
fn scatter_tile<const W: usize, J: SparseIndex, V: Real>(
    w: &mut [f64],
    indices: &[J],
    values: &[V],
    yi: &[f64],
    features: std::ops::Range<usize>,
    c: usize,
) {
    let l = yi.len();
    let y: [f64; W] = yi[c..c + W].try_into().expect("a tile of Y's row");
    for (&j, &v) in indices.iter().zip(values) {
        let j = j.to_usize();
        if !features.contains(&j) {
            continue;
        }
        let at = (j - features.start) * l + c;
        let row: &mut [f64; W] = (&mut w[at..at + W]).try_into().expect("a tile of W's row");
        let v = v.to_f64();
        for t in 0..W {
            row[t] = v.mul_add(y[t], row[t]);
        }
    }
}

/// `G += Xᵀ X` for a D×D matrix `g` stored by columns (`g[b·D + a]`), both triangles, over the
/// entries only: `Σ_rows nnz²` products. Columns of `g` are split between threads, each summing
/// its own columns over every row in order: the same bits on any number of threads.
pub(crate) fn add_gram(x: CsrChunk<'_>, g: &mut [f64]) {
    with_csr!(x, x => add_gram_typed(x, g))
}

fn add_gram_typed<T: Real, I: SparseIndex>(x: CsrRef<'_, T, I>, g: &mut [f64]) {
    let d = x.ncols();
    assert_eq!(g.len(), d * d, "G is D×D");
    if d == 0 {
        return;
    }
    let groups = (4 * rayon::current_num_threads()).clamp(1, d);
    let width = d.div_ceil(groups);
    g.par_chunks_mut(width * d)
        .enumerate()
        .for_each(|(group, cols)| {
            let first = group * width;
            let last = first + cols.len() / d;
            for i in 0..x.nrows() {
                let (indices, values) = x.row(i);
                for (&b, &vb) in indices.iter().zip(values) {
                    let b = b.to_usize();
                    if b < first || b >= last {
                        continue;
                    }
                    let vb = vb.to_f64();
                    let col = &mut cols[(b - first) * d..(b - first + 1) * d];
                    for (&a, &va) in indices.iter().zip(values) {
                        col[a.to_usize()] += va.to_f64() * vb;
                    }
                }
            }
        });
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sparse::csr::Csr;
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `y += v · x`, fused: one entry at a time, the way the timing loop's reference kernel
    /// adds to a row of `Y` in memory (the products above keep tiles in registers instead).
    #[inline(always)]
    fn add_scaled(y: &mut [f64], v: f64, x: &[f64]) {
        y.iter_mut()
            .zip(x)
            .for_each(|(a, b)| *a = v.mul_add(*b, *a));
    }

    /// A random `n × d` CSR matrix of about `density` non-zeros (integers 1..=9 scaled by 0.5,
    /// exact in f32), rows' columns in a scrambled order, and the same matrix dense.
    pub(crate) fn random_csr(
        n: usize,
        d: usize,
        density: f64,
        seed: u64,
    ) -> (Csr<f64, u32>, Mat<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut csr = Csr::new(d);
        let mut dense = Mat::zeros(n, d);
        for i in 0..n {
            let mut row: Vec<(usize, f64)> = Vec::new();
            for j in 0..d {
                if rng.random::<f64>() < density {
                    row.push((j, 0.5 * f64::from(rng.random_range(1..=9u8))));
                }
            }
            row.reverse();
            for &(j, v) in &row {
                dense[(i, j)] = v;
            }
            csr.push_row(&row).unwrap();
        }
        (csr, dense)
    }

    /// [`random_csr`]'s matrix with `groups` groups of rows, each with its own raised columns:
    /// row `i`'s values in the columns `j < span` with `j % groups == i % groups` multiplied by
    /// `factor`. A spectrum of `groups` clear components over a slowly decaying noise floor.
    pub(crate) fn grouped_csr(
        (n, d, density, seed): (usize, usize, f64, u64),
        groups: usize,
        span: usize,
        factor: f64,
    ) -> (Csr<f64, u32>, Mat<f64>) {
        let (noise, _) = random_csr(n, d, density, seed);
        let mut csr = Csr::new(d);
        let mut dense = Mat::zeros(n, d);
        for i in 0..n {
            let (idx, val) = noise.as_ref().row(i);
            let row: Vec<(usize, f64)> = (idx.iter().zip(val))
                .map(|(&j, &v)| {
                    let j = j as usize;
                    let raised = j < span && j % groups == i % groups;
                    (j, if raised { factor * v } else { v })
                })
                .collect();
            for &(j, v) in &row {
                dense[(i, j)] = v;
            }
            csr.push_row(&row).unwrap();
        }
        (csr, dense)
    }

    fn by_rows(m: &Mat<f64>) -> Vec<f64> {
        (0..m.nrows())
            .flat_map(|i| (0..m.ncols()).map(move |c| m[(i, c)]))
            .collect()
    }

    #[test]
    fn scatter_product_equals_the_dense_products_for_any_blocking() {
        for (n, d, l, density) in [
            (3000, 40, 5, 0.1),
            (7, 300, 3, 0.02),
            (50, 6, 6, 0.9),
            (5, 4, 2, 0.0),
            (200, 9000, 8, 0.01),
        ] {
            let (scrambled, dense) = random_csr(n, d, density, 5);
            let sorted = sorted_csr(&dense);
            let p = Mat::<f64>::from_fn(d, l, |j, c| ((j * 7 + c * 3) % 11) as f64 - 5.0);
            let shift: Vec<f64> = (0..l).map(|c| c as f64 * 0.25 - 0.3).collect();
            let y = Mat::<f64>::from_fn(n, l, |i, c| {
                (0..d).map(|j| dense[(i, j)] * p[(j, c)]).sum::<f64>() - shift[c]
            });
            let want_w = dense.transpose() * &y;
            let want_sums: Vec<f64> = (0..l).map(|c| (0..n).map(|i| y[(i, c)]).sum()).collect();
            let pr = by_rows(&p);
            for (csr, block) in [&scrambled, &sorted]
                .into_iter()
                .flat_map(|csr| [n, 1000, 1].map(|block| (csr, block)))
            {
                let mut product = ScatterProduct::new(&pr, &shift);
                let mut start = 0;
                while start < n {
                    let rows = block.min(n - start);
                    product.push(csr.as_chunk().subrows(start, rows));
                    start += rows;
                }
                let (w, sums) = product.finish();
                let scale = want_w.norm_max().max(1.0);
                for j in 0..d {
                    for c in 0..l {
                        assert!(
                            (w[j * l + c] - want_w[(j, c)]).abs() <= 1e-12 * scale,
                            "{n}×{d} by {block}"
                        );
                    }
                }
                for c in 0..l {
                    assert!(
                        (sums[c] - want_sums[c]).abs() <= 1e-12 * scale,
                        "{n}×{d} by {block}"
                    );
                }
                let mut codes = vec![0.0; n * l];
                project_into(csr.as_chunk(), &pr, &shift, &mut codes);
                for i in 0..n {
                    for c in 0..l {
                        assert!((codes[i * l + c] - y[(i, c)]).abs() <= 1e-12 * scale);
                    }
                }
            }
        }
    }

    /// `dense` as CSR with every row's columns increasing (scipy's canonical form).
    fn sorted_csr(dense: &Mat<f64>) -> Csr<f64, u32> {
        let mut csr = Csr::new(dense.ncols());
        for i in 0..dense.nrows() {
            let row: Vec<(usize, f64)> = (0..dense.ncols())
                .filter(|&j| dense[(i, j)] != 0.0)
                .map(|j| (j, dense[(i, j)]))
                .collect();
            csr.push_row(&row).unwrap();
        }
        csr
    }

    /// The scatter product is the same bits on one thread as on several, for rows sorted or
    /// not: the features' split into groups follows the number of threads, the sums do not.
    #[test]
    fn scatter_product_is_the_same_bits_on_any_number_of_threads() {
        let (n, d, l) = (3000, 700, 7);
        let (scrambled, dense) = random_csr(n, d, 0.05, 8);
        let p = Mat::<f64>::from_fn(d, l, |j, c| ((j * 5 + c * 3) % 13) as f64 * 0.37 - 2.0);
        let pr = by_rows(&p);
        let shift: Vec<f64> = (0..l).map(|c| c as f64 * 0.1 + 0.7).collect();
        for csr in [&scrambled, &sorted_csr(&dense)] {
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let mut product = ScatterProduct::new(&pr, &shift);
                    product.push(csr.as_chunk().subrows(0, 1700));
                    product.push(csr.as_chunk().subrows(1700, n - 1700));
                    product.finish()
                })
            };
            let one = run(1);
            for threads in [2, 3, 8] {
                let (w, sums) = run(threads);
                assert!(
                    w.iter()
                        .zip(&one.0)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
                );
                assert!(
                    sums.iter()
                        .zip(&one.1)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
                );
            }
        }
    }

    /// A block of more than [`PIECE_ENTRIES`] entries, taken in pieces, gives the bits of the
    /// same rows pushed in small blocks, and the dense product.
    #[test]
    fn a_block_over_a_piece_gives_the_bits_of_small_blocks() {
        let (n, d, l) = (6000, 900, 3);
        let (scrambled, dense) = random_csr(n, d, 0.06, 12);
        let sorted = sorted_csr(&dense);
        assert!(sorted.nnz() > PIECE_ENTRIES, "{} entries", sorted.nnz());
        let p = Mat::<f64>::from_fn(d, l, |j, c| ((j * 3 + c * 5) % 17) as f64 * 0.21 - 1.5);
        let pr = by_rows(&p);
        let shift = [0.5, -1.25, 2.0];
        let want = dense.transpose() * (&dense * &p);
        for csr in [&scrambled, &sorted] {
            let mut whole = ScatterProduct::new(&pr, &shift);
            whole.push(csr.as_chunk());
            let (w, sums) = whole.finish();
            let mut small = ScatterProduct::new(&pr, &shift);
            for start in (0..n).step_by(700) {
                small.push(csr.as_chunk().subrows(start, 700.min(n - start)));
            }
            let (w_small, sums_small) = small.finish();
            assert!(
                w.iter()
                    .zip(&w_small)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            );
            assert!(
                sums.iter()
                    .zip(&sums_small)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            );
            // W = Xᵀ(XP − 1sᵀ) = XᵀXP − (Xᵀ1)sᵀ.
            let scale = want.norm_max();
            for j in 0..d {
                let column_sum: f64 = (0..n).map(|i| dense[(i, j)]).sum();
                for c in 0..l {
                    let expected = want[(j, c)] - column_sum * shift[c];
                    assert!(
                        (w[j * l + c] - expected).abs() <= 1e-11 * scale,
                        "({j}, {c})"
                    );
                }
            }
        }
    }

    /// A CSR matrix whose rows have every length class: empty, one entry, two, all `d`
    /// columns, and random lengths; values and columns random (columns increasing when
    /// `sorted`, else scrambled), values not exact in any product.
    fn rows_of_every_length(n: usize, d: usize, sorted: bool, seed: u64) -> Csr<f64, u32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut csr = Csr::new(d);
        for i in 0..n {
            let len = match i % 6 {
                0 => 0,
                1 => 1.min(d),
                2 => 2.min(d),
                3 => d,
                _ => rng.random_range(0..=d.min(40)),
            };
            let mut columns: Vec<usize> = (0..d).collect();
            for k in 0..len {
                let pick = rng.random_range(k..d);
                columns.swap(k, pick);
            }
            let mut row: Vec<(usize, f64)> = columns[..len]
                .iter()
                .map(|&j| (j, rng.random::<f64>() * 4.0 - 1.0))
                .collect();
            if sorted {
                row.sort_by_key(|&(j, _)| j);
            }
            csr.push_row(&row).unwrap();
        }
        csr
    }

    /// The products as the straightforward loops over rows and their entries in order, fused
    /// (the sums the tiled kernels must reproduce to the bit): `Y = X P − 1 sᵀ`, `Xᵀ Y` and
    /// `1ᵀ Y`.
    fn straightforward(
        x: &Csr<f64, u32>,
        p_rows: &[f64],
        shift: &[f64],
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let x = x.as_ref();
        let l = shift.len();
        let mut y = vec![0.0; x.nrows() * l];
        let mut w = vec![0.0; p_rows.len()];
        let mut sums = vec![0.0; l];
        for i in 0..x.nrows() {
            let (indices, values) = x.row(i);
            let yi = &mut y[i * l..(i + 1) * l];
            for c in 0..l {
                yi[c] = -shift[c];
                for (&j, &v) in indices.iter().zip(values) {
                    yi[c] = v.mul_add(p_rows[j as usize * l + c], yi[c]);
                }
                sums[c] += yi[c];
            }
            for (&j, &v) in indices.iter().zip(values) {
                for c in 0..l {
                    let at = j as usize * l + c;
                    w[at] = v.mul_add(yi[c], w[at]);
                }
            }
        }
        (y, w, sums)
    }

    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits())
    }

    /// The tiled kernels (`Y = X P` a row's tile in registers, `W += Xᵀ Y` a feature's tile
    /// over its entries sorted by feature) give the bits of the straightforward loops, for rows
    /// of every length, sorted or not, L below, at and above every tile width and not a
    /// multiple of 4, pushed whole or in blocks, on one thread or two.
    #[test]
    fn tiled_products_give_the_bits_of_the_straightforward_loops() {
        let mut rng = ChaCha8Rng::seed_from_u64(40);
        for (n, d) in [(300, 50), (40, 1), (25, 700), (1, 9)] {
            for l in [1, 2, 3, 4, 5, 7, 8, 13, 31, 32, 33, 60, 64, 67, 100] {
                let p_rows: Vec<f64> = (0..d * l).map(|_| rng.random::<f64>() - 0.5).collect();
                let shift: Vec<f64> = (0..l).map(|_| rng.random::<f64>() * 0.1).collect();
                for sorted in [true, false] {
                    let x = rows_of_every_length(n, d, sorted, (n + d + l) as u64);
                    let (y, w, sums) = straightforward(&x, &p_rows, &shift);
                    let case = format!("{n}×{d}, L = {l}, sorted {sorted}");
                    let mut codes = vec![0.0; n * l];
                    project_into(x.as_chunk(), &p_rows, &shift, &mut codes);
                    assert!(same_bits(&codes, &y), "project_into, {case}");
                    for (threads, block) in [(1, n), (2, n), (2, 7)] {
                        let pool = rayon::ThreadPoolBuilder::new()
                            .num_threads(threads)
                            .build()
                            .unwrap();
                        let (got_w, got_sums) = pool.install(|| {
                            let mut product = ScatterProduct::new(&p_rows, &shift);
                            for start in (0..n).step_by(block) {
                                product.push(x.as_chunk().subrows(start, block.min(n - start)));
                            }
                            product.finish()
                        });
                        let case = format!("{case}, {threads} threads, blocks of {block}");
                        assert!(same_bits(&got_w, &w), "W, {case}");
                        assert!(same_bits(&got_sums, &sums), "column sums, {case}");
                    }
                }
            }
        }
    }

    use crate::kernel::thread_cpu_seconds as thread_cpu;

    /// Multiply-adds per second of one thread's scatter product (`Y = X P` and `W += Xᵀ Y`,
    /// 2·nnz·L) on a single-cell-like block (20,000 features, 2.6% non-zero, sorted rows,
    /// L = 60), against the straightforward loops. A measurement, not a check: `cargo test
    /// --release --workspace --lib -- --ignored --nocapture time_scatter_product`.
    #[test]
    #[ignore = "a timing loop, for bench/results.md"]
    fn time_scatter_product() {
        let var = |name: &str, default: f64| {
            std::env::var(name).map_or(default, |v| v.parse().expect("a number"))
        };
        let (n, d, l) = (
            4000,
            var("TIME_D", 20_000.0) as usize,
            var("TIME_L", 60.0) as usize,
        );
        let density = var("TIME_DENSITY", 0.026);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut x = Csr::<f64, u32>::new(d);
        for _ in 0..n {
            let mut row: Vec<(usize, f64)> = Vec::new();
            for j in 0..d {
                if rng.random::<f64>() < density {
                    row.push((j, rng.random::<f64>() * 3.0));
                }
            }
            x.push_row(&row).unwrap();
        }
        let p_rows: Vec<f64> = (0..d * l).map(|_| rng.random::<f64>() - 0.5).collect();
        let shift: Vec<f64> = (0..l).map(|_| rng.random::<f64>()).collect();
        let work = 2.0 * (x.nnz() * l) as f64;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        pool.install(|| {
            let mut rates = Vec::new();
            for _ in 0..5 {
                let start = thread_cpu();
                let mut product = ScatterProduct::new(&p_rows, &shift);
                product.push(x.as_chunk());
                std::hint::black_box(product.finish());
                rates.push(work / (thread_cpu() - start) / 1e9);
            }
            rates.sort_by(f64::total_cmp);
            println!(
                "scatter product, one thread: {:.2} G multiply-adds/s (median of 5; {} entries, L = {l})",
                rates[2],
                x.nnz()
            );
            // The phases of one piece, repeated: the walk for the groups' bounds, Y = XP by
            // groups (tiled, and entry by entry as before the tiles), W += XᵀY.
            let piece = x.as_ref().subrows(0, 500);
            let groups = feature_groups(piece, l);
            let stride = groups.len();
            let mut bounds = Vec::new();
            let mut y = vec![0.0; piece.nrows() * l];
            let mut w = vec![0.0; d * l];
            let reps = 20;
            let piece_work = (piece.nnz() * l * reps) as f64;
            let start = thread_cpu();
            for _ in 0..reps {
                group_bounds(piece, &groups, &mut bounds);
            }
            let walk = thread_cpu() - start;
            let start = thread_cpu();
            for _ in 0..reps {
                dispatch(ProjectRowsByGroups {
                    x: piece,
                    p_rows: &p_rows,
                    shift: &shift,
                    bounds: &bounds,
                    stride,
                    out: &mut y,
                });
            }
            let project = thread_cpu() - start;
            // Y = XP by groups, each entry's product added to the row of Y in memory.
            struct EntryByEntry<'a> {
                x: CsrRef<'a, f64, u32>,
                p_rows: &'a [f64],
                bounds: &'a [usize],
                stride: usize,
                out: &'a mut [f64],
            }
            impl Kernel for EntryByEntry<'_> {
                type Output = ();
                #[inline(always)]
                fn run(self) {
                    let (l, stride) = (self.p_rows.len() / self.x.ncols(), self.stride);
                    for g in 0..stride - 1 {
                        for (i, y) in self.out.chunks_exact_mut(l).enumerate() {
                            let (indices, values) = self.x.row(i);
                            let (a, b) =
                                (self.bounds[i * stride + g], self.bounds[i * stride + g + 1]);
                            for (&j, &v) in indices[a..b].iter().zip(&values[a..b]) {
                                let j = j as usize;
                                add_scaled(y, v, &self.p_rows[j * l..(j + 1) * l]);
                            }
                        }
                    }
                }
            }
            let start = thread_cpu();
            for _ in 0..reps {
                dispatch(EntryByEntry {
                    x: piece,
                    p_rows: &p_rows,
                    bounds: &bounds,
                    stride,
                    out: &mut y,
                });
            }
            let entry_by_entry = thread_cpu() - start;
            let start = thread_cpu();
            for _ in 0..reps {
                let mut rest: &mut [f64] = &mut w;
                for (group, g) in groups.windows(2).enumerate() {
                    let (part, tail) = std::mem::take(&mut rest).split_at_mut((g[1] - g[0]) * l);
                    rest = tail;
                    dispatch(ScatterGroup {
                        x: piece,
                        y: &y,
                        features: g[0]..g[1],
                        bounds: Some((&bounds, stride, group)),
                        w: part,
                    });
                }
            }
            let scatter = thread_cpu() - start;
            println!(
                "one piece ({} entries, {} groups): bounds {:.2} ms, Y = XP {:.2} G/s tiled \
                 ({:.2} entry by entry), W += XᵀY {:.2} G/s",
                piece.nnz(),
                stride - 1,
                walk * 1e3 / reps as f64,
                piece_work / project / 1e9,
                piece_work / entry_by_entry / 1e9,
                piece_work / scatter / 1e9
            );
            let start = thread_cpu();
            std::hint::black_box(straightforward(&x, &p_rows, &shift));
            println!(
                "straightforward loops: {:.2} G multiply-adds/s",
                work / (thread_cpu() - start) / 1e9
            );
        });
    }

    #[test]
    fn gram_equals_the_dense_cross_product() {
        for (n, d, density) in [(500, 30, 0.2), (3, 200, 0.05), (40, 1, 0.5)] {
            let (csr, dense) = random_csr(n, d, density, 9);
            let want = dense.transpose() * &dense;
            let mut g = vec![0.0; d * d];
            add_gram(csr.as_chunk(), &mut g);
            for b in 0..d {
                for a in 0..d {
                    assert_eq!(g[b * d + a], want[(a, b)], "{n}×{d} at ({a}, {b})");
                }
            }
        }
    }
}
