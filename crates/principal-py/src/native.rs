//! The module `principal._native`: fit, transform, score, save, load, choose, stream and report,
//! over numpy arrays and a fitted model's state dict (see the crate's doc).

use std::path::PathBuf;

use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use principal::faer::{Mat, MatRef};
use principal::{
    Basis, Centre, ChooseOptions, ChunkRef, ComponentChoice, ComponentCount, IterationReport,
    IterativeOptions, MissingValueReport, MissingValues, ModelParts, PassPoint, PcaBuilder,
    PcaModel, PcaParams, PowerMethod, Precision, RandomizedMethod, Scaling, Solver, Units,
    Whitening,
};
use principal_report::{
    ImageShape, Labels, ModelView, NoProgress, Report, ReportDataBuilder, SampleChoice,
};
use pyo3::exceptions::{PyKeyError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// A library error as Python's `ValueError` (bad data or parameters), with its message.
pub(crate) fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A file error (reading, writing, a damaged model file) as `OSError`, naming the file.
fn os_error(e: impl ToString) -> PyErr {
    PyOSError::new_err(e.to_string())
}

/// A 2-D float32 or float64 numpy array, borrowed read-only.
pub(crate) enum Input<'py> {
    F32(PyReadonlyArray2<'py, f32>),
    F64(PyReadonlyArray2<'py, f64>),
}

impl<'py> Input<'py> {
    pub(crate) fn extract(x: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f64>>() {
            return Ok(Input::F64(a));
        }
        if let Ok(a) = x.extract::<PyReadonlyArray2<'py, f32>>() {
            return Ok(Input::F32(a));
        }
        Err(PyTypeError::new_err(
            "expected a 2-D numpy array of float32 or float64",
        ))
    }

    /// A faer view of numpy's buffer: no copy for C or Fortran order.
    pub(crate) fn view(&self) -> PyResult<ChunkRef<'_>> {
        Ok(match self {
            Input::F32(a) => ChunkRef::F32(matrix(a)?),
            Input::F64(a) => ChunkRef::F64(matrix(a)?),
        })
    }
}

/// The array as a matrix over its own memory: row-major for C order, column-major for
/// Fortran order; any other layout is refused (the Python side copies it first).
fn matrix<'a, T: numpy::Element>(a: &'a PyReadonlyArray2<'_, T>) -> PyResult<MatRef<'a, T>> {
    let (n, d) = (a.shape()[0], a.shape()[1]);
    let c_order = a.is_c_contiguous();
    let slice = a.as_slice().map_err(|_| {
        PyValueError::new_err("the array is neither C- nor Fortran-contiguous; copy it first")
    })?;
    Ok(if c_order {
        MatRef::from_row_major_slice(slice, n, d)
    } else {
        MatRef::from_column_major_slice(slice, n, d)
    })
}

/// Runs `$body` with `$m` bound to the f32 or f64 matrix of a [`ChunkRef`].
macro_rules! with_matrix {
    ($chunk:expr, $m:ident => $body:expr) => {
        match $chunk {
            ChunkRef::F32($m) => $body,
            ChunkRef::F64($m) => $body,
        }
    };
}

pub(crate) fn mat_to_numpy<'py>(py: Python<'py>, m: &Mat<f64>) -> Bound<'py, PyArray2<f64>> {
    Array2::from_shape_fn((m.nrows(), m.ncols()), |(i, j)| m[(i, j)]).into_pyarray(py)
}

fn vec_to_numpy<'py>(py: Python<'py>, v: &[f64]) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_slice(py, v)
}

/// A required entry of a dict.
pub(crate) fn item<'py>(dict: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    dict.get_item(key)?
        .ok_or_else(|| PyKeyError::new_err(format!("no {key:?} given")))
}

/// An entry that may be absent or None.
fn optional_item<'py>(dict: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(dict.get_item(key)?.filter(|v| !v.is_none()))
}

/// An entry that may be absent or None, extracted as the type the context asks for.
macro_rules! optional {
    ($dict:expr, $key:expr) => {
        optional_item($dict, $key)?
            .map(|v| v.extract())
            .transpose()?
    };
}

/// What an EM pass with missing values started from, as the Python report names it.
fn pass_point_name(point: PassPoint) -> &'static str {
    match point {
        PassPoint::EmStep => "em_step",
        PassPoint::Extrapolation => "extrapolation",
        PassPoint::RejectedExtrapolation => "rejected_extrapolation",
    }
}

