"""comm= (issue 18): dpstats.mean, bounds, the geometric median, the statistics and the moments over MPI ranks
(mpi4py) equal the single-process release."""
import json
import shutil

import numpy as np
import pytest

import dpstats
import mpi_harness

pytest.importorskip("mpi4py")
MPIRUN = shutil.which("mpirun")


def _data(tmp_path):
    rng = np.random.default_rng(5)
    X = np.column_stack([1e-3 * rng.normal(size=3001), 1e3 + 1e3 * rng.standard_t(3, 3001)])
    X[:7] *= 1e5  # a few corrupted rows
    path = tmp_path / "X.npy"
    np.save(path, X)
    return X, path


def _ranks(p, path, kwargs, function="mean"):
    return mpi_harness.mpirun(p, "mpi_mean_ranks.py", path, json.dumps(kwargs), function)


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
@pytest.mark.parametrize("kwargs", [
    dict(method="bounded", epsilon=1.0, delta=0.0, bounds=[-5e3, 5e3], seed=3),
    dict(method="bounded", epsilon=0.7, delta=1e-6, bounds=[-0.01, 0.01, 0, 5e3], seed=9),
    # no bounds / scale: the units estimated privately over every rank's rows
    dict(method="bounded", epsilon=10.0, delta=0.0, seed=4),
    dict(method="dp-mean", epsilon=10.0, delta=1e-6, seed=6),
    # PRIME over ranks: exact merged Gram matrix, the cross-rank top-k, noise on rank 0
    dict(method="prime", alpha=0.05, epsilon=8.0, delta=1e-6, scale=[1e-3, 1e3], seed=7),
])
@pytest.mark.parametrize("p", [2, 3])
def test_mean_over_ranks_equals_one_process(tmp_path, kwargs, p):
    X, path = _data(tmp_path)
    single = dpstats.mean(X, **kwargs)
    out = _ranks(p, path, kwargs)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == [float(v).hex() for v in single.estimate]
    assert got["release"] == single.to_json()


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
@pytest.mark.parametrize("p", [2, 3])
def test_bounds_over_ranks_equal_one_process(tmp_path, p):
    X, path = _data(tmp_path)
    kwargs = dict(epsilon=4.0, delta=1e-6, norm_quantile=0.9, seed=8)
    single = dpstats.bounds(X, **kwargs)
    assert single.status == "ok"
    out = _ranks(p, path, kwargs, "bounds")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == {k: [float(v).hex() for v in np.atleast_1d(single.estimate[k])]
                               for k in single.estimate}
    assert got["release"] == single.to_json()


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
@pytest.mark.parametrize("function,kwargs", [
    # the default median: domain_radius estimated privately over every rank's rows
    ("median", dict(epsilon=4.0, delta=1e-6, seed=3)),
    ("quantiles", dict(quantiles=[0.1, 0.5, 0.9], epsilon=2.0, delta=0.0, seed=4)),
    ("variance", dict(epsilon=4.0, delta=1e-6, seed=5)),
])
def test_median_and_stats_over_ranks_equal_one_process(tmp_path, function, kwargs):
    X, path = _data(tmp_path)
    single = getattr(dpstats, function)(X, **kwargs)
    assert single.status == "ok"
    out = _ranks(2, path, kwargs, function)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == [float(v).hex() for v in np.ravel(single.estimate)]
    assert got["release"] == single.to_json()


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
def test_histogram_over_ranks_equals_one_process(tmp_path):
    X, path = _data(tmp_path)
    kwargs = dict(epsilon=1.0, delta=1e-6, seed=7)
    single = dpstats.histogram(np.round(X[:, 1] / 1e3).astype(np.int64), **kwargs)
    assert len(single.estimate) >= 2
    out = _ranks(2, path, kwargs, "histogram")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["estimate"] == {str(k): float(v).hex() for k, v in single.estimate.items()}
    assert got["release"] == single.to_json()


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
@pytest.mark.parametrize("p", [2, 3])
def test_moments_over_ranks_equal_one_process(tmp_path, p):
    # the default batch stream: the clip (and centre) estimated privately from every rank's rows
    X, path = _data(tmp_path)
    kwargs = dict(epsilon=2.0, delta=1e-6, workload="average", seed=6)
    single = dpstats.moments(X, **kwargs)
    assert single.status == "ok"
    out = _ranks(p, path, kwargs, "moments")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    values = np.concatenate([np.ravel(single.first), np.ravel(single.second)])
    assert got["estimate"] == [float(v).hex() for v in values]
    assert got["release"] == single.to_json()


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
def test_the_paper_median_is_refused_on_every_rank(tmp_path):
    _, path = _data(tmp_path)
    out = _ranks(2, path, dict(profile="paper", epsilon=1.0, delta=1e-6, seed=1), "median")
    assert out.returncode != 0
    assert "the paper profile's FastRadius" in out.stderr
    assert out.stdout == ""


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not installed (scripts/install-deps.sh)")
def test_a_method_not_distributed_is_refused_on_every_rank(tmp_path):
    _, path = _data(tmp_path)
    out = _ranks(2, path, dict(method="exp-time", alpha=0.05, epsilon=1.0, delta=1e-6, seed=1))
    assert out.returncode != 0
    assert "does not run on several ranks" in out.stderr
    assert out.stdout == ""


def test_comm_must_be_a_communicator():
    with pytest.raises(ValueError, match="mpi4py communicator"):
        dpstats.mean(np.ones((10, 1)), method="bounded", epsilon=1.0, bounds=[0, 2], comm=object())


@pytest.mark.parametrize("call", [
    lambda c: dpstats.median(np.ones((10, 2)), epsilon=1.0, delta=1e-6, comm=c),
    lambda c: dpstats.quantiles(np.ones((10, 1)), [0.5], 1.0, 0.0, bounds=[0, 2], comm=c),
    lambda c: dpstats.histogram(["a", "b"], 1.0, 0.0, categories=["a"], comm=c),
])
def test_median_and_stats_take_comm(call):
    with pytest.raises(ValueError, match="mpi4py communicator"):
        call(object())
