#!/usr/bin/env bash
# Kernel PCA of Iris with an RBF kernel: the centred 150×150 kernel matrix's eigenvalues, the
# codes of the flowers (more components than the 4 measurements are possible: up to 150), new
# rows through the training kernel (the model keeps the training rows), and reconstructions
# through the learned pre-image map.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

principal fit "$ROOT/data/iris.csv" --exclude species --model kernel --kernel rbf --gamma 0.5 \
    -k 6 --alpha 0.1 --output "$OUT/iris-kpca.model"
principal inspect "$OUT/iris-kpca.model"
principal transform "$OUT/iris-kpca.model" "$ROOT/data/iris.csv" --exclude species \
    --output "$OUT/iris-kpca-codes.csv"
principal inverse "$OUT/iris-kpca.model" "$OUT/iris-kpca-codes.csv" \
    --output "$OUT/iris-kpca-preimages.csv"
echo "first flower, its pre-image:"
sed -n 2p "$ROOT/data/iris.csv"
sed -n 2p "$OUT/iris-kpca-preimages.csv"
