//! Latent-variable models beyond PCA, one module per kind: factor analysis (a noise variance per
//! feature, by EM), kernel PCA (PCA of the centred kernel matrix) and FastICA (independent
//! sources from whitened principal components). Each model is an owned value with plain
//! accessors named as in scikit-learn, fitted from a parameter struct checked once.
//!
//! [`ModelKind`] names every kind a model file or the command line knows, PCA and the kinds
//! fitted elsewhere included; [`LatentModel`] is what the commands ask of any of them, with
//! [`LatentModel::supports`] saying which operations a kind defines.

pub mod bayesian_pca;
pub mod factor_analysis;
pub mod ica;
pub mod kernel_pca;
pub mod mixture;

use std::fmt;
use std::str::FromStr;

use faer::{Mat, MatRef};

use crate::error::{PcaError, Result};

/// The kind of a fitted model: what `principal fit --model KIND` fits and a model file records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// Principal component analysis ([`crate::model::PcaModel`]).
    #[default]
    Pca,
    /// Factor analysis: PPCA with a noise variance per feature.
    FactorAnalysis,
    /// Bayesian PCA: an ARD prior on the columns of W.
    BayesianPca,
    /// A mixture of probabilistic PCAs.
    Mixture,
    /// Kernel PCA.
    Kernel,
    /// Independent component analysis (FastICA).
    Ica,
}

impl ModelKind {
    /// Every name accepted by [`FromStr`], in the order of the enum.
    pub const NAMES: &'static [&'static str] = &[
        "pca",
        "factor-analysis",
        "bayesian-pca",
        "mixture",
        "kernel",
        "ica",
    ];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Pca => "pca",
            ModelKind::FactorAnalysis => "factor-analysis",
            ModelKind::BayesianPca => "bayesian-pca",
            ModelKind::Mixture => "mixture",
            ModelKind::Kernel => "kernel",
            ModelKind::Ica => "ica",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::NAMES
            .iter()
            .position(|name| *name == s)
            .map(|i| {
                [
                    ModelKind::Pca,
                    ModelKind::FactorAnalysis,
                    ModelKind::BayesianPca,
                    ModelKind::Mixture,
                    ModelKind::Kernel,
                    ModelKind::Ica,
                ][i]
            })
            .ok_or_else(|| {
                format!(
                    "unknown model kind {s:?}; expected one of {}",
                    Self::NAMES.join(", ")
                )
            })
    }
}

/// What may be asked of a fitted model after `fit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Rows of data to the model's latent coordinates.
    Transform,
    /// Latent coordinates back to data.
    Inverse,
    /// The log-likelihood of each row.
    Score,
    /// New rows drawn from the model.
    Sample,
    /// Figures and an HTML page.
    Report,
    /// Missing values filled in.
    Impute,
}

impl Operation {
    /// The command that performs the operation.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Transform => "transform",
            Operation::Inverse => "inverse",
            Operation::Score => "score",
            Operation::Sample => "sample",
            Operation::Report => "report",
            Operation::Impute => "impute",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of an operation a kind does not define.
pub fn unsupported(kind: ModelKind, operation: Operation) -> PcaError {
    PcaError::InvalidModel(format!("a {kind} model does not define {operation}"))
}

/// What the commands ask of any fitted model other than PCA (whose model has its own, richer
/// interface). Every method a kind does not define answers [`unsupported`]; [`supports`]
/// says which they are before any data is read.
///
/// [`supports`]: LatentModel::supports
pub trait LatentModel {
    /// The kind of model.
    fn kind(&self) -> ModelKind;
    /// The number of features of the training data.
    fn n_features(&self) -> usize;
    /// The number of columns [`LatentModel::transform`] gives.
    fn n_components(&self) -> usize;
    /// The prefix of the latent columns' names (`factor1`, `source1`, …).
    fn component_prefix(&self) -> &'static str;
    /// Whether the kind defines `operation`.
    fn supports(&self, operation: Operation) -> bool;
    /// The latent coordinates of each row of `x` (N×D → N×K).
    fn transform(&self, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
        let _ = x;
        Err(unsupported(self.kind(), Operation::Transform))
    }
    /// Data from latent coordinates (N×K → N×D).
    fn inverse_transform(&self, z: MatRef<'_, f64>) -> Result<Mat<f64>> {
        let _ = z;
        Err(unsupported(self.kind(), Operation::Inverse))
    }
    /// The log-likelihood of each row of `x` under the model.
    fn score_samples(&self, x: MatRef<'_, f64>) -> Result<Vec<f64>> {
        let _ = x;
        Err(unsupported(self.kind(), Operation::Score))
    }
    /// `n` rows drawn from the model, seeded.
    fn sample(&self, n: usize, seed: u64) -> Result<Mat<f64>> {
        let _ = (n, seed);
        Err(unsupported(self.kind(), Operation::Sample))
    }
}

/// Checks that `x` has the model's `expected` number of features and only finite values.
pub(crate) fn check_rows(x: MatRef<'_, f64>, expected: usize) -> Result<()> {
    if x.ncols() != expected {
        return Err(PcaError::FeatureMismatch {
            expected,
            found: x.ncols(),
        });
    }
    check_finite(x)
}

/// The first non-finite value of `x`, as the library reports it.
pub(crate) fn check_finite(x: MatRef<'_, f64>) -> Result<()> {
    for j in 0..x.ncols() {
        for i in 0..x.nrows() {
            let value = x[(i, j)];
            if !value.is_finite() {
                return Err(PcaError::NonFinite {
                    row: i,
                    column: j,
                    value,
                });
            }
        }
    }
    Ok(())
}

/// The column means of `x`.
pub(crate) fn column_means(x: MatRef<'_, f64>) -> Vec<f64> {
    let n = x.nrows().max(1) as f64;
    (0..x.ncols())
        .map(|j| (0..x.nrows()).map(|i| x[(i, j)]).sum::<f64>() / n)
        .collect()
}

/// `x` with `mean` subtracted from each row.
pub(crate) fn centred(x: MatRef<'_, f64>, mean: &[f64]) -> Mat<f64> {
    Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] - mean[j])
}

/// Flips each row of `rows` so that its entry of largest magnitude is positive (the first such
/// entry, to a relative 1e-9), the sign convention of every component in principal.
pub(crate) fn flip_rows(mut rows: faer::MatMut<'_, f64>) {
    for i in 0..rows.nrows() {
        let largest = (0..rows.ncols()).fold(0.0f64, |m, j| m.max(rows[(i, j)].abs()));
        let pivot = (0..rows.ncols()).find(|&j| rows[(i, j)].abs() >= largest * (1.0 - 1e-9));
        if let Some(j) = pivot
            && rows[(i, j)] < 0.0
        {
            for j in 0..rows.ncols() {
                rows[(i, j)] = -rows[(i, j)];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_name_round_trips() {
        for name in ModelKind::NAMES {
            let kind: ModelKind = name.parse().unwrap();
            assert_eq!(kind.name(), *name);
        }
        assert!(
            "ppca"
                .parse::<ModelKind>()
                .unwrap_err()
                .contains("factor-analysis")
        );
    }
}
