"""dpstats.account.dp_sgd and heterogeneous compose (issue #20): the same answers as the tool."""
import pytest

import dpstats


def test_dp_sgd_epsilon_is_a_pld_upper_bound():
    # dp_accounting's PLD at discretisation 1e-4 gives 5.193 (issue #20's table).
    r = dpstats.account.dp_sgd(0.01, 10000, 1e-5, noise_multiplier=1.1)
    assert r["accountant"] == "pld"
    assert r["upper_bound"] is True
    assert 5.19 <= r["epsilon"] <= 5.25
    assert r["rdp"]["epsilon"] > r["epsilon"]


def test_dp_sgd_sigma_from_epsilon():
    r = dpstats.account.dp_sgd(0.01, 1000, 1e-5, epsilon=2.0)
    assert r["epsilon"] <= 2.0
    back = dpstats.account.dp_sgd(0.01, 1000, 1e-5, noise_multiplier=r["noise_multiplier"] * 0.999)
    assert back["epsilon"] > 2.0 - 1e-3


def test_compose_list():
    r = dpstats.account.compose(["pure:0.5", "gaussian:sigma=4",
                                 "subsampled-gaussian:q=0.01,sigma=1.1,steps=1000"], delta=1e-6)
    assert r["upper_bound"] is True and r["accountant"] in ("pld", "rdp")
    assert len(r["losses"]) == 3
    z = dpstats.account.compose(["zcdp:0.1"], delta=1e-6)
    assert z["accountant"] == "rdp" and "refused" in z["pld"]
    # the k-fold form is unchanged
    assert dpstats.account.compose(0.1, 0.0, 10, 1e-5)["epsilon"] <= 1.0 + 1e-12


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="kind"):
        dpstats.account.compose(["gauss:1"], delta=1e-6)
    with pytest.raises(ValueError, match="sampling_rate"):
        dpstats.account.dp_sgd(2.0, 10, 1e-5, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        dpstats.account.dp_sgd(0.01, 10, 1e-5, noise_multiplier=1.0, epsilon=1.0)
