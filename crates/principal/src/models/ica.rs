//! FastICA (Hyvärinen's parallel algorithm, as scikit-learn's `FastICA` with
//! `whiten='unit-variance'`, `algorithm='parallel'`): the data is whitened by PCA — the model's
//! whitened codes, ddof 0, so that each has unit variance on the training data — and an
//! orthogonal unmixing W of the codes is found by fixed-point steps on a contrast function,
//! each followed by symmetric decorrelation `W ← (W Wᵀ)^-½ W`. The sources are then scaled to
//! unit variance.

use std::fmt;
use std::str::FromStr;

use faer::{Mat, MatRef};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{PcaError, Result};
use crate::models::{LatentModel, ModelKind, Operation, centred, check_finite, check_rows};
use crate::options::{ComponentCount, Whitening};
use crate::params::PcaBuilder;

/// The contrast function's derivative g (scikit-learn's `fun`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Contrast {
    /// `g(u) = tanh u`: a good general-purpose choice.
    #[default]
    Logcosh,
    /// `g(u) = u exp(−u²/2)`: robust, for super-Gaussian sources.
    Exp,
    /// `g(u) = u³`: kurtosis, for sub-Gaussian sources without outliers.
    Cube,
}

impl Contrast {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["logcosh", "exp", "cube"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Contrast::Logcosh => "logcosh",
            Contrast::Exp => "exp",
            Contrast::Cube => "cube",
        }
    }

    /// g(u) and g'(u).
    fn apply(self, u: f64) -> (f64, f64) {
        match self {
            Contrast::Logcosh => {
                let t = u.tanh();
                (t, 1.0 - t * t)
            }
            Contrast::Exp => {
                let e = (-u * u / 2.0).exp();
                (u * e, (1.0 - u * u) * e)
            }
            Contrast::Cube => (u * u * u, 3.0 * u * u),
        }
    }
}

impl fmt::Display for Contrast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Contrast {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "logcosh" => Ok(Contrast::Logcosh),
            "exp" => Ok(Contrast::Exp),
            "cube" => Ok(Contrast::Cube),
            other => Err(format!(
                "unknown contrast function {other:?}; expected one of {}",
                Contrast::NAMES.join(", ")
            )),
        }
    }
}

/// The settings of FastICA.
#[derive(Clone, Debug, PartialEq)]
pub struct FastIcaParams {
    /// K, the number of sources: 1 ≤ K ≤ min(N, D).
    pub n_components: usize,
    /// The contrast function.
    pub fun: Contrast,
    /// Stop when `max |1 − |⟨wᵢ, wᵢ'⟩||` over the rows of successive W is below this
    /// (scikit-learn's default 1e-4).
    pub tolerance: f64,
    /// The most fixed-point steps (scikit-learn's default 200).
    pub max_iterations: usize,
    /// Seed of the random start W₀ (K×K standard normal).
    pub seed: u64,
    /// A given start instead of the random one, K×K, in the coordinates of the whitened codes.
    pub initial_unmixing: Option<Mat<f64>>,
}

impl FastIcaParams {
    /// scikit-learn's defaults.
    pub const DEFAULT_TOLERANCE: f64 = 1e-4;
    /// scikit-learn's default bound.
    pub const DEFAULT_MAX_ITERATIONS: usize = 200;

    /// K sources, logcosh, scikit-learn's tolerance and bound, seed 0.
    pub fn new(n_components: usize) -> Self {
        FastIcaParams {
            n_components,
            fun: Contrast::Logcosh,
            tolerance: Self::DEFAULT_TOLERANCE,
            max_iterations: Self::DEFAULT_MAX_ITERATIONS,
            seed: 0,
            initial_unmixing: None,
        }
    }

    /// Checks the settings that do not depend on data.
    pub fn validate(&self) -> Result<()> {
        if self.n_components == 0 {
            return Err(PcaError::ZeroComponents);
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return Err(PcaError::ToleranceOutOfRange(self.tolerance));
        }
        if self.max_iterations == 0 {
            return Err(PcaError::ZeroIterations);
        }
        if let Some(w) = &self.initial_unmixing
            && (w.nrows() != self.n_components || w.ncols() != self.n_components)
        {
            return Err(PcaError::InvalidModel(format!(
                "the initial unmixing is {}×{}, not {k}×{k}",
                w.nrows(),
                w.ncols(),
                k = self.n_components
            )));
        }
        Ok(())
    }

