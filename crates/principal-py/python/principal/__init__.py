"""principal: principal component analysis, exact and fast.

``principal.PCA`` is a drop-in for ``sklearn.decomposition.PCA`` (same parameters, attributes
and methods, the same numbers), computed by principal's Rust engine, plus what scikit-learn
lacks: missing values (``missing='em'``), choosing the number of components
(``n_components='mle' | 'gavish-donoho' | 'cv'``, and :func:`choose` for every criterion at
once), fits of files too large for memory (:func:`fit_files`), the model file of the
``principal`` command line (``PCA.save`` / ``PCA.load``), its HTML report (:func:`report`),
and scanpy's ``sc.pp.pca`` over an AnnData object (:func:`pca`). ``principal.TruncatedSVD`` is
the drop-in for ``sklearn.decomposition.TruncatedSVD`` (no centring, dense or sparse X).

>>> import numpy as np
>>> from principal import PCA
>>> X = np.random.default_rng(0).normal(size=(100, 5))
>>> codes = PCA(n_components=2).fit_transform(X)
>>> codes.shape
(100, 2)
"""

from ._native import FORMATS, __version__
from ._anndata import pca
from ._latent import BayesianPCA, FactorAnalysis, FastICA, KernelPCA, MixturePPCA
from ._pca import PCA, Posterior, align, choose, fit_files, report
from ._truncated_svd import TruncatedSVD

__all__ = [
    "BayesianPCA",
    "FORMATS",
    "FactorAnalysis",
    "FastICA",
    "KernelPCA",
    "MixturePPCA",
    "PCA",
    "Posterior",
    "TruncatedSVD",
    "align",
    "choose",
    "fit_files",
    "pca",
    "report",
    "__version__",
]
