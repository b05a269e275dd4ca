//! The exact integer product of a block of bytes, `G = U Y`: `u8` times `i8`, summed in `i32`.
//!
//! faer multiplies floating-point matrices only; rten-gemm's integer kernels do this product,
//! and do more work per instruction than an f32 product (AVX-512 VNNI's `vpdpbusd` does 64
//! multiply-adds where an f32 FMA does 16). They are exact only where they cannot saturate:
//! without VNNI, x86's `vpmaddubsw` adds pairs of products in `i16` with saturation. So
//! [`GemmBytes::available`] offers the product only where it is exact, and the byte path is
//! taken only there. Everything around the product (the blocks' layout, the gathering of rows,
//! the sums) is generic over [`ByteProduct`], so that tests run it with a portable reference
//! product on every machine.

use rten_gemm::{GemmExecutor, GemmInputA, GemmInputB, GemmOptions};
use rten_tensor::NdTensorView;

/// An exact product of a block of bytes.
pub(crate) trait ByteProduct: Sized {
    /// The product, or `None` where it is not available exactly on this machine.
    fn available() -> Option<Self>;

    /// `product = U Y`, every sum exact: U is `(a + 1) × r` in `u`, row-major; Y is `r × a`,
    /// stored feature by feature in `y` (its column `t` is `y[t·r..(t + 1)·r]`); `product` is
    /// `(a + 1) × a`, row-major. The caller keeps every sum within `i32`.
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

/// The product as a plain triple loop in `i32`: the portable reference the byte path's tests
/// run with, on every machine (too slow for production, where only [`GemmBytes`] is used).
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
    /// found it may saturate (this CPU lacks AVX-512 VNNI).
    #[test]
    #[cfg_attr(
        not(exact_byte_gemm),
        ignore = "rten-gemm's u8×i8 product may saturate on this CPU (no AVX-512 VNNI), so \
                  the byte path does not use it here"
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
