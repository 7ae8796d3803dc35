// Black-box privacy auditor (design.md §6; docs/auditing.md).
//
// Given a mechanism run on two neighbouring inputs D and D', the auditor draws N outputs on each
// side, reduces every output to scalar events E and returns a high-confidence LOWER bound on the
// mechanism's ε at the claimed δ:
//
//     ε_lb(E) = ln( (p_lower(E | D) − δ) / p_upper(E | D') ),   both directions (D/D' and D'/D),
//
// with one-sided Clopper–Pearson bounds. Events come from families (threshold {f > t} and
// {f <= t}, histogram bins {a < f <= b}, atoms {f == v}, and user-supplied events), where f runs
// over the output's coordinates and its projection on the difference of the two means. The
// thresholds, bins, atoms and the projection are built, and the best `evaluated_events` candidates
// chosen, on a CALIBRATION split only; the chosen events are then counted on a fresh EVALUATION
// split drawn from independent random streams, and the Clopper–Pearson levels are Bonferroni-
// corrected over the 2 × evaluated_events bounds computed there.
//
// Guarantee: if the mechanism is (ε, δ)-DP for the pair (D, D'), then
//     P[ epsilon_lower_bound > ε ] <= false_alarm   (default 1e-7, below the 1e-6 of design.md §6).
// Proof: the chosen events depend on the calibration split only, which is independent of the
// evaluation split. For each chosen (E, direction), (ε, δ)-DP gives P(E|D) <= e^ε P(E|D') + δ, so
// ε_lb(E) > ε requires p_lower(E|D) > P(E|D) or p_upper(E|D') < P(E|D'); each of these 2k
// one-sided Clopper–Pearson events has probability <= false_alarm / (2k) (CP is exact or
// conservative), and the union bound gives the claim. The bisections below round every bound
// outwards, so floating point cannot make a bound optimistic.
//
// The auditor is a lower-bound tool: a violation is proof (at confidence 1 − false_alarm) that
// the mechanism does not satisfy the claim on that pair; passing is evidence, not proof.
//
// Header-only so that any test binary (tests/audit, tests/slow, later suites) can include it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <limits>
#include <numeric>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::audit {

// A mechanism with its input fixed: one call = one release drawn with the given randomness.
using VectorMechanism = std::function<std::vector<double>(Rng&)>;
using ScalarMechanism = std::function<double(Rng&)>;

// An event chosen by the user (before seeing any sample): `contains(output)` decides membership.
struct CustomEvent {
  std::string name;
  std::function<bool(std::span<const double>)> contains;
};

struct AuditOptions {
  std::size_t samples = 200000;           // outputs drawn per side (calibration + evaluation)
  double calibration_fraction = 0.25;     // share of them used to build and choose the events
  std::uint64_t seed = 1;                 // all streams derive from it: same seed, same result
  double false_alarm = 1e-7;              // P[a correct mechanism is flagged] is at most this
  std::size_t evaluated_events = 8;       // candidates carried to the evaluation split (Bonferroni)
  std::size_t quantile_thresholds = 128;  // evenly spaced quantile levels per feature ...
  bool tail_thresholds = true;            // ... plus levels 2^-m and 1 - 2^-m in both tails
  std::size_t max_atoms = 1024;           // most frequent repeated values kept as {f == v} events
  bool threshold_events = true;
  bool histogram_events = true;
  bool atom_events = true;
  bool project_mean_difference = true;  // add f = <o, m' - m> / |m' - m| for vector outputs
  std::vector<CustomEvent> custom_events;
};

