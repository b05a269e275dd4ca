//! `PRINCIPAL_CPU`: a cap on the instruction sets principal's own kernels dispatch to, read once
//! per process, in the spirit of numpy's `NPY_DISABLE_CPU_FEATURES`, OpenBLAS's
//! `OPENBLAS_CORETYPE` and MKL's `MKL_ENABLE_INSTRUCTIONS`: to measure on an AVX-512 machine
//! what an AVX2-only machine runs (`bench/avx2-proxy.sh`), and to check that the paths agree.
//!
//! The cap reaches our dispatch only: the byte kernel ([`crate::byte_kernel`]) and the band
//! width of the narrow covariance products (`kernel::products`); our element-wise loops
//! (`kernel::simd`) go no wider than AVX2 anyway. faer chooses its matrix product kernels by
//! itself (AVX-512 where the CPU has it) and has no such switch.

use std::sync::OnceLock;

/// The widest instructions principal's own kernels may use, from `PRINCIPAL_CPU`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CpuLimit {
    /// Unset, empty or `native`: whatever this CPU runs (AMX, AVX-512, AVX2).
    Native,
    /// `avx-vnni`: AVX2, FMA and AVX-VNNI at most, as on Intel's client CPUs since Alder Lake
    /// (no AVX-512): the 256-bit `vpdpbusd` byte product where this CPU has AVX-VNNI, else as
    /// `avx2`.
    AvxVnni,
    /// `avx2`: AVX2 and FMA at most, as on an AVX2-only CPU: no AMX tiles, no AVX-512 (VNNI
    /// byte products, wide bands), no AVX-VNNI.
    Avx2,
}

impl std::fmt::Display for CpuLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CpuLimit::Native => "native",
            CpuLimit::AvxVnni => "avx-vnni",
            CpuLimit::Avx2 => "avx2",
        })
    }
}

/// The values `PRINCIPAL_CPU` takes, for error messages.
pub const CPU_LIMIT_VALUES: &str = "native, avx-vnni or avx2";

/// `PRINCIPAL_CPU`'s value read as a [`CpuLimit`], or the message that names the value it
/// does not know. [`cpu_limit`] treats an unknown value as `native`; the command-line tool
/// refuses it (exit 2) before any work starts.
pub fn cpu_limit_setting() -> Result<CpuLimit, String> {
    match std::env::var_os("PRINCIPAL_CPU") {
        None => Ok(CpuLimit::Native),
        Some(value) => parse(value.to_str()).ok_or_else(|| {
            format!("PRINCIPAL_CPU must be {CPU_LIMIT_VALUES} (or unset), not {value:?}")
        }),
    }
}

fn parse(value: Option<&str>) -> Option<CpuLimit> {
    match value?.trim().to_ascii_lowercase().as_str() {
        "" | "native" => Some(CpuLimit::Native),
        "avx-vnni" => Some(CpuLimit::AvxVnni),
        "avx2" => Some(CpuLimit::Avx2),
        _ => None,
    }
}

/// The cap of this process, read once from `PRINCIPAL_CPU` (an unknown value: no cap).
pub fn cpu_limit() -> CpuLimit {
    static LIMIT: OnceLock<CpuLimit> = OnceLock::new();
    *LIMIT.get_or_init(|| cpu_limit_setting().unwrap_or(CpuLimit::Native))
}

/// Whether our kernels may use AVX-512 (F) here: the CPU has it and `PRINCIPAL_CPU` allows it.
pub(crate) fn avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    if cpu_limit() == CpuLimit::Native {
        return std::arch::is_x86_feature_detected!("avx512f");
    }
    false
}

