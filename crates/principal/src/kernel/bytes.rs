//! The exact integer product of a block of bytes, `G = U Y`: `u8` times `i8`, summed in `i32`.
//!
//! faer multiplies floating-point matrices only; rten-gemm's integer kernels do this product,
//! and do more work per instruction than an f32 product (AVX-512 VNNI's `vpdpbusd` does 64
//! multiply-adds where an f32 FMA does 16; on aarch64, NEON's dot products). They are exact
//! only where they cannot saturate: without VNNI, x86's `vpmaddubsw` adds pairs of products in
//! `i16` with saturation. So [`GemmBytes::available`] offers the product only where it is
//! exact. On x86-64 our own tiles (`kernel::madd`, only the triangle of the product) come
//! before it: [`WideBytes`] (AVX-512 VNNI's `vpdpbusd` on 512-bit vectors, faster than
//! rten-gemm's whole square on the same instruction; [`Vnni512Bytes`], the same instruction
//! on 256-bit vectors, only on request), [`VnniBytes`] (AVX-VNNI's: Intel's client cores
//! since Alder Lake) or else [`MaddBytes`] (bytes widened to `i16`, `vpmaddwd`
//! into `i32`). Where Intel's AMX-INT8 tiles run (Xeon Sapphire Rapids and later),
//! [`AmxBytes`] (`kernel::amx`: `tdpbusd`, 16,384 multiply-adds an instruction, the triangle
//! only) comes before all. [`MachineBytes`] is the one production uses, chosen once per
//! process ([`byte_kernel`]). Everything around the product (the blocks' layout, the gathering
//! of rows, the sums) is generic over [`ByteProduct`], so that tests run it with a portable
//! reference product, and with each kernel this CPU has, on every machine.

use std::sync::OnceLock;

use crate::kernel::amx;
use crate::kernel::madd;

use rten_gemm::{GemmExecutor, GemmInputA, GemmInputB, GemmOptions};
use rten_tensor::NdTensorView;

/// An exact product of a block of bytes.
pub(crate) trait ByteProduct: Sized {
    /// The product, or `None` where it is not available exactly on this machine.
    fn available() -> Option<Self>;

    /// `product = U Y`, every sum exact: U is `(a + 1) × r` in `u`, row-major; Y is `r × a`,
    /// stored feature by feature in `y` (its column `t` is `y[t·r..(t + 1)·r]`); `product` is
    /// `(a + 1) × a`, row-major. Only its entries `G[s][t]` with `t ≥ s` and its last row are
    /// wanted (the rest may hold anything: a kernel may skip them). The caller keeps every sum
    /// within `i32`.
    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]);
}

/// rten-gemm's `u8 × i8 → i32` kernel.
pub(crate) struct GemmBytes(GemmExecutor<u8, i8, i32>);

impl GemmBytes {
    /// The machine's kernel, whether or not its sums may saturate (tests of the layout use
    /// values too small to saturate any kernel).
    fn any_kernel() -> Self {
        GemmBytes(GemmExecutor::default())
    }
}

impl ByteProduct for GemmBytes {
    fn available() -> Option<Self> {
        let gemm = Self::any_kernel();
        (!gemm.0.may_saturate()).then_some(gemm)
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        let lhs = NdTensorView::from_data([a + 1, r], &u[..(a + 1) * r]);
        let rhs = NdTensorView::from_data_with_strides([r, a], &y[..a * r], [1, r])
            .expect("the block holds a features of r bytes");
        self.0
            .gemm(
                &mut product[..(a + 1) * a],
                GemmInputA::Unpacked(lhs),
                GemmInputB::Unpacked(rhs),
                GemmOptions::default(),
            )
            .expect("the shapes agree");
    }
}

/// `vpmaddwd` on bytes widened to `i16` (x86-64 with AVX2): exact on every byte.
pub(crate) struct MaddBytes;

impl ByteProduct for MaddBytes {
    fn available() -> Option<Self> {
        madd::available().then_some(MaddBytes)
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        let done = madd::multiply(u, y, a, r, product);
        assert!(done, "MaddBytes exists only where AVX2 does");
    }
}

