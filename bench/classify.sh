#!/usr/bin/env bash
# Recognition on Fashion-MNIST: `principal classify` against scikit-learn's PCA +
# KNeighborsClassifier, same K, side by side. Sets up bench/.venv (bench/requirements.txt),
# builds the release binary, then runs bench/classify.py with this script's arguments:
#   bench/classify.sh                                  # K = 10,20,50,100,200, 3 rounds each
#   bench/classify.sh --components 50 --repeat 7      # one K, more rounds
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
VENV="$BENCH/.venv"

if [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
    echo "error: Fashion-MNIST is missing: apt-get install dataset-fashion-mnist" >&2
    exit 1
fi
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! cmp -s "$BENCH/requirements.txt" "$VENV/.requirements.installed"; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$BENCH/requirements.txt"
    cp "$BENCH/requirements.txt" "$VENV/.requirements.installed"
fi
(cd "$ROOT" && cargo build --release -p principal-cli)
exec "$VENV/bin/python" "$BENCH/classify.py" "$@"
