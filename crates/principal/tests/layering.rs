//! The crate's layering, enforced: imports flow one way, downwards, so there are no module
//! cycles.
//!
//! Every source file of `crates/principal/src` is a module with a place in [`LAYERS`], listed
//! bottom to top. A module may use only modules of lower layers (its own items aside), always
//! by a `crate::` path to the module that defines the item (`crate::moments::chunk::…`, never
//! the crate root's re-exports, which are for users, nor `super::`), or through a module it
//! declares. Test code (`#[cfg(test)]` items) is exempt: tests are leaves that nothing
//! imports, and may use any module. The test fails naming the file and the import that breaks
//! the order. The checker is `tests/module_layers/mod.rs`, which principal-cli's and
//! principal-report's layering tests include by path.
//!
//! `cargo test --release -p principal --test layering -- --nocapture` prints the module graph.

use crate::module_layers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use module_layers::{
    assert_layered, child_modules, code_only, crate_paths, resolve, without_tests,
};

/// The layers, bottom to top. Inside a folder: its leaves first, its `mod.rs` where it sits in
/// the folder's own order (a door above its parts, or a base below them).
const LAYERS: &[&[&str]] = &[
    // What everything may use: the error type and the options.
    &["error", "options"],
    // Choosing the number of components, the rules that read a spectrum: what a choice
    // records, then the rules (Gavish–Donoho on the Marchenko–Pastur median).
    &["choose::choice", "choose::marchenko_pastur"],
    &["choose::rules", "choose::evidence", "choose::threshold"],
    // The element types (f32, f64) and chunks of them.
    &["real"],
    // Sparse rows: CSR blocks, and the sources that hand them out.
    &["sparse::csr"],
    &["sparse::source"],
    // The cap on our kernels' instructions (PRINCIPAL_CPU), the vector-width dispatch and
    // shared register shuffles, and work shared among threads (halves of a pass, tasks of
    // equal work, per-thread scratch), under every kernel.
    &["kernel::cpu", "kernel::simd", "kernel::parallel"],
    // Re-readable sources; the leaves of the numeric kernels.
    &["data", "kernel::madd", "kernel::amx"],
    &["kernel::bytes"],
    // Several processes: the collective operations and the agreement before each reduction.
    &[
        "kernel::scan",
        "kernel::blocks",
        "kernel::products",
        "collective",
    ],
    &["kernel"],
    // Products of CSR blocks with dense blocks; the sparse door.
    &["sparse::products"],
    &["sparse"],
    // Streaming moments: buffers and Chan's update, then one file per path, then the choice,
    // then the accumulator.
    &["moments::workspace", "moments::merge"],
    &["moments::integer", "moments::float", "moments::columns"],
    &["moments::bytes"],
    &["moments::ordered"],
    &["moments::chunk"],
    &["moments"],
    // The sparse path of the accumulators (CSR blocks, never densified).
    &["moments::sparse"],
    // Centring and scaling from moments or data.
    &["preprocess"],
    // Parallel analysis: permuted copies of data in memory.
    &["choose::parallel"],
    // The solvers: the problems and the shared eigensolver, then one file per solver.
    &["solver"],
    // The leading eigenpairs by certified Krylov–Schur, on the shared eigensolver.
    &["solver::leading"],
    &[
        "solver::iterative",
        "solver::covariance",
        "solver::gram",
        "solver::svd",
    ],
    // Block Lanczos for sparse rows, on what the iterative solvers share.
    &["solver::krylov"],
    &[
        "solver::randomized",
        "solver::power",
        "solver::em",
        "solver::missing",
    ],
    // The model; auto's plan; nearest neighbours among codes (recognition).
    &["model", "plan", "neighbours"],
    // Aligning a model to a reference (matching, flipping, rotating components).
    &["align"],
    // Probabilistic PCA on the model: the Gaussian model, then the door.
    &["probabilistic::gaussian"],
    &["probabilistic::sampling", "probabilistic::observed"],
    &["probabilistic"],
    // Cross-validation's folds and their held-out likelihoods, under a fold's model.
    &["choose::held_out"],
    // Parameters, then fitting them.
    &["params"],
    &["fit"],
    // Latent-variable models beyond PCA, on the fit (ICA's whitening), the solvers'
    // eigensolver and the EM's pieces: one module per kind, the kinds' door below them.
    &["models"],
    &[
        "models::factor_analysis",
        "models::kernel_pca",
        "models::ica",
        "models::bayesian_pca",
    ],
    // The mixture of probabilistic PCAs, on Bayesian PCA's Gaussian pieces.
    &["models::mixture"],
    // Fitting without centring, and sparse data, on fit's pieces.
    &["uncentred"],
    &["sparse_fit"],
    // Every criterion side by side, from one fit.
    &["choose"],
    // FactoMineR's description of a fitted model: the tests of dimdesc, then the tables.
    &["describe::dimdesc"],
    &["describe"],
    // The crate root: re-exports only.
    &["crate"],
];

#[test]
fn imports_flow_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_layered("principal", &src, LAYERS);
}

/// The checker itself: a cycle (two modules using each other) and an import through the root
/// are caught; comments, strings and test code are not read as imports.
#[test]
fn the_checker_sees_upward_imports_and_ignores_comments_and_tests() {
    let code = code_only(
        "use crate::moments::chunk::piece; // crate::fit::x\n\
         let s = \"crate::model::y\";\n\
         #[cfg(test)]\nmod tests { use crate::fit::FitX; }\n\
         fn f() { crate::solver::{iterative::gaussian, svd}::x(); }\n\
         use crate::{error::PcaError, real::Real};\n\
         const C: char = '{';\n",
    );
    let paths: Vec<String> = crate_paths(&without_tests(&code), &BTreeSet::new())
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "crate::moments::chunk::piece",
            "crate::solver::iterative::gaussian",
            "crate::solver::svd",
            "crate::error::PcaError",
            "crate::real::Real",
        ]
    );
    let layer_of: BTreeMap<&str, usize> = [("moments", 1), ("moments::chunk", 0)]
        .into_iter()
        .collect();
    let to = |p: &[&str]| {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        resolve(&p, &layer_of)
    };
    assert_eq!(
        to(&["moments", "chunk", "x"]).as_deref(),
        Some("moments::chunk")
    );
    assert_eq!(
        to(&["moments", "MomentAccumulator"]).as_deref(),
        Some("moments")
    );
    assert_eq!(to(&["MomentAccumulator"]), None);
}

/// A path through a module the file declares is an import of that module too (a folder's
/// `mod.rs` re-exporting its parts sits above them); a local module does not count.
#[test]
fn the_checker_reads_paths_through_declared_modules() {
    let code = without_tests(&code_only(
        "mod figure;\npub(crate) mod points;\nmod inline { }\n\
         pub use figure::{Figure, Plotted};\n\
         fn f() { points::draw(); inline::g(); std::mem::drop(1); }\n",
    ));
    let children = child_modules(&code);
    assert_eq!(
        children.iter().map(String::as_str).collect::<Vec<_>>(),
        ["figure", "points"]
    );
    let paths: Vec<String> = crate_paths(&code, &children)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(paths, ["figure::Figure", "figure::Plotted", "points::draw"]);
}
