import numpy as np
import pytest

import dpstats
import mpi_harness


def users_task(n=400, m=10, d=4, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w *= 3 / np.linalg.norm(w)
    X = rng.standard_normal((n * m, d)) / np.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(rng.uniform(size=n * m) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)
    users = np.repeat(np.arange(n), m)
    return X, y, users, w


def test_fit_default_is_recommended_dp_gd_and_states_user_level_privacy():
    X, y, users, w = users_task()
    # The generator clips rows to norm 1: that is the public feature bound (without it the bound is
    # estimated privately, which at 400 users and 5% of rho is too coarse for this check).
    r = dpstats.fit(X, y, users=users, items_per_user=10, task="user-level", epsilon=1.0, delta=1e-6,
                    domain_radius=5, feature_bound=1.0, seed=4)
    assert r.estimate.shape == (4,)
    assert r.certified and r.seeded and r.status == "ok"
    assert r.diagnostics["method"] == "dp-gd-user"
    assert r.diagnostics["gradient_evaluations"] == 20 * 400 * 10
    # The guarantee is what the ledger (scale estimate + DP-GD, zCDP) composes to: the target, up
    # to the rounding of the conversions, never above it.
    assert 1.0 - 1e-9 < r.epsilon <= 1.0 and r.delta == 1e-6
    again = dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, domain_radius=5,
                        feature_bound=1.0, seed=4)
    np.testing.assert_array_equal(r.estimate, again.estimate)
    # At this size the private fit points the right way.
    assert r.estimate @ w / (np.linalg.norm(r.estimate) * np.linalg.norm(w)) > 0.5


@pytest.mark.parametrize("method,count", [("dp-sgd-user", (400 // 20) * 20 * 10),
                                          ("dp-gd-filter", 20 * 400 * 10),
                                          ("dp-sgd-group", (4000 // 20) * 20),
                                          ("phased-sgd", None),
                                          ("non-private", 4000)])
def test_every_method_runs_and_counts_gradients(method, count):
    X, y, users, _ = users_task()
    r = dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, method=method, domain_radius=5,
                    feature_bound=1.0, seed=1)
    if count is not None:
        assert r.diagnostics["gradient_evaluations"] == count
    else:
        sched = r.diagnostics["schedule"]
        assert r.diagnostics["gradient_evaluations"] == sched["planned_gradient_evaluations"]
    assert np.linalg.norm(r.estimate) <= 5 * (1 + 1e-12)


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "huber"])
def test_every_loss(loss):
    X, y, users, _ = users_task(200, 5, 3, 2)
    # centred by construction; at 200 users the offset check's noise (sd 0.2 of the users) may
    # not tell, and the fit would abstain: the caller says the columns are centred
    r = dpstats.fit(X, y, users=users, items_per_user=5, epsilon=1.0, delta=1e-6, loss=loss,
                    domain_radius=2, feature_bound=1.0, label_bound=1.0, centre=False, seed=2)
    assert r.status == "ok" and np.all(np.isfinite(r.estimate))


def test_too_few_users_for_the_estimated_bound_abstain_with_a_reason():
    # 400 users at epsilon = 1: the scale layer's rank guarantee for the feature_bound estimate
    # does not hold (t/n + alpha >= 1/2), so the release abstains and says why (issue #15).
    X, y, users, _ = users_task()
    r = dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, domain_radius=5, seed=1)
    assert r.status == "abstained" and r.estimate.size == 0
    assert ("the private estimate of feature_bound" in r.diagnostics["abstained"]
            and "is not usable" in r.diagnostics["abstained"])
    assert r.diagnostics["bounds"]["feature_bound"]["status"] == "insufficient_data"
    # the number of users is public: the rank error alone decides it, before anything is charged
    assert r.epsilon == 0 and r.ledger == []


