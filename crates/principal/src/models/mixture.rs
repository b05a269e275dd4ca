//! A mixture of probabilistic PCAs (Tipping & Bishop 1999, "Mixtures of probabilistic
//! principal component analyzers", Neural Computation 11): C clusters, each a probabilistic PCA
//! with its own mean, k components and noise variance, fitted by EM.
//!
//! ```text
//! p(x) = Σ_i π_i N(x; μ_i, C_i),   C_i = W_i W_iᵀ + σ_i² I,   W_i = U_i (Λ_i − σ_i² I)^½
//! E step:  R_ni = π_i N(x_n; μ_i, C_i) / p(x_n)
//! M step:  π_i = (1/N) Σ_n R_ni,   μ_i = Σ_n R_ni x_n / Σ_n R_ni,
//!          S_i = Σ_n R_ni (x_n − μ_i)(x_n − μ_i)ᵀ / Σ_n R_ni,
//!          U_i, Λ_i the top k eigenpairs of S_i, σ_i² the mean of its D − k other eigenvalues
//! ```
//!
//! The M step maximizes the expected complete-data log-likelihood exactly (the weighted
//! probabilistic PCA of each cluster is solved in closed form by the eigendecomposition of
//! S_i, rather than by Tipping & Bishop's one-step update of W), so the log-likelihood never
//! decreases from one EM step to the next; every step's value is recorded
//! ([`MixturePpca::log_likelihood_history`]) so that this can be checked. Each σ_i² is kept at
//! least [`NOISE_FLOOR`] × the data's mean variance per feature, so that a cluster of fewer
//! than k + 1 points does not make a singular density.
//!
//! Each start is k-means++ (seeded) followed by Lloyd's iterations, whose hard assignments give
//! the first M step: random soft starts fail on well-separated clusters. Several seeded restarts
//! run, and the one of highest final likelihood is kept. The data is centred by its overall
//! mean first (an offset of 1e6 costs no digits). The work per EM step is O(N D (C + k) +
//! Σ_i N_i D²), N_i the rows that count in cluster i's weighted covariance (its lower
//! triangle; a row whose share of the covariance's trace is below rounding is left out, so
//! that on clusters told apart Σ_i N_i is little more than N), plus each cluster's top k
//! eigenpairs (certified Krylov–Schur where it applies, else a D×D eigendecomposition;
//! clusters side by side on the threads): for wide data reduce it with PCA first.

use faer::linalg::matmul::matmul;
use faer::reborrow::ReborrowMut;
use faer::{Accum, Mat, MatRef, Par};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use crate::error::{Parameter, PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::kernel::products::lower_product;
use crate::model::fix_sign;
use crate::models::bayesian_pca::LN_2PI;
use crate::models::{LatentModel, ModelKind, Operation};
use crate::real::Real;
use crate::solver::leading::{Route, SEQUENTIAL_BELOW, leading_eigen_from};

/// The least σ_i², as a fraction of the data's mean variance per feature.
pub const NOISE_FLOOR: f64 = 1e-9;

/// The default number of seeded restarts.
pub const DEFAULT_RESTARTS: usize = 5;

/// The default tolerance: EM stops when a step raises the mean log-likelihood per row by less
/// than this (absolute, in nats per row).
pub const DEFAULT_TOLERANCE: f64 = 1e-9;

/// The default limit on EM steps per restart.
pub const DEFAULT_MAX_ITERATIONS: usize = 1_000;

/// What a mixture fit is asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MixtureOptions {
    /// C ≥ 1, at most N.
    pub clusters: usize,
    /// k per cluster, 1 ≤ k ≤ D − 1.
    pub components: usize,
    /// Seeded restarts (≥ 1); the most likely is kept.
    pub restarts: usize,
    /// The seed of the first restart's k-means++; restart r uses its own stream.
    pub seed: u64,
    /// The least rise of the mean log-likelihood per row for EM to go on.
    pub tolerance: f64,
    /// The most EM steps per restart.
    pub max_iterations: usize,
}

impl MixtureOptions {
    /// `clusters` clusters of `components` components, the default restarts, seed 0,
    /// tolerance and limit.
    pub fn new(clusters: usize, components: usize) -> Self {
        MixtureOptions {
            clusters,
            components,
            restarts: DEFAULT_RESTARTS,
            seed: 0,
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
        }
    }
}

/// One cluster: a probabilistic PCA.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// μ_i, length D.
    pub mean: Vec<f64>,
    /// U_iᵀ, k×D, orthonormal rows, each with its largest entry positive.
    pub components: Mat<f64>,
    /// λ of the cluster's weighted covariance along each component (≥ `noise_variance`).
    pub explained_variance: Vec<f64>,
    /// σ_i².
    pub noise_variance: f64,
}

/// The parts of a fitted mixture, as a model file stores them.
#[derive(Clone, Debug, PartialEq)]
pub struct MixtureParts {
    /// π_i, summing to 1, by decreasing weight.
    pub weights: Vec<f64>,
    /// The clusters, in the order of `weights`.
    pub clusters: Vec<Cluster>,
    /// The mean log-likelihood per training row at the fitted parameters.
    pub log_likelihood: f64,
    /// Training rows.
    pub n_samples: usize,
    /// EM steps of the kept restart.
    pub iterations: usize,
    /// Whether the kept restart reached the tolerance.
    pub converged: bool,
}

/// A fitted mixture of probabilistic PCAs.
///
/// ```
/// use principal::{faer::Mat, MixtureOptions, MixturePpca};
///
/// // Two lines in the plane, far apart.
/// let x = Mat::from_fn(100, 2, |i, j| {
///     let t = (i % 50) as f64 / 10.0;
///     let side = if i < 50 { 0.0 } else { 100.0 };
///     let wobble = ((i * 37) % 11) as f64 / 100.0;
///     if j == 0 { side + t } else { side - t + wobble }
/// });
/// let mixture = MixturePpca::fit(x.as_ref(), &MixtureOptions::new(2, 1))?;
/// let labels = mixture.predict(x.as_ref())?;
/// assert!(labels[..50].iter().all(|&l| l == labels[0]));
/// assert!(labels[50..].iter().all(|&l| l != labels[0]));
/// let history = mixture.log_likelihood_history();
/// assert!(history.windows(2).all(|w| w[1] >= w[0] - 1e-9));
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MixturePpca {
    parts: MixtureParts,
    log_likelihood_history: Vec<f64>,
    restart_log_likelihoods: Vec<f64>,
}

