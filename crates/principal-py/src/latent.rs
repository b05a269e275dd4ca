//! The native functions of `principal.BayesianPCA`, `principal.MixturePPCA`,
//! `principal.FactorAnalysis`, `principal.KernelPCA` and `principal.FastICA`: fit, and the
//! methods of a fitted model rebuilt from its state dict (as `native` does for PCA: the state
//! is numpy arrays and numbers, checked by `from_parts` on every call).

use numpy::ndarray::{Array2, Array3};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
};
use principal::faer::Mat;
use principal::{
    BayesianPca, BayesianPcaOptions, BayesianPcaParts, ChunkRef, Cluster, Contrast, FactorAnalysis,
    FactorAnalysisParams, FactorAnalysisParts, FastIca, FastIcaParams, FastIcaParts, Kernel,
    KernelFunction, KernelPca, KernelPcaParams, KernelPcaParts, LatentModel, MissingValues,
    MixtureOptions, MixtureParts, MixturePpca, PreImage, Real, Rotation,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::native::{Input, item, mat_to_numpy, value_error};

fn read_matrix(a: PyReadonlyArray2<'_, f64>) -> Mat<f64> {
    let v = a.as_array();
    Mat::from_fn(v.nrows(), v.ncols(), |i, j| v[(i, j)])
}

fn read_vector(a: PyReadonlyArray1<'_, f64>) -> Vec<f64> {
    a.as_array().to_vec()
}

/// Runs `f` on the f32 or f64 view of `x`, the GIL released.
fn on_input<'py, R: Send>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    f: impl Fn(ChunkRef<'_>) -> principal::Result<R> + Send + Sync,
) -> PyResult<R> {
    let input = Input::extract(x)?;
    let view = input.view()?;
    py.detach(|| f(view)).map_err(value_error)
}

macro_rules! on {
    ($chunk:expr, $m:ident => $body:expr) => {
        match $chunk {
            ChunkRef::F32($m) => $body,
            ChunkRef::F64($m) => $body,
        }
    };
}

fn bpca_state<'py>(py: Python<'py>, model: &BayesianPca) -> PyResult<Bound<'py, PyDict>> {
    let p = model.parts();
    let s = PyDict::new(py);
    s.set_item("mean", PyArray1::from_slice(py, &p.mean))?;
    s.set_item("components", mat_to_numpy(py, &p.components))?;
    s.set_item("alpha", PyArray1::from_slice(py, &p.alpha))?;
    s.set_item("noise_variance", p.noise_variance)?;
    s.set_item("log_likelihood", p.log_likelihood)?;
    s.set_item("n_samples", p.n_samples)?;
    s.set_item("iterations", p.iterations)?;
    s.set_item("converged", p.converged)?;
    s.set_item(
        "log_likelihood_history",
        PyArray1::from_slice(py, model.log_likelihood_history()),
    )?;
    Ok(s)
}

fn bpca_from(state: &Bound<'_, PyDict>) -> PyResult<BayesianPca> {
    BayesianPca::from_parts(BayesianPcaParts {
        mean: read_vector(item(state, "mean")?.extract()?),
        components: read_matrix(item(state, "components")?.extract()?),
        alpha: read_vector(item(state, "alpha")?.extract()?),
        noise_variance: item(state, "noise_variance")?.extract()?,
        log_likelihood: item(state, "log_likelihood")?.extract()?,
        n_samples: item(state, "n_samples")?.extract()?,
        iterations: item(state, "iterations")?.extract()?,
        converged: item(state, "converged")?.extract()?,
    })
    .map_err(value_error)
}

/// Fits Bayesian PCA; returns its state.
#[pyfunction]
fn bpca_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    max_components: usize,
    missing: &str,
    tolerance: f64,
    max_iterations: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = BayesianPcaOptions::new(max_components);
    options.missing = missing.parse::<MissingValues>().map_err(value_error)?;
    options.tolerance = tolerance;
    options.max_iterations = max_iterations;
    let model = on_input(py, x, |c| on!(c, m => BayesianPca::fit(m, &options)))?;
    bpca_state(py, &model)
}

/// The posterior means of the latent points.
#[pyfunction]
fn bpca_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = bpca_from(state)?;
    let z = on_input(py, x, |c| on!(c, m => model.transform(m)))?;
    Ok(mat_to_numpy(py, &z))
}

