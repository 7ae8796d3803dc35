#include "dpstats/median/boosting.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/mechanisms/gaussian.hpp"

namespace dpstats {

namespace {

constexpr double kUnitRoundoff = 0x1p-53;

// Exponent b of the gradient quantum 2^-b (see the header): the one exact sum's ball convention.
int gradient_bits(std::int64_t n) { return exact::ball_bits(n); }

void check_rho(double rho) { check_positive(rho, "rho"); }

std::vector<std::int64_t> permutation(std::int64_t m, Rng& rng) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(m));
  std::iota(p.begin(), p.end(), 0);
  RandomBits bits(rng);
  for (std::int64_t i = m - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

// The global ids of a data-independent random subset of size m < n (the first m entries of a
// partial Fisher–Yates shuffle of 0..n−1).
std::vector<std::int64_t> subsample_ids(std::int64_t n, std::int64_t m, Rng& rng) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  RandomBits bits(rng);
  for (std::int64_t i = 0; i < m; ++i) {
    const auto j = i + static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n - i)));
    std::swap(rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
  }
  rows.resize(static_cast<std::size_t>(m));
  return rows;
}

// This rank's rows among a data-independent random subset of min(n, m) global rows (X itself when
// m ≥ n). Rank 0 draws the ids; the exact sums over the subset do not depend on the rows' order.
RowMatrix subsample_rows(const ConstMatrixRef& X, std::int64_t m, const RowShard& shard, Rng& rng) {
  const std::int64_t n = total_rows(X, shard);
  if (m >= n) return X;
  const auto ids = on_root(comm_or_single(shard.comm), [&] { return subsample_ids(n, m, rng); });
  std::vector<std::int64_t> local;
  for (const auto id : ids)
    if (id >= shard.offset && id < shard.offset + X.rows()) local.push_back(id - shard.offset);
  RowMatrix S(static_cast<Eigen::Index>(local.size()), X.cols());
  for (std::size_t i = 0; i < local.size(); ++i) S.row(static_cast<Eigen::Index>(i)) = X.row(local[i]);
  return S;
}

}  // namespace

// l2 sensitivity of the released mean gradient (see the header): the exact integer sum moves by
// at most 2·(1 + (d+4)·2^-52)·2^b + sqrt(d); the final division by n·2^b rounds each coordinate
// with relative error 2^-53, which moves the pair apart by at most 2·2^-53·(||g|| + ||g'||) ≤
// 2^-49 (||g|| ≤ 1 + sqrt(d)·2^-b ≤ 2): added as an absolute slack.
double gradient_sensitivity(std::int64_t n, std::int64_t d) {
  const double scale = std::ldexp(1.0, gradient_bits(n));
  return exact::ball_lattice_sensitivity(d, gradient_bits(n)) / (static_cast<double>(n) * scale) +
         0x1p-49;
}

// h_q = Σ v_i/(n·2^b) with v_i = round(2^b·tau/max(dist_i, tau)) in [0, 2^b]: replacing a row
// moves the exact integer sum by at most 2^b, the mean by 1/n; the final division's rounding
// (relative 2^-53 on a value ≤ 1) is covered by the 2^-49 slack.
double curvature_sensitivity(std::int64_t n) { return 1 / static_cast<double>(n) + 0x1p-49; }

