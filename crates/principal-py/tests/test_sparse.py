"""principal.PCA on scipy.sparse matrices: the sparse core (centred implicitly, never
densified) against scikit-learn's PCA of the densified matrix (1e-8) and its sparse arpack
PCA, for CSR and CSC, float and integer values; principal.pca(adata) with a sparse X."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.decomposition

import principal
from conftest import close, import_extra


def counts(n=300, d=40, seed=0):
    """n × d counts, 10% non-zero, of a few cell types (well separated eigenvalues)."""
    rng = np.random.default_rng(seed)
    types = rng.integers(0, 4, size=n)
    rates = rng.gamma(2.0, 2.0, size=(4, d))
    x = rng.poisson(rates[types]) * (rng.random((n, d)) < 0.1)
    return x.astype(np.int64)


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.csc_matrix, sp.csr_array])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
@pytest.mark.parametrize("svd_solver", ["covariance_eigh", "auto"])
def test_sparse_fit_matches_scikit_learn_on_the_densified_matrix(make, dtype, svd_solver):
    # 'auto' may take the randomized route on sparse data (its cost model): to tol 1e-13 it
    # agrees to rounding as the exact covariance route does.
    dense = counts().astype(dtype)
    theirs = sklearn.decomposition.PCA(n_components=5, svd_solver="full").fit(
        dense.astype(np.float64)
    )
    x = make(dense)
    ours = principal.PCA(n_components=5, svd_solver=svd_solver, tol=1e-13).fit(x)
    rtol = 1e-8 if dtype != np.float32 else 1e-5
    for name in ["components_", "explained_variance_", "explained_variance_ratio_",
                 "singular_values_", "mean_"]:
        close(getattr(ours, name), getattr(theirs, name), rtol, name)
    assert ours.n_features_in_ == 40 and ours.n_samples_ == 300
    close(ours.transform(x), theirs.transform(dense.astype(np.float64)), rtol, "transform")
    close(principal.PCA(n_components=5, svd_solver=svd_solver, tol=1e-13).fit_transform(x),
          theirs.transform(dense.astype(np.float64)), rtol, "fit_transform")


def test_sparse_fit_never_densifies(no_densifying):
    x = sp.csc_matrix(counts())
    ours = principal.PCA(n_components=3).fit(x)
    assert ours.transform(x).shape == (300, 3)


def test_sparse_fit_matches_scikit_learns_sparse_arpack_pca():
    x = sp.csr_matrix(counts(n=400, d=60, seed=1).astype(np.float64))
    theirs = sklearn.decomposition.PCA(n_components=4, svd_solver="arpack", random_state=0).fit(x)
    for solver in ["randomized", "power", "covariance"]:
        ours = principal.PCA(n_components=4, solver=solver, tol=1e-12, random_state=0).fit(x)
        close(ours.explained_variance_, theirs.explained_variance_, 1e-8, solver)
        close(ours.components_, theirs.components_, 1e-6, solver)
        close(ours.transform(x), theirs.transform(x), 1e-6, solver)


def test_dense_only_options_are_refused_for_sparse_input():
    x = sp.csr_matrix(counts())
    with pytest.raises(ValueError, match="row_weights"):
        principal.PCA(n_components=2).fit(x, row_weights=np.ones(300))
    with pytest.raises(ValueError):
        principal.PCA(n_components=2, svd_solver="full").fit(x)
    with pytest.raises(ValueError, match="features"):
        principal.PCA(n_components=2).fit(x).transform(sp.csr_matrix(counts(d=41)))


def test_pca_of_an_anndata_with_sparse_x_equals_that_of_dense_x(no_densifying):
    ad = import_extra("anndata")
    x = counts(n=200, d=30, seed=2).astype(np.float32)
    hv = np.zeros(30, dtype=bool)
    hv[::3] = True
    dense = ad.AnnData(x)
    dense.var["highly_variable"] = hv
    sparse = ad.AnnData(sp.csr_matrix(x))
    sparse.var["highly_variable"] = hv
    principal.pca(sparse, n_comps=4, svd_solver="covariance_eigh")
    principal.pca(dense, n_comps=4, svd_solver="covariance_eigh")
    close(sparse.obsm["X_pca"], dense.obsm["X_pca"], 1e-5, "X_pca")
    close(sparse.varm["PCs"], dense.varm["PCs"], 1e-8, "PCs")
    close(sparse.uns["pca"]["variance"], dense.uns["pca"]["variance"], 1e-8, "variance")
