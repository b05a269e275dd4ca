//! The 256-bit `vpdpbusd` (`u8 × i8`, four products a lane summed into `i32`) behind a safe
//! interface, in the manner of pulp's SIMD tokens, in both encodings: [`AvxVnni`] (VEX,
//! `_mm256_dpbusd_avx_epi32`: Intel's client cores since Alder Lake, which have no AVX-512) and
//! [`Avx512Vnni`] (EVEX, `_mm256_dpbusd_epi32`: AVX-512 VNNI with VL, on Xeons since Cascade
//! Lake and AMD since Zen 4). A token exists only where its instructions run;
//! [`Dot256::vectorize`] runs a [`WithDot256`] compiled for them (generic, so instantiated in
//! the caller's crate with the work inlined), and [`Dot256::dot`] is the instruction, inlined
//! into it. The rest of the kernel (packing, tiles, tasks) is `principal`'s `kernel::madd`, in
//! safe code.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m256i;

/// A 256-bit `vpdpbusd` this CPU runs.
pub trait Dot256: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The token where this CPU runs the instruction (and AVX2 and FMA), else `None`.
    fn try_new() -> Option<Self>;

    /// Runs `work` compiled with the instruction's features (and AVX2 and FMA) enabled.
    fn vectorize<W: WithDot256<Self>>(self, work: W) -> W::Output;

    /// `acc + Σ_{i < 4} u[4l + i] · y[4l + i]` in each `i32` lane `l`: `u` as 32 unsigned
    /// bytes, `y` as 32 signed ones; the four products (each at most 255·128 in magnitude) and
    /// their sum are exact, and the addition to `acc` wraps as `i32` additions do (no
    /// saturation: that is `vpdpbusds`). Inline it into [`Self::vectorize`]'s work.
    #[cfg(target_arch = "x86_64")]
    fn dot(self, acc: __m256i, u: __m256i, y: __m256i) -> __m256i;
}

/// Work to run with a [`Dot256`]'s instructions enabled, as pulp's `WithSimd`.
pub trait WithDot256<D> {
    type Output;
    /// The work; mark it `#[inline(always)]` so that it is compiled for the instructions.
    fn with_dot(self, dot: D) -> Self::Output;
}

/// Proof that this CPU runs AVX, AVX2, FMA and AVX-VNNI (the VEX `vpdpbusd`).
#[derive(Clone, Copy, Debug)]
pub struct AvxVnni {
    _private: (),
    /// No value exists off x86-64.
    #[cfg(not(target_arch = "x86_64"))]
    never: std::convert::Infallible,
}

/// Proof that this CPU runs AVX2, FMA, AVX-512 F and VL and AVX-512 VNNI (the EVEX
/// `vpdpbusd` on 256-bit vectors).
#[derive(Clone, Copy, Debug)]
pub struct Avx512Vnni {
    _private: (),
    /// No value exists off x86-64.
    #[cfg(not(target_arch = "x86_64"))]
    never: std::convert::Infallible,
}

/// `impl Dot256` for a token: the CPU features `try_new` checks (the same, comma-separated, for
/// `target_feature`) and the intrinsic.
macro_rules! dot256 {
    ($token:ident, [$($feature:tt),+], $features:literal, $intrinsic:ident) => {
        impl Dot256 for $token {
            fn try_new() -> Option<Self> {
                #[cfg(target_arch = "x86_64")]
                if $(std::arch::is_x86_feature_detected!($feature))&&+ {
                    return Some($token { _private: () });
                }
                None
            }

            #[inline(always)]
            fn vectorize<W: WithDot256<Self>>(self, work: W) -> W::Output {
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = $features)]
                    fn with_features<W: WithDot256<$token>>(dot: $token, work: W) -> W::Output {
                        work.with_dot(dot)
                    }
                    // SAFETY: the token exists only where `try_new` found these features.
                    unsafe { with_features(self, work) }
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    let _ = work;
                    match self.never {}
                }
            }

            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            fn dot(self, acc: __m256i, u: __m256i, y: __m256i) -> __m256i {
                // SAFETY: the token exists only where the CPU runs the instruction.
                unsafe { std::arch::x86_64::$intrinsic(acc, u, y) }
            }
        }
    };
}

dot256!(
    AvxVnni,
    ["avx", "avx2", "fma", "avxvnni"],
    "avx,avx2,fma,avxvnni",
    _mm256_dpbusd_avx_epi32
);
dot256!(
    Avx512Vnni,
    ["avx", "avx2", "fma", "avx512f", "avx512vl", "avx512vnni"],
    "avx,avx2,fma,avx512f,avx512vl,avx512vnni",
    _mm256_dpbusd_epi32
);

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Each instruction against plain `i32` arithmetic on the extremes (255 against −128 and
    /// 127, where a saturating form would clip), on mixed bytes and on accumulators that wrap;
    /// where the CPU lacks one, the test says so and checks that no token exists.
    #[test]
    fn dot_sums_four_unsigned_by_signed_products_into_each_lane_exactly() {
        check::<AvxVnni>("avxvnni", std::arch::is_x86_feature_detected!("avxvnni"));
        check::<Avx512Vnni>(
            "avx512vnni",
            std::arch::is_x86_feature_detected!("avx512vnni"),
        );
    }

    fn check<D: Dot256>(name: &str, has: bool) {
        let Some(dot) = D::try_new() else {
            println!("no {name} on this CPU: its vpdpbusd not run here");
            assert!(!has, "{name} is here, the token is not");
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
        impl<D: Dot256> WithDot256<D> for Run {
            type Output = [i32; 8];
            #[inline(always)]
            fn with_dot(self, dot: D) -> [i32; 8] {
                // SAFETY: 32-byte plain arrays and `__m256i` have the same size, any bits.
                let cast = |b: [u8; 32]| unsafe { std::mem::transmute::<[u8; 32], __m256i>(b) };
                // SAFETY: as above.
                let y = unsafe { std::mem::transmute::<[i8; 32], [u8; 32]>(self.y) };
                // SAFETY: as above.
                let acc = unsafe { std::mem::transmute::<[i32; 8], [u8; 32]>(self.acc) };
                let sums = dot.dot(cast(acc), cast(self.u), cast(y));
                // SAFETY: as above.
                unsafe { std::mem::transmute::<__m256i, [i32; 8]>(sums) }
            }
        }
        let got = dot.vectorize(Run { u, y, acc });
        for l in 0..8 {
            let sum: i32 = (0..4)
                .map(|i| i32::from(u[4 * l + i]) * i32::from(y[4 * l + i]))
                .sum();
            assert_eq!(got[l], acc[l].wrapping_add(sum), "{name}, lane {l}");
        }
    }
}
