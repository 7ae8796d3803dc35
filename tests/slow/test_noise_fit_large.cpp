// The "done when" for secure noise: the lattice Laplace and Gaussian mechanisms pass
// goodness-of-fit tests at 10^6 draws (KS with the DKW threshold and chi-square on 50
// equiprobable bins, failure probability below 1e-6 each), scalar and vector, seeded and from the
// OS CSPRNG; the same tests reject half the noise and a shifted mean at this size.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/random/discrete_gaussian.hpp"
#include "stat/fit.hpp"

namespace dpstats {
namespace {

constexpr int kSamples = 1000000;
constexpr int kBins = 50;

struct Fit {
  fit::Verdict ks, chi2;
  bool passes() const { return ks.passes() && chi2.passes(); }
  std::string describe() const {
    return "KS " + std::to_string(ks.statistic) + " (max " + std::to_string(ks.threshold) +
           "), chi2 " + std::to_string(chi2.statistic) + " (max " + std::to_string(chi2.threshold) +
           ")";
  }
};

Fit fit_to(const std::vector<double>& samples, const std::function<double(double)>& cdf,
           const std::function<double(double)>& quantile) {
  const auto counts = fit::bin_counts(samples, fit::equiprobable_edges(kBins, quantile));
  return {fit::ks_test(samples, cdf),
          fit::chi_square_test(counts, std::vector<double>(kBins, 1.0 / kBins))};
}

Fit laplace_fit(const std::vector<double>& s, double mean, double b) {
  return fit_to(
      s, [=](double x) { return fit::laplace_cdf(x, mean, b); },
      [=](double p) { return fit::laplace_quantile(p, mean, b); });
}

Fit normal_fit(const std::vector<double>& s, double mean, double sigma) {
  return fit_to(
      s, [=](double x) { return fit::normal_cdf((x - mean) / sigma); },
      [=](double p) { return fit::normal_quantile(p, mean, sigma); });
}

template <class Mechanism>
std::vector<double> draws(const Mechanism& m, double x, Rng& rng) {
  std::vector<double> out(kSamples);
  for (double& y : out) y = m.apply(x, rng);
  return out;
}

template <class Mechanism>
std::vector<double> vector_noise(const Mechanism& m, Eigen::Index d, Rng& rng) {
  const Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, -1, 1);
  std::vector<double> out;
  out.reserve(kSamples);
  for (int i = 0; i < kSamples / d; ++i) {
    const Eigen::VectorXd y = m.apply(x, rng) - x;
    out.insert(out.end(), y.data(), y.data() + d);
  }
  return out;
}

TEST(LargeFit, SecureLaplaceScalar) {
  SeededRng rng(301);
  const LaplaceMechanism m(1, 1);
  const Fit f = laplace_fit(draws(m, 0.25, rng), 0.25, m.noise_scale());
  EXPECT_TRUE(f.passes()) << f.describe();
}

TEST(LargeFit, SecureLaplaceVectorFromTheCsprng) {
  SecureRng rng;
  const LaplaceMechanism m(3, 0.5, 10);
  const Fit f = laplace_fit(vector_noise(m, 10, rng), 0, m.noise_scale());
  EXPECT_TRUE(f.passes()) << f.describe();
}

TEST(LargeFit, SecureGaussianScalar) {
  SeededRng rng(302);
  const auto m = GaussianMechanism::from_epsilon_delta(1, 1, 1e-5);
  const Fit f = normal_fit(draws(m, -0.5, rng), -0.5, m.sigma());
  EXPECT_TRUE(f.passes()) << f.describe();
}

TEST(LargeFit, SecureGaussianVectorFromTheCsprng) {
  SecureRng rng;
  const auto m = GaussianMechanism::from_rho(2, 0.1, 10);
  const Fit f = normal_fit(vector_noise(m, 10, rng), 0, m.sigma());
  EXPECT_TRUE(f.passes()) << f.describe();
}

TEST(LargeFit, DiscreteGaussianAtLatticeScale) {
  // The raw sampler the Gaussian mechanism runs on, sigma ~ 2^22 lattice steps.
  SeededRng rng(303);
  const std::uint64_t s2 = std::uint64_t{17592186044417};  // ~ (2^22)^2 + 1
  const DiscreteGaussian sampler(s2, 1);
  std::vector<double> samples(kSamples);
  for (double& y : samples) y = static_cast<double>(sampler(rng));
  const double sigma = std::sqrt(static_cast<double>(s2));
  // Continuity-corrected normal CDF: exact to ~1e-12 at this sigma.
  const Fit f = fit_to(
      samples, [=](double y) { return fit::normal_cdf((y + 0.5) / sigma); },
      [=](double p) { return fit::normal_quantile(p, 0, sigma); });
  EXPECT_TRUE(f.passes()) << f.describe();
}

TEST(LargeFit, RejectsHalfTheNoiseAndAShift) {
  SeededRng rng(304);
  const LaplaceMechanism lap(1, 1), half(0.5, 1);
  EXPECT_FALSE(laplace_fit(draws(half, 0, rng), 0, lap.noise_scale()).ks.passes());
  EXPECT_FALSE(laplace_fit(draws(lap, 0.05, rng), 0, lap.noise_scale()).ks.passes());
  const auto gauss = GaussianMechanism::from_rho(1, 0.5), thin = GaussianMechanism::from_rho(1, 2);
  EXPECT_FALSE(normal_fit(draws(thin, 0, rng), 0, gauss.sigma()).chi2.passes());
  EXPECT_FALSE(normal_fit(draws(gauss, 0.05, rng), 0, gauss.sigma()).ks.passes());
}

}  // namespace
}  // namespace dpstats
