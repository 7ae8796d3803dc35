"""dpstats.fit(X, y, task="classify"): private classifiers (DP-SGD / DP-Adam variants)."""
import math

import numpy as np
import pytest

import dpstats
import mpi_harness


def blobs(n, d=6, k=3, seed=0, spread=0.3):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(size=(k, d))
    y = rng.integers(0, k, size=n)
    X = centers[y] + spread * (rng.uniform(size=(n, d)) - 0.5)
    return X, y


def test_private_jme_adam_learns_and_states_its_privacy():
    X, y = blobs(3000, seed=1)
    Xt, yt = blobs(500, seed=1)
    r = dpstats.fit(X, y, task="classify", classes=3, epsilon=2.0, delta=1e-5, epochs=2,
                    batch_size=100, step_size=0.02, X_test=Xt, y_test=yt, seed=3, n_public=3000)
    assert r.certified and r.seeded
    assert 1.9 < r.epsilon <= 2.0 and r.delta == 1e-5
    assert r.neighbouring == "add-remove"
    assert r.estimate.shape == ((6 + 1) * 3,)
    assert len(r.diagnostics["test_accuracy"]) == 2
    assert r.diagnostics["test_accuracy"][-1] > 0.6
    assert r.diagnostics["optimizer"] == "dp-adam-jme"
    # The default plan standardises each column (docs/proofs/training.md §3): the private row
    # count, the three selections on each of the 6 columns and the atom count, at the planned
    # share s of the target's rho (7/8 to the count and selections, 1/8 to the atom count); then
    # the steps and the epoch losses.
    purposes = [e["purpose"] for e in r.ledger]
    assert len(r.ledger) == 7, purposes
    assert r.diagnostics["feature_scale_source"].startswith("private per-column")
    assert "count of the rows" in purposes[0] and "MAD/2" in purposes[4]
    assert "gradient" in purposes[5] and "training-loss" in purposes[6]
    share = r.diagnostics["scale_share"]["value"]
    assert r.diagnostics["scale_share"]["source"] == "planned" and 0.1 <= share <= 0.5
    selections = sum(e.get("count", 1) * e["loss"]["epsilon"] ** 2 / 2 for e in r.ledger[:4])
    assert [e.get("count", 1) for e in r.ledger[:4]] == [1, 6, 6, 6]
    atom = r.ledger[4]["loss"]["rho"]
    assert selections <= 7 * atom * (1 + 1e-9) and selections > 0.999 * 7 * atom
    assert r.diagnostics["accountant"] == "pld"  # secure: the lattice Gaussian, coupled (§9)
    assert r.diagnostics["epsilon_pld"] <= r.diagnostics["epsilon_rdp"]
    assert r.diagnostics["feature_scale_source"].startswith("private")
    assert r.diagnostics["sampling_rate"] == 100 / 3000 and r.diagnostics["n_public"] == 3000
    assert "test_accuracy_warning" not in r.diagnostics
    for clock in ("examples_per_second", "train_seconds"):  # timings are not released
        assert clock not in r.diagnostics


def test_non_private_adam_and_mlp():
    X, y = blobs(2000, seed=2, spread=0.2)
    r = dpstats.fit(X, y, task="classify", optimizer="adam", model="mlp", hidden=8, classes=3,
                    epochs=3, batch_size=50, step_size=0.02, X_test=X, y_test=y, seed=4)
    assert math.isinf(r.epsilon) and not r.certified
    assert r.estimate.shape == ((6 + 1) * 8 + (8 + 1) * 3,)
    assert r.diagnostics["test_accuracy"][-1] > 0.9
    # X_test is the training data: the accuracy is an exact statistic of it, and the release says so.
    assert "NOT covered by the privacy guarantee" in r.diagnostics["test_accuracy_warning"]


def test_noise_multiplier_reports_epsilon():
    X, y = blobs(1000, seed=5)
    r = dpstats.fit(X, y, task="classify", optimizer="dp-sgd", classes=3, noise_multiplier=2.0,
                    epsilon=10.0, delta=1e-5, epochs=1, batch_size=50, step_size=0.5, seed=6,
                    n_public=1000)
    assert r.certified and 0 < r.epsilon < 5
    assert r.diagnostics["noise_multiplier"] >= 2.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(classes=3, optimizer="sgd"), "optimizer must be one of"),
    (dict(classes=3, model="cnn"), "model must be"),
    (dict(), "classes"),
    (dict(classes=3), "epsilon is required"),
    (dict(classes=3, epsilon=1.0), "delta is required"),
    (dict(classes=3, epsilon=1.0, delta=1e-5), "n_public is required"),
    (dict(classes=3, epsilon=1.0, delta=1e-5, n_public=40), "batch_size"),
    (dict(classes=3, optimizer="adam", epsilon=1.0), "not private"),
    (dict(classes=3, epsilon=-1.0, delta=1e-5, n_public=100), "epsilon"),
    (dict(classes=3, epsilon=1.0, delta=1e-5, feature_scale=-1.0, n_public=100), "feature_scale"),
    (dict(classes=2, epsilon=1.0, delta=1e-5, n_public=100), "label"),
    (dict(classes=3, epsilon=1.0, delta=1e-5, batch_size=0, n_public=100), "batch_size"),
])
def test_bad_input(kwargs, message):
    X, y = blobs(100, seed=7)
    with pytest.raises(ValueError, match=message):
        dpstats.fit(X, y, task="classify", epochs=1, **{"batch_size": 50, **kwargs})


