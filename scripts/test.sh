#!/usr/bin/env bash
# The tests a newcomer runs (README's quick start), on a machine with cargo and python3 only,
# without root: every Rust test that needs nothing else, then the Python package's tests
# (pytest, in a virtual environment the Python script makes under target/).
# The tests that need system packages (MPI, Slurm, the Fashion-MNIST files) are .ci/run's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo test --release --workspace
crates/principal-py/run-tests.sh
