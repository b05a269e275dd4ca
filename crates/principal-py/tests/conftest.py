"""Data sets shared by the tests: tall, wide, offset by 1e6, float32, Iris."""

import importlib
import os
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

REPO = pathlib.Path(__file__).resolve().parents[3]


def import_extra(name):
    """An optional test requirement (requirements-extra.txt, e.g. scanpy): without it the calling
    test module is skipped, with the reason listed by pytest -rs; with PRINCIPAL_PY_EXTRAS=1 (set
    by .ci/run, which installs the extras) an import failure fails the run instead."""
    if os.environ.get("PRINCIPAL_PY_EXTRAS") == "1":
        return importlib.import_module(name)
    return pytest.importorskip(
        name, reason=f"{name} is not installed: an extra of requirements-extra.txt, "
        "installed and required when PRINCIPAL_PY_EXTRAS=1 (.ci/run)")


def close(ours, theirs, rtol=1e-10, what=""):
    """Equal to `rtol` of the largest magnitude of `theirs` (entries near zero compared to
    that scale, as rounding does)."""
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    scale = max(np.abs(theirs).max(initial=0.0), 1e-300)
    err = np.abs(ours - theirs).max(initial=0.0) / scale
    assert err <= rtol, f"{what}: relative error {err:.3e} > {rtol:.0e}"


@pytest.fixture
def no_densifying(monkeypatch):
    """Makes any densifying of a scipy sparse matrix in the code under test an error."""
    def refuse(*args, **kwargs):
        raise AssertionError("a sparse matrix was densified")
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


def low_rank(n, d, rank, seed, noise=0.05):
    """n × d data of `rank` strong directions plus isotropic noise: well separated eigenvalues."""
    rng = np.random.default_rng(seed)
    scales = np.linspace(10.0, 2.0, rank)
    latent = rng.normal(size=(n, rank)) * scales
    basis = np.linalg.qr(rng.normal(size=(d, rank)))[0].T
    return latent @ basis + noise * rng.normal(size=(n, d)) + rng.normal(size=d)


def iris():
    rows = (REPO / "data" / "iris.csv").read_text().strip().splitlines()[1:]
    return np.array([[float(v) for v in r.split(",")[:4]] for r in rows])


DATASETS = {
    "tall": lambda: low_rank(500, 12, 6, 1),
    "wide": lambda: low_rank(30, 80, 8, 2),
    "offset": lambda: low_rank(300, 10, 5, 3) + 1e6,
    "iris": iris,
}


@pytest.fixture(params=sorted(DATASETS))
def dataset(request):
    return request.param, DATASETS[request.param]()


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def cli():
    """The principal binary of the workspace (release), if built."""
    path = REPO / "target" / "release" / "principal"
    return path if path.exists() else None


def not_built_message(feature):
    """What a build without the cargo feature `feature` says of a file that needs it."""
    return f'built without the cargo feature "{feature}"'


def requires_format(feature):
    """Marks a test that reads `feature`'s files (parquet, arrow, h5ad) through the extension:
    skipped, with the reason listed by pytest -rs, when the extension was built without it
    (MATURIN_PEP517_ARGS=--no-default-features; principal.FORMATS lists what it reads)."""
    import principal
    return pytest.mark.skipif(
        feature not in principal.FORMATS,
        reason=f"the extension was built without the cargo feature {feature!r} "
        f"(principal.FORMATS = {principal.FORMATS})")


def run_cli(args, feature):
    """Runs the principal binary on `args` (a file of `feature`'s format among them) and returns
    the finished process; skips the test, with the binary's message as the reason, when the
    binary was built without that cargo feature (cargo build --release --no-default-features)."""
    import subprocess
    done = subprocess.run([cli(), *args], capture_output=True, text=True)
    if done.returncode != 0 and not_built_message(feature) in done.stderr:
        pytest.skip(f"the principal binary was built without the cargo feature {feature!r}: "
                    f"{done.stderr.strip()}")
    assert done.returncode == 0, f"principal {args}: {done.stderr}"
    return done
