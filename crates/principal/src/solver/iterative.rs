//! What the iterative solvers share: applying the scatter matrix `Xsᵀ Xs` to a block of vectors
//! in one pass over a [`ChunkSource`], and the Rayleigh–Ritz step with its residuals.
//!
//! Centring is done chunk by chunk (never `X − 1μᵀ` for the whole X, and never
//! `XᵀX − N μμᵀ`, which would lose everything under an offset of 1e6); see [`Centring`].
//! Also the iterative solvers' shared default tolerance.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::collective::{Collective, Stage, agree};
use crate::data::ChunkSource;
use crate::error::{PcaError, Result};
use crate::kernel::blocks::{ensure_block, shifted_copy};
use crate::kernel::parallel::faer_par;
use crate::kernel::parallel::join;
use crate::real::{ChunkRef, Real};
use crate::solver::{Centring, IterationReport, IterativeProblem, Rows, Spectrum, top_eigen};
use crate::sparse::products::ScatterProduct;
use crate::sparse::source::SparseSource;

/// Relative residual at which the power and em solvers stop when no tolerance is given.
pub(crate) const DEFAULT_TOLERANCE: f64 = 1e-9;

/// Rows centred at once when a chunk must be copied: about 2 MiB of f64 (at least 64 rows), a
/// copy that stays in cache for the two products that read it (faster than longer blocks:
/// bench/results.md).
fn block_rows(n_features: usize) -> usize {
    ((1 << 18) / n_features.max(1)).clamp(64, 4096)
}

/// What one thread needs to centre blocks and accumulate its L×D share of `Wᵀ`: buffers
/// reused from block to block (a fresh allocation per block costs more in page faults than the
/// copy itself).
struct BlockWork {
    buffer: Mat<f64>,
    y: Mat<f64>,
    wt: Mat<f64>,
}

impl BlockWork {
    fn new(l: usize, d: usize) -> Self {
        BlockWork {
            buffer: Mat::new(),
            y: Mat::new(),
            wt: Mat::zeros(l, d),
        }
    }
}

/// `Wᵀ += (Xc P)ᵀ Xc` over blocks of rows of `x`, each centred by the vectorised copy of the
/// covariance kernel. A chunk of at least two blocks is split in two halves, each with its own
/// buffers, sequential products and `Wᵀ` (added at the end of the pass): products of a few
/// thousand rows split between threads spend much of their time waiting on each other. The
/// split depends on the shape only, so the sums are the same bits on any number of threads.
fn centred_blocks<T: Real>(
    x: MatRef<'_, T>,
    mean: &[f64],
    ps: MatRef<'_, f64>,
    halves: &mut [BlockWork; 2],
) {
    let (n, d) = (x.nrows(), x.ncols());
    let step = block_rows(d);
    let [left, right] = halves;
    if n < 2 * step {
        return centred_run(x, mean, ps, left, faer_par());
    }
    let half = (n / 2).div_ceil(step) * step;
    let (a, b) = (x.subrows(0, half), x.subrows(half, n - half));
    join(
        faer_par(),
        || centred_run(a, mean, ps, left, Par::Seq),
        || centred_run(b, mean, ps, right, Par::Seq),
    );
}

/// [`centred_blocks`] on one thread's rows, its products run with `par`.
fn centred_run<T: Real>(
    x: MatRef<'_, T>,
    mean: &[f64],
    ps: MatRef<'_, f64>,
    work: &mut BlockWork,
    par: Par,
) {
    let (n, d, l) = (x.nrows(), x.ncols(), ps.ncols());
    let step = block_rows(d).min(n);
    ensure_block(&mut work.buffer, d, step);
    if work.y.nrows() < step || work.y.ncols() != l {
        work.y = Mat::zeros(step, l);
    }
    let mut start = 0;
    while start < n {
        let rows = step.min(n - start);
        // D×rows, one centred sample per column; its transpose is the rows×D block Xc.
        shifted_copy(
            x.subrows(start, rows),
            mean,
            work.buffer.as_mut().subcols_mut(0, rows),
            par,
        );
        let xc = work.buffer.as_ref().subcols(0, rows).transpose();
        let mut yb = work.y.as_mut().subrows_mut(0, rows);
        matmul(yb.as_mut(), Accum::Replace, xc, ps, 1.0, par);
        matmul(
            work.wt.as_mut(),
            Accum::Add,
            yb.as_ref().transpose(),
            xc,
            1.0,
            par,
        );
        start += rows;
    }
}

