//! Kernel PCA, as scikit-learn's `KernelPCA` with a dense eigensolver: the N×N kernel matrix of
//! the training rows, centred in feature space (`K − 1K − K1 + 1K1`), and its top K eigenpairs
//! (K up to N, not bounded by D). The codes of the training rows are `α √λ`; new rows go
//! through their kernel with the training rows, so the model keeps the training data.
//!
//! The inverse is scikit-learn's learned pre-image map (`fit_inverse_transform`): kernel ridge
//! regression from the training codes back to the training rows, `(K_z + α I) β = X`, with the
//! same kernel on the codes; `inverse(z) = k(z, Z_train) β`. It is learnt unless
//! [`PreImage::Skip`] says not to (scikit-learn's default): an N×N kernel of the codes and its
//! solve with D right-hand sides, about a third of the fit on 3,000 MNIST digits (1.24 s with
//! it, 0.80 s without: bench/results.md).
//!
//! The training kernel matrix is built as the Gram solver builds X Xᵀ (the lower triangle by
//! faer's parallel triangular product, then mirrored; the function applied in parallel) and its
//! top K eigenpairs by the certified Krylov–Schur route of a fixed-count PCA (`leading_eigen`),
//! which falls back to the whole decomposition (scikit-learn's dense solver) where it declines.
//! It needs up to six N×N matrices' worth of memory at once
//! ([`KernelPcaParams::MATRICES_HELD`]); a fit whose matrices would pass the memory limit is
//! refused before any is built.

use std::fmt;
use std::str::FromStr;

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::solvers::Solve;
use faer::{Accum, Mat, MatRef};
use rayon::prelude::*;

use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::models::{
    LatentModel, ModelKind, Operation, centred, check_finite, check_rows, column_means,
};
use crate::solver::leading::leading_eigen;

/// The kernel function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelFunction {
    /// `exp(−γ ‖x − y‖²)`.
    #[default]
    Rbf,
    /// `(γ ⟨x, y⟩ + c₀)^degree`.
    Poly,
    /// `tanh(γ ⟨x, y⟩ + c₀)`.
    Sigmoid,
    /// `⟨x, y⟩ / (‖x‖ ‖y‖)` (0 for a zero row).
    Cosine,
    /// `⟨x, y⟩`: kernel PCA is then PCA.
    Linear,
}

impl KernelFunction {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["rbf", "poly", "sigmoid", "cosine", "linear"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            KernelFunction::Rbf => "rbf",
            KernelFunction::Poly => "poly",
            KernelFunction::Sigmoid => "sigmoid",
            KernelFunction::Cosine => "cosine",
            KernelFunction::Linear => "linear",
        }
    }
}

impl fmt::Display for KernelFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KernelFunction {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        KernelFunction::NAMES
            .iter()
            .position(|n| *n == s)
            .map(|i| {
                [
                    KernelFunction::Rbf,
                    KernelFunction::Poly,
                    KernelFunction::Sigmoid,
                    KernelFunction::Cosine,
                    KernelFunction::Linear,
                ][i]
            })
            .ok_or_else(|| {
                format!(
                    "unknown kernel {s:?}; expected one of {}",
                    KernelFunction::NAMES.join(", ")
                )
            })
    }
}

/// A kernel with its settings resolved (γ known).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kernel {
    /// The function.
    pub function: KernelFunction,
    /// γ of rbf, poly and sigmoid.
    pub gamma: f64,
    /// The degree of poly.
    pub degree: f64,
    /// c₀ of poly and sigmoid.
    pub coef0: f64,
}

impl Kernel {
    /// The kernel matrix `k(aᵢ, bⱼ)`, |a|×|b|.
    pub fn matrix(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        if self.function == KernelFunction::Rbf {
            // ‖a − b‖² as ‖a‖² + ‖b‖² − 2⟨a, b⟩ cancels catastrophically far from the origin
            // (data at 1e6 loses 12 digits); distances do not move with the origin, so both
            // sides are first centred on b's mean.
            let centre = column_means(b);
            return self.matrix_of(centred(a, &centre).as_ref(), centred(b, &centre).as_ref());
        }
        self.matrix_of(a, b)
    }

