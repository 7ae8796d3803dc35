#!/usr/bin/env python3
"""Inputs of the MPI tests (tests/mpi/README.md), written to the folder given as argument.

table.csv   n = 20011 rows, 4 named columns in odd units: x 1e-3, x 1e3 shifted by 5e4,
            Student-t(2) heavy tails, and a lognormal; 30 corrupted rows (1e6 x the scale).
table.npy   the same rows as float64 .npy (the numeric columns only).
part_NN.csv the same rows cut into 7 shard files of unequal length (glob 'part_*.csv').
narrow.csv  the first 100 rows with 3 columns only (a column-count mismatch for the guard).
users.csv   user-level rows (user id, label in {0, 1}, 3 features): 900 users with 1..9 rows each,
            rows in a shuffled order so that most users' rows fall in several ranks' row ranges;
users_part_NN.csv the same rows cut into 5 shard files (glob 'users_part_*.csv'; one holds a
            single row).
users_odd.csv user-level rows in odd units (x 1e-3, x 1e3 shifted by 5e4, plain): 2400 users.
"""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261128)
n = 20011
cols = np.column_stack([
    1e-3 * rng.normal(2.0, 1.0, n),
    5e4 + 1e3 * rng.normal(0.0, 1.0, n),
    rng.standard_t(2, n),
    rng.lognormal(0.0, 1.0, n),
])
bad = rng.choice(n, 30, replace=False)
cols[bad] *= 1e6
names = ["milli", "kilo_shifted", "t2", "lognormal"]


def write_csv(path, rows):
    with open(path, "w") as f:
        f.write(",".join(names[: rows.shape[1]]) + "\n")
        for r in rows:
            f.write(",".join(repr(float(v)) for v in r) + "\n")


write_csv(os.path.join(out, "table.csv"), cols)
np.save(os.path.join(out, "table.npy"), cols)
cuts = [0, 1, 2900, 7000, 7001, 12000, 19000, n]
for k in range(len(cuts) - 1):
    write_csv(os.path.join(out, f"part_{k:02d}.csv"), cols[cuts[k]:cuts[k + 1]])
write_csv(os.path.join(out, "narrow.csv"), cols[:100, :3])

# User-level rows (fit --task user-level on ranks): its own generator, so the table above is
# unchanged.
urng = np.random.default_rng(20261129)
ids = np.repeat(np.arange(900) * 7 - 300, 1 + np.arange(900) % 9)
urng.shuffle(ids)
feats = urng.normal(0.0, 1.0, (ids.size, 3))
feats[:, 2] += 0.01 * (ids % 5)
labels = (feats[:, 0] - 0.5 * feats[:, 1] + 0.5 * urng.normal(0.0, 1.0, ids.size) > 0).astype(float)
urows = np.column_stack([ids.astype(float), labels, feats])
names = ["user", "label", "f1", "f2", "f3"]
write_csv(os.path.join(out, "users.csv"), urows)
ucuts = [0, 1, 1200, 1201 + 600, 3000, ids.size]
for k in range(len(ucuts) - 1):
    write_csv(os.path.join(out, f"users_part_{k:02d}.csv"), urows[ucuts[k]:ucuts[k + 1]])

# users_odd.csv: user-level rows in odd units (the default fit centres them privately): 2400 users
# with 1..5 rows each, shuffled; features x 1e-3, x 1e3 shifted by 5e4, and a plain column.
# Its own generator: the files above are unchanged.
orng = np.random.default_rng(20261128)
oids = np.repeat(np.arange(2400) * 3 + 11, 1 + np.arange(2400) % 5)
orng.shuffle(oids)
ofeats = orng.normal(0.0, 1.0, (oids.size, 3))
olabels = (ofeats[:, 0] + 0.5 * ofeats[:, 1] - 0.3 * ofeats[:, 2]
           + 0.5 * orng.normal(0.0, 1.0, oids.size) > 0).astype(float)
ofeats[:, 0] *= 1e-3
ofeats[:, 1] = 5e4 + 1e3 * ofeats[:, 1]
write_csv(os.path.join(out, "users_odd.csv"), np.column_stack([oids.astype(float), olabels, ofeats]))
