#!/usr/bin/env python3
"""Recognition by nearest codes on Fashion-MNIST (60,000 training and 10,000 test images):
`principal classify` against scikit-learn's PCA + KNeighborsClassifier for the same K and the
same number of neighbours, side by side in one run (see bench/README.md, "classify").

principal is timed as a whole process (reading the IDX .gz files, fitting, projecting both
sets, the neighbour search, printing), and its own phase times are read from its stderr.
scikit-learn is timed around PCA.fit + transform of both sets + KNeighborsClassifier.fit +
predict, with the data already loaded as float64 (loading is not counted: the comparison
favours scikit-learn). Runs alternate between the tools, round by round; the table quotes
medians. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.decomposition import PCA
from sklearn.neighbors import KNeighborsClassifier

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA = Path("/usr/share/datasets/fashion-mnist")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (gzip) as a numpy array: images N×784, labels N."""
    raw = gzip.open(path, "rb").read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    values = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    return values.reshape(dims[0], -1) if ndim > 1 else values


def cpu_flags() -> str:
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
    return " ".join(sorted(flags & {"avx2", "avx512f", "avx512vnni"}))


def seconds(text: str) -> float:
    """A duration as principal prints it: 1.23 s, 45.6 ms, 789 µs."""
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[unit]


def run_principal(binary: Path, k: int, neighbours: int) -> dict:
    command = [
        str(binary),
        "classify",
        "--train", str(DATA / "train-images-idx3-ubyte.gz"),
        "--train-labels", str(DATA / "train-labels-idx1-ubyte.gz"),
        "--test", str(DATA / "t10k-images-idx3-ubyte.gz"),
        "--test-labels", str(DATA / "t10k-labels-idx1-ubyte.gz"),
        "--components", str(k),
        "--neighbours", str(neighbours),
        "--json",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"principal failed: {done.stderr}")
    result = json.loads(done.stdout)["results"][0]
    duration = r"([0-9.]+ (?:s|ms|µs))"
    phases = {
        name: seconds(m.group(1))
        for name, pattern in [
            ("fit", rf"fitted \d+ components \(\w+\) in {duration}"),
            ("project", rf"projected both in {duration}"),
            ("search", rf"K = {k}: {duration}"),
        ]
        if (m := re.search(pattern, done.stderr))
    }
    return {
        "seconds": elapsed,
        "compute": sum(phases.values()),
        "search": phases.get("search"),
        "accuracy": result["accuracy"],
    }


def run_sklearn(data: dict, k: int, neighbours: int) -> dict:
    started = time.perf_counter()
    pca = PCA(n_components=k).fit(data["train"])
    train_codes = pca.transform(data["train"])
    test_codes = pca.transform(data["test"])
    fitted = time.perf_counter()
    classifier = KNeighborsClassifier(n_neighbors=neighbours).fit(
        train_codes, data["train_labels"]
    )
    predicted = classifier.predict(test_codes)
    elapsed = time.perf_counter() - started
    return {
        "seconds": elapsed,
        "search": time.perf_counter() - fitted,
        "accuracy": float(np.mean(predicted == data["test_labels"])),
        "method": f"{pca._fit_svd_solver} + {classifier._fit_method}",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--components", default="10,20,50,100,200", help="K values, comma-separated")
    p.add_argument("--neighbours", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3, help="rounds per K")
    p.add_argument("--principal", type=Path, default=ROOT / "target/release/principal")
    p.add_argument("--output", type=Path, default=BENCH_DIR / "classify-results.md")
    args = p.parse_args()
    ks = [int(k) for k in args.components.split(",")]

    log("loading Fashion-MNIST for scikit-learn")
    data = {
        "train": read_idx(DATA / "train-images-idx3-ubyte.gz").astype(np.float64),
        "train_labels": read_idx(DATA / "train-labels-idx1-ubyte.gz"),
        "test": read_idx(DATA / "t10k-images-idx3-ubyte.gz").astype(np.float64),
        "test_labels": read_idx(DATA / "t10k-labels-idx1-ubyte.gz"),
    }
    version = subprocess.run([str(args.principal), "--version"], capture_output=True, text=True)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    load_before = os.getloadavg()
    started = time.perf_counter()
    rows = []
    for k in ks:
        ours, theirs = [], []
        for round_ in range(args.repeat):
            # Alternate which tool goes first, so slow drift hits both alike.
            order = ["principal", "sklearn"] if round_ % 2 == 0 else ["sklearn", "principal"]
            for tool in order:
                if tool == "principal":
                    ours.append(run_principal(args.principal, k, args.neighbours))
                else:
                    theirs.append(run_sklearn(data, k, args.neighbours))
            log(
                f"K = {k}, round {round_ + 1}: principal {ours[-1]['seconds']:.2f} s, "
                f"scikit-learn {theirs[-1]['seconds']:.2f} s"
            )
        median = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
        rows.append(
            {
                "k": k,
                "ours_accuracy": ours[0]["accuracy"],
                "theirs_accuracy": theirs[0]["accuracy"],
                "ours_seconds": median(ours, "seconds"),
                "ours_compute": median(ours, "compute"),
                "ours_search": median(ours, "search"),
                "theirs_seconds": median(theirs, "seconds"),
                "theirs_search": median(theirs, "search"),
                "method": theirs[0]["method"],
            }
        )
    load_after = os.getloadavg()

    md = [
        "# principal classify against scikit-learn: Fashion-MNIST recognition by nearest codes",
        "",
        f"- date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.machine()}, nproc {os.cpu_count()}, CPU flags: {cpu_flags()}",
        f"- load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
        f"- principal: {version.stdout.strip()}, commit {commit}",
        f"- python {platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}",
        f"- 60,000 training and 10,000 test images, {args.neighbours} neighbour(s), "
        f"{args.repeat} interleaved rounds per K, medians; total wall time "
        f"{time.perf_counter() - started:.0f} s",
        "",
        "| K | principal accuracy | scikit-learn accuracy | principal whole process s | "
        "principal fit+project+search s | principal search s | scikit-learn s (data in memory) | "
        "scikit-learn search s | ratio (whole process) | ratio (compute) | scikit-learn method |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['k']} | {100 * r['ours_accuracy']:.2f}% | {100 * r['theirs_accuracy']:.2f}% | "
            f"{r['ours_seconds']:.2f} | {r['ours_compute']:.2f} | {r['ours_search']:.2f} | "
            f"{r['theirs_seconds']:.2f} | {r['theirs_search']:.2f} | "
            f"{r['ours_seconds'] / r['theirs_seconds']:.2f}× | "
            f"{r['ours_compute'] / r['theirs_seconds']:.2f}× | {r['method']} |"
        )
    md += [
        "",
        "principal: `principal classify --train … --test … --components K --neighbours N --json`, "
        "timed as a whole process; its fit, projection and search times are its own (stderr). "
        "scikit-learn: `PCA(n_components=K)` fit on the training set, both sets transformed, "
        "`KNeighborsClassifier(n_neighbors=N)` fit and predict, on float64 data already in memory.",
        "",
    ]
    text = "\n".join(md)
    print(text)
    args.output.write_text(text)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
