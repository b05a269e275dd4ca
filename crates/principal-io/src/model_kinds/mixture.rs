//! A mixture of probabilistic PCAs in a model file: tensors `weights` `[C]`, `means` `[C, D]`,
//! `components` `[C·k, D]` (cluster i's k orthonormal rows at rows i·k …), `explained_variance`
//! `[C, k]`, `noise_variance` `[C]`; metadata `n_samples`, `n_clusters`, `n_components` (k),
//! `log_likelihood` (mean per training row), `iterations`, `converged`.

use principal::faer::Mat;
use principal::{Cluster, MixtureParts, MixturePpca};

use crate::error::Result;
use crate::model_kinds::stored::{Reading, Stored, matrix_bytes, vector_bytes};

pub(crate) fn store(model: &MixturePpca) -> Stored {
    let (c, k, d) = (model.n_clusters(), model.n_components(), model.n_features());
    let clusters = model.clusters();
    let means = Mat::from_fn(c, d, |i, j| clusters[i].mean[j]);
    let components = Mat::from_fn(c * k, d, |r, j| clusters[r / k].components[(r % k, j)]);
    let variance = Mat::from_fn(c, k, |i, m| clusters[i].explained_variance[m]);
    let noise: Vec<f64> = clusters.iter().map(|cl| cl.noise_variance).collect();
    Stored {
        data: vec![
            ("weights", vec![c], vector_bytes(model.weights())),
            ("means", vec![c, d], matrix_bytes(means.as_ref())),
            (
                "components",
                vec![c * k, d],
                matrix_bytes(components.as_ref()),
            ),
            (
                "explained_variance",
                vec![c, k],
                matrix_bytes(variance.as_ref()),
            ),
            ("noise_variance", vec![c], vector_bytes(&noise)),
        ],
        meta: vec![
            ("n_samples", model.n_samples().to_string()),
            ("n_clusters", c.to_string()),
            ("n_components", k.to_string()),
            ("log_likelihood", model.log_likelihood().to_string()),
            ("iterations", model.iterations().to_string()),
            ("converged", model.converged().to_string()),
        ],
    }
}

pub(crate) fn load(file: &Reading<'_>, d: usize) -> Result<MixturePpca> {
    let c: usize = file.value("n_clusters")?;
    let k: usize = file.value("n_components")?;
    let means = file.matrix("means", c, d)?;
    let components = file.matrix("components", c * k, d)?;
    let variance = file.matrix("explained_variance", c, k)?;
    let noise = file.vector("noise_variance", c)?;
    let clusters = (0..c)
        .map(|i| Cluster {
            mean: (0..d).map(|j| means[(i, j)]).collect(),
            components: Mat::from_fn(k, d, |m, j| components[(i * k + m, j)]),
            explained_variance: (0..k).map(|m| variance[(i, m)]).collect(),
            noise_variance: noise[i],
        })
        .collect();
    MixturePpca::from_parts(MixtureParts {
        weights: file.vector("weights", c)?,
        clusters,
        log_likelihood: file.value("log_likelihood")?,
        n_samples: file.value("n_samples")?,
        iterations: file.value("iterations")?,
        converged: file.value("converged")?,
    })
    .map_err(|e| file.invalid(e))
}
