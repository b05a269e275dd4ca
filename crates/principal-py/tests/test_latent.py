"""principal.BayesianPCA and principal.MixturePPCA: scikit-learn conventions, ARD switching
off a planted rank's spare columns, the mixture recovering planted clusters, and the state
surviving pickling."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

from principal import BayesianPCA, MixturePPCA


def planted_rank(n=300, d=12, rank=3, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, rank)) * (3.0 / np.arange(1, rank + 1))
    return rng.normal(size=(n, rank)) @ w.T + noise * rng.normal(size=(n, d)) + 5.0


def planted_clusters(seed=0):
    rng = np.random.default_rng(seed)
    blocks, labels = [], []
    for c, size in enumerate([150, 100, 80]):
        mean = 8.0 * rng.normal(size=6)
        basis = np.linalg.qr(rng.normal(size=(6, 2)))[0]
        z = rng.normal(size=(size, 2)) * [4.0, 3.0]
        blocks.append(mean + z @ basis.T + 0.2 * rng.normal(size=(size, 6)))
        labels += [c] * size
    return np.vstack(blocks), np.array(labels)


def test_bayesian_pca_keeps_the_planted_rank():
    X = planted_rank()
    model = BayesianPCA(n_components=8).fit(X)
    assert model.n_components_ == 3
    assert model.components_.shape == (3, 12)
    assert np.all(np.isfinite(model.alpha_[:3])) and np.all(np.isinf(model.alpha_[3:]))
    Z = model.transform(X)
    assert Z.shape == (300, 3)
    scores = model.score_samples(X)
    assert scores.shape == (300,)
    assert model.score(X) == pytest.approx(model.log_likelihood_, rel=1e-9)
    # The density is the Gaussian of covariance W Wᵀ + σ² I.
    C = model.get_covariance()
    e = X - model.mean_
    _, logdet = np.linalg.slogdet(C)
    dense = -0.5 * (12 * np.log(2 * np.pi) + logdet + np.einsum("ij,ij->i", e, np.linalg.solve(C, e.T).T))
    np.testing.assert_allclose(scores, dense, rtol=1e-9)
    S = model.sample(5, random_state=3)
    np.testing.assert_array_equal(S, model.sample(5, random_state=3))


def test_bayesian_pca_fits_missing_values_and_pickles():
    X = planted_rank(seed=1)
    X[np.random.default_rng(2).random(X.shape) < 0.1] = np.nan
    with pytest.raises(ValueError):
        BayesianPCA(n_components=8).fit(X)
    model = BayesianPCA(n_components=8, missing="em").fit(X)
    assert model.n_components_ == 3
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.transform(X), model.transform(X))
    assert clone(model).get_params() == model.get_params()


def test_bayesian_pca_refuses_too_many_components():
    with pytest.raises(ValueError, match="at most n_features − 1"):
        BayesianPCA(n_components=12).fit(planted_rank())


def test_the_mixture_recovers_planted_clusters():
    X, truth = planted_clusters()
    model = MixturePPCA(n_clusters=3, n_components=2, random_state=1).fit(X)
    assert adjusted_rand_score(truth, model.labels_) > 0.99
    assert model.weights_ == pytest.approx([150 / 330, 100 / 330, 80 / 330], abs=0.01)
    assert model.components_.shape == (3, 2, 6)
    history = model.log_likelihood_history_
    assert np.all(np.diff(history) >= -1e-10 * np.abs(history[1:]))
    assert history[-1] == model.log_likelihood_
    P = model.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(X), P.argmax(axis=1))
    assert model.score(X) == pytest.approx(model.log_likelihood_, rel=1e-9)
    S, labels = model.sample(1000, random_state=0)
    assert S.shape == (1000, 6) and labels.shape == (1000,)
    assert np.mean(model.predict(S) == labels) > 0.99
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_proba(X), P)


def test_zero_clusters_is_an_error_naming_it():
    X, _ = planted_clusters()
    with pytest.raises(ValueError, match="clusters 0 is not allowed"):
        MixturePPCA(n_clusters=0).fit(X)
