// Monte-Carlo checks of the closed-form expected errors (docs/proofs/moments.md):
// every estimator, full and diagonal, on the paper's setting n = 10, d = 3, zeta = 1.3, sigma = 0.7,
// A1 = E1, A2 = E_0.8, C1 = E1^{1/2}, C2 = E_0.8^{1/2}, with the secure (lattice) noise.
// Thresholds: |z| < 5 Monte-Carlo standard errors (a correct estimator fails with probability
// ~6e-7 per check; half the noise or a missing factor moves z by tens).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>

#include "dpstats/moments/estimator.hpp"
#include "dpstats/moments/theory.hpp"

using namespace dpstats;
using namespace dpstats::moments;

namespace {

constexpr std::size_t kN = 10, kD = 3;
constexpr double kZeta = 1.3, kSigma = 0.7;
constexpr double kZ = 5.0;

RowMatrix data(std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix X(kN, kD);
  for (std::size_t i = 0; i < kN; ++i) {
    for (std::size_t j = 0; j < kD; ++j) X(i, j) = rng.uniform01() * 2 - 1;
    X.row(i) *= kZeta * (0.3 + 0.7 * rng.uniform01()) / X.row(i).norm();
  }
  return X;
}

MomentsConfig card_config(Method m, SecondMomentForm form) {
  MomentsConfig c;
  c.steps = kN;
  c.dim = kD;
  c.method = m;
  c.form = form;
  c.A1 = Workload::prefix(kN);
  c.A2 = Workload::decay(kN, 0.8);
  c.C1 = Factorization::square_root(c.A1);
  c.C2 = Factorization::square_root(c.A2);
  c.clip = kZeta;
  c.noise_multiplier = kSigma;
  c.privacy.delta = 1e-6;
  if (m == Method::lambda_jme) c.lambda = 2.0;
  c.alpha = 0.3;
  c.tau = 0.6;
  return c;
}

// The exact moments.
std::pair<RowMatrix, RowMatrix> truth(const MomentsConfig& c, const RowMatrix& X) {
  const RowMatrix A1 = c.A1.materialize(), A2 = c.A2.materialize();
  const auto d = X.cols();
  const bool full = c.form == SecondMomentForm::full;
  RowMatrix Y = A1 * X, S = RowMatrix::Zero(X.rows(), full ? d * d : d);
  for (Eigen::Index t = 0; t < X.rows(); ++t)
    for (Eigen::Index i = 0; i <= t; ++i) {
      const Vector x = X.row(i).transpose();
      if (full) {
        const RowMatrix o = x * x.transpose();
        S.row(t) += A2(t, i) * Eigen::Map<const Vector>(o.data(), d * d).transpose();
      } else {
        S.row(t) += A2(t, i) * x.array().square().matrix().transpose();
      }
    }
  return {Y, S};
}

struct Mc {
  double first_mean = 0, first_se = 0, second_mean = 0, second_se = 0;
  Vector second_bias;  // mean of (Ŝ_n - S_n) over reps, entry by entry
  Vector second_bias_se;
  double sigma_eff = 0;
};

Mc monte_carlo(const MomentsConfig& c, const RowMatrix& X, int reps, std::uint64_t seed) {
  const auto [Y, S] = truth(c, X);
  double f1 = 0, f2 = 0, s1 = 0, s2 = 0;
  Vector b1 = Vector::Zero(S.cols()), b2 = Vector::Zero(S.cols());
  Mc out;
  for (int r = 0; r < reps; ++r) {
    SeededRng rng(seed + static_cast<std::uint64_t>(r));
    const auto rel = estimate_moments(X, c, rng);
    const double e1 = (rel.estimate.first - Y).squaredNorm();
    const double e2 = (rel.estimate.second - S).squaredNorm();
    f1 += e1, f2 += e1 * e1, s1 += e2, s2 += e2 * e2;
    const Vector last = (rel.estimate.second - S).row(S.rows() - 1).transpose();
    b1 += last;
    b2 += last.array().square().matrix();
    if (r == 0) {
      SeededRng probe(0);
      out.sigma_eff = MomentEstimator(c, probe).noise_multiplier();
    }
  }
  const double R = reps;
  out.first_mean = f1 / R;
  out.first_se = std::sqrt((f2 / R - out.first_mean * out.first_mean) / R);
  out.second_mean = s1 / R;
  out.second_se = std::sqrt((s2 / R - out.second_mean * out.second_mean) / R);
  out.second_bias = b1 / R;
  out.second_bias_se =
      ((b2 / R).array() - out.second_bias.array().square()).sqrt().matrix() / std::sqrt(R);
  return out;
}

}  // namespace

