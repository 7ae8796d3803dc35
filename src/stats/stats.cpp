// The everyday statistics (stats/stats.hpp). Each driver reads top-down: validate, plan (every
// mechanism from public values: n, d, bounds, the target), charge, run, seal. Sensitivities are
// argued in docs/proofs/stats.md.
#include "dpstats/stats/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/json.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/clipped_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/quantile.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "internal.hpp"

namespace dpstats::stats {

using detail::Noise;

namespace {

// ---- mean-like statistics: per-column exact sums of clipped (and possibly squared) values ----

struct MomentPlan {
  std::vector<ColumnBounds> bounds;
  double quantum = 0;
  std::vector<Noise> first, second;  // per column; `second` only for variance / std
  std::optional<Noise> clip_check;
  nlohmann::json diagnostics = nlohmann::json::object();
};

// The mechanisms count in quantum units of exact sums: they depend on n, d and the target, not on
// the bounds (which may be estimated by an earlier stage of the same plan).
MomentPlan plan_moments(std::int64_t n, std::size_t d, const StatOptions& o, bool squares,
                        const detail::Shares& shares) {
  MomentPlan p;
  p.quantum = sum_quantum(n);
  const double parts = static_cast<double>(d) * (squares ? 2 : 1);
  for (std::size_t j = 0; j < d; ++j) {
    p.first.push_back(Noise(p.quantum, shares.main / parts, o, 1, fmt::format("clipped sum, column {}", j), 1));
    if (squares)
      p.second.push_back(Noise(p.quantum, shares.main / parts, o, 1,
                               fmt::format("clipped sum of squares, column {}", j), 1));
  }
  if (shares.clip_check > 0) p.clip_check = Noise(1, shares.clip_check, o, 1, "rows outside the bounds", 1);
  return p;
}

// The bounds, and the released units of one sum unit that follow from them. `per_mean`: released
// units per unit of the mean (n for a sum, 1 otherwise). Returns why the release abstains when an
// estimated width overflows a double (post-processing of the released bounds).
std::optional<std::string> set_bounds(MomentPlan& p, std::vector<ColumnBounds> bounds,
                                      std::int64_t n, double per_mean) {
  p.bounds = std::move(bounds);
  for (std::size_t j = 0; j < p.first.size(); ++j) {
    const double w = p.bounds[j].upper - p.bounds[j].lower;
    const double unit = per_mean * w / (static_cast<double>(n) * p.quantum);  // one sum unit
    if (!std::isfinite(unit * w / 4))
      return fmt::format("the bounds of column {} are beyond the largest double: give bounds, or "
                         "rescale the data", j);
  }
  for (std::size_t j = 0; j < p.first.size(); ++j) {
    const double w = p.bounds[j].upper - p.bounds[j].lower;
    const double unit = per_mean * w / (static_cast<double>(n) * p.quantum);
    p.first[j].set_unit(unit);
    if (!p.second.empty()) p.second[j].set_unit(unit * w / 4);  // (x - c)^2 in [0, w^2 / 4]
  }
  return std::nullopt;
}

// The release's plan: the bounds' estimate (when absent), then the statistic's mechanisms.
Ledger planned(const MomentPlan& p, Ledger l = {}) {
  for (const auto& m : p.first) l.push_back(m.entry());
  for (const auto& m : p.second) l.push_back(m.entry());
  if (p.clip_check) l.push_back(p.clip_check->entry());
  return l;
}

// The noisy per-column means of the clipped values and (when planned) of the squared centred
// values, written into `mean` and `square_mean`; the clipped-row check into diagnostics. Over
// ranks (issue 18): the exact sums are added over ranks and rank 0 draws, every rank gets its
// values.
void run_moments(const ConstMatrixRef& X, std::int64_t rows, MomentPlan& p, const StatOptions& o,
                 Communicator& comm, ReleaseBudget& account, Rng& rng, Vector& mean,
                 Vector& square_mean) {
  const auto n = static_cast<double>(rows);
  detail::ExactSums s = detail::exact_sums(X, p.bounds, p.quantum, !p.second.empty(), o.run.threads);
  const Eigen::Index d = X.cols(), second = s.second.size();
  if (comm.size() > 1) {
    Vector all(d + second + 1);
    all << s.first, s.second, static_cast<double>(s.outside_rows);
    allreduce_exact(comm, all);
    s.first = all.head(d);
    s.second = all.segment(d, second);
    s.outside_rows = static_cast<std::int64_t>(all[d + second]);
  }
  account.claim(planned(p));
  auto draw = [&] {
    mean.resize(d);
    square_mean.resize(p.second.empty() ? 0 : d);
    for (Eigen::Index j = 0; j < d; ++j) {
      const auto& b = p.bounds[static_cast<std::size_t>(j)];
      const double w = b.upper - b.lower;
      const double noisy = std::clamp(p.first[j].apply(s.first[j], rng), 0.0, n * p.quantum);
      mean[j] = b.lower + w * noisy / (n * p.quantum);
      if (!p.second.empty()) {
        const double sq = std::clamp(p.second[j].apply(s.second[j], rng), 0.0, n * p.quantum);
        square_mean[j] = (w * w / 4) * sq / (n * p.quantum);
      }
    }
    if (p.clip_check) detail::report_clipped(*p.clip_check, s.outside_rows, n, rng, p.diagnostics);
  };
  if (comm.size() == 1) return draw();
  const nlohmann::json got = on_root_json(comm, [&] {
    draw();
    return nlohmann::json{{"mean", std::vector<double>(mean.data(), mean.data() + mean.size())},
                          {"square", std::vector<double>(square_mean.data(), square_mean.data() + square_mean.size())},
                          {"diagnostics", p.diagnostics}};
  });
  const auto m = got["mean"].get<std::vector<double>>(), q = got["square"].get<std::vector<double>>();
  mean = Eigen::Map<const Vector>(m.data(), static_cast<Eigen::Index>(m.size()));
  square_mean = Eigen::Map<const Vector>(q.data(), static_cast<Eigen::Index>(q.size()));
  p.diagnostics = got["diagnostics"];
}

// What every rank must pass alike (the guard before the first collective).
std::string fingerprint(const StatOptions& o, const char* statistic, Eigen::Index d) {
  std::string f = fmt::format("stat {} d={} eps={:a} delta={:a} share={:a} noise={} bounds=",
                              statistic, d, o.privacy.epsilon, o.privacy.delta, o.scale_share,
                              static_cast<int>(o.run.noise));
  for (const auto& b : o.bounds) f += fmt::format("{:a},{:a};", b.lower, b.upper);
  f += fmt::format(" grid={} quantiles=", o.grid_size);
  for (double q : o.quantiles) f += fmt::format("{:a};", q);
  return f;
}

// The rows of every rank after the guard (one process: validate_table and X.rows()).
std::int64_t guarded_rows(const ConstMatrixRef& X, const StatOptions& o, Communicator& comm,
                          const char* statistic) {
  if (comm.size() == 1) {
    detail::validate_table(X);
    return static_cast<std::int64_t>(X.rows());
  }
  check_agreement(comm, fingerprint(o, statistic, X.cols()), "the statistic's options and column count");
  all_or_none(comm, [&] {
    if (X.rows() > 0) detail::validate_table(X);
  });
  const std::int64_t n = allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  require(n > 0, "X must have at least one row and one column, got 0 x {} (over {} ranks)",
          X.cols(), comm.size());
  return n;
}

enum class Moment { sum, mean, variance, std };

Release<Vector> moments(const ConstMatrixRef& X, const StatOptions& o, Rng& rng, Budget* budget,
                        Moment what) {
  // validate
  detail::validate_common(o);
  Communicator& comm = comm_or_single(o.run.comm);
  static constexpr const char* kNames[] = {"sum", "mean", "variance", "std"};
  const std::int64_t n = guarded_rows(X, o, comm, kNames[static_cast<int>(what)]);
  const auto d = static_cast<std::size_t>(X.cols());
  const bool squares = what == Moment::variance || what == Moment::std;
  // plan (bounds: given, or estimated privately from scale_share, planned with the rest)
  ReleaseBudget account = detail::release_budget(o, budget);
  nlohmann::json diagnostics = nlohmann::json::object();
  const detail::Shares shares = detail::shares(o);
  MomentPlan plan = plan_moments(n, d, o, squares, shares);
  // charge: the whole plan (the budget lives on rank 0)
  all_or_none(comm, [&] { account.charge(planned(plan, detail::bounds_plan(o, shares, d))); });
  // run
  const double per_mean = what == Moment::sum ? static_cast<double>(n) : 1.0;
  if (auto why = set_bounds(plan, detail::column_bounds(X, o, shares, account, rng, diagnostics),
                            n, per_mean)) {
    SealFacts facts = detail::facts(o, Neighbouring::replace_one);
    facts.abstained = std::move(why);
    return seal(Vector(), account, facts, rng, std::move(diagnostics));
  }
  const std::vector<ColumnBounds>& bounds = plan.bounds;
  Vector mean, square_mean;
  run_moments(X, n, plan, o, comm, account, rng, mean, square_mean);
  Vector estimate = mean;
  if (what == Moment::sum) estimate = mean * static_cast<double>(n);
  if (squares) {
    estimate.resize(static_cast<Eigen::Index>(d));
    for (std::size_t j = 0; j < d; ++j) {
      const auto& b = bounds[j];
      const double w = b.upper - b.lower, centred = mean[j] - (b.lower + b.upper) / 2;
      const double var = std::clamp(square_mean[j] - centred * centred, 0.0, w * w / 4);
      estimate[j] = what == Moment::std ? std::sqrt(var) : var;
    }
  }
  // seal
  diagnostics.update(plan.diagnostics);
  diagnostics["n"] = n;
  diagnostics["bounds"] = detail::bounds_json(bounds);
  diagnostics["noise_scale"] = detail::noise_scales(plan.first, 1.0);  // of the released mean or sum
  return seal(std::move(estimate), account, detail::facts(o, Neighbouring::replace_one), rng,
              std::move(diagnostics));
}

}  // namespace

Release<Vector> sum(const ConstMatrixRef& X, const StatOptions& o, Rng& rng, Budget* budget) {
  return moments(X, o, rng, budget, Moment::sum);
}
Release<Vector> mean(const ConstMatrixRef& X, const StatOptions& o, Rng& rng, Budget* budget) {
  return moments(X, o, rng, budget, Moment::mean);
}
Release<Vector> variance(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                         Budget* budget) {
  return moments(X, o, rng, budget, Moment::variance);
}
Release<Vector> std_dev(const ConstMatrixRef& X, const StatOptions& o, Rng& rng, Budget* budget) {
  return moments(X, o, rng, budget, Moment::std);
}

Release<Vector> count(const ConstMatrixRef& X, const StatOptions& o, Rng& rng, Budget* budget) {
  // validate: count reads no bounds and no quantiles
  detail::validate_common(o);
  require(o.bounds.empty(), "bounds does not apply to count");
  Communicator& comm = comm_or_single(o.run.comm);
  check_agreement(comm, fingerprint(o, "count", X.cols()), "the statistic's options and column count");
  const std::int64_t rows = allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  // plan: one row added or removed moves the count by 1
  ReleaseBudget account = detail::release_budget(o, budget);
  const Noise noise(1, 1.0, o, 1, "row count", 1);
  // charge
  all_or_none(comm, [&] { account.charge(noise.entry()); });  // the budget lives on rank 0
  // run
  const double noisy =
      on_root(comm, [&] { return std::max(0.0, noise.apply(static_cast<double>(rows), rng)); });
  // seal
  nlohmann::json diagnostics = {{"noise_scale", noise.scale()}};
  return seal(Vector(Vector::Constant(1, noisy)), account, detail::facts(o, Neighbouring::add_remove), rng,
              std::move(diagnostics));
}

Release<Vector> quantiles(const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                          Budget* budget) {
  // validate
  detail::validate_common(o);
  require(!o.quantiles.empty(), "quantiles needs at least one probability, got none");
  for (double q : o.quantiles)
    require(q >= 0 && q <= 1, fmt::format("quantiles must each be in [0, 1], got {}", q));
  require(o.grid_size >= 2 && o.grid_size <= (std::size_t{1} << 24),
          fmt::format("grid_size must be in [2, 2^24], got {}", o.grid_size));
  Communicator& comm = comm_or_single(o.run.comm);
  const std::int64_t n = guarded_rows(X, o, comm, "quantiles");
  const auto d = static_cast<std::size_t>(X.cols());
  const std::size_t k = o.quantiles.size();
  // plan: each (column, probability) is one permute-and-flip selection at an equal share, after
  // the bounds' estimate when they are absent
  ReleaseBudget account = detail::release_budget(o, budget);
  nlohmann::json diagnostics = nlohmann::json::object();
  const detail::Shares shares = detail::shares(o);
  const double each = detail::pure_epsilon(shares.main, o) / static_cast<double>(d * k);
  Ledger ledger = detail::bounds_plan(o, shares, d);
  for (std::size_t j = 0; j < d; ++j)
    for (double q : o.quantiles)
      ledger.push_back(private_quantile_entry(each, fmt::format("quantile {} of column {}", q, j)));
  // charge: the whole plan (the budget lives on rank 0)
  all_or_none(comm, [&] { account.charge(ledger); });
  // run: the bounds, then per selection the counts below each candidate added over ranks (one
  // process: this one) and rank 0 selects; post-processing sorts each column's answers so they
  // are nondecreasing in q
  const auto bounds = detail::column_bounds(X, o, shares, account, rng, diagnostics);
  std::vector<QuantileOptions> selections;
  for (std::size_t j = 0; j < d; ++j)
    for (double q : o.quantiles)
      selections.push_back({.q = q, .lower = bounds[j].lower, .upper = bounds[j].upper,
                            .candidates = o.grid_size, .epsilon = each});
  Vector estimate(static_cast<Eigen::Index>(d * k));
  std::vector<double> column(static_cast<std::size_t>(X.rows()));
  for (std::size_t j = 0; j < d; ++j) {
    for (Eigen::Index i = 0; i < X.rows(); ++i) column[static_cast<std::size_t>(i)] = X(i, static_cast<Eigen::Index>(j));
    for (std::size_t t = 0; t < k; ++t) {
      const QuantileOptions& sel = selections[j * k + t];
      estimate[static_cast<Eigen::Index>(j * k + t)] = private_quantile(column, sel, rng, comm);
    }
    detail::sort_by_probability(estimate.segment(static_cast<Eigen::Index>(j * k), static_cast<Eigen::Index>(k)), o.quantiles);
  }
  // seal
  diagnostics["n"] = n;
  diagnostics["bounds"] = detail::bounds_json(bounds);
  diagnostics["epsilon_per_quantile"] = each;
  diagnostics["grid_step"] = detail::grid_steps(bounds, o.grid_size);
  return seal(std::move(estimate), account, detail::facts(o, Neighbouring::replace_one), rng,
              std::move(diagnostics));
}

Release<Vector> numeric(Statistic s, const ConstMatrixRef& X, const StatOptions& o, Rng& rng,
                        Budget* budget) {
  switch (s) {
    case Statistic::count: return count(X, o, rng, budget);
    case Statistic::sum: return sum(X, o, rng, budget);
    case Statistic::mean: return mean(X, o, rng, budget);
    case Statistic::variance: return variance(X, o, rng, budget);
    case Statistic::std: return std_dev(X, o, rng, budget);
    case Statistic::quantiles: return quantiles(X, o, rng, budget);
    case Statistic::histogram: break;
  }
  throw InvalidArgument("histogram reads a categorical column: call stats::histogram");
}

}  // namespace dpstats::stats
