//! Scans of every value of a chunk: finiteness, per-feature sums, and whether the values are
//! integers (with each feature's range).

use faer::{MatRef, Par};

use crate::error::{PcaError, Result};
use crate::kernel::parallel::join;
use crate::kernel::simd::{Kernel, dispatch};
use crate::real::{ChunkRef, Real};

/// The first non-finite value of `x` in reading order, as an error naming its place.
pub(crate) fn check_finite<T: Real>(x: MatRef<'_, T>, row_offset: usize) -> Result<()> {
    // Fast scan in memory order; the slow search for the first bad row runs only on failure.
    let all_finite = if x.col_stride() == 1 {
        (0..x.nrows()).all(|i| x.row(i).iter().all(|v| v.to_f64().is_finite()))
    } else {
        (0..x.ncols()).all(|j| x.col(j).iter().all(|v| v.to_f64().is_finite()))
    };
    if all_finite {
        return Ok(());
    }
    for i in 0..x.nrows() {
        for j in 0..x.ncols() {
            let v = x[(i, j)].to_f64();
            if !v.is_finite() {
                return Err(PcaError::NonFinite {
                    row: row_offset + i,
                    column: j,
                    value: v,
                });
            }
        }
    }
    Ok(())
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
    dispatch(SumRows { rows })
}

/// Per-feature sums of row-major `rows`.
struct SumRows<'a, T> {
    rows: MatRef<'a, T>,
}

impl<T: Real> Kernel for SumRows<'_, T> {
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
            let ok = dispatch(ScanRows {
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

impl<T: Real> Kernel for ScanRows<'_, T> {
    type Output = bool;
    #[inline(always)]
    fn run(self) -> bool {
        // Branch-free within a row so that it vectorises.
        let rows = self.rows;
        if let ChunkRef::F32(rows) = ChunkRef::from(rows) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

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
}
