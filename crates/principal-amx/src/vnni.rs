//! AVX-VNNI's 256-bit `vpdpbusd` (`_mm256_dpbusd_avx_epi32`) behind a safe interface, in the
//! manner of pulp's SIMD tokens: an [`AvxVnni`] exists only where the CPU has AVX, AVX2, FMA
//! and AVX-VNNI; [`AvxVnni::vectorize`] runs a [`WithAvxVnni`] compiled for those instructions
//! (generic, so it is instantiated in the caller's crate with its closure inlined), and
//! [`AvxVnni::dot`] is the instruction, inlined into it. The rest of the kernel (packing,
//! tiles, tasks) is `principal`'s `kernel::madd`, in safe code.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m256i;

/// Proof that this CPU runs AVX, AVX2, FMA and AVX-VNNI (Intel's client cores since Alder
/// Lake; not the AVX-512 form, which needs no token here).
#[derive(Clone, Copy, Debug)]
pub struct AvxVnni {
    _private: (),
    /// No value exists off x86-64.
    #[cfg(not(target_arch = "x86_64"))]
    never: std::convert::Infallible,
}

/// Work to run with AVX-VNNI enabled, as pulp's `WithSimd`.
pub trait WithAvxVnni {
    type Output;
    /// The work; mark it `#[inline(always)]` so that it is compiled for AVX-VNNI.
    fn with_avx_vnni(self, vnni: AvxVnni) -> Self::Output;
}

impl AvxVnni {
    /// The token where this CPU has AVX, AVX2, FMA and AVX-VNNI, else `None`.
    pub fn try_new() -> Option<AvxVnni> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("avxvnni")
        {
            return Some(AvxVnni { _private: () });
        }
        None
    }

    /// Runs `work` compiled with AVX, AVX2, FMA and AVX-VNNI enabled.
    #[inline(always)]
    pub fn vectorize<W: WithAvxVnni>(self, work: W) -> W::Output {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx,avx2,fma,avxvnni")]
            fn with_features<W: WithAvxVnni>(vnni: AvxVnni, work: W) -> W::Output {
                work.with_avx_vnni(vnni)
            }
            // SAFETY: an `AvxVnni` exists only where `try_new` found these features.
            unsafe { with_features(self, work) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self.never {}
    }

    /// `acc + Σ_{i < 4} u[4l + i] · y[4l + i]` in each `i32` lane `l`: `u` as 32 unsigned
    /// bytes, `y` as 32 signed ones; the four products (each at most 255·128 in magnitude) and
    /// their sum are exact, and the addition to `acc` wraps as `i32` additions do (no
    /// saturation: that is `vpdpbusds`).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn dot(self, acc: __m256i, u: __m256i, y: __m256i) -> __m256i {
        // SAFETY: an `AvxVnni` exists only where the CPU has AVX-VNNI; inlined into
        // `vectorize`'s work, the intrinsic compiles to the one instruction.
        unsafe { std::arch::x86_64::_mm256_dpbusd_avx_epi32(acc, u, y) }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The instruction against plain `i32` arithmetic on the extremes (255 against −128 and
    /// 127, where a saturating form would clip) and on mixed bytes; where the CPU has no
    /// AVX-VNNI the test says so and checks that no token exists.
    #[test]
    fn dot_sums_four_unsigned_by_signed_products_into_each_lane_exactly() {
        let Some(vnni) = AvxVnni::try_new() else {
            println!("no AVX-VNNI on this CPU: vpdpbusd (256-bit) not run here");
            assert!(!std::arch::is_x86_feature_detected!("avxvnni"));
            return;
        };
        let u: [u8; 32] = std::array::from_fn(|i| if i < 16 { 255 } else { (i * 37 % 256) as u8 });
        let y: [i8; 32] = std::array::from_fn(|i| match i % 3 {
            0 => -128,
            1 => 127,
            _ => (i as i8).wrapping_mul(11),
        });
        let acc: [i32; 8] = std::array::from_fn(|l| i32::MAX - 3 * l as i32);
        struct Run {
            u: [u8; 32],
            y: [i8; 32],
            acc: [i32; 8],
        }
        impl WithAvxVnni for Run {
            type Output = [i32; 8];
            #[inline(always)]
            fn with_avx_vnni(self, vnni: AvxVnni) -> [i32; 8] {
                // SAFETY: 32-byte plain arrays and `__m256i` have the same size, any bits.
                let cast = |b: [u8; 32]| unsafe { std::mem::transmute::<[u8; 32], __m256i>(b) };
                // SAFETY: as above.
                let y = unsafe { std::mem::transmute::<[i8; 32], [u8; 32]>(self.y) };
                // SAFETY: as above.
                let acc = unsafe { std::mem::transmute::<[i32; 8], [u8; 32]>(self.acc) };
                let sums = vnni.dot(cast(acc), cast(self.u), cast(y));
                // SAFETY: as above.
                unsafe { std::mem::transmute::<__m256i, [i32; 8]>(sums) }
            }
        }
        let got = vnni.vectorize(Run { u, y, acc });
        for l in 0..8 {
            let sum: i32 = (0..4)
                .map(|i| i32::from(u[4 * l + i]) * i32::from(y[4 * l + i]))
                .sum();
            assert_eq!(got[l], acc[l].wrapping_add(sum), "lane {l}");
        }
    }
}