def test_bad_input_raises_value_error():
    X, y, users, _ = users_task(50, 2, 2, 3)
    with pytest.raises(ValueError):
        dpstats.fit(X, y, users=users, items_per_user=2, epsilon=-1)
    with pytest.raises(ValueError):
        dpstats.fit(X, y, users=users, items_per_user=2, epsilon=1.0, delta=1e-6, method="alg9")
    with pytest.raises(ValueError):
        dpstats.fit(X, y[:-1], users=users, items_per_user=2, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError):
        dpstats.fit(X, y, users=users.astype(float) + 0.5, items_per_user=2, epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError):
        dpstats.fit(X, y, users=users, items_per_user=2, epsilon=1.0, delta=1e-6, task="item-level")
    with pytest.raises(ValueError, match="paper constants|cannot run"):
        dpstats.fit(X, y, users=users, items_per_user=2, epsilon=1.0, delta=1e-6, method="phased-sgd", profile="paper",
                    feature_bound=1.0, domain_radius=1)


@pytest.mark.parametrize("method,loss", [("accelerated", "logistic"), ("nonsmooth", "hinge")])
def test_alg3_methods_run_count_gradients_and_are_certified(method, loss):
    X, y, users, _ = users_task()
    r = dpstats.fit(X, y, users=users, items_per_user=10, task="user-level", method=method, loss=loss,
                    epsilon=1.0, delta=1e-6, domain_radius=5, seed=3, steps=10,
                    users_per_step=100, feature_bound=1.0)
    assert r.certified and r.status == "ok" and r.estimate.shape == (4,)
    assert r.diagnostics["method"] == method
    assert r.diagnostics["profile"] == "practical"
    # Alg 3 practical, one phase: T·K·m gradients exactly.
    assert r.diagnostics["gradient_evaluations"] == 10 * 100 * 10
    assert np.linalg.norm(r.estimate) <= 5 + 1e-9


def test_alg3_misuse_raises_value_error():
    X, y, users, _ = users_task()
    with pytest.raises(ValueError, match="nonsmooth"):
        dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, method="accelerated", loss="hinge", domain_radius=5)
    with pytest.raises(ValueError, match="cannot run at this size"):
        dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, method="accelerated", profile="paper",
                    feature_bound=1.0, domain_radius=5)
    with pytest.raises(ValueError, match="users_per_step"):
        dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, method="accelerated", users_per_step=0, domain_radius=5)


def test_required_parameters_and_label_mapping():
    X, y, users, _ = users_task(200, 5, 3, 5)
    with pytest.raises(ValueError, match="epsilon"):
        dpstats.fit(X, y, users=users, items_per_user=5, domain_radius=5)
    with pytest.raises(ValueError, match="domain_radius"):
        dpstats.fit(X, y, users=users, items_per_user=5, epsilon=1.0, delta=1e-6)
    # The rows per user are public and required (issue 28): never taken from the row count.
    with pytest.raises(ValueError, match="items_per_user is required"):
        dpstats.fit(X, y, users=users, epsilon=1.0, delta=1e-6, domain_radius=5)
    # 200 users are too few for an estimated bound with a guarantee: both abstain, identically.
    a = dpstats.fit(X, y, users=users, items_per_user=5, epsilon=1.0, delta=1e-6, domain_radius=5, seed=9)
    b = dpstats.fit(X, (y + 1) / 2, users=users, items_per_user=5, epsilon=1.0, delta=1e-6, domain_radius=5, seed=9)
    assert a.status == b.status == "abstained"
    assert a.diagnostics["bounds"]["feature_bound"]["estimated"]
    # With the generator's public bound (rows clipped to norm 1) and no centring (at 200 users and
    # epsilon 1 the offset check cannot rule out a class under 10%, issue 30) the fits run: the
    # mapping, nothing else.
    a = dpstats.fit(X, y, users=users, items_per_user=5, epsilon=1.0, delta=1e-6, domain_radius=5, feature_bound=1.0,
                    centre=False, seed=9)
    b = dpstats.fit(X, (y + 1) / 2, users=users, items_per_user=5, epsilon=1.0, delta=1e-6, domain_radius=5,
                    feature_bound=1.0, centre=False, seed=9)
    np.testing.assert_array_equal(a.estimate, b.estimate)
    assert b.diagnostics["labels"] == "mapped {0, 1} -> {-1, +1}"
    bad = y.copy()
    bad[0] = 2
    with pytest.raises(ValueError, match="labels"):
        dpstats.fit(X, bad, users=users, items_per_user=5, epsilon=1.0, delta=1e-6, domain_radius=5)