/// Pieces each product of [`implicit_products`] is cut into, at most: enough for the threads to
/// share them evenly.
const PRODUCT_PIECES: usize = 16;

/// Fewest rows of X (columns of Wᵀ) in a piece: below this a sequential product loses to its
/// packing.
const MIN_PIECE: usize = 48;

/// `start..start + len` ranges cutting `0..n` into at most [`PRODUCT_PIECES`] pieces of at
/// least [`MIN_PIECE`] (the last may be shorter): they depend on `n` only.
fn pieces(n: usize) -> Vec<(usize, usize)> {
    let size = n.div_ceil(PRODUCT_PIECES).max(MIN_PIECE);
    (0..n).step_by(size).map(|s| (s, size.min(n - s))).collect()
}

/// `dst ← accum(dst) + alpha · a b`, cut along `dst`'s longer side into [`pieces`] that
/// threads take whole, each a sequential faer product: the basis products of the iterative
/// solvers (20,000 × 60 and thinner) waited at faer's barriers more than they multiplied. The
/// pieces split no sum, so the bits are those of one sequential product on any threads.
pub(crate) fn product_in_pieces(
    dst: MatMut<'_, f64>,
    accum: Accum,
    a: MatRef<'_, f64>,
    b: MatRef<'_, f64>,
    alpha: f64,
) {
    use rayon::prelude::*;
    let by_rows = dst.nrows() >= dst.ncols();
    split_into_pieces(dst, by_rows)
        .into_par_iter()
        .for_each(|(start, piece)| {
            let (a, b) = if by_rows {
                (a.subrows(start, piece.nrows()), b)
            } else {
                (a, b.subcols(start, piece.ncols()))
            };
            matmul(piece, accum, a, b, alpha, Par::Seq);
        });
}

/// `dst` cut by rows (or by columns) into [`pieces`], each with its first row (column).
fn split_into_pieces(dst: MatMut<'_, f64>, by_rows: bool) -> Vec<(usize, MatMut<'_, f64>)> {
    let mut parts = Vec::new();
    let mut rest = dst;
    for (start, len) in pieces(if by_rows { rest.nrows() } else { rest.ncols() }) {
        let (piece, tail) = if by_rows {
            rest.split_at_row_mut(len)
        } else {
            rest.split_at_col_mut(len)
        };
        parts.push((start, piece));
        rest = tail;
    }
    parts
}

/// `a b` by [`product_in_pieces`].
pub(crate) fn product(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let mut c = Mat::zeros(a.nrows(), b.ncols());
    product_in_pieces(c.as_mut(), Accum::Replace, a, b, 1.0);
    c
}

