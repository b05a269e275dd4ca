//! Whether the tile product runs here: the CPU's AMX-INT8, the operating system's tile state
//! and Linux's grant of it to this process. Also compiled into the build script (`build.rs`),
//! so that the tests of the tile product are listed as ignored, with the reason, where it does
//! not run, and a test checks that the build decided as the library does.

#[cfg(target_arch = "x86_64")]
pub(crate) fn cpu_has_amx_int8() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    if __cpuid(0).eax < 0x1d {
        return false;
    }
    let edx = __cpuid_count(7, 0).edx;
    let (tile, int8) = ((edx >> 24) & 1 == 1, (edx >> 25) & 1 == 1);
    if !(tile && int8) {
        return false;
    }
    // Palette 1: bytes a row (EBX 15:0), tile registers (EBX 31:16), rows (ECX 15:0).
    let palette = __cpuid_count(0x1d, 1);
    let (row_bytes, names, rows) = (
        palette.ebx & 0xffff,
        palette.ebx >> 16,
        palette.ecx & 0xffff,
    );
    row_bytes >= 64 && names >= 8 && rows >= 16
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn cpu_has_amx_int8() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
pub(crate) fn detect() -> bool {
    use std::arch::x86_64::__cpuid;
    if !cpu_has_amx_int8() {
        return false;
    }
    // XGETBV exists only where the OS set CR4.OSXSAVE (CPUID leaf 1, ECX bit 27).
    if (__cpuid(1).ecx >> 27) & 1 == 0 {
        return false;
    }
    // SAFETY: `_xgetbv` needs the `xsave` feature, which OSXSAVE (checked above) implies; it
    // reads XCR0 and touches no memory.
    let xcr0 = unsafe { std::arch::x86_64::_xgetbv(0) };
    // XTILECFG (bit 17) and XTILEDATA (bit 18): the OS saves both on a context switch.
    if (xcr0 >> 17) & 3 != 3 {
        return false;
    }
    request_tile_data()
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn detect() -> bool {
    false
}

/// Asks Linux for the tile data state, for every thread of the process (Linux 5.16 and later):
/// `true` if granted (or already granted).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_tile_data() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl(ARCH_REQ_XCOMP_PERM, feature) takes two integers and touches no
    // memory of ours; it fails (−1) on kernels or machines that do not offer the state.
    let result = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    result == 0
}

/// Elsewhere the request is not made: the tile product is not used.
#[cfg(all(target_arch = "x86_64", not(target_os = "linux")))]
fn request_tile_data() -> bool {
    false
}
