"""Sparse PCA benchmark (see sparse_bench.sh): principal on a MatrixMarket file against
scikit-learn's PCA on the CSR matrix (svd_solver='arpack', implicit centring) and scanpy's
sc.pp.pca (if importable), on a single-cell-like matrix. Each tool runs in its own process so
that its peak memory (ru_maxrss) is its own; the data is made once and written to a temporary
directory. Prints time, peak memory, agreement of the explained variances and of the subspaces
with scikit-learn's, and the ratios principal / scikit-learn."""

import argparse
import json
import os
import subprocess
import sys
import resource
import shutil
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp


def make_data(cells, genes, types, seed):
    """Negative-binomial counts with `types` cell types (about 2-5% non-zero), then scanpy's
    normalize_total (to the median count) and log1p. Built in row blocks: never dense whole."""
    rng = np.random.default_rng(seed)
    # Per-type gene means: most genes barely expressed, a few high; types differ in a subset.
    base = rng.gamma(0.3, 0.08, size=genes)
    type_means = np.repeat(base[None, :], types, axis=0)
    for t in range(types):
        markers = rng.choice(genes, size=max(genes // 50, 1), replace=False)
        type_means[t, markers] *= rng.uniform(4, 20, size=markers.size)
    labels = rng.integers(0, types, size=cells)
    blocks = []
    step = max(1, 2_000_000 // genes)
    for start in range(0, cells, step):
        rows = labels[start:start + step]
        depth = rng.lognormal(0.0, 0.3, size=(rows.size, 1))
        mu = type_means[rows] * depth
        r = 2.0
        counts = rng.negative_binomial(r, r / (r + mu)).astype(np.float32)
        blocks.append(sp.csr_matrix(counts))
    x = sp.vstack(blocks, format="csr")
    totals = np.asarray(x.sum(axis=1)).ravel()
    target = np.median(totals[totals > 0])
    scale = np.divide(target, totals, out=np.zeros_like(totals), where=totals > 0)
    x = sp.diags(scale.astype(np.float32)) @ x
    x.data = np.log1p(x.data)
    return x.tocsr().astype(np.float64)


def run_measured(command):
    """Runs `command`; returns its stderr and its own peak memory in MB.

    Not the rusage of the child as this process sees it: a child started from this process
    (which holds the data, hundreds of MB) carries this process's resident high-water mark
    through exec (Linux keeps it in the process's signal struct), so its ru_maxrss is never
    below ours. GNU time forks the command from a small process and reports its own peak;
    without it, the wait4 figure is printed with that floor named."""
    timer = shutil.which("time", path="/usr/bin:/bin")
    if timer:
        command = [timer, "-f", "principal-peak-kb %M"] + list(command)
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode()
    if child.returncode != 0:
        sys.exit(f"principal failed ({child.returncode}):\n{stderr}")
    peak = usage.ru_maxrss / 1024
    if timer:
        lines = [l for l in stderr.splitlines() if l.startswith("principal-peak-kb ")]
        peak = int(lines[-1].split()[1]) / 1024
    else:
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"no GNU time: principal's peak is at least this process's ({own:.0f} MB)",
              file=sys.stderr)
    return subprocess.CompletedProcess(command, child.returncode, "", stderr), peak


def run_child(code, args):
    """Runs `code` in a fresh Python process; returns its JSON line (with its peak memory)."""
    started = time.perf_counter()
    timer = shutil.which("time", path="/usr/bin:/bin")
    command = [sys.executable, "-c", code] + args
    if timer:
        # Its own peak: see run_measured (RUSAGE_SELF in the child starts at our high-water mark).
        command = [timer, "-f", "child-peak-kb %M"] + command
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result.setdefault("seconds", elapsed)
    if timer:
        lines = [l for l in out.stderr.splitlines() if l.startswith("child-peak-kb ")]
        result["peak_mb"] = int(lines[-1].split()[1]) / 1024
    return result


SKLEARN = r"""
import json, sys, time, resource, numpy as np, scipy.sparse as sp
from sklearn.decomposition import PCA
x = sp.load_npz(sys.argv[1]); k = int(sys.argv[2])
t = time.perf_counter()
p = PCA(n_components=k, svd_solver="arpack", random_state=0).fit(x)
s = time.perf_counter() - t
np.save(sys.argv[3], p.components_)
print(json.dumps({"seconds": s, "variance": p.explained_variance_.tolist(),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

SCANPY = r"""
import json, sys, time, resource, numpy as np, scipy.sparse as sp
import anndata, scanpy as sc
x = sp.load_npz(sys.argv[1]); k = int(sys.argv[2])
a = anndata.AnnData(x)
t = time.perf_counter()
sc.pp.pca(a, n_comps=k, svd_solver="arpack", random_state=0)
s = time.perf_counter() - t
np.save(sys.argv[3], a.varm["PCs"].T)
print(json.dumps({"seconds": s, "variance": a.uns["pca"]["variance"].tolist(),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def subspace_distance(a, b):
    """sin of the largest principal angle between the row spaces of a and b (k×D each):
    ‖(I − Qb Qbᵀ) Qa‖₂, accurate to rounding (√(1 − cos²) loses everything below 1e-8)."""
    qa, _ = np.linalg.qr(a.T)
    qb, _ = np.linalg.qr(b.T)
    rest = qa - qb @ (qb.T @ qa)
    return float(np.linalg.norm(rest, 2))


def clear_components(variance, gap=0.05):
    """How many leading components end at a clear eigengap: the largest m < k with
    (λ_m − λ_{m+1}) / λ_m ≥ gap (0 if none). The subspace of the first m components is
    well-defined to compare; the 50-dim subspace is not when λ50 ≈ λ51 (its angle then measures
    which of two nearly equal directions each tool kept, not accuracy)."""
    rel = (variance[:-1] - variance[1:]) / variance[:-1]
    clear = np.nonzero(rel >= gap)[0]
    return int(clear[-1]) + 1 if clear.size else 0


def captured_variance(x, components):
    """trace(Vᵀ C V): the variance of the centred data along the rows of `components`, from
    the sparse matrix without densifying (X V − 1 μᵀV)."""
    mu = np.asarray(x.mean(axis=0)).ravel()
    y = x @ components.T - (mu @ components.T)[None, :]
    return float((y ** 2).sum() / (x.shape[0] - 1))


def principal_components(binary, model):
    out = subprocess.run([binary, "inspect", model, "--json"], check=True,
                         capture_output=True, text=True)
    info = json.loads(out.stdout)
    return np.array(info["components"]), np.array(info["explained_variance"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--principal", required=True)
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--genes", type=int, default=20_000)
    ap.add_argument("--types", type=int, default=12)
    ap.add_argument("--components", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--input", choices=["auto", "h5ad", "mtx"], default="auto",
                    help="the file principal reads: AnnData .h5ad (CSR) when anndata imports "
                         "(auto), or MatrixMarket text")
    ap.add_argument("--data-dir", default=None,
                    help="keep the generated data (npz and the file principal reads) in this "
                         "directory and reuse it on later runs with the same size and seed: the "
                         "200,000-cell matrix takes minutes to generate")
    ap.add_argument("--generate-only", action="store_true",
                    help="with --data-dir: generate (or check) the data and stop")
    ap.add_argument("--principal-args", default="",
                    help="extra flags for principal fit, e.g. '--tolerance 1e-6'")
    args = ap.parse_args()
    k = args.components
    with tempfile.TemporaryDirectory() as tmp:
        kind = args.input
        if kind == "auto":
            try:
                import anndata  # noqa: F401
                kind = "h5ad"
            except ImportError:
                kind = "mtx"
        store = tmp
        if args.data_dir:
            store = args.data_dir
            os.makedirs(store, exist_ok=True)
        stem = f"cells{args.cells}_genes{args.genes}_types{args.types}_seed{args.seed}"
        npz = os.path.join(store, f"{stem}.npz")
        data_file = os.path.join(store, f"{stem}.{kind}")
        if os.path.exists(npz):
            x = sp.load_npz(npz)
        else:
            x = make_data(args.cells, args.genes, args.types, args.seed)
            sp.save_npz(npz + ".tmp.npz", x, compressed=False)
            os.replace(npz + ".tmp.npz", npz)
        csr_mb = (x.data.nbytes + x.indices.nbytes + x.indptr.nbytes) / 1e6
        density = x.nnz / (x.shape[0] * x.shape[1])
        print(f"data: {x.shape[0]} cells × {x.shape[1]} genes, {100 * density:.2f}% non-zero, "
              f"CSR arrays {csr_mb:.0f} MB")
        if not os.path.exists(data_file):
            partial = os.path.join(store, f"{stem}.partial.{kind}")
            if kind == "h5ad":
                import anndata
                anndata.AnnData(x).write_h5ad(partial)
            else:
                with open(partial, "wb") as out:
                    scipy.io.mmwrite(out, x, precision=17)
            os.replace(partial, data_file)
        if args.generate_only:
            print(f"data kept in {store}")
            return
        print(f"principal reads {os.path.basename(data_file)}")
        del x
        rows = []
        # principal: its own process, its own peak memory (ru_maxrss of the child).
        model = os.path.join(tmp, "x.pca")
        t = time.perf_counter()
        fitted, p_peak = run_measured([args.principal, "fit", data_file, "-k", str(k), "-o",
                                       model] + args.principal_args.split())
        solver = [l for l in fitted.stderr.splitlines() if l.startswith("solver:")]
        print(f"principal {solver[0] if solver else ''}")
        for line in fitted.stderr.splitlines():
            if line.startswith("iterations:"):
                print(f"principal {line}")
        p_seconds = time.perf_counter() - t
        p_components, p_variance = principal_components(args.principal, model)
        rows.append(("principal (read + fit)", p_seconds, p_peak, p_variance, p_components))
        ref = run_child(SKLEARN, [npz, str(k), os.path.join(tmp, "sk.npy")])
        sk_components = np.load(os.path.join(tmp, "sk.npy"))
        rows.append(("scikit-learn arpack (fit)", ref["seconds"], ref["peak_mb"],
                     np.array(ref["variance"]), sk_components))
        try:
            sc = run_child(SCANPY, [npz, str(k), os.path.join(tmp, "sc.npy")])
            rows.append(("scanpy sc.pp.pca (fit)", sc["seconds"], sc["peak_mb"],
                         np.array(sc["variance"]), np.load(os.path.join(tmp, "sc.npy"))))
        except subprocess.CalledProcessError:
            print("scanpy: not available, left out")
        sk_variance = np.array(ref["variance"])
        m = clear_components(sk_variance)
        # Agreement with arpack: the largest relative difference of the k eigenvalues (each
        # to its own size), sin of the largest principal angle between the first m
        # components' subspaces (m: the last clear eigengap, see clear_components) and between
        # the k-dim ones (not meaningful when λk ≈ λk+1), and the variance the k components
        # capture, trace(Vᵀ C V), over arpack's Σλ (1 − that ratio: what is missed).
        x = sp.load_npz(npz)
        sk_captured = captured_variance(x, sk_components)
        print(f"agreement with arpack: Δλ/λ the largest relative difference of the {k} "
              f"eigenvalues; sin θ{m} of the first {m} components (the last eigengap over 5%: "
              f"λ{m}/λ{m + 1} = {sk_variance[m - 1] / sk_variance[m]:.2f}) and sin θ{k} of all "
              f"{k} (λ{k - 1}/λ{k} = {sk_variance[-2] / sk_variance[-1]:.4f}); missed = 1 − "
              f"trace(VᵀCV)/Σλ_arpack")
        print(f"{'tool':<28}{'seconds':>10}{'peak MB':>10}{'max Δλ/λ':>11}"
              f"{'sin θ' + str(m):>10}{'sin θ' + str(k):>10}{'missed':>11}")
        for name, seconds, peak, variance, components in rows:
            dl = float(np.max(np.abs(variance - sk_variance) / sk_variance))
            clear = subspace_distance(components[:m], sk_components[:m]) if m else float("nan")
            angle = subspace_distance(components, sk_components)
            missed = 1.0 - captured_variance(x, components) / sk_captured
            print(f"{name:<28}{seconds:>10.2f}{peak:>10.0f}{dl:>11.2e}{clear:>10.2e}"
                  f"{angle:>10.2e}{missed:>11.2e}")
        print(f"ratios principal / scikit-learn: time {p_seconds / ref['seconds']:.2f}×, "
              f"peak memory {p_peak / ref['peak_mb']:.2f}×; principal's peak / CSR arrays "
              f"{p_peak / csr_mb:.2f}×")


if __name__ == "__main__":
    main()
