"""Kernel PCA and factor analysis: principal against scikit-learn on the repository's MNIST digits
(data/mnist-5k.csv.gz, pixels / 255), in one run. Run by bench/models_bench.sh.

- kernel PCA (rbf, γ = 1/D): `principal fit --model kernel` against KernelPCA with the dense
  eigensolver, with and without fit_inverse_transform; principal learns the pre-image map
  (ridge α = 1) by default and skips it with `--pre-image skip` (a row of its own, as
  scikit-learn's default); the first N rows.
- factor analysis: `principal fit --model factor-analysis` against FactorAnalysis with
  svd_method='lapack' (the same EM) and 'randomized' (scikit-learn's default); the first N rows,
  the features that vary in them, plus seeded noise of 0.01 (so that no feature's noise variance
  heads for 0). The two stop by different rules (principal: ψ within 1e-7 of its fixed point;
  scikit-learn: the log-likelihood gains less than tol = 1e-2), so their steps are printed too.

principal runs as a whole process (read the .npy, fit, write the model); its "fitting" time is
taken from its summary line. scikit-learn's `fit` runs on the array in memory. Rounds are
interleaved; medians (and minima) per variant; ratios are principal's median over the best
scikit-learn median of the case. With --baseline BIN an older principal runs in the same rounds.
"""

import argparse
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.decomposition import FactorAnalysis, KernelPCA

ROOT = Path(__file__).resolve().parent.parent


def cpu_line():
    model, flags = "unknown", []
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                break
    except OSError:
        pass
    vector = [f for f in flags if f in ("fma", "avx", "avx2") or f.startswith(("avx512", "amx", "avx_vnni"))]
    return f"{platform.machine()}, nproc {os.cpu_count()}, CPU {model}; flags: {' '.join(vector)}"


def mnist(rows):
    with gzip.open(ROOT / "data" / "mnist-5k.csv.gz", "rt") as f:
        x = np.loadtxt(f, delimiter=",", max_rows=rows)
    return x[:, :784] / 255.0


def run_principal(binary, data, kind, k, out, extra=()):
    started = time.perf_counter()
    done = subprocess.run(
        [binary, "fit", str(data), "--model", kind, "--components", str(k), "--output", str(out), *extra],
        capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{binary} failed: {done.stderr}")
    m = re.search(r"reading, ([0-9.]+) (ms|s) fitting", done.stderr)
    fit = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0) if m else float("nan")
    return wall, fit


