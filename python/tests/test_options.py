"""One declaration per option (include/dpstats/options.hpp): every declared option is a flag of
the tool (in its --help, with the declaration's help text) and a keyword of the Python function
of the same command; a shared option is on both surfaces of a command or on neither; the range
check and its message are the declaration's on both surfaces."""
import importlib
import inspect
import json
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
# Declared commands that release nothing (no privacy target of their own): the input layer every
# reading command shares (its flags shown on `mean`), the calculator and the budget file.
OTHER = {
    "input": [dpstats.read_table],
    "account calibrate": [dpstats.account.calibrate],
    "account convert": [dpstats.account.convert],
    "account compose": [dpstats.account.compose],
    "account dp-sgd": [dpstats.account.dp_sgd],
    "budget init": [dpstats.Budget],
}
HELP_OF = {"input": "mean"}


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
    ("input", "input"): lambda: "path" in _keywords("input"),
    ("input", "no_header"): lambda: "header" in _keywords("input"),
    ("input", "shards"): lambda: "comm" in _keywords("mean"),  # each rank's rows
    ("input", "more"): lambda: "comm" in _keywords("mean"),
    ("account compose", "loss"): lambda: "epsilon" in _keywords("account compose"),
    ("budget init", "file"): lambda: callable(dpstats.Budget.save),
}


def _help(command):
    out = subprocess.run([CLI, *HELP_OF.get(command, command).split(), "--help"],
                         capture_output=True, text=True, check=True)
    return re.sub(r"\s+", " ", out.stdout)


def _keywords(command):
    names = set()
    for f in {**PYTHON, **OTHER}[command]:
        names |= set(inspect.signature(f).parameters)
    return names


def _keyword(name):
    """Python's spelling of a declared option: its name, with a trailing _ where the name is a
    Python keyword (lambda_)."""
    return name + "_" if keyword.iskeyword(name) else name


def _on_cli(help_text, decl):
    return re.search(re.escape(decl["cli"]) + r"\b", help_text) is not None


def _surface_problems(declarations):
    """What is missing of each command option of ``declarations``: its flag, its declared help
    on the tool, its Python keyword."""
    problems = []
    for decl in declarations:
        command = decl["command"]
        if not command:
            continue
        text = _help(command)
        if not _on_cli(text, decl):
            problems.append(f"{decl['cli']} is declared for {command} but not a flag")
        elif decl["help"][:40] not in text:
            problems.append(f"{decl['cli']}'s help is not its declaration's")
        if (command, decl["name"]) in ELSEWHERE:
            if not ELSEWHERE[command, decl["name"]]():
                problems.append(f"{command} {decl['cli']}: no Python form")
        elif _keyword(decl["name"]) not in _keywords(command):
            problems.append(f"{decl['name']} is declared for {command} but no Python keyword")
    return problems


def test_every_command_option_is_on_the_cli_and_in_python():
    assert _surface_problems(_options.DECLARED) == []


def test_a_declaration_on_no_surface_fails():
    """The check above fails for a declaration that no request field or flag carries (this
    test's own declaration; the product declares none such)."""
    new = {"command": "mean", "name": "new_option", "cli": "--new-option",
           "help": "an option declared and used nowhere"}
    assert _surface_problems([new]) == [
        "--new-option is declared for mean but not a flag",
        "new_option is declared for mean but no Python keyword"]


def test_the_means_keywords_are_its_declarations():
    """dpstats.mean's keywords come from the request's field list: each is in its signature
    and documented by its declared line in help(); an undeclared keyword is a TypeError."""
    import pydoc
    params = inspect.signature(dpstats.mean).parameters
    page = re.sub(r"\s+", " ", pydoc.render_doc(dpstats.mean))
    for decl in _options.DECLARED:
        if decl["command"] != "mean" or decl["name"] == "method":
            continue
        assert params[decl["name"]].kind is inspect.Parameter.KEYWORD_ONLY, decl["name"]
        assert f"``{decl['name']}``: " + decl["help"][:40] in page, decl["name"]
    X = np.random.default_rng(0).normal(size=(200, 1))
    with pytest.raises(TypeError, match="topk"):
        dpstats.mean(X, method="prime", alpha=0.05, epsilon=1, delta=1e-6, topk=3)
    with pytest.raises(ValueError, match=r"T1 must be an integer, got 2.5"):
        dpstats.mean(X, method="prime", alpha=0.05, epsilon=1, delta=1e-6, T1=2.5)
    with pytest.raises(ValueError, match=r"boost_zeta \(--boost-zeta\) does not apply"):
        dpstats.mean(X, method="prime", alpha=0.05, epsilon=1, delta=1e-6, boost_zeta=0.1)
    a = dpstats.mean(X, method="bounded", epsilon=1, bounds=(-3, 3), seed=1)
    b = dpstats.mean(X, method="bounded", epsilon=1, bounds=np.array([-3.0, 3.0]), seed=1)
    assert a.estimate.tolist() == b.estimate.tolist()


