"""principal.PCA, scikit-learn's estimator over principal's engine, and the package's functions.

The fitted model lives in numpy attributes (scikit-learn's, plus a private ``_state`` dict of
float64 arrays and numbers that the native functions rebuild the model from on every call), so
that ``clone``, ``pickle`` and ``joblib`` work as for any scikit-learn estimator.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from . import _native

# scikit-learn's svd_solver names and the principal solver each is computed by. 'arpack'
# (Lanczos to a tolerance) becomes principal's power iteration to the same tolerance.
SKLEARN_SOLVERS = {
    "auto": "auto",
    "full": "svd",
    "covariance_eigh": "covariance",
    "randomized": "randomized",
    "arpack": "power",
}
# principal's own solvers (the `solver` parameter, which overrides `svd_solver`).
SOLVERS = ("auto", "covariance", "gram", "svd", "randomized", "power", "em")
COUNT_RULES = ("mle", "gavish-donoho", "cv")


class Posterior(NamedTuple):
    """The posterior of the latent point of each row (``transform(X, posterior=True)``)."""

    mean: np.ndarray
    """N×M: E[z | x] = M⁻¹ Wᵀ (x − μ) for every row."""
    covariance: np.ndarray
    """M×M: Cov[z | x] = σ² M⁻¹, shared by every complete row."""


def _csr_arrays(X):
    """The arrays of a checked scipy.sparse X's CSR form, as the native fit reads them:
    (n_cols, indptr as int64, indices as uint32, data), never densified. CSC (and any other
    format) is turned into CSR by scipy, a copy of the sparse arrays."""
    X = X.tocsr()
    if X.shape[1] >= 2**32:
        raise ValueError(f"{X.shape[1]} features: more than 2**32 - 1 are not read")
    indices = X.indices
    # int32 indices are read in place as uint32 (they are non-negative in a valid matrix).
    indices = indices.view(np.uint32) if indices.dtype == np.int32 else indices.astype(np.uint32)
    return X.shape[1], X.indptr.astype(np.int64, copy=False), indices, X.data


def _seed(random_state) -> int:
    """A seed from scikit-learn's random_state: None is seed 0 (principal is deterministic),
    an int is itself, a RandomState or Generator gives one draw."""
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral):
        if random_state < 0:
            raise ValueError(f"random_state={random_state} must be a non-negative integer")
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63 - 1))
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


class PCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Principal component analysis: scikit-learn's ``PCA``, computed by principal.

    Parameters as scikit-learn's (same names, meanings and defaults):

    n_components : int, float in (0, 1), 'mle', None, or principal's 'gavish-donoho' / 'cv'
        Components to keep; a float keeps the fewest explaining that fraction of the variance;
        'mle' is Minka's evidence; None keeps min(n_samples, n_features). 'gavish-donoho' is
        Gavish & Donoho's optimal hard threshold (``noise_sigma`` if the noise level is known)
        and 'cv' the largest held-out probabilistic-PCA likelihood over ``folds`` folds.
    copy : bool
        Accepted for compatibility: principal never writes into X.
    whiten : bool
        Divide the codes by the square root of the explained variance (unit variance).
    svd_solver : 'auto', 'full', 'covariance_eigh', 'randomized', 'arpack'
        Mapped to principal's solvers auto, svd, covariance, randomized (subspace iteration,
        as scikit-learn) and power (iterated to ``tol``).
    tol : float >= 0
        Tolerance of the iterative solvers (0: their default stopping rule).
    iterated_power : int or 'auto'
        Power iterations of the randomized solver.
    n_oversamples : int
        Extra random vectors of the randomized solver.
    power_iteration_normalizer : 'auto', 'QR', 'LU', 'none'
        Accepted for compatibility: principal orthonormalizes every pass (QR).
    random_state : int, RandomState or None
        Seed of the randomized solvers; None means seed 0 (principal is deterministic).

    principal's own parameters:

    solver : None or one of 'auto', 'covariance', 'gram', 'svd', 'randomized', 'power', 'em'
        principal's solver, overriding ``svd_solver`` when given.
    standardize : bool
        Divide each centred feature by its standard deviation (PCA of the correlation matrix).
    ddof : 0 or 1
        Variances divide by n_samples - ddof (scikit-learn: 1).
    missing : None or 'em'
        None rejects NaN as scikit-learn does; 'em' fits probabilistic PCA by EM on the observed
        values (needs an int n_components) and lets transform, score_samples and impute take
        rows with NaN.
    noise_sigma : float or None
        With n_components='gavish-donoho': the noise's standard deviation per entry, if known.
    folds : int
        With n_components='cv': the number of folds.
    max_iterations : int
        Upper bound on the passes of the iterative solvers.
    randomized_method : None, 'krylov' or 'subspace'
        The randomized solver's iteration (None: 'subspace' for svd_solver='randomized', as
        scikit-learn, else principal's default 'krylov').
    precision : 'full' or 'mixed'
        f32 products of the covariance solver for float32 input ('mixed': about twice as fast,
        eigenvalues within 1.6e-5 of the total variance).

    Attributes are scikit-learn's (``components_``, ``explained_variance_``,
    ``explained_variance_ratio_``, ``singular_values_``, ``mean_``, ``noise_variance_``,
    ``n_components_``, ``n_samples_``, ``n_features_in_``, ``feature_names_in_``), in the
    dtype of the training data, plus ``scale_`` (the standard deviations when standardizing,
    else None), ``solver_`` (the principal solver that fitted), ``total_variance_``,
    ``zero_variance_features_``, ``iteration_report_`` (passes, error estimate and convergence
    of an iterative solver, else None), ``missing_values_report_`` (a fit with missing values),
    ``component_choice_`` (how a rule chose n_components) and ``eigen_route_`` (how the
    covariance or gram solver's eigenproblem was solved: certified Krylov–Schur, or the dense
    route and why; None for the other solvers and for a loaded model).
    """

    def __init__(
        self,
        n_components=None,
        *,
        copy=True,
        whiten=False,
        svd_solver="auto",
        tol=0.0,
        iterated_power="auto",
        n_oversamples=10,
        power_iteration_normalizer="auto",
        random_state=None,
        solver=None,
        standardize=False,
        ddof=1,
        missing=None,
        noise_sigma=None,
        folds=5,
        max_iterations=1000,
        randomized_method=None,
        precision="full",
    ):
        self.n_components = n_components
        self.copy = copy
        self.whiten = whiten
        self.svd_solver = svd_solver
        self.tol = tol
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.solver = solver
        self.standardize = standardize
        self.ddof = ddof
        self.missing = missing
        self.noise_sigma = noise_sigma
        self.folds = folds
        self.max_iterations = max_iterations
        self.randomized_method = randomized_method
        self.precision = precision

    # ----------------------------------------------------------------------------- parameters

    def _native_params(self, memory_limit=None) -> dict:
        """The parameters, checked, as the native fit reads them."""
        k = self.n_components
        if isinstance(k, str):
            if k not in COUNT_RULES:
                raise ValueError(
                    f"n_components={k!r} is not an int, a float in (0, 1), None or one of "
                    f"{', '.join(map(repr, COUNT_RULES))}"
                )
        elif isinstance(k, (bool, np.bool_)):
            raise ValueError(f"n_components={k!r} must be an int, a float, a string or None")
        elif isinstance(k, numbers.Integral):
            k = int(k)
            if k < 1:
                raise ValueError(f"n_components={k} must be at least 1")
        elif isinstance(k, numbers.Real):
            k = float(k)
            if not 0.0 < k < 1.0:
                raise ValueError(f"n_components={k} must be a float strictly between 0 and 1")
        elif k is not None:
            raise ValueError(f"n_components={k!r} must be an int, a float, a string or None")

        if self.solver is not None:
            if self.solver not in SOLVERS:
                raise ValueError(
                    f"solver={self.solver!r} is not one of {', '.join(map(repr, SOLVERS))}"
                )
            solver = self.solver
        else:
            if self.svd_solver not in SKLEARN_SOLVERS:
                raise ValueError(
                    f"svd_solver={self.svd_solver!r} is not one of "
                    f"{', '.join(map(repr, SKLEARN_SOLVERS))}"
                )
            solver = SKLEARN_SOLVERS[self.svd_solver]
        if self.missing not in (None, "em"):
            raise ValueError(f"missing={self.missing!r} must be None or 'em'")
        if self.missing == "em" and solver in ("auto",) and self.solver is None:
            solver = "auto"
        if not (isinstance(self.tol, numbers.Real) and self.tol >= 0):
            raise ValueError(f"tol={self.tol!r} must be a number at least 0")
        if self.iterated_power == "auto":
            power_iterations = None
        elif isinstance(self.iterated_power, numbers.Integral) and self.iterated_power >= 0:
            power_iterations = int(self.iterated_power)
        else:
            raise ValueError(
                f"iterated_power={self.iterated_power!r} must be 'auto' or an int at least 0"
            )
        if not (isinstance(self.n_oversamples, numbers.Integral) and self.n_oversamples >= 1):
            raise ValueError(f"n_oversamples={self.n_oversamples!r} must be an int at least 1")
        if self.power_iteration_normalizer not in ("auto", "QR", "LU", "none"):
            raise ValueError(
                f"power_iteration_normalizer={self.power_iteration_normalizer!r} is not one of "
                "'auto', 'QR', 'LU', 'none'"
            )
        if self.ddof not in (0, 1) or isinstance(self.ddof, bool):
            raise ValueError(f"ddof={self.ddof!r} must be 0 or 1")
        if not (isinstance(self.max_iterations, numbers.Integral) and self.max_iterations >= 1):
            raise ValueError(f"max_iterations={self.max_iterations!r} must be an int at least 1")
        if not (isinstance(self.folds, numbers.Integral) and self.folds >= 2):
            raise ValueError(f"folds={self.folds!r} must be an int at least 2")
        if self.noise_sigma is not None and not (
            isinstance(self.noise_sigma, numbers.Real) and self.noise_sigma > 0
        ):
            raise ValueError(f"noise_sigma={self.noise_sigma!r} must be a positive number")
        randomized_method = self.randomized_method
        if randomized_method is None:
            sklearn_randomized = self.solver is None and self.svd_solver == "randomized"
            randomized_method = "subspace" if sklearn_randomized else "krylov"
        if randomized_method not in ("krylov", "subspace"):
            raise ValueError(
                f"randomized_method={randomized_method!r} must be None, 'krylov' or 'subspace'"
            )
        if self.precision not in ("full", "mixed"):
            raise ValueError(f"precision={self.precision!r} must be 'full' or 'mixed'")
        return {
            "components": k,
            "noise_sigma": None if self.noise_sigma is None else float(self.noise_sigma),
            "folds": int(self.folds),
            "standardize": bool(self.standardize),
            "whiten": bool(self.whiten),
            "ddof": int(self.ddof),
            "solver": solver,
            "seed": _seed(self.random_state),
            "tolerance": float(self.tol) if self.tol > 0 else None,
            "power_iterations": power_iterations,
            "oversampling": int(self.n_oversamples),
            "max_iterations": int(self.max_iterations),
            "randomized_method": randomized_method,
            "power_method": "block",
            "missing": "em" if self.missing == "em" else "reject",
            "precision": self.precision,
            "memory_limit": memory_limit,
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.allow_nan = self.missing == "em"
        # scipy.sparse X is fitted by the sparse core (never densified).
        tags.input_tags.sparse = True
        return tags

    # --------------------------------------------------------------------------------- arrays

    def _validate(self, X, *, reset: bool, allow_nan: bool = False) -> np.ndarray:
        """X as a 2-D float32 or float64 array, as scikit-learn checks it (NaN allowed only
        with missing='em'); C or Fortran order is kept, any other layout copied."""
        nan = allow_nan and self.missing == "em"
        X = validate_data(
            self,
            X,
            reset=reset,
            dtype=[np.float64, np.float32],
            ensure_all_finite="allow-nan" if nan else True,
            ensure_min_samples=2 if reset else 1,
        )
        if nan and np.isinf(X).any():
            raise ValueError("Input X contains infinity or a value too large for dtype('float64').")
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
        return X

    def _validate_sparse(self, X, *, reset: bool):
        """A scipy.sparse X checked as scikit-learn checks it (finite; float32 kept, other
        dtypes as float64: the values array only is converted), as the arrays of its CSR form
        (n_cols, indptr as int64, indices as uint32, data): never densified. CSC (and any other
        format) is turned into CSR by scipy, a copy of the sparse arrays."""
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=["csr", "csc"],
            dtype=[np.float64, np.float32],
            ensure_min_samples=2 if reset else 1,
        )
        return X.dtype.type, _csr_arrays(X)

    def _set_state(self, state: dict, dtype, n_features: int) -> None:
        """Sets the fitted attributes from a native state (in `dtype`, as scikit-learn)."""
        self._state = state
        self.components_ = state["components"].astype(dtype, copy=False)
        self.explained_variance_ = state["explained_variance"].astype(dtype, copy=False)
        self.explained_variance_ratio_ = state["explained_variance_ratio"].astype(
            dtype, copy=False
        )
        self.singular_values_ = state["singular_values"].astype(dtype, copy=False)
        self.mean_ = state["mean"].astype(dtype, copy=False)
        self.noise_variance_ = dtype(state["noise_variance"]) if dtype is not float else float(
            state["noise_variance"]
        )
        self.n_components_ = int(state["components"].shape[0])
        self.n_samples_ = int(state["n_samples"])
        self.scale_ = None if state["scale"] is None else state["scale"].astype(dtype, copy=False)
        self.solver_ = state["solver"]
        self.total_variance_ = float(state["total_variance"])
        self.zero_variance_features_ = np.asarray(state["zero_variance_features"], dtype=np.intp)
        self.iteration_report_ = state["iteration_report"]
        self.missing_values_report_ = state["missing_values"]
        self.component_choice_ = state["component_choice"]
        self.eigen_route_ = state.get("eigen_route")
        # "eigenvectors", or "rotated" by align(..., rotate=True).
        self.basis_ = state.get("basis", "eigenvectors")

    @property
    def _n_features_out(self):
        """Number of transformed output features (get_feature_names_out's count)."""
        return self.components_.shape[0]

    # ------------------------------------------------------------------------------- fitting

    def fit(self, X, y=None, *, row_weights=None):
        """Fit the model with X (n_samples × n_features). Returns self.

        ``row_weights`` (one non-negative number per row, FactoMineR's ``row.w``) weights the
        mean and covariance, normalised to sum to 1 (equal weights give the unweighted fit); an
        exact fit (solver 'auto', 'svd', 'gram' or 'covariance'), without missing values.
        """
        params = self._native_params()
        if sp.issparse(X):
            # The sparse core: centred implicitly inside every product, never densified.
            if row_weights is not None:
                raise ValueError("row_weights are not supported with a sparse X")
            dtype, csr = self._validate_sparse(X, reset=True)
            state = _native.fit_sparse(*csr, params)
            self._set_state(state, dtype, csr[0])
            return self
        if row_weights is None:
            X = self._validate(X, reset=True, allow_nan=True)
            state = _native.fit(X, params)
        else:
            X = self._validate(X, reset=True)
            weights = np.asarray(row_weights, dtype=np.float64).ravel()
            state = _native.fit_weighted(np.ascontiguousarray(X, dtype=np.float64), weights.tolist(), params)
        self._set_state(state, X.dtype.type, X.shape[1])
        return self

    def describe(self, X, *, supplementary_rows=None, quantitative=None, qualitative=None,
                 row_names=None, row_weights=None, feature_names=None, axes=5) -> dict:
        """FactoMineR's ``PCA()`` and ``dimdesc()`` tables of this model on its active rows X,
        as ``principal describe --json`` gives them: a dict with the keys ``eig``, ``var``,
        ``ind``, ``ind_sup``, ``quanti_sup``, ``quali_sup`` (None when not given) and
        ``dimdesc``; each table a dict of ``names`` and numpy arrays (rows in the order of
        ``names``, one column per axis), ``eta2`` as ``{"names", "values"}``.

        ``supplementary_rows``: rows projected, not fitted (the model's features);
        ``quantitative``: a dict name → one value per row of X; ``qualitative``: a dict name →
        one label per row (categories are named ``name=label``); ``row_names``: names of the
        rows of X (then of ``supplementary_rows`` as ``(active, supplementary)``), else numbers
        from 1; ``row_weights``: the weights the model was fitted with; ``feature_names``: the
        variables' names (default: ``feature_names_in_``, else x1, x2, …); ``axes``: how many.
        """
        check_is_fitted(self)
        X = np.ascontiguousarray(self._validate(X, reset=False), dtype=np.float64)
        sup = None
        if supplementary_rows is not None:
            sup = np.ascontiguousarray(self._validate(supplementary_rows, reset=False), dtype=np.float64)
        quantitative = dict(quantitative or {})
        qualitative = dict(qualitative or {})
        quanti = None
        if quantitative:
            quanti = np.column_stack(
                [np.asarray(v, dtype=np.float64).ravel() for v in quantitative.values()]
            )
        quali = [[str(v) for v in values] for values in qualitative.values()]
        weights = None if row_weights is None else np.asarray(row_weights, dtype=np.float64).ravel().tolist()
        raw = _native.describe(self._state, X, weights, sup, quanti, quali, int(axes))
        if feature_names is None:
            feature_names = getattr(self, "feature_names_in_", None)
        if feature_names is None:
            feature_names = [f"x{j + 1}" for j in range(X.shape[1])]
        feature_names = [str(n) for n in feature_names]
        if row_names is None:
            active_names = [str(i + 1) for i in range(X.shape[0])]
            sup_names = [] if sup is None else [str(i + 1) for i in range(sup.shape[0])]
        elif sup is not None:
            active_names, sup_names = ([str(n) for n in part] for part in row_names)
        else:
            active_names, sup_names = [str(n) for n in row_names], []
        quanti_names = list(quantitative)
        quali_names = list(qualitative)
        out = {
            "eig": {"names": [f"comp {m + 1}" for m in range(len(raw["eig"]["eigenvalue"]))], **raw["eig"]},
            "var": {"names": feature_names, **raw["var"]},
            "ind": {"names": active_names, **raw["ind"]},
            "ind_sup": None if raw["ind_sup"] is None else {"names": sup_names, **raw["ind_sup"]},
            "quanti_sup": None if raw["quanti_sup"] is None else {"names": quanti_names, **raw["quanti_sup"]},
            "quali_sup": None,
        }
        categories = []
        if raw["quali_sup"] is not None:
            q = dict(raw["quali_sup"])
            categories = [f"{quali_names[c]}={level}" for c, level in q.pop("categories")]
            eta2 = q.pop("eta2")
            out["quali_sup"] = {"names": categories, **q, "eta2": {"names": quali_names, "values": eta2}}
        dimdesc = []
        for axis in raw["dimdesc"]:
            entry = {}
            if axis["quanti"]:
                entry["quanti"] = {
                    "names": [feature_names[i] if kind == "active" else quanti_names[i] for kind, i, _, _ in axis["quanti"]],
                    "correlation": np.array([c for _, _, c, _ in axis["quanti"]]),
                    "p_value": np.array([p for _, _, _, p in axis["quanti"]]),
                }
            if axis["quali"]:
                entry["quali"] = {
                    "names": [quali_names[c] for c, _, _ in axis["quali"]],
                    "r2": np.array([r for _, r, _ in axis["quali"]]),
                    "p_value": np.array([p for _, _, p in axis["quali"]]),
                }
            if axis["category"]:
                entry["category"] = {
                    "names": [categories[c] for c, _, _ in axis["category"]],
                    "estimate": np.array([e for _, e, _ in axis["category"]]),
                    "p_value": np.array([p for _, _, p in axis["category"]]),
                }
            dimdesc.append(entry)
        out["dimdesc"] = dimdesc
        return out

    def fit_transform(self, X, y=None):
        """Fit the model with X and return its codes (n_samples × n_components)."""
        if sp.issparse(X):
            return self.fit(X).transform(X)
        params = self._native_params()
        X = self._validate(X, reset=True, allow_nan=True)
        state = _native.fit(X, params)
        self._set_state(state, X.dtype.type, X.shape[1])
        return self._codes(X)

    def _codes(self, X):
        if self.missing == "em" and np.isnan(X).any():
            codes = _native.transform_observed(self._state, X)
        else:
            codes = _native.transform(self._state, X)
        return codes.astype(X.dtype, copy=False)

    # ---------------------------------------------------------------------------- transforms

    def transform(self, X, *, posterior=False):
        """The codes of X: (X − mean_) projected on ``components_`` (divided by
        √explained_variance_ when whitening). With ``posterior=True``, the posterior of each
        row's latent point under probabilistic PCA instead, as a :class:`Posterior` (mean,
        covariance). With missing='em', rows with NaN are completed by their conditional means."""
        check_is_fitted(self)
        if sp.issparse(X):
            if posterior:
                raise ValueError("posterior=True is not supported with a sparse X")
            dtype, csr = self._validate_sparse(X, reset=False)
            return _native.transform_sparse(self._state, *csr).astype(dtype, copy=False)
        X = self._validate(X, reset=False, allow_nan=True)
        if posterior:
            mean, covariance = _native.posterior(self._state, X)
            return Posterior(mean.astype(X.dtype, copy=False), covariance.astype(X.dtype, copy=False))
        return self._codes(X)

    def inverse_transform(self, X):
        """Data back in the original space from codes X (n_samples × n_components), undoing
        whitening."""
        check_is_fitted(self)
        X = check_array(X, input_name="X", dtype=[np.float64, np.float32])
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
        return _native.inverse_transform(self._state, X).astype(X.dtype, copy=False)

    # ------------------------------------------------------------------------- probabilistic

    def _sklearn_whitened_precision(self) -> np.ndarray:
        """scikit-learn's precision of a whitening model: its formula scales the components by
        √explained_variance_ (so it is not the inverse of the data's model covariance); kept
        so that the numbers are scikit-learn's."""
        components = self._state["components"] * np.sqrt(self._state["explained_variance"])[:, None]
        ev = self._state["explained_variance"]
        noise = self._state["noise_variance"]
        if noise == 0.0:
            return np.linalg.inv(self.get_covariance().astype(np.float64))
        diff = np.where(ev > noise, ev - noise, 0.0)
        precision = components @ components.T / noise
        precision[np.diag_indices_from(precision)] += 1.0 / diff
        precision = components.T @ np.linalg.inv(precision) @ components
        precision /= -(noise**2)
        precision[np.diag_indices_from(precision)] += 1.0 / noise
        return precision

    def get_covariance(self):
        """The data's covariance under the generative model,
        components_ᵀ diag(explained_variance_ − noise_variance_) components_ + noise_variance_ I
        (in the data's units when standardizing)."""
        check_is_fitted(self)
        dtype = self.components_.dtype
        if self.whiten:
            # scikit-learn's formula for a whitening model (components scaled by √λ).
            ev = self._state["explained_variance"]
            noise = self._state["noise_variance"]
            components = self._state["components"] * np.sqrt(ev)[:, None]
            diff = np.where(ev > noise, ev - noise, 0.0)
            cov = (components.T * diff) @ components
            cov[np.diag_indices_from(cov)] += noise
            return cov.astype(dtype, copy=False)
        return _native.covariance(self._state).astype(dtype, copy=False)

    def get_precision(self):
        """The inverse of :meth:`get_covariance`, by the matrix inversion lemma."""
        check_is_fitted(self)
        dtype = self.components_.dtype
        if self.whiten:
            return self._sklearn_whitened_precision().astype(dtype, copy=False)
        return _native.precision(self._state).astype(dtype, copy=False)

    def score_samples(self, X):
        """The log-likelihood of each sample under probabilistic PCA (with missing='em', of
        each row's observed values)."""
        check_is_fitted(self)
        X = self._validate(X, reset=False, allow_nan=True)
        if self.whiten:
            # scikit-learn's likelihood of a whitening model, from its precision.
            precision = self._sklearn_whitened_precision()
            Xr = X.astype(np.float64) - self._state["mean"]
            n_features = X.shape[1]
            log_like = -0.5 * (Xr * (Xr @ precision)).sum(axis=1)
            sign, logdet = np.linalg.slogdet(precision)
            log_like -= 0.5 * (n_features * np.log(2.0 * np.pi) - (logdet if sign > 0 else -np.inf))
            return log_like.astype(X.dtype, copy=False)
        if self.missing == "em" and np.isnan(X).any():
            scores = _native.score_samples_observed(self._state, X)
        else:
            scores = _native.score_samples(self._state, X)
        return scores.astype(X.dtype, copy=False)

    def score(self, X, y=None):
        """The average log-likelihood of the samples."""
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1, random_state=None):
        """``n_samples`` new samples drawn from the probabilistic model (seeded)."""
        check_is_fitted(self)
        if not (isinstance(n_samples, numbers.Integral) and n_samples >= 0):
            raise ValueError(f"n_samples={n_samples!r} must be an int at least 0")
        X = _native.sample(self._state, int(n_samples), _seed(random_state))
        return X.astype(self.components_.dtype, copy=False)

    def impute(self, X):
        """X with each missing value (NaN) replaced by its conditional mean given the row's
        observed values under the probabilistic model."""
        check_is_fitted(self)
        X = validate_data(
            self, X, reset=False, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan"
        )
        if np.isinf(X).any():
            raise ValueError("Input X contains infinity or a value too large for dtype('float64').")
        if not (X.flags.c_contiguous or X.flags.f_contiguous):
            X = np.ascontiguousarray(X)
        return _native.impute(self._state, X).astype(X.dtype, copy=False)

    # ---------------------------------------------------------------------------- model files

    def save(self, path) -> None:
        """Write the model file (safetensors) that ``principal transform``, ``inverse``,
        ``score``, ``report``… read; the feature names go with it when fitted with them."""
        check_is_fitted(self)
        names = getattr(self, "feature_names_in_", None)
        _native.save(self._state, os.fspath(path), None if names is None else [str(n) for n in names])

    @classmethod
    def load(cls, path) -> "PCA":
        """A fitted PCA from a model file written by ``principal fit`` or :meth:`save`; its
        parameters say what the file records (n_components, whiten, standardize, ddof, solver)."""
        state, names = _native.load(os.fspath(path))
        return cls._from_state(state, names)

    @classmethod
    def _from_state(cls, state, names, **params) -> "PCA":
        model = cls(
            n_components=int(state["components"].shape[0]),
            whiten=state["whitening"] == "unit-variance",
            solver=state["solver"],
            standardize=state["scale"] is not None,
            ddof=int(state["ddof"]),
            missing="em" if state["missing_values"] is not None else None,
        )
        model.set_params(**params)
        model._set_state(state, np.float64, state["components"].shape[1])
        model.n_features_in_ = int(state["components"].shape[1])
        if names is not None:
            model.feature_names_in_ = np.asarray(names, dtype=object)
        return model


