// Goodness of fit of every sampler and of the Laplace / Gaussian / l2-Laplace mechanisms
// (design.md §6): seeded, 2·10^5 draws each, thresholds from the exact distributions (chi-square
// tail, DKW bound for Kolmogorov-Smirnov) so that a correct sampler fails with probability below
// 1e-6. The *_Rejects* tests run the same tests on broken variants (half the noise, a shifted
// mean, a wrong scale) and require them to fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/random/binned_discrete_gaussian.hpp"
#include "dpstats/random/discrete_gaussian.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "dpstats/random/geometric.hpp"
#include "stat/fit.hpp"

namespace dpstats {
namespace {

constexpr int kSamples = 200000;

// ---- integer-valued samplers: chi-square on bins with exact probabilities ----------------------

// Bins (-inf, e1], (e1, e2], ..., (em, inf) over the integers, from an approximate quantile
// function (one per value when the distribution has few), merged until every bin expects at
// least 50 draws; probabilities from the exact CDF.
struct IntegerBins {
  std::vector<std::int64_t> upper;  // inclusive upper edges of all bins but the last
  std::vector<double> p;
};

IntegerBins make_bins(const std::function<double(std::int64_t)>& cdf,
                      const std::function<double(double)>& quantile, int target_bins, double n) {
  std::vector<std::int64_t> candidates;
  const auto low = static_cast<std::int64_t>(std::floor(quantile(1e-4)));
  const auto high = static_cast<std::int64_t>(std::floor(quantile(1 - 1e-4)));
  if (high - low < 100) {  // few values: one bin per value (thin ones merged below)
    for (std::int64_t e = low - 1; e <= high; ++e) candidates.push_back(e);
  } else {
    for (int i = 1; i < target_bins; ++i) {
      const auto e =
          static_cast<std::int64_t>(std::floor(quantile(static_cast<double>(i) / target_bins)));
      if (candidates.empty() || e > candidates.back()) candidates.push_back(e);
    }
  }
  IntegerBins bins;
  double previous = 0;
  for (const std::int64_t e : candidates) {
    const double mass = cdf(e) - previous;
    if (mass * n < 50) continue;  // merged into the next bin
    bins.upper.push_back(e);
    bins.p.push_back(mass);
    previous = cdf(e);
  }
  bins.p.push_back(1 - previous);
  if (bins.p.back() * n < 50 && !bins.upper.empty()) {  // merge a thin last bin backwards
    bins.upper.pop_back();
    const double last = bins.p.back();
    bins.p.pop_back();
    bins.p.back() += last;
  }
  return bins;
}

fit::Verdict integer_fit(const std::function<std::int64_t()>& draw,
                         const std::function<double(std::int64_t)>& cdf,
                         const std::function<double(double)>& quantile, int n = kSamples) {
  const IntegerBins bins = make_bins(cdf, quantile, 30, n);
  EXPECT_GE(bins.p.size(), 3u) << "too few bins for a meaningful test";
  std::vector<long> counts(bins.p.size(), 0);
  for (int i = 0; i < n; ++i) {
    const std::int64_t y = draw();
    ++counts[std::lower_bound(bins.upper.begin(), bins.upper.end(), y) - bins.upper.begin()];
  }
  return fit::chi_square_test(counts, bins.p);
}

// Two-sided geometric P(y) ∝ q^|y|: P(Y <= y) = q^-y/(1+q) for y < 0, 1 - q^(y+1)/(1+q) else.
double laplace_integer_cdf(std::int64_t y, double t) {
  const double q = std::exp(-1 / t);
  return y < 0 ? std::exp(static_cast<double>(y) / t) / (1 + q)
               : 1 - std::exp(-static_cast<double>(y + 1) / t) / (1 + q);
}

// Exact CDF of N_Z(0, s2): by summation for moderate s2, by the continuous normal with
// continuity correction when sigma >= 100 (Euler-Maclaurin: error below 1e-8 there).
std::function<double(std::int64_t)> gaussian_integer_cdf(double s2) {
  if (s2 >= 1e4) {
    const double sigma = std::sqrt(s2);
    return
        [sigma](std::int64_t y) { return fit::normal_cdf((static_cast<double>(y) + 0.5) / sigma); };
  }
  const auto reach = static_cast<std::int64_t>(40 * std::sqrt(s2)) + 40;
  auto pmf = std::make_shared<std::vector<double>>(2 * reach + 1);
  double z = 0;
  for (std::int64_t y = -reach; y <= reach; ++y) {
    z += (*pmf)[y + reach] = std::exp(-static_cast<double>(y * y) / (2 * s2));
  }
  auto cumulative = std::make_shared<std::vector<double>>(2 * reach + 1);
  double acc = 0;
  for (std::size_t i = 0; i < pmf->size(); ++i) (*cumulative)[i] = acc += (*pmf)[i] / z;
  return [cumulative, reach](std::int64_t y) {
    if (y < -reach) return 0.0;
    if (y > reach) return 1.0;
    return (*cumulative)[y + reach];
  };
}

TEST(SamplerFit, BernoulliRational) {
  SeededRng rng(101);
  const u128 big = static_cast<u128>(1) << 100;
  struct Case {
    u128 num, den;
    double p;
  };
  for (const Case c : {Case{1, 3, 1.0 / 3}, Case{1, 20, 0.05}, Case{big + 7, 3 * big, 1.0 / 3}}) {
    long hits = 0;
    for (int i = 0; i < kSamples; ++i) hits += bernoulli_rational(rng, c.num, c.den);
    const auto v = fit::chi_square_test({hits, kSamples - hits}, {c.p, 1 - c.p});
    EXPECT_TRUE(v.passes()) << v.statistic << " > " << v.threshold;
  }
}

TEST(SamplerFit, BernoulliExp) {
  SeededRng rng(102);
  for (const double x : {0.3, 1.0, 3.2}) {
    long hits = 0;
    for (int i = 0; i < kSamples; ++i) hits += bernoulli_exp(rng, x);
    const double p = std::exp(-x);
    const auto v = fit::chi_square_test({hits, kSamples - hits}, {p, 1 - p});
    EXPECT_TRUE(v.passes()) << x << ": " << v.statistic << " > " << v.threshold;
  }
}

TEST(SamplerFit, Geometric) {
  SeededRng rng(103);
  struct Case {
    std::uint64_t num, den;
  };
  for (const Case c : {Case{1, 2}, Case{3, 1}, Case{1, 1000}, Case{7, 123456789}}) {
    const double rate = static_cast<double>(c.num) / static_cast<double>(c.den);
    // P(G <= k) = 1 - q^(k+1), q = exp(-rate).
    const auto cdf = [rate](std::int64_t k) {
      return k < 0 ? 0.0 : -std::expm1(-rate * static_cast<double>(k + 1));
    };
    const auto quantile = [rate](double p) { return -std::log1p(-p) / rate - 1; };
    const auto v = integer_fit(
        [&] { return static_cast<std::int64_t>(geometric_exp(rng, c.num, c.den)); }, cdf, quantile);
    EXPECT_TRUE(v.passes()) << c.num << "/" << c.den << ": " << v.statistic << " > " << v.threshold;
  }
}

TEST(SamplerFit, GeometricOfADoubleRate) {
  SeededRng rng(110);
  RandomBits bits(rng);
  // P(G <= k) = 1 - (1 - q)^(k+1); the rates of Poisson samples, down to 2^-40.
  for (const double q : {0.9, 0.5, 1.0 / 3, 256.0 / 60000, 256.0 / 1e7, 0x1.8p-40}) {
    const GeometricTrials g(q);
    const double l = std::log1p(-q);
    const auto cdf = [l](std::int64_t k) {
      return k < 0 ? 0.0 : -std::expm1(l * static_cast<double>(k + 1));
    };
    const auto quantile = [l](double p) { return std::log1p(-p) / l - 1; };
    const auto v =
        integer_fit([&] { return static_cast<std::int64_t>(g(bits)); }, cdf, quantile);
    EXPECT_TRUE(v.passes()) << "q = " << q << ": " << v.statistic << " > " << v.threshold;
  }
}

TEST(SamplerFit, GeometricOfADoubleRateRejectsAWrongRate) {
  // The same test finds a gap distribution 1% off its rate.
  SeededRng rng(111);
  RandomBits bits(rng);
  const GeometricTrials g(0.0101);
  const double l = std::log1p(-0.01);
  const auto v = integer_fit(
      [&] { return static_cast<std::int64_t>(g(bits)); },
      [l](std::int64_t k) { return k < 0 ? 0.0 : -std::expm1(l * static_cast<double>(k + 1)); },
      [l](double p) { return std::log1p(-p) / l - 1; }, 2000000);
  EXPECT_FALSE(v.passes());
}

TEST(SamplerFit, DiscreteLaplace) {
  SeededRng rng(104);
  struct Case {
    std::uint64_t num, den;
  };
  for (const Case c : {Case{1, 2}, Case{3, 1}, Case{std::uint64_t{1} << 40, std::uint64_t{1} << 20},
                       Case{2000001, 2}}) {
    const double t = static_cast<double>(c.num) / static_cast<double>(c.den);
    const DiscreteLaplace sampler(c.num, c.den);
    const auto v = integer_fit([&] { return sampler(rng); },
                               [t](std::int64_t y) { return laplace_integer_cdf(y, t); },
                               [t](double p) { return fit::laplace_quantile(p, 0, t); });
    EXPECT_TRUE(v.passes()) << "t = " << t << ": " << v.statistic << " > " << v.threshold;
  }
}

TEST(SamplerFit, DiscreteGaussian) {
  SeededRng rng(105);
  struct Case {
    std::uint64_t num, den;
  };
  // {2, 1}, {56, 1} and {(2^23 + 1) 2^23, 1}: t divides sigma^2 (integer centre).
  for (const Case c :
       {Case{1, 3}, Case{2, 1}, Case{50, 1}, Case{56, 1}, Case{std::uint64_t{1} << 46, 1},
        Case{((std::uint64_t{1} << 23) + 1) << 23, 1},
        Case{(std::uint64_t{1} << 63) - 1, std::uint64_t{1} << 20}}) {
    const double s2 = static_cast<double>(c.num) / static_cast<double>(c.den);
    const DiscreteGaussian sampler(c.num, c.den);
    const double sigma = std::sqrt(s2);
    const auto v = integer_fit([&] { return sampler(rng); }, gaussian_integer_cdf(s2),
                               [sigma](double p) { return fit::normal_quantile(p, 0, sigma); });
    EXPECT_TRUE(v.passes()) << "sigma^2 = " << s2 << ": " << v.statistic << " > " << v.threshold;
  }
}

// The binned sampler's fine structure (binned_discrete_gaussian.hpp): at sigma ~ 1030 its bins
// are 64 wide, so a wrong bin weight or acceptance constant would show in windows of 16 values or
// in the distribution of |y| mod 64 within bins. 10^6 draws, exact probabilities by summation.
TEST(SamplerFit, BinnedDiscreteGaussianFineStructure) {
  const std::uint64_t num = (std::uint64_t{1} << 20) + 12345;
  const double s2 = static_cast<double>(num);
  const DiscreteGaussian sampler(num, 1);
  ASSERT_EQ(BinnedDiscreteGaussian(num, 1).bin_bits(), 6);
  const auto reach = static_cast<std::int64_t>(12 * std::sqrt(s2));
  std::vector<double> pmf(2 * reach + 1);
  double z = 0;
  for (std::int64_t y = -reach; y <= reach; ++y) {
    z += pmf[y + reach] = std::exp(-static_cast<double>(y * y) / (2 * s2));
  }
  for (double& p : pmf) p /= z;
  // Windows of 16 over |y| <= 5 sigma, two outer bins, and |y| mod 64.
  const std::int64_t edge = 16 * static_cast<std::int64_t>(5 * std::sqrt(s2) / 16);
  const std::size_t windows = static_cast<std::size_t>(2 * edge / 16);
  std::vector<double> p_window(windows + 2, 0), p_residue(64, 0);
  const auto window_of = [&](std::int64_t y) -> std::size_t {
    if (y < -edge) return windows;
    if (y >= edge) return windows + 1;
    return static_cast<std::size_t>((y + edge) / 16);
  };
  for (std::int64_t y = -reach; y <= reach; ++y) {
    p_window[window_of(y)] += pmf[y + reach];
    p_residue[static_cast<std::size_t>(std::abs(y) % 64)] += pmf[y + reach];
  }
  SeededRng rng(107);
  constexpr int n = 1000000;
  std::vector<long> by_window(windows + 2, 0), by_residue(64, 0);
  for (int i = 0; i < n; ++i) {
    const std::int64_t y = sampler(rng);
    ++by_window[window_of(std::clamp(y, -reach, reach))];
    ++by_residue[static_cast<std::size_t>(std::abs(y) % 64)];
  }
  const auto w = fit::chi_square_test(by_window, p_window);
  EXPECT_TRUE(w.passes()) << "windows: " << w.statistic << " > " << w.threshold;
  const auto r = fit::chi_square_test(by_residue, p_residue);
  EXPECT_TRUE(r.passes()) << "residues: " << r.statistic << " > " << r.threshold;
}

// 10^7 binned draws at the lattice mechanisms' sigma ~ 2^20: variance and kurtosis to ~5e-4 (a
// sampler whose acceptance was off by 0.3% in some bins showed a variance 0.8% too large here).
TEST(SamplerFit, BinnedDiscreteGaussianVarianceAndKurtosis) {
  const std::uint64_t num = std::uint64_t{1} << 40;
  const DiscreteGaussian sampler(num, 1);
  SeededRng rng(108);
  RandomBits bits(rng);
  constexpr int n = 10000000;
  double s2 = 0, s4 = 0, s8 = 0;
  const double scale = 1 / std::sqrt(static_cast<double>(num));
  for (int i = 0; i < n; ++i) {
    const double y = static_cast<double>(sampler(bits)) * scale, y2 = y * y;
    s2 += y2;
    s4 += y2 * y2;
    s8 += y2 * y2 * y2 * y2;
  }
  const double var = s2 / n, m4 = s4 / n;
  // N_Z(0, 2^40) has variance 1 and fourth moment 3 to ~1e-12 relative.
  EXPECT_LT(std::abs(var - 1) / std::sqrt((m4 - var * var) / n), 5) << "variance " << var;
  EXPECT_LT(std::abs(m4 - 3) / std::sqrt((s8 / n - m4 * m4) / n), 5) << "fourth moment " << m4;
}

// The bits a draw leaves unread must stay uniform and independent of it (every read count is a
// stopping time): the 8 bits after each draw, over 10^6 draws, for every integer sampler.
TEST(SamplerFit, BitsLeftByADrawAreUniform) {
  const DiscreteGaussian binned(std::uint64_t{1} << 40, 1);
  const DiscreteGaussian cks(std::uint64_t{1} << 40, 1, DiscreteGaussian::Sampler::cks);
  const DiscreteLaplace laplace(std::uint64_t{1} << 20, 1);
  const std::vector<std::pair<std::string, std::function<std::int64_t(RandomBits&)>>> samplers = {
      {"binned Gaussian", [&](RandomBits& b) { return binned(b); }},
      {"CKS Gaussian", [&](RandomBits& b) { return cks(b); }},
      {"discrete Laplace", [&](RandomBits& b) { return laplace(b); }}};
  for (const auto& [name, draw] : samplers) {
    SeededRng rng(109);
    RandomBits bits(rng);
    std::vector<long> counts(256, 0);
    for (int i = 0; i < 1000000; ++i) {
      draw(bits);
      ++counts[bits.take(8)];
    }
    const auto v = fit::chi_square_test(counts, std::vector<double>(256, 1.0 / 256));
    EXPECT_TRUE(v.passes()) << name << ": " << v.statistic << " > " << v.threshold;
  }
}

TEST(SamplerFit, DiscreteSamplersRejectWrongScales) {
  SeededRng rng(106);
  // Discrete Gaussian with half the variance, tested against the intended one.
  const DiscreteGaussian half(25, 1);
  const auto v = integer_fit([&] { return half(rng); }, gaussian_integer_cdf(50),
                             [](double p) { return fit::normal_quantile(p, 0, std::sqrt(50.0)); });
  EXPECT_FALSE(v.passes()) << v.statistic;
  // Discrete Laplace shifted by one.
  const DiscreteLaplace laplace(3, 1);
  const auto w = integer_fit([&] { return laplace(rng) + 1; },
                             [](std::int64_t y) { return laplace_integer_cdf(y, 3); },
                             [](double p) { return fit::laplace_quantile(p, 0, 3); });
  EXPECT_FALSE(w.passes()) << w.statistic;
  // Bernoulli(exp(-x)) at x = 1.05 tested as x = 1.
  long hits = 0;
  for (int i = 0; i < kSamples; ++i) hits += bernoulli_exp(rng, 1.05);
  const double p = std::exp(-1.0);
  EXPECT_FALSE(fit::chi_square_test({hits, kSamples - hits}, {p, 1 - p}).passes());
}

// ---- real-valued mechanisms: KS and chi-square on 20 equiprobable bins -----------------------

struct RealFit {
  fit::Verdict ks, chi2;
  bool passes() const { return ks.passes() && chi2.passes(); }
};

RealFit real_fit(const std::vector<double>& samples, const std::function<double(double)>& cdf,
                 const std::function<double(double)>& quantile) {
  const auto edges = fit::equiprobable_edges(20, quantile);
  const auto counts = fit::bin_counts(samples, edges);
  return {fit::ks_test(samples, cdf),
          fit::chi_square_test(counts, std::vector<double>(20, 1.0 / 20))};
}

RealFit laplace_fit(const std::vector<double>& samples, double mean, double b) {
  return real_fit(
      samples, [=](double x) { return fit::laplace_cdf(x, mean, b); },
      [=](double p) { return fit::laplace_quantile(p, mean, b); });
}

RealFit normal_fit(const std::vector<double>& samples, double mean, double sigma) {
  return real_fit(
      samples, [=](double x) { return fit::normal_cdf((x - mean) / sigma); },
      [=](double p) { return fit::normal_quantile(p, mean, sigma); });
}

template <class Mechanism>
std::vector<double> scalar_draws(const Mechanism& m, double x, Rng& rng, int n = kSamples) {
  std::vector<double> out(n);
  for (double& y : out) y = m.apply(x, rng);
  return out;
}

std::string describe(const RealFit& f) {
  return "KS " + std::to_string(f.ks.statistic) + " (max " + std::to_string(f.ks.threshold) +
         "), chi2 " + std::to_string(f.chi2.statistic) + " (max " +
         std::to_string(f.chi2.threshold) + ")";
}

TEST(MechanismFit, SecureLaplace) {
  SeededRng rng(201);
  for (const double sensitivity : {1.0, 0.37, 3e5}) {
    const LaplaceMechanism m(sensitivity, 0.8);
    const auto f = laplace_fit(scalar_draws(m, 0.3, rng), 0.3, m.noise_scale());
    EXPECT_TRUE(f.passes()) << sensitivity << ": " << describe(f);
  }
}

TEST(MechanismFit, SecureLaplaceVector) {
  SeededRng rng(202);
  const LaplaceMechanism m(2, 1, 4);
  Eigen::VectorXd x(4);
  x << -1, 0, 1, 2;
  std::vector<double> noise;
  for (int i = 0; i < kSamples / 4; ++i) {
    const Eigen::VectorXd y = m.apply(x, rng) - x;
    noise.insert(noise.end(), y.data(), y.data() + 4);
  }
  const auto f = laplace_fit(noise, 0, m.noise_scale());
  EXPECT_TRUE(f.passes()) << describe(f);
}

TEST(MechanismFit, SecureGaussian) {
  SeededRng rng(203);
  const auto a = GaussianMechanism::from_epsilon_delta(1, 1, 1e-5);
  const auto fa = normal_fit(scalar_draws(a, -2.5, rng), -2.5, a.sigma());
  EXPECT_TRUE(fa.passes()) << describe(fa);
  const auto b = GaussianMechanism::from_rho(7, 0.02);
  const auto fb = normal_fit(scalar_draws(b, 100, rng), 100, b.sigma());
  EXPECT_TRUE(fb.passes()) << describe(fb);
  // Noise so large that the lattice is coarsened.
  const auto c = GaussianMechanism::from_rho(1, 1e-12);
  const auto fc = normal_fit(scalar_draws(c, 0, rng), 0, c.sigma());
  EXPECT_TRUE(fc.passes()) << describe(fc);
}

TEST(MechanismFit, SecureGaussianVector) {
  SeededRng rng(204);
  const auto m = GaussianMechanism::from_epsilon_delta(1, 0.5, 1e-6, 8);
  const Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(8, -3, 4);
  std::vector<double> noise;
  for (int i = 0; i < kSamples / 8; ++i) {
    const Eigen::VectorXd y = m.apply(x, rng) - x;
    noise.insert(noise.end(), y.data(), y.data() + 8);
  }
  const auto f = normal_fit(noise, 0, m.sigma());
  EXPECT_TRUE(f.passes()) << describe(f);
}

TEST(MechanismFit, FastFloatPathsFitToo) {
  SeededRng rng(205);
  const LaplaceMechanism lap(1, 1, 1, NoiseMode::fast_float);
  const auto fl = laplace_fit(scalar_draws(lap, 0, rng), 0, lap.noise_scale());
  EXPECT_TRUE(fl.passes()) << describe(fl);
  const auto gauss = GaussianMechanism::from_rho(1, 0.5, 1, NoiseMode::fast_float);
  const auto fg = normal_fit(scalar_draws(gauss, 0, rng), 0, gauss.sigma());
  EXPECT_TRUE(fg.passes()) << describe(fg);
}

TEST(MechanismFit, RejectsBrokenMechanisms) {
  SeededRng rng(206);
  const LaplaceMechanism lap(1, 1);
  // Half the noise (sensitivity halved), tested against the correct scale.
  const LaplaceMechanism half(0.5, 1);
  EXPECT_FALSE(laplace_fit(scalar_draws(half, 0, rng), 0, lap.noise_scale()).ks.passes());
  EXPECT_FALSE(laplace_fit(scalar_draws(half, 0, rng), 0, lap.noise_scale()).chi2.passes());
  // A mean shifted by a tenth of the scale.
  EXPECT_FALSE(laplace_fit(scalar_draws(lap, 0.1, rng), 0, lap.noise_scale()).ks.passes());
  const auto gauss = GaussianMechanism::from_rho(1, 0.5);
  // Missing factor sqrt(2) in sigma.
  const auto thin = GaussianMechanism::from_rho(1, 1);
  EXPECT_FALSE(normal_fit(scalar_draws(thin, 0, rng), 0, gauss.sigma()).ks.passes());
  EXPECT_FALSE(normal_fit(scalar_draws(thin, 0, rng), 0, gauss.sigma()).chi2.passes());
  // Laplace noise where Gaussian noise of the same variance was promised.
  const LaplaceMechanism same_variance(1 / std::sqrt(2.0), 1);
  EXPECT_FALSE(normal_fit(scalar_draws(same_variance, 0, rng), 0, 1).passes());
}

// ---- l2-Laplace radius: Gamma(d, beta) -------------------------------------------------------

TEST(MechanismFit, L2LaplaceRadius) {
  SeededRng rng(207);
  for (const std::size_t d : {1, 3, 30}) {
    const double beta = 0.7;
    std::vector<double> radii(kSamples / 4);
    for (double& r : radii) r = sample_l2_laplace(d, beta, rng).norm();
    const double shape = static_cast<double>(d);
    const auto cdf = [=](double r) { return r <= 0 ? 0.0 : 1 - fit::gamma_q(shape, r / beta); };
    const auto v = fit::ks_test(radii, cdf);
    EXPECT_TRUE(v.passes()) << d << ": " << v.statistic << " > " << v.threshold;
    // The wrong shape (d - 1 + 0.5) is rejected.
    const auto wrong = [=](double r) {
      return r <= 0 ? 0.0 : 1 - fit::gamma_q(shape + 0.5, r / beta);
    };
    EXPECT_FALSE(fit::ks_test(radii, wrong).passes()) << d;
  }
}

}  // namespace
}  // namespace dpstats
