// The everyday statistics (stats/stats.hpp): count, sum, mean, variance, std (quantiles:
// quantiles.cpp). Each driver reads top-down: validate, plan (every mechanism from public values:
// n, d, bounds, the target), charge, run, seal. Sensitivities and the stated errors are argued in
// docs/proofs/stats.md.
#include "dpstats/stats/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/json.hpp"
#include "dpstats/error.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/mean/clipped_sum.hpp"
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
  Noise clip_check;                  // the rows outside the bounds (given or estimated)
  nlohmann::json diagnostics = nlohmann::json::object();
};

// One sum unit in the released mean's units (w / (n Q)); the squares' unit is that times w / 4.
// Bounds so narrow or so wide that a unit is not a positive finite double cannot be summed.
std::optional<std::string> unrepresentable(const std::vector<ColumnBounds>& bounds, double n,
                                           double Q, bool squares) {
  for (std::size_t j = 0; j < bounds.size(); ++j) {
    const double w = bounds[j].upper - bounds[j].lower, unit = w / (n * Q);
    const double u2 = squares ? unit * (w / 4) : unit;
    if (!(std::isfinite(u2) && u2 >= std::numeric_limits<double>::min() && unit > 0))
      return fmt::format("the bounds of column {} are {} wide, outside what the exact sum "
                         "resolves for this statistic (widths between about 1e-290 and 1e150 "
                         "for variance and std, 1e300 otherwise)",
                         j + 1, format_number(w));
  }
  return std::nullopt;
}

// The mechanisms count in quantum units of exact sums: they depend on n, d and the target, not on
// the bounds (which may be estimated by an earlier stage of the same plan).
MomentPlan plan_moments(std::int64_t n, std::size_t d, const StatOptions& o, bool squares,
                        const detail::Shares& shares) {
  const double quantum = sum_quantum(n);
  MomentPlan p{{}, quantum, {}, {}, Noise(1, shares.clip_check, o, 1, "rows outside the bounds", 1)};
  const double parts = static_cast<double>(d) * (squares ? 2 : 1);
  for (std::size_t j = 0; j < d; ++j) {
    p.first.push_back(Noise(quantum, shares.main / parts, o, 1, fmt::format("clipped sum, column {}", j), 1));
    if (squares)
      p.second.push_back(Noise(quantum, shares.main / parts, o, 1,
                               fmt::format("clipped sum of squares, column {}", j), 1));
  }
  return p;
}

// The bounds (checked representable by unrepresentable), and the released units of one sum unit
// that follow from them. `per_mean`: released units per unit of the mean (n for a sum, 1
// otherwise). The mechanisms, and so the charges, do not depend on them.
void set_bounds(MomentPlan& p, std::vector<ColumnBounds> bounds, std::int64_t n, double per_mean) {
  p.bounds = std::move(bounds);
  for (std::size_t j = 0; j < p.first.size(); ++j) {
    const double w = p.bounds[j].upper - p.bounds[j].lower;
    const double unit = per_mean * w / (static_cast<double>(n) * p.quantum);  // one sum unit
    p.first[j].set_unit(unit);
    if (!p.second.empty()) p.second[j].set_unit(unit * w / 4);  // (x - c)^2 in [0, w^2 / 4]
  }
}

// The release's plan: the bounds' estimate (when absent), then the statistic's mechanisms.
Ledger planned(const MomentPlan& p, Ledger l = {}) {
  for (const auto& m : p.first) l.push_back(m.entry());
  for (const auto& m : p.second) l.push_back(m.entry());
  l.push_back(p.clip_check.entry());
  return l;
}

// What run_moments releases: the noisy per-column means of the clipped values and (when planned)
// of the squared centred values, and the upper confidence bound of the clipped fraction.
struct MomentDraws {
  Vector mean, square_mean;
  detail::ClippedFraction clipped;
};

// The clipped-row check goes into p.diagnostics. Over ranks (issue 18): the exact sums are added
// over ranks and rank 0 draws, every rank gets its values.
MomentDraws run_moments(const ConstMatrixRef& X, std::int64_t rows, MomentPlan& p,
                        const StatOptions& o, bool estimated, Communicator& comm,
                        ReleaseBudget& account, Rng& rng) {
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
  MomentDraws out;
  auto draw = [&] {
    out.mean.resize(d);
    out.square_mean.resize(second);
    for (Eigen::Index j = 0; j < d; ++j) {
      const auto& b = p.bounds[static_cast<std::size_t>(j)];
      const double w = b.upper - b.lower;
      const double noisy = std::clamp(p.first[j].apply(s.first[j], rng), 0.0, n * p.quantum);
      out.mean[j] = b.lower + w * noisy / (n * p.quantum);
      if (second > 0) {
        const double sq = std::clamp(p.second[j].apply(s.second[j], rng), 0.0, n * p.quantum);
        out.square_mean[j] = (w * w / 4) * sq / (n * p.quantum);
      }
    }
    out.clipped = detail::report_clipped(p.clip_check, s.outside_rows, n, estimated,
                                               detail::kStatedBeta / 2, rng, p.diagnostics);
  };
  if (comm.size() == 1) {
    draw();
    return out;
  }
  const nlohmann::json got = on_root_json(comm, [&] {
    draw();
    return nlohmann::json{{"mean", std::vector<double>(out.mean.data(), out.mean.data() + d)},
                          {"square", std::vector<double>(out.square_mean.data(), out.square_mean.data() + second)},
                          {"upper", out.clipped.upper},
                          {"low", out.clipped.low},
                          {"diagnostics", p.diagnostics}};
  });
  const auto m = got["mean"].get<std::vector<double>>(), q = got["square"].get<std::vector<double>>();
  out.mean = Eigen::Map<const Vector>(m.data(), static_cast<Eigen::Index>(m.size()));
  out.square_mean = Eigen::Map<const Vector>(q.data(), static_cast<Eigen::Index>(q.size()));
  out.clipped = {got["upper"].get<double>(), got["low"].get<double>()};
  p.diagnostics = got["diagnostics"];
  return out;
}