    /// The kernel matrix of one set of rows with itself, N×N (the training kernel): built as
    /// the Gram solver builds `X Xᵀ`, only the lower triangle multiplied (half the products,
    /// faer's parallel triangular product) and then mirrored; the kernel function is applied
    /// to the columns in parallel.
    pub fn symmetric(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        // As in `matrix`: rbf distances from rows centred on their mean.
        let centred_rows;
        let x = if self.function == KernelFunction::Rbf {
            centred_rows = centred(x, &column_means(x));
            centred_rows.as_ref()
        } else {
            x
        };
        let n = x.nrows();
        let mut k = Mat::zeros(n, n);
        triangular::matmul(
            k.as_mut(),
            BlockStructure::TriangularLower,
            Accum::Replace,
            x,
            BlockStructure::Rectangular,
            x.transpose(),
            BlockStructure::Rectangular,
            1.0,
            faer_par(),
        );
        for j in 1..n {
            for i in 0..j {
                k[(i, j)] = k[(j, i)];
            }
        }
        let norms = self.norms(x);
        self.apply(k, &norms, &norms)
    }

    fn matrix_of(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let (na, nb) = (self.norms(a), self.norms(b));
        self.apply(a * b.transpose(), &na, &nb)
    }

    /// The rows' squared norms where the kernel function needs them (rbf, cosine).
    fn norms(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        match self.function {
            KernelFunction::Rbf | KernelFunction::Cosine => squared_norms(x),
            _ => Vec::new(),
        }
    }

    /// The kernel function applied to the inner products `k[i, j] = ⟨aᵢ, bⱼ⟩`, given the
    /// rows' squared norms `na`, `nb` (rbf, cosine), columns in parallel.
    fn apply(&self, mut k: Mat<f64>, na: &[f64], nb: &[f64]) -> Mat<f64> {
        let (gamma, coef0, degree) = (self.gamma, self.coef0, self.degree);
        let function = self.function;
        if function == KernelFunction::Linear {
            return k;
        }
        let columns: Vec<_> = k.col_iter_mut().collect();
        columns.into_par_iter().enumerate().for_each(|(j, column)| {
            // This thread may have run faer's products: `exp` would crawl (principal_amx).
            principal_amx::clear_upper_state();
            for (i, v) in column.iter_mut().enumerate() {
                *v = match function {
                    KernelFunction::Linear => *v,
                    KernelFunction::Poly => (gamma * *v + coef0).powf(degree),
                    KernelFunction::Sigmoid => (gamma * *v + coef0).tanh(),
                    // ‖a − b‖² = ‖a‖² + ‖b‖² − 2⟨a, b⟩, clipped at 0 against rounding.
                    KernelFunction::Rbf => (-gamma * (na[i] + nb[j] - 2.0 * *v).max(0.0)).exp(),
                    KernelFunction::Cosine => {
                        let norm = (na[i] * nb[j]).sqrt();
                        if norm > 0.0 { *v / norm } else { 0.0 }
                    }
                };
            }
        });
        k
    }
}

fn squared_norms(x: MatRef<'_, f64>) -> Vec<f64> {
    (0..x.nrows())
        .map(|i| (0..x.ncols()).map(|j| x[(i, j)].powi(2)).sum())
        .collect()
}

/// Whether a kernel PCA learns its pre-image map, the inverse from codes to rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreImage {
    /// Learn it (scikit-learn's `fit_inverse_transform=True`): `inverse` is defined.
    #[default]
    Learn,
    /// Skip it (scikit-learn's default, `fit_inverse_transform=False`): a faster fit, a
    /// smaller model, and no `inverse`.
    Skip,
}

impl PreImage {
    /// Every name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &["learn", "skip"];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            PreImage::Learn => "learn",
            PreImage::Skip => "skip",
        }
    }
}

