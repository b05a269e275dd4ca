"""scikit-learn's estimator conventions, model files, bad input, and principal's extras."""

import pathlib
import pickle
import subprocess

import joblib
import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

import principal

from conftest import DATASETS, cli, low_rank


def test_check_estimator_passes():
    # Every check, no expected failures; a failing check raises.
    check_estimator(principal.PCA())


def test_check_estimator_passes_with_principal_s_parameters():
    check_estimator(principal.PCA(n_components=1, whiten=True, solver="covariance"))


def test_pickle_clone_and_joblib_round_trip(tmp):
    X = DATASETS["tall"]()
    model = principal.PCA(n_components=3, whiten=True, random_state=4).fit(X)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.transform(X), model.transform(X))
    np.testing.assert_array_equal(copy.components_, model.components_)
    joblib.dump(model, tmp / "m.joblib")
    again = joblib.load(tmp / "m.joblib")
    np.testing.assert_array_equal(again.score_samples(X), model.score_samples(X))
    fresh = clone(model)
    assert fresh.get_params() == model.get_params()
    assert not hasattr(fresh, "components_")
    np.testing.assert_array_equal(fresh.fit(X).components_, model.components_)


def test_save_and_load_round_trip_exactly(tmp):
    X = DATASETS["tall"]()
    for params in ({"n_components": 3}, {"n_components": 4, "whiten": True, "standardize": True},
                   {"n_components": 2, "solver": "randomized"}):
        model = principal.PCA(**params).fit(X)
        model.save(tmp / "m.safetensors")
        loaded = principal.PCA.load(tmp / "m.safetensors")
        for attr in ("components_", "explained_variance_", "explained_variance_ratio_",
                     "singular_values_", "mean_"):
            np.testing.assert_array_equal(getattr(loaded, attr), getattr(model, attr))
        assert loaded.noise_variance_ == model.noise_variance_
        assert loaded.whiten == model.whiten and loaded.standardize == model.standardize
        assert loaded.iteration_report_ == model.iteration_report_
        np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_the_eigen_route_is_reported():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (600, 300)) * (1 + 300 / (1 + np.arange(300)))
    fixed = principal.PCA(n_components=10, svd_solver="covariance_eigh").fit(X)
    assert fixed.eigen_route_.startswith("certified Krylov–Schur"), fixed.eigen_route_
    rule = principal.PCA(n_components="mle", svd_solver="covariance_eigh").fit(X)
    assert rule.eigen_route_.endswith("every eigenvalue is needed to choose the number of "
                                      "components"), rule.eigen_route_
    assert principal.PCA(n_components=10, svd_solver="randomized",
                         random_state=0).fit(X).eigen_route_ is None
    assert pickle.loads(pickle.dumps(fixed)).eigen_route_ == fixed.eigen_route_


def test_feature_names_travel_with_the_model_file(tmp):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(DATASETS["iris"](), columns=["sl", "sw", "pl", "pw"])
    model = principal.PCA(n_components=2).fit(X)
    model.save(tmp / "m.safetensors")
    loaded = principal.PCA.load(tmp / "m.safetensors")
    assert list(loaded.feature_names_in_) == ["sl", "sw", "pl", "pw"]


def test_cli_model_and_python_model_are_the_same_model(tmp):
    assert cli() is not None, "the principal binary is not built: cargo build --release first"
    X = DATASETS["iris"]()
    np.savetxt(tmp / "x.csv", X, delimiter=",", header="a,b,c,d", comments="")
    subprocess.run([cli(), "fit", tmp / "x.csv", "-k", "2", "--whiten", "--solver", "svd",
                    "--output", tmp / "cli.safetensors"], check=True, capture_output=True)
    from_cli = principal.PCA.load(tmp / "cli.safetensors")
    ours = principal.PCA(n_components=2, whiten=True, svd_solver="full").fit(X)
    np.testing.assert_allclose(from_cli.components_, ours.components_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(from_cli.transform(X), ours.transform(X), rtol=0, atol=1e-10)
    assert from_cli.whiten
    # The other way: a Python model transformed by the command line.
    ours.save(tmp / "py.safetensors")
    subprocess.run([cli(), "transform", tmp / "py.safetensors", tmp / "x.csv",
                    "--output", tmp / "codes.csv"], check=True, capture_output=True)
    codes = np.loadtxt(tmp / "codes.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(codes, ours.transform(X), rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.array([[1.0, np.nan], [2.0, 3.0], [3.0, 1.0]]), "NaN"),
        (np.array([[1.0, np.inf], [2.0, 3.0], [3.0, 1.0]]), "infinity"),
        (np.empty((0, 3)), "0 sample"),
        (np.arange(5.0), "Expected 2D array, got 1D array"),
        (np.array([[1.0, 2.0]]), "1 sample"),
        (np.array([["a", "b"], ["c", "d"]]), "could not convert|argument must be"),
    ],
)
def test_bad_arrays_raise_value_error(bad, message):
    with pytest.raises(ValueError, match=message):
        principal.PCA().fit(bad)


