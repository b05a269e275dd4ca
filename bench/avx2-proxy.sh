#!/usr/bin/env bash
# An AVX2 proxy on an AVX-512 machine: principal and scikit-learn both restricted to AVX2 (and
# FMA) instructions on this CPU, then bench/bench.py side by side, as bench/run.sh does. For
# issue 26's AVX2 targets when no AVX2-only machine is at hand. What it emulates: the
# instruction sets. What it does not: an AVX2 CPU's ports, caches and clocks (this CPU's stay;
# Zen 3's differ), so its ratios are a proxy, not a measurement of such a machine.
#
#   bench/avx2-proxy.sh --cases 1,2,3 --repeat 3     # bench.py's arguments
#   AVX2_PROXY_CPU=avx-vnni bench/avx2-proxy.sh --cases 1 --repeat 3   # Alder Lake-like
#   AVX2_PROXY_PROFILE=profiling bench/avx2-proxy.sh --build-only   # symbols for perf
#   bench/avx2-proxy.sh --test [FILTER…]    # principal's unit tests on faer's AVX2 kernels
#
# --test runs the math library's unit tests (cargo test --release -p principal --lib, with
# PRINCIPAL_CPU=avx2) against the patched faer: the bit-for-bit checks that hold whatever the
# kernels (the bands' widths, the byte kernels against the portable reference) then also run
# on the kernels an AVX2 machine's faer takes, which a normal build here never reaches.
#
# How each side is restricted:
# - principal's own dispatch: PRINCIPAL_CPU=avx2 (GUIDE.md): the vpmaddwd byte kernel instead of
#   AMX/AVX-512 VNNI, AVX2 band widths.
# - faer: its products choose private_gemm_x86's AVX-512 kernels by
#   is_x86_feature_detected!("avx512f") and have no switch, so principal is built against a
#   patched copy of faer whose three checks say false (AVX2 kernels), in its own target
#   directory, from a scratch copy of the tree (the repository's Cargo.lock stays untouched).
# - scikit-learn: OPENBLAS_CORETYPE=Haswell (numpy's and scipy's OpenBLAS are DYNAMIC_ARCH) and
#   NPY_DISABLE_CPU_FEATURES (numpy's own AVX-512 loops).
# - both: GLIBC_TUNABLES drops glibc's AVX-512 (EVEX) string and memory functions.
# Verified with perf (bench/results.md, "AVX2 proxy"): no zmm kernels of faer or ours in
# principal's profile, OpenBLAS's HASWELL kernels in scikit-learn's.
#
# Environment: AVX2_PROXY_DIR (scratch: the tree's copy, the patched faer and the build; default
# /tmp/principal-avx2-proxy), AVX2_PROXY_PROFILE (cargo profile, default release), BENCH_VENV.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$BENCH")"
VENV="${BENCH_VENV:-$BENCH/.venv}"
SCRATCH="${AVX2_PROXY_DIR:-${TMPDIR:-/tmp}/principal-avx2-proxy}"
PROFILE="${AVX2_PROXY_PROFILE:-release}"
BUILD_ONLY=0
TEST=0
if [[ "${1:-}" == "--build-only" ]]; then
    BUILD_ONLY=1
    shift
elif [[ "${1:-}" == "--test" ]]; then
    TEST=1
    shift
fi

if ! grep -q -m1 '\bavx2\b' /proc/cpuinfo || ! grep -q -m1 '\bfma\b' /proc/cpuinfo; then
    echo "error: this CPU has no AVX2 and FMA: nothing to emulate" >&2
    exit 1
fi

# 1. The patched faer: the registry's source of the version in Cargo.lock, copied, with its
#    three avx512f checks made false.
FAER_VERSION="$(awk '/^name = "faer"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")"
FAER_SRC="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"faer-$FAER_VERSION" 2>/dev/null | head -1)"
if [[ -z "$FAER_SRC" ]]; then
    (cd "$ROOT" && cargo fetch --quiet)
    FAER_SRC="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"faer-$FAER_VERSION" | head -1)"
