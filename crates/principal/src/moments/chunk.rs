//! The one place a chunk's path is chosen. Every path gives the moments of the chunk exactly
//! to f64 rounding, and the exact ones (ordered, bytes, integers) the same bits; they differ in
//! speed. In order:
//!
//! 1. **ordered**, for a whole chunk of wide rows (more than [`NARROW_MAX_FEATURES`]) of
//!    small integers with many zeros (images on a blank background): rows sorted so that
//!    blocks of rows leave out the columns they are zero in (`moments::ordered`); each block's
//!    product in bytes where every feature spans at most 256 values and an exact byte product
//!    is available here, else in f32 over blocks short enough to be exact. The column orders
//!    are learnt from the first chunk that tries the path and kept for the next; once the path
//!    is declined, the next chunks go piece by piece without another look.
//!
//! Otherwise the chunk goes piece by piece (the accumulator cuts it into cache-sized pieces,
//! and may first split it between threads), each piece by the first of:
//!
//! 2. **bytes**: wide row-major rows whose every feature spans at most 256 values, with an
//!    exact byte product here (`moments::bytes`);
//! 3. **integers**: integers of magnitude at most 512 after a shift by each feature's midpoint:
//!    exact f32 products (`moments::integer`);
//! 4. **mixed**: `f32` data under [`Precision::Mixed`]: f32 products of blocks centred in f64
//!    (`moments::float`);
//! 5. **float**: blocks centred in f64, f64 products (`moments::float`).
//!
//! Integers are finite: only the float paths need the finiteness check (one pass less), and
//! they name the first non-finite value.
//!
//! The byte product is a type parameter (`P`): production passes [`MachineBytes`] (rten-gemm
//! where exact, else AVX2's `vpmaddwd`; none elsewhere), tests also a portable reference, so that every step of the
//! byte paths but the hardware kernel runs on every machine.

use faer::MatRef;

use crate::error::Result;
use crate::kernel::bytes::{ByteProduct, MachineBytes};
use crate::kernel::products::NARROW_MAX_FEATURES;
use crate::kernel::scan::IntegerRange;
use crate::moments::bytes::{
    ByteBlocks, Stored, byte_moments, stored_byte_moments, sums_stay_exact,
};
use crate::moments::float::{float_moments, mixed_moments};
use crate::moments::integer::{integer_moments, small_integers};
use crate::moments::ordered::{OrderedRows, ordered_moments};
use crate::moments::workspace::{ColumnOrders, Workspace};
use crate::options::Precision;
use crate::real::{ChunkRef, Real};