def test_methods_come_from_the_library_registry():
    from dpstats import _dpstats
    assert _dpstats.fit_methods("user-level")[0] == "dp-gd-user"
    assert "lipschitz-extension" in _dpstats.fit_methods("heavy-tailed")


def _people(n, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 80, n)
    income = rng.lognormal(np.log(5e4), 0.5, n)
    return np.column_stack([age, income]), 0.3 * age + 1e-4 * income + rng.normal(0, 5, n)


def test_heavy_tailed_raw_units_too_few_records_abstain_and_centre_false_runs():
    # 3000 records at epsilon = 1 are too few to centre: columns far from 0 abstain (issue #15).
    X, y = _people(3000)
    r = dpstats.fit(X, y, task="heavy-tailed", epsilon=1.0, domain_radius=2, seed=1)
    assert r.status == "abstained" and r.estimate.size == 0
    assert "far from 0" in r.diagnostics["abstained"]
    assert r.diagnostics["stated_error"]["radius"] is None
    r = dpstats.fit(X, y, task="heavy-tailed", epsilon=1.0, domain_radius=2, seed=1, centre=False)
    assert r.status == "ok" and r.diagnostics["centring"]["reason"] == "centre = false"
    r = dpstats.fit(X, y, task="heavy-tailed", epsilon=1.0, domain_radius=2, seed=1, centre=True)
    assert r.status == "abstained"
    # Standardised by the analyst: runs.
    Z = (X - np.median(X, axis=0)) / X.std(axis=0)
    r = dpstats.fit(Z, y - np.median(y), task="heavy-tailed", epsilon=1.0, domain_radius=2, seed=1)
    assert r.status == "ok" and "offset_check" in r.diagnostics["centring"]
    with pytest.raises(ValueError):
        dpstats.fit(X, y, task="heavy-tailed", epsilon=1.0, domain_radius=2, centre="yes")


def test_user_level_centre_option():
    X, y, users, _ = users_task()
    r = dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, domain_radius=5,
                    feature_bound=1.0, seed=1, centre=False)
    assert r.status == "ok" and r.diagnostics["centring"]["reason"] == "centre = false"
    assert r.diagnostics["stated_error"]["radius"] is None
    r = dpstats.fit(X, y, users=users, items_per_user=10, epsilon=1.0, delta=1e-6, domain_radius=5, seed=1,
                    centre=True)
    assert r.status == "abstained"  # 400 users are too few for the private centring


@pytest.mark.parametrize("method", ["dp-gd-user", "phased-sgd", "accelerated"])
def test_user_level_threads_give_the_same_seeded_fit(method):
    # Issue 17: the per-user gradient passes take threads=; a seeded fit does not depend on it.
    X, y, users, _ = users_task(n=600)
    fits = [dpstats.fit(X, y, users=users, items_per_user=10, method=method, epsilon=1.0, delta=1e-6,
                        domain_radius=5, feature_bound=1.0, seed=8, threads=t) for t in (1, 2, 3)]
    for f in fits[1:]:
        np.testing.assert_array_equal(f.estimate, fits[0].estimate)
        assert f.ledger == fits[0].ledger


def test_user_level_comm_ranks_give_the_single_process_release(tmp_path):
    """comm= (issue 18): under mpirun -np 3, with users' rows spread over the ranks, dp-gd-user
    equals the one-process release."""
    import json
    rng = np.random.default_rng(4)
    # 1000 users: the offset check's noise (sd about 5% of the users) rules out a class under 10%
    # (at 300 users it often cannot, and the fit abstains: issue 30)
    users = rng.permutation(np.repeat(np.arange(1000) * 3 - 50, 1 + np.arange(1000) % 5))
    X = rng.normal(size=(users.size, 3))
    y = np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=users.size) > 0, 1.0, -1.0)
    path = tmp_path / "U.npy"
    np.save(path, np.column_stack([users, y, X]))
    kwargs = dict(epsilon=1.0, delta=1e-6, domain_radius=3.0, feature_bound=2.0, steps=8, seed=5,
                  items_per_user=3)
    single = dpstats.fit(X, y, users, task="user-level", **kwargs)
    assert single.status == "ok"
    out = mpi_harness.mpirun(3, "mpi_user_level_ranks.py", str(path), json.dumps(kwargs))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == [float(v).hex() for v in single.estimate]
    assert got["release"] == single.to_json()