def test_the_statistics_and_the_medians_keywords_are_their_declarations(tmp_path):
    """dpstats.stat's and dpstats.geometric_median's keywords come from their requests' field
    lists (StatRequest, MedianRequest), and the "does not apply to method X" error is the
    declaration's on both surfaces; a repeated --bounds is the Python list of (lo, hi) pairs."""
    import pydoc
    for f, command in ((stats.stat, "stat"), (dpstats.geometric_median, "median")):
        params = inspect.signature(f).parameters
        page = re.sub(r"\s+", " ", pydoc.render_doc(f))
        for decl in _options.DECLARED:
            if decl["command"] != command:
                continue
            assert params[decl["name"]].kind is inspect.Parameter.KEYWORD_ONLY, decl["name"]
            assert f"``{decl['name']}``: " + decl["help"][:40] in page, decl["name"]
    X = np.random.default_rng(0).normal(size=(300, 2))
    with pytest.raises(ValueError, match=r"grid_size \(--grid-size\) does not apply to method "
                                         r"'mean'; it applies to 'quantiles'"):
        stats.stat("mean", X, 1, 0, grid_size=64)
    with pytest.raises(ValueError, match=r"center \(--center\) does not apply to method 'hsu24'"):
        dpstats.geometric_median(X, method="hsu24", epsilon=1, delta=1e-6, center="fast-center")
    with pytest.raises(ValueError, match=r"budget \(--budget\) does not apply to method "
                                         r"'weiszfeld'"):
        dpstats.geometric_median(X, method="weiszfeld", budget=dpstats.Budget(epsilon=1, delta=0))
    for args, message in (
            (["stat", "mean", "--grid-size", "64", "--delta", "0"],
             "grid_size (--grid-size) does not apply to method 'mean'; it applies to 'quantiles'"),
            (["median", "--method", "hsu24", "--center", "fast-center", "--delta", "1e-6"],
             "center (--center) does not apply to method 'hsu24'")):
        out = subprocess.run([CLI, *args, "--epsilon", "1", "-"], input="1,2\n3,4\n",
                             capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",", fmt="%.17g")
    cli = subprocess.run([CLI, "stat", "mean", "--bounds", "-3,3", "--bounds", "-2,2",
                          "--epsilon", "1", "--delta", "0", "--seed", "5", str(path)],
                         capture_output=True, text=True, check=True)
    py = stats.column_mean(X, 1, 0, bounds=[(-3, 3), (-2, 2)], seed=5)
    assert json.loads(cli.stdout)["estimate"] == py.estimate.tolist()


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


# The worked example's files: its declaration, its request field, the options structs that
# carry it into the algorithm (and the ranks' fingerprint) and the code that reads it.
WORKED_EXAMPLE_FILES = {
    "src/options.cpp", "include/dpstats/mean/methods.hpp", "include/dpstats/mean/prime.hpp",
    "include/dpstats/mean/private_filter.hpp", "src/mean/prime_plan.cpp",
    "src/mean/private_filter.cpp", "src/mean/robust_mean_core.hpp"}


