"""principal.TruncatedSVD, a drop-in for ``sklearn.decomposition.TruncatedSVD``: the truncated
SVD of the raw (uncentred) data, by principal's engine fitted without centring (the command
line's ``fit --no-centre``), dense or scipy.sparse X, never densified."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from . import _native
from ._pca import _csr_arrays, _seed


class TruncatedSVD(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Dimensionality reduction by the truncated SVD of X, not centred: scikit-learn's
    ``TruncatedSVD`` (same parameters, attributes and methods, the same numbers), for dense
    arrays and scipy.sparse matrices (CSR, CSC; never densified).

    The attributes follow scikit-learn's definitions exactly: ``components_`` the top right
    singular vectors of X; ``singular_values_`` their singular values; ``explained_variance_``
    the variance (ddof 0) of each column of the transformed data ``X @ components_.T`` (not
    σ²/(n − 1)); ``explained_variance_ratio_`` that variance over the total variance of X's
    columns (ddof 0). Signs: each component's entry of largest absolute value is positive —
    principal's convention and scikit-learn's ``svd_flip(..., u_based_decision=False)``, which
    its TruncatedSVD applies.

    ``algorithm='arpack'`` is an exact fit (principal's auto solver: an exact decomposition for
    small data, else the randomized solver run to the tolerance ``tol``, 1e-10 when 0);
    ``'randomized'`` is principal's randomized subspace iteration with ``n_iter`` power
    iterations and ``n_oversamples`` extra vectors, seeded by ``random_state``.

    >>> import numpy as np
    >>> from principal import TruncatedSVD
    >>> X = np.random.default_rng(0).normal(size=(50, 6))
    >>> TruncatedSVD(n_components=2, algorithm="arpack").fit_transform(X).shape
    (50, 2)
    """

    def __init__(
        self,
        n_components=2,
        *,
        algorithm="randomized",
        n_iter=5,
        n_oversamples=10,
        power_iteration_normalizer="auto",
        random_state=None,
        tol=0.0,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.tol = tol

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _native_params(self, n_features: int) -> dict:
        k = self.n_components
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"n_components={k!r} must be an int at least 1")
        if self.algorithm not in ("arpack", "randomized"):
            raise ValueError(f"algorithm={self.algorithm!r} must be 'arpack' or 'randomized'")
        if self.algorithm == "arpack" and k >= n_features:
            raise ValueError(
                f"n_components={k} must be strictly less than n_features={n_features} with "
                "the arpack algorithm"
            )
        if k > n_features:
            raise ValueError(f"n_components={k} must be at most n_features={n_features}")
        if not (isinstance(self.n_iter, numbers.Integral) and self.n_iter >= 0):
            raise ValueError(f"n_iter={self.n_iter!r} must be an int at least 0")
        if not (isinstance(self.n_oversamples, numbers.Integral) and self.n_oversamples >= 1):
            raise ValueError(f"n_oversamples={self.n_oversamples!r} must be an int at least 1")
        if self.power_iteration_normalizer not in ("auto", "QR", "LU", "none"):
            raise ValueError(
                f"power_iteration_normalizer={self.power_iteration_normalizer!r} is not one of "
                "'auto', 'QR', 'LU', 'none'"
            )
        if not (isinstance(self.tol, numbers.Real) and self.tol >= 0):
            raise ValueError(f"tol={self.tol!r} must be a number at least 0")
        arpack = self.algorithm == "arpack"
        return {
            "components": int(k),
            "noise_sigma": None,
            "folds": 5,
            "standardize": False,
            "whiten": False,
            # scikit-learn's TruncatedSVD variances are the codes' and the columns' with ddof 0.
            "ddof": 0,
            "centre": "none",
            "solver": "auto" if arpack else "randomized",
            "seed": _seed(self.random_state),
            "tolerance": float(self.tol) if self.tol > 0 else (1e-10 if arpack else None),
            "power_iterations": None if arpack else int(self.n_iter),
            "oversampling": int(self.n_oversamples),
            "max_iterations": 1000,
            "randomized_method": "krylov" if arpack else "subspace",
            "power_method": "block",
            "missing": "reject",
            "precision": "full",
            "memory_limit": None,
        }

    def _validate(self, X, *, reset: bool):
        """X checked as scikit-learn checks it: a float32/float64 array (C or Fortran order
        kept), or a sparse matrix as its CSR arrays (n_cols, indptr int64, indices uint32,
        data), never densified. Returns (sparse, dtype, data)."""
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=["csr", "csc"],
            dtype=[np.float64, np.float32],
            ensure_min_samples=2 if reset else 1,
        )
        if sp.issparse(X):
            return True, X.dtype.type, _csr_arrays(X)
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
        return False, X.dtype.type, X

    def fit(self, X, y=None):
        """Fit the model on X (n_samples × n_features, dense or sparse). Returns self."""
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """Fit the model on X and return ``X @ components_.T`` (n_samples × n_components)."""
        sparse, dtype, data = self._validate(X, reset=True)
        params = self._native_params(self.n_features_in_)
        if sparse:
            state = _native.fit_sparse(*data, params)
        else:
            state = _native.fit(data, params)
        self._state = state
        self.components_ = state["components"].astype(dtype, copy=False)
        self.explained_variance_ = state["explained_variance"].astype(dtype, copy=False)
        self.explained_variance_ratio_ = state["explained_variance_ratio"].astype(
            dtype, copy=False
        )
        self.singular_values_ = state["singular_values"].astype(dtype, copy=False)
        return self._codes(sparse, dtype, data)

    def _codes(self, sparse, dtype, data):
        if sparse:
            codes = _native.transform_sparse(self._state, *data)
        else:
            codes = _native.transform(self._state, data)
        return codes.astype(dtype, copy=False)

    def transform(self, X):
        """``X @ components_.T``: X projected on the components (no centring)."""
        check_is_fitted(self)
        sparse, dtype, data = self._validate(X, reset=False)
        return self._codes(sparse, dtype, data)

    def inverse_transform(self, X):
        """``X @ components_``: codes back in the original space."""
        check_is_fitted(self)
        X = check_array(X, input_name="X", dtype=[np.float64, np.float32])
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
        # The model's mean is zero: its reconstruction is Z V.
        return _native.inverse_transform(self._state, X).astype(X.dtype, copy=False)

    @property
    def _n_features_out(self):
        """Number of transformed output features (get_feature_names_out's count)."""
        return self.components_.shape[0]
