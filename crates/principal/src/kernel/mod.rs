//! Leaf numerics, below everything else in the crate: run-time SIMD dispatch, scans of every
//! value (finiteness, sums, integer ranges), shifted copies of blocks, lower-triangle products
//! of a block with itself, and the exact byte product's wrapper. They know nothing of moments,
//! solvers or models.
//!
//! Inside: `cpu` (the `PRINCIPAL_CPU` cap on our dispatch), `simd`, `parallel`, `madd` (the
//! AVX2, AVX-VNNI and AVX-512 VNNI byte products) and `amx` (the AMX tile byte product, over
//! the `principal-amx` crate) at the bottom; `scan`, `blocks`, `products` and `bytes` use them
//! (and nothing of each other).

pub(crate) mod amx;
pub(crate) mod blocks;
pub(crate) mod bytes;
pub(crate) mod cpu;
pub(crate) mod madd;
pub(crate) mod parallel;
pub(crate) mod products;
pub(crate) mod scan;
pub(crate) mod simd;

/// A thread's CPU time in seconds (Linux's /proc/thread-self/schedstat), which a loaded machine
/// disturbs less than wall time: the clock of the ignored timing loops.
#[cfg(test)]
pub(crate) fn thread_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("Linux's per-thread CPU time");
    stat.split_whitespace()
        .next()
        .unwrap()
        .parse::<f64>()
        .unwrap()
        * 1e-9
}
