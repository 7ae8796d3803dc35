"""Python contract: NumPy in, Release out, ValueError with the C++ message on bad input."""
import math

import numpy as np
import pytest

import dpstats


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    return rng.normal(loc=0.5, size=(20000, 4))


def test_bounded_mean_pure(data):
    r = dpstats.mean(data, method="bounded", epsilon=1.0, delta=0.0, bounds=(-5, 5), seed=3)
    assert isinstance(r, dpstats.Release)
    assert r.estimate.shape == (4,)
    assert abs(r.epsilon - 1.0) < 1e-12 and r.epsilon <= 1.0 and r.delta == 0.0 and r.rho is None
    assert r.certified and r.status == "ok" and r.seeded and r.noise == "secure"
    assert r.neighbouring == "replace-one"
    assert r.ledger and r.ledger[0]["mechanism"] == "laplace"
    # Laplace scale d*(hi-lo)/(n*eps) = 0.002 per coordinate: the error is a few scales at most.
    assert np.max(np.abs(r.estimate - data.clip(-5, 5).mean(0))) < 0.002 * 20


def test_bounded_mean_gaussian_and_unseeded(data):
    r = dpstats.mean(data, method="bounded", epsilon=1.0, delta=1e-6, bounds=(-5, 5))
    assert not r.seeded and r.delta == 1e-6 and r.ledger[-1]["mechanism"] == "gaussian"
    assert "warning" not in r.diagnostics["clipped"]  # the supplied bounds clip ~nothing
    assert np.linalg.norm(r.estimate - 0.5) < 0.05


def test_seed_reproducible(data):
    a = dpstats.mean(data, method="bounded", epsilon=0.1, delta=0, bounds=(-5, 5), seed=11)
    b = dpstats.mean(data, method="bounded", epsilon=0.1, delta=0, bounds=(-5, 5), seed=11)
    c = dpstats.mean(data, method="bounded", epsilon=0.1, delta=0, bounds=(-5, 5), seed=12)
    assert np.array_equal(a.estimate, b.estimate)
    assert not np.array_equal(a.estimate, c.estimate)


def test_dp_mean(data):
    r = dpstats.mean(data, method="dp-mean", epsilon=2.0, delta=1e-6, scale=1.0, seed=5)
    assert r.status == "ok"
    assert np.linalg.norm(r.estimate - 0.5) < 0.1
    assert r.ledger[-2]["purpose"].startswith("q_range") and r.ledger[-1]["purpose"] == "clipped mean"
    assert r.epsilon <= 2.0 and r.delta <= 1e-6
    # Without a scale, each column's is estimated privately (and stated).
    s = dpstats.mean(data * [1, 10, 100, 1000], method="dp-mean", epsilon=2.0, delta=1e-6, seed=5)
    assert s.status == "ok" and s.diagnostics["units"]["scale"] == "estimated"
    assert np.all(np.abs(s.estimate / [1, 10, 100, 1000] - 0.5) < 0.1)


def test_mean_needs_epsilon_and_lists_methods(data):
    with pytest.raises(ValueError, match="epsilon"):
        dpstats.mean(data, method="dp-mean", delta=1e-6)
    assert dpstats.mean_methods() == ["robust", "prime", "prime-ht", "filter", "exp-time",
                                      "dp-mean", "bounded", "prime-boosted", "prime-ht-boosted",
                                      "tukey-median"]


def test_mean_without_a_method_is_robust_with_alpha_and_dp_mean_without():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.normal(40, 12, 20000), rng.standard_t(3, 20000) * 1e3 + 5e4])
    X[:1000] = [999, 9.9e6]  # 5% corrupted rows
    r = dpstats.mean(X, alpha=0.05, epsilon=2.0, delta=1e-6, seed=1)
    assert r.diagnostics["method"] == "robust"
    assert r.diagnostics["robust"]["chosen"] in ("prime", "prime-ht")
    if r.status == "ok":  # within its stated error of the clean mean
        clean = X[1000:].mean(axis=0)
        assert np.all(np.abs(r.estimate - clean) <= r.diagnostics["stated_error"]["radius"])
    else:
        assert "prime-ht" in r.diagnostics["abstained"] or "alpha" in r.diagnostics["abstained"]
    plain = dpstats.mean(X, epsilon=2.0, delta=1e-6, seed=1)
    assert "bounds_estimate" in plain.diagnostics  # the default without alpha: bounded
    assert plain.diagnostics["robust"] is False  # not robust, and says so
    with pytest.raises(ValueError, match="scale"):
        dpstats.mean(X, method="robust", alpha=0.05, scale=[10, 1e3], epsilon=2.0, delta=1e-6)