# --------------------------------------------------------------------------------- functions


@dataclass
class Criterion:
    """One criterion's choice of the number of components and the curve it came from."""

    criterion: str
    n_components: int
    value: float
    description: str
    statistic: np.ndarray
    """The criterion's statistic at M = 1, 2, … (NaN where it is not defined)."""
    threshold: np.ndarray
    """What the statistic is compared with at each M (NaN where there is nothing)."""


@dataclass
class Choices:
    """Every criterion's answer (``principal choose``): ``choices['mle'].n_components``."""

    n_samples: int
    n_features: int
    max_components: int
    eigenvalues: np.ndarray
    explained_variance_ratio: np.ndarray
    criteria: list = field(default_factory=list)
    unavailable: list = field(default_factory=list)
    """(criterion, reason) of the criteria the data cannot support."""

    def __getitem__(self, name: str) -> Criterion:
        for c in self.criteria:
            if c.criterion == name:
                return c
        raise KeyError(f"no criterion {name!r}; the criteria are {[c.criterion for c in self.criteria]}")

    def as_dict(self) -> dict:
        """{criterion: n_components}."""
        return {c.criterion: c.n_components for c in self.criteria}


def choose(
    X,
    *,
    max_components=None,
    standardize=False,
    ddof=1,
    permutations=100,
    percentile=95.0,
    folds=5,
    random_state=None,
    noise_sigma=None,
) -> Choices:
    """Every criterion's choice of the number of components of X and its curve: variance
    fractions, Kaiser, broken stick, parallel analysis, mle, Gavish–Donoho, cross-validation
    (one exact fit, then what each criterion needs)."""
    estimator = PCA(standardize=standardize, ddof=ddof, solver="auto")
    params = estimator._native_params()
    X = estimator._validate(X, reset=True)
    options = {
        "max_components": max_components,
        "permutations": int(permutations),
        "percentile": float(percentile),
        "folds": int(folds),
        "seed": _seed(random_state),
        "noise_sigma": noise_sigma,
    }
    table = _native.choose(X, params, options)
    return Choices(
        n_samples=table["n_samples"],
        n_features=table["n_features"],
        max_components=table["max_components"],
        eigenvalues=table["eigenvalues"],
        explained_variance_ratio=table["explained_variance_ratio"],
        criteria=[
            Criterion(
                criterion=c["criterion"],
                n_components=c["n_components"],
                value=c["value"],
                description=c["description"],
                statistic=c["statistic"],
                threshold=c["threshold"],
            )
            for c in table["criteria"]
        ],
        unavailable=[(u["criterion"], u["reason"]) for u in table["unavailable"]],
    )


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes(limit) -> int:
    """An int of bytes, or a string such as '512M' or '2G'."""
    if isinstance(limit, numbers.Integral) and limit > 0:
        return int(limit)
    if isinstance(limit, str):
        text = limit.strip().lower().rstrip("b").rstrip("i")
        unit = text[-1:] if text[-1:] in _UNITS else ""
        number = text[: len(text) - len(unit)]
        try:
            value = float(number)
        except ValueError:
            value = -1
        if value > 0:
            return int(value * _UNITS[unit])
    raise ValueError(f"memory_limit={limit!r} is not a positive number of bytes such as 2G")


