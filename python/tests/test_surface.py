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
ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "guide.md").read_text()


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


def _corrupted(n=20000, seed=7):
    g = np.random.default_rng(seed)
    X = np.column_stack([g.normal(40, 10, n), g.lognormal(11, 0.4, n)])
    X[: n // 50] = (999, 9.9e6)  # 2% corrupted rows
    return X


def _regression(n=20000, seed=8):
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, 2))
    return x, x @ np.array([0.5, -0.3]) + 0.2 * g.standard_t(3, n)


def test_one_budget_across_a_mean_a_median_and_a_fit(tmp_path):
    """A PRIME mean (zCDP), a geometric median, a pure-DP fit and a stability histogram
    (approximate) against one Budget; every overspending call is refused with nothing charged;
    the saved budget resumes."""
    X = _corrupted()
    x, y = _regression()
    budget = dpstats.Budget(epsilon=3, delta=1e-5, accountant="rdp")
    m = dpstats.mean(X, method="prime", alpha=0.05, epsilon=1, delta=1e-6, budget=budget, seed=5)
    med = dpstats.median(X, epsilon=0.5, delta=1e-6, columns=[1], budget=budget, seed=5)
    model = dpstats.fit(x, y, task="heavy-tailed", epsilon=0.5, domain_radius=2, budget=budget,
                        seed=5)
    h = dpstats.histogram(np.round(X[:, 0] / 10), epsilon=0.2, delta=1e-6, budget=budget, seed=5)
    for r in (m, med, model.release, h):
        assert r.ledger and len(budget.ledger) >= len(r.ledger)
    kinds = [{e["loss"]["kind"] for e in r.ledger} for r in (m, med, model.release, h)]
    assert "zcdp" in kinds[0] and kinds[2] == {"pure"} and kinds[3] == {"approximate"}
    assert len(budget.ledger) == sum(len(r.ledger) for r in (m, med, model.release, h))
    spent = budget.spent
    assert 0 < spent["epsilon"] <= 3
    n_before = len(budget.ledger)
    for overspend in (
            lambda: dpstats.mean(X, method="prime", alpha=0.05, epsilon=100, delta=1e-6,
                                 budget=budget),
            lambda: dpstats.median(X, epsilon=100, delta=1e-6, budget=budget),
            lambda: dpstats.fit(x, y, task="heavy-tailed", epsilon=100, domain_radius=2,
                                budget=budget)):
        with pytest.raises(dpstats.BudgetExceeded):
            overspend()
        assert len(budget.ledger) == n_before and budget.spent == spent  # nothing charged
    # (epsilon=100: the rdp accountant composes a pure fit's many small steps far below the sum
    # of their epsilons, so a smaller overspend of a fit may well fit in the total)
    path = tmp_path / "budget.json"
    budget.save(path)
    resumed = dpstats.Budget.load(path)
    assert resumed.spent == spent and len(resumed.ledger) == n_before
    assert spent["analysis"] in ("rdp", "zcdp", "basic")  # the smallest of the rdp analyses
    dpstats.count(X, epsilon=0.05, delta=0, budget=resumed, seed=5)
    assert len(resumed.ledger) == n_before + 1
    with pytest.raises(ValueError, match="exactly one total"):
        dpstats.Budget()


def test_every_public_function_takes_a_budget():
    X = _corrupted(2000)
    x, y = _regression(2000)
    b = dpstats.Budget(epsilon=50, delta=1e-4, accountant="rdp")
    calls = [
        lambda: dpstats.bounds(X, epsilon=0.5, budget=b, seed=1),
        lambda: dpstats.moments(X[:200, :1], clip=100, epsilon=0.5, delta=1e-6, budget=b, seed=1),
        lambda: dpstats.quantile_radius(X, epsilon=0.5, delta=1e-6, min_radius=1,
                                        domain_radius=1e8, budget=b, seed=1),
        # a public feature_bound: 500 users at epsilon 0.5 are too few to estimate it (the fit
        # would abstain before spending)
        lambda: dpstats.fit(x, np.sign(y), users=np.arange(2000) // 4, items_per_user=4,
                            feature_bound=5.0, epsilon=0.5, delta=1e-6, domain_radius=2, budget=b,
                            seed=1),
        # a public feature_scale: 2000 rows at epsilon 0.5 are too few to estimate it (the
        # classifier would abstain before spending)
        lambda: dpstats.fit(x, (y > 0).astype(int), task="classify", classes=2, epochs=1,
                            n_public=len(x), feature_scale=1.0, epsilon=0.5, delta=1e-6,
                            budget=b, seed=1),
        lambda: dpstats.laplace([1.0, 2.0], 1.0, 0.5, budget=b, seed=1),
        lambda: dpstats.variance(X, epsilon=0.5, delta=0, bounds=BOUNDS, budget=b, seed=1),
    ]
    for call in calls:
        n = len(b.ledger)
        call()
        assert len(b.ledger) > n
    est = dpstats.MomentEstimator(1, clip=1, epsilon=0.5, delta=1e-6, steps=3, budget=b, seed=1)
    est.push([0.5])
    assert b.ledger[-1]["purpose"] and len(b.ledger) > len(calls)


