#include "dpstats/median/boosting.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"

namespace dpstats {

namespace {

constexpr double kUnitRoundoff = 0x1p-53;

// Exponent b of the gradient quantum 2^-b (see the header).
int gradient_bits(std::int64_t n) {
  const int need = static_cast<int>(std::ceil(std::log2(static_cast<double>(n) + 1)));
  return std::max(1, std::min(30, 52 - need));
}

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

// Rows of X at a data-independent random subset of size min(n, m) (X itself when m ≥ n).
RowMatrix subsample_rows(const ConstMatrixRef& X, std::int64_t m, Rng& rng) {
  const auto n = static_cast<std::int64_t>(X.rows());
  if (m >= n) return X;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  RandomBits bits(rng);
  RowMatrix S(m, X.cols());
  for (std::int64_t i = 0; i < m; ++i) {
    const auto j = i + static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n - i)));
    std::swap(rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
    S.row(i) = X.row(rows[static_cast<std::size_t>(i)]);
  }
  return S;
}

}  // namespace

void project_to_ball(Vector& y, const Vector& c, double rad) {
  const double dist = (y - c).norm();
  if (dist > rad) y = c + (y - c) * (rad / dist);
}

// l2 sensitivity of the released mean gradient (see the header): the exact integer sum moves by
// at most 2·(1 + (d+4)·2^-52)·2^b + sqrt(d); the final division by n·2^b rounds each coordinate
// with relative error 2^-53, which moves the pair apart by at most 2·2^-53·(||g|| + ||g'||) ≤
// 2^-49 (||g|| ≤ 1 + sqrt(d)·2^-b ≤ 2): added as an absolute slack.
double gradient_sensitivity(std::int64_t n, std::int64_t d) {
  const double scale = std::ldexp(1.0, gradient_bits(n));
  const double unit = 1 + (static_cast<double>(d) + 4) * 0x1p-52;
  return (2 * unit * scale + std::sqrt(static_cast<double>(d))) / (static_cast<double>(n) * scale) +
         0x1p-49;
}

// h_q = Σ v_i/(n·2^b) with v_i = round(2^b·tau/max(dist_i, tau)) in [0, 2^b]: replacing a row
// moves the exact integer sum by at most 2^b, the mean by 1/n; the final division's rounding
// (relative 2^-53 on a value ≤ 1) is covered by the 2^-49 slack.
double curvature_sensitivity(std::int64_t n) { return 1 / static_cast<double>(n) + 0x1p-49; }

MeanGradient mean_unit_gradient(const ConstMatrixRef& X, const Vector& z, double tau) {
  const Eigen::Index n = X.rows(), d = X.cols();
  const int b = gradient_bits(n);
  const double scale = std::ldexp(1.0, b);
  // Rounding to the nearest integer by adding and subtracting 1.5·2^52 is exact
  // round-half-even for |v| < 2^51 (here |v| ≤ 2^30·(1 + 2^-40)); the rounded values are
  // integers and their running sums stay below n·2^b·(1 + 2^-40) < 2^53 in magnitude, so the
  // double accumulators add them exactly (no fast-math: the build never enables it).
  constexpr double kRound = 0x1.8p52;
  std::vector<double> sum(static_cast<std::size_t>(d), 0.0);
  std::vector<double> diff(static_cast<std::size_t>(d));
  double* acc = sum.data();
  double* df = diff.data();
  const double* zz = z.data();
  double curvature_sum = 0;  // exact: integers ≤ 2^b, n·2^b < 2^53
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* row = X.data() + i * d;
    double s = 0;
    for (Eigen::Index j = 0; j < d; ++j) {
      df[j] = zz[j] - row[j];
      s += df[j] * df[j];
    }
    if (tau > 0) curvature_sum += std::nearbyint(scale * tau / std::max(std::sqrt(s), tau));
    if (s == 0) continue;  // u_i = 0 at a coincident point (card conventions)
    const double inv = scale / std::sqrt(s);
    for (Eigen::Index j = 0; j < d; ++j) {
      acc[j] += (df[j] * inv + kRound) - kRound;
    }
  }
  MeanGradient m;
  const double denom = static_cast<double>(n) * scale;
  m.g.resize(d);
  for (Eigen::Index j = 0; j < d; ++j) m.g[j] = acc[j] / denom;
  m.sensitivity = gradient_sensitivity(n, d);
  m.curvature = curvature_sum / denom;
  return m;
}

