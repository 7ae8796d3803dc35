"""The surface users touch: Release fields and serialisation, required privacy targets, the
everyday statistics, one Budget across releases (saved and resumed), help() texts."""
import inspect
import json
import pydoc
import re
from pathlib import Path

import numpy as np
import pytest

import dpstats


def _table(n=5000, seed=0):
    g = np.random.default_rng(seed)
    return np.column_stack([g.uniform(18, 90, n), g.uniform(2e4, 2e5, n)])


BOUNDS = [(0, 120), (0, 5e5)]


def test_release_has_unit_accountant_dict_json_and_repr():
    r = dpstats.variance(_table(), epsilon=1, delta=0, bounds=BOUNDS, seed=1)
    assert r.unit == "record" and r.accountant == "basic"
    d = r.to_dict()
    assert d["privacy"]["unit"] == "record" and d["privacy"]["accountant"] == "basic"
    assert len(d["estimate"]) == 2
    back = json.loads(r.to_json())
    assert back["privacy"]["epsilon"] == r.epsilon
    json.dumps(r.to_dict())  # plain values only
    text = repr(r)
    assert "unit='record'" in text and "epsilon=" in text and "ledger=[" in text


def test_epsilon_and_delta_are_required_everywhere():
    X = _table(200)
    with pytest.raises(ValueError, match="epsilon"):
        dpstats.mean(X, method="bounded", delta=0, bounds=(0, 1))
    with pytest.raises(ValueError, match="epsilon"):
        dpstats.mean(X, method="bounded", epsilon=None, delta=0, bounds=(0, 1))
    with pytest.raises(ValueError, match="epsilon is required"):
        dpstats.count(X)
    with pytest.raises(ValueError, match="delta is required"):
        dpstats.sum(X, epsilon=1, bounds=BOUNDS)
    y = np.sign(X[:, 0] - 50)
    with pytest.raises(ValueError, match="epsilon is required"):
        dpstats.fit(X, y, users=np.arange(200) // 2, delta=1e-6)


def test_no_silent_default_privacy_target_in_the_package():
    """No function of python/dpstats that releases defaults epsilon or delta to a number (the
    privacy calculator dpstats.account releases nothing and is exempt)."""
    mods = [m for m in vars(dpstats).values() if inspect.ismodule(m) and m is not dpstats.account]
    for mod in mods + [dpstats]:
        for name, f in vars(mod).items():
            if not inspect.isfunction(f) and not inspect.isclass(f):
                continue
            fn = f.__init__ if inspect.isclass(f) else f
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            for p in ("epsilon", "delta"):
                if p in params and params[p].default is not inspect.Parameter.empty:
                    # None (required) or delta = 0 (asks for pure DP: never weaker than asked)
                    ok = params[p].default is None or (p == "delta" and params[p].default == 0)
                    assert ok, f"{mod.__name__}.{name}({p}=...)"


def test_everyday_statistics():
    X = _table(20000, 3)
    m = dpstats.column_mean(X, epsilon=1, delta=0, bounds=BOUNDS, seed=2)
    assert np.allclose(m.estimate, X.mean(axis=0), rtol=0.02)
    s = dpstats.sum(X, epsilon=1, delta=1e-6, bounds=BOUNDS, seed=2)
    assert np.allclose(s.estimate, X.sum(axis=0), rtol=0.02)
    sd = dpstats.std(X, epsilon=1, delta=0, bounds=BOUNDS, seed=2)
    assert np.allclose(sd.estimate, X.std(axis=0), rtol=0.05)
    c = dpstats.count(X, epsilon=1, delta=0, seed=2)
    assert abs(c.estimate[0] - 20000) < 50 and c.neighbouring == "add-remove"
    q = dpstats.quantiles(X, [0.25, 0.5, 0.75], epsilon=2, delta=0, bounds=BOUNDS, seed=2)
    assert q.estimate.shape == (2, 3)
    assert np.allclose(q.estimate[0], np.quantile(X[:, 0], [0.25, 0.5, 0.75]), atol=2)
    assert np.all(np.diff(q.estimate, axis=1) >= 0)
    with pytest.raises(ValueError, match="does not apply"):
        dpstats.stat("count", X, epsilon=1, delta=0, bounds=BOUNDS)


def test_histogram_strings_and_codes():
    v = np.array(["red"] * 600 + ["blue"] * 300 + ["teal"])
    h = dpstats.histogram(v, epsilon=1, delta=1e-6, seed=3)
    assert set(h.estimate) == {"red", "blue"}  # the single "teal" row is suppressed
    codes = np.array([1] * 500 + [2] * 100)
    h2 = dpstats.histogram(codes, epsilon=1, delta=0, categories=[1, 2, 3], seed=3)
    assert set(h2.estimate) == {1, 2, 3} and abs(h2.estimate[1] - 500) < 30
    json.dumps(h2.to_dict())


def test_one_budget_across_a_mean_a_median_and_a_fit(tmp_path):
    X = _table(4000, 4)
    budget = dpstats.Budget(epsilon=3, delta=1e-5, accountant="basic")
    dpstats.column_mean(X, epsilon=1, delta=0, bounds=BOUNDS, budget=budget, seed=5)
    dpstats.quantiles(X, [0.5], epsilon=0.5, delta=0, bounds=BOUNDS, budget=budget, seed=5)
    dpstats.variance(X, epsilon=1, delta=1e-6, bounds=BOUNDS, budget=budget, seed=5)
    spent = budget.spent
    assert 0 < spent["epsilon"] <= 3
    path = tmp_path / "budget.json"
    budget.save(path)
    resumed = dpstats.Budget.load(path)
    assert resumed.spent == spent and len(resumed.ledger) == len(budget.ledger)
    n_before = len(resumed.ledger)
    with pytest.raises(dpstats.BudgetExceeded):
        dpstats.column_mean(X, epsilon=2.5, delta=0, bounds=BOUNDS, budget=resumed, seed=5)
    assert len(resumed.ledger) == n_before  # a refused release charges nothing
    with pytest.raises(ValueError, match="exactly one total"):
        dpstats.Budget()


def test_help_shows_docstrings_without_unreachable_pointers():
    for name in dpstats.__all__:
        obj = getattr(dpstats, name)
        if callable(obj):
            doc = inspect.getdoc(obj)
            assert doc, f"dpstats.{name} has no docstring"
            text = pydoc.render_doc(obj, renderer=pydoc.plaintext)
            for ref in re.findall(r"card [\w.-]+\.md|\.\./shared", text):
                pytest.fail(f"help(dpstats.{name}) points to {ref}, not in the package")
