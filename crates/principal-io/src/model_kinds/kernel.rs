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
    let pre_image = if file.meta.contains_key("pre_image") {
        file.named("pre_image", str::parse::<PreImage>)?
    } else {
        PreImage::Learn
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

#[cfg(test)]
mod tests {
    use principal::faer::Mat;
    use principal::{KernelPcaParams, PreImage};
    use safetensors::tensor::SafeTensors;

    use crate::model_kinds::{AnyModel, load_any_model, save_any_model};

    /// Both settings go through a file unchanged, and a file written before `pre_image`
    /// existed (the map stored, no such key) reads as the map learnt.
    #[test]
    fn both_settings_and_files_from_before_the_setting_read_back() {
        let x = Mat::from_fn(30, 3, |i, j| ((i * 5 + j * 7) % 9) as f64 * 0.4 + j as f64);
        let dir = tempfile::tempdir().unwrap();
        for pre_image in [PreImage::Learn, PreImage::Skip] {
            let model = KernelPcaParams {
                pre_image,
                ..KernelPcaParams::new(2)
            }
            .fit(x.as_ref())
            .unwrap();
            let path = dir.path().join(format!("{pre_image}.model"));
            save_any_model(&path, &AnyModel::Kernel(model.clone()), None).unwrap();
            assert_eq!(
                load_any_model(&path).unwrap().model,
                AnyModel::Kernel(model.clone())
            );
            let bytes = std::fs::read(&path).unwrap();
            let tensors = SafeTensors::deserialize(&bytes).unwrap();
            let names = tensors.names();
            assert_eq!(names.contains(&"dual_coef"), pre_image == PreImage::Learn);
            if pre_image == PreImage::Skip {
                continue;
            }
            // The same file without the key, as an older principal wrote it.
            let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
            let mut meta = header.metadata().clone().unwrap();
            assert_eq!(meta.remove("pre_image").as_deref(), Some("learn"));
            let older = safetensors::serialize(tensors.tensors(), Some(meta)).unwrap();
            let old_path = dir.path().join("older.model");
            std::fs::write(&old_path, older).unwrap();
            assert_eq!(
                load_any_model(&old_path).unwrap().model,
                AnyModel::Kernel(model)
            );
        }
    }
}
