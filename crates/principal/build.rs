//! Decides at build time whether rten-gemm's `u8 × i8` product is exact on this machine (it
//! cannot saturate: AVX-512 VNNI on x86-64), as the library decides at run time. The tests of
//! that hardware product are then ignored, with the reason, where it is not exact, so that
//! `cargo test`'s summary shows them as not run instead of passing without running; a test
//! checks that the decision holds on the machine the tests run on. The same for the AVX2
//! `vpmaddwd` byte product (`avx2_byte_product`), its AVX-VNNI and AVX-512 VNNI forms
//! (`avx_vnni_byte_product`, `avx512_vnni_byte_product`) and the AMX tile product
//! (`amx_byte_product`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(exact_byte_gemm)");
    println!("cargo::rustc-check-cfg=cfg(avx2_byte_product)");
    println!("cargo::rustc-check-cfg=cfg(amx_byte_product)");
    println!("cargo::rustc-check-cfg=cfg(avx_vnni_byte_product)");
    println!("cargo::rustc-check-cfg=cfg(avx512_vnni_byte_product)");
    println!("cargo::rustc-check-cfg=cfg(wide_vnni_byte_product)");
    println!("cargo::rerun-if-changed=build.rs");
    // rten-gemm chooses its kernel by the CPU it runs on: here the build machine, which is the
    // test machine only when not cross-compiling.
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    if native && !rten_gemm::GemmExecutor::<u8, i8, i32>::default().may_saturate() {
        println!("cargo::rustc-cfg=exact_byte_gemm");
    }
    // The AVX2 `vpmaddwd` byte product (kernel::madd) runs where AVX2 does.
    #[cfg(target_arch = "x86_64")]
    if native && std::arch::is_x86_feature_detected!("avx2") {
        println!("cargo::rustc-cfg=avx2_byte_product");
    }
    // Its `vpdpbusd` forms where principal-amx's tokens for them exist (the library asks the
    // same tokens): AVX-VNNI's, and AVX-512 VNNI's on 256-bit vectors.
    use principal_amx::Dot256;
    if native && principal_amx::AvxVnni::try_new().is_some() {
        println!("cargo::rustc-cfg=avx_vnni_byte_product");
    }
    if native && principal_amx::Avx512Vnni::try_new().is_some() {
        println!("cargo::rustc-cfg=avx512_vnni_byte_product");
    }
    if native && principal_amx::Vnni512::try_new().is_some() {
        println!("cargo::rustc-cfg=wide_vnni_byte_product");
    }
    // The AMX tile product (kernel::amx) runs where principal-amx finds the tiles and Linux
    // grants them (asked here, in the build script's own process).
    if native && principal_amx::available() {
        println!("cargo::rustc-cfg=amx_byte_product");
    }
}