/// A 256-bit `vpdpbusd` (`D`: AVX-VNNI's VEX form, or AVX-512 VNNI's EVEX form with VL) on
/// the AVX2 kernel's tiles: exact on every byte.
pub(crate) struct DotBytes<D>(std::marker::PhantomData<D>);

/// AVX-VNNI's (Intel's client CPUs since Alder Lake, which have no AVX-512).
pub(crate) type VnniBytes = DotBytes<principal_amx::AvxVnni>;

/// AVX-512 VNNI's on 256-bit vectors (Xeons since Cascade Lake, AMD since Zen 4).
pub(crate) type Vnni512Bytes = DotBytes<principal_amx::Avx512Vnni>;

impl<D: principal_amx::Dot256> ByteProduct for DotBytes<D> {
    fn available() -> Option<Self> {
        madd::vnni_available::<D>().then_some(DotBytes(std::marker::PhantomData))
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        let done = madd::multiply_vnni::<D>(u, y, a, r, product);
        assert!(done, "DotBytes exists only where its vpdpbusd runs");
    }
}

/// AVX-512 VNNI's 512-bit `vpdpbusd` on tiles of 12 rows by 32 features (x86-64 with AVX-512
/// F and VNNI): exact on every byte.
pub(crate) struct WideBytes;

impl ByteProduct for WideBytes {
    fn available() -> Option<Self> {
        madd::wide_available().then_some(WideBytes)
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        let done = madd::multiply_wide(u, y, a, r, product);
        assert!(
            done,
            "WideBytes exists only where the 512-bit vpdpbusd runs"
        );
    }
}

/// AMX-INT8's `tdpbusd` on tiles of 16 × 64 bytes (x86-64 with AMX, granted by Linux): exact
/// on every byte.
pub(crate) struct AmxBytes;

impl ByteProduct for AmxBytes {
    fn available() -> Option<Self> {
        amx::available().then_some(AmxBytes)
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        let done = amx::multiply(u, y, a, r, product);
        assert!(done, "AmxBytes exists only where the tiles run");
    }
}

/// An exact byte product this library has, as named in `--explain` and the fit summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteKernel {
    /// Intel AMX-INT8 tiles (`tdpbusd`: 16 × 64 `u8` by 64 × 16 `i8` into `i32`), only the
    /// triangle of the product: x86-64 CPUs with AMX (Xeon Sapphire Rapids and later) where
    /// Linux grants the tile state.
    Amx,
    /// rten-gemm's `u8 × i8` kernel where it cannot saturate: AVX-512 VNNI (`vpdpbusd`) on
    /// x86-64, NEON on aarch64.
    RtenGemm,
    /// AVX-512 VNNI's `vpdpbusd` on 512-bit vectors, on tiles of 12 rows by 32 features (only
    /// the triangle of the product, which rten-gemm computes whole): x86-64 with AVX-512 VNNI.
    Avx512Vnni,
    /// The same instruction on 256-bit vectors, on the AVX2 kernel's tiles: only on request
    /// (`PRINCIPAL_BYTE_KERNEL=avx512-vnni-256`), to compare the widths on CPUs that run
    /// 512-bit vectors as two halves (AMD's Zen 4).
    Avx512Vnni256,
    /// AVX-VNNI's 256-bit `vpdpbusd` (`u8 × i8`, four products a lane into `i32`): x86-64 with
    /// AVX-VNNI but no AVX-512 (Intel's client CPUs since Alder Lake).
    AvxVnni,
    /// Bytes widened to `i16`, multiplied and added in pairs into `i32` by AVX2's `vpmaddwd`.
    Avx2Madd,
}