// The fused kernel: per row, the unit vector u_i = (z − x_i)/‖z − x_i‖ on the grid 2^-b
// (exact::ball_factor with clip 0: every row is normalised) and the curvature term
// round(2^b·tau/max(dist_i, tau)), added in the one exact sum (columns 0..d−1 and d).
MeanGradient mean_unit_gradient(const ConstMatrixRef& X, const Vector& z, double tau,
                                int threads, const RowShard& shard) {
  const std::int64_t n = total_rows(X, shard);
  const Eigen::Index rows = X.rows(), d = X.cols();
  const int b = gradient_bits(n);
  const double scale = std::ldexp(1.0, b);
  const Eigen::Index stride = X.outerStride();
  const double* zz = z.data();
  // Terms: |u_ij|·2^b <= 2^b(1 + (d+4)·2^-52) < 2^(b+1); curvature terms <= 2^b.
  Vector sums = exact::row_sums(rows, d + 1, 2 * scale, threads,
                                      [&](int, std::int64_t begin, std::int64_t end, std::uint64_t* w) {
    const Eigen::Index d = X.cols();  // a local bound: see exact::row_sums
    std::vector<double> df(static_cast<std::size_t>(d));
    for (std::int64_t i = begin; i < end; ++i) {
      const double* row = X.data() + i * stride;
      double s = 0;
      for (Eigen::Index j = 0; j < d; ++j) {
        df[j] = zz[j] - row[j];
        s += df[j] * df[j];
      }
      const double dist = std::sqrt(s);
      exact::add(w[d], tau > 0 ? scale * tau / std::max(dist, tau) : 0.0);
      // u_i = 0 at a coincident point (docs/proofs/median.md §3).
      const double f = s > 0 ? exact::ball_factor(dist, 0.0, scale) : 0.0;
      for (Eigen::Index j = 0; j < d; ++j) exact::add(w[j], df[j] * f);
    }
  });
  if (shard.comm) allreduce_exact(*shard.comm, sums);  // the ranks' integer sums, exactly
  MeanGradient m;
  const double denom = static_cast<double>(n) * scale;
  m.g = sums.head(d) / denom;
  m.sensitivity = gradient_sensitivity(n, d);
  m.curvature = sums[d] / denom;
  return m;
}

namespace {

// The noisy-gradient mechanism for a run of `steps` gradient releases at ρ/steps each. Its
// sensitivity depends on (n, d) only.
GaussianMechanism gradient_mechanism(std::int64_t n, std::int64_t d, double rho, int steps,
                                     NoiseMode noise) {
  return GaussianMechanism::from_rho(gradient_sensitivity(n, d), rho / steps,
                                     static_cast<std::size_t>(d), noise);
}

void check_dpgd(const DpgdOptions& o) {
  check_rho(o.rho);
  require(o.steps >= 1, fmt::format("steps must be >= 1, got {}", o.steps));
  check_positive(o.eta, "eta");
  check_positive(o.radius, "radius");
  require(o.sigma_scale == 0 || o.sigma_scale == 1, "sigma_scale must be 0 or 1");
  require(!o.weiszfeld_step || (o.curvature_share > 0 && o.curvature_share < 1),
          fmt::format("curvature_share must be in (0, 1), got {}", o.curvature_share));
  require(!o.weiszfeld_step || (o.weiszfeld_tau_fraction > 0 && o.weiszfeld_tau_fraction <= 1),
          fmt::format("weiszfeld_tau_fraction must be in (0, 1], got {}", o.weiszfeld_tau_fraction));
}

// DP-GD's mechanisms (public values only): the gradient's at ρ_g/T per step and, with the
// Weiszfeld step, the curvature's at ρ_h/T, ρ_g + ρ_h <= ρ.
struct DpgdMechanisms {
  std::optional<GaussianMechanism> gradient, curvature;
  Ledger entries;
};

DpgdMechanisms dpgd_mechanisms(std::int64_t n, std::int64_t d, const DpgdOptions& o) {
  DpgdMechanisms m;
  if (o.sigma_scale == 0) return m;
  const double rho_g = o.weiszfeld_step ? o.rho * (1 - o.curvature_share) : o.rho;
  const double rho_h = remainder_after(o.rho, rho_g) * (1 - 1e-9);
  m.gradient = gradient_mechanism(n, d, rho_g, o.steps, o.noise);
  LedgerEntry e = m.gradient->ledger_entry("dpgd noisy gradient");
  e.count = o.steps;
  m.entries.push_back(e);
  if (o.weiszfeld_step) {
    m.curvature = GaussianMechanism::from_rho(curvature_sensitivity(n), rho_h / o.steps, 1, o.noise);
    LedgerEntry c = m.curvature->ledger_entry("dpgd noisy curvature (Weiszfeld step)");
    c.count = o.steps;
    m.entries.push_back(c);
  }
  return m;
}

void spend_all(Budget& budget, const Ledger& entries) {
  Budget probe = budget;  // all or nothing
  for (const auto& e : entries) probe.spend(e);
  budget = std::move(probe);
}

}  // namespace

