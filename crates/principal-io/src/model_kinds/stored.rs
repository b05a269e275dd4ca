//! What every kind's module shares: the tensors and metadata it stores ([`Stored`]), the
//! bytes of its matrices, and the reading of its file ([`Reading`]). Apart from `mod.rs`, so
//! that the kinds import it and `mod.rs` imports the kinds, without a cycle.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;

use faer::{Mat, MatRef};
use safetensors::tensor::SafeTensors;

use crate::error::{IoError, Result};
use crate::model_file::f64_tensor;

/// The tensors and metadata of one kind's file, before the keys every file has.
pub(crate) struct Stored {
    pub data: Vec<(&'static str, Vec<usize>, Vec<u8>)>,
    pub meta: Vec<(&'static str, String)>,
}

/// The values of a matrix, row by row, as little-endian bytes.
pub(crate) fn matrix_bytes(m: MatRef<'_, f64>) -> Vec<u8> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
        .flat_map(f64::to_le_bytes)
        .collect()
}

/// Values as little-endian bytes.
pub(crate) fn vector_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().copied().flat_map(f64::to_le_bytes).collect()
}

/// What a kind's reader gets: the file's metadata and tensors, with helpers that name the file
/// in their errors.
pub(crate) struct Reading<'a> {
    pub path: &'a Path,
    pub meta: &'a HashMap<String, String>,
    pub tensors: &'a SafeTensors<'a>,
}

impl Reading<'_> {
    pub fn not_model(&self, detail: String) -> IoError {
        IoError::NotAModel {
            path: self.path.to_owned(),
            detail,
        }
    }

    /// The metadata value `key`, parsed.
    pub fn value<T: FromStr>(&self, key: &str) -> Result<T> {
        let text = self
            .meta
            .get(key)
            .ok_or_else(|| self.not_model(format!("the metadata has no {key:?}")))?;
        text.parse().map_err(|_| {
            self.not_model(format!(
                "metadata {key:?} = {text:?} is not a valid {}",
                std::any::type_name::<T>()
            ))
        })
    }

    /// The metadata value `key`, parsed by `parse` (an option enum's `FromStr`).
    pub fn named<T>(
        &self,
        key: &str,
        parse: impl Fn(&str) -> std::result::Result<T, String>,
    ) -> Result<T> {
        let text = self
            .meta
            .get(key)
            .ok_or_else(|| self.not_model(format!("the metadata has no {key:?}")))?;
        parse(text).map_err(|e| self.not_model(format!("metadata {key:?}: {e}")))
    }

    /// The F64 tensor `name` of `len` values.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f64>> {
        f64_tensor(self.tensors, name, &[len]).map_err(|e| self.not_model(e))
    }

    /// The length of the 1-D tensor `name`.
    pub fn length(&self, name: &str) -> Result<usize> {
        let view = self
            .tensors
            .tensor(name)
            .map_err(|_| self.not_model(format!("it has no tensor {name:?}")))?;
        match view.shape() {
            [n] => Ok(*n),
            shape => Err(self.not_model(format!("tensor {name:?} has shape {shape:?}, not 1-D"))),
        }
    }

    /// The F64 tensor `name`, rows×cols, row-major.
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Mat<f64>> {
        let flat = f64_tensor(self.tensors, name, &[rows, cols]).map_err(|e| self.not_model(e))?;
        Ok(Mat::from_fn(rows, cols, |i, j| flat[i * cols + j]))
    }

    /// The model's consistency error, naming the file.
    pub fn invalid(&self, source: principal::PcaError) -> IoError {
        IoError::InvalidModel {
            path: self.path.to_owned(),
            source,
        }
    }
}
