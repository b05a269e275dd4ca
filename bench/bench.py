#!/usr/bin/env python3
"""Benchmark `principal fit` against scikit-learn's PCA (see bench/README.md).

principal is timed as a whole process, from the file on disk to the model file written
(subprocess, time.perf_counter around it, peak RSS from os.wait4). scikit-learn is timed
around `PCA.fit` alone, with the data already loaded in memory; so is principal's row "fit alone,
in memory" (the example crates/principal-io/examples/fit_in_memory.rs times `PcaParams::fit` on
the data read beforehand). Runs of the tools are
interleaved, round by round, and the table quotes medians and minima: the machine is noisy.

This script makes no timing assertions; it only measures and reports.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import gzip
import json
import os
import platform
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
FASHION_TRAIN = Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
MiB = 1024 * 1024
MB = 1e6


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fmt_s(x: Optional[float]) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_e(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:.1e}"


def fmt_ratio(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:.2f}×"


# --------------------------------------------------------------------------------------------
# Data: generated once, cached in the data directory
# --------------------------------------------------------------------------------------------


def _finish(partial: Path, final: Path) -> None:
    os.replace(partial, final)


def write_npy_chunked(path: Path, shape: tuple[int, int], dtype, fill: Callable[[int, int], np.ndarray],
                      chunk_rows: int) -> None:
    """Writes an .npy of `shape` chunk by chunk via open_memmap (no full copy in RAM).
    `fill(start, stop)` returns rows start..stop. Written to a .partial file, then renamed,
    so an interrupted run is never mistaken for a cached file."""
    partial = path.with_name(path.name + ".partial")
    out = np.lib.format.open_memmap(partial, mode="w+", dtype=dtype, shape=shape)
    n = shape[0]
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        out[start:stop] = fill(start, stop)
        out.flush()
    del out
    _finish(partial, path)


def tall_data(data_dir: Path) -> Path:
    """Case 2: 1,000,000 × 100 float64, correlated columns with a decaying spectrum.
    X = (Z · s) Aᵀ + 0.05·noise + offset, Z standard normal, s_j = 0.9^j, A random orthogonal."""
    path = data_dir / "tall_1000000x100_f64.npy"
    if path.exists():
        return path
    log(f"generating {path} (800 MB) …")
    n, d = 1_000_000, 100
    rng = np.random.default_rng(20240302)
    a, _ = np.linalg.qr(rng.standard_normal((d, d)))
    scales = 0.9 ** np.arange(d)
    offset = rng.uniform(-5, 5, size=d)

    def fill(start: int, stop: int) -> np.ndarray:
        z = rng.standard_normal((stop - start, d)) * scales
        return z @ a.T + 0.05 * rng.standard_normal((stop - start, d)) + offset

    write_npy_chunked(path, (n, d), np.float64, fill, chunk_rows=100_000)
    return path


def wide_data(data_dir: Path) -> Path:
    """Case 3: 2,000 × 20,000 float64, a rank-30 signal with decaying strengths plus Gaussian
    noise: X = U diag(s) Vᵀ + noise + offset, s_j = 30·0.85^j (j < 30), noise σ = 1."""
    path = data_dir / "wide_2000x20000_f64.npy"
    if path.exists():
        return path
    log(f"generating {path} (320 MB) …")
    n, d, r = 2_000, 20_000, 30
    rng = np.random.default_rng(20240303)
    u = rng.standard_normal((n, r))
    v, _ = np.linalg.qr(rng.standard_normal((d, r)))
    s = 30.0 * 0.85 ** np.arange(r) * np.sqrt(d / r)
    offset = rng.uniform(-1, 1, size=d)

    def fill(start: int, stop: int) -> np.ndarray:
        return (u[start:stop] * s) @ v.T + rng.standard_normal((stop - start, d)) + offset

    write_npy_chunked(path, (n, d), np.float64, fill, chunk_rows=250)
    return path


def wide_exact_eigenvalues(path: Path, k: int) -> np.ndarray:
    """The top k eigenvalues of the covariance (ddof 1) of the wide data, computed once from the
    N × N Gram matrix of the centred data and cached next to it."""
    cache = path.with_name(path.stem + f".exact_top{k}.npy")
    if cache.exists():
        return np.load(cache)
    log("computing exact eigenvalues of the wide data (eigvalsh of the 2000 × 2000 Gram matrix) …")
    x = np.load(path)
    xc = x - x.mean(axis=0)
    del x
    g = xc @ xc.T
    del xc
    w = np.linalg.eigvalsh(g)[::-1][:k] / (g.shape[0] - 1)
    np.save(cache, w)
    return w


def huge_data(data_dir: Path) -> Path:
    """Case 4: 10,000,000 × 100 float32 (4 GB), written in chunks."""
    path = data_dir / "huge_10000000x100_f32.npy"
    if path.exists():
        return path
    log(f"generating {path} (4 GB, takes a minute or two) …")
    n, d = 10_000_000, 100
    rng = np.random.default_rng(20240304)
    a, _ = np.linalg.qr(rng.standard_normal((d, d)))
    a = (a * (0.9 ** np.arange(d))).T.astype(np.float32)  # row j of a scaled by 0.9^j
    offset = rng.uniform(-5, 5, size=d).astype(np.float32)

    def fill(start: int, stop: int) -> np.ndarray:
        m = stop - start
        x = rng.standard_normal((m, d), dtype=np.float32) @ a
        x += np.float32(0.05) * rng.standard_normal((m, d), dtype=np.float32)
        x += offset
        return x

    write_npy_chunked(path, (n, d), np.float32, fill, chunk_rows=500_000)
    return path


def load_idx_gz(path: Path) -> np.ndarray:
    """An IDX3 uint8 image file (gzip) as an N × (rows·cols) float64 array."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    if magic != 0x00000803:
        raise SystemExit(f"{path}: not an IDX3 uint8 file (magic {magic:#x})")
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols).astype(np.float64)


