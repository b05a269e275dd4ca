//! The exact byte product on CPUs with Intel AMX-INT8 (Xeon Sapphire Rapids and later):
//! `tdpbusd` multiplies a tile of 16 rows × 64 `u8` by 64 × 16 `i8` into 16 × 16 `i32` sums,
//! 16,384 multiply-adds an instruction (AVX-512 VNNI's `vpdpbusd` does 64). The instructions
//! live in the `principal-amx` crate, the one member with unsafe code; here, in safe code, the
//! packing of a block into tiles, the triangle of tiles to multiply and the tasks.
//!
//! Exact: a group of four products `u·y` is at most 4·255·128 in magnitude and the caller
//! keeps the sums within `i32` (at most 2,048 rows a block, `moments::bytes`).
//!
//! Layout. U's `a + 1` rows go in row tiles of 16 rows, Y's `a` features in column tiles of
//! 16 features, both cut along `k` into chunks of 64 (one tile a chunk) and zero past the
//! block (rows, features and `k`: zeros add nothing). A row tile's chunk is 16 rows of U's
//! 64 bytes; a column tile's chunk is in the VNNI layout `tdpbusd` reads, row `q` holding the
//! 16 features' `k = 4q..4q + 4` side by side (a transpose of 4-byte groups). The product goes
//! in 2 × 2 blocks of tiles (4 tiles of sums, 2 of U, 2 of Y: the 8 tile registers), each over
//! every chunk, so a block's sums are complete when stored and copied into G. Only
//! `G[s][t]` with `t ≥ s` and U's last row (the ones) are wanted: a pair of row tiles takes
//! the pairs of column tiles from its diagonal on, and the pair holding U's last row takes
//! them all — half the work. The pairs of row tiles are cut into tasks of equal work (the
//! triangle's top rows are the longest), on all threads; every sum is exact, so the bits do
//! not depend on the threads.

use crate::kernel::parallel::{equal_work_starts, room, rows_of_tasks, with_scratch};
#[cfg(target_arch = "x86_64")]
use crate::kernel::simd::{array_of, transpose_8x8};
use principal_amx::{BlockSums, TILE_ROW_BYTES, TILE_ROWS, Tile, Tiles};
use rayon::prelude::*;

/// Tasks per product on the thread pool, cut to equal work: several per thread, so that a
/// thread that finishes early takes another.
const TASKS: usize = 16;

/// Rows (of G) or features in a pair of tiles: the side of a block of sums.
const PAIR: usize = 2 * TILE_ROWS;

/// How the tasks multiply their blocks of tiles.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Tiling {
    /// AMX's `tdpbusd`, each task on a thread it configures.
    Amx,
    /// [`principal_amx::reference_block`]'s loops: the same layout, packing and triangle on
    /// any machine, for tests.
    #[cfg(test)]
    Portable,
}

/// Whether [`multiply`] runs here: AMX-INT8 present and granted to this process.
pub(crate) fn available() -> bool {
    principal_amx::available()
}

/// `product = U Y` (layout as [`crate::kernel::bytes::ByteProduct::multiply`]: its entries
/// `t ≥ s` and its last row) by AMX tiles, or `false` (and `product` untouched) where this
/// process has none.
pub(crate) fn multiply(u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) -> bool {
    if !available() {
        return false;
    }
    multiply_by(Tiling::Amx, u, y, a, r, product);
    true
}

/// The packed operands of a block.
#[derive(Default)]
struct Scratch {
    /// Row tile `i`'s chunk `c` at `i · chunks + c`.
    u: Vec<Tile<u8>>,
    /// Column tile `j`'s chunk `c` at `j · chunks + c`.
    y: Vec<Tile<i8>>,
}