impl std::fmt::Display for ByteKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ByteKernel::Amx => "u8×i8 products on AMX tiles (tdpbusd)",
            ByteKernel::RtenGemm if cfg!(target_arch = "x86_64") => {
                "u8×i8 products by rten-gemm (AVX-512 VNNI vpdpbusd)"
            }
            ByteKernel::RtenGemm => "u8×i8 products by rten-gemm",
            ByteKernel::Avx512Vnni => "u8×i8 products by AVX-512 VNNI (512-bit vpdpbusd)",
            ByteKernel::Avx512Vnni256 => "u8×i8 products by AVX-512 VNNI (256-bit vpdpbusd)",
            ByteKernel::AvxVnni => "u8×i8 products by AVX-VNNI (256-bit vpdpbusd)",
            ByteKernel::Avx2Madd => "u8×i8 products widened to i16 (AVX2 vpmaddwd)",
        })
    }
}

/// The exact byte product this CPU runs, decided once per process: the AMX tiles where they
/// run, else AVX-512 VNNI's 512-bit `vpdpbusd` on our tiles, else rten-gemm where it is exact
/// (aarch64's NEON; on x86-64 it needs AVX-512 VNNI, which our tiles use faster), else
/// AVX-VNNI's `vpdpbusd`, else the AVX2 `vpmaddwd` kernel; `None` where none is (byte-valued
/// data then takes exact f32 products). The environment variable `PRINCIPAL_BYTE_KERNEL`
/// narrows the choice, for benchmarks and for checking that every path gives the same bits:
/// `none` (the f32 products), `amx`, `avx512-vnni`, `avx512-vnni-256`, `rten-gemm`, `avx-vnni`
/// or `avx2` (that kernel if this CPU runs it exactly, else none); unset or any other value,
/// the best one here. `PRINCIPAL_CPU` ([`crate::cpu_limit`]) caps it: `avx-vnni` leaves
/// AVX-VNNI's and the AVX2 kernel, `avx2` only the AVX2 kernel (or none): AMX and the AVX-512
/// VNNI products are beyond both (so is rten-gemm on aarch64, which the cap does not concern,
/// but no AVX2 kernel runs there).
pub fn byte_kernel() -> Option<ByteKernel> {
    static CHOICE: OnceLock<Option<ByteKernel>> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        let kernel = std::env::var("PRINCIPAL_BYTE_KERNEL");
        let beyond_avx2 = crate::kernel::cpu::beyond_avx2();
        // Only the kernels the choice needs are probed (AMX's probe asks Linux for the tiles).
        let amx = || {
            AmxBytes::available()
                .filter(|_| beyond_avx2)
                .map(|_| ByteKernel::Amx)
        };
        let rten = || {
            GemmBytes::available()
                .filter(|_| beyond_avx2)
                .map(|_| ByteKernel::RtenGemm)
        };
        let vnni512 = || {
            WideBytes::available()
                .filter(|_| beyond_avx2)
                .map(|_| ByteKernel::Avx512Vnni)
        };
        let vnni512_256 = || {
            Vnni512Bytes::available()
                .filter(|_| beyond_avx2)
                .map(|_| ByteKernel::Avx512Vnni256)
        };
        let vnni = || {
            VnniBytes::available()
                .filter(|_| crate::kernel::cpu::avx_vnni())
                .map(|_| ByteKernel::AvxVnni)
        };
        let avx2 = || MaddBytes::available().map(|_| ByteKernel::Avx2Madd);
        match kernel.as_deref() {
            Ok("none") => None,
            Ok("amx") => amx(),
            Ok("avx512-vnni") => vnni512(),
            Ok("avx512-vnni-256") => vnni512_256(),
            Ok("rten-gemm") => rten(),
            Ok("avx-vnni") => vnni(),
            Ok("avx2") => avx2(),
            _ => amx()
                .or_else(vnni512)
                .or_else(rten)
                .or_else(vnni)
                .or_else(avx2),
        }
    })
}