struct AuditResult {
  double epsilon_lower_bound = 0;     // holds with probability >= 1 - false_alarm; >= 0
  double epsilon_point_estimate = 0;  // plug-in ln((p̂ - δ)/p̂') on the best event (eval split)
  std::string best_event;             // e.g. "coord[0] > 0.9931 (D over D')"; "none" if no event
  double p_numerator_lower = 0;       // Clopper–Pearson bounds behind epsilon_lower_bound
  double p_denominator_upper = 1;
  std::size_t count_numerator = 0, count_denominator = 0;  // evaluation counts of the best event
  std::size_t samples_per_side = 0, calibration_samples = 0, evaluation_samples = 0;
  std::size_t candidate_events = 0;  // (event, direction) pairs scored on the calibration split
  std::size_t evaluated_events = 0;  // pairs evaluated (the Bonferroni family)
  double claimed_epsilon = 0, delta = 0, false_alarm = 0;
  bool violation = false;  // epsilon_lower_bound > claimed_epsilon

  std::string summary() const {
    std::ostringstream s;
    s << std::setprecision(4) << "audit: eps_lb=" << epsilon_lower_bound << " (point "
      << epsilon_point_estimate << ") claimed eps=" << claimed_epsilon << " delta=" << delta
      << " -> " << (violation ? "VIOLATION" : "pass") << "; best event " << best_event << " counts "
      << count_numerator << "/" << evaluation_samples << " vs " << count_denominator << "/"
      << evaluation_samples << "; CP [" << p_numerator_lower << ", " << p_denominator_upper << "]; "
      << candidate_events << " candidates, " << evaluated_events << " evaluated; "
      << samples_per_side << " samples/side (" << calibration_samples << " calibration); "
      << "false alarm <= " << false_alarm;
    return s.str();
  }
};

inline std::ostream& operator<<(std::ostream& os, const AuditResult& r) {
  return os << r.summary();
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------
namespace detail {

// Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes §6.4).
inline double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-16;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) return h;
  }
  throw InvalidArgument("regularized_incomplete_beta: continued fraction did not converge");
}

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The seed of one of the four independent streams (side × split) of an audit.
inline std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t state = seed ^ (0xd1b54a32d192ed03ULL * (stream + 1));
  splitmix64(state);
  return splitmix64(state);
}

}  // namespace detail

// I_x(a, b), with y = 1 - x passed separately so that x close to 1 keeps its precision.
inline double regularized_incomplete_beta(double a, double b, double x, double y) {
  if (!(a > 0) || !(b > 0)) throw InvalidArgument("regularized_incomplete_beta: a, b must be > 0");
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(y);
  if (x < (a + 1) / (a + b + 2))
    return std::exp(log_front) * detail::beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * detail::beta_continued_fraction(b, a, y) / b;
}
inline double regularized_incomplete_beta(double a, double b, double x) {
  return regularized_incomplete_beta(a, b, x, 1 - x);
}

