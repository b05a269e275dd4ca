//! Kernel PCA in a model file. It keeps the training rows, which transforming new rows needs:
//! tensors `training` `[N, D]`, `eigenvalues` `[K]`, `eigenvectors` `[N, K]`, `column_means`
//! `[N]` (of the training kernel matrix), `training_codes` `[N, K]`, `dual_coef` `[N, D]` (the
//! pre-image map); metadata `n_samples`, `n_components`, `kernel`, `gamma` (resolved),
//! `degree`, `coef0`, `alpha`, `all_mean`.

use principal::{Kernel, KernelFunction, KernelPca, KernelPcaParts, LatentModel};

use crate::error::Result;
use crate::model_kinds::stored::{Reading, Stored, matrix_bytes, vector_bytes};

pub(crate) fn store(model: &KernelPca) -> Stored {
    let (n, k, d) = (model.n_samples(), model.n_components(), model.n_features());
    let parts = model.to_parts();
    Stored {
        data: vec![
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
            (
                "dual_coef",
                vec![n, d],
                matrix_bytes(parts.dual_coef.as_ref()),
            ),
        ],
        meta: vec![
            ("n_samples", n.to_string()),
            ("n_components", k.to_string()),
            ("kernel", parts.kernel.function.name().to_owned()),
            ("gamma", parts.kernel.gamma.to_string()),
            ("degree", parts.kernel.degree.to_string()),
            ("coef0", parts.kernel.coef0.to_string()),
            ("alpha", parts.alpha.to_string()),
            ("all_mean", parts.all_mean.to_string()),
        ],
    }
}

pub(crate) fn load(file: &Reading<'_>, d: usize) -> Result<KernelPca> {
    let n: usize = file.value("n_samples")?;
    let k: usize = file.value("n_components")?;
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
        dual_coef: file.matrix("dual_coef", n, d)?,
    })
    .map_err(|e| file.invalid(e))
}
