"""One declaration per option (include/dpstats/options.hpp): every declared option is a flag of
the tool (in its --help, with the declaration's help text) and a keyword of the Python function
of the same command; a shared option is on both surfaces of a command or on neither; the range
check and its message are the declaration's on both surfaces."""
import importlib
import inspect
import keyword
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dpstats
from dpstats import _options

classify, heavy_tailed, stats, fit_module = (
    importlib.import_module(f"dpstats.{m}") for m in ("classify", "heavy_tailed", "stats", "fit"))

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("DPSTATS_CLI", str(ROOT / "build" / "dpstats"))

# Each releasing command of the tool and the Python functions that are that command.
PYTHON = {
    "mean": [dpstats.mean],
    "median": [dpstats.geometric_median],
    "fit": [fit_module.fit, fit_module._fit_user_level, classify.fit_classify,
            heavy_tailed.fit_heavy_tailed],
    "stat": [stats.stat, stats.count, stats.sum, stats.column_mean, stats.variance, stats.std,
             stats.quantiles, stats.histogram],
    "bounds": [dpstats.bounds],
    "moments": [dpstats.moments, dpstats.MomentEstimator],  # a file; a live stream (--steps)
    "noise": [dpstats.laplace, dpstats.gaussian],
}
# (command, option) pairs where the surfaces differ on purpose.
EXEMPT = set()


def _noise_functions():
    """--mechanism's names (the tool's choices, EnumNames<NoiseMechanism>) are Python functions."""
    names = re.search(r"--mechanism TEXT:\{([^}]*)\}", _help("noise")).group(1).split(",")
    return len(names) == 2 and all(callable(getattr(dpstats, n.strip(), None)) for n in names)


# Declared options whose Python form is not a keyword of the same name, each with the check that
# the form exists (the declaration's help names it).
ELSEWHERE = {
    ("fit", "no_centre"): lambda: "centre" in _keywords("fit"),  # centre=False
    ("moments", "no_centre"): lambda: "centre" in _keywords("moments"),
    ("fit", "data"): lambda: {"X", "y"} <= _keywords("fit"),
    ("fit", "test"): lambda: {"X_test", "y_test"} <= _keywords("fit"),
    ("fit", "save_weights"): lambda: "estimate" in dpstats.Release.__dataclass_fields__,
    ("noise", "mechanism"): _noise_functions,
}


def _help(command):
    out = subprocess.run([CLI, command, "--help"], capture_output=True, text=True, check=True)
    return re.sub(r"\s+", " ", out.stdout)


def _keywords(command):
    names = set()
    for f in PYTHON[command]:
        names |= set(inspect.signature(f).parameters)
    return names


def _keyword(name):
    """Python's spelling of a declared option: its name, with a trailing _ where the name is a
    Python keyword (lambda_)."""
    return name + "_" if keyword.iskeyword(name) else name


def _on_cli(help_text, decl):
    return re.search(re.escape(decl["cli"]) + r"\b", help_text) is not None


def test_every_command_option_is_on_the_cli_and_in_python():
    for decl in _options.DECLARED:
        command = decl["command"]
        if not command:
            continue
        text = _help(command)
        assert _on_cli(text, decl), f"{decl['cli']} is declared for {command} but not a flag"
        assert decl["help"][:40] in text, f"{decl['cli']}'s help is not its declaration's"
        if (command, decl["name"]) in ELSEWHERE:
            assert ELSEWHERE[command, decl["name"]](), f"{command} {decl['cli']}: no Python form"
            continue
        assert _keyword(decl["name"]) in _keywords(command), \
            f"{decl['name']} is declared for {command} but no Python keyword"


def test_shared_options_are_on_both_surfaces_or_neither():
    shared = [d for d in _options.DECLARED if not d["command"]]
    readers = {d["name"]: 0 for d in shared}
    for command in PYTHON:
        text, keywords = _help(command), _keywords(command)
        for decl in shared:
            if (command, decl["name"]) in EXEMPT:
                continue
            on_cli, in_python = _on_cli(text, decl), decl["name"] in keywords
            assert on_cli == in_python, \
                f"{command}: {decl['cli']} on the tool: {on_cli}, in Python: {in_python}"
            if on_cli:
                assert decl["help"][:40] in text, f"{command} {decl['cli']}: not the declared help"
                readers[decl["name"]] += 1
    assert all(readers.values()), f"declared but read by no command: {readers}"