thread_local! {
    /// The last product's packed operands on this thread: the next block packs into them
    /// (every tile, padding included, is written by the packing).
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// The product by `tiling`: [`multiply`] with AMX, or (tests) with the portable tile sums.
pub(crate) fn multiply_by(
    tiling: Tiling,
    u: &[u8],
    y: &[i8],
    a: usize,
    r: usize,
    product: &mut [i32],
) {
    let product = &mut product[..(a + 1) * a];
    if r == 0 {
        product.fill(0);
        return;
    }
    if a == 0 {
        return;
    }
    let chunks = r.div_ceil(TILE_ROW_BYTES);
    let (row_pairs, column_pairs) = ((a + 1).div_ceil(PAIR), a.div_ceil(PAIR));
    let starts = task_starts(row_pairs, column_pairs);
    let run = |scratch: &mut Scratch| {
        let packed_u = room(&mut scratch.u, 2 * row_pairs * chunks);
        pack_rows(&u[..(a + 1) * r], r, chunks, packed_u);
        let packed_y = room(&mut scratch.y, 2 * column_pairs * chunks);
        pack_features(&y[..a * r], r, chunks, packed_y);
        let (packed_u, packed_y) = (&*packed_u, &*packed_y);
        // Each task's rows of G: row pairs `starts[i]..starts[i + 1]`.
        let tasks = rows_of_tasks(&mut *product, &starts, PAIR, a);
        tasks.into_par_iter().for_each(|(first_pair, rows)| {
            let task = Task {
                packed_u,
                packed_y,
                chunks,
                a,
                row_pairs,
                column_pairs,
                first_pair,
                product: rows,
            };
            match tiling {
                Tiling::Amx => {
                    // No task runs inside another on one thread (a task calls nothing that
                    // waits), so the thread holds no other configuration.
                    let tiles = Tiles::configure().expect("AMX is available and this thread free");
                    task.run(|u, y, sums| tiles.multiply_block(u, y, sums));
                }
                #[cfg(test)]
                Tiling::Portable => task.run(principal_amx::reference_block),
            }
        });
    };
    with_scratch(&SCRATCH, run);
}

/// Packs U's rows (`rows.len() / r` of them, `r` bytes each) into row tiles: `out[i · chunks +
/// c]` holds rows `16i..16i + 16`, `k = 64c..64c + 64`; zeros past the rows and past `r`. One
/// row tile per parallel task.
fn pack_rows(rows: &[u8], r: usize, chunks: usize, out: &mut [Tile<u8>]) {
    out.par_chunks_exact_mut(chunks)
        .enumerate()
        .for_each(|(i, tiles)| {
            for m in 0..TILE_ROWS {
                let s = i * TILE_ROWS + m;
                let row = rows.get(s * r..(s + 1) * r).unwrap_or(&[]);
                for (c, tile) in tiles.iter_mut().enumerate() {
                    let from = c * TILE_ROW_BYTES;
                    if let Some(whole) = row.get(from..from + TILE_ROW_BYTES) {
                        // A copy of known length: inlined, not a call.
                        tile.0[m].copy_from_slice(whole);
                        continue;
                    }
                    let from = from.min(row.len());
                    let part = &row[from..];
                    let (head, tail) = tile.0[m].split_at_mut(part.len());
                    head.copy_from_slice(part);
                    tail.fill(0);
                }
            }
        });
}

/// Packs Y's features (`features.len() / r` of them, `r` bytes each) into column tiles in the
/// VNNI layout: `out[j · chunks + c]`'s row `q` holds, at bytes `4n..4n + 4`, feature
/// `16j + n`'s `k = 64c + 4q..64c + 4q + 4`; zeros past the features and past `r`. One column
/// tile per parallel task; whole chunks of 16 features by AVX2's 8 × 8 transposes of 4-byte
/// groups where the CPU has AVX2 (every CPU with AMX does).
fn pack_features(features: &[i8], r: usize, chunks: usize, out: &mut [Tile<i8>]) {
    out.par_chunks_exact_mut(chunks)
        .enumerate()
        .for_each(|(j, tiles)| {
            let rows = features.get(j * TILE_ROWS * r..(j + 1) * TILE_ROWS * r);
            let whole_chunks = transpose_whole_chunks(rows, r, tiles);
            for n in 0..TILE_ROWS {
                let t = j * TILE_ROWS + n;
                let feature = features.get(t * r..(t + 1) * r).unwrap_or(&[]);
                for (c, tile) in tiles.iter_mut().enumerate().skip(whole_chunks) {
                    let from = c * TILE_ROW_BYTES;
                    match feature.get(from..from + TILE_ROW_BYTES) {
                        Some(chunk) => {
                            for (q, four) in chunk.chunks_exact(4).enumerate() {
                                tile.0[q][4 * n..4 * n + 4].copy_from_slice(four);
                            }
                        }
                        None => {
                            for q in 0..TILE_ROWS {
                                for e in 0..4 {
                                    let k = from + 4 * q + e;
                                    tile.0[q][4 * n + e] = feature.get(k).copied().unwrap_or(0);
                                }
                            }
                        }
                    }
                }
            }
        });
}

/// Packs 16 features' (`rows`, `r` bytes each; `None` where the column tile has fewer) whole
/// chunks of 64 `k` into `tiles` by AVX2, and says how many; 0 without AVX2.
#[cfg(target_arch = "x86_64")]
fn transpose_whole_chunks(rows: Option<&[i8]>, r: usize, tiles: &mut [Tile<i8>]) -> usize {
    let (Some(simd), Some(rows)) = (pulp::x86::V3::try_new(), rows) else {
        return 0;
    };
    let whole = r / TILE_ROW_BYTES;
    let tiles = &mut tiles[..whole];
    pulp::Simd::vectorize(
        simd,
        Transpose {
            simd,
            rows,
            r,
            tiles,
        },
    );
    whole
}

/// Elsewhere the scalar packing does every chunk.
#[cfg(not(target_arch = "x86_64"))]
fn transpose_whole_chunks(_: Option<&[i8]>, _: usize, _: &mut [Tile<i8>]) -> usize {
    0
}

/// Packs 16 features' (`rows`, `r` bytes each) first `tiles.len()` whole chunks of 64 `k` into
/// VNNI tiles: per chunk, for each 8 features and 8 groups of 4 `k`, one 8 × 8 transpose of
/// 4-byte groups (`simd::transpose_8x8`).
#[cfg(target_arch = "x86_64")]
struct Transpose<'a> {
    simd: pulp::x86::V3,
    rows: &'a [i8],
    r: usize,
    tiles: &'a mut [Tile<i8>],
}