    /// Fits the sources of the rows of `x` (N×D).
    pub fn fit(&self, x: MatRef<'_, f64>) -> Result<FastIca> {
        crate::kernel::parallel::fix_faer_split();
        self.validate()?;
        let (n, d) = (x.nrows(), x.ncols());
        let k = self.n_components;
        if k > n.min(d) {
            return Err(PcaError::TooManyComponents {
                requested: k,
                max: n.min(d),
            });
        }
        check_finite(x)?;
        // The whitening is PCA's: codes divided by √λ with ddof 0 have unit variance.
        let pca = PcaBuilder::new()
            .components(ComponentCount::Fixed(k))
            .ddof(0)
            .whitening(Whitening::UnitVariance)
            .build()?
            .fit(x)?;
        if let Some(m) = pca
            .explained_variance()
            .iter()
            // NaN counts as no variance, hence `partial_cmp` rather than `<=`.
            .position(|&l| {
                l.partial_cmp(&(1e-12 * pca.total_variance())) != Some(std::cmp::Ordering::Greater)
            })
        {
            return Err(PcaError::InvalidModel(format!(
                "the data spans fewer than {k} dimensions (component {} has no variance): ask \
                 for at most {m} sources",
                m + 1
            )));
        }
        let whitened = pca.transform(x)?; // N×K
        let start = match &self.initial_unmixing {
            Some(w) => w.clone(),
            None => {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
                Mat::from_fn(k, k, |_, _| StandardNormal.sample(&mut rng))
            }
        };
        let mut w = symmetric_decorrelation(start.as_ref())?;
        let mut iterations = 0;
        let mut converged = false;
        let mut change = f64::INFINITY;
        for _ in 0..self.max_iterations {
            iterations += 1;
            let projected = &whitened * w.transpose(); // N×K: wᵢᵀ x per row
            let mut g = Mat::<f64>::zeros(n, k);
            let mut mean_derivative = vec![0.0; k];
            // After faer's product: `tanh` and `exp` would crawl (principal_amx).
            principal_amx::clear_upper_state();
            for c in 0..k {
                for i in 0..n {
                    let (value, derivative) = self.fun.apply(projected[(i, c)]);
                    g[(i, c)] = value;
                    mean_derivative[c] += derivative;
                }
                mean_derivative[c] /= n as f64;
            }
            let mut next = (g.transpose() * &whitened) * faer::Scale(1.0 / n as f64);
            for c in 0..k {
                for j in 0..k {
                    next[(c, j)] -= mean_derivative[c] * w[(c, j)];
                }
            }
            let next = symmetric_decorrelation(next.as_ref())?;
            change = (0..k)
                .map(|c| {
                    let dot: f64 = (0..k).map(|j| next[(c, j)] * w[(c, j)]).sum();
                    (dot.abs() - 1.0).abs()
                })
                .fold(0.0, f64::max);
            w = next;
            if change < self.tolerance {
                converged = true;
                break;
            }
        }
        // Unmixing of the centred data: W diag(1/√λ) Bᵀ, then each source scaled to unit
        // variance (ddof 0) as scikit-learn's 'unit-variance'.
        let scale = pca.whitening_scale().unwrap_or_else(|| vec![1.0; k]);
        let b = pca.components();
        let whitening = Mat::from_fn(k, d, |m, j| b[(m, j)] / scale[m]);
        let mut unmixing = &w * &whitening;
        let xc = centred(x, pca.mean());
        let sources = &xc * unmixing.transpose();
        for c in 0..k {
            let sd = ((0..n).map(|i| sources[(i, c)].powi(2)).sum::<f64>() / n as f64).sqrt();
            for j in 0..d {
                unmixing[(c, j)] /= sd;
            }
        }
        let mixing = pseudo_inverse(unmixing.as_ref())?;
        Ok(FastIca {
            components: unmixing,
            mixing,
            mean: pca.mean().to_vec(),
            n_samples: n,
            fun: self.fun,
            seed: self.seed,
            iterations,
            converged,
            change,
            tolerance: self.tolerance,
        })
    }
}

/// `(W Wᵀ)^-½ W`, by the eigendecomposition of W Wᵀ (eigenvalues clipped at the smallest
/// positive f64, as scikit-learn).
fn symmetric_decorrelation(w: MatRef<'_, f64>) -> Result<Mat<f64>> {
    let gram = w * w.transpose();
    let eigen =
        gram.self_adjoint_eigen(faer::Side::Lower)
            .map_err(|e| PcaError::NoConvergence {
                solver: "ica",
                detail: format!("{e:?}"),
            })?;
    let (u, s) = (eigen.U(), eigen.S());
    let k = w.nrows();
    let inverse_root: Vec<f64> = (0..k)
        .map(|i| 1.0 / s[i].max(f64::MIN_POSITIVE).sqrt())
        .collect();
    let scaled = Mat::from_fn(k, k, |i, j| u[(i, j)] * inverse_root[j]);
    Ok(&scaled * u.transpose() * w)
}

