// Shared helpers of the JME reproductions: Monte-Carlo error of a config on a fixed stream.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/moments/theory.hpp"
#include "../repro.hpp"

namespace dpstats::jme_repro {

using namespace dpstats::moments;

struct McResult {
  double first = 0, first_se = 0, second = 0, second_se = 0;
  double sigma_eff = 0;  // the noise multiplier that ran (secure lattice: >= the requested one)
};

inline std::unique_ptr<Rng> run_rng(const repro::ReproOptions& o, std::uint64_t salt) {
  if (o.seed) return std::make_unique<SeededRng>(*o.seed * 1000003 + salt);
  return std::make_unique<SecureRng>();
}

// Total (summed over steps) squared error of the first and second moment over `reps` runs.
// `second_truth` has the layout of the release (n x d^2 or n x d).
inline McResult monte_carlo(const MomentsConfig& c, const RowMatrix& X, const RowMatrix& Y,
                            const RowMatrix& S, int reps, const repro::ReproOptions& o,
                            std::uint64_t salt) {
  double f1 = 0, f2 = 0, s1 = 0, s2 = 0;
  McResult r;
  for (int k = 0; k < reps; ++k) {
    auto rng = run_rng(o, salt * 100000 + static_cast<std::uint64_t>(k));
    const auto rel = estimate_moments(X, c, *rng);
    const double e1 = (rel.estimate.first - Y).squaredNorm();
    const double e2 = (rel.estimate.second - S).squaredNorm();
    f1 += e1, f2 += e1 * e1, s1 += e2, s2 += e2 * e2;
    if (k == 0) r.sigma_eff = rel.diagnostics.at("noise_multiplier").get<double>();
  }
  const double R = reps;
  r.first = f1 / R;
  r.first_se = std::sqrt(std::max(0.0, f2 / R - r.first * r.first) / R);
  r.second = s1 / R;
  r.second_se = std::sqrt(std::max(0.0, s2 / R - r.second * r.second) / R);
  return r;
}

// The exact moments of X under A1 and A2 (full d x d rows or diagonal).
inline std::pair<RowMatrix, RowMatrix> exact_moments(const Workload& A1, const Workload& A2,
                                                     const RowMatrix& X, bool diagonal) {
  const auto n = X.rows(), d = X.cols();
  RowMatrix Y(n, d), S(n, diagonal ? d : d * d), sec(n, diagonal ? d : d * d);
  for (Eigen::Index t = 0; t < n; ++t) {
    const Vector x = X.row(t).transpose();
    if (diagonal) {
      sec.row(t) = x.array().square().matrix().transpose();
    } else {
      const RowMatrix o = x * x.transpose();
      sec.row(t) = Eigen::Map<const Vector>(o.data(), d * d).transpose();
    }
  }
  WorkloadState s1(A1, static_cast<std::size_t>(d)), s2(A2, static_cast<std::size_t>(S.cols()));
  Vector y(d), s(S.cols());
  for (Eigen::Index t = 0; t < n; ++t) {
    const Vector x = X.row(t).transpose();
    const Vector q = sec.row(t).transpose();
    s1.push(x.data(), y.data());
    s2.push(q.data(), s.data());
    Y.row(t) = y.transpose();
    S.row(t) = s.transpose();
  }
  return {Y, S};
}

// A stream of n copies of zeta e_1 (the worst case of PP with C = I, docs/proofs/moments.md).
inline RowMatrix constant_stream(std::size_t n, std::size_t d, double zeta = 1) {
  RowMatrix X = RowMatrix::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  X.col(0).setConstant(zeta);
  return X;
}

// One streamed run of `c` (zeta = 1) on n = c.steps copies of e_1: the second moment's squared
// error summed over steps and entries. The n x d (diagonal) or n x d^2 release is never stored, so
// this runs where the batch API's memory would not (d = 10^6 diagonal, d = 1000 full).
inline double streamed_second_error(const MomentsConfig& c, const repro::ReproOptions& o,
                                    std::uint64_t salt, double& sigma_eff) {
  const auto rng = run_rng(o, salt);
  MomentEstimator est(c, *rng);
  sigma_eff = est.noise_multiplier();
  WorkloadState truth(c.A2, 1);
  std::vector<double> x(c.dim, 0.0);
  x[0] = 1;
  const double one = 1;
  double want = 0, error = 0;
  repro::Progress progress(fmt::format("{} run, d = {}", to_string(c.method), c.dim), c.steps);
  for (std::size_t t = 0; t < c.steps; ++t) {
    est.push(x);
    truth.push(&one, &want);
    const auto s = est.second();  // entry 0 is (0, 0) in both layouts; the truth is 0 elsewhere
    double e = (s[0] - want) * (s[0] - want);
    for (std::size_t j = 1; j < s.size(); ++j) e += s[j] * s[j];
    error += e;
    progress.step();
  }
  return error;
}

inline void write_summary(const std::filesystem::path& out, const std::string& text) {
  std::ofstream f(out / "summary.md");
  f << text;
}

inline std::string z_text(double emp, double se, double theory) {
  if (!(se > 0)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.2f", (emp - theory) / se);
  return buf;
}

}  // namespace dpstats::jme_repro

namespace dpstats::jme_repro {
// sigma_bar = 2 zeta sigma values of the noise sweeps (our reading of the paper's axis).
inline const std::vector<double> kSigmaBarGrid = {0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.2,
                                                  1.4, 1.6, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 20.0};
inline bool kTableRow(double sb) {
  return sb == 0.1 || sb == 0.5 || sb == 1 || sb == 1.4 || sb == 2 || sb == 4 || sb == 10;
}
}  // namespace dpstats::jme_repro
