#!/usr/bin/env bash
# Kernel PCA and factor analysis against scikit-learn (bench/models_bench.py): sets up
# bench/.venv (bench/requirements.txt) unless BENCH_VENV names one, builds principal, and runs
# the comparison on data/mnist-5k.csv.gz. Prints a Markdown table with ratios.
#   bench/models_bench.sh                                  # 3,000 rows, 20 components, 3 rounds
#   bench/models_bench.sh --rows 5000 --repeat 5
#   bench/models_bench.sh --baseline /path/to/older/principal   # before and after, same run
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
source "$BENCH/venv.sh"
# Workspace-wide, as every build here (a -p build resolves features differently).
(cd "$ROOT" && cargo build --release --quiet --workspace)
exec "$VENV/bin/python" "$BENCH/models_bench.py" "$@"