impl Cluster {
    /// `log N(x_n; μ_i, C_i)` of every row of `x` (already checked, f64).
    fn log_density(&self, x: MatRef<'_, f64>, noise_floor: f64) -> Vec<f64> {
        let (n, d) = (x.nrows(), x.ncols());
        let k = self.components.nrows();
        let noise = self.noise_variance.max(noise_floor);
        let variances: Vec<f64> = self
            .explained_variance
            .iter()
            .map(|&l| l.max(noise))
            .collect();
        let log_det: f64 =
            variances.iter().map(|c| c.ln()).sum::<f64>() + (d - k) as f64 * noise.ln();
        // By blocks of rows, in parallel: each block's deviations stay in cache, and no N×D
        // matrix is made for every cluster at every step. A row's value does not depend on
        // the blocks, nor the blocks on the number of threads.
        let mut out = vec![0.0; n];
        out.par_chunks_mut(ROW_BLOCK)
            .enumerate()
            .for_each(|(b, block)| {
                let rows = x.subrows(b * ROW_BLOCK, block.len());
                let mut e = Mat::zeros(block.len(), d);
                for ((out, column), &centre) in
                    e.col_iter_mut().zip(rows.col_iter()).zip(&self.mean)
                {
                    for (o, &v) in out.iter_mut().zip(column.iter()) {
                        *o = v - centre;
                    }
                }
                let mut y = Mat::zeros(block.len(), k);
                matmul(
                    y.as_mut(),
                    Accum::Replace,
                    e.as_ref(),
                    self.components.transpose(),
                    1.0,
                    Par::Seq,
                );
                // The residual r = e − U y itself, not ‖e‖² − ‖y‖²: that difference loses
                // digits by cancellation, which 1/σ² magnifies for a cluster with little noise.
                let mut r = e;
                matmul(
                    r.as_mut(),
                    Accum::Add,
                    y.as_ref(),
                    self.components.as_ref(),
                    -1.0,
                    Par::Seq,
                );
                let mut outside = vec![0.0; block.len()];
                for column in r.col_iter() {
                    for (o, v) in outside.iter_mut().zip(column.iter()) {
                        *o += v * v;
                    }
                }
                for (i, value) in block.iter_mut().enumerate() {
                    let inside: f64 = (0..k).map(|m| y[(i, m)].powi(2) / variances[m]).sum();
                    *value = -0.5 * (d as f64 * LN_2PI + log_det + inside + outside[i] / noise);
                }
            });
        out
    }
}

/// Rows per block of the mixture's passes over the data (256 rows of 784 f64 features: 1.6 MB).
const ROW_BLOCK: usize = 256;

/// Validated options and the data as f64.
fn check<T: Real>(x: MatRef<'_, T>, options: &MixtureOptions) -> Result<Mat<f64>> {
    let (n, d) = (x.nrows(), x.ncols());
    if n == 0 || d == 0 {
        return Err(PcaError::EmptyData {
            n_samples: n,
            n_features: d,
        });
    }
    let out = |parameter, value: usize, allowed: String| PcaError::OutOfRange {
        parameter,
        value: value.to_string(),
        allowed,
    };
    if options.clusters == 0 || options.clusters > n {
        return Err(out(
            Parameter::Clusters,
            options.clusters,
            format!("a mixture needs between 1 and n_samples = {n} clusters"),
        ));
    }
    if options.components == 0 {
        return Err(PcaError::ZeroComponents);
    }
    if options.components >= d {
        return Err(out(
            Parameter::Components,
            options.components,
            format!(
                "each cluster of a mixture has at most n_features − 1 = {} components",
                d - 1
            ),
        ));
    }
    if options.restarts == 0 {
        return Err(out(
            Parameter::Restarts,
            0,
            "at least 1 start is needed".into(),
        ));
    }
    if !(options.tolerance > 0.0 && options.tolerance < 1.0) {
        return Err(PcaError::ToleranceOutOfRange(options.tolerance));
    }
    if options.max_iterations == 0 {
        return Err(PcaError::ZeroIterations);
    }
    to_f64(x)
}

fn to_f64<T: Real>(x: MatRef<'_, T>) -> Result<Mat<f64>> {
    let mut out = Mat::zeros(x.nrows(), x.ncols());
    for i in 0..x.nrows() {
        for j in 0..x.ncols() {
            let v = x[(i, j)].to_f64();
            if !v.is_finite() {
                return Err(PcaError::NonFinite {
                    row: i,
                    column: j,
                    value: v,
                });
            }
            out[(i, j)] = v;
        }
    }
    Ok(out)
}

/// The state of one EM run, on centred data.
struct Run {
    weights: Vec<f64>,
    clusters: Vec<Cluster>,
    history: Vec<f64>,
    converged: bool,
}

impl MixturePpca {
    /// Fits the mixture to `x` (N×D, complete).
    pub fn fit<T: Real>(x: MatRef<'_, T>, options: &MixtureOptions) -> Result<Self> {
        crate::kernel::parallel::fix_faer_split();
        let raw = check(x, options)?;
        let (n, d) = (raw.nrows(), raw.ncols());
        let centre: Vec<f64> = (0..d)
            .map(|j| raw.col(j).iter().sum::<f64>() / n as f64)
            .collect();
        let xc = Mat::from_fn(n, d, |i, j| raw[(i, j)] - centre[j]);
        let mean_variance = (0..d)
            .map(|j| xc.col(j).iter().map(|v| v * v).sum::<f64>())
            .sum::<f64>()
            / (n * d) as f64;
        if mean_variance <= 0.0 {
            return Err(PcaError::ZeroTotalVariance);
        }
        let floor = NOISE_FLOOR * mean_variance;
        let mut best: Option<Run> = None;
        let mut restart_log_likelihoods = Vec::with_capacity(options.restarts);
        let mut degenerate = Vec::new();
        for r in 0..options.restarts {
            let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
            rng.set_stream(r as u64);
            let labels = kmeans(xc.as_ref(), options.clusters, &mut rng);
            let run = em(xc.as_ref(), &labels, options, floor)?;
            let last = *run.history.last().expect("EM records every step");
            // A cluster on k + 1 rows or fewer fits them exactly: its σ² collapses to the
            // floor and its density grows without bound, so that such a restart would win on
            // likelihood alone. It is refused (recorded as −∞).
            if let Some(reason) = degenerate_cluster(&run, n, options.components, floor) {
                restart_log_likelihoods.push(f64::NEG_INFINITY);
                degenerate.push(format!("restart {}: {reason}", r + 1));
                continue;
            }
            restart_log_likelihoods.push(last);
            let better = best
                .as_ref()
                .is_none_or(|b| last > *b.history.last().expect("recorded"));
            if better {
                best = Some(run);
            }
        }
        let Some(run) = best else {
            return Err(PcaError::DegenerateModel(format!(
                "every restart of the mixture ended with a degenerate cluster ({}); try fewer \
                 clusters or components, more restarts or another seed",
                degenerate.join("; ")
            )));
        };
        let log_likelihood = *run.history.last().expect("recorded");
        // By decreasing weight; back in the data's units; signs fixed.
        let mut order: Vec<usize> = (0..options.clusters).collect();
        order.sort_by(|&a, &b| run.weights[b].total_cmp(&run.weights[a]));
        let clusters = order
            .iter()
            .map(|&c| {
                let mut cluster = run.clusters[c].clone();
                for (m, z) in cluster.mean.iter_mut().zip(&centre) {
                    *m += z;
                }
                for r in 0..cluster.components.nrows() {
                    fix_sign(cluster.components.as_mut().row_mut(r));
                }
                cluster
            })
            .collect();
        Ok(MixturePpca {
            parts: MixtureParts {
                weights: order.iter().map(|&c| run.weights[c]).collect(),
                clusters,
                log_likelihood,
                n_samples: n,
                iterations: run.history.len(),
                converged: run.converged,
            },
            log_likelihood_history: run.history,
            restart_log_likelihoods,
        })
    }

