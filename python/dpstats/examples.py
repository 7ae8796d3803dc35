"""Realistic example tables to follow docs/guide.md "An analyst's session" (seeded, synthetic).

``python3 -m dpstats.examples people.csv years.csv`` writes:

- ``people.csv``: one row per employee, with what real exports have: an ID column (``id``,
  text), a quoted text column with embedded commas (``dept``, e.g. ``"Legal, Compliance"``),
  ``age`` in years, ``salary`` in dollars (log-normal, a heavy right tail), ``tenure`` in years
  (about 2% of cells empty and 1% ``NA``), ``promoted`` (0/1, more likely with tenure), 2%
  corrupted rows (age 999, salary 9.9e6: a broken import), and a trailing blank line.
- ``years.csv``: yearly sales per shop with a numeric header (``2019,2020,2021``), which must be
  declared with ``--header`` (``header=True``) since it reads as data.

The generator is part of the package so that the guide's commands run as written (a test runs
them); nothing here is private or used by the library.
"""
from __future__ import annotations

import csv
import sys

import numpy as np

DEPARTMENTS = ["Engineering", "Sales", "Legal, Compliance", "Support", "R&D, Labs"]
DEPARTMENT_SHARE = [0.35, 0.25, 0.05, 0.3, 0.05]


def people(n: int = 20000, seed: int = 0):
    """The rows of people.csv as lists of strings (header first); see the module doc."""
    g = np.random.default_rng(seed)
    age = np.clip(np.round(g.normal(41, 11, n)), 18, 75)
    tenure = np.minimum(np.round(g.exponential(6, n), 1), age - 18)
    salary = np.round(np.exp(g.normal(np.log(52_000) + 0.01 * tenure, 0.45, n)), -2)
    logit = -2.5 + 0.25 * tenure + 0.02 * (age - 41)
    promoted = (g.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    dept = g.choice(len(DEPARTMENTS), size=n, p=DEPARTMENT_SHARE)
    corrupted = g.uniform(size=n) < 0.02
    rows = [["id", "dept", "age", "salary", "tenure", "promoted"]]
    for i in range(n):
        a, s = (999, 9.9e6) if corrupted[i] else (age[i], salary[i])
        empty, na = g.uniform() < 0.02, g.uniform() < 0.01  # the missing tenure cells
        t_cell = "" if empty else "NA" if na else f"{tenure[i]:g}"
        rows.append([f"p{i + 1:05d}", DEPARTMENTS[dept[i]], f"{a:g}", f"{s:.0f}", t_cell,
                     str(promoted[i])])
    return rows


def years(n: int = 2000, seed: int = 1):
    """The rows of years.csv (numeric header 2019,2020,2021)."""
    g = np.random.default_rng(seed)
    base = g.lognormal(np.log(800), 0.6, n)
    rows = [["2019", "2020", "2021"]]
    for b in base:
        rows.append([f"{b * f:.0f}" for f in (1.0, 0.8, 1.1)])
    return rows


def write(path: str, rows) -> None:
    """Writes rows as RFC 4180 CSV (quoting fields with commas) and a trailing blank line."""
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
        f.write("\n")


def main(argv) -> int:
    if len(argv) != 2:
        print("usage: python3 -m dpstats.examples PEOPLE.csv YEARS.csv", file=sys.stderr)
        return 2
    write(argv[0], people())
    write(argv[1], years())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
