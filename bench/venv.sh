# Sourced by the benchmark scripts: VENV is bench/.venv (or the venv BENCH_VENV names), created
# if missing, with bench/requirements.txt installed whenever that file changed. Needs BENCH.
VENV="${BENCH_VENV:-$BENCH/.venv}"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! cmp -s "$BENCH/requirements.txt" "$VENV/.requirements.installed"; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$BENCH/requirements.txt"
    cp "$BENCH/requirements.txt" "$VENV/.requirements.installed"
fi
