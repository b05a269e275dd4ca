#!/usr/bin/env bash
# Two builds of `principal`, timed interleaved on the same fits (so the machine's noise falls on
# both alike), with the median wall time of each and their ratio; the models must be the same
# bytes. For a change that must not alter speed or results:
#   bench/compare_builds.sh /path/to/old/principal target/release/principal [ROUNDS]
# Cases: Fashion-MNIST's 60,000 training images (Debian's dataset-fashion-mnist), covariance
# (auto) and randomized; data/mnist-5k.csv.gz (CSV parsing, byte-valued columns). 50 components.
set -euo pipefail
old=$(realpath "$1"); new=$(realpath "$2"); rounds=${3:-7}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fashion=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
[ -e "$fashion" ] || { echo "install dataset-fashion-mnist (Debian) for $fashion" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
declare -A cases=(
    [fashion-auto]="$fashion --components 50"
    [fashion-randomized]="$fashion --components 50 --solver randomized --seed 1"
    [mnist-5k-csv]="data/mnist-5k.csv.gz --components 50"
)
echo "cpu: $(grep -o -w 'avx512vnni\|avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')  load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
    for case in "${!cases[@]}"; do
        for build in old new; do
            bin=$old; [ "$build" = new ] && bin=$new
            start=$(date +%s.%N)
            # shellcheck disable=SC2086 # the case's arguments are words
            "$bin" fit ${cases[$case]} --output "$tmp/$build-$case.pca" >/dev/null 2>"$tmp/stderr" ||
                { cat "$tmp/stderr" >&2; exit 1; }
            echo "$case $build $(echo "$(date +%s.%N) - $start" | bc)" >>"$tmp/times"
        done
        cmp -s "$tmp/old-$case.pca" "$tmp/new-$case.pca" || echo "$case: the models differ" >&2
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/times" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    case, build, seconds = line.split()
    times[case, build].append(float(seconds))
print(f"{'case':20s} {'old (median s)':>15s} {'new (median s)':>15s} {'new/old':>8s}  rounds")
for case in sorted({c for c, _ in times}):
    old, new = statistics.median(times[case, "old"]), statistics.median(times[case, "new"])
    print(f"{case:20s} {old:15.3f} {new:15.3f} {new / old:8.2f}  {len(times[case, 'old'])}")
PY
