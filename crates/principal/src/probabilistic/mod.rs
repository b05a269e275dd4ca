//! Probabilistic PCA: a fitted model as the latent-variable model `x = W z + μ + ε`
//! (Tipping & Bishop 1999), which scores data, generates it and fills holes in it.
//!
//! [`ProbabilisticPca`] (from [`PcaModel::probabilistic`]) has everything, each in the units
//! asked for ([`Units`]); [`PcaModel`] itself has scikit-learn's four methods, in the model's
//! units: [`PcaModel::score_samples`], [`PcaModel::score`], [`PcaModel::get_covariance`] and
//! [`PcaModel::get_precision`].
//!
//! Inside: `gaussian` (covariance, precision, likelihood, posterior) at the bottom;
//! `sampling` (ancestral sampling, latent points) and `observed` (rows with missing values:
//! posterior, imputation, codes, likelihood) on it.

use faer::{Mat, MatRef};

use crate::error::Result;
use crate::model::PcaModel;
use crate::probabilistic::gaussian::{ProbabilisticPca, Units};
use crate::real::Real;

pub mod gaussian;
pub mod observed;
pub mod sampling;

impl PcaModel {
    /// The model seen as probabilistic PCA.
    pub fn probabilistic(&self) -> ProbabilisticPca<'_> {
        ProbabilisticPca::new(self)
    }

    /// The log-likelihood of every row of `x` under the probabilistic model, in the model's
    /// units (of the standardized data when it standardizes; see [`Units`] for the original
    /// units). scikit-learn's `score_samples`.
    pub fn score_samples<T: Real>(&self, x: MatRef<'_, T>) -> Result<Vec<f64>> {
        self.probabilistic().score_samples(x, Units::Standardized)
    }

    /// The mean log-likelihood of the rows of `x`, in the model's units. scikit-learn's `score`.
    pub fn score<T: Real>(&self, x: MatRef<'_, T>) -> Result<f64> {
        self.probabilistic().score(x, Units::Standardized)
    }

    /// The model covariance `W Wᵀ + σ² I` (D×D), in the model's units. scikit-learn's
    /// `get_covariance`.
    pub fn get_covariance(&self) -> Mat<f64> {
        self.probabilistic().covariance(Units::Standardized)
    }

    /// The model precision `(W Wᵀ + σ² I)⁻¹` (D×D, by Woodbury), in the model's units.
    /// scikit-learn's `get_precision`.
    pub fn get_precision(&self) -> Result<Mat<f64>> {
        self.probabilistic().precision(Units::Standardized)
    }
}