enum class Moment { sum, mean, variance, std };

// The released estimate (post-processing of the draws).
Vector estimate_of(const MomentDraws& r, const std::vector<ColumnBounds>& bounds, double n,
                   Moment what) {
  if (what == Moment::mean) return r.mean;
  if (what == Moment::sum) return r.mean * n;
  Vector out(r.mean.size());
  for (Eigen::Index j = 0; j < out.size(); ++j) {
    const auto& b = bounds[static_cast<std::size_t>(j)];
    const double w = b.upper - b.lower, centred = r.mean[j] - (b.lower + b.upper) / 2;
    const double var = std::clamp(r.square_mean[j] - centred * centred, 0.0, w * w / 4);
    out[j] = what == Moment::std ? std::sqrt(var) : var;
  }
  return out;
}

// diagnostics["stated_error"] (docs/proofs/stats.md, "Stated error"): per column, with
// probability >= 1 - kStatedBeta, |estimate - the statistic of the data winsorised at
// [l - w, u + w]| <= noise term + clipping term, f the clipped fraction's upper bound:
// mean f w (sum: n f w), variance 4 f w^2 (+ the mean's noise through the centring), std the
// square root of the variance's radius.
void state_error(const MomentPlan& p, double f, double n, Moment what,
                 nlohmann::json& diagnostics) {
  const double beta = detail::kStatedBeta / (2 * static_cast<double>(p.first.size() * (p.second.empty() ? 1 : 2)));
  std::vector<double> radius, noise, clipping;
  nlohmann::json range = nlohmann::json::array();
  for (std::size_t j = 0; j < p.first.size(); ++j) {
    const auto& b = p.bounds[j];
    const double w = b.upper - b.lower, m = p.first[j].bound(beta);  // the mean's (or sum's)
    double e = m, c = f * w * (what == Moment::sum ? n : 1.0);
    if (what == Moment::variance || what == Moment::std) {
      e = p.second[j].bound(beta) + m * (w + m);
      c = 4 * f * w * w;
    }
    noise.push_back(what == Moment::std ? std::sqrt(e) : e);
    clipping.push_back(what == Moment::std ? std::sqrt(c) : c);
    radius.push_back(what == Moment::std ? std::sqrt(e + c) : e + c);
    range.push_back({b.lower - w, b.upper + w});
  }
  diagnostics["stated_error"] = {
      {"radius", radius}, {"confidence", 1 - detail::kStatedBeta}, {"noise_term", noise},
      {"clipping_term", clipping}, {"clipped_fraction_upper", f}, {"winsorised_at", range},
      {"meaning", "per column, |estimate - truth| <= radius with probability >= confidence, where "
                  "truth is the statistic of the column with every value beyond winsorised_at "
                  "(the bounds widened by their width on each side) counted at that end: the "
                  "statistic of the data itself only when no row lies that far. The clipping term "
                  "is a fraction of rows (clipped_fraction_upper, counted privately) times the "
                  "width: it does not bound how far the rows beyond winsorised_at are, so with "
                  "estimated bounds the release abstains when a low estimate of that fraction "
                  "exceeds clipped_fraction_threshold"}};
}

