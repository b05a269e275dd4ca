//! Kernel PCA in a model file. It keeps the training rows, which transforming new rows needs:
//! tensors `training` `[N, D]`, `eigenvalues` `[K]`, `eigenvectors` `[N, K]`, `column_means`
//! `[N]` (of the training kernel matrix), `training_codes` `[N, K]`, `dual_coef` `[N, D]` (the
//! pre-image map, absent when it was skipped); metadata `n_samples`, `n_components`, `kernel`,
//! `gamma` (resolved), `degree`, `coef0`, `alpha`, `all_mean`, `pre_image` (`learn` or `skip`;
//! files written before it have `dual_coef` and no `pre_image`).

use principal::{Kernel, KernelFunction, KernelPca, KernelPcaParts, LatentModel, PreImage};

use crate::error::Result;
use crate::model_kinds::stored::{Reading, Stored, matrix_bytes, vector_bytes};

pub(crate) fn store(model: &KernelPca) -> Stored {
    let (n, k, d) = (model.n_samples(), model.n_components(), model.n_features());
    let parts = model.to_parts();
    let mut data = vec![
        (
            "training",
            vec![n, d],
            matrix_bytes(parts.training.as_ref()),
        ),
        ("eigenvalues", vec![k], vector_bytes(&parts.eigenvalues)),
        (
            "eigenvectors",
            vec![n, k],
            matrix_bytes(parts.eigenvectors.as_ref()),
        ),
        ("column_means", vec![n], vector_bytes(&parts.column_means)),
        (
            "training_codes",
            vec![n, k],
            matrix_bytes(parts.training_codes.as_ref()),
        ),
    ];
    if let Some(dual_coef) = &parts.dual_coef {
        data.push(("dual_coef", vec![n, d], matrix_bytes(dual_coef.as_ref())));
    }
    Stored {
        data,
        meta: vec![
            ("n_samples", n.to_string()),
            ("n_components", k.to_string()),
            ("kernel", parts.kernel.function.name().to_owned()),
            ("gamma", parts.kernel.gamma.to_string()),
            ("degree", parts.kernel.degree.to_string()),
            ("coef0", parts.kernel.coef0.to_string()),
            ("alpha", parts.alpha.to_string()),
            ("all_mean", parts.all_mean.to_string()),
            ("pre_image", model.pre_image().name().to_owned()),
        ],
    }
}

pub(crate) fn load(file: &Reading<'_>, d: usize) -> Result<KernelPca> {
    let n: usize = file.value("n_samples")?;
    let k: usize = file.value("n_components")?;
    let pre_image = match file.meta.contains_key("pre_image") {
        true => file.named("pre_image", str::parse::<PreImage>)?,
        false => PreImage::Learn,
    };
    KernelPca::from_parts(KernelPcaParts {
        kernel: Kernel {
            function: file.named("kernel", str::parse::<KernelFunction>)?,
            gamma: file.value("gamma")?,
            degree: file.value("degree")?,
            coef0: file.value("coef0")?,
        },
        alpha: file.value("alpha")?,
        eigenvalues: file.vector("eigenvalues", k)?,
        eigenvectors: file.matrix("eigenvectors", n, k)?,
        training: file.matrix("training", n, d)?,
        column_means: file.vector("column_means", n)?,
        all_mean: file.value("all_mean")?,
        training_codes: file.matrix("training_codes", n, k)?,
        dual_coef: match pre_image {
            PreImage::Learn => Some(file.matrix("dual_coef", n, d)?),
            PreImage::Skip => None,
        },
    })
    .map_err(|e| file.invalid(e))
}
