#!/usr/bin/env bash
# Writes a fixed set of model files (and codes) with the given `principal` binary into OUTDIR,
# so that two builds can be compared byte for byte after a change that must not alter results:
#   bench/model_bytes.sh target/release/principal /tmp/before
#   ... change, rebuild ...
#   bench/model_bytes.sh target/release/principal /tmp/after && diff -r /tmp/before /tmp/after
# Inputs: the fixtures' data (fixtures/*.json), data/iris.csv, data/mnist-5k.csv.gz and, when
# the Debian package dataset-fashion-mnist is installed, Fashion-MNIST's training images.
set -euo pipefail
bin=$(realpath "$1"); out=$(mkdir -p "$2" && realpath "$2")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The fixtures' data matrices as headerless CSV (standard-library Python only).
python3 - "$tmp" <<'PY'
import json, sys, glob, os
for path in sorted(glob.glob("fixtures/*.json")):
    fx = json.load(open(path))
    name = os.path.basename(path)[:-5]
    with open(os.path.join(sys.argv[1], name + ".csv"), "w") as f:
        for row in fx["x"]:
            f.write(",".join(repr(float(v)) for v in row) + "\n")
    p = fx["params"]
    with open(os.path.join(sys.argv[1], name + ".args"), "w") as f:
        args = []
        if p.get("standardize"): args.append("--standardize")
        args += ["--ddof", str(p.get("ddof", 1))]
        print(" ".join(args), file=f)
PY

fit() { local name=$1; shift; "$bin" fit "$@" --output "$out/$name.pca" 2>/dev/null; }
for csv in "$tmp"/*.csv; do
    name=$(basename "$csv" .csv); args=$(cat "$tmp/$name.args")
    for solver in auto covariance gram svd randomized power em; do
        # shellcheck disable=SC2086
        fit "fixture-$name-$solver" "$csv" --no-header $args --solver "$solver"
    done
done

iris=(data/iris.csv --exclude species)
for solver in auto covariance gram svd randomized power em; do
    fit "iris-$solver-k2" "${iris[@]}" -k 2 --solver "$solver"
done
fit iris-all "${iris[@]}"
fit iris-standardized "${iris[@]}" --standardize -k 3
fit iris-variance "${iris[@]}" --variance 0.95 --ddof 0
fit iris-deflation "${iris[@]}" -k 3 --solver power --power-method deflation --seed 3
fit iris-subspace "${iris[@]}" -k 2 --solver randomized --randomized-method subspace --seed 5
"$bin" transform "$out/iris-auto-k2.pca" data/iris.csv --output "$out/iris-codes.npy" 2>/dev/null
"$bin" inverse "$out/iris-auto-k2.pca" "$out/iris-codes.npy" --output "$out/iris-inverse.npy" 2>/dev/null

mnist=(data/mnist-5k.csv.gz --exclude 784)
fit mnist-auto "${mnist[@]}" -k 50
fit mnist-standardized "${mnist[@]}" -k 50 --standardize
fit mnist-gram "${mnist[@]}" -k 20 --solver gram
fit mnist-randomized "${mnist[@]}" -k 20 --solver randomized --seed 1
fit mnist-em "${mnist[@]}" -k 10 --solver em --seed 2 --tolerance 1e-6
fit mnist-streamed "${mnist[@]}" -k 30 --memory-limit 20M
"$bin" transform "$out/mnist-auto.pca" "${mnist[@]}" --output "$out/mnist-codes.npy" 2>/dev/null

fm=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
if [ -e "$fm" ]; then
    fit fashion-auto "$fm" -k 50
    fit fashion-covariance "$fm" -k 50 --solver covariance
    fit fashion-streamed "$fm" -k 50 --memory-limit 64M
    fit fashion-standardized "$fm" -k 20 --standardize
    fit fashion-randomized "$fm" -k 20 --solver randomized --seed 4
    "$bin" transform "$out/fashion-auto.pca" "$fm" --output "$out/fashion-codes.npy" 2>/dev/null
else
    echo "Fashion-MNIST not installed: its models were not written" >&2
fi
ls "$out" | wc -l
