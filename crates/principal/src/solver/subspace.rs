//! What the iterative solvers share: applying the scatter matrix `Xsᵀ Xs` to a block of vectors
//! in one pass over a [`ChunkSource`], and the Rayleigh–Ritz step with its residuals.
//!
//! Centring is done chunk by chunk in f64 (never `X − 1μᵀ` for the whole X, and never
//! `XᵀX − N μμᵀ`, which would lose everything under an offset of 1e6).

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::prepare::center_scale;
use crate::{ChunkRef, ChunkSource, PcaError, Result};

/// Rows centred at once: bounds the f64 copy to about 16 MiB whatever D is.
fn block_rows(n_features: usize) -> usize {
    ((1 << 21) / n_features.max(1)).clamp(64, 8192)
}

/// `W = Xsᵀ (Xs P)` for the centred, scaled data Xs and a D×L block P: one pass.
pub(crate) fn apply_scatter(
    source: &mut dyn ChunkSource,
    mean: &[f64],
    scale: Option<&[f64]>,
    p: MatRef<'_, f64>,
) -> Result<Mat<f64>> {
    let (d, l) = (p.nrows(), p.ncols());
    let mut w = Mat::<f64>::zeros(d, l);
    let step = block_rows(d);
    source.pass(&mut |chunk| {
        if chunk.ncols() != d {
            return Err(PcaError::FeatureMismatch {
                expected: d,
                found: chunk.ncols(),
            });
        }
        let mut start = 0;
        while start < chunk.nrows() {
            let rows = step.min(chunk.nrows() - start);
            let xs = match chunk {
                ChunkRef::F32(m) => center_scale(m.subrows(start, rows), mean, scale),
                ChunkRef::F64(m) => center_scale(m.subrows(start, rows), mean, scale),
            };
            let mut y = Mat::<f64>::zeros(rows, l);
            matmul(
                y.as_mut(),
                Accum::Replace,
                xs.as_ref(),
                p,
                1.0,
                Par::rayon(0),
            );
            matmul(
                w.as_mut(),
                Accum::Add,
                xs.transpose(),
                y.as_ref(),
                1.0,
                Par::rayon(0),
            );
            start += rows;
        }
        Ok(())
    })?;
    Ok(w)
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
pub(crate) fn orthonormalize(w: MatRef<'_, f64>) -> Mat<f64> {
    w.qr().compute_thin_Q()
}

/// The result of a Rayleigh–Ritz step on span(Q).
pub(crate) struct Ritz {
    /// Ritz values of the scatter matrix, largest first.
    pub values: Vec<f64>,
    /// D×L Ritz vectors, matching `values`.
    pub vectors: Mat<f64>,
    /// ‖Xsᵀ Xs b_i − θ_i b_i‖ for every Ritz pair.
    pub residuals: Vec<f64>,
}

/// Rayleigh–Ritz with `W = Xsᵀ Xs Q` already computed: eigenpairs of `Qᵀ W`, lifted by Q.
/// For a symmetric matrix each Ritz value lies within its residual of an exact eigenvalue.
pub(crate) fn rayleigh_ritz(
    q: MatRef<'_, f64>,
    w: MatRef<'_, f64>,
    solver: &'static str,
) -> Result<Ritz> {
    let l = q.ncols();
    let t = q.transpose() * w;
    let sym = Mat::from_fn(l, l, |i, j| 0.5 * (t[(i, j)] + t[(j, i)]));
    let (values, v) = super::top_eigen(sym.as_ref(), l, l, 1.0, solver)?;
    let vectors = q * &v;
    let wv = w * &v;
    let residuals = (0..l)
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