fn pass_point_from_name(name: &str) -> PyResult<PassPoint> {
    match name {
        "em_step" => Ok(PassPoint::EmStep),
        "extrapolation" => Ok(PassPoint::Extrapolation),
        "rejected_extrapolation" => Ok(PassPoint::RejectedExtrapolation),
        other => Err(PyValueError::new_err(format!(
            "unknown EM pass point {other:?}"
        ))),
    }
}

fn parse_name<T: std::str::FromStr<Err = String>>(text: &str) -> PyResult<T> {
    text.parse().map_err(PyValueError::new_err)
}

/// The fit's parameters from the dict the Python class builds (every key present).
pub(crate) fn params_from(p: &Bound<'_, PyDict>) -> PyResult<PcaParams> {
    let components = {
        let c = item(p, "components")?;
        if c.is_none() {
            ComponentCount::All
        } else if let Ok(k) = c.extract::<usize>() {
            ComponentCount::Fixed(k)
        } else if let Ok(f) = c.extract::<f64>() {
            ComponentCount::VarianceFraction(f)
        } else {
            let name: String = c.extract()?;
            match name.as_str() {
                "gavish-donoho" => ComponentCount::GavishDonoho {
                    noise_sigma: optional!(p, "noise_sigma"),
                },
                "cv" => ComponentCount::CrossValidated {
                    folds: item(p, "folds")?.extract()?,
                    seed: item(p, "seed")?.extract()?,
                },
                other => parse_name::<ComponentCount>(other)?,
            }
        }
    };
    let scaling = if item(p, "standardize")?.extract::<bool>()? {
        Scaling::Standardize
    } else {
        Scaling::Centre
    };
    let whitening = if item(p, "whiten")?.extract::<bool>()? {
        Whitening::UnitVariance
    } else {
        Whitening::None
    };
    let iterative = IterativeOptions {
        seed: item(p, "seed")?.extract()?,
        tolerance: optional!(p, "tolerance"),
        power_iterations: optional!(p, "power_iterations"),
        oversampling: item(p, "oversampling")?.extract()?,
        max_iterations: item(p, "max_iterations")?.extract()?,
        randomized_method: parse_name::<RandomizedMethod>(
            &item(p, "randomized_method")?.extract::<String>()?,
        )?,
        power_method: parse_name::<PowerMethod>(&item(p, "power_method")?.extract::<String>()?)?,
    };
    // "none": the truncated SVD of the raw data (TruncatedSVD); absent or "mean": centred.
    let centre_name: Option<String> = optional!(p, "centre");
    let centre = match centre_name.as_deref() {
        None | Some("mean") => Centre::Mean,
        Some("none") => Centre::None,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "centre={other:?} must be 'mean' or 'none'"
            )));
        }
    };
    PcaBuilder::new()
        .components(components)
        .centre(centre)
        .scaling(scaling)
        .ddof(item(p, "ddof")?.extract()?)
        .solver(parse_name::<Solver>(
            &item(p, "solver")?.extract::<String>()?,
        )?)
        .iterative(iterative)
        .precision(parse_name::<Precision>(
            &item(p, "precision")?.extract::<String>()?,
        )?)
        .missing(parse_name::<MissingValues>(
            &item(p, "missing")?.extract::<String>()?,
        )?)
        .memory_limit(optional!(p, "memory_limit"))
        .whitening(whitening)
        .build()
        .map_err(value_error)
}