def test_the_worked_example_of_docs_architecture():
    """docs/architecture.md "Adding an option or a method" walks through the mean's
    --topk-multiplier: adding it touches its declaration and the code that uses it, nothing
    else. This keeps the example true: those are exactly the files that name it, and the tool's
    flag, the Python keyword and the registry lines come from them."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page[page.index("## Adding an option or a method"):page.index("## Testing")]
    for path in WORKED_EXAMPLE_FILES:
        assert path in section, f"{path} is not in the worked example"
    named = {str(p.relative_to(ROOT)) for top in ("src", "include", "apps", "python/src",
                                                  "python/dpstats")
             for p in (ROOT / top).rglob("*") if p.suffix in (".cpp", ".hpp", ".py")
             and "topk_multiplier" in p.read_text()}
    assert named == WORKED_EXAMPLE_FILES, \
        f"named outside the example: {named - WORKED_EXAMPLE_FILES}; " \
        f"no longer: {WORKED_EXAMPLE_FILES - named}"
    decl = _options.declaration("mean", "topk_multiplier")
    assert decl["command"] == "mean" and decl["range"] == "in [1, 4]"
    text = _help("mean")
    assert "robust, prime, prime-ht, filter, prime-boosted, prime-ht-boosted: " + \
        decl["help"] in text
    assert "topk_multiplier" in inspect.signature(dpstats.mean).parameters
    assert f"``topk_multiplier``: {decl['help']}" in dpstats.mean.__doc__
    # The lines the page quotes are where it says (a rename must update the example).
    for path, fragment in (
            ("src/options.cpp", '.command = "mean", .name = "topk_multiplier", .lo = 1, .hi = 4'),
            ("src/options.cpp",
             '.methods = "robust prime prime-ht filter prime-boosted prime-ht-boosted"'),
            ("include/dpstats/mean/methods.hpp", "std::optional<double> topk_multiplier;"),
            ("include/dpstats/mean/methods.hpp", 'v("topk_multiplier", r.topk_multiplier)'),
            ("include/dpstats/mean/prime.hpp", 'v("topk_multiplier", o.topk_multiplier)'),
            ("include/dpstats/mean/private_filter.hpp", "visit_robust_fields"),
            ("src/mean/robust_mean_core.hpp",
             'check_option(find_option("mean", "topk_multiplier")')):
        assert fragment in (ROOT / path).read_text(), (path, fragment)
        assert fragment.split(", .lo")[0] in section.replace("\n   ", " "), fragment


def test_the_fit_tasks_keywords_are_their_declarations():
    """Each fit task's own options come from its request's field list (ClassifyRequest,
    HeavyTailedRequest, UserLevelRequest): keyword-only arguments documented by their declared
    lines; the "does not apply to method X" error is the library's, the same on both surfaces."""
    for f, fields in ((classify.fit_classify, dpstats._dpstats._classify_options()),
                      (heavy_tailed.fit_heavy_tailed, dpstats._dpstats._heavy_tailed_options()),
                      (fit_module._fit_user_level, dpstats._dpstats._user_level_options())):
        params = inspect.signature(f).parameters
        for name, _ in fields:
            assert params[_keyword(name)].kind is inspect.Parameter.KEYWORD_ONLY, name
            help_line = _options.declaration("fit", name)["help"][:40]
            assert f"``{name}``: " in f.__doc__ and help_line in f.__doc__, name
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    users = np.repeat(np.arange(100), 2)
    cases = (
        (lambda: dpstats.fit(X, y, task="classify", optimizer="dp-sgd", lambda_=2.0, classes=2,
                             n_public=200, epsilon=1, delta=1e-6),
         ["--task", "classify", "--optimizer", "dp-sgd", "--lambda", "2", "--classes", "2",
          "--n-public", "200", "--delta", "1e-6"],
         r"lambda \(--lambda\) does not apply to method 'dp-sgd'"),
        (lambda: dpstats.fit(X, y, task="heavy-tailed", method="clipped-gd", phases=2,
                             epsilon=1, domain_radius=1),
         ["--task", "heavy-tailed", "--method", "clipped-gd", "--phases", "2",
          "--domain-radius", "1"],
         r"phases \(--phases\) does not apply to method 'clipped-gd'"),
        (lambda: dpstats.fit(X, y, users=users, method="accelerated", smoothing_radius=0.1,
                             items_per_user=2, epsilon=1, delta=1e-6, domain_radius=1),
         ["--task", "user-level", "--method", "accelerated", "--smoothing-radius", "0.1",
          "--items-per-user", "2", "--delta", "1e-6", "--domain-radius", "1"],
         r"smoothing_radius \(--smoothing-radius\) does not apply to method 'accelerated'"))
    for python, flags, message in cases:
        with pytest.raises(ValueError, match=message):
            python()
        out = subprocess.run([CLI, "fit", *flags, "--epsilon", "1", "-"], input="0,1,2\n1,3,4\n",
                             capture_output=True, text=True)
        assert out.returncode == 2 and re.search(message, out.stderr), (flags, out.stderr)
    with pytest.raises(ValueError, match=r"phases must be an integer in \[1, 30\], got 0"):
        dpstats.fit(X, y, task="heavy-tailed", phases=0, epsilon=1, domain_radius=1)