Ledger dpgd_entries(std::int64_t n, std::int64_t d, const DpgdOptions& o) {
  check_dpgd(o);
  return dpgd_mechanisms(n, d, o).entries;
}

namespace {

// DP-GD's loop with mechanisms already charged.
Vector run_dpgd(const ConstMatrixRef& X, const Vector& x0, const DpgdOptions& o,
                const DpgdMechanisms& mech, Rng& rng) {
  const double tau = o.weiszfeld_step ? o.weiszfeld_tau_fraction * o.radius : 0;
  const bool noisy = mech.gradient.has_value();
  Communicator& comm = comm_or_single(o.shard.comm);
  Vector theta = x0, avg = Vector::Zero(X.cols());
  for (int t = 1; t <= o.steps; ++t) {
    const MeanGradient m = mean_unit_gradient(X, theta, tau, o.threads, o.shard);
    Vector g = noisy ? on_root(comm, [&] { return mech.gradient->apply(m.g, rng); }) : m.g;
    double eta = o.eta;
    if (o.weiszfeld_step) {
      const double h =
          noisy ? on_root(comm, [&] { return mech.curvature->apply(m.curvature, rng); }) : m.curvature;
      if (h * o.eta > tau) eta = tau / h;  // 1/Ĥ = tau/ĥ, capped at o.eta
    }
    theta -= eta * g;
    project_to_ball(theta, x0, o.radius);
    avg += (theta - avg) / t;
  }
  return o.average ? avg : theta;
}

}  // namespace

Vector dpgd(const ConstMatrixRef& X, const Vector& x0, const DpgdOptions& o, Budget& budget,
            Rng& rng) {
  check_data(X);
  check_dpgd(o);
  require(x0.size() == X.cols(), "x0 must have one coordinate per column of X");
  const DpgdMechanisms mech = dpgd_mechanisms(total_rows(X, o.shard), X.cols(), o);
  spend_all(budget, mech.entries);
  return run_dpgd(X, x0, o, mech, rng);
}

namespace {

void check_localization(double R, double r_hat, double rho) {
  check_positive(R, "radius");
  check_positive(r_hat, "r_hat");
  check_rho(rho);
}

// The J rounds of the HSU24 localization: round j runs DP-GD on B(c_j, D_j), D_0 = R,
// D_{j+1} = D_j/2 + 12 r̂ (public given r̂).
std::vector<DpgdOptions> hsu24_rounds(std::int64_t n, std::int64_t d, double R, double r_hat,
                                      const HsuLocalizationOptions& o) {
  check_localization(R, r_hat, o.rho);
  require(o.inner_steps >= 1, "inner_steps must be >= 1");
  const int J = std::max(1, static_cast<int>(std::ceil(std::log2(R / r_hat))));
  const double rho_j = o.rho / J;
  const auto nn = static_cast<double>(n);
  const auto dd = static_cast<double>(d);
  std::vector<DpgdOptions> rounds;
  double D = R;
  for (int j = 0; j < J; ++j) {
    DpgdOptions g;
    g.rho = rho_j;
    g.steps = o.inner_steps;
    g.eta = D * std::sqrt(2 * dd / (3 * rho_j * nn * nn));
    g.radius = D;
    g.noise = o.noise;
    g.threads = o.threads;
    g.shard = o.shard;
    rounds.push_back(g);
    D = D / 2 + 12 * r_hat;
  }
  return rounds;
}

// T = ⌈ln(R/r̂)/ln(1/decay)⌉ + extra_steps + 1 geometric steps.
int geometric_steps(double R, double r_hat, const GeometricLocalizationOptions& o) {
  check_localization(R, r_hat, o.rho);
  require(o.decay > 0 && o.decay < 1, fmt::format("decay must be in (0, 1), got {}", o.decay));
  require(o.extra_steps >= 0, "extra_steps must be >= 0");
  require(o.subsample >= 1, "subsample must be >= 1");
  return std::max(0, static_cast<int>(std::ceil(std::log(R / r_hat) / std::log(1 / o.decay)))) +
         o.extra_steps + 1;
}

LedgerEntry geometric_entry(const GaussianMechanism& mech, int steps) {
  LedgerEntry e = mech.ledger_entry("geometric localization noisy gradient");
  e.count = steps;
  return e;
}

}  // namespace