fn float_vector(dict: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<f64>> {
    let a: PyReadonlyArray1<'_, f64> = item(dict, key)?.extract()?;
    Ok(a.as_array().to_vec())
}

/// The model of a state dict (float64 arrays), checked by [`PcaModel::from_parts`].
pub(crate) fn model_from(state: &Bound<'_, PyDict>) -> PyResult<PcaModel> {
    let components: PyReadonlyArray2<'_, f64> = item(state, "components")?.extract()?;
    let components = components.as_array();
    let components = Mat::from_fn(components.nrows(), components.ncols(), |i, j| {
        components[(i, j)]
    });
    let scale = match state.get_item("scale")? {
        Some(s) if !s.is_none() => Some(float_vector(state, "scale")?),
        _ => None,
    };
    let iteration_report = match optional_item(state, "iteration_report")? {
        None => None,
        Some(r) => {
            let r = r.cast_into::<PyDict>()?;
            Some(IterationReport {
                passes: item(&r, "passes")?.extract()?,
                error_estimate: item(&r, "error_estimate")?.extract()?,
                converged: item(&r, "converged")?.extract()?,
            })
        }
    };
    let missing_values = match optional_item(state, "missing_values")? {
        None => None,
        Some(r) => {
            let r = r.cast_into::<PyDict>()?;
            Some(MissingValueReport {
                observed: item(&r, "observed")?.extract()?,
                missing: item(&r, "missing")?.extract()?,
                empty_rows: item(&r, "empty_rows")?.extract()?,
                iterations: item(&r, "iterations")?.extract()?,
                log_likelihood: item(&r, "log_likelihood")?.extract()?,
                change: optional!(&r, "change"),
                error_estimate: optional!(&r, "error_estimate"),
                converged: item(&r, "converged")?.extract()?,
                log_likelihood_history: match optional_item(&r, "log_likelihood_history")? {
                    Some(h) => h.extract()?,
                    None => Vec::new(),
                },
                pass_points: match optional_item(&r, "pass_points")? {
                    Some(p) => p
                        .extract::<Vec<String>>()?
                        .iter()
                        .map(|name| pass_point_from_name(name))
                        .collect::<PyResult<_>>()?,
                    None => Vec::new(),
                },
            })
        }
    };
    PcaModel::from_parts(ModelParts {
        mean: float_vector(state, "mean")?,
        scale,
        components,
        explained_variance: float_vector(state, "explained_variance")?,
        explained_variance_ratio: float_vector(state, "explained_variance_ratio")?,
        singular_values: float_vector(state, "singular_values")?,
        noise_variance: item(state, "noise_variance")?.extract()?,
        total_variance: item(state, "total_variance")?.extract()?,
        n_samples: item(state, "n_samples")?.extract()?,
        ddof: item(state, "ddof")?.extract()?,
        solver: parse_name(&item(state, "solver")?.extract::<String>()?)?,
        zero_variance_features: item(state, "zero_variance_features")?.extract()?,
        iteration_report,
        missing_values,
        whitening: parse_name(&item(state, "whitening")?.extract::<String>()?)?,
        // States pickled before alignment existed have no basis: eigenvectors.
        basis: match optional_item(state, "basis")? {
            Some(b) => parse_name(&b.extract::<String>()?)?,
            None => Basis::Eigenvectors,
        },
    })
    .map_err(value_error)
}

fn choice_dict<'py>(py: Python<'py>, c: &ComponentChoice) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("criterion", c.criterion.name())?;
    d.set_item("n_components", c.n_components)?;
    d.set_item("value", c.value)?;
    d.set_item("description", c.to_string())?;
    Ok(d)
}

