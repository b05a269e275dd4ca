#!/usr/bin/env bash
# Generation from the 2-D latent space of the eights: a model of two components fitted to the
# 500 eights of data/mnist-5k.csv.gz; new images x̃ = B z + μ from a grid of codes z.
#
# Reproduces: the 2-D latent space of the "8"s (the eights on components 1 and 2) and digits
# generated from a grid of points in it.
# Figures: examples/output/eights-2d/latent-grid.png (docs/eights-latent-grid.png is a copy),
# projection.png.
#
# It printed (2026-11-24):
#   pc1                  417957.317     14.25%      14.25%         14441.6308
#   pc2                  229627.075      7.83%      22.08%         10704.3874
#   generated 25 images of 784 pixels from a 5×5 grid of codes
#   largest |pixel of z = 0 - mean pixel|: 0
#   generated pixels range from -138.8 to 353.1
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

gzip -dc "$ROOT/data/mnist-5k.csv.gz" | awk -F, '$785 == 8' > "$OUT/eights.csv"
# Exact: auto would choose the randomized solver here (4× cheaper, error estimate ≈ 1e-3).
principal fit "$OUT/eights.csv" --exclude 784 --components 2 --solver gram \
    --output "$OUT/eights-2d.pca" 2> /dev/null
principal inspect "$OUT/eights-2d.pca" | grep -E "^pc[12] "
principal report "$OUT/eights-2d.pca" --data "$OUT/eights.csv" --label-column 784 \
    --image-shape 28x28 --title "The latent space of the eights" --output "$OUT/eights-2d"
mkdir -p "$ROOT/docs"
cp "$OUT/eights-2d/latent-grid.png" "$ROOT/docs/eights-latent-grid.png"

# The same by hand: codes z on a grid of -2..2 standard deviations (√λ) of each component,
# decoded with `principal inverse` (x̃ = B z + μ) into 784-pixel images.
read -r l1 l2 < <(principal inspect "$OUT/eights-2d.pca" | awk '$1 == "pc1" { a = $2 } $1 == "pc2" { b = $2 } END { print a, b }')
awk -v l1="$l1" -v l2="$l2" 'BEGIN { print "pc1,pc2"
    for (i = -2; i <= 2; i++) for (j = -2; j <= 2; j++) printf "%.17g,%.17g\n", i * sqrt(l1), j * sqrt(l2) }' \
    > "$OUT/eights-grid-codes.csv"
principal inverse "$OUT/eights-2d.pca" "$OUT/eights-grid-codes.csv" --output "$OUT/eights-generated.csv" 2> /dev/null
# (No header: the model has no feature names, its data had none.)
echo "generated $(wc -l < "$OUT/eights-generated.csv") images of 784 pixels from a 5×5 grid of codes"
# The centre of the grid (z = 0) is the mean image; pixels of generated images may leave 0..255.
mean=$(principal inspect "$OUT/eights-2d.pca" --json | tr -d ' \n' | sed 's/.*"mean":\[\([^]]*\)\].*/\1/')
centre=$(sed -n 13p "$OUT/eights-generated.csv")
paste -d' ' <(tr ',' '\n' <<< "$mean") <(tr ',' '\n' <<< "$centre") |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > worst) worst = d } END { printf "largest |pixel of z = 0 - mean pixel|: %.3g\n", worst }'
tr ',' '\n' < "$OUT/eights-generated.csv" |
    awk 'NR == 1 { lo = $1; hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { printf "generated pixels range from %.1f to %.1f\n", lo, hi }'
