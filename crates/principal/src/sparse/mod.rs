//! Sparse data, never densified: CSR blocks of rows ([`CsrRef`], [`Csr`], [`CsrChunk`]), the
//! re-readable [`SparseSource`] that hands them out (as [`crate::ChunkSource`] does dense
//! chunks), and the products the solvers need of them (`products`, crate-internal).
//!
//! A sparse fit ([`crate::PcaParams::fit_sparse`], [`crate::PcaParams::fit_sparse_source`])
//! subtracts the mean implicitly inside every product, so the zeros stay zeros:
//!
//! ```text
//! covariance route:   Σ (x − μ)(x − μ)ᵀ = Σ_blocks (X_bᵀ X_b − n_b μ_b μ_bᵀ) merged by Chan's update
//! iterative routes:   Xcᵀ Xc P = Xᵀ Y − μ (1ᵀ Y),   Y = X P − 1 (μᵀ P)
//! transform:          Z = X V − 1 (μᵀ V)
//! ```
//!
//! Memory: the blocks a source hands out, plus O(D·L) per pass (L = the block of vectors), or
//! D×D on the covariance route.

pub mod csr;
pub(crate) mod products;
pub mod source;

pub use csr::{Csr, CsrChunk, CsrRef, SparseIndex};
pub use source::{SparseInMemory, SparseSource};