    /// The mixture of stored parts, checked.
    pub fn from_parts(parts: MixtureParts) -> Result<Self> {
        let bad = |msg: String| Err(PcaError::InvalidModel(msg));
        let c = parts.clusters.len();
        if c == 0 || parts.weights.len() != c {
            return bad(format!("{} weights for {c} clusters", parts.weights.len()));
        }
        let sum: f64 = parts.weights.iter().sum();
        if parts.weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || (sum - 1.0).abs() > 1e-6 {
            return bad(format!(
                "the weights must be non-negative and sum to 1, not {sum}"
            ));
        }
        let d = parts.clusters[0].mean.len();
        let k = parts.clusters[0].components.nrows();
        for (i, cl) in parts.clusters.iter().enumerate() {
            if cl.mean.len() != d || cl.components.ncols() != d || cl.components.nrows() != k {
                return bad(format!("cluster {i} has other shapes than cluster 0"));
            }
            if k == 0 || k >= d || cl.explained_variance.len() != k {
                return bad(format!("cluster {i}: {k} components for {d} features"));
            }
            if !(cl.noise_variance.is_finite() && cl.noise_variance > 0.0) {
                return bad(format!(
                    "cluster {i}: noise_variance {} is not a positive number",
                    cl.noise_variance
                ));
            }
            let finite = cl.mean.iter().all(|v| v.is_finite())
                && cl
                    .explained_variance
                    .iter()
                    .all(|v| v.is_finite() && *v > 0.0)
                && (0..k).all(|r| cl.components.row(r).iter().all(|v| v.is_finite()));
            if !finite {
                return bad(format!(
                    "cluster {i} has a non-finite or non-positive entry"
                ));
            }
        }
        Ok(MixturePpca {
            parts,
            log_likelihood_history: Vec::new(),
            restart_log_likelihoods: Vec::new(),
        })
    }

    /// The parts, for storing.
    pub fn parts(&self) -> &MixtureParts {
        &self.parts
    }

    /// π_i, by decreasing weight.
    pub fn weights(&self) -> &[f64] {
        &self.parts.weights
    }

    /// The clusters, in the order of `weights`.
    pub fn clusters(&self) -> &[Cluster] {
        &self.parts.clusters
    }

    /// C.
    pub fn n_clusters(&self) -> usize {
        self.parts.clusters.len()
    }

    /// k per cluster.
    pub fn n_components(&self) -> usize {
        self.parts.clusters[0].components.nrows()
    }

    /// D.
    pub fn n_features(&self) -> usize {
        self.parts.clusters[0].mean.len()
    }

    /// The mean log-likelihood per training row at the fitted parameters.
    pub fn log_likelihood(&self) -> f64 {
        self.parts.log_likelihood
    }

    /// The kept restart's mean log-likelihood per row after its first M step and after every
    /// EM step since (the last is `log_likelihood`): every step, not the best so far, so it is
    /// checkable that EM never lowers it. Empty for a mixture read from parts.
    pub fn log_likelihood_history(&self) -> &[f64] {
        &self.log_likelihood_history
    }

    /// Every restart's final mean log-likelihood per row, in order of the restarts; −∞ for a
    /// restart refused because a cluster degenerated (k + 1 rows or fewer, σ² at the floor).
    pub fn restart_log_likelihoods(&self) -> &[f64] {
        &self.restart_log_likelihoods
    }

    /// Training rows.
    pub fn n_samples(&self) -> usize {
        self.parts.n_samples
    }

    /// EM steps of the kept restart.
    pub fn iterations(&self) -> usize {
        self.parts.iterations
    }

    /// Whether the kept restart reached the tolerance.
    pub fn converged(&self) -> bool {
        self.parts.converged
    }

    /// `log π_i + log N(x_n; μ_i, C_i)`, N×C, and `log p(x_n)`.
    fn joint<T: Real>(&self, x: MatRef<'_, T>) -> Result<(Mat<f64>, Vec<f64>)> {
        if x.ncols() != self.n_features() {
            return Err(PcaError::FeatureMismatch {
                expected: self.n_features(),
                found: x.ncols(),
            });
        }
        let x = to_f64(x)?;
        Ok(joint(
            x.as_ref(),
            &self.parts.weights,
            &self.parts.clusters,
            0.0,
        ))
    }

    /// `log p(x_n)` of every row (scikit-learn's `score_samples`).
    pub fn score_samples<T: Real>(&self, x: MatRef<'_, T>) -> Result<Vec<f64>> {
        Ok(self.joint(x)?.1)
    }

    /// The mean of [`MixturePpca::score_samples`].
    pub fn score<T: Real>(&self, x: MatRef<'_, T>) -> Result<f64> {
        let s = self.score_samples(x)?;
        Ok(s.iter().sum::<f64>() / s.len().max(1) as f64)
    }

    /// The responsibilities `R_ni = p(cluster i | x_n)`, N×C, each row summing to 1.
    pub fn predict_proba<T: Real>(&self, x: MatRef<'_, T>) -> Result<Mat<f64>> {
        let (log_joint, total) = self.joint(x)?;
        Ok(Mat::from_fn(
            log_joint.nrows(),
            log_joint.ncols(),
            |i, c| (log_joint[(i, c)] - total[i]).exp(),
        ))
    }

