"""The neighbour test for the Python functions (issue 28 item 3; the tool's is
tests/cli/neighbours.py): every function runs on a table and on its neighbours with the same seed,
and every field the declaration calls public (dpstats.output_fields()) must be identical, present
in both releases or in neither. A release carries no undeclared field (the wrapper would warn)."""
import warnings

import numpy as np
import pytest

import dpstats

DECL = dpstats.output_fields()


def table(n=400, seed=1):
    """age (years), income (dollars, lognormal), visits (zero-inflated count)."""
    g = np.random.default_rng(seed)
    return np.column_stack([np.round(g.uniform(18, 80, n), 1),
                            np.round(np.exp(g.normal(np.log(5e4), 0.6, n)), 2),
                            np.where(g.uniform(size=n) < 0.6, 0, g.poisson(3, n))])


OUTLIER = np.array([150.0, 9.9e9, 1e6])


def neighbours(X, relation):
    if relation == "add-remove-stream":  # a stream's horizon is public: a step's row present or zero
        Y = X.copy()
        Y[-1] = 0
        return [Y]
    if relation == "replace-one":
        Y = X.copy()
        Y[-1] = OUTLIER[: X.shape[1]]
        return [Y]
    return [X[1:], np.vstack([X, OUTLIER[: X.shape[1]]])]


def matches(pattern, path):
    p, q = pattern.split("."), path.split(".")
    return len(p) == len(q) and all(
        a == b or (a == "*" and not b.endswith("[]"))
        for a, b in zip(p, q))


def leaves(v, path=""):
    out = {}
    if isinstance(v, dict) and v:
        for k, x in v.items():
            k = str(k).replace("%", "%25").replace(".", "%2E")  # as output_fields.cpp
            for p, vals in leaves(x, f"{path}.{k}" if path else k).items():
                out.setdefault(p, []).extend(vals)
        return out
    if isinstance(v, list) and any(isinstance(e, dict) for e in v):
        for e in v:
            for p, vals in leaves(e, path + "[]").items():
                out.setdefault(p, []).extend(vals)
        return out
    return {path: [v]}


def public(scope, release):
    fields = DECL[scope]["fields"]
    d = release.to_dict()
    for released in ("estimate", "first", "second"):  # the released values themselves
        d.pop(released, None)
    out = {}
    for path, vals in leaves(d).items():
        kind = next((f["kind"] for pat, f in fields.items() if matches(pat, path)), None)
        assert kind is not None, f"{scope}: {path} is not declared"
        if kind == "public":
            out[path] = vals
    return out


def people_users(n_users=1500, m=4, seed=6):
    g = np.random.default_rng(seed)
    X = g.normal(size=(n_users * m, 2))
    y = np.where(X @ np.array([1.0, -0.5]) + 0.5 * g.normal(size=n_users * m) > 0, 1.0, -1.0)
    return X, y, np.repeat(np.arange(n_users), m)