def evict_from_page_cache(path: Path) -> None:
    """Asks the kernel to drop the file's cached pages (posix_fadvise DONTNEED; no root needed,
    clean pages only), so that the next read comes from the disk, as it must for data larger
    than memory."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_file_once(path: Path, block: int = 64 * MiB) -> float:
    """Seconds to read a file once in 64 MiB blocks (the page cache is not dropped)."""
    buf = bytearray(block)
    view = memoryview(buf)
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.readinto(view):
            pass
    return time.perf_counter() - t0


# --------------------------------------------------------------------------------------------
# Running principal
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    seconds: float
    peak_mb: Optional[float] = None
    ok: bool = True
    error: str = ""


@dataclass
class Variant:
    """One row of the table: a tool with one setting."""

    tool: str  # "principal", "scikit-learn", "read"
    label: str
    run_once: Callable[[], Run]
    is_peer: bool = False  # counts for "peer best"
    group: str = ""  # compared only with peers of the same group
    runs: list = field(default_factory=list)
    # Filled after the runs:
    explained_variance: Optional[np.ndarray] = None
    info: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def good(self) -> list:
        return [r for r in self.runs if r.ok]

    def median(self) -> Optional[float]:
        g = self.good()
        return statistics.median(r.seconds for r in g) if g else None

    def minimum(self) -> Optional[float]:
        g = self.good()
        return min(r.seconds for r in g) if g else None

    def peak_mb(self) -> Optional[float]:
        peaks = [r.peak_mb for r in self.good() if r.peak_mb is not None]
        return max(peaks) if peaks else None


# Linux charges a child with the resident memory of the process it was forked from (ru_maxrss
# includes the old address space at exec), so children started from this process, which holds
# the data sets, would report hundreds of MB too much. principal is therefore started by a lean
# launcher process (python -S, standard library only), itself started before any data is loaded.
# It uses Popen + os.wait4 as usual; fork rather than vfork keeps the floor lowest (~7 MB, which
# the results report by running /bin/true the same way).
LAUNCHER_SOURCE = r"""
import json, os, subprocess, sys, time
def _fork_not_vfork():
    pass
