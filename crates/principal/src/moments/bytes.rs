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

use crate::kernel::bytes::ByteProduct;
use crate::kernel::parallel::join;
use crate::kernel::products::RankTwoUpdate;
use crate::kernel::scan::IntegerRange;
use crate::kernel::simd::{Kernel, dispatch};
use crate::moments::integer::centre_shifted_sums;
use crate::moments::workspace::{ByteBuffers, Workspace};
use crate::real::Real;

/// Rows per block: far below the 65,793 at which an `i32` sum could overflow; fewer blocks to
/// add than 1,024 rows, smaller corners of the ordered path than 4,096.
pub(crate) const BLOCK_ROWS: usize = 2048;

/// Widest range of a feature's values that fits a byte.
const BYTE_SPAN: f64 = 255.0;

/// The byte blocks of one chunk: their shift, and the product that takes them.
pub(crate) struct ByteBlocks<T, P> {
    product: P,
    /// Each feature's shift `c` (its least value + 128), in the features' own order.
    shift: Vec<f64>,
    /// The same in the data's type (exact).
    shift_as_data: Vec<T>,
}

impl<T: Real, P: ByteProduct> ByteBlocks<T, P> {
    /// Blocks of `d` features with least values `lo` and greatest `hi`, or `None` when a
    /// feature spans more than 256 values, a shift is not exact in `T` (f32 data beyond 2²⁴),
    /// or the product is not available here.
    pub(crate) fn for_range(lo: &[f64], hi: &[f64]) -> Option<Self> {
        if lo.iter().zip(hi).any(|(l, h)| h - l > BYTE_SPAN) {
            return None;
        }
        let shift: Vec<f64> = lo.iter().map(|l| l + 128.0).collect();
        let shift_as_data: Vec<T> = shift.iter().map(|&c| T::from_f64(c)).collect();
        if shift_as_data
            .iter()
            .zip(&shift)
            .any(|(t, &c)| t.to_f64() != c)
        {
            return None;
        }
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
        let ByteBuffers { u, y, product } = buffers;
        // Grown to the largest block and corner met (a corner at most D, as the f32 path's).
        grow(u, (a + 1) * r);
        grow(y, a * r);
        grow(product, (a + 1) * a);
        let (u, y) = (&mut u[..(a + 1) * r], &mut y[..a * r]);
        // Feature-major, each feature's values over the block's rows contiguous: the layout
        // the integer kernels pack fastest (they interleave four consecutive rows).
        let (u_features, ones) = u.split_at_mut(a * r);
        ones.fill(1);
        gather_bytes(
            x,
            rows,
            columns,
            &self.shift_as_data,
            u_features.chunks_exact_mut(r).collect(),
            y.chunks_exact_mut(r).collect(),
            par,
        );
        let product = &mut product[..(a + 1) * a];
        self.product.multiply(u, y, a, r, product);
        let sums: Vec<f64> = product[a * a..].iter().map(|&s| f64::from(s)).collect();
        add_raw_block(raw, product, &sums, e, r as f64, par);
        sums
    }
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

/// Writes `y = x[rows[k], columns[t]] − shift[columns[t]]` as `i8` into `y[t][k]` and
/// `u = y + 128` as `u8` into `u[t][k]` (`u[t]`, `y[t]`: feature `t`'s part of the block, one
/// byte per listed row). Two halves of the rows on two threads when `par` allows and the block
/// is large.
fn gather_bytes<T: Real>(
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

/// Rows staged at a time: their bytes stay in the first-level cache while every feature picks
/// its values from them.
const STAGED_ROWS: usize = 32;

struct GatherBytes<'a, 'b, T> {
    x: MatRef<'a, T>,
    rows: &'a [u32],
    columns: &'a [u32],
    shift: &'a [T],
    u: Vec<&'b mut [u8]>,
    y: Vec<&'b mut [i8]>,
}

impl<T: Real> Kernel for GatherBytes<'_, '_, T> {
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
        let mut row_bytes = vec![0i8; d];
        // `by_feature[j * STAGED_ROWS + k]`: feature j of the group's k-th row.
        let mut by_feature = vec![0i8; d * STAGED_ROWS];
        for (group, start) in rows.chunks(STAGED_ROWS).zip((0..).step_by(STAGED_ROWS)) {
            // Each row in file order (a sequential read the prefetcher follows), as bytes,
            // then spread to its place in each feature's run...
            for (k, &row) in group.iter().enumerate() {
                let values = x.row(row as usize).try_as_row_major().expect("row-major");
                // `x − c` is an exact integer in [−128, 127]: the features' ranges were
                // checked, and `c` is exact in the data's type.
                for ((s, &v), &c) in row_bytes.iter_mut().zip(values.as_slice()).zip(shift) {
                    *s = v.low_byte(c);
                }
                for (run, &b) in by_feature.chunks_exact_mut(STAGED_ROWS).zip(&row_bytes) {
                    run[k] = b;
                }
            }
            // ...then each feature's run copied whole.
            let (end, len) = (start + group.len(), group.len());
            for ((u, y), &j) in u.iter_mut().zip(y.iter_mut()).zip(columns) {
                let run = &by_feature[j as usize * STAGED_ROWS..][..len];
                let (u, y) = (&mut u[start..end], &mut y[start..end]);
                y.copy_from_slice(run);
                for (u, y) in u.iter_mut().zip(run) {
                    *u = (*y as u8) ^ 0x80;
                }
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
        AmxBytes, GemmBytes, MaddBytes, ReferenceBytes, hardware_product_available,
    };
    use crate::moments::integer::{integer_moments, small_integer_range};
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Four tests of one check `fn(what: &str, which: Which)`: `$reference` runs it with the
    /// portable reference product on every machine; `$hardware` with rten-gemm's product, and
    /// is ignored, with the reason in `cargo test`'s summary, where the build script found
    /// that product inexact on this CPU (no AVX-512 VNNI: the byte path is not taken there);
    /// `$avx2` with the AVX2 `vpmaddwd` product, ignored where there is no AVX2; `$amx` with
    /// the AMX tile product, ignored where the process has no tiles.
    macro_rules! product_tests {
        ($check:ident: $reference:ident, $hardware:ident, $avx2:ident, $amx:ident) => {
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
        Amx,
    }

    product_tests!(a_block_gives_exact_sums:
        a_block_gives_exact_sums_with_the_reference_product,
        a_block_gives_exact_sums_with_rten_gemms_product,
        a_block_gives_exact_sums_with_the_avx2_madd_product,
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
            match which {
                Which::Reference => {
                    check::<f64, ReferenceBytes>(lo, n, d, take, &mut rng);
                    check::<f32, ReferenceBytes>(lo, n, d, take, &mut rng);
                }
                Which::Hardware => {
                    check::<f64, GemmBytes>(lo, n, d, take, &mut rng);
                    check::<f32, GemmBytes>(lo, n, d, take, &mut rng);
                }
                Which::Avx2 => {
                    check::<f64, MaddBytes>(lo, n, d, take, &mut rng);
                    check::<f32, MaddBytes>(lo, n, d, take, &mut rng);
                }
                Which::Amx => {
                    check::<f64, AmxBytes>(lo, n, d, take, &mut rng);
                    check::<f32, AmxBytes>(lo, n, d, take, &mut rng);
                }
            }
        }
    }

    product_tests!(dense_chunks_give_the_integer_paths_bits:
        dense_chunks_give_the_integer_paths_bits_with_the_reference_product,
        dense_chunks_give_the_integer_paths_bits_with_rten_gemms_product,
        dense_chunks_give_the_integer_paths_bits_with_the_avx2_madd_product,
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
            match which {
                Which::Reference => {
                    check::<f64, ReferenceBytes>(&x, what);
                    check::<f32, ReferenceBytes>(&x, what);
                }
                Which::Hardware => {
                    check::<f64, GemmBytes>(&x, what);
                    check::<f32, GemmBytes>(&x, what);
                }
                Which::Avx2 => {
                    check::<f64, MaddBytes>(&x, what);
                    check::<f32, MaddBytes>(&x, what);
                }
                Which::Amx => {
                    check::<f64, AmxBytes>(&x, what);
                    check::<f32, AmxBytes>(&x, what);
                }
            }
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