    /// Each row's most responsible cluster (the first on a tie).
    pub fn predict<T: Real>(&self, x: MatRef<'_, T>) -> Result<Vec<usize>> {
        let (log_joint, _) = self.joint(x)?;
        Ok((0..log_joint.nrows())
            .map(|i| {
                (0..log_joint.ncols()).fold(0, |best, c| {
                    if log_joint[(i, c)] > log_joint[(i, best)] {
                        c
                    } else {
                        best
                    }
                })
            })
            .collect())
    }

    /// `count` samples from the mixture, seeded (ChaCha8): per row a uniform draw picks the
    /// cluster by its weight, then its k latent normals and D noise normals give
    /// `x = μ_i + U_i (Λ_i − σ_i²)^½ z + ε`. Also returns each sample's cluster.
    pub fn sample(&self, count: usize, seed: u64) -> (Mat<f64>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (k, d) = (self.n_components(), self.n_features());
        let mut x = Mat::zeros(count, d);
        let mut labels = Vec::with_capacity(count);
        for i in 0..count {
            let u: f64 = rng.random();
            let mut acc = 0.0;
            let mut pick = self.n_clusters() - 1;
            for (c, w) in self.parts.weights.iter().enumerate() {
                acc += w;
                if u < acc {
                    pick = c;
                    break;
                }
            }
            labels.push(pick);
            let cl = &self.parts.clusters[pick];
            let scales: Vec<f64> = cl
                .explained_variance
                .iter()
                .map(|&l| (l - cl.noise_variance).max(0.0).sqrt())
                .collect();
            let z: Vec<f64> = (0..k).map(|_| StandardNormal.sample(&mut rng)).collect();
            let sd = cl.noise_variance.sqrt();
            for j in 0..d {
                let eps: f64 = StandardNormal.sample(&mut rng);
                let signal: f64 = (0..k)
                    .map(|m| cl.components[(m, j)] * scales[m] * z[m])
                    .sum();
                x[(i, j)] = cl.mean[j] + signal + sd * eps;
            }
        }
        (x, labels)
    }
}

/// What the commands ask of a fitted mixture: its transform is the responsibilities (one
/// column per cluster), its score the mixture's log-density, its samples the mixture's.
impl LatentModel for MixturePpca {
    fn kind(&self) -> ModelKind {
        ModelKind::Mixture
    }
    fn n_features(&self) -> usize {
        MixturePpca::n_features(self)
    }
    fn n_components(&self) -> usize {
        self.n_clusters()
    }
    fn component_prefix(&self) -> &'static str {
        "cluster"
    }
    fn supports(&self, operation: Operation) -> bool {
        matches!(
            operation,
            Operation::Transform | Operation::Score | Operation::Sample
        )
    }
    fn transform(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        self.predict_proba(x)
    }
    fn score_samples(&self, x: MatRef<'_, f64>) -> Result<Vec<f64>> {
        MixturePpca::score_samples(self, x)
    }
    fn sample(&self, n: usize, seed: u64) -> Result<Mat<f64>> {
        Ok(MixturePpca::sample(self, n, seed).0)
    }
}

/// `log π_i + log N(x_n | i)` (N×C) and their log-sum-exp per row.
fn joint(
    x: MatRef<'_, f64>,
    weights: &[f64],
    clusters: &[Cluster],
    floor: f64,
) -> (Mat<f64>, Vec<f64>) {
    let n = x.nrows();
    let c = clusters.len();
    let mut log_joint = Mat::zeros(n, c);
    for (i, cl) in clusters.iter().enumerate() {
        let log_weight = weights[i].ln();
        let densities = cl.log_density(x, floor);
        for (r, v) in densities.into_iter().enumerate() {
            log_joint[(r, i)] = log_weight + v;
        }
    }
    // After faer's products: `exp` and `ln` would crawl (principal_amx).
    principal_amx::clear_upper_state();
    let total = (0..n)
        .map(|r| {
            let top = (0..c)
                .map(|i| log_joint[(r, i)])
                .fold(f64::NEG_INFINITY, f64::max);
            if top == f64::NEG_INFINITY {
                return top;
            }
            top + (0..c)
                .map(|i| (log_joint[(r, i)] - top).exp())
                .sum::<f64>()
                .ln()
        })
        .collect();
    (log_joint, total)
}

/// k-means++ seeding then Lloyd's iterations (at most 100): each row's cluster.
fn kmeans(x: MatRef<'_, f64>, clusters: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
    let (n, d) = (x.nrows(), x.ncols());
    let dist2 =
        |i: usize, centre: &[f64]| -> f64 { (0..d).map(|j| (x[(i, j)] - centre[j]).powi(2)).sum() };
    let mut centres: Vec<Vec<f64>> = Vec::with_capacity(clusters);
    let first = rng.random_range(0..n);
    centres.push(x.row(first).iter().copied().collect());
    let mut nearest: Vec<f64> = (0..n).map(|i| dist2(i, &centres[0])).collect();
    while centres.len() < clusters {
        let total: f64 = nearest.iter().sum();
        let pick = if total > 0.0 {
            let target = rng.random::<f64>() * total;
            let mut acc = 0.0;
            let mut pick = n - 1;
            for (i, v) in nearest.iter().enumerate() {
                acc += v;
                if acc > target {
                    pick = i;
                    break;
                }
            }
            pick
        } else {
            rng.random_range(0..n)
        };
        let centre: Vec<f64> = x.row(pick).iter().copied().collect();
        for (i, v) in nearest.iter_mut().enumerate() {
            *v = v.min(dist2(i, &centre));
        }
        centres.push(centre);
    }
    let mut labels = vec![0usize; n];
    for round in 0..100 {
        let mut moved = false;
        for (i, label) in labels.iter_mut().enumerate() {
            let best = (0..clusters)
                .map(|c| (c, dist2(i, &centres[c])))
                .fold((0, f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a })
                .0;
            if best != *label || round == 0 {
                moved |= best != *label;
                *label = best;
            }
        }
        if !moved && round > 0 {
            break;
        }
        let mut sums = vec![vec![0.0; d]; clusters];
        let mut counts = vec![0usize; clusters];
        for (i, &l) in labels.iter().enumerate() {
            counts[l] += 1;
            for j in 0..d {
                sums[l][j] += x[(i, j)];
            }
        }
        for c in 0..clusters {
            // An empty cluster keeps its centre.
            if counts[c] > 0 {
                centres[c] = sums[c].iter().map(|s| s / counts[c] as f64).collect();
            }
        }
    }
    labels
}

