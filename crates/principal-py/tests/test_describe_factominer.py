"""PCA.describe against FactoMineR's PCA() and dimdesc() (fixtures/generate_factominer.R):
every table to 1e-8 relative, each axis flipped as FactoMineR's, on decathlon, Iris
(standardized and not) and mtcars with row weights (standardized and not)."""

import csv
import json

import numpy as np
import pytest

from conftest import REPO
from principal import PCA

FIXTURES = REPO / "fixtures" / "factominer"
CASES = ["decathlon", "iris-standardized", "iris", "mtcars-weighted", "mtcars-weighted-centred"]
ROW_NAMES = {"decathlon": "athlete", "mtcars-weighted": "car", "mtcars-weighted-centred": "car"}


def read(name):
    with open(FIXTURES / name, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return {h: [r[j] for r in body] for j, h in enumerate(header)}


def names(v):
    return [v] if isinstance(v, str) else list(v)


def close(ours, theirs, floor, what):
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    bad = np.abs(ours - theirs) > 1e-8 * (np.abs(theirs) + floor)
    assert not bad.any(), f"{what}: ours {ours[bad]}, FactoMineR {theirs[bad]}"


def by_name(ours, theirs, key):
    index = [ours["names"].index(n) for n in names(theirs["names"])]
    return np.asarray(ours[key])[index], np.asarray(theirs[key], dtype=float)


@pytest.mark.parametrize("case", CASES)
def test_describe_matches_factominer(case):
    expected = json.loads((FIXTURES / f"{case}.json").read_text())
    table = read(expected["files"]["data"])
    quanti = names(expected["quanti_sup"]["names"]) if "quanti_sup" in expected else []
    quali = names(expected["quali_sup"]["eta2"]["names"]) if "quali_sup" in expected else []
    features = names(expected["var"]["names"])
    X = np.array([[float(v) for v in table[f]] for f in features]).T
    weights = np.array([float(v) for v in table["weight"]]) if "weight" in table else None
    model = PCA(standardize=expected["scale_unit"], ddof=0).fit(X, row_weights=weights)
    row_column = ROW_NAMES.get(case)
    sup = None
    row_names = None if row_column is None else table[row_column]
    if "supplementary" in expected["files"]:
        sup_table = read(expected["files"]["supplementary"])
        sup = np.array([[float(v) for v in sup_table[f]] for f in features]).T
        row_names = (table[row_column], sup_table[row_column])
    ours = model.describe(
        X,
        supplementary_rows=sup,
        quantitative={q: [float(v) for v in table[q]] for q in quanti},
        qualitative={q: table[q] for q in quali},
        row_names=row_names,
        row_weights=weights,
        feature_names=features,
    )
    te = expected["eig"]
    for key in ["eigenvalue", "percent", "cumulative_percent"]:
        theirs = np.asarray(te[key], dtype=float)
        close(ours["eig"][key][: len(theirs)], theirs, np.abs(theirs).max(), f"eig.{key}")
    ov, tv = by_name(ours["var"], expected["var"], "coord")
    flip = np.sign((ov * tv).sum(axis=0))
    signed = {"coord", "cor", "v_test"}
    for t, keys in [
        ("var", ["coord", "cor", "cos2", "contrib"]),
        ("ind", ["coord", "cos2", "contrib", "dist"]),
        ("ind_sup", ["coord", "cos2", "dist"]),
        ("quanti_sup", ["coord", "cor", "cos2"]),
        ("quali_sup", ["coord", "cos2", "v_test", "dist"]),
    ]:
        if t not in expected:
            assert ours[t] is None
            continue
        theirs_table = dict(expected[t])
        if t == "quali_sup":
            theirs_table["names"] = names(theirs_table["names"])
        for key in keys:
            o, th = by_name(ours[t], theirs_table, key)
            if th.ndim == 1:
                o = o.reshape(-1)
            elif th.ndim == 2 and key in signed:
                o = o * flip
            close(o, th, np.abs(th).max(), f"{case} {t}.{key}")
    if "quali_sup" in expected:
        close(ours["quali_sup"]["eta2"]["values"], expected["quali_sup"]["eta2"]["values"], 1.0, "eta2")
    for m in range(3):
        for part, stat, is_signed in [("quanti", "correlation", True), ("quali", "r2", False), ("category", "estimate", True)]:
            theirs = expected["dimdesc"][m].get(part)
            o = ours["dimdesc"][m].get(part)
            if not theirs:
                assert o is None, f"{case} dimdesc {m} {part}"
                continue
            their_names = names(theirs["names"])
            their_stat = np.atleast_1d(np.asarray(theirs[stat], dtype=float))
            their_p = np.atleast_1d(np.asarray(theirs["p_value"], dtype=float))
            if is_signed and flip[m] < 0:
                their_names, their_stat, their_p = their_names[::-1], their_stat[::-1], their_p[::-1]
            assert o["names"] == their_names, f"{case} dimdesc {m} {part}"
            sign = flip[m] if is_signed else 1.0
            close(sign * o[stat], their_stat, 0.0, f"{case} dimdesc {m} {part}")
            close(o["p_value"], their_p, 0.0, f"{case} dimdesc {m} {part} p")


def test_row_weights_of_ones_are_the_unweighted_fit():
    X = np.random.default_rng(4).normal(size=(30, 4))
    plain = PCA().fit(X)
    weighted = PCA().fit(X, row_weights=np.ones(30))
    np.testing.assert_allclose(weighted.explained_variance_, plain.explained_variance_, rtol=1e-12)
    np.testing.assert_allclose(np.abs(weighted.components_), np.abs(plain.components_), atol=1e-12)
