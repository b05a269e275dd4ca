#!/usr/bin/env bash
# Builds the Python package principal into a venv and runs its tests (pytest), from any
# directory, without root: the venv is target/python-venv (reused when present; another with
# PRINCIPAL_PY_VENV=DIR), the extension is built by maturin in the release profile into the
# workspace's target/, so that after `cargo build --release` only the bindings are compiled.
# Arguments are passed to pytest (e.g. `-k sklearn -x`). PRINCIPAL_PY_EXTRAS=1 also installs
# requirements-extra.txt (AnnData, scanpy) and makes the tests that need them mandatory.
# PRINCIPAL_PY_STEPS picks steps of prepare (the venv and its downloads), build (the package),
# test (pytest), comma-separated; all three by default. scripts/test.sh prepares while cargo
# builds and builds while the Rust tests run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${PRINCIPAL_PY_VENV:-$root/target/python-venv}"
python="${PYTHON:-python3}"

steps=",${PRINCIPAL_PY_STEPS:-prepare,build,test},"
for step in ${steps//,/ }; do
    case "$step" in
        prepare | build | test) ;;
        *) echo "run-tests.sh: PRINCIPAL_PY_STEPS: unknown step '$step' (prepare, build, test)" >&2
           exit 2 ;;
    esac
done
# maturin's build hook runs the `maturin` program it finds on PATH: the venv's.
export PATH="$venv/bin:$PATH"

if [[ $steps == *,prepare,* ]]; then
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-test.txt"
    # The heavy extras (AnnData, scanpy): only when asked for, as .ci/run does; the tests that
    # need them then fail, rather than skip, if they cannot be imported (tests/conftest.py).
    if [ "${PRINCIPAL_PY_EXTRAS:-0}" = 1 ]; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-extra.txt"
    fi
fi
if [[ $steps == *,build,* ]]; then
    # --no-build-isolation: the maturin just installed builds it (pip would otherwise fetch one
    # into a fresh build environment on every run); the wheel is rebuilt from the sources each
    # time.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
        --force-reinstall --no-deps "$here"
fi
if [[ $steps == *,test,* ]]; then
    cd "$here/tests"
    # -rs: every skipped test is listed with its reason.
    exec "$venv/bin/python" -m pytest -q -rs "$@"
fi
