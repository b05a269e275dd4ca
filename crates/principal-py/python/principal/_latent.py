"""principal.BayesianPCA and principal.MixturePPCA: latent-variable models beyond PCA, with
scikit-learn's conventions (fit / transform / score / score_samples / sample; predict and
predict_proba for the mixture), computed by principal's Rust engine.

As for PCA, the fitted state lives in numpy attributes and a private ``_state`` dict that the
native functions rebuild the model from on every call: ``clone``, ``pickle`` and ``joblib``
need nothing special.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from . import _native
from ._pca import _seed


def _float(X, *, allow_nan=False):
    X = check_array(X, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan" if allow_nan else True)
    return np.ascontiguousarray(X)


class BayesianPCA(TransformerMixin, BaseEstimator):
    """Bayesian PCA (Bishop 1999): probabilistic PCA with an ARD prior on each column of W,
    fitted by EM (MAP loadings, precisions α re-estimated by type-II maximum likelihood), which
    switches off the columns the data does not need.

    Parameters
    ----------
    n_components : int
        The most components (columns of W), at most n_features − 1. ``n_components_`` is how
        many ARD kept.
    missing : 'reject' or 'em'
        With 'em', NaN is a missing value (fitted on the observed entries).
    tol : float
        EM stops when no column of W, nor μ or σ², moves by more than this (relative).
    max_iter : int
        The most EM steps.

    Attributes
    ----------
    components_ : (n_components_, n_features) the kept columns of W as rows.
    alpha_ : (n_components,) each column's ARD precision, the kept first, ``inf`` when off.
    noise_variance_, mean_, n_components_, n_iter_, converged_, log_likelihood_ (the mean
    per-row log-likelihood of the training data), log_likelihood_history_.
    """

    def __init__(self, n_components=None, *, missing="reject", tol=1e-8, max_iter=10000):
        self.n_components = n_components
        self.missing = missing
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan" if self.missing == "em" else True)
        X = np.ascontiguousarray(X)
        k = self.n_components if self.n_components is not None else X.shape[1] - 1
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise ValueError(f"n_components={k!r} must be an integer")
        state = _native.bpca_fit(X, int(k), self.missing, float(self.tol), int(self.max_iter))
        self._state = state
        self.components_ = state["components"]
        self.alpha_ = state["alpha"]
        self.noise_variance_ = state["noise_variance"]
        self.mean_ = state["mean"]
        self.n_components_ = state["components"].shape[0]
        self.n_iter_ = state["iterations"]
        self.converged_ = state["converged"]
        self.log_likelihood_ = state["log_likelihood"]
        self.log_likelihood_history_ = state["log_likelihood_history"]
        return self

    def transform(self, X):
        """The posterior mean E[z | x] of every row (NaN entries are missing)."""
        check_is_fitted(self)
        return _native.bpca_transform(self._state, _float(X, allow_nan=True))

    def score_samples(self, X):
        """The log-likelihood of every row (of its observed entries)."""
        check_is_fitted(self)
        return _native.bpca_score_samples(self._state, _float(X, allow_nan=True))

    def score(self, X, y=None):
        """The mean log-likelihood of the rows."""
        return float(np.mean(self.score_samples(X)))

    def get_covariance(self):
        """W Wᵀ + σ² I."""
        check_is_fitted(self)
        w = self.components_
        return w.T @ w + self.noise_variance_ * np.eye(w.shape[1])

    def sample(self, n_samples=1, random_state=None):
        """``n_samples`` draws x = W z + μ + ε, seeded by ``random_state``."""
        check_is_fitted(self)
        return _native.bpca_sample(self._state, int(n_samples), _seed(random_state))


class MixturePPCA(ClusterMixin, BaseEstimator):
    """A mixture of probabilistic PCAs (Tipping & Bishop 1999) fitted by EM from k-means++
    starts, keeping the most likely of ``n_init`` seeded restarts.

    Parameters
    ----------
    n_clusters : int
        C, the clusters.
    n_components : int
        k, the components of each cluster (at most n_features − 1).
    n_init : int
        Seeded restarts; the one of highest likelihood is kept.
    random_state : int, RandomState, Generator or None
        The seed (None is 0: deterministic).
    tol : float
        EM stops when a step raises the mean log-likelihood per row by less than this.
    max_iter : int
        The most EM steps per restart.

    Attributes
    ----------
    weights_ (C,), means_ (C, D), components_ (C, k, D; orthonormal rows per cluster),
    explained_variance_ (C, k), noise_variance_ (C,), log_likelihood_ (mean per row),
    log_likelihood_history_ (every EM step of the kept restart), restart_log_likelihoods_,
    n_iter_, converged_, labels_ (the training rows' clusters).
    """

    def __init__(self, n_clusters=2, n_components=1, *, n_init=5, random_state=None, tol=1e-9, max_iter=1000):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.n_init = n_init
        self.random_state = random_state
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X, y=None):
        X = np.ascontiguousarray(validate_data(self, X, dtype=[np.float64, np.float32]))
        for name in ("n_clusters", "n_components", "n_init"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name}={v!r} must be a non-negative integer")
        state = _native.mixture_fit(
            X,
            int(self.n_clusters),
            int(self.n_components),
            int(self.n_init),
            _seed(self.random_state),
            float(self.tol),
            int(self.max_iter),
        )
        self._state = state
        self.weights_ = state["weights"]
        self.means_ = state["means"]
        self.components_ = state["components"]
        self.explained_variance_ = state["explained_variance"]
        self.noise_variance_ = state["noise_variance"]
        self.log_likelihood_ = state["log_likelihood"]
        self.log_likelihood_history_ = state["log_likelihood_history"]
        self.restart_log_likelihoods_ = state["restart_log_likelihoods"]
        self.n_iter_ = state["iterations"]
        self.converged_ = state["converged"]
        self.labels_ = self.predict(X)
        return self

    def predict_proba(self, X):
        """The responsibilities p(cluster | x), N×C."""
        check_is_fitted(self)
        return _native.mixture_predict_proba(self._state, _float(X))

    def predict(self, X):
        """Each row's most responsible cluster."""
        return np.argmax(self.predict_proba(X), axis=1)

    def score_samples(self, X):
        """log p(x) of every row under the mixture."""
        check_is_fitted(self)
        return _native.mixture_score_samples(self._state, _float(X))

    def score(self, X, y=None):
        """The mean log-likelihood of the rows."""
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1, random_state=None):
        """``n_samples`` draws from the mixture and the cluster of each, as scikit-learn's
        ``GaussianMixture.sample``."""
        check_is_fitted(self)
        X, labels = _native.mixture_sample(self._state, int(n_samples), _seed(random_state))
        return X, np.asarray(labels, dtype=np.intp)