namespace {

// The noisy-gradient mechanism for a run of `steps` gradient releases at ρ/steps each. Its
// sensitivity depends on (n, d) only.
GaussianMechanism gradient_mechanism(const ConstMatrixRef& X, double rho, int steps,
                                     NoiseMode noise) {
  return GaussianMechanism::from_rho(gradient_sensitivity(X.rows(), X.cols()), rho / steps,
                                     static_cast<std::size_t>(X.cols()), noise);
}

}  // namespace

Vector dpgd(const ConstMatrixRef& X, const Vector& x0, const DpgdOptions& o, Budget& budget,
            Rng& rng) {
  check_data(X);
  check_rho(o.rho);
  require(o.steps >= 1, fmt::format("steps must be >= 1, got {}", o.steps));
  check_positive(o.eta, "eta");
  check_positive(o.radius, "radius");
  require(x0.size() == X.cols(), "x0 must have one coordinate per column of X");
  require(o.sigma_scale == 0 || o.sigma_scale == 1, "sigma_scale must be 0 or 1");
  require(!o.weiszfeld_step || (o.curvature_share > 0 && o.curvature_share < 1),
          fmt::format("curvature_share must be in (0, 1), got {}", o.curvature_share));
  require(!o.weiszfeld_step || (o.weiszfeld_tau_fraction > 0 && o.weiszfeld_tau_fraction <= 1),
          fmt::format("weiszfeld_tau_fraction must be in (0, 1], got {}", o.weiszfeld_tau_fraction));
  const bool noisy = o.sigma_scale != 0;
  const double rho_g = o.weiszfeld_step ? o.rho * (1 - o.curvature_share) : o.rho;
  const double rho_h = remainder_after(o.rho, rho_g) * (1 - 1e-9);
  const double tau = o.weiszfeld_step ? o.weiszfeld_tau_fraction * o.radius : 0;
  std::optional<GaussianMechanism> mech, curvature_mech;
  if (noisy) {
    mech = gradient_mechanism(X, rho_g, o.steps, o.noise);
    LedgerEntry e = mech->ledger_entry("dpgd noisy gradient");
    e.count = o.steps;
    budget.spend(e);
    if (o.weiszfeld_step) {
      curvature_mech = GaussianMechanism::from_rho(curvature_sensitivity(X.rows()),
                                                   rho_h / o.steps, 1, o.noise);
      LedgerEntry c = curvature_mech->ledger_entry("dpgd noisy curvature (Weiszfeld step)");
      c.count = o.steps;
      budget.spend(c);
    }
  }
  Vector theta = x0, avg = Vector::Zero(X.cols());
  for (int t = 1; t <= o.steps; ++t) {
    const MeanGradient m = mean_unit_gradient(X, theta, tau);
    Vector g = noisy ? mech->apply(m.g, rng) : m.g;
    double eta = o.eta;
    if (o.weiszfeld_step) {
      const double h = noisy ? curvature_mech->apply(m.curvature, rng) : m.curvature;
      if (h * o.eta > tau) eta = tau / h;  // 1/Ĥ = tau/ĥ, capped at o.eta
    }
    theta -= eta * g;
    project_to_ball(theta, x0, o.radius);
    avg += (theta - avg) / t;
  }
  return o.average ? avg : theta;
}

Vector hsu24_localize(const ConstMatrixRef& X, double R, double r_hat,
                      const HsuLocalizationOptions& o, Budget& budget, Rng& rng) {
  check_data(X);
  check_positive(R, "radius");
  check_positive(r_hat, "r_hat");
  check_rho(o.rho);
  require(o.inner_steps >= 1, "inner_steps must be >= 1");
  const int J = std::max(1, static_cast<int>(std::ceil(std::log2(R / r_hat))));
  const double rho_j = o.rho / J;
  const auto n = static_cast<double>(X.rows());
  const auto d = static_cast<double>(X.cols());
  Vector c = Vector::Zero(X.cols());
  double D = R;
  for (int j = 0; j < J; ++j) {
    DpgdOptions g;
    g.rho = rho_j;
    g.steps = o.inner_steps;
    g.eta = D * std::sqrt(2 * d / (3 * rho_j * n * n));
    g.radius = D;
    g.noise = o.noise;
    c = dpgd(X, c, g, budget, rng);
    D = D / 2 + 12 * r_hat;
  }
  return c;
}

