"""dpstats.mean(method="prime"): robust private mean (PRIME), practical and paper profiles."""
import numpy as np
import pytest

import dpstats


def shifted(n, d, alpha=0.05, shift=1.5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: int(alpha * n)] += shift
    return X


@pytest.fixture(scope="module")
def corrupted():
    return shifted(50000, 10)


def test_prime_beats_dp_mean_under_corruption(corrupted):
    r = dpstats.mean(corrupted, method="prime", epsilon=10.0, delta=0.01, alpha=0.05, seed=1)
    b = dpstats.mean(corrupted, method="dp-mean", epsilon=10.0, delta=0.01, seed=1)
    assert r.status == "ok" and r.certified and r.seeded
    assert r.estimate.shape == (10,)
    assert r.epsilon <= 10.0 and r.delta <= 0.01 and r.rho is not None
    assert r.diagnostics["profile"] == "practical"
    assert "fallback" not in r.diagnostics
    # DP Mean's bias is 1.5 * 0.05 * sqrt(10) = 0.237; PRIME's floor at this size is ~0.06.
    assert np.linalg.norm(b.estimate) > 0.2
    assert np.linalg.norm(r.estimate) < 0.12


def test_prime_paper_profile_and_topk(corrupted):
    r = dpstats.mean(corrupted, method="prime", epsilon=10.0, delta=0.01, alpha=0.05,
                     profile="paper", seed=2)
    assert r.diagnostics["profile"] == "paper" and r.rho is None
    assert r.status in ("ok", "abstained")
    k = dpstats.mean(corrupted, method="prime", epsilon=10.0, delta=0.01, alpha=0.05,
                     topk_multiplier=1.25, seed=2)
    assert k.diagnostics["k"] == int(np.ceil(1.25 * 0.05 * 50000))


def test_prime_fallback_is_reported():
    X = shifted(3000, 20)
    # The planned units' share finds 3000 rows too few at d = 20 for any share up to 0.5: an
    # abstention before anything is charged (docs/proofs/scale.md §9).
    planned = dpstats.mean(X, method="prime", epsilon=1.0, delta=1e-5, alpha=0.05, seed=3)
    assert planned.status == "abstained" and planned.ledger == [] and planned.epsilon == 0
    assert planned.diagnostics["scale_share"]["usable"] is False
    # At the old fixed share the release runs, and PRIME's feasibility check falls back.
    r = dpstats.mean(X, method="prime", epsilon=1.0, delta=1e-5, alpha=0.05, seed=3,
                     scale_share=0.1)
    assert r.diagnostics["feasibility"]["feasible"] is False
    # the fallback's units are too noisy at this n and d: nothing is released, so no fallback is
    # claimed, and the reason says both (and the declared alpha, never 0)
    assert r.status == "abstained" and "fallback" not in r.diagnostics
    assert "fallback DP Mean abstained" in r.diagnostics["abstained"]
    r2 = dpstats.mean(X, method="prime", epsilon=1.0, delta=1e-5, alpha=0.05, seed=3,
                      fallback=False, scale_share=0.1)
    assert "fallback" not in r2.diagnostics


def test_prime_unseeded_is_secure(corrupted):
    r = dpstats.mean(corrupted[:20000], method="prime", epsilon=10.0, delta=0.01, alpha=0.05)
    assert not r.seeded and r.noise == "secure"


@pytest.mark.parametrize("kwargs, message", [
    (dict(), "alpha"),
    (dict(alpha=0.5), "alpha"),
    (dict(alpha=0.05, profile="fast"), "profile"),
    (dict(alpha=0.05, topk_multiplier=0.1), "topk_multiplier"),
    (dict(alpha=0.05, bounds=(0, 1)), "bounds"),
])
def test_prime_bad_arguments(corrupted, kwargs, message):
    with pytest.raises(ValueError, match=message):
        dpstats.mean(corrupted[:1000], method="prime", epsilon=1.0, delta=1e-6, **kwargs)


def test_alpha_rejected_for_other_methods(corrupted):
    with pytest.raises(ValueError, match="alpha"):
        dpstats.mean(corrupted[:1000], method="dp-mean", epsilon=1.0, delta=1e-6, alpha=0.1)


