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

use crate::real::Real;
use crate::sparse::csr::{CsrChunk, CsrRef, SparseIndex, with_csr};

/// Rows of a block per part of a pass split between threads. The split depends on the shape
/// only, so sums are the same bits on any number of threads.
const PART_ROWS: usize = 1024;

/// Largest number of parts a block is split into (each part keeps its own D×L sum).
const MAX_PARTS: usize = 8;

/// The scatter product of one pass, accumulated block by block: `Xᵀ (X P − 1 sᵀ)` and the
/// column sums of `X P − 1 sᵀ`, for a D×L block `P` given by rows (`p_rows[j·L + c]`) and a
/// shift `s` (L values).
pub(crate) struct ScatterProduct<'a> {
    p_rows: &'a [f64],
    shift: &'a [f64],
    l: usize,
    /// One D×L sum (by rows) per part.
    parts: Vec<Vec<f64>>,
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
            parts: Vec::new(),
            column_sums: vec![0.0; l],
        }
    }

    /// Adds a block of rows.
    pub(crate) fn push(&mut self, x: CsrChunk<'_>) {
        with_csr!(x, x => self.push_typed(x))
    }

    fn push_typed<T: Real, I: SparseIndex>(&mut self, x: CsrRef<'_, T, I>) {
        let (n, l) = (x.nrows(), self.l);
        let d = self.p_rows.len() / l;
        assert_eq!(
            x.ncols(),
            d,
            "block of {} columns for P of {d} rows",
            x.ncols()
        );
        let parts = n.div_ceil(PART_ROWS).clamp(1, MAX_PARTS);
        while self.parts.len() < parts {
            self.parts.push(vec![0.0; d * l]);
        }
        let per_part = n.div_ceil(parts);
        let (p_rows, shift) = (self.p_rows, self.shift);
        let sums: Vec<Vec<f64>> = self.parts[..parts]
            .par_iter_mut()
            .enumerate()
            .map(|(p, w)| {
                let start = (p * per_part).min(n);
                let rows = per_part.min(n - start);
                let mut y = vec![0.0; l];
                let mut sums = vec![0.0; l];
                for i in start..start + rows {
                    let (indices, values) = x.row(i);
                    y.copy_from_slice(shift);
                    y.iter_mut().for_each(|v| *v = -*v);
                    for (&j, &v) in indices.iter().zip(values) {
                        let (j, v) = (j.to_usize(), v.to_f64());
                        let pj = &p_rows[j * l..(j + 1) * l];
                        y.iter_mut().zip(pj).for_each(|(a, b)| *a += v * b);
                    }
                    for (&j, &v) in indices.iter().zip(values) {
                        let (j, v) = (j.to_usize(), v.to_f64());
                        let wj = &mut w[j * l..(j + 1) * l];
                        wj.iter_mut().zip(&y).for_each(|(a, b)| *a += v * b);
                    }
                    sums.iter_mut().zip(&y).for_each(|(a, b)| *a += b);
                }
                sums
            })
            .collect();
        for part in sums {
            self.column_sums
                .iter_mut()
                .zip(&part)
                .for_each(|(a, b)| *a += b);
        }
    }

    /// `Xᵀ (X P − 1 sᵀ)` by rows (D·L values, feature j's at `j·L`), and the column sums of
    /// `X P − 1 sᵀ` (L values).
    pub(crate) fn finish(self) -> (Vec<f64>, Vec<f64>) {
        let d = self.p_rows.len() / self.l;
        let mut parts = self.parts.into_iter();
        let mut w = parts.next().unwrap_or_else(|| vec![0.0; d * self.l]);
        for part in parts {
            w.iter_mut().zip(&part).for_each(|(a, b)| *a += b);
        }
        (w, self.column_sums)
    }
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
    out.par_chunks_mut(l).enumerate().for_each(|(i, y)| {
        let (indices, values) = x.row(i);
        y.iter_mut().zip(shift).for_each(|(a, s)| *a = -s);
        for (&j, &v) in indices.iter().zip(values) {
            let (j, v) = (j.to_usize(), v.to_f64());
            y.iter_mut()
                .zip(&p_rows[j * l..(j + 1) * l])
                .for_each(|(a, b)| *a += v * b);
        }
    });
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
        ] {
            let (csr, dense) = random_csr(n, d, density, 5);
            let p = Mat::<f64>::from_fn(d, l, |j, c| ((j * 7 + c * 3) % 11) as f64 - 5.0);
            let shift: Vec<f64> = (0..l).map(|c| c as f64 * 0.25 - 0.3).collect();
            let y = Mat::<f64>::from_fn(n, l, |i, c| {
                (0..d).map(|j| dense[(i, j)] * p[(j, c)]).sum::<f64>() - shift[c]
            });
            let want_w = dense.transpose() * &y;
            let want_sums: Vec<f64> = (0..l).map(|c| (0..n).map(|i| y[(i, c)]).sum()).collect();
            let pr = by_rows(&p);
            for block in [n, 1000, 1] {
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
