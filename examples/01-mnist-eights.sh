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
# It printed (2026-11-24):
#   eights: 500 images
#   variance explained: 100.00% in total (pc1 14.25%, pc2 7.83%, pc3 6.60%, pc4 6.21%, pc5 3.88%, …)
#   solver: gram (chosen by auto: exact; the 500×500 Gram matrix is the cheapest exact route …)
#   eigenvalues (spectrum.csv):
#     1: 417957.3171798278
#     2: 229627.07516920686
#     3: 193666.46809471474
#     10: 64088.22060770188
#     100: 2634.4390995924105
#     above rounding (λ₁·D·ε): 470 of 500; the eights span fewer directions
#   variance captured by the first k components (principal inspect, cumulative ratio):
#     1: 14.25%
#     10: 52.72%
#     100: 94.54%
#     500: 100.00%
#   mean squared reconstruction error, measured and (N-1)/N x discarded eigenvalues:
#     k =   0: 2.927016e+06  2.927016e+06
#     k =   1: 2.509895e+06  2.509895e+06
#     k =  10: 1.383884e+06  1.383884e+06
#     k = 100: 1.596984e+05  1.596984e+05
#     k = 500: 0.000000e+00  -1.951866e-08
#     largest difference over k = 0..500: 6.92e-15 of the error at k = 0
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

echo "eigenvalues (spectrum.csv):"
points "$OUT/eights/spectrum.csv" explained_variance 1 2 3 10 100
echo "  above rounding (λ₁·D·ε): $(($(wc -l < "$OUT/eights/spectrum.csv") - 1)) of 500; the eights span fewer directions"
echo "variance captured by the first k components (principal inspect, cumulative ratio):"
principal inspect "$OUT/eights.pca" | awk '$1 == "pc1" || $1 == "pc10" || $1 == "pc100" || $1 == "pc500" { print "  " substr($1, 3) ": " $4 }'
echo "mean squared reconstruction error, measured and (N-1)/N x discarded eigenvalues:"
paste -d, <(awk -F, '$1 == "mean_squared_error" { print $2 "," $3 }' "$OUT/eights/reconstruction-error.csv") \
          <(awk -F, '$1 == "discarded_variance" { print $3 }' "$OUT/eights/reconstruction-error.csv") |
    awk -F, '$1 == 0 || $1 == 1 || $1 == 10 || $1 == 100 || $1 == 500 { printf "  k = %3d: %.6e  %.6e\n", $1, $2, $3 }
             { d = $2 - $3; if (d < 0) d = -d; if (d > worst) worst = d; if (NR == 1) first = $2 }
             END { printf "  largest difference over k = 0..500: %.2e of the error at k = 0\n", worst / first }'
