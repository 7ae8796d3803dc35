"""dry_run=True on every releasing function (issue 30 item 3; python/dpstats/_dry.py): the plan
without the data, nothing drawn, nothing charged, and rows needed that predict the real run."""
import numpy as np
import pytest

import dpstats
from dpstats.classify import fit_classify
from dpstats.heavy_tailed import fit_heavy_tailed

RNG = np.random.default_rng(5)
X = RNG.normal(10, 2, (300, 3))
Y = (X[:, 0] > 10).astype(np.int64)

# name -> a release given keyword arguments (dry_run, n_hint, budget): every releasing function.
CASES = {
    "mean dp-mean": lambda **k: dpstats.mean(X, "dp-mean", 1, 1e-6, **k),
    "mean bounded": lambda **k: dpstats.mean(X, "bounded", 1, 0, **k),
    "mean prime": lambda **k: dpstats.mean(X, "prime", 1, 1e-6, alpha=0.05, **k),
    "laplace": lambda **k: dpstats.laplace([1.0, 2.0], 1.0, 0.5, **k),
    "gaussian": lambda **k: dpstats.gaussian([1.0, 2.0], 1.0, 0.5, 1e-6, **k),
    "stat": lambda **k: dpstats.stats.stat("variance", X, 0.3, 0, **k),
    "count": lambda **k: dpstats.count(X, 0.3, 0, **k),
    "sum": lambda **k: dpstats.sum(X, 0.3, 0, **k),
    "column_mean": lambda **k: dpstats.column_mean(X, 0.3, 0, **k),
    "variance": lambda **k: dpstats.variance(X, 0.3, 0, **k),
    "std": lambda **k: dpstats.std(X, 0.3, 0, **k),
    "quantiles": lambda **k: dpstats.quantiles(X, [0.5], 0.3, 0, **k),
    "histogram": lambda **k: dpstats.histogram(Y, 0.3, 0, categories=[0, 1], **k),
    "bounds": lambda **k: dpstats.bounds(X, 0.3, **k),
    "geometric_median": lambda **k: dpstats.geometric_median(X, epsilon=1, delta=1e-6, **k),
    "quantile_radius": lambda **k: dpstats.quantile_radius(X, epsilon=1, delta=1e-6,
                                                           domain_radius=100, min_radius=0.01,
                                                           **k),
    "moments": lambda **k: dpstats.moments(X, epsilon=1, delta=1e-6, **k),
    "fit classify": lambda **k: fit_classify(X, Y, epsilon=1, delta=1e-6, classes=2, n_public=400,
                                             **k),
    "fit heavy-tailed": lambda **k: fit_heavy_tailed(X, X[:, 0], epsilon=1, domain_radius=10, **k),
    "fit user-level": lambda **k: dpstats.fit(X, np.where(Y > 0, 1.0, -1.0),
                                              users=np.arange(300) // 3, epsilon=1, delta=1e-6,
                                              domain_radius=10, items_per_user=3, **k),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_release_plans_without_drawing_or_charging(name):
    budget = dpstats.Budget(epsilon=10, delta=1e-3)
    before = budget.to_json()
    plan = CASES[name](dry_run=True, n_hint=400, budget=budget)
    assert plan["command"] == "dry-run" and plan["n_hint"] == 400
    assert plan["private"] is True, plan
    # A plan charges its stages, or abstains on public values first (the classifier's feature
    # scale at 400 rows) and says so.
    assert plan["stages"] or plan["verdict"].startswith("would abstain before spending"), plan
    assert budget.to_json() == before  # nothing charged


def test_data_none_with_columns_and_a_too_small_budget():
    plan = dpstats.column_mean(None, 0.3, 0, columns=["a", "b"], dry_run=True)
    assert plan["d"] == 2 and plan["n_hint"] is None and plan["rows_needed"] > 0
    assert "n_hint" in plan["verdict"]
    small = dpstats.Budget(epsilon=0.01, delta=0)
    before = small.to_json()
    with pytest.raises(dpstats.BudgetExceeded):
        dpstats.column_mean(None, 0.3, 0, columns=2, dry_run=True, budget=small)
    assert small.to_json() == before
    with pytest.raises(ValueError, match="dry_run"):
        dpstats.column_mean(X, 0.3, 0, n_hint=10)
    with pytest.raises(ValueError, match="columns"):
        dpstats.column_mean(None, 0.3, 0, dry_run=True)


def test_a_real_release_after_a_dry_run_still_releases():
    dpstats.column_mean(X, 0.3, 0, dry_run=True)
    r = dpstats.column_mean(X, 0.3, 0, bounds=(0, 20), seed=1)
    assert r.status == "ok" and r.estimate.shape == (3,)


@pytest.mark.parametrize("release", [
    lambda Z, **k: dpstats.column_mean(Z, 0.3, 0, seed=2, **k),
    lambda Z, **k: dpstats.mean(Z, "dp-mean", 0.3, 1e-6, seed=2, **k),
])
def test_rows_needed_predicts_the_real_run(release):
    needed = release(np.zeros((10, 2)), dry_run=True, n_hint=10000)["rows_needed"]
    rng = np.random.default_rng(11)
    for factor, abstains in ((0.7, True), (1.5, False)):
        n = int(needed * factor)
        plan = release(None, columns=2, dry_run=True, n_hint=n)
        assert plan["verdict"].startswith("would abstain" if abstains else "would release")
        r = release(rng.normal(10, 2, (n, 2)))
        reason = r.diagnostics.get("abstained", "")
        assert ("its rank error" in reason) == abstains, (n, needed, reason)