def test_a_non_private_run_refuses_a_budget():
    x, y = _regression(400)
    b = dpstats.Budget(epsilon=1, delta=1e-6, accountant="rdp")
    with pytest.raises(ValueError, match="budget"):
        dpstats.fit(x, (y > 0).astype(int), task="classify", optimizer="adam", classes=2,
                    epochs=1, budget=b)
    with pytest.raises(ValueError, match="budget"):
        dpstats.fit(x, np.sign(y), users=np.arange(400) // 2, items_per_user=2,
                    method="non-private", domain_radius=2, budget=b)
    with pytest.raises(ValueError, match="budget"):
        dpstats.median(x, method="weiszfeld", budget=b)
    assert b.ledger == []


def test_columns_on_arrays_through_one_helper():
    X = np.column_stack([_corrupted(), np.arange(20000) % 3])
    a = dpstats.column_mean(X, epsilon=1, delta=0, bounds=[(0, 120)], columns=[0], seed=1)
    assert a.estimate.shape == (1,)
    r = dpstats.median(X, epsilon=1, delta=1e-6, columns=[0], seed=1)
    assert r.estimate.shape == (1,)
    mo = dpstats.moments(X[:100], clip=1e3, epsilon=1, delta=1e-6, columns=[0], seed=1)
    assert mo.first.shape == (100, 1)
    bd = dpstats.bounds(X, epsilon=1, columns=[1, 0], seed=1)
    assert bd.estimate["lo"].shape == (2,)
    h = dpstats.histogram(X, epsilon=1, delta=0, categories=[0, 1, 2], columns=[2], seed=1)
    assert set(h.estimate) == {0, 1, 2} and abs(h.estimate[1] - 20000 / 3) < 50
    with pytest.raises(ValueError, match="0-based column indices"):
        dpstats.column_mean(X, epsilon=1, delta=0, columns=["age"])
    with pytest.raises(ValueError, match="out of range"):
        dpstats.median(X, epsilon=1, delta=1e-6, columns=[5])


def test_text_column_histogram_from_a_file(tmp_path):
    p = tmp_path / "depts.csv"
    rows = ["id,dept,age"] + [f'p{i},"Legal, Compliance",{30 + i % 9}' for i in range(300)] + \
        [f"q{i},Sales,{40 + i % 7}" for i in range(500)] + ["r1,Rare,50", ""]
    p.write_text("\n".join(rows) + "\n")
    (dept,), names = dpstats.read_table(p, columns=["dept"], text=True)
    assert names == ["dept"] and len(dept) == 801 and dept[0] == "Legal, Compliance"
    h = dpstats.histogram(dept, epsilon=1, delta=1e-6, seed=2)
    assert set(h.estimate) == {"Legal, Compliance", "Sales"}  # "Rare" suppressed
    X, names = dpstats.read_table(p, columns=["age"])
    assert X.shape == (801, 1)