Vector geometric_localize(const ConstMatrixRef& X, double R, double r_hat,
                          const GeometricLocalizationOptions& o, Budget& budget, Rng& rng) {
  check_data(X);
  check_positive(R, "radius");
  check_positive(r_hat, "r_hat");
  check_rho(o.rho);
  require(o.decay > 0 && o.decay < 1, fmt::format("decay must be in (0, 1), got {}", o.decay));
  require(o.extra_steps >= 0, "extra_steps must be >= 0");
  require(o.subsample >= 1, "subsample must be >= 1");
  const int steps = std::max(0, static_cast<int>(std::ceil(std::log(R / r_hat) / std::log(1 / o.decay)))) +
                    o.extra_steps + 1;
  const RowMatrix S = subsample_rows(X, o.subsample, rng);
  GaussianMechanism mech = gradient_mechanism(S, o.rho, steps, o.noise);
  LedgerEntry e = mech.ledger_entry("geometric localization noisy gradient");
  e.count = steps;
  budget.spend(e);
  Vector z = Vector::Zero(X.cols());
  const Vector origin = z;
  double eta = R / 4;
  for (int t = 0; t < steps; ++t, eta *= o.decay) {
    const Vector g = mech.apply(mean_unit_gradient(S, z).g, rng);
    z -= eta * g;
    project_to_ball(z, origin, R);
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

PhasedSgdResult phased_dpsgd(const ConstMatrixRef& X, const Vector& start,
                             const PhasedSgdOptions& o, Budget& budget, Rng& rng) {
  check_data(X);
  check_rho(o.rho);
  check_delta_positive(o.delta);
  check_positive(o.eta, "eta");
  check_positive(o.radius, "radius");
  require(o.sigma_scale == 0 || o.sigma_scale == 1, "sigma_scale must be 0 or 1");
  const auto n = static_cast<std::int64_t>(X.rows());
  const Eigen::Index d = X.cols();
  require(o.K >= 1 && o.K <= 40, fmt::format("K must be in [1, 40], got {}", o.K));
  PhasedSgdResult res;
  res.T = (std::int64_t{1} << o.K) - 1;
  require(res.T >= n, fmt::format("T = 2^K - 1 = {} must be >= n = {} (Lemma 10)", res.T, n));
  require(start.size() == d, "start must have one coordinate per column of X");
  res.m = o.fixed_order ? std::ceil(static_cast<double>(res.T) / static_cast<double>(n))
                        : stable_m(res.T, n, o.delta);
  const double sqrt_d = std::sqrt(static_cast<double>(d));
  const double log_term = std::log(4.0 * o.K / o.delta);

  // Plan every phase (public quantities only) and spend before any noise.
  std::vector<double> eta_k(o.K + 1), sigma_nominal(o.K + 1), m_k(o.K + 1);
  std::vector<std::int64_t> T_k(o.K + 1);
  for (int k = 1; k <= o.K; ++k) {
    T_k[k] = std::int64_t{1} << (o.K - k);
    eta_k[k] = std::ldexp(o.eta, -2 * k);
    m_k[k] = (o.fixed_order && o.per_phase_m)
                 ? std::ceil(static_cast<double>(T_k[k]) / static_cast<double>(n))
                 : res.m;
    sigma_nominal[k] = std::pow(3.0, -k) * (2 * res.m + 1) * o.eta / std::sqrt(o.rho);
  }
  // Phase radii: phase 1 is the given domain; later phases use the printed rule or the corrected
  // one (card §2.5), from the nominal σ's (public).
  std::vector<double> rad(o.K + 1);
  rad[1] = o.radius;
  for (int k = 2; k <= o.K; ++k) {
    const double s = o.later_radius == LaterRadius::paper ? sigma_nominal[k] : sigma_nominal[k - 1];
    rad[k] = 2 * s * std::sqrt(static_cast<double>(d) * log_term);
  }
  // Exact-budget weights: ρ_k ∝ (9/16)^k, scaled to sum to ρ.
  double weight_sum = 0;
  for (int k = 1; k <= o.K; ++k) weight_sum += std::pow(9.0 / 16.0, k);

  Vector z = start;
  Vector centre = start;
  std::vector<std::int64_t> order;
  if (o.fixed_order) {
    if (o.shuffle_order) {
      order = permutation(n, rng);
    } else {
      order.resize(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
    }
  }
  std::vector<std::int64_t> uses;
  if (o.fixed_order) uses.assign(static_cast<std::size_t>(n), 0);
  const bool noisy = o.sigma_scale != 0;

  // The mechanisms are built (and charged) phase by phase, because the floating-point slack
  // depends on ||c_k||, which is the previous phase's private output; the total charged is
  // bounded in advance by the planned ρ (see the header), so BudgetExceeded can only happen on
  // the first phase when the budget is too small.
  std::int64_t global = 0;
  RandomBits bits(rng);
  for (int k = 1; k <= o.K; ++k) {
    if (k > 1) centre = z;
    const double B = centre.norm() + rad[k] + eta_k[k];
    const double Tk = static_cast<double>(T_k[k]);
    const double E = 8 * (static_cast<double>(d) + 4) * kUnitRoundoff * B;
    const double slack = 2 * Tk * E + 2 * kUnitRoundoff * Tk * sqrt_d * B;
    const double sens = (2 * m_k[k] + 1) * eta_k[k] + slack;
    std::optional<GaussianMechanism> mech;
    if (noisy) {
      if (o.exact_budget) {
        mech = GaussianMechanism::from_rho(sens, o.rho * std::pow(9.0 / 16.0, k) / weight_sum,
                                           static_cast<std::size_t>(d), o.noise);
      } else {
        // σ_k of Alg. 4 / Remark 1, enlarged in proportion to the slack so that ρ_k stays at
        // (9/16)^k ρ/2.
        const double sigma = sigma_nominal[k] * ((2 * m_k[k] + 1) / (2 * res.m + 1)) *
                             (sens / ((2 * m_k[k] + 1) * eta_k[k]));
        mech = GaussianMechanism::from_sigma(sens, sigma, static_cast<std::size_t>(d), o.noise);
      }
      LedgerEntry e = mech->ledger_entry(fmt::format("{} phase {}", o.fixed_order ? "fixed-order dpsgd" : "stable dpsgd", k));
      if (!o.fixed_order) {
        // On the good event every phase is ρ_k-zCDP; the whole run is (ε, δ)-DP by Lemma 12,
        // charged once on the first phase's entry (and zero afterwards would be refused by the
        // accountants, so the later phases are folded into it).
        if (k > 1) {
          res.sigma.push_back(mech->sigma());
        } else {
          LedgerEntry all = e;
          all.purpose = "stable dpsgd (Lemma 12, all phases)";
          all.loss = PrivacyLoss::approximate(stable_dpsgd_epsilon(o.rho, o.delta), o.delta);
          budget.spend(all);
          res.sigma.push_back(mech->sigma());
        }
      } else {
        budget.spend(e);
        res.sigma.push_back(mech->sigma());
      }
    } else {
      res.sigma.push_back(0);
    }
    res.phase_steps.push_back(T_k[k]);
    // Steps: average includes z_0, excludes z_{T_k} (Alg. 4 line 9).
    Vector avg = Vector::Zero(d);
    const double step = eta_k[k];
    const double rk = rad[k];
    for (std::int64_t t = 0; t < T_k[k]; ++t, ++global) {
      avg += z;
      std::int64_t i;
      if (o.fixed_order) {
        i = order[static_cast<std::size_t>(global % n)];
        ++uses[static_cast<std::size_t>(i)];
      } else {
        i = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n)));
      }
      const double* row = X.data() + i * d;
      double s = 0;
      for (Eigen::Index j = 0; j < d; ++j) {
        const double t2 = z[j] - row[j];
        s += t2 * t2;
      }
      if (s > 0) {
        const double f = step / std::sqrt(s);
        for (Eigen::Index j = 0; j < d; ++j) z[j] -= f * (z[j] - row[j]);
      }
      project_to_ball(z, centre, rk);
    }
    avg /= Tk;
    z = noisy ? mech->apply(avg, rng) : avg;
  }
  if (o.fixed_order) res.max_index_uses = *std::max_element(uses.begin(), uses.end());
  res.x = z;
  return res;
}

}  // namespace dpstats
