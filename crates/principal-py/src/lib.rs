//! # principal-py — the native half of the Python package `principal`
//!
//! The functions of the module `principal._native`, over which the Python package's
//! scikit-learn-facing classes (`principal.PCA`, `principal.choose`, …) are plain Python.
//! A fitted model crosses the boundary as a dict of numpy arrays and numbers (its *state*:
//! every field of [`principal::ModelParts`]), so that the Python object pickles, clones and
//! holds nothing native; each call rebuilds the [`principal::PcaModel`] from it, checked by
//! [`principal::PcaModel::from_parts`] (an M×D copy, negligible beside any product with the data).
//!
//! Arrays: 2-D float32 or float64 in C or Fortran order are read in place, as faer views of
//! numpy's buffer (no copy); the Python side converts other dtypes and copies only arrays that
//! are neither C- nor Fortran-contiguous. The GIL is released around every fit, transform,
//! score and report, and the work runs on every core (rayon's global pool).
//!
//! Everything here is behind the `python` feature, which maturin turns on: without it
//! (`cargo build --workspace`) the crate is empty and needs no Python.

#![deny(unsafe_code)]

#[cfg(feature = "python")]
mod latent;
#[cfg(feature = "python")]
mod native;
#[cfg(feature = "python")]
mod sparse;
