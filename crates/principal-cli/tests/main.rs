//! principal-cli's integration tests, compiled as one test binary: one binary instead of one per
//! file links the library and its dependencies once, which is most of the test build's time.
//! Each file of this directory is a module here; `every_test_file_is_a_module` checks that
//! none is left out (with `autotests = false`, a file not named here would not be built).

mod common;
#[path = "../../principal-io/tests/common/mod.rs"]
mod io_files;
#[path = "../../principal/tests/module_layers/mod.rs"]
mod module_layers;

mod align;
mod choose;
mod classify;
mod damaged_files;
mod data_errors;
mod describe;
mod fit;
// Only builds without a format's feature have tests there.
#[cfg(not(all(feature = "parquet", feature = "arrow", feature = "h5ad")))]
mod formats_not_built;
#[cfg(feature = "h5ad")]
mod h5ad;
mod interpretation_figures;
mod latent_models;
mod layering;
mod models;
mod mpi;
#[cfg(feature = "parquet")]
mod parquet;
mod probabilistic;
mod regressions;
mod report;
mod solvers_and_streaming;
mod sparse;
mod stats_merge;
mod threads;
mod transform_inverse;
mod usage;

#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") && path.file_name().unwrap() != "main.rs" {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            if !main.lines().any(|l| l.trim() == format!("mod {stem};")) {
                missing.push(stem);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files of tests/ not declared in tests/main.rs (add `mod NAME;`): {missing:?}"
    );
}
