//! `vzeroupper`: clears the upper halves of this thread's vector registers.
//!
//! Code that leaves them dirty (faer's AVX-512 matrix-product kernels, on the threads that ran
//! them) makes instructions of the old SSE encoding slow on Intel cores until something clears
//! them, and glibc's `exp`, `log` and `tanh` switch between the two encodings on every call. On
//! a Xeon (Sapphire Rapids family), applying the rbf function to kernel PCA's 3,000 × 3,000
//! inner products (9 million `exp` calls, two threads) took 0.86–0.93 s after faer's product
//! and 0.035–0.045 s with the state cleared first (bench/results.md, 2026-12-07). Compiled
//! code clears it where it leaves its own vector code; this is for the state another library
//! left behind.

/// Clears the upper halves of this thread's vector registers (`vzeroupper`) where the CPU has
/// AVX; elsewhere nothing. Cheap (one instruction): call it before a run of scalar library
/// calls on a thread that may have run faer's products.
///
/// ```
/// principal_amx::clear_upper_state();
/// assert_eq!((1.0f64).exp(), std::f64::consts::E);
/// ```
pub fn clear_upper_state() {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX, the only requirement of `vzeroupper`; it changes no register
        // a caller can hold across the call (the upper halves are dead at a function boundary
        // in the x86-64 calling convention).
        unsafe { zero_upper() }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn zero_upper() {
    std::arch::x86_64::_mm256_zeroupper();
}
