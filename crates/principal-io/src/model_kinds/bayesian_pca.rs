//! Bayesian PCA in a model file: tensors `mean` `[D]`, `components` `[K, D]` (the kept columns
//! of W as rows), `alpha` `[K_max]` (the kept columns' precisions, then +∞ for each switched
//! off); metadata `n_samples`, `n_components` (K, kept), `max_components` (K_max),
//! `noise_variance`, `log_likelihood` (mean per training row), `iterations`, `converged`.

use principal::{BayesianPca, BayesianPcaParts};

use crate::error::Result;
use crate::model_kinds::stored::{Reading, Stored, matrix_bytes, vector_bytes};

pub(crate) fn store(model: &BayesianPca) -> Stored {
    let (k, d) = (model.n_components(), model.n_features());
    Stored {
        data: vec![
            ("mean", vec![d], vector_bytes(model.mean())),
            ("components", vec![k, d], matrix_bytes(model.components())),
            (
                "alpha",
                vec![model.max_components()],
                vector_bytes(model.alpha()),
            ),
        ],
        meta: vec![
            ("n_samples", model.n_samples().to_string()),
            ("n_components", k.to_string()),
            ("max_components", model.max_components().to_string()),
            ("noise_variance", model.noise_variance().to_string()),
            ("log_likelihood", model.log_likelihood().to_string()),
            ("iterations", model.iterations().to_string()),
            ("converged", model.converged().to_string()),
        ],
    }
}

pub(crate) fn load(file: &Reading<'_>, d: usize) -> Result<BayesianPca> {
    let k: usize = file.value("n_components")?;
    let max: usize = file.value("max_components")?;
    BayesianPca::from_parts(BayesianPcaParts {
        mean: file.vector("mean", d)?,
        components: file.matrix("components", k, d)?,
        alpha: file.vector("alpha", max)?,
        noise_variance: file.value("noise_variance")?,
        log_likelihood: file.value("log_likelihood")?,
        n_samples: file.value("n_samples")?,
        iterations: file.value("iterations")?,
        converged: file.value("converged")?,
    })
    .map_err(|e| file.invalid(e))
}
