//! Model files: safetensors, so that Python reads them with `safetensors.numpy.load_file` and
//! no code of ours.
//!
//! Tensors (F64, little-endian, row-major): `mean` `[D]`, `components` `[M, D]`,
//! `explained_variance`, `explained_variance_ratio`, `singular_values` `[M]`, and `scale` `[D]`
//! only when the model standardises. Metadata (strings): `format` = `principal-pca`,
//! `format_version`, `n_samples`, `n_features`, `n_components`, `ddof`, `standardize`,
//! `solver`, `noise_variance`, `total_variance` (printed with `{}`, which round-trips exactly),
//! `zero_variance_features` (JSON list), `feature_names` (JSON list, when given), `row_weights`
//! (the column of the training data holding the rows' weights, for a weighted fit),
//! `principal_version`, for iterative solvers `iteration_passes`,
//! `iteration_error_estimate` and `iteration_converged`, and for a fit with missing values
//! `missing_values` = `em` with `missing_observed`, `missing_count`, `missing_empty_rows`,
//! `missing_iterations`, `missing_log_likelihood`, `missing_change`, `missing_error_estimate`
//! (each absent when unknown), `missing_converged`, and the fit's passes:
//! `missing_log_likelihood_history` (one number per pass, separated by spaces) and
//! `missing_pass_points` (one letter per pass: `e` an EM step, `x` a kept extrapolation, `r` a
//! rejected one; both absent in files written before them, read as no passes); for a model
//! that whitens its codes `whitening` = `unit-variance` (absent: `none`, as in files written
//! before whitening existed); for a model whose components were rotated to match another's
//! (`principal align --rotate`) `basis` = `rotated` (absent: `eigenvectors`). Readers that do not know a key ignore it, so these optional keys
//! leave the format version at 1.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::str::FromStr;

use faer::Mat;
use principal::{
    Basis, IterationReport, MissingValueReport, ModelParts, PassPoint, PcaModel, Solver, Whitening,
};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use crate::error::{IoError, Result};
use crate::write::write_atomically;

/// The version of the model file layout this crate writes and reads.
pub const MODEL_FORMAT_VERSION: u32 = 1;
pub(crate) const FORMAT: &str = "principal-pca";

/// A model read from a file, with the feature names it was saved with.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedModel {
    /// The fitted model.
    pub model: PcaModel,
    /// Names of the training columns, when they were known.
    pub feature_names: Option<Vec<String>>,
    /// The column of the training data that held the rows' weights (`fit --row-weights`),
    /// when the fit was weighted.
    pub row_weights: Option<String>,
}

fn le_bytes(values: impl IntoIterator<Item = f64>) -> Vec<u8> {
    values.into_iter().flat_map(f64::to_le_bytes).collect()
}

/// Saves `model` (and the names of its features, when known) to `path`, atomically.
pub fn save_model(path: &Path, model: &PcaModel, feature_names: Option<&[String]>) -> Result<()> {
    save_weighted_model(path, model, feature_names, None)
}

