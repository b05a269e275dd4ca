"""principal.FactorAnalysis, principal.KernelPCA and principal.FastICA against scikit-learn's
classes of the same names on small data: factor analysis to EM's fixed point (scikit-learn run
with tol=1e-12), kernel PCA up to each component's sign, FastICA up to sign and order; and
the parameters principal does not implement refused by name."""

import pickle

import numpy as np
import pytest
import sklearn.decomposition as skd
from sklearn.base import clone
from sklearn.decomposition._factor_analysis import _ortho_rotation
from sklearn.exceptions import NotFittedError

from principal import FactorAnalysis, FastICA, KernelPCA


def planted_factors(n=400, seed=0):
    rng = np.random.default_rng(seed)
    w = np.array([[1.0, 0.8, 0.6, 0.0, 0.1, 0.0, 0.3], [0.0, 0.2, 0.5, 1.0, 0.7, 0.9, -0.4]])
    noise = np.array([0.4, 0.5, 0.45, 0.6, 0.35, 0.5, 0.3])
    return 3.0 + rng.normal(size=(n, 2)) @ w + noise * rng.normal(size=(n, 7))


def match_sign(ours, theirs, axis):
    """`ours` with each row (axis=1) or column (axis=0) flipped to agree with `theirs`."""
    dots = np.sum(ours * theirs, axis=axis, keepdims=True)
    return ours * np.where(dots < 0, -1.0, 1.0)


@pytest.mark.parametrize("rotation", [None, "varimax", "quartimax"])
def test_factor_analysis_is_scikit_learns_at_the_fixed_point(rotation):
    X = planted_factors()
    ours = FactorAnalysis(n_components=2, rotation=rotation).fit(X)
    theirs = skd.FactorAnalysis(n_components=2, svd_method="lapack", tol=1e-12, max_iter=100000).fit(X)
    if rotation is not None:
        # scikit-learn stops its rotation at tol=1e-6 and 100 steps; principal runs it to
        # convergence, as scikit-learn's own _ortho_rotation does with tol=0.
        theirs.components_ = _ortho_rotation(theirs.components_.T, method=rotation, tol=0.0, max_iter=100_000)[:2]
    assert ours.converged_
    np.testing.assert_allclose(ours.noise_variance_, theirs.noise_variance_, rtol=1e-6)
    np.testing.assert_allclose(ours.mean_, theirs.mean_, rtol=1e-12)
    np.testing.assert_allclose(ours.loglike_[-1], theirs.loglike_[-1], rtol=1e-8)
    assert ours.n_iter_ == len(ours.loglike_)
    # Rotated factors may come in another order: pair each with the closest of scikit-learn's.
    order = np.argmax(np.abs(ours.components_ @ theirs.components_.T), axis=1)
    assert sorted(order) == [0, 1]
    components = match_sign(ours.components_, theirs.components_[order], axis=1)
    np.testing.assert_allclose(components, theirs.components_[order], atol=1e-5)
    np.testing.assert_allclose(ours.get_covariance(), theirs.get_covariance(), atol=1e-6)
    np.testing.assert_allclose(ours.get_precision(), theirs.get_precision(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.score_samples(X), theirs.score_samples(X), rtol=1e-7)
    assert ours.score(X) == pytest.approx(theirs.score(X), rel=1e-8)
    Z = match_sign(ours.transform(X), theirs.transform(X)[:, order], axis=0)
    np.testing.assert_allclose(Z, theirs.transform(X)[:, order], atol=1e-5)


def test_factor_analysis_defaults_and_float32():
    X = planted_factors()
    model = FactorAnalysis().fit(X.astype(np.float32))
    assert model.components_.shape == (7, 7)
    assert model.n_features_in_ == 7
    assert model.transform(X[:5]).shape == (5, 7)


KERNELS = [
    dict(kernel="linear"),
    dict(kernel="rbf"),
    dict(kernel="rbf", gamma=0.5),
    dict(kernel="poly", gamma=0.3, degree=2, coef0=0.5),
    dict(kernel="sigmoid", gamma=0.05, coef0=0.2),
    dict(kernel="cosine"),
]


@pytest.mark.parametrize("params", KERNELS, ids=lambda p: "-".join(str(v) for v in p.values()))
def test_kernel_pca_is_scikit_learns_up_to_sign(params):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 4)) @ rng.normal(size=(4, 4)) + 1.0
    new = rng.normal(size=(7, 4))
    ours = KernelPCA(n_components=3, fit_inverse_transform=True, alpha=0.1, **params)
    theirs = skd.KernelPCA(n_components=3, fit_inverse_transform=True, alpha=0.1, eigen_solver="dense", **params)
    codes, expected = ours.fit_transform(X), theirs.fit_transform(X)
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(match_sign(codes, expected, axis=0), expected, atol=1e-9)
    np.testing.assert_allclose(
        match_sign(ours.eigenvectors_, theirs.eigenvectors_, axis=0), theirs.eigenvectors_, atol=1e-9
    )
    np.testing.assert_allclose(
        match_sign(ours.transform(new), theirs.transform(new), axis=0), theirs.transform(new), atol=1e-9
    )
    assert ours.gamma_ == pytest.approx(theirs.gamma_)
    # The pre-image map depends on the codes only through the kernel, which a flipped
    # component changes in neither (rbf: distances) nor (dot products) when all rows flip.
    np.testing.assert_allclose(
        ours.inverse_transform(ours.transform(new)),
        theirs.inverse_transform(theirs.transform(new)),
        atol=1e-7,
    )


