#!/usr/bin/env bash
# Fashion-MNIST (70,000 images of clothing, 28×28, ten classes; Debian package
# dataset-fashion-mnist): the 2-D map of all 70,000 images by class, and recognition by the
# nearest training code (eigenfaces' method) for K = 10, 20, 50, 100, 200.
#
# Reproduces: the 2-D projection coloured by class; recognition accuracy against K.
# Figures: examples/output/fashion/projection.png (docs/fashion-map.png is a copy), pairs.png,
# components.png; examples/output/fashion-recognition/accuracy.png and confusion-matrix.png.
#
# It printed (2026-11-24):
#   variance explained: 86.26% in total (pc1 29.06%, pc2 17.74%, pc3 6.02%, pc4 4.96%, pc5 3.84%, …)
#   solver: covariance (chosen by auto: exact; the 784×784 covariance matrix is the cheapest …)
#   wrote …/fashion/index.html with 8 figure(s) (…) as PNG and SVG in 2.2 s
#   10000 test samples labelled with the label of the nearest training code among 60000 (10
#   classes), on the first K components of a model fitted by covariance:
#        K  accuracy  correct
#       10    78.26%  7826 of 10000
#       20    82.08%  8208 of 10000
#       50    84.21%  8421 of 10000
#      100    84.85%  8485 of 10000
#      200    85.29%  8529 of 10000
#   (then the confusion matrix at K = 200; the whole script took 29 s at load average 10)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
DATA=/usr/share/datasets/fashion-mnist
if [[ ! -f $DATA/train-images-idx3-ubyte.gz ]]; then
    echo "Fashion-MNIST is missing: apt-get install dataset-fashion-mnist" >&2
    exit 1
fi

# The class names, one per image, from the IDX label files (8-byte header, then one byte per
# image): text labels name the classes in the figures' legends.
names() {
    gzip -dc "$1" | od -An -v -tu1 -j8 | tr -s ' ' '\n' | sed '/^$/d' | awk 'BEGIN {
        split("T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot", n, ",")
        print "class" } { print n[$1 + 1] }'
}
names "$DATA/train-labels-idx1-ubyte.gz" > "$OUT/fashion-train-classes.txt"
names "$DATA/t10k-labels-idx1-ubyte.gz" > "$OUT/fashion-test-classes.txt"

# All 70,000 images: the training set then the test set, as two shards of one data set.
principal fit "$DATA/train-images-idx3-ubyte.gz" "$DATA/t10k-images-idx3-ubyte.gz" \
    --components 50 --output "$OUT/fashion.pca" 2> "$OUT/fashion-fit.txt"
grep -E "^(fitted|variance|solver|time)" "$OUT/fashion-fit.txt" | cut -c1-150
principal report "$OUT/fashion.pca" \
    --data "$DATA/train-images-idx3-ubyte.gz" "$DATA/t10k-images-idx3-ubyte.gz" \
    --labels "$OUT/fashion-train-classes.txt" "$OUT/fashion-test-classes.txt" \
    --image-shape 28x28 --title "Fashion-MNIST: 70,000 images" --output "$OUT/fashion"
mkdir -p "$ROOT/docs"
cp "$OUT/fashion/projection.png" "$ROOT/docs/fashion-map.png"

# Recognition: fit on the 60,000 training images, label each of the 10,000 test images by its
# nearest training code on the first K components.
principal classify \
    --train "$DATA/train-images-idx3-ubyte.gz" --train-labels "$OUT/fashion-train-classes.txt" \
    --test "$DATA/t10k-images-idx3-ubyte.gz" --test-labels "$OUT/fashion-test-classes.txt" \
    --components 10,20,50,100,200 --report "$OUT/fashion-recognition" --image-shape 28x28