/// The log-likelihood of every row.
#[pyfunction]
fn bpca_score_samples<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let model = bpca_from(state)?;
    let s = on_input(py, x, |c| on!(c, m => model.score_samples(m)))?;
    Ok(PyArray1::from_vec(py, s))
}

/// `count` seeded samples.
#[pyfunction]
fn bpca_sample<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    count: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = bpca_from(state)?;
    Ok(mat_to_numpy(py, &model.sample(count, seed)))
}

fn mixture_state<'py>(py: Python<'py>, model: &MixturePpca) -> PyResult<Bound<'py, PyDict>> {
    let p = model.parts();
    let (c, k, d) = (model.n_clusters(), model.n_components(), model.n_features());
    let s = PyDict::new(py);
    s.set_item("weights", PyArray1::from_slice(py, &p.weights))?;
    let means = Array2::from_shape_fn((c, d), |(i, j)| p.clusters[i].mean[j]);
    s.set_item("means", means.into_pyarray(py))?;
    let components = Array3::from_shape_fn((c, k, d), |(i, m, j)| p.clusters[i].components[(m, j)]);
    s.set_item("components", components.into_pyarray(py))?;
    let variance = Array2::from_shape_fn((c, k), |(i, m)| p.clusters[i].explained_variance[m]);
    s.set_item("explained_variance", variance.into_pyarray(py))?;
    let noise: Vec<f64> = p.clusters.iter().map(|cl| cl.noise_variance).collect();
    s.set_item("noise_variance", PyArray1::from_vec(py, noise))?;
    s.set_item("log_likelihood", p.log_likelihood)?;
    s.set_item("n_samples", p.n_samples)?;
    s.set_item("iterations", p.iterations)?;
    s.set_item("converged", p.converged)?;
    s.set_item(
        "log_likelihood_history",
        PyArray1::from_slice(py, model.log_likelihood_history()),
    )?;
    s.set_item(
        "restart_log_likelihoods",
        PyArray1::from_slice(py, model.restart_log_likelihoods()),
    )?;
    Ok(s)
}

fn mixture_from(state: &Bound<'_, PyDict>) -> PyResult<MixturePpca> {
    let means = read_matrix(item(state, "means")?.extract()?);
    let components: PyReadonlyArray3<'_, f64> = item(state, "components")?.extract()?;
    let components = components.as_array();
    let variance = read_matrix(item(state, "explained_variance")?.extract()?);
    let noise = read_vector(item(state, "noise_variance")?.extract()?);
    let (c, k, d) = components.dim();
    if means.nrows() != c || variance.nrows() != c || noise.len() != c {
        return Err(value_error("the state's cluster arrays differ in length"));
    }
    let clusters = (0..c)
        .map(|i| Cluster {
            mean: (0..means.ncols()).map(|j| means[(i, j)]).collect(),
            components: Mat::from_fn(k, d, |m, j| components[(i, m, j)]),
            explained_variance: (0..variance.ncols()).map(|m| variance[(i, m)]).collect(),
            noise_variance: noise[i],
        })
        .collect();
    MixturePpca::from_parts(MixtureParts {
        weights: read_vector(item(state, "weights")?.extract()?),
        clusters,
        log_likelihood: item(state, "log_likelihood")?.extract()?,
        n_samples: item(state, "n_samples")?.extract()?,
        iterations: item(state, "iterations")?.extract()?,
        converged: item(state, "converged")?.extract()?,
    })
    .map_err(value_error)
}

/// Fits a mixture of probabilistic PCAs; returns its state.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mixture_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    clusters: usize,
    components: usize,
    restarts: usize,
    seed: u64,
    tolerance: f64,
    max_iterations: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let mut options = MixtureOptions::new(clusters, components);
    options.restarts = restarts;
    options.seed = seed;
    options.tolerance = tolerance;
    options.max_iterations = max_iterations;
    let model = on_input(py, x, |c| on!(c, m => MixturePpca::fit(m, &options)))?;
    mixture_state(py, &model)
}

