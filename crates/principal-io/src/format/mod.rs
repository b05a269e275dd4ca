//! The format readers, each built on [`crate::read`] alone: delimited text, the dense binary
//! arrays of NPY and IDX (which share their decoding, in `binary`), and the columnar files,
//! Parquet and Arrow IPC, and AnnData `.h5ad` (HDF5). No reader imports another, except NPY's and IDX's use of `binary`.

pub(crate) mod binary;
#[cfg(any(feature = "parquet", feature = "arrow"))]
pub(crate) mod columnar;
// Built without both formats' features: openers that name the feature a file needs.
#[cfg(not(any(feature = "parquet", feature = "arrow")))]
#[path = "columnar/absent.rs"]
pub(crate) mod columnar;
pub(crate) mod csv;
#[cfg(feature = "h5ad")]
pub(crate) mod h5ad;
// Built without the `h5ad` feature: an opener that names it.
#[cfg(not(feature = "h5ad"))]
#[path = "h5ad_absent.rs"]
pub(crate) mod h5ad;
pub(crate) mod idx;
pub(crate) mod mtx;
pub(crate) mod npy;
