"""Sparse PCA benchmark (see sparse_bench.sh): principal on a MatrixMarket file against
scikit-learn's PCA on the CSR matrix (svd_solver='arpack', implicit centring) and scanpy's
sc.pp.pca (if importable), on a single-cell-like matrix. Each tool runs in its own process so
that its peak memory (ru_maxrss) is its own; the data is made once and written to a temporary
directory. Prints time, peak memory, agreement of the explained variances and of the subspaces
with scikit-learn's, and the ratios principal / scikit-learn."""

import argparse
import json
import os
import resource
import subprocess
import sys
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


def peak_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run_child(code, args):
    """Runs `code` in a fresh Python process; returns its JSON line (with its peak memory)."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code] + args, check=True,
                         capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result.setdefault("seconds", elapsed)
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
    """sin of the largest principal angle between the row spaces of a and b (k×D each)."""
    qa, _ = np.linalg.qr(a.T)
    qb, _ = np.linalg.qr(b.T)
    s = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - s.min() ** 2)))


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
    ap.add_argument("--principal-args", default="",
                    help="extra flags for principal fit, e.g. '--tolerance 1e-6'")
    args = ap.parse_args()
    k = args.components
    with tempfile.TemporaryDirectory() as tmp:
        x = make_data(args.cells, args.genes, args.types, args.seed)
        csr_mb = (x.data.nbytes + x.indices.nbytes + x.indptr.nbytes) / 1e6
        density = x.nnz / (x.shape[0] * x.shape[1])
        print(f"data: {x.shape[0]} cells × {x.shape[1]} genes, {100 * density:.2f}% non-zero, "
              f"CSR arrays {csr_mb:.0f} MB")
        npz = os.path.join(tmp, "x.npz")
        sp.save_npz(npz, x, compressed=False)
        kind = args.input
        if kind == "auto":
            try:
                import anndata  # noqa: F401
                kind = "h5ad"
            except ImportError:
                kind = "mtx"
        if kind == "h5ad":
            import anndata
            data_file = os.path.join(tmp, "x.h5ad")
            anndata.AnnData(x).write_h5ad(data_file)
        else:
            data_file = os.path.join(tmp, "x.mtx")
            scipy.io.mmwrite(data_file, x, precision=17)
        print(f"principal reads {os.path.basename(data_file)}")
        del x
        rows = []
        # principal: its own process, its own peak memory (ru_maxrss of the child).
        model = os.path.join(tmp, "x.pca")
        before = peak_mb()
        t = time.perf_counter()
        fitted = subprocess.run([args.principal, "fit", data_file, "-k", str(k), "-o", model]
                                + args.principal_args.split(),
                                check=True, capture_output=True, text=True)
        solver = [l for l in fitted.stderr.splitlines() if l.startswith("solver:")]
        print(f"principal {solver[0] if solver else ''}")
        p_seconds = time.perf_counter() - t
        p_peak = max(peak_mb(), before)
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
        print(f"{'tool':<28}{'seconds':>10}{'peak MB':>10}{'max rel. Δλ':>14}{'sin θ':>10}")
        for name, seconds, peak, variance, components in rows:
            dl = float(np.max(np.abs(variance - sk_variance) / sk_variance[0]))
            angle = subspace_distance(components, sk_components)
            print(f"{name:<28}{seconds:>10.2f}{peak:>10.0f}{dl:>14.2e}{angle:>10.2e}")
        print(f"ratios principal / scikit-learn: time {p_seconds / ref['seconds']:.2f}×, "
              f"peak memory {p_peak / ref['peak_mb']:.2f}×; principal's peak / CSR arrays "
              f"{p_peak / csr_mb:.2f}×")


if __name__ == "__main__":
    main()
