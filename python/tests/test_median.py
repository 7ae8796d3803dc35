import numpy as np
import pytest

import dpstats


def cluster(n=2000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = 3.0 + 0.1 * rng.standard_normal((n, d))
    X[: n // 10] = rng.uniform(-10, 10, (n // 10, d))
    return X


def test_geometric_median_private_release():
    X = cluster()
    r = dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, radius=20, seed=3)
    assert r.estimate.shape == (5,)
    assert r.epsilon <= 1.0 and r.delta <= 1e-6 and r.rho is not None
    assert r.certified and r.seeded and r.status == "ok"
    w = dpstats.geometric_median(X, method="weiszfeld")
    assert w.private is False
    assert np.linalg.norm(r.estimate - w.estimate) < 0.5
    again = dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, radius=20, seed=3)
    np.testing.assert_array_equal(r.estimate, again.estimate)


def test_rho_budget_and_paper_profile():
    X = cluster(1000, 3, 1)
    r = dpstats.geometric_median(X, rho=0.5, radius=20, seed=1)
    assert r.rho <= 0.5
    p = dpstats.geometric_median(X, epsilon=2.0, delta=1e-6, radius=20, seed=1, profile="paper")
    assert p.epsilon <= 2.0 and p.rho is None
    assert np.all(np.isfinite(p.estimate))


def test_weiszfeld_one_dimensional_median():
    w = dpstats.geometric_median(np.array([5.0, -3, 100, 2, 8, 1, -50]), method="weiszfeld")
    assert abs(w.estimate[0] - 2.0) < 1e-9


def test_quantile_radius_methods():
    X = cluster(1000, 10, 2)
    for m in ("fast-radius", "fast-radius-permuted", "radius-finder"):
        r = dpstats.quantile_radius(X, method=m, epsilon=1.0, delta=1e-5, min_radius=0.01,
                                    radius=40, seed=4)
        assert float(r.estimate) > 0
        assert r.diagnostics["method"] == m


def test_errors_are_value_errors():
    X = cluster(100, 2, 3)
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, epsilon=0.0, delta=1e-6, radius=10)
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, epsilon=1.0, delta=1e-6)  # no radius
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, radius=10, method="nope")
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, method="weiszfeld", epsilon=1.0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        dpstats.geometric_median(bad, epsilon=1.0, delta=1e-6, radius=10)
    with pytest.raises(ValueError):
        dpstats.quantile_radius(X, method="x", min_radius=0.1, radius=1)