/// Whether this CPU has AVX-512 and runs its 512-bit instructions as two 256-bit halves:
/// AMD's Zen 4 (family 19h with AVX-512; Zen 3, the same family, has none). There faer's f64
/// kernels of one 512-bit register multiply about as fast as its kernels of three, unlike on
/// Intel's Xeons with two 512-bit FMA ports, so the narrow products' bands are best one
/// register wide (`kernel::products`). Read once: CPUID leaves a virtual machine on every call.
pub(crate) fn avx512_in_halves() -> bool {
    static HALVES: OnceLock<bool> = OnceLock::new();
    *HALVES.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            use std::arch::x86_64::__cpuid;
            let vendor = __cpuid(0);
            return is_amd_family_19h([vendor.ebx, vendor.edx, vendor.ecx], __cpuid(1).eax);
        }
        false
    })
}

/// Whether CPUID's vendor (leaf 0's EBX, EDX, ECX) and signature (leaf 1's EAX) name AMD's
/// family 19h (Zen 3 and Zen 4; AVX-512 tells them apart). Tested on every target; called on
/// x86-64 only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn is_amd_family_19h(vendor: [u32; 3], signature: u32) -> bool {
    // "AuthenticAMD", four bytes a register, little-endian.
    let amd = vendor == [0x6874_7541, 0x6974_6e65, 0x444d_4163];
    // The base family (bits 11:8) plus, where it is 0xF, the extended family (bits 27:20).
    let base = (signature >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((signature >> 20) & 0xff)
    } else {
        base
    };
    amd && family == 0x19
}

/// Whether our kernels may use more than AVX2 and AVX-VNNI (AMX tiles, AVX-512 VNNI products).
pub(crate) fn beyond_avx2() -> bool {
    cpu_limit() == CpuLimit::Native
}

/// Whether our kernels may use AVX-VNNI (the CPU's own check is the kernel's).
pub(crate) fn avx_vnni() -> bool {
    cpu_limit() != CpuLimit::Avx2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPUID signatures of real CPUs (leaf 1's EAX): AMD's family 19h is told by the extended
    /// family, and only with AMD's vendor string.
    #[test]
    fn amd_family_19h_is_told_by_vendor_and_family() {
        let amd = [0x6874_7541, 0x6974_6e65, 0x444d_4163];
        let intel = [0x756e_6547, 0x4965_6e69, 0x6c65_746e]; // "GenuineIntel"
        assert!(is_amd_family_19h(amd, 0x00a1_0f11)); // EPYC 9004 (Genoa), family 19h model 11h
        assert!(is_amd_family_19h(amd, 0x00a6_0f12)); // Ryzen 7000 (Raphael), family 19h model 61h
        assert!(is_amd_family_19h(amd, 0x00a0_0f11)); // EPYC 7003 (Milan, Zen 3), no AVX-512
        assert!(!is_amd_family_19h(amd, 0x00b0_0f21)); // EPYC 9005 (Turin, Zen 5), family 1Ah
        assert!(!is_amd_family_19h(amd, 0x0083_0f10)); // EPYC 7002 (Rome, Zen 2), family 17h
        assert!(!is_amd_family_19h(intel, 0x000c_06f2)); // Xeon (Emerald Rapids), model CFh
        assert!(!is_amd_family_19h(intel, 0x00a1_0f11)); // AMD's signature with Intel's vendor
        // The whole vendor string counts, not its first register ("Auth").
        assert!(!is_amd_family_19h(
            [amd[0], intel[1], intel[2]],
            0x00a1_0f11
        ));
    }

    #[test]
    fn cpu_limits_are_read_without_regard_to_case_or_spaces() {
        assert_eq!(parse(Some("avx2")), Some(CpuLimit::Avx2));
        assert_eq!(parse(Some(" AVX2 ")), Some(CpuLimit::Avx2));
        assert_eq!(parse(Some("AVX-VNNI")), Some(CpuLimit::AvxVnni));
        assert_eq!(parse(Some("avxvnni")), None);
        assert_eq!(parse(Some("native")), Some(CpuLimit::Native));
        assert_eq!(parse(Some("")), Some(CpuLimit::Native));
        assert_eq!(parse(Some("avx512")), None);
        assert_eq!(parse(Some("sse2")), None);
        assert_eq!(parse(None), None);
    }
}
