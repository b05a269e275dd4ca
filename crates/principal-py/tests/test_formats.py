"""principal.FORMATS says which data formats the extension reads, and says it truly: a file of
a format behind a cargo feature (parquet, arrow, h5ad) is read when the feature is listed, and
is otherwise an error that names the feature (an extension built with
MATURIN_PEP517_ARGS=--no-default-features)."""

import numpy as np
import pytest

import principal
from conftest import REPO, close, not_built_message, requires_format

H5AD = REPO / "fixtures" / "h5ad"


def test_formats_lists_the_core_formats_and_only_known_features():
    assert {"csv", "npy", "idx", "mtx"} <= set(principal.FORMATS)
    assert set(principal.FORMATS) <= {"csv", "tsv", "text", "npy", "idx", "mtx", "parquet",
                                      "arrow", "h5ad"}


def gated_file(feature, tmp_path):
    """A file of `feature`'s format: a fixture, or for Arrow the magic bytes around nothing."""
    if feature == "parquet":
        return REPO / "fixtures" / "parquet" / "plain_v2.parquet"
    if feature == "h5ad":
        return H5AD / "x_dense_f64.h5ad"
    path = tmp_path / "d.arrow"
    path.write_bytes(b"ARROW1\0\0\xff\xff\xff\xff\0\0\0\0ARROW1")
    return path


@pytest.mark.parametrize("feature", ["parquet", "arrow", "h5ad"])
def test_a_file_names_its_feature_exactly_when_the_format_is_not_listed(feature, tmp_path):
    path = gated_file(feature, tmp_path)
    try:
        principal.fit_files(path, n_components=1)
        message = None
    except (OSError, ValueError) as e:
        message = str(e)
        assert str(path) in message, message
    names_feature = message is not None and not_built_message(feature) in message
    assert names_feature == (feature not in principal.FORMATS), (principal.FORMATS, message)


@requires_format("h5ad")
def test_an_h5ad_file_fits_as_its_counts_in_csv():
    ours = principal.fit_files(H5AD / "x_dense_f64.h5ad", n_components=3)
    theirs = principal.fit_files(H5AD / "counts.csv", n_components=3)
    close(ours.explained_variance_, theirs.explained_variance_, 1e-12, "variance")
    close(np.abs(ours.components_), np.abs(theirs.components_), 1e-10, "components")
