#!/usr/bin/env bash
# The tests a newcomer runs (README's quick start), on a machine with cargo and python3 only,
# without root: every Rust test that needs nothing else, then the Python package's tests
# (pytest, in a virtual environment the Python script makes under target/).
# The tests that need system packages (MPI, Slurm, the Fashion-MNIST files) are .ci/run's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Libraries, binaries and integration tests, then the doc tests: `cargo test` alone would also
# build the examples (tools such as the fuzz-seed writer and timing programs, about a sixth of
# the test build), which .ci/run builds instead.
cargo test --release --workspace --lib --bins --tests
cargo test --release --workspace --doc
crates/principal-py/run-tests.sh