/// `Wᵀ += Yᵀ X` with `Y = X Ps − 1 shiftᵀ` for one f64 chunk (the mean subtracted inside the
/// products: implicit centring), and `1ᵀY` added to `column_sums`. Each product is cut into
/// pieces that a thread takes whole and computes with one sequential faer product: `Y` by rows
/// of X, `Wᵀ` by columns of X. No piece adds to another's result, so the bits are the same
/// whatever the threads; and no thread waits on another inside a product (faer's own threads
/// meet at a barrier for every 512 terms of a sum, 40 times in each `X Ps` of 20,000 features:
/// bench/results.md, 2026-11-26 case 3).
fn implicit_products(
    x: MatRef<'_, f64>,
    ps: MatRef<'_, f64>,
    shift: &[f64],
    y: &mut Mat<f64>,
    wt: MatMut<'_, f64>,
    column_sums: &mut [f64],
) {
    use rayon::prelude::*;
    let (n, l) = (x.nrows(), ps.ncols());
    if y.nrows() < n || y.ncols() != l {
        *y = Mat::zeros(n, l);
    }
    let mut y = y.as_mut().subrows_mut(0, n);
    let rows = split_into_pieces(y.as_mut(), true);
    rows.into_par_iter().for_each(|(start, mut piece)| {
        let len = piece.nrows();
        matmul(
            piece.as_mut(),
            Accum::Replace,
            x.subrows(start, len),
            ps,
            1.0,
            Par::Seq,
        );
        for (c, &s) in shift.iter().enumerate() {
            piece.as_mut().col_mut(c).iter_mut().for_each(|v| *v -= s);
        }
    });
    for (c, sum) in column_sums.iter_mut().enumerate() {
        *sum += y.as_ref().col(c).iter().sum::<f64>();
    }
    let y = y.as_ref();
    let columns = split_into_pieces(wt, false);
    columns.into_par_iter().for_each(|(start, piece)| {
        let len = piece.ncols();
        matmul(
            piece,
            Accum::Add,
            y.transpose(),
            x.subcols(start, len),
            1.0,
            Par::Seq,
        );
    });
}

/// `W = Xsᵀ (Xs P)` for the centred, scaled data Xs and a D×L block P: one pass. Over several
/// processes, each applies its own rows and the blocks are summed (L·(D + 1) values).
pub(crate) fn apply_scatter(
    source: &mut dyn ChunkSource,
    mean: &[f64],
    scale: Option<&[f64]>,
    centring: Centring,
    p: MatRef<'_, f64>,
    collective: &dyn Collective,
) -> Result<Mat<f64>> {
    let (d, l) = (p.nrows(), p.ncols());
    // Scaling folds into P and W: Xs = Xc S⁻¹, so Xsᵀ Xs P = S⁻¹ Xcᵀ Xc (S⁻¹ P).
    let inv = |j: usize| scale.map_or(1.0, |s| 1.0 / s[j]);
    // S⁻¹P, copied only when there is a scale.
    let scaled = scale.map(|_| Mat::<f64>::from_fn(d, l, |j, c| p[(j, c)] * inv(j)));
    let ps = scaled.as_ref().map_or(p, Mat::as_ref);
    // μᵀ S⁻¹P: what the mean contributes to every row of X S⁻¹P.
    let shift: Vec<f64> = (0..l)
        .map(|c| (0..d).map(|j| mean[j] * ps[(j, c)]).sum())
        .collect();
    // Accumulated as Wᵀ = Yᵀ X: with X stored by columns this shape of product measured
    // about 1.4× faster than Xᵀ Y.
    let mut wt = Mat::<f64>::zeros(l, d);
    let mut column_sums = vec![0.0; l];
    // Y of the implicit products, kept from chunk to chunk.
    let mut y = Mat::<f64>::new();
    // The explicit centring's buffers, made when first needed: each holds an L×D `Wᵀ`.
    let mut halves: Option<[BlockWork; 2]> = None;
    let mut new_halves = || [BlockWork::new(l, d), BlockWork::new(l, d)];
    let pass = source.pass(&mut |chunk| {
        if chunk.ncols() != d {
            return Err(PcaError::FeatureMismatch {
                expected: d,
                found: chunk.ncols(),
            });
        }
        match (centring, chunk) {
            (Centring::Implicit, ChunkRef::F64(x)) => {
                implicit_products(x, ps, &shift, &mut y, wt.as_mut(), &mut column_sums)
            }
            (_, ChunkRef::F32(x)) => {
                centred_blocks(x, mean, ps, halves.get_or_insert_with(&mut new_halves))
            }
            (Centring::Explicit, ChunkRef::F64(x)) => {
                centred_blocks(x, mean, ps, halves.get_or_insert_with(&mut new_halves))
            }
        }
        Ok(())
    });
    agree(collective, Stage::Apply, pass.map(|()| 0))?;
    // The halves' sums, always in the same order.
    for work in halves.iter().flatten() {
        wt += &work.wt;
    }
    if collective.size() > 1 {
        // Wᵀ and the column sums in one message; Wᵀ's columns are contiguous.
        let mut block: Vec<f64> = (0..d).flat_map(|j| wt.col(j).iter().copied()).collect();
        block.extend_from_slice(&column_sums);
        collective.sum(&mut block);
        wt = Mat::from_fn(l, d, |c, j| block[j * l + c]);
        column_sums.copy_from_slice(&block[d * l..]);
    }
    // Implicit chunks gave Xᵀ Y; remove μ (1ᵀY). Explicit chunks left column_sums at zero.
    Ok(Mat::from_fn(d, l, |j, c| {
        (wt[(c, j)] - mean[j] * column_sums[c]) * inv(j)
    }))
}