/// The M step from responsibilities `r` (N×C): weights and clusters. A cluster with no
/// responsibility keeps `previous` (weight 0).
fn m_step(
    x: MatRef<'_, f64>,
    r: MatRef<'_, f64>,
    k: usize,
    floor: f64,
    previous: Option<&[Cluster]>,
    routes: &mut [Route],
) -> Result<(Vec<f64>, Vec<Cluster>)> {
    let (n, d) = (x.nrows(), x.ncols());
    let c = r.ncols();
    let masses: Vec<f64> = (0..c).map(|i| r.col(i).iter().sum()).collect();
    let weights = masses.iter().map(|m| m / n as f64).collect();
    // Clusters go in groups whose eigenproblems are solved side by side: below
    // SEQUENTIAL_BELOW features each one runs on a single thread, memory-bound, so a group of
    // as many as there are threads (at most 8 matrices of at most 8 MB) keeps every core busy
    // (5,000 MNIST digits, 3 clusters on 2 threads: 12.8 s against 16.6 s one at a time).
    // Each cluster's answer is the same whatever its group, so the bits do not depend on the
    // number of threads.
    let group = if d < SEQUENTIAL_BELOW {
        rayon::current_num_threads().clamp(1, 8)
    } else {
        1
    };
    let mut clusters = Vec::with_capacity(c);
    for first in (0..c).step_by(group) {
        let members = first..(first + group).min(c);
        let scatters: Vec<_> = members
            .clone()
            .map(|i| (masses[i] > 0.0).then(|| weighted_scatter(x, r.col(i), masses[i])))
            .collect();
        let solved: Vec<_> = scatters
            .par_iter()
            .zip(&routes[members.clone()])
            .map(|(scatter, route)| {
                scatter.as_ref().map(|(_, s)| {
                    // Only the top k pairs: certified Krylov–Schur where it applies, started
                    // from the last step's vectors (summed); after a decline (a flat spectrum
                    // at the cut) this cluster's later steps take the dense route at once, as
                    // factor analysis does.
                    leading_eigen_from(s.as_ref(), k, 1.0, "mixture", route.clone())
                })
            })
            .collect();
        for ((i, scatter), answer) in members.zip(scatters).zip(solved) {
            let (Some((mean, s)), Some(answer)) = (scatter, answer) else {
                // No responsibility: the cluster is kept as it was (weight 0).
                clusters.push(previous.map(|p| p[i].clone()).unwrap_or_else(|| Cluster {
                    mean: vec![0.0; d],
                    components: Mat::from_fn(k, d, |a, b| if a == b { 1.0 } else { 0.0 }),
                    explained_variance: vec![floor; k],
                    noise_variance: floor,
                }));
                continue;
            };
            let (values, vectors, taken) = answer?;
            routes[i] = Route::next(&taken, vectors.as_ref());
            let trace: f64 = (0..d).map(|j| s[(j, j)]).sum();
            let kept: f64 = values.iter().sum();
            let noise = ((trace - kept) / (d - k) as f64).max(floor);
            let components = Mat::from_fn(k, d, |m, j| vectors[(j, m)]);
            clusters.push(Cluster {
                mean,
                components,
                explained_variance: values[..k].iter().map(|&l| l.max(noise)).collect(),
                noise_variance: noise,
            });
        }
    }
    Ok((weights, clusters))
}

/// A cluster's mean μ = Xᵀ r / mass (over every row) and its weighted covariance's lower
/// triangle, Gᵀ G ([`weighted_deviations`]).
fn weighted_scatter(
    x: MatRef<'_, f64>,
    r: faer::ColRef<'_, f64>,
    mass: f64,
) -> (Vec<f64>, Mat<f64>) {
    let d = x.ncols();
    let mut mean = Mat::<f64>::zeros(d, 1);
    matmul(
        mean.as_mut(),
        Accum::Replace,
        x.transpose(),
        r.as_mat(),
        1.0 / mass,
        faer_par(),
    );
    let mean: Vec<f64> = mean.col(0).iter().copied().collect();
    let g = weighted_deviations(x, r, mass, &mean);
    let mut s = Mat::zeros(d, d);
    lower_product(s.as_mut(), Accum::Replace, g.transpose(), faer_par());
    (mean, s)
}

/// G, whose rows are √(r_t/mass) (x_t − μ) for the rows that count, so that Gᵀ G is the
/// cluster's weighted covariance. A row counts unless its share of the covariance's trace,
/// (r_t/mass) ‖x_t − μ‖², is at most ε/N of the trace T: the rows left out then add up to at
/// most ε T, below the rounding of the product itself (each entry's error is of order N ε
/// times its terms' magnitudes). On data whose clusters are told apart, most rows have
/// responsibilities far below that for all clusters but one (5,000 MNIST digits, 3 clusters:
/// 64% of the pairs of row and cluster were under 1e-16 at the end), so each cluster's product
/// runs over little more than its own rows.
fn weighted_deviations(
    x: MatRef<'_, f64>,
    r: faer::ColRef<'_, f64>,
    mass: f64,
    mean: &[f64],
) -> Mat<f64> {
    let n = x.nrows();
    let column = |j: usize| {
        x.col(j)
            .try_as_col_major()
            .expect("the mixture's data is an owned matrix, column-major")
            .as_slice()
    };
    // ‖x_t − μ‖², by blocks of rows in parallel, each by columns (contiguous).
    let mut squares = vec![0.0; n];
    squares
        .par_chunks_mut(ROW_BLOCK)
        .enumerate()
        .for_each(|(b, block)| {
            let start = b * ROW_BLOCK;
            for (j, &centre) in mean.iter().enumerate() {
                let values = &column(j)[start..start + block.len()];
                for (square, &v) in block.iter_mut().zip(values) {
                    let e = v - centre;
                    *square += e * e;
                }
            }
        });
    let shares: Vec<f64> = r
        .iter()
        .zip(&squares)
        .map(|(&weight, &square)| weight / mass * square)
        .collect();
    let trace: f64 = shares.iter().sum();
    let least = f64::EPSILON * trace / n as f64;
    let rows: Vec<usize> = (0..n).filter(|&t| shares[t] > least).collect();
    let scale: Vec<f64> = rows.iter().map(|&t| (r[t] / mass).sqrt()).collect();
    let mut g = Mat::zeros(rows.len(), x.ncols());
    g.par_col_chunks_mut(1)
        .enumerate()
        .for_each(|(j, mut out)| {
            let (values, centre) = (column(j), mean[j]);
            let out = out
                .rb_mut()
                .col_mut(0)
                .try_as_col_major_mut()
                .expect("a column of an owned matrix")
                .as_slice_mut();
            for ((o, &t), &s) in out.iter_mut().zip(&rows).zip(&scale) {
                *o = s * (values[t] - centre);
            }
        });
    g
}

