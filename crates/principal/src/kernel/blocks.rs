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
