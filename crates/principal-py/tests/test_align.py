"""principal.align: a refit on a bootstrap sample matched to its reference, a known rotation
undone, and models that cannot be compared refused."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.datasets import load_iris

import principal


def test_a_bootstrap_refit_is_matched_flipped_back_and_its_angles_are_small():
    X = load_iris().data
    reference = principal.PCA(n_components=3).fit(X)
    codes = reference.transform(X)
    rng = np.random.default_rng(0)
    flipped = 0
    for _ in range(10):
        refit = principal.PCA(n_components=3).fit(X[rng.integers(0, len(X), len(X))])
        before = refit.transform(X)
        aligned, angles = principal.align(refit, reference)
        assert angles.shape == (3,)
        assert np.all((angles >= 0) & (angles < 20)), angles
        after = aligned.transform(X)
        for k in range(3):
            assert np.corrcoef(after[:, k], codes[:, k])[0, 1] > 0.9
            flipped += np.corrcoef(before[:, k], codes[:, k])[0, 1] < 0
        assert aligned.basis_ == "eigenvectors"
    # The third component's sign flips in some refits: the test shows flips undone.
    assert flipped > 0


def test_rotate_undoes_a_known_rotation_to_1e_10():
    X = load_iris().data
    reference = principal.PCA(n_components=3).fit(X)
    q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))
    # Only the components are rotated (the variances stay the reference's): what is checked is
    # that the rotation taking them back is found.
    rotated = copy.deepcopy(reference)
    rotated._state["components"] = q @ reference._state["components"]
    aligned, angles = principal.align(rotated, reference, rotate=True)
    np.testing.assert_allclose(aligned.components_, reference.components_, atol=1e-10)
    assert np.all(angles < 1e-6)
    assert aligned.basis_ == "rotated"
    # The basis survives a pickle (the state carries it).
    assert pickle.loads(pickle.dumps(aligned)).basis_ == "rotated"


def test_models_of_other_features_or_preprocessing_are_refused():
    X = load_iris().data
    reference = principal.PCA(n_components=2).fit(X)
    for other, words in [
        (principal.PCA(n_components=2).fit(X[:, :3]), "3 features and the reference 4"),
        (principal.PCA(n_components=2, standardize=True).fit(X), "standardised"),
        (principal.PCA(n_components=3).fit(X), "as many components"),
    ]:
        with pytest.raises(ValueError, match=words):
            principal.align(other, reference, rotate=True)