/// The state dict of a model: every part, float64 arrays.
pub(crate) fn state_of<'py>(py: Python<'py>, model: &PcaModel) -> PyResult<Bound<'py, PyDict>> {
    let parts = model.to_parts();
    let s = PyDict::new(py);
    s.set_item("mean", vec_to_numpy(py, &parts.mean))?;
    s.set_item("scale", parts.scale.as_deref().map(|v| vec_to_numpy(py, v)))?;
    s.set_item("components", mat_to_numpy(py, &parts.components))?;
    s.set_item(
        "explained_variance",
        vec_to_numpy(py, &parts.explained_variance),
    )?;
    s.set_item(
        "explained_variance_ratio",
        vec_to_numpy(py, &parts.explained_variance_ratio),
    )?;
    s.set_item("singular_values", vec_to_numpy(py, &parts.singular_values))?;
    s.set_item("noise_variance", parts.noise_variance)?;
    s.set_item("total_variance", parts.total_variance)?;
    s.set_item("n_samples", parts.n_samples)?;
    s.set_item("ddof", parts.ddof)?;
    s.set_item("solver", parts.solver.name())?;
    s.set_item("zero_variance_features", parts.zero_variance_features)?;
    s.set_item("whitening", parts.whitening.name())?;
    s.set_item("basis", parts.basis.name())?;
    let report = match parts.iteration_report {
        None => None,
        Some(r) => {
            let d = PyDict::new(py);
            d.set_item("passes", r.passes)?;
            d.set_item("error_estimate", r.error_estimate)?;
            d.set_item("converged", r.converged)?;
            Some(d)
        }
    };
    s.set_item("iteration_report", report)?;
    let missing = match parts.missing_values {
        None => None,
        Some(r) => {
            let d = PyDict::new(py);
            d.set_item("observed", r.observed)?;
            d.set_item("missing", r.missing)?;
            d.set_item("empty_rows", r.empty_rows)?;
            d.set_item("iterations", r.iterations)?;
            d.set_item("log_likelihood", r.log_likelihood)?;
            d.set_item("change", r.change)?;
            d.set_item("error_estimate", r.error_estimate)?;
            d.set_item("converged", r.converged)?;
            d.set_item("log_likelihood_history", r.log_likelihood_history)?;
            let points: Vec<&str> = r.pass_points.iter().map(|&p| pass_point_name(p)).collect();
            d.set_item("pass_points", points)?;
            Some(d)
        }
    };
    s.set_item("missing_values", missing)?;
    let choice = match model.component_choice() {
        None => None,
        Some(c) => Some(choice_dict(py, c)?),
    };
    s.set_item("component_choice", choice)?;
    // How the fit's eigenproblem was solved; not a part (a loaded model has none).
    s.set_item("eigen_route", model.eigen_route().map(|r| r.to_string()))?;
    Ok(s)
}

/// Fits a model to `x` with the parameters `params`; returns its state.
#[pyfunction]
fn fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    params: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = params_from(params)?;
    let input = Input::extract(x)?;
    let view = input.view()?;
    let model = py
        .detach(|| with_matrix!(view, m => params.fit(m)))
        .map_err(value_error)?;
    state_of(py, &model)
}

/// One function of a model and a data matrix, the GIL released.
fn apply<'py, R: Send>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
    f: impl Fn(&PcaModel, ChunkRef<'_>) -> principal::Result<R> + Send + Sync,
) -> PyResult<R> {
    let model = model_from(state)?;
    let input = Input::extract(x)?;
    let view = input.view()?;
    py.detach(|| f(&model, view)).map_err(value_error)
}

/// The codes of `x` (whitened when the model whitens).
#[pyfunction]
fn transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let z = apply(py, state, x, |m, c| with_matrix!(c, x => m.transform(x)))?;
    Ok(mat_to_numpy(py, &z))
}

/// The codes of rows with missing values (NaN), completed by their conditional means.
#[pyfunction]
fn transform_observed<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let z = apply(
        py,
        state,
        x,
        |m, c| with_matrix!(c, x => m.probabilistic().transform_observed(x)),
    )?;
    Ok(mat_to_numpy(py, &z))
}

/// The reconstruction of codes `z`.
#[pyfunction]
fn inverse_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    z: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let x = apply(
        py,
        state,
        z,
        |m, c| with_matrix!(c, z => m.inverse_transform(z)),
    )?;
    Ok(mat_to_numpy(py, &x))
}

/// The log-likelihood of each row under probabilistic PCA, in the data's own units.
#[pyfunction]
fn score_samples<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let s = apply(
        py,
        state,
        x,
        |m, c| with_matrix!(c, x => m.probabilistic().score_samples(x, Units::Original)),
    )?;
    Ok(PyArray1::from_vec(py, s))
}

/// The log-likelihood of each row's observed values (NaN missing), in the data's own units.
#[pyfunction]
fn score_samples_observed<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let s = apply(
        py,
        state,
        x,
        |m, c| with_matrix!(c, x => m.probabilistic().score_samples_observed(x, Units::Original)),
    )?;
    Ok(PyArray1::from_vec(py, s))
}

/// The model covariance `W Wᵀ + σ² I` in the data's own units.
#[pyfunction]
fn covariance<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = model_from(state)?;
    let c = py.detach(|| model.probabilistic().covariance(Units::Original));
    Ok(mat_to_numpy(py, &c))
}

/// The model precision `(W Wᵀ + σ² I)⁻¹` in the data's own units.
#[pyfunction]
fn precision<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = model_from(state)?;
    let p = py
        .detach(|| model.probabilistic().precision(Units::Original))
        .map_err(value_error)?;
    Ok(mat_to_numpy(py, &p))
}

