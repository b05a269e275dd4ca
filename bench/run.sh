#!/usr/bin/env bash
# Benchmark principal against scikit-learn: sets up bench/.venv, makes sure the data and the
# release binary are there, then runs bench/bench.py with this script's arguments.
#   bench/run.sh                      # cases 1-3, 5 interleaved rounds each (~15 min)
#   bench/run.sh --repeat 1           # a quick look
#   bench/run.sh --cases 4            # out-of-core case (writes a 4 GB file to bench/data)
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
VENV="$BENCH/.venv"
FASHION=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz

# 1. Python environment with the pinned peers.
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "creating $VENV" >&2
    python3 -m venv "$VENV"
fi
if ! cmp -s "$BENCH/requirements.txt" "$VENV/.requirements.installed"; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$BENCH/requirements.txt"
    cp "$BENCH/requirements.txt" "$VENV/.requirements.installed"
fi

# 2. Fashion-MNIST (case 1) from Debian's dataset-fashion-mnist.
if [[ ! -f "$FASHION" ]]; then
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "installing dataset-fashion-mnist" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null
    else
        echo "warning: $FASHION is missing and we are not root: install dataset-fashion-mnist for case 1" >&2
    fi
fi

# 3. The release binary, and the example that times the fit alone on data in memory.
# Workspace-wide, so that the features resolve as in `cargo test --release --workspace` and
# no dependency is built twice.
# As a user's build is: an exported CARGO_PROFILE_RELEASE_INCREMENTAL=true (a developer's
# setting) would split principal into other codegen units than the release profile's one.
(cd "$ROOT" && CARGO_PROFILE_RELEASE_INCREMENTAL=false cargo build --release --bin principal --example fit_in_memory)

# 4. The benchmark.
exec "$VENV/bin/python" "$BENCH/bench.py" "$@"