Ledger hsu24_localize_entries(std::int64_t n, std::int64_t d, double R, double r_hat,
                              const HsuLocalizationOptions& o) {
  Ledger out;
  for (const auto& g : hsu24_rounds(n, d, R, r_hat, o))
    for (auto& e : dpgd_entries(n, d, g)) out.push_back(std::move(e));
  return out;
}

Vector hsu24_localize(const ConstMatrixRef& X, double R, double r_hat,
                      const HsuLocalizationOptions& o, Budget& budget, Rng& rng) {
  check_data(X);
  const std::int64_t n = total_rows(X, o.shard);
  const auto rounds = hsu24_rounds(n, X.cols(), R, r_hat, o);
  std::vector<DpgdMechanisms> mech;
  Ledger all;
  for (const auto& g : rounds) {
    mech.push_back(dpgd_mechanisms(n, X.cols(), g));
    all.insert(all.end(), mech.back().entries.begin(), mech.back().entries.end());
  }
  spend_all(budget, all);
  Vector c = Vector::Zero(X.cols());
  for (std::size_t j = 0; j < rounds.size(); ++j) c = run_dpgd(X, c, rounds[j], mech[j], rng);
  return c;
}

Ledger geometric_localize_entries(std::int64_t n, std::int64_t d, double R, double r_hat,
                                  const GeometricLocalizationOptions& o) {
  const int steps = geometric_steps(R, r_hat, o);
  return {geometric_entry(gradient_mechanism(std::min(n, o.subsample), d, o.rho, steps, o.noise),
                          steps)};
}

Vector geometric_localize(const ConstMatrixRef& X, double R, double r_hat,
                          const GeometricLocalizationOptions& o, Budget& budget, Rng& rng) {
  check_data(X);
  const int steps = geometric_steps(R, r_hat, o);
  const std::int64_t m = std::min<std::int64_t>(total_rows(X, o.shard), o.subsample);
  GaussianMechanism mech = gradient_mechanism(m, X.cols(), o.rho, steps, o.noise);
  budget.spend(geometric_entry(mech, steps));
  const RowMatrix S = subsample_rows(X, o.subsample, o.shard, rng);
  RowShard sub = o.shard;
  sub.total = m;  // the subset's rows, spread over the ranks (offsets are not used below)
  Communicator& comm = comm_or_single(o.shard.comm);
  Vector z = Vector::Zero(X.cols());
  double eta = R / 4;
  for (int t = 0; t < steps; ++t, eta *= o.decay) {
    const MeanGradient mg = mean_unit_gradient(S, z, 0, o.threads, sub);
    const Vector g = on_root(comm, [&] { return mech.apply(mg.g, rng); });
    z -= eta * g;
    project_to_ball(z, R);
  }
  return z;
}

int K_for_passes(double passes, std::int64_t n) {
  require(passes > 0 && std::isfinite(passes), fmt::format("passes must be > 0, got {}", passes));
  require(n >= 1, "n must be >= 1");
  const double target = std::max(static_cast<double>(n), std::ceil(passes * static_cast<double>(n)));
  int K = 1;
  while (std::ldexp(1.0, K) - 1 < target) ++K;
  return K;
}

double stable_m(std::int64_t T, std::int64_t n, double delta) {
  return 3 * (static_cast<double>(T) / static_cast<double>(n) + std::log(8 / delta));
}

double stable_dpsgd_epsilon(double rho, double delta) {
  check_rho(rho);
  check_delta_positive(delta);
  return rho + std::sqrt(rho * rho + 4 * rho * std::log(2 / delta));
}

LedgerEntry stable_dpsgd_entry(double rho, double delta) {
  return proved_entry(PrivacyLoss::approximate(stable_dpsgd_epsilon(rho, delta), delta),
                      "KLTY Lemma 12, docs/proofs/median.md §5", "stable dpsgd, all phases");
}

LedgerEntry stable_dpsgd_entry(double rho, double delta, Ledger phases) {
  return proved_entry(PrivacyLoss::approximate(stable_dpsgd_epsilon(rho, delta), delta),
                      "KLTY Lemma 12, docs/proofs/median.md §5", "stable dpsgd, all phases",
                      std::move(phases));
}

