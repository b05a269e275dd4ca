# Sourced by the examples: the `principal` binary (built in release mode when missing) and the
# directory the examples write into (examples/output, git-ignored; OUT=... to choose another).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PRINCIPAL="${PRINCIPAL:-$ROOT/target/release/principal}"
if [[ ! -x "$PRINCIPAL" ]]; then
    (cd "$ROOT" && cargo build --release -p principal-cli)
fi
OUT="${OUT:-$ROOT/examples/output}"
mkdir -p "$OUT"
principal() { "$PRINCIPAL" "$@"; }
# Prints the lines of a report's figure CSV (series,x,y) for `series` at the x values given.
points() {
    local file=$1 series=$2
    shift 2
    local wanted=" $* "
    awk -F, -v s="$series" -v w="$wanted" '$1 == s && index(w, " " $2 " ") { print "  " $2 ": " $3 }' "$file"
}
