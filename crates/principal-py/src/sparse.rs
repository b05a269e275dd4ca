//! scipy.sparse matrices in `principal._native`: `fit_sparse` and `transform_sparse` over a CSR
//! matrix's three arrays, read in place (no densifying; the row pointers only are copied, to
//! `usize`), through the sparse core (`PcaParams::fit_sparse`, `PcaModel::transform_sparse`):
//! the mean is subtracted implicitly inside every product.

use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use principal::sparse::{CsrChunk, CsrRef};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::native::{mat_to_numpy, model_from, params_from, state_of, value_error};

/// A CSR matrix's values, float32 or float64, borrowed.
enum Values<'py> {
    F32(PyReadonlyArray1<'py, f32>),
    F64(PyReadonlyArray1<'py, f64>),
}

/// The row pointers as `usize`, checked non-negative (the rest `CsrRef::new` checks).
fn pointers(indptr: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    let slice = indptr.as_slice().map_err(value_error)?;
    slice
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            usize::try_from(p)
                .map_err(|_| PyValueError::new_err(format!("indptr[{i}] = {p} is negative")))
        })
        .collect()
}

/// Runs `f` on the CSR matrix of `n_cols` columns given by its arrays, the GIL released.
fn with_csr<'py, R: Send>(
    py: Python<'py>,
    n_cols: usize,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, u32>,
    data: &Bound<'py, PyAny>,
    f: impl Fn(CsrChunk<'_>) -> principal::Result<R> + Send + Sync,
) -> PyResult<R> {
    let values = if let Ok(a) = data.extract::<PyReadonlyArray1<'py, f64>>() {
        Values::F64(a)
    } else if let Ok(a) = data.extract::<PyReadonlyArray1<'py, f32>>() {
        Values::F32(a)
    } else {
        return Err(PyTypeError::new_err(
            "expected the values of a sparse matrix as float32 or float64",
        ));
    };
    let ptr = pointers(&indptr)?;
    let indices = indices.as_slice().map_err(value_error)?;
    let chunk: CsrChunk<'_> = match &values {
        Values::F64(v) => CsrRef::new(n_cols, &ptr, indices, v.as_slice().map_err(value_error)?)
            .map_err(value_error)?
            .into(),
        Values::F32(v) => CsrRef::new(n_cols, &ptr, indices, v.as_slice().map_err(value_error)?)
            .map_err(value_error)?
            .into(),
    };
    py.detach(|| f(chunk)).map_err(value_error)
}

/// Fits a model to the CSR matrix (`n_cols` columns; `indptr`, `indices`, `data`) with the
/// parameters `params`; returns its state.
#[pyfunction]
fn fit_sparse<'py>(
    py: Python<'py>,
    n_cols: usize,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, u32>,
    data: &Bound<'py, PyAny>,
    params: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let params = params_from(params)?;
    if indptr.len() == 0 {
        return Err(PyValueError::new_err("indptr is empty"));
    }
    let model = with_csr(py, n_cols, indptr, indices, data, |x| params.fit_sparse(x))?;
    state_of(py, &model)
}

/// The codes of the CSR matrix's rows under the model of `state`.
#[pyfunction]
fn transform_sparse<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
    n_cols: usize,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, u32>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
    let model = model_from(state)?;
    let z = with_csr(py, n_cols, indptr, indices, data, |x| {
        model.transform_sparse(x)
    })?;
    Ok(mat_to_numpy(py, &z))
}

/// Adds this module's functions to `principal._native`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_sparse, m)?)?;
    m.add_function(wrap_pyfunction!(transform_sparse, m)?)?;
    Ok(())
}
