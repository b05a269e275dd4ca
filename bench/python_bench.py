"""principal.PCA(50).fit(X) against scikit-learn's PCA(50, svd_solver='covariance_eigh').fit(X)
on Fashion-MNIST (70,000 × 784, float64), the same array, interleaved, in one process; and the
binding's overhead: the Python layer (scikit-learn's input checks), the native call, and the
Rust fit alone on the same numbers (fit_in_memory example, read from an .npy file).

Run by bench/python_bench.sh, which builds and installs the package into bench/.venv.
"""

import argparse
import gzip
import json
import os
import platform
import statistics
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn
import sklearn.decomposition
from sklearn.utils.validation import validate_data

import principal
from principal import _native

FASHION = Path("/usr/share/datasets/fashion-mnist")
ROOT = Path(__file__).resolve().parent.parent


def load_idx_gz(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    assert magic == 0x00000803, f"{path}: not an IDX3 uint8 file"
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols)


def timed(f):
    started = time.perf_counter()
    f()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--components", type=int, default=50)
    args = parser.parse_args()
    k = args.components

    X = np.concatenate([load_idx_gz(FASHION / "train-images-idx3-ubyte.gz"),
                        load_idx_gz(FASHION / "t10k-images-idx3-ubyte.gz")]).astype(np.float64)
    assert X.flags.c_contiguous and X.shape == (70000, 784)

    ours = lambda: principal.PCA(k).fit(X)
    theirs = lambda: sklearn.decomposition.PCA(k, svd_solver="covariance_eigh").fit(X)
    a, b = ours(), theirs()  # warm-up, and the two models compared
    agreement = float(np.abs(a.explained_variance_ - b.explained_variance_).max() / b.explained_variance_[0])

    params = principal.PCA(k)._native_params()
    native = lambda: _native.fit(X, params)
    checks = lambda: validate_data(principal.PCA(k), X, dtype=[np.float64, np.float32], ensure_min_samples=2)

    times = {"principal": [], "sklearn": [], "native_call": [], "input_checks": []}
    for _ in range(args.repeat):
        times["principal"].append(timed(ours))
        times["sklearn"].append(timed(theirs))
        times["native_call"].append(timed(native))
        times["input_checks"].append(timed(checks))

    # The Rust fit alone on the same numbers (fit_in_memory times PcaParams::fit only).
    rust = None
    example = ROOT / "target" / "release" / "examples" / "fit_in_memory"
    if example.exists():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "fashion.npy"
            np.save(path, X)
            out = subprocess.run([example, path, str(k), "auto", str(args.repeat)],
                                 check=True, capture_output=True, text=True).stdout
            rust = json.loads(out)

    med = {name: statistics.median(v) for name, v in times.items()}
    result = {
        "data": "Fashion-MNIST train+t10k, 70000 x 784 float64, C order",
        "components": k,
        "rounds": args.repeat,
        "median_seconds": med,
        "all_seconds": times,
        "ratio_principal_over_sklearn": med["principal"] / med["sklearn"],
        "python_layer_seconds": med["principal"] - med["native_call"],
        "rust_fit_alone_seconds": None if rust is None else statistics.median(rust["fit_seconds"]),
        "max_eigenvalue_difference_relative_to_largest": agreement,
        "solver": a.solver_,
        "versions": {"numpy": np.__version__, "scikit-learn": sklearn.__version__,
                     "principal": principal.__version__, "python": platform.python_version()},
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
        "cpu_flags": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("flags")), "?"),
        "cores": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
    }
    if rust is not None:
        result["binding_overhead_seconds"] = med["principal"] - result["rust_fit_alone_seconds"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
