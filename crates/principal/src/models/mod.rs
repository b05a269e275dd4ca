//! Latent-variable models beyond PCA, one file per kind.

pub mod bayesian_pca;
pub mod mixture;
