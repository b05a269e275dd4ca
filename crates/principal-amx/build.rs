//! Decides at build time whether the tile product runs on this machine (`amx_tiles`), by the
//! library's own detection (`src/detect.rs`), so that its tests are listed as ignored, with the
//! reason, where it does not; a test checks that the decision holds where the tests run.

#[allow(dead_code)]
#[path = "src/detect.rs"]
mod detect;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(amx_tiles)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/detect.rs");
    // The build machine is the test machine only when not cross-compiling.
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    if native && detect::detect() {
        println!("cargo::rustc-cfg=amx_tiles");
    }
}
