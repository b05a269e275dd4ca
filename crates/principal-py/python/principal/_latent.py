"""principal.BayesianPCA, principal.MixturePPCA, principal.FactorAnalysis, principal.KernelPCA
and principal.FastICA: latent-variable models beyond PCA, with scikit-learn's conventions (fit /
transform / score / score_samples / sample; predict and predict_proba for the mixture;
scikit-learn's own parameter and attribute names for the three it has), computed by
principal's Rust engine.

As for PCA, the fitted state lives in numpy attributes and a private ``_state`` dict that the
native functions rebuild the model from on every call: ``clone``, ``pickle`` and ``joblib``
need nothing special.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import NotFittedError
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
        EM stops when no column of W, nor μ or σ², moves by more than this (relative). EM over
        the data runs only with missing values: for complete rows, EM's steps run in the
        covariance's eigenbasis (``n_iter_`` counts them) and its fixed point is then solved for
        directly (``log_likelihood_history_`` empty).
    max_iter : int
        The most EM steps (missing values).

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


def _refuse(estimator, supported):
    """A ValueError for every constructor parameter whose value principal does not implement:
    ``supported`` maps a parameter's name to the values allowed (a tuple), so that a setting
    is never ignored in silence."""
    for name, allowed in supported.items():
        value = getattr(estimator, name)
        if not any(value is a or (type(value) is type(a) and value == a) for a in allowed):
            shown = ", ".join(repr(a) for a in allowed)
            raise ValueError(
                f"{type(estimator).__name__}({name}={value!r}) is not supported by principal "
                f"(supported: {shown})"
            )


def _count(name, value, default):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer or None")
    return int(value)


class FactorAnalysis(TransformerMixin, BaseEstimator):
    """Factor analysis: ``x = Wᵀ z + μ + ε`` with a noise variance per feature, scikit-learn's
    ``FactorAnalysis`` (its EM with ``svd_method='lapack'``) computed by principal.

    Unlike scikit-learn, EM runs to its fixed point by default: ``tol`` is the estimated
    distance of the noise variances to EM's fixed point, relative to each feature's variance
    (scikit-learn's ``tol`` is a log-likelihood gain, and its default 1e-2 can stop 16 % short
    of the fixed point); pass a larger ``tol`` to stop earlier. Where a noise variance's
    maximum is at 0 (a Heywood case, such as Iris with one or two factors), EM would crawl
    towards it for hundreds of thousands of steps; such a variance is tried next to 0 (a
    tenth of ``tol`` times the feature's variance) and kept there if the likelihood is higher.

    Parameters
    ----------
    n_components : int or None
        K, the factors (None: n_features).
    tol : float in (0, 1)
        EM's stopping rule (see above).
    copy : bool
        Accepted for compatibility: principal never writes into X.
    max_iter : int
        The most EM steps.
    noise_variance_init : None
        Only None (every ψ starts at 1, as scikit-learn's default).
    svd_method : 'lapack'
        Only 'lapack' (principal's exact eigensolver; 'randomized' is not implemented).
    iterated_power : 3
        Only the default (it applies to 'randomized' alone).
    rotation : None, 'varimax' or 'quartimax'
        As scikit-learn's: raw, no Kaiser normalisation, run to convergence.
    random_state : any
        Accepted for compatibility: it seeds only scikit-learn's randomized SVD.

    Attributes
    ----------
    components_ (n_components, n_features), noise_variance_ (n_features,), mean_, loglike_
    (the total log-likelihood at each EM step, as scikit-learn's), n_iter_, converged_,
    log_likelihood_ (the mean per-row log-likelihood of the training data), n_features_in_.
    """

    def __init__(
        self,
        n_components=None,
        *,
        tol=1e-7,
        copy=True,
        max_iter=10000,
        noise_variance_init=None,
        svd_method="lapack",
        iterated_power=3,
        rotation=None,
        random_state=0,
    ):
        self.n_components = n_components
        self.tol = tol
        self.copy = copy
        self.max_iter = max_iter
        self.noise_variance_init = noise_variance_init
        self.svd_method = svd_method
        self.iterated_power = iterated_power
        self.rotation = rotation
        self.random_state = random_state

    def fit(self, X, y=None):
        _refuse(self, {"noise_variance_init": (None,), "svd_method": ("lapack",), "iterated_power": (3,)})
        if self.rotation not in (None, "varimax", "quartimax"):
            raise ValueError(f"rotation={self.rotation!r} must be None, 'varimax' or 'quartimax'")
        X = np.ascontiguousarray(validate_data(self, X, dtype=[np.float64, np.float32]))
        k = _count("n_components", self.n_components, X.shape[1])
        state = _native.fa_fit(X, k, self.rotation or "none", float(self.tol), int(self.max_iter))
        self._state = state
        self.components_ = state["components"]
        self.noise_variance_ = state["noise_variance"]
        self.mean_ = state["mean"]
        self.loglike_ = list(state["log_likelihood_history"])
        self.n_iter_ = len(self.loglike_)
        self.converged_ = state["converged"]
        self.log_likelihood_ = state["log_likelihood"]
        return self

    def transform(self, X):
        """The posterior means E[z | x] of the factors."""
        check_is_fitted(self)
        return _native.fa_transform(self._state, _float(X))

    def get_covariance(self):
        """The model covariance ``Wᵀ W + diag ψ``."""
        check_is_fitted(self)
        return _native.fa_covariance(self._state)

    def get_precision(self):
        """The inverse of the model covariance."""
        check_is_fitted(self)
        return _native.fa_precision(self._state)

    def score_samples(self, X):
        """The log-likelihood of every row."""
        check_is_fitted(self)
        return _native.fa_score_samples(self._state, _float(X))

    def score(self, X, y=None):
        """The mean log-likelihood of the rows."""
        return float(np.mean(self.score_samples(X)))


class KernelPCA(TransformerMixin, BaseEstimator):
    """Kernel PCA: scikit-learn's ``KernelPCA`` with its dense eigensolver, computed by
    principal (the N×N kernel matrix, centred in feature space, and its top eigenpairs).

    Parameters
    ----------
    n_components : int
        K ≤ n_samples. None (scikit-learn: every non-zero component) is not supported.
    kernel : 'linear', 'rbf', 'poly', 'sigmoid' or 'cosine'
        'precomputed' and callables are not supported.
    gamma : float > 0 or None
        γ of rbf, poly and sigmoid (None: 1/n_features).
    degree, coef0 : the degree of poly, c₀ of poly and sigmoid.
    kernel_params : None
        Only None.
    alpha : float ≥ 0
        The ridge of the learned pre-image map.
    fit_inverse_transform : bool
        Whether the pre-image map is learnt and ``inverse_transform`` available (as
        scikit-learn). Without it the fit skips the map's N×N solve.
    eigen_solver : 'auto' or 'dense'
        principal's dense symmetric eigensolver; 'arpack' and 'randomized' are not supported.
    tol, max_iter, iterated_power, remove_zero_eig, n_jobs : only their defaults (0, None,
        'auto', False, None).
    random_state : any
        Accepted for compatibility: the dense eigensolver draws nothing (as scikit-learn's).
    copy_X : bool
        Accepted for compatibility: the model always keeps a copy of the training rows.

    Attributes
    ----------
    eigenvalues_ (n_components,), eigenvectors_ (n_samples, n_components), X_fit_, gamma_,
    and with ``fit_inverse_transform=True`` dual_coef_ and X_transformed_fit_.
    """

    def __init__(
        self,
        n_components=None,
        *,
        kernel="linear",
        gamma=None,
        degree=3,
        coef0=1,
        kernel_params=None,
        alpha=1.0,
        fit_inverse_transform=False,
        eigen_solver="auto",
        tol=0,
        max_iter=None,
        iterated_power="auto",
        remove_zero_eig=False,
        random_state=None,
        copy_X=True,
        n_jobs=None,
    ):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.alpha = alpha
        self.fit_inverse_transform = fit_inverse_transform
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.iterated_power = iterated_power
        self.remove_zero_eig = remove_zero_eig
        self.random_state = random_state
        self.copy_X = copy_X
        self.n_jobs = n_jobs

    def fit(self, X, y=None):
        _refuse(
            self,
            {
                "kernel": ("linear", "rbf", "poly", "sigmoid", "cosine"),
                "kernel_params": (None,),
                "eigen_solver": ("auto", "dense"),
                "tol": (0, 0.0),
                "max_iter": (None,),
                "iterated_power": ("auto",),
                "remove_zero_eig": (False,),
                "n_jobs": (None,),
            },
        )
        if self.n_components is None:
            raise ValueError(
                "KernelPCA(n_components=None) is not supported by principal: give the number "
                "of components (at most n_samples)"
            )
        X = np.ascontiguousarray(validate_data(self, X, dtype=[np.float64, np.float32]))
        k = _count("n_components", self.n_components, None)
        gamma = None if self.gamma is None else float(self.gamma)
        pre_image = "learn" if self.fit_inverse_transform else "skip"
        state = _native.kpca_fit(
            X, k, self.kernel, gamma, float(self.degree), float(self.coef0), float(self.alpha), pre_image
        )
        self._state = state
        self.eigenvalues_ = state["eigenvalues"]
        self.eigenvectors_ = state["eigenvectors"]
        self.X_fit_ = state["training"]
        self.gamma_ = state["gamma"]
        if self.fit_inverse_transform:
            self.dual_coef_ = state["dual_coef"]
            self.X_transformed_fit_ = state["training_codes"]
        return self

    def fit_transform(self, X, y=None, **params):
        """The training rows' codes ``eigenvectors_ · √eigenvalues_``."""
        self.fit(X)
        return np.array(self._state["training_codes"])

    def transform(self, X):
        """The codes of rows through their kernel with the training rows."""
        check_is_fitted(self)
        return _native.kpca_transform(self._state, _float(X))

    def inverse_transform(self, X):
        """Rows from codes by the learned pre-image map (``fit_inverse_transform=True``)."""
        if not self.fit_inverse_transform:
            raise NotFittedError(
                "The fit_inverse_transform parameter was not set to True when instantiating "
                "and hence the inverse transform is not available."
            )
        check_is_fitted(self)
        return _native.kpca_inverse_transform(self._state, _float(X))


class FastICA(TransformerMixin, BaseEstimator):
    """FastICA: scikit-learn's ``FastICA`` (parallel algorithm, ``whiten='unit-variance'``),
    computed by principal: the data whitened by PCA, an orthogonal unmixing found by
    fixed-point steps with symmetric decorrelation, the sources scaled to unit variance.

    Parameters
    ----------
    n_components : int or None
        K sources (None: min(n_samples, n_features)).
    algorithm : 'parallel'
        Only 'parallel' ('deflation' is not implemented).
    whiten : 'unit-variance'
        Only 'unit-variance'.
    fun : 'logcosh', 'exp' or 'cube'
        The contrast (callables are not supported).
    fun_args : None, or {'alpha': 1.0} for logcosh
        Only logcosh's default α = 1.
    max_iter, tol : the fixed-point steps' bound and tolerance (scikit-learn's defaults).
    w_init : None
        Only None: principal's random start is seeded by ``random_state``.
    whiten_solver : 'svd' or 'eigh'
        Accepted: both whiten by the same principal components (principal's own solver).
    random_state : int, RandomState, Generator or None
        The seed of the start (None is 0: deterministic). The start is drawn by principal's
        generator, so a seed gives other sources than scikit-learn's, equal up to sign and order.

    Attributes
    ----------
    components_ (n_components, n_features) the unmixing, mixing_ (n_features, n_components),
    mean_, n_iter_, converged_, n_features_in_.
    """

    def __init__(
        self,
        n_components=None,
        *,
        algorithm="parallel",
        whiten="unit-variance",
        fun="logcosh",
        fun_args=None,
        max_iter=200,
        tol=1e-4,
        w_init=None,
        whiten_solver="svd",
        random_state=None,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.whiten = whiten
        self.fun = fun
        self.fun_args = fun_args
        self.max_iter = max_iter
        self.tol = tol
        self.w_init = w_init
        self.whiten_solver = whiten_solver
        self.random_state = random_state

    def fit(self, X, y=None):
        self._fit(X)
        return self

    def fit_transform(self, X, y=None):
        """The sources of the training rows."""
        return self._fit(X)

    def _fit(self, X):
        _refuse(
            self,
            {
                "algorithm": ("parallel",),
                "whiten": ("unit-variance",),
                "fun": ("logcosh", "exp", "cube"),
                "w_init": (None,),
                "whiten_solver": ("svd", "eigh"),
            },
        )
        if self.fun_args is not None and not (
            self.fun == "logcosh" and dict(self.fun_args) in ({}, {"alpha": 1}, {"alpha": 1.0})
        ):
            raise ValueError(
                f"FastICA(fun_args={self.fun_args!r}) is not supported by principal "
                "(supported: None, or {'alpha': 1.0} with fun='logcosh')"
            )
        X = np.ascontiguousarray(validate_data(self, X, dtype=[np.float64, np.float32]))
        k = _count("n_components", self.n_components, min(X.shape))
        state = _native.ica_fit(X, k, self.fun, float(self.tol), int(self.max_iter), _seed(self.random_state))
        self._state = state
        self.components_ = state["components"]
        self.mixing_ = state["mixing"]
        self.mean_ = state["mean"]
        self.n_iter_ = state["iterations"]
        self.converged_ = state["converged"]
        return _native.ica_transform(state, X)

    def transform(self, X, copy=True):
        """The sources ``(x − mean_) · components_ᵀ``."""
        check_is_fitted(self)
        return _native.ica_transform(self._state, _float(X))

    def inverse_transform(self, X, copy=True):
        """Rows from sources: ``mean_ + X · mixing_ᵀ``."""
        check_is_fitted(self)
        return _native.ica_inverse_transform(self._state, _float(X))