def test_dataframes_and_column_names_everywhere():
    pd = pytest.importorskip("pandas")
    g = np.random.default_rng(4)
    n = 20000
    df = pd.DataFrame({"id": [f"p{i}" for i in range(n)],
                       "dept": g.choice(["Legal, Compliance", "Sales"], n),
                       "age": g.normal(40, 10, n), "salary": g.lognormal(11, 0.4, n),
                       "user": np.arange(n) // 3, "label": g.integers(0, 2, n)})
    cols = ["age", "salary"]
    B = [(0, 120), (0, 1e6)]
    for f in (dpstats.count, dpstats.column_mean, dpstats.sum, dpstats.variance, dpstats.std):
        kw = {} if f is dpstats.count else {"bounds": B}
        r = f(df, epsilon=1, delta=0, columns=cols, seed=1, **kw)
        assert r.status == "ok"
    q = dpstats.quantiles(df, [0.5], epsilon=1, delta=0, bounds=B, columns=cols, seed=1)
    assert q.estimate.shape == (2, 1)
    assert dpstats.mean(df, method="dp-mean", epsilon=1, delta=1e-6, columns=cols,
                        seed=1).estimate.shape == (2,)
    assert dpstats.median(df, epsilon=1, delta=1e-6, columns=cols, seed=1).estimate.shape == (2,)
    assert dpstats.moments(df.head(50), clip=1e6, epsilon=1, delta=1e-6, columns=cols,
                           seed=1).first.shape == (50, 2)
    assert dpstats.bounds(df, epsilon=1, columns=cols, seed=1).estimate["lo"].shape == (2,)
    h = dpstats.histogram(df, epsilon=1, delta=1e-6, columns="dept", seed=1)
    assert set(h.estimate) == {"Legal, Compliance", "Sales"}
    h2 = dpstats.histogram(df["dept"], epsilon=1, delta=1e-6, seed=1)
    assert set(h2.estimate) == set(h.estimate)
    z = df.assign(age=(df.age - 40) / 10, salary=np.log(df.salary) - 11)
    m = dpstats.fit(z, "label", task="classify", columns=cols, classes=2, epochs=1, epsilon=1,
                    delta=1e-6, n_public=n, seed=1)
    assert m.coef_.size == 3 * 2 and m.predict(z[cols]).shape == (n,)
    u = dpstats.fit(z, z.label * 2 - 1, users="user", items_per_user=3, columns=cols, epsilon=1,
                    delta=1e-6, domain_radius=2, seed=1)
    # 6667 users are enough for the private centring: d weights and an intercept (issue #15).
    assert u.coef_.shape == (2,) and np.isfinite(u.intercept_)
    assert u.release.diagnostics["intercept"] is True
    with pytest.raises(ValueError, match="not numeric"):
        dpstats.column_mean(df, epsilon=1, delta=0)  # text columns need columns=
    with pytest.raises(ValueError, match="not a column"):
        dpstats.median(df, epsilon=1, delta=1e-6, columns=["height"])


def test_count_counts_rows_of_a_table_with_text_columns():
    # issue 30: counting rows reads no cell (the tool's `stat count` without --columns), so a
    # table with dates and airport codes is fine; columns= still picks numeric columns
    rows = [[f"2024-01-{i % 28 + 1:02d}", "SFO" if i % 3 else "JFK", (i * 37) % 120 - 10]
            for i in range(3000)]
    r = dpstats.count(np.array(rows, dtype=object), epsilon=1, delta=0, seed=1)
    assert r.status == "ok" and abs(r.estimate[0] - 3000) < 100
    assert dpstats.count(rows, epsilon=1, delta=0, seed=1).estimate[0] == r.estimate[0]
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(rows, columns=["date", "origin", "delay"])
    assert dpstats.count(df, epsilon=1, delta=0, seed=1).estimate[0] == r.estimate[0]
    assert dpstats.count(df, epsilon=1, delta=0, columns=["delay"], seed=1).status == "ok"
    with pytest.raises(ValueError, match="column 2 is not numeric \\(named 'origin'"):
        dpstats.count(df, epsilon=1, delta=0, columns=["delay", "origin"])


def test_help_shows_docstrings_without_unreachable_pointers():
    for name in dpstats.__all__:
        obj = getattr(dpstats, name)
        if callable(obj):
            doc = inspect.getdoc(obj)
            assert doc and len(doc) >= 60, f"dpstats.{name} has no useful docstring"
            text = pydoc.render_doc(obj, renderer=pydoc.plaintext)
            for ref in re.findall(r"card [\w.-]+\.md|\.\./shared", text):
                pytest.fail(f"help(dpstats.{name}) points to {ref}, not in the package")
            for ref in re.findall(r"docs/[\w/.-]+\.md", text):
                assert (ROOT / ref).is_file(), f"help(dpstats.{name}) points to missing {ref}"
            for quoted in re.findall(r'docs/guide\.md "([^"]+)"', text):
                assert quoted in GUIDE, f"help(dpstats.{name}): no guide section {quoted!r}"