/// The log-likelihood of every row under the mixture.
#[pyfunction]
fn mixture_score_samples<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let model = mixture_from(state)?;
    let s = on_input(py, x, |c| on!(c, m => model.score_samples(m)))?;
    Ok(PyArray1::from_vec(py, s))
}

/// The responsibilities, N×C.
#[pyfunction]
fn mixture_predict_proba<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = mixture_from(state)?;
    let r = on_input(py, x, |c| on!(c, m => model.predict_proba(m)))?;
    Ok(mat_to_numpy(py, &r))
}

/// `count` seeded samples and the cluster of each.
#[pyfunction]
fn mixture_sample<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    count: usize,
    seed: u64,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Vec<usize>)> {
    let model = mixture_from(state)?;
    let (x, labels) = model.sample(count, seed);
    Ok((mat_to_numpy(py, &x), labels))
}

/// `x` as an owned f64 matrix (the linear models beyond PCA compute in f64).
fn owned<T: Real>(x: principal::faer::MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)].to_f64())
}

/// Runs `f` on `x` as an f64 matrix (float32 input converted), the GIL released.
fn on_f64<'py, R: Send>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    f: impl Fn(principal::faer::MatRef<'_, f64>) -> principal::Result<R> + Send + Sync,
) -> PyResult<R> {
    on_input(py, x, |c| match c {
        ChunkRef::F32(m) => f(owned(m).as_ref()),
        ChunkRef::F64(m) => f(m),
    })
}

fn parse<T: std::str::FromStr<Err = String>>(text: &str) -> PyResult<T> {
    text.parse::<T>().map_err(value_error)
}

fn fa_state<'py>(py: Python<'py>, model: &FactorAnalysis) -> PyResult<Bound<'py, PyDict>> {
    let p = model.to_parts();
    let s = PyDict::new(py);
    s.set_item("components", mat_to_numpy(py, &p.components))?;
    s.set_item(
        "noise_variance",
        PyArray1::from_slice(py, &p.noise_variance),
    )?;
    s.set_item("mean", PyArray1::from_slice(py, &p.mean))?;
    s.set_item("n_samples", p.n_samples)?;
    s.set_item("rotation", p.rotation.name())?;
    s.set_item("log_likelihood", p.log_likelihood)?;
    s.set_item(
        "log_likelihood_history",
        PyArray1::from_slice(py, &p.log_likelihood_history),
    )?;
    s.set_item("converged", p.converged)?;
    s.set_item("distance", p.distance)?;
    s.set_item("tolerance", p.tolerance)?;
    Ok(s)
}

fn fa_from(state: &Bound<'_, PyDict>) -> PyResult<FactorAnalysis> {
    FactorAnalysis::from_parts(FactorAnalysisParts {
        components: read_matrix(item(state, "components")?.extract()?),
        noise_variance: read_vector(item(state, "noise_variance")?.extract()?),
        mean: read_vector(item(state, "mean")?.extract()?),
        n_samples: item(state, "n_samples")?.extract()?,
        rotation: parse(&item(state, "rotation")?.extract::<String>()?)?,
        log_likelihood: item(state, "log_likelihood")?.extract()?,
        log_likelihood_history: read_vector(item(state, "log_likelihood_history")?.extract()?),
        converged: item(state, "converged")?.extract()?,
        distance: item(state, "distance")?.extract()?,
        tolerance: item(state, "tolerance")?.extract()?,
    })
    .map_err(value_error)
}

/// Fits factor analysis; returns its state.
#[pyfunction]
fn fa_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    components: usize,
    rotation: &str,
    tolerance: f64,
    max_iterations: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let mut params = FactorAnalysisParams::new(components);
    params.rotation = parse::<Rotation>(rotation)?;
    params.tolerance = tolerance;
    params.max_iterations = max_iterations;
    let model = on_f64(py, x, |m| params.fit(m))?;
    fa_state(py, &model)
}

/// The posterior means of the factors.
#[pyfunction]
fn fa_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = fa_from(state)?;
    Ok(mat_to_numpy(py, &on_f64(py, x, |m| model.transform(m))?))
}

/// The log-likelihood of every row.
#[pyfunction]
fn fa_score_samples<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let model = fa_from(state)?;
    Ok(PyArray1::from_vec(
        py,
        on_f64(py, x, |m| model.score_samples(m))?,
    ))
}

