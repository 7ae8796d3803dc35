"""The one way every function that takes a table reads it (``X``, ``columns=``).

``X`` may be a NumPy array (or anything ``np.asarray`` takes), a pandas DataFrame or a pandas
Series; pandas is optional and never imported here (a DataFrame is recognised by its type name
and attributes). ``columns`` picks columns: names for a DataFrame (0-based positions for an
array). Errors never quote a cell (docs/threat-model.md).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np


def is_dataframe(X) -> bool:
    return type(X).__name__ == "DataFrame" and hasattr(X, "columns") and hasattr(X, "to_numpy")


def is_series(X) -> bool:
    return type(X).__name__ == "Series" and hasattr(X, "to_numpy") and hasattr(X, "dtype")


def _column_list(columns, name: str) -> list:
    if isinstance(columns, (str, int, np.integer)):
        return [columns]
    try:
        return list(columns)
    except TypeError:
        raise ValueError(f"columns must be a column name, an index or a list of them, "
                         f"got {columns!r}") from None


def _text_column(X) -> str:
    """": column j" (1-based) for the first column of a 2-D X that is not numeric, else ""."""
    try:
        a = np.asarray(X, dtype=object)
    except ValueError:  # ragged rows: no columns to name
        return ""
    for j in range(a.shape[1] if a.ndim == 2 else 0):
        try:
            a[:, j].astype(np.float64)
        except (TypeError, ValueError):
            return f": column {j + 1}"
    return ""


def _frame(X, columns, name: str) -> np.ndarray:
    """A DataFrame's selected columns as float64 (unselected columns may hold text)."""
    if columns is not None:
        cols = _column_list(columns, name)
        missing = [c for c in cols if c not in X.columns]
        if missing:
            raise ValueError(f"columns: {missing[0]!r} is not a column of the DataFrame {name} "
                             f"({len(missing)} name(s) not found)")
        X = X[cols]
    bad = [j + 1 for j, t in enumerate(X.dtypes) if t.kind not in "fiub"]
    if bad:
        named = X.columns[bad[0] - 1]
        raise ValueError(f"{name}: column {bad[0]} is not numeric (named {named!r}; content not "
                         "shown); select numeric columns with columns=")
    out = X.to_numpy(dtype=np.float64)
    nan = np.argwhere(np.isnan(out))
    if nan.size:
        raise ValueError(f"{name}: missing value at row {nan[0][0] + 1}, column {nan[0][1] + 1}; "
                         "drop such rows first (e.g. DataFrame.dropna)")
    return np.ascontiguousarray(out)


def table(X, columns: Optional[Sequence] = None, name: str = "X", two_d: bool = False):
    """``X`` as a float64 C-ordered array, no copy when it already is one.

    A DataFrame gives its numeric columns, or those named in ``columns``; a Series one column.
    ``columns`` on an array takes 0-based column indices. ``two_d``: a 1-D result becomes one
    column (n x 1).
    """
    if is_dataframe(X):
        out = _frame(X, columns, name)
    else:
        if is_series(X):
            if columns is not None:
                raise ValueError(f"columns= applies to a DataFrame or a 2-D array, not to the "
                                 f"Series {name}")
            X = X.to_numpy()
        try:
            out = np.asarray(X, dtype=np.float64, order="C")
        except (TypeError, ValueError):
            raise ValueError(f"{name}{_text_column(X)} is not numeric (content not shown); a "
                             "table with text columns needs columns= to pick the numeric ones") from None
        if columns is not None:
            if out.ndim != 2:
                raise ValueError(f"columns= needs a 2-D {name} (or a DataFrame)")
            idx = []
            for c in _column_list(columns, name):
                if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
                    raise ValueError(f"columns= on an array takes 0-based column indices, got "
                                     f"{c!r} (names need a DataFrame)")
                if not 0 <= int(c) < out.shape[1]:
                    raise ValueError(f"columns: index {int(c)} is out of range for {name} with "
                                     f"{out.shape[1]} columns")
                idx.append(int(c))
            out = np.ascontiguousarray(out[:, idx])
    if two_d and out.ndim == 1:
        out = out.reshape(-1, 1)
    return out


def vector(v, X=None, name: str = "y"):
    """A per-row vector: an array, a Series, or (when ``X`` is a DataFrame) a column name of X."""
    if isinstance(v, str):
        if X is None or not is_dataframe(X):
            raise ValueError(f"{name}={v!r} names a column: it needs X to be a DataFrame")
        if v not in X.columns:
            raise ValueError(f"{name}: {v!r} is not a column of the DataFrame X")
        v = X[v]
    if is_series(v):
        v = v.to_numpy()
    return np.asarray(v)


def category_column(values, columns=None, name: str = "values") -> list:
    """One categorical column as a list (strings, or integers): a 1-D array or list, a Series, or
    the one column of a DataFrame that ``columns`` names (or its only column)."""
    if is_dataframe(values):
        cols = list(values.columns) if columns is None else _column_list(columns, name)
        if len(cols) != 1:
            raise ValueError(f"a histogram takes one column: give columns= with one name "
                             f"(the DataFrame {name} has {len(cols)})")
        if cols[0] not in values.columns:
            raise ValueError(f"columns: {cols[0]!r} is not a column of the DataFrame {name}")
        values = values[cols[0]]
    elif columns is not None:
        arr = np.asarray(values)
        cols = _column_list(columns, name)
        if arr.ndim != 2 or len(cols) != 1 or not isinstance(cols[0], (int, np.integer)):
            raise ValueError("columns= on an array takes one 0-based column index (a histogram "
                             "takes one column)")
        values = arr[:, int(cols[0])]
    if is_series(values):
        if values.isna().any():
            raise ValueError(f"{name}: missing value at row "
                             f"{int(np.argmax(values.isna().to_numpy())) + 1}; drop such rows "
                             "first (e.g. dropna)")
        values = values.to_numpy()
    return values