fi
FAER="$SCRATCH/faer-$FAER_VERSION-avx2"
if [[ ! -f "$FAER/.patched" ]]; then
    rm -rf "$FAER"
    mkdir -p "$SCRATCH"
    cp -r "$FAER_SRC" "$FAER"
    chmod -R u+w "$FAER"
    CHECKED=(src/linalg/matmul/mod.rs src/linalg/matmul/triangular.rs src/linalg/matmul/internal/mod.rs)
    for f in "${CHECKED[@]}"; do
        # `is_x86_feature_detected!(` may be split from `"avx512f"` over lines (mod.rs).
        perl -0pi -e 's/(?:std::arch::)?is_x86_feature_detected!\(\s*"avx512f"\s*\)/false \/* avx2-proxy: avx512f *\//g' "$FAER/$f"
    done
    found="$(grep -c 'avx2-proxy: avx512f' "${CHECKED[@]/#/$FAER/}" | awk -F: '{ s += $2 } END { print s }')"
    left="$(grep -rl '"avx512f"' "$FAER/src" || true)"
    if [[ "$found" != 3 || -n "$left" ]]; then
        echo "error: expected to patch 3 avx512f checks in faer $FAER_VERSION, patched $found; left: $left" >&2
        exit 1
    fi
    touch "$FAER/.patched"
fi

# 2. A scratch copy of the tree as it is (tracked files and new ones not ignored, uncommitted
#    changes included), built against the patched faer into its own target directory.
TREE="$SCRATCH/tree"
mkdir -p "$TREE"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf -) | tar -xf - -C "$TREE"
export CARGO_TARGET_DIR="$SCRATCH/target"
# Built as a user's build is (not incremental: that splits the crates into other codegen units
# than the release profile's one, and the patched faer, a path dependency, would be incremental too).
export CARGO_PROFILE_RELEASE_INCREMENTAL=false
PATCH=(--config "patch.crates-io.faer.path=\"$FAER\"")
if [[ "$TEST" == 1 ]]; then
    (cd "$TREE" && cargo test --profile "$PROFILE" -p principal --lib --no-run "${PATCH[@]}")
else
    (cd "$TREE" && cargo build --profile "$PROFILE" --workspace --bin principal --example fit_in_memory \
        "${PATCH[@]}")
fi
OUT="$CARGO_TARGET_DIR/$PROFILE"
# A patched package is locked without a `source` (the registry's has one).
if awk '/^name = "faer"$/ { f = 1; next } /^\[\[package\]\]/ { f = 0 } f && /^source = / { bad = 1 } END { exit !bad }' "$TREE/Cargo.lock"; then
    echo "error: the scratch build did not take the patched faer" >&2
    exit 1
fi
if [[ "$TEST" == 1 ]]; then
    cd "$TREE"
    PRINCIPAL_CPU=avx2 exec cargo test --profile "$PROFILE" -p principal --lib "${PATCH[@]}" -- "$@"
fi
echo "AVX2 proxy build: $OUT/principal and $OUT/examples/fit_in_memory (faer from $FAER)" >&2
if [[ "$BUILD_ONLY" == 1 ]]; then
    exit 0
fi

# 3. Both sides capped, then the benchmark (bench.py's arguments pass through).
# AVX2_PROXY_CPU=avx-vnni: an Intel client CPU since Alder Lake instead (AVX2 and AVX-VNNI, no
# AVX-512): principal's byte products then take AVX-VNNI's vpdpbusd; everything else the same.
export PRINCIPAL_CPU="${AVX2_PROXY_CPU:-avx2}"
export OPENBLAS_CORETYPE=Haswell
export NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR AVX512FP16"
export GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX512ER,-AVX512PF"
exec "$VENV/bin/python" "$BENCH/bench.py" --principal "$OUT/principal" \
    --note "AVX2 proxy (bench/avx2-proxy.sh): this CPU's cores, caches and clocks, AVX2 and FMA instructions only on both sides$([[ "$PRINCIPAL_CPU" == avx-vnni ]] && echo ', and AVX-VNNI for principal'"'"'s byte products') (principal: PRINCIPAL_CPU=$PRINCIPAL_CPU and faer with its avx512f checks patched out; scikit-learn: OPENBLAS_CORETYPE=Haswell, NPY_DISABLE_CPU_FEATURES; glibc: no AVX-512 functions)" \
    "$@"
