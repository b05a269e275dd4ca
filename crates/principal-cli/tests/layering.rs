//! The binary's layering, enforced as the core's is (the checker is principal's
//! `tests/module_layers/mod.rs`): imports flow one way, downwards, so there are no module
//! cycles. Each command's module holds its own arguments and configuration; what several
//! commands share sits below them (`args`, `select`, `stream`), and the command line's enum
//! (`cli`) and `main` above them.
//!
//! `cargo test --release -p principal-cli --test layering -- --nocapture` prints the module
//! graph.

#[path = "../../principal/tests/module_layers/mod.rs"]
mod module_layers;

use std::path::Path;

/// The layers, bottom to top.
const LAYERS: &[&[&str]] = &[
    // Leaves: numbers and sizes as text, the memory budget, the library's errors in the
    // flags' words, MPI's start.
    &["units", "text", "budget", "flags", "mpi"],
    // The argument groups and value parsers commands share; progress bars; the processes of a
    // launch (one, or MPI's).
    &["args", "progress", "processes"],
    // Rows streamed from files within the budget, then the columns picked from them.
    &["stream"],
    &["select"],
    // One module per command, then the commands built on another's pieces: classify fits and
    // draws as fit and report do, merge reads fit's component flags, score reads missing
    // values as transform does.
    &[
        "command::fit",
        "command::transform",
        "command::inverse",
        "command::inspect",
        "command::stats",
        "command::choose",
        "command::sample",
        "command::impute",
        "command::report",
        "command::describe",
    ],
    &["command::classify", "command::merge", "command::score"],
    &["command"],
    // The command line: one variant per command.
    &["cli"],
    // main: parse, validate, run one command, print the error.
    &["crate"],
];

#[test]
fn imports_flow_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    module_layers::assert_layered("principal-cli", &src, LAYERS);
}