def test_the_privacy_target_is_every_releasing_commands():
    for command in PYTHON:
        text = _help(command)
        for flag in ("--epsilon", "--delta", "--seed", "--budget"):
            assert flag in text, f"{command} lacks {flag}"


def test_range_errors_come_from_the_declaration_on_both_surfaces():
    X = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got 0"):
        dpstats.mean(X, method="bounded", epsilon=0, delta=0, bounds=(-3, 3))
    for zero in (lambda: dpstats.count(X, 0, 0),  # issue 30: 0 is out of range, not "required"
                 lambda: dpstats.moments(X, clip=1, epsilon=0, delta=1e-6),
                 lambda: dpstats.MomentEstimator(2, clip=1, epsilon=0, delta=1e-6, steps=10),
                 lambda: dpstats.fit(X[:, :1], X[:, 1], task="heavy-tailed", epsilon=0,
                                     domain_radius=1)):
        with pytest.raises(ValueError, match=r"epsilon must be > 0, got 0"):
            zero()
    with pytest.raises(ValueError, match=r"topk_multiplier must be in \[1, 4\], got 9"):
        dpstats.mean(X, method="prime", alpha=0.05, epsilon=1, delta=1e-6, topk_multiplier=9)
    with pytest.raises(ValueError, match=r"threads must be an integer in \[1, 1024\], got 0"):
        dpstats.geometric_median(X, epsilon=1, delta=1e-6, threads=0)
    with pytest.raises(ValueError, match=r"steps must be an integer >= 1, got 0"):
        dpstats.MomentEstimator(2, clip=1, epsilon=1, delta=1e-6, steps=0)
    for args, message in (
            (["mean", "--method", "bounded", "--epsilon", "0", "--delta", "0"],
             "epsilon must be > 0, got 0"),
            (["mean", "--method", "prime", "--alpha", "0.05", "--topk-multiplier", "9",
              "--epsilon", "1", "--delta", "1e-6"], "topk_multiplier must be in [1, 4], got 9"),
            (["median", "--threads", "0", "--epsilon", "1", "--delta", "1e-6"],
             "threads must be an integer in [1, 1024], got 0"),
            (["moments", "--steps", "0", "--clip", "1", "--epsilon", "1", "--delta", "1e-6"],
             "steps must be an integer >= 1, got 0")):
        out = subprocess.run([CLI, *args, "-"], input="1,2\n3,4\n", capture_output=True,
                             text=True)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)


def test_the_docstrings_carry_the_declared_lines():
    for f, command, name in ((dpstats.mean, "mean", "topk_multiplier"),
                             (dpstats.geometric_median, "median", "bound_check_share")):
        assert f"``{name}``: " + _options.declaration(command, name)["help"][:40] in f.__doc__


def test_the_worked_example_of_docs_architecture():
    """docs/architecture.md "Adding an option or a method" walks through the mean's
    --topk-multiplier: its declaration, the registry line naming its readers, the tool's flag and
    the Python keyword. This keeps the example true."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "## Adding an option or a method" in page
    decl = _options.declaration("mean", "topk_multiplier")
    assert decl["command"] == "mean" and decl["range"] == "in [1, 4]"
    text = _help("mean")
    assert re.search(r"--topk-multiplier\b[^-]*prime, prime-ht, filter", text) or \
        "prime, prime-ht, filter: " + decl["help"] in text
    assert "topk_multiplier" in inspect.signature(dpstats.mean).parameters
    # The code each step names is where the page says (a rename must update the example).
    for path, fragment in (
            ("src/options.cpp", '.command = "mean", .name = "topk_multiplier", .lo = 1, .hi = 4'),
            ("src/mean/methods.cpp", 'add(r.topk_multiplier.has_value(), "topk_multiplier")'),
            ("src/mean/methods.cpp", "o.topk_multiplier = *r.topk_multiplier"),
            ("include/dpstats/mean/prime.hpp", 'v("topk_multiplier", o.topk_multiplier)'),
            ("apps/dpstats/cmd_mean.cpp",
             'add_declared(cmd, "mean", "topk_multiplier", r.topk_multiplier, methods)')):
        assert fragment in (ROOT / path).read_text(), (path, fragment)