/// [`apply_scatter`] for sparse rows, never densified: `Y = X S⁻¹P − 1 (μᵀ S⁻¹P)` and
/// `Xᵀ Y` in one walk of each row's entries, then `Xcᵀ Y = Xᵀ Y − μ (1ᵀ Y)`: the mean is
/// subtracted inside the products (implicit centring; its rounding is about ε·‖μ‖/spread
/// relative, small where data is sparse, its means near zero).
pub(crate) fn apply_sparse_scatter(
    source: &mut dyn SparseSource,
    mean: &[f64],
    scale: Option<&[f64]>,
    p: MatRef<'_, f64>,
    collective: &dyn Collective,
) -> Result<Mat<f64>> {
    let (d, l) = (p.nrows(), p.ncols());
    let inv = |j: usize| scale.map_or(1.0, |s| 1.0 / s[j]);
    // S⁻¹P by rows: a row's entries then read contiguous L-vectors.
    let ps_rows: Vec<f64> = (0..d)
        .flat_map(|j| (0..l).map(move |c| p[(j, c)] * inv(j)))
        .collect();
    let shift: Vec<f64> = (0..l)
        .map(|c| (0..d).map(|j| mean[j] * ps_rows[j * l + c]).sum())
        .collect();
    let mut product = ScatterProduct::new(&ps_rows, &shift);
    let pass = source.pass(&mut |block| {
        if block.ncols() != d {
            return Err(PcaError::FeatureMismatch {
                expected: d,
                found: block.ncols(),
            });
        }
        product.push(block);
        Ok(())
    });
    agree(collective, Stage::Apply, pass.map(|()| 0))?;
    let (mut w, mut column_sums) = product.finish();
    // S⁻¹P's rows are done with: not held beside W and its copy below (D·L values each).
    drop(ps_rows);
    if collective.size() > 1 {
        let mut block = w;
        block.extend_from_slice(&column_sums);
        collective.sum(&mut block);
        column_sums.copy_from_slice(&block[d * l..]);
        block.truncate(d * l);
        w = block;
    }
    Ok(Mat::from_fn(d, l, |j, c| {
        (w[j * l + c] - mean[j] * column_sums[c]) * inv(j)
    }))
}

/// A D×L matrix of independent standard normal entries, from `seed`.
pub(crate) fn gaussian(d: usize, l: usize, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Column by column, so the first columns do not depend on L.
    let mut m = Mat::zeros(d, l);
    for j in 0..l {
        for i in 0..d {
            m[(i, j)] = StandardNormal.sample(&mut rng);
        }
    }
    m
}

/// Orthonormal basis of the columns of `w` (thin Householder QR).
pub(crate) fn orthonormalise(w: MatRef<'_, f64>) -> Mat<f64> {
    w.qr().compute_thin_Q()
}