def test_user_level_default_fit_on_two_ranks_is_the_single_process_release(tmp_path):
    """comm= with the defaults (issue 18 item 4): no feature_bound (estimated over users on their
    home ranks), the private centring over one row per user (odd units), under mpirun -np 2."""
    import json
    rng = np.random.default_rng(6)
    users = rng.permutation(np.repeat(np.arange(2400) * 3 + 7, 1 + np.arange(2400) % 4))
    X = rng.normal(size=(users.size, 3))
    y = np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=users.size) > 0, 1.0, -1.0)
    X[:, 0] *= 1e-3
    X[:, 1] = 5e4 + 1e3 * X[:, 1]
    path = tmp_path / "U.npy"
    np.save(path, np.column_stack([users, y, X]))
    kwargs = dict(epsilon=4.0, delta=1e-6, domain_radius=3.0, steps=8, seed=5, items_per_user=2)
    single = dpstats.fit(X, y, users, task="user-level", **kwargs)
    assert single.status == "ok"
    assert single.diagnostics["intercept"] is True
    assert single.diagnostics["bounds"]["feature_bound"]["estimated"] is True
    out = mpi_harness.mpirun(2, "mpi_user_level_ranks.py", str(path), json.dumps(kwargs))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == [float(v).hex() for v in single.estimate]
    assert got["release"] == single.to_json()


def test_holdout_states_a_private_validation_loss_for_user_level_and_heavy_tailed():
    X, y, users, _ = users_task(n=2000, m=3)
    r = dpstats.fit(X, y, users=users, epsilon=2.0, delta=1e-6, domain_radius=5, feature_bound=1.0,
                    centre=False, holdout=0.2, items_per_user=3, seed=3)
    h = r.diagnostics["holdout"]
    # exactly round(0.2 x 2000) users held out: a public count (issue 30)
    assert r.status == "ok" and h["unit"] == "user" and h["units"] == 400
    assert r.diagnostics["n_users"] == 1600
    assert h["population_interval_95"][0] <= h["loss"] <= h["population_interval_95"][1]
    t = dpstats.fit(X, y, task="heavy-tailed", loss="logistic", epsilon=2.0, domain_radius=5,
                    moment_bound=1.0, centre=False, holdout=0.1, seed=4)
    assert t.status == "ok" and t.diagnostics["holdout"]["unit"] == "record"
    assert t.diagnostics["holdout"]["units"] == round(0.1 * len(y))
    assert any("holdout" in e["purpose"] for e in t.ledger)


def test_task_required_unless_users_given_and_text_user_ids_accepted():
    # issue 30: no silent task; users= decides user-level; text ids are mapped to integers
    X, y, users, _ = users_task(200, 4, 3, 5)
    with pytest.raises(ValueError, match="task is required"):
        dpstats.fit(X, y, epsilon=1.0, delta=1e-6, domain_radius=5)
    text = np.array([f"user-{u:04d}" for u in users], dtype=object)
    a = dpstats.fit(X, y, users=users, epsilon=1.0, delta=1e-6, domain_radius=5,
                    feature_bound=1.0, items_per_user=4, centre=False, seed=3)
    b = dpstats.fit(X, y, users=text, epsilon=1.0, delta=1e-6, domain_radius=5,
                    feature_bound=1.0, items_per_user=4, centre=False, seed=3)
    # the same grouping (ids sorted the same way) gives the same seeded release
    assert a.release.status == b.release.status == "ok"
    np.testing.assert_array_equal(a.release.estimate, b.release.estimate)


def test_text_labels_are_a_value_error_naming_the_argument():
    X = np.random.default_rng(0).standard_normal((300, 2))
    y = np.array(["setosa", "virginica", "versicolor"] * 100)
    with pytest.raises(ValueError, match="^y must hold integer labels"):
        dpstats.fit(X, y, task="classify", classes=3, epsilon=1.0, delta=1e-6)