def test_bad_transform_input_and_parameters_raise():
    model = principal.PCA(n_components=2).fit(DATASETS["tall"]())
    with pytest.raises(ValueError, match="X has 3 features, but PCA is expecting 12"):
        model.transform(np.ones((4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        model.transform(np.full((2, 12), np.nan))
    for params, message in [({"n_components": 0}, "at least 1"), ({"n_components": 1.5}, "between 0 and 1"),
                            ({"svd_solver": "magic"}, "svd_solver='magic'"), ({"ddof": 2}, "ddof=2"),
                            ({"n_components": 50}, "50"), ({"missing": "drop"}, "missing='drop'")]:
        with pytest.raises(ValueError, match=message):
            principal.PCA(**params).fit(DATASETS["tall"]())


def test_fortran_order_and_strided_views_give_the_same_model():
    X = DATASETS["tall"]()
    c = principal.PCA(n_components=3).fit(X)
    f = principal.PCA(n_components=3).fit(np.asfortranarray(X))
    np.testing.assert_allclose(f.components_, c.components_, rtol=0, atol=1e-13)
    strided = np.repeat(X, 2, axis=0)[::2]
    s = principal.PCA(n_components=3).fit(strided)
    np.testing.assert_allclose(s.components_, c.components_, rtol=0, atol=1e-13)
    np.testing.assert_allclose(c.transform(np.asfortranarray(X)), c.transform(X), rtol=0, atol=1e-12)


def test_missing_values_are_fitted_imputed_and_transformed():
    rng = np.random.default_rng(5)
    X = low_rank(300, 10, 3, 11, noise=0.01)
    holes = X.copy()
    holes[rng.random(X.shape) < 0.1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        principal.PCA(n_components=3).fit(holes)
    model = principal.PCA(n_components=3, missing="em").fit(holes)
    assert model.missing_values_report_["missing"] == int(np.isnan(holes).sum())
    filled = model.impute(holes)
    assert not np.isnan(filled).any()
    observed = ~np.isnan(holes)
    np.testing.assert_array_equal(filled[observed], holes[observed])
    # Low-rank data: the holes come back close to the truth.
    assert np.abs(filled - X)[~observed].max() < 0.2
    codes = model.transform(holes)
    assert codes.shape == (300, 3) and np.isfinite(codes).all()
    assert np.isfinite(model.score_samples(holes)).all()


def test_posterior_and_sampling():
    X = DATASETS["tall"]()
    model = principal.PCA(n_components=3).fit(X)
    post = model.transform(X[:5], posterior=True)
    assert isinstance(post, principal.Posterior)
    assert post.mean.shape == (5, 3) and post.covariance.shape == (3, 3)
    # Posterior mean = diag(√(λ − σ²)/λ) codes.
    lam, s2 = model.explained_variance_, model.noise_variance_
    np.testing.assert_allclose(post.mean, model.transform(X[:5]) * np.sqrt(lam - s2) / lam, rtol=1e-10)
    a = model.sample(2000, random_state=3)
    np.testing.assert_array_equal(a, model.sample(2000, random_state=3))
    assert a.shape == (2000, 12)
    np.testing.assert_allclose(np.cov(a.T), model.get_covariance(), atol=0.1 * lam[0])


def test_choose_returns_every_criterion_and_its_curve():
    X = low_rank(300, 15, 4, 9, noise=0.3)
    table = principal.choose(X, permutations=20)
    names = [c.criterion for c in table.criteria]
    for expected in ("kaiser", "broken-stick", "parallel", "mle", "gavish-donoho", "cv"):
        assert expected in names
    assert table["mle"].n_components == principal.PCA("mle").fit(X).n_components_
    assert table["gavish-donoho"].n_components == 4
    assert len(table["cv"].statistic) == table.max_components
    np.testing.assert_allclose(table.eigenvalues, principal.PCA().fit(X).explained_variance_, rtol=1e-10)


def test_fit_files_streams_a_file_as_the_in_memory_fit(tmp):
    X = DATASETS["tall"]()
    np.save(tmp / "x.npy", X)
    streamed = principal.fit_files(tmp / "x.npy", n_components=3, memory_limit="64M", solver="covariance")
    memory = principal.PCA(n_components=3, solver="covariance").fit(X)
    np.testing.assert_allclose(streamed.components_, memory.components_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(streamed.transform(X), memory.transform(X), rtol=0, atol=1e-10)
    with pytest.raises(OSError, match="missing.npy"):
        principal.fit_files(tmp / "missing.npy", n_components=2)


def test_report_writes_the_cli_s_report(tmp):
    X = DATASETS["iris"]()
    labels = np.repeat(["setosa", "versicolor", "virginica"], 50)
    model = principal.PCA(n_components=2).fit(X)
    index = principal.report(model, X, labels=labels, image_shape=(2, 2), output=tmp / "report")
    html = pathlib.Path(index).read_text()
    assert "<html" in html.lower()
    for stem in ("scree", "spectrum", "projection", "reconstruction-error", "components"):
        assert (tmp / "report" / f"{stem}.png").exists(), stem
    with pytest.raises(ValueError, match="one label per row"):
        principal.report(model, X, labels=labels[:10], output=tmp / "r2")


def test_sklearn_version_is_supported():
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    assert (major, minor) >= (1, 6)


FIT_AND_PRINT = """
import sys
import numpy as np
import principal
rng = np.random.default_rng(3)
X = rng.normal(size=(900, 12)) @ rng.normal(size=(12, 300)) + 0.1 * rng.normal(size=(900, 300)) + 4
out = []
for solver in ["full", "covariance_eigh", "randomized"]:
    m = principal.PCA(n_components=10, svd_solver=solver, random_state=0).fit(X)
    out += [m.components_, m.explained_variance_]
out.append(principal.KernelPCA(n_components=8).fit(X).eigenvalues_)
out.append(principal.FactorAnalysis(n_components=6, max_iter=100).fit(X).components_)
sys.stdout.write(np.concatenate([a.ravel() for a in out]).tobytes().hex())
"""


def test_the_same_bits_on_any_number_of_threads():
    # rayon's pool is made once per process: one process per thread count.
    import os
    import sys

    runs = []
    for threads in ["1", "2", "3"]:
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        done = subprocess.run([sys.executable, "-c", FIT_AND_PRINT], env=env,
                              capture_output=True, text=True, check=True)
        runs.append(done.stdout)
    assert len(runs[0]) > 1000
    assert runs[1] == runs[0] and runs[2] == runs[0]