def test_kernel_pca_inverse_needs_fit_inverse_transform():
    X = np.random.default_rng(2).normal(size=(20, 3))
    model = KernelPCA(n_components=2, kernel="rbf").fit(X)
    with pytest.raises(NotFittedError, match="fit_inverse_transform"):
        model.inverse_transform(model.transform(X))
    assert not hasattr(model, "dual_coef_")
    # Without it the map is not learnt at all (the native state holds none), and nothing else
    # changes: the same eigenpairs and codes as the model that learns it.
    assert model._state["dual_coef"] is None
    learnt = KernelPCA(n_components=2, kernel="rbf", fit_inverse_transform=True).fit(X)
    assert learnt._state["dual_coef"].shape == (20, 3)
    np.testing.assert_array_equal(model.eigenvalues_, learnt.eigenvalues_)
    np.testing.assert_array_equal(model.transform(X), learnt.transform(X))
    # Pickled and read back, it still transforms (and still has no map).
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.transform(X), learnt.transform(X))


def mixed_signals(n=2000):
    t = np.linspace(0, 8, n)
    rng = np.random.default_rng(3)
    S = np.c_[np.sin(2 * t), np.sign(np.sin(3 * t)), rng.laplace(size=n)]
    A = np.array([[1.0, 1.0, 1.0], [0.5, 2.0, 1.0], [1.5, 1.0, 2.0]])
    return S, S @ A.T


def pair_up(ours, theirs):
    """The columns of `theirs` in the order and signs of `ours`' closest matches."""
    c = np.corrcoef(ours.T, theirs.T)[: ours.shape[1], ours.shape[1] :]
    order = np.argmax(np.abs(c), axis=1)
    assert sorted(order) == list(range(ours.shape[1]))
    return theirs[:, order] * np.sign(c[np.arange(len(order)), order]), c[np.arange(len(order)), order]


@pytest.mark.parametrize("fun", ["logcosh", "exp", "cube"])
def test_fast_ica_is_scikit_learns_up_to_sign_and_order(fun):
    S, X = mixed_signals()
    ours = FastICA(n_components=3, fun=fun, tol=1e-10, max_iter=5000, random_state=0)
    theirs = skd.FastICA(n_components=3, fun=fun, tol=1e-10, max_iter=5000, random_state=0)
    sources, expected = ours.fit_transform(X), theirs.fit_transform(X)
    paired, _ = pair_up(sources, expected)
    np.testing.assert_allclose(sources, paired, atol=1e-6)
    # The true sources are recovered too (ICA's own check: up to sign, order and scale).
    _, corr = pair_up(sources, S)
    assert np.all(np.abs(corr) > 0.98), corr
    np.testing.assert_allclose(ours.transform(X), sources, atol=1e-12)
    np.testing.assert_allclose(ours.inverse_transform(sources), X, atol=1e-9)
    np.testing.assert_allclose(ours.mean_, theirs.mean_, rtol=1e-12)
    assert ours.components_.shape == (3, 3) and ours.mixing_.shape == (3, 3)
    np.testing.assert_allclose(ours.components_ @ ours.mixing_, np.eye(3), atol=1e-9)
    assert 0 < ours.n_iter_ <= 5000 and ours.converged_


def test_fast_ica_seed_is_deterministic():
    _, X = mixed_signals(500)
    a = FastICA(n_components=2, random_state=4).fit(X)
    b = FastICA(n_components=2, random_state=4).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)


@pytest.mark.parametrize(
    "estimator, match",
    [
        (FactorAnalysis(svd_method="randomized"), "svd_method='randomized'"),
        (FactorAnalysis(noise_variance_init=np.ones(7)), "noise_variance_init"),
        (FactorAnalysis(iterated_power=5), "iterated_power=5"),
        (FactorAnalysis(rotation="promax"), "rotation='promax'"),
        (KernelPCA(), "n_components=None"),
        (KernelPCA(2, kernel="precomputed"), "kernel='precomputed'"),
        (KernelPCA(2, eigen_solver="arpack"), "eigen_solver='arpack'"),
        (KernelPCA(2, remove_zero_eig=True), "remove_zero_eig=True"),
        (KernelPCA(2, kernel_params={"a": 1}), "kernel_params"),
        (KernelPCA(2, n_jobs=2), "n_jobs=2"),
        (KernelPCA(2, kernel="rbf", gamma=-1.0), "gamma -1"),
        (FastICA(whiten="arbitrary-variance"), "whiten='arbitrary-variance'"),
        (FastICA(whiten=False), "whiten=False"),
        (FastICA(algorithm="deflation"), "algorithm='deflation'"),
        (FastICA(fun=np.tanh), "fun="),
        (FastICA(fun_args={"alpha": 2.0}), "fun_args"),
        (FastICA(w_init=np.eye(3)), "w_init"),
    ],
)
def test_unsupported_parameters_are_refused_by_name(estimator, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace("[", r"\[")):
        estimator.fit(planted_factors())


@pytest.mark.parametrize(
    "estimator",
    [FactorAnalysis(2, rotation="varimax"), KernelPCA(2, kernel="rbf", fit_inverse_transform=True), FastICA(2, random_state=1)],
    ids=lambda e: type(e).__name__,
)
def test_clone_and_pickle_keep_the_model(estimator):
    X = planted_factors(200)
    fitted = clone(estimator).fit(X)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.transform(X[:9]), fitted.transform(X[:9]))
    assert clone(estimator).get_params() == estimator.get_params()