/// `rest ← rest − basis (basisᵀ rest)` for an orthonormal `basis`: one block Gram–Schmidt
/// step; returns the coefficients `basisᵀ rest` it removed.
pub(crate) fn remove_along(basis: MatRef<'_, f64>, mut rest: MatMut<'_, f64>) -> Mat<f64> {
    let along = product(basis.transpose(), rest.as_ref());
    product_in_pieces(rest.as_mut(), Accum::Add, basis, along.as_ref(), -1.0);
    along
}

/// `a ← [a | b]`, in place while `a`'s capacity lasts.
pub(crate) fn append_cols(a: &mut Mat<f64>, b: MatRef<'_, f64>) {
    let (d, na) = (b.nrows(), a.ncols());
    a.resize_with(d, na + b.ncols(), |_, _| 0.0);
    a.as_mut().subcols_mut(na, b.ncols()).copy_from(b);
}

/// The result of a Rayleigh–Ritz step on span(Q).
pub(crate) struct Ritz {
    /// Ritz values of the scatter matrix, largest first.
    pub values: Vec<f64>,
    /// The leading Ritz vectors (D×wanted), matching the first `values`.
    pub vectors: Mat<f64>,
    /// ‖Xsᵀ Xs b_i − θ_i b_i‖ for every lifted Ritz pair.
    pub residuals: Vec<f64>,
}

impl Ritz {
    /// `max ‖S b − θ b‖ / θ₁` over the first `k` Ritz pairs.
    pub(crate) fn estimate(&self, k: usize) -> f64 {
        let top = self.values[0].max(f64::MIN_POSITIVE);
        self.residuals[..k]
            .iter()
            .fold(0.0f64, |a, &r| a.max(r / top))
    }
}