// One-sided Clopper–Pearson bounds for a binomial proportion from k successes in n trials:
// P_p[lower(k) > p] <= alpha and P_p[upper(k) < p] <= alpha for every p. alpha in (0, 0.5].
// Bisection; the endpoint returned is always on the conservative side.
inline double clopper_pearson_lower(std::size_t k, std::size_t n, double alpha) {
  require(n > 0 && k <= n, "clopper_pearson_lower: need 0 <= k <= n, n > 0");
  require(alpha > 0 && alpha <= 0.5, "clopper_pearson_lower: alpha must be in (0, 0.5]");
  if (k == 0) return 0;
  const double a = static_cast<double>(k), b = static_cast<double>(n - k + 1);
  // P_p[X >= k] = I_p(k, n-k+1), increasing in p; at p = k/n it is >= 1/2 >= alpha.
  double lo = 0, hi = a / static_cast<double>(n);
  for (int it = 0; it < 400 && hi - lo > 1e-15 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (regularized_incomplete_beta(a, b, mid, 1 - mid) <= alpha)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

inline double clopper_pearson_upper(std::size_t k, std::size_t n, double alpha) {
  require(n > 0 && k <= n, "clopper_pearson_upper: need 0 <= k <= n, n > 0");
  require(alpha > 0 && alpha <= 0.5, "clopper_pearson_upper: alpha must be in (0, 0.5]");
  if (k == n) return 1;
  const double a = static_cast<double>(n - k), b = static_cast<double>(k + 1);
  // P_p[X <= k] = I_{1-p}(n-k, k+1), decreasing in p; at p = k/n it is >= 1/2 >= alpha.
  double lo = static_cast<double>(k) / static_cast<double>(n), hi = 1;
  for (int it = 0; it < 400 && hi - lo > 1e-15 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (regularized_incomplete_beta(a, b, 1 - mid, mid) <= alpha)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

// Chernoff (relative-entropy) bounds: valid like Clopper–Pearson but slightly looser and cheap.
// Used only to rank candidates on the calibration split.
namespace detail {
inline double bernoulli_kl(double q, double p) {
  double r = 0;
  if (q > 0) r += q * std::log(q / p);
  if (q < 1) r += (1 - q) * std::log((1 - q) / (1 - p));
  return r;
}
inline double chernoff_lower(std::size_t k, std::size_t n, double log_inv_alpha) {
  if (k == 0) return 0;
  const double q = static_cast<double>(k) / static_cast<double>(n), budget = log_inv_alpha / n;
  double lo = 0, hi = q;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (bernoulli_kl(q, mid) > budget)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}
inline double chernoff_upper(std::size_t k, std::size_t n, double log_inv_alpha) {
  if (k == n) return 1;
  const double q = static_cast<double>(k) / static_cast<double>(n), budget = log_inv_alpha / n;
  double lo = q, hi = 1;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (bernoulli_kl(q, mid) > budget)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

inline double epsilon_bound(double p_num_lower, double p_den_upper, double delta) {
  const double num = p_num_lower - delta;
  if (!(num > 0)) return -std::numeric_limits<double>::infinity();
  return std::log(num / p_den_upper);
}

// ---------------------------------------------------------------------------------------------
// Samples and events
// ---------------------------------------------------------------------------------------------

// n outputs of dimension d, row-major.
struct Samples {
  std::size_t n = 0, d = 0;
  std::vector<double> rows;
  std::span<const double> row(std::size_t i) const { return {rows.data() + i * d, d}; }
};

inline Samples draw(const VectorMechanism& mechanism, std::uint64_t seed, std::size_t n,
                    std::size_t expected_dim, const char* side) {
  SeededRng rng(seed);
  Samples s;
  s.n = n;
  s.d = expected_dim;
  s.rows.reserve(n * std::max<std::size_t>(expected_dim, 1));
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<double> out = mechanism(rng);
    if (s.d == 0) {
      require(!out.empty(),
              std::string("audit: the mechanism on ") + side + " returned an empty output");
      s.d = out.size();
      s.rows.reserve(n * s.d);
    }
    require(out.size() == s.d, std::string("audit: the mechanism on ") + side +
                                   " returned outputs of different lengths (" +
                                   std::to_string(out.size()) + " vs " + std::to_string(s.d) + ")");
    for (double v : out) {
      require(!std::isnan(v), std::string("audit: the mechanism on ") + side +
                                  " returned NaN; encode non-numeric outcomes as numbers");
    }
    s.rows.insert(s.rows.end(), out.begin(), out.end());
  }
  return s;
}

enum class EventKind { greater, at_most, interval, atom, custom };

struct Event {
  EventKind kind = EventKind::greater;
  std::size_t feature = 0;  // index into the feature list (or custom event index)
  double lo = 0, hi = 0;

  bool contains(double f) const {
    switch (kind) {
      case EventKind::greater:
        return f > lo;
      case EventKind::at_most:
        return f <= lo;
      case EventKind::interval:
        return f > lo && f <= hi;
      case EventKind::atom:
        return f == lo;
      case EventKind::custom:
        return false;
    }
    return false;
  }
};

struct Candidate {
  Event event;
  bool d_over_d_prime = true;  // numerator is D (else D')
  double score = 0;            // calibration-split lower bound
};

// The scalar features: each coordinate, then (optionally) the projection on a direction.
struct Features {
  std::size_t d = 0;
  std::vector<double> direction;  // empty: no projection

  std::size_t count() const { return d + (direction.empty() ? 0 : 1); }
  std::string name(std::size_t j) const {
    if (j < d) return d == 1 ? std::string("output") : "coord[" + std::to_string(j) + "]";
    return "proj(mean difference)";
  }
  // Column j of the feature matrix of `s`.
  std::vector<double> column(const Samples& s, std::size_t j) const {
    std::vector<double> col(s.n);
    if (j < d) {
      for (std::size_t i = 0; i < s.n; ++i) col[i] = s.rows[i * s.d + j];
    } else {
      for (std::size_t i = 0; i < s.n; ++i) {
        double acc = 0;
        for (std::size_t c = 0; c < d; ++c) acc += s.rows[i * s.d + c] * direction[c];
        col[i] = acc;
      }
    }
    return col;
  }
};

inline std::string format_value(double v) {
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

inline std::string describe(const Event& e, const Features& f,
                            const std::vector<CustomEvent>& custom) {
  switch (e.kind) {
    case EventKind::greater:
      return f.name(e.feature) + " > " + format_value(e.lo);
    case EventKind::at_most:
      return f.name(e.feature) + " <= " + format_value(e.lo);
    case EventKind::interval:
      return format_value(e.lo) + " < " + f.name(e.feature) + " <= " + format_value(e.hi);
    case EventKind::atom:
      return f.name(e.feature) + " == " + format_value(e.lo);
    case EventKind::custom:
      return "custom: " + custom[e.feature].name;
  }
  return "";
}

// Count of values > t in a sorted vector.
inline std::size_t count_greater(const std::vector<double>& sorted, double t) {
  return static_cast<std::size_t>(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), t));
}

// Thresholds from the pooled calibration sample: quantiles at evenly spaced and tail levels, or
// every distinct value when there are few of them (discrete outputs). Sorted, distinct; the
// largest pooled value is dropped ({f > max} is empty on the calibration split).
inline std::vector<double> thresholds_from(const std::vector<double>& pooled_sorted,
                                           const AuditOptions& o) {
  std::vector<double> distinct;
  std::unique_copy(pooled_sorted.begin(), pooled_sorted.end(), std::back_inserter(distinct));
  std::vector<double> t;
  const std::size_t m = pooled_sorted.size();
  if (distinct.size() <= 4 * o.quantile_thresholds + 2) {
    t = distinct;
  } else {
    std::vector<double> levels;
    for (std::size_t i = 1; i <= o.quantile_thresholds; ++i) {
      levels.push_back(static_cast<double>(i) / static_cast<double>(o.quantile_thresholds + 1));
    }
    if (o.tail_thresholds) {
      for (double q = 0.25; q * static_cast<double>(m) >= 2; q *= 0.5) {
        levels.push_back(q);
        levels.push_back(1 - q);
      }
    }
    for (double q : levels) {
      auto r = static_cast<std::size_t>(std::floor(q * static_cast<double>(m)));
      t.push_back(pooled_sorted[std::min(r, m - 1)]);
    }
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
  }
  if (!t.empty() && t.back() >= pooled_sorted.back()) t.pop_back();
  return t;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The audit
// ---------------------------------------------------------------------------------------------

// Audits the claim "(claimed_epsilon, delta)-DP" on the neighbouring pair given by
// `on_d` (the mechanism run on D) and `on_d_prime` (on D').
inline AuditResult audit(const VectorMechanism& on_d, const VectorMechanism& on_d_prime,
                         double claimed_epsilon, double delta, const AuditOptions& o = {}) {
  using namespace detail;
  require(std::isfinite(claimed_epsilon) && claimed_epsilon >= 0,
          "audit: claimed_epsilon must be finite and >= 0, got " + format_value(claimed_epsilon));
  require(delta >= 0 && delta < 1, "audit: delta must be in [0, 1), got " + format_value(delta));
  require(
      o.calibration_fraction > 0 && o.calibration_fraction < 1,
      "audit: calibration_fraction must be in (0, 1), got " + format_value(o.calibration_fraction));
  require(o.false_alarm > 0 && o.false_alarm < 1,
          "audit: false_alarm must be in (0, 1), got " + format_value(o.false_alarm));
  require(o.evaluated_events >= 1, "audit: evaluated_events must be >= 1");
  require(o.quantile_thresholds >= 1, "audit: quantile_thresholds must be >= 1");
  const auto n_cal = static_cast<std::size_t>(
      std::llround(o.calibration_fraction * static_cast<double>(o.samples)));
  require(n_cal >= 100 && o.samples >= n_cal + 100,
          "audit: samples must leave >= 100 outputs per side in both splits, got " +
              std::to_string(o.samples));
  const std::size_t n_eval = o.samples - n_cal;
  const double alpha = o.false_alarm / (2.0 * static_cast<double>(o.evaluated_events));
  require(alpha <= 0.5, "audit: false_alarm / (2 evaluated_events) must be <= 0.5");
  const double log_inv_alpha = -std::log(alpha);

  // Four independent streams: (D, D') × (calibration, evaluation).
  const Samples cal_d = draw(on_d, stream_seed(o.seed, 0), n_cal, 0, "D");
  const Samples cal_dp = draw(on_d_prime, stream_seed(o.seed, 1), n_cal, cal_d.d, "D'");
  const std::size_t dim = cal_d.d;

  Features features;
  features.d = dim;
  if (dim > 1 && o.project_mean_difference) {
    std::vector<double> diff(dim, 0.0);
    for (std::size_t i = 0; i < n_cal; ++i) {
      for (std::size_t c = 0; c < dim; ++c)
        diff[c] += cal_dp.rows[i * dim + c] - cal_d.rows[i * dim + c];
    }
    double norm = 0;
    for (double v : diff) norm += v * v;
    norm = std::sqrt(norm);
    if (norm > 0 && std::isfinite(norm)) {
      for (double& v : diff) v /= norm;
      features.direction = std::move(diff);
    }
  }

  // ---- calibration: build the candidate events and score them ----
  std::vector<Candidate> candidates;
  auto score = [&](const Event& e, std::size_t k_d, std::size_t k_dp) {
    const double d_lo = chernoff_lower(k_d, n_cal, log_inv_alpha);
    const double d_hi = chernoff_upper(k_d, n_cal, log_inv_alpha);
    const double dp_lo = chernoff_lower(k_dp, n_cal, log_inv_alpha);
    const double dp_hi = chernoff_upper(k_dp, n_cal, log_inv_alpha);
    candidates.push_back({e, true, epsilon_bound(d_lo, dp_hi, delta)});
    candidates.push_back({e, false, epsilon_bound(dp_lo, d_hi, delta)});
  };

  for (std::size_t j = 0; j < features.count(); ++j) {
    std::vector<double> a = features.column(cal_d, j), b = features.column(cal_dp, j);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<double> pooled(a.size() + b.size());
    std::merge(a.begin(), a.end(), b.begin(), b.end(), pooled.begin());

    const std::vector<double> t = thresholds_from(pooled, o);
    std::vector<std::size_t> gt_a(t.size()), gt_b(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      gt_a[i] = count_greater(a, t[i]);
      gt_b[i] = count_greater(b, t[i]);
    }
    if (o.threshold_events) {
      for (std::size_t i = 0; i < t.size(); ++i) {
        score({EventKind::greater, j, t[i], 0}, gt_a[i], gt_b[i]);
        score({EventKind::at_most, j, t[i], 0}, n_cal - gt_a[i], n_cal - gt_b[i]);
      }
    }
    if (o.histogram_events) {
      for (std::size_t i = 0; i + 1 < t.size(); ++i) {
        score({EventKind::interval, j, t[i], t[i + 1]}, gt_a[i] - gt_a[i + 1],
              gt_b[i] - gt_b[i + 1]);
      }
    }
    if (o.atom_events && o.max_atoms > 0) {
      std::vector<std::pair<std::size_t, double>> atoms;  // (multiplicity, value)
      for (std::size_t i = 0; i < pooled.size();) {
        std::size_t k = i;
        while (k < pooled.size() && pooled[k] == pooled[i]) ++k;
        if (k - i >= 2) atoms.emplace_back(k - i, pooled[i]);
        i = k;
      }
      if (atoms.size() > o.max_atoms) {
        std::stable_sort(atoms.begin(), atoms.end(),
                         [](const auto& x, const auto& y) { return x.first > y.first; });
        atoms.resize(o.max_atoms);
      }
      for (const auto& [mult, v] : atoms) {
        auto ra = std::equal_range(a.begin(), a.end(), v);
        auto rb = std::equal_range(b.begin(), b.end(), v);
        score({EventKind::atom, j, v, 0}, static_cast<std::size_t>(ra.second - ra.first),
              static_cast<std::size_t>(rb.second - rb.first));
      }
    }
  }
  for (std::size_t c = 0; c < o.custom_events.size(); ++c) {
    require(static_cast<bool>(o.custom_events[c].contains), "audit: custom event without a test");
    std::size_t k_d = 0, k_dp = 0;
    for (std::size_t i = 0; i < n_cal; ++i) {
      k_d += o.custom_events[c].contains(cal_d.row(i));
      k_dp += o.custom_events[c].contains(cal_dp.row(i));
    }
    score({EventKind::custom, c, 0, 0}, k_d, k_dp);
  }

  AuditResult r;
  r.samples_per_side = o.samples;
  r.calibration_samples = n_cal;
  r.evaluation_samples = n_eval;
  r.candidate_events = candidates.size();
  r.claimed_epsilon = claimed_epsilon;
  r.delta = delta;
  r.false_alarm = o.false_alarm;
  r.best_event = "none";

  // Keep the best candidates with a finite calibration score (a stable order keeps runs
  // reproducible); the Bonferroni family is fixed at evaluated_events whatever is kept.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) { return x.score > y.score; });
  std::size_t keep = 0;
  while (keep < candidates.size() && keep < o.evaluated_events &&
         candidates[keep].score > -std::numeric_limits<double>::infinity()) {
    ++keep;
  }
  candidates.resize(keep);
  r.evaluated_events = keep;

  // ---- evaluation on fresh, independent samples ----
  const Samples ev_d = draw(on_d, stream_seed(o.seed, 2), n_eval, dim, "D");
  const Samples ev_dp = draw(on_d_prime, stream_seed(o.seed, 3), n_eval, dim, "D'");
  std::vector<std::vector<double>> col_d(features.count()), col_dp(features.count());
  double best = -std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) {
    std::size_t k_d = 0, k_dp = 0;
    if (c.event.kind == EventKind::custom) {
      const CustomEvent& ce = o.custom_events[c.event.feature];
      for (std::size_t i = 0; i < n_eval; ++i) {
        k_d += ce.contains(ev_d.row(i));
        k_dp += ce.contains(ev_dp.row(i));
      }
    } else {
      const std::size_t j = c.event.feature;
      if (col_d[j].empty()) {
        col_d[j] = features.column(ev_d, j);
        col_dp[j] = features.column(ev_dp, j);
      }
      for (std::size_t i = 0; i < n_eval; ++i) {
        k_d += c.event.contains(col_d[j][i]);
        k_dp += c.event.contains(col_dp[j][i]);
      }
    }
    const std::size_t k_num = c.d_over_d_prime ? k_d : k_dp;
    const std::size_t k_den = c.d_over_d_prime ? k_dp : k_d;
    const double p_lo = clopper_pearson_lower(k_num, n_eval, alpha);
    const double p_hi = clopper_pearson_upper(k_den, n_eval, alpha);
    const double eps = epsilon_bound(p_lo, p_hi, delta);
    if (eps > best) {
      best = eps;
      r.best_event = describe(c.event, features, o.custom_events) +
                     (c.d_over_d_prime ? " (D over D')" : " (D' over D)");
      r.p_numerator_lower = p_lo;
      r.p_denominator_upper = p_hi;
      r.count_numerator = k_num;
      r.count_denominator = k_den;
      const double n = static_cast<double>(n_eval);
      const double num = static_cast<double>(k_num) / n - delta;
      r.epsilon_point_estimate = k_den == 0 ? std::numeric_limits<double>::infinity()
                                            : std::log(num / (static_cast<double>(k_den) / n));
    }
  }
  r.epsilon_lower_bound = std::max(0.0, best);
  r.violation = r.epsilon_lower_bound > claimed_epsilon;
  return r;
}

// Scalar mechanisms: the same audit on one-coordinate outputs.
inline AuditResult audit_scalar(const ScalarMechanism& on_d, const ScalarMechanism& on_d_prime,
                                double claimed_epsilon, double delta, const AuditOptions& o = {}) {
  return audit([&](Rng& rng) { return std::vector<double>{on_d(rng)}; },
               [&](Rng& rng) { return std::vector<double>{on_d_prime(rng)}; }, claimed_epsilon,
               delta, o);
}

// ---------------------------------------------------------------------------------------------
// Reference mechanisms for testing the auditor itself (floating-point, from Rng::uniform01 only).
// They are NOT safe against floating-point attacks and must never make a release.
// ---------------------------------------------------------------------------------------------
namespace reference {

inline double open01(Rng& rng) { return rng.uniform01() + 0x1.0p-54; }  // in (0, 1)

// Laplace(0, scale) by inversion.
inline double laplace(Rng& rng, double scale) {
  const double u = open01(rng) - 0.5;
  return -scale * std::copysign(1.0, u) * std::log1p(-2 * std::fabs(u));
}

// N(0, sigma^2) by Box–Muller.
inline double gaussian(Rng& rng, double sigma) {
  const double r = std::sqrt(-2 * std::log(open01(rng)));
  return sigma * r * std::cos(2 * 3.14159265358979323846 * open01(rng));
}

inline double normal_cdf(double x) { return 0.5 * std::erfc(-x / 1.41421356237309504880); }

// Balle & Wang (2018): the δ of the Gaussian mechanism with noise σ at ε, and the σ meeting δ.
inline double analytic_gaussian_delta(double sens, double sigma, double eps) {
  return normal_cdf(sens / (2 * sigma) - eps * sigma / sens) -
         std::exp(eps) * normal_cdf(-sens / (2 * sigma) - eps * sigma / sens);
}
inline double analytic_gaussian_sigma(double sens, double eps, double delta) {
  double lo = 1e-3 * sens, hi = 1e3 * sens;
  for (int i = 0; i < 200; ++i) {
    const double mid = std::sqrt(lo * hi);
    (analytic_gaussian_delta(sens, mid, eps) > delta ? lo : hi) = mid;
  }
  return hi;
}

// k-ary randomized response: reports `truth` with probability e^ε / (e^ε + k - 1), otherwise one
// of the other k - 1 values uniformly. Its privacy loss between truths 0 and 1 is exactly ε.
inline ScalarMechanism randomized_response(double eps, int truth, int k = 4) {
  return [=](Rng& g) {
    const double keep = std::exp(eps) / (std::exp(eps) + k - 1);
    if (g.uniform01() < keep) return static_cast<double>(truth);
    const auto other = static_cast<int>(g.uniform_below(static_cast<std::uint64_t>(k - 1)));
    return static_cast<double>(other >= truth ? other + 1 : other);
  };
}

}  // namespace reference

}  // namespace dpstats::audit