/// The posterior of each row's latent point: means (N×M) and the shared covariance (M×M).
#[pyfunction]
fn posterior<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>)> {
    let p = apply(
        py,
        state,
        x,
        |m, c| with_matrix!(c, x => m.probabilistic().posterior(x)),
    )?;
    Ok((mat_to_numpy(py, &p.mean), mat_to_numpy(py, &p.covariance)))
}

/// `count` samples drawn from the probabilistic model, seeded.
#[pyfunction]
fn sample<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    count: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = model_from(state)?;
    let x = py.detach(|| model.probabilistic().sample(count, seed));
    Ok(mat_to_numpy(py, &x))
}

/// `x` with every missing value (NaN) replaced by its conditional mean given the row's
/// observed values.
#[pyfunction]
fn impute<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let filled = apply(
        py,
        state,
        x,
        |m, c| with_matrix!(c, x => m.probabilistic().impute(x)),
    )?;
    Ok(mat_to_numpy(py, &filled))
}

/// Writes the model file (safetensors, as `principal fit` does).
#[pyfunction]
#[pyo3(signature = (state, path, feature_names=None))]
fn save(
    state: &Bound<'_, PyDict>,
    path: PathBuf,
    feature_names: Option<Vec<String>>,
) -> PyResult<()> {
    let model = model_from(state)?;
    principal_io::save_model(&path, &model, feature_names.as_deref()).map_err(os_error)
}

/// Reads a model file: its state and its feature names, if stored.
#[pyfunction]
fn load(py: Python<'_>, path: PathBuf) -> PyResult<(Bound<'_, PyDict>, Option<Vec<String>>)> {
    let saved = principal_io::load_model(&path).map_err(os_error)?;
    Ok((state_of(py, &saved.model)?, saved.feature_names))
}

/// Rows per chunk of a streamed fit within `memory_limit` bytes (as the CLI's budget: a
/// sixteenth of the limit, at most 32 MiB, in whole blocks of 256 rows).
fn chunk_rows(d: usize, memory_limit: u64) -> usize {
    let bytes = (memory_limit / 16).min(32 << 20) as usize;
    let rows = bytes / (8 * d.max(1));
    (rows / 256 * 256).max(256)
}

/// Fits a model to files read chunk by chunk (never whole in memory, for the covariance,
/// randomized, power and em solvers); returns its state and the files' column names.
#[pyfunction]
fn fit_files<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    params: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyDict>, Option<Vec<String>>)> {
    let params = params_from(params)?;
    let limit = params.memory_limit().unwrap_or(1 << 30);
    let options = principal_io::ReadOptions {
        missing: match params.missing() {
            MissingValues::Em => principal_io::Missing::AsNan,
            _ => principal_io::Missing::Reject,
        },
        ..principal_io::ReadOptions::default()
    };
    let (model, names) = py.detach(|| -> PyResult<_> {
        let reader = principal_io::ChunkReader::open(&paths, &options).map_err(os_error)?;
        let d = reader.n_features();
        let names = reader.column_names().map(<[String]>::to_vec);
        let mut files = principal_io::FileSource::from_reader(reader, chunk_rows(d, limit));
        let model = params.fit_source(&mut files).map_err(value_error)?;
        Ok((model, names))
    })?;
    Ok((state_of(py, &model)?, names))
}