#[cfg(target_arch = "x86_64")]
impl pulp::WithSimd for Transpose<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        use std::arch::x86_64::__m256i;
        let Transpose {
            simd,
            rows,
            r,
            tiles,
        } = self;
        for (c, tile) in tiles.iter_mut().enumerate() {
            for half in 0..2 {
                for group in 0..2 {
                    // Features 8·half + l, k = 64c + 32·group..: 8 groups of 4 k each.
                    let from = c * TILE_ROW_BYTES + 32 * group;
                    let v: [__m256i; 8] = array_of(simd.avx._mm256_setzero_si256(), |l| {
                        let at = (8 * half + l) * r + from;
                        let bytes: [i8; 32] = rows[at..at + 32].try_into().expect("32 bytes");
                        pulp::cast(bytes)
                    });
                    let out = transpose_8x8(simd, v);
                    // out[i]: the 8 features' group 8·group + i (row q of the tile).
                    for (i, vector) in out.into_iter().enumerate() {
                        let bytes: [i8; 32] = pulp::cast(vector);
                        tile.0[8 * group + i][32 * half..32 * half + 32].copy_from_slice(&bytes);
                    }
                }
            }
        }
    }
}

/// The first pair of column tiles that row pair `p` multiplies: the one holding its diagonal,
/// or 0 for the last pair, which holds U's last row and wants every feature.
fn first_column_pair(p: usize, row_pairs: usize) -> usize {
    if p + 1 == row_pairs { 0 } else { p }
}

/// Where the tasks' row pairs start, and the end (`row_pairs`): consecutive row pairs whose
/// blocks add up to about an equal share each.
fn task_starts(row_pairs: usize, column_pairs: usize) -> Vec<usize> {
    equal_work_starts(row_pairs, TASKS, |p| {
        column_pairs - first_column_pair(p, row_pairs)
    })
}

/// One task: G's rows of row pairs `first_pair..` (as many as `product` holds).
struct Task<'a> {
    packed_u: &'a [Tile<u8>],
    packed_y: &'a [Tile<i8>],
    chunks: usize,
    a: usize,
    row_pairs: usize,
    column_pairs: usize,
    first_pair: usize,
    product: &'a mut [i32],
}

