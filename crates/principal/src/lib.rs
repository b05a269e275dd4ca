//! # principal — principal component analysis, exact and fast
//!
//! The math of PCA and nothing else: no files, no terminal. Readers and writers live in
//! `principal-io`, the command-line tool in `principal-cli`.
//!
//! Two layers, as in faer:
//! - solver functions over matrix views ([`solver`]), each returning a [`Spectrum`];
//! - an owned, fitted [`PcaModel`] with plain accessors named as in scikit-learn
//!   (`components()`, `explained_variance()`, … without the trailing underscore).
//!
//! Conventions (see the project's SPEC): data is N×D, one sample per row; the mean is always
//! subtracted; covariance is `Xcᵀ Xc / (N − ddof)` with `ddof = 1` by default; components are
//! sorted by decreasing eigenvalue and each has its entry of largest magnitude positive.
//!
//! ```
//! use principal::{faer::mat, ComponentCount, PcaBuilder};
//!
//! // The houses example: price and area move together, so one component explains everything.
//! let x = mat![[10.0, 10.0], [2.0, 2.0], [7.0, 7.0], [1.0, 1.0], [5.0, 5.0]];
//! let model = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?.fit(x.as_ref())?;
//! let codes = model.transform(x.as_ref())?;
//! assert!((codes[(0, 0)].abs() - 7.0711).abs() < 1e-4);
//! assert!((model.explained_variance_ratio()[0] - 1.0).abs() < 1e-12);
//! # Ok::<(), principal::PcaError>(())
//! ```

mod byte_products;
mod crossprod;
mod error;
mod model;
mod moments;
mod params;
mod prepare;
mod real;
mod simd;
pub mod solver;
mod source;
mod sparse_rows;

pub use error::{PcaError, Result};
pub use faer;
pub use model::{ModelParts, PcaModel};
pub use moments::{MomentAccumulator, Moments};
pub use params::{
    format_bytes, Candidate, ComponentCount, IterativeOptions, PcaBuilder, PcaParams, PowerMethod,
    Precision, RandomizedMethod, Scaling, Solver, SolverPlan, MIXED_BLOCK_ROWS,
};
pub use real::Real;
pub use solver::{IterationReport, Spectrum};
pub use source::{source_error, ChunkRef, ChunkSource, InMemory};

#[cfg(test)]
mod tests;
