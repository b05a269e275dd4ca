//! The `fit` flags of the kinds beyond PCA and the settings `fit` shares with them, below the
//! kinds' modules that read them.

use clap::Args;
use principal::{Contrast, KernelFunction, ModelKind, PreImage, Rotation};

use crate::args::one_of;

/// The `fit` flags of the kinds beyond PCA.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The kind of model: pca (the default), factor-analysis, bayesian-pca, mixture, kernel
    /// (kernel PCA) or ica (FastICA). Every kind but pca needs --components K.
    #[arg(long = "model", value_name = "KIND", default_value = "pca", value_parser = one_of::<ModelKind>(ModelKind::NAMES))]
    pub kind: ModelKind,
    /// factor-analysis: rotate the loadings (raw varimax or quartimax, as scikit-learn).
    #[arg(long, value_name = "none|varimax|quartimax", value_parser = one_of::<Rotation>(Rotation::NAMES))]
    pub rotation: Option<Rotation>,
    /// kernel: the kernel function.
    #[arg(long, value_name = "KERNEL", value_parser = one_of::<KernelFunction>(KernelFunction::NAMES))]
    pub kernel: Option<KernelFunction>,
    /// kernel: γ of rbf, poly and sigmoid (> 0; default 1/n_features).
    #[arg(long, value_name = "G", allow_negative_numbers = true)]
    pub gamma: Option<f64>,
    /// kernel: the degree of poly (> 0; default 3).
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    pub degree: Option<f64>,
    /// kernel: c₀ of poly and sigmoid (default 1).
    #[arg(long, value_name = "C", allow_negative_numbers = true)]
    pub coef0: Option<f64>,
    /// kernel: the ridge of the learned pre-image map `inverse` uses (≥ 0; default 1).
    #[arg(long, value_name = "A", allow_negative_numbers = true)]
    pub alpha: Option<f64>,
    /// kernel: learn the pre-image map `inverse` needs (learn, the default), or skip it (skip,
    /// scikit-learn's default: a faster fit and a smaller model, without `inverse`).
    #[arg(long = "pre-image", value_name = "learn|skip", value_parser = one_of::<PreImage>(PreImage::NAMES))]
    pub pre_image: Option<PreImage>,
    /// ica: the contrast function.
    #[arg(long, value_name = "logcosh|exp|cube", value_parser = one_of::<Contrast>(Contrast::NAMES))]
    pub fun: Option<Contrast>,
    /// mixture: the number of clusters (at least 1).
    #[arg(long, value_name = "C")]
    pub clusters: Option<usize>,
    /// mixture: seeded k-means++ starts of EM, the most likely kept (at least 1; default 5).
    #[arg(long, value_name = "R")]
    pub restarts: Option<usize>,
}

/// The settings `fit` shares with the kinds: components, seed, tolerance and bound as given.
#[derive(Clone, Copy, Debug)]
pub struct Shared {
    pub components: usize,
    pub seed: u64,
    pub tolerance: Option<f64>,
    pub max_iterations: Option<usize>,
    pub memory_limit: u64,
}

/// A matrix as JSON rows.
pub(crate) fn json_rows(m: principal::faer::MatRef<'_, f64>) -> serde_json::Value {
    (0..m.nrows())
        .map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect::<Vec<f64>>())
        .collect::<Vec<_>>()
        .into()
}