S = dict(seed=11)
CASES = [  # (name, scope, relation, function of a table)
    ("mean dp-mean", "mean", "replace-one",
     lambda X: dpstats.mean(X, "dp-mean", epsilon=1, delta=1e-6, scale=[15, 3e4, 2], **S)),
    ("mean prime", "mean", "replace-one",
     lambda X: dpstats.mean(X, "prime", epsilon=1, delta=1e-6, alpha=0.05, scale=[15, 3e4, 2], **S)),
    ("mean bounded", "mean", "replace-one",
     lambda X: dpstats.mean(X[:, :1], "bounded", epsilon=1, bounds=(0, 100), **S)),
    ("laplace", "noise", "replace-one",
     lambda X: dpstats.laplace(X[:1, 0], sensitivity=200, epsilon=1, **S)),
    ("gaussian", "noise", "replace-one",
     lambda X: dpstats.gaussian(X[:1, 0], sensitivity=200, epsilon=1, delta=1e-6, **S)),
    ("median", "median", "replace-one",
     lambda X: dpstats.geometric_median(X[:, :2], epsilon=1, delta=1e-6, domain_radius=1e6, **S)),
    ("quantile_radius", "quantile-radius", "replace-one",
     lambda X: dpstats.quantile_radius(X[:, :2], epsilon=1, delta=1e-6, min_radius=1,
                                       domain_radius=1e10, **S)),
    ("quantile_radius permuted", "quantile-radius", "replace-one",
     lambda X: dpstats.quantile_radius(X[:, :2], "fast-radius-permuted", epsilon=1, min_radius=1,
                                       domain_radius=1e10, **S)),
    ("moments", "moments", "replace-one",
     lambda X: dpstats.moments(X[:, [0, 2]], clip=200, epsilon=1, delta=1e-6, **S)),
    ("moments add-remove", "moments", "add-remove-stream",
     lambda X: dpstats.moments(X[:, [0, 2]], clip=200, epsilon=1, delta=1e-6,
                               neighbouring="add-remove", **S)),
    ("count", "stat", "add-remove", lambda X: dpstats.count(X, epsilon=1, delta=0, **S)),
    ("sum", "stat", "replace-one",
     lambda X: dpstats.sum(X[:, :1], epsilon=1, delta=0, bounds=(0, 100), **S)),
    ("column_mean", "stat", "replace-one",
     lambda X: dpstats.column_mean(X[:, :1], epsilon=1, delta=0, bounds=(0, 100), **S)),
    ("variance", "stat", "replace-one",
     lambda X: dpstats.variance(X[:, :1], epsilon=1, delta=1e-6, bounds=(0, 100), **S)),
    ("quantiles", "stat", "replace-one",
     lambda X: dpstats.quantiles(X[:, :1], [0.5], epsilon=1, delta=0, bounds=(0, 100), **S)),
    ("histogram", "stat", "add-remove",
     lambda X: dpstats.histogram(X[:, 2], epsilon=1, delta=1e-6, **S)),
    ("bounds", "bounds", "replace-one", lambda X: dpstats.bounds(X, epsilon=1, **S)),
    ("bounds add-remove", "bounds", "add-remove",
     lambda X: dpstats.bounds(X, epsilon=1, neighbouring="add-remove", **S)),
    ("bounds coverage", "bounds", "replace-one",
     lambda X: dpstats.bounds(X, epsilon=1, coverage=0.1, **S)),
    ("bounds coverage add-remove", "bounds", "add-remove",
     lambda X: dpstats.bounds(X, epsilon=1, coverage=0.1, neighbouring="add-remove", **S)),
    ("fit heavy-tailed", "fit/heavy-tailed", "replace-one",
     lambda X: dpstats.fit(X[:, 1:] / 1e4, X[:, 0], task="heavy-tailed", epsilon=1,
                           domain_radius=2, moment_bound=3, centre=False, **S).release),
    ("fit classify", "fit/classify", "add-remove",
     lambda X: dpstats.fit(X[:, :2] / [100, 1e5], (X[:, 2] > 0).astype(int), task="classify",
                           classes=2, epsilon=1, delta=1e-6, epochs=2, batch_size=40,
                           n_public=400, **S).release),
    ("fit classify holdout", "fit/classify", "add-remove",
     lambda X: dpstats.fit(X[:, :2] / [100, 1e5], (X[:, 2] > 0).astype(int), task="classify",
                           classes=2, epsilon=1, delta=1e-6, epochs=1, batch_size=40,
                           n_public=400, feature_scale=1, holdout=0.25, **S).release),
]


@pytest.mark.parametrize("name,scope,relation,run", CASES, ids=[c[0] for c in CASES])
def test_public_fields_do_not_depend_on_the_neighbour(name, scope, relation, run):
    X = table()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an undeclared field
        a = run(X)
        for Y in neighbours(X, relation):
            b = run(Y)
            assert b.neighbouring == a.neighbouring == relation.replace("-stream", "")
            pa, pb = public(scope, a), public(scope, b)
            diff = [p for p in set(pa) | set(pb) if pa.get(p) != pb.get(p)]
            assert not diff, f"{name}: public fields differ: {sorted(diff)}"


def test_user_level_fit_public_fields_do_not_depend_on_one_user():
    X, y, users = people_users()
    run = lambda X, y: dpstats.fit(X, y, users=users, items_per_user=4, epsilon=2, delta=1e-6,
                                   domain_radius=3, feature_bound=3, centre=False, **S).release
    Y, yy = X.copy(), y.copy()
    last = users == users[-1]
    Y[last], yy[last] = 1e6, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        pa, pb = public("fit/user-level", run(X, y)), public("fit/user-level", run(Y, yy))
    assert pa == pb


def test_the_declaration_names_every_scope_and_kind():
    for scope in ["mean", "median", "quantile-radius", "moments", "moments/step", "stat",
                  "bounds", "noise", "fit/user-level", "fit/heavy-tailed", "fit/classify"]:
        assert scope in DECL, scope
        kinds = {f["kind"] for f in DECL[scope]["fields"].values()}
        assert kinds <= {"public", "released", "derived", "non-private"}, scope