def test_nan_rejected():
    X, y = blobs(100, seed=8)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        dpstats.fit(X, y, task="classify", classes=3, epochs=1, epsilon=1.0, delta=1e-5,
                    batch_size=50, n_public=100)


def test_comm_ranks_give_the_single_process_release(tmp_path):
    """comm= (issue 18): under mpirun -np 2 (uneven cut) training equals the one-process release."""
    import json
    X, y = blobs(900, d=4, seed=7)
    path = tmp_path / "D.npy"
    np.save(path, np.column_stack([y, X]))
    kwargs = dict(classes=3, optimizer="dp-adam-jme", epsilon=2.0, delta=1e-5,
                  noise_multiplier=2.0, epochs=2, batch_size=60, step_size=0.02, seed=5,
                  n_public=900)
    single = json.loads(dpstats.fit(X, y, task="classify", **kwargs).to_json())
    est = dpstats.fit(X, y, task="classify", **kwargs).estimate
    out = mpi_harness.mpirun(2, "mpi_classify_ranks.py", str(path), json.dumps(kwargs))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == [float(v).hex() for v in est]
    assert got["release"] == single


def test_small_table_abstains_before_spending_and_holdout_states_a_loss():
    # Issue 27: 350 rows at epsilon 1 leave no reliable private feature scale: the release abstains
    # in the plan, spends nothing and says what would suffice.
    X, y = blobs(350, d=4, seed=5)
    r = dpstats.fit(X, y, task="classify", classes=3, epsilon=1.0, delta=1e-6, n_public=350,
                    seed=1)
    assert r.status == "abstained" and r.epsilon == 0 and len(r.ledger) == 0
    why = r.diagnostics["abstained"]
    assert "rows at this epsilon" in why and "feature_scale" in why
    # holdout: a fifth of the rows held out, the model's private loss on them stated and charged.
    X, y = blobs(4000, d=4, seed=6)
    r = dpstats.fit(X, y, task="classify", classes=3, epsilon=2.0, delta=1e-6, holdout=0.2,
                    epochs=2, n_public=4000, seed=2)
    h = r.diagnostics["holdout"]
    assert r.status == "ok" and h["unit"] == "row" and h["units_expected"] == 800
    assert "units" not in h  # the exact held-out count is private (issue 28)
    # loss is the unclamped noisy ratio (unbiased; noise can take it below 0 or above the clip);
    # both intervals are for a loss in [0, loss_bound], clamped to it, so they hold the clamped
    # loss (docs/proofs/training.md §5, "Clamping").
    clamped = min(max(h["loss"], 0.0), h["loss_bound"])
    for name in ("interval_95", "population_interval_95"):
        lo, hi = h[name]
        assert 0 <= lo <= clamped <= hi <= h["loss_bound"], (name, h)
    assert any("holdout" in e["purpose"] for e in r.ledger)
    with pytest.raises(ValueError, match="holdout"):
        dpstats.fit(X, y, task="classify", classes=3, epsilon=2.0, delta=1e-6, holdout=0.7,
                    n_public=4000)


def test_one_unit_declares_the_global_scale():
    # Issue 27 finding 4: 3,400 rows of 4 columns at epsilon 1 are too few for the per-column
    # scales (about 3,628) but enough for one private scale (3,293); one scale is right only when
    # every column is in one unit, which the data cannot tell, so the plan takes it only on the
    # caller's word. Without one_unit the release abstains before spending, naming the remedies.
    X, y = blobs(3400, d=4, seed=7)
    args = dict(task="classify", classes=3, epsilon=1.0, delta=1e-6, epochs=1, n_public=3400,
                seed=4)
    r = dpstats.fit(X, y, **args)
    assert r.status == "abstained" and r.epsilon == 0 and len(r.ledger) == 0
    why = r.diagnostics["abstained"]
    assert "about 3628 rows" in why and "feature_scale" in why and "one_unit" in why
    r = dpstats.fit(X, y, one_unit=True, **args)
    assert r.status == "ok", r.diagnostics
    assert r.diagnostics["feature_scale_source"].startswith("private median row norm")
    assert r.diagnostics["scale_share"]["value"] == 0.05
    assert r.diagnostics["scale_share"]["one_unit"] is True
    with pytest.raises(ValueError, match="one_unit"):
        dpstats.fit(X, y, one_unit="yes", **args)


def test_fitted_mlp_predicts_through_its_parsed_model():
    # FittedModel dispatches on the parsed model (EnumNames<ModelKind>), not on its text.
    X, y = blobs(600, seed=2, spread=0.2)
    m = dpstats.fit(X, y, task="classify", optimizer="adam", model="mlp", hidden=4, classes=3,
                    epochs=1, batch_size=50, seed=4)
    assert m._mlp and m.is_classifier
    p = m.predict_proba(X[:5])
    assert p.shape == (5, 3) and np.allclose(p.sum(axis=1), 1)
    assert m.predict(X).shape == (600,)


def test_fitted_mlp_reads_its_hidden_width_off_the_release():
    # Without hidden= the library's default width applies; predictions read it off the weights
    # ((d + 1) h + (h + 1) c of them), so Python keeps no copy of that default.
    X, y = blobs(300, seed=3, spread=0.2)
    m = dpstats.fit(X, y, task="classify", optimizer="adam", model="mlp", classes=3,
                    epochs=1, batch_size=50, seed=5)
    d, c = X.shape[1], 3
    h = (m.coef_.size - c) // (d + 1 + c)
    assert h >= 1 and (d + 1) * h + (h + 1) * c == m.coef_.size
    p = m.predict_proba(X[:5])
    assert p.shape == (5, 3) and np.allclose(p.sum(axis=1), 1)