/// [`save_model`] for a model fitted with row weights, recording the column that held them
/// (metadata `row_weights`).
pub fn save_weighted_model(
    path: &Path,
    model: &PcaModel,
    feature_names: Option<&[String]>,
    row_weights: Option<&str>,
) -> Result<()> {
    let (m, d) = (model.n_components(), model.n_features());
    IoError::check_name_count(path, feature_names, d)?;
    let components = model.components();
    let mut data: Vec<(&str, Vec<usize>, Vec<u8>)> = vec![
        ("mean", vec![d], le_bytes(model.mean().iter().copied())),
        (
            "components",
            vec![m, d],
            le_bytes((0..m).flat_map(|i| (0..d).map(move |j| components[(i, j)]))),
        ),
        (
            "explained_variance",
            vec![m],
            le_bytes(model.explained_variance().iter().copied()),
        ),
        (
            "explained_variance_ratio",
            vec![m],
            le_bytes(model.explained_variance_ratio().iter().copied()),
        ),
        (
            "singular_values",
            vec![m],
            le_bytes(model.singular_values().iter().copied()),
        ),
    ];
    if let Some(scale) = model.scale() {
        data.push(("scale", vec![d], le_bytes(scale.iter().copied())));
    }
    let mut meta: HashMap<String, String> = [
        ("format", FORMAT.to_owned()),
        ("format_version", MODEL_FORMAT_VERSION.to_string()),
        ("n_samples", model.n_samples().to_string()),
        ("n_features", d.to_string()),
        ("n_components", m.to_string()),
        ("ddof", model.ddof().to_string()),
        ("standardize", model.scale().is_some().to_string()),
        ("solver", model.solver().name().to_owned()),
        ("noise_variance", model.noise_variance().to_string()),
        ("total_variance", model.total_variance().to_string()),
        (
            "zero_variance_features",
            serde_json::to_string(model.zero_variance_features()).unwrap_or_default(),
        ),
        ("principal_version", env!("CARGO_PKG_VERSION").to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if let Some(column) = row_weights {
        meta.insert("row_weights".into(), column.to_owned());
    }
    if let Some(names) = feature_names {
        meta.insert(
            "feature_names".into(),
            serde_json::to_string(names).unwrap_or_default(),
        );
    }
    if let Some(report) = model.iteration_report() {
        meta.insert("iteration_passes".into(), report.passes.to_string());
        meta.insert(
            "iteration_error_estimate".into(),
            report.error_estimate.to_string(),
        );
        meta.insert("iteration_converged".into(), report.converged.to_string());
    }
    if let Some(report) = model.missing_values() {
        for (key, value) in [
            ("missing_values", "em".to_owned()),
            ("missing_observed", report.observed.to_string()),
            ("missing_count", report.missing.to_string()),
            ("missing_empty_rows", report.empty_rows.to_string()),
            ("missing_iterations", report.iterations.to_string()),
            ("missing_log_likelihood", report.log_likelihood.to_string()),
            ("missing_converged", report.converged.to_string()),
            (
                "missing_log_likelihood_history",
                report
                    .log_likelihood_history
                    .iter()
                    .map(f64::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            (
                "missing_pass_points",
                report.pass_points.iter().map(|&p| pass_letter(p)).collect(),
            ),
        ] {
            meta.insert(key.into(), value);
        }
        if let Some(change) = report.change {
            meta.insert("missing_change".into(), change.to_string());
        }
        if let Some(estimate) = report.error_estimate {
            meta.insert("missing_error_estimate".into(), estimate.to_string());
        }
    }
    // Written only when whitening, so that other models keep the bytes they always had.
    if model.whitening() != Whitening::None {
        meta.insert("whitening".into(), model.whitening().name().to_owned());
    }
    // Written only when rotated, as whitening.
    if model.basis() != Basis::Eigenvectors {
        meta.insert("basis".into(), model.basis().name().to_owned());
    }
    let bytes = serialize_tensors(path, &data, meta)?;
    write_atomically(path, |w| w.write_all(&bytes))
}

/// A safetensors file of F64 tensors `(name, shape, little-endian bytes)` and `meta`, with its
/// header's keys sorted (the same content is then the same bytes); `path` names the file in
/// errors.
pub(crate) fn serialize_tensors(
    path: &Path,
    data: &[(&str, Vec<usize>, Vec<u8>)],
    meta: HashMap<String, String>,
) -> Result<Vec<u8>> {
    let mut views = Vec::with_capacity(data.len());
    for (name, shape, bytes) in data {
        let view =
            TensorView::new(Dtype::F64, shape.clone(), bytes).map_err(|e| IoError::Write {
                path: path.to_owned(),
                source: std::io::Error::other(e.to_string()),
            })?;
        views.push((*name, view));
    }
    let bytes = safetensors::serialize(views, Some(meta)).map_err(|e| IoError::Write {
        path: path.to_owned(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(canonical_header(bytes))
}

/// The letter of a pass's starting point in `missing_pass_points`.
fn pass_letter(point: PassPoint) -> char {
    match point {
        PassPoint::EmStep => 'e',
        PassPoint::Extrapolation => 'x',
        PassPoint::RejectedExtrapolation => 'r',
    }
}

/// The pass point of a letter of `missing_pass_points`.
fn pass_point(letter: char) -> Option<PassPoint> {
    match letter {
        'e' => Some(PassPoint::EmStep),
        'x' => Some(PassPoint::Extrapolation),
        'r' => Some(PassPoint::RejectedExtrapolation),
        _ => None,
    }
}

/// The F64 tensor `name` of `tensors`, checked to have `shape`; the reason when it is missing
/// or is not that.
pub(crate) fn f64_tensor(
    tensors: &SafeTensors<'_>,
    name: &str,
    shape: &[usize],
) -> std::result::Result<Vec<f64>, String> {
    let view = tensors
        .tensor(name)
        .map_err(|_| format!("it has no tensor {name:?}"))?;
    if view.dtype() != Dtype::F64 {
        return Err(format!("tensor {name:?} is {:?}, not F64", view.dtype()));
    }
    if view.shape() != shape {
        return Err(format!(
            "tensor {name:?} has shape {:?} but the metadata says {shape:?}",
            view.shape()
        ));
    }
    Ok(view
        .data()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// The same file with its JSON header's keys sorted (the metadata is a hash map, so its order
/// changes from run to run): the same model is then the same bytes. Offsets in the header are
/// relative to the data, so only the header and its length change; the padding to 8 bytes that
/// safetensors keeps is restored with spaces.
fn canonical_header(bytes: Vec<u8>) -> Vec<u8> {
    let Some(len) = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
    else {
        return bytes;
    };
    let Some(header) = bytes.get(8..8 + len) else {
        return bytes;
    };
    // serde_json's map is ordered by key (no `preserve_order` feature here).
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(header) else {
        return bytes;
    };
    let mut text = value.to_string().into_bytes();
    while text.len() % 8 != 0 {
        text.push(b' ');
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + len..]);
    out
}

/// Loads a model saved by [`save_model`], checking the format, its version, every tensor's
/// type and shape, and every scalar.
pub fn load_model(path: &Path) -> Result<SavedModel> {
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
    match meta.get("format") {
        Some(f) if f == FORMAT => {}
        Some(f) => return Err(not_model(format!("its format is {f:?}, not {FORMAT:?}"))),
        None => {
            return Err(not_model(
                "a safetensors file without the principal format tag".into(),
            ));
        }
    }
    if let Some(kind) = meta.get("model").filter(|kind| *kind != "pca") {
        return Err(not_model(format!(
            "it holds a {kind} model, not a PCA model; this reads PCA models only"
        )));
    }
    let Some(version) = meta.get("format_version") else {
        return Err(not_model("the metadata has no \"format_version\"".into()));
    };
    if *version != MODEL_FORMAT_VERSION.to_string() {
        return Err(IoError::ModelVersion {
            path: path.to_owned(),
            found: version.clone(),
            supported: MODEL_FORMAT_VERSION,
        });
    }
    let tensors =
        SafeTensors::deserialize(&bytes).map_err(|e| not_model(format!("damaged tensors: {e}")))?;

    let scalar = |key: &str| -> Result<&str> {
        meta.get(key)
            .map(String::as_str)
            .ok_or_else(|| not_model(format!("the metadata has no {key:?}")))
    };
    fn parse<T: FromStr>(path: &Path, key: &str, text: &str) -> Result<T> {
        text.parse().map_err(|_| IoError::NotAModel {
            path: path.to_owned(),
            detail: format!(
                "metadata {key:?} = {text:?} is not a valid {}",
                std::any::type_name::<T>()
            ),
        })
    }
    let n_samples: usize = parse(path, "n_samples", scalar("n_samples")?)?;
    let d: usize = parse(path, "n_features", scalar("n_features")?)?;
    let m: usize = parse(path, "n_components", scalar("n_components")?)?;
    let ddof: usize = parse(path, "ddof", scalar("ddof")?)?;
    let standardize: bool = parse(path, "standardize", scalar("standardize")?)?;
    let solver = Solver::from_str(scalar("solver")?)
        .map_err(|e| not_model(format!("metadata \"solver\": {e}")))?;
    let noise_variance: f64 = parse(path, "noise_variance", scalar("noise_variance")?)?;
    let total_variance: f64 = parse(path, "total_variance", scalar("total_variance")?)?;
    let zero_variance_features: Vec<usize> =
        serde_json::from_str(scalar("zero_variance_features")?).map_err(|e| {
            not_model(format!(
                "metadata \"zero_variance_features\" is not a JSON list of indices: {e}"
            ))
        })?;
    let feature_names = feature_names_of(&meta, d).map_err(not_model)?;
    let iteration_report = match meta.get("iteration_passes") {
        None => None,
        Some(passes) => Some(IterationReport {
            passes: parse(path, "iteration_passes", passes)?,
            error_estimate: parse(
                path,
                "iteration_error_estimate",
                scalar("iteration_error_estimate")?,
            )?,
            converged: parse(path, "iteration_converged", scalar("iteration_converged")?)?,
        }),
    };

    let missing_values = match meta.get("missing_values").map(String::as_str) {
        None => None,
        Some("em") => Some(MissingValueReport {
            observed: parse(path, "missing_observed", scalar("missing_observed")?)?,
            missing: parse(path, "missing_count", scalar("missing_count")?)?,
            empty_rows: parse(path, "missing_empty_rows", scalar("missing_empty_rows")?)?,
            iterations: parse(path, "missing_iterations", scalar("missing_iterations")?)?,
            log_likelihood: parse(
                path,
                "missing_log_likelihood",
                scalar("missing_log_likelihood")?,
            )?,
            change: match meta.get("missing_change") {
                None => None,
                Some(text) => Some(parse(path, "missing_change", text)?),
            },
            error_estimate: match meta.get("missing_error_estimate") {
                None => None,
                Some(text) => Some(parse(path, "missing_error_estimate", text)?),
            },
            converged: parse(path, "missing_converged", scalar("missing_converged")?)?,
            log_likelihood_history: match meta.get("missing_log_likelihood_history") {
                None => Vec::new(),
                Some(text) => text
                    .split_whitespace()
                    .map(|v| parse(path, "missing_log_likelihood_history", v))
                    .collect::<Result<_>>()?,
            },
            pass_points: match meta.get("missing_pass_points") {
                None => Vec::new(),
                Some(text) => text
                    .chars()
                    .map(|c| {
                        pass_point(c).ok_or_else(|| {
                            not_model(format!(
                                "metadata \"missing_pass_points\" has {c:?}, not e, x or r"
                            ))
                        })
                    })
                    .collect::<Result<_>>()?,
            },
        }),
        Some(other) => {
            return Err(not_model(format!(
                "metadata \"missing_values\" = {other:?} is not \"em\""
            )));
        }
    };
    if let Some(report) = &missing_values {
        let (values, points) = (
            report.log_likelihood_history.len(),
            report.pass_points.len(),
        );
        if values != points {
            return Err(not_model(format!(
                "metadata \"missing_log_likelihood_history\" has {values} passes and \
                 \"missing_pass_points\" {points}"
            )));
        }
    }

    let whitening = match meta.get("whitening") {
        None => Whitening::None,
        Some(text) => Whitening::from_str(text)
            .map_err(|e| not_model(format!("metadata \"whitening\": {e}")))?,
    };

    let basis = match meta.get("basis") {
        None => Basis::Eigenvectors,
        Some(text) => {
            Basis::from_str(text).map_err(|e| not_model(format!("metadata \"basis\": {e}")))?
        }
    };

    let tensor = |name: &str, shape: &[usize]| -> Result<Vec<f64>> {
        f64_tensor(&tensors, name, shape).map_err(not_model)
    };
    let mean = tensor("mean", &[d])?;
    let flat = tensor("components", &[m, d])?;
    let components = Mat::from_fn(m, d, |i, j| flat[i * d + j]);
    let explained_variance = tensor("explained_variance", &[m])?;
    let explained_variance_ratio = tensor("explained_variance_ratio", &[m])?;
    let singular_values = tensor("singular_values", &[m])?;
    let scale = if standardize {
        Some(tensor("scale", &[d])?)
    } else {
        if tensors.tensor("scale").is_ok() {
            return Err(not_model(
                "it has a \"scale\" tensor but \"standardize\" is false".into(),
            ));
        }
        None
    };
    let model = PcaModel::from_parts(ModelParts {
        mean,
        scale,
        components,
        explained_variance,
        explained_variance_ratio,
        singular_values,
        noise_variance,
        total_variance,
        n_samples,
        ddof,
        solver,
        zero_variance_features,
        iteration_report,
        missing_values,
        whitening,
        basis,
    })
    .and_then(|model| check_model_values(&model).map(|()| model))
    .map_err(|source| IoError::InvalidModel {
        path: path.to_owned(),
        source,
    })?;
    Ok(SavedModel {
        model,
        feature_names,
        row_weights: meta.get("row_weights").cloned(),
    })
}

/// Relative tolerance of [`check_model_values`]: far above the rounding of a fit (about
/// 1e-16 × D), far below what damage to a value changes.
const VALUE_TOLERANCE: f64 = 1e-6;

/// Checks that a model's values are those a fit can give, beyond the shapes, finiteness and
/// signs that [`PcaModel::from_parts`] checks: a damaged value that passes those would make
/// `score`, `sample` and `transform --posterior` compute from a model no data has. Each
/// relation holds for every fit up to rounding ([`VALUE_TOLERANCE`], relative):
/// - the components are orthonormal rows (`B Bᵀ = I`);
/// - `explained_variance_ratio[k] = explained_variance[k] / total_variance` (0 when the total
///   is 0) and `singular_values[k] = √(explained_variance[k] (n_samples − ddof))`;
/// - without missing values, `total_variance = Σ explained_variance + (min(N, D) − M) ×
///   noise_variance` (σ² is the mean of the discarded eigenvalues, or, for an iterative solver,
///   the total less the kept ones), so σ² = 0 when nothing is discarded;
/// - for the exact solvers (covariance, gram, svd) and a fit with missing values (whose EM
///   variances are `‖w‖² + σ²`), σ² is at most the smallest kept variance. An iterative
///   solver's kept variances are estimates from below, so on a flat spectrum its σ² (from the
///   total) can exceed the last of them; it is held to the trace relation only.
///
/// The order of the explained variances is not checked: it affects no computation.
fn check_model_values(model: &PcaModel) -> std::result::Result<(), principal::PcaError> {
    let bad = |msg: String| Err(principal::PcaError::InvalidModel(msg));
    let close = |a: f64, b: f64| (a - b).abs() <= VALUE_TOLERANCE * a.abs().max(b.abs());
    let (m, d) = (model.n_components(), model.n_features());
    let lambda = model.explained_variance();
    let (noise, total) = (model.noise_variance(), model.total_variance());
    if total < 0.0 {
        return bad(format!("total_variance = {total} is negative"));
    }

    let b = model.components();
    let mut gram = Mat::<f64>::zeros(m, m);
    faer::linalg::matmul::matmul(
        gram.as_mut(),
        faer::Accum::Replace,
        b,
        b.transpose(),
        1.0,
        faer::Par::Seq,
    );
    for i in 0..m {
        for j in 0..m {
            let expected = if i == j { 1.0 } else { 0.0 };
            if (gram[(i, j)] - expected).abs() > VALUE_TOLERANCE {
                return bad(format!(
                    "the components are not orthonormal: row {i} · row {j} = {}, not {expected}",
                    gram[(i, j)]
                ));
            }
        }
    }

    let largest = lambda.iter().copied().fold(0.0, f64::max);
    // A model fitted without centring (`fit --no-centre`, a mean of exact zeros) reports
    // TruncatedSVD's variances: the codes' variance along each component, not the eigenvalues
    // of the raw second moments its singular values give; those two relations do not hold.
    let uncentred = model.mean().iter().all(|&v| v == 0.0);
    let exact = !uncentred
        && matches!(
            model.solver(),
            Solver::Covariance | Solver::Gram | Solver::Svd
        );
    if exact || model.missing_values().is_some() {
        let last = lambda[m - 1];
        if noise > last + VALUE_TOLERANCE * largest {
            return bad(format!(
                "noise_variance = {noise} exceeds the variance of kept component {m}, \
                 explained_variance[{}] = {last}",
                m - 1
            ));
        }
    }
    if model.missing_values().is_none() {
        let discarded = model.n_samples().min(d).saturating_sub(m);
        let kept: f64 = lambda.iter().sum();
        let expected = kept + discarded as f64 * noise;
        if !close(total, expected) {
            return bad(format!(
                "total_variance = {total} but the kept variances ({kept}) and {discarded} \
                 discarded direction(s) of noise_variance = {noise} make {expected}"
            ));
        }
    }
    let ratios = model.explained_variance_ratio();
    let singular = model.singular_values();
    let dof = (model.n_samples() - model.ddof()) as f64;
    for k in 0..m {
        let ratio = if total > 0.0 { lambda[k] / total } else { 0.0 };
        if !close(ratios[k], ratio) {
            return bad(format!(
                "explained_variance_ratio[{k}] = {} but explained_variance[{k}] / \
                 total_variance = {} / {total} = {ratio}",
                ratios[k], lambda[k]
            ));
        }
        let sv = (lambda[k] * dof).sqrt();
        if !uncentred && !close(singular[k], sv) {
            return bad(format!(
                "singular_values[{k}] = {} but √(explained_variance[{k}] × (n_samples − ddof)) \
                 = √({} × {dof}) = {sv}",
                singular[k], lambda[k]
            ));
        }
    }
    Ok(())
}

/// The metadata's `feature_names` (a JSON list of `d` strings), if it has them; the error is
/// the detail of a "not a model" error. Model files of every kind store them so.
pub(crate) fn feature_names_of(
    meta: &HashMap<String, String>,
    d: usize,
) -> std::result::Result<Option<Vec<String>>, String> {
    let Some(text) = meta.get("feature_names") else {
        return Ok(None);
    };
    let names: Vec<String> = serde_json::from_str(text)
        .map_err(|e| format!("metadata \"feature_names\" is not a JSON list of strings: {e}"))?;
    if names.len() != d {
        return Err(format!("{} feature names for {d} features", names.len()));
    }
    Ok(Some(names))
}

#[cfg(test)]
mod tests {
    use principal::{ComponentCount, PcaBuilder, Scaling};
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::names;

    fn data() -> Mat<f64> {
        // Deterministic, full rank, with a constant column (a zero-variance feature).
        Mat::from_fn(12, 4, |i, j| {
            let (x, y) = (i as f64, j as f64);
            if j == 3 {
                5.0
            } else {
                (x * 0.37 + y).sin() * (y + 1.0) + x * 0.1 * y
            }
        })
    }

    fn fit(scaling: Scaling, solver: Solver, m: usize) -> PcaModel {
        PcaBuilder::new()
            .components(ComponentCount::Fixed(m))
            .scaling(scaling)
            .solver(solver)
            .build()
            .unwrap()
            .fit(data().as_ref())
            .unwrap()
    }

    #[test]
    fn the_same_model_is_written_as_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let x = principal::faer::Mat::<f64>::from_fn(30, 4, |i, j| ((i * 7 + j * 3) % 11) as f64);
        let model = principal::PcaBuilder::new()
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        let names: Vec<String> = (0..4).map(|j| format!("f{j}")).collect();
        let files: Vec<Vec<u8>> = (0..4)
            .map(|i| {
                let path = dir.path().join(format!("m{i}"));
                save_model(&path, &model, Some(&names)).unwrap();
                fs::read(&path).unwrap()
            })
            .collect();
        assert!(files.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(load_model(&dir.path().join("m0")).unwrap().model, model);
    }

    #[test]
    fn models_round_trip_exactly() {
        let dir = TempDir::new().unwrap();
        let feature_names = names(&["a", "b \"quoted\"", "c", "constant"]);
        let cases = [
            (fit(Scaling::Centre, Solver::Covariance, 2), None),
            (
                fit(Scaling::Standardize, Solver::Svd, 3),
                feature_names.clone(),
            ),
            (fit(Scaling::Centre, Solver::Randomized, 2), feature_names),
        ];
        for (k, (model, names)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("m{k}.safetensors"));
            save_model(&path, &model, names.as_deref()).unwrap();
            let loaded = load_model(&path).unwrap();
            assert_eq!(loaded.model, model, "case {k}");
            assert_eq!(loaded.feature_names, names, "case {k}");
        }
    }

    #[test]
    fn metadata_is_readable_without_our_code() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("m.safetensors");
        let model = fit(Scaling::Standardize, Solver::Svd, 2);
        save_model(&path, &model, names(&["a", "b", "c", "d"]).as_deref()).unwrap();
        let bytes = fs::read(&path).unwrap();
        let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
        let meta = header.metadata().clone().unwrap();
        assert_eq!(meta["format"], "principal-pca");
        assert_eq!(meta["format_version"], "1");
        assert_eq!(meta["n_samples"], "12");
        assert_eq!(meta["n_features"], "4");
        assert_eq!(meta["n_components"], "2");
        assert_eq!(meta["ddof"], "1");
        assert_eq!(meta["standardize"], "true");
        assert_eq!(meta["solver"], "svd");
        assert_eq!(meta["zero_variance_features"], "[3]");
        assert_eq!(meta["feature_names"], "[\"a\",\"b\",\"c\",\"d\"]");
        assert_eq!(meta["principal_version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(
            meta["total_variance"].parse::<f64>().unwrap(),
            model.total_variance()
        );
        let tensors = SafeTensors::deserialize(&bytes).unwrap();
        let mut got: Vec<(String, Vec<usize>)> = tensors
            .tensors()
            .into_iter()
            .map(|(n, v)| (n, v.shape().to_vec()))
            .collect();
        got.sort();
        let expected = [
            ("components", vec![2, 4]),
            ("explained_variance", vec![2]),
            ("explained_variance_ratio", vec![2]),
            ("mean", vec![4]),
            ("scale", vec![4]),
            ("singular_values", vec![2]),
        ];
        assert_eq!(got, expected.map(|(n, s)| (n.to_owned(), s)).to_vec());
        // Row-major components.
        let c = tensors.tensor("components").unwrap();
        let second = f64::from_le_bytes(c.data()[8..16].try_into().unwrap());
        assert_eq!(second, model.components()[(0, 1)]);
        // A centred model has no scale.
        save_model(&path, &fit(Scaling::Centre, Solver::Svd, 2), None).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert!(
            SafeTensors::deserialize(&bytes)
                .unwrap()
                .tensor("scale")
                .is_err()
        );
    }

    /// Rewrites a saved model after `edit` changes its metadata and tensors.
    fn tamper(
        path: &Path,
        edit: impl FnOnce(&mut HashMap<String, String>, &mut Vec<(String, Dtype, Vec<usize>, Vec<u8>)>),
    ) {
        let bytes = fs::read(path).unwrap();
        let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
        let mut meta = header.metadata().clone().unwrap();
        let tensors = SafeTensors::deserialize(&bytes).unwrap();
        let mut list: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = tensors
            .tensors()
            .into_iter()
            .map(|(n, v)| (n, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
            .collect();
        edit(&mut meta, &mut list);
        let views: Vec<(String, TensorView<'_>)> = list
            .iter()
            .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
            .collect();
        fs::write(path, safetensors::serialize(views, Some(meta)).unwrap()).unwrap();
    }

    fn saved(dir: &TempDir) -> PathBuf {
        let path = dir.path().join("m.safetensors");
        save_model(&path, &fit(Scaling::Standardize, Solver::Svd, 2), None).unwrap();
        path
    }

    fn load_err(path: &Path) -> String {
        load_model(path).unwrap_err().to_string()
    }

    use std::path::PathBuf;

    #[test]
    fn damaged_files_are_refused_with_reasons() {
        let dir = TempDir::new().unwrap();
        let path = saved(&dir);
        let p = path.display().to_string();

        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        let e = load_err(&path);
        assert!(
            e.starts_with(&format!("{p} is not a principal model file (")),
            "{e}"
        );
        fs::write(&path, &bytes[..5]).unwrap();
        assert!(load_err(&path).starts_with(&format!("{p} is not a principal model file (")));
        fs::write(&path, b"a,b\n1,2\n").unwrap();
        assert!(load_err(&path).starts_with(&format!("{p} is not a principal model file (")));

        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.insert("format_version".into(), "7".into());
        });
        assert_eq!(
            load_err(&path),
            format!("model file {p} has format version 7; this principal reads version 1")
        );

        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.insert("format".into(), "something-else".into());
        });
        assert!(load_err(&path).contains("its format is \"something-else\""));

        let path = saved(&dir);
        tamper(&path, |_, t| {
            let c = t.iter_mut().find(|x| x.0 == "components").unwrap();
            c.2 = vec![4, 2];
        });
        let e = load_err(&path);
        assert!(
            e.contains("tensor \"components\" has shape [4, 2] but the metadata says [2, 4]"),
            "{e}"
        );

        let path = saved(&dir);
        tamper(&path, |_, t| {
            let c = t.iter_mut().find(|x| x.0 == "mean").unwrap();
            c.1 = Dtype::F32;
            c.2 = vec![8];
        });
        assert!(load_err(&path).contains("tensor \"mean\" is F32, not F64"));

        let path = saved(&dir);
        tamper(&path, |_, t| t.retain(|x| x.0 != "scale"));
        assert!(load_err(&path).contains("it has no tensor \"scale\""));

        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.insert("ddof".into(), "one".into());
        });
        assert!(load_err(&path).contains("metadata \"ddof\" = \"one\" is not a valid usize"));

        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.insert("solver".into(), "magic".into());
        });
        assert!(load_err(&path).contains("unknown solver \"magic\""));

        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.remove("noise_variance");
        });
        assert!(load_err(&path).contains("the metadata has no \"noise_variance\""));

        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.insert("feature_names".into(), "[\"only one\"]".into());
        });
        assert!(load_err(&path).contains("1 feature names for 4 features"));

        // Consistent shapes, inconsistent model: reported by the math crate, with the file.
        let path = saved(&dir);
        tamper(&path, |m, _| {
            m.insert("ddof".into(), "3".into());
        });
        let e = load_err(&path);
        assert!(
            e.starts_with(&format!("model file {p}: inconsistent model")),
            "{e}"
        );

        let e = load_err(&dir.path().join("missing.safetensors"));
        assert!(e.starts_with("cannot open"), "{e}");
    }

    /// Sets metadata `key` of the model file at `path` to `value`.
    fn set_meta(path: &Path, key: &str, value: f64) {
        tamper(path, |m, _| {
            m.insert(key.into(), value.to_string());
        });
    }

    /// Multiplies entry `index` of tensor `name` of the model file at `path` by `factor` and
    /// adds `shift`.
    fn set_entry(path: &Path, name: &str, index: usize, factor: f64, shift: f64) {
        tamper(path, |_, t| {
            let bytes = &mut t.iter_mut().find(|x| x.0 == name).unwrap().3;
            let range = index * 8..index * 8 + 8;
            let v = f64::from_le_bytes(bytes[range.clone()].try_into().unwrap());
            bytes[range].copy_from_slice(&(v * factor + shift).to_le_bytes());
        });
    }

    /// Issue 24: a model whose values no fit gives (σ² negative, huge or above a kept
    /// component's variance, a negative variance, components not orthonormal, a ratio, singular
    /// value or total that disagrees with the variances) is refused when read, naming the file
    /// and the value; before, only finiteness was checked and `score`, `sample` and
    /// `transform --posterior` used such a model.
    #[test]
    fn values_no_fit_gives_are_refused_naming_the_value() {
        let dir = TempDir::new().unwrap();
        let fitted = fit(Scaling::Standardize, Solver::Svd, 2);
        let (lambda, total) = (
            fitted.explained_variance().to_vec(),
            fitted.total_variance(),
        );
        let path = saved(&dir);
        let p = path.display().to_string();
        let expect = |edit: &dyn Fn(&Path), wanted: &str| {
            let path = saved(&dir);
            edit(&path);
            let e = load_err(&path);
            assert!(
                e.starts_with(&format!("model file {p}: inconsistent model: "))
                    && e.contains(wanted),
                "wanted {wanted:?} in {e}"
            );
        };
        expect(
            &|p| set_meta(p, "noise_variance", -0.25),
            "noise_variance = -0.25 is negative",
        );
        expect(
            &|p| set_meta(p, "noise_variance", 1e300),
            "noise_variance = 1000000000",
        );
        // σ² above λ₂ with a total that agrees with it: the exact solver's bound refuses it.
        let noise = lambda[1] * 1.5;
        let consistent_total = lambda[0] + lambda[1] + 2.0 * noise;
        expect(
            &|p| {
                set_meta(p, "noise_variance", noise);
                set_meta(p, "total_variance", consistent_total);
            },
            &format!("noise_variance = {noise} exceeds the variance of kept component 2"),
        );
        expect(
            &|p| set_meta(p, "total_variance", total * 2.0),
            &format!("total_variance = {}", total * 2.0),
        );
        expect(
            &|p| set_meta(p, "total_variance", -1.0),
            "total_variance = -1 is negative",
        );
        expect(
            &|p| set_entry(p, "explained_variance", 1, -1.0, 0.0),
            "explained_variance[1] = -",
        );
        expect(
            &|p| set_entry(p, "explained_variance", 0, 1.01, 0.0),
            "discarded direction(s) of noise_variance = ",
        );
        expect(
            &|p| set_entry(p, "explained_variance_ratio", 1, 1.0, 0.01),
            "explained_variance_ratio[1] = ",
        );
        expect(
            &|p| set_entry(p, "singular_values", 0, 1.0, 1e-3),
            "singular_values[0] = ",
        );
        expect(
            &|p| set_entry(p, "components", 5, 1.0, 1e-3),
            "the components are not orthonormal: row ",
        );
        expect(
            &|p| set_entry(p, "components", 0, 0.0, 0.0),
            "the components are not orthonormal: row 0 · row 0 = ",
        );
    }

    /// The value checks refuse no fit's model: every solver, with missing values, truncated,
    /// and the flat spectrum of isotropic data on which an iterative solver's σ² exceeds its
    /// last kept variance.
    #[test]
    fn every_fit_passes_the_value_checks() {
        use rand::{Rng, SeedableRng};
        let dir = TempDir::new().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(24);
        let flat = Mat::from_fn(40, 30, |_, _| rng.random::<f64>() - 0.5);
        let wide = Mat::from_fn(6, 30, |i, j| ((i * 31 + j * 17) % 13) as f64);
        let mut missing = data();
        missing[(2, 2)] = f64::NAN;
        let mut checked = 0;
        for x in [data(), flat, wide, missing] {
            let has_missing = x.col_iter().any(|c| c.iter().any(|v| v.is_nan()));
            for solver in [
                Solver::Covariance,
                Solver::Gram,
                Solver::Svd,
                Solver::Randomized,
                Solver::Power,
                Solver::Em,
            ] {
                if has_missing && solver != Solver::Em {
                    continue;
                }
                for m in [1, 3] {
                    let mut builder = PcaBuilder::new()
                        .components(ComponentCount::Fixed(m))
                        .solver(solver);
                    if has_missing {
                        builder = builder.missing(principal::MissingValues::Em);
                    }
                    let model = builder.build().unwrap().fit(x.as_ref()).unwrap();
                    for model in [model.truncated(1).unwrap(), model] {
                        let path = dir.path().join("m.safetensors");
                        save_model(&path, &model, None).unwrap();
                        let loaded = load_model(&path);
                        assert!(loaded.is_ok(), "{solver:?} m={m}: {}", loaded.unwrap_err());
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 3 * 6 * 2 * 2 + 2 * 2);
    }

    #[test]
    fn wrong_number_of_feature_names_is_refused_when_saving() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("m.safetensors");
        let e = save_model(
            &path,
            &fit(Scaling::Centre, Solver::Svd, 1),
            names(&["a"]).as_deref(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("1 column name(s) given for 4 column(s)"),
            "{e}"
        );
        assert!(!path.exists());
    }

    /// A fit with missing values keeps its report (counts, iterations, likelihood, change,
    /// error estimate, every pass's likelihood and point) through a file, exactly; a file without it reads as a complete-data fit.
    #[test]
    fn a_fit_with_missing_values_round_trips_with_its_report() {
        let dir = TempDir::new().unwrap();
        let mut x = data();
        x[(3, 1)] = f64::NAN;
        x[(7, 0)] = f64::NAN;
        let model = PcaBuilder::new()
            .components(ComponentCount::Fixed(2))
            .missing(principal::MissingValues::Em)
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        let report = model.missing_values().expect("a report");
        assert_eq!((report.missing, report.observed), (2, 46));
        let path = dir.path().join("m.safetensors");
        save_model(&path, &model, None).unwrap();
        let loaded = load_model(&path).unwrap();
        assert_eq!(loaded.model, model);
        let bytes = fs::read(&path).unwrap();
        let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
        let meta = header.metadata().clone().unwrap();
        assert_eq!(meta["missing_values"], "em");
        assert_eq!(meta["missing_count"], "2");
        assert_eq!(meta["format_version"], "1");
        // Every pass's likelihood and point, one each, through the file.
        let passes = report.iterations;
        assert_eq!(report.log_likelihood_history.len(), passes);
        assert_eq!(meta["missing_pass_points"].len(), passes);
        assert_eq!(
            meta["missing_log_likelihood_history"]
                .split_whitespace()
                .count(),
            passes
        );
        let complete = fit(Scaling::Centre, Solver::Svd, 2);
        save_model(&path, &complete, None).unwrap();
        assert_eq!(load_model(&path).unwrap().model.missing_values(), None);
    }

    #[test]
    fn whitening_round_trips_and_older_files_read_as_not_whitening() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("m.safetensors");
        let model = fit(Scaling::Centre, Solver::Svd, 2).with_whitening(Whitening::UnitVariance);
        save_model(&path, &model, None).unwrap();
        let loaded = load_model(&path).unwrap().model;
        assert_eq!(loaded.whitening(), Whitening::UnitVariance);
        assert_eq!(loaded, model);
        // A file without the key (every file written before whitening existed) does not whiten.
        tamper(&path, |m, _| {
            m.remove("whitening");
        });
        assert_eq!(
            load_model(&path).unwrap().model.whitening(),
            Whitening::None
        );
        tamper(&path, |m, _| {
            m.insert("whitening".into(), "pink".into());
        });
        assert!(load_err(&path).contains("metadata \"whitening\": unknown whitening \"pink\""));
    }
}
