"""principal.TruncatedSVD against scikit-learn's TruncatedSVD (algorithm='arpack', exact, to
1e-8; 'randomized' with enough power iterations to agree as well) on dense and scipy.sparse
input (CSR, CSC; never densified): components_ (signs: the entry of largest absolute value
positive, as svd_flip(u_based_decision=False) and principal's convention), singular_values_,
explained_variance_ (the codes' variance, ddof 0), explained_variance_ratio_, transform,
fit_transform, inverse_transform; principal.pca(adata, zero_center=False)."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.decomposition
from sklearn.base import clone

import principal
from conftest import close, import_extra, low_rank

ATTRIBUTES = ["components_", "singular_values_", "explained_variance_",
              "explained_variance_ratio_"]


def counts(n=200, d=30, seed=3):
    """n × d counts, about 15% non-zero, of a few types (well separated singular values)."""
    rng = np.random.default_rng(seed)
    types = rng.integers(0, 3, size=n)
    rates = rng.gamma(2.0, 2.0, size=(3, d))
    return (rng.poisson(rates[types]) * (rng.random((n, d)) < 0.15)).astype(np.float64)


@pytest.mark.parametrize("data", ["counts", "low_rank", "wide"])
@pytest.mark.parametrize("make", [np.asarray, sp.csr_matrix, sp.csc_matrix, sp.csr_array])
def test_arpack_matches_scikit_learn(data, make, request):
    x = {"counts": counts, "low_rank": lambda: low_rank(150, 12, 5, 4),
         "wide": lambda: counts(n=25, d=60, seed=5)}[data]()
    theirs = sklearn.decomposition.TruncatedSVD(n_components=4, algorithm="arpack").fit(x)
    if make is not np.asarray:
        request.getfixturevalue("no_densifying")
    X = make(x)
    ours = principal.TruncatedSVD(n_components=4, algorithm="arpack").fit(X)
    for name in ATTRIBUTES:
        close(getattr(ours, name), getattr(theirs, name), 1e-8, name)
    assert ours.n_features_in_ == x.shape[1]
    close(ours.transform(X), theirs.transform(x), 1e-8, "transform")
    fresh = principal.TruncatedSVD(n_components=4, algorithm="arpack")
    close(fresh.fit_transform(X), theirs.transform(x), 1e-8, "fit_transform")
    z = theirs.transform(x)
    close(ours.inverse_transform(z), theirs.inverse_transform(z), 1e-8, "inverse_transform")


def test_the_definitions_are_scikit_learns():
    """explained_variance_ is the codes' variance with ddof 0 (not σ²/(n − 1)), its ratio over
    the columns' total variance (ddof 0), singular_values_ the codes' norms; the sign rule."""
    x = counts()
    ours = principal.TruncatedSVD(n_components=3, algorithm="arpack").fit(x)
    codes = ours.transform(x)
    close(ours.explained_variance_, codes.var(axis=0), 1e-10, "variance")
    close(ours.explained_variance_ratio_, codes.var(axis=0) / x.var(axis=0).sum(), 1e-10,
          "ratio")
    close(ours.singular_values_, np.linalg.norm(codes, axis=0), 1e-10, "singular values")
    top = np.abs(ours.components_).argmax(axis=1)
    assert (ours.components_[np.arange(3), top] > 0).all()


@pytest.mark.parametrize("make", [np.asarray, sp.csr_matrix])
def test_randomized_with_enough_iterations_matches_scikit_learn(make):
    x = counts()
    theirs = sklearn.decomposition.TruncatedSVD(n_components=3, algorithm="arpack").fit(x)
    ours = principal.TruncatedSVD(n_components=3, algorithm="randomized", n_iter=30,
                                  random_state=0).fit(make(x))
    for name in ATTRIBUTES:
        close(getattr(ours, name), getattr(theirs, name), 1e-8, name)
    # Seeded: the same random_state gives the same model.
    again = principal.TruncatedSVD(n_components=3, n_iter=30, random_state=0).fit(make(x))
    np.testing.assert_array_equal(again.components_, ours.components_)


def test_float32_is_kept_and_parameters_are_checked():
    x = counts().astype(np.float32)
    ours = principal.TruncatedSVD(n_components=2, algorithm="arpack").fit(x)
    assert ours.components_.dtype == np.float32
    assert ours.transform(x).dtype == np.float32
    theirs = sklearn.decomposition.TruncatedSVD(n_components=2, algorithm="arpack").fit(
        x.astype(np.float64))
    close(ours.components_, theirs.components_, 1e-5, "float32")
    assert clone(ours).get_params() == ours.get_params()
    with pytest.raises(ValueError, match="algorithm"):
        principal.TruncatedSVD(algorithm="lanczos").fit(x)
    with pytest.raises(ValueError, match="strictly less than n_features"):
        principal.TruncatedSVD(n_components=30, algorithm="arpack").fit(x)


def test_pca_with_zero_center_false_is_scanpys_truncated_svd():
    ad = import_extra("anndata")
    x = counts()
    adata = ad.AnnData(sp.csr_matrix(x))
    principal.pca(adata, n_comps=4, zero_center=False, mask_var=None)
    theirs = sklearn.decomposition.TruncatedSVD(n_components=4, algorithm="arpack").fit(x)
    assert adata.uns["pca"]["params"]["zero_center"] is False
    close(adata.uns["pca"]["variance"], theirs.explained_variance_, 1e-8, "variance")
    close(adata.uns["pca"]["variance_ratio"], theirs.explained_variance_ratio_, 1e-8, "ratio")
    close(adata.varm["PCs"], theirs.components_.T, 1e-8, "PCs")
    close(adata.obsm["X_pca"], theirs.transform(x), 1e-6, "X_pca (float32)")


def test_scikit_learns_estimator_checks_pass():
    from sklearn.utils.estimator_checks import check_estimator
    results = check_estimator(principal.TruncatedSVD(), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed, failed
