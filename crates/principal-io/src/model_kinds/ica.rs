//! FastICA in a model file: tensors `mean` `[D]`, `components` `[K, D]` (the unmixing),
//! `mixing` `[D, K]`; metadata `n_samples`, `n_components`, `fun`, `seed`, `n_iter`,
//! `converged`, `change` (the last step's change), `tolerance`.

use principal::{Contrast, FastIca, FastIcaParts, LatentModel};

use crate::error::Result;
use crate::model_kinds::stored::{Reading, Stored, matrix_bytes, vector_bytes};

pub(crate) fn store(model: &FastIca) -> Stored {
    let (k, d) = (model.n_components(), model.n_features());
    Stored {
        data: vec![
            ("mean", vec![d], vector_bytes(model.mean())),
            ("components", vec![k, d], matrix_bytes(model.components())),
            ("mixing", vec![d, k], matrix_bytes(model.mixing())),
        ],
        meta: vec![
            ("n_samples", model.n_samples().to_string()),
            ("n_components", k.to_string()),
            ("fun", model.fun().name().to_owned()),
            ("seed", model.seed().to_string()),
            ("n_iter", model.n_iter().to_string()),
            ("converged", model.converged().to_string()),
            ("change", model.change().to_string()),
            ("tolerance", model.tolerance().to_string()),
        ],
    }
}

pub(crate) fn load(file: &Reading<'_>, d: usize) -> Result<FastIca> {
    let k: usize = file.value("n_components")?;
    FastIca::from_parts(FastIcaParts {
        components: file.matrix("components", k, d)?,
        mixing: file.matrix("mixing", d, k)?,
        mean: file.vector("mean", d)?,
        n_samples: file.value("n_samples")?,
        fun: file.named("fun", str::parse::<Contrast>)?,
        seed: file.value("seed")?,
        iterations: file.value("n_iter")?,
        converged: file.value("converged")?,
        change: file.value("change")?,
        tolerance: file.value("tolerance")?,
    })
    .map_err(|e| file.invalid(e))
}
