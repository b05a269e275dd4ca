//! principal's integration tests, compiled as one test binary: one binary instead of one per
//! file links the library and its dependencies once, which is most of the test build's time.
//! Each file of this directory is a module here; `every_test_file_is_a_module` checks that
//! none is left out (with `autotests = false`, a file not named here would not be built).

mod common;
mod fixture_files;
mod missing_data;
mod module_layers;

mod choose_fixtures;
mod choosing;
mod distributed;
mod errors;
mod fit_paths;
mod independent_fixtures;
mod iterative_solvers;
mod latent_fixtures;
mod layering;
mod missing_values;
mod model_fixtures;
mod probabilistic;
mod probabilistic_fixtures;
mod properties;
mod r_fixtures;
mod reference_values;
mod sklearn_fixtures;
mod sources;

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
