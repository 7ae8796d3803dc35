// Small, odd tables like the ones users bring (issue 27 "What was found"): a seeded generator of
// one table per failure class of the everyday commands, for the real-table sweep
// (tests/sweep/) and docs/results/real-data.md. Not a private computation: floating-point
// samplers, seeded; the same seed gives the same tables on every machine.
//
//   ratings        3 000 ratings 1..10 (sd 1.2): a small, narrow, discrete column (case 1)
//   survey         300 rows: a 1..5 answer and an age in whole years (the smallest n)
//   money          10 000 amounts, 98% exactly 0, the rest log-normal up to millions (case 2)
//   skewed         10 000 log-normal values: the 0.99 quantile about 4 sd above the mean (case 3)
//   penguins       342 rows, 3 well-separated classes, 4 measurements in mm and grams (case 4)
//   constant       500 rows: a constant, a tiny spread at 1 000, 97% equal values (MAD 0)
//   epoch          2 000 timestamps near 1.7e9 s and values 1e9 + N(0, 100²)
//   corrupted      2 000 ages and salaries, 5% of the rows replaced by (999, 9.9e6)
//   attacked       4 000 rows, 3 heavy-tailed (Student-t(3)) columns in different units, 5% of
//                  the rows replaced by a cluster 12 sd off in every column (case 5)
//   mid_size       1 000 Gaussian rows in mm, g and years (case 7)
//   users          about 200 users with 4 to 16 rows each: features, a +-1 label (user level)
//   flights        4 000 flights: delay in minutes = f(distance, hour) + Student-t(3) noise
//   money90        5 000 amounts, 90% exactly 0, the rest log-normal around e^11 (case 2)
//   flags          2 000 rows: a 0/1 flag (30% ones) and a Poisson(0.3) count (MAD 0)
//   cells          2 000 rows: N(100, 15²) with 3 cells of +-1e15 (marked corrupted), and
//                  timestamps 1.7e9 +- 3e7 s
//   users_unbalanced  2 000 users with 2 rows each, centred features, 5% positive labels
//   flag_pairs     1 000 rows of two 0/1 flags (the row norms' median near the all-0 atom)
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpstats/data/matrix.hpp"

namespace dpstats::synthetic {

// What a table is for in the sweep.
enum class TableUse {
  columns,     // numeric columns: stat, bounds, mean, median, moments
  classify,    // `values` are the features, `labels` the classes (fit --task classify)
  user_level,  // `values` the features, `target` the +-1 label, `users` the ids
  regression,  // `values` the features, `target` the response (fit --task heavy-tailed)
};

struct RealTable {
  std::string name;
  std::string failure_class;          // the case of issue 27 it reproduces
  TableUse use = TableUse::columns;
  RowMatrix values;                   // n x d
  std::vector<std::string> columns;   // d names, units in the name ("bill_length_mm")
  std::vector<char> corrupted;        // per row: 1 when the row was replaced (empty: none)
  std::vector<int> labels;            // classify: 0..classes-1
  int classes = 0;
  Vector target;                      // user_level (+-1) and regression
  std::vector<std::int64_t> users;    // user_level: the user id of each row
  // Per column, a range public by the column's nature (a 0/1 flag: 0, 1), as a user would give it
  // with --bounds (empty: none): the sweep also runs `stat quantiles` with it.
  std::vector<std::pair<double, double>> public_bounds;
};

// Every table above, in that order, drawn from `seed`.
std::vector<RealTable> real_tables(std::uint64_t seed);

}  // namespace dpstats::synthetic
