#!/usr/bin/env bash
# The tests a newcomer runs (README's quick start), on a machine with cargo and python3 only,
# without root: every Rust test that needs nothing else, then the Python package's tests
# (pytest, in a virtual environment the Python script makes under target/).
#
#   scripts/test.sh           the core build, as the README's first command makes it
#                             (--no-default-features: no Parquet, Arrow IPC or AnnData)
#   scripts/test.sh --full    the default build, with every format (.ci/run runs both)
#
# The tests that need system packages (MPI, Slurm, the Fashion-MNIST files) are .ci/run's.
#
# The Python steps overlap the Rust ones where they use different resources: the virtual
# environment downloads its packages while cargo compiles (the network against the cores),
# the extension is built while the Rust tests run (cargo holds the build directory's lock only
# while it compiles; the longest tests leave a core idle), and pytest runs beside the doc tests.
# Their output is kept in target/python-*.log and shown when they end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

case "${1:-}" in
    "")
        features=(--no-default-features)
        # maturin's own arguments, read by its PEP 517 hook: the same features as cargo's.
        export MATURIN_PEP517_ARGS=--no-default-features ;;
    --full)
        features=()
        unset MATURIN_PEP517_ARGS ;;
    *)
        echo "usage: scripts/test.sh [--full]" >&2
        exit 2 ;;
esac

mkdir -p target
# Four test threads on two cores: the command-line tests mostly wait for the processes they start
# (about 33 s of CPU in 40 s with two threads); the in-process tests lose nothing.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
# A failure stops the script; it stops the background steps with it.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

# Waits for a background Python step, shows its output, and stops here if it failed.
finish() {
    local pid=$1 log=$2 status=0
    wait "$pid" || status=$?
    cat "$log"
    if [ "$status" != 0 ]; then
        echo "scripts/test.sh: the Python step logged in $log failed (exit $status)" >&2
        exit "$status"
    fi
}

PRINCIPAL_PY_STEPS=prepare crates/principal-py/run-tests.sh > target/python-prepare.log 2>&1 &
prepare=$!
# Libraries, binaries and integration tests, then the doc tests: `cargo test` alone would also
# build the examples (tools such as the fuzz-seed writer and timing programs, about a sixth of
# the test build), which .ci/run builds instead.
cargo test --release --workspace "${features[@]}" --lib --bins --tests --no-run
finish "$prepare" target/python-prepare.log
PRINCIPAL_PY_STEPS=build crates/principal-py/run-tests.sh > target/python-build.log 2>&1 &
build=$!
cargo test --release --workspace "${features[@]}" --lib --bins --tests
finish "$build" target/python-build.log
# pytest runs on one core while rustdoc compiles the doc tests on the other.
PRINCIPAL_PY_STEPS=test crates/principal-py/run-tests.sh > target/python-test.log 2>&1 &
pytest=$!
cargo test --release --workspace "${features[@]}" --doc
finish "$pytest" target/python-test.log
