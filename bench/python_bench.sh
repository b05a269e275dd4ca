#!/usr/bin/env bash
# The Python package against scikit-learn on Fashion-MNIST (float64): sets up bench/.venv with
# the pinned peers, builds and installs crates/principal-py into it, builds the fit_in_memory
# example (the Rust fit alone, for the binding's overhead), then runs bench/python_bench.py with
# this script's arguments (--repeat N, --components K). Prints one JSON object.
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
VENV="$BENCH/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
export PATH="$VENV/bin:$PATH"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$BENCH/requirements.txt" "maturin>=1.5,<2"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
    --force-reinstall --no-deps "$ROOT/crates/principal-py"
if [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
    echo "install the Debian package dataset-fashion-mnist first" >&2
    exit 1
fi
# --workspace: the same feature resolution as `cargo test --workspace`, whose artifacts it reuses.
(cd "$ROOT" && cargo build --release --workspace --example fit_in_memory)
exec "$VENV/bin/python" "$BENCH/python_bench.py" "$@"