def test_one_dimensional_and_other_dtypes():
    x = np.arange(1000, dtype=np.int32) % 10
    r = dpstats.mean(x, method="bounded", epsilon=5, delta=0, bounds=(0, 9), seed=1)
    assert r.estimate.shape == (1,) and abs(r.estimate[0] - 4.5) < 0.2
    f = np.asfortranarray(np.ones((100, 3)))
    assert dpstats.mean(f, method="bounded", epsilon=5, delta=0, bounds=(0, 2), seed=1).estimate.shape == (3,)


def test_laplace_and_gaussian_keep_shape():
    v = np.zeros((2, 3))
    lap = dpstats.laplace(v, sensitivity=1.0, epsilon=1.0, seed=1)
    assert lap.estimate.shape == (2, 3) and lap.delta == 0 and lap.diagnostics["scale"] >= 1.0
    g = dpstats.gaussian(5.0, sensitivity=1.0, epsilon=1.0, delta=1e-5, seed=1)
    assert g.estimate.shape == () and g.diagnostics["sigma"] >= 3.7306


def test_laplace_noise_has_the_right_scale():
    r = dpstats.laplace(np.zeros(200000), sensitivity=200000.0, epsilon=1.0, seed=2)
    b = r.diagnostics["scale"]
    # mean |Laplace(b)| = b; its standard error over 2e5 draws is b/sqrt(2e5) ~ 0.0022 b.
    assert abs(np.mean(np.abs(r.estimate)) / b - 1) < 0.02


def test_account():
    assert math.isclose(dpstats.account.convert(rho=0.5, delta=1e-5)["epsilon"], 4.7284, abs_tol=1e-4)
    cal = dpstats.account.calibrate("gaussian", 1.0, 1.0, 1e-5)
    assert math.isclose(cal["sigma"], 3.730632, rel_tol=1e-5)
    assert cal["secure_sigma"] >= cal["sigma"]
    assert dpstats.account.calibrate("laplace", 1.0, 0.5)["scale"] == 2.0
    c = dpstats.account.compose(0.1, 0.0, 10, 1e-5)
    assert c["epsilon"] <= 1.0 + 1e-12
    assert math.isclose(dpstats.account.analytic_gaussian_sigma(1, 1, 1e-6), 4.224679, rel_tol=1e-5)


BAD = [
    (dict(X=np.array([[1.0, np.nan]]), method="bounded", epsilon=1, delta=0, bounds=(0, 1)), "NaN"),
    (dict(X=np.array([[1.0, np.inf]]), method="bounded", epsilon=1, delta=0, bounds=(0, 1)), "NaN"),
    (dict(X=np.zeros((0, 3)), method="bounded", epsilon=1, delta=0, bounds=(0, 1)), "at least one row"),
    (dict(X=[["a", "b"]], method="bounded", epsilon=1, delta=0, bounds=(0, 1)), "numeric"),
    (dict(X=[[1, 2], [3]], method="bounded", epsilon=1, delta=0, bounds=(0, 1)), "numeric"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=0, delta=0, bounds=(0, 1)), "epsilon"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=-1, delta=0, bounds=(0, 1)), "epsilon"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=float("nan"), delta=0, bounds=(0, 1)), "epsilon"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon="abc", delta=0, bounds=(0, 1)), "epsilon"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=1, delta=1.0, bounds=(0, 1)), "delta"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=1, delta=-1e-9, bounds=(0, 1)), "delta"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=1, delta=0, bounds=(1, 0)), "lower < upper"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=1, delta=0, bounds=(0, 1, 2)), "bounds"),
    (dict(X=np.ones((3, 2)), method="dp-mean", epsilon=1, delta=0.1, scale=(1, 2, 3)), "scale"),
    (dict(X=np.ones((3, 2)), method="dp-mean", epsilon=1, delta=0.1, T=3), "does not apply"),
    (dict(X=np.ones((3, 2)), method="dp-mean", epsilon=1, delta=0), "delta"),
    (dict(X=np.ones((3, 2)), method="nope", epsilon=1, delta=0.1), "method"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=1, delta=0, bounds=(0, 1), seed=-1), "seed"),
    (dict(X=np.ones((3, 2)), method="bounded", epsilon=1, delta=0, bounds=(0, 1), seed=1.5), "seed"),
]


@pytest.mark.parametrize("kwargs,message", BAD)
def test_bad_input_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dpstats.mean(**kwargs)


def test_bad_noise_arguments():
    with pytest.raises(ValueError, match="sensitivity"):
        dpstats.laplace([1.0], sensitivity=0, epsilon=1)
    with pytest.raises(ValueError, match="delta"):
        dpstats.gaussian([1.0], sensitivity=1, epsilon=1, delta=0)
    with pytest.raises(ValueError, match="NaN"):
        dpstats.laplace([1.0, float("nan")], sensitivity=1, epsilon=1)
    with pytest.raises(ValueError, match="empty"):
        dpstats.laplace([], sensitivity=1, epsilon=1)
    with pytest.raises(ValueError, match="rho"):
        dpstats.account.convert(rho=1.0, mu=1.0, delta=1e-5)