/// The Moore–Penrose inverse of the K×D `a`, D×K, by its thin SVD.
fn pseudo_inverse(a: MatRef<'_, f64>) -> Result<Mat<f64>> {
    let svd = a.thin_svd().map_err(|e| PcaError::NoConvergence {
        solver: "ica",
        detail: format!("{e:?}"),
    })?;
    let (u, s, v) = (svd.U(), svd.S(), svd.V());
    let r = s.dim();
    let largest = (0..r).fold(0.0f64, |m, i| m.max(s[i]));
    let cutoff = largest * f64::EPSILON * a.nrows().max(a.ncols()) as f64;
    let v_scaled = Mat::from_fn(v.nrows(), r, |j, i| {
        if s[i] > cutoff { v[(j, i)] / s[i] } else { 0.0 }
    });
    Ok(&v_scaled * u.transpose())
}

/// A fitted FastICA.
#[derive(Clone, Debug, PartialEq)]
pub struct FastIca {
    components: Mat<f64>,
    mixing: Mat<f64>,
    mean: Vec<f64>,
    n_samples: usize,
    fun: Contrast,
    seed: u64,
    iterations: usize,
    converged: bool,
    change: f64,
    tolerance: f64,
}

/// Everything a [`FastIca`] is made of, for storing it and reading it back.
#[derive(Clone, Debug, PartialEq)]
pub struct FastIcaParts {
    /// K×D unmixing.
    pub components: Mat<f64>,
    /// D×K mixing, the pseudo-inverse of the unmixing.
    pub mixing: Mat<f64>,
    /// μ.
    pub mean: Vec<f64>,
    /// N of the training data.
    pub n_samples: usize,
    /// The contrast function.
    pub fun: Contrast,
    /// The seed of the start.
    pub seed: u64,
    /// Fixed-point steps taken.
    pub iterations: usize,
    /// Whether the tolerance was reached.
    pub converged: bool,
    /// The last step's change.
    pub change: f64,
    /// The tolerance.
    pub tolerance: f64,
}

impl FastIca {
    /// The model made of `parts`, checked for consistency.
    pub fn from_parts(parts: FastIcaParts) -> Result<Self> {
        let (k, d) = (parts.components.nrows(), parts.components.ncols());
        if parts.mean.len() != d || parts.mixing.nrows() != d || parts.mixing.ncols() != k {
            return Err(PcaError::InvalidModel(format!(
                "unmixing {k}×{d}, mixing {}×{}, mean of {}",
                parts.mixing.nrows(),
                parts.mixing.ncols(),
                parts.mean.len()
            )));
        }
        check_finite(parts.components.as_ref())?;
        check_finite(parts.mixing.as_ref())?;
        Ok(FastIca {
            components: parts.components,
            mixing: parts.mixing,
            mean: parts.mean,
            n_samples: parts.n_samples,
            fun: parts.fun,
            seed: parts.seed,
            iterations: parts.iterations,
            converged: parts.converged,
            change: parts.change,
            tolerance: parts.tolerance,
        })
    }

    /// The parts, for storing.
    pub fn to_parts(&self) -> FastIcaParts {
        FastIcaParts {
            components: self.components.clone(),
            mixing: self.mixing.clone(),
            mean: self.mean.clone(),
            n_samples: self.n_samples,
            fun: self.fun,
            seed: self.seed,
            iterations: self.iterations,
            converged: self.converged,
            change: self.change,
            tolerance: self.tolerance,
        }
    }

    /// K×D unmixing: sources = (x − μ) · componentsᵀ.
    pub fn components(&self) -> MatRef<'_, f64> {
        self.components.as_ref()
    }
    /// D×K mixing: x ≈ μ + mixing · s.
    pub fn mixing(&self) -> MatRef<'_, f64> {
        self.mixing.as_ref()
    }
    /// μ.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }
    /// N of the training data.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }
    /// The contrast function.
    pub fn fun(&self) -> Contrast {
        self.fun
    }
    /// The seed of the random start.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Fixed-point steps taken (scikit-learn's `n_iter_`).
    pub fn n_iter(&self) -> usize {
        self.iterations
    }
    /// Whether the tolerance was reached within the bound.
    pub fn converged(&self) -> bool {
        self.converged
    }
    /// The last step's `max |1 − |⟨wᵢ, wᵢ'⟩||`.
    pub fn change(&self) -> f64 {
        self.change
    }
    /// The tolerance.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }
}

