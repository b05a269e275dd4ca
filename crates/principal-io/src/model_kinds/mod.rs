//! Model files of every kind: PCA's as `model_file` writes them (format version 1, no `model`
//! key: the bytes of a PCA model never changed), and the kinds beyond PCA in the same
//! safetensors layout with format version 2 and the metadata key `model` = the kind
//! (`factor-analysis`, `kernel`, `ica`). A principal that knows only version 1 refuses a file
//! of another kind by its version instead of misreading it; a file without `model` is PCA.
//!
//! Every kind's tensors and keys are in its own module; [`AnyModel`] has one variant per kind
//! that can be stored, and each `match` over it has one arm per kind.

mod bayesian_pca;
mod factor_analysis;
mod ica;
mod kernel;
mod mixture;
mod stored;

use stored::Reading;

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::str::FromStr;

use principal::{
    BayesianPca, FactorAnalysis, FastIca, KernelPca, LatentModel, MixturePpca, ModelKind, PcaModel,
};
use safetensors::tensor::SafeTensors;

use crate::error::{IoError, Result};
use crate::model_file::{SavedModel, load_model, save_model, serialize_tensors};
use crate::write::write_atomically;

/// The format version of the files of the kinds beyond PCA.
pub const KINDS_FORMAT_VERSION: u32 = 2;

/// A fitted model of any kind.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyModel {
    /// Principal component analysis.
    Pca(PcaModel),
    /// Factor analysis.
    FactorAnalysis(FactorAnalysis),
    /// Kernel PCA.
    Kernel(KernelPca),
    /// FastICA.
    Ica(FastIca),
    /// Bayesian PCA.
    BayesianPca(BayesianPca),
    /// A mixture of probabilistic PCAs.
    Mixture(MixturePpca),
}

impl AnyModel {
    /// The kind of the model.
    pub fn kind(&self) -> ModelKind {
        match self {
            AnyModel::Pca(_) => ModelKind::Pca,
            AnyModel::FactorAnalysis(_) => ModelKind::FactorAnalysis,
            AnyModel::Kernel(_) => ModelKind::Kernel,
            AnyModel::Ica(_) => ModelKind::Ica,
            AnyModel::BayesianPca(_) => ModelKind::BayesianPca,
            AnyModel::Mixture(_) => ModelKind::Mixture,
        }
    }

    /// The model through the interface of the kinds beyond PCA; `None` for PCA, whose model
    /// the commands use directly.
    pub fn latent(&self) -> Option<&dyn LatentModel> {
        match self {
            AnyModel::Pca(_) => None,
            AnyModel::FactorAnalysis(m) => Some(m),
            AnyModel::Kernel(m) => Some(m),
            AnyModel::Ica(m) => Some(m),
            AnyModel::BayesianPca(m) => Some(m),
            AnyModel::Mixture(m) => Some(m),
        }
    }

    /// The number of features of the training data.
    pub fn n_features(&self) -> usize {
        match self {
            AnyModel::Pca(m) => m.n_features(),
            AnyModel::FactorAnalysis(m) => m.n_features(),
            AnyModel::Kernel(m) => m.n_features(),
            AnyModel::Ica(m) => m.n_features(),
            AnyModel::BayesianPca(m) => m.n_features(),
            AnyModel::Mixture(m) => m.n_features(),
        }
    }
}

/// A model of any kind read from a file, with its feature names.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedAnyModel {
    /// The fitted model.
    pub model: AnyModel,
    /// Names of the training columns, when they were known.
    pub feature_names: Option<Vec<String>>,
}

