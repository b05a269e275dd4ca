//! The integer path: integers (pixels, counts) whose range, after shifting each feature by an
//! integer near its midpoint, has magnitude ≤ m. An f32 product over blocks of ⌊2²⁴/m²⌋ rows
//! is exact (every partial sum is an integer below 2²⁴; for pixels, m = 128 and blocks of
//! 1,024 rows) and runs at about twice the f64 rate; the blocks are summed in f64, still
//! exactly (below 2⁵³). The centred matrix then follows as `Σzzᵀ − (Σz)(Σz)ᵀ/n` of the shifted
//! values z from exact integer sums: the one place where that form is allowed (a single
//! rounding, no cancellation of rounded quantities). Every exact path (bytes, ordered) ends in
//! the same rounding, [`centre_shifted_sums`], so all give the same bits.

use faer::{Accum, MatMut, MatRef};

use crate::kernel::blocks::{ensure_block, shifted_copy};
use crate::kernel::products::{add_lower, lower_product};
use crate::kernel::scan::IntegerRange;
use crate::moments::workspace::Workspace;
use crate::real::{ChunkRef, Real};

/// Largest integer magnitude whose products still allow blocks of at least 64 rows in f32.
const MAX_EXACT_MAGNITUDE: f64 = 512.0;

/// The shift (an integer near the middle of each feature's range) and the largest magnitude
/// after it, when that magnitude is at most [`MAX_EXACT_MAGNITUDE`]; `None` otherwise.
pub(crate) fn small_integers(range: &IntegerRange) -> Option<(Vec<f64>, f64)> {
    let (shift, magnitude) = range.midpoint_shift();
    (magnitude <= MAX_EXACT_MAGNITUDE).then_some((shift, magnitude))
}

/// [`small_integers`] of a chunk's scanned range (`None` for a chunk too small to be worth it,
/// as the path choice decides).
#[cfg(test)]
pub(crate) fn small_integer_range<T: Real>(
    chunk: MatRef<'_, T>,
    par: faer::Par,
) -> Option<(Vec<f64>, f64)> {
    if chunk.nrows() < crate::moments::chunk::MIN_INTEGER_ROWS {
        return None;
    }
    small_integers(&IntegerRange::scan(chunk, par)?)
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

/// Mean and lower triangle of `Σ (x − μ)(x − μ)ᵀ` (into `ws.scatter`) of a chunk of integers
/// whose magnitude after `shift` is at most `magnitude` (≤ [`MAX_EXACT_MAGNITUDE`]): exact
/// f32 products over blocks of [`integer_block_rows`], summed in f64, then the one rounding.
pub(crate) fn integer_moments<T: Real>(
    chunk: MatRef<'_, T>,
    shift: &[f64],
    magnitude: f64,
    ws: &mut Workspace,
) -> Vec<f64> {
    let (n, d) = (chunk.nrows(), chunk.ncols());
    let block = integer_block_rows(magnitude)
        .expect("small_integers bounds the magnitude")
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
        let block_sums = match ChunkRef::from(part) {
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