impl Task<'_> {
    /// Multiplies the task's blocks by `block` (a 2 × 2 block of tiles' sums, over every
    /// chunk) and copies their sums into G.
    fn run(self, mut block: impl FnMut([&[Tile<u8>]; 2], [&[Tile<i8>]; 2], &mut BlockSums)) {
        let Task {
            packed_u,
            packed_y,
            chunks,
            a,
            row_pairs,
            column_pairs,
            first_pair,
            product,
        } = self;
        let rows = product.len() / a;
        let tile = |i: usize| i * chunks..(i + 1) * chunks;
        let mut sums: BlockSums = [[0; PAIR]; PAIR];
        for (offset, s0) in (0..rows).step_by(PAIR).enumerate() {
            let p = first_pair + offset;
            let u = [&packed_u[tile(2 * p)], &packed_u[tile(2 * p + 1)]];
            let height = (rows - s0).min(PAIR);
            for q in first_column_pair(p, row_pairs)..column_pairs {
                let y = [&packed_y[tile(2 * q)], &packed_y[tile(2 * q + 1)]];
                block(u, y, &mut sums);
                let t0 = q * PAIR;
                let width = (a - t0).min(PAIR);
                for (m, sums_row) in sums[..height].iter().enumerate() {
                    let at = (s0 + m) * a + t0;
                    if width == PAIR {
                        // A copy of known length: inlined, not a call.
                        product[at..at + PAIR].copy_from_slice(sums_row);
                    } else {
                        product[at..at + width].copy_from_slice(&sums_row[..width]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tasks take every row pair once, in order, and share the blocks evenly: none more
    /// than one row pair's blocks beyond an equal share.
    #[test]
    fn the_tasks_take_every_row_pair_once_and_equal_shares_of_the_work() {
        for a in [1usize, 5, 31, 32, 33, 50, 200, 784, 2000] {
            let (row_pairs, column_pairs) = ((a + 1).div_ceil(PAIR), a.div_ceil(PAIR));
            let starts = task_starts(row_pairs, column_pairs);
            assert_eq!(
                (starts[0], *starts.last().unwrap()),
                (0, row_pairs),
                "a = {a}"
            );
            assert!(
                starts.windows(2).all(|w| w[0] < w[1]),
                "a = {a}: {starts:?}"
            );
            assert!(starts.len() - 1 <= TASKS, "a = {a}: {starts:?}");
            let work = |p: usize| column_pairs - first_column_pair(p, row_pairs);
            let total: usize = (0..row_pairs).map(work).sum();
            let largest = (0..row_pairs).map(work).max().unwrap();
            for w in starts.windows(2) {
                let task: usize = (w[0]..w[1]).map(work).sum();
                assert!(
                    task <= total.div_ceil(TASKS) + largest,
                    "a = {a}: row pairs {}..{} take {task} of {total}",
                    w[0],
                    w[1]
                );
            }
        }
    }

    /// The packing against the layouts written out: row tile 1's chunk 1 row 2 is U's row 18,
    /// `k = 64..128`, zero past `r`; column tile 0's chunk 1 row 3 holds the 16 features'
    /// `k = 76..80`, zero past the features.
    #[test]
    fn the_packing_lays_out_rows_and_vnni_features_as_tdpbusd_reads_them() {
        let (rows, r) = (20usize, 100usize);
        let chunks = r.div_ceil(64);
        let u: Vec<u8> = (0..rows * r).map(|v| (v % 251) as u8).collect();
        let mut packed = vec![Tile::<u8>::default(); 2 * chunks];
        pack_rows(&u, r, chunks, &mut packed);
        let row = &packed[chunks + 1].0[2];
        assert_eq!(row[..36], u[18 * r + 64..19 * r]);
        assert!(row[36..].iter().all(|&b| b == 0));
        assert!(
            packed[chunks].0[4..].iter().flatten().all(|&b| b == 0),
            "rows past 20"
        );
        let features = 5;
        let y: Vec<i8> = (0..features * r).map(|v| (v % 255) as i8).collect();
        let mut packed = vec![Tile::<i8>::default(); chunks];
        pack_features(&y, r, chunks, &mut packed);
        let row = &packed[1].0[3];
        for n in 0..16 {
            let want: Vec<i8> = (76..80)
                .map(|k| if n < features { y[n * r + k] } else { 0 })
                .collect();
            assert_eq!(row[4 * n..4 * n + 4], want, "feature {n}");
        }
        // k = 64 + 4·9 + 0 = 100 = r: past the rows' end.
        assert!(packed[1].0[9..].iter().flatten().all(|&b| b == 0));
    }

    /// Every byte of the column tiles where whole chunks of 16 features take the transposes
    /// (column tile 0's chunks 0 and 1) and the rest the scalar packing (its chunk 2, past
    /// `r`; column tile 1, 4 features).
    #[test]
    fn the_transposed_and_the_scalar_packing_give_the_vnni_layout() {
        let (features, r) = (20usize, 130usize);
        let chunks = r.div_ceil(64);
        let y: Vec<i8> = (0..features * r).map(|v| (v * 7 % 255) as i8).collect();
        let mut packed = vec![Tile::<i8>([[99; 64]; 16]); 2 * chunks];
        pack_features(&y, r, chunks, &mut packed);
        for j in 0..2 {
            for c in 0..chunks {
                for q in 0..16 {
                    for n in 0..16 {
                        for e in 0..4 {
                            let (t, k) = (16 * j + n, 64 * c + 4 * q + e);
                            let want = if t < features && k < r {
                                y[t * r + k]
                            } else {
                                0
                            };
                            let got = packed[j * chunks + c].0[q][4 * n + e];
                            assert_eq!(
                                got,
                                want,
                                "tile {j}, chunk {c}, row {q}, byte {}",
                                4 * n + e
                            );
                        }
                    }
                }
            }
        }
    }
}
