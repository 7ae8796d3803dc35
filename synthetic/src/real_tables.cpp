// The sweep's small, odd tables (dpstats/synthetic/real_tables.hpp).
#include "dpstats/synthetic/real_tables.hpp"

#include <algorithm>
#include <cmath>

#include "dpstats/random/float_normal.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::synthetic {
namespace {

double normal(Rng& g, double mean, double sd) { return mean + sd * standard_normal(g); }
double uniform(Rng& g, double lo, double hi) { return lo + (hi - lo) * g.uniform01(); }
double student_t3(Rng& g) {  // Z / sqrt(chi2_3 / 3)
  double chi = 0;
  for (int k = 0; k < 3; ++k) chi += std::pow(standard_normal(g), 2);
  return standard_normal(g) / std::sqrt(chi / 3);
}

RealTable table(std::string name, std::string failure_class, Eigen::Index n,
                std::vector<std::string> columns) {
  RealTable t;
  t.name = std::move(name);
  t.failure_class = std::move(failure_class);
  t.values.resize(n, static_cast<Eigen::Index>(columns.size()));
  t.columns = std::move(columns);
  return t;
}

// Replaces a fraction of the rows, spread over the table (every 20th row for 5%), by `row`.
void corrupt(RealTable& t, double fraction, const std::vector<double>& row) {
  t.corrupted.assign(static_cast<std::size_t>(t.values.rows()), 0);
  const auto every = static_cast<Eigen::Index>(std::lround(1 / fraction));
  for (Eigen::Index i = every / 2; i < t.values.rows(); i += every) {
    t.corrupted[static_cast<std::size_t>(i)] = 1;
    for (Eigen::Index j = 0; j < t.values.cols(); ++j) t.values(i, j) = row[static_cast<std::size_t>(j)];
  }
}

RealTable ratings(Rng& g) {
  RealTable t = table("ratings", "case 1: small narrow discrete column", 3000, {"rating"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i)
    t.values(i, 0) = std::clamp(std::round(normal(g, 6.5, 1.2)), 1.0, 10.0);
  return t;
}

RealTable survey(Rng& g) {
  RealTable t = table("survey", "n = 300, discrete answers", 300, {"answer_1_5", "age_years"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = std::clamp(std::round(normal(g, 3.6, 1.0)), 1.0, 5.0);
    t.values(i, 1) = std::clamp(std::round(normal(g, 45, 15)), 18.0, 90.0);
  }
  return t;
}

RealTable money(Rng& g) {
  RealTable t = table("money", "case 2: zero-inflated money (98% zeros)", 10000, {"amount_usd"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i)
    t.values(i, 0) = g.uniform01() < 0.02
                         ? std::round(100 * std::exp(normal(g, std::log(2e4), 1.5))) / 100
                         : 0.0;
  return t;
}

RealTable money90(Rng& g) {
  RealTable t = table("money90", "case 2: zero-inflated money (90% zeros, heavy tail)", 5000,
                      {"amount_usd"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i)
    t.values(i, 0) = g.uniform01() < 0.1 ? std::round(100 * std::exp(normal(g, 11, 1.5))) / 100 : 0.0;
  return t;
}

// Added by probe-stats (issue 27 probe, one block after money90).
// Poisson(lambda) by counting uniform products (Knuth): lambda is small here.
double poisson(Rng& g, double lambda) {
  const double stop = std::exp(-lambda);
  double p = g.uniform01();
  int k = 0;
  for (; p > stop; ++k) p *= g.uniform01();
  return k;
}

// A 0/1 flag (30% ones) and a Poisson(0.3) count: the MAD is 0 because most rows share one
// value, not because the values are all equal, and the flag's lower side is empty.
RealTable flags(Rng& g) {
  RealTable t = table("flags", "0/1 flag and Poisson(0.3) counts: MAD 0, most rows share a value",
                      2000, {"flag", "visits"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = g.uniform01() < 0.3 ? 1.0 : 0.0;
    t.values(i, 1) = poisson(g, 0.3);
  }
  t.public_bounds = {{0, 1}, {0, 10}};
  return t;
}

// A tame column with 3 typing errors of +-1e15 (0.15% of the rows: inside DP Mean's tail
// allowance) beside timestamps 1.7e9 +- 3e7 s. The errors are marked corrupted: the robust means
// are held to the other rows' mean, DP Mean to the columns winsorised at its box.
RealTable cells(Rng& g) {
  RealTable t = table("cells", "3 cells of +-1e15 in a tame column, timestamps 1.7e9 +- 3e7", 2000,
                      {"reading", "timestamp_s"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = normal(g, 100, 15);
    t.values(i, 1) = std::round(normal(g, 1.7e9, 3e7));
  }
  t.corrupted.assign(static_cast<std::size_t>(t.values.rows()), 0);
  const Eigen::Index rows[] = {5, 77, 1500};
  const double values[] = {1e15, -1e15, 1e15};
  for (int k = 0; k < 3; ++k) {
    t.values(rows[k], 0) = values[k];
    t.corrupted[static_cast<std::size_t>(rows[k])] = 1;
  }
  return t;
}
// End of probe-stats' block.

RealTable skewed(Rng& g) {
  RealTable t = table("skewed", "case 3: heavy right tail", 10000, {"value"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) t.values(i, 0) = 1000 * std::exp(normal(g, 0, 1));
  return t;
}

// Adelie, Chinstrap, Gentoo: bill length, bill depth, flipper length (mm), body mass (g).
RealTable penguins(Rng& g) {
  RealTable t = table("penguins", "case 4: 3 classes, 4 columns in mm and g", 342,
                      {"bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"});
  const double mean[3][4] = {{38.8, 18.3, 190, 3700}, {48.8, 18.4, 196, 3733}, {47.5, 15.0, 217, 5076}};
  const double sd[3][4] = {{2.7, 1.2, 6.5, 460}, {3.3, 1.1, 7.1, 384}, {3.1, 1.0, 6.5, 504}};
  t.use = TableUse::classify;
  t.classes = 3;
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    const int c = i < 152 ? 0 : (i < 220 ? 1 : 2);
    t.labels.push_back(c);
    for (int j = 0; j < 4; ++j) t.values(i, j) = std::round(10 * normal(g, mean[c][j], sd[c][j])) / 10;
  }
  return t;
}

RealTable constant(Rng& g) {
  RealTable t = table("constant", "constant and near-constant columns", 500,
                      {"constant", "tiny_spread", "mostly_equal"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = 7;
    t.values(i, 1) = normal(g, 1000, 1e-6);
    t.values(i, 2) = g.uniform01() < 0.97 ? 5.0 : 5 + std::fabs(normal(g, 0, 3));
  }
  return t;
}

RealTable epoch(Rng& g) {
  RealTable t = table("epoch", "values near 1e9", 2000, {"timestamp_s", "id_near_1e9"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = std::round(uniform(g, 1.7e9, 1.7e9 + 2.6e6));
    t.values(i, 1) = normal(g, 1e9, 100);
  }
  return t;
}

RealTable corrupted(Rng& g) {
  RealTable t = table("corrupted", "5% corrupted rows", 2000, {"age_years", "salary_usd"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = std::round(normal(g, 41, 12));
    t.values(i, 1) = std::round(52000 * std::exp(0.4 * standard_normal(g)));
  }
  corrupt(t, 0.05, {999, 9.9e6});
  return t;
}

RealTable attacked(Rng& g) {
  RealTable t = table("attacked", "case 5: heavy clean tails, 5% attack 12 sd off", 4000,
                      {"length_mm", "mass_g", "time_s"});
  const double centre[3] = {120, 2500, 30}, unit[3] = {8, 400, 2};  // sd of t(3) is sqrt(3) units
  for (Eigen::Index i = 0; i < t.values.rows(); ++i)
    for (int j = 0; j < 3; ++j) t.values(i, j) = centre[j] + unit[j] * student_t3(g);
  std::vector<double> attack(3);
  for (int j = 0; j < 3; ++j) attack[static_cast<std::size_t>(j)] = centre[j] + 12 * std::sqrt(3.0) * unit[j];
  corrupt(t, 0.05, attack);
  return t;
}

RealTable mid_size(Rng& g) {
  RealTable t = table("mid_size", "case 7: n = 1000, Gaussian, mixed units", 1000,
                      {"length_mm", "mass_g", "age_years"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = normal(g, 250, 20);
    t.values(i, 1) = normal(g, 4200, 450);
    t.values(i, 2) = normal(g, 38, 9);
  }
  return t;
}

// About 200 users with 4..16 rows each; label +-1 from a logistic model in the columns' units.
RealTable users(Rng& g) {
  RealTable t = table("users", "case 5: user-level logistic, about 200 users", 0,
                      {"sessions_per_week", "minutes_per_session"});
  t.use = TableUse::user_level;
  std::vector<double> rows, y;
  for (std::int64_t u = 0; u < 200; ++u) {
    const auto m = 4 + static_cast<std::int64_t>(g.uniform_below(13));
    const double habit = normal(g, 0, 1);
    for (std::int64_t k = 0; k < m; ++k) {
      const double sessions = std::max(0.0, std::round(normal(g, 5 + 2 * habit, 2)));
      const double minutes = std::exp(normal(g, std::log(20.0) + 0.3 * habit, 0.5));
      const double logit = 0.6 * (sessions - 5) + 0.08 * (minutes - 22);
      rows.insert(rows.end(), {sessions, minutes});
      y.push_back(g.uniform01() < 1 / (1 + std::exp(-logit)) ? 1.0 : -1.0);
      t.users.push_back(1000 + 7 * u);
    }
  }
  t.values = Eigen::Map<const RowMatrix>(rows.data(), static_cast<Eigen::Index>(y.size()), 2);
  t.target = Eigen::Map<const Vector>(y.data(), static_cast<Eigen::Index>(y.size()));
  return t;
}

RealTable flights(Rng& g) {
  RealTable t = table("flights", "heavy-tailed regression in miles and hours", 4000,
                      {"distance_miles", "departure_hour"});
  t.use = TableUse::regression;
  t.target.resize(t.values.rows());
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = std::round(uniform(g, 100, 2500));
    t.values(i, 1) = std::floor(uniform(g, 5, 23));
    t.target[i] = 0.02 * t.values(i, 0) + 1.5 * (t.values(i, 1) - 12) + 15 * student_t3(g);
  }
  return t;
}

// Issue 30: 2000 users with 2 rows each, two centred features and a +-1 label that is +1 for
// about 5% of the rows; centred columns pass the offset check, so only the labels tell that a
// fit without an intercept cannot express the base rate.
RealTable users_unbalanced(Rng& g) {
  RealTable t = table("users_unbalanced", "user-level logistic, 5% positives, centred features",
                      4000, {"score_a", "score_b"});
  t.use = TableUse::user_level;
  t.target.resize(t.values.rows());
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = normal(g, 0, 1), t.values(i, 1) = normal(g, 0, 1);
    t.target[i] = t.values(i, 0) + normal(g, 0, 0.3) > 1.7 ? 1.0 : -1.0;
    t.users.push_back(i / 2);
  }
  return t;
}

// Issue 30: 1000 rows of two 0/1 flags (a quarter of the rows all 0): the median row norm's
// private estimate can land in that atom, and 3 x it clipped 72% of the rows.
RealTable flag_pairs(Rng& g) {
  RealTable t = table("flag_pairs", "0/1 flags: the row norms' median near an atom", 1000,
                      {"subscribed", "churned"});
  for (Eigen::Index i = 0; i < t.values.rows(); ++i) {
    t.values(i, 0) = g.uniform01() < 0.5 ? 1.0 : 0.0;
    t.values(i, 1) = g.uniform01() < 0.5 ? 1.0 : 0.0;
  }
  return t;
}

}  // namespace

std::vector<RealTable> real_tables(std::uint64_t seed) {
  SeededRng g(seed);
  std::vector<RealTable> out;
  for (auto make : {ratings, survey, money, skewed, penguins, constant, epoch, corrupted, attacked,
                    mid_size, users, flights, money90, flags, cells, users_unbalanced,
                    flag_pairs})
    out.push_back(make(g));
  return out;
}

}  // namespace dpstats::synthetic