def test_the_calculators_and_the_input_layer_check_their_declared_ranges():
    """`account`, `budget init` and the input options: each flag's range is its declaration's,
    on the tool and in Python alike."""
    with pytest.raises(ValueError, match=r"sampling_rate must be in \(0, 1\], got 2"):
        dpstats.account.dp_sgd(2, 10, 1e-5, noise_multiplier=1)
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got -1"):
        dpstats.Budget(epsilon=-1, delta=0)
    with pytest.raises(ValueError, match=r"max_line_bytes must be an integer in \[1, 4294967295\]"):
        dpstats.read_table("-", max_line_bytes=0)
    for args, message in (
            (["account", "dp-sgd", "--sampling-rate", "2", "--noise-multiplier", "1", "--steps",
              "10", "--delta", "1e-5"], "sampling_rate must be in (0, 1], got 2"),
            (["budget", "init", "unused.json", "--epsilon", "-1"], "epsilon must be > 0, got -1"),
            (["mean", "--max-line-bytes", "4294967296", "--epsilon", "1", "-"],
             "max_line_bytes must be an integer in [1, 4294967295]")):
        out = subprocess.run([CLI, *args], input="1\n", capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)


def test_the_noise_and_moments_keywords_are_their_declarations(tmp_path):
    """dpstats.laplace/gaussian and dpstats.moments/MomentEstimator take their requests' fields
    (NoiseRequest, MomentsRequest): the documented positional arguments stay positional, the
    rest are keyword-only, each documented by its declared line; the "does not apply to method
    X" error is the library's on both surfaces, and a seeded release is the tool's."""
    own = {"sensitivity", "workload", "factorization", "clip", "diagonal"}  # the functions' own
    aside = {("noise", "mechanism"), ("moments", "method"), ("moments", "steps"),
             ("moments", "no_centre"), ("moments", "centre", "MomentEstimator"),
             ("moments", "clip_block", "moments")}  # the table's centre, the stream's blocks
    for command in ("noise", "moments"):
        for f in PYTHON[command]:
            g = f.__init__ if isinstance(f, type) else f
            params = inspect.signature(f).parameters
            for decl in _options.DECLARED:
                name = decl["name"]
                if decl["command"] != command or {(command, name),
                                                  (command, name, f.__name__)} & aside:
                    continue
                assert _keyword(name) in params, (f.__name__, name)
                if name not in own:  # the function's own parameters keep their kind
                    assert params[_keyword(name)].kind is inspect.Parameter.KEYWORD_ONLY, \
                        (f.__name__, name)
                assert f"``{name}``: " + decl["help"][:40] in g.__doc__, (f.__name__, name)
    with pytest.raises(TypeError, match="centre"):
        dpstats.MomentEstimator(2, clip=1, epsilon=1, delta=1e-6, steps=5, centre=False)
    with pytest.raises(TypeError, match="clip_block"):
        dpstats.moments(np.ones((5, 2)), clip=1, epsilon=1, delta=1e-6, clip_block=2)
    X = np.random.default_rng(0).normal(size=(40, 2))
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",", fmt="%.17g")
    with pytest.raises(ValueError, match=r"alpha \(--alpha\) does not apply to method 'jme'"):
        dpstats.moments(X, clip=3, epsilon=1, delta=1e-6, alpha=0.3)
    out = subprocess.run([CLI, "moments", "--clip", "3", "--epsilon", "1", "--delta", "1e-6",
                          "--alpha", "0.3", str(path)], capture_output=True, text=True)
    assert out.returncode == 2 and "alpha (--alpha) does not apply to method 'jme'" in out.stderr
    with pytest.raises(ValueError, match=r"clip_block must be"):
        dpstats.MomentEstimator(2, clip=1, epsilon=1, delta=1e-6, steps=5, clip_block=-1)
    py = dpstats.moments(X, "lambda-jme", "decay:0.9", "sqrt", 3, 1, 1e-6, True, 5, lambda_=2,
                         on_norm="clip", neighbouring="add-remove", clip_check_share=0)
    cli = subprocess.run([CLI, "moments", "--method", "lambda-jme", "--workload", "decay:0.9",
                          "--factorization", "sqrt", "--clip", "3", "--epsilon", "1", "--delta",
                          "1e-6", "--diagonal", "--seed", "5", "--lambda", "2", "--on-norm",
                          "clip", "--neighbouring", "add-remove", "--clip-check-share", "0",
                          str(path)], capture_output=True, text=True, check=True)
    last = json.loads(cli.stdout.splitlines()[-1])
    assert last["first"] == py.first[-1].tolist() and last["second"] == py.second[-1].tolist()
    cli = subprocess.run([CLI, "noise", "--mechanism", "laplace", "--sensitivity", "2",
                          "--epsilon", "0.5", "--seed", "3", "1", "2"],
                         capture_output=True, text=True, check=True)
    py = dpstats.laplace([1.0, 2.0], 2, 0.5, seed=3)
    assert json.loads(cli.stdout)["estimate"] == py.estimate.tolist()
    with pytest.raises(ValueError, match=r"sensitivity must be"):
        dpstats.gaussian([1.0], 0, 1, 1e-6)