impl LatentModel for FastIca {
    fn kind(&self) -> ModelKind {
        ModelKind::Ica
    }
    fn n_features(&self) -> usize {
        self.mean.len()
    }
    fn n_components(&self) -> usize {
        self.components.nrows()
    }
    fn component_prefix(&self) -> &'static str {
        "source"
    }
    fn supports(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Transform | Operation::Inverse)
    }
    /// The sources `(x − μ) · componentsᵀ`.
    fn transform(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        check_rows(x, self.n_features())?;
        Ok(centred(x, &self.mean) * self.components.transpose())
    }
    /// `μ + s · mixingᵀ`.
    fn inverse_transform(&self, s: MatRef<'_, f64>) -> Result<Mat<f64>> {
        if s.ncols() != self.n_components() {
            return Err(PcaError::ComponentMismatch {
                expected: self.n_components(),
                found: s.ncols(),
            });
        }
        check_finite(s)?;
        let mut x = s * self.mixing.transpose();
        for i in 0..x.nrows() {
            for j in 0..x.ncols() {
                x[(i, j)] += self.mean[j];
            }
        }
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sine, a square wave and Laplace noise, mixed into four features.
    fn mixed(n: usize) -> (Mat<f64>, Mat<f64>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let laplace = rand_distr::Exp::new(1.0).unwrap();
        let sources = Mat::from_fn(n, 3, |i, c| {
            let t = i as f64 * 0.05;
            match c {
                0 => (2.0 * t).sin(),
                1 => (3.0 * t).sin().signum(),
                _ => {
                    let e: f64 = laplace.sample(&mut rng);
                    if i % 2 == 0 { e } else { -e }
                }
            }
        });
        let a = faer::mat![
            [1.0, 0.5, 1.5],
            [0.5, 2.0, 1.0],
            [1.5, 1.0, 2.0],
            [0.2, 0.3, -1.0]
        ];
        let x = &sources * a.transpose();
        (sources, x)
    }

    /// The largest |correlation| of each true source with any recovered one.
    fn best_correlations(truth: MatRef<'_, f64>, found: MatRef<'_, f64>) -> Vec<f64> {
        let n = truth.nrows() as f64;
        let standard = |m: MatRef<'_, f64>, c: usize| -> Vec<f64> {
            let mean = (0..m.nrows()).map(|i| m[(i, c)]).sum::<f64>() / n;
            let sd = ((0..m.nrows())
                .map(|i| (m[(i, c)] - mean).powi(2))
                .sum::<f64>()
                / n)
                .sqrt();
            (0..m.nrows()).map(|i| (m[(i, c)] - mean) / sd).collect()
        };
        (0..truth.ncols())
            .map(|a| {
                let ta = standard(truth, a);
                (0..found.ncols())
                    .map(|b| {
                        let fb = standard(found, b);
                        (ta.iter().zip(&fb).map(|(p, q)| p * q).sum::<f64>() / n).abs()
                    })
                    .fold(0.0, f64::max)
            })
            .collect()
    }

    #[test]
    fn recovers_planted_sources_with_every_contrast() {
        let (sources, x) = mixed(2000);
        for fun in [Contrast::Logcosh, Contrast::Exp, Contrast::Cube] {
            let params = FastIcaParams {
                fun,
                ..FastIcaParams::new(3)
            };
            let model = params.fit(x.as_ref()).unwrap();
            assert!(model.converged(), "{fun}: {} steps", model.n_iter());
            let found = model.transform(x.as_ref()).unwrap();
            for c in best_correlations(sources.as_ref(), found.as_ref()) {
                assert!(c > 0.99, "{fun}: correlation {c}");
            }
            // Unit variance, and the mixing undoes the unmixing on the data's span.
            for c in 0..3 {
                let var = (0..2000).map(|i| found[(i, c)].powi(2)).sum::<f64>() / 2000.0;
                assert!((var - 1.0).abs() < 1e-9);
            }
            let back = model.inverse_transform(found.as_ref()).unwrap();
            assert!((0..2000).all(|i| (0..4).all(|j| (back[(i, j)] - x[(i, j)]).abs() < 1e-8)));
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_model() {
        let (_, x) = mixed(500);
        let a = FastIcaParams::new(3).fit(x.as_ref()).unwrap();
        let b = FastIcaParams::new(3).fit(x.as_ref()).unwrap();
        assert_eq!(a, b);
    }
}
