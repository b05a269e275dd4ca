#!/usr/bin/env bash
# One process against `mpirun -n 2` on one large file: interleaved rounds, medians of the wall
# time, the load and the CPU flags printed with them (see bench/results.md, MPI scaling).
#
#   bench/mpi_scaling.sh FILE [ROUNDS] [fit options...]
#
# Needs a build with the `mpi` feature: cargo build --release -p principal-cli --features mpi
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
file=$1
rounds=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
options=("$@")
bin=${PRINCIPAL:-target/release/principal}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mca=(--mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
     --mca btl_vader_single_copy_mechanism none)
echo "file: $file ($(stat -c %s "$file") bytes); options: ${options[*]}"
echo "cpu flags: $(grep -o -w 'avx512vnni\|avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "cores: $(nproc); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$file" > /dev/null   # into the page cache
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
one=(); two=()
for r in $(seq "$rounds"); do
    one+=("$(seconds "$bin" fit "$file" "${options[@]}" -o "$out/one.pca")")
    two+=("$(seconds mpirun -n 2 "${mca[@]}" "$bin" fit "$file" "${options[@]}" -o "$out/two.pca")")
    echo "round $r: 1 process ${one[-1]} s, 2 ranks ${two[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "median: 1 process $(median "${one[@]}") s, 2 ranks $(median "${two[@]}") s"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" inspect "$out/one.pca" --json > "$out/one.json"
"$bin" inspect "$out/two.pca" --json > "$out/two.json"
python3 - "$out/one.json" "$out/two.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ev = lambda j: j["explained_variance"]
top = ev(a)[0]
print("max |Δλ|/λ₁ between 1 process and 2 ranks: %.1e" % max(abs(x - y) / top for x, y in zip(ev(a), ev(b))))
PY
