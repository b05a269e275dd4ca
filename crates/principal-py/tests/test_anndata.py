"""principal.pca(adata) against scanpy's sc.pp.pca, and `principal transform --into` read back
by the anndata package: the same fields, shapes, dtypes and numbers (up to each component's
sign)."""

import shutil

import numpy as np
import pytest
import scipy.sparse as sp

import principal
from conftest import REPO, cli, import_extra, run_cli

ad = import_extra("anndata")
sc = import_extra("scanpy")

H5AD = REPO / "fixtures" / "h5ad"


def aligned(a, b):
    """`a`'s columns with the signs of `b`'s."""
    signs = np.sign(np.sum(a * b, axis=0))
    signs[signs == 0] = 1
    return a * signs


def counts_adata():
    adata = ad.read_h5ad(H5AD / "mask.h5ad")
    adata.X = np.log1p(adata.X.toarray().astype(np.float64))
    return adata


def assert_same_pca(ours, theirs, tol):
    assert set(ours.obsm) >= {"X_pca"} and set(ours.varm) >= {"PCs"}
    assert ours.obsm["X_pca"].shape == theirs.obsm["X_pca"].shape
    assert ours.obsm["X_pca"].dtype == theirs.obsm["X_pca"].dtype
    assert ours.varm["PCs"].shape == theirs.varm["PCs"].shape
    assert set(ours.uns["pca"]) >= {"variance", "variance_ratio"}
    np.testing.assert_allclose(ours.uns["pca"]["variance"], theirs.uns["pca"]["variance"],
                               rtol=tol)
    np.testing.assert_allclose(ours.uns["pca"]["variance_ratio"],
                               theirs.uns["pca"]["variance_ratio"], rtol=tol)
    pcs, their_pcs = ours.varm["PCs"], theirs.varm["PCs"]
    np.testing.assert_array_equal(np.all(pcs == 0, axis=1), np.all(their_pcs == 0, axis=1))
    np.testing.assert_allclose(aligned(pcs, their_pcs), their_pcs, atol=tol)
    np.testing.assert_allclose(aligned(ours.obsm["X_pca"], theirs.obsm["X_pca"]),
                               theirs.obsm["X_pca"], atol=tol * 10)


@pytest.mark.parametrize("mask_var", [None, "highly_variable"])
def test_pca_fills_the_fields_of_sc_pp_pca(mask_var):
    ours, theirs = counts_adata(), counts_adata()
    principal.pca(ours, n_comps=4, mask_var=mask_var)
    sc.pp.pca(theirs, n_comps=4, mask_var=mask_var, svd_solver="covariance_eigh")
    assert_same_pca(ours, theirs, 1e-5)
    assert ours.uns["pca"]["params"]["mask_var"] == theirs.uns["pca"]["params"]["mask_var"]
    assert ours.uns["pca"]["params"]["use_highly_variable"] == \
        theirs.uns["pca"]["params"]["use_highly_variable"]


def test_pca_by_default_masks_highly_variable_as_scanpy_does():
    adata = counts_adata()
    principal.pca(adata, n_comps=3)
    assert adata.uns["pca"]["params"]["mask_var"] == "highly_variable"
    assert np.all(adata.varm["PCs"][~adata.var["highly_variable"].to_numpy()] == 0)
    copy = principal.pca(counts_adata(), n_comps=3, mask_var=None, copy=True)
    assert copy.varm["PCs"].shape == (15, 3) and np.all(np.any(copy.varm["PCs"] != 0, axis=1))


def test_pca_rejects_a_missing_mask_column():
    with pytest.raises(KeyError, match="no such column"):
        principal.pca(counts_adata(), n_comps=3, mask_var="nope")


def test_transform_into_is_read_by_anndata_as_sc_pp_pca_writes_it(tmp_path):
    assert cli() is not None, "the principal binary is not built: cargo build --release first"
    data = tmp_path / "data.h5ad"
    shutil.copy(H5AD / "mask.h5ad", data)
    before = ad.read_h5ad(data)
    run_cli(["fit", data, "--mask-var", "highly_variable", "-k", "4",
             "--output", tmp_path / "m.pca"], "h5ad")
    run_cli(["transform", tmp_path / "m.pca", data, "--into", data], "h5ad")
    ours = ad.read_h5ad(data)
    theirs = before.copy()
    theirs.X = theirs.X.astype(np.float64)
    sc.pp.pca(theirs, n_comps=4, mask_var="highly_variable", svd_solver="covariance_eigh")
    assert_same_pca(ours, theirs, 1e-5)
    # Written to disk by scanpy's side too: the same layout read back.
    theirs.write_h5ad(tmp_path / "scanpy.h5ad")
    back = ad.read_h5ad(tmp_path / "scanpy.h5ad")
    assert_same_pca(ours, back, 1e-5)
    # Everything else untouched.
    assert sp.issparse(ours.X)
    np.testing.assert_array_equal(ours.X.toarray(), before.X.toarray())
    assert list(ours.obs_names) == list(before.obs_names)
    assert list(ours.var_names) == list(before.var_names)
    np.testing.assert_array_equal(ours.var["mean"], before.var["mean"])