/// Rayleigh–Ritz with `W = Xsᵀ Xs Q` already computed: eigenpairs of `Qᵀ W`, the leading
/// `wanted` of them lifted by Q with their residuals (the others are not needed, and lifting all
/// of a wide basis cost as much as a pass). For a symmetric matrix each Ritz value lies within
/// its residual of an exact eigenvalue.
pub(crate) fn rayleigh_ritz(
    q: MatRef<'_, f64>,
    w: MatRef<'_, f64>,
    wanted: usize,
    solver: &'static str,
) -> Result<Ritz> {
    let l = q.ncols();
    let wanted = wanted.min(l);
    let t = product(q.transpose(), w);
    let sym = Mat::from_fn(l, l, |i, j| 0.5 * (t[(i, j)] + t[(j, i)]));
    let (values, v) = top_eigen(sym.as_ref(), wanted, l, 1.0, solver)?;
    let vectors = product(q, v.as_ref());
    let wv = product(w, v.as_ref());
    let residuals = (0..wanted)
        .map(|j| {
            (0..q.nrows())
                .map(|i| (wv[(i, j)] - values[j] * vectors[(i, j)]).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    Ok(Ritz {
        values,
        vectors,
        residuals,
    })
}

/// One pass and a Rayleigh–Ritz step on span(Q).
pub(crate) struct Step {
    /// `Xsᵀ Xs Q`: the next basis before orthonormalisation.
    pub w: Mat<f64>,
    /// Ritz pairs of span(Q).
    pub ritz: Ritz,
    /// `max ‖S b − θ b‖ / θ₁` over the first k Ritz pairs.
    pub estimate: f64,
}

impl IterativeProblem<'_> {
    /// Applies the scatter matrix to `q` (one pass) and extracts Ritz pairs; the estimate
    /// covers the first `k`.
    pub(crate) fn step(
        &mut self,
        q: MatRef<'_, f64>,
        k: usize,
        solver: &'static str,
    ) -> Result<Step> {
        let w = self.apply(q)?;
        let ritz = rayleigh_ritz(q, w.as_ref(), k, solver)?;
        let estimate = ritz.estimate(k);
        Ok(Step { w, ritz, estimate })
    }

    /// `Xsᵀ Xs Q`: one pass over the data.
    pub(crate) fn apply(&mut self, q: MatRef<'_, f64>) -> Result<Mat<f64>> {
        match &mut self.rows {
            Rows::Dense(source) => apply_scatter(
                *source,
                self.mean,
                self.scale,
                self.centring,
                q,
                self.collective,
            ),
            Rows::Sparse(source) => {
                apply_sparse_scatter(*source, self.mean, self.scale, q, self.collective)
            }
        }
    }

    /// The first `k` Ritz pairs as a spectrum of the covariance (divided by N − ddof).
    pub(crate) fn spectrum(&self, ritz: Ritz, k: usize, report: IterationReport) -> Spectrum {
        let divisor = (self.n_samples - self.ddof) as f64;
        Spectrum {
            eigenvalues: ritz.values.iter().map(|v| v / divisor).collect(),
            vectors: ritz.vectors.subcols(0, k).to_owned(),
            report: Some(report),
            eigen_route: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::SingleProcess;
    use crate::data::InMemory;
    use rand::Rng;

    /// `W = Xcᵀ Xc P` from an explicitly centred copy and one dense product: the reference.
    fn dense(x: &Mat<f64>, mean: &[f64], p: MatRef<'_, f64>) -> Mat<f64> {
        let xc = Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] - mean[j]);
        xc.transpose() * (&xc * p)
    }

    #[test]
    fn every_centring_and_storage_applies_the_same_scatter_matrix() {
        // 9,000 rows of 12: two full blocks of 4,096 rows and a ragged one, in one chunk and
        // in chunks of 1,000.
        let (n, d, l) = (9000, 12, 5);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let x32 = Mat::<f32>::from_fn(n, d, |_, j| {
            (3.0 * j as f64 + rng.random::<f64>() * (1.0 + j as f64)) as f32
        });
        let x = Mat::<f64>::from_fn(n, d, |i, j| f64::from(x32[(i, j)]));
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let p = gaussian(d, l, 3);
        let want = dense(&x, &mean, p.as_ref());
        let size = want.norm_max();
        for chunk in [n, 1000] {
            for centring in [Centring::Explicit, Centring::Implicit] {
                let mut in32 = InMemory::new(x32.as_ref(), chunk);
                let mut in64 = InMemory::new(x.as_ref(), chunk);
                let sources: [&mut dyn ChunkSource; 2] = [&mut in32, &mut in64];
                for source in sources {
                    let got =
                        apply_scatter(source, &mean, None, centring, p.as_ref(), &SingleProcess)
                            .unwrap();
                    let err = (&got - &want).norm_max();
                    assert!(err <= 1e-12 * size, "{chunk} {centring:?}: {err} of {size}");
                }
            }
        }
    }

    /// The implicit products cut into pieces of rows and of columns (wide chunks: several of
    /// each, ragged last pieces) give `Xcᵀ Xc P`, and the same bits on one thread as on
    /// three: no piece's sum depends on the threads.
    #[test]
    fn wide_chunks_apply_the_scatter_matrix_with_the_same_bits_on_any_threads() {
        let (n, d, l) = (300, 1001, 7);
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let x = Mat::<f64>::from_fn(n, d, |_, j| 1e-3 * j as f64 + rng.random::<f64>());
        // Row-major, as the readers give it.
        let data: Vec<f64> = (0..n)
            .flat_map(|i| (0..d).map(move |j| (i, j)))
            .map(|(i, j)| x[(i, j)])
            .collect();
        let rows = MatRef::from_row_major_slice(&data, n, d);
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let p = gaussian(d, l, 4);
        let want = dense(&x, &mean, p.as_ref());
        let size = want.norm_max();
        for chunk in [n, 64] {
            let apply = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let mut source = InMemory::new(rows, chunk);
                    apply_scatter(
                        &mut source,
                        &mean,
                        None,
                        Centring::Implicit,
                        p.as_ref(),
                        &SingleProcess,
                    )
                    .unwrap()
                })
            };
            let one = apply(1);
            let err = (&one - &want).norm_max();
            assert!(err <= 1e-12 * size, "{chunk} rows a chunk: {err} of {size}");
            let three = apply(3);
            assert!(
                one == three,
                "{chunk} rows a chunk: other bits on three threads"
            );
        }
    }
}

