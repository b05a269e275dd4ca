#!/usr/bin/env bash
# The digit "8": the 500 eights of data/mnist-5k.csv.gz (28×28 pixels, 0–255).
#
# Reproduces: the eigenvalue spectrum (only a few eigenvalues are large); the variance captured
# against the number of components; reconstructions of eights from 1, 10, 100 and 500
# components (blurry, then near perfect: with 500 eights, 500 components are every direction
# the data spans, so that reconstruction is exact); and the mean squared reconstruction error
# against k drawn on the same axes as (N − 1)/N times the sum of the discarded eigenvalues —
# the two curves coincide.
# Figures: examples/output/eights/spectrum.png, scree.png, reconstructions.png,
# reconstruction-error.png, components.png (the mean and the first eigen-eights).
# docs/eights-reconstructions.png is a copy of reconstructions.png.
#
# It printed:
#   (filled in below from the last run)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The eights: rows whose last column (the label, column 784) is 8. No header.
gzip -dc "$ROOT/data/mnist-5k.csv.gz" | awk -F, '$785 == 8' > "$OUT/eights.csv"
echo "eights: $(wc -l < "$OUT/eights.csv") images"

# Every component (min(N, D) = 500); the label column is not a feature.
principal fit "$OUT/eights.csv" --exclude 784 --output "$OUT/eights.pca" 2> "$OUT/eights-fit.txt"
grep -E "^(variance|solver)" "$OUT/eights-fit.txt" | cut -c1-120
principal report "$OUT/eights.pca" --data "$OUT/eights.csv" --label-column 784 \
    --image-shape 28x28 --samples 0,1,2,3,4,5 \
    --title "MNIST digit 8: 500 images, 784 pixels" --output "$OUT/eights"
mkdir -p "$ROOT/docs"
cp "$OUT/eights/reconstructions.png" "$ROOT/docs/eights-reconstructions.png"

echo "largest eigenvalues (spectrum.csv):"
points "$OUT/eights/spectrum.csv" explained_variance 1 2 3 10 100 499 500
echo "variance captured by the first k components (scree.csv, cumulative):"
points "$OUT/eights/scree.csv" cumulative 1 10 50
awk -F, '$1 == "explained_variance_ratio" { s += $3; if ($2 == 100 || $2 == 500) printf "  %d: %.6f\n", $2, s }' \
    "$OUT/eights/scree.csv" 2> /dev/null || true
echo "mean squared reconstruction error, measured and (N-1)/N x discarded eigenvalues:"
paste -d, <(awk -F, '$1 == "mean_squared_error" { print $2 "," $3 }' "$OUT/eights/reconstruction-error.csv") \
          <(awk -F, '$1 == "discarded_variance" { print $3 }' "$OUT/eights/reconstruction-error.csv") |
    awk -F, '$1 == 0 || $1 == 1 || $1 == 10 || $1 == 100 || $1 == 500 { printf "  k = %3d: %.6e  %.6e\n", $1, $2, $3 }
             { d = $2 - $3; if (d < 0) d = -d; if (d > worst) worst = d; if (NR == 1) first = $2 }
             END { printf "  largest difference over k = 0..500: %.2e of the error at k = 0\n", worst / first }'