impl fmt::Display for PreImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PreImage {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "learn" => Ok(PreImage::Learn),
            "skip" => Ok(PreImage::Skip),
            _ => Err(format!(
                "unknown pre-image setting {s:?}; expected one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The settings of a kernel PCA.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelPcaParams {
    /// K, the number of components: 1 ≤ K ≤ N.
    pub n_components: usize,
    /// The kernel function.
    pub kernel: KernelFunction,
    /// γ (> 0); `None` is 1/D, as scikit-learn.
    pub gamma: Option<f64>,
    /// The degree of poly (> 0; scikit-learn's default 3).
    pub degree: f64,
    /// c₀ of poly and sigmoid (scikit-learn's default 1).
    pub coef0: f64,
    /// The ridge of the pre-image map (≥ 0; scikit-learn's default 1).
    pub alpha: f64,
    /// Whether the pre-image map is learnt.
    pub pre_image: PreImage,
    /// Refuse a fit whose N×N matrices would take more bytes than this.
    pub memory_limit: Option<u64>,
}

impl KernelPcaParams {
    /// N×N matrices' worth of memory held at once while fitting, at worst: the kernel, and
    /// faer's whole decomposition where the certified route declines (its copy, workspace and
    /// vectors). Measured at N = 3,000 (peak resident memory, 2026-12-08): 5.5 N×N above the
    /// memory before the kernel when the route declined, 2.3 when it was certified, and the
    /// pre-image map's system (built after the kernel is freed) 2.8 with the certified route;
    /// so 6, whether the map is learnt or not. The check comes before the fit, which cannot
    /// know whether the route will decline.
    pub const MATRICES_HELD: u64 = 6;

    /// K components of the rbf kernel with scikit-learn's defaults.
    pub fn new(n_components: usize) -> Self {
        KernelPcaParams {
            n_components,
            kernel: KernelFunction::Rbf,
            gamma: None,
            degree: 3.0,
            coef0: 1.0,
            alpha: 1.0,
            pre_image: PreImage::Learn,
            memory_limit: None,
        }
    }

    /// Checks the settings that do not depend on data.
    pub fn validate(&self) -> Result<()> {
        if self.n_components == 0 {
            return Err(PcaError::ZeroComponents);
        }
        if let Some(gamma) = self.gamma
            && !(gamma > 0.0 && gamma.is_finite())
        {
            return Err(PcaError::InvalidSetting(format!(
                "--gamma {gamma} is not allowed: it must be a positive number"
            )));
        }
        if !(self.degree > 0.0 && self.degree.is_finite()) {
            return Err(PcaError::InvalidSetting(format!(
                "--degree {} is not allowed: it must be a positive number",
                self.degree
            )));
        }
        if !self.coef0.is_finite() {
            return Err(PcaError::InvalidSetting(format!(
                "--coef0 {} is not allowed: it must be a finite number",
                self.coef0
            )));
        }
        if !(self.alpha >= 0.0 && self.alpha.is_finite()) {
            return Err(PcaError::InvalidSetting(format!(
                "--alpha {} is not allowed: it must be a number ≥ 0",
                self.alpha
            )));
        }
        Ok(())
    }

    /// The bytes the fit's N×N matrices take for `n` rows.
    pub fn bytes_needed(n: usize) -> u64 {
        (n as u64)
            .saturating_mul(n as u64)
            .saturating_mul(8 * Self::MATRICES_HELD)
    }

    /// Checks `n` rows against the memory limit, before anything of size N×N is built.
    pub fn check_memory(&self, n: usize) -> Result<()> {
        let needed = Self::bytes_needed(n);
        match self.memory_limit {
            Some(limit) if needed > limit => Err(PcaError::InvalidSetting(format!(
                "kernel PCA of {n} rows needs {} N×N matrices, {} MB, over --memory-limit {} MB; \
                 fit on a subset of the rows (a Nyström approximation is not implemented)",
                Self::MATRICES_HELD,
                needed.div_ceil(1_000_000),
                limit / 1_000_000
            ))),
            _ => Ok(()),
        }
    }

    /// Fits the model to the rows of `x` (N×D).
    pub fn fit(&self, x: MatRef<'_, f64>) -> Result<KernelPca> {
        crate::kernel::parallel::fix_faer_split();
        self.validate()?;
        let (n, d) = (x.nrows(), x.ncols());
        if n == 0 || d == 0 {
            return Err(PcaError::EmptyData {
                n_samples: n,
                n_features: d,
            });
        }
        if self.n_components > n {
            return Err(PcaError::InvalidSetting(format!(
                "--components {} is more than the {n} rows: kernel PCA has at most N components",
                self.n_components
            )));
        }
        check_finite(x)?;
        self.check_memory(n)?;
        let kernel = Kernel {
            function: self.kernel,
            gamma: self.gamma.unwrap_or(1.0 / d as f64),
            degree: self.degree,
            coef0: self.coef0,
        };
        let mut k = kernel.symmetric(x);
        let column_means: Vec<f64> = (0..n)
            .map(|j| (0..n).map(|i| k[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let all_mean = column_means.iter().sum::<f64>() / n as f64;
        // K is symmetric: its row means are its column means.
        for j in 0..n {
            for i in 0..n {
                k[(i, j)] += all_mean - column_means[i] - column_means[j];
            }
        }
        let m = self.n_components;
        let (values, mut vectors, _) = leading_eigen(k.as_ref(), m, 1.0, "kernel")?;
        drop(k);
        // scikit-learn's svd_flip on the eigenvectors: each column's largest |entry| positive.
        for c in 0..m {
            let pivot = (0..n)
                .max_by(|&a, &b| vectors[(a, c)].abs().total_cmp(&vectors[(b, c)].abs()))
                .unwrap_or(0);
            if vectors[(pivot, c)] < 0.0 {
                for i in 0..n {
                    vectors[(i, c)] = -vectors[(i, c)];
                }
            }
        }
        let codes = Mat::from_fn(n, m, |i, c| vectors[(i, c)] * values[c].sqrt());
        let dual_coef = match self.pre_image {
            PreImage::Learn => Some(pre_image_map(&kernel, codes.as_ref(), x, self.alpha)?),
            PreImage::Skip => None,
        };
        Ok(KernelPca {
            kernel,
            alpha: self.alpha,
            eigenvalues: values,
            eigenvectors: vectors,
            training: x.to_owned(),
            column_means,
            all_mean,
            training_codes: codes,
            dual_coef,
        })
    }
}

/// β solving `(k(Z, Z) + α I) β = X`, by Cholesky (LU when α = 0 leaves it singular-ish).
fn pre_image_map(
    kernel: &Kernel,
    codes: MatRef<'_, f64>,
    x: MatRef<'_, f64>,
    alpha: f64,
) -> Result<Mat<f64>> {
    let mut kz = kernel.symmetric(codes);
    for i in 0..kz.nrows() {
        kz[(i, i)] += alpha;
    }
    match kz.llt(faer::Side::Lower) {
        Ok(llt) => Ok(llt.solve(x.to_owned())),
        Err(_) => Ok(kz.partial_piv_lu().solve(x.to_owned())),
    }
}

/// A fitted kernel PCA.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelPca {
    kernel: Kernel,
    alpha: f64,
    eigenvalues: Vec<f64>,
    eigenvectors: Mat<f64>,
    training: Mat<f64>,
    column_means: Vec<f64>,
    all_mean: f64,
    training_codes: Mat<f64>,
    dual_coef: Option<Mat<f64>>,
}

/// Everything a [`KernelPca`] is made of, for storing it and reading it back.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelPcaParts {
    /// The kernel with γ resolved.
    pub kernel: Kernel,
    /// The ridge of the pre-image map.
    pub alpha: f64,
    /// λ, K values, the centred kernel matrix's largest eigenvalues.
    pub eigenvalues: Vec<f64>,
    /// N×K eigenvectors α.
    pub eigenvectors: Mat<f64>,
    /// The training rows, N×D.
    pub training: Mat<f64>,
    /// The training kernel matrix's column means, N values.
    pub column_means: Vec<f64>,
    /// Their mean.
    pub all_mean: f64,
    /// The training rows' codes, N×K.
    pub training_codes: Mat<f64>,
    /// The pre-image map β, N×D; `None` when it was skipped ([`PreImage::Skip`]).
    pub dual_coef: Option<Mat<f64>>,
}

impl KernelPca {
    /// The model made of `parts`, checked for consistency.
    pub fn from_parts(parts: KernelPcaParts) -> Result<Self> {
        let (n, d) = (parts.training.nrows(), parts.training.ncols());
        let k = parts.eigenvalues.len();
        let shapes_agree = parts.eigenvectors.nrows() == n
            && parts.eigenvectors.ncols() == k
            && parts.column_means.len() == n
            && parts.training_codes.nrows() == n
            && parts.training_codes.ncols() == k
            && parts
                .dual_coef
                .as_ref()
                .is_none_or(|b| b.nrows() == n && b.ncols() == d);
        if !shapes_agree {
            return Err(PcaError::InvalidModel(format!(
                "the kernel PCA's parts do not agree with {n} training rows of {d} features and \
                 {k} components"
            )));
        }
        if parts
            .eigenvalues
            .iter()
            .any(|l| !(*l >= 0.0 && l.is_finite()))
        {
            return Err(PcaError::InvalidModel(
                "an eigenvalue is negative or not finite".into(),
            ));
        }
        Ok(KernelPca {
            kernel: parts.kernel,
            alpha: parts.alpha,
            eigenvalues: parts.eigenvalues,
            eigenvectors: parts.eigenvectors,
            training: parts.training,
            column_means: parts.column_means,
            all_mean: parts.all_mean,
            training_codes: parts.training_codes,
            dual_coef: parts.dual_coef,
        })
    }

    /// The parts, for storing.
    pub fn to_parts(&self) -> KernelPcaParts {
        KernelPcaParts {
            kernel: self.kernel,
            alpha: self.alpha,
            eigenvalues: self.eigenvalues.clone(),
            eigenvectors: self.eigenvectors.clone(),
            training: self.training.clone(),
            column_means: self.column_means.clone(),
            all_mean: self.all_mean,
            training_codes: self.training_codes.clone(),
            dual_coef: self.dual_coef.clone(),
        }
    }

    /// The kernel, γ resolved.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }
    /// The ridge of the pre-image map.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// Whether the pre-image map was learnt (and `inverse` is defined).
    pub fn pre_image(&self) -> PreImage {
        match self.dual_coef {
            Some(_) => PreImage::Learn,
            None => PreImage::Skip,
        }
    }
    /// λ: the centred kernel matrix's largest eigenvalues (scikit-learn's `eigenvalues_`).
    pub fn eigenvalues(&self) -> &[f64] {
        &self.eigenvalues
    }
    /// N×K unit eigenvectors (scikit-learn's `eigenvectors_`).
    pub fn eigenvectors(&self) -> MatRef<'_, f64> {
        self.eigenvectors.as_ref()
    }
    /// The training rows, which transforming new rows needs.
    pub fn training(&self) -> MatRef<'_, f64> {
        self.training.as_ref()
    }
    /// The training rows' codes `α √λ` (scikit-learn's `fit_transform`).
    pub fn training_codes(&self) -> MatRef<'_, f64> {
        self.training_codes.as_ref()
    }
    /// N of the training data.
    pub fn n_samples(&self) -> usize {
        self.training.nrows()
    }
}