/// Why `run` is degenerate, if it is: a cluster whose responsibilities add up to at most
/// k + 1 rows (k + 1 points lie in a k-dimensional affine subspace: nothing is left for σ²),
/// or whose σ² is at the floor.
fn degenerate_cluster(run: &Run, n: usize, k: usize, floor: f64) -> Option<String> {
    run.clusters
        .iter()
        .zip(&run.weights)
        .find_map(|(cluster, weight)| {
            let rows = weight * n as f64;
            if rows <= (k + 1) as f64 * (1.0 + 1e-6) {
                Some(format!(
                    "a cluster of {rows:.3} rows, at most k + 1 = {}",
                    k + 1
                ))
            } else if cluster.noise_variance <= 2.0 * floor {
                Some(format!(
                    "a cluster of noise variance {:e}, at the floor",
                    cluster.noise_variance
                ))
            } else {
                None
            }
        })
}

/// EM from the hard assignment `labels`, on centred `x`.
fn em(x: MatRef<'_, f64>, labels: &[usize], options: &MixtureOptions, floor: f64) -> Result<Run> {
    let n = x.nrows();
    let c = options.clusters;
    let hard = Mat::from_fn(n, c, |t, i| if labels[t] == i { 1.0 } else { 0.0 });
    let mut routes = vec![Route::Try(None); c];
    let (mut weights, mut clusters) = m_step(
        x,
        hard.as_ref(),
        options.components,
        floor,
        None,
        &mut routes,
    )?;
    let mut history = Vec::new();
    let mut converged = false;
    for _ in 0..options.max_iterations {
        let (log_joint, total) = joint(x, &weights, &clusters, floor);
        let mean = total.iter().sum::<f64>() / n as f64;
        let previous = history.last().copied();
        history.push(mean);
        if previous.is_some_and(|p: f64| mean - p < options.tolerance) {
            converged = true;
            break;
        }
        let r = Mat::from_fn(n, c, |t, i| (log_joint[(t, i)] - total[t]).exp());
        (weights, clusters) = m_step(
            x,
            r.as_ref(),
            options.components,
            floor,
            Some(&clusters),
            &mut routes,
        )?;
    }
    if !converged {
        // The history's last entry is at the parameters before the last M step: record the
        // likelihood of the parameters returned.
        let (_, total) = joint(x, &weights, &clusters, floor);
        history.push(total.iter().sum::<f64>() / n as f64);
    }
    Ok(Run {
        weights,
        clusters,
        history,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Side;
    use faer::linalg::solvers::Solve;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        StandardNormal.sample(rng)
    }
    use proptest::prelude::*;

    /// Well-separated clusters: cluster c has its own mean (far apart), a random
    /// `k`-dimensional subspace (strong variance) and isotropic noise. The data, the true
    /// labels, and each cluster's true subspace (D×k, orthonormal).
    fn planted(
        sizes: &[usize],
        d: usize,
        k: usize,
        separation: f64,
        seed: u64,
    ) -> (Mat<f64>, Vec<usize>, Vec<Mat<f64>>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n: usize = sizes.iter().sum();
        let mut x = Mat::zeros(n, d);
        let mut labels = Vec::with_capacity(n);
        let mut bases = Vec::new();
        let mut row = 0;
        for (c, &size) in sizes.iter().enumerate() {
            let mean: Vec<f64> = (0..d).map(|_| separation * normal(&mut rng)).collect();
            let raw = Mat::from_fn(d, k, |_, _| normal(&mut rng));
            let basis = raw.qr().compute_thin_Q();
            for _ in 0..size {
                let z: Vec<f64> = (0..k)
                    .map(|m| (4.0 - m as f64) * normal(&mut rng))
                    .collect();
                for j in 0..d {
                    let signal: f64 = (0..k).map(|m| basis[(j, m)] * z[m]).sum();
                    let eps: f64 = StandardNormal.sample(&mut rng);
                    x[(row, j)] = mean[j] + signal + 0.2 * eps;
                }
                labels.push(c);
                row += 1;
            }
            bases.push(basis);
        }
        (x, labels, bases)
    }

    /// The M step's certified route (300 features: it applies) gives the dense route's
    /// clusters, and is remembered per cluster: taken again (from the last vectors) where it
    /// was certified, not tried again where it declined.
    #[test]
    fn the_m_step_takes_the_certified_route_with_the_dense_answer() {
        let (d, k) = (300, 3);
        let (x, labels, _) = planted(&[400, 300], d, k, 5.0, 11);
        let hard = Mat::from_fn(x.nrows(), 2, |t, i| if labels[t] == i { 1.0 } else { 0.0 });
        let mut dense = vec![Route::Dense; 2];
        let (_, want) = m_step(x.as_ref(), hard.as_ref(), k, 1e-12, None, &mut dense).unwrap();
        assert_eq!(dense, vec![Route::Dense; 2]);
        let mut routes = vec![Route::Try(None); 2];
        let (_, found) = m_step(x.as_ref(), hard.as_ref(), k, 1e-12, None, &mut routes).unwrap();
        assert!(
            routes.iter().all(|r| matches!(r, Route::Try(Some(_)))),
            "{routes:?}"
        );
        for (f, w) in found.iter().zip(&want) {
            let scale = w.explained_variance[0];
            for m in 0..k {
                let gap = (f.explained_variance[m] - w.explained_variance[m]).abs();
                assert!(gap <= 1e-12 * scale, "value {m}: {gap:e}");
                let cos: f64 = (0..d)
                    .map(|j| f.components[(m, j)] * w.components[(m, j)])
                    .sum();
                assert!((cos.abs() - 1.0).abs() < 1e-10, "vector {m}: |cos| {cos}");
            }
            assert!((f.noise_variance - w.noise_variance).abs() <= 1e-12 * scale);
        }
        // Data of rank 3 (the first three features repeated), twelve components: zero from
        // the fourth eigenvalue on, flat at the cut, so the route declines, and the clusters'
        // later steps go straight to the dense one.
        let flat = Mat::from_fn(x.nrows(), d, |t, j| x[(t, j % 3)]);
        let mut routes = vec![Route::Try(None); 2];
        m_step(flat.as_ref(), hard.as_ref(), 12, 1e-12, None, &mut routes).unwrap();
        assert_eq!(routes, vec![Route::Dense; 2]);
    }

    /// Hubert & Arabie's adjusted Rand index of two labellings.
    fn adjusted_rand(a: &[usize], b: &[usize]) -> f64 {
        let ka = a.iter().max().unwrap() + 1;
        let kb = b.iter().max().unwrap() + 1;
        let mut table = vec![vec![0f64; kb]; ka];
        for (&i, &j) in a.iter().zip(b) {
            table[i][j] += 1.0;
        }
        let pairs = |v: f64| v * (v - 1.0) / 2.0;
        let index: f64 = table.iter().flatten().map(|&v| pairs(v)).sum();
        let rows: f64 = table.iter().map(|r| pairs(r.iter().sum())).sum();
        let cols: f64 = (0..kb)
            .map(|j| pairs(table.iter().map(|r| r[j]).sum()))
            .sum();
        let expected = rows * cols / pairs(a.len() as f64);
        (index - expected) / (0.5 * (rows + cols) - expected)
    }

    /// The largest principal angle between span(a) and span(b) (D×k, orthonormal columns).
    fn largest_angle(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
        let cross = a.transpose() * b;
        let s = cross.singular_values().unwrap();
        let smallest = s.iter().copied().fold(f64::INFINITY, f64::min);
        smallest.min(1.0).acos()
    }

    #[test]
    fn planted_clusters_and_their_subspaces_are_recovered() {
        let (x, truth, bases) = planted(&[150, 100, 80], 6, 2, 8.0, 3);
        let mixture = MixturePpca::fit(x.as_ref(), &MixtureOptions::new(3, 2)).unwrap();
        let labels = mixture.predict(x.as_ref()).unwrap();
        let ari = adjusted_rand(&truth, &labels);
        assert!(ari > 0.99, "adjusted Rand index {ari}");
        // Clusters are sorted by weight, as the planted sizes are.
        for (c, size) in [150.0, 100.0, 80.0].iter().enumerate() {
            assert!((mixture.weights()[c] - size / 330.0).abs() < 0.01);
            let fitted = mixture.clusters()[c].components.transpose().to_owned();
            let angle = largest_angle(fitted.as_ref(), bases[c].as_ref());
            assert!(angle < 0.05, "cluster {c}: largest principal angle {angle}");
            let noise = mixture.clusters()[c].noise_variance;
            assert!((noise - 0.04).abs() < 0.01, "cluster {c}: σ² {noise}");
        }
        assert!(mixture.converged());
    }

    /// Iris's four measurements.
    fn iris() -> Mat<f64> {
        let rows: Vec<Vec<f64>> = include_str!("../../../../data/iris.csv")
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(4).map(|v| v.parse().unwrap()).collect())
            .collect();
        Mat::from_fn(rows.len(), 4, |i, j| rows[i][j])
    }

    #[test]
    fn a_restart_with_a_cluster_on_k_plus_one_rows_does_not_win() {
        // Seed 2's first restart ends with a cluster on 2 rows (σ² at the floor) and the
        // highest likelihood of the three.
        let x = iris();
        let mut options = MixtureOptions::new(3, 1);
        options.seed = 2;
        options.restarts = 3;
        let mixture = MixturePpca::fit(x.as_ref(), &options).unwrap();
        let floor = 2.0 * NOISE_FLOOR;
        for (cluster, weight) in mixture.clusters().iter().zip(mixture.weights()) {
            assert!(
                weight * 150.0 > 2.0 + 1e-3,
                "a cluster of {} rows",
                weight * 150.0
            );
            assert!(
                cluster.noise_variance > floor,
                "σ² {}",
                cluster.noise_variance
            );
        }
        assert_eq!(mixture.restart_log_likelihoods()[0], f64::NEG_INFINITY);
        // Every restart degenerate: an error that says so.
        options.restarts = 1;
        let err = MixturePpca::fit(x.as_ref(), &options).unwrap_err();
        assert!(err.to_string().contains("degenerate cluster"), "{err}");
    }

    /// The rows whose share of the trace is below rounding are left out of a cluster's
    /// covariance, and the rest gives every row's covariance to within ε of the trace: rows of
    /// responsibilities from 1 down to 1e-30, against the plain sum over every row.
    #[test]
    fn rows_left_out_of_the_scatter_change_it_by_less_than_rounding() {
        let (x, _, _) = planted(&[150, 150], 40, 3, 3.0, 5);
        let n = x.nrows();
        // Half the rows fully in the cluster, the others at 10^-(t mod 31): 1 down to 1e-30.
        let r = Mat::from_fn(n, 1, |t, _| {
            if t < n / 2 {
                1.0
            } else {
                10f64.powi(-((t % 31) as i32))
            }
        });
        let mass: f64 = r.col(0).iter().sum();
        let (mean, s) = weighted_scatter(x.as_ref(), r.col(0), mass);
        let d = x.ncols();
        let mut want = Mat::<f64>::zeros(d, d);
        for t in 0..n {
            let w = r[(t, 0)] / mass;
            for j in 0..d {
                for i in j..d {
                    want[(i, j)] += w * (x[(t, i)] - mean[i]) * (x[(t, j)] - mean[j]);
                }
            }
        }
        let trace: f64 = (0..d).map(|j| want[(j, j)]).sum();
        let g = weighted_deviations(x.as_ref(), r.col(0), mass, &mean);
        assert!(g.nrows() < n, "no row was left out");
        assert!(g.nrows() > n / 2, "{} rows kept", g.nrows());
        let mut worst = 0f64;
        for j in 0..d {
            for i in j..d {
                worst = worst.max((s[(i, j)] - want[(i, j)]).abs());
            }
        }
        // The plain sums' own rounding is a few ε of the trace; the rows left out add ≤ ε.
        assert!(
            worst <= 8.0 * f64::EPSILON * trace,
            "{worst:e} of a trace {trace:e}"
        );
        // The cut is at ε/N of the trace: rows at twice that are all in, rows at half of it
        // all out.
        let shares: Vec<f64> = (0..n)
            .map(|t| {
                let square: f64 = (0..d).map(|j| (x[(t, j)] - mean[j]).powi(2)).sum();
                r[(t, 0)] / mass * square / (f64::EPSILON * trace / n as f64)
            })
            .collect();
        let above = shares.iter().filter(|&&v| v > 2.0).count();
        let below = shares.iter().filter(|&&v| v < 0.5).count();
        assert!(
            above <= g.nrows() && g.nrows() <= n - below,
            "{above} {} {below}",
            g.nrows()
        );
    }

    #[test]
    fn the_log_likelihood_never_decreases_over_em_steps() {
        // Overlapping clusters, so that EM takes many steps.
        let (x, _, _) = planted(&[100, 100, 100], 5, 1, 1.0, 4);
        let mut options = MixtureOptions::new(3, 1);
        options.restarts = 3;
        let mixture = MixturePpca::fit(x.as_ref(), &options).unwrap();
        let history = mixture.log_likelihood_history();
        assert!(history.len() > 10, "{} steps", history.len());
        for (step, pair) in history.windows(2).enumerate() {
            assert!(
                pair[1] >= pair[0] - 1e-10 * pair[0].abs(),
                "step {step}: {} then {}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(*history.last().unwrap(), mixture.log_likelihood());
        let best = mixture
            .restart_log_likelihoods()
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(best, mixture.log_likelihood());
        let score = mixture.score(x.as_ref()).unwrap();
        assert!((score - mixture.log_likelihood()).abs() < 1e-9 * score.abs());
    }

    #[test]
    fn responsibilities_sum_to_one_and_scores_are_their_normaliser() {
        let (x, _, _) = planted(&[60, 40], 4, 1, 2.0, 5);
        let mixture = MixturePpca::fit(x.as_ref(), &MixtureOptions::new(2, 1)).unwrap();
        let r = mixture.predict_proba(x.as_ref()).unwrap();
        let scores = mixture.score_samples(x.as_ref()).unwrap();
        let labels = mixture.predict(x.as_ref()).unwrap();
        for i in 0..100 {
            let sum: f64 = r.row(i).iter().sum();
            assert!((sum - 1.0).abs() < 1e-12);
            assert!(r[(i, labels[i])] >= r[(i, 1 - labels[i])]);
            // p(x) = Σ_i π_i N(x | i), each density from the dense covariance.
            let mut p = 0.0;
            for (c, cl) in mixture.clusters().iter().enumerate() {
                let b = cl.components.transpose().to_owned();
                let shift: Vec<f64> = cl
                    .explained_variance
                    .iter()
                    .map(|l| l - cl.noise_variance)
                    .collect();
                let cov = Mat::from_fn(4, 4, |a, e| {
                    let low: f64 = (0..1).map(|m| b[(a, m)] * shift[m] * b[(e, m)]).sum();
                    low + if a == e { cl.noise_variance } else { 0.0 }
                });
                let llt = cov.llt(Side::Lower).unwrap();
                let log_det: f64 = (0..4).map(|q| 2.0 * llt.L()[(q, q)].ln()).sum();
                let e = Mat::from_fn(4, 1, |j, _| x[(i, j)] - cl.mean[j]);
                let solved = llt.solve(&e);
                let quad: f64 = (0..4).map(|j| e[(j, 0)] * solved[(j, 0)]).sum();
                p += mixture.weights()[c] * (-0.5 * (4.0 * LN_2PI + log_det + quad)).exp();
            }
            assert!((scores[i] - p.ln()).abs() < 1e-9, "row {i}");
        }
    }

    #[test]
    fn samples_follow_the_weights_and_the_same_seed_gives_the_same_model() {
        let (x, _, _) = planted(&[120, 60], 4, 1, 6.0, 6);
        let options = MixtureOptions::new(2, 1);
        let mixture = MixturePpca::fit(x.as_ref(), &options).unwrap();
        let again = MixturePpca::fit(x.as_ref(), &options).unwrap();
        assert_eq!(mixture.parts(), again.parts());
        let (s, from) = mixture.sample(6000, 2);
        assert_eq!(s, mixture.sample(6000, 2).0);
        let share = from.iter().filter(|&&c| c == 0).count() as f64 / 6000.0;
        assert!((share - mixture.weights()[0]).abs() < 0.02, "{share}");
        // The samples are classified back to the cluster that drew them.
        let labels = mixture.predict(s.as_ref()).unwrap();
        let agree = labels.iter().zip(&from).filter(|(a, b)| a == b).count();
        assert!(agree as f64 > 0.99 * 6000.0);
    }

    #[test]
    fn zero_clusters_and_zero_restarts_are_errors_naming_them() {
        let (x, _, _) = planted(&[10], 3, 1, 1.0, 7);
        let err = MixturePpca::fit(x.as_ref(), &MixtureOptions::new(0, 1)).unwrap_err();
        assert_eq!(err.parameter(), Some(Parameter::Clusters));
        assert_eq!(
            err.to_string(),
            "clusters 0 is not allowed: a mixture needs between 1 and n_samples = 10 clusters"
        );
        let mut options = MixtureOptions::new(2, 1);
        options.restarts = 0;
        let err = MixturePpca::fit(x.as_ref(), &options).unwrap_err();
        assert_eq!(err.parameter(), Some(Parameter::Restarts));
        let err = MixturePpca::fit(x.as_ref(), &MixtureOptions::new(2, 3)).unwrap_err();
        assert_eq!(err.parameter(), Some(Parameter::Components));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Over random shapes (tall, nearly square, one cluster, many; offsets up to 1e6), EM
        /// never lowers the likelihood, and one cluster is probabilistic PCA (σ² the mean of
        /// the discarded eigenvalues of the covariance with divisor N).
        #[test]
        fn em_never_lowers_the_likelihood_on_random_shapes(
            n in 3usize..60,
            d in 2usize..7,
            clusters in 1usize..4,
            offset in prop::sample::select(vec![0.0, 1e6]),
            seed in 0u64..1000,
        ) {
            let clusters = clusters.min(n);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let x = Mat::from_fn(n, d, |_, j| offset + (j + 1) as f64 * normal(&mut rng));
            let mut options = MixtureOptions::new(clusters, 1);
            options.seed = seed;
            options.restarts = 2;
            let mixture = match MixturePpca::fit(x.as_ref(), &options) {
                Ok(mixture) => mixture,
                // A few rows in several clusters can leave every restart with a cluster on
                // k + 1 rows, refused; one cluster of n ≥ 3 rows cannot.
                Err(PcaError::DegenerateModel(_)) if clusters > 1 => return Ok(()),
                Err(e) => panic!("{e}"),
            };
            let history = mixture.log_likelihood_history();
            for pair in history.windows(2) {
                prop_assert!(pair[1] >= pair[0] - 1e-9 * pair[0].abs().max(1.0), "{:?}", history);
            }
            if clusters == 1 {
                let mean: Vec<f64> = (0..d).map(|j| x.col(j).iter().sum::<f64>() / n as f64).collect();
                let xc = Mat::from_fn(n, d, |i, j| x[(i, j)] - mean[j]);
                let s = xc.transpose() * &xc * (1.0 / n as f64);
                let eig = s.self_adjoint_eigen(Side::Lower).unwrap();
                let discarded: f64 = (0..d - 1).map(|m| eig.S()[m]).sum::<f64>() / (d - 1) as f64;
                let floor = NOISE_FLOOR * (0..d).map(|j| s[(j, j)]).sum::<f64>() / d as f64;
                let cl = &mixture.clusters()[0];
                prop_assert!((cl.noise_variance - discarded.max(floor)).abs() <= 1e-8 * (discarded.abs() + floor));
            }
        }
    }
}
