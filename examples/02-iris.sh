#!/usr/bin/env bash
# Iris (150 flowers × 4 measurements): the eigenvalues, the scree plot and the 2-D map by
# species.
#
# Reproduces: the Iris eigenvalues (unstandardized, ddof 1) 4.22824171, 0.24267075,
# 0.07820950, 0.02383509; the scree plot (proportion of variance per component, with the
# cumulative curve); the projection on components 1 and 2 coloured by species.
# Figures: examples/output/iris/scree.png, projection.png (and the rest of the report).
#
# It printed (2026-11-24):
#   (principal inspect: pc1 4.22824171 92.46%, pc2 0.242670748 5.31%, pc3 0.0782095000 1.71%,
#    pc4 0.0238350930 0.52%)
#   eigenvalues (explained_variance), from spectrum.csv:
#     1: 4.228241706034859
#     2: 0.24267074792863358
#     3: 0.07820950004291932
#     4: 0.023835092973449393
#   proportion of variance (scree.csv): 92.46%, 5.31%, 1.71%, 0.52%
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

principal fit "$ROOT/data/iris.csv" --exclude species --output "$OUT/iris.pca"
principal inspect "$OUT/iris.pca"
principal report "$OUT/iris.pca" --data "$ROOT/data/iris.csv" --label-column species \
    --title "Iris: 150 flowers, 4 measurements" --output "$OUT/iris"

echo "eigenvalues (explained_variance), from spectrum.csv:"
points "$OUT/iris/spectrum.csv" explained_variance 1 2 3 4
echo -n "proportion of variance (scree.csv):"
awk -F, '$1 == "explained_variance_ratio" { printf "%s %.2f%%", (n++ ? "," : ""), 100 * $3 } END { print "" }' \
    "$OUT/iris/scree.csv"
