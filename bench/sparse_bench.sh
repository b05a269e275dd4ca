#!/usr/bin/env bash
# Sparse PCA benchmark: a single-cell-like count matrix (negative binomial with cell types,
# normalise_total + log1p as scanpy does), fitted by principal (a MatrixMarket file), by
# scikit-learn's PCA on the CSR matrix (arpack, implicit centring) and by scanpy's sc.pp.pca if
# it installs, in one run: time, peak memory, agreement, ratios.
#   bench/sparse_bench.sh                           # 200,000 cells × 20,000 genes, 50 components
#   bench/sparse_bench.sh --cells 20000             # a correctness run at a small size
#   bench/sparse_bench.sh --input mtx               # principal reads MatrixMarket text instead
#   bench/sparse_bench.sh --data-dir DIR --generate-only   # make the data once (minutes at
#   bench/sparse_bench.sh --data-dir DIR                   # 200,000 cells), time it later
# principal reads an AnnData .h5ad file (CSR, the sparse core's blocks) when anndata imports,
# else a MatrixMarket file. Sets up bench/.venv (bench/requirements.txt; scanpy is tried, and
# skipped if it fails), or uses the venv BENCH_VENV names.
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
source "$BENCH/venv.sh"
"$VENV/bin/python" -c "import scanpy" 2>/dev/null \
    || "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check scanpy 2>/dev/null \
    || echo "scanpy did not install: its column is left out" >&2
# Workspace-wide, as every build here: a -p or --bin build resolves features differently and
# rebuilds the dependencies.
(cd "$ROOT" && cargo build --release --quiet --workspace)
exec "$VENV/bin/python" "$BENCH/sparse_bench.py" --principal "$ROOT/target/release/principal" "$@"