def inspect(binary, model):
    done = subprocess.run([binary, "inspect", str(model), "--json"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def timed(fit):
    started = time.perf_counter()
    model = fit()
    return time.perf_counter() - started, model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--principal", default=str(ROOT / "target" / "release" / "principal"))
    p.add_argument("--baseline", help="another principal binary, run in the same rounds")
    p.add_argument("--rows", type=int, default=3000)
    p.add_argument("--components", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cases", default="kernel,factor-analysis")
    args = p.parse_args()
    cases = args.cases.split(",")
    k = args.components
    binaries = {"principal": args.principal}
    if args.baseline:
        binaries["baseline"] = args.baseline

    x = mnist(args.rows)
    varying = x[:, x.std(axis=0) > 0]
    noisy = varying + 0.01 * np.random.default_rng(0).standard_normal(varying.shape)
    work = Path(tempfile.mkdtemp(prefix="models-bench-"))
    np.save(work / "kernel.npy", x)
    np.save(work / "fa.npy", noisy)

    print(f"# kernel PCA and factor analysis against scikit-learn ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print(f"- machine: {cpu_line()}; load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"- scikit-learn {sklearn.__version__}, numpy {np.__version__}; principal {args.principal}"
          + (f", baseline {args.baseline}" if args.baseline else ""))
    print(f"- data: the first {args.rows} rows of data/mnist-5k.csv.gz / 255 ({x.shape[1]} features; factor analysis:"
          f" the {varying.shape[1]} that vary, plus noise 0.01); {k} components; {args.repeat} interleaved rounds")
    times = {}
    extra = {}

    def add(case, variant, value):
        times.setdefault((case, variant), []).append(value)

    for _ in range(args.repeat):
        if "kernel" in cases:
            for name, binary in binaries.items():
                wall, fit = run_principal(binary, work / "kernel.npy", "kernel", k, work / f"{name}.kpca")
                add("kernel", f"{name} whole process", wall)
                add("kernel", f"{name} fitting", fit)
            wall, fit = run_principal(args.principal, work / "kernel.npy", "kernel", k, work / "skip.kpca",
                                      ["--pre-image", "skip"])
            add("kernel", "principal --pre-image skip, whole process", wall)
            add("kernel", "principal --pre-image skip, fitting", fit)
            t, ref = timed(lambda: KernelPCA(k, kernel="rbf", eigen_solver="dense").fit(x))
            add("kernel", "scikit-learn KernelPCA (dense)", t)
            t, _ = timed(lambda: KernelPCA(k, kernel="rbf", eigen_solver="dense", fit_inverse_transform=True, alpha=1.0).fit(x))
            add("kernel", "scikit-learn KernelPCA (dense, fit_inverse_transform)", t)
            extra["kernel"] = ref
        if "factor-analysis" in cases:
            for name, binary in binaries.items():
                wall, fit = run_principal(binary, work / "fa.npy", "factor-analysis", k, work / f"{name}.fa")
                add("factor-analysis", f"{name} whole process", wall)
                add("factor-analysis", f"{name} fitting", fit)
            t, lapack = timed(lambda: FactorAnalysis(k, svd_method="lapack").fit(noisy))
            add("factor-analysis", "scikit-learn FactorAnalysis (lapack)", t)
            t, randomized = timed(lambda: FactorAnalysis(k, random_state=0).fit(noisy))
            add("factor-analysis", "scikit-learn FactorAnalysis (randomized)", t)
            extra["factor-analysis"] = (lapack, randomized)

    print()
    print("| case | variant | median s | min s | × scikit-learn's best | notes |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        peers = [statistics.median(v) for (c, name), v in times.items() if c == case and name.startswith("scikit-learn")]
        best = min(peers)
        notes = {}
        if case == "kernel":
            ref = extra["kernel"]
            # First: "principal" would also match this row's name.
            skipped = inspect(args.principal, work / "skip.kpca")
            notes["principal --pre-image skip"] = (
                f"eigenvalues within {np.max(np.abs(np.array(skipped['eigenvalues']) - ref.eigenvalues_)) / ref.eigenvalues_[0]:.1e}"
                f" of λ₁; pre_image {skipped.get('pre_image')}")
            for name, binary in binaries.items():
                ours = np.array(inspect(binary, work / f"{name}.kpca")["eigenvalues"])
                notes[name] = f"eigenvalues within {np.max(np.abs(ours - ref.eigenvalues_)) / ref.eigenvalues_[0]:.1e} of λ₁"
        else:
            lapack, randomized = extra[case]
            notes["scikit-learn FactorAnalysis (lapack)"] = f"{lapack.n_iter_} steps, log-likelihood {lapack.score(noisy):.6f} per row"
            notes["scikit-learn FactorAnalysis (randomized)"] = f"{randomized.n_iter_} steps, log-likelihood {randomized.score(noisy):.6f} per row"
            for name, binary in binaries.items():
                model = inspect(binary, work / f"{name}.fa")
                notes[name] = f"{model['n_iter']} steps, log-likelihood {model['log_likelihood']:.6f} per row"
        for (c, name), values in times.items():
            if c != case:
                continue
            median = statistics.median(values)
            ratio = "—" if name.startswith("scikit-learn") else f"{median / best:.2f}×"
            note = next((n for key, n in notes.items() if name.startswith(key)), "")
            print(f"| {case} | {name} | {median:.3f} | {min(values):.3f} | {ratio} | {note} |")


if __name__ == "__main__":
    main()
