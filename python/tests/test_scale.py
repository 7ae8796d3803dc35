"""dpstats.bounds: private location, scale and clipping bounds with no public range (issue 15)."""
import numpy as np
import pytest

import dpstats


def table(n=10000, seed=0, corrupt=0.05, far=9.9e6):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(40, 12, n), rng.normal(65000, 20000, n)])
    X[: int(corrupt * n)] = far
    return X


def test_bounds_recovers_very_different_scales_at_epsilon_point_one():
    X = table(corrupt=0.0)
    r = dpstats.bounds(X, epsilon=0.1, seed=1)
    assert r.status == "ok" and r.seeded and r.certified and r.delta == 0
    assert r.epsilon <= 0.1
    s = r.estimate["scale"]
    assert 6 < s[0] < 24 and 10000 < s[1] < 40000
    assert abs(r.estimate["location"][0] - 40) < 6
    assert r.estimate["lo"][1] < 65000 < r.estimate["hi"][1]
    cols = r.diagnostics["scale"]["columns"]
    assert [c["status"] for c in cols] == ["ok", "ok"]
    assert r.diagnostics["all_ok"] is True


@pytest.mark.parametrize("a", [1e-3, 1.0, 1e3])
def test_bounds_move_with_the_data(a):
    X = table(corrupt=0.05)
    base = dpstats.bounds(X, epsilon=1.0, seed=3)
    Y = a * X + 1e4 * a * np.array([12.0, 20000.0])
    r = dpstats.bounds(Y, epsilon=1.0, seed=3)
    truth_scale = np.array([12.0, 20000.0])
    err_base = np.abs(base.estimate["scale"] / truth_scale - 1)
    err = np.abs(r.estimate["scale"] / (a * truth_scale) - 1)
    assert np.all(err <= 1.5 * np.maximum(err_base, 0.05))
    loc = (r.estimate["location"] - 1e4 * a * truth_scale) / a
    assert np.all(np.abs(loc - np.array([40.0, 65000.0])) < 0.5 * truth_scale)


def test_bounds_norm_quantile_and_ledger():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((20000, 5)) * 1e3
    r = dpstats.bounds(X, epsilon=1.0, delta=1e-6, norm_quantile=0.9, seed=2)
    assert r.rho is not None and r.delta == 1e-6
    assert len(r.ledger) == 4
    assert 0.8 < r.estimate["norm_quantile"] / (1e3 * np.sqrt(9.2364)) < 1.2
    assert r.diagnostics["norm_quantile"]["centre"] == "location"


def test_bounds_flags_constant_and_small_inputs():
    X = np.column_stack([np.full(1000, 7.0), np.random.default_rng(0).normal(size=1000)])
    r = dpstats.bounds(X, epsilon=2.0, seed=4)
    # a constant column is released as what it is: its location, MAD and scale 0, bounds of one
    # resolution step; the column's status and a warning say so (a consumer that divides by the
    # scale abstains on it)
    col = r.diagnostics["scale"]["columns"][0]
    assert col["status"] == "degenerate" and col["scale"] == 0 and col["mad"] == 0
    assert r.status == "ok" and abs(col["location"] - 7) <= col["resolution"]
    assert "column(s) 1" in r.diagnostics["warning"] and r.diagnostics["all_ok"] is False
    assert dpstats.mean(X, epsilon=2.0, delta=1e-6, method="prime", alpha=0.05,
                        seed=4).status == "abstained"
    # 40 rows at epsilon 0.1: the rank error alone (public values: n is public under replace-one)
    # says the estimate cannot be used, so the release abstains before charging anything
    small = dpstats.bounds(X[:40, 1:], epsilon=0.1, seed=4)
    assert small.epsilon == 0 and small.ledger == []
    assert small.status == "abstained" and "rank error" in small.diagnostics["abstained"]
    assert "rows" in small.diagnostics["abstained"]  # what would suffice
    assert len(small.estimate["scale"]) == 0


def test_bounds_coverage_adds_clipping_bounds_for_skewed_and_zero_inflated_columns():
    rng = np.random.default_rng(7)
    n = 5000
    income = rng.lognormal(10, 1.2, n)                                  # heavy right tail
    visits = np.where(rng.random(n) < 0.4, 0, rng.poisson(3, n)) * 1.0  # zero-inflated counts
    age = rng.normal(45, 15, n).round()                                 # discrete
    X = np.column_stack([income, visits, age])
    r = dpstats.bounds(X, epsilon=1.0, coverage=0.02, seed=1)
    assert r.status == "ok" and r.epsilon <= 1.0
    lo, hi = r.estimate["clip_lo"], r.estimate["clip_hi"]
    assert np.all(lo < hi)
    assert lo[1] <= 0 <= hi[1]  # the zeros are inside
    outside = np.mean((X < lo) | (X > hi), axis=0)
    assert np.all(outside < 0.08), outside  # 2% targeted; rank errors stated in diagnostics
    assert len(r.diagnostics["clip_bounds"]["columns"]) == 3
    assert any(e["purpose"].startswith("clip bounds") for e in r.ledger)
    plain = dpstats.bounds(X, epsilon=1.0, seed=1)
    assert "clip_lo" not in plain.estimate and len(plain.ledger) < len(r.ledger)
    # with most values 0 the column's MAD is 0: its location -/+ widen scales hold only the zeros,
    # which its status and the warning say; the clipping bounds still cover the non-zero part
    X[:, 1] = np.where(rng.random(n) < 0.6, 0, rng.poisson(3, n))
    r = dpstats.bounds(X, epsilon=1.0, coverage=0.02, seed=1)
    assert r.status == "ok" and r.diagnostics["scale"]["columns"][1]["status"] == "degenerate"
    assert "column(s) 2" in r.diagnostics["warning"]
    assert r.estimate["clip_lo"][1] <= 0 and r.estimate["clip_hi"][1] >= 3
    with pytest.raises(ValueError, match="clip_share"):
        dpstats.bounds(X, epsilon=1.0, coverage=0.02, norm_quantile=0.9, clip_share=0.8)


def test_bounds_refuses_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        dpstats.bounds(np.array([[1.0], [np.nan]]), epsilon=1.0)
    with pytest.raises(ValueError, match="widen must be in"):
        dpstats.bounds(np.ones((10, 1)), epsilon=1.0, widen=0)
    with pytest.raises(ValueError, match="epsilon"):
        dpstats.bounds(np.ones((10, 1)), epsilon=-1.0)
    with pytest.raises(ValueError, match="neighbouring"):
        dpstats.bounds(np.ones((10, 1)), epsilon=1.0, neighbouring="swap")