/// Every criterion's choice of the number of components and its curve (`principal choose`).
#[pyfunction]
fn choose<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    params: &Bound<'py, PyDict>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = params_from(params)?;
    let defaults = ChooseOptions::default();
    let options = ChooseOptions {
        max_components: optional!(options, "max_components"),
        permutations: optional!(options, "permutations").unwrap_or(defaults.permutations),
        percentile: optional!(options, "percentile").unwrap_or(defaults.percentile),
        folds: optional!(options, "folds").unwrap_or(defaults.folds),
        seed: optional!(options, "seed").unwrap_or(defaults.seed),
        noise_sigma: optional!(options, "noise_sigma"),
    };
    let input = Input::extract(x)?;
    let view = input.view()?;
    let table = py
        .detach(|| with_matrix!(view, m => params.choose(m, &options)))
        .map_err(value_error)?;
    let out = PyDict::new(py);
    out.set_item("n_samples", table.n_samples)?;
    out.set_item("n_features", table.n_features)?;
    out.set_item("max_components", table.max_components)?;
    out.set_item("eigenvalues", vec_to_numpy(py, &table.eigenvalues))?;
    out.set_item(
        "explained_variance_ratio",
        vec_to_numpy(py, &table.explained_variance_ratio),
    )?;
    let nan_for_none =
        |v: &[Option<f64>]| -> Vec<f64> { v.iter().map(|x| x.unwrap_or(f64::NAN)).collect() };
    let criteria = PyList::empty(py);
    for result in &table.criteria {
        let d = choice_dict(py, &result.choice)?;
        d.set_item(
            "statistic",
            vec_to_numpy(py, &nan_for_none(&result.curve.statistic)),
        )?;
        d.set_item(
            "threshold",
            vec_to_numpy(py, &nan_for_none(&result.curve.threshold)),
        )?;
        criteria.append(d)?;
    }
    out.set_item("criteria", criteria)?;
    let unavailable = PyList::empty(py);
    for u in &table.unavailable {
        let d = PyDict::new(py);
        d.set_item("criterion", u.criterion.name())?;
        d.set_item("reason", &u.reason)?;
        unavailable.append(d)?;
    }
    out.set_item("unavailable", unavailable)?;
    out.set_item("fits", table.work.fits)?;
    Ok(out)
}

/// Writes the HTML report of a model, with the figures of `x` (and its labels) when given,
/// into the directory `output` (all or nothing); returns the drawn figures' stems and the
/// omitted ones with their reasons.
#[pyfunction]
#[pyo3(signature = (state, output, x=None, labels=None, image_shape=None, title=None))]
fn report<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    output: PathBuf,
    x: Option<&Bound<'py, PyAny>>,
    labels: Option<Vec<String>>,
    image_shape: Option<(usize, usize)>,
    title: Option<String>,
) -> PyResult<(Vec<String>, Vec<(String, String)>)> {
    // The report's codes are projections: a whitening model is drawn as the same model
    // without it (its components, reconstructions and spectrum do not depend on it).
    let model = model_from(state)?.with_whitening(Whitening::None);
    let input = match x {
        Some(x) => Some(Input::extract(x)?),
        None => None,
    };
    let view = match &input {
        Some(i) => Some(i.view()?),
        None => None,
    };
    let written = py.detach(|| -> Result<_, String> {
        let model_view = ModelView {
            n_samples: model.n_samples(),
            ddof: model.ddof(),
            scaling: match model.scaling() {
                Scaling::Standardize => principal_report::Scaling::Standardize,
                _ => principal_report::Scaling::Centre,
            },
            solver: model.solver().name(),
            total_variance: model.total_variance(),
            noise_variance: model.noise_variance(),
            mean: model.mean(),
            scale: model.scale(),
            components: model.components(),
            explained_variance: model.explained_variance(),
            explained_variance_ratio: model.explained_variance_ratio(),
        };
        let mut report = Report::new(model_view.clone()).map_err(|e| e.to_string())?;
        if let Some((h, w)) = image_shape {
            let shape = ImageShape::new(h, w).map_err(|e| e.to_string())?;
            report = report.with_image_shape(shape).map_err(|e| e.to_string())?;
        }
        let data = match view {
            None => None,
            Some(chunk) => {
                let mut builder = ReportDataBuilder::new(
                    &model_view,
                    labels.as_deref().map(Labels::new),
                    SampleChoice::default(),
                )
                .map_err(|e| e.to_string())?;
                with_matrix!(chunk, x => {
                    let codes = model.transform(x).map_err(|e| e.to_string())?;
                    builder.push(x, codes.as_ref()).map_err(|e| e.to_string())?;
                });
                Some(builder.finish().map_err(|e| e.to_string())?)
            }
        };
        if let Some(data) = &data {
            report = report.with_data(data).map_err(|e| e.to_string())?;
        }
        if let Some(title) = title {
            let options = principal_report::ReportOptions {
                title,
                ..principal_report::ReportOptions::default()
            };
            report = report.with_options(options).map_err(|e| e.to_string())?;
        }
        report
            .write(&output, &mut NoProgress)
            .map_err(|e| format!("cannot write the report {}: {e}", output.display()))
    });
    let written = written.map_err(PyValueError::new_err)?;
    let drawn = written
        .figures
        .iter()
        .map(|k| k.file_stem().to_owned())
        .collect();
    let omitted = written
        .omitted
        .iter()
        .map(|o| (o.kind.file_stem().to_owned(), o.reason.clone()))
        .collect();
    Ok((drawn, omitted))
}

