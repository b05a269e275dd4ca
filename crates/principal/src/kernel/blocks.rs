//! Blocks of rows copied as the columns of a reused buffer, shifted: the layout the products
//! want (a row-major chunk's rows become a column-major D×n block).

use faer::{Mat, MatMut, MatRef, Par};

use crate::kernel::parallel::join;
use crate::kernel::simd::{Kernel, dispatch};
use crate::real::Real;

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
    dispatch(ShiftRows { rows, shift, dst })
}

/// Writes the rows of `rows` minus `shift` as the columns of `dst`, computing in the shift's
/// type `C` (see [`shifted_copy`]); returns the sums of the differences in `C`, before
/// rounding to the output type (exact for integers), as f64.
struct ShiftRows<'a, T, C, U> {
    rows: MatRef<'a, T>,
    shift: &'a [C],
    dst: MatMut<'a, U>,
}

impl<T, C, U> Kernel for ShiftRows<'_, T, C, U>
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
        // Rows stored column by column rather than by rows: by tiles of features.
        if rows.col_stride() != 1
            && let Some(by_columns) = rows.try_as_col_major()
        {
            shift_columns(by_columns, shift, dst, &mut sums);
            return sums.into_iter().map(C::to_f64).collect();
        }
        for i in 0..rows.nrows() {
            let out = column_of(&mut dst, i);
            let targets = out.iter_mut().zip(shift).zip(sums.iter_mut());
            let put = |((o, &s), sum): ((&mut U, &C), &mut C), v: T| shift_value(v, s, o, sum);
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

/// `out = x − s` rounded to the output type, and `sum += x − s` before rounding, computed in
/// the shift's type: the one step of both layouts' copies, so that they give the same bits.
/// Widening and narrowing between equal types compile to nothing.
#[inline(always)]
fn shift_value<T: Real, C, U: Real>(x: T, s: C, out: &mut U, sum: &mut C)
where
    C: Real + std::ops::Sub<Output = C> + std::ops::AddAssign,
{
    let y = C::from_f64(x.to_f64()) - s;
    *out = U::from_f64(y.to_f64());
    *sum += y;
}

/// Column `i` of `dst` (a row of the copy) as a slice.
#[inline(always)]
fn column_of<'a, U>(dst: &'a mut MatMut<'_, U>, i: usize) -> &'a mut [U] {
    let out = dst.as_mut().col_mut(i).try_as_col_major_mut();
    out.expect("columns of a Mat are contiguous").as_slice_mut()
}

/// Features of a column-major block [`shift_columns`] reads at once.
const COLUMN_TILE: usize = 8;

/// [`ShiftRows`] for rows stored column by column (a faer `Mat`, a Fortran-order array, a
/// data frame's values): [`COLUMN_TILE`] features at a time, row after row. Reading whole rows
/// draws on D columns at once, more streams than the hardware prefetcher follows; a tile draws
/// on eight (1,000,000 × 100 f64: the fit 5–7% faster than by whole rows, bench/results.md).
/// Each feature's sum still adds its values in row order, so the bits are those of the same
/// rows stored by rows.
#[inline(always)]
fn shift_columns<T, C, U>(
    rows: faer::mat::MatRef<'_, T, usize, usize, faer::ContiguousFwd>,
    shift: &[C],
    mut dst: MatMut<'_, U>,
    sums: &mut [C],
) where
    T: Real,
    C: Real + std::ops::Sub<Output = C> + std::ops::AddAssign,
    U: Real,
{
    let (n, d) = (rows.nrows(), rows.ncols());
    for first in (0..d).step_by(COLUMN_TILE) {
        let width = COLUMN_TILE.min(d - first);
        // A narrower last tile repeats its last column in the slots it does not read.
        let columns: [&[T]; COLUMN_TILE] =
            std::array::from_fn(|t| rows.col(first + t.min(width - 1)).as_slice());
        let (shift, sums) = (
            &shift[first..first + width],
            &mut sums[first..first + width],
        );
        for i in 0..n {
            let out = &mut column_of(&mut dst, i)[first..first + width];
            for t in 0..width {
                shift_value(columns[t][i], shift[t], &mut out[t], &mut sums[t]);
            }
        }
    }
}

/// Asks the CPU to bring `values` into its first-level cache, one cache line at a time,
/// without waiting for them: for rows read out of file order, the next row's lines requested
/// while this one is converted (the hardware prefetcher follows a row, not a jump between
/// rows).
#[inline(always)]
pub(crate) fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        let step = (64 / std::mem::size_of::<T>()).max(1);
        for v in values.iter().step_by(step) {
            simd.sse
                ._mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(v).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `shifted_copy` of the rows stored column by column and of the same rows stored by rows:
    /// the copies and the sums' bits.
    fn both_layouts<T, C, U>(by_columns: &Mat<T>, shift: &[C], par: Par) -> [(Mat<U>, Vec<u64>); 2]
    where
        T: Real + faer::traits::ComplexField,
        C: Real + std::ops::Sub<Output = C> + std::ops::AddAssign,
        U: Real + faer::traits::ComplexField,
    {
        let (n, d) = (by_columns.nrows(), by_columns.ncols());
        let stored = by_columns.transpose().to_owned();
        let by_rows = stored.transpose();
        assert!(by_columns.row_stride() == 1 && by_rows.col_stride() == 1);
        [by_columns.as_ref(), by_rows].map(|rows| {
            let mut dst = Mat::<U>::zeros(d, n);
            let sums = shifted_copy(rows, shift, dst.as_mut(), par);
            (dst, sums.iter().map(|s| s.to_bits()).collect())
        })
    }

    /// Rows stored column by column go through tiles of [`COLUMN_TILE`] features; they give
    /// the bits of the same rows stored by rows, the copy and every feature's sum (added in row
    /// order), for widths below, at and around the tile's, in f64 far from zero and in the
    /// integer path's f32.
    #[test]
    fn rows_stored_by_columns_copy_as_rows_stored_by_rows() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for (n, d) in [(1, 3), (37, 1), (300, 7), (300, 8), (700, 13), (256, 100)] {
            let x = Mat::<f64>::from_fn(n, d, |_, j| 1e6 * j as f64 + rng.random_range(-3.0..3.0));
            let shift: Vec<f64> = (0..d).map(|j| 1e6 * j as f64 + 0.25).collect();
            for par in [Par::Seq, Par::rayon(2)] {
                let [a, b] = both_layouts::<f64, f64, f64>(&x, &shift, par);
                assert!(a == b, "f64 {n}×{d}");
            }
            let bytes = Mat::<f32>::from_fn(n, d, |_, _| rng.random_range(0..256u16) as f32);
            let shift: Vec<f32> = (0..d).map(|j| (j % 200) as f32).collect();
            let [a, b] = both_layouts::<f32, f32, f32>(&bytes, &shift, Par::Seq);
            assert!(a == b, "f32 {n}×{d}");
        }
    }
}
