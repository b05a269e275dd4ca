//! AVX-512 VNNI's `vpdpbusd` on 512-bit vectors (`_mm512_dpbusd_epi32`: 64 `u8 × i8`
//! multiply-adds an instruction, twice the 256-bit form's) and the few other 512-bit operations
//! a tile of sums needs, behind a safe interface as [`crate::Dot256`]: [`Vnni512`] exists only
//! where the CPU runs them, [`Vnni512::vectorize`] runs a [`WithVnni512`] compiled for them,
//! and its methods are the instructions, inlined into it. The operands travel as [`Lanes16`],
//! 64 bytes aligned as a vector, so that no load splits a cache line. The kernel around them
//! (packing, tiles, tasks) is `principal`'s `kernel::madd`, in safe code.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::__m512i;

/// Sixteen `i32` lanes aligned to 64 bytes: one 512-bit vector's worth of packed operands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Lanes16(pub [i32; 16]);

/// Proof that this CPU runs AVX2, FMA, AVX-512 F and AVX-512 VNNI (the EVEX `vpdpbusd` on
/// 512-bit vectors).
#[derive(Clone, Copy, Debug)]
pub struct Vnni512 {
    _private: (),
    /// No value exists off x86-64.
    #[cfg(not(target_arch = "x86_64"))]
    never: std::convert::Infallible,
}

/// Work to run with [`Vnni512`]'s instructions enabled, as pulp's `WithSimd`.
pub trait WithVnni512 {
    type Output;
    /// The work; mark it `#[inline(always)]` so that it is compiled for the instructions.
    fn with_vnni512(self, vnni: Vnni512) -> Self::Output;
}

impl Vnni512 {
    /// The token where this CPU runs the instructions, else `None`.
    pub fn try_new() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vnni")
        {
            return Some(Vnni512 { _private: () });
        }
        None
    }

    /// Runs `work` compiled with the instructions' features enabled.
    #[inline(always)]
    pub fn vectorize<W: WithVnni512>(self, work: W) -> W::Output {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx,avx2,fma,avx512f,avx512vnni")]
            fn with_features<W: WithVnni512>(vnni: Vnni512, work: W) -> W::Output {
                work.with_vnni512(vnni)
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
}

#[cfg(target_arch = "x86_64")]
impl Vnni512 {
    /// All lanes zero.
    #[inline(always)]
    pub fn zero(self) -> __m512i {
        // SAFETY: the token exists only where the CPU runs AVX-512 F.
        unsafe { std::arch::x86_64::_mm512_setzero_si512() }
    }

    /// `value` in every lane (from memory, a `vpbroadcastd`, which Intel's cores run on their
    /// load ports).
    #[inline(always)]
    pub fn broadcast(self, value: i32) -> __m512i {
        // SAFETY: as `zero`.
        unsafe { std::arch::x86_64::_mm512_set1_epi32(value) }
    }

    /// The lanes as a vector (an aligned load).
    #[inline(always)]
    pub fn load(self, lanes: &Lanes16) -> __m512i {
        // SAFETY: `Lanes16` is 64 bytes aligned to 64, as `_mm512_load_si512` requires, and
        // the token exists only where the CPU runs AVX-512 F.
        unsafe { std::arch::x86_64::_mm512_load_si512(lanes.0.as_ptr().cast()) }
    }

    /// The vector's lanes.
    #[inline(always)]
    pub fn lanes(self, vector: __m512i) -> Lanes16 {
        let mut lanes = Lanes16::default();
        // SAFETY: as `load`, into the aligned 64 bytes of `lanes`.
        unsafe { std::arch::x86_64::_mm512_store_si512(lanes.0.as_mut_ptr().cast(), vector) };
        lanes
    }

    /// `a + b` lane by lane, wrapping as `i32` additions do.
    #[inline(always)]
    pub fn add(self, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: as `zero`.
        unsafe { std::arch::x86_64::_mm512_add_epi32(a, b) }
    }

    /// `acc + Σ_{i < 4} u[4l + i] · y[4l + i]` in each `i32` lane `l`: `u` as 64 unsigned
    /// bytes, `y` as 64 signed ones; exact as [`crate::Dot256::dot`] (the sum added to `acc`
    /// wraps, never saturates).
    #[inline(always)]
    pub fn dot(self, acc: __m512i, u: __m512i, y: __m512i) -> __m512i {
        // SAFETY: the token exists only where the CPU runs AVX-512 VNNI.
        unsafe { std::arch::x86_64::_mm512_dpbusd_epi32(acc, u, y) }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Every operation against plain `i32` arithmetic: the products on the extremes (255
    /// against −128 and 127, where a saturating form would clip) and mixed bytes, into
    /// accumulators that wrap; where the CPU lacks AVX-512 VNNI, the test says so and checks
    /// that no token exists.
    #[test]
    fn dot_sums_four_unsigned_by_signed_products_into_each_lane_exactly() {
        let has = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vnni");
        let Some(vnni) = Vnni512::try_new() else {
            println!("no AVX-512 VNNI on this CPU: its 512-bit vpdpbusd not run here");
            assert!(!has, "AVX-512 VNNI is here, the token is not");
            return;
        };
        let u: [u8; 64] = std::array::from_fn(|i| if i < 24 { 255 } else { (i * 37 % 256) as u8 });
        let y: [i8; 64] = std::array::from_fn(|i| match i % 3 {
            0 => -128,
            1 => 127,
            _ => (i as i8).wrapping_mul(11),
        });
        let word = |bytes: [u8; 4]| i32::from_le_bytes(bytes);
        let u_lanes = Lanes16(std::array::from_fn(|l| {
            word(std::array::from_fn(|i| u[4 * l + i]))
        }));
        let y_lanes = Lanes16(std::array::from_fn(|l| {
            word(std::array::from_fn(|i| y[4 * l + i] as u8))
        }));
        let acc = Lanes16(std::array::from_fn(|l| i32::MAX - 3 * l as i32));
        struct Run([Lanes16; 3]);
        impl WithVnni512 for Run {
            type Output = (Lanes16, Lanes16, Lanes16);
            #[inline(always)]
            fn with_vnni512(self, vnni: Vnni512) -> Self::Output {
                let [acc, u, y] = self.0.map(|lanes| vnni.load(&lanes));
                let sums = vnni.dot(acc, u, y);
                let twice = vnni.add(sums, sums);
                let seven = vnni.add(vnni.zero(), vnni.broadcast(7));
                (vnni.lanes(sums), vnni.lanes(twice), vnni.lanes(seven))
            }
        }
        let (sums, twice, seven) = vnni.vectorize(Run([acc, u_lanes, y_lanes]));
        for l in 0..16 {
            let sum: i32 = (0..4)
                .map(|i| i32::from(u[4 * l + i]) * i32::from(y[4 * l + i]))
                .sum();
            let want = acc.0[l].wrapping_add(sum);
            assert_eq!(sums.0[l], want, "lane {l}");
            assert_eq!(twice.0[l], want.wrapping_add(want), "lane {l}");
            assert_eq!(seven.0[l], 7, "lane {l}");
        }
    }
}