/// The state of `state`'s model aligned to `reference`'s (rotated when `rotate`), the
/// principal angles between their subspaces in degrees, and for each aligned component its
/// original index, reference index (None when left over) and whether it was flipped.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn align<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    reference: &Bound<'py, PyDict>,
    rotate: bool,
) -> PyResult<(
    Bound<'py, PyDict>,
    Vec<f64>,
    Vec<(usize, Option<usize>, bool)>,
)> {
    let model = model_from(state)?;
    let reference = model_from(reference)?;
    let alignment = if rotate {
        principal::align::Alignment::Rotate
    } else {
        principal::align::Alignment::Match
    };
    let aligned = principal::align::align(&model, &reference, alignment).map_err(value_error)?;
    let angles = aligned.angles.iter().map(|t| t.to_degrees()).collect();
    let matches = aligned
        .matches
        .iter()
        .map(|m| (m.original, m.reference, m.flipped))
        .collect();
    Ok((state_of(py, &aligned.model)?, angles, matches))
}

/// A float64 2-D array as an owned matrix.
fn owned_f64(x: &Bound<'_, PyAny>) -> PyResult<Mat<f64>> {
    let a = x.extract::<PyReadonlyArray2<'_, f64>>()?;
    Ok(matrix(&a)?.to_owned())
}

/// A model fitted to `x` (float64) whose rows carry `weights` (FactoMineR's row.w).
#[pyfunction]
fn fit_weighted<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    weights: Vec<f64>,
    params: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = params_from(params)?;
    let x = owned_f64(x)?;
    let model = py
        .detach(|| params.fit_weighted(x.as_ref(), &weights))
        .map_err(value_error)?;
    state_of(py, &model)
}