def fit_files(paths, n_components=None, *, memory_limit="1G", **params) -> PCA:
    """A fitted :class:`PCA` of the rows of data files (CSV/TSV, NPY, IDX, Parquet, Arrow IPC,
    a directory or a glob pattern), read chunk by chunk within ``memory_limit`` (bytes, or a
    string such as '2G'): the covariance, randomized, power and em solvers never hold the data
    in memory. ``params`` are :class:`PCA`'s."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    estimator = PCA(n_components=n_components, **params)
    native = estimator._native_params(memory_limit=_bytes(memory_limit))
    state, names = _native.fit_files([os.fspath(p) for p in paths], native)
    estimator._set_state(state, np.float64, state["components"].shape[1])
    estimator.n_features_in_ = int(state["components"].shape[1])
    if names is not None:
        estimator.feature_names_in_ = np.asarray(names, dtype=object)
    return estimator


def report(model: PCA, X=None, *, labels=None, image_shape=None, output, title=None) -> str:
    """Write the HTML report of a fitted model (``principal report``) into the directory
    ``output`` (all or nothing; an earlier report there is replaced): the scree plot and
    spectrum, and with X the projection, pairs and reconstruction-error figures (coloured by
    ``labels``, one per row), and with ``image_shape=(height, width)`` the components,
    reconstructions and generated images. Returns the path of index.html."""
    check_is_fitted(model)
    if X is not None:
        X = model._validate(X, reset=False)
        if labels is not None:
            labels = [str(v) for v in np.asarray(labels).ravel()]
            if len(labels) != X.shape[0]:
                raise ValueError(
                    f"labels has {len(labels)} entries but X has {X.shape[0]} rows: one label "
                    "per row is needed"
                )
    elif labels is not None:
        raise ValueError("labels need the data X they label")
    if image_shape is not None:
        image_shape = tuple(int(v) for v in image_shape)
        if len(image_shape) != 2:
            raise ValueError(f"image_shape={image_shape!r} must be (height, width)")
    _native.report(model._state, os.fspath(output), X, labels, image_shape, title)
    return os.path.join(os.fspath(output), "index.html")


def align(model: PCA, reference: PCA, rotate: bool = False):
    """``model`` aligned to ``reference`` (``principal align``): a new fitted :class:`PCA`
    whose component k matches the reference's (flipped and reordered; with ``rotate=True``
    rotated within its subspace by orthogonal Procrustes, so that its components are no longer
    eigenvectors: ``basis_ == "rotated"``, its codes correlated, and ``explained_variance_[k]``
    the training variance along rotated component k), and the principal angles between the two
    subspaces in degrees (increasing, min(M, K) of them). The models must have the same
    features (names compared when both were fitted with them) and preprocessing (standardize,
    ddof, whiten); ``rotate`` needs as many components in both."""
    check_is_fitted(model)
    check_is_fitted(reference)
    ours = getattr(model, "feature_names_in_", None)
    theirs = getattr(reference, "feature_names_in_", None)
    if ours is not None and theirs is not None and len(ours) == len(theirs):
        for j, (a, b) in enumerate(zip(ours, theirs)):
            if a != b:
                raise ValueError(
                    f"feature {j + 1} is {a!r} in the model but {b!r} in the reference "
                    "(features count from 1)"
                )
    state, angles, _ = _native.align(model._state, reference._state, bool(rotate))
    names = ours if ours is not None else theirs
    aligned = PCA._from_state(state, None if names is None else list(names))
    return aligned, np.asarray(angles, dtype=np.float64)
