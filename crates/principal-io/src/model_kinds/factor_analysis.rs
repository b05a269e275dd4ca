//! Factor analysis in a model file: tensors `mean` `[D]`, `components` `[K, D]` (the loadings,
//! rotated when `rotation` is not `none`), `noise_variance` `[D]`, `log_likelihood_history`
//! `[iterations]`; metadata `n_samples`, `n_components`, `rotation`, `log_likelihood` (mean
//! per training row), `converged`, `distance` (ψ's estimated relative distance to EM's fixed
//! point when it stopped), `tolerance`.

use principal::{FactorAnalysis, FactorAnalysisParts, LatentModel, Rotation};

use crate::error::Result;
use crate::model_kinds::stored::{Reading, Stored, matrix_bytes, vector_bytes};

pub(crate) fn store(model: &FactorAnalysis) -> Stored {
    let (k, d) = (model.n_components(), model.n_features());
    let history = model.log_likelihood_history();
    Stored {
        data: vec![
            ("mean", vec![d], vector_bytes(model.mean())),
            ("components", vec![k, d], matrix_bytes(model.components())),
            (
                "noise_variance",
                vec![d],
                vector_bytes(model.noise_variance()),
            ),
            (
                "log_likelihood_history",
                vec![history.len()],
                vector_bytes(history),
            ),
        ],
        meta: vec![
            ("n_samples", model.n_samples().to_string()),
            ("n_components", k.to_string()),
            ("rotation", model.rotation().name().to_owned()),
            ("log_likelihood", model.log_likelihood().to_string()),
            ("converged", model.converged().to_string()),
            ("distance", model.distance().to_string()),
            ("tolerance", model.tolerance().to_string()),
        ],
    }
}

pub(crate) fn load(file: &Reading<'_>, d: usize) -> Result<FactorAnalysis> {
    let k: usize = file.value("n_components")?;
    let iterations = file.length("log_likelihood_history")?;
    FactorAnalysis::from_parts(FactorAnalysisParts {
        components: file.matrix("components", k, d)?,
        noise_variance: file.vector("noise_variance", d)?,
        mean: file.vector("mean", d)?,
        n_samples: file.value("n_samples")?,
        rotation: file.named("rotation", str::parse::<Rotation>)?,
        log_likelihood: file.value("log_likelihood")?,
        log_likelihood_history: file.vector("log_likelihood_history", iterations)?,
        converged: file.value("converged")?,
        distance: file.value("distance")?,
        tolerance: file.value("tolerance")?,
    })
    .map_err(|e| file.invalid(e))
}