impl LatentModel for KernelPca {
    fn kind(&self) -> ModelKind {
        ModelKind::Kernel
    }
    fn n_features(&self) -> usize {
        self.training.ncols()
    }
    fn n_components(&self) -> usize {
        self.eigenvalues.len()
    }
    fn component_prefix(&self) -> &'static str {
        "kpc"
    }
    fn supports(&self, operation: Operation) -> bool {
        match operation {
            Operation::Transform => true,
            Operation::Inverse => self.dual_coef.is_some(),
            _ => false,
        }
    }
    /// `K̃(x, X) α / √λ`, K̃ the kernel with the rows centred as the training kernel was (a
    /// zero eigenvalue gives a zero column, as scikit-learn).
    fn transform(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        check_rows(x, self.n_features())?;
        let mut k = self.kernel.matrix(x, self.training.as_ref());
        let n = self.training.nrows();
        for i in 0..k.nrows() {
            let row_mean = (0..n).map(|j| k[(i, j)]).sum::<f64>() / n as f64;
            for j in 0..n {
                k[(i, j)] += self.all_mean - row_mean - self.column_means[j];
            }
        }
        let scaled = Mat::from_fn(n, self.n_components(), |i, c| {
            let l = self.eigenvalues[c];
            if l > 0.0 {
                self.eigenvectors[(i, c)] / l.sqrt()
            } else {
                0.0
            }
        });
        Ok(&k * &scaled)
    }
    /// The learned pre-image `k(z, Z_train) β`.
    fn inverse_transform(&self, z: MatRef<'_, f64>) -> Result<Mat<f64>> {
        if z.ncols() != self.n_components() {
            return Err(PcaError::ComponentMismatch {
                expected: self.n_components(),
                found: z.ncols(),
            });
        }
        let Some(dual_coef) = &self.dual_coef else {
            return Err(PcaError::InvalidSetting(
                "this kernel PCA was fitted without its pre-image map (pre-image skip), which \
                 inverse needs: fit it again with the pre-image learnt"
                    .into(),
            ));
        };
        check_finite(z)?;
        Ok(self.kernel.matrix(z, self.training_codes.as_ref()) * dual_coef)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ComponentCount;
    use crate::params::PcaBuilder;

    fn data() -> Mat<f64> {
        Mat::from_fn(40, 3, |i, j| {
            ((i * 7 + j * 13) % 11) as f64 * 0.3 + (i as f64 * 0.1).sin() * j as f64
        })
    }

    /// The training kernel built from the lower triangle, mirrored, is the full kernel
    /// matrix, for every function (rbf and cosine far from the origin too).
    #[test]
    fn the_symmetric_kernel_matrix_is_the_full_one() {
        for offset in [0.0, 1e6] {
            let x = Mat::from_fn(37, 3, |i, j| data()[(i, j)] + offset);
            for function in [
                KernelFunction::Linear,
                KernelFunction::Poly,
                KernelFunction::Sigmoid,
                KernelFunction::Rbf,
                KernelFunction::Cosine,
            ] {
                let gamma = if offset > 0.0 && function != KernelFunction::Rbf {
                    1e-13
                } else {
                    0.3
                };
                let kernel = Kernel {
                    function,
                    gamma,
                    degree: 2.0,
                    coef0: 1.0,
                };
                let (full, symmetric) = (
                    kernel.matrix(x.as_ref(), x.as_ref()),
                    kernel.symmetric(x.as_ref()),
                );
                let scale = full
                    .col_iter()
                    .flat_map(|c| c.iter().map(|v| v.abs()))
                    .fold(0.0, f64::max);
                for j in 0..37 {
                    for i in 0..37 {
                        assert!(
                            (full[(i, j)] - symmetric[(i, j)]).abs() <= 1e-12 * scale,
                            "{function:?}, offset {offset}, ({i}, {j}): {} against {}",
                            symmetric[(i, j)],
                            full[(i, j)]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_linear_kernel_is_pca() {
        let x = data();
        let params = KernelPcaParams {
            kernel: KernelFunction::Linear,
            ..KernelPcaParams::new(2)
        };
        let kpca = params.fit(x.as_ref()).unwrap();
        let pca = PcaBuilder::new()
            .components(ComponentCount::Fixed(2))
            .ddof(0)
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        for c in 0..2 {
            // λ of the centred Gram matrix = N × the covariance's (ddof 0).
            assert!((kpca.eigenvalues()[c] - 40.0 * pca.explained_variance()[c]).abs() < 1e-9);
        }
        let (a, b) = (
            kpca.transform(x.as_ref()).unwrap(),
            pca.transform(x.as_ref()).unwrap(),
        );
        for c in 0..2 {
            let sign = (a[(0, c)] * b[(0, c)]).signum();
            for i in 0..40 {
                assert!((a[(i, c)] - sign * b[(i, c)]).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn transform_of_the_training_rows_is_the_training_codes() {
        let x = data();
        for kernel in [
            KernelFunction::Rbf,
            KernelFunction::Poly,
            KernelFunction::Sigmoid,
            KernelFunction::Cosine,
        ] {
            let model = KernelPcaParams {
                kernel,
                ..KernelPcaParams::new(3)
            }
            .fit(x.as_ref())
            .unwrap();
            let z = model.transform(x.as_ref()).unwrap();
            for i in 0..40 {
                for c in 0..3 {
                    assert!(
                        (z[(i, c)] - model.training_codes()[(i, c)]).abs() < 1e-8,
                        "{kernel}"
                    );
                }
            }
        }
    }

    #[test]
    fn rbf_kernel_pca_does_not_move_with_an_offset_of_1e6() {
        // Distances are translation-invariant: X and X + 1e6 are the same rbf problem.
        let x = data();
        let far = Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] + 1e6);
        let params = KernelPcaParams {
            gamma: Some(0.5),
            ..KernelPcaParams::new(3)
        };
        let (near, distant) = (
            params.fit(x.as_ref()).unwrap(),
            params.fit(far.as_ref()).unwrap(),
        );
        for c in 0..3 {
            let (a, b) = (near.eigenvalues()[c], distant.eigenvalues()[c]);
            assert!((a - b).abs() < 1e-8 * a, "eigenvalue {c}: {a} and {b}");
        }
        let new = Mat::from_fn(5, 3, |i, j| (i + 2 * j) as f64 * 0.4);
        let new_far = Mat::from_fn(5, 3, |i, j| new[(i, j)] + 1e6);
        let (za, zb) = (
            near.transform(new.as_ref()).unwrap(),
            distant.transform(new_far.as_ref()).unwrap(),
        );
        for c in 0..3 {
            for i in 0..5 {
                assert!(
                    (za[(i, c)] - zb[(i, c)]).abs() < 1e-7,
                    "code ({i}, {c}): {} and {}",
                    za[(i, c)],
                    zb[(i, c)]
                );
            }
        }
    }

    /// Skipping the pre-image map leaves everything else as it was, bit for bit (the map is
    /// learnt after the eigenpairs, from them); the model then refuses `inverse`, says so
    /// through `supports`, and goes through its parts unchanged.
    #[test]
    fn a_skipped_pre_image_map_changes_nothing_but_inverse() {
        let x = data();
        let learnt = KernelPcaParams::new(3).fit(x.as_ref()).unwrap();
        let skipped = KernelPcaParams {
            pre_image: PreImage::Skip,
            ..KernelPcaParams::new(3)
        }
        .fit(x.as_ref())
        .unwrap();
        assert_eq!(learnt.pre_image(), PreImage::Learn);
        assert_eq!(skipped.pre_image(), PreImage::Skip);
        let (a, b) = (learnt.to_parts(), skipped.to_parts());
        assert!(a.dual_coef.is_some() && b.dual_coef.is_none());
        assert_eq!(
            KernelPcaParts {
                dual_coef: None,
                ..a
            },
            b
        );
        let new = Mat::from_fn(4, 3, |i, j| (i * 3 + j) as f64 * 0.25);
        assert_eq!(
            learnt.transform(new.as_ref()).unwrap(),
            skipped.transform(new.as_ref()).unwrap()
        );
        assert!(learnt.supports(Operation::Inverse) && !skipped.supports(Operation::Inverse));
        assert!(skipped.supports(Operation::Transform));
        let z = skipped.transform(new.as_ref()).unwrap();
        assert!(learnt.inverse_transform(z.as_ref()).is_ok());
        let err = skipped.inverse_transform(z.as_ref()).unwrap_err();
        assert!(err.to_string().contains("pre-image map"), "{err}");
        assert_eq!(KernelPca::from_parts(skipped.to_parts()).unwrap(), skipped);
        for name in PreImage::NAMES {
            assert_eq!(name.parse::<PreImage>().unwrap().name(), *name);
        }
        assert!("never".parse::<PreImage>().is_err());
    }

    #[test]
    fn a_kernel_matrix_over_the_limit_is_refused() {
        let x = data();
        let params = KernelPcaParams {
            memory_limit: Some(40 * 40 * 8),
            ..KernelPcaParams::new(2)
        };
        let err = params.fit(x.as_ref()).unwrap_err();
        assert!(err.to_string().contains("--memory-limit"), "{err}");
        let gamma = KernelPcaParams {
            gamma: Some(-1.0),
            ..KernelPcaParams::new(2)
        };
        assert!(
            gamma
                .fit(x.as_ref())
                .unwrap_err()
                .to_string()
                .contains("--gamma -1")
        );
    }
}