/// Saves a model of any kind to `path`, atomically.
pub fn save_any_model(
    path: &Path,
    model: &AnyModel,
    feature_names: Option<&[String]>,
) -> Result<()> {
    let stored = match model {
        AnyModel::Pca(m) => return save_model(path, m, feature_names),
        AnyModel::FactorAnalysis(m) => factor_analysis::store(m),
        AnyModel::Kernel(m) => kernel::store(m),
        AnyModel::Ica(m) => ica::store(m),
        AnyModel::BayesianPca(m) => bayesian_pca::store(m),
        AnyModel::Mixture(m) => mixture::store(m),
    };
    let d = model.n_features();
    IoError::check_name_count(path, feature_names, d)?;
    let mut meta: HashMap<String, String> = stored
        .meta
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    for (key, value) in [
        ("format", crate::model_file::FORMAT.to_owned()),
        ("format_version", KINDS_FORMAT_VERSION.to_string()),
        ("model", model.kind().name().to_owned()),
        ("n_features", d.to_string()),
        ("principal_version", env!("CARGO_PKG_VERSION").to_owned()),
    ] {
        meta.insert(key.to_owned(), value);
    }
    if let Some(names) = feature_names {
        meta.insert(
            "feature_names".into(),
            serde_json::to_string(names).unwrap_or_default(),
        );
    }
    let bytes = serialize_tensors(path, &stored.data, meta)?;
    write_atomically(path, |w| w.write_all(&bytes))
}

/// The kind a model file records (PCA when it records none), from its header alone.
pub fn model_kind(path: &Path) -> Result<ModelKind> {
    let bytes = fs::read(path).map_err(|source| IoError::Open {
        path: path.to_owned(),
        source,
    })?;
    let (_, header) = SafeTensors::read_metadata(&bytes).map_err(|e| IoError::NotAModel {
        path: path.to_owned(),
        detail: format!("not a safetensors file: {e}"),
    })?;
    kind_of(path, &header.metadata().clone().unwrap_or_default())
}

fn kind_of(path: &Path, meta: &HashMap<String, String>) -> Result<ModelKind> {
    match meta.get("model") {
        None => Ok(ModelKind::Pca),
        Some(text) => ModelKind::from_str(text).map_err(|e| IoError::NotAModel {
            path: path.to_owned(),
            detail: format!("metadata \"model\": {e}"),
        }),
    }
}

/// Loads a model of any kind saved by [`save_any_model`] (or [`save_model`]), checking its
/// format, version, tensors and values.
pub fn load_any_model(path: &Path) -> Result<SavedAnyModel> {
    let bytes = fs::read(path).map_err(|source| IoError::Open {
        path: path.to_owned(),
        source,
    })?;
    let not_model = |detail: String| IoError::NotAModel {
        path: path.to_owned(),
        detail,
    };
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| not_model(format!("not a safetensors file: {e}")))?;
    let meta = header.metadata().clone().unwrap_or_default();
    let kind = kind_of(path, &meta)?;
    if kind == ModelKind::Pca {
        // A weighted fit's column name (describe reads it through load_model) is not part of
        // what the commands that dispatch on the kind need.
        let SavedModel {
            model,
            feature_names,
            ..
        } = load_model(path)?;
        return Ok(SavedAnyModel {
            model: AnyModel::Pca(model),
            feature_names,
        });
    }
    if meta.get("format").map(String::as_str) != Some(crate::model_file::FORMAT) {
        return Err(not_model(format!(
            "its format is {:?}, not {:?}",
            meta.get("format"),
            crate::model_file::FORMAT
        )));
    }
    let version = meta.get("format_version").cloned().unwrap_or_default();
    if version != KINDS_FORMAT_VERSION.to_string() {
        return Err(IoError::ModelVersion {
            path: path.to_owned(),
            found: version,
            supported: KINDS_FORMAT_VERSION,
        });
    }
    let tensors =
        SafeTensors::deserialize(&bytes).map_err(|e| not_model(format!("damaged tensors: {e}")))?;
    let reading = Reading {
        path,
        meta: &meta,
        tensors: &tensors,
    };
    let d: usize = reading.value("n_features")?;
    let feature_names =
        crate::model_file::feature_names_of(&meta, d).map_err(|e| reading.not_model(e))?;
    let model = match kind {
        ModelKind::FactorAnalysis => AnyModel::FactorAnalysis(factor_analysis::load(&reading, d)?),
        ModelKind::Kernel => AnyModel::Kernel(kernel::load(&reading, d)?),
        ModelKind::Ica => AnyModel::Ica(ica::load(&reading, d)?),
        ModelKind::BayesianPca => AnyModel::BayesianPca(bayesian_pca::load(&reading, d)?),
        ModelKind::Mixture => AnyModel::Mixture(mixture::load(&reading, d)?),
        ModelKind::Pca => unreachable!("PCA files are read by load_model above"),
    };
    Ok(SavedAnyModel {
        model,
        feature_names,
    })
}