for line in sys.stdin:
    req = json.loads(line)
    with open(req["stderr"], "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(req["cmd"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=_fork_not_vfork)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: tell Popen
    sys.stdout.write(json.dumps({"seconds": seconds, "maxrss_kib": usage.ru_maxrss,
                                 "returncode": proc.returncode}) + "\n")
    sys.stdout.flush()
"""


class Launcher:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER_SOURCE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, cmd: list, stderr_path: Path) -> tuple:
        """(seconds, peak RSS in KiB, exit code) of one run of `cmd`, stderr to `stderr_path`."""
        self.proc.stdin.write(json.dumps({"cmd": [str(c) for c in cmd], "stderr": str(stderr_path)}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the launcher process died")
        r = json.loads(line)
        return r["seconds"], r["maxrss_kib"], r["returncode"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


class Principal:
    def __init__(self, exe: Path, work: Path, launcher: Launcher):
        self.exe = exe
        self.work = work
        self.launcher = launcher
        self.fit_help = ""
        try:
            self.fit_help = subprocess.run([str(exe), "fit", "--help"], capture_output=True, text=True,
                                           timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as e:
            log(f"warning: `{exe} fit --help` failed: {e}")
        try:
            self.version = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                                          timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            self.version = "unknown"
        self._counter = 0
        self.byte_kernel = "unknown"
        try:
            # `fit --explain` on a tiny byte-valued file names the byte kernel this CPU runs.
            probe = self.work / "byte_kernel_probe.csv"
            probe.write_text("a,b\n1,2\n3,4\n5,7\n")
            err = subprocess.run([str(exe), "fit", str(probe), "--explain", "--output",
                                  str(self.work / "byte_kernel_probe.model")],
                                 capture_output=True, text=True, timeout=60).stderr
            m = re.search(r"^byte-valued data \([^)]*\): (.*)$", err, re.M)
            if m:
                self.byte_kernel = m.group(1)
        except (OSError, subprocess.SubprocessError) as e:
            log(f"warning: probing the byte kernel failed: {e}")

    def has_flag(self, flag: str) -> bool:
        return re.search(rf"(^|\s){re.escape(flag)}\b", self.fit_help) is not None

    def solvers(self) -> set:
        m = re.search(r"possible values:([^\]]*)\]", self.fit_help)
        if not m:
            return {"auto", "covariance", "gram", "svd", "randomized", "power"}
        return {s.strip() for s in m.group(1).split(",")}

    def fit_variant(self, label: str, inputs: list, args: list, env: Optional[dict] = None) -> Variant:
        """`principal fit` on `inputs`; `env`: variables set for it alone (through env(1))."""
        self._counter += 1
        model = self.work / f"model{self._counter}.safetensors"
        errlog = self.work / f"fit{self._counter}.stderr"
        prefix = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
        cmd = [*prefix, str(self.exe), "fit", *map(str, inputs), *args, "--output", str(model)]

        def run_once() -> Run:
            seconds, maxrss_kib, code = self.launcher.run(cmd, errlog)
            peak_mb = maxrss_kib * 1024 / MB  # ru_maxrss is in KiB on Linux
            if code != 0:
                text = errlog.read_text(errors="replace").strip()
                return Run(seconds, peak_mb, ok=False, error=f"exit {code}: {text[-600:]}")
            return Run(seconds, peak_mb)

        v = Variant("principal", label, run_once)
        v.info["cmd"] = cmd
        v.info["model"] = model
        v.info["stderr"] = errlog
        return v

    def in_memory_variant(self, path: Path, k: int, solver: str, env: Optional[dict] = None,
                          label: Optional[str] = None) -> Variant:
        """principal's fit alone on data already in memory, like scikit-learn's row: the example
        `fit_in_memory` reads the file (untimed), then times `PcaParams::fit` 3 times; a round
        records the median of the 3. `env`: variables set for it alone."""
        exe = self.exe.parent / "examples" / "fit_in_memory"
        state: dict = {}

        def run_once() -> Run:
            if not os.access(exe, os.X_OK):
                return Run(0.0, ok=False, error=f"{exe} is missing: cargo build --release "
                                                "--example fit_in_memory")
            out = subprocess.run([str(exe), str(path), str(k), solver, "3"], capture_output=True, text=True,
                                 timeout=3600, env={**os.environ, **(env or {})})
            if out.returncode != 0:
                return Run(0.0, ok=False, error=f"exit {out.returncode}: {out.stderr.strip()[-600:]}")
            j = json.loads(out.stdout)
            state["ev"] = np.asarray(j["explained_variance"], dtype=np.float64)
            state["solver"] = j["solver"]
            return Run(statistics.median(j["fit_seconds"]))

        v = Variant("principal", label or f"fit alone, in memory (--solver {solver})", run_once)
        v.info["state"] = state
        v.info["in_memory"] = True
        return v

    def collect(self, v: Variant) -> None:
        """After the runs: read the model back with `inspect --json` and the fit summary."""
        if v.info.get("in_memory"):
            v.explained_variance = v.info["state"].get("ev")
            v.info["solver"] = v.info["state"].get("solver")
            return
        if not v.good():
            return
        stderr_text = Path(v.info["stderr"]).read_text(errors="replace")
        v.info["fit_stderr"] = stderr_text
        m = re.search(r"^solver: (\S+)(?: \(chosen by [^:]+: (.*)\))?", stderr_text, re.M)
        if m:
            v.info["solver"] = m.group(1)
            if m.group(2):
                v.info["why"] = m.group(2)
        m = re.search(r"^products: (.*)$", stderr_text, re.M)
        if m:
            v.notes.append(f"byte products: {m.group(1)}")
        m = re.search(r"iterations: (\d+) passes, error estimate ([0-9.eE+-]+)", stderr_text)
        if m:
            v.info["passes"] = int(m.group(1))
            v.info["error_estimate"] = float(m.group(2))
        try:
            out = subprocess.run([str(self.exe), "inspect", str(v.info["model"]), "--json"],
                                 capture_output=True, text=True, timeout=600, check=True).stdout
            j = json.loads(out)
        except (subprocess.SubprocessError, json.JSONDecodeError, OSError) as e:
            v.notes.append(f"inspect --json failed: {e}")
            return
        v.explained_variance = np.asarray(j["explained_variance"], dtype=np.float64)
        v.info["solver"] = j.get("solver", v.info.get("solver"))
        rep = j.get("iteration_report")
        if not isinstance(rep, dict):  # some builds flatten it: iteration_passes, iteration_error_estimate, …
            rep = {key[len("iteration_"):]: val for key, val in j.items() if key.startswith("iteration_")} or None
        if isinstance(rep, dict):
            v.info["passes"] = rep.get("passes", v.info.get("passes"))
            v.info["error_estimate"] = rep.get("error_estimate", v.info.get("error_estimate"))
            v.info["converged"] = rep.get("converged")
        try:
            os.remove(v.info["model"])
        except OSError:
            pass


def sklearn_variant(label: str, x_ref: list, k: int, **pca_kwargs) -> Variant:
    """scikit-learn PCA, timed around .fit alone. `x_ref` is a one-element list holding the data,
    so the case can drop it when done."""
    from sklearn.decomposition import PCA

    state: dict = {}

    def run_once() -> Run:
        pca = PCA(n_components=k, **pca_kwargs)
        gc.collect()
        t0 = time.perf_counter()
        pca.fit(x_ref[0])
        seconds = time.perf_counter() - t0
        state["ev"] = pca.explained_variance_.copy()
        return Run(seconds)

    v = Variant("scikit-learn", label, run_once, is_peer=True)
    v.info["state"] = state
    return v


# --------------------------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------------------------


@dataclass
class CaseResult:
    number: int
    title: str
    variants: list
    notes: list
    accuracy_header: str = ""


def run_rounds(variants: list, repeat: int, budget: float, case_label: str, notes: list) -> None:
    """Runs every variant `repeat` times, interleaved round by round (order reversed on odd
    rounds). If the first round shows that `repeat` rounds would take much longer than
    `budget` seconds, fewer rounds are run, and a note says so."""
    rounds = repeat
    r = 0
    while r < rounds:
        order = variants if r % 2 == 0 else list(reversed(variants))
        t_round = time.perf_counter()
        for v in order:
            log(f"  {case_label} round {r + 1}/{rounds}: {v.tool} {v.label} …")
            try:
                run = v.run_once()
            except Exception as e:  # a peer failing must not kill the benchmark
                run = Run(0.0, ok=False, error=f"{type(e).__name__}: {e}")
            v.runs.append(run)
            if run.ok:
                log(f"    {run.seconds:.3f} s" + (f", peak {run.peak_mb:.0f} MB" if run.peak_mb else ""))
            else:
                log(f"    FAILED: {run.error}")
        elapsed = time.perf_counter() - t_round
        if r == 0 and repeat > 1:
            affordable = max(1, int(budget // max(elapsed, 1e-9)))
            if affordable < repeat:
                rounds = affordable
                notes.append(f"one round took {elapsed:.0f} s, so {rounds} round(s) were run instead of "
                             f"{repeat} (budget {budget:.0f} s per case)")
                log(f"  {case_label}: {notes[-1]}")
        r += 1


def accuracy_vs(ev: Optional[np.ndarray], ref: np.ndarray) -> tuple:
    """(max |Δλ| / λ₁, max |Δλ| / λ) over the components, or (None, None)."""
    if ev is None or len(ev) < len(ref):
        return None, None
    ev = ev[: len(ref)]
    diff = np.abs(ev - ref)
    return float(diff.max() / ref[0]), float((diff / ref).max())


def finish_variants(variants: list, principal: Principal) -> None:
    for v in variants:
        if v.tool == "principal":
            principal.collect(v)
        elif v.tool == "scikit-learn":
            v.explained_variance = v.info["state"].get("ev")
        failures = [r for r in v.runs if not r.ok]
        if failures:
            v.notes.append(f"{len(failures)} run(s) failed: {failures[-1].error.splitlines()[0][:200]}")


def case1(args, principal: Principal) -> CaseResult:
    k = 50
    notes: list = []
    if not FASHION_TRAIN.exists():
        raise SystemExit(f"{FASHION_TRAIN} is missing: install the Debian package dataset-fashion-mnist "
                         "(bench/run.sh does, as root)")
    x_ref = [load_idx_gz(FASHION_TRAIN)]
    n, d = x_ref[0].shape
    variants = [
        principal.fit_variant("--solver auto", [FASHION_TRAIN], ["--components", str(k), "--solver", "auto"]),
        principal.fit_variant("--solver covariance", [FASHION_TRAIN], ["--components", str(k), "--solver", "covariance"]),
        principal.in_memory_variant(FASHION_TRAIN, k, "covariance"),
        sklearn_variant("svd_solver='covariance_eigh'", x_ref, k, svd_solver="covariance_eigh"),
        sklearn_variant("svd_solver='full'", x_ref, k, svd_solver="full"),
        # Before and after the byte kernel, in the same run: without it the byte-valued pixels
        # take exact f32 products (the same model, bit for bit).
        principal.fit_variant("--solver covariance, byte kernel off (PRINCIPAL_BYTE_KERNEL=none)",
                              [FASHION_TRAIN], ["--components", str(k), "--solver", "covariance"],
                              env={"PRINCIPAL_BYTE_KERNEL": "none"}),
    ]
    if "AMX" in principal.byte_kernel:
        # What an AVX-512 VNNI CPU without AMX runs (Xeons since Cascade Lake, AMD since Zen 4):
        # our tiles on 512-bit vpdpbusd, and rten-gemm's product, which such a CPU ran before
        # them (the same model, bit for bit).
        for kernel, label in [("avx512-vnni", "AVX-512 VNNI on our tiles"), ("rten-gemm", "rten-gemm")]:
            variants.append(principal.fit_variant(
                f"--solver covariance, {label} instead of AMX (PRINCIPAL_BYTE_KERNEL={kernel})",
                [FASHION_TRAIN], ["--components", str(k), "--solver", "covariance"],
                env={"PRINCIPAL_BYTE_KERNEL": kernel}))
    if "512-bit" in principal.byte_kernel:
        # The same instruction on 256-bit vectors, on the AVX2 kernel's tiles: what such a CPU
        # ran before the 512-bit tiles (the same model, bit for bit).
        variants.append(principal.in_memory_variant(
            FASHION_TRAIN, k, "covariance", env={"PRINCIPAL_BYTE_KERNEL": "avx512-vnni-256"},
            label="fit alone, in memory (--solver covariance), 256-bit vpdpbusd "
                  "(PRINCIPAL_BYTE_KERNEL=avx512-vnni-256)"))
    run_rounds(variants, args.repeat, args.budget, "case 1", notes)
    finish_variants(variants, principal)
    reference = variants[3]
    ref = reference.explained_variance
    for v in variants:
        if ref is not None and v is not reference:
            v.info["abs_err"], v.info["rel_err"] = accuracy_vs(v.explained_variance, ref)
    reference.notes.append("accuracy reference")
    del x_ref[0]
    return CaseResult(1, f"Fashion-MNIST train, {n:,} × {d} (IDX .gz), {k} components, exact", variants, notes,
                      "accuracy: explained variance vs scikit-learn covariance_eigh")


def case2(args, principal: Principal) -> CaseResult:
    k = 10
    notes: list = []
    path = tall_data(args.data_dir)
    x_ref = [np.load(path)]  # also puts the file in the page cache for principal
    n, d = x_ref[0].shape
    variants = [
        principal.fit_variant("--solver auto", [path], ["--components", str(k), "--solver", "auto"]),
        principal.in_memory_variant(path, k, "covariance"),
        sklearn_variant("svd_solver='covariance_eigh'", x_ref, k, svd_solver="covariance_eigh"),
        # Chunks of ~8 MB instead of 32 MiB (one chunk read ahead and one visited then fit in
        # the last-level cache, but a chunk is no longer split between two threads): issue 26
        # found it ~25% faster by wall time on a loaded machine, where less parallelism always
        # looks better; this row decides it on a quiet one.
        principal.fit_variant("--solver auto, chunks of ~8 MB (--memory-limit 128M)", [path],
                              ["--components", str(k), "--solver", "auto", "--memory-limit", "128M"]),
    ]
    run_rounds(variants, args.repeat, args.budget, "case 2", notes)
    finish_variants(variants, principal)
    reference = variants[2]
    ref = reference.explained_variance
    if ref is not None:
        for v in variants[:2] + variants[3:]:
            v.info["abs_err"], v.info["rel_err"] = accuracy_vs(v.explained_variance, ref)
    reference.notes.append("accuracy reference")
    del x_ref[0]
    return CaseResult(2, f"tall synthetic, {n:,} × {d} float64 (.npy), {k} components", variants, notes,
                      "accuracy: explained variance vs scikit-learn covariance_eigh")


def case3(args, principal: Principal) -> CaseResult:
    k = 50
    notes: list = []
    path = wide_data(args.data_dir)
    exact = wide_exact_eigenvalues(path, k)
    x_ref = [np.load(path)]
    n, d = x_ref[0].shape
    solvers = principal.solvers()
    variants = []
    if "randomized" in solvers:
        seed = ["--seed", "0"] if principal.has_flag("--seed") else []
        if not seed:
            notes.append("this principal build has no --seed flag: randomized ran with its default seed")
        variants.append(principal.fit_variant("--solver randomized" + (" --seed 0" if seed else ""), [path],
                                              ["--components", str(k), "--solver", "randomized", *seed]))
        if principal.has_flag("--tolerance"):
            variants.append(principal.fit_variant("--solver randomized --tolerance 1e-6", [path],
                                                  ["--components", str(k), "--solver", "randomized", *seed,
                                                   "--tolerance", "1e-6"]))
        else:
            notes.append("this principal build has no --tolerance flag: the --tolerance 1e-6 variant was skipped")
    else:
        notes.append("this principal build has no randomized solver: principal's randomized rows were skipped")
    variants.append(principal.fit_variant("--solver auto", [path], ["--components", str(k), "--solver", "auto"]))
    if "randomized" in solvers:
        variants.append(principal.in_memory_variant(path, k, "randomized"))
    variants.append(sklearn_variant("svd_solver='randomized', random_state=0", x_ref, k,
                                    svd_solver="randomized", random_state=0))
    run_rounds(variants, args.repeat, args.budget, "case 3", notes)
    finish_variants(variants, principal)
    for v in variants:
        v.info["abs_err"], v.info["rel_err"] = accuracy_vs(v.explained_variance, exact)
    notes.append(f"exact top-{k} eigenvalues from eigvalsh of the centred Gram matrix / (N−1): "
                 f"λ₁ = {exact[0]:.4g}, λ₃₀ = {exact[29]:.4g}, λ₃₁ = {exact[30]:.4g}, λ₅₀ = {exact[-1]:.4g}")
    del x_ref[0]
    return CaseResult(3, f"wide synthetic, {n:,} × {d:,} float64 (.npy), rank-30 signal + noise, {k} components",
                      variants, notes, "accuracy: explained variance vs exact eigenvalues (numpy eigvalsh)")


def case4(args, principal: Principal) -> CaseResult:
    k = 20
    notes: list = []
    path = huge_data(args.data_dir)
    size = path.stat().st_size
    read_times: list = []

    def read_once() -> Run:
        t = read_file_once(path)
        read_times.append(t)
        return Run(t)

    read_v = Variant("read", "file once (Python, 64 MiB blocks)", read_once, is_peer=True)
    seed = ["--seed", "0"] if principal.has_flag("--seed") else []
    variants = [
        principal.fit_variant("--solver covariance", [path], ["--components", str(k), "--solver", "covariance"]),
        principal.fit_variant("--solver randomized", [path], ["--components", str(k), "--solver", "randomized", *seed]),
    ]
    if principal.has_flag("--precision"):
        variants.append(principal.fit_variant("--solver covariance --precision mixed", [path],
                                              ["--components", str(k), "--solver", "covariance",
                                               "--precision", "mixed"]))
    if principal.has_flag("--memory-limit"):
        # The default budget (half the RAM) lets a 4 GB file be held in memory; 1G forces streaming.
        for solver in ("covariance", "randomized"):
            extra = seed if solver == "randomized" else []
            variants.append(principal.fit_variant(f"--solver {solver} --memory-limit 1G", [path],
                                                  ["--components", str(k), "--solver", solver, *extra,
                                                   "--memory-limit", "1G"]))
    else:
        notes.append("this principal build has no --memory-limit flag: no forced-streaming variants")
    log("  case 4: reading the file 3 times …")
    for _ in range(3):  # the first read also fills the page cache
        read_v.runs.append(read_once())
        log(f"    {read_v.runs[-1].seconds:.2f} s")
    run_rounds(variants, min(args.repeat, 3), args.budget_large, "case 4", notes)
    finish_variants(variants, principal)
    variants.append(read_v)
    cold = cold_variants(args, principal, path, k, notes) if args.cold else []
    note_throughput(variants, size, "a plain read")
    for v in variants[:-1]:
        peak = v.peak_mb()
        if peak is not None and peak > 0.5 * size / MB:
            v.notes.append(f"peak RSS is {peak / (size / MB):.1f}× the file: not streaming")
    total_ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    notes.append(f"file {size / MB:,.0f} MB; RAM {total_ram / 2**30:.0f} GiB, so after the first read the file "
                 "is in the page cache: the rows without \"cold\" measure compute + parsing throughput, "
                 "not the disk")
    if cold:
        cold_read = cold[-1]
        note_throughput(cold, size, "a cold plain read")
        hot, cold_med = read_v.median(), cold_read.median()
        if hot and cold_med and cold_med < 1.5 * hot:
            notes.append(f"cold reads took {cold_med:.2f} s against {hot:.2f} s from the page cache: the "
                         "eviction may not have worked (or the disk is as fast as memory); read the cold "
                         "rows with care")
    # cross-check the two solvers against each other
    cov = variants[0].explained_variance
    if cov is not None:
        variants[0].notes.append("accuracy reference")
        for v in variants[1:-1] + cold[:-1]:
            if v.explained_variance is not None:
                v.info["abs_err"], v.info["rel_err"] = accuracy_vs(v.explained_variance, cov)
    variants += cold
    return CaseResult(4, f"out-of-core, 10,000,000 × 100 float32 (.npy, {size / 2**30:.1f} GiB), {k} components",
                      variants, notes, "accuracy: every fit vs the first (covariance); ratio: principal ÷ one plain read")


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

HEADER = ["case", "tool", "variant", "runs", "median s", "min s", "× peer best", "peak RSS MB",
          "max |Δλ|/λ₁", "max |Δλ|/λ", "error_estimate", "notes"]


def rows_for(case: CaseResult) -> list:
    rows = []
    for v in case.variants:
        # Each variant is compared with the peers of its own group (case 4: cold with cold).
        peers = [p.median() for p in case.variants
                 if p.is_peer and p.group == v.group and p.median() is not None]
        best_peer = min(peers) if peers else None
        med = v.median()
        ratio = med / best_peer if (med is not None and best_peer and v.tool == "principal") else None
        label = v.label
        solver = v.info.get("solver")
        if v.tool == "principal" and solver and f"--solver {solver}" not in label:
            label += f" → {solver}"
        notes = list(v.notes)
        if v.info.get("converged") is False:
            notes.append("not converged")
        if v.info.get("passes") is not None:
            notes.append(f"{v.info['passes']} passes")
        rows.append([
            str(case.number), v.tool, label, str(len(v.good())), fmt_s(med), fmt_s(v.minimum()), fmt_ratio(ratio),
            "—" if v.peak_mb() is None else f"{v.peak_mb():,.0f}",
            fmt_e(v.info.get("abs_err")), fmt_e(v.info.get("rel_err")), fmt_e(v.info.get("error_estimate")),
            "; ".join(n for n in notes if n),
        ])
    return rows


def text_table(rows: list) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(HEADER), line(["-" * w for w in widths]), *map(line, rows)])


def md_table(rows: list) -> str:
    esc = lambda c: c.replace("|", "\\|")
    out = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def environment(principal: Principal) -> list:
    import sklearn
    import threadpoolctl

    cpu = "unknown"
    simd = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu == "unknown":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and simd == "unknown":
                flags = line.split(":", 1)[1].split()
                # The features the kernels dispatch on (AMX: the tile byte product; AVX-512
                # VNNI: rten-gemm's byte product; AVX2: the vpmaddwd byte product and faer's f64
                # kernels).
                simd = " ".join(f for f in flags if f.startswith(("avx", "fma", "amx"))) or "none of avx/fma"
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        commit = (commit or "unknown") + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        commit = "unknown"
    # OpenBLAS's architecture says which kernels it runs (OPENBLAS_CORETYPE can choose them).
    blas = ", ".join(f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads"
                     + (f", {p['architecture']} kernels" if p.get("architecture") else "") + ")"
                     for p in threadpoolctl.threadpool_info())
    return [
        f"date: {_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"machine: {platform.machine()}, nproc {os.cpu_count()}, CPU {cpu}; flags: {simd}; "
        f"load average at the start: {load}",
        f"principal's byte kernel: {principal.byte_kernel}",
        f"principal: {principal.version}, commit {commit}",
        f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}; "
        f"BLAS: {blas or 'unknown'}",
    ]


def note_throughput(variants: list, size: int, baseline: str) -> None:
    """Notes each variant's MB/s and, for all but the last (the read), its share of the read's."""
    for v in variants:
        med = v.median()
        if med:
            v.info["throughput"] = size / MB / med
    read_mbs = variants[-1].info.get("throughput")
    for v in variants[:-1]:
        if v.info.get("throughput") and read_mbs:
            v.notes.append(f"{v.info['throughput']:.0f} MB/s = {v.info['throughput'] / read_mbs:.0%} of {baseline}")
    variants[-1].notes.append(f"{read_mbs:.0f} MB/s" if read_mbs else "")


def cold_variants(args, principal: Principal, path: Path, k: int, notes: list) -> list:
    """Case 4 from the disk: before every run the file is evicted from the page cache, as a file
    larger than memory would be. Returns the fits, then the plain read (last)."""

    def cold(run_once: Callable[[], Run]) -> Callable[[], Run]:
        def run() -> Run:
            evict_from_page_cache(path)
            return run_once()
        return run

    fits = [principal.fit_variant("--solver covariance, cold", [path],
                                  ["--components", str(k), "--solver", "covariance"])]
    if principal.has_flag("--memory-limit"):
        seed = ["--seed", "0"] if principal.has_flag("--seed") else []
        fits.append(principal.fit_variant("--solver randomized --memory-limit 1G, cold", [path],
                                          ["--components", str(k), "--solver", "randomized", *seed,
                                           "--memory-limit", "1G"]))
    for v in fits:
        v.run_once = cold(v.run_once)
        v.group = "cold"
    read = Variant("read", "file once, cold (Python, 64 MiB blocks)", cold(lambda: Run(read_file_once(path))),
                   is_peer=True, group="cold")
    variants = [*fits, read]
    log("  case 4, cold page cache: the file is evicted before every run …")
    run_rounds(variants, min(args.repeat, 3), args.budget_large, "case 4 cold", notes)
    finish_variants(fits, principal)
    return variants


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5, help="rounds per case (default 5; case 4 at most 3)")
    p.add_argument("--cases", default="1,2,3", help="comma-separated cases 1-4 (default 1,2,3; 4 needs 4 GB disk)")
    p.add_argument("--data-dir", type=Path, default=BENCH_DIR / "data", help="where generated data is cached")
    p.add_argument("--principal", type=Path, default=ROOT / "target" / "release" / "principal",
                   help="the principal binary (default: target/release/principal)")
    p.add_argument("--budget", type=float, default=400.0,
                   help="seconds per case (cases 1-3) before repeats are lowered (default 400)")
    p.add_argument("--budget-large", type=float, default=900.0, help="the same for case 4 (default 900)")
    p.add_argument("--no-cold", dest="cold", action="store_false",
                   help="case 4: skip the rounds from a cold page cache (the file evicted before every run)")
    p.add_argument("--output", type=Path, default=BENCH_DIR / "results.md", help="Markdown results file")
    p.add_argument("--note", action="append", default=[],
                   help="a line for the header of the results (repeatable), e.g. how the run was restricted")
    args = p.parse_args()

    try:
        cases = sorted({int(c) for c in args.cases.split(",") if c.strip()})
    except ValueError:
        p.error(f"--cases {args.cases!r}: expected numbers like 1,2,3")
    if not cases or any(c not in (1, 2, 3, 4) for c in cases):
        p.error(f"--cases {args.cases!r}: cases are 1, 2, 3, 4")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if not os.access(args.principal, os.X_OK):
        p.error(f"{args.principal} is not an executable: build it (cargo build --release -p principal-cli)")
    args.data_dir.mkdir(parents=True, exist_ok=True)

    runners = {1: case1, 2: case2, 3: case3, 4: case4}
    started = time.perf_counter()
    results = []
    launcher = Launcher()  # before any data is loaded: see LAUNCHER_SOURCE
    with tempfile.TemporaryDirectory(prefix="principal-bench-") as work:
        _, floor_kib, _ = launcher.run(["/bin/true"], Path(work) / "true.stderr")
        principal = Principal(args.principal, Path(work), launcher)
        env = environment(principal)
        env[1:1] = args.note
        env.append(f"peak RSS floor (/bin/true started the same way): {floor_kib * 1024 / MB:.0f} MB")
        for line in env:
            log(line)
        for c in cases:
            log(f"case {c} …")
            t0 = time.perf_counter()
            results.append(runners[c](args, principal))
            log(f"case {c} done in {time.perf_counter() - t0:.0f} s")
    launcher.close()

    rows = [row for case in results for row in rows_for(case)]
    notes = []
    for case in results:
        notes.append(f"Case {case.number}: {case.title}. {case.accuracy_header}.")
        notes += [f"  - {n}" for n in case.notes]
    total = time.perf_counter() - started

    print()
    print(text_table(rows))
    print()
    for n in notes:
        print(n)
    print(f"\ntotal {total:.0f} s; " + env[0])

    md = ["# principal benchmark results", "", *[f"- {line}" for line in env],
          f"- arguments: `{' '.join(sys.argv[1:]) or '(defaults)'}`",
          f"- total wall time {total:.0f} s", "", md_table(rows), ""]
    for case in results:
        md.append(f"- **Case {case.number}**: {case.title}. {case.accuracy_header}.")
        md += [f"  - {n}" for n in case.notes]
    md += ["", "principal: whole process from the file (read + fit + write the model), peak RSS from wait4; "
           "\"fit alone, in memory\": `PcaParams::fit` on data read beforehand (median of 3 per round). "
           "scikit-learn: `PCA.fit` alone on data already in memory. Medians and minima over interleaved runs; "
           "× peer best = principal's median ÷ the best peer median in the case (case 4's cold rows: ÷ the cold read).", ""]
    args.output.write_text("\n".join(md))
    log(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