namespace {

void check_phased(const ConstMatrixRef& X, const Vector& start, const PhasedSgdOptions& o) {
  check_data(X);
  check_rho(o.rho);
  check_delta_positive(o.delta);
  check_positive(o.eta, "eta");
  check_positive(o.radius, "radius");
  require(o.sigma_scale == 0 || o.sigma_scale == 1, "sigma_scale must be 0 or 1");
  require(o.K >= 1 && o.K <= 40, fmt::format("K must be in [1, 40], got {}", o.K));
  const std::int64_t T = (std::int64_t{1} << o.K) - 1;
  require(T >= X.rows(), fmt::format("T = 2^K - 1 = {} must be >= n = {} (Lemma 10)", T, X.rows()));
  require(start.size() == X.cols(), "start must have one coordinate per column of X");
}

// Every phase's public quantities (index k = 1..K; entry 0 unused).
struct PhaseSchedule {
  std::vector<double> eta, sigma_nominal, m, rad;
  std::vector<std::int64_t> steps;
  double weight_sum = 0;  // Σ_k (9/16)^k, for the exact-budget weights
};

PhaseSchedule phase_schedule(std::int64_t n, std::int64_t d, const PhasedSgdOptions& o, double m) {
  PhaseSchedule s;
  const auto K1 = static_cast<std::size_t>(o.K + 1);
  s.eta.assign(K1, 0), s.sigma_nominal.assign(K1, 0), s.m.assign(K1, 0), s.rad.assign(K1, 0);
  s.steps.assign(K1, 0);
  for (int k = 1; k <= o.K; ++k) {
    s.steps[k] = std::int64_t{1} << (o.K - k);
    s.eta[k] = std::ldexp(o.eta, -2 * k);
    s.m[k] = (o.fixed_order && o.per_phase_m)
                 ? std::ceil(static_cast<double>(s.steps[k]) / static_cast<double>(n))
                 : m;
    s.sigma_nominal[k] = std::pow(3.0, -k) * (2 * m + 1) * o.eta / std::sqrt(o.rho);
    s.weight_sum += std::pow(9.0 / 16.0, k);
  }
  // Phase 1 is the given domain; later phases use the printed rule or the corrected one
  // (docs/proofs/median.md §5), from the nominal σ's (public).
  const double log_term = std::log(4.0 * o.K / o.delta);
  s.rad[1] = o.radius;
  for (int k = 2; k <= o.K; ++k) {
    const double sg = o.later_radius == LaterRadius::paper ? s.sigma_nominal[k] : s.sigma_nominal[k - 1];
    s.rad[k] = 2 * sg * std::sqrt(static_cast<double>(d) * log_term);
  }
  return s;
}

// Phase k's output mechanism. Its sensitivity carries the floating-point slack, which depends on
// ||c_k|| (the previous phase's private output), so it is built when phase k starts.
GaussianMechanism phase_mechanism(const PhaseSchedule& s, int k, const Vector& centre,
                                  const PhasedSgdOptions& o, double m, std::int64_t d) {
  const double B = centre.norm() + s.rad[k] + s.eta[k];
  const auto Tk = static_cast<double>(s.steps[k]);
  const double E = 8 * (static_cast<double>(d) + 4) * kUnitRoundoff * B;
  const double slack = 2 * Tk * E + 2 * kUnitRoundoff * Tk * std::sqrt(static_cast<double>(d)) * B;
  const double sens = (2 * s.m[k] + 1) * s.eta[k] + slack;
  if (o.exact_budget)
    return GaussianMechanism::from_rho(sens, o.rho * std::pow(9.0 / 16.0, k) / s.weight_sum,
                                       static_cast<std::size_t>(d), o.noise);
  // σ_k of Alg. 4 / Remark 1, enlarged in proportion to the slack so that ρ_k stays at
  // (9/16)^k ρ/2.
  const double sigma = s.sigma_nominal[k] * ((2 * s.m[k] + 1) / (2 * m + 1)) *
                       (sens / ((2 * s.m[k] + 1) * s.eta[k]));
  return GaussianMechanism::from_sigma(sens, sigma, static_cast<std::size_t>(d), o.noise);
}

// Where the T steps take their rows: a fixed order (a seeded permutation or the identity) or,
// for StableDPSGD, a uniform index with replacement per step.
struct RowOrder {
  std::vector<std::int64_t> order, uses;
  std::int64_t next = 0;
  std::int64_t row(std::int64_t n, RandomBits& bits) {
    if (order.empty()) return static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n)));
    const std::int64_t i = order[static_cast<std::size_t>(next++ % n)];
    ++uses[static_cast<std::size_t>(i)];
    return i;
  }
};