/// Fewest rows for which the integer paths are worth their scan.
pub(crate) const MIN_INTEGER_ROWS: usize = 64;

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` (into `ws.scatter`) of a whole chunk by the
/// ordered path (1.), or `None` (the chunk then goes piece by piece to [`piece_moments`]).
pub(crate) fn whole_chunk_moments<T: Stored>(
    chunk: MatRef<'_, T>,
    ws: &mut Workspace,
) -> Option<Vec<f64>> {
    // Narrow rows have little to leave out, and their dense products are fast.
    if chunk.ncols() <= NARROW_MAX_FEATURES {
        return None;
    }
    ordered::<T, MachineBytes>(chunk, ws)
}

/// The ordered path with the byte product `P` for its blocks where they fit a byte.
pub(crate) fn ordered<T: Stored, P: ByteProduct>(
    chunk: MatRef<'_, T>,
    ws: &mut Workspace,
) -> Option<Vec<f64>> {
    // Buffers (and orders) for this width first: a change of width drops the orders.
    ws.fit(chunk.ncols());
    let learnt_here = matches!(ws.orders, ColumnOrders::Unlearnt);
    let rows = OrderedRows::key(chunk, &mut ws.orders, ws.par)?;
    ws.prepare(chunk.ncols());
    let bytes = ByteBlocks::<T, P>::for_range(&rows.range.lo, &rows.range.hi);
    let mean = ordered_moments(chunk, &rows, bytes.as_ref(), ws);
    if mean.is_none() {
        if learnt_here {
            ws.orders = ColumnOrders::Declined;
        } else {
            // Orders learnt from other rows (a file sorted by class, say) may not fit these:
            // learnt again from this chunk, which declines the path if they do not either.
            ws.orders = ColumnOrders::Unlearnt;
            return ordered::<T, P>(chunk, ws);
        }
    }
    mean
}

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` of a piece of rows (the strictly upper
/// triangle is not meaningful) into `ws.scatter`, by the first of paths 2–5 that applies; an
/// error for a non-finite value, its row counted from `first_row`.
///
/// Row-major pieces (`col_stride() == 1`) are the fast layout: their transpose is a
/// column-major D×n block, which is what the products want as their left operand.
pub(crate) fn piece_moments<T: Real, P: ByteProduct>(
    piece: MatRef<'_, T>,
    ws: &mut Workspace,
    first_row: usize,
    precision: Precision,
) -> Result<Vec<f64>> {
    let range = (piece.nrows() >= MIN_INTEGER_ROWS)
        .then(|| IntegerRange::scan(piece, ws.par))
        .flatten();
    if let Some(range) = &range {
        ws.prepare(piece.ncols());
        if let Some(mean) = dense_bytes::<T, P>(piece, range, ws) {
            return Ok(mean);
        }
        if let Some((shift, magnitude)) = small_integers(range) {
            return Ok(integer_moments(piece, &shift, magnitude, ws));
        }
    }
    match (ChunkRef::from(piece), precision) {
        (ChunkRef::F32(piece), Precision::Mixed) => {
            ws.prepare(piece.ncols());
            mixed_moments(piece, ws, first_row)
        }
        // Its first product replaces the scatter: no zeroing (D² values every 256 KiB of rows).
        _ => {
            ws.fit(piece.ncols());
            float_moments(piece, ws, first_row)
        }
    }
}

/// Path 2 where it applies: a row-major piece of more than [`NARROW_MAX_FEATURES`] features
/// whose every feature spans at most 256 values, in bytes by `P` if available. Narrow rows
/// keep the integer path's f32 products in bands, faster there (bench/results.md).
fn dense_bytes<T: Real, P: ByteProduct>(
    piece: MatRef<'_, T>,
    range: &IntegerRange,
    ws: &mut Workspace,
) -> Option<Vec<f64>> {
    if piece.ncols() <= NARROW_MAX_FEATURES
        || piece.col_stride() != 1
        || !sums_stay_exact(piece.nrows())
    {
        return None;
    }
    let bytes = ByteBlocks::<T, P>::for_range(&range.lo, &range.hi)?;
    Some(byte_moments(piece, range, &bytes, ws))
}

/// Path 2 for a piece of bytes as stored (`u8`): where the piece's values as `f32` would take
/// it (as [`piece_moments`] chooses), their mean and scatter (into `ws.scatter`) with the same
/// bits, but neither widened nor scanned as floats; `None` where they would take another path
/// (the caller then widens the piece for [`piece_moments`]).
pub(crate) fn stored_byte_piece_moments<P: ByteProduct>(
    piece: MatRef<'_, u8>,
    ws: &mut Workspace,
) -> Option<Vec<f64>> {
    // As `piece_moments` and `dense_bytes` decide for these values: every feature of bytes
    // spans at most 256 values, and their shift is exact in f32.
    if piece.nrows() < MIN_INTEGER_ROWS
        || piece.ncols() <= NARROW_MAX_FEATURES
        || piece.col_stride() != 1
        || !sums_stay_exact(piece.nrows())
    {
        return None;
    }
    let product = P::available()?;
    ws.prepare(piece.ncols());
    Some(stored_byte_moments(piece, &product, ws))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::bytes::ReferenceBytes;
    use crate::moments::integer::small_integer_range;
    use crate::moments::tests::reference_moments as reference;
    use crate::options::MIXED_BLOCK_ROWS;
    use faer::{Mat, Par};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The production path: the hardware byte product where it is exact.
    fn chunk_moments<T: Real>(
        chunk: MatRef<'_, T>,
        ws: &mut Workspace,
        first_row: usize,
        precision: Precision,
    ) -> Result<Vec<f64>> {
        piece_moments::<T, MachineBytes>(chunk, ws, first_row, precision)
    }

    /// Dense bytes are chosen for wide row-major pieces whose features fit a byte (with the
    /// reference product, so on every machine); not for pieces stored by columns, narrow rows,
    /// or a feature spanning 257 values.
    #[test]
    fn dense_bytes_are_chosen_only_for_wide_row_major_byte_valued_pieces() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let x = Mat::<f32>::from_fn(330, 500, |_, _| rng.random_range(0..=255) as f32);
        let chunk = x.transpose();
        let range = IntegerRange::scan(chunk, Par::Seq).expect("integers");
        let mut ws = Workspace::default();
        ws.prepare(330);
        assert!(dense_bytes::<f32, ReferenceBytes>(chunk, &range, &mut ws).is_some());
        let by_columns = chunk.to_owned();
        assert!(dense_bytes::<f32, ReferenceBytes>(by_columns.as_ref(), &range, &mut ws).is_none());
        let narrow = chunk.subcols(0, NARROW_MAX_FEATURES);
        let narrow_range = IntegerRange::scan(narrow, Par::Seq).expect("integers");
        ws.prepare(NARROW_MAX_FEATURES);
        assert!(dense_bytes::<f32, ReferenceBytes>(narrow, &narrow_range, &mut ws).is_none());
        let mut wide = range.clone();
        wide.hi[7] = wide.lo[7] + 256.0;
        ws.prepare(330);
        assert!(dense_bytes::<f32, ReferenceBytes>(chunk, &wide, &mut ws).is_none());
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
        let per_entry = (MIXED_BLOCK_ROWS as f64 + 3.0) * u;
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