Release<Vector> moments(const ConstMatrixRef& X, const StatOptions& o, Rng& rng, Budget* budget,
                        Moment what) {
  // validate
  detail::validate_common(o);
  Communicator& comm = comm_or_single(o.run.comm);
  static constexpr const char* kNames[] = {"sum", "mean", "variance", "std"};
  const std::int64_t n = detail::guarded_rows(X, o, comm, kNames[static_cast<int>(what)]);
  const auto d = static_cast<std::size_t>(X.cols());
  const bool squares = what == Moment::variance || what == Moment::std;
  // plan (bounds: given, or estimated privately from scale_share, planned with the rest and used
  // only when the scale layer's rule says they may be)
  ReleaseBudget account = detail::release_budget(o, budget);
  nlohmann::json diagnostics = nlohmann::json::object();
  const detail::Shares shares = detail::shares(o, true);
  MomentPlan plan = plan_moments(n, d, o, squares, shares);
  const auto nd = static_cast<double>(n);
  std::optional<detail::ColumnBoundsPlan> given;  // public: checked before anything is charged
  if (!o.bounds.empty()) {
    given = detail::column_bounds(X, o, shares, account, rng, diagnostics);
    const auto narrow = unrepresentable(given->bounds, nd, plan.quantum, squares);
    require(!narrow, "bounds: {}", narrow.value_or(""));
  }
  SealFacts facts = detail::facts(o, Neighbouring::replace_one);
  if ((facts.abstained = detail::planned_bounds_abstention(o, shares, d, nd)))
    return seal(Vector(), account, facts, rng, std::move(diagnostics));  // nothing charged
  // charge: the whole plan (the budget lives on rank 0)
  all_or_none(comm, [&] { account.charge(planned(plan, detail::bounds_plan(o, shares, d))); });
  // run
  const detail::ColumnBoundsPlan bounds =
      given ? *given : detail::column_bounds(X, o, shares, account, rng, diagnostics);
  const auto narrow = unrepresentable(bounds.bounds, nd, plan.quantum, squares);
  if (!bounds.reliability.usable || narrow) {
    facts.abstained = bounds.reliability.usable ? *narrow : bounds.reliability.reason();
    return seal(Vector(), account, facts, rng, std::move(diagnostics));
  }
  set_bounds(plan, bounds.bounds, n, what == Moment::sum ? nd : 1.0);
  const MomentDraws draws = run_moments(X, n, plan, o, bounds.estimated, comm, account, rng);
  // seal
  diagnostics.update(plan.diagnostics);
  diagnostics["n"] = n;
  diagnostics["bounds"] = detail::bounds_json(bounds.bounds);
  diagnostics["noise_scale"] = detail::noise_scales(plan.first, 1.0);  // of the released mean or sum
  const double threshold = detail::clipped_threshold(d);
  state_error(plan, draws.clipped.upper, nd, what, diagnostics);
  diagnostics["stated_error"]["clipped_fraction_threshold"] = threshold;
  if (bounds.estimated && draws.clipped.low > threshold) {
    facts.abstained = fmt::format(
        "the privately estimated bounds clip at least about {:.1f}% of the rows (a low estimate), "
        "more than the {:.1f}% they may leave out: the tail lies beyond them and the statistic "
        "of the clipped column would be far from the column's own; give --bounds that hold the "
        "tail, or a larger epsilon",
        100 * draws.clipped.low, 100 * threshold);
    return seal(Vector(), account, facts, rng, std::move(diagnostics));
  }
  return seal(estimate_of(draws, bounds.bounds, nd, what), account, facts, rng,
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
  check_agreement(comm, detail::fingerprint(o, "count", X.cols()),
                  "the statistic's options and column count");
  const std::int64_t rows = allreduce_count(comm, static_cast<std::int64_t>(X.rows()));
  // plan: one row added or removed moves the count by 1
  ReleaseBudget account = detail::release_budget(o, budget);
  const Noise noise(1, 1.0, o, 1, "row count", 1);
  // charge
  all_or_none(comm, [&] { account.charge(noise.entry()); });  // the budget lives on rank 0
  // run
  const double noisy =
      on_root(comm, [&] { return std::max(0.0, noise.apply(static_cast<double>(rows), rng)); });
  // seal: the clamp at 0 only moves the estimate towards the count
  const double radius = noise.bound(detail::kStatedBeta);
  nlohmann::json diagnostics = {
      {"noise_scale", noise.noise_scale()},
      {"stated_error",
       {{"radius", {radius}}, {"confidence", 1 - detail::kStatedBeta}, {"noise_term", {radius}},
        {"meaning", "|estimate - the number of rows| <= radius with probability >= confidence"}}}};
  return seal(Vector(Vector::Constant(1, noisy)), account, detail::facts(o, Neighbouring::add_remove), rng,
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

void apply_request(Statistic s, const StatRequest& request, StatOptions& o) {
  check_options_apply(registry(), find_method(registry(), "stat", name_of(s)),
                      given_options(request));
  if (request.bounds) {
    const std::vector<double>& b = *request.bounds;
    require(b.size() % 2 == 0 && !b.empty(),
            fmt::format("bounds must be LO,HI pairs (once for every column or once per column), "
                        "got {} numbers", b.size()));
    o.bounds.clear();
    for (std::size_t k = 0; k < b.size(); k += 2) o.bounds.push_back({b[k], b[k + 1]});
  }
  if (request.scale_share) o.scale_share = *request.scale_share;
  if (request.quantiles) o.quantiles = *request.quantiles;
  if (request.grid_size) o.grid_size = static_cast<std::size_t>(*request.grid_size);
  if (request.categories) o.categories = *request.categories;
}

}  // namespace dpstats::stats
