"""Renders one line plot from a CSV for `dpstats repro` (Debian python3-matplotlib)."""
import argparse
import csv
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--x", required=True)
    ap.add_argument("--y", action="append", required=True)
    ap.add_argument("--group", default="")
    ap.add_argument("--title", default="")
    ap.add_argument("--xlabel", default="")
    ap.add_argument("--ylabel", default="")
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("--logy", action="store_true")
    a = ap.parse_args()
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(r[a.group] if a.group else "", []).append(r)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for g, rs in groups.items():
        rs.sort(key=lambda r: float(r[a.x]))
        xs = [float(r[a.x]) for r in rs]
        for y in a.y:
            ys = [float(r[y]) for r in rs]
            label = (f"{a.group}={g} " if a.group else "") + y
            se = y + "_se"
            if se in rs[0]:
                ax.errorbar(xs, ys, yerr=[float(r[se]) for r in rs], marker="o", ms=3,
                            capsize=2, label=label)
            else:
                ax.plot(xs, ys, marker="o", ms=3, label=label)
    if a.logx:
        ax.set_xscale("log")
    if a.logy:
        ax.set_yscale("log")
    ax.set_xlabel(a.xlabel or a.x)
    ax.set_ylabel(a.ylabel)
    ax.set_title(a.title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
