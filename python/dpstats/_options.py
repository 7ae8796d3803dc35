"""The declared options (include/dpstats/options.hpp), read through the binding: each keyword's
validation (the library's InvalidArgument naming the option, its value and its range, raised as
ValueError) and its docstring line come from the one declaration the tool's flags come from."""
from __future__ import annotations

import functools
import inspect
import keyword

import numpy as np

from . import _dpstats

DECLARED = tuple(_dpstats._declared_options())


def declaration(command: str, name: str) -> dict:
    """The declaration of ``name`` for ``command``: the command's own, else the shared one."""
    for scope in (command, ""):
        for d in DECLARED:
            if d["command"] == scope and d["name"] == name:
                return d
    raise KeyError(f"no option {name!r} is declared for {command!r}")


def check(command: str, name: str, value):
    """``value`` unchanged; ValueError when a number is outside its declared range (None passes:
    the option is absent)."""
    d = declaration(command, name)
    if value is None or d["kind"] not in ("number", "integer") or isinstance(value, bool):
        return value
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    _dpstats._check_option(command, name, x)
    return value


def doc(command: str, names) -> str:
    """One docstring line per option: ``name``: help (range; default)."""
    return "\n".join(f"    ``{n}``: {_dpstats._option_help(command, n)}" for n in names)


def documented(command: str, *names):
    """Appends the declared options' lines to a function's docstring."""
    def wrap(f):
        f.__doc__ = (f.__doc__ or "").rstrip() + (
            "\n\n    Declared options (one declaration each, shared with the tool's --flags):\n"
            + doc(command, names) + "\n")
        return f
    return wrap


def _keyword(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def _number(name: str, x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None


def _converted(name: str, kind: str, x):
    """A keyword's value as its request field takes it (the binding checks the range)."""
    if x is None:
        return x
    if kind == "name":  # the library parses it (its error lists the names)
        return str(x)
    if kind == "flag":
        if not isinstance(x, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {x!r}")
        return bool(x)
    if kind == "number":
        return _number(name, x)
    if kind == "integer":
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise ValueError(f"{name} must be an integer, got {x!r}")
        return int(x)
    if kind == "text":  # one spec ("decay:0.9")
        return str(x)
    if kind == "texts":  # a sequence of names, each as its text (integer codes: "3")
        if isinstance(x, (str, bytes)) or np.ndim(x) == 0:
            raise ValueError(f"{name} must be a sequence, got {x!r}")
        return [str(v) for v in x]
    # numbers: one value, or a sequence of them
    if np.ndim(x) == 0:
        return [_number(name, x)]
    return [_number(name, v) for v in np.asarray(x, dtype=object).ravel()]


def request_keywords(command: str, fields, shared=()):
    """Gives a function the keywords of its command's request: ``fields`` is the binding's
    [(name, kind)] (the request's one field list, e.g. ``_dpstats._mean_options()``). The
    function takes them as ``**options`` and receives them converted by kind; its signature
    lists each as a keyword-only argument (default None) and its docstring carries each one's
    declared line, after those of the ``shared`` options it names itself. A new option of the
    command is then its declaration and a field of its request, with no edit here. A name that
    is a Python keyword is spelled with a trailing underscore (``lambda_``). A field that is a
    parameter of the function itself (one users pass by position, as documented) stays the
    function's: it receives it converted by kind and passes it on."""
    fields = tuple(fields)

    def wrap(f):
        sig = inspect.signature(f)
        own = {_keyword(n): k for n, k in fields if _keyword(n) in sig.parameters}
        kinds = {_keyword(n): k for n, k in fields if _keyword(n) not in own}
        names = {_keyword(n): n for n, _ in fields}
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None)
                   for k in kinds]
        signature = sig.replace(parameters=params)

        @functools.wraps(f)
        def g(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)  # TypeError for a keyword not declared
            for k in own.keys() & bound.arguments.keys():
                bound.arguments[k] = _converted(k, own[k], bound.arguments[k])
            options = {names[k]: _converted(k, kinds[k], bound.arguments.pop(k))
                       for k in list(bound.arguments) if k in kinds}
            return f(*bound.args, **bound.kwargs, **options)
        g.__signature__ = signature
        return documented(command, *shared, *(n for n, _ in fields))(g)
    return wrap
