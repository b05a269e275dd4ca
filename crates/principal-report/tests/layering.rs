//! The crate's layering, enforced as the core's is (the checker is principal's
//! `tests/module_layers/mod.rs`): imports flow one way, downwards, so there are no module
//! cycles. The figures are drawn from the inputs and the data; the page (`html`) shows the
//! figures and the settings; the report, on top, plans, draws and writes.
//!
//! `cargo test --release -p principal-report --test layering -- --nocapture` prints the module
//! graph.

use crate::module_layers;

use std::path::Path;

/// The layers, bottom to top. The `figures` folder: what every figure is and how it is drawn
/// (`figures::figure`), then one file per group of figures, then its door (`mod.rs`).
const LAYERS: &[&[&str]] = &[
    &["error"],
    // The caller's numbers, the figures' style, progress, the curves, the staging directory.
    &["input", "style", "progress", "curves", "staging"],
    // The data gathered chunk by chunk against a model.
    &["data"],
    &["figures::figure"],
    &[
        "figures::variance",
        "figures::points",
        "figures::images",
        "figures::classification",
        "figures::interpretation",
    ],
    &["figures"],
    // The report's settings and what it leaves out, then the page that shows them.
    &["options"],
    &["html"],
    &["report"],
    // The crate root: re-exports only.
    &["crate"],
];

#[test]
fn imports_flow_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    module_layers::assert_layered("principal-report", &src, LAYERS);
}
