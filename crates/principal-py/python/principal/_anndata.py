"""``principal.pca(adata)``: scanpy's ``sc.pp.pca`` computed by principal, filling the same
AnnData fields (``obsm['X_pca']``, ``varm['PCs']``, ``uns['pca']``)."""

import numpy as np

from ._pca import PCA
from ._truncated_svd import TruncatedSVD

_HIGHLY_VARIABLE = "highly_variable"
_DEFAULT = object()


def _mask(adata, mask_var):
    """The genes to fit (a boolean array) and the value scanpy records for ``mask_var``."""
    if mask_var is _DEFAULT:
        # scanpy's default: 'highly_variable' when var has that column.
        mask_var = _HIGHLY_VARIABLE if _HIGHLY_VARIABLE in adata.var.columns else None
    if mask_var is None:
        return None, None
    if isinstance(mask_var, str):
        if mask_var not in adata.var.columns:
            raise KeyError(
                f"mask_var={mask_var!r}: adata.var has no such column; its columns are "
                f"{list(adata.var.columns)}"
            )
        mask = np.asarray(adata.var[mask_var])
        if mask.dtype != bool:
            raise ValueError(f"mask_var={mask_var!r}: adata.var[{mask_var!r}] is not boolean")
        return mask, mask_var
    mask = np.asarray(mask_var)
    if mask.dtype != bool or mask.shape != (adata.n_vars,):
        raise ValueError(f"mask_var must be a var column name or {adata.n_vars} booleans")
    return mask, None


def pca(adata, n_comps=None, *, zero_center=True, mask_var=_DEFAULT, layer=None,
        svd_solver="auto", random_state=0, dtype="float32", copy=False):
    """Principal component analysis of an AnnData object, as ``scanpy.pp.pca`` stores it.

    Fits :class:`principal.PCA` (centred, ``ddof=1`` as scikit-learn) to ``adata.X`` (or
    ``adata.layers[layer]``), on the genes of ``mask_var`` only when given (a boolean ``var``
    column name, or a boolean array; by default ``'highly_variable'`` when ``var`` has it, as
    scanpy), and writes:

    - ``obsm['X_pca']``: the cells' codes, ``n_obs × n_comps``, in ``dtype`` (float32 as
      scanpy);
    - ``varm['PCs']``: the components, ``n_vars × n_comps``, zero rows for masked-out genes;
    - ``uns['pca']``: ``variance``, ``variance_ratio`` and ``params`` (``zero_center``,
      ``use_highly_variable``, ``mask_var``, and ``layer`` when given).

    ``n_comps`` defaults to 50, or one less than the smaller dimension when that is at most 50
    (scanpy's rule). ``zero_center=False`` fits :class:`principal.TruncatedSVD` instead (no
    centring, as scanpy: ``variance`` is then the codes' variance, ddof 0; ``svd_solver``
    'randomized' is its randomized algorithm, any other an exact fit). Returns the AnnData
    when ``copy=True``, else ``None``.
    """
    if copy:
        adata = adata.copy()
    mask, mask_name = _mask(adata, mask_var)
    X = adata.X if layer is None else adata.layers[layer]
    if X is None:
        raise ValueError("adata.X is None: name a layer with layer=")
    if mask is not None:
        X = X[:, mask]
    if n_comps is None:
        smallest = min(X.shape)
        n_comps = 50 if smallest > 50 else smallest - 1
    if zero_center:
        model = PCA(n_components=n_comps, svd_solver=svd_solver, random_state=random_state)
    else:
        algorithm = "randomized" if svd_solver == "randomized" else "arpack"
        model = TruncatedSVD(n_components=n_comps, algorithm=algorithm,
                             random_state=random_state)
    codes = model.fit_transform(X)
    adata.obsm["X_pca"] = np.asarray(codes).astype(dtype, copy=False)
    components = np.asarray(model.components_)
    if mask is not None:
        loadings = np.zeros((adata.n_vars, n_comps))
        loadings[mask] = components.T
    else:
        loadings = components.T
    adata.varm["PCs"] = loadings
    params = dict(zero_center=bool(zero_center), use_highly_variable=mask_name == _HIGHLY_VARIABLE,
                  mask_var=mask_name)
    if layer is not None:
        params["layer"] = layer
    adata.uns["pca"] = dict(
        params=params,
        variance=np.asarray(model.explained_variance_),
        variance_ratio=np.asarray(model.explained_variance_ratio_),
    )
    return adata if copy else None
