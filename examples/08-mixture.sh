#!/usr/bin/env bash
# A mixture of probabilistic PCAs on Iris: 3 clusters, each a line (1 component) with its own
# noise, fitted by EM from k-means++ starts (5 seeded restarts, the most likely kept). The
# clusters are compared with the species, which the fit never sees: setosa is found exactly,
# versicolor and virginica overlap.
#
# It printed (2026-11-25; weights 0.3855 0.3333 0.2812, log-likelihood −1.458984 per row):
#   setosa         0  50   0
#   versicolor     7   0  43
#   virginica     50   0   0
# A restart whose cluster collapses onto a few points (a likelihood growing without bound) is
# refused rather than kept: with --seed 2 --restarts 3 the first restart does so, is listed
# with log-likelihood -inf, and the best of the other two is the fit above (checked 2026-11-26).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

principal fit "$ROOT/data/iris.csv" --exclude species --model mixture --clusters 3 \
    --components 1 --seed 0 --output "$OUT/iris.mix"
principal inspect "$OUT/iris.mix"
principal transform "$OUT/iris.mix" "$ROOT/data/iris.csv" --exclude species --clusters \
    --output "$OUT/iris-clusters.csv"
principal sample "$OUT/iris.mix" --count 5 --seed 1 --output "$OUT/iris-mix-samples.csv"

echo "clusters against species (rows: species; columns: cluster 0, 1, 2):"
paste -d, <(tail -n +2 "$ROOT/data/iris.csv" | awk -F, '{ print $NF }') \
    <(tail -n +2 "$OUT/iris-clusters.csv") |
    awk -F, '{ n[$1, int($2)]++; s[$1] = 1 } END { for (k in s) printf "  %-12s %3d %3d %3d\n", k, n[k, 0], n[k, 1], n[k, 2] }' |
    sort
