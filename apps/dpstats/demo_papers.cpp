// dpstats demo, part 2: one small worked example per paper beyond the robust mean (the geometric
// median, continual moments, user-level and heavy-tailed optimisation, private training).
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "demo.hpp"
#include "dpstats/data/synthetic.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "dpstats/moments/estimator.hpp"

namespace dpstats::cli {

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void median_section(Rng& rng) {
  constexpr std::int64_t n = 20000, d = 20;
  constexpr double R = 50;
  SeededRng data_rng(7);
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      X(i, j) = 3.0 + (i % 2 ? 0.9 : 0.1) * standard_normal(data_rng) + (i % 10 == 0 ? 6.0 : 0.0);
  std::cout << fmt::format(
      "5. Private geometric median (n = {}, d = {}: two scales around (3, ..., 3), 10% of rows\n"
      "   moved by 6 per coordinate; public bound ||x|| <= {}). Error: (f(x) - f*)/f*, f the\n"
      "   sum of distances.\n", n, d, R);
  const double f_star = weiszfeld(X).f;
  auto line = [&](const std::string& name, const std::string& privacy, const Vector& x, double ms) {
    std::cout << fmt::format("   {:<34} {:<36} {:>9.2e} {:>7.1f}ms\n", name, privacy,
                             (objective(X, x) - f_star) / f_star, ms);
  };
  auto t0 = std::chrono::steady_clock::now();
  GeometricMedianOptions o;
  o.epsilon = 1;
  o.delta = 1e-6;
  o.radius = R;
  const auto gm = geometric_median(X, o, rng);
  line("private geometric median", privacy_text(gm.privacy), gm.estimate, elapsed_ms(t0));
  t0 = std::chrono::steady_clock::now();
  const auto bm = bounded_mean(X, {.lower = -R, .upper = R, .epsilon = 1, .delta = 1e-6}, rng);
  line("bounded mean (a mean, not robust)", privacy_text(bm.privacy), bm.estimate, elapsed_ms(t0));
  std::cout << "\n";
}

void moments_section(Rng& rng) {
  using namespace dpstats::moments;
  constexpr std::int64_t T = 2000, d = 4;
  SeededRng data_rng(8);
  RowMatrix X(T, d);
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t j = 0; j < d; ++j) X(t, j) = 0.3 + 0.4 * standard_normal(data_rng);
    X.row(t) /= std::max(1.0, X.row(t).norm());
  }
  const RowMatrix truth = (X.transpose() * X) / static_cast<double>(T);
  std::cout << fmt::format(
      "6. Continual release of moments: a stream of {} vectors in R^{} (norm <= 1); after every\n"
      "   step the running mean and second moment are released, (eps=1, delta=1e-6) for the whole\n"
      "   stream. Error: Frobenius norm of the last second-moment release.\n", T, d);
  for (const std::string method : {"pp", "pp-debiased", "jme"}) {
    const auto t0 = std::chrono::steady_clock::now();
    MomentsOptions o;
    o.steps = T;
    o.dim = d;
    o.method = method;
    o.workload = "average";
    o.epsilon = 1;
    o.delta = 1e-6;
    const auto r = estimate_moments(make_config(o), X, rng);
    const RowMatrix last =
        Eigen::Map<const RowMatrix>(r.estimate.second.row(T - 1).data(), d, d);
    const std::string name = method == "jme" ? "JME (joint moment estimation)"
                             : method == "pp" ? "PP (square the noisy vectors)"
                                              : "PP, debiased";
    std::cout << fmt::format("   {:<34} {:<36} {:>9.3g} {:>7.1f}ms\n", name,
                             privacy_text(r.privacy), (last - truth).norm(), elapsed_ms(t0));
  }
  std::cout << "   JME adds its noise to x x^T directly instead of squaring noisy vectors.\n\n";
}

}  // namespace

void demo_papers(Rng& rng) {
  median_section(rng);
  moments_section(rng);
}

}  // namespace dpstats::cli
