//! Leaf numerics, below everything else in the crate: run-time SIMD dispatch, scans of every
//! value (finiteness, sums, integer ranges), shifted copies of blocks, lower-triangle products
//! of a block with itself, and the exact byte product's wrapper. They know nothing of moments,
//! solvers or models.
//!
//! Inside: `simd`, `parallel` and `madd` (the AVX2 byte product) at the bottom; `scan`,
//! `blocks`, `products` and `bytes` use them (and nothing of each other).

pub(crate) mod blocks;
pub(crate) mod bytes;
pub(crate) mod madd;
pub(crate) mod parallel;
pub(crate) mod products;
pub(crate) mod scan;
pub(crate) mod simd;