def test_prime_rejects_nan():
    X = shifted(1000, 3)
    X[5, 1] = np.nan
    with pytest.raises(ValueError):
        dpstats.mean(X, method="prime", epsilon=1.0, delta=1e-6, alpha=0.05)


@pytest.mark.parametrize("method,shift", [("prime-ht", 3.0), ("filter", 1.5)])
def test_robust_family_beats_dp_mean(method, shift):
    # PRIME-ht at this size (n = 5·10^4, d = 10) stops before filtering in about half the runs
    # when the outliers sit at shift 1.5 (its noisy stopping test, lambda <= 2, passes) and then
    # returns the corrupted mean; at shift 3 it filters every time (10 of 10 seeds).
    corrupted = shifted(50000, 10, shift=shift)
    errors, baseline = [], []
    for seed in range(1, 6):
        r = dpstats.mean(corrupted, method=method, epsilon=10.0, delta=0.01, alpha=0.05,
                         seed=seed)
        b = dpstats.mean(corrupted, method="dp-mean", epsilon=10.0, delta=0.01, seed=seed)
        assert r.status == "ok" and r.certified
        assert r.epsilon <= 10.0 and r.delta <= 0.01
        errors.append(np.linalg.norm(r.estimate))
        if b.status == "ok":
            baseline.append(np.linalg.norm(b.estimate))
        else:  # DP Mean's tail check: the shifted 5% lie beyond 3 private scales
            assert "beyond 3 estimated scales" in b.diagnostics["abstained"]
    # DP Mean either abstains on the attack or is at least twice as far off
    if baseline:
        assert np.median(errors) < np.median(baseline) / 2


def test_prime_ht_on_heavy_tails():
    rng = np.random.default_rng(5)
    X = rng.standard_t(3, size=(50000, 5)) / np.sqrt(3.0)
    X[:2500] += 3.0
    r = dpstats.mean(X, method="prime-ht", epsilon=10.0, delta=0.01, alpha=0.05, seed=5)
    assert r.status == "ok" and r.diagnostics["heavy_tailed"] is True
    assert np.linalg.norm(r.estimate) < 0.3  # DP Mean: 0.05 * 3 * sqrt(5) = 0.34


def test_exp_time_is_one_dimensional_and_small():
    rng = np.random.default_rng(6)
    x = rng.normal(size=20)
    x[:2] = 5.0
    r = dpstats.mean(x, method="exp-time", epsilon=300.0, delta=0.01, alpha=0.1, scale=1.0,
                     seed=6)
    assert r.status == "ok" and r.estimate.shape == (1,) and abs(r.estimate[0]) < 1.0
    with pytest.raises(ValueError, match="d = 1"):
        dpstats.mean(rng.normal(size=(50, 2)), method="exp-time", epsilon=1.0, delta=0.01,
                     alpha=0.1)
    with pytest.raises(ValueError, match="tiny n"):
        dpstats.mean(rng.normal(size=5000), method="exp-time", epsilon=1.0, delta=0.01,
                     alpha=0.1)


def test_prime_boosted_disjoint_parts():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((36000, 2))
    X[:1800] += 4.0
    r = dpstats.mean(X, method="prime-boosted", epsilon=10.0, delta=0.01, alpha=0.05, scale=1.0,
                     seed=7)
    assert r.status == "ok" and r.epsilon <= 10.0 and r.certified
    assert r.diagnostics["boost_parts"] == 9 and len(r.ledger) == 1
    assert np.linalg.norm(r.estimate) < 0.3
    r7 = dpstats.mean(X, method="prime-ht-boosted", epsilon=10.0, delta=0.01, alpha=0.05,
                      scale=1.0, boost_zeta=0.1, seed=7)
    assert r7.diagnostics["boost_parts"] == 7
    with pytest.raises(ValueError, match="boost_zeta"):
        dpstats.mean(X, method="prime", epsilon=10.0, delta=0.01, alpha=0.05, boost_zeta=0.1)