/// Whether [`byte_kernel`]'s product has run in this process.
static BYTE_PRODUCTS_RAN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The byte kernel if it has multiplied a block in this process (a fit of byte-valued data
/// took the byte path), for a summary to name what ran.
pub fn byte_kernel_ran() -> Option<ByteKernel> {
    if BYTE_PRODUCTS_RAN.load(std::sync::atomic::Ordering::Relaxed) {
        byte_kernel()
    } else {
        None
    }
}

/// The product [`byte_kernel`] chose: what production passes to the byte paths.
pub(crate) enum MachineBytes {
    Amx(AmxBytes),
    Gemm(GemmBytes),
    Wide(WideBytes),
    Vnni512(Vnni512Bytes),
    Vnni(VnniBytes),
    Madd(MaddBytes),
}

impl ByteProduct for MachineBytes {
    fn available() -> Option<Self> {
        Some(match byte_kernel()? {
            ByteKernel::Amx => MachineBytes::Amx(AmxBytes),
            ByteKernel::RtenGemm => MachineBytes::Gemm(GemmBytes::any_kernel()),
            ByteKernel::Avx512Vnni => MachineBytes::Wide(WideBytes),
            ByteKernel::Avx512Vnni256 => MachineBytes::Vnni512(DotBytes(std::marker::PhantomData)),
            ByteKernel::AvxVnni => MachineBytes::Vnni(DotBytes(std::marker::PhantomData)),
            ByteKernel::Avx2Madd => MachineBytes::Madd(MaddBytes),
        })
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        BYTE_PRODUCTS_RAN.store(true, std::sync::atomic::Ordering::Relaxed);
        match self {
            MachineBytes::Amx(amx) => amx.multiply(u, y, a, r, product),
            MachineBytes::Gemm(gemm) => gemm.multiply(u, y, a, r, product),
            MachineBytes::Wide(wide) => wide.multiply(u, y, a, r, product),
            MachineBytes::Vnni512(vnni) => vnni.multiply(u, y, a, r, product),
            MachineBytes::Vnni(vnni) => vnni.multiply(u, y, a, r, product),
            MachineBytes::Madd(madd) => madd.multiply(u, y, a, r, product),
        }
    }
}

/// The product as a plain triple loop in `i32`: the portable reference the byte path's tests
/// run with, on every machine (too slow for production).
#[cfg(test)]
pub(crate) struct ReferenceBytes;

#[cfg(test)]
impl ByteProduct for ReferenceBytes {
    fn available() -> Option<Self> {
        Some(ReferenceBytes)
    }

    fn multiply(&self, u: &[u8], y: &[i8], a: usize, r: usize, product: &mut [i32]) {
        for s in 0..=a {
            let row = &u[s * r..(s + 1) * r];
            for t in 0..a {
                let column = &y[t * r..(t + 1) * r];
                product[s * a + t] = row
                    .iter()
                    .zip(column)
                    .map(|(&u, &y)| i32::from(u) * i32::from(y))
                    .sum();
            }
        }
    }
}

/// Whether this machine's rten-gemm kernel is exact, for tests to say what they skipped.
#[cfg(test)]
pub(crate) fn hardware_product_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512vnni") {
        assert!(
            GemmBytes::available().is_some(),
            "VNNI is here, so is the exact product"
        );
    }
    GemmBytes::available().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_block(a: usize, r: usize, u_max: u8, y_max: i8, seed: u64) -> (Vec<u8>, Vec<i8>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let u = (0..(a + 1) * r)
            .map(|_| rng.random_range(0..=u_max))
            .collect();
        let y = (0..a * r)
            .map(|_| rng.random_range(-y_max..=y_max))
            .collect();
        (u, y)
    }

    /// The reference against sums written out for one tiny block.
    #[test]
    fn the_reference_product_sums_rows_of_u_against_features_of_y() {
        // a = 2 features, r = 3 rows: U is 3 × 3, Y (by features) is [1, 2, 3], [−1, 0, 4].
        let u = [1u8, 2, 3, 4, 5, 6, 1, 1, 1];
        let y = [1i8, 2, 3, -1, 0, 4];
        let mut product = [0i32; 6];
        ReferenceBytes.multiply(&u, &y, 2, 3, &mut product);
        assert_eq!(product, [14, 11, 32, 20, 6, 3]);
    }

    /// rten-gemm's kernel lays out U, Y and G as the reference does: checked on every machine
    /// with values small enough that no kernel saturates (|u·y| pairs below 2¹⁵).
    #[test]
    fn the_gemm_kernel_agrees_with_the_reference_product_below_saturation() {
        agrees_with_the_reference(GemmBytes::any_kernel(), 63, 63);
    }

    /// Full bytes where the kernel is exact; ignored, with the reason, where the build script
    /// found it may saturate (x86-64 without AVX-512 VNNI) or could not ask (a cross build).
    #[test]
    #[cfg_attr(
        not(exact_byte_gemm),
        ignore = "rten-gemm's u8×i8 product may saturate on this CPU (x86-64 without AVX-512 \
                  VNNI), or the build was cross-compiled, so the byte path does not use it here"
    )]
    fn the_exact_gemm_kernel_agrees_with_the_reference_product_on_full_bytes() {
        let gemm = GemmBytes::available().expect("the build found the product exact here");
        agrees_with_the_reference(gemm, 255, 127);
    }

    /// The build script's decision (`exact_byte_gemm`, which the hardware tests' `ignore`
    /// follows) is what rten-gemm says on the machine the tests run on.
    #[test]
    fn the_build_decided_as_rten_gemm_does_here() {
        assert_eq!(
            cfg!(exact_byte_gemm),
            hardware_product_available(),
            "built {} an exact byte product; rten-gemm here says otherwise: rebuild on this \
             machine",
            if cfg!(exact_byte_gemm) {
                "with"
            } else {
                "without"
            }
        );
    }

    /// The AVX2 kernel against the reference on random full bytes, on every shape class (see
    /// [`gives_the_reference_products`]). Ignored, with the reason, where the build found no
    /// AVX2.
    #[test]
    #[cfg_attr(
        not(avx2_byte_product),
        ignore = "this CPU has no AVX2, so the vpmaddwd byte product cannot run here"
    )]
    fn the_avx2_madd_kernel_gives_the_reference_products_bit_for_bit() {
        let madd = MaddBytes::available().expect("the build found AVX2 here");
        gives_the_reference_products(|u, y, a, r, product| madd.multiply(u, y, a, r, product));
    }

    /// The AVX-VNNI kernel against the reference on random full bytes, on every shape class
    /// (see [`gives_the_reference_products`]). Ignored, with the reason, where the build found
    /// no AVX-VNNI; its packing of quads is then unchecked (the tiles and tasks are the AVX2
    /// kernel's, checked above).
    #[test]
    #[cfg_attr(
        not(avx_vnni_byte_product),
        ignore = "this CPU has no AVX-VNNI, so the 256-bit vpdpbusd byte product cannot run here"
    )]
    fn the_avx_vnni_kernel_gives_the_reference_products_bit_for_bit() {
        let vnni = VnniBytes::available().expect("the build found AVX-VNNI here");
        gives_the_reference_products(|u, y, a, r, product| vnni.multiply(u, y, a, r, product));
    }

    /// The AVX-512 VNNI kernel on 256-bit vectors (EVEX `vpdpbusd`, on request only) against the
    /// reference on random full bytes, on every shape class (see
    /// [`gives_the_reference_products`]). Ignored, with the reason, where the build found no
    /// AVX-512 VNNI.
    #[test]
    #[cfg_attr(
        not(avx512_vnni_byte_product),
        ignore = "this CPU has no AVX-512 VNNI (with VL), so the EVEX 256-bit vpdpbusd byte \
                  product cannot run here"
    )]
    fn the_avx512_vnni_kernel_gives_the_reference_products_bit_for_bit() {
        let vnni = Vnni512Bytes::available().expect("the build found AVX-512 VNNI here");
        gives_the_reference_products(|u, y, a, r, product| vnni.multiply(u, y, a, r, product));
    }

    /// The AVX-512 VNNI kernel on 512-bit vectors against the reference on random full bytes,
    /// on every shape class (see [`gives_the_reference_products`]). Ignored, with the reason,
    /// where the build found no AVX-512 VNNI.
    #[test]
    #[cfg_attr(
        not(wide_vnni_byte_product),
        ignore = "this CPU has no AVX-512 VNNI, so the 512-bit vpdpbusd byte product cannot run \
                  here"
    )]
    fn the_512_bit_vnni_kernel_gives_the_reference_products_bit_for_bit() {
        let wide = WideBytes::available().expect("the build found AVX-512 VNNI here");
        gives_the_reference_products(|u, y, a, r, product| wide.multiply(u, y, a, r, product));
    }

    /// The AMX kernel against the reference on random full bytes, on every shape class (see
    /// [`gives_the_reference_products`]). Ignored, with the reason, where the build found no
    /// tiles; the layout, packing and triangle are checked everywhere by the next test.
    #[test]
    #[cfg_attr(
        not(amx_byte_product),
        ignore = "no AMX-INT8 tiles in this process (no AMX on this CPU, or Linux refused the \
                  tile state), so the tdpbusd byte product cannot run here"
    )]
    fn the_amx_kernel_gives_the_reference_products_bit_for_bit() {
        let amx = AmxBytes::available().expect("the build found the tiles here");
        gives_the_reference_products(|u, y, a, r, product| amx.multiply(u, y, a, r, product));
    }

    /// The AMX kernel's packing, triangle and tasks with the tiles multiplied by plain loops
    /// (`principal_amx::reference_block`): run on every machine, so that where there are no
    /// tiles the layout is still checked (the output says whether the tiles themselves were).
    #[test]
    fn the_amx_layout_with_portable_tile_sums_gives_the_reference_products_bit_for_bit() {
        match principal_amx::unavailable_reason() {
            None => println!("AMX tiles here: the_amx_kernel_gives_… checks them too"),
            Some(reason) => println!("AMX tiles not checked here ({reason}): the layout only"),
        }
        gives_the_reference_products(|u, y, a, r, product| {
            amx::multiply_by(amx::Tiling::Portable, u, y, a, r, product)
        });
    }

    /// `multiply` against the reference on random full bytes, on every shape class: tiny,
    /// tall (few features, many rows), wide (many features, few rows), features and rows not
    /// multiples of a kernel's tiles (AVX2: 6 rows, 8 or 16 features, pairs of rows, 16 rows a
    /// packing vector; VNNI: quads of rows, 32 a packing vector; AMX: 16 and 32 rows or
    /// features, 64 values of `k`), a + 1 rows of G one more than a multiple of 16
    /// (Fashion-MNIST's 785, and its last block of 608 rows), more rows than a slice,
    /// more features than a band, more rows of G than a task; and on the extremes (every u =
    /// 255 against every y = −128, and against 127), where any narrower sum would saturate.
    /// The output starts as garbage: the kernel must overwrite, not add.
    fn gives_the_reference_products(multiply: impl Fn(&[u8], &[i8], usize, usize, &mut [i32])) {
        let shapes = [
            (1, 1),
            (1, 16),
            (2, 17),
            (3, 15),
            (4, 2048),
            (5, 2047),
            (15, 64),
            (16, 65),
            (31, 100),
            (32, 63),
            (33, 128),
            (50, 33),
            (200, 8),
            (241, 529),
            (244, 1000),
            (70, 2048),
            (784, 608),
            (9, 35),
            (10, 66),
            (13, 1027),
            (11, 70),
            (12, 130),
            (23, 513),
            (24, 40),
            (47, 300),
            (48, 3),
        ];
        for (k, &(a, r)) in shapes.iter().enumerate() {
            let (u, y) = random_block(a, r, 255, 127, 100 + k as u64);
            let mut want = vec![0i32; (a + 1) * a];
            ReferenceBytes.multiply(&u, &y, a, r, &mut want);
            let mut got = vec![-7i32; (a + 1) * a];
            multiply(&u, &y, a, r, &mut got);
            assert_eq!(
                wanted_part(&got, a),
                wanted_part(&want, a),
                "{a} features × {r} rows"
            );
        }
        for y_value in [-128i8, 127] {
            let (a, r) = (7, 2048);
            let (u, y) = (vec![255u8; (a + 1) * r], vec![y_value; a * r]);
            let mut got = vec![0i32; (a + 1) * a];
            multiply(&u, &y, a, r, &mut got);
            let want = 255 * i32::from(y_value) * r as i32;
            let got = wanted_part(&got, a);
            assert!(got.iter().all(|&g| g == want), "{y_value}: {got:?}");
        }
    }

    /// The entries of a product `G` ((a + 1) × a) a kernel must give: `t ≥ s`, and the last row.
    fn wanted_part(product: &[i32], a: usize) -> Vec<i32> {
        let mut part = Vec::new();
        for s in 0..a {
            part.extend_from_slice(&product[s * a + s..(s + 1) * a]);
        }
        part.extend_from_slice(&product[a * a..(a + 1) * a]);
        part
    }

    /// The build script's AVX2, AVX-VNNI, AVX-512 VNNI and AMX decisions are what this run
    /// finds, and the kernel chosen once per process is the AMX tiles where they run, else
    /// AVX-512 VNNI's on our 512-bit tiles, else rten-gemm where it is exact, else AVX-VNNI's
    /// where the CPU has it, else the AVX2 kernel where AVX2 exists; under
    /// `PRINCIPAL_CPU=avx-vnni` (run the test with it too) AVX-VNNI's or the AVX2 kernel, under
    /// `PRINCIPAL_CPU=avx2` the AVX2 kernel where AVX2 exists.
    #[test]
    fn the_chosen_byte_kernel_is_the_best_exact_one_here() {
        use crate::kernel::cpu::{CpuLimit, cpu_limit};
        let capped = cpu_limit() != CpuLimit::Native;
        assert_eq!(cfg!(avx2_byte_product), MaddBytes::available().is_some());
        assert_eq!(
            cfg!(avx_vnni_byte_product),
            VnniBytes::available().is_some()
        );
        assert_eq!(
            cfg!(avx512_vnni_byte_product),
            Vnni512Bytes::available().is_some()
        );
        assert_eq!(
            cfg!(wide_vnni_byte_product),
            WideBytes::available().is_some()
        );
        assert_eq!(
            cfg!(amx_byte_product),
            AmxBytes::available().is_some(),
            "the build and this run disagree on the AMX tiles: rebuild on this machine"
        );
        let want = if !capped && AmxBytes::available().is_some() {
            Some(ByteKernel::Amx)
        } else if !capped && WideBytes::available().is_some() {
            Some(ByteKernel::Avx512Vnni)
        } else if !capped && hardware_product_available() {
            Some(ByteKernel::RtenGemm)
        } else if cpu_limit() != CpuLimit::Avx2 && VnniBytes::available().is_some() {
            Some(ByteKernel::AvxVnni)
        } else if MaddBytes::available().is_some() {
            Some(ByteKernel::Avx2Madd)
        } else {
            None
        };
        // Unless the environment narrowed the choice (the one process-wide setting).
        if std::env::var_os("PRINCIPAL_BYTE_KERNEL").is_none() {
            assert_eq!(byte_kernel(), want);
        }
        assert_eq!(MachineBytes::available().is_some(), byte_kernel().is_some());
    }

    /// Not a check: the work of one byte block of Fashion-MNIST's shape (785 × 2,048 bytes
    /// against 784 features; `TIME_ROWS` rows instead of 2,048) by the kernel `TIME_KERNEL`
    /// names (`amx`, `madd`, `vnni`, `vnni512`, `wide`, `rten-gemm`, or `f32`: the exact f32
    /// path's lower-triangle product of the same block), 20 times (or `TIME_ROUNDS`, for a
    /// profiler), each timed by the CPU time of all the process's threads (so that
    /// `RAYON_NUM_THREADS=1` gives one core's time) and by the clock; prints the least and the
    /// median of each (bench/results.md).
    #[test]
    #[ignore = "a timing loop, run by hand with \
                TIME_KERNEL=amx|madd|vnni|vnni512|wide|rten-gemm|f32 (wide: AVX-512 VNNI on \
                512-bit vectors; vnni512: on 256-bit ones)"]
    fn time_one_byte_block() {
        let r = std::env::var("TIME_ROWS").map_or(2048, |n| n.parse().expect("a count"));
        let a = 784;
        let (u, y) = random_block(a, r, 255, 127, 7);
        let kernel = std::env::var("TIME_KERNEL").unwrap_or_default();
        let mut product = vec![0i32; (a + 1) * a];
        let y32 =
            faer::Mat::<f32>::from_fn(
                a + 1,
                r,
                |t, k| {
                    if t < a { f32::from(y[t * r + k]) } else { 1.0 }
                },
            );
        let mut lower = faer::Mat::<f32>::zeros(a + 1, a + 1);
        let (mut cpu, mut wall) = (Vec::new(), Vec::new());
        let rounds = std::env::var("TIME_ROUNDS").map_or(20, |n| n.parse().expect("a count"));
        for _ in 0..rounds {
            let (cpu_start, wall_start) = (process_cpu_seconds(), std::time::Instant::now());
            match kernel.as_str() {
                "amx" => {
                    AmxBytes::available()
                        .expect("AMX tiles")
                        .multiply(&u, &y, a, r, &mut product)
                }
                "madd" => {
                    MaddBytes::available()
                        .expect("AVX2")
                        .multiply(&u, &y, a, r, &mut product)
                }
                "vnni" => {
                    VnniBytes::available()
                        .expect("AVX-VNNI")
                        .multiply(&u, &y, a, r, &mut product)
                }
                "vnni512" => Vnni512Bytes::available().expect("AVX-512 VNNI").multiply(
                    &u,
                    &y,
                    a,
                    r,
                    &mut product,
                ),
                "wide" => WideBytes::available().expect("AVX-512 VNNI").multiply(
                    &u,
                    &y,
                    a,
                    r,
                    &mut product,
                ),
                "rten-gemm" => GemmBytes::any_kernel().multiply(&u, &y, a, r, &mut product),
                "f32" => crate::kernel::products::lower_product(
                    lower.as_mut(),
                    faer::Accum::Replace,
                    y32.as_ref(),
                    faer::Par::rayon(0),
                ),
                "none" => {}
                other => panic!(
                    "TIME_KERNEL={other:?}: amx, madd, vnni, vnni512, wide, rten-gemm, f32 or none"
                ),
            }
            cpu.push(process_cpu_seconds() - cpu_start);
            wall.push(wall_start.elapsed().as_secs_f64());
        }
        std::hint::black_box((&product, &lower));
        for (what, times) in [("CPU", &mut cpu), ("wall", &mut wall)] {
            times.sort_by(f64::total_cmp);
            println!(
                "{kernel}: {what} a block {:.2} ms least, {:.2} ms median",
                times[0] * 1e3,
                times[times.len() / 2] * 1e3
            );
        }
    }

    /// The CPU time of all the process's threads in seconds (Linux's per-thread schedstat).
    fn process_cpu_seconds() -> f64 {
        std::fs::read_dir("/proc/self/task")
            .expect("Linux's threads")
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
            .filter_map(|stat| stat.split_whitespace().next()?.parse::<f64>().ok())
            .sum::<f64>()
            * 1e-9
    }

    fn agrees_with_the_reference(gemm: GemmBytes, u_max: u8, y_max: i8) {
        let shapes = [(1, 1), (5, 2), (17, 13), (70, 2048), (33, 600)];
        for (k, &(a, r)) in shapes.iter().enumerate() {
            let (u, y) = random_block(a, r, u_max, y_max, k as u64);
            let mut want = vec![0i32; (a + 1) * a];
            ReferenceBytes.multiply(&u, &y, a, r, &mut want);
            let mut got = vec![0i32; (a + 1) * a];
            gemm.multiply(&u, &y, a, r, &mut got);
            assert_eq!(got, want, "{a} features × {r} rows, bytes up to {u_max}");
        }
    }
}
