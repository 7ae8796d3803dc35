"""``dry_run=True`` on every releasing function (the tool's ``--dry-run``; include/dpstats/dry_run.hpp,
docs/guide.md "Before you spend ε").

A dry run returns the release's plan as a dict -- its stages (mechanisms, budget shares), what
it would spend, and for each private estimate the rows it needs at this epsilon, with a verdict
when ``n_hint`` (the rows you declare) is given -- without reading the data: only the number of
columns is taken from ``X`` (or from ``columns=`` when ``X`` is None), the library plans on a
table of ``n_hint`` rows of zeros (10000 without it), draws no noise (its generator refuses any
draw) and stops at the charge, so a :class:`dpstats.Budget` is left exactly as it was.
"""
from __future__ import annotations

import functools
import inspect
import json

import numpy as np

from . import _dpstats, _options, _table

PLANNED_ROWS = 10000  # the tool's kPlannedRows (apps/dpstats/dry_run_cli.hpp)

_DOC = """

    ``dry_run=True``: return the plan (a dict) instead of a release, reading nothing of the data
    but its number of columns (``X`` may be None with ``columns=`` naming them or giving their
    count); ``n_hint``: the rows you declare, for a verdict (see docs/guide.md
    "Before you spend ε")."""


def _columns_of(X, columns) -> int:
    """The selected columns' count, from the shape or the names alone (no value is read)."""
    if columns is not None:
        if isinstance(columns, (int, np.integer)) and X is None:
            return int(columns)
        return len(_table._column_list(columns, "X"))
    if X is None:
        raise ValueError("dry_run=True with X=None needs columns= (the columns' names, or "
                         "their count)")
    if _table.is_dataframe(X):
        return len(X.columns)
    shape = np.shape(X)
    return 1 if len(shape) < 2 else int(shape[1])


def _n_hint(n_hint):
    if n_hint is None:
        return None
    if isinstance(n_hint, bool) or not isinstance(n_hint, (int, np.integer)):
        raise ValueError(f"n_hint must be an integer, got {n_hint!r}")
    _options.check("", "n_hint", int(n_hint))
    return int(n_hint)


def _plan(f, bound, release, remedy, n_hint, stand_in) -> dict:
    n = PLANNED_ROWS if n_hint is None else n_hint
    d = stand_in(bound.arguments, n)
    run = _dpstats._DryRun()
    try:
        try:
            r = f(*bound.args, **bound.kwargs)
        except _dpstats._DryRunStopped:
            pass
        else:  # no charge: it abstained on its plan, or the method charges nothing
            if getattr(r, "status", None) == "abstained":
                run.abstained(str(r.diagnostics.get("abstained", "(no reason stated)")))
            else:
                run.non_private()
        plan = json.loads(run.json(n_hint, remedy))
    finally:
        run.close()
    out = {"command": "dry-run", "release": release, "n_hint": n_hint, "n_planned": n, "d": d}
    for key in ("verdict", "rows_needed", "checks", "private", "spends", "stages", "caveat"):
        out[key] = plan[key]
    return out


def table_stand_in(table="X", vectors=(), ids=(), absent=()):
    """Replaces the data arguments by the stand-in of n rows: ``table`` (n x d zeros, d from its
    shape or ``columns``), each of ``vectors`` (zeros), each of ``ids`` (0..n-1: n units of one
    row each); ``absent`` arguments (held-out tables) are left out."""
    def stand_in(a, n):
        d = None
        if table is not None:
            d = _columns_of(a.get(table), a.get("columns"))
            named = [v for v in (*vectors, *ids) if isinstance(a.get(v), str)]
            if named and a.get("columns") is None and _table.is_dataframe(a.get(table)):
                d -= len(named)  # y / users named as columns of X are not features
            a[table] = np.zeros((n, d))
            if "columns" in a:
                a["columns"] = None
        for v in vectors:
            if a.get(v) is not None:
                a[v] = np.zeros(n)
        for u in ids:
            if a.get(u) is not None:
                a[u] = np.arange(n, dtype=np.int64)
        for x in absent:
            if x in a:
                a[x] = None
        return d
    return stand_in


def category_stand_in(values="values"):
    """A histogram's column: n codes 0 (the categories are the caller's, public)."""
    def stand_in(a, n):
        a[values] = np.zeros(n)
        if "columns" in a:
            a["columns"] = None
        return 1
    return stand_in


def _with_keywords(sig):
    """``sig`` with the keyword-only ``dry_run`` and ``n_hint`` (before any ``**options``)."""
    params = list(sig.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    extra = [inspect.Parameter("dry_run", inspect.Parameter.KEYWORD_ONLY, default=False),
             inspect.Parameter("n_hint", inspect.Parameter.KEYWORD_ONLY, default=None)]
    return sig.replace(parameters=params[:at] + extra + params[at:])


def dry_runnable(release: str, remedy: str = "", stand_in=None):
    """Adds ``dry_run`` and ``n_hint`` to a releasing function (see the module doc)."""
    stand_in = stand_in or table_stand_in()

    def wrap(f):
        sig = inspect.signature(f)

        @functools.wraps(f)
        def g(*args, dry_run: bool = False, n_hint=None, **kwargs):
            if not dry_run:
                if n_hint is not None:
                    raise ValueError("n_hint applies with dry_run=True only")
                return f(*args, **kwargs)
            bound = sig.bind_partial(*args, **kwargs)
            return _plan(f, bound, release, remedy, _n_hint(n_hint), stand_in)
        g.__doc__ = (f.__doc__ or "").rstrip() + _DOC + "\n"
        g.__signature__ = _with_keywords(sig)
        return g
    return wrap