TEST(MomentsStat, JmeImeCsMatchTheClosedForms) {
  const RowMatrix X = data(11);
  for (auto form : {SecondMomentForm::full, SecondMomentForm::diagonal}) {
    for (auto m : {Method::jme, Method::lambda_jme, Method::ime, Method::cs}) {
      const MomentsConfig c = card_config(m, form);
      const Mc mc = monte_carlo(c, X, 6000, 1000);
      NoiseParameters p{.method = m, .d = kD, .form = form, .clip = kZeta, .lambda = c.lambda,
                        .alpha = c.alpha, .tau = c.tau};
      const auto e = moments::expected_errors(p, mc.sigma_eff, c.A1, c.A2, c.C1, c.C2);
      const double first = moments::sum(e.first), second = moments::sum(e.second);
      const double z1 = (mc.first_mean - first) / mc.first_se;
      const double z2 = (mc.second_mean - second) / mc.second_se;
      EXPECT_LT(std::abs(z1), kZ) << to_string(m) << " first " << mc.first_mean << " vs " << first;
      EXPECT_LT(std::abs(z2), kZ) << to_string(m) << " second " << mc.second_mean << " vs "
                                  << second;
      // Unbiased: the last step's error has mean 0 in every entry.
      for (Eigen::Index j = 0; j < mc.second_bias.size(); ++j)
        EXPECT_LT(std::abs(mc.second_bias[j] / mc.second_bias_se[j]), kZ) << to_string(m) << j;
    }
  }
}

TEST(MomentsStat, PostProcessingMatchesThePerDataFormulaWithRowNormQ) {
  const RowMatrix X = data(12);
  for (auto form : {SecondMomentForm::full, SecondMomentForm::diagonal}) {
    for (auto m : {Method::pp, Method::pp_debiased}) {
      const MomentsConfig c = card_config(m, form);
      const bool debiased = m == Method::pp_debiased;
      // 4x the runs for debiased PP: the printed Alg. 6's bias is about 5 standard errors at
      // 6000 runs, too close to the detection threshold to be detected reliably.
      const Mc mc = monte_carlo(c, X, debiased ? 24000 : 6000, 5000);
      const double g = mc.sigma_eff * 2 * kZeta * c.C1.norm_1_to_2();
      const double want = moments::sum(moments::pp_sq_error(c.A2, c.C1, X, g, debiased, form));
      const double z = (mc.second_mean - want) / mc.second_se;
      EXPECT_LT(std::abs(z), kZ) << to_string(m) << " " << mc.second_mean << " vs " << want;
      // The first moment is JME's.
      const double first = moments::sum(moments::b_row_norms_sq(c.A1, c.C1)) * kD * g * g;
      EXPECT_LT(std::abs(mc.first_mean - first) / mc.first_se, kZ) << to_string(m);
      // Debiased PP is unbiased on the diagonal; biased PP is off by b_t = g^2 sum A_tk Q_kk.
      const auto q = moments::q_diag(c.C1);
      double bt = 0;
      for (std::size_t k = 0; k < kN; ++k) bt += c.A2.at(kN - 1, k) * q[k];
      bt *= g * g;
      const Eigen::Index diag0 = 0;
      const double off = debiased ? 0.0 : bt;
      EXPECT_LT(std::abs(mc.second_bias[diag0] - off) / mc.second_bias_se[diag0], kZ)
          << to_string(m);
      if (debiased) {
        // Alg. 6 as printed debiases with (C1 C1^T)^{-1}: its column norms. That bias is
        // detected (known issue (docs/errata.md) 2).
        const RowMatrix C = c.C1.materialize();
        const RowMatrix CCt = C * C.transpose();
        const RowMatrix wrong = CCt.inverse();
        double bw = 0;
        for (std::size_t k = 0; k < kN; ++k) bw += c.A2.at(kN - 1, k) * wrong(k, k);
        bw *= g * g;
        EXPECT_GT(std::abs(mc.second_bias[diag0] - (bt - bw)) / mc.second_bias_se[diag0], kZ);
      }
    }
  }
}
