"""The declared options (include/dpstats/options.hpp), read through the binding: each keyword's
validation (the library's InvalidArgument naming the option, its value and its range, raised as
ValueError) and its docstring line come from the one declaration the tool's flags come from."""
from __future__ import annotations

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