/// The model covariance `WᵀW + diag ψ`.
#[pyfunction]
fn fa_covariance<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    Ok(mat_to_numpy(py, &fa_from(state)?.covariance()))
}

/// The model precision, the covariance's inverse.
#[pyfunction]
fn fa_precision<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let precision = fa_from(state)?.precision().map_err(value_error)?;
    Ok(mat_to_numpy(py, &precision))
}

fn kpca_state<'py>(py: Python<'py>, model: &KernelPca) -> PyResult<Bound<'py, PyDict>> {
    let p = model.to_parts();
    let s = PyDict::new(py);
    s.set_item("kernel", p.kernel.function.name())?;
    s.set_item("gamma", p.kernel.gamma)?;
    s.set_item("degree", p.kernel.degree)?;
    s.set_item("coef0", p.kernel.coef0)?;
    s.set_item("alpha", p.alpha)?;
    s.set_item("eigenvalues", PyArray1::from_slice(py, &p.eigenvalues))?;
    s.set_item("eigenvectors", mat_to_numpy(py, &p.eigenvectors))?;
    s.set_item("training", mat_to_numpy(py, &p.training))?;
    s.set_item("column_means", PyArray1::from_slice(py, &p.column_means))?;
    s.set_item("all_mean", p.all_mean)?;
    s.set_item("training_codes", mat_to_numpy(py, &p.training_codes))?;
    match &p.dual_coef {
        Some(dual_coef) => s.set_item("dual_coef", mat_to_numpy(py, dual_coef))?,
        None => s.set_item("dual_coef", py.None())?,
    }
    Ok(s)
}

fn kpca_from(state: &Bound<'_, PyDict>) -> PyResult<KernelPca> {
    KernelPca::from_parts(KernelPcaParts {
        kernel: Kernel {
            function: parse(&item(state, "kernel")?.extract::<String>()?)?,
            gamma: item(state, "gamma")?.extract()?,
            degree: item(state, "degree")?.extract()?,
            coef0: item(state, "coef0")?.extract()?,
        },
        alpha: item(state, "alpha")?.extract()?,
        eigenvalues: read_vector(item(state, "eigenvalues")?.extract()?),
        eigenvectors: read_matrix(item(state, "eigenvectors")?.extract()?),
        training: read_matrix(item(state, "training")?.extract()?),
        column_means: read_vector(item(state, "column_means")?.extract()?),
        all_mean: item(state, "all_mean")?.extract()?,
        training_codes: read_matrix(item(state, "training_codes")?.extract()?),
        dual_coef: item(state, "dual_coef")?
            .extract::<Option<_>>()?
            .map(read_matrix),
    })
    .map_err(value_error)
}

/// Fits kernel PCA; returns its state.
#[pyfunction]
#[pyo3(signature = (x, components, kernel, gamma, degree, coef0, alpha, pre_image))]
#[allow(clippy::too_many_arguments)]
fn kpca_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    components: usize,
    kernel: &str,
    gamma: Option<f64>,
    degree: f64,
    coef0: f64,
    alpha: f64,
    pre_image: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let mut params = KernelPcaParams::new(components);
    params.pre_image = parse::<PreImage>(pre_image)?;
    params.kernel = parse::<KernelFunction>(kernel)?;
    params.gamma = gamma;
    params.degree = degree;
    params.coef0 = coef0;
    params.alpha = alpha;
    let model = on_f64(py, x, |m| params.fit(m))?;
    kpca_state(py, &model)
}

/// The codes of new rows through their kernel with the training rows.
#[pyfunction]
fn kpca_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = kpca_from(state)?;
    Ok(mat_to_numpy(py, &on_f64(py, x, |m| model.transform(m))?))
}

/// Rows from codes through the learned pre-image map.
#[pyfunction]
fn kpca_inverse_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    z: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = kpca_from(state)?;
    Ok(mat_to_numpy(
        py,
        &on_f64(py, z, |m| model.inverse_transform(m))?,
    ))
}

