"""The Python side of the one input layer: read_table, DataFrames, columns=, threads checks."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dpstats
from dpstats import _dpstats


def test_read_table_csv_columns_header_missing(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('id,name,x,y\nu1,"Smith, J",1,2\nu2,bob,NA,4\nu3,c,5,6\n')
    X, names = dpstats.read_table(str(p), columns=["y", "x"], drop_missing=True)
    assert names == ["y", "x"] and X.shape == (2, 2) and X[1, 1] == 5
    X, names = dpstats.read_table(str(p), columns=[3])  # 0-based index
    assert names == ["y"] and X[:, 0].tolist() == [2, 4, 6]
    with pytest.raises(ValueError, match=r"line 3, column 3 \('x'\): missing value") as e:
        dpstats.read_table(str(p), columns=["x"])
    with pytest.raises(ValueError, match="line 2, column 2") as e:
        dpstats.read_table(str(p), columns=["name"])
    assert "Smith" not in str(e.value)


def test_read_table_refuses_guessing_and_lying_npy(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("secret123.4x,5\n1,2\n")
    with pytest.raises(ValueError, match="header") as e:
        dpstats.read_table(str(p))
    assert "secret" not in str(e.value)
    X, names = dpstats.read_table(str(p), header=True)
    assert X.shape == (1, 2)
    q = tmp_path / "lie.npy"
    d = "{'descr': '<f8', 'fortran_order': False, 'shape': (1048576, 1048576), }"
    h = d + " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    q.write_bytes(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + b"\0" * 16)
    with pytest.raises(ValueError, match="max-input-bytes|truncated"):
        dpstats.read_table(str(q))


def test_read_table_npy_npz_match_numpy(tmp_path):
    A = np.random.default_rng(0).normal(size=(50, 3))
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "f.npy", np.asfortranarray(A.astype(np.float32)))
    np.savez_compressed(tmp_path / "z.npz", a=A, b=A[:5])
    assert np.array_equal(dpstats.read_table(str(tmp_path / "a.npy"))[0], A)
    assert np.array_equal(dpstats.read_table(str(tmp_path / "f.npy"))[0], A.astype(np.float32))
    assert np.array_equal(dpstats.read_table(str(tmp_path / "z.npz"), array="b")[0], A[:5])


@pytest.mark.parametrize("threads", [-5, 0, 100000])
def test_threads_checked_below_the_wrapper(threads):
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="threads"):
        _dpstats.mean(X, "dp-mean", 1.0, 1e-6, None, threads)


def test_dataframe_and_columns():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"id": ["a", "b", "c", "d"], "x": [1.0, 2, 3, 4], "y": [0.0, 1, 0, 1]})
    r = dpstats.mean(df, method="bounded", epsilon=1, delta=0, bounds=(0, 5), seed=1,
                     columns=["x", "y"])
    assert r.estimate.shape == (2,)
    with pytest.raises(ValueError, match="column 1 is not numeric") as e:
        dpstats.mean(df, method="bounded", epsilon=1, delta=0, bounds=(0, 5), seed=1)
    assert "'a'" not in str(e.value)
    r = dpstats.mean(np.ones((4, 3)), method="bounded", epsilon=1, delta=0, bounds=(0, 5),
                     seed=1, columns=[0, 2])
    assert r.estimate.shape == (2,)



def test_text_in_an_array_names_the_column_not_the_content():
    # issue 30: text features were a TypeError from numpy's isfinite; now a ValueError naming the
    # column (1-based), for the features of every function that takes a table
    X = np.array([[1.5, "JFK", 3.0]] * 50 + [[2.5, "SFO", 4.0]] * 50, dtype=object)
    y = np.ones(100)
    for call in (lambda: dpstats.mean(X, method="bounded", epsilon=1, delta=0, bounds=(0, 5)),
                 lambda: dpstats.fit(X, y, task="heavy-tailed", epsilon=1, domain_radius=2)):
        with pytest.raises(ValueError, match="^X: column 2 is not numeric") as e:
            call()
        assert "JFK" not in str(e.value)


# Every binding that takes `threads` checks it itself (issue #21, threat-model row `threads`):
# called directly, below the wrappers' own checks, -5 and 100000 raise ValueError naming it.
def _binding_calls(threads):
    X = np.random.default_rng(0).normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    return {
        "mean": lambda: _dpstats.mean(X, "dp-mean", 1.0, 1e-6, None, threads),
        "bounds": lambda: _dpstats.bounds(X, 1.0, 1e-6, "replace-one", threads, None),
        "stat": lambda: _dpstats.stat("mean", X, 1.0, 1e-6, {}, None, threads, None),
        "moments": lambda: _dpstats._moments_options_of(
            40, 2, "jme", {"factorization": "sqrt", "clip": 1.0}, 1.0, 1e-6, threads),
        "fit_classify": lambda: _dpstats.fit_classify(
            X, y, {"classes": 2, "hidden": 8, "feature_scale": 1.0, "n_public": len(X)}, 1.0,
            1e-5, 0.1, 1, 10, 0.1, 1.0, None, None, threads, None),
    }


@pytest.mark.parametrize("binding", ["mean", "bounds", "stat", "moments", "fit_classify"])
@pytest.mark.parametrize("threads", [-5, 100000])
def test_every_binding_checks_threads(binding, threads):
    with pytest.raises(ValueError, match="threads"):
        _binding_calls(threads)[binding]()
    _binding_calls(1)[binding]()  # the same call with threads = 1 is accepted