RowOrder row_order(std::int64_t n, const PhasedSgdOptions& o, Rng& rng) {
  RowOrder r;
  if (!o.fixed_order) return r;
  if (o.shuffle_order) {
    r.order = permutation(n, rng);
  } else {
    r.order.resize(static_cast<std::size_t>(n));
    std::iota(r.order.begin(), r.order.end(), 0);
  }
  r.uses.assign(static_cast<std::size_t>(n), 0);
  return r;
}

// One phase's T_k projected SGD steps from z on B(centre, rad); returns the average of the
// iterates before each step (Alg. 4 line 9: includes z_0, excludes z_{T_k}). This loop is the
// numeric kernel whose rounding the phase's slack bounds (boosting.hpp).
Vector run_phase(const ConstMatrixRef& X, Vector& z, const Vector& centre, double step, double rad,
                 std::int64_t steps, RowOrder& order, RandomBits& bits) {
  const Eigen::Index d = X.cols();
  Vector avg = Vector::Zero(d);
  for (std::int64_t t = 0; t < steps; ++t) {
    avg += z;
    const double* row = X.data() + order.row(X.rows(), bits) * d;
    double s = 0;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double t2 = z[j] - row[j];
      s += t2 * t2;
    }
    if (s > 0) {
      const double f = step / std::sqrt(s);
      for (Eigen::Index j = 0; j < d; ++j) z[j] -= f * (z[j] - row[j]);
    }
    project_to_ball(z, centre, rad);
  }
  return avg / static_cast<double>(steps);
}

}  // namespace

// The mechanisms are built (and charged) phase by phase, because the floating-point slack depends
// on ||c_k||, the previous phase's private output; the total charged is bounded in advance by the
// planned ρ (docs/proofs/median.md §5), so BudgetExceeded can only happen on the first phase.
// StableDPSGD charges Lemma 12's (ε, δ) once, on the first phase, for all phases.
PhasedSgdResult phased_dpsgd(const ConstMatrixRef& X, const Vector& start,
                             const PhasedSgdOptions& o, Budget& budget, Rng& rng) {
  check_phased(X, start, o);
  const auto n = static_cast<std::int64_t>(X.rows());
  PhasedSgdResult res;
  res.T = (std::int64_t{1} << o.K) - 1;
  res.m = o.fixed_order ? std::ceil(static_cast<double>(res.T) / static_cast<double>(n))
                        : stable_m(res.T, n, o.delta);
  const PhaseSchedule s = phase_schedule(n, X.cols(), o, res.m);
  Vector z = start, centre = start;
  RowOrder order = row_order(n, o, rng);
  const bool noisy = o.sigma_scale != 0;
  RandomBits bits(rng);
  for (int k = 1; k <= o.K; ++k) {
    if (k > 1) centre = z;
    std::optional<GaussianMechanism> mech;
    if (noisy) {
      mech = phase_mechanism(s, k, centre, o, res.m, X.cols());
      res.entries.push_back(mech->ledger_entry(fmt::format("{} dpsgd phase {}",
                                                           o.fixed_order ? "fixed-order" : "stable", k)));
      if (o.fixed_order)
        budget.spend(res.entries.back());
      else if (k == 1)
        budget.spend(stable_dpsgd_entry(o.rho, o.delta));
    }
    res.sigma.push_back(noisy ? mech->sigma() : 0);
    res.phase_steps.push_back(s.steps[k]);
    const Vector avg = run_phase(X, z, centre, s.eta[k], s.rad[k], s.steps[k], order, bits);
    z = noisy ? mech->apply(avg, rng) : avg;
  }
  if (o.fixed_order) res.max_index_uses = *std::max_element(order.uses.begin(), order.uses.end());
  res.x = z;
  return res;
}

}  // namespace dpstats