/// FactoMineR's tables of the model on `x` (float64 arrays): a dict of numpy arrays, with
/// categories as (column index, level) and dimdesc's variables by index.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (state, x, row_weights, supplementary_rows, quantitative, qualitative, axes))]
fn describe<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
    row_weights: Option<Vec<f64>>,
    supplementary_rows: Option<Bound<'py, PyAny>>,
    quantitative: Option<Bound<'py, PyAny>>,
    qualitative: Vec<Vec<String>>,
    axes: usize,
) -> PyResult<Bound<'py, PyDict>> {
    use principal::describe::{DescribeInput, Variable, describe};
    let model = model_from(state)?;
    let x = owned_f64(x)?;
    let sup = supplementary_rows.map(|a| owned_f64(&a)).transpose()?;
    let quanti = quantitative.map(|a| owned_f64(&a)).transpose()?;
    let input = DescribeInput {
        row_weights: row_weights.as_deref(),
        supplementary_rows: sup.as_ref().map(|m| m.as_ref()),
        quantitative: quanti.as_ref().map(|m| m.as_ref()),
        qualitative: &qualitative,
        axes,
        ..DescribeInput::new(x.as_ref())
    };
    let d = py
        .detach(|| describe(&model, &input))
        .map_err(value_error)?;
    let out = PyDict::new(py);
    let table = |pairs: &[(&str, Bound<'py, PyAny>)]| -> PyResult<Bound<'py, PyDict>> {
        let t = PyDict::new(py);
        for (k, v) in pairs {
            t.set_item(*k, v)?;
        }
        Ok(t)
    };
    let m = |x: &Mat<f64>| mat_to_numpy(py, x).into_any();
    let v = |x: &[f64]| vec_to_numpy(py, x).into_any();
    out.set_item(
        "eig",
        table(&[
            ("eigenvalue", v(&d.eig.eigenvalue)),
            ("percent", v(&d.eig.percent)),
            ("cumulative_percent", v(&d.eig.cumulative_percent)),
        ])?,
    )?;
    out.set_item(
        "var",
        table(&[
            ("coord", m(&d.var.coord)),
            ("cor", m(&d.var.cor)),
            ("cos2", m(&d.var.cos2)),
            ("contrib", m(&d.var.contrib)),
        ])?,
    )?;
    out.set_item(
        "ind",
        table(&[
            ("coord", m(&d.ind.coord)),
            ("cos2", m(&d.ind.cos2)),
            ("contrib", m(&d.ind.contrib)),
            ("dist", v(&d.ind.dist)),
        ])?,
    )?;
    match &d.ind_sup {
        Some(t) => out.set_item(
            "ind_sup",
            table(&[
                ("coord", m(&t.coord)),
                ("cos2", m(&t.cos2)),
                ("dist", v(&t.dist)),
            ])?,
        )?,
        None => out.set_item("ind_sup", py.None())?,
    }
    match &d.quanti_sup {
        Some(t) => out.set_item(
            "quanti_sup",
            table(&[
                ("coord", m(&t.coord)),
                ("cor", m(&t.cor)),
                ("cos2", m(&t.cos2)),
            ])?,
        )?,
        None => out.set_item("quanti_sup", py.None())?,
    }
    match &d.quali_sup {
        Some(t) => {
            let categories: Vec<(usize, String)> = t
                .categories
                .iter()
                .map(|c| (c.column, c.level.clone()))
                .collect();
            let q = table(&[
                ("coord", m(&t.coord)),
                ("cos2", m(&t.cos2)),
                ("v_test", m(&t.v_test)),
                ("dist", v(&t.dist)),
                ("eta2", m(&t.eta2)),
            ])?;
            q.set_item("categories", categories)?;
            out.set_item("quali_sup", q)?;
        }
        None => out.set_item("quali_sup", py.None())?,
    }
    let variable = |v: Variable| match v {
        Variable::Active(j) => ("active", j),
        Variable::Quantitative(q) => ("quantitative", q),
    };
    let axes = PyList::empty(py);
    for a in &d.dimdesc {
        let t = PyDict::new(py);
        let quanti: Vec<(&str, usize, f64, f64)> = a
            .quantitative
            .iter()
            .map(|c| {
                let (kind, i) = variable(c.variable);
                (kind, i, c.correlation, c.p_value)
            })
            .collect();
        let quali: Vec<(usize, f64, f64)> = a
            .qualitative
            .iter()
            .map(|q| (q.column, q.r2, q.p_value))
            .collect();
        let category: Vec<(usize, f64, f64)> = a
            .categories
            .iter()
            .map(|c| (c.category, c.estimate, c.p_value))
            .collect();
        t.set_item("quanti", quanti)?;
        t.set_item("quali", quali)?;
        t.set_item("category", category)?;
        axes.append(t)?;
    }
    out.set_item("dimdesc", axes)?;
    Ok(out)
}

/// The data formats this build reads (`principal.FORMATS`): the core ones, and those of the
/// cargo features it was built with (`parquet`, `arrow`, `h5ad`: on by default, off in a build
/// with `--no-default-features`, which then names the feature a file needs).
fn formats() -> Vec<&'static str> {
    let mut formats = vec!["csv", "tsv", "text", "npy", "idx", "mtx"];
    for (built, name) in [
        (cfg!(feature = "parquet"), "parquet"),
        (cfg!(feature = "arrow"), "arrow"),
        (cfg!(feature = "h5ad"), "h5ad"),
    ] {
        if built {
            formats.push(name);
        }
    }
    formats
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The same bits on any number of threads, also where no fit runs in this process.
    principal::fix_faer_split();
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(transform, m)?)?;
    m.add_function(wrap_pyfunction!(transform_observed, m)?)?;
    m.add_function(wrap_pyfunction!(inverse_transform, m)?)?;
    m.add_function(wrap_pyfunction!(score_samples, m)?)?;
    m.add_function(wrap_pyfunction!(score_samples_observed, m)?)?;
    m.add_function(wrap_pyfunction!(covariance, m)?)?;
    m.add_function(wrap_pyfunction!(precision, m)?)?;
    m.add_function(wrap_pyfunction!(posterior, m)?)?;
    m.add_function(wrap_pyfunction!(sample, m)?)?;
    m.add_function(wrap_pyfunction!(impute, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(fit_files, m)?)?;
    m.add_function(wrap_pyfunction!(choose, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(align, m)?)?;
    crate::latent::register(m)?;
    crate::sparse::register(m)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(fit_weighted, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FORMATS", PyTuple::new(m.py(), formats())?)?;
    Ok(())
}