#[cfg(test)]
mod timing {
    //! `cargo test --release --workspace --lib -- --ignored --nocapture time_wide_products`:
    //! one pass's products at case 3's shape (2,000 × 20,000 row-major f64, L = 60), faer's own
    //! threads against [`implicit_products`]' pieces, and the basis work of the randomized
    //! solver at that shape; wall time and the CPU time of all threads.
    use super::*;
    use rand::Rng;
    use std::time::Instant;

    /// CPU seconds of every thread of this process (Linux's per-thread schedstat).
    fn process_cpu_seconds() -> f64 {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
            .map(|s| s.split_whitespace().next().unwrap().parse::<f64>().unwrap() * 1e-9)
            .sum()
    }

    fn time(name: &str, reps: usize, mut f: impl FnMut()) {
        f();
        let (c0, w0) = (process_cpu_seconds(), Instant::now());
        for _ in 0..reps {
            f();
        }
        let cpu = (process_cpu_seconds() - c0) / reps as f64;
        let wall = w0.elapsed().as_secs_f64() / reps as f64;
        println!(
            "{name:<52} wall {:7.1} ms  cpu {:7.1} ms",
            wall * 1e3,
            cpu * 1e3
        );
    }

    #[test]
    #[ignore = "timing loop, not a check"]
    fn time_wide_products() {
        // As the binary sets it (GUIDE.md, "Threads that wait").
        spindle::SPIN_LIMIT.store(0, std::sync::atomic::Ordering::Relaxed);
        let (n, d, l) = (2000, 20000, 60);
        let reps = 5;
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let data: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
        let x = MatRef::from_row_major_slice(&data, n, d);
        let ps = gaussian(d, l, 2);
        let shift = vec![0.0; l];
        for round in 0..2 {
            let mut y = Mat::<f64>::zeros(n, l);
            let mut wt = Mat::<f64>::zeros(l, d);
            time(
                &format!("{round}: faer's threads: Y = X P, Wᵀ = Yᵀ X"),
                reps,
                || {
                    let par = faer_par();
                    matmul(y.as_mut(), Accum::Replace, x, ps.as_ref(), 1.0, par);
                    matmul(wt.as_mut(), Accum::Replace, y.transpose(), x, 1.0, par);
                },
            );
            let mut sums = vec![0.0; l];
            time(
                &format!("{round}: implicit_products (pieces)"),
                reps,
                || implicit_products(x, ps.as_ref(), &shift, &mut y, wt.as_mut(), &mut sums),
            );
        }
        let m = 180;
        let g = gaussian(d, l, 5);
        time("orthonormalise 20000×60", reps, || {
            std::hint::black_box(orthonormalise(g.as_ref()));
        });
        let basis = orthonormalise(gaussian(d, m, 6).as_ref());
        let mut rest = g.clone();
        time("remove_along (basis of 180)", reps, || {
            remove_along(basis.as_ref(), rest.as_mut());
        });
        let q = orthonormalise(gaussian(d, 4 * l, 7).as_ref());
        let w = gaussian(d, 4 * l, 8);
        time("rayleigh_ritz (basis of 240, 50 wanted)", reps, || {
            std::hint::black_box(rayleigh_ritz(q.as_ref(), w.as_ref(), 50, "t").unwrap());
        });
    }
}
