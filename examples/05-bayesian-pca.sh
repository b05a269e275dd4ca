#!/usr/bin/env bash
# Bayesian PCA on Iris (150 flowers × 4 measurements): Bishop's ARD prior decides how many of
# the 3 allowed components the data supports, and reports each column's precision α (large α:
# a column close to switched off; null: switched off).
#
# Compare with the eigenvalues of 02-iris.sh (4.23, 0.24, 0.078, 0.024): the ARD precisions
# grow as the variances shrink. Then a planted rank: 200 samples of rank 3 in 10 features plus
# noise, 8 components allowed, of which ARD keeps 3.
#
# It printed (2026-11-25):
#   Iris: alpha [0.984, 19.04, 78.91] (all 3 kept), noise_variance 0.02406, 824 EM steps
#   planted: kept 3 of 8 components; alpha [0.1144, 0.8225, 14.58, None, None, None, None, None]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

principal fit "$ROOT/data/iris.csv" --exclude species --model bayesian-pca --components 3 \
    --output "$OUT/iris.bpca"
principal inspect "$OUT/iris.bpca"
principal score "$OUT/iris.bpca" "$ROOT/data/iris.csv" --exclude species --output "$OUT/iris-bpca-ll.csv"

# The planted rank: the committed fixture's data (fixtures/latent/), as CSV.
python3 - "$ROOT/fixtures/latent/bpca_planted_rank3_200x10_max8.json" "$OUT/planted.csv" <<'PY'
import json, sys
case = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write(",".join(f"x{j + 1}" for j in range(len(case["x"][0]))) + "\n")
    for row in case["x"]:
        f.write(",".join(repr(v) for v in row) + "\n")
PY
principal fit "$OUT/planted.csv" --model bayesian-pca --components 8 --output "$OUT/planted.bpca"
principal inspect "$OUT/planted.bpca" --json | python3 -c '
import json, sys
m = json.load(sys.stdin)
print("kept", m["n_components"], "of", m["max_components"], "components; alpha", m["alpha"])'
