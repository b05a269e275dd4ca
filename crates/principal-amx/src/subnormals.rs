//! Subnormal numbers flushed to zero on one thread for a while: x86-64's MXCSR bits FTZ
//! (flush-to-zero, bit 15) and DAZ (denormals-are-zero, bit 6).
//!
//! Why: Intel cores take a microcode assist, about a hundred cycles, for every floating-point
//! operation whose result or operand is subnormal (AMD's Zen cores mostly do not). faer's
//! `norm_l2` keeps three sums of squares so that no vector overflows or underflows, one of
//! them of `x · 2^-511`: for an ordinary vector (entries near 0.03) every term of that sum is
//! subnormal. On a 2-core Xeon (family 6 model 207) a norm of 784 such values took 8.7 µs,
//! against 0.19 µs with FTZ and DAZ set, with the same result; faer's Krylov–Schur takes
//! such a norm once per vector of its basis at every Lanczos step.
//!
//! What changes with the bits set: a value below `f64::MIN_POSITIVE` (2.2e-308) that an
//! operation would produce is 0, and such a value read as an operand counts as 0. The
//! results of computations in which no subnormal arises are the same bits; faer's norm of a
//! vector whose entries are not themselves below about 1e-154 is one of those.

use std::marker::PhantomData;

/// FTZ and DAZ.
#[cfg(target_arch = "x86_64")]
const FLUSH: u32 = (1 << 15) | (1 << 6);

/// While it lives, this thread's SSE and AVX arithmetic flushes subnormal results to zero
/// and reads subnormal operands as zero (x86-64; elsewhere it changes nothing). Dropping it
/// restores the mode it found, so guards nest. It cannot leave its thread: the mode is a
/// thread's (each thread has its own MXCSR), and work handed to other threads runs in theirs.
///
/// ```
/// use std::hint::black_box;
/// use principal_amx::SubnormalsFlushed;
///
/// let tiny = black_box(f64::MIN_POSITIVE);
/// assert!(tiny / black_box(4.0) > 0.0); // a subnormal, by default
/// {
///     let _flushed = SubnormalsFlushed::new();
///     if cfg!(target_arch = "x86_64") {
///         assert_eq!(tiny / black_box(4.0), 0.0);
///     }
/// }
/// assert!(tiny / black_box(4.0) > 0.0);
/// ```
#[derive(Debug)]
pub struct SubnormalsFlushed {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
    /// Not `Send`: the guard must be dropped on the thread whose mode it set.
    _thread: PhantomData<*const ()>,
}

impl SubnormalsFlushed {
    /// Sets FTZ and DAZ on this thread until the guard is dropped.
    #[allow(clippy::new_without_default)] // a guard is made for its effect, not as a default
    pub fn new() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let saved = read_mxcsr();
            write_mxcsr(saved | FLUSH);
            SubnormalsFlushed {
                saved,
                _thread: PhantomData,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        SubnormalsFlushed {
            _thread: PhantomData,
        }
    }
}

impl Drop for SubnormalsFlushed {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        write_mxcsr(self.saved);
    }
}

/// Whether this thread flushes subnormal results to zero now (FTZ set).
pub fn subnormals_flushed() -> bool {
    #[cfg(target_arch = "x86_64")]
    return read_mxcsr() & (1 << 15) != 0;
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
fn read_mxcsr() -> u32 {
    let mut value = 0u32;
    // SAFETY: `stmxcsr` stores the 4-byte MXCSR at the address given, which is `value`'s, a
    // live, aligned u32 of this frame; it reads no memory and changes no other state.
    unsafe {
        std::arch::asm!(
            "stmxcsr [{}]",
            in(reg) &mut value,
            options(nostack, preserves_flags),
        );
    }
    value
}

#[cfg(target_arch = "x86_64")]
fn write_mxcsr(value: u32) {
    // SAFETY: `ldmxcsr` loads MXCSR from `value`, a live u32 of this frame. The values written
    // are the saved MXCSR or it with FTZ and DAZ set: no reserved bit is set (which would
    // fault), the rounding mode and the exception masks are kept, so no floating-point
    // exception can trap. The compiler assumes the default mode for the code it folds at
    // compile time; under FTZ/DAZ only results involving subnormals can differ from it,
    // which is the documented effect of the guard.
    unsafe {
        std::arch::asm!(
            "ldmxcsr [{}]",
            in(reg) &value,
            options(nostack, readonly, preserves_flags),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    fn quarter_of_smallest_normal() -> f64 {
        black_box(f64::MIN_POSITIVE) / black_box(4.0)
    }

    #[test]
    fn flushes_while_alive_and_restores_nested() {
        assert!(!subnormals_flushed());
        assert!(quarter_of_smallest_normal() > 0.0);
        {
            let _outer = SubnormalsFlushed::new();
            {
                let _inner = SubnormalsFlushed::new();
                assert_eq!(subnormals_flushed(), cfg!(target_arch = "x86_64"));
            }
            // The inner guard restores the mode it found: still flushing.
            assert_eq!(subnormals_flushed(), cfg!(target_arch = "x86_64"));
            if cfg!(target_arch = "x86_64") {
                assert_eq!(quarter_of_smallest_normal(), 0.0);
                // DAZ: a subnormal operand counts as zero.
                let subnormal = f64::from_bits(1);
                assert_eq!(black_box(subnormal) * black_box(2.0), 0.0);
            }
        }
        assert!(!subnormals_flushed());
        assert!(quarter_of_smallest_normal() > 0.0);
        assert_eq!(
            black_box(f64::from_bits(1)) * black_box(2.0),
            f64::from_bits(2)
        );
    }
}
