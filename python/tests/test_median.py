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
    r = dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=20, seed=3)
    assert r.estimate.shape == (5,)
    assert r.epsilon <= 1.0 and r.delta <= 1e-6 and r.rho is not None
    assert r.certified and r.seeded and r.status == "ok"
    w = dpstats.geometric_median(X, method="weiszfeld")
    assert w.private is False
    assert np.linalg.norm(r.estimate - w.estimate) < 0.5
    again = dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=20, seed=3)
    np.testing.assert_array_equal(r.estimate, again.estimate)


def test_paper_profile():
    X = cluster(1000, 3, 1)
    p = dpstats.geometric_median(X, epsilon=2.0, delta=1e-6, domain_radius=20, seed=1, profile="paper")
    assert p.epsilon <= 2.0 and p.rho is None
    assert np.all(np.isfinite(p.estimate))


def test_weiszfeld_one_dimensional_median():
    w = dpstats.geometric_median(np.array([5.0, -3, 100, 2, 8, 1, -50]), method="weiszfeld")
    assert abs(w.estimate[0] - 2.0) < 1e-9


def test_quantile_radius_methods():
    X = cluster(1000, 10, 2)
    for m in ("fast-radius", "fast-radius-permuted", "radius-finder"):
        r = dpstats.quantile_radius(X, method=m, epsilon=1.0, delta=1e-5, min_radius=0.01,
                                    domain_radius=40, seed=4)
        assert float(r.estimate) > 0
        assert r.diagnostics["method"] == m


def test_errors_are_value_errors():
    X = cluster(100, 2, 3)
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, epsilon=0.0, delta=1e-6, domain_radius=10)
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, delta=1e-6, domain_radius=10)  # no epsilon
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, epsilon=1.0, domain_radius=10)  # no delta
    with pytest.raises(ValueError, match="profile"):
        dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=10, profile="nope")
    with pytest.raises(ValueError, match="does not apply"):
        dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=10, method="hsu24",
                                 profile="paper")
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=10, method="nope")
    with pytest.raises(ValueError):
        dpstats.geometric_median(X, method="weiszfeld", epsilon=1.0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        dpstats.geometric_median(bad, epsilon=1.0, delta=1e-6, domain_radius=10)
    with pytest.raises(ValueError):
        dpstats.quantile_radius(X, method="x", epsilon=1.0, min_radius=0.1, domain_radius=1)


def test_median_is_callable_at_the_top_level():
    X = cluster(1500, 3, 5)
    r = dpstats.median(X, epsilon=1.0, delta=1e-6, domain_radius=20, seed=2)
    assert r.estimate.shape == (3,)
    assert dpstats.median is dpstats.geometric_median
    assert "geometric median" in dpstats.median.__doc__
    import sys
    assert hasattr(sys.modules["dpstats.median"], "quantile_radius")  # the submodule stays loaded
    from dpstats.median import quantile_radius  # and importable from
    assert quantile_radius is dpstats.quantile_radius



def test_domain_radius_estimated_in_any_units():
    X = cluster(8000, 3, 6)
    w = dpstats.geometric_median(X, method="weiszfeld").estimate
    for a in (1e-3, 1.0, 1e3):
        r = dpstats.median(a * X + 1e4 * a, epsilon=4.0, delta=1e-6, seed=3)
        if r.status == "abstained":
            assert "abstained" in r.diagnostics
            continue
        assert r.diagnostics["domain_radius_source"] == "estimated"
        assert np.linalg.norm(r.estimate - (a * w + 1e4 * a)) < 0.5 * a


def test_given_radius_that_excludes_rows_is_reported():
    X = cluster(2000, 3, 7)
    X[:400] = 600.0
    r = dpstats.median(X, epsilon=1.0, delta=1e-6, domain_radius=20, seed=4)
    assert "domain_radius_warning" in r.diagnostics


def test_paper_profile_with_the_certified_fast_center():
    X = cluster(6000, 3, 2)
    r = dpstats.geometric_median(X, epsilon=4.0, delta=1e-5, domain_radius=20, seed=2,
                                 profile="paper", center="fast-center")
    assert r.certified and r.status == "ok" and r.epsilon <= 4.0
    assert r.diagnostics["center"] == "fast-center"
    assert r.diagnostics["center_failed"] is False
    with pytest.raises(ValueError, match="center"):
        dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=20, center="fast-center")