fn ica_state<'py>(py: Python<'py>, model: &FastIca) -> PyResult<Bound<'py, PyDict>> {
    let p = model.to_parts();
    let s = PyDict::new(py);
    s.set_item("components", mat_to_numpy(py, &p.components))?;
    s.set_item("mixing", mat_to_numpy(py, &p.mixing))?;
    s.set_item("mean", PyArray1::from_slice(py, &p.mean))?;
    s.set_item("n_samples", p.n_samples)?;
    s.set_item("fun", p.fun.name())?;
    s.set_item("seed", p.seed)?;
    s.set_item("iterations", p.iterations)?;
    s.set_item("converged", p.converged)?;
    s.set_item("change", p.change)?;
    s.set_item("tolerance", p.tolerance)?;
    Ok(s)
}

fn ica_from(state: &Bound<'_, PyDict>) -> PyResult<FastIca> {
    FastIca::from_parts(FastIcaParts {
        components: read_matrix(item(state, "components")?.extract()?),
        mixing: read_matrix(item(state, "mixing")?.extract()?),
        mean: read_vector(item(state, "mean")?.extract()?),
        n_samples: item(state, "n_samples")?.extract()?,
        fun: parse::<Contrast>(&item(state, "fun")?.extract::<String>()?)?,
        seed: item(state, "seed")?.extract()?,
        iterations: item(state, "iterations")?.extract()?,
        converged: item(state, "converged")?.extract()?,
        change: item(state, "change")?.extract()?,
        tolerance: item(state, "tolerance")?.extract()?,
    })
    .map_err(value_error)
}

/// Fits FastICA; returns its state. `initial_unmixing` is scikit-learn's `w_init` (K×K).
#[pyfunction]
#[pyo3(signature = (x, components, fun, tolerance, max_iterations, seed, initial_unmixing=None))]
#[allow(clippy::too_many_arguments)]
fn ica_fit<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    components: usize,
    fun: &str,
    tolerance: f64,
    max_iterations: usize,
    seed: u64,
    initial_unmixing: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut params = FastIcaParams::new(components);
    params.fun = parse::<Contrast>(fun)?;
    params.tolerance = tolerance;
    params.max_iterations = max_iterations;
    params.seed = seed;
    params.initial_unmixing = initial_unmixing.map(read_matrix);
    let model = on_f64(py, x, |m| params.fit(m))?;
    ica_state(py, &model)
}

/// The sources of rows.
#[pyfunction]
fn ica_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = ica_from(state)?;
    Ok(mat_to_numpy(py, &on_f64(py, x, |m| model.transform(m))?))
}

/// Rows from sources through the mixing matrix.
#[pyfunction]
fn ica_inverse_transform<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    s: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let model = ica_from(state)?;
    Ok(mat_to_numpy(
        py,
        &on_f64(py, s, |m| model.inverse_transform(m))?,
    ))
}

/// Adds the functions to the module `principal._native`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(bpca_fit, m)?)?;
    m.add_function(wrap_pyfunction!(bpca_transform, m)?)?;
    m.add_function(wrap_pyfunction!(bpca_score_samples, m)?)?;
    m.add_function(wrap_pyfunction!(bpca_sample, m)?)?;
    m.add_function(wrap_pyfunction!(mixture_fit, m)?)?;
    m.add_function(wrap_pyfunction!(mixture_score_samples, m)?)?;
    m.add_function(wrap_pyfunction!(mixture_predict_proba, m)?)?;
    m.add_function(wrap_pyfunction!(mixture_sample, m)?)?;
    m.add_function(wrap_pyfunction!(fa_fit, m)?)?;
    m.add_function(wrap_pyfunction!(fa_transform, m)?)?;
    m.add_function(wrap_pyfunction!(fa_score_samples, m)?)?;
    m.add_function(wrap_pyfunction!(fa_covariance, m)?)?;
    m.add_function(wrap_pyfunction!(fa_precision, m)?)?;
    m.add_function(wrap_pyfunction!(kpca_fit, m)?)?;
    m.add_function(wrap_pyfunction!(kpca_transform, m)?)?;
    m.add_function(wrap_pyfunction!(kpca_inverse_transform, m)?)?;
    m.add_function(wrap_pyfunction!(ica_fit, m)?)?;
    m.add_function(wrap_pyfunction!(ica_transform, m)?)?;
    m.add_function(wrap_pyfunction!(ica_inverse_transform, m)?)?;
    Ok(())
}
