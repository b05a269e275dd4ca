//! The format readers, each built on [`crate::read`] alone: delimited text, the dense binary
//! arrays of NPY and IDX (which share their decoding, in `binary`), and the columnar files,
//! Parquet and Arrow IPC, and AnnData `.h5ad` (HDF5). No reader imports another, except NPY's and IDX's use of `binary`.

pub(crate) mod binary;
pub(crate) mod columnar;
pub(crate) mod csv;
pub(crate) mod h5ad;
pub(crate) mod idx;
pub(crate) mod mtx;
pub(crate) mod npy;
